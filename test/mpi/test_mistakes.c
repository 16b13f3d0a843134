/* Mistakes users make, caught on every rank (3 ranks or more):
 *  - new_group with lists that differ between ranks (also in debug mode,
 *    where the check once crashed), or refused on one
 *    rank only: refused on every rank, naming who passed what;
 *  - a count that differs between ranks, where timeouts return: the call
 *    is erroneous, but no later call returns wrong values as success;
 *  - gather and scatter with the root's buffer on every rank, as MPI and
 *    torch users write them: ignored off the root, the results right;
 *  - send and receive on a group this process is not in: refused;
 *  - a handle that is not a live group: refused, naming the call. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"

static int me, n;
int t_rank, t_failures;

static bool says(const char *what)
{
    return strstr(dcoll_last_error(), what) != NULL;
}

static void lists_differ(void)
{
    /* Rank 2 passes {0,2}, the others {0,1}. */
    int mine[2] = {0, me == 2 ? 2 : 1};
    dcoll_group_t *g = (dcoll_group_t *)&mine;
    dcoll_status_t st = dcoll_new_group(&g, mine, 2, NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT && !g &&
              says("dcoll_new_group: the ranks passed different lists") &&
              says("world rank(s) 2 passed list B") &&
              says(me == 2 ? "this rank passed {0,2}"
                           : "this rank passed {0,1}"),
          "different lists: status %d", st);
    /* Refused by one rank alone (out of range there): every rank. */
    int bad[2] = {0, me == 1 ? n + 5 : 1};
    st = dcoll_new_group(&g, bad, 2, NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT && !g &&
              (me == 1 ? says("is outside the world")
                       : says("another rank refused its arguments")),
          "one rank's refusal: status %d", st);
    /* The same list, in any order, works. */
    int ok[2] = {me % 2 ? 1 : 0, me % 2 ? 0 : 1};
    CHECK(dcoll_new_group(&g, ok, 2, NULL) == DCOLL_SUCCESS, "same lists");
    if (me < 2) {
        int x = 1;
        CHECK(dcoll_all_reduce(g, &x, &x, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                               NULL) == DCOLL_SUCCESS && x == 2,
              "sum on {0,1}: %d", x);
    }
    dcoll_group_destroy(&g);
}

static void counts_differ(void)
{
    dcoll_group_t *g = NULL;
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT | DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.timeout = 1;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_SUCCESS, "new_group");
    int x[6];
    for (int i = 0; i < 6; i++)
        x[i] = 1;
    dcoll_status_t st = dcoll_all_reduce(g, x, x, me == 0 ? 3 : 6,
                                         DCOLL_INT32, DCOLL_SUM, NULL, NULL);
    if (st == DCOLL_ERR_MPI)
        CHECK(says("dcoll_all_reduce on group") &&
                  says("failed (collective #1)") && says("unusable"),
              "the MPI error names the call and the group");
    /* The next, correct call: right, or an error; never wrong values. */
    for (int i = 0; i < 6; i++)
        x[i] = 1;
    st = dcoll_all_reduce(g, x, x, 6, DCOLL_INT32, DCOLL_SUM, NULL, NULL);
    if (st == DCOLL_SUCCESS)
        for (int i = 0; i < 6; i++)
            CHECK(x[i] == n, "next call: success with x[%d] = %d", i, x[i]);
    else
        CHECK(st == DCOLL_ERR_GROUP_FAILED || st == DCOLL_ERR_TIMEOUT ||
                  st == DCOLL_ERR_MPI,
              "next call: status %d", st);
    dcoll_group_destroy(&g);
}

static void root_buffers_everywhere(void)
{
    int root = n - 1, in[4], out[64];
    for (int k = 0; k < 4; k++)
        in[k] = me * 10 + k;
    for (int k = 0; k < 64; k++)
        out[k] = -1;
    /* Every rank passes a receive buffer, as MPI users write gather. */
    CHECK(dcoll_gather(NULL, in, out, 4, DCOLL_INT32, root, NULL, NULL) ==
              DCOLL_SUCCESS, "gather with recvbuf everywhere");
    for (int k = 0; k < 4 * n; k++)
        if (me == root)
            CHECK(out[k] == (k / 4) * 10 + k % 4, "gather out[%d] = %d", k,
                  out[k]);
        else
            CHECK(out[k] == -1, "gather wrote a non-root's out[%d]", k);
    /* And a send buffer everywhere for scatter. */
    int src[64], got[4] = {-1, -1, -1, -1};
    for (int k = 0; k < 4 * n; k++)
        src[k] = me == root ? 1000 + k : -5;
    CHECK(dcoll_scatter(NULL, src, got, 4, DCOLL_INT32, root, NULL, NULL) ==
              DCOLL_SUCCESS, "scatter with sendbuf everywhere");
    for (int k = 0; k < 4; k++)
        CHECK(got[k] == 1000 + 4 * me + k, "scatter got[%d] = %d", k,
              got[k]);
    /* The root still needs its own. Refused, the call leaves its group
     * unusable here: a spare one, not the world. */
    dcoll_group_t *spare = NULL;
    CHECK(dcoll_new_group(&spare, NULL, 0, NULL) == DCOLL_SUCCESS, "spare");
    CHECK(dcoll_gather(spare, in, NULL, 4, DCOLL_INT32, me, NULL, NULL) ==
              DCOLL_ERR_INVALID_ARGUMENT &&
              says("recvbuf must be given on the root"),
          "gather without the root's recvbuf");
    if (t_kept(spare))
        CHECK(dcoll_barrier(spare, NULL, NULL) == DCOLL_SUCCESS,
              "the kept group after the refusal: %s", dcoll_last_error());
    else
        CHECK(dcoll_barrier(spare, NULL, NULL) == DCOLL_ERR_GROUP_FAILED &&
                  says("this rank refused collective"),
              "the spare group after the refusal");
    dcoll_group_destroy(&spare);
}

static void non_member_peers(void)
{
    int pair[2] = {0, 1};
    dcoll_group_t *g = NULL;
    CHECK(dcoll_new_group(&g, pair, 2, NULL) == DCOLL_SUCCESS, "pair");
    int v = 7;
    dcoll_work_t *w = NULL;
    if (me >= 2) {
        CHECK(dcoll_send(g, &v, 1, DCOLL_INT32, 0, 3, NULL, NULL) ==
                  DCOLL_ERR_INVALID_ARGUMENT &&
                  says("dcoll_send: this process is not a member"),
              "send from a non-member");
        CHECK(dcoll_irecv(g, &v, 1, DCOLL_INT32, 0, 3, NULL, &w) ==
                  DCOLL_ERR_INVALID_ARGUMENT && !w &&
                  says("not a member"),
              "irecv on a non-member");
        /* Collectives stay no-ops there, as in torch.distributed. */
        CHECK(dcoll_barrier(g, NULL, NULL) == DCOLL_SUCCESS, "barrier");
    } else {
        CHECK(dcoll_barrier(g, NULL, NULL) == DCOLL_SUCCESS, "barrier");
    }
    dcoll_group_destroy(&g);
    /* Never NULL, which is the world: a call on the variable is refused
     * instead of running over every rank. */
    CHECK(g == DCOLL_GROUP_NULL, "destroy sets the handle to "
          "DCOLL_GROUP_NULL");
    CHECK(dcoll_barrier(g, NULL, NULL) == DCOLL_ERR_INVALID_ARGUMENT &&
              says("DCOLL_GROUP_NULL"),
          "a call on a destroyed group's variable");
    /* Something that is no group at all: refused, the call named. */
    long junk[8] = {0};
    CHECK(dcoll_barrier((dcoll_group_t *)junk, NULL, NULL) ==
              DCOLL_ERR_INVALID_ARGUMENT &&
              says("dcoll_barrier: group") && says("not a live dcoll group"),
          "not a group");
}

int main(void)
{
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &me);
    t_rank = me;
    dcoll_group_size(NULL, &n);
    if (n < 3) {
        printf("needs 3 ranks or more; skipping\n");
        dcoll_finalize();
        return 77;
    }
    lists_differ();
    root_buffers_everywhere();
    non_member_peers();
    counts_differ();
    int sum = 1;
    CHECK(dcoll_all_reduce(NULL, &sum, &sum, 1, DCOLL_INT32, DCOLL_SUM,
                           NULL, NULL) == DCOLL_SUCCESS && sum == n,
          "the world still works: %d", sum);
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    if (me == 0 && !t_failures)
        printf("every mistake caught on every rank (%d ranks)\n", n);
    return t_failures ? 1 : 0;
}
