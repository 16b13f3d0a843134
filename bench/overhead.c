/* dcoll's cost per call above the raw MPI call, for callgrind: each pair
 * of loops below makes the same small call N times on one rank, once
 * through dcoll and once straight to MPI on the group's own communicator.
 * bench/overhead.sh runs this under callgrind and divides the difference
 * of the loops' inclusive instruction counts by N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include "dcoll/dcoll_mpi.h"

#define N 10000
#define NOINLINE __attribute__((noipa))  /* never inlined nor merged */

static MPI_Comm comm;
static float s[64], r[64];
/* DCOLL_OVERHEAD_MEMORY=host: every call says its buffers are host
 * memory (opts.memory), as a host code on a GPU machine can. */
static const dcoll_coll_opts_t *opts;
static dcoll_coll_opts_t host_opts = DCOLL_COLL_OPTS_INIT;

#define PAIR(name, dcoll_call, raw_call)                                     \
    NOINLINE static int via_dcoll_##name(void)                                   \
    {                                                                        \
        int bad = 0;                                                         \
        for (int i = 0; i < N; i++)                                          \
            bad |= (dcoll_call) != DCOLL_SUCCESS;                            \
        return bad;                                                          \
    }                                                                        \
    NOINLINE static int via_mpi_##name(void)                                     \
    {                                                                        \
        int bad = 0;                                                         \
        for (int i = 0; i < N; i++)                                          \
            bad |= (raw_call) != MPI_SUCCESS;                                \
        return bad;                                                          \
    }

PAIR(all_reduce,
     dcoll_all_reduce(NULL, s, r, 2, DCOLL_FLOAT32, DCOLL_SUM, opts, NULL),
     MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, comm))
PAIR(broadcast,
     dcoll_broadcast(NULL, r, 2, DCOLL_FLOAT32, 0, opts, NULL),
     MPI_Bcast(r, 2, MPI_FLOAT, 0, comm))
PAIR(reduce,
     dcoll_reduce(NULL, s, r, 2, DCOLL_FLOAT32, DCOLL_SUM, 0, opts, NULL),
     MPI_Reduce(s, r, 2, MPI_FLOAT, MPI_SUM, 0, comm))
PAIR(all_gather,
     dcoll_all_gather(NULL, s, r, 2, DCOLL_FLOAT32, opts, NULL),
     MPI_Allgather(s, 2, MPI_FLOAT, r, 2, MPI_FLOAT, comm))
PAIR(reduce_scatter,
     dcoll_reduce_scatter(NULL, s, r, 2, DCOLL_FLOAT32, DCOLL_SUM, opts,
                          NULL),
     MPI_Reduce_scatter_block(s, r, 2, MPI_FLOAT, MPI_SUM, comm))
PAIR(all_to_all,
     dcoll_all_to_all(NULL, s, r, 2, DCOLL_FLOAT32, opts, NULL),
     MPI_Alltoall(s, 2, MPI_FLOAT, r, 2, MPI_FLOAT, comm))
PAIR(barrier, dcoll_barrier(NULL, opts, NULL), MPI_Barrier(comm))

/* Async: the handle's life (make, wait, free) against request + wait. */
static dcoll_status_t dcoll_iallreduce(void)
{
    dcoll_work_t *w;
    dcoll_status_t st = dcoll_all_reduce(NULL, s, r, 2, DCOLL_FLOAT32,
                                         DCOLL_SUM, opts, &w);
    if (st == DCOLL_SUCCESS)
        st = dcoll_work_wait(w);
    dcoll_work_free(&w);
    return st;
}

static int mpi_iallreduce(void)
{
    MPI_Request rq;
    int rc = MPI_Iallreduce(s, r, 2, MPI_FLOAT, MPI_SUM, comm, &rq);
    return rc == MPI_SUCCESS ? MPI_Wait(&rq, MPI_STATUS_IGNORE) : rc;
}

PAIR(all_reduce_async, dcoll_iallreduce(), mpi_iallreduce())

/* Plans: a start against the MPI call it makes, as DCOLL_PLAN_CALLS=auto
 * picks: MPICH's persistent request (MPI_Start + MPI_Wait); Open MPI's
 * blocking call, and for an async start its persistent request. */
#if MPI_VERSION < 4 && defined(OPEN_MPI)
#include <mpi-ext.h>
#endif
static dcoll_plan_t *p_ar, *p_agv, *p_bar;
static int64_t v64[1] = {2}, d64[1] = {0};
static int vi[1] = {2}, di[1] = {0};
#if MPI_VERSION >= 4
static MPI_Request q_ar;
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define OMPI_PCOLL 1
static MPI_Request q_ar;
#endif

static int started(MPI_Request *q)
{
    int rc = MPI_Start(q);
    return rc == MPI_SUCCESS ? MPI_Wait(q, MPI_STATUS_IGNORE) : rc;
}

static dcoll_status_t plan_async(dcoll_plan_t *p)
{
    dcoll_work_t *w;
    dcoll_status_t st = dcoll_plan_start(p, &w);
    return st ? st : dcoll_work_wait(w);
}

/* A blocking start makes the call its plan's trial kept: on one rank
 * under callgrind always the blocking call (MPICH's persistent
 * all_reduce's start and wait take 1,314 instructions, its MPI_Allreduce
 * 472), so that is the raw side on both MPIs. */
#if MPI_VERSION >= 4
#define RAW_AR MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, comm)
#define RAW_AR_ASYNC started(&q_ar)
/* all_gatherv with displacements: MPICH's persistent form is not used
 * there (dcoll moves this rank's block first), but its blocking call. */
#define RAW_AGV MPI_Allgatherv(s, 2, MPI_FLOAT, r, vi, di, MPI_FLOAT, comm)
#define RAW_BAR MPI_Barrier(comm)
#else
#define RAW_AR MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, comm)
#ifdef OMPI_PCOLL
#define RAW_AR_ASYNC started(&q_ar)
#else
#define RAW_AR_ASYNC mpi_iallreduce()
#endif
#define RAW_AGV MPI_Allgatherv(s, 2, MPI_FLOAT, r, vi, di, MPI_FLOAT, comm)
#define RAW_BAR MPI_Barrier(comm)
#endif
PAIR(plan_all_reduce, dcoll_plan_start(p_ar, NULL), RAW_AR)
PAIR(plan_all_reduce_async, plan_async(p_ar), RAW_AR_ASYNC)
PAIR(plan_all_gatherv, dcoll_plan_start(p_agv, NULL), RAW_AGV)
PAIR(plan_barrier, dcoll_plan_start(p_bar, NULL), RAW_BAR)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (dcoll_init_comm(MPI_COMM_WORLD) ||
        dcoll_group_mpi_comm(NULL, &comm)) {
        fprintf(stderr, "overhead: %s\n", dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *mem = getenv("DCOLL_OVERHEAD_MEMORY");
    if (mem && !strcmp(mem, "host")) {
        host_opts.mask = DCOLL_COLL_OPT_MEMORY;
        host_opts.memory = DCOLL_MEMORY_HOST;
        opts = &host_opts;
    }
    int bad = 0;
    if (dcoll_all_reduce_plan(NULL, s, r, 2, DCOLL_FLOAT32, DCOLL_SUM, opts,
                              &p_ar) ||
        dcoll_all_gatherv_plan(NULL, s, 2, r, v64, d64, DCOLL_FLOAT32, opts,
                               &p_agv) ||
        dcoll_barrier_plan(NULL, opts, &p_bar)) {
        fprintf(stderr, "overhead: %s\n", dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#if MPI_VERSION >= 4
    MPI_Allreduce_init(s, r, 2, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL,
                       &q_ar);
#else
#ifdef OMPI_PCOLL
    MPIX_Allreduce_init(s, r, 2, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL,
                        &q_ar);
#endif
    (void)started;
    (void)vi;
    (void)di;
#endif
    /* Twice: the first pass warms caches and binds lazy symbols; the stats
     * are zeroed after it, so callgrind counts the second pass only. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            CALLGRIND_ZERO_STATS;
        bad |= via_mpi_all_reduce() | via_dcoll_all_reduce();
        bad |= via_mpi_broadcast() | via_dcoll_broadcast();
        bad |= via_mpi_reduce() | via_dcoll_reduce();
        bad |= via_mpi_all_gather() | via_dcoll_all_gather();
        bad |= via_mpi_reduce_scatter() | via_dcoll_reduce_scatter();
        bad |= via_mpi_all_to_all() | via_dcoll_all_to_all();
        bad |= via_mpi_barrier() | via_dcoll_barrier();
        bad |= via_mpi_all_reduce_async() | via_dcoll_all_reduce_async();
        bad |= via_mpi_plan_all_reduce() | via_dcoll_plan_all_reduce();
        bad |= via_mpi_plan_all_reduce_async() |
               via_dcoll_plan_all_reduce_async();
        bad |= via_mpi_plan_all_gatherv() | via_dcoll_plan_all_gatherv();
        bad |= via_mpi_plan_barrier() | via_dcoll_plan_barrier();
    }
    if (bad)
        fprintf(stderr, "overhead: a call failed: %s\n", dcoll_last_error());
    printf("calls per loop: %d\n", N);
    dcoll_plan_free(&p_ar);
    dcoll_plan_free(&p_agv);
    dcoll_plan_free(&p_bar);
#if MPI_VERSION >= 4
    MPI_Request_free(&q_ar);
#elif defined(OMPI_PCOLL)
    MPI_Request_free(&q_ar);
#endif
    dcoll_finalize();
    MPI_Finalize();
    return bad;
}
