/* dcoll_split_group: the rows and columns of a process grid in two calls,
 * ranks ordered by key (reversed, tied), DCOLL_SPLIT_NONE, a split of a
 * sub-group, and refusals seen on every rank. Run under mpirun with 1 to
 * 4 ranks, or --sizes (test/sizes.h) for every size inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

/* A group's members in group order, checked against want[]; then an
 * all_reduce of world ranks and a gather in group order. */
static void check_group(dcoll_group_t *g, const int *want, int n,
                        const char *what)
{
    int r = -9, s = -9;
    CHECK_OK(dcoll_group_rank(g, &r));
    CHECK_OK(dcoll_group_size(g, &s));
    CHECK(s == n, "%s: size %d, want %d", what, s, n);
    int me = -1;
    for (int i = 0; i < n; i++) {
        int gr = -9, wr = -9;
        CHECK_OK(dcoll_group_global_rank(g, i, &wr));
        CHECK(wr == want[i], "%s: group rank %d is world %d, want %d", what,
              i, wr, want[i]);
        CHECK_OK(dcoll_group_group_rank(g, want[i], &gr));
        CHECK(gr == i, "%s: world %d is group rank %d, want %d", what,
              want[i], gr, i);
        if (want[i] == t_rank)
            me = i;
    }
    CHECK(r == me, "%s: rank %d, want %d", what, r, me);
    int sum = 0, want_sum = 0, *order = calloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++)
        want_sum += want[i];
    CHECK_OK(dcoll_all_reduce(g, &t_rank, &sum, 1, DCOLL_INT32, DCOLL_SUM,
                              NULL, NULL));
    CHECK(sum == want_sum, "%s: all_reduce %d, want %d", what, sum, want_sum);
    /* Root given as a world rank: the last in group order. */
    CHECK_OK(dcoll_gather(g, &t_rank, order, 1, DCOLL_INT32, want[n - 1],
                          NULL, NULL));
    if (t_rank == want[n - 1])
        for (int i = 0; i < n; i++)
            CHECK(order[i] == want[i], "%s: gather [%d] = %d, want %d",
                  what, i, order[i], want[i]);
    free(order);
}

/* Rows and columns of a grid 2 wide: two calls, every rank in one row
 * and one column. */
static void grid(void)
{
    int size = t_w.n, cols = size < 2 ? 1 : 2;
    int row = t_w.me / cols, col = t_w.me % cols;
    dcoll_group_t *rg = NULL, *cg = NULL;
    CHECK_OK(dcoll_split_group(&rg, T_WORLD, row, col, NULL));
    CHECK_OK(dcoll_split_group(&cg, T_WORLD, col, row, NULL));
    int want[T_MAXW] = {0}, n = 0;
    for (int r = 0; r < size; r++)
        if (r / cols == row)
            want[n++] = t_w.r[r];
    check_group(rg, want, n, "row");
    n = 0;
    for (int r = 0; r < size; r++)
        if (r % cols == col)
            want[n++] = t_w.r[r];
    check_group(cg, want, n, "column");
    CHECK_OK(dcoll_group_destroy(&rg));
    CHECK_OK(dcoll_group_destroy(&cg));
}

/* Keys in reverse, and keys all equal (ties by parent rank). */
static void order(void)
{
    dcoll_group_t *g = NULL;
    int want[T_MAXW], size = t_w.n;
    CHECK_OK(dcoll_split_group(&g, T_WORLD, 3, -t_w.me, NULL));
    for (int i = 0; i < size; i++)
        want[i] = t_w.r[size - 1 - i];
    check_group(g, want, size, "reversed");
    CHECK_OK(dcoll_group_destroy(&g));
    CHECK_OK(dcoll_split_group(&g, T_WORLD, 0, 7, NULL));
    for (int i = 0; i < size; i++)
        want[i] = t_w.r[i];
    check_group(g, want, size, "tied");
    CHECK_OK(dcoll_group_destroy(&g));
}

/* Odd ranks join nothing; the even ones form a group. Then a split of
 * that group, which the odd ranks (non-members) pass through at once. */
static void none_and_nested(void)
{
    dcoll_group_t *ev = NULL, *sub = NULL;
    int me = t_w.me, odd = me % 2;
    CHECK_OK(dcoll_split_group(&ev, T_WORLD, odd ? DCOLL_SPLIT_NONE : 0,
                               me, NULL));
    int r = 0;
    CHECK_OK(dcoll_group_rank(ev, &r));
    CHECK(odd ? r == DCOLL_NON_MEMBER : r == me / 2,
          "even split: rank %d", r);
    CHECK_OK(dcoll_barrier(ev, NULL, NULL));
    /* The evens split again: rank 0 alone, the other evens together in
     * reverse. */
    CHECK_OK(dcoll_split_group(&sub, ev, me == 0 ? 1 : 2, -me, NULL));
    if (odd) {
        CHECK_OK(dcoll_group_rank(sub, &r));
        CHECK(r == DCOLL_NON_MEMBER, "nested on a non-member: %d", r);
    } else {
        int want[T_MAXW], n = 0;
        if (me == 0) {
            want[n++] = t_w.r[0];
        } else {
            for (int x = t_w.n - 1; x >= 2; x--)
                if (x % 2 == 0)
                    want[n++] = t_w.r[x];
        }
        check_group(sub, want, n, "nested");
    }
    CHECK_OK(dcoll_group_destroy(&sub));
    CHECK_OK(dcoll_group_destroy(&ev));
}

#define REFUSED(call, text)                                                  \
    CHECK_REFUSED(call, DCOLL_ERR_INVALID_ARGUMENT, text)

static void refused(void)
{
    dcoll_group_t *g = (dcoll_group_t *)1;
    REFUSED(dcoll_split_group(NULL, NULL, 0, 0, NULL), "out is NULL");
    /* One rank's bad color reaches every rank; no group is made. */
    int bad = t_w.n - 1;
    dcoll_status_t st = dcoll_split_group(&g, T_WORLD,
                                          t_w.me == bad ? -2 : 0, 0, NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT && g == NULL,
          "bad color: %s, group %p", dcoll_status_string(st), (void *)g);
    CHECK(strstr(dcoll_last_error(), t_w.me == bad ? "color -2 is negative"
                                                   : "another rank refused"),
          "bad color message: %s", dcoll_last_error());
    dcoll_group_params_t p = DCOLL_GROUP_PARAMS_INIT;
    p.mask = UINT64_C(1) << 40;
    REFUSED(dcoll_split_group(&g, T_WORLD, 0, 0, &p), "unknown bits");
#ifndef __SANITIZE_ADDRESS__
    /* A destroyed parent is refused while its memory is not reused; the
     * check reads freed memory, which AddressSanitizer rightly reports. */
    dcoll_group_t *dead = NULL;
    CHECK_OK(dcoll_split_group(&dead, T_WORLD, 0, t_rank, NULL));
    dcoll_group_t *stale = dead;
    CHECK_OK(dcoll_group_destroy(&dead));
    REFUSED(dcoll_split_group(&g, stale, 0, 0, NULL), "not a live dcoll group");
#endif
    /* The world still works after the refusals. */
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
}

static void body(void)
{
    grid();
    order();
    none_and_nested();
    refused();
}

int main(int argc, char **argv)
{
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    t_sizes(argc, argv, body);
    int rc = t_finish("split");
    dcoll_finalize();
    return rc;
}
