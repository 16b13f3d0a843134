/* Waiting for many works: a halo exchange of 8 receives and 8 sends
 * finished by wait_all, wait_any taking every work exactly once, test_any
 * polling, NULL entries, the first failure and its index, and the lists
 * refused. Run under mpirun with 1 to 4 ranks, or --sizes (test/sizes.h)
 * for every size inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

/* Each rank sends 4 messages to each neighbour in a ring and receives 4
 * from each: 8 receives and 8 sends, all finished by one wait_all. */
static void halo(void)
{
    int n = t_w.n, me = t_w.me;
    int left = t_w.r[(me + n - 1) % n], right = t_w.r[(me + 1) % n];
    int out[8][16], in[8][16];
    dcoll_work_t *w[16] = {0};
    for (int t = 0; t < 8; t++) {
        int from = t < 4 ? left : right;
        CHECK_OK(dcoll_irecv(T_WORLD, in[t], 16, DCOLL_INT32, from, t, NULL,
                             &w[t]));
    }
    for (int t = 0; t < 8; t++) {
        /* tag t: a receive from the left takes tags 0..3, so the right
         * neighbour's sends to the left carry them, and the other way. */
        int to = t < 4 ? right : left;
        for (int i = 0; i < 16; i++)
            out[t][i] = 1000 * t_rank + 16 * t + i;
        CHECK_OK(dcoll_isend(T_WORLD, out[t], 16, DCOLL_INT32, to, t, NULL,
                             &w[8 + t]));
    }
    int failed = 99;
    CHECK_OK(dcoll_work_wait_all(w, 16, &failed));
    CHECK(failed == -1, "halo: failed %d on success", failed);
    for (int t = 0; t < 8; t++) {
        int from = t < 4 ? left : right;
        for (int i = 0; i < 16; i++)
            CHECK(in[t][i] == 1000 * from + 16 * t + i,
                  "halo: tag %d [%d] = %d, want %d", t, i, in[t][i],
                  1000 * from + 16 * t + i);
    }
    /* Done already: waiting again gives the same status. */
    CHECK_OK(dcoll_work_wait_all(w, 16, NULL));
    for (int i = 0; i < 16; i++)
        CHECK_OK(dcoll_work_free(&w[i]));
}

/* A receive from every rank, with NULL entries between: wait_any returns
 * each index once, then DCOLL_NO_WORK. */
static void any(void)
{
    int size = t_w.n, n = 2 * size;
    int *in = calloc((size_t)n, sizeof(int)), mine = 7 * t_rank + 1;
    dcoll_work_t **w = calloc((size_t)n, sizeof(*w));
    dcoll_work_t **s = calloc((size_t)size, sizeof(*s));
    int *seen = calloc((size_t)n, sizeof(int));
    for (int r = 0; r < size; r++)
        CHECK_OK(dcoll_irecv(T_WORLD, &in[2 * r], 1, DCOLL_INT32, t_w.r[r], 40, NULL,
                             &w[2 * r]));   /* odd entries stay NULL */
    for (int r = 0; r < size; r++)
        CHECK_OK(dcoll_isend(T_WORLD, &mine, 1, DCOLL_INT32, t_w.r[r], 40, NULL,
                             &s[r]));
    for (int k = 0; k < size; k++) {
        int i = -5;
        CHECK_OK(dcoll_work_wait_any(w, n, &i));
        CHECK(i >= 0 && i < n && i % 2 == 0, "wait_any: index %d", i);
        if (i >= 0 && i < n) {
            seen[i]++;
            CHECK(in[i] == 7 * t_w.r[i / 2] + 1, "wait_any: [%d] = %d", i,
                  in[i]);
        }
    }
    for (int r = 0; r < size; r++)
        CHECK(seen[2 * r] == 1, "wait_any: index %d seen %d times", 2 * r,
              seen[2 * r]);
    int i = 5, done = 0;
    CHECK_OK(dcoll_work_wait_any(w, n, &i));
    CHECK(i == DCOLL_NO_WORK, "wait_any with none left: index %d", i);
    CHECK_OK(dcoll_work_test_any(w, n, &i, &done));
    CHECK(done == 1 && i == DCOLL_NO_WORK, "test_any with none left: done "
          "%d index %d", done, i);
    CHECK_OK(dcoll_work_wait_all(s, size, NULL));
    for (int r = 0; r < size; r++) {
        CHECK_OK(dcoll_work_free(&w[2 * r]));
        CHECK_OK(dcoll_work_free(&s[r]));
    }
    /* Empty lists. */
    CHECK_OK(dcoll_work_wait_any(NULL, 0, &i));
    CHECK(i == DCOLL_NO_WORK, "wait_any of nothing: %d", i);
    int failed = 3;
    CHECK_OK(dcoll_work_wait_all(NULL, 0, &failed));
    CHECK(failed == -1, "wait_all of nothing: failed %d", failed);
    free(in);
    free(w);
    free(s);
    free(seen);
}

/* test_any on a barrier that cannot finish before rank 0 has entered it:
 * polled to the end. */
static void poll_any(void)
{
    dcoll_work_t *w[3] = {NULL, NULL, NULL};
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, &w[1]));
    int i = -5, done = 0, polls = 0;
    while (!done && polls < 100000000) {
        CHECK_OK(dcoll_work_test_any(w, 3, &i, &done));
        polls++;
    }
    CHECK(done && i == 1, "test_any: done %d index %d after %d polls", done, i,
          polls);
    CHECK_OK(dcoll_work_test_any(w, 3, &i, &done));
    CHECK(done && i == DCOLL_NO_WORK, "test_any again: done %d index %d",
          done, i);
    CHECK_OK(dcoll_work_free(&w[1]));
}

/* The first failure and its index; the others still finish. A receive too
 * small for its message fails in MPI (truncation), on a group of its own,
 * which the failure makes unusable. */
static void first_failure(void)
{
    if (t_w.n < 2)
        return;
    dcoll_group_t *g = NULL;
    CHECK_OK(t_new_group(&g, NULL, 0, NULL));
    int peer = t_w.me ^ 1;
    if (peer >= t_w.n) {
        CHECK_OK(dcoll_group_destroy(&g));
        return;
    }
    peer = t_w.r[peer];
    int big[4] = {1, 2, 3, 4}, a = 0, b[4] = {0}, c = 0;
    dcoll_work_t *w[6] = {0};
    CHECK_OK(dcoll_irecv(g, &a, 1, DCOLL_INT32, peer, 1, NULL, &w[0]));
    CHECK_OK(dcoll_irecv(g, b, 1, DCOLL_INT32, peer, 2, NULL, &w[2]));
    CHECK_OK(dcoll_irecv(g, &c, 1, DCOLL_INT32, peer, 3, NULL, &w[3]));
    CHECK_OK(dcoll_isend(g, &big[0], 1, DCOLL_INT32, peer, 1, NULL, &w[1]));
    CHECK_OK(dcoll_isend(g, big, 4, DCOLL_INT32, peer, 2, NULL, &w[4]));
    CHECK_OK(dcoll_isend(g, &big[2], 1, DCOLL_INT32, peer, 3, NULL, &w[5]));
    int failed = 99;
    dcoll_status_t st = dcoll_work_wait_all(w, 6, &failed);
    CHECK(st != DCOLL_SUCCESS && failed == 2, "wait_all: %s, failed %d (want "
          "index 2)", dcoll_status_string(st), failed);
    CHECK(strstr(dcoll_last_error(), "dcoll_recv") != NULL ||
          strstr(dcoll_last_error(), "MPI") != NULL,
          "wait_all's message: %s", dcoll_last_error());
    CHECK(a == 1 && c == 3, "the others finished: a %d c %d", a, c);
    for (int i = 0; i < 6; i++)
        dcoll_work_free(&w[i]);
    dcoll_group_destroy(&g);
}

#define REFUSED(call, text)                                                  \
    CHECK_REFUSED(call, DCOLL_ERR_INVALID_ARGUMENT, text)

static void refused(void)
{
    int i, done, failed;
    dcoll_work_t *w[2] = {NULL, NULL};
    REFUSED(dcoll_work_wait_all(w, -1, &failed), "n -1 is negative");
    REFUSED(dcoll_work_wait_all(NULL, 2, &failed), "works is NULL with n 2");
    REFUSED(dcoll_work_wait_any(w, 2, NULL), "the output is NULL");
    REFUSED(dcoll_work_test_any(w, 2, &i, NULL), "done is NULL");
    REFUSED(dcoll_work_test_any(w, 2, NULL, &done), "the output is NULL");
    /* A freed handle in the list: refused by index, nothing waited for.
     * (Freed last, so that no handle made since can have its memory.) */
    int x = 5, y = 0;
    CHECK_OK(dcoll_irecv(T_WORLD, &y, 1, DCOLL_INT32, t_rank, 9, NULL, &w[0]));
    dcoll_work_t *dead = NULL;
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, &dead));
    CHECK_OK(dcoll_work_wait(dead));
    dcoll_work_t *stale = dead;
    CHECK_OK(dcoll_work_free(&dead));
    w[1] = stale;
    REFUSED(dcoll_work_wait_all(w, 2, &failed), "works[1]");
    REFUSED(dcoll_work_wait_any(w, 2, &i), "is not a live work handle");
    w[1] = NULL;
    CHECK_OK(dcoll_isend(T_WORLD, &x, 1, DCOLL_INT32, t_rank, 9, NULL, &w[1]));
    CHECK_OK(dcoll_work_wait_all(w, 2, NULL));
    CHECK(y == 5, "self message after the refusals: %d", y);
    dcoll_work_free(&w[0]);
    dcoll_work_free(&w[1]);
}

static void body(void)
{
    halo();
    any();
    poll_any();
    first_failure();
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
    int rc = t_finish("works");
    dcoll_finalize();
    return rc;
}
