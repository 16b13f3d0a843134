/* dcoll-waitcpu: what a rank spends waiting for a slow peer. Every rank
 * but the last enters an all_reduce; the last joins it after -s seconds.
 * The waiting ranks report the CPU time their whole process used over the
 * wait (all threads: the caller, dcoll's watchdog, MPI's own), per second
 * of wall time, and the part not on the calling thread. Rows: the raw
 * MPI_Allreduce, dcoll at default settings (MPI's blocking call under the
 * watchdog), dcoll on a group whose timeouts return (polled), and dcoll
 * async + wait. dcoll-waitcpu [-s seconds] [-r rounds] */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "dcoll/dcoll.h"
#include "dcoll/dcoll_mpi.h"

static double cpu(int who)
{
    struct rusage u;
    getrusage(who, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

enum { RAW, BLOCKING, RETURN, ASYNC, NMODES };
static const char *const names[NMODES] = {
    "raw MPI_Allreduce",
    "dcoll, default (MPI's blocking call + watchdog)",
    "dcoll, on_timeout RETURN (polled)",
    "dcoll, async + dcoll_work_wait",
};

int main(int argc, char **argv)
{
    double late = 1.0;
    int rounds = 3, provided, opt;
    while ((opt = getopt(argc, argv, "s:r:")) != -1) {
        if (opt == 's')
            late = atof(optarg);
        else if (opt == 'r')
            rounds = atoi(optarg);
        else {
            fprintf(stderr, "usage: dcoll-waitcpu [-s seconds] [-r rounds]\n");
            return 2;
        }
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (dcoll_init_comm(MPI_COMM_WORLD)) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dcoll_group_t *polled = NULL;
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    if (dcoll_new_group(&polled, NULL, 0, &gp)) {
        fprintf(stderr, "dcoll_new_group: %s\n", dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm comm = MPI_COMM_WORLD;
    if (dcoll_group_mpi_comm(NULL, &comm))
        MPI_Abort(MPI_COMM_WORLD, 1);
    bool last = rank == n - 1;
    if (rank == 0)
        printf("# %d ranks, the last %.1f s late, %d round(s), MPI thread "
               "level %s\n# %-48s %10s %10s\n", n, late, rounds,
               provided == MPI_THREAD_MULTIPLE ? "multiple" : "lower",
               "waiting in", "cpu/wall", "off-thread");
    for (int m = 0; m < NMODES; m++) {
        double frac = 0, off = 0;
        for (int k = 0; k < rounds; k++) {
            float x[16] = {0};
            MPI_Barrier(MPI_COMM_WORLD);
            if (last)
                usleep((useconds_t)(late * 1e6));
            double w0 = MPI_Wtime(), c0 = cpu(RUSAGE_SELF),
                   t0 = cpu(RUSAGE_THREAD);
            dcoll_work_t *w = NULL;
            switch (m) {
            case RAW:
                MPI_Allreduce(MPI_IN_PLACE, x, 16, MPI_FLOAT, MPI_SUM, comm);
                break;
            case BLOCKING:
                dcoll_all_reduce(NULL, x, x, 16, DCOLL_FLOAT32, DCOLL_SUM,
                                 NULL, NULL);
                break;
            case RETURN:
                dcoll_all_reduce(polled, x, x, 16, DCOLL_FLOAT32, DCOLL_SUM,
                                 NULL, NULL);
                break;
            default:
                dcoll_all_reduce(NULL, x, x, 16, DCOLL_FLOAT32, DCOLL_SUM,
                                 NULL, &w);
                dcoll_work_wait(w);
                dcoll_work_free(&w);
                break;
            }
            double wall = MPI_Wtime() - w0;
            double all = cpu(RUSAGE_SELF) - c0, mine = cpu(RUSAGE_THREAD) - t0;
            /* The waiting ranks' worst: the late rank hardly waits. */
            double f[2] = {last ? 0 : all / wall, last ? 0 : (all - mine) / wall};
            double most[2];
            MPI_Reduce(f, most, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            frac += most[0] / rounds;
            off += most[1] / rounds;
        }
        if (rank == 0)
            printf("  %-48s %10.3f %10.4f\n", names[m], frac, off);
    }
    dcoll_group_destroy(&polled);
    dcoll_finalize();
    MPI_Finalize();
    return 0;
}
