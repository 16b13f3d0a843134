/* Init from a communicator the program already has: dcoll must not start
 * or finalize MPI then, may be initialised again after finalize, and its
 * world is that communicator. Run under mpirun, 1 to 4 ranks.
 *   test_init absent   the last rank comes to dcoll_init_comm 1.5 s after
 *                      the init timeout (DCOLL_INIT_TIMEOUT=2,
 *                      DCOLL_ON_TIMEOUT=return): every rank gets
 *                      DCOLL_ERR_TIMEOUT, the first in time, the last
 *                      within its own timeout; MPI still works.
 *   test_init absent-abort   the same at the default (abort): the job
 *                      ends with exit code 3 (init-absent.sh checks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dcoll/dcoll_mpi.h"
#include "testutil.h"

int t_rank, t_failures;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A rank that comes to dcoll_init after the others gave up. */
static int absent(int wrank, int wsize, bool abort_mode)
{
    int last = wsize - 1;
    setenv("DCOLL_INIT_TIMEOUT", "2", 1);
    if (!abort_mode)
        setenv("DCOLL_ON_TIMEOUT", "return", 1);
    if (wrank == last)
        usleep(3500000);
    double t0 = now();
    dcoll_status_t st = dcoll_init_comm(MPI_COMM_WORLD);
    double took = now() - t0;
    if (abort_mode) {
        printf("FAIL: rank %d: dcoll_init returned %d after %.2f s: %s\n",
               wrank, st, took, dcoll_last_error());
        return 1;
    }
    CHECK(st == DCOLL_ERR_TIMEOUT, "status %d: %s", st, dcoll_last_error());
    if (wrank != last)
        CHECK(took >= 1.99 && took <= 4.0 &&
                  strstr(dcoll_last_error(), "waited 2 s") &&
                  strstr(dcoll_last_error(), "DCOLL_INIT_TIMEOUT"),
              "after %.2f s: %s", took, dcoll_last_error());
    else
        CHECK(took <= 4.0 && strstr(dcoll_last_error(), "too far apart"),
              "late, after %.2f s: %s", took, dcoll_last_error());
    if (wrank == 0 || wrank == last)
        printf("rank %d: after %.2f s: %s\n", wrank, took,
               dcoll_last_error());
    /* MPI itself still works, and dcoll was left unstarted. */
    int one = 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == wsize, "MPI sum %d", all);
    CHECK(dcoll_group_size(NULL, &one) == DCOLL_ERR_NOT_INITIALIZED,
          "dcoll is not initialised");
    int total = t_failures;
    MPI_Allreduce(&t_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return total ? 1 : 0;
}

int main(int argc, char **argv)
{
    int provided, wrank, wsize;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    t_rank = wrank;
    if (argc > 1 && !strncmp(argv[1], "absent", 6))
        return absent(wrank, wsize, !strcmp(argv[1], "absent-abort"));

    /* World = the ranks of my parity, numbered in reverse. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);

    for (int round = 0; round < 2; round++) {
        CHECK_OK(dcoll_init_comm(half));
        int r = -1, n = -1;
        CHECK_OK(dcoll_group_rank(NULL, &r));
        CHECK_OK(dcoll_group_size(NULL, &n));
        CHECK(r == hrank && n == hsize, "round %d: rank %d size %d, want %d "
              "%d", round, r, n, hrank, hsize);
        int mine = wrank, sum = 0, want = 0;
        for (int k = wrank % 2; k < wsize; k += 2)
            want += k;
        CHECK_OK(dcoll_all_reduce(NULL, &mine, &sum, 1, DCOLL_INT32,
                                  DCOLL_SUM, NULL, NULL));
        CHECK(sum == want, "sum over my half %d, want %d", sum, want);
        /* The program's own traffic on the same communicator is not
         * confused with dcoll's (dcoll works on a duplicate). */
        int token = wrank, got = -1;
        MPI_Allreduce(&token, &got, 1, MPI_INT, MPI_MAX, half);
        CHECK(got >= wrank, "program allreduce %d", got);
        CHECK_OK(dcoll_finalize());
        int fin = 1;
        MPI_Finalized(&fin);
        CHECK(!fin, "dcoll finalized an MPI it did not start");
    }
    /* mpi:// with the program's MPI already running: MPI_COMM_WORLD. */
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_URL | DCOLL_INIT_PARAM_BACKEND;
    p.url = "mpi://";
    p.backend = "AUTO";
    CHECK_OK(dcoll_init(&p));
    int n = 0;
    CHECK_OK(dcoll_group_size(NULL, &n));
    CHECK(n == wsize, "mpi:// world size %d, want %d", n, wsize);
    /* A work handle outlives finalize: freeing it after is not an error
     * (finalize refuses while one is in flight, so it has finished). */
    dcoll_work_t *w = NULL;
    int one = 1, all = 0;
    CHECK_OK(dcoll_all_reduce(NULL, &one, &all, 1, DCOLL_INT32, DCOLL_SUM,
                              NULL, &w));
    CHECK_OK(dcoll_work_wait(w));
    CHECK_OK(dcoll_finalize());
    CHECK(dcoll_work_free(&w) == DCOLL_SUCCESS && w == NULL,
          "work_free after finalize: %s", dcoll_last_error());
    CHECK(all == wsize, "async sum %d", all);

    /* A thread level asked for is what MPI must provide: the program
     * started MPI at serialized, so multiple is refused unless MPI gave
     * more than it was asked; single is always fine. */
    int have = 0;
    MPI_Query_thread(&have);
    p.mask = DCOLL_INIT_PARAM_THREAD_LEVEL;
    p.thread_level = DCOLL_THREAD_MULTIPLE;
    dcoll_status_t st = dcoll_init(&p);
    if (have < MPI_THREAD_MULTIPLE)
        CHECK(st == DCOLL_ERR_UNSUPPORTED &&
                  strstr(dcoll_last_error(), "multiple was asked for"),
              "thread level above MPI's: %s", dcoll_last_error());
    else
        CHECK(st == DCOLL_SUCCESS && dcoll_finalize() == DCOLL_SUCCESS,
              "multiple when MPI gives it: %s", dcoll_last_error());
    p.thread_level = DCOLL_THREAD_SINGLE;
    CHECK_OK(dcoll_init(&p));
    int total = t_failures;
    MPI_Allreduce(&t_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_OK(dcoll_finalize());
    MPI_Comm_free(&half);
    MPI_Finalize();
    if (wrank == 0)
        printf("test_init: %s (%d failures)\n", total ? "FAIL" : "ok", total);
    return total ? 1 : 0;
}
