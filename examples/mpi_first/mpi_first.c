/* mpi_first.c: an MPI program that starts MPI itself, then dcoll on its
 * MPI_COMM_WORLD, with raw MPI calls on dcoll's own communicator beside
 * dcoll's calls. The order that matters: MPI_Init_thread (asking for
 * MPI_THREAD_MULTIPLE, which dcoll's watchdog needs to name a missing
 * rank), dcoll_init_comm, ..., dcoll_finalize, MPI_Finalize.
 *
 *   mpirun -n 4 ./mpi_first        (under mpirun or srun, not dcollrun)
 */
#include <mpi.h>
#include <stdio.h>
#include <dcoll/dcoll_mpi.h>

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (dcoll_init_comm(MPI_COMM_WORLD) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init_comm: %s\n", dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* dcoll's sum of the ranks ... */
    long sum = rank;
    dcoll_all_reduce(NULL, &sum, &sum, 1, DCOLL_INT64, DCOLL_SUM, NULL, NULL);

    /* ... and MPI's, on the communicator behind dcoll's world group. */
    MPI_Comm comm = MPI_COMM_NULL;
    long raw = rank, want = (long)size * (size - 1) / 2;
    if (dcoll_group_mpi_comm(NULL, &comm) != DCOLL_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Allreduce(MPI_IN_PLACE, &raw, 1, MPI_LONG, MPI_SUM, comm);

    int ok = sum == want && raw == want;
    if (rank == 0)
        printf("mpi_first: %d ranks, sum %ld by dcoll, %ld by MPI (want "
               "%ld): %s\n", size, sum, raw, want, ok ? "ok" : "WRONG");
    dcoll_finalize();                   /* dcoll first, */
    MPI_Finalize();                     /* then MPI */
    return ok ? 0 : 1;
}
