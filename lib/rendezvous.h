/* Rendezvous: what dcoll_init's URL asks for. Not installed. */
#ifndef DCOLL_LIB_RENDEZVOUS_H
#define DCOLL_LIB_RENDEZVOUS_H

#include "internal.h"

enum dcoll_rdzv_scheme { DCOLL_RDZV_MPI, DCOLL_RDZV_ENV };

struct dcoll_rdzv {
    enum dcoll_rdzv_scheme scheme;
    /* env:// only */
    int rank, world_size;
    const char *rank_from, *size_from;  /* "RANK", "SLURM_PROCID", ... */
    const char *master_addr;            /* NULL when unset */
    int master_port;                    /* 0 when unset */
};

/* Parse url (NULL: mpi://) and, for env://, read the environment. Local
 * checks only; nothing is started. */
dcoll_status_t dcoll_rdzv_parse(const char *url, struct dcoll_rdzv *r);

/* The error for env:// when MPI has no launcher (a singleton) but the
 * world is larger than one process. */
dcoll_status_t dcoll_rdzv_no_launcher(const struct dcoll_rdzv *r);

#endif
