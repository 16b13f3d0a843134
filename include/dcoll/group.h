/* dcoll: process groups. */
#ifndef DCOLL_GROUP_H
#define DCOLL_GROUP_H

#include "dcoll/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A process group: an opaque handle. The world group belongs to dcoll; a
 *  group from dcoll_new_group belongs to the caller until
 *  dcoll_group_destroy. A NULL group argument means the world everywhere;
 *  DCOLL_GROUP_NULL (what dcoll_group_destroy leaves) is refused.
 *  Not thread-safe: one thread at a time may issue calls on a group; a
 *  call made while another thread is in one on the same group is refused
 *  (DCOLL_ERR_INVALID_STATE, naming that call) and changes nothing. */
typedef struct dcoll_group dcoll_group_t;

/** What dcoll_group_destroy leaves in the caller's variable (API 1.11):
 *  like MPI_COMM_NULL, every call given it is refused with
 *  DCOLL_ERR_INVALID_ARGUMENT, so a call on a destroyed group's variable
 *  never runs on the world by mistake. Destroying it again does nothing.
 *  Never dereferenced. */
#define DCOLL_GROUP_NULL ((dcoll_group_t *)(intptr_t)-1)

/* Bits of dcoll_group_params_t.mask. */
#define DCOLL_GROUP_PARAM_BACKEND (UINT64_C(1) << 0)
#define DCOLL_GROUP_PARAM_TIMEOUT (UINT64_C(1) << 1)
#define DCOLL_GROUP_PARAM_ON_TIMEOUT (UINT64_C(1) << 2)

typedef struct dcoll_group_params {
    uint64_t mask;        /**< which fields below are set */
    const char *backend;  /**< default: the world's. "auto" (GPU buffers to
                               NCCL where it can), "mpi" (GPU buffers
                               staged through host memory), "nccl" (GPU
                               buffers only), or a registered name;
                               case-insensitive */
    double timeout;       /**< seconds a host collective on the group may
                               wait for the other ranks before on_timeout
                               applies; default: the world's. 0: wait
                               forever. Every member must agree on whether
                               it is 0 */
    int on_timeout;       /**< dcoll_on_timeout_t (init.h): end the job
                               with a report (ABORT), or return
                               DCOLL_ERR_TIMEOUT and make the group
                               unusable (RETURN); default: the world's.
                               Every member must choose the same */
} dcoll_group_params_t;

#define DCOLL_GROUP_PARAMS_INIT {0, NULL, 0.0, 0}

/* Rank a process that is not in a group sees for itself. */
#define DCOLL_NON_MEMBER (-1)

/** The world group (owned by dcoll; destroying it is an error). */
DCOLL_API dcoll_status_t dcoll_group_world(dcoll_group_t **out);

/** Make a group of the world ranks @p ranks (any order, no duplicates).
 *  Collective over the world: every world rank calls it with the same
 *  list, members or not. Ranks are sorted; a member's group rank is its
 *  index in the sorted list. A non-member gets a NON-MEMBER handle on which
 *  collectives succeed at once and do nothing, and rank queries answer
 *  DCOLL_NON_MEMBER. @p ranks NULL with @p nranks 0 means all ranks.
 *  @p params may be NULL. Like MPI communicator creation, groups are made
 *  and destroyed by one thread at a time.
 *  @return DCOLL_ERR_INVALID_ARGUMENT for a rank out of range or given twice. */
DCOLL_API dcoll_status_t dcoll_new_group(dcoll_group_t **out, const int *ranks,
                                         int nranks,
                                         const dcoll_group_params_t *params);

/* The color of a process that joins none of dcoll_split_group's groups. */
#define DCOLL_SPLIT_NONE (-1)

/** Split @p parent (NULL: the world) into one group per color, as
 *  MPI_Comm_split and torch's split_group / new_subgroups do. Collective
 *  over the parent's members: each passes a @p color (>= 0, or
 *  DCOLL_SPLIT_NONE) and a @p key; those of one color form a group, in
 *  which ranks follow key, ties broken by rank in the parent. Every
 *  member gets its own group in *out (the NON-MEMBER handle for
 *  DCOLL_SPLIT_NONE, and on a parent this process is not in), so one
 *  call makes every row of a process grid. @p params may be NULL; the
 *  members of one new group must agree on it as for dcoll_new_group.
 *  Groups from both are destroyed with dcoll_group_destroy (API 1.4). */
DCOLL_API dcoll_status_t dcoll_split_group(dcoll_group_t **out,
                                           dcoll_group_t *parent, int color,
                                           int key,
                                           const dcoll_group_params_t *params);

/** Make the group of @p group's ranks that are alive, after a call on it
 *  returned DCOLL_ERR_RANK_DIED (API 1.11), as torch's shrink_group and
 *  ULFM's MPIX_Comm_shrink do. Collective over the group's living ranks:
 *  each calls it once per failure; they agree, through the job's store
 *  and within the group's timeout, on who is alive, and each gets in
 *  *out the same new group of them, ranked in the order of @p group (a
 *  copy of @p group where none died). A rank is left out only where its
 *  launcher said it died: one that is alive but slow is waited for, and
 *  one that never comes ends the call with DCOLL_ERR_TIMEOUT naming it.
 *  The new group has @p group's timeout, timeout mode and backend, and
 *  makes its own NCCL communicator at its first GPU call. @p group stays
 *  unusable; destroy it or leave it to dcoll_finalize.
 *  @return DCOLL_ERR_UNSUPPORTED where no launcher reports deaths to this
 *          job (start it with dcollrun --on-failure continue); see
 *          docs/failures.md. */
DCOLL_API dcoll_status_t dcoll_group_shrink(dcoll_group_t *group,
                                            dcoll_group_t **out);

/** Free a group made by dcoll_new_group and set *group to
 *  DCOLL_GROUP_NULL (API 1.11; NULL before, which a later call took for
 *  the world), which every call refuses. Collective over the group's
 *  members. A NON-MEMBER handle, or *group NULL or DCOLL_GROUP_NULL, is
 *  fine (nothing to free; *group becomes DCOLL_GROUP_NULL). A copy of the
 *  handle kept elsewhere is refused ("not a live dcoll group") as long as
 *  its memory has not been reused. A group this rank left (it refused a
 *  call, or MPI failed one here) keeps its communicators until
 *  dcoll_finalize, so that the other ranks can still ask it why. */
DCOLL_API dcoll_status_t dcoll_group_destroy(dcoll_group_t **group);

/** This process's rank in @p group, or DCOLL_NON_MEMBER. */
DCOLL_API dcoll_status_t dcoll_group_rank(const dcoll_group_t *group, int *rank);

/** Number of ranks in @p group, or DCOLL_NON_MEMBER on a NON-MEMBER handle. */
DCOLL_API dcoll_status_t dcoll_group_size(const dcoll_group_t *group, int *size);

/** World rank of @p group_rank in @p group.
 *  @return DCOLL_ERR_INVALID_ARGUMENT when it is out of range or the handle
 *          is NON-MEMBER (it has no mapping). */
DCOLL_API dcoll_status_t dcoll_group_global_rank(const dcoll_group_t *group,
                                                 int group_rank, int *global_rank);

/** Rank in @p group of world rank @p global_rank.
 *  @return DCOLL_ERR_INVALID_ARGUMENT when it is not in the group. */
DCOLL_API dcoll_status_t dcoll_group_group_rank(const dcoll_group_t *group,
                                                int global_rank, int *group_rank);

/** Name of the backend that serves @p group, as registered; static. */
DCOLL_API dcoll_status_t dcoll_group_backend(const dcoll_group_t *group,
                                             const char **name);

/** The MPI communicator that serves @p group, as a Fortran handle
 *  (MPI_Fint), so that raw MPI calls can run beside dcoll's on the same
 *  ranks. C code converts it with MPI_Comm_f2c, or calls
 *  dcoll_group_mpi_comm from dcoll_mpi.h. The communicator stays dcoll's:
 *  do not free it, and do not use it after the group is destroyed.
 *  @return DCOLL_ERR_INVALID_ARGUMENT on a NON-MEMBER handle (it has no
 *          communicator). */
DCOLL_API dcoll_status_t dcoll_group_comm(const dcoll_group_t *group,
                                          int *comm);

/** Memory for the group's collectives (API 1.12): @p bytes for this
 *  rank, 4096-byte aligned, in *@p ptr. Collective over @p group (NULL:
 *  the world): every member calls it, with the same @p bytes (1 to
 *  2^40). Where the group's ranks are all on one node (and DCOLL_SHM is
 *  not never), the memory lies in a shared heap every member maps, and
 *  the shared segment's all_reduce, reduce, all_gather and
 *  reduce_scatter read a send buffer there in place instead of copying
 *  it in first (and so do plans made on it); elsewhere it is ordinary
 *  memory of this process. Either way it is memory like any other:
 *  every call takes it, and every call takes buffers from anywhere
 *  else as before. Like MPI_Win_allocate_shared and torch's symmetric
 *  memory, not NCCL's ncclMemAlloc (local). It lives until
 *  dcoll_mem_free or the group's destroy.
 *  @return DCOLL_ERR_INVALID_ARGUMENT for a NULL @p ptr, a size out of
 *          range or one that differs between ranks (on every rank,
 *          naming it), a NON-MEMBER handle; DCOLL_ERR_NO_MEMORY, on
 *          every rank, where a rank could not have it (a full /dev/shm);
 *          the group's timeout or abort rules where a rank never comes. */
DCOLL_API dcoll_status_t dcoll_mem_alloc(dcoll_group_t *group, size_t bytes,
                                         void **ptr);

/** Free memory that dcoll_mem_alloc gave on @p group (API 1.12).
 *  Collective over @p group: every member passes its own pointer, and
 *  no rank's call may still be using any rank's part.
 *  @return DCOLL_ERR_INVALID_ARGUMENT, on every rank, where a rank's
 *          pointer is NULL or not from dcoll_mem_alloc on this group
 *          (nothing is freed then). */
DCOLL_API dcoll_status_t dcoll_mem_free(dcoll_group_t *group, void *ptr);

#ifdef __cplusplus
}
#endif
#endif
