/* dcoll: optional header-only helpers that take an MPI_Comm. They compile
 * in the caller's code, against the caller's MPI, so no MPI type ever
 * crosses dcoll's binary interface. Include after <mpi.h>. */
#ifndef DCOLL_DCOLL_MPI_H
#define DCOLL_DCOLL_MPI_H

#include <mpi.h>
#include "dcoll/dcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/** dcoll_init with @p comm as the world (dcoll duplicates it). */
static inline dcoll_status_t dcoll_init_comm(MPI_Comm comm)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_COMM;
    p.comm = (int)MPI_Comm_c2f(comm);
    return dcoll_init(&p);
}

/** The MPI communicator that serves @p group (see dcoll_group_comm). */
static inline dcoll_status_t dcoll_group_mpi_comm(const dcoll_group_t *group,
                                                  MPI_Comm *comm)
{
    int f = 0;
    dcoll_status_t st = dcoll_group_comm(group, &f);
    if (st == DCOLL_SUCCESS)
        *comm = MPI_Comm_f2c((MPI_Fint)f);
    return st;
}

#ifdef __cplusplus
}
#endif
#endif
