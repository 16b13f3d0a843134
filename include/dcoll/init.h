/* dcoll: starting and stopping the library. */
#ifndef DCOLL_INIT_H
#define DCOLL_INIT_H

#include "dcoll/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MPI thread levels dcoll asks for when it starts MPI itself. */
typedef enum dcoll_thread_level {
    DCOLL_THREAD_SINGLE = 0,
    DCOLL_THREAD_FUNNELED = 1,
    DCOLL_THREAD_SERIALIZED = 2,
    DCOLL_THREAD_MULTIPLE = 3
} dcoll_thread_level_t;

/* Bits of dcoll_init_params_t.mask: the library reads a field only when
 * its bit is set, so fields can be added without breaking old binaries. */
#define DCOLL_INIT_PARAM_URL          (UINT64_C(1) << 0)
#define DCOLL_INIT_PARAM_COMM         (UINT64_C(1) << 1)
#define DCOLL_INIT_PARAM_THREAD_LEVEL (UINT64_C(1) << 2)
#define DCOLL_INIT_PARAM_BACKEND      (UINT64_C(1) << 3)
#define DCOLL_INIT_PARAM_TIMEOUT      (UINT64_C(1) << 4)
#define DCOLL_INIT_PARAM_COLL_TIMEOUT (UINT64_C(1) << 5)
#define DCOLL_INIT_PARAM_ON_TIMEOUT   (UINT64_C(1) << 6)
#define DCOLL_INIT_PARAM_TUNING       (UINT64_C(1) << 7)  /* since 1.9 */

/* What a collective that outlasts its group's timeout does. */
typedef enum dcoll_on_timeout {
    /* Blocking calls are MPI's own blocking calls; a watchdog thread
     * notices one that has passed its deadline, asks the group's ranks
     * where they are, prints the report and the flight recorder on every
     * rank, and ends the job (exit code DCOLL_HANG_EXIT_CODE). */
    DCOLL_ON_TIMEOUT_ABORT = 0,
    /* Blocking calls post MPI's nonblocking ones (or dcoll's own
     * point-to-point ones for small calls) and poll them: a timed-out call
     * returns DCOLL_ERR_TIMEOUT and the program carries on, the group
     * unusable. Costs up to several times the latency of small calls. */
    DCOLL_ON_TIMEOUT_RETURN = 1
} dcoll_on_timeout_t;

/* The exit code of a job that the watchdog ended (DCOLL_ON_TIMEOUT_ABORT). */
#define DCOLL_HANG_EXIT_CODE 3
/* The exit code of a rank that ends itself because dcoll's keeper (under
 *  mpirun or srun with DCOLL_ON_FAILURE=continue) took it as dead or
 *  cannot be reached: the others go on without it. */
#define DCOLL_FENCED_EXIT_CODE 4

typedef struct dcoll_init_params {
    uint64_t mask;          /**< which fields below are set; 0: all defaults */
    const char *url;        /**< rendezvous URL; default "mpi://". Also
                                 env://, tcp://, file:// and registered
                                 schemes (see dcoll_rendezvous). env://
                                 also reads SLURM_PROCID and
                                 SLURM_STEP_NUM_TASKS (or SLURM_NTASKS).
                                 Under an MPI launcher the rendezvous must
                                 agree with MPI's world size (env://
                                 renumbers the world to its ranks; others
                                 must match MPI's), and env:// without
                                 MASTER_ADDR/PORT needs no store. Without
                                 one, the processes join into one MPI
                                 world through the store. */
    int comm;               /**< world communicator as a Fortran handle
                                 (MPI_Comm_c2f); default MPI_COMM_WORLD.
                                 dcoll duplicates it. */
    int thread_level;       /**< dcoll_thread_level_t requested if dcoll
                                 starts MPI; default MULTIPLE, which the
                                 watchdog needs to ask other ranks where
                                 they are (below it, a hang is reported
                                 from the stuck rank alone) */
    const char *backend;    /**< world backend: "auto" (default), "mpi",
                                 "nccl" or a registered name (see
                                 dcoll_group_params_t), case-insensitive */
    double timeout;         /**< seconds the rendezvous may take; default
                                 $DCOLL_INIT_TIMEOUT, else 300 */
    double coll_timeout;    /**< seconds a host collective on the world
                                 (and by default on new groups) may wait
                                 for the other ranks; then the report
                                 names the ranks that had not arrived and
                                 on_timeout says what follows: the job
                                 ends, or the call returns
                                 DCOLL_ERR_TIMEOUT and the group is
                                 unusable (DCOLL_ERR_GROUP_FAILED). Default
                                 $DCOLL_TIMEOUT, else 1800. 0: wait
                                 forever, through blocking MPI calls.
                                 Environment, read at dcoll_init:
                                 DCOLL_DEBUG=detail checks before every
                                 collective that all ranks called the same
                                 one (DCOLL_ERR_MISMATCH otherwise);
                                 DCOLL_FLIGHT_RECORDER=N keeps each group's
                                 last N calls (default 16, 0: none) and
                                 prints them on a timeout or mismatch */
    int on_timeout;         /**< dcoll_on_timeout_t for the world and, by
                                 default, new groups: what a call that
                                 outlasts coll_timeout does. Default
                                 $DCOLL_ON_TIMEOUT ("abort" or "return"),
                                 else DCOLL_ON_TIMEOUT_ABORT. Every rank
                                 must choose the same */
    const char *tuning;     /**< the tuning table to load (a file that
                                 dcoll-tune wrote), in place of
                                 $DCOLL_TUNING; NULL or "": none, whatever
                                 $DCOLL_TUNING says. Rank 0's decides, as
                                 rank 0 reads the file for all. Since 1.9
                                 (docs/performance.md, Tuning tables) */
} dcoll_init_params_t;

#define DCOLL_INIT_PARAMS_INIT {0, NULL, 0, 0, NULL, 0.0, 0.0, 0, NULL}

/** Make the world group. Starts MPI (MPI_Init_thread) only if it is not
 *  running yet, and then finalizes it in dcoll_finalize (also after a
 *  failed dcoll_init and a later successful one). @p params may be NULL
 *  for all defaults.
 *  @return DCOLL_ERR_ALREADY_INITIALIZED on a second call,
 *          DCOLL_ERR_INVALID_ARGUMENT for a bad field or unknown mask bit,
 *          DCOLL_ERR_UNSUPPORTED for a URL scheme that is not built,
 *          DCOLL_ERR_MPI when MPI fails. */
DCOLL_API dcoll_status_t dcoll_init(const dcoll_init_params_t *params);

/** Free every group and the world; finalize MPI if dcoll started it.
 *  Where the program called MPI_Finalize first, dcoll already ended there
 *  (stopping its watchdog and freeing its communicators before MPI went),
 *  and the first dcoll_finalize after it returns DCOLL_SUCCESS.
 *  @return DCOLL_ERR_INVALID_STATE, changing nothing, while any work handle
 *          is still in flight; DCOLL_ERR_NOT_INITIALIZED, DCOLL_ERR_FINALIZED. */
DCOLL_API dcoll_status_t dcoll_finalize(void);

/** This process's rank among the world's processes on its node, and how
 *  many there are (from MPI_COMM_TYPE_SHARED; ordered by world rank), e.g.
 *  to pick a GPU. Either output may be NULL, not both. */
DCOLL_API dcoll_status_t dcoll_local_rank(int *local_rank, int *local_size);

/** Whether backend @p name ("mpi" or "nccl", case-insensitive) can serve
 *  collectives in this process, in *available (1 or 0), and, if @p text is
 *  not NULL, a line saying what dcoll found: for "nccl", the CUDA plugin it
 *  loaded (or where it looked), the CUDA and NCCL versions and the GPUs, or
 *  why there are none. The text is valid until dcoll_finalize. */
DCOLL_API dcoll_status_t dcoll_backend_status(const char *name,
                                              int *available,
                                              const char **text);

/** The GPU this process should use, in *device, or -1 without one.
 *  dcoll_init keeps the device of a CUDA context the program already
 *  made; the node's other ranks get GPUs of their own wherever there are
 *  enough, on their NUMA node where that does not collide (hwloc),
 *  whatever the launcher's mapping or CUDA_VISIBLE_DEVICES, and share
 *  evenly where there are not. It does not make it
 *  current: that would give every process a CUDA context, host-only ones
 *  too; a program that uses the GPU calls cudaSetDevice(*device) itself,
 *  as torch programs call torch.cuda.set_device. dcoll's own calls on GPU
 *  buffers leave each thread's CUDA context as they found it.
 *  dcoll_backend_status("nccl") says which rule applied. */
DCOLL_API dcoll_status_t dcoll_device(int *device);

/** *flag = 1 between a successful dcoll_init and dcoll_finalize, else 0. */
DCOLL_API dcoll_status_t dcoll_initialized(int *flag);

/** End the whole job with exit status @p code, as MPI_Abort on the world
 *  does: every process of the job and its launcher end (the status a shell
 *  sees is code modulo 256). @p reason, if not NULL, is printed to stderr
 *  first with the rank. Before dcoll_init or after dcoll_finalize only
 *  this process exits. Does not return. (API 1.5.) */
DCOLL_API dcoll_status_t dcoll_abort(int code, const char *reason);

/** Write this process's flight recorders now, without stopping anything:
 *  every group's state (its latest call, whether a call waits, why it
 *  failed) and its last calls, as JSON lines (docs/trace.md), to
 *  DCOLL_FLIGHT_DIR/dcoll-JOB-RANK.jsonl (the working directory by
 *  default; the file is replaced whole), or, with
 *  DCOLL_FLIGHT_DIR=stderr, as text on stderr. Local: call it on any
 *  rank. DCOLL_DUMP_SIGNAL makes a signal do the same from dcoll's
 *  watchdog thread. Returns DCOLL_ERR_IO naming the file where it cannot
 *  be written, DCOLL_ERR_NOT_INITIALIZED or DCOLL_ERR_FINALIZED outside
 *  init and finalize. (API 1.10.) */
DCOLL_API dcoll_status_t dcoll_dump(void);

/** Seconds on a monotonic clock, for timing as with MPI_Wtime: only
 *  differences mean anything. Callable at any time; never fails, so it
 *  returns the time itself rather than a status. (API 1.5.) */
DCOLL_API double dcoll_wtime(void);

#ifdef __cplusplus
}
#endif
#endif
