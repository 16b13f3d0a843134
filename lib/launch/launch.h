/* Launch: rendezvous URLs, the join of processes no launcher started, and
 * spawn. Uses the store's public API, and MPI only through the
 * communicator services table the core passes in. */
#ifndef DCOLL_LAUNCH_H
#define DCOLL_LAUNCH_H

#include "rendezvous.h"

/* Join size processes, ordered by rank, into one MPI communicator through
 * store: its Fortran handle goes to *fcomm, and *joined must go to
 * svc->join_free once svc->start has duplicated it. On failure nothing is
 * left behind: no communicator, port or server. Rank 0 says on stderr,
 * every DCOLL_INIT_REPORT seconds (10; 0: never), how many have come to
 * where (the rendezvous's address, no token), and at the timeout which
 * ranks never did. */
dcoll_status_t dcoll_launch_join(const struct dcoll_comm_ops *svc,
                                 dcoll_store_t *store, int rank, int size,
                                 int thread_level, double timeout,
                                 const char *where, void **joined,
                                 int *fcomm);

/* dcoll_spawn, with the services that say whether MPI or a launcher is
 * already there (spawn must come first). */
dcoll_status_t dcoll_launch_spawn(const struct dcoll_comm_ops *svc,
                                  dcoll_spawn_fn fn, void *arg, int nprocs,
                                  const dcoll_spawn_params_t *params,
                                  dcoll_spawn_failure_t *failure);

#endif
