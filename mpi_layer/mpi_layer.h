/* The MPI layer as lib/ sees it: start and stop MPI, make communicators,
 * and the backend table. No MPI type appears here. */
#ifndef DCOLL_MPI_LAYER_H
#define DCOLL_MPI_LAYER_H

#include "internal.h"

extern const struct dcoll_backend dcoll_mpi_backend;

/* Start MPI if needed and make the world from MPI_COMM_WORLD or from the
 * Fortran handle fcomm (have_comm): fills world->rank, size and comm. */
dcoll_status_t dcoll_mpi_start(bool have_comm, int fcomm, int thread_level,
                               struct dcoll_group *world);
/* env:// under an MPI launcher: check every process's rank and world
 * size (collective, so all reach the same verdict) and renumber the world
 * so that its ranks are the ones given. */
dcoll_status_t dcoll_mpi_order_world(struct dcoll_group *world, int rank,
                                     int world_size);
/* Fill world->local_rank and local_size (collective over the world). */
dcoll_status_t dcoll_mpi_local(struct dcoll_group *world);
/* Byte exchanges over a group's communicator, for bootstrapping NCCL. */
dcoll_status_t dcoll_mpi_bcast_bytes(struct dcoll_group *g, void *buf,
                                     size_t len, int root);
/* *ok = the minimum of every rank's *ok. */
dcoll_status_t dcoll_mpi_agree(struct dcoll_group *g, int *ok);
dcoll_status_t dcoll_mpi_allgather_bytes(struct dcoll_group *g,
                                         const void *in, void *out,
                                         size_t len);
/* Free what start made; finalize MPI only if start initialised it. */
dcoll_status_t dcoll_mpi_stop(struct dcoll_group *world);
/* Collective over the world: members get a new communicator in *comm,
 * ordered by key; non-members get NULL. */
dcoll_status_t dcoll_mpi_split(struct dcoll_group *world, bool member,
                               int key, void **comm);
void dcoll_mpi_comm_free(void *comm);
/* The Fortran handle of a member's communicator. */
int dcoll_mpi_comm_fint(const struct dcoll_group *g);

#endif
