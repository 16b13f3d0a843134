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
#include "kind_calls.h"
#include "pmpi_count.h"

/* The calls counted (pmpi_count.h), in the kinds this test tells apart:
 * a persistent request's start, the blocking and nonblocking sum, a
 * persistent request made, point-to-point, and what the debug check's
 * exchange uses. */
enum { START, ALLREDUCE, IALLREDUCE, INIT, P2P, OTHER, NCOUNT };
static const char *const names[NCOUNT] = {
    "MPI_Start", "MPI_Allreduce", "MPI_Iallreduce", "a persistent init",
    "point-to-point", "another collective",
};
static const char *const members[NCOUNT][4] = {
    {"MPI_Start"}, {"MPI_Allreduce"}, {"MPI_Iallreduce"},
    {"MPI_Send_init", "MPI_Recv_init"},
    {"MPI_Isend", "MPI_Irecv", "MPI_Send", "MPI_Recv"},
    {"MPI_Allgather", "MPI_Iallgather", "MPI_Barrier"},
};
static int counts[NCOUNT];
/* The debug check's exchanges expected at each collective start. */
static int checks;
int t_rank, t_failures;

/* counts[] from what pmpi_count saw since the last reset; *stray is how
 * many calls of no kind above were made. */
static void tally(int *stray)
{
    int seen = 0;
    for (int k = 0; k < NCOUNT; k++) {
        counts[k] = 0;
        for (int i = 0; i < 4 && members[k][i]; i++)
            counts[k] += pc_count(members[k][i]);
        seen += counts[k];
    }
    int all = 0;
    for (int i = 0; i < PC_NNAMES; i++)
        all += pc_counts[i];
    *stray = all - seen;
}

static void reset(void)
{
    pc_reset();
    memset(counts, 0, sizeof(counts));
}

/* Exactly one call of want (n of them) and the debug check's other
 * (collectives only), nothing else counted. */
static void only(int want, int n, int other, const char *what)
{
    int stray;
    tally(&stray);
    CHECK(stray == 0, "%s: other MPI calls: %s", what, pc_made());
    for (int k = 0; k < NCOUNT; k++) {
        int expect = k == want ? n : k == OTHER ? other : 0;
        CHECK(counts[k] == expect, "%s: %d call(s) of %s (want %d)", what,
              counts[k], names[k], expect);
    }
}

/* Every kind of the tests' table as a plan, started blocking and then
 * with a work: with DCOLL_PLAN_CALLS=plain the blocking start is exactly
 * the kind's blocking MPI call (its route's) and the async one no
 * blocking call; with persistent, each start is one MPI_Start, or where
 * this MPI has no persistent form of the kind its plain calls. The
 * results are checked each time. */
static void table_kinds(bool plain)
{
    struct kc_ctx c;
    CHECK_OK(kc_begin(&c, NULL));
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const struct kind_call *e = &kind_calls[k];
        if (!e->plan)
            continue;
        dcoll_plan_t *p = NULL;
        kc_fill(&c);
        CHECK_OK(e->plan(&c, &p));
        for (int async = 0; p && async < 2; async++) {
            pc_reset();
            pc_counting = true;
            dcoll_status_t st = kc_start(&c, p, async);
            pc_counting = false;
            CHECK(st == DCOLL_SUCCESS, "%s plan start: %s", e->name,
                  dcoll_last_error());
            CHECK(st || e->check(&c), "%s plan start: %s", e->name, c.what);
            int blocking, all;
            pc_totals(&blocking, &all);
            int route = pc_count(e->mpi), starts = pc_count("MPI_Start");
            if (plain && !async)
                CHECK(route == 1 && all == 1, "plain: %s plan's start "
                      "made %s (want one %s)", e->name, pc_made(), e->mpi);
            else if (plain)
                CHECK(blocking == 0 && all > 0, "plain: %s plan's async "
                      "start made %s (want nonblocking calls)", e->name,
                      pc_made());
            else
                CHECK((starts == 1 && all == 1) ||
                      (starts == 0 && (async ? blocking == 0 :
                                       route == 1 && all == 1)),
                      "persistent: %s plan's %s start made %s (want one "
                      "MPI_Start, or its plain calls)", e->name,
                      async ? "async" : "blocking", pc_made());
        }
        CHECK_OK(dcoll_plan_free(&p));
    }
    kc_done(&c);
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
    pc_counting = true;
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
        reset();
        out[3] = -1;
        CHECK(dcoll_plan_start(p, NULL) == DCOLL_SUCCESS, "trial start: %s",
              dcoll_last_error());
        int stray;
        tally(&stray);
        CHECK(stray == 0, "trial start %d: other MPI calls: %s", s,
              pc_made());
        CHECK(counts[START] == request, "trial start %d: %d MPI_Start(s)",
              s, counts[START]);
        CHECK(counts[ALLREDUCE] == !request + (s == 31),
              "trial start %d: %d MPI_Allreduce(s)", s, counts[ALLREDUCE]);
        CHECK(counts[IALLREDUCE] + counts[INIT] + counts[P2P] == 0 &&
              counts[OTHER] == checks, "trial start %d: other MPI calls", s);
        CHECK(out[3] == n * (n - 1) / 2, "trial start %d: %d", s, out[3]);
    }
    if (trial) {
        reset();
        CHECK(dcoll_plan_start(p, NULL) == DCOLL_SUCCESS, "start: %s",
              dcoll_last_error());
        persistent = pc_count("MPI_Start") == 1;
        int kept[2] = {persistent, !persistent}, all[2];
        PMPI_Allreduce(kept, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(all[0] == kept[0] && all[1] == kept[1], "the ranks kept "
              "different calls after the trial");
        only(persistent ? START : ALLREDUCE, 1, checks,
             "the start after the trial");
    }
    for (int s = 0; s < 3; s++) {
        reset();
        CHECK(dcoll_plan_start(p, NULL) == DCOLL_SUCCESS, "start: %s",
              dcoll_last_error());
        only(persistent ? START : ALLREDUCE, 1, checks, "blocking start");
        CHECK(out[3] == n * (n - 1) / 2, "blocking start: %d", out[3]);
        reset();
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
    reset();
    dcoll_send_plan(NULL, &x, 1, DCOLL_INT32, (me + 1) % n, 3, NULL, &sp);
    dcoll_recv_plan(NULL, &y, 1, DCOLL_INT32, (me + n - 1) % n, 3, NULL,
                    &rp);
    bool p2p = !strcmp(mode, "persistent");
    only(INIT, p2p ? 2 : 0, 0, "send and recv plans");
    for (int s = 0; s < 2; s++) {
        reset();
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
    pc_counting = false;
    if (!t_debug() && strcmp(mode, "auto"))
        table_kinds(!strcmp(mode, "plain"));
    dcoll_finalize();
    MPI_Finalize();
    if (t_failures)
        printf("[rank %d] plan-route (%s): FAIL (%d)\n", me, mode, t_failures);
    else if (me == 0)
        printf("plan-route (%s): ok on rank 0\n", mode);
    return t_failures ? 1 : 0;
}
