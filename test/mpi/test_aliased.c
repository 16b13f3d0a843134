/* sendbuf == recvbuf on every rank (issue 27, finding 2), as an MPI
 * program ported with MPI_IN_PLACE in mind passes them: taken as MPI's
 * in-place form on every rank, never refused on some and run on others
 * (rank 0, whose own block starts the buffer, ran; the rest refused it,
 * and rank 0 waited for the timeout).
 *   all_gather, all_gatherv   this rank's block is already at its place
 *   gather (root last rank)   the root's block is already at its place
 *   scatter (root last rank)  the root's block stays where it is
 *   reduce_scatter(v)         the whole input in the buffer, the result
 *                             in its first count elements
 * Blocking and async; every rank checks every element. --sizes
 * (test/sizes.h) runs it on every size inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

enum { N = 5 };

static int32_t v(int rank, int i)
{
    return 1000 * (rank + 1) + i;
}

/* A reduce_scatter of v() in place as MPI does it: this rank's block of
 * the sum over ranks in the buffer's first N elements. */
static void sum_at_front(const int32_t *b, int n, const char *what)
{
    for (int i = 0; i < N; i++) {
        int32_t want = 0;
        for (int r = 0; r < n; r++)
            want += v(r, t_w.me * N + i);
        CHECK(b[i] == want, "%s [%d] = %d, want %d", what, i, b[i], want);
    }
}

static void wait_or_run(dcoll_status_t st, dcoll_work_t *w, const char *what)
{
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    if (w) {
        CHECK(dcoll_work_wait(w) == DCOLL_SUCCESS, "%s: wait: %s", what,
              dcoll_last_error());
        dcoll_work_free(&w);
    }
}

/* Ranks, roots and the data's order are the world's; dcoll's root is the
 * job rank of its last rank. */
static void body(void)
{
    int n = t_w.n, me = t_w.me, root = n - 1, jroot = t_w.r[root];
    int32_t *b = malloc(sizeof(int32_t) * N * (size_t)n);
    int64_t *counts = malloc(sizeof(int64_t) * (size_t)n),
            *displs = malloc(sizeof(int64_t) * (size_t)n);
    for (int r = 0; r < n; r++) {
        counts[r] = N;
        displs[r] = (int64_t)(n - 1 - r) * N;  /* blocks in reverse */
    }
    for (int async = 0; async < 2; async++) {
        dcoll_work_t *w = NULL, **wp = async ? &w : NULL;
        dcoll_status_t st;
        const char *form = async ? "async" : "blocking";
        char what[64];

        for (int i = 0; i < N * n; i++)
            b[i] = i / N == me ? v(me, i % N) : -1;
        snprintf(what, sizeof(what), "%s all_gather", form);
        st = dcoll_all_gather(T_WORLD, b, b, N, DCOLL_INT32, NULL, wp);
        wait_or_run(st, w, what);
        for (int i = 0; i < N * n; i++)
            CHECK(b[i] == v(i / N, i % N), "%s [%d] = %d", what, i, b[i]);

        /* Only the root has a receive buffer: the others send theirs. */
        for (int i = 0; i < N * n; i++)
            b[i] = me != root ? (i < N ? v(me, i) : -1)
                              : (i / N == me ? v(me, i % N) : -1);
        snprintf(what, sizeof(what), "%s gather", form);
        w = NULL;
        st = dcoll_gather(T_WORLD, b, me == root ? b : NULL, N, DCOLL_INT32,
                          jroot, NULL, wp);
        wait_or_run(st, w, what);
        for (int i = 0; me == root && i < N * n; i++)
            CHECK(b[i] == v(i / N, i % N), "%s [%d] = %d", what, i, b[i]);

        for (int i = 0; i < N * n; i++)
            b[i] = me == root ? v(i / N, i % N) : -1;
        snprintf(what, sizeof(what), "%s scatter", form);
        w = NULL;
        st = dcoll_scatter(T_WORLD, me == root ? b : NULL, b, N,
                           DCOLL_INT32, jroot, NULL, wp);
        wait_or_run(st, w, what);
        for (int i = 0; i < N * n; i++)
            CHECK(me == root ? b[i] == v(i / N, i % N)
                             : (i >= N || b[i] == v(me, i)),
                  "%s [%d] = %d", what, i, b[i]);

        for (int i = 0; i < N * n; i++)
            b[i] = v(me, i);
        snprintf(what, sizeof(what), "%s reduce_scatter", form);
        w = NULL;
        st = dcoll_reduce_scatter(T_WORLD, b, b, N, DCOLL_INT32, DCOLL_SUM,
                                  NULL, wp);
        wait_or_run(st, w, what);
        sum_at_front(b, n, what);

        for (int i = 0; i < N * n; i++)
            b[i] = i / N == n - 1 - me ? v(me, i % N) : -1;
        snprintf(what, sizeof(what), "%s all_gatherv", form);
        w = NULL;
        st = dcoll_all_gatherv(T_WORLD, b, N, b, counts, displs, DCOLL_INT32,
                               NULL, wp);
        wait_or_run(st, w, what);
        for (int i = 0; i < N * n; i++)
            CHECK(b[i] == v(n - 1 - i / N, i % N), "%s [%d] = %d", what, i,
                  b[i]);

        for (int i = 0; i < N * n; i++)
            b[i] = v(me, i);
        snprintf(what, sizeof(what), "%s reduce_scatterv", form);
        w = NULL;
        st = dcoll_reduce_scatterv(T_WORLD, b, b, counts, DCOLL_INT32,
                                   DCOLL_SUM, NULL, wp);
        wait_or_run(st, w, what);
        sum_at_front(b, n, what);
    }
    free(b);
    free(counts);
    free(displs);
}

int main(int argc, char **argv)
{
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_rank(NULL, &t_rank);
    t_sizes(argc, argv, body);
    int rc = t_finish("aliased");
    CHECK_OK(dcoll_finalize());
    return rc;
}
