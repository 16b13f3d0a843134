/* The table of kind_calls.h: each kind's blocking call, its plan and the
 * check of its result, on the data kind_calls.h describes. */
#include <stdio.h>
#include <string.h>
#include "kind_calls.h"

#define C KC_COUNT
#define I32 DCOLL_INT32

/* What rank r put at element k of its input. */
static int32_t v(int r, int k)
{
    return (int32_t)(r * 100 + k);
}

/* The sum over ranks lo..hi-1 of v(r, k). */
static int32_t sum(int lo, int hi, int k)
{
    int32_t s = 0;
    for (int r = lo; r < hi; r++)
        s += v(r, k);
    return s;
}

static bool want(struct kc_ctx *c, const int32_t *buf, int at, int32_t w)
{
    if (buf[at] == w)
        return true;
    snprintf(c->what, sizeof(c->what), "element %d is %d, want %d (rank %d "
             "of %d)", at, (int)buf[at], (int)w, c->me, c->n);
    return false;
}

void kc_fill(struct kc_ctx *c)
{
    for (int k = 0; k < C * KC_MAX_RANKS; k++) {
        c->in[k] = v(c->me, k);
        c->out[k] = -1;
    }
    c->what[0] = '\0';
}

dcoll_status_t kc_begin(struct kc_ctx *c, dcoll_group_t *g)
{
    memset(c, 0, sizeof(*c));
    c->g = g;
    dcoll_status_t st;
    if ((st = dcoll_group_rank(g, &c->me)) ||
        (st = dcoll_group_size(g, &c->n)))
        return st;
    if (c->n > KC_MAX_RANKS)
        return DCOLL_ERR_INVALID_ARGUMENT;
    c->root = c->n - 1;
    if ((st = dcoll_group_global_rank(g, c->me, &c->world_me)) ||
        (st = dcoll_group_global_rank(g, c->root, &c->world_root)) ||
        (st = dcoll_group_global_rank(g, (c->me + 1) % c->n, &c->next)) ||
        (st = dcoll_group_global_rank(g, (c->me + c->n - 1) % c->n,
                                      &c->prev)))
        return st;
    for (int r = 0; r < c->n; r++) {
        c->counts[r] = C;
        c->displs[r] = (int64_t)C * r;
    }
    c->ncounts[0] = C;
    c->ndispls[0] = 0;
    c->slay[0] = c->rlay[0] = (dcoll_layout_t){0, 1, C, C, 0, 0};
    kc_fill(c);
    return dcoll_neighborhood_create(g, 1, &c->prev, 1, &c->next, &c->nbh);
}

void kc_done(struct kc_ctx *c)
{
    dcoll_neighborhood_free(&c->nbh);
}

dcoll_status_t kc_start(struct kc_ctx *c, dcoll_plan_t *p, bool async)
{
    kc_fill(c);
    dcoll_work_t *w = NULL;
    dcoll_status_t st = dcoll_plan_start(p, async ? &w : NULL);
    if (!st && w)
        st = dcoll_work_wait(w);
    dcoll_work_free(&w);
    return st;
}

/* ---- the calls ---- */

static dcoll_status_t run_broadcast(struct kc_ctx *c)
{
    return dcoll_broadcast(c->g, c->in, C, I32, c->world_root, c->opts, NULL);
}
static dcoll_status_t plan_broadcast(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_broadcast_plan(c->g, c->in, C, I32, c->world_root, c->opts,
                                p);
}
static bool check_broadcast(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->in, k, v(c->root, k)))
            return false;
    return true;
}

static dcoll_status_t run_all_reduce(struct kc_ctx *c)
{
    return dcoll_all_reduce(c->g, c->in, c->out, C, I32, DCOLL_SUM, c->opts,
                            NULL);
}
static dcoll_status_t plan_all_reduce(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_all_reduce_plan(c->g, c->in, c->out, C, I32, DCOLL_SUM,
                                 c->opts, p);
}
static bool check_all_reduce(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, sum(0, c->n, k)))
            return false;
    return true;
}

static dcoll_status_t run_reduce(struct kc_ctx *c)
{
    return dcoll_reduce(c->g, c->in, c->me == c->root ? c->out : NULL, C,
                        I32, DCOLL_SUM, c->world_root, c->opts, NULL);
}
static dcoll_status_t plan_reduce(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_reduce_plan(c->g, c->in, c->me == c->root ? c->out : NULL,
                             C, I32, DCOLL_SUM, c->world_root, c->opts, p);
}
static bool check_reduce(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, c->me == c->root ? sum(0, c->n, k) : -1))
            return false;
    return true;
}

/* out holds block r = rank r's first C elements, for r in 0..n-1. */
static bool gathered(struct kc_ctx *c)
{
    for (int r = 0; r < c->n; r++)
        for (int k = 0; k < C; k++)
            if (!want(c, c->out, C * r + k, v(r, k)))
                return false;
    return true;
}

static bool check_all_gather(struct kc_ctx *c)
{
    return gathered(c);
}
static dcoll_status_t run_all_gather(struct kc_ctx *c)
{
    return dcoll_all_gather(c->g, c->in, c->out, C, I32, c->opts, NULL);
}
static dcoll_status_t plan_all_gather(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_all_gather_plan(c->g, c->in, c->out, C, I32, c->opts, p);
}

static void *root_out(struct kc_ctx *c)
{
    return c->me == c->root ? c->out : NULL;
}
static bool check_gather(struct kc_ctx *c)
{
    return c->me == c->root ? gathered(c) : want(c, c->out, 0, -1);
}
static dcoll_status_t run_gather(struct kc_ctx *c)
{
    return dcoll_gather(c->g, c->in, root_out(c), C, I32, c->world_root,
                        c->opts, NULL);
}
static dcoll_status_t plan_gather(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_gather_plan(c->g, c->in, root_out(c), C, I32, c->world_root,
                             c->opts, p);
}

/* out holds the root's block me. */
static bool check_scatter(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, v(c->root, C * c->me + k)))
            return false;
    return true;
}
static const void *root_in(struct kc_ctx *c)
{
    return c->me == c->root ? c->in : NULL;
}
static dcoll_status_t run_scatter(struct kc_ctx *c)
{
    return dcoll_scatter(c->g, root_in(c), c->out, C, I32, c->world_root,
                         c->opts, NULL);
}
static dcoll_status_t plan_scatter(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_scatter_plan(c->g, root_in(c), c->out, C, I32, c->world_root,
                              c->opts, p);
}

/* out holds block me of the sum. */
static bool check_reduce_scatter(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, sum(0, c->n, C * c->me + k)))
            return false;
    return true;
}
static dcoll_status_t run_reduce_scatter(struct kc_ctx *c)
{
    return dcoll_reduce_scatter(c->g, c->in, c->out, C, I32, DCOLL_SUM,
                                c->opts, NULL);
}
static dcoll_status_t plan_reduce_scatter(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_reduce_scatter_plan(c->g, c->in, c->out, C, I32, DCOLL_SUM,
                                     c->opts, p);
}

/* out's block r is rank r's block me. */
static bool check_all_to_all(struct kc_ctx *c)
{
    for (int r = 0; r < c->n; r++)
        for (int k = 0; k < C; k++)
            if (!want(c, c->out, C * r + k, v(r, C * c->me + k)))
                return false;
    return true;
}
static dcoll_status_t run_all_to_all(struct kc_ctx *c)
{
    return dcoll_all_to_all(c->g, c->in, c->out, C, I32, c->opts, NULL);
}
static dcoll_status_t plan_all_to_all(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_all_to_all_plan(c->g, c->in, c->out, C, I32, c->opts, p);
}

static dcoll_status_t run_barrier(struct kc_ctx *c)
{
    return dcoll_barrier(c->g, c->opts, NULL);
}
static dcoll_status_t plan_barrier(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_barrier_plan(c->g, c->opts, p);
}
static bool check_nothing(struct kc_ctx *c)
{
    return want(c, c->out, 0, -1);
}

/* Send and receive, one call of each on every rank: around the ring,
 * even group ranks sending first, so no rank waits on one that waits; on
 * one rank to and from DCOLL_PROC_NULL (a blocking send to itself is
 * refused), which leaves out as it was. */
static dcoll_status_t run_send_recv(struct kc_ctx *c)
{
    int to = c->n > 1 ? c->next : DCOLL_PROC_NULL;
    int from = c->n > 1 ? c->prev : DCOLL_PROC_NULL;
    dcoll_status_t st;
    if (c->me % 2 == 0 &&
        (st = dcoll_send(c->g, c->in, C, I32, to, 7, c->opts, NULL)))
        return st;
    if ((st = dcoll_recv(c->g, c->out, C, I32, from, 7, c->opts, NULL, NULL)))
        return st;
    if (c->me % 2 == 1)
        return dcoll_send(c->g, c->in, C, I32, to, 7, c->opts, NULL);
    return DCOLL_SUCCESS;
}
static bool check_from_prev(struct kc_ctx *c)
{
    if (c->n == 1)
        return want(c, c->out, 0, -1);
    int prev = (c->me + c->n - 1) % c->n;
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, v(prev, k)))
            return false;
    return true;
}

static dcoll_status_t run_all_gatherv(struct kc_ctx *c)
{
    return dcoll_all_gatherv(c->g, c->in, C, c->out, c->counts, c->displs,
                             I32, c->opts, NULL);
}
static dcoll_status_t plan_all_gatherv(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_all_gatherv_plan(c->g, c->in, C, c->out, c->counts,
                                  c->displs, I32, c->opts, p);
}
static dcoll_status_t run_gatherv(struct kc_ctx *c)
{
    return dcoll_gatherv(c->g, c->in, C, root_out(c), c->counts, c->displs,
                         I32, c->world_root, c->opts, NULL);
}
static dcoll_status_t plan_gatherv(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_gatherv_plan(c->g, c->in, C, root_out(c), c->counts,
                              c->displs, I32, c->world_root, c->opts, p);
}
static dcoll_status_t run_scatterv(struct kc_ctx *c)
{
    return dcoll_scatterv(c->g, root_in(c), c->counts, c->displs, c->out, C,
                          I32, c->world_root, c->opts, NULL);
}
static dcoll_status_t plan_scatterv(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_scatterv_plan(c->g, root_in(c), c->counts, c->displs,
                               c->out, C, I32, c->world_root, c->opts, p);
}
static dcoll_status_t run_all_to_allv(struct kc_ctx *c)
{
    return dcoll_all_to_allv(c->g, c->in, c->counts, c->displs, c->out,
                             c->counts, c->displs, I32, c->opts, NULL);
}
static dcoll_status_t plan_all_to_allv(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_all_to_allv_plan(c->g, c->in, c->counts, c->displs, c->out,
                                  c->counts, c->displs, I32, c->opts, p);
}
static dcoll_status_t run_reduce_scatterv(struct kc_ctx *c)
{
    return dcoll_reduce_scatterv(c->g, c->in, c->out, c->counts, I32,
                                 DCOLL_SUM, c->opts, NULL);
}
static dcoll_status_t plan_reduce_scatterv(struct kc_ctx *c,
                                           dcoll_plan_t **p)
{
    return dcoll_reduce_scatterv_plan(c->g, c->in, c->out, c->counts, I32,
                                      DCOLL_SUM, c->opts, p);
}

static dcoll_status_t run_scan(struct kc_ctx *c)
{
    return dcoll_scan(c->g, c->in, c->out, C, I32, DCOLL_SUM, c->opts, NULL);
}
static dcoll_status_t plan_scan(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_scan_plan(c->g, c->in, c->out, C, I32, DCOLL_SUM, c->opts, p);
}
static bool check_scan(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, sum(0, c->me + 1, k)))
            return false;
    return true;
}
static dcoll_status_t run_exscan(struct kc_ctx *c)
{
    return dcoll_exscan(c->g, c->in, c->out, C, I32, DCOLL_SUM, c->opts, NULL);
}
static dcoll_status_t plan_exscan(struct kc_ctx *c, dcoll_plan_t **p)
{
    return dcoll_exscan_plan(c->g, c->in, c->out, C, I32, DCOLL_SUM, c->opts,
                             p);
}
/* Rank 0's output is left as it was. */
static bool check_exscan(struct kc_ctx *c)
{
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, c->me ? sum(0, c->me, k) : -1))
            return false;
    return true;
}

static dcoll_status_t run_neighbor_all_gather(struct kc_ctx *c)
{
    return dcoll_neighbor_all_gather(c->nbh, c->in, C, c->out, I32, c->opts,
                                     NULL);
}
static dcoll_status_t plan_neighbor_all_gather(struct kc_ctx *c,
                                               dcoll_plan_t **p)
{
    return dcoll_neighbor_all_gather_plan(c->nbh, c->in, C, c->out, I32,
                                          c->opts, p);
}
/* On one rank the ring is an edge to itself: its own block comes back. */
static bool check_neighbor(struct kc_ctx *c)
{
    int prev = (c->me + c->n - 1) % c->n;
    for (int k = 0; k < C; k++)
        if (!want(c, c->out, k, v(prev, k)))
            return false;
    return want(c, c->out, C, -1);
}
static dcoll_status_t run_neighbor_all_to_allv(struct kc_ctx *c)
{
    return dcoll_neighbor_all_to_allv(c->nbh, c->in, c->ncounts, c->ndispls,
                                      c->out, c->ncounts, c->ndispls, I32,
                                      c->opts, NULL);
}
static dcoll_status_t plan_neighbor_all_to_allv(struct kc_ctx *c,
                                                dcoll_plan_t **p)
{
    return dcoll_neighbor_all_to_allv_plan(c->nbh, c->in, c->ncounts,
                                           c->ndispls, c->out, c->ncounts,
                                           c->ndispls, I32, c->opts, p);
}
static dcoll_status_t run_neighbor_all_to_allw(struct kc_ctx *c)
{
    return dcoll_neighbor_all_to_allw(c->nbh, c->in, c->slay, c->out,
                                      c->rlay, I32, c->opts, NULL);
}
static dcoll_status_t plan_neighbor_all_to_allw(struct kc_ctx *c,
                                                dcoll_plan_t **p)
{
    return dcoll_neighbor_all_to_allw_plan(c->nbh, c->in, c->slay, c->out,
                                           c->rlay, I32, c->opts, p);
}

#define ENTRY(kind, nm, mpi_, fn, chk)                                      \
    [kind] = {nm, mpi_, run_##fn, plan_##fn, check_##chk}

/* Send and receive are one step of both (the pair is what can be
 * checked); their plans are a pair too, which test_plan and
 * test_plan_route make, so the table has none. */
const struct kind_call kind_calls[DCOLL_COLL_KIND_COUNT_] = {
    ENTRY(DCOLL_COLL_BROADCAST, "broadcast", "MPI_Bcast", broadcast,
          broadcast),
    ENTRY(DCOLL_COLL_ALL_REDUCE, "all_reduce", "MPI_Allreduce",
          all_reduce, all_reduce),
    ENTRY(DCOLL_COLL_REDUCE, "reduce", "MPI_Reduce", reduce, reduce),
    ENTRY(DCOLL_COLL_ALL_GATHER, "all_gather", "MPI_Allgather",
          all_gather, all_gather),
    ENTRY(DCOLL_COLL_GATHER, "gather", "MPI_Gather", gather, gather),
    ENTRY(DCOLL_COLL_SCATTER, "scatter", "MPI_Scatter", scatter,
          scatter),
    ENTRY(DCOLL_COLL_REDUCE_SCATTER, "reduce_scatter",
          "MPI_Reduce_scatter_block", reduce_scatter, reduce_scatter),
    ENTRY(DCOLL_COLL_ALL_TO_ALL, "all_to_all", "MPI_Alltoall",
          all_to_all, all_to_all),
    ENTRY(DCOLL_COLL_BARRIER, "barrier", "MPI_Barrier", barrier,
          nothing),
    [DCOLL_COLL_SEND] = {"send", "MPI_Send", run_send_recv, NULL,
                         check_from_prev},
    [DCOLL_COLL_RECV] = {"recv", "MPI_Recv", run_send_recv, NULL,
                         check_from_prev},
    ENTRY(DCOLL_COLL_ALL_GATHERV, "all_gatherv", "MPI_Allgatherv",
          all_gatherv, all_gather),
    ENTRY(DCOLL_COLL_GATHERV, "gatherv", "MPI_Gatherv", gatherv,
          gather),
    ENTRY(DCOLL_COLL_SCATTERV, "scatterv", "MPI_Scatterv", scatterv,
          scatter),
    ENTRY(DCOLL_COLL_ALL_TO_ALLV, "all_to_allv", "MPI_Alltoallv",
          all_to_allv, all_to_all),
    ENTRY(DCOLL_COLL_REDUCE_SCATTERV, "reduce_scatterv",
          "MPI_Reduce_scatter", reduce_scatterv, reduce_scatter),
    ENTRY(DCOLL_COLL_SCAN, "scan", "MPI_Scan", scan, scan),
    ENTRY(DCOLL_COLL_EXSCAN, "exscan", "MPI_Exscan", exscan, exscan),
    ENTRY(DCOLL_COLL_NEIGHBOR_ALL_GATHER, "neighbor_all_gather",
          "MPI_Neighbor_allgather", neighbor_all_gather, neighbor),
    ENTRY(DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV, "neighbor_all_to_allv",
          "MPI_Neighbor_alltoallv", neighbor_all_to_allv, neighbor),
    ENTRY(DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW, "neighbor_all_to_allw",
          "MPI_Neighbor_alltoallw", neighbor_all_to_allw, neighbor),
};
