/* dcoll-perf -P: plans (persistent collectives). dcoll's side is one
 * plan per size, started (and with -a waited for) each call; the raw side
 * is MPI's blocking call (-a: nonblocking + wait), and a third side MPI's
 * own persistent request, made once per size, MPI_Start + MPI_Wait: MPI
 * 4's MPI_<Name>_init, or Open MPI 4.1's MPIX_<Name>_init. */
#include <stdlib.h>
#include <string.h>
#include "perf.h"

#if MPI_VERSION >= 4
#define PINIT(name) MPI_##name##_init
#define HAVE_PINIT 1
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PINIT(name) MPIX_##name##_init
#define HAVE_PINIT 1
#endif
#endif

static dcoll_plan_t *plan[2];
static MPI_Request preq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
static int nplan, npreq;

/* The vector forms' arrays, every rank's count the same (as colls.c). */
static int64_t *v64, *d64;
static int *vi, *di;

static int arrays(struct perf_ctx *c)
{
    size_t n = (size_t)c->size;
    free(v64);
    free(d64);
    free(vi);
    free(di);
    v64 = malloc(n * sizeof(*v64));
    d64 = malloc(n * sizeof(*d64));
    vi = malloc(n * sizeof(*vi));
    di = malloc(n * sizeof(*di));
    if (!v64 || !d64 || !vi || !di || c->count > 0x7fffffff / (int64_t)n)
        return 1;
    for (size_t i = 0; i < n; i++) {
        v64[i] = c->count;
        d64[i] = c->count * (int64_t)i;
        vi[i] = c->raw_count;
        di[i] = (int)((int64_t)c->raw_count * (int64_t)i);
    }
    return 0;
}

static int world_of(struct perf_ctx *c, int grank)
{
    int w = grank;
    dcoll_group_global_rank(c->group, grank, &w);
    return w;
}

/* Whether MPI's persistent form of k gives right results here. MPICH
 * 4.0.2's gather, scatter and all_gather do not (see
 * mpi_layer/rows.c): their column stays empty. */
static bool raw_persists(const struct perf_coll *k)
{
    (void)k;
#ifndef HAVE_PINIT
    return false;
#else
#ifdef MPICH
    if (!strcmp(k->name, "gather") || !strcmp(k->name, "scatter") ||
        !strcmp(k->name, "all_gather"))
        return false;
#endif
    return true;
#endif
}

/* ---- dcoll's plans, one maker a kind ---- */

#define G (c->group)
#define CNT (c->count)
#define DT (c->o->dtype)
#define OP (c->o->op)
#define ROOT_R (c->rank == c->groot ? c->recv : NULL)
#define ROOT_S (c->rank == c->groot ? c->send : NULL)

static int mk_all_reduce(struct perf_ctx *c)
{
    return dcoll_all_reduce_plan(G, c->send, c->recv, CNT, DT, OP, c->opts,
                                 &plan[0]);
}
static int mk_broadcast(struct perf_ctx *c)
{
    return dcoll_broadcast_plan(G, c->recv, CNT, DT, c->root, c->opts,
                                &plan[0]);
}
static int mk_reduce(struct perf_ctx *c)
{
    return dcoll_reduce_plan(G, c->send, ROOT_R, CNT, DT, OP, c->root,
                             c->opts, &plan[0]);
}
static int mk_all_gather(struct perf_ctx *c)
{
    return dcoll_all_gather_plan(G, c->send, c->recv, CNT, DT, c->opts,
                                 &plan[0]);
}
static int mk_gather(struct perf_ctx *c)
{
    return dcoll_gather_plan(G, c->send, ROOT_R, CNT, DT, c->root, c->opts,
                             &plan[0]);
}
static int mk_scatter(struct perf_ctx *c)
{
    return dcoll_scatter_plan(G, ROOT_S, c->recv, CNT, DT, c->root, c->opts,
                              &plan[0]);
}
static int mk_reduce_scatter(struct perf_ctx *c)
{
    return dcoll_reduce_scatter_plan(G, c->send, c->recv, CNT, DT, OP,
                                     c->opts, &plan[0]);
}
static int mk_all_to_all(struct perf_ctx *c)
{
    return dcoll_all_to_all_plan(G, c->send, c->recv, CNT, DT, c->opts,
                                 &plan[0]);
}
static int mk_barrier(struct perf_ctx *c)
{
    return dcoll_barrier_plan(G, c->opts, &plan[0]);
}
static int mk_send_recv(struct perf_ctx *c)
{
    int next = world_of(c, (c->rank + 1) % c->size);
    int prev = world_of(c, (c->rank + c->size - 1) % c->size);
    nplan = 2;
    return dcoll_recv_plan(G, c->recv, CNT, DT, prev, 1, c->opts,
                           &plan[0]) ||
           dcoll_send_plan(G, c->send, CNT, DT, next, 1, c->opts, &plan[1]);
}
static int mk_all_gatherv(struct perf_ctx *c)
{
    return arrays(c) || dcoll_all_gatherv_plan(G, c->send, CNT, c->recv, v64,
                                               d64, DT, c->opts, &plan[0]);
}
static int mk_gatherv(struct perf_ctx *c)
{
    return arrays(c) || dcoll_gatherv_plan(G, c->send, CNT, c->recv, v64,
                                           d64, DT, c->root, c->opts,
                                           &plan[0]);
}
static int mk_scatterv(struct perf_ctx *c)
{
    return arrays(c) || dcoll_scatterv_plan(G, c->send, v64, d64, c->recv,
                                            CNT, DT, c->root, c->opts,
                                            &plan[0]);
}
static int mk_all_to_allv(struct perf_ctx *c)
{
    return arrays(c) || dcoll_all_to_allv_plan(G, c->send, v64, d64, c->recv,
                                               v64, d64, DT, c->opts,
                                               &plan[0]);
}
static int mk_reduce_scatterv(struct perf_ctx *c)
{
    return arrays(c) || dcoll_reduce_scatterv_plan(G, c->send, c->recv, v64,
                                                   DT, OP, c->opts,
                                                   &plan[0]);
}
static int mk_scan(struct perf_ctx *c)
{
    return dcoll_scan_plan(G, c->send, c->recv, CNT, DT, OP, c->opts,
                           &plan[0]);
}
static int mk_exscan(struct perf_ctx *c)
{
    return dcoll_exscan_plan(G, c->send, c->recv, CNT, DT, OP, c->opts,
                             &plan[0]);
}

/* The neighbourhood kinds on colls.c's ring (perf_ring). */
static struct perf_ring ring;

static int mk_neighbor_all_gather(struct perf_ctx *c)
{
    return perf_ring(c, false, &ring) ||
           dcoll_neighbor_all_gather_plan(ring.nb, c->send, CNT, c->recv, DT,
                                          c->opts, &plan[0]);
}
static int mk_neighbor_all_to_allv(struct perf_ctx *c)
{
    return perf_ring(c, false, &ring) ||
           dcoll_neighbor_all_to_allv_plan(ring.nb, c->send, ring.v64,
                                           ring.d64, c->recv, ring.v64,
                                           ring.d64, DT, c->opts, &plan[0]);
}
static int mk_neighbor_all_to_allw(struct perf_ctx *c)
{
    return perf_ring(c, true, &ring) ||
           dcoll_neighbor_all_to_allw_plan(ring.nb, c->send, ring.wl[0],
                                           c->recv, ring.wl[1], DT, c->opts,
                                           &plan[0]);
}

/* ---- MPI's persistent requests, the same calls by hand ---- */
#ifdef HAVE_PINIT
#define M (c->comm)
#define RN (c->raw_count)
#define T (c->raw_type)
#define O (c->raw_op)
#define IN MPI_INFO_NULL

static int rq_all_reduce(struct perf_ctx *c)
{
    return PINIT(Allreduce)(c->send, c->recv, RN, T, O, M, IN, preq);
}
static int rq_broadcast(struct perf_ctx *c)
{
    return PINIT(Bcast)(c->recv, RN, T, c->groot, M, IN, preq);
}
static int rq_reduce(struct perf_ctx *c)
{
    return PINIT(Reduce)(c->send, c->recv, RN, T, O, c->groot, M, IN, preq);
}
static int rq_all_gather(struct perf_ctx *c)
{
    return PINIT(Allgather)(c->send, RN, T, c->recv, RN, T, M, IN, preq);
}
static int rq_gather(struct perf_ctx *c)
{
    return PINIT(Gather)(c->send, RN, T, c->recv, RN, T, c->groot, M, IN,
                         preq);
}
static int rq_scatter(struct perf_ctx *c)
{
    return PINIT(Scatter)(c->send, RN, T, c->recv, RN, T, c->groot, M, IN,
                          preq);
}
static int rq_reduce_scatter(struct perf_ctx *c)
{
    return PINIT(Reduce_scatter_block)(c->send, c->recv, RN, T, O, M, IN,
                                       preq);
}
static int rq_all_to_all(struct perf_ctx *c)
{
    return PINIT(Alltoall)(c->send, RN, T, c->recv, RN, T, M, IN, preq);
}
static int rq_barrier(struct perf_ctx *c)
{
    return PINIT(Barrier)(M, IN, preq);
}
static int rq_send_recv(struct perf_ctx *c)
{
    int next = (c->rank + 1) % c->size;
    int prev = (c->rank + c->size - 1) % c->size;
    npreq = 2;
    return MPI_Recv_init(c->recv, RN, T, prev, 1, M, &preq[0]) ||
           MPI_Send_init(c->send, RN, T, next, 1, M, &preq[1]);
}
static int rq_all_gatherv(struct perf_ctx *c)
{
    return PINIT(Allgatherv)(c->send, RN, T, c->recv, vi, di, T, M, IN, preq);
}
static int rq_gatherv(struct perf_ctx *c)
{
    return PINIT(Gatherv)(c->send, RN, T, c->recv, vi, di, T, c->groot, M,
                          IN, preq);
}
static int rq_scatterv(struct perf_ctx *c)
{
    return PINIT(Scatterv)(c->send, vi, di, T, c->recv, RN, T, c->groot, M,
                           IN, preq);
}
static int rq_all_to_allv(struct perf_ctx *c)
{
    return PINIT(Alltoallv)(c->send, vi, di, T, c->recv, vi, di, T, M, IN,
                            preq);
}
static int rq_reduce_scatterv(struct perf_ctx *c)
{
    return PINIT(Reduce_scatter)(c->send, c->recv, vi, T, O, M, IN, preq);
}
static int rq_scan(struct perf_ctx *c)
{
    return PINIT(Scan)(c->send, c->recv, RN, T, O, M, IN, preq);
}
static int rq_exscan(struct perf_ctx *c)
{
    return PINIT(Exscan)(c->send, c->recv, RN, T, O, M, IN, preq);
}
static int rq_neighbor_all_gather(struct perf_ctx *c)
{
    return PINIT(Neighbor_allgather)(c->send, RN, T, c->recv, RN, T,
                                     ring.comm, IN, preq);
}
static int rq_neighbor_all_to_allv(struct perf_ctx *c)
{
    return PINIT(Neighbor_alltoallv)(c->send, ring.vi, ring.di, T, c->recv,
                                     ring.vi, ring.di, T, ring.comm, IN,
                                     preq);
}
/* The displacements stay put while the request lives (MPI's rule). */
static MPI_Aint w_sd[2], w_rd[2];
static const int w_one[2] = {1, 1};
static int rq_neighbor_all_to_allw(struct perf_ctx *c)
{
    MPI_Aint esz = (MPI_Aint)c->esz;
    w_sd[0] = 0, w_sd[1] = esz;
    w_rd[0] = 0, w_rd[1] = c->count * esz;
    return PINIT(Neighbor_alltoallw)(c->send, w_one, w_sd, ring.wt[0],
                                     c->recv, w_one, w_rd, ring.wt[1],
                                     ring.comm, IN, preq);
}
#define RQ(fn) rq_##fn
#else
#define RQ(fn) NULL
#endif

#define ROW(nm) {#nm, mk_##nm, RQ(nm)}
/* Every kind dcoll has a plan of (transport-table holds each kind to a
 * row here, send and recv to send_recv's). */
const struct perf_plan_row perf_plan_rows[] = {
    ROW(all_reduce), ROW(broadcast), ROW(reduce), ROW(all_gather),
    ROW(gather), ROW(scatter), ROW(reduce_scatter), ROW(all_to_all),
    ROW(barrier), ROW(send_recv), ROW(all_gatherv), ROW(gatherv),
    ROW(scatterv), ROW(all_to_allv), ROW(reduce_scatterv), ROW(scan),
    ROW(exscan), ROW(neighbor_all_gather), ROW(neighbor_all_to_allv),
    ROW(neighbor_all_to_allw),
};
const int perf_nplan_rows = sizeof(perf_plan_rows) /
                            sizeof(perf_plan_rows[0]);

static const struct perf_plan_row *row_of(const struct perf_coll *k)
{
    for (int i = 0; i < perf_nplan_rows; i++)
        if (!strcmp(k->name, perf_plan_rows[i].name))
            return &perf_plan_rows[i];
    return NULL;
}

bool perf_plan_has(const struct perf_coll *k)
{
    return row_of(k) != NULL;
}

int perf_plan_make(struct perf_ctx *c, const struct perf_coll *k)
{
    const struct perf_plan_row *row = row_of(k);
    if (!row)
        return -1;   /* no plan form */
    nplan = npreq = 1;
    if (row->make(c))
        return 1;
    /* On GPU buffers (-m cuda) the raw side stays NCCL's or staging's
     * by hand: MPI's persistent calls would read device memory. */
    if (!row->raw || !raw_persists(k) || c->cuda) {
        npreq = 0;
        return 0;
    }
    return row->raw(c) != MPI_SUCCESS;
}

bool perf_plan_raw(void)
{
    return npreq > 0;
}

void perf_plan_free(void)
{
    for (int i = 0; i < nplan; i++)
        dcoll_plan_free(&plan[i]);
    for (int i = 0; i < npreq; i++)
        if (preq[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&preq[i]);
    nplan = npreq = 0;
}

int perf_plan_d(struct perf_ctx *c)
{
    if (nplan == 2) {
        dcoll_work_t *w[2];
        return dcoll_plan_start(plan[0], &w[0]) ||
               dcoll_plan_start(plan[1], &w[1]) ||
               dcoll_work_wait_all(w, 2, NULL);
    }
    if (!c->o->async)
        return dcoll_plan_start(plan[0], NULL) != DCOLL_SUCCESS;
    dcoll_work_t *w;
    return dcoll_plan_start(plan[0], &w) || dcoll_work_wait(w);
}

int perf_plan_p(struct perf_ctx *c)
{
    (void)c;
    if (npreq == 2)
        return MPI_Startall(2, preq) ||
               MPI_Waitall(2, preq, MPI_STATUSES_IGNORE);
    return MPI_Start(preq) || MPI_Wait(preq, MPI_STATUS_IGNORE);
}
