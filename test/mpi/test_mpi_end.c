/* A program that owns MPI and ends it before dcoll (issue 27, finding 7):
 *   test_mpi_end both   MPI_Finalize, then a collective, refused naming
 *                       MPI_Finalize, then dcoll_finalize, which succeeds
 *                       (once)
 *   test_mpi_end mpi    MPI_Finalize alone (dcoll_finalize forgotten)
 * Each rank first makes a sub-group, runs collectives (the watchdog is
 * up: a deadline is the default) and leaves an async barrier finished but
 * not freed. Every rank must exit 0: Open MPI aborted the job when dcoll
 * freed its communicators after MPI_Finalize, and the watchdog ran on
 * through it. */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "dcoll/dcoll.h"

/* Whether dcoll's watchdog thread runs in this process (it names itself
 * "dcoll-watchdog"). */
static int watchdog_runs(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)) && !found) {
        char path[300], name[32] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(name, sizeof(name), f))
            found = !strncmp(name, "dcoll-watchdog", 14);
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

static int fail(int rank, const char *what)
{
    fprintf(stderr, "[rank %d] test_mpi_end: %s: %s\n", rank, what,
            dcoll_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    int provided, rank = 0, size = 0;
    const char *mode = argc > 1 ? argv[1] : "both";
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (dcoll_init(NULL))
        return fail(rank, "dcoll_init");
    int all[64], n = size < 64 ? size : 64;
    for (int i = 0; i < n; i++)
        all[i] = i;
    dcoll_group_t *g = NULL;
    dcoll_work_t *w = NULL;
    int one = 1, sum = 0;
    if (dcoll_new_group(&g, all, n, NULL) ||
        dcoll_all_reduce(g, &one, &sum, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                         NULL) ||
        dcoll_barrier(NULL, NULL, &w) || dcoll_work_wait(w))
        return fail(rank, "collectives");
    if (sum != n)
        return fail(rank, "the sum");
    if (!watchdog_runs())
        return fail(rank, "no watchdog thread before MPI_Finalize");
    MPI_Finalize();
    if (watchdog_runs())
        return fail(rank, "the watchdog thread outlived MPI_Finalize");
    if (!strcmp(mode, "both")) {
        dcoll_status_t st = dcoll_all_reduce(NULL, &one, &sum, 1,
                                             DCOLL_INT32, DCOLL_SUM, NULL,
                                             NULL);
        if (st != DCOLL_ERR_FINALIZED ||
            !strstr(dcoll_last_error(), "MPI_Finalize"))
            return fail(rank, "a call after MPI_Finalize: want "
                        "DCOLL_ERR_FINALIZED naming MPI_Finalize");
        if (dcoll_finalize())
            return fail(rank, "dcoll_finalize after MPI_Finalize");
        if (dcoll_finalize() != DCOLL_ERR_FINALIZED)
            return fail(rank, "a second dcoll_finalize: want "
                        "DCOLL_ERR_FINALIZED");
    }
    if (rank == 0)
        printf("test_mpi_end %s: %d rank(s) ended MPI before dcoll: ok\n",
               mode, size);
    return 0;
}
