/* Rendezvous for dcoll_init: what its URL asks for. Not installed. */
#ifndef DCOLL_LIB_RENDEZVOUS_H
#define DCOLL_LIB_RENDEZVOUS_H

#include "tables.h"
#include "dcoll/store.h"

struct dcoll_rdzv {
    bool mpi;                  /* mpi:// (or no URL): MPI alone */
    char scheme[32];
    int rank, world_size;      /* -1 for mpi:// */
    bool renumber;             /* env://: the world takes these ranks */
    const char *rank_from, *size_from;  /* "RANK", "the URL", ... */
    dcoll_store_t *store;      /* NULL for mpi://, and for env:// under a
                                  launcher without MASTER_ADDR/PORT */
};

/* Rendezvous for dcoll_init. Under an MPI launcher (@p launched, MPI's
 * rank and size known), env:// without MASTER_ADDR and MASTER_PORT reads
 * rank and size alone; with them, and none of RANK, WORLD_SIZE or
 * SLURM_PROCID, it meets at that store with MPI's ranks; every other
 * scheme runs its handler and yields a store. */
dcoll_status_t dcoll_rdzv_run(const char *url, double timeout, bool launched,
                              int mpi_rank, int mpi_size,
                              struct dcoll_rdzv *r);

/* The attempt a restarting launcher is at ($TORCHELASTIC_RESTART_COUNT,
 * which dcollrun --max-restarts sets; "0" where unset), and the prefix
 * an agent's store keeps that attempt's keys under, as torch's does. */
const char *dcoll_attempt(void);
#define DCOLL_ATTEMPT_PREFIX "/worker/attempt_%s"

#endif
