/* dcoll: starting a job's processes on this machine, like torch's spawn. */
#ifndef DCOLL_SPAWN_H
#define DCOLL_SPAWN_H

#include "dcoll/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What each process runs: its exit status is the return value (0 for
 *  success). It typically calls dcoll_init with "env://". */
typedef int (*dcoll_spawn_fn)(int rank, void *arg);

/* Bits of dcoll_spawn_params_t.mask. */
#define DCOLL_SPAWN_PARAM_MASTER_ADDR (UINT64_C(1) << 0)
#define DCOLL_SPAWN_PARAM_MASTER_PORT (UINT64_C(1) << 1)
#define DCOLL_SPAWN_PARAM_TIMEOUT     (UINT64_C(1) << 2)
#define DCOLL_SPAWN_PARAM_NODES       (UINT64_C(1) << 3)
#define DCOLL_SPAWN_PARAM_ON_FAILURE  (UINT64_C(1) << 4)

/* What a process's failure does to the others (API 1.11). */
#define DCOLL_ON_FAILURE_STOP     0  /* stop them all (the default) */
#define DCOLL_ON_FAILURE_CONTINUE 1  /* let them go on, and tell them */

typedef struct dcoll_spawn_params {
    uint64_t mask;            /**< which fields below are set */
    const char *master_addr;  /**< MASTER_ADDR; default "127.0.0.1" */
    int master_port;          /**< MASTER_PORT; default: a free port */
    double timeout;           /**< seconds before every process is stopped;
                                   default: no limit */
    /* A job over several machines (API 1.6), torchrun's way: the same
     * call on each, every one with the same master_addr and master_port
     * (both then required) and its own node_rank. */
    int nnodes;               /**< machines in the job; default 1 */
    int node_rank;            /**< this one's place, 0 to nnodes - 1 */
    /* API 1.11: DCOLL_ON_FAILURE_CONTINUE lets the others run on after a
     * process fails: the job's store (served by this process) tells
     * them who died, for dcoll_group_shrink, and the call returns once
     * all have ended, with the first failure. One machine only. */
    int on_failure;           /**< DCOLL_ON_FAILURE_*; default STOP */
} dcoll_spawn_params_t;

#define DCOLL_SPAWN_PARAMS_INIT {0, NULL, 0, 0.0, 1, 0, 0}

/** The first process that failed: its rank, and its exit code or the
 *  signal that ended it (the other one is 0). */
typedef struct dcoll_spawn_failure {
    int rank;
    int exit_code;
    int signal;
} dcoll_spawn_failure_t;

/** Run fn(rank, arg) in @p nprocs processes of this machine, each with
 *  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
 *  MASTER_PORT set, and wait for all of them. With @p nprocs 1, fn runs in
 *  this process. The first process to fail (non-zero exit or a signal) is
 *  reported, in *failure if not NULL, and the others are stopped (SIGTERM,
 *  then SIGKILL), with their process groups: what they started there is
 *  stopped too. A process a rank puts in a session of its own (setsid,
 *  a daemon's double fork) is not reached, as under torchrun (which
 *  signals each worker's session) and mpirun; dcollrun adopts such
 *  processes and ends them after the job (docs/launching.md).
 *  Call it before dcoll_init, from a process no MPI launcher started.
 *
 *  Over several machines (DCOLL_SPAWN_PARAM_NODES, nnodes > 1): node 0
 *  serves the job's TCP store at master_addr:master_port (token:
 *  $DCOLL_STORE_TOKEN); the nodes meet there within $DCOLL_INIT_TIMEOUT
 *  seconds (300), node 0 naming those that never came, every
 *  DCOLL_INIT_REPORT seconds while it waits too. Node k's processes are
 *  ranks k * nprocs to k * nprocs + nprocs - 1 of WORLD_SIZE nnodes *
 *  nprocs (GROUP_RANK k, GROUP_WORLD_SIZE nnodes), and meet through that
 *  store (TORCHELASTIC_USE_AGENT_STORE=True), fn running in a child even
 *  where nprocs is 1. A failure on one node stops every node's
 *  processes; node 0 returns once every node is done.
 *  @return DCOLL_ERR_CHILD_FAILED naming the rank (its node, its host) and
 *          its exit code or signal; DCOLL_ERR_TIMEOUT after
 *          params->timeout, or where the nodes did not all come;
 *          DCOLL_ERR_IO where a node lost node 0's store. */
DCOLL_API dcoll_status_t dcoll_spawn(dcoll_spawn_fn fn, void *arg, int nprocs,
                                     const dcoll_spawn_params_t *params,
                                     dcoll_spawn_failure_t *failure);

#ifdef __cplusplus
}
#endif
#endif
