/* What a port from MPI meets at launch (run by test/mpi/launch.sh):
 *   test_launch world N   plain dcoll_init: the world must have N ranks
 *                         (under dcollrun: the variables' rendezvous, not
 *                         N worlds of one)
 *   test_launch mpi       explicit mpi:// where RANK/WORLD_SIZE say this
 *                         is one of N without an MPI launcher: refused
 *   test_launch abort C   the last rank ends the job with code C while
 *                         the others wait in a barrier
 *   test_launch wtime     dcoll_wtime before and after dcoll_init
 *   test_launch mpi-first [comm]
 *                         MPI_Init_thread by the program, then dcoll_init
 *                         (with MPI_COMM_WORLD as comm): under dcollrun -n
 *                         N each is MPI's world alone, so dcoll_init must
 *                         refuse, saying why, on every process */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#include "dcoll/dcoll.h"

static int fail(const char *what)
{
    fprintf(stderr, "test_launch: %s: %s\n", what, dcoll_last_error());
    return 1;
}

static int world(int want)
{
    int rank = -1, size = -1;
    if (dcoll_init(NULL) || dcoll_group_rank(NULL, &rank) ||
        dcoll_group_size(NULL, &size))
        return fail("init");
    int one = 1, sum = 0;
    if (dcoll_all_reduce(NULL, &one, &sum, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                         NULL))
        return fail("all_reduce");
    if (rank == 0)
        printf("world: %d ranks, all_reduce counted %d\n", size, sum);
    dcoll_finalize();
    return size == want && sum == want ? 0 : 1;
}

static int refused_mpi(void)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_URL;
    p.url = "mpi://";
    dcoll_status_t st = dcoll_init(&p);
    if (st == DCOLL_SUCCESS) {
        dcoll_finalize();
        fprintf(stderr, "test_launch: mpi:// was accepted as one of N\n");
        return 1;
    }
    if (st != DCOLL_ERR_INVALID_ARGUMENT ||
        !strstr(dcoll_last_error(), "would make each process a world"))
        return fail("mpi:// refused, but not as expected");
    printf("refused: %s\n", dcoll_last_error());
    return 0;
}

static int abort_job(int code)
{
    int rank = -1, size = -1;
    if (dcoll_init(NULL) || dcoll_group_rank(NULL, &rank) ||
        dcoll_group_size(NULL, &size))
        return fail("init");
    if (rank == size - 1)
        dcoll_abort(code, "the test asked for it");
    dcoll_barrier(NULL, NULL, NULL);   /* never completes */
    fprintf(stderr, "test_launch: rank %d left the barrier\n", rank);
    return 1;
}

static int wtime(void)
{
    double t0 = dcoll_wtime();
    struct timespec d = {0, 200 * 1000 * 1000};
    nanosleep(&d, NULL);
    double t1 = dcoll_wtime();
    if (dcoll_init(NULL))
        return fail("init");
    double t2 = dcoll_wtime();
    dcoll_finalize();
    double t3 = dcoll_wtime();
    printf("wtime: slept 0.2 s, measured %.4f s\n", t1 - t0);
    return t1 - t0 >= 0.199 && t1 - t0 < 2.0 && t2 >= t1 && t3 >= t2 ? 0 : 1;
}

static int mpi_first(bool comm)
{
    int provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    if (comm) {
        p.mask = DCOLL_INIT_PARAM_COMM;
        p.comm = (int)MPI_Comm_c2f(MPI_COMM_WORLD);
    }
    dcoll_status_t st = dcoll_init(&p);
    int rc = 0;
    if (st == DCOLL_SUCCESS) {
        int size = -1;
        dcoll_group_size(NULL, &size);
        fprintf(stderr, "test_launch: a world of %d was made where MPI's is "
                "this process alone\n", size);
        dcoll_finalize();
        rc = 1;
    } else if (st != DCOLL_ERR_INVALID_STATE ||
               !strstr(dcoll_last_error(), "started MPI itself")) {
        rc = fail("mpi-first refused, but not as expected");
    } else {
        printf("refused: %s\n", dcoll_last_error());
    }
    MPI_Finalize();
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "mpi-first"))
        return mpi_first(argc >= 3 && !strcmp(argv[2], "comm"));
    if (argc >= 3 && !strcmp(argv[1], "world"))
        return world(atoi(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "mpi"))
        return refused_mpi();
    if (argc >= 3 && !strcmp(argv[1], "abort"))
        return abort_job(atoi(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "wtime"))
        return wtime();
    fprintf(stderr, "usage: test_launch world N | mpi | abort CODE | wtime\n");
    return 2;
}
