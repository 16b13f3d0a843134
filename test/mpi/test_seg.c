/* A team's control segment (lib/gpu/seg.c), on 2 to 4 processes: every
 * rank attaches to the leader's segment, which is unlinked once all have
 * (the name is then gone, the memory stays mapped); a wait ends when the
 * last rank posts, whatever order they come in; a rank that stays away
 * ends the others' waits at the deadline naming it; a rank that fails
 * ends them at once. */
#include <mpi.h>
#include <stdio.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include "seg.h"

int t_rank, t_failures;
#include "testutil.h"


int main(int argc, char **argv)
{
    int n, late, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char name[64];
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(name, sizeof(name), "/dcoll-test-seg-%d", pid);
    struct dcoll_seg s;
    if (t_rank == 0)
        CHECK(dcoll_seg_create(name, n, &s) == 0, "create %s", name);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank != 0)
        CHECK(dcoll_seg_attach(name, n, &s) == 0, "attach %s", name);
    struct dcoll_seg other;
    CHECK(t_rank == 0 || dcoll_seg_attach(name, n + 1, &other) == -1,
          "a segment of another size is refused");
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == 0)
        dcoll_seg_unlink(name);
    MPI_Barrier(MPI_COMM_WORLD);
    int fd = shm_open(name, O_RDWR, 0600);
    CHECK(fd < 0, "the name is gone once every rank attached");

    /* Arrivals in reverse rank order, 20 ms apart. */
    usleep((useconds_t)(20000 * (n - 1 - t_rank)));
    double t0 = t_now();
    dcoll_seg_post(&s, t_rank, DCOLL_SEG_READY, 1);
    rc = dcoll_seg_wait(&s, DCOLL_SEG_READY, 1, t_now() + 10, t_now, &late);
    double done = t_now();
    CHECK(rc == 0 && late == -1, "everyone ready: %d (late %d)", rc, late);
    /* Rank 0 came last: no wait ended before it posted. The monotonic
     * clock is the host's, so rank 0's instant holds for every rank
     * (the barriers' own skew under load made a fixed wait flaky). */
    double posted = t0;
    MPI_Bcast(&posted, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(done >= posted, "rank %d's wait ended %.3f s before rank 0 "
          "posted", t_rank, posted - done);
    MPI_Barrier(MPI_COMM_WORLD);

    /* The last rank stays away from step 2: the others give up at their
     * deadline, naming it. */
    if (n > 1) {
        if (t_rank != n - 1) {
            dcoll_seg_post(&s, t_rank, DCOLL_SEG_READY, 2);
            t0 = t_now();
            rc = dcoll_seg_wait(&s, DCOLL_SEG_READY, 2, t_now() + 0.2, t_now,
                                &late);
            double took = t_now() - t0;
            CHECK(rc == -2 && late == n - 1 && took >= 0.2 && took < 2,
                  "a rank away: %d, late %d, after %.3f s", rc, late, took);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* Then it fails: the others' next wait ends at once. */
        if (t_rank == n - 1)
            dcoll_seg_fail(&s, t_rank);
        MPI_Barrier(MPI_COMM_WORLD);
        if (t_rank != n - 1) {
            t0 = t_now();
            rc = dcoll_seg_wait(&s, DCOLL_SEG_DONE, 1, t_now() + 10, t_now,
                                &late);
            CHECK(rc == -3 && late == n - 1 && t_now() - t0 < 1,
                  "a failed rank: %d, late %d", rc, late);
            /* Where it had got before it failed still counts: a call it
             * finished is not spoiled by its failure in a later one. */
            rc = dcoll_seg_wait(&s, DCOLL_SEG_READY, 1, t_now() + 10, t_now,
                                &late);
            CHECK(rc == 0, "a step the failed rank had reached: %d, late "
                  "%d", rc, late);
        }
    }
    dcoll_seg_close(&s);
    printf("seg: rank %d, %d failure(s)\n", t_rank, t_failures);
    MPI_Finalize();
    return T_EXIT;
}
