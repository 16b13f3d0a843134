/* Which MPI calls a plan's start reaches, seen through MPI's profiling
 * interface: with DCOLL_PLAN_CALLS=persistent one MPI_Start of the
 * request made at plan time, with plain MPI's blocking (async: its
 * nonblocking) call, and by default the rule docs/performance.md gives
 * for this MPI: blocking starts make the blocking call 8 times, start
 * the request 8 times, and again, agree on the faster in one
 * MPI_Allreduce, and make it alone after, the same on every rank.
 * Nothing else, but under DCOLL_DEBUG=detail each collective plan's start
 * makes one exchange too (MPI_Iallgather on the control twin), which
 * checks that every rank starts the same plan (issue 52, finding 0).
 * Usage: test_plan_route auto|persistent|plain. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"

enum { START, ALLREDUCE, IALLREDUCE, INIT, P2P, OTHER, NCOUNT };
static const char *const names[NCOUNT] = {
    "MPI_Start", "MPI_Allreduce", "MPI_Iallreduce", "a persistent init",
    "point-to-point", "another collective",
};
static int counts[NCOUNT];
/* The debug check's exchanges expected at each collective start. */
static int checks;
int t_rank, t_failures;

int MPI_Start(MPI_Request *rq)
{
    counts[START]++;
    return PMPI_Start(rq);
}
int MPI_Startall(int n, MPI_Request *rq)
{
    counts[START] += n;
    return PMPI_Startall(n, rq);
}
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
                  MPI_Comm c)
{
    counts[ALLREDUCE]++;
    return PMPI_Allreduce(s, r, n, t, op, c);
}
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
                   MPI_Comm c, MPI_Request *rq)
{
    counts[IALLREDUCE]++;
    return PMPI_Iallreduce(s, r, n, t, op, c, rq);
}
int MPI_Send_init(const void *b, int n, MPI_Datatype t, int dst, int tag,
                  MPI_Comm c, MPI_Request *rq)
{
    counts[INIT]++;
    return PMPI_Send_init(b, n, t, dst, tag, c, rq);
}
int MPI_Recv_init(void *b, int n, MPI_Datatype t, int src, int tag,
                  MPI_Comm c, MPI_Request *rq)
{
    counts[INIT]++;
    return PMPI_Recv_init(b, n, t, src, tag, c, rq);
}
/* What a debug exchange or any other traffic would use. */
int MPI_Isend(const void *b, int n, MPI_Datatype t, int dst, int tag,
              MPI_Comm c, MPI_Request *rq)
{
    counts[P2P]++;
    return PMPI_Isend(b, n, t, dst, tag, c, rq);
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c,
              MPI_Request *rq)
{
    counts[P2P]++;
    return PMPI_Irecv(b, n, t, src, tag, c, rq);
}
int MPI_Send(const void *b, int n, MPI_Datatype t, int dst, int tag,
             MPI_Comm c)
{
    counts[P2P]++;
    return PMPI_Send(b, n, t, dst, tag, c);
}
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                  MPI_Datatype rt, MPI_Comm c)
{
    counts[OTHER]++;
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}
int MPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn,
                   MPI_Datatype rt, MPI_Comm c, MPI_Request *rq)
{
    counts[OTHER]++;
    return PMPI_Iallgather(s, sn, st, r, rn, rt, c, rq);
}
int MPI_Barrier(MPI_Comm c)
{
    counts[OTHER]++;
    return PMPI_Barrier(c);
}

/* Exactly one call of want (n of them) and the debug check's other
 * (collectives only), nothing else counted. */
static void only(int want, int n, int other, const char *what)
{
    for (int k = 0; k < NCOUNT; k++) {
        int expect = k == want ? n : k == OTHER ? other : 0;
        CHECK(counts[k] == expect, "%s: %d call(s) of %s (want %d)", what,
              counts[k], names[k], expect);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "auto";
    int provided, me, n;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    checks = t_debug();
    /* The documented rule: MPICH 4's persistent calls; Open MPI 4.1's
     * blocking calls for blocking starts, its persistent requests for
     * async ones. */
    bool persistent = !strcmp(mode, "persistent");
    bool async_persistent = persistent;
    bool trial = false;
    if (!strcmp(mode, "auto")) {
#if MPI_VERSION >= 4 || defined(OPEN_MPI)
        async_persistent = trial = true;
#endif
    }
    int in[4] = {me, me, me, me}, out[4];
    dcoll_plan_t *p = NULL;
    CHECK(dcoll_all_reduce_plan(NULL, in, out, 4, DCOLL_INT32, DCOLL_SUM,
                                NULL, &p) == DCOLL_SUCCESS, "plan: %s",
          dcoll_last_error());
    /* The trial: each call 8 times, twice, each start right, then the
     * agreement after the last; then every rank makes the same one. */
    for (int s = 0; trial && s < 32; s++) {
        bool request = s / 8 % 2;
        memset(counts, 0, sizeof(counts));
        out[3] = -1;
        CHECK(dcoll_plan_start(p, NULL) == DCOLL_SUCCESS, "trial start: %s",
              dcoll_last_error());
        CHECK(counts[START] == request, "trial start %d: %d MPI_Start(s)",
              s, counts[START]);
        CHECK(counts[ALLREDUCE] == !request + (s == 31),
              "trial start %d: %d MPI_Allreduce(s)", s, counts[ALLREDUCE]);
        CHECK(counts[IALLREDUCE] + counts[INIT] + counts[P2P] == 0 &&
              counts[OTHER] == checks, "trial start %d: other MPI calls", s);
        CHECK(out[3] == n * (n - 1) / 2, "trial start %d: %d", s, out[3]);
    }
    if (trial) {
        memset(counts, 0, sizeof(counts));
        CHECK(dcoll_plan_start(p, NULL) == DCOLL_SUCCESS, "start: %s",
              dcoll_last_error());
        persistent = counts[START] == 1;
        int kept[2] = {persistent, !persistent}, all[2];
        PMPI_Allreduce(kept, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(all[0] == kept[0] && all[1] == kept[1], "the ranks kept "
              "different calls after the trial");
        only(persistent ? START : ALLREDUCE, 1, checks,
             "the start after the trial");
    }
    for (int s = 0; s < 3; s++) {
        memset(counts, 0, sizeof(counts));
        CHECK(dcoll_plan_start(p, NULL) == DCOLL_SUCCESS, "start: %s",
              dcoll_last_error());
        only(persistent ? START : ALLREDUCE, 1, checks, "blocking start");
        CHECK(out[3] == n * (n - 1) / 2, "blocking start: %d", out[3]);
        memset(counts, 0, sizeof(counts));
        dcoll_work_t *w = NULL;
        CHECK(dcoll_plan_start(p, &w) == DCOLL_SUCCESS, "async start: %s",
              dcoll_last_error());
        CHECK(dcoll_work_wait(w) == DCOLL_SUCCESS, "wait: %s",
              dcoll_last_error());
        only(async_persistent ? START : IALLREDUCE, 1, checks,
             "async start");
    }
    CHECK(dcoll_plan_free(&p) == DCOLL_SUCCESS, "free");

    /* Send and recv plans in a ring: async starts are MPI_Isend and
     * MPI_Irecv (faster on both MPIs), or with persistent MPI_Start of
     * MPI_Send_init's and MPI_Recv_init's requests. */
    int x = me, y = -1;
    dcoll_plan_t *sp = NULL, *rp = NULL;
    memset(counts, 0, sizeof(counts));
    dcoll_send_plan(NULL, &x, 1, DCOLL_INT32, (me + 1) % n, 3, NULL, &sp);
    dcoll_recv_plan(NULL, &y, 1, DCOLL_INT32, (me + n - 1) % n, 3, NULL,
                    &rp);
    bool p2p = !strcmp(mode, "persistent");
    only(INIT, p2p ? 2 : 0, 0, "send and recv plans");
    for (int s = 0; s < 2; s++) {
        memset(counts, 0, sizeof(counts));
        dcoll_work_t *w[2] = {NULL, NULL};
        dcoll_plan_start(rp, &w[0]);
        dcoll_plan_start(sp, &w[1]);
        CHECK(dcoll_work_wait_all(w, 2, NULL) == DCOLL_SUCCESS, "ring: %s",
              dcoll_last_error());
        only(p2p ? START : P2P, 2, 0, "send and recv starts");
        CHECK(y == (me + n - 1) % n, "ring: got %d", y);
    }
    dcoll_plan_free(&sp);
    dcoll_plan_free(&rp);
    dcoll_finalize();
    MPI_Finalize();
    if (t_failures)
        printf("[rank %d] plan-route (%s): FAIL (%d)\n", me, mode, t_failures);
    else if (me == 0)
        printf("plan-route (%s): ok on rank 0\n", mode);
    return t_failures ? 1 : 0;
}
