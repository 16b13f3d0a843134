/* dcoll-launch-bench: what a launcher costs a job, read by
 * bench/nodes-launch.sh. Each rank prints, once dcoll_init has returned,
 * the wall clock (CLOCK_REALTIME, so that the script can take the time
 * from its own start, across nodes of one machine); rank 0 then times a
 * 1 MiB float all_reduce through dcoll and through MPI_Allreduce on the
 * world's communicator, in rounds that do not mix the two.
 *   dcoll-launch-bench [ITERS]   (default 200 per round, 5 rounds) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <mpi.h>
#include "dcoll/dcoll.h"
#include "dcoll/dcoll_mpi.h"

#define COUNT (1 << 18)   /* 1 MiB of float32 */

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    if (dcoll_init(NULL)) {
        fprintf(stderr, "dcoll-launch-bench: %s\n", dcoll_last_error());
        return 1;
    }
    double ready = wall();
    int rank, size;
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    printf("ready %d %.6f\n", rank, ready);
    fflush(stdout);
    MPI_Comm comm = MPI_COMM_NULL;
    if (dcoll_group_mpi_comm(NULL, &comm))
        return 1;
    float *x = malloc(COUNT * sizeof(float)), *y = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; i++)
        x[i] = (float)(i % 7);
    double best_d = 1e30, best_m = 1e30;
    for (int round = 0; round < 5; round++) {
        for (int side = 0; side < 2; side++) {
            /* A warm-up call each, then the timed ones. */
            for (int i = -1; i < iters; i++) {
                if (i == 0) {
                    MPI_Barrier(comm);
                    ready = MPI_Wtime();
                }
                if (side == 0)
                    dcoll_all_reduce(NULL, x, y, COUNT, DCOLL_FLOAT32,
                                     DCOLL_SUM, NULL, NULL);
                else
                    MPI_Allreduce(x, y, COUNT, MPI_FLOAT, MPI_SUM, comm);
            }
            double t = (MPI_Wtime() - ready) / iters * 1e6, worst;
            MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
            double *best = side == 0 ? &best_d : &best_m;
            if (worst < *best)
                *best = worst;
        }
    }
    if (rank == 0)
        printf("all_reduce 1MiB np%d: dcoll %.1f us, MPI %.1f us, ratio "
               "%.3f\n", size, best_d, best_m, best_d / best_m);
    free(x);
    free(y);
    dcoll_finalize();
    return 0;
}
