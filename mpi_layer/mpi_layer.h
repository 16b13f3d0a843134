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
/* Rendezvous under an MPI launcher: check every process's rank and world
 * size (collective, so all reach the same verdict) and renumber the world
 * so that its ranks are the ones given; @p strict: the ranks must be MPI's
 * already. */
dcoll_status_t dcoll_mpi_order_world(struct dcoll_group *world,
                                     const char *scheme, bool strict,
                                     int rank, int world_size);
/* MPI_Init_thread, remembered so that dcoll_mpi_stop finalizes. */
dcoll_status_t dcoll_mpi_init(int thread_level);
/* Whether an MPI launcher started this process (or MPI is running). */
bool dcoll_mpi_launched(void);
/* Processes no launcher started: start MPI in each as a singleton and join
 * them, through @p store, into one communicator ordered by @p rank, whose
 * Fortran handle goes to *fcomm (free it with dcoll_mpi_join_free after
 * dcoll_mpi_start has duplicated it). Rank 0 runs OpenMPI's ompi-server
 * until dcoll_mpi_stop. */
dcoll_status_t dcoll_mpi_join(dcoll_store_t *store, int rank, int size,
                              int thread_level, double timeout, int *fcomm);
void dcoll_mpi_join_free(int fcomm);
/* Stop what dcoll_mpi_join started; after MPI_Finalize. */
void dcoll_mpi_join_end(void);
/* Fill world->local_rank and local_size (collective over the world):
 * from MPI's shared-memory split, or by host name for a @p joined world. */
dcoll_status_t dcoll_mpi_local(struct dcoll_group *world, bool joined);
/* Byte exchanges over a group's communicator, for bootstrapping NCCL. */
dcoll_status_t dcoll_mpi_bcast_bytes(struct dcoll_group *g, void *buf,
                                     size_t len, int root);
/* *ok = the minimum of every rank's *ok. */
dcoll_status_t dcoll_mpi_agree(struct dcoll_group *g, int *ok);
dcoll_status_t dcoll_mpi_allgather_bytes(struct dcoll_group *g,
                                         const void *in, void *out,
                                         size_t len);
/* Allgather len bytes from every rank of g over its control
 * communicator, bounded by g's timeout like the call c it checks. */
dcoll_status_t dcoll_mpi_exchange(struct dcoll_group *g, const void *mine,
                                  void *all, size_t len,
                                  const struct dcoll_coll *c);
/* Free what start made; with @p finalize, finalize MPI if dcoll started
 * it. A failed dcoll_init does not: MPI cannot start twice, and a later
 * dcoll_init may use it (its dcoll_finalize ends it). */
dcoll_status_t dcoll_mpi_stop(struct dcoll_group *world, bool finalize);
/* Collective over the world: members get a new communicator in *comm,
 * ordered by key; non-members get NULL. */
dcoll_status_t dcoll_mpi_split(struct dcoll_group *world, bool member,
                               int key, void **comm);
void dcoll_mpi_comm_free(void *comm);
/* The Fortran handle of a member's communicator. */
int dcoll_mpi_comm_fint(const struct dcoll_group *g);

#endif
