/* Which MPI call each blocking call reaches, seen through MPI's profiling
 * interface, for every kind of kind_calls.h's table: at default settings
 * (a timeout that ends the job) each is exactly one call of MPI's own
 * blocking call, the one its entry names, and nothing else; on a group
 * whose timeouts return, no blocking collective is made (dcoll polls
 * nonblocking calls there); with no timeout, the default's calls again.
 * Results are checked too, on the world and on a reversed split of it;
 * --sizes (test/sizes.h) runs every size inside one job. */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "testutil.h"
#include "sizes.h"
#include "kind_calls.h"
#include "pmpi_count.h"

int t_rank, t_failures;

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
        pc_reset();
        pc_counting = true;
        dcoll_status_t st = e->run(&c);
        pc_counting = false;
        CHECK(st == DCOLL_SUCCESS, "%s: %s: %s", label, e->name,
              dcoll_last_error());
        CHECK(e->check(&c), "%s: %s: %s", label, e->name, c.what);
        bool p2p = k == DCOLL_COLL_SEND;
        int want = pc_index(e->mpi);
        int also = p2p ? pc_index(kind_calls[DCOLL_COLL_RECV].mpi) : -1;
        CHECK(want >= 0, "%s: the test counts no %s", e->name, e->mpi);
        int blocking, all;
        pc_totals(&blocking, &all);
        if (mode == DEFAULT) {
            bool none = p2p && c.n == 1;
            for (int i = 0; i < PC_NNAMES; i++)
                CHECK(pc_counts[i] == (!none && (i == want || i == also)),
                      "%s: dcoll_%s made %s (want %s%s%s and nothing else)",
                      label, e->name, pc_made(), none ? "none" : e->mpi,
                      also >= 0 && !none ? " and " : "",
                      also >= 0 && !none ? pc_names[also] : "");
        } else {
            CHECK(blocking == 0 && all > 0, "%s: dcoll_%s made %s (want "
                  "nonblocking calls and no blocking one)", label, e->name,
                  pc_made());
        }
    }
    kc_done(&c);
}

static void body(void)
{
    run_all(T_WORLD, DEFAULT, "default (abort)");
    /* The world reversed (a split keyed so): group ranks are not the
     * world's. */
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_split_group(&g, T_WORLD, 0, -t_w.me, NULL));
    run_all(g, DEFAULT, "reversed");
    dcoll_group_destroy(&g);
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    CHECK_OK(t_new_group(&g, NULL, 0, &gp));
    if (t_w.n > 1)
        run_all(g, POLLED, "on_timeout return");
    dcoll_group_destroy(&g);
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT;
    gp.timeout = 0;
    CHECK_OK(t_new_group(&g, NULL, 0, &gp));
    run_all(g, DEFAULT, "timeout 0");
    dcoll_group_destroy(&g);
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
    t_sizes(argc, argv, body);
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    if (me == 0)
        printf("route: each of %d kinds reached the MPI call its table "
               "entry names (%d ranks)\n", DCOLL_COLL_KIND_COUNT_, n);
    MPI_Finalize();
    return T_EXIT;
}
