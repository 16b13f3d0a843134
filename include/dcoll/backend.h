/* dcoll: the registry of backends, which a program can extend. */
#ifndef DCOLL_BACKEND_H
#define DCOLL_BACKEND_H

#include "dcoll/common.h"
#include "dcoll/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of dcoll_backend_ops_t this header describes. */
#define DCOLL_BACKEND_OPS_VERSION 1

/* What a backend is asked to run. */
typedef enum dcoll_call_kind {
    DCOLL_KIND_BROADCAST = 0,
    DCOLL_KIND_ALL_REDUCE = 1,
    DCOLL_KIND_REDUCE = 2,
    DCOLL_KIND_ALL_GATHER = 3,
    DCOLL_KIND_GATHER = 4,
    DCOLL_KIND_SCATTER = 5,
    DCOLL_KIND_REDUCE_SCATTER = 6,
    DCOLL_KIND_ALL_TO_ALL = 7,
    DCOLL_KIND_BARRIER = 8,
    DCOLL_KIND_SEND = 9,
    DCOLL_KIND_RECV = 10
} dcoll_call_kind_t;

/** One call, as dcoll has checked it. Buffers and counts are those of the
 *  public call (count is per rank); sendbuf is NULL where the call has
 *  none, and equals recvbuf in place. */
typedef struct dcoll_backend_call {
    dcoll_call_kind_t kind;
    const void *sendbuf;
    void *recvbuf;
    int64_t count;
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root;       /**< group rank: the root, or send/recv's peer
                         (DCOLL_ANY_SOURCE for a receive from anyone) */
    int tag;        /**< send/recv */
    void *stream;   /**< the caller's CUDA stream, or NULL */
} dcoll_backend_call_t;

/** A backend: a versioned table of functions. dcoll calls them from the
 *  thread that called dcoll. A table of an older version is accepted and
 *  read by that version's size; fields a later version adds are taken as
 *  absent. Later versions may also add call kinds: a backend answers
 *  DCOLL_ERR_UNSUPPORTED for a kind it does not know, and the caller gets
 *  that status with a message naming the backend and the kind. */
typedef struct dcoll_backend_ops {
    uint32_t version;   /**< DCOLL_BACKEND_OPS_VERSION */
    /** Collective over a group that selects the backend (the world at
     *  dcoll_init, or a new group): make its state. @p comm is the Fortran
     *  handle of an MPI communicator of the group's members, owned by
     *  dcoll, that the backend may use until group_destroy. */
    dcoll_status_t (*group_create)(void *arg, int rank, int size, int comm,
                                   void **state);
    /** Run one call to completion. A receive writes the sender's group
     *  rank in *source. Async calls run here too, and their work handles
     *  are complete when returned. */
    dcoll_status_t (*run)(void *state, const dcoll_backend_call_t *call,
                          int *source);
    /** Free the state of a group being destroyed (may be NULL). */
    void (*group_destroy)(void *state);
} dcoll_backend_ops_t;

/** Add backend @p name (letters, digits, '_' and '-'; case-insensitive),
 *  which dcoll_init_params_t.backend and dcoll_group_params_t.backend may
 *  then select. dcoll copies @p ops; @p arg goes to group_create. Built
 *  in: "auto", "mpi" and "nccl".
 *  @return DCOLL_ERR_INVALID_ARGUMENT for a name registered already, or an
 *          ops table of a version this library does not know (0, or newer
 *          than DCOLL_BACKEND_OPS_VERSION) or lacking a function. */
DCOLL_API dcoll_status_t dcoll_register_backend(const char *name,
                                                const dcoll_backend_ops_t *ops,
                                                void *arg);

#ifdef __cplusplus
}
#endif
#endif
