/* dcoll: neighbourhood collectives (API 1.11), as MPI-3's
 * MPI_Dist_graph_create_adjacent with MPI_Neighbor_alltoallv and
 * MPI_Neighbor_allgather: each rank exchanges with the ranks it lists,
 * not with the whole group. A halo exchange is one such call.
 *
 * - A neighbourhood is made once, collectively over its group, from each
 *   rank's in-neighbours (sources: whom it receives from) and
 *   out-neighbours (destinations: whom it sends to), as world ranks like
 *   every other rank argument. The ranks check each other's lists: every
 *   edge must be listed at both ends, as often at each (MPI allows an
 *   edge twice, matched in list order), or every rank's creation fails
 *   with DCOLL_ERR_INVALID_ARGUMENT naming the first edge that is not.
 * - A list may hold DCOLL_PROC_NULL (a wall): its block of counts and
 *   buffer is skipped, nothing sent, the receive side left untouched.
 * - Calls on a neighbourhood are calls of its group: numbered, ordered,
 *   timed and recorded as the group's others, and every rank of the
 *   group makes each one (a rank with no neighbours too). Blocks are in
 *   list order: block i of the receive side comes from sources[i], block
 *   i of the send side goes to destinations[i].
 * - Host buffers run on MPI's own neighbourhood collectives (persistent
 *   ones for plans where the MPI has them, chosen as other plans are);
 *   GPU buffers to NCCL, every block in one group of sends and receives
 *   (strided ones packed on the GPU), or staged by blocks where the
 *   ranks share a GPU. */
#ifndef DCOLL_NEIGHBOR_H
#define DCOLL_NEIGHBOR_H

#include "dcoll/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A neighbourhood of a group: an opaque handle, the caller's until
 *  dcoll_neighborhood_free. */
typedef struct dcoll_neighborhood dcoll_neighborhood_t;

/** Make a neighbourhood of @p group, collectively over it: this rank
 *  receives from the @p indegree world ranks in @p sources and sends to
 *  the @p outdegree in @p destinations (DCOLL_PROC_NULL allowed; a list
 *  of degree 0 may be NULL). On a non-member handle every argument is
 *  ignored and *out is set to a handle whose calls do nothing. */
DCOLL_API dcoll_status_t dcoll_neighborhood_create(dcoll_group_t *group,
        int indegree, const int *sources, int outdegree,
        const int *destinations, dcoll_neighborhood_t **out);

/** Free @p *nbh and set it to NULL (NULL *nbh is fine); this rank's own
 *  step, not collective. Plans made on it must be freed first. */
DCOLL_API dcoll_status_t dcoll_neighborhood_free(dcoll_neighborhood_t **nbh);

/** This rank's degrees, as made (DCOLL_PROC_NULL entries counted). */
DCOLL_API dcoll_status_t dcoll_neighborhood_degrees(
        const dcoll_neighborhood_t *nbh, int *indegree, int *outdegree);

/** recvbuf holds indegree blocks of @p count elements: block i is
 *  sources[i]'s sendbuf (untouched for DCOLL_PROC_NULL). sendbuf goes to
 *  every destination. Buffers may not overlap. */
DCOLL_API dcoll_status_t dcoll_neighbor_all_gather(dcoll_neighborhood_t *nbh,
        const void *sendbuf, int64_t count, void *recvbuf, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Block i of sendbuf (sendcounts[i] elements at sdispls[i]) goes to
 *  destinations[i]; block i of recvbuf (recvcounts[i] at rdispls[i])
 *  comes from sources[i]. The arrays have outdegree and indegree entries;
 *  NULL displacements: packed in list order. The counts of an edge must
 *  agree at its two ends, as in MPI. Buffers may not overlap. */
DCOLL_API dcoll_status_t dcoll_neighbor_all_to_allv(dcoll_neighborhood_t *nbh,
        const void *sendbuf, const int64_t *sendcounts, const int64_t *sdispls,
        void *recvbuf, const int64_t *recvcounts, const int64_t *rdispls,
        dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_work_t **work);

/** dcoll_neighbor_all_to_allv with a strided layout per block (as MPI's
 *  MPI_Neighbor_alltoallw with vector types): block i of sendbuf is
 *  sendlayouts[i]'s elements, sent to destinations[i]; block i of
 *  recvbuf, recvlayouts[i]'s, received from sources[i] (outdegree and
 *  indegree entries). The six faces of a 3-D block in one call. An
 *  edge's two blocks must hold as many elements. Buffers may not
 *  overlap. */
DCOLL_API dcoll_status_t dcoll_neighbor_all_to_allw(dcoll_neighborhood_t *nbh,
        const void *sendbuf, const dcoll_layout_t *sendlayouts, void *recvbuf,
        const dcoll_layout_t *recvlayouts, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_work_t **work);

/** Their plans (plan.h's rules): the arrays are copied; the w form's
 *  MPI types are made once. */
DCOLL_API dcoll_status_t dcoll_neighbor_all_gather_plan(
        dcoll_neighborhood_t *nbh, const void *sendbuf, int64_t count,
        void *recvbuf, dcoll_dtype_t dtype, const dcoll_coll_opts_t *opts,
        dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_neighbor_all_to_allv_plan(
        dcoll_neighborhood_t *nbh, const void *sendbuf,
        const int64_t *sendcounts, const int64_t *sdispls, void *recvbuf,
        const int64_t *recvcounts, const int64_t *rdispls, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

DCOLL_API dcoll_status_t dcoll_neighbor_all_to_allw_plan(
        dcoll_neighborhood_t *nbh, const void *sendbuf,
        const dcoll_layout_t *sendlayouts, void *recvbuf,
        const dcoll_layout_t *recvlayouts, dcoll_dtype_t dtype,
        const dcoll_coll_opts_t *opts, dcoll_plan_t **plan);

#ifdef __cplusplus
}
#endif

#endif
