/* Which MPI call each blocking collective reaches, seen through MPI's
 * profiling interface: at default settings (a timeout that ends the job)
 * every blocking collective is exactly one call of MPI's own blocking
 * collective and nothing else; on a group whose timeouts return, none is
 * (dcoll polls nonblocking calls there); with no timeout, the blocking
 * call again. Results are checked too. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"

enum { ALLREDUCE, BCAST, REDUCE, ALLGATHER, GATHER, SCATTER, RSB, ALLTOALL,
       BARRIER, NONBLOCKING, NCOUNT };
static const char *const names[NCOUNT] = {
    "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Allgather",
    "MPI_Gather", "MPI_Scatter", "MPI_Reduce_scatter_block", "MPI_Alltoall",
    "MPI_Barrier", "nonblocking or point-to-point",
};
static int counts[NCOUNT];
int t_rank, t_failures;

/* The blocking collectives dcoll may reach. */
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
                  MPI_Comm c)
{
    counts[ALLREDUCE]++;
    return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    counts[BCAST]++;
    return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
               int root, MPI_Comm c)
{
    counts[REDUCE]++;
    return PMPI_Reduce(s, r, n, t, op, root, c);
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                  MPI_Datatype rt, MPI_Comm c)
{
    counts[ALLGATHER]++;
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn,
               MPI_Datatype rt, int root, MPI_Comm c)
{
    counts[GATHER]++;
    return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
}
int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                MPI_Datatype rt, int root, MPI_Comm c)
{
    counts[SCATTER]++;
    return PMPI_Scatter(s, sn, st, r, rn, rt, root, c);
}
int MPI_Reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t,
                             MPI_Op op, MPI_Comm c)
{
    counts[RSB]++;
    return PMPI_Reduce_scatter_block(s, r, n, t, op, c);
}
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                 MPI_Datatype rt, MPI_Comm c)
{
    counts[ALLTOALL]++;
    return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}
int MPI_Barrier(MPI_Comm c)
{
    counts[BARRIER]++;
    return PMPI_Barrier(c);
}

/* What the polled mode posts instead. */
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
                   MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Iallreduce(s, r, n, t, op, c, rq);
}
int MPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                   MPI_Datatype rt, MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Iallgather(s, sn, st, r, rn, rt, c, rq);
}
int MPI_Igather(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                MPI_Datatype rt, int root, MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Igather(s, sn, st, r, rn, rt, root, c, rq);
}
int MPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c,
               MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Ibcast(b, n, t, root, c, rq);
}
int MPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
                int root, MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Ireduce(s, r, n, t, op, root, c, rq);
}
int MPI_Iscatter(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                 MPI_Datatype rt, int root, MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Iscatter(s, sn, st, r, rn, rt, root, c, rq);
}
int MPI_Ireduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t,
                              MPI_Op op, MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Ireduce_scatter_block(s, r, n, t, op, c, rq);
}
int MPI_Ialltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                  MPI_Datatype rt, MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Ialltoall(s, sn, st, r, rn, rt, c, rq);
}
int MPI_Ibarrier(MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Ibarrier(c, rq);
}
int MPI_Isend(const void *b, int n, MPI_Datatype t, int dst, int tag,
              MPI_Comm c, MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Isend(b, n, t, dst, tag, c, rq);
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c,
              MPI_Request *rq)
{
    counts[NONBLOCKING]++;
    return PMPI_Irecv(b, n, t, src, tag, c, rq);
}

/* Run each blocking collective once on g; with want_blocking, each must
 * be exactly its MPI blocking call, else none may be. */
static void run_all(dcoll_group_t *g, int me, int n, bool want_blocking,
                    const char *mode)
{
    enum { C = 4 };
    int in[C * 8], out[C * 8];
    struct {
        int which;
        const char *fn;
    } steps[] = {
        {ALLREDUCE, "all_reduce"}, {BCAST, "broadcast"}, {REDUCE, "reduce"},
        {ALLGATHER, "all_gather"}, {GATHER, "gather"}, {SCATTER, "scatter"},
        {RSB, "reduce_scatter"}, {ALLTOALL, "all_to_all"},
        {BARRIER, "barrier"},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        for (int k = 0; k < C * n; k++) {
            in[k] = me * 100 + k;
            out[k] = -1;
        }
        memset(counts, 0, sizeof(counts));
        dcoll_status_t st;
        int root = n - 1;
        switch (steps[i].which) {
        case ALLREDUCE:
            st = dcoll_all_reduce(g, in, out, C, DCOLL_INT32, DCOLL_SUM,
                                  NULL, NULL);
            for (int k = 0; k < C; k++)
                CHECK(out[k] == 100 * n * (n - 1) / 2 + n * k,
                      "%s: all_reduce out[%d] = %d", mode, k, out[k]);
            break;
        case BCAST:
            st = dcoll_broadcast(g, in, C, DCOLL_INT32, root, NULL, NULL);
            CHECK(in[1] == root * 100 + 1, "%s: broadcast %d", mode, in[1]);
            break;
        case REDUCE:
            st = dcoll_reduce(g, in, me == root ? out : NULL, C, DCOLL_INT32,
                              DCOLL_MAX, root, NULL, NULL);
            if (me == root)
                CHECK(out[2] == (n - 1) * 100 + 2, "%s: reduce %d", mode,
                      out[2]);
            break;
        case ALLGATHER:
            st = dcoll_all_gather(g, in, out, C, DCOLL_INT32, NULL, NULL);
            CHECK(out[C * (n - 1)] == (n - 1) * 100, "%s: all_gather %d",
                  mode, out[C * (n - 1)]);
            break;
        case GATHER:
            st = dcoll_gather(g, in, me == root ? out : NULL, C, DCOLL_INT32,
                              root, NULL, NULL);
            if (me == root)
                CHECK(out[C * (n - 1)] == (n - 1) * 100, "%s: gather %d",
                      mode, out[C * (n - 1)]);
            break;
        case SCATTER:
            st = dcoll_scatter(g, me == root ? in : NULL, out, C,
                               DCOLL_INT32, root, NULL, NULL);
            CHECK(out[0] == root * 100 + C * me, "%s: scatter %d", mode,
                  out[0]);
            break;
        case RSB:
            st = dcoll_reduce_scatter(g, in, out, C, DCOLL_INT32, DCOLL_SUM,
                                      NULL, NULL);
            CHECK(out[0] == 100 * n * (n - 1) / 2 + n * C * me,
                  "%s: reduce_scatter %d", mode, out[0]);
            break;
        case ALLTOALL:
            st = dcoll_all_to_all(g, in, out, C, DCOLL_INT32, NULL, NULL);
            CHECK(out[0] == C * me, "%s: all_to_all %d", mode, out[0]);
            break;
        default:
            st = dcoll_barrier(g, NULL, NULL);
            break;
        }
        CHECK(st == DCOLL_SUCCESS, "%s: %s: %s", mode, steps[i].fn,
              dcoll_last_error());
        int want = steps[i].which;
        if (want_blocking) {
            for (int k = 0; k < NCOUNT; k++)
                CHECK(counts[k] == (k == want),
                      "%s: dcoll_%s made %d call(s) of %s (want %d)", mode,
                      steps[i].fn, counts[k], names[k], k == want);
        } else {
            CHECK(counts[want] == 0 && counts[NONBLOCKING] > 0,
                  "%s: dcoll_%s made %d call(s) of %s and %d nonblocking",
                  mode, steps[i].fn, counts[want], names[want],
                  counts[NONBLOCKING]);
        }
    }
}

int main(int argc, char **argv)
{
    int provided, me, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    run_all(NULL, me, n, true, "default (abort)");
    dcoll_group_t *g = NULL;
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_SUCCESS, "new_group");
    /* One rank has nothing to wait for: dcoll's polled calls may skip MPI
     * there, so only more ranks say which path ran. */
    if (n > 1)
        run_all(g, me, n, false, "on_timeout return");
    dcoll_group_destroy(&g);
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT;
    gp.timeout = 0;
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_SUCCESS, "new_group");
    run_all(g, me, n, true, "timeout 0");
    dcoll_group_destroy(&g);
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    if (me == 0)
        printf("every blocking collective reached MPI's blocking call by "
               "default (%d ranks)\n", n);
    MPI_Finalize();
    return t_failures ? 1 : 0;
}
