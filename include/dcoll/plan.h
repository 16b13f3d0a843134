/* dcoll: persistent collectives (API 1.8), as MPI 4's MPI_Allreduce_init
 * and MPI_Start: a plan fixes a call's arguments once, and each start
 * runs it again with what the buffers hold then.
 *
 * - dcoll_<collective>_plan takes the arguments of dcoll_<collective>
 *   (the same order, the same checks and messages), with the work handle
 *   replaced by the plan it makes. Everything but the buffers' contents
 *   is fixed by the plan: group, buffers' addresses, counts (the vector
 *   forms' arrays are copied), type, op, root or peer, tag and opts
 *   (copied, stream included). To change one, make another plan.
 * - Making a collective's plan is collective over the group, as its
 *   blocking call is, and every rank makes its plans in the same order.
 *   The checks run here, once: a rank that refuses its arguments makes
 *   every rank's plan fail (DCOLL_ERR_INVALID_ARGUMENT; on the others,
 *   naming the rank), and the group stays usable. The ranks meet as in a
 *   call: a rank that never comes is reported at the group's timeout.
 *   Under DCOLL_DEBUG=detail the ranks also compare the plans once, here:
 *   a plan that differs between ranks fails on every rank, naming the
 *   ranks and what differs (DCOLL_ERR_MISMATCH); its starts then need no
 *   exchange. Send and recv plans are this rank's own, with nothing to
 *   agree.
 * - A start is one call of the group, numbered, recorded and watched as a
 *   blocking or async call is; every rank starts the group's plans in
 *   the same order, and in the same form (all blocking or all with a
 *   work): on host buffers the first 32 blocking starts try MPI's
 *   blocking call and its persistent request in step on every rank and
 *   keep the faster, and MPI matches a persistent request only with
 *   persistent ones.
 * - On GPU buffers of an NCCL group a start may be captured in a CUDA
 *   graph (docs/gpu.md): it queues NCCL's call and returns at once.
 * - On a NON-MEMBER handle a plan is made and does nothing when started.
 * - A plan outlives nothing: after dcoll_group_destroy of its group (or
 *   dcoll_finalize) it can only be freed. */
#ifndef DCOLL_PLAN_H
#define DCOLL_PLAN_H

#include "dcoll/collectives.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A persistent call: an opaque handle, the caller's until
 *  dcoll_plan_free. Not thread-safe, as its group is not. */
typedef struct dcoll_plan dcoll_plan_t;

/** Run @p plan again. @p work NULL: block until it is done. Else *work
 *  receives the plan's work handle, which dcoll_work_wait, test, wait_all
 *  and the others take; the buffers are dcoll's until it has finished.
 *  The handle belongs to the plan: dcoll_work_free on it only waits and
 *  sets it to NULL, and it is valid until the plan's next start or free.
 *  @return DCOLL_ERR_INVALID_STATE for a plan still running (wait for its
 *          work first) or whose group was destroyed;
 *          DCOLL_ERR_INVALID_ARGUMENT for a send or recv plan to this
 *          rank itself started blocking (it would never finish). */
DCOLL_API dcoll_status_t dcoll_plan_start(dcoll_plan_t *plan,
                                          dcoll_work_t **work);

/** Free @p *plan and set it to NULL; NULL *plan is fine. A plan still
 *  running is refused (DCOLL_ERR_INVALID_STATE) and kept: wait for its
 *  work first. Local: no other rank takes part. Valid after
 *  dcoll_finalize too. */
DCOLL_API dcoll_status_t dcoll_plan_free(dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_broadcast_plan(dcoll_group_t *group,
        void *buf, int64_t count, dcoll_dtype_t dtype, int root,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_all_reduce_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_scan_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_exscan_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_reduce_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, int root, const dcoll_coll_opts_t *opts,
        dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_all_gather_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

/** recvbuf must be given on the root. */
DCOLL_API dcoll_status_t dcoll_gather_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

/** sendbuf must be given on the root. */
DCOLL_API dcoll_status_t dcoll_scatter_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_reduce_scatter_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        dcoll_op_t op, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_all_to_all_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, int64_t count, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_barrier_plan(dcoll_group_t *group,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

/** A persistent send, as MPI_Send_init: each start sends buf's contents
 *  then. */
DCOLL_API dcoll_status_t dcoll_send_plan(dcoll_group_t *group,
        const void *buf, int64_t count, dcoll_dtype_t dtype, int dst, int tag,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

/** A persistent receive, as MPI_Recv_init (src may be DCOLL_ANY_SOURCE;
 *  dcoll_work_source on the start's work gives the sender). */
DCOLL_API dcoll_status_t dcoll_recv_plan(dcoll_group_t *group, void *buf,
        int64_t count, dcoll_dtype_t dtype, int src, int tag,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

/** The strided send and receive's plans (API 1.11): the layout is copied,
 *  and MPI's vector type made once. */
DCOLL_API dcoll_status_t dcoll_send_layout_plan(dcoll_group_t *group,
        const void *buf, const dcoll_layout_t *layout, dcoll_dtype_t dtype,
        int dst, int tag, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_recv_layout_plan(dcoll_group_t *group,
        void *buf, const dcoll_layout_t *layout, dcoll_dtype_t dtype, int src,
        int tag, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_all_gatherv_plan(dcoll_group_t *group,
        const void *sendbuf, int64_t sendcount, void *recvbuf,
        const int64_t *recvcounts, const int64_t *displs, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_gatherv_plan(dcoll_group_t *group,
        const void *sendbuf, int64_t sendcount, void *recvbuf,
        const int64_t *recvcounts, const int64_t *displs, dcoll_dtype_t dtype,
        int root, const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_scatterv_plan(dcoll_group_t *group,
        const void *sendbuf, const int64_t *sendcounts, const int64_t *displs,
        void *recvbuf, int64_t recvcount, dcoll_dtype_t dtype, int root,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_all_to_allv_plan(dcoll_group_t *group,
        const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls,
        void *recvbuf, const int64_t *recvcounts, const int64_t *rdispls,
        dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_reduce_scatterv_plan(dcoll_group_t *group,
        const void *sendbuf, void *recvbuf, const int64_t *recvcounts,
        dcoll_dtype_t dtype, dcoll_op_t op, const dcoll_coll_opts_t *opts,
        dcoll_plan_t **plan);

#ifdef __cplusplus
}
#endif
#endif
