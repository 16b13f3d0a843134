/* The node's GPUs matched to its ranks. A GPU is named by its PCI
 * address, the same in every process whatever CUDA_VISIBLE_DEVICES
 * renumbers; ranks are matched to GPUs as a bipartite matching
 * (augmenting paths), near edges first, so that no launcher mapping
 * makes two ranks share while a GPU sits idle. */
#include <stdbool.h>
#include <stdlib.h>
#include "select.h"

struct node {
    int n, ngpu;
    const dcoll_gpu_view_t *v;
    uint32_t *gpu;       /* the node's GPUs, by PCI address */
    int *gpu_numa;
    int *owner;          /* rank matched to each GPU; -1 free */
    int *load;           /* ranks on each GPU */
    int *at;             /* each rank's GPU (node index); -1 none */
    bool *seen;          /* this search's visited GPUs */
};

/* The node index of rank r's device d. */
static int gpu_of(const struct node *s, int r, int d)
{
    for (int g = 0; g < s->ngpu; g++)
        if (s->gpu[g] == s->v[r].pci[d])
            return g;
    return -1;
}

static bool near(const struct node *s, int r, int g)
{
    return s->v[r].numa >= 0 && s->gpu_numa[g] == s->v[r].numa;
}

/* An augmenting path from rank r (Kuhn): a free GPU it sees, or one whose
 * owner can move to another; near_only: over near edges alone. */
static bool augment(struct node *s, int r, bool near_only)
{
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < s->v[r].ngpus; d++) {
            int g = gpu_of(s, r, d);
            if (g < 0 || s->seen[g] || (near_only && !near(s, r, g)))
                continue;
            /* A free GPU before moving anyone. */
            if (pass == 0 && s->owner[g] >= 0)
                continue;
            s->seen[g] = true;
            int o = s->owner[g];
            if (o < 0 || (o != r && s->v[o].current < 0 &&
                          augment(s, o, near_only))) {
                s->owner[g] = r;
                s->at[r] = g;
                return true;
            }
        }
    return false;
}

static void match(struct node *s, bool near_only)
{
    for (int r = 0; r < s->n; r++) {
        if (s->at[r] >= 0)
            continue;
        for (int g = 0; g < s->ngpu; g++)
            s->seen[g] = false;
        augment(s, r, near_only);
    }
}

static int gather_gpus(struct node *s)
{
    int cap = 0;
    for (int r = 0; r < s->n; r++)
        cap += s->v[r].ngpus;
    s->gpu = malloc(sizeof(*s->gpu) * (size_t)(cap + 1));
    s->gpu_numa = malloc(sizeof(int) * (size_t)(cap + 1));
    s->owner = malloc(sizeof(int) * (size_t)(cap + 1));
    s->load = calloc((size_t)cap + 1, sizeof(int));
    s->seen = malloc(sizeof(bool) * (size_t)(cap + 1));
    s->at = malloc(sizeof(int) * (size_t)(s->n + 1));
    if (!s->gpu || !s->gpu_numa || !s->owner || !s->load || !s->seen ||
        !s->at)
        return -1;
    for (int r = 0; r < s->n; r++) {
        s->at[r] = -1;
        for (int d = 0; d < s->v[r].ngpus; d++) {
            int g = gpu_of(s, r, d);
            if (g < 0) {
                /* Kept in PCI order: each GPU's index is the same on
                 * every rank. */
                g = s->ngpu++;
                while (g > 0 && s->gpu[g - 1] > s->v[r].pci[d]) {
                    s->gpu[g] = s->gpu[g - 1];
                    s->gpu_numa[g] = s->gpu_numa[g - 1];
                    g--;
                }
                s->gpu[g] = s->v[r].pci[d];
                s->gpu_numa[g] = -1;
            }
            if (s->gpu_numa[g] < 0)
                s->gpu_numa[g] = s->v[r].gpu_numa[d];
        }
    }
    for (int g = 0; g < s->ngpu; g++)
        s->owner[g] = -1;
    return 0;
}

/* A rank left over shares the least used GPU it sees, near first. */
static int share(const struct node *s, int r)
{
    int best = -1;
    for (int d = 0; d < s->v[r].ngpus; d++) {
        int g = gpu_of(s, r, d);
        if (g < 0)
            continue;
        if (best < 0 || s->load[g] < s->load[best] ||
            (s->load[g] == s->load[best] && near(s, r, g) &&
             !near(s, r, best)))
            best = g;
    }
    return best;
}

int dcoll_assign_gpus(int n, const dcoll_gpu_view_t *views,
                      struct dcoll_gpu_pick *picks)
{
    struct node s = {.n = n, .v = views};
    int rc = gather_gpus(&s);
    if (rc == 0) {
        /* The program's choices stand, shared or not. */
        for (int r = 0; r < n; r++) {
            int c = views[r].current;
            int g = c >= 0 && c < views[r].ngpus ? gpu_of(&s, r, c) : -1;
            if (g >= 0) {
                s.at[r] = g;
                if (s.owner[g] < 0)
                    s.owner[g] = r;
            }
        }
        match(&s, true);
        match(&s, false);
        for (int r = 0; r < n; r++)
            if (s.at[r] >= 0)
                s.load[s.at[r]]++;
        for (int r = 0; r < n; r++)
            if (s.at[r] < 0 && (s.at[r] = share(&s, r)) >= 0)
                s.load[s.at[r]]++;
        for (int r = 0; r < n; r++) {
            int g = s.at[r];
            struct dcoll_gpu_pick *p = &picks[r];
            p->device = -1;
            p->sharers = g >= 0 ? s.load[g] : 0;
            for (int d = 0; g >= 0 && d < views[r].ngpus; d++)
                if (views[r].pci[d] == s.gpu[g] && p->device < 0)
                    p->device = d;
            p->why = g < 0                   ? DCOLL_GPU_NONE
                     : views[r].current >= 0 ? DCOLL_GPU_CURRENT
                     : s.load[g] > 1         ? DCOLL_GPU_SHARED
                     : near(&s, r, g)        ? DCOLL_GPU_NEAR
                                             : DCOLL_GPU_FREE;
        }
    }
    free(s.gpu);
    free(s.gpu_numa);
    free(s.owner);
    free(s.load);
    free(s.seen);
    free(s.at);
    return rc;
}

const char *dcoll_gpu_why_text(enum dcoll_gpu_why why)
{
    switch (why) {
    case DCOLL_GPU_CURRENT:
        return "the program's current device";
    case DCOLL_GPU_NEAR:
        return "its own, on its NUMA node";
    case DCOLL_GPU_FREE:
        return "its own, not one on its NUMA node (none free there, or "
               "the placement unknown)";
    case DCOLL_GPU_SHARED:
        return "shared: more local ranks than GPUs";
    default:
        return "no GPU";
    }
}
