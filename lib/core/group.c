/* Groups: the world, new_group through the MPI layer, rank mapping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "call.h"

static struct dcoll_group *live_groups;
int dcoll_groups_made;

dcoll_status_t dcoll_group_resolve(struct dcoll_group *in,
                                   struct dcoll_group **out, const char *fn)
{
    if (!in) {
        *out = &dcoll_world;
        return DCOLL_SUCCESS;
    }
    if (DCOLL_UNLIKELY(in == DCOLL_GROUP_NULL))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the group is "
                           "DCOLL_GROUP_NULL, which dcoll_group_destroy "
                           "left in its variable (pass NULL for the "
                           "world)", fn);
    if (DCOLL_UNLIKELY(in->magic != DCOLL_GROUP_MAGIC))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: group %p is not a live dcoll group (destroyed "
                           "or never made)", fn, (void *)in);
    *out = in;
    return DCOLL_SUCCESS;
}

static int find_rank(const struct dcoll_group *g, int global)
{
    if (!g->ranks)
        return global >= 0 && global < g->size ? global : -1;
    /* By world rank: ranks itself when ascending, else through order. */
    int lo = 0, hi = g->size - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int at = g->order ? g->order[mid] : mid;
        if (g->ranks[at] == global)
            return at;
        if (g->ranks[at] < global)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

dcoll_status_t dcoll_group_root_slow(const struct dcoll_group *g,
                                     int global, const char *fn,
                                     const char *what, int *group_rank)
{
    int r = find_rank(g, global);
    if (DCOLL_UNLIKELY(r < 0)) {
        char buf[160];
        dcoll_group_ranks_text(g, buf, sizeof(buf));
        /* The usual slip: a group rank where a world rank belongs. */
        if (global >= 0 && global < g->size && g->ranks)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: %s %d is not a rank of the group (%s): "
                               "roots and peers are world ranks, and group "
                               "rank %d is world rank %d "
                               "(dcoll_group_global_rank)", fn, what, global,
                               buf, global, g->ranks[global]);
        bool peer = !strcmp(what, "dst") || !strcmp(what, "src");
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: %s %d is not a rank of the group (%s)%s", fn,
                           what, global, buf,
                           peer && global < 0
                               ? "; at a boundary with no neighbour, pass "
                                 "DCOLL_PROC_NULL (-1), as MPI_PROC_NULL"
                               : "");
    }
    *group_rank = r;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_group_world(dcoll_group_t **out)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_group_world: out is NULL");
    *out = &dcoll_world;
    return DCOLL_SUCCESS;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

dcoll_status_t dcoll_group_params_read(const dcoll_group_params_t *params,
                                       const char *fn,
                                       struct dcoll_group_opts *o)
{
    dcoll_status_t st;
    o->be = dcoll_world.bentry;
    o->timeout = dcoll_world.timeout;
    o->recoverable = dcoll_world.recoverable;
    if (!params)
        return DCOLL_SUCCESS;
    if (params->mask & ~(DCOLL_GROUP_PARAM_BACKEND | DCOLL_GROUP_PARAM_TIMEOUT |
                         DCOLL_GROUP_PARAM_ON_TIMEOUT))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: params->mask "
                           "0x%llx has unknown bits", fn,
                           (unsigned long long)params->mask);
    if ((params->mask & DCOLL_GROUP_PARAM_BACKEND) &&
        (st = dcoll_backend_lookup(params->backend, &o->be)))
        return st;
    if (params->mask & DCOLL_GROUP_PARAM_TIMEOUT) {
        o->timeout = params->timeout;
        if ((st = dcoll_fault_timeout_ok(fn, "timeout", o->timeout)))
            return st;
    }
    if (params->mask & DCOLL_GROUP_PARAM_ON_TIMEOUT) {
        if ((st = dcoll_fault_mode_ok(fn, "on_timeout", params->on_timeout)))
            return st;
        o->recoverable = params->on_timeout == DCOLL_ON_TIMEOUT_RETURN;
    }
    return DCOLL_SUCCESS;
}

/* What one rank's arguments to new_group come to, checked alone. */
struct group_args {
    struct dcoll_group_opts o;
    int *sorted, n, me;
    uint64_t *hashes;   /* room for every world rank's hash and count */
};

static dcoll_status_t check_args(dcoll_group_t **out, const int *ranks,
                                 int nranks,
                                 const dcoll_group_params_t *params,
                                 struct group_args *a)
{
    dcoll_status_t st;
    int world = dcoll_world.size;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_new_group: out is NULL");
    *out = NULL;
    if (nranks < 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_new_group: nranks %d is negative", nranks);
    if (nranks > 0 && !ranks)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_new_group: ranks is NULL but nranks is %d",
                           nranks);
    if (nranks > world)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_new_group: %d ranks asked for, more than "
                           "the world's %d", nranks, world);
    if ((st = dcoll_group_params_read(params, "dcoll_new_group", &a->o)))
        return st;
    bool all = !ranks && nranks == 0;
    int n = all ? world : nranks;
    int *sorted = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!sorted)
        return dcoll_error(DCOLL_ERR_NO_MEMORY,
                           "dcoll_new_group: no memory for %d ranks", n);
    for (int i = 0; i < n; i++) {
        sorted[i] = all ? i : ranks[i];
        if (sorted[i] < 0 || sorted[i] >= world) {
            free(sorted);
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "dcoll_new_group: ranks[%d] = %d is outside "
                               "the world (0..%d)", i, ranks[i], world - 1);
        }
    }
    qsort(sorted, (size_t)n, sizeof(int), cmp_int);
    a->me = -1;
    for (int i = 0; i < n; i++) {
        if (i > 0 && sorted[i] == sorted[i - 1]) {
            int dup = sorted[i];
            free(sorted);
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "dcoll_new_group: rank %d is listed twice",
                               dup);
        }
        if (sorted[i] == dcoll_world.rank)
            a->me = i;
    }
    /* Made here, so that running out of memory for it is a refusal the
     * agreement step already carries to every rank. */
    a->hashes = malloc(2 * sizeof(uint64_t) * (size_t)world);
    if (!a->hashes) {
        free(sorted);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_new_group: no memory "
                           "to compare the ranks' lists of %d ranks", world);
    }
    a->sorted = sorted;
    a->n = n;
    return DCOLL_SUCCESS;
}

/* FNV-1a over the sorted list: equal lists, equal hashes. */
static uint64_t list_hash(const int *v, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = -1; i < n; i++) {
        uint32_t x = (uint32_t)(i < 0 ? n : v[i]);
        for (int b = 0; b < 4; b++) {
            h ^= (x >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h;
}

/* Every world rank must pass the same list: one allgather of each list's
 * hash, so that every rank reaches the same verdict and names the ranks
 * that differ, instead of a group whose size and communicator disagree.
 * With it goes how many groups each rank has numbered (splits of
 * sub-groups count on their members only): *most, the largest. */
static dcoll_status_t same_lists(const struct group_args *a, int *most)
{
    int world = dcoll_world.size;
    uint64_t h[2] = {list_hash(a->sorted, a->n),
                     (uint64_t)dcoll_groups_made};
    uint64_t *all = a->hashes;
    dcoll_status_t st = dcoll_world.svc->allgather_bytes(&dcoll_world, h,
                                                         all, sizeof(h));
    /* Pairs in, hashes out in place: pair r is read before slot r, at
     * or below it, is written. */
    *most = 0;
    for (int r = 0; !st && r < world; r++) {
        int made = (int)all[2 * r + 1];
        *most = made > *most ? made : *most;
        all[r] = all[2 * r];
    }
    int first = -1;
    for (int r = 0; !st && r < world && first < 0; r++)
        if (all[r] != all[0])
            first = r;
    if (st || first < 0)
        return st;
    char msg[DCOLL_ERROR_MAX];
    size_t off = (size_t)snprintf(msg, sizeof(msg), "dcoll_new_group: the "
                                  "ranks passed different lists, so no group "
                                  "was made (every world rank must pass the "
                                  "same ranks): ");
    for (int r = 0, k = 0; r < world && off < sizeof(msg); r++) {
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = all[q] == all[r];
        if (seen)
            continue;
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%sworld "
                                "rank(s) ", k++ ? "; " : "");
        for (int q = r, shown = 0; q < world && off < sizeof(msg); q++)
            if (all[q] == all[r])
                off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%d",
                                        shown++ ? "," : "", q);
        if (off < sizeof(msg))
            off += (size_t)snprintf(msg + off, sizeof(msg) - off,
                                    " passed list %c", 'A' + (k - 1) % 26);
    }
    if (off < sizeof(msg)) {
        off += (size_t)snprintf(msg + off, sizeof(msg) - off, "; this rank "
                                "passed {");
        for (int i = 0; i < a->n && off < sizeof(msg); i++)
            off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%d",
                                    i ? "," : "", a->sorted[i]);
        if (off < sizeof(msg))
            snprintf(msg + off, sizeof(msg) - off, "}");
    }
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s", msg);
}

dcoll_status_t dcoll_group_agree_args(struct dcoll_group *g, int kind,
                                      dcoll_status_t local, const char *fn)
{
    char why[DCOLL_ERROR_MAX];
    if (local)
        snprintf(why, sizeof(why), "%s", dcoll_last_error());
    int ok = !local;
    /* The first step that waits for every rank of g: a call of its own,
     * numbered, recorded and held to g's deadline, so that a rank that
     * never comes is named by the roll call as for a collective. */
    struct dcoll_coll c = {.kind = (enum dcoll_coll_kind)kind, .fn = fn,
                           .dtype = DCOLL_UINT8, .root = -1};
    struct dcoll_call k;
    const struct dcoll_call_how how = {.counted = true,
                                       .form = DCOLL_FORM_BLOCKING,
                                       .watch = -1};
    dcoll_status_t st = dcoll_call_enter(g, fn);
    if (st)
        return st;
    dcoll_call_begin(g, &c, &k, how, NULL);
    double spread = 0;
    st = g->svc->agree_call(g, &ok, &spread, &c, &k.out);
    if (!st)
        st = dcoll_fault_arrivals(g, &c, spread);
    st = dcoll_call_end(g, &c, &k, how, NULL, st);
    if (local)
        return dcoll_error(local, "%s", why);
    if (st)
        return st;
    if (!ok)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: another rank "
                           "refused its arguments (its message says why), "
                           "so %s", fn,
                           kind == DCOLL_COLL_MEM_ALLOC ? "nothing was "
                                                          "allocated"
                           : kind == DCOLL_COLL_MEM_FREE ? "nothing was freed"
                                                         : "no group was "
                                                           "made");
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_new_group(dcoll_group_t **out, const int *ranks,
                               int nranks, const dcoll_group_params_t *params)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    /* The split runs on the world's communicator, where a timed-out call
     * may still be pending: it could match the wrong operation. (A rank
     * that does not know the world failed waits in the agreement below
     * until the others call new_group too.) */
    if (dcoll_world.diag->failed)
        return dcoll_error(DCOLL_ERR_GROUP_FAILED, "dcoll_new_group: new "
                           "groups are made from the world, which is "
                           "unusable after an earlier failure: %s",
                           dcoll_world.diag->failed);
    /* A refusal one rank alone sees must reach the others, which would
     * otherwise wait in the split. */
    struct group_args a = {0};
    dcoll_status_t local = check_args(out, ranks, nranks, params, &a);
    if ((st = dcoll_group_agree_args(&dcoll_world, DCOLL_COLL_NEW_GROUP,
                                     local, "dcoll_new_group"))) {
        free(a.sorted);
        free(a.hashes);
        return st;
    }
    int most = 0;
    st = same_lists(&a, &most);
    free(a.hashes);
    if (st) {
        free(a.sorted);
        return st;
    }
    /* Every world rank counts the group, member or not, from the most
     * any rank has numbered: ids agree. */
    int id = dcoll_groups_made = most + 1;
    return dcoll_group_make(&dcoll_world, a.me >= 0 ? 0 : -1, a.me, a.me,
                            a.n, a.sorted, id, NULL, &a.o, "dcoll_new_group",
                            out);
}

static int by_world(const void *a, const void *b, void *ranks)
{
    int x = ((const int *)ranks)[*(const int *)a];
    int y = ((const int *)ranks)[*(const int *)b];
    return (x > y) - (x < y);
}

/* A member's group with no transport's record yet; NULL with a message
 * where there is no memory. */
static struct dcoll_group *group_new(int me, int n, int *ranks, int id,
                                     const char *fn)
{
    struct dcoll_group *g = calloc(1, sizeof(*g));
    int *order = NULL;
    bool ascending = true;
    for (int i = 1; i < n && ascending; i++)
        ascending = ranks[i - 1] < ranks[i];
    if (g && !ascending)
        order = malloc(sizeof(int) * (size_t)n);
    if (!g || (!ascending && !order)) {
        free(g);
        dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the group", fn);
        return NULL;
    }
    g->magic = DCOLL_GROUP_MAGIC;
    g->rank = me;
    g->size = n;
    g->ranks = ranks;
    g->order = order;
    g->svc = dcoll_world.svc;
    g->id = id;
    if (order) {
        /* Group ranks by world rank, for find_rank's binary search. */
        for (int i = 0; i < n; i++)
            order[i] = i;
        qsort_r(order, (size_t)n, sizeof(int), by_world, ranks);
    }
    return g;
}

/* A group that was not made after all: what its transports made for it
 * goes, in their order. */
static void group_unmake(struct dcoll_group *g)
{
    dcoll_route_group_free(g);
    dcoll_fault_group_free(g);
    free(g->ranks);
    free(g->order);
    free(g);
}

dcoll_status_t dcoll_group_make(struct dcoll_group *parent, int color,
                                int key, int me, int n, int *ranks, int id,
                                const int *keep,
                                const struct dcoll_group_opts *o,
                                const char *fn, struct dcoll_group **out)
{
    dcoll_status_t st, mem = DCOLL_SUCCESS;
    struct dcoll_group *g = NULL;
    if (color >= 0 && !(g = group_new(me, n, ranks, id, fn)))
        mem = DCOLL_ERR_NO_MEMORY;
    /* Every rank of parent takes its part in each transport's making,
     * one without memory for the group too: the others wait in it. */
    struct dcoll_tl_make m = {
        .parent = parent,
        .color = color,
        .key = key,
        .choice = dcoll_opts_choice(o),
        .keep = keep,
        .nkeep = keep ? n : 0,
    };
    st = dcoll_route_group_make(g, &m);
    if (!g) {
        free(ranks);
        if (!st && !mem)
            *out = &dcoll_non_member;
        return st ? st : mem;
    }
    if (st) {
        group_unmake(g);
        return st;
    }
    if ((st = dcoll_fault_group_init(g, o->timeout, o->recoverable)) ||
        (st = dcoll_fault_agree(g, fn, dcoll_stage_chunk, 0)) ||
        (st = dcoll_backend_attach(g, o->be, fn)) ||
        (st = dcoll_watchdog_add(g))) {
        group_unmake(g);
        return st;
    }
    g->next = live_groups;
    if (live_groups)
        live_groups->prev = g;
    live_groups = g;
    *out = g;
    return DCOLL_SUCCESS;
}

static void group_free(struct dcoll_group *g)
{
    /* Before its communicator goes: the watchdog may be using it. */
    dcoll_watchdog_remove(g);
    if (g->prev)
        g->prev->next = g->next;
    else
        live_groups = g->next;
    if (g->next)
        g->next->prev = g->prev;
    /* Every transport's record, in the reverse of their order. */
    dcoll_route_group_free(g);
    dcoll_group_stage_free(g);
    dcoll_fault_group_free(g);
    free(g->ranks);
    free(g->order);
    dcoll_mark_dead(&g->magic);
    free(g);
}

void dcoll_group_stage_free(struct dcoll_group *g)
{
    dcoll_kept_free(&g->stage, free);
}

void dcoll_groups_free_all(void)
{
    while (live_groups)
        group_free(live_groups);
}

dcoll_status_t dcoll_group_destroy(dcoll_group_t **group)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!group)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_group_destroy: group is NULL");
    struct dcoll_group *g = *group;
    if (!g || g == DCOLL_GROUP_NULL || g == &dcoll_non_member) {
        *group = DCOLL_GROUP_NULL;
        return DCOLL_SUCCESS;
    }
    if (g == &dcoll_world)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_group_destroy: the world group belongs to "
                           "dcoll; dcoll_finalize frees it");
    st = dcoll_group_resolve(g, &g, "dcoll_group_destroy");
    if (st)
        return st;
    if (g->inflight > 0)
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "dcoll_group_destroy: %d operation(s) on the "
                           "group are still in flight; wait for them first",
                           g->inflight);
    /* This rank left the group (it refused a call the others are inside,
     * or MPI failed one here): at their deadline they ask it why, and
     * its watchdog answers. So its communicators stay until
     * dcoll_finalize, and only the handle dies now: freed, a
     * communicator the others' asks still reach would hand them to the
     * next one given its context id. */
    if (g->left && g->timeout > 0 && g->size > 1) {
        dcoll_mark_dead(&g->magic);
        *group = DCOLL_GROUP_NULL;
        return DCOLL_SUCCESS;
    }
    group_free(g);
    *group = DCOLL_GROUP_NULL;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_group_parent(dcoll_group_t **out, dcoll_group_t *parent,
                                  const char *fn, struct dcoll_group **p)
{
    *p = NULL;
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: out is NULL",
                           fn);
    *out = NULL;
    struct dcoll_group *g = NULL;
    if ((st = dcoll_group_resolve(parent, &g, fn)))
        return st;
    if (g->rank == DCOLL_NON_MEMBER)
        *out = &dcoll_non_member;
    else
        *p = g;
    return DCOLL_SUCCESS;
}

/* Common head of the queries: library ready, output given, group live. */
static dcoll_status_t query(const dcoll_group_t *in, const void *out,
                            const char *fn, struct dcoll_group **g)
{
    *g = NULL;
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: output is NULL",
                           fn);
    return dcoll_group_resolve((struct dcoll_group *)in, g, fn);
}

dcoll_status_t dcoll_group_rank(const dcoll_group_t *group, int *rank)
{
    struct dcoll_group *g;
    dcoll_status_t st = query(group, rank, __func__, &g);
    if (st)
        return st;
    *rank = g->rank;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_group_size(const dcoll_group_t *group, int *size)
{
    struct dcoll_group *g;
    dcoll_status_t st = query(group, size, __func__, &g);
    if (st)
        return st;
    *size = g->size;
    return DCOLL_SUCCESS;
}

static dcoll_status_t no_mapping(const char *fn)
{
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: the group is a NON-MEMBER handle: this process "
                       "is not in it, so it has no rank mapping", fn);
}

dcoll_status_t dcoll_group_global_rank(const dcoll_group_t *group,
                                       int group_rank, int *global_rank)
{
    struct dcoll_group *g;
    dcoll_status_t st = query(group, global_rank, __func__, &g);
    if (st)
        return st;
    if (g == &dcoll_non_member)
        return no_mapping(__func__);
    if (group_rank < 0 || group_rank >= g->size)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: group rank %d is outside the group "
                           "(0..%d)", __func__, group_rank, g->size - 1);
    *global_rank = g->ranks ? g->ranks[group_rank] : group_rank;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_group_group_rank(const dcoll_group_t *group,
                                      int global_rank, int *group_rank)
{
    struct dcoll_group *g;
    dcoll_status_t st = query(group, group_rank, __func__, &g);
    if (st)
        return st;
    if (g == &dcoll_non_member)
        return no_mapping(__func__);
    return dcoll_group_root(g, global_rank, __func__, "world rank",
                            group_rank);
}

dcoll_status_t dcoll_group_backend(const dcoll_group_t *group,
                                   const char **name)
{
    struct dcoll_group *g;
    dcoll_status_t st = query(group, name, __func__, &g);
    if (st)
        return st;
    *name = g->backend_name;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_group_comm(const dcoll_group_t *group, int *comm)
{
    struct dcoll_group *g;
    dcoll_status_t st = query(group, comm, __func__, &g);
    if (st)
        return st;
    if (g == &dcoll_non_member)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: the group is a NON-MEMBER handle: this "
                           "process is not in it, so it has no "
                           "communicator", __func__);
    *comm = g->svc->comm_fint(g);
    return DCOLL_SUCCESS;
}
