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

bool perf_plan_has(const struct perf_coll *k)
{
    static const char *const with[] = {
        "all_reduce", "broadcast", "reduce", "all_gather", "gather",
        "scatter", "reduce_scatter", "all_to_all", "barrier", "send_recv",
        "all_gatherv", "gatherv", "scatterv", "all_to_allv",
        "reduce_scatterv",
    };
    for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++)
        if (!strcmp(k->name, with[i]))
            return true;
    return false;
}

int perf_plan_make(struct perf_ctx *c, const struct perf_coll *k)
{
    dcoll_group_t *g = c->group;
    const char *n = k->name;
    void *s = c->send, *r = c->recv;
    int64_t cnt = c->count;
    dcoll_dtype_t dt = c->o->dtype;
    dcoll_op_t op = c->o->op;
    int rc = 0;
    nplan = 1;
    npreq = 1;
    bool root = c->rank == c->groot;
    if (n[strlen(n) - 1] == 'v' && arrays(c))
        return 1;
    if (!strcmp(n, "all_reduce"))
        rc = dcoll_all_reduce_plan(g, s, r, cnt, dt, op, c->opts,
                                   &plan[0]);
    else if (!strcmp(n, "broadcast"))
        rc = dcoll_broadcast_plan(g, r, cnt, dt, c->root, c->opts, &plan[0]);
    else if (!strcmp(n, "reduce"))
        rc = dcoll_reduce_plan(g, s, root ? r : NULL, cnt, dt, op, c->root,
                               c->opts, &plan[0]);
    else if (!strcmp(n, "all_gather"))
        rc = dcoll_all_gather_plan(g, s, r, cnt, dt, c->opts, &plan[0]);
    else if (!strcmp(n, "gather"))
        rc = dcoll_gather_plan(g, s, root ? r : NULL, cnt, dt, c->root,
                               c->opts, &plan[0]);
    else if (!strcmp(n, "scatter"))
        rc = dcoll_scatter_plan(g, root ? s : NULL, r, cnt, dt, c->root,
                                c->opts, &plan[0]);
    else if (!strcmp(n, "reduce_scatter"))
        rc = dcoll_reduce_scatter_plan(g, s, r, cnt, dt, op, c->opts,
                                       &plan[0]);
    else if (!strcmp(n, "all_to_all"))
        rc = dcoll_all_to_all_plan(g, s, r, cnt, dt, c->opts, &plan[0]);
    else if (!strcmp(n, "barrier"))
        rc = dcoll_barrier_plan(g, c->opts, &plan[0]);
    else if (!strcmp(n, "send_recv")) {
        int next = world_of(c, (c->rank + 1) % c->size);
        int prev = world_of(c, (c->rank + c->size - 1) % c->size);
        nplan = npreq = 2;
        rc = dcoll_recv_plan(g, r, cnt, dt, prev, 1, c->opts, &plan[0]) ||
             dcoll_send_plan(g, s, cnt, dt, next, 1, c->opts, &plan[1]);
    } else if (!strcmp(n, "all_gatherv"))
        rc = dcoll_all_gatherv_plan(g, s, cnt, r, v64, d64, dt, c->opts,
                                    &plan[0]);
    else if (!strcmp(n, "gatherv"))
        rc = dcoll_gatherv_plan(g, s, cnt, r, v64, d64, dt, c->root, c->opts,
                                &plan[0]);
    else if (!strcmp(n, "scatterv"))
        rc = dcoll_scatterv_plan(g, s, v64, d64, r, cnt, dt, c->root, c->opts,
                                 &plan[0]);
    else if (!strcmp(n, "all_to_allv"))
        rc = dcoll_all_to_allv_plan(g, s, v64, d64, r, v64, d64, dt, c->opts,
                                    &plan[0]);
    else if (!strcmp(n, "reduce_scatterv"))
        rc = dcoll_reduce_scatterv_plan(g, s, r, v64, dt, op, c->opts,
                                        &plan[0]);
    else
        return -1;   /* no plan form */
    if (rc)
        return 1;
    /* On GPU buffers (-m cuda) the raw side stays NCCL's or staging's
     * by hand: MPI's persistent calls would read device memory. */
    if (!raw_persists(k) || c->cuda) {
        npreq = 0;
        return 0;
    }
#ifdef HAVE_PINIT
    MPI_Comm m = c->comm;
    MPI_Info in = MPI_INFO_NULL;
    MPI_Datatype t = c->raw_type;
    MPI_Op o = c->raw_op;
    int rn = c->raw_count, gr = c->groot;
    MPI_Request *q = preq;
    if (!strcmp(n, "all_reduce"))
        rc = PINIT(Allreduce)(s, r, rn, t, o, m, in, q);
    else if (!strcmp(n, "broadcast"))
        rc = PINIT(Bcast)(r, rn, t, gr, m, in, q);
    else if (!strcmp(n, "reduce"))
        rc = PINIT(Reduce)(s, r, rn, t, o, gr, m, in, q);
    else if (!strcmp(n, "all_gather"))
        rc = PINIT(Allgather)(s, rn, t, r, rn, t, m, in, q);
    else if (!strcmp(n, "gather"))
        rc = PINIT(Gather)(s, rn, t, r, rn, t, gr, m, in, q);
    else if (!strcmp(n, "scatter"))
        rc = PINIT(Scatter)(s, rn, t, r, rn, t, gr, m, in, q);
    else if (!strcmp(n, "reduce_scatter"))
        rc = PINIT(Reduce_scatter_block)(s, r, rn, t, o, m, in, q);
    else if (!strcmp(n, "all_to_all"))
        rc = PINIT(Alltoall)(s, rn, t, r, rn, t, m, in, q);
    else if (!strcmp(n, "barrier"))
        rc = PINIT(Barrier)(m, in, q);
    else if (!strcmp(n, "send_recv")) {
        int next = (c->rank + 1) % c->size;
        int prev = (c->rank + c->size - 1) % c->size;
        rc = MPI_Recv_init(r, rn, t, prev, 1, m, &q[0]) ||
             MPI_Send_init(s, rn, t, next, 1, m, &q[1]);
    } else if (!strcmp(n, "all_gatherv"))
        rc = PINIT(Allgatherv)(s, rn, t, r, vi, di, t, m, in, q);
    else if (!strcmp(n, "gatherv"))
        rc = PINIT(Gatherv)(s, rn, t, r, vi, di, t, gr, m, in, q);
    else if (!strcmp(n, "scatterv"))
        rc = PINIT(Scatterv)(s, vi, di, t, r, rn, t, gr, m, in, q);
    else if (!strcmp(n, "all_to_allv"))
        rc = PINIT(Alltoallv)(s, vi, di, t, r, vi, di, t, m, in, q);
    else
        rc = PINIT(Reduce_scatter)(s, r, vi, t, o, m, in, q);
#endif
    return rc != 0;
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
