/* A rank that reports a hang but cannot end the job, for
 * test/mpi/fault-linger.sh: preloaded into every rank, it takes world
 * rank 0's MPI_Abort. DCOLL_TEST_ABORT=stuck: the call never returns
 * (an abort stuck inside MPI); gone: that process ends alone, and the
 * launcher, told nothing, keeps the job. Every other rank's abort, and
 * any without the setting, is MPI's own. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int MPI_Abort(MPI_Comm comm, int code)
{
    const char *how = getenv("DCOLL_TEST_ABORT");
    int rank = -1;
    if (how && PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS &&
        rank == 0) {
        if (!strcmp(how, "stuck"))
            for (;;)
                pause();
        if (!strcmp(how, "gone"))
            _exit(code);
    }
    return PMPI_Abort(comm, code);
}
