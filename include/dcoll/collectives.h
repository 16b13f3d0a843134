/* dcoll: collectives and point-to-point operations.
 *
 * Conventions shared by every function here:
 * - group NULL means the world. On a NON-MEMBER handle the call checks its
 *   local arguments, then returns DCOLL_SUCCESS at once and does nothing.
 * - root, src and dst are WORLD ranks; a rank outside the group is an error.
 * - count is in elements, per rank, and may exceed INT_MAX.
 * - work NULL: the call blocks until the result is ready. work non-NULL:
 *   the call starts the operation, stores a handle in *work and returns;
 *   the buffers must stay untouched until dcoll_work_wait/test says done.
 * - opts may be NULL (defaults).
 * - A collective a member rank refuses by its own checks (a negative
 *   count, a NULL buffer, a root outside the group, ...) still uses that
 *   rank's next call number, and the group is unusable on that rank from
 *   then on (DCOLL_ERR_GROUP_FAILED, naming the call and why): its next
 *   call could otherwise pair with the call the other ranks made. They
 *   fail at their timeout, naming the rank and why, or at once with
 *   DCOLL_DEBUG=detail. Errors found before the group is known (not
 *   initialized, a dead handle) are only returned. */
#ifndef DCOLL_COLLECTIVES_H
#define DCOLL_COLLECTIVES_H

#include "dcoll/common.h"
#include "dcoll/group.h"
#include "dcoll/types.h"
#include "dcoll/work.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of dcoll_coll_opts_t.mask. */
#define DCOLL_COLL_OPT_STREAM (UINT64_C(1) << 0)
#define DCOLL_COLL_OPT_MEMORY (UINT64_C(1) << 1)
/* API 1.11: a blocking call on GPU buffers that NCCL runs returns once
 * it is enqueued on opts.stream, its result ordered there as NCCL's own
 * calls' are: the host does not wait. An error NCCL reports later, or a
 * call not done within the group's timeout, is found by dcoll's
 * watchdog, which aborts the group's communicator: the group's next call
 * fails saying why, and in abort mode the job ends. Calls that stage
 * through host memory, and host calls, wait as ever. */
#define DCOLL_COLL_OPT_STREAM_ORDERED (UINT64_C(1) << 2)
/* API 1.11, for language bindings, which know more of a call than C's
 * arguments say (the Fortran module, a C++ span). BOUNDS: sendbytes and
 * recvbytes are the bytes sendbuf and recvbuf hold (a call with one
 * buffer: sendbytes bounds it), and a call whose counts, displacements
 * or layouts reach past either is refused, naming both sizes. REFUSAL:
 * the binding refused the call's arguments itself, for the reason in
 * refusal; dcoll refuses the call as it refuses its own bad arguments
 * (the call takes its number and the group's rules for a refused call
 * apply on every rank: docs/failures.md), reading none of the others. */
#define DCOLL_COLL_OPT_BOUNDS (UINT64_C(1) << 3)
#define DCOLL_COLL_OPT_REFUSAL (UINT64_C(1) << 4)

/* Where a call's buffers live (opts.memory), as UCC's memory types. */
typedef enum dcoll_memory {
    DCOLL_MEMORY_HOST = 0,   /* host memory, pinned or not */
    DCOLL_MEMORY_CUDA = 1    /* GPU memory on the group's GPU: asked of
                                CUDA at the group's first GPU call only */
} dcoll_memory_t;

typedef struct dcoll_coll_opts {
    uint64_t mask;   /**< which fields below are set */
    void *stream;    /**< CUDA stream for device buffers (cudaStream_t):
                          the call reads its inputs after the stream's
                          earlier work. Default: the legacy default
                          stream, which waits for earlier work on every
                          blocking stream of the device but not on a
                          cudaStreamNonBlocking one (CUDA's stream
                          semantics): inputs written there need that
                          stream passed here. Ignored for host buffers,
                          but for managed memory, read after it */
    int memory;      /**< dcoll_memory_t (API 1.5): where every buffer of
                          the call lives. Unset, dcoll asks CUDA of each
                          buffer once a GPU is present (a pointer query
                          each); DCOLL_MEMORY_HOST skips that, and a GPU
                          buffer passed with it reaches MPI as a host
                          one, as with UCC's memory types;
                          DCOLL_MEMORY_CUDA skips it once the group's
                          GPU is known (its first GPU call), the buffers
                          then taken to be on that GPU, as on a group
                          whose backend is "nccl" */
    int64_t sendbytes;   /**< DCOLL_COLL_OPT_BOUNDS (API 1.11) */
    int64_t recvbytes;   /**< DCOLL_COLL_OPT_BOUNDS (API 1.11) */
    const char *refusal; /**< DCOLL_COLL_OPT_REFUSAL (API 1.11): why the
                              binding refused the call, as the message
                              every rank's report quotes */
} dcoll_coll_opts_t;

#define DCOLL_COLL_OPTS_INIT {0, NULL, 0, 0, 0, NULL}

/* src of dcoll_recv / dcoll_irecv: take a message from any rank. */
#define DCOLL_ANY_SOURCE (-2)
/* A peer that is none (API 1.11), as MPI_PROC_NULL: a send to it or a
 * receive from it, and their plans, complete at once, moving nothing and
 * leaving the buffer untouched; a receive's source is DCOLL_PROC_NULL.
 * For a boundary of a domain that is not periodic. */
#define DCOLL_PROC_NULL (-1)

/** Copy @p count elements of @p buf on @p root to @p buf on every rank. */
DCOLL_API dcoll_status_t dcoll_broadcast(dcoll_group_t *group, void *buf,
        int64_t count, dcoll_dtype_t dtype, int root,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** recvbuf[i] = op over ranks of sendbuf[i]. In place: sendbuf == recvbuf. */
DCOLL_API dcoll_status_t dcoll_all_reduce(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** As all_reduce, the result only on @p root; recvbuf is ignored elsewhere
 *  (may be NULL). In place on root: sendbuf == recvbuf. */
DCOLL_API dcoll_status_t dcoll_reduce(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, int root, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** recvbuf (size * count) holds every rank's sendbuf in group-rank order.
 *  In place: sendbuf == recvbuf + rank * count, or sendbuf == recvbuf (MPI's
 *  MPI_IN_PLACE: this rank's block already at its place), on every rank. */
DCOLL_API dcoll_status_t dcoll_all_gather(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** As all_gather, the result only on @p root. recvbuf must be given on the
 *  root; the other ranks' recvbuf is ignored, as in MPI. In place on root:
 *  sendbuf == recvbuf + root_group_rank * count, or sendbuf == recvbuf
 *  (MPI_IN_PLACE: the root's block already at its place). */
DCOLL_API dcoll_status_t dcoll_gather(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Group rank i gets block i (count elements) of the root's sendbuf.
 *  sendbuf must be given on the root; the other ranks' sendbuf is ignored,
 *  as in MPI.
 *  In place on root: recvbuf == sendbuf + root_group_rank * count, or
 *  recvbuf == sendbuf (MPI_IN_PLACE: the root's block stays where it is). */
DCOLL_API dcoll_status_t dcoll_scatter(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Reduce sendbuf (size * count) over ranks; group rank i gets block i in
 *  recvbuf (count). In place: recvbuf == sendbuf + rank * count (the
 *  result at its block), or recvbuf == sendbuf (MPI_IN_PLACE: the result
 *  in the first count elements), on every rank. */
DCOLL_API dcoll_status_t dcoll_reduce_scatter(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Prefix reduction (API 1.11), as MPI_Scan: group rank r's recvbuf gets
 *  op over the sendbufs of ranks 0 to r, in rank order. AVG divides each
 *  rank's sum by r + 1. In place: sendbuf == recvbuf. */
DCOLL_API dcoll_status_t dcoll_scan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Exclusive prefix reduction (API 1.11), as MPI_Exscan: group rank r > 0
 *  gets op over the sendbufs of ranks 0 to r - 1 (AVG: divided by r);
 *  rank 0's recvbuf is left as it was. In place: sendbuf == recvbuf. */
DCOLL_API dcoll_status_t dcoll_exscan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Block j (count elements) of sendbuf goes to group rank j, landing in
 *  its recvbuf block i (i = sender). In place: sendbuf == recvbuf. */
DCOLL_API dcoll_status_t dcoll_all_to_all(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Wait until every rank of the group has entered the barrier. */
DCOLL_API dcoll_status_t dcoll_barrier(dcoll_group_t *group,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Send @p count elements to world rank @p dst (or DCOLL_PROC_NULL: no
 *  one) with @p tag (>= 0). A blocking send to this process's own rank is
 *  refused (it would hang). */
DCOLL_API dcoll_status_t dcoll_send(dcoll_group_t *group, const void *buf,
        int64_t count, dcoll_dtype_t dtype, int dst, int tag,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Receive up to @p count elements from world rank @p src (or
 *  DCOLL_ANY_SOURCE, or DCOLL_PROC_NULL: no one) with @p tag. A blocking receive stores the sender's
 *  world rank in *source when source is not NULL; an async one reports it
 *  through dcoll_work_source. */
DCOLL_API dcoll_status_t dcoll_recv(dcoll_group_t *group, void *buf,
        int64_t count, dcoll_dtype_t dtype, int src, int tag,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work, int *source);

/** dcoll_send that always returns a work handle (work must not be NULL). */
DCOLL_API dcoll_status_t dcoll_isend(dcoll_group_t *group, const void *buf,
        int64_t count, dcoll_dtype_t dtype, int dst, int tag,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** dcoll_recv that always returns a work handle (work must not be NULL). */
DCOLL_API dcoll_status_t dcoll_irecv(dcoll_group_t *group, void *buf,
        int64_t count, dcoll_dtype_t dtype, int src, int tag,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** A strided layout of a buffer (API 1.11), in elements of the call's
 *  type: @p count blocks of @p blocklen elements, each starting @p stride
 *  elements after the one before (MPI_Type_vector), the first at
 *  @p offset from the buffer's start; and, where @p count2 > 1, that
 *  pattern @p count2 times, each @p stride2 elements after the one
 *  before (count2 0 or 1: once). In an array of X by Y by Z elements, x
 *  fastest, with one ghost layer (interior 1..X-2 on each axis), the
 *  interior faces are
 *    x = 1:  {X*Y + X + 1,  Y-2, 1,   X,   Z-2, X*Y}
 *    y = 1:  {X*Y + X + 1,  Z-2, X-2, X*Y, 0,   0}
 *    z = 1:  {X*Y + X + 1,  Y-2, X-2, X,   0,   0}
 *  (docs/halo.md). Every field is at least 0, count, blocklen, stride,
 *  count2 and stride2 at most INT_MAX, and the blocks never overlap:
 *  stride >= blocklen where count > 1, and stride2 at least the span of
 *  one pattern where count2 > 1. */
typedef struct dcoll_layout {
    int64_t offset;
    int64_t count;
    int64_t blocklen;
    int64_t stride;
    int64_t count2;
    int64_t stride2;
} dcoll_layout_t;

/** dcoll_send of the count * blocklen elements @p layout picks out of
 *  @p buf (API 1.11): no packing by hand. It matches any receive of as
 *  many elements, strided or not. Host buffers only for now. */
DCOLL_API dcoll_status_t dcoll_send_layout(dcoll_group_t *group,
        const void *buf, const dcoll_layout_t *layout, dcoll_dtype_t dtype,
        int dst, int tag, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** dcoll_recv into the elements @p layout picks out of @p buf (API 1.11);
 *  the rest of buf is untouched. A blocking receive stores the sender in
 *  *source where source is not NULL. */
DCOLL_API dcoll_status_t dcoll_recv_layout(dcoll_group_t *group, void *buf,
        const dcoll_layout_t *layout, dcoll_dtype_t dtype, int src, int tag,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work, int *source);

/* Vector forms (API 1.4), as MPI's v-collectives: a count per group rank.
 * Count and displacement arrays have an entry per group rank and are in
 * elements; displs NULL means packed (block i right after block i - 1).
 * Each count and displacement is at most INT_MAX, which is what MPI's
 * vector calls take. The arrays are read during the call, not after: an
 * async call may change or free them once it returns (unlike MPI's).
 * Host buffers only for now. */

/** all_gather with a count per rank: rank i's @p sendcount elements
 *  (equal to recvcounts[i] on every rank) land at recvbuf + displs[i].
 *  In place: sendbuf == recvbuf + displs[rank] (its packed place when
 *  displs is NULL), or sendbuf == recvbuf (MPI_IN_PLACE: this rank's
 *  block already there). */
DCOLL_API dcoll_status_t dcoll_all_gatherv(dcoll_group_t *group,
        const void *sendbuf, int64_t sendcount, void *recvbuf,
        const int64_t *recvcounts, const int64_t *displs, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** gather with a count per rank. recvbuf, recvcounts and displs are read
 *  on the root only. In place on the root: sendbuf == recvbuf +
 *  displs[root], or sendbuf == recvbuf (MPI_IN_PLACE). */
DCOLL_API dcoll_status_t dcoll_gatherv(dcoll_group_t *group,
        const void *sendbuf, int64_t sendcount, void *recvbuf,
        const int64_t *recvcounts, const int64_t *displs, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** scatter with a count per rank: group rank i gets sendcounts[i]
 *  elements from the root's sendbuf + displs[i]; @p recvcount must equal
 *  them. sendbuf, sendcounts and displs are read on the root only. In
 *  place on the root: recvbuf == sendbuf + displs[root], or recvbuf ==
 *  sendbuf (MPI_IN_PLACE). */
DCOLL_API dcoll_status_t dcoll_scatterv(dcoll_group_t *group,
        const void *sendbuf, const int64_t *sendcounts, const int64_t *displs,
        void *recvbuf, int64_t recvcount, dcoll_dtype_t dtype, int root,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** all_to_all with a count per rank (torch's all_to_all_single with split
 *  sizes): sendcounts[j] elements from sendbuf + sdispls[j] go to group
 *  rank j, landing in its recvbuf + rdispls[i] (i: this rank), where
 *  recvcounts[i] must equal them. In place: sendbuf == recvbuf, and the
 *  receive side describes both (sendcounts and sdispls are ignored), so
 *  each pair of ranks must swap equal counts, as MPI requires. */
DCOLL_API dcoll_status_t dcoll_all_to_allv(dcoll_group_t *group,
        const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls,
        void *recvbuf, const int64_t *recvcounts, const int64_t *rdispls,
        dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** reduce_scatter with a count per rank: sendbuf holds the sum of
 *  recvcounts elements; group rank i gets block i (recvcounts[i]
 *  elements, in rank order) of the reduction over ranks. recvcounts must
 *  be the same on every rank. In place: recvbuf == sendbuf + the counts
 *  of the ranks before this one, or recvbuf == sendbuf (MPI_IN_PLACE: the
 *  result at the front). */
DCOLL_API dcoll_status_t dcoll_reduce_scatterv(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, const int64_t *recvcounts,
        dcoll_dtype_t dtype, dcoll_op_t op, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/* The vector forms with int counts and displacements (API 1.7), as MPI
 * programs hold them: the same calls and rules as above, the arrays read
 * as int. In C11 the 64-bit forms above take only int64_t arrays (or
 * NULL): an int array passed to one is a compile error, not a warning
 * and a misread (define DCOLL_NO_COUNT_CHECK to call them unchecked). In
 * C++ the plain names take either, by overload. */
DCOLL_API dcoll_status_t dcoll_all_gatherv_int(dcoll_group_t *group,
        const void *sendbuf, int sendcount, void *recvbuf,
        const int *recvcounts, const int *displs, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);
DCOLL_API dcoll_status_t dcoll_gatherv_int(dcoll_group_t *group,
        const void *sendbuf, int sendcount, void *recvbuf,
        const int *recvcounts, const int *displs, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_work_t **work);
DCOLL_API dcoll_status_t dcoll_scatterv_int(dcoll_group_t *group,
        const void *sendbuf, const int *sendcounts, const int *displs,
        void *recvbuf, int recvcount, dcoll_dtype_t dtype, int root,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);
DCOLL_API dcoll_status_t dcoll_all_to_allv_int(dcoll_group_t *group,
        const void *sendbuf, const int *sendcounts, const int *sdispls,
        void *recvbuf, const int *recvcounts, const int *rdispls,
        dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);
DCOLL_API dcoll_status_t dcoll_reduce_scatterv_int(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, const int *recvcounts,
        dcoll_dtype_t dtype, dcoll_op_t op, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/* Multi-buffer forms (API 1.4), torch's *_multigpu: each process passes
 * @p nbufs buffers of @p count elements (nbufs the same on every rank),
 * and the operation runs over every buffer of every process, as if each
 * buffer were a rank of its own. Host buffers: this process's buffers
 * are combined first, then one collective runs across processes. The
 * lists of buffers are read during the call; the buffers must stay
 * untouched until an async call is done. */

/** Every buffer of every rank gets buffer @p root_buf of world rank
 *  @p root. */
DCOLL_API dcoll_status_t dcoll_broadcast_multi(dcoll_group_t *group,
        void *const *bufs, int nbufs, int64_t count, dcoll_dtype_t dtype,
        int root, int root_buf, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** In place: every buffer of every rank gets the reduction over all of
 *  them (AVG divides by ranks * nbufs). */
DCOLL_API dcoll_status_t dcoll_all_reduce_multi(dcoll_group_t *group,
        void *const *bufs, int nbufs, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** As all_reduce_multi, the result only in buffer @p root_buf of world
 *  rank @p root; every other buffer is left as it was. */
DCOLL_API dcoll_status_t dcoll_reduce_multi(dcoll_group_t *group,
        void *const *bufs, int nbufs, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, int root, int root_buf, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** Each recvbufs[i] (size * nbufs * count elements) gets every buffer of
 *  every rank: block k * nbufs + j holds rank k's sendbufs[j]. In place:
 *  sendbufs[i] == recvbufs[i] + (rank * nbufs + i) * count; any other
 *  overlap of sendbufs[i] and recvbufs[i] is refused. */
DCOLL_API dcoll_status_t dcoll_all_gather_multi(dcoll_group_t *group,
        const void *const *sendbufs, void *const *recvbufs, int nbufs,
        int64_t count, dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** Each sendbufs[i] holds size * nbufs blocks of count elements;
 *  recvbufs[i] on group rank r gets block r * nbufs + i reduced over
 *  every buffer of every rank. In place: recvbufs[i] == sendbufs[i] +
 *  (r * nbufs + i) * count; any other overlap is refused. */
DCOLL_API dcoll_status_t dcoll_reduce_scatter_multi(dcoll_group_t *group,
        const void *const *sendbufs, void *const *recvbufs, int nbufs,
        int64_t count, dcoll_dtype_t dtype, dcoll_op_t op,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** all_reduce, in place, of @p n buffers (bufs[i] holds counts[i]
 *  elements) in one operation: the buffers are packed, reduced once and
 *  unpacked, so many small tensors cost one collective. */
DCOLL_API dcoll_status_t dcoll_all_reduce_coalesced(dcoll_group_t *group,
        void *const *bufs, const int64_t *counts, int n, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** all_gather of @p n inputs in one operation: recvbufs[i] (size *
 *  counts[i] elements) gets every rank's sendbufs[i] in group-rank order. */
DCOLL_API dcoll_status_t dcoll_all_gather_coalesced(dcoll_group_t *group,
        const void *const *sendbufs, void *const *recvbufs,
        const int64_t *counts, int n, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

#ifdef __cplusplus
}

/* C++: the vector forms take int arrays too, by overload. */
static inline dcoll_status_t dcoll_all_gatherv(dcoll_group_t *group,
        const void *sendbuf, int sendcount, void *recvbuf,
        const int *recvcounts, const int *displs, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    return dcoll_all_gatherv_int(group, sendbuf, sendcount, recvbuf,
                                 recvcounts, displs, dtype, opts, work);
}
static inline dcoll_status_t dcoll_gatherv(dcoll_group_t *group,
        const void *sendbuf, int sendcount, void *recvbuf,
        const int *recvcounts, const int *displs, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    return dcoll_gatherv_int(group, sendbuf, sendcount, recvbuf, recvcounts,
                             displs, dtype, root, opts, work);
}
static inline dcoll_status_t dcoll_scatterv(dcoll_group_t *group,
        const void *sendbuf, const int *sendcounts, const int *displs,
        void *recvbuf, int recvcount, dcoll_dtype_t dtype, int root,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    return dcoll_scatterv_int(group, sendbuf, sendcounts, displs, recvbuf,
                              recvcount, dtype, root, opts, work);
}
static inline dcoll_status_t dcoll_all_to_allv(dcoll_group_t *group,
        const void *sendbuf, const int *sendcounts, const int *sdispls,
        void *recvbuf, const int *recvcounts, const int *rdispls,
        dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work)
{
    return dcoll_all_to_allv_int(group, sendbuf, sendcounts, sdispls,
                                 recvbuf, recvcounts, rdispls, dtype, opts,
                                 work);
}
static inline dcoll_status_t dcoll_reduce_scatterv(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, const int *recvcounts,
        dcoll_dtype_t dtype, dcoll_op_t op, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work)
{
    return dcoll_reduce_scatterv_int(group, sendbuf, recvbuf, recvcounts,
                                     dtype, op, opts, work);
}
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && \
    !defined(DCOLL_NO_COUNT_CHECK)
/* C11: an array of counts or displacements given to a 64-bit vector form
 * must be int64_t (or NULL); anything else, an int array above all, does
 * not compile, and the error names the form that takes it ("'dcoll_all_
 * to_allv__counts_are_int64_t__for_int_arrays_call_dcoll_all_to_allv_int'
 * has an incomplete type").
 * The _int forms take int arrays. */
struct dcoll_counts_are_int64_t__int_arrays_take_the__int_form; /* never defined */
#define DCOLL_INT_ARRAYS_(fn)                                               \
    extern struct dcoll_counts_are_int64_t__int_arrays_take_the__int_form   \
        fn##__counts_are_int64_t__for_int_arrays_call_##fn##_int
DCOLL_INT_ARRAYS_(dcoll_all_gatherv);
DCOLL_INT_ARRAYS_(dcoll_gatherv);
DCOLL_INT_ARRAYS_(dcoll_scatterv);
DCOLL_INT_ARRAYS_(dcoll_all_to_allv);
DCOLL_INT_ARRAYS_(dcoll_reduce_scatterv);
#define DCOLL_COUNTS64_(a, fn)                                              \
    _Generic((a), const int64_t *: (a), int64_t *: (a), void *: (a),        \
             default: fn##__counts_are_int64_t__for_int_arrays_call_##fn##_int)
#define dcoll_all_gatherv(g, sb, sc, rb, rc, d, t, o, w)                    \
    (dcoll_all_gatherv)(g, sb, sc, rb,                                      \
                        DCOLL_COUNTS64_(rc, dcoll_all_gatherv),             \
                        DCOLL_COUNTS64_(d, dcoll_all_gatherv), t, o, w)
#define dcoll_gatherv(g, sb, sc, rb, rc, d, t, root, o, w)                  \
    (dcoll_gatherv)(g, sb, sc, rb, DCOLL_COUNTS64_(rc, dcoll_gatherv),      \
                    DCOLL_COUNTS64_(d, dcoll_gatherv), t, root, o, w)
#define dcoll_scatterv(g, sb, scs, d, rb, rc, t, root, o, w)                \
    (dcoll_scatterv)(g, sb, DCOLL_COUNTS64_(scs, dcoll_scatterv),           \
                     DCOLL_COUNTS64_(d, dcoll_scatterv), rb, rc, t, root, o, \
                     w)
#define dcoll_all_to_allv(g, sb, scs, sd, rb, rcs, rd, t, o, w)             \
    (dcoll_all_to_allv)(g, sb, DCOLL_COUNTS64_(scs, dcoll_all_to_allv),     \
                        DCOLL_COUNTS64_(sd, dcoll_all_to_allv), rb,         \
                        DCOLL_COUNTS64_(rcs, dcoll_all_to_allv),            \
                        DCOLL_COUNTS64_(rd, dcoll_all_to_allv), t, o, w)
#define dcoll_reduce_scatterv(g, sb, rb, rcs, t, op, o, w)                  \
    (dcoll_reduce_scatterv)(g, sb, rb,                                      \
                            DCOLL_COUNTS64_(rcs, dcoll_reduce_scatterv), t, \
                            op, o, w)
#endif
#endif
