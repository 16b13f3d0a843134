/* dcoll-init-bench: how long a job's start takes at scale, beside MPI's
 * own, read by bench/scale.sh:
 *   dcoll-init-bench mpi     MPI_Init_thread(MPI_THREAD_MULTIPLE) alone
 *   dcoll-init-bench dcoll   dcoll_init(NULL), which starts MPI itself,
 *                            then dcoll_new_group (every rank) and
 *                            dcoll_split_group (two halves)
 * Each rank times its own calls; rank 0 prints the slowest rank's time of
 * each, and the span from the first rank's start of init to the last
 * rank's end (CLOCK_REALTIME: ranks of one machine or its namespaces). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#include "dcoll/dcoll.h"
#include "dcoll/dcoll_mpi.h"

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    bool dcoll = !strcmp(mode, "dcoll");
    if (!dcoll && strcmp(mode, "mpi")) {
        fprintf(stderr, "usage: dcoll-init-bench mpi|dcoll\n");
        return 2;
    }
    double t[4] = {0}, t0 = wall();
    if (dcoll) {
        if (dcoll_init(NULL)) {
            fprintf(stderr, "dcoll-init-bench: %s\n", dcoll_last_error());
            return 1;
        }
    } else {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    }
    double t1 = wall();
    t[0] = t1 - t0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (dcoll) {
        dcoll_group_t *g = NULL, *h = NULL;
        double a = wall();
        if (dcoll_new_group(&g, NULL, 0, NULL))
            return 1;
        double b = wall();
        if (dcoll_split_group(&h, NULL, rank % 2, rank, NULL))
            return 1;
        t[1] = b - a;
        t[2] = wall() - b;
        dcoll_group_destroy(&h);
        dcoll_group_destroy(&g);
    }
    double slowest[4], first, last;
    MPI_Reduce(t, slowest, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t0, &first, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t1, &last, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s %d ranks: init %.3f s (slowest rank), span %.3f s",
               mode, size, slowest[0], last - first);
        if (dcoll)
            printf(", new_group %.3f s, split_group %.3f s", slowest[1],
                   slowest[2]);
        printf("\n");
    }
    if (dcoll)
        dcoll_finalize();
    else
        MPI_Finalize();
    return 0;
}
