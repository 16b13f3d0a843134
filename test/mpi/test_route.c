/* Which MPI call each blocking call reaches, seen through MPI's profiling
 * interface, for every kind of kind_calls.h's table: at default settings
 * (a timeout that ends the job) each is exactly one call of MPI's own
 * blocking call, the one its entry names, and nothing else; on a group
 * whose timeouts return, no blocking collective is made (dcoll polls
 * nonblocking calls there); with no timeout, the default's calls again.
 * Results are checked too, on the world and on a reversed sub-group. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"
#include "kind_calls.h"

int t_rank, t_failures;

/* Every MPI call a kind may reach: the blocking ones first. */
static const char *const names[] = {
    "MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Allgather",
    "MPI_Gather", "MPI_Scatter", "MPI_Reduce_scatter_block", "MPI_Alltoall",
    "MPI_Barrier", "MPI_Scan", "MPI_Exscan", "MPI_Allgatherv",
    "MPI_Gatherv", "MPI_Scatterv", "MPI_Alltoallv", "MPI_Reduce_scatter",
    "MPI_Neighbor_allgather", "MPI_Neighbor_alltoallv",
    "MPI_Neighbor_alltoallw", "MPI_Send", "MPI_Recv",
#define NBLOCKING 21
    "MPI_Iallreduce", "MPI_Ibcast", "MPI_Ireduce",
    "MPI_Iallgather", "MPI_Igather", "MPI_Iscatter",
    "MPI_Ireduce_scatter_block", "MPI_Ialltoall", "MPI_Ibarrier",
    "MPI_Iscan", "MPI_Iexscan", "MPI_Iallgatherv", "MPI_Igatherv",
    "MPI_Iscatterv", "MPI_Ialltoallv", "MPI_Ireduce_scatter",
    "MPI_Ineighbor_allgather", "MPI_Ineighbor_alltoallv",
    "MPI_Ineighbor_alltoallw", "MPI_Isend", "MPI_Irecv",
};
enum { NNAMES = sizeof(names) / sizeof(names[0]) };
static int counts[NNAMES];
static bool counting;

static int index_of(const char *name)
{
    for (int i = 0; i < NNAMES; i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}

static void counted(const char *name)
{
    int i = index_of(name);
    if (counting && i >= 0)
        counts[i]++;
}

#define WRAP(name, params, args)                                           \
    int name params                                                        \
    {                                                                      \
        counted(#name);                                                    \
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

/* What a kind's call made, in words, for a failed check. */
static const char *made(void)
{
    static char buf[512];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < NNAMES; i++)
        if (counts[i] && at < sizeof(buf) - 64)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s x%d",
                                   at ? ", " : "", names[i], counts[i]);
    return at ? buf : "no MPI call";
}

enum mode { DEFAULT, POLLED };

/* Every kind of the table once on g. DEFAULT: exactly the blocking call
 * its entry names (send: the pair's MPI_Send and MPI_Recv; on one rank
 * they go to DCOLL_PROC_NULL, which dcoll ends without MPI). POLLED: no
 * blocking call, and nonblocking ones. */
static void run_all(dcoll_group_t *g, enum mode mode, const char *label)
{
    struct kc_ctx c;
    CHECK_OK(kc_begin(&c, g));
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const struct kind_call *e = &kind_calls[k];
        if (k == DCOLL_COLL_RECV)
            continue;   /* one step with the send */
        kc_fill(&c);
        memset(counts, 0, sizeof(counts));
        counting = true;
        dcoll_status_t st = e->run(&c);
        counting = false;
        CHECK(st == DCOLL_SUCCESS, "%s: %s: %s", label, e->name,
              dcoll_last_error());
        CHECK(e->check(&c), "%s: %s: %s", label, e->name, c.what);
        bool p2p = k == DCOLL_COLL_SEND;
        int want = index_of(e->mpi);
        int also = p2p ? index_of(kind_calls[DCOLL_COLL_RECV].mpi) : -1;
        CHECK(want >= 0, "%s: the test counts no %s", e->name, e->mpi);
        int blocking = 0, other = 0;
        for (int i = 0; i < NNAMES; i++)
            *(i < NBLOCKING ? &blocking : &other) += counts[i];
        if (mode == DEFAULT) {
            bool none = p2p && c.n == 1;
            for (int i = 0; i < NNAMES; i++)
                CHECK(counts[i] == (!none && (i == want || i == also)),
                      "%s: dcoll_%s made %s (want %s%s%s and nothing else)",
                      label, e->name, made(), none ? "none" : e->mpi,
                      also >= 0 && !none ? " and " : "",
                      also >= 0 && !none ? names[also] : "");
        } else {
            CHECK(blocking == 0 && other > 0, "%s: dcoll_%s made %s (want "
                  "nonblocking calls and no blocking one)", label, e->name,
                  made());
        }
    }
    kc_done(&c);
}

int main(int argc, char **argv)
{
    int provided, me, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    REQUIRE(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s",
            dcoll_last_error());
    run_all(NULL, DEFAULT, "default (abort)");
    /* The world reversed: group ranks are not world ranks. */
    int rev[KC_MAX_RANKS];
    for (int r = 0; r < n; r++)
        rev[r] = n - 1 - r;
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, rev, n, NULL));
    run_all(g, DEFAULT, "reversed");
    dcoll_group_destroy(&g);
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, &gp));
    if (n > 1)
        run_all(g, POLLED, "on_timeout return");
    dcoll_group_destroy(&g);
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT;
    gp.timeout = 0;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, &gp));
    run_all(g, DEFAULT, "timeout 0");
    dcoll_group_destroy(&g);
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    if (me == 0)
        printf("route: each of %d kinds reached the MPI call its table "
               "entry names (%d ranks)\n", DCOLL_COLL_KIND_COUNT_, n);
    MPI_Finalize();
    return T_EXIT;
}
