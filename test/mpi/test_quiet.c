/* A program that starts MPI itself with MPI_Init (below
 * MPI_THREAD_MULTIPLE), as most ported codes do: dcoll_init, a call,
 * dcoll_finalize. quiet.sh reads what it prints on stderr. */
#include <mpi.h>
#include <stdio.h>
#include "dcoll/dcoll.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int x = 1, rc = dcoll_init(NULL) != DCOLL_SUCCESS ||
                    dcoll_all_reduce(NULL, &x, &x, 1, DCOLL_INT32, DCOLL_SUM,
                                     NULL, NULL) != DCOLL_SUCCESS ||
                    dcoll_finalize() != DCOLL_SUCCESS;
    if (rc)
        fprintf(stderr, "quiet: %s\n", dcoll_last_error());
    MPI_Finalize();
    return rc;
}
