/* The MPI calls a test's process makes, counted by name through MPI's
 * profiling interface while pc_counting is set (pmpi_count.h). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "pmpi_count.h"

/* Every MPI call a kind may reach: the blocking ones first. */
const char *const pc_names[] = {
    "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Allgather",
    "MPI_Gather", "MPI_Scatter", "MPI_Reduce_scatter_block", "MPI_Alltoall",
    "MPI_Barrier", "MPI_Scan", "MPI_Exscan", "MPI_Allgatherv",
    "MPI_Gatherv", "MPI_Scatterv", "MPI_Alltoallv", "MPI_Reduce_scatter",
    "MPI_Neighbor_allgather", "MPI_Neighbor_alltoallv",
    "MPI_Neighbor_alltoallw", "MPI_Send", "MPI_Recv",
    "MPI_Iallreduce", "MPI_Ibcast", "MPI_Ireduce",
    "MPI_Iallgather", "MPI_Igather", "MPI_Iscatter",
    "MPI_Ireduce_scatter_block", "MPI_Ialltoall", "MPI_Ibarrier",
    "MPI_Iscan", "MPI_Iexscan", "MPI_Iallgatherv", "MPI_Igatherv",
    "MPI_Iscatterv", "MPI_Ialltoallv", "MPI_Ireduce_scatter",
    "MPI_Ineighbor_allgather", "MPI_Ineighbor_alltoallv",
    "MPI_Ineighbor_alltoallw", "MPI_Isend", "MPI_Irecv",
    /* Persistent requests: made and started. */
    "MPI_Send_init", "MPI_Recv_init", "MPI_Start",
};
int pc_counts[PC_NNAMES];
bool pc_counting;

int pc_index(const char *name)
{
    for (int i = 0; i < PC_NNAMES; i++)
        if (!strcmp(pc_names[i], name))
            return i;
    return -1;
}

static void counted(const char *name, int n)
{
    int i = pc_index(name);
    if (pc_counting && i >= 0)
        pc_counts[i] += n;
}

void pc_reset(void)
{
    memset(pc_counts, 0, sizeof(pc_counts));
}

int pc_count(const char *name)
{
    int i = pc_index(name);
    return i < 0 ? 0 : pc_counts[i];
}

void pc_totals(int *blocking, int *all)
{
    *blocking = *all = 0;
    for (int i = 0; i < PC_NNAMES; i++) {
        *all += pc_counts[i];
        *blocking += i < PC_NBLOCKING ? pc_counts[i] : 0;
    }
}

#define WRAP(name, params, args)                                           \
    int name params                                                        \
    {                                                                      \
        counted(#name, 1);                                                    \
        return P##name args;                                               \
    }
#define RQ MPI_Request *rq
typedef const void *cv;
typedef const int *ci;
typedef MPI_Datatype T;
WRAP(MPI_Allreduce, (cv s, void *r, int n, T t, MPI_Op o, MPI_Comm c),
     (s, r, n, t, o, c))
WRAP(MPI_Bcast, (void *b, int n, T t, int root, MPI_Comm c),
     (b, n, t, root, c))
WRAP(MPI_Reduce, (cv s, void *r, int n, T t, MPI_Op o, int root,
                  MPI_Comm c), (s, r, n, t, o, root, c))
WRAP(MPI_Allgather, (cv s, int sn, T st, void *r, int rn, T rt, MPI_Comm c),
     (s, sn, st, r, rn, rt, c))
WRAP(MPI_Gather, (cv s, int sn, T st, void *r, int rn, T rt, int root,
                  MPI_Comm c), (s, sn, st, r, rn, rt, root, c))
WRAP(MPI_Scatter, (cv s, int sn, T st, void *r, int rn, T rt, int root,
                   MPI_Comm c), (s, sn, st, r, rn, rt, root, c))
WRAP(MPI_Reduce_scatter_block, (cv s, void *r, int n, T t, MPI_Op o,
                                MPI_Comm c), (s, r, n, t, o, c))
WRAP(MPI_Alltoall, (cv s, int sn, T st, void *r, int rn, T rt, MPI_Comm c),
     (s, sn, st, r, rn, rt, c))
WRAP(MPI_Barrier, (MPI_Comm c), (c))
WRAP(MPI_Scan, (cv s, void *r, int n, T t, MPI_Op o, MPI_Comm c),
     (s, r, n, t, o, c))
WRAP(MPI_Exscan, (cv s, void *r, int n, T t, MPI_Op o, MPI_Comm c),
     (s, r, n, t, o, c))
WRAP(MPI_Allgatherv, (cv s, int sn, T st, void *r, ci rn, ci d, T rt,
                      MPI_Comm c), (s, sn, st, r, rn, d, rt, c))
WRAP(MPI_Gatherv, (cv s, int sn, T st, void *r, ci rn, ci d, T rt,
                   int root, MPI_Comm c), (s, sn, st, r, rn, d, rt, root, c))
WRAP(MPI_Scatterv, (cv s, ci sn, ci d, T st, void *r, int rn, T rt,
                    int root, MPI_Comm c), (s, sn, d, st, r, rn, rt, root, c))
WRAP(MPI_Alltoallv, (cv s, ci sn, ci sd, T st, void *r, ci rn, ci rd, T rt,
                     MPI_Comm c), (s, sn, sd, st, r, rn, rd, rt, c))
WRAP(MPI_Reduce_scatter, (cv s, void *r, ci rn, T t, MPI_Op o, MPI_Comm c),
     (s, r, rn, t, o, c))
WRAP(MPI_Neighbor_allgather, (cv s, int sn, T st, void *r, int rn, T rt,
                              MPI_Comm c), (s, sn, st, r, rn, rt, c))
WRAP(MPI_Neighbor_alltoallv, (cv s, ci sn, ci sd, T st, void *r, ci rn,
                              ci rd, T rt, MPI_Comm c),
     (s, sn, sd, st, r, rn, rd, rt, c))
WRAP(MPI_Neighbor_alltoallw, (cv s, ci sn, const MPI_Aint *sd, const T *st,
                              void *r, ci rn, const MPI_Aint *rd,
                              const T *rt, MPI_Comm c),
     (s, sn, sd, st, r, rn, rd, rt, c))
WRAP(MPI_Send, (cv b, int n, T t, int dst, int tag, MPI_Comm c),
     (b, n, t, dst, tag, c))
WRAP(MPI_Recv, (void *b, int n, T t, int src, int tag, MPI_Comm c,
                MPI_Status *s), (b, n, t, src, tag, c, s))
WRAP(MPI_Iallreduce, (cv s, void *r, int n, T t, MPI_Op o, MPI_Comm c, RQ),
     (s, r, n, t, o, c, rq))
WRAP(MPI_Ibcast, (void *b, int n, T t, int root, MPI_Comm c, RQ),
     (b, n, t, root, c, rq))
WRAP(MPI_Ireduce, (cv s, void *r, int n, T t, MPI_Op o, int root,
                   MPI_Comm c, RQ), (s, r, n, t, o, root, c, rq))
WRAP(MPI_Iallgather, (cv s, int sn, T st, void *r, int rn, T rt, MPI_Comm c,
                      RQ), (s, sn, st, r, rn, rt, c, rq))
WRAP(MPI_Igather, (cv s, int sn, T st, void *r, int rn, T rt, int root,
                   MPI_Comm c, RQ), (s, sn, st, r, rn, rt, root, c, rq))
WRAP(MPI_Iscatter, (cv s, int sn, T st, void *r, int rn, T rt, int root,
                    MPI_Comm c, RQ), (s, sn, st, r, rn, rt, root, c, rq))
WRAP(MPI_Ireduce_scatter_block, (cv s, void *r, int n, T t, MPI_Op o,
                                 MPI_Comm c, RQ), (s, r, n, t, o, c, rq))
WRAP(MPI_Ialltoall, (cv s, int sn, T st, void *r, int rn, T rt, MPI_Comm c,
                     RQ), (s, sn, st, r, rn, rt, c, rq))
WRAP(MPI_Ibarrier, (MPI_Comm c, RQ), (c, rq))
WRAP(MPI_Iscan, (cv s, void *r, int n, T t, MPI_Op o, MPI_Comm c, RQ),
     (s, r, n, t, o, c, rq))
WRAP(MPI_Iexscan, (cv s, void *r, int n, T t, MPI_Op o, MPI_Comm c, RQ),
     (s, r, n, t, o, c, rq))
WRAP(MPI_Iallgatherv, (cv s, int sn, T st, void *r, ci rn, ci d, T rt,
                       MPI_Comm c, RQ), (s, sn, st, r, rn, d, rt, c, rq))
WRAP(MPI_Igatherv, (cv s, int sn, T st, void *r, ci rn, ci d, T rt,
                    int root, MPI_Comm c, RQ),
     (s, sn, st, r, rn, d, rt, root, c, rq))
WRAP(MPI_Iscatterv, (cv s, ci sn, ci d, T st, void *r, int rn, T rt,
                     int root, MPI_Comm c, RQ),
     (s, sn, d, st, r, rn, rt, root, c, rq))
WRAP(MPI_Ialltoallv, (cv s, ci sn, ci sd, T st, void *r, ci rn, ci rd, T rt,
                      MPI_Comm c, RQ), (s, sn, sd, st, r, rn, rd, rt, c, rq))
WRAP(MPI_Ireduce_scatter, (cv s, void *r, ci rn, T t, MPI_Op o, MPI_Comm c,
                           RQ), (s, r, rn, t, o, c, rq))
WRAP(MPI_Ineighbor_allgather, (cv s, int sn, T st, void *r, int rn, T rt,
                               MPI_Comm c, RQ), (s, sn, st, r, rn, rt, c, rq))
WRAP(MPI_Ineighbor_alltoallv, (cv s, ci sn, ci sd, T st, void *r, ci rn,
                               ci rd, T rt, MPI_Comm c, RQ),
     (s, sn, sd, st, r, rn, rd, rt, c, rq))
WRAP(MPI_Ineighbor_alltoallw, (cv s, ci sn, const MPI_Aint *sd, const T *st,
                               void *r, ci rn, const MPI_Aint *rd,
                               const T *rt, MPI_Comm c, RQ),
     (s, sn, sd, st, r, rn, rd, rt, c, rq))
WRAP(MPI_Isend, (cv b, int n, T t, int dst, int tag, MPI_Comm c, RQ),
     (b, n, t, dst, tag, c, rq))
WRAP(MPI_Irecv, (void *b, int n, T t, int src, int tag, MPI_Comm c, RQ),
     (b, n, t, src, tag, c, rq))

WRAP(MPI_Send_init, (cv b, int n, T t, int dst, int tag, MPI_Comm c, RQ),
     (b, n, t, dst, tag, c, rq))
WRAP(MPI_Recv_init, (void *b, int n, T t, int src, int tag, MPI_Comm c,
                     RQ), (b, n, t, src, tag, c, rq))
WRAP(MPI_Start, (RQ), (rq))
int MPI_Startall(int n, MPI_Request *rq)
{
    counted("MPI_Start", n);
    return PMPI_Startall(n, rq);
}

/* What a kind's call made, in words, for a failed check. */
const char *pc_made(void)
{
    static char buf[512];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < PC_NNAMES; i++)
        if (pc_counts[i] && at < sizeof(buf) - 64)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s x%d",
                                   at ? ", " : "", pc_names[i], pc_counts[i]);
    return at ? buf : "no MPI call";
}

