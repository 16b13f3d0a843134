/* Neighbourhoods (dcoll/neighbor.h): made once from each rank's lists,
 * which every rank checks against the others', and the calls on them.
 * A call runs as one of the group's (collectives.c's path, numbered and
 * watched), with the neighbourhood in its descriptor: the MPI layer runs
 * it on the neighbourhood's own communicator. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "diag.h"
#include "dcoll/neighbor.h"

#define NBH_MAGIC 0x6e424844u

static dcoll_status_t resolve(const dcoll_neighborhood_t *in,
                              struct dcoll_nbh **out, const char *fn)
{
    struct dcoll_nbh *n = (struct dcoll_nbh *)in;
    if (!n)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the "
                           "neighbourhood is NULL", fn);
    if (n->magic != NBH_MAGIC)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %p is not a "
                           "live neighbourhood (freed or never made)", fn,
                           (const void *)n);
    *out = n;
    return DCOLL_SUCCESS;
}

static void nbh_free(struct dcoll_nbh *n)
{
    struct dcoll_group *g = n->group;
    if (g) {
        if (n->comm)
            g->svc->nbh_free(n->comm);
        if (n->prev)
            n->prev->next = n->next;
        else if (g->nbhs == n)
            g->nbhs = n->next;
        if (n->next)
            n->next->prev = n->prev;
    }
    free(n->in);
    dcoll_mark_dead(&n->magic);
    free(n);
}

void dcoll_nbh_hold(struct dcoll_nbh *n)
{
    n->refs++;
}

void dcoll_nbh_drop(struct dcoll_nbh *n)
{
    if (--n->refs == 0)
        nbh_free(n);
}

void dcoll_nbhs_group_gone(struct dcoll_group *g)
{
    for (struct dcoll_nbh *n = g->nbhs; n; n = n->next) {
        if (n->comm)
            g->svc->nbh_free(n->comm);
        n->comm = NULL;
        n->group = NULL;
        n->prev = NULL;
    }
    g->nbhs = NULL;
}

/* One list, world ranks in, as group ranks into to (DCOLL_PROC_NULL
 * kept); *real: its entries that are not DCOLL_PROC_NULL. */
static dcoll_status_t map_list(const char *fn, dcoll_group_t *g,
                               const char *name, const int *list, int deg,
                               int *to, int *real)
{
    if (deg < 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %d is "
                           "negative", fn, name[0] == 's' ? "indegree"
                                                          : "outdegree", deg);
    if (deg > 0 && !list)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL with "
                           "%s %d", fn, name, name[0] == 's' ? "indegree"
                                                             : "outdegree",
                           deg);
    *real = 0;
    for (int i = 0; i < deg; i++) {
        if (list[i] == DCOLL_PROC_NULL) {
            to[i] = DCOLL_PROC_NULL;
            continue;
        }
        int r = -1;
        if (list[i] < 0 || dcoll_group_group_rank(g, list[i], &r) || r < 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s[%d] = %d "
                               "is not a world rank of the group%s", fn, name,
                               i, list[i], list[i] < 0
                                   ? " (DCOLL_PROC_NULL, -1, is the only "
                                     "negative entry a list takes)"
                                   : "");
        to[i] = r;
        (*real)++;
    }
    return DCOLL_SUCCESS;
}

/* An edge a -> b (group ranks), listed by a (out, as a sender) or by b
 * (in, as a receiver). */
struct edge {
    int from, to, by_sender;
};

static int edge_cmp(const void *x, const void *y)
{
    const struct edge *a = x, *b = y;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    if (a->to != b->to)
        return a->to < b->to ? -1 : 1;
    return a->by_sender - b->by_sender;
}

/* Every rank's real lists (all: for each rank its in-list then its
 * out-list, lens[r] = nin + nout with nin at ins[r]), checked edge by
 * edge: each listed as often by its sender as by its receiver. The same
 * answer on every rank, which all hold the same lists. */
static dcoll_status_t match(const char *fn, struct dcoll_group *g,
                            const int *all, const int *nins,
                            const int *nouts)
{
    size_t total = 0;
    for (int r = 0; r < g->size; r++)
        total += (size_t)nins[r] + (size_t)nouts[r];
    struct edge *e = malloc(sizeof(*e) * (total ? total : 1));
    if (!e)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory to check "
                           "%zu listed neighbours", fn, total);
    size_t k = 0, at = 0;
    for (int r = 0; r < g->size; r++) {
        for (int i = 0; i < nins[r]; i++)
            e[k++] = (struct edge){all[at + (size_t)i], r, 0};
        at += (size_t)nins[r];
        for (int i = 0; i < nouts[r]; i++)
            e[k++] = (struct edge){r, all[at + (size_t)i], 1};
        at += (size_t)nouts[r];
    }
    qsort(e, total, sizeof(*e), edge_cmp);
    dcoll_status_t st = DCOLL_SUCCESS;
    for (size_t i = 0; i < total && !st;) {
        size_t j = i;
        int by[2] = {0, 0};
        while (j < total && e[j].from == e[i].from && e[j].to == e[i].to)
            by[e[j++].by_sender]++;
        if (by[0] != by[1]) {
            int a = dcoll_world_of(g, e[i].from), b = dcoll_world_of(g,
                                                                    e[i].to);
            if (!by[0])
                st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: rank %d "
                                 "lists %d as an out-neighbour but %d does "
                                 "not list %d as an in-neighbour, so no "
                                 "neighbourhood was made", fn, a, b, b, a);
            else if (!by[1])
                st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: rank %d "
                                 "lists %d as an in-neighbour but %d does "
                                 "not list %d as an out-neighbour, so no "
                                 "neighbourhood was made", fn, b, a, a, b);
            else
                st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: rank %d "
                                 "lists %d as an out-neighbour %d time(s) "
                                 "but %d lists %d as an in-neighbour %d "
                                 "time(s), so no neighbourhood was made",
                                 fn, a, b, by[1], b, a, by[0]);
        }
        i = j;
    }
    free(e);
    return st;
}

/* Every rank's lists, exchanged over the group by two of its own calls
 * (numbered and bounded by its timeout, as any), then checked. mine: this
 * rank's real in-list then out-list; refused: this rank's own checks
 * failed (message set), which every rank learns. */
static dcoll_status_t agree(const char *fn, struct dcoll_group *g,
                            const int *mine, int nin, int nout, bool refused)
{
    char why[DCOLL_ERROR_MAX] = "";
    if (refused)
        snprintf(why, sizeof(why), "%s", dcoll_last_error());
    dcoll_coll_opts_t host = DCOLL_COLL_OPTS_INIT;
    host.mask = DCOLL_COLL_OPT_MEMORY;
    host.memory = DCOLL_MEMORY_HOST;
    int n = g->size, head[3] = {refused, nin, nout};
    int *heads = malloc(sizeof(int) * 3 * (size_t)n);
    int64_t *lens = malloc(sizeof(int64_t) * (size_t)n);
    int *nins = malloc(sizeof(int) * 2 * (size_t)n), *all = NULL;
    dcoll_status_t st = DCOLL_SUCCESS;
    if (!heads || !lens || !nins) {
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the lists "
                         "of %d ranks", fn, n);
        goto out;
    }
    /* Named as the program's call, so that a report of a rank that never
     * came says which call it skipped. */
    struct dcoll_coll hc = {.kind = DCOLL_COLL_ALL_GATHER, .sendbuf = head,
                            .recvbuf = heads, .count = 3,
                            .dtype = DCOLL_INT32, .opts = &host, .fn = fn};
    if ((st = dcoll_coll_run(g, &hc, 0, NULL, NULL)))
        goto out;
    int first = -1;
    size_t total = 0;
    for (int r = 0; r < n; r++) {
        if (heads[3 * r] && first < 0)
            first = r;
        nins[r] = heads[3 * r + 1];
        nins[n + r] = heads[3 * r + 2];
        lens[r] = (int64_t)nins[r] + nins[n + r];
        total += (size_t)lens[r];
    }
    if (first >= 0) {
        st = refused ? dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s", why)
                     : dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: rank %d "
                                   "refused its lists (its message says "
                                   "why), so no neighbourhood was made", fn,
                                   dcoll_world_of(g, first));
        goto out;
    }
    if (!(all = malloc(sizeof(int) * (total ? total : 1)))) {
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for %zu listed "
                         "neighbours", fn, total);
        goto out;
    }
    struct dcoll_coll lc = {.kind = DCOLL_COLL_ALL_GATHERV, .sendbuf = mine,
                            .recvbuf = all, .count = (int64_t)nin + nout,
                            .counts = lens, .dtype = DCOLL_INT32,
                            .opts = &host, .fn = fn};
    if ((st = dcoll_coll_run(g, &lc, 0, NULL, NULL)))
        goto out;
    st = match(fn, g, all, nins, nins + n);
out:
    free(heads);
    free(lens);
    free(nins);
    free(all);
    return st;
}

dcoll_status_t dcoll_neighborhood_create(dcoll_group_t *group, int indegree,
                                         const int *sources, int outdegree,
                                         const int *destinations,
                                         dcoll_neighborhood_t **out)
{
    const char *fn = __func__;
    struct dcoll_group *g = NULL;
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (out)
        *out = NULL;
    if ((st = dcoll_group_resolve(group, &g, fn)))
        return st;
    struct dcoll_nbh *n = calloc(1, sizeof(*n));
    if (!n)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a "
                           "neighbourhood", fn);
    n->group = g;
    n->refs = 1;
    n->member = g->rank != DCOLL_NON_MEMBER;
    if (!n->member && out) {
        n->magic = NBH_MAGIC;
        *out = (dcoll_neighborhood_t *)n;
        return DCOLL_SUCCESS;
    }
    /* A degree past what fits is this rank's refusal, as any list's. */
    int ind = indegree > 0 ? indegree : 0, outd = outdegree > 0 ? outdegree
                                                                : 0;
    bool refused = false;
    if (!out) {
        /* Refused with the others told, as any bad argument here. */
        st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: out is NULL; it "
                         "must receive the handle", fn);
        refused = true;
        ind = outd = 0;
    } else if ((size_t)ind + (size_t)outd > (size_t)INT_MAX / 2) {
        st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: indegree %d and "
                         "outdegree %d are more neighbours than a list "
                         "holds", fn, indegree, outdegree);
        refused = true;
        ind = outd = 0;
    }
    /* in, out, then the real entries of both, in list order. */
    size_t cells = 2 * ((size_t)ind + (size_t)outd);
    n->in = malloc(sizeof(int) * (cells ? cells : 1));
    if (!n->in) {
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for %d and %d "
                         "neighbours", fn, indegree, outdegree);
        refused = true;
        ind = outd = 0;
    }
    n->out = n->in ? n->in + ind : NULL;
    if (!refused)
        refused = (st = map_list(fn, g, "sources", sources, indegree, n->in,
                                 &n->nin)) ||
                  (st = map_list(fn, g, "destinations", destinations,
                                 outdegree, n->out, &n->nout));
    int *real = n->in ? n->in + ind + outd : NULL, k = 0;
    if (!refused) {
        n->indeg = indegree;
        n->outdeg = outdegree;
        for (int i = 0; i < ind + outd; i++)
            if (n->in[i] != DCOLL_PROC_NULL)
                real[k++] = n->in[i];
    } else {
        n->nin = n->nout = 0;
    }
    st = agree(fn, g, real, n->nin, n->nout, refused);
    if (!st)
        st = g->svc->nbh_make(g, n->nin, real, n->nout, real + n->nin,
                              &n->comm);
    if (st) {
        n->group = NULL;
        nbh_free(n);
        return st;
    }
    n->id = ++g->nbhs_made;
    n->magic = NBH_MAGIC;
    n->next = g->nbhs;
    if (g->nbhs)
        g->nbhs->prev = n;
    g->nbhs = n;
    *out = (dcoll_neighborhood_t *)n;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_neighborhood_free(dcoll_neighborhood_t **nbh)
{
    struct dcoll_nbh *n = NULL;
    if (!nbh)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: nbh is NULL",
                           __func__);
    if (!*nbh)
        return DCOLL_SUCCESS;
    dcoll_status_t st = resolve(*nbh, &n, __func__);
    if (st)
        return st;
    if (n->refs > 1) {
        /* Its plans keep it; they go on working. */
        n->refs--;
        dcoll_mark_dead(&n->magic);
    } else {
        nbh_free(n);
    }
    *nbh = NULL;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_neighborhood_degrees(const dcoll_neighborhood_t *nbh,
                                          int *indegree, int *outdegree)
{
    struct dcoll_nbh *n = NULL;
    dcoll_status_t st = resolve(nbh, &n, __func__);
    if (st)
        return st;
    if (!indegree || !outdegree)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL",
                           __func__, !indegree ? "indegree" : "outdegree");
    *indegree = n->indeg;
    *outdegree = n->outdeg;
    return DCOLL_SUCCESS;
}

/* ---- the calls ---- */

/* One side's layouts (deg entries): each in range; *elems the elements
 * they pick in all, *extent the most any spans. */
static dcoll_status_t layouts_check(const char *fn, const char *name,
                                    const dcoll_layout_t *l, int deg,
                                    int64_t *elems, int64_t *extent)
{
    *elems = *extent = 0;
    if (deg > 0 && !l)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL with "
                           "%d neighbour(s)", fn, name, deg);
    for (int i = 0; i < deg; i++) {
        int64_t e, x;
        dcoll_status_t st = dcoll_layout_check(fn, name, i, &l[i], &e, &x);
        if (st)
            return st;
        if (e > DCOLL_LAYOUT_MOST - *elems)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s[0..%d] "
                               "pick more than 2^60 elements in all (at "
                               "%s[%d], %lld more)", fn, name, i, name, i,
                               (long long)e);
        *elems += e;
        if (x > *extent)
            *extent = x;
    }
    return DCOLL_SUCCESS;
}

/* One block a layout picks, in bytes from the buffer's start. */
struct span {
    int64_t lo, hi;
    int at;   /* the layout's index */
};

static int by_lo(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Above this many blocks in one call the debug check of layouts that
 * meet is skipped (its lists would outweigh the call). */
#define APART_MOST (INT64_C(1) << 22)

/* The blocks of deg layouts l on buf, in *out (sorted), *n of them; false:
 * more than APART_MOST or no memory (nothing checked). */
static bool blocks_of(const dcoll_layout_t *l, int deg, const char *buf,
                      size_t esz, struct span **out, int64_t *n)
{
    int64_t total = 0;
    for (int i = 0; i < deg; i++)
        total += l[i].count * (l[i].count2 > 1 ? l[i].count2 : 1);
    *out = NULL;
    *n = 0;
    if (total > APART_MOST)
        return false;
    struct span *s = malloc(sizeof(*s) * (size_t)(total ? total : 1));
    if (!s)
        return false;
    int64_t k = 0;
    for (int i = 0; i < deg; i++) {
        int64_t reps = l[i].count2 > 1 ? l[i].count2 : 1;
        for (int64_t r = 0; r < reps; r++)
            for (int64_t b = 0; b < l[i].count && l[i].blocklen; b++) {
                int64_t at = l[i].offset + r * l[i].stride2 +
                             b * l[i].stride;
                s[k].lo = (int64_t)(uintptr_t)buf + at * (int64_t)esz;
                s[k].hi = s[k].lo + l[i].blocklen * (int64_t)esz;
                s[k++].at = i;
            }
    }
    qsort(s, (size_t)k, sizeof(*s), by_lo);
    *out = s;
    *n = k;
    return true;
}

/* Debug mode: no block a receive layout writes may be one a send
 * layout of the same call reads (a ghost that is a face sent), as
 * sendbuf and recvbuf may not overlap elsewhere. Default mode leaves it
 * to the program, as MPI does: the check sorts every block of the call,
 * which a halo's every step would pay. */
static dcoll_status_t layouts_apart(const char *fn,
                                    const struct dcoll_coll *c, size_t esz)
{
    const struct dcoll_nbh *nb = c->nbh;
    struct span *s = NULL, *r = NULL;
    int64_t ns = 0, nr = 0;
    dcoll_status_t st = DCOLL_SUCCESS;
    if (blocks_of(c->layout, nb->outdeg, c->sendbuf, esz, &s, &ns) &&
        blocks_of(c->layout2, nb->indeg, c->recvbuf, esz, &r, &nr)) {
        /* Each list sorted by start: a block that ends before the other
         * list's current one meets none of that list's later ones. */
        for (int64_t i = 0, j = 0; i < ns && j < nr;) {
            if (s[i].hi <= r[j].lo) {
                i++;
            } else if (r[j].hi <= s[i].lo) {
                j++;
            } else {
                int64_t from = s[i].lo > r[j].lo ? s[i].lo : r[j].lo;
                st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: "
                                 "recvlayouts[%d] writes what "
                                 "sendlayouts[%d] sends (from element "
                                 "%lld of recvbuf): a ghost received "
                                 "must not be a face sent in the same "
                                 "call (found by DCOLL_DEBUG=detail)", fn,
                                 r[j].at, s[i].at,
                                 (long long)((from - (int64_t)(uintptr_t)
                                              c->recvbuf) /
                                             (int64_t)esz));
                break;
            }
        }
    }
    free(s);
    free(r);
    return st;
}

dcoll_status_t dcoll_nbh_check(const char *fn, const struct dcoll_group *g,
                               struct dcoll_coll *c)
{
    (void)g;
    const struct dcoll_nbh *n = c->nbh;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t sends, recvs;
    dcoll_status_t st;
    if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_GATHER) {
        if (c->count > INT_MAX)
            return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: count %lld is "
                               "above INT_MAX, the most MPI's neighbourhood "
                               "collectives take", fn, (long long)c->count);
        sends = n->nout ? c->count : 0;
        recvs = c->count * n->indeg;
    } else if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW) {
        /* One array may hold the faces sent and the ghosts received: the
         * layouts pick the elements, which must not meet (as in MPI;
         * checked in debug mode, layouts_apart). */
        int64_t relems;
        if ((st = layouts_check(fn, "sendlayouts", c->layout, n->outdeg,
                                &c->count, &sends)) ||
            (st = layouts_check(fn, "recvlayouts", c->layout2, n->indeg,
                                &relems, &recvs)) ||
            (st = dcoll_vec_need(fn, c, "sendbuf", c->sendbuf,
                                 c->count)) ||
            (st = dcoll_vec_need(fn, c, "recvbuf", c->recvbuf, relems)) ||
            (st = dcoll_bound(fn, c, true, "sendbuf", sends)) ||
            (st = dcoll_bound(fn, c, false, "recvbuf", recvs)))
            return st;
        if (DCOLL_UNLIKELY(dcoll_debug) && c->sendbuf && c->recvbuf)
            return layouts_apart(fn, c, esz);
        return DCOLL_SUCCESS;
    } else {
        if ((st = dcoll_vec_array(fn, "sendcounts", "sdispls", c->counts,
                                  c->displs, n->outdeg, &sends)) ||
            (st = dcoll_vec_array(fn, "recvcounts", "rdispls", c->counts2,
                                  c->displs2, n->indeg, &recvs)))
            return st;
        c->count = sends;
    }
    if ((st = dcoll_vec_need(fn, c, "sendbuf", c->sendbuf, sends)) ||
        (st = dcoll_vec_need(fn, c, "recvbuf", c->recvbuf, recvs)))
        return st;
    uintptr_t s = (uintptr_t)c->sendbuf, r = (uintptr_t)c->recvbuf;
    size_t sb = (size_t)sends * esz, rb = (size_t)recvs * esz;
    if (sb && rb && s < r + rb && r < s + sb)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: sendbuf and "
                           "recvbuf overlap; a neighbourhood call has no "
                           "in-place form", fn);
    return DCOLL_SUCCESS;
}

/* The neighbourhood's group for a call or plan, or why there is none. */
static dcoll_status_t group_of(dcoll_neighborhood_t *nbh, struct dcoll_coll *c,
                               struct dcoll_group **g)
{
    struct dcoll_nbh *n = NULL;
    dcoll_status_t st = resolve(nbh, &n, c->fn);
    if (st)
        return st;
    /* A group destroyed after a refusal keeps its record to the end, its
     * handle dead. */
    if (!n->group || n->group->magic != DCOLL_GROUP_MAGIC)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s: the "
                           "neighbourhood's group was destroyed (or dcoll "
                           "finished); it can only be freed", c->fn);
    c->nbh = n;
    *g = n->group;
    return DCOLL_SUCCESS;
}

/* A call on nbh (c, its fn set), on its group's path. */
static dcoll_status_t nbh_run(dcoll_neighborhood_t *nbh, struct dcoll_coll *c,
                              dcoll_work_t **work)
{
    struct dcoll_group *g = NULL;
    if (work)
        *work = NULL;
    dcoll_status_t st = group_of(nbh, c, &g);
    return st ? st : dcoll_coll_run(g, c, 0, work, NULL);
}

/* A plan of c on nbh, as the group's other plans are made. */
static dcoll_status_t nbh_plan(dcoll_neighborhood_t *nbh,
                               struct dcoll_coll *c, dcoll_plan_t **plan)
{
    struct dcoll_group *g = NULL;
    if (plan)
        *plan = NULL;
    dcoll_status_t st = group_of(nbh, c, &g);
    return st ? st : dcoll_plan_make(g, c, 0, 0, plan);
}

#define COLL(...) struct dcoll_coll c = {__VA_ARGS__}

dcoll_status_t dcoll_neighbor_all_gather(dcoll_neighborhood_t *nbh,
                                         const void *sendbuf, int64_t count,
                                         void *recvbuf, dcoll_dtype_t dtype,
                                         const dcoll_coll_opts_t *opts,
                                         dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_NEIGHBOR_ALL_GATHER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts,
         .fn = __func__);
    return nbh_run(nbh, &c, work);
}

dcoll_status_t dcoll_neighbor_all_to_allv(
    dcoll_neighborhood_t *nbh, const void *sendbuf, const int64_t *sendcounts,
    const int64_t *sdispls, void *recvbuf, const int64_t *recvcounts,
    const int64_t *rdispls, dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
    dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .counts = sendcounts,
         .displs = sdispls, .counts2 = recvcounts, .displs2 = rdispls,
         .opts = opts, .fn = __func__);
    return nbh_run(nbh, &c, work);
}

dcoll_status_t dcoll_neighbor_all_to_allw(
    dcoll_neighborhood_t *nbh, const void *sendbuf,
    const dcoll_layout_t *sendlayouts, void *recvbuf,
    const dcoll_layout_t *recvlayouts, dcoll_dtype_t dtype,
    const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .layout = sendlayouts,
         .layout2 = recvlayouts, .opts = opts, .fn = __func__);
    return nbh_run(nbh, &c, work);
}

dcoll_status_t dcoll_neighbor_all_to_allw_plan(
    dcoll_neighborhood_t *nbh, const void *sendbuf,
    const dcoll_layout_t *sendlayouts, void *recvbuf,
    const dcoll_layout_t *recvlayouts, dcoll_dtype_t dtype,
    const dcoll_coll_opts_t *opts, dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .layout = sendlayouts,
         .layout2 = recvlayouts, .opts = opts, .fn = __func__);
    return nbh_plan(nbh, &c, plan);
}

dcoll_status_t dcoll_neighbor_all_gather_plan(dcoll_neighborhood_t *nbh,
                                              const void *sendbuf,
                                              int64_t count, void *recvbuf,
                                              dcoll_dtype_t dtype,
                                              const dcoll_coll_opts_t *opts,
                                              dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_NEIGHBOR_ALL_GATHER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts,
         .fn = __func__);
    return nbh_plan(nbh, &c, plan);
}

dcoll_status_t dcoll_neighbor_all_to_allv_plan(
    dcoll_neighborhood_t *nbh, const void *sendbuf, const int64_t *sendcounts,
    const int64_t *sdispls, void *recvbuf, const int64_t *recvcounts,
    const int64_t *rdispls, dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
    dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .counts = sendcounts,
         .displs = sdispls, .counts2 = recvcounts, .displs2 = rdispls,
         .opts = opts, .fn = __func__);
    return nbh_plan(nbh, &c, plan);
}
