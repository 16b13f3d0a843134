/* The collectives dcoll-perf knows: each one's call through dcoll, the
 * same call made on MPI by hand, and nccl-tests' bus-bandwidth factor
 * (size / time scaled to what each link carries on a ring). */
#include <stdlib.h>
#include <string.h>
#include "perf.h"

static double f_one(int n)
{
    (void)n;
    return 1.0;
}

static double f_ring(int n)
{
    return n > 1 ? (double)(n - 1) / n : 0.0;
}

static double f_allreduce(int n)
{
    return 2.0 * f_ring(n);
}

/* A dcoll call, blocking or async + wait as -a asks. */
#define DCOLL_CALL(c, call_with_work)                                        \
    do {                                                                     \
        dcoll_work_t *w_ = NULL;                                             \
        dcoll_work_t **wp_ = (c)->o->async ? &w_ : NULL;                     \
        if (call_with_work(wp_))                                             \
            return 1;                                                        \
        if (w_ && (dcoll_work_wait(w_) || dcoll_work_free(&w_)))                  \
            return 1;                                                        \
        return 0;                                                            \
    } while (0)

/* A raw MPI call: blocking, or its MPI_I form + MPI_Wait. */
#define RAW_CALL(c, blocking, nonblocking)                                   \
    do {                                                                     \
        MPI_Request rq_;                                                     \
        if (!(c)->o->async)                                                  \
            return (blocking) != MPI_SUCCESS;                                \
        if ((nonblocking) != MPI_SUCCESS)                                    \
            return 1;                                                        \
        return MPI_Wait(&rq_, MPI_STATUS_IGNORE) != MPI_SUCCESS;             \
    } while (0)

#define ARGS(c) (c)->count, (c)->o->dtype
#define RAW(c) (c)->raw_count, (c)->raw_type

/* broadcast */
static int bcast_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_broadcast(c->group, c->recv, ARGS(c), c->root, c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int bcast_r(struct perf_ctx *c)
{
    RAW_CALL(c, MPI_Bcast(c->recv, RAW(c), c->groot, c->comm),
             MPI_Ibcast(c->recv, RAW(c), c->groot, c->comm, &rq_));
}

/* all_reduce */
static int allreduce_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_all_reduce(c->group, c->send, c->recv, ARGS(c),       \
                                  c->o->op, c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int allreduce_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Allreduce(c->send, c->recv, RAW(c), c->raw_op, c->comm),
             MPI_Iallreduce(c->send, c->recv, RAW(c), c->raw_op, c->comm,
                            &rq_));
}

/* scan and exscan */
static int scan_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_scan(c->group, c->send, c->recv, ARGS(c), c->o->op,   \
                            c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int scan_r(struct perf_ctx *c)
{
    RAW_CALL(c, MPI_Scan(c->send, c->recv, RAW(c), c->raw_op, c->comm),
             MPI_Iscan(c->send, c->recv, RAW(c), c->raw_op, c->comm, &rq_));
}

static int exscan_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_exscan(c->group, c->send, c->recv, ARGS(c), c->o->op, \
                              c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int exscan_r(struct perf_ctx *c)
{
    RAW_CALL(c, MPI_Exscan(c->send, c->recv, RAW(c), c->raw_op, c->comm),
             MPI_Iexscan(c->send, c->recv, RAW(c), c->raw_op, c->comm,
                         &rq_));
}

/* reduce */
static int reduce_d(struct perf_ctx *c)
{
    void *out = c->rank == c->groot ? c->recv : NULL;
#define CALL(wp) dcoll_reduce(c->group, c->send, out, ARGS(c), c->o->op,     \
                              c->root, c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int reduce_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Reduce(c->send, c->recv, RAW(c), c->raw_op, c->groot,
                        c->comm),
             MPI_Ireduce(c->send, c->recv, RAW(c), c->raw_op, c->groot,
                         c->comm, &rq_));
}

/* all_gather */
static int allgather_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_all_gather(c->group, c->send, c->recv, ARGS(c), c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int allgather_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Allgather(c->send, RAW(c), c->recv, RAW(c), c->comm),
             MPI_Iallgather(c->send, RAW(c), c->recv, RAW(c), c->comm,
                            &rq_));
}

/* gather: the receive buffer exists on the root only. */
static int gather_d(struct perf_ctx *c)
{
    void *out = c->rank == c->groot ? c->recv : NULL;
#define CALL(wp) dcoll_gather(c->group, c->send, out, ARGS(c), c->root, c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int gather_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Gather(c->send, RAW(c), c->recv, RAW(c), c->groot, c->comm),
             MPI_Igather(c->send, RAW(c), c->recv, RAW(c), c->groot, c->comm,
                         &rq_));
}

/* scatter: the send buffer exists on the root only. */
static int scatter_d(struct perf_ctx *c)
{
    const void *in = c->rank == c->groot ? c->send : NULL;
#define CALL(wp) dcoll_scatter(c->group, in, c->recv, ARGS(c), c->root, c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int scatter_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Scatter(c->send, RAW(c), c->recv, RAW(c), c->groot, c->comm),
             MPI_Iscatter(c->send, RAW(c), c->recv, RAW(c), c->groot,
                          c->comm, &rq_));
}

/* reduce_scatter */
static int redscat_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_reduce_scatter(c->group, c->send, c->recv, ARGS(c),   \
                                      c->o->op, c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int redscat_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Reduce_scatter_block(c->send, c->recv, RAW(c), c->raw_op,
                                      c->comm),
             MPI_Ireduce_scatter_block(c->send, c->recv, RAW(c), c->raw_op,
                                       c->comm, &rq_));
}

/* all_to_all */
static int alltoall_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_all_to_all(c->group, c->send, c->recv, ARGS(c), c->opts, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int alltoall_r(struct perf_ctx *c)
{
    RAW_CALL(c,
             MPI_Alltoall(c->send, RAW(c), c->recv, RAW(c), c->comm),
             MPI_Ialltoall(c->send, RAW(c), c->recv, RAW(c), c->comm, &rq_));
}

/* barrier */
static int barrier_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_barrier(c->group, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int barrier_r(struct perf_ctx *c)
{
    RAW_CALL(c, MPI_Barrier(c->comm), MPI_Ibarrier(c->comm, &rq_));
}

/* send_recv: a ring, each rank sends to the next and receives from the
 * one before (nccl-tests' sendrecv). Both sides are nonblocking pairs:
 * a blocking send around a ring could deadlock. */
static int world_of(struct perf_ctx *c, int grank)
{
    int w = grank;
    dcoll_group_global_rank(c->group, grank, &w);
    return w;
}

static int sendrecv_d(struct perf_ctx *c)
{
    int next = world_of(c, (c->rank + 1) % c->size);
    int prev = world_of(c, (c->rank + c->size - 1) % c->size);
    dcoll_work_t *r = NULL, *s = NULL;
    if (dcoll_irecv(c->group, c->recv, ARGS(c), prev, 1, NULL, &r) ||
        dcoll_isend(c->group, c->send, ARGS(c), next, 1, NULL, &s))
        return 1;
    return dcoll_work_wait(r) || dcoll_work_wait(s) || dcoll_work_free(&r) ||
           dcoll_work_free(&s);
}

static int sendrecv_r(struct perf_ctx *c)
{
    int next = (c->rank + 1) % c->size;
    int prev = (c->rank + c->size - 1) % c->size;
    MPI_Request rq[2];
    if (MPI_Irecv(c->recv, RAW(c), prev, 1, c->comm, &rq[0]) ||
        MPI_Isend(c->send, RAW(c), next, 1, c->comm, &rq[1]))
        return 1;
    return MPI_Waitall(2, rq, MPI_STATUSES_IGNORE) != MPI_SUCCESS;
}

/* halo: a ring neighbour exchange in 8 pieces, 4 to each side and 4
 * from each, as a stencil code posts them: 8 receives and 8 sends, then
 * one wait for all 16 (dcoll_work_wait_all against MPI_Waitall). The
 * size is what each rank sends in all. */
#define HALO 4

static int halo_d(struct perf_ctx *c)
{
    int next = world_of(c, (c->rank + 1) % c->size);
    int prev = world_of(c, (c->rank + c->size - 1) % c->size);
    int64_t n = c->count / (2 * HALO);
    size_t b = (size_t)n * c->esz;
    dcoll_work_t *w[4 * HALO];
    for (int t = 0; t < HALO; t++) {
        char *r = (char *)c->recv + 2 * t * b, *s = (char *)c->send + 2 * t * b;
        if (dcoll_irecv(c->group, r, n, c->o->dtype, prev, t, NULL, &w[4 * t]) ||
            dcoll_irecv(c->group, r + b, n, c->o->dtype, next, HALO + t, NULL,
                        &w[4 * t + 1]) ||
            dcoll_isend(c->group, s, n, c->o->dtype, next, t, NULL,
                        &w[4 * t + 2]) ||
            dcoll_isend(c->group, s + b, n, c->o->dtype, prev, HALO + t, NULL,
                        &w[4 * t + 3]))
            return 1;
    }
    if (dcoll_work_wait_all(w, 4 * HALO, NULL))
        return 1;
    for (int i = 0; i < 4 * HALO; i++)
        dcoll_work_free(&w[i]);
    return 0;
}

static int halo_r(struct perf_ctx *c)
{
    int next = (c->rank + 1) % c->size;
    int prev = (c->rank + c->size - 1) % c->size;
    /* The same bytes as dcoll's pieces, as bytes. */
    size_t b = (size_t)(c->count / (2 * HALO)) * c->esz;
    int n = (int)b;
    MPI_Datatype t_ = MPI_BYTE;
    MPI_Request rq[4 * HALO];
    for (int t = 0; t < HALO; t++) {
        char *r = (char *)c->recv + 2 * t * b, *s = (char *)c->send + 2 * t * b;
        if (MPI_Irecv(r, n, t_, prev, t, c->comm, &rq[4 * t]) ||
            MPI_Irecv(r + b, n, t_, next, HALO + t, c->comm, &rq[4 * t + 1]) ||
            MPI_Isend(s, n, t_, next, t, c->comm, &rq[4 * t + 2]) ||
            MPI_Isend(s + b, n, t_, prev, HALO + t, c->comm, &rq[4 * t + 3]))
            return 1;
    }
    return MPI_Waitall(4 * HALO, rq, MPI_STATUSES_IGNORE) != MPI_SUCCESS;
}

/* The neighbourhood calls on a ring: each rank's sources are its
 * previous and next ranks, its destinations its next and previous (one
 * edge to itself on 1 rank; on 2 the two edges to the other rank), a
 * block of count elements each; against MPI_Neighbor_alltoallv and
 * MPI_Neighbor_allgather on MPI's graph of the same lists. Both made once
 * per group. */
static struct {
    dcoll_group_t *group;
    dcoll_neighborhood_t *nb;
    MPI_Comm comm;
    int deg, in[2], out[2];
} ring;

static int ring_setup(struct perf_ctx *c)
{
    if (ring.nb && ring.group == c->group)
        return 0;
    if (ring.nb) {
        dcoll_neighborhood_free(&ring.nb);
        MPI_Comm_free(&ring.comm);
    }
    int prev = (c->rank + c->size - 1) % c->size, next = (c->rank + 1) %
                                                         c->size;
    ring.deg = c->size == 1 ? 1 : 2;
    ring.in[0] = prev, ring.in[1] = next;
    ring.out[0] = next, ring.out[1] = prev;
    int win[2] = {world_of(c, prev), world_of(c, next)};
    int wout[2] = {win[1], win[0]};
    ring.group = c->group;
    if (dcoll_neighborhood_create(c->group, ring.deg, win, ring.deg, wout,
                                  &ring.nb))
        return 1;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
    return MPI_Dist_graph_create_adjacent(c->comm, ring.deg, ring.in,
                                          MPI_UNWEIGHTED, ring.deg, ring.out,
                                          MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                          &ring.comm) != MPI_SUCCESS;
#pragma GCC diagnostic pop
}

static int64_t nv64[2], nd64[2];
static int nvi[2], ndi[2];

static int nsetup(struct perf_ctx *c)
{
    if (ring_setup(c))
        return 1;
    for (int i = 0; i < 2; i++) {
        nv64[i] = c->count;
        nd64[i] = i * c->count;
        nvi[i] = c->raw_count;
        ndi[i] = i * c->raw_count;
    }
    return 0;
}

static int nalltoallv_d(struct perf_ctx *c)
{
    if (nsetup(c))
        return 1;
#define CALL(wp) dcoll_neighbor_all_to_allv(ring.nb, c->send, nv64, nd64,  \
                                            c->recv, nv64, nd64,            \
                                            c->o->dtype, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int nalltoallv_r(struct perf_ctx *c)
{
    if (nsetup(c))
        return 1;
    RAW_CALL(c,
             MPI_Neighbor_alltoallv(c->send, nvi, ndi, c->raw_type, c->recv,
                                    nvi, ndi, c->raw_type, ring.comm),
             MPI_Ineighbor_alltoallv(c->send, nvi, ndi, c->raw_type, c->recv,
                                     nvi, ndi, c->raw_type, ring.comm,
                                     &rq_));
}

static int nallgather_d(struct perf_ctx *c)
{
    if (nsetup(c))
        return 1;
#define CALL(wp) dcoll_neighbor_all_gather(ring.nb, c->send, c->count,     \
                                           c->recv, c->o->dtype, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int nallgather_r(struct perf_ctx *c)
{
    if (nsetup(c))
        return 1;
    RAW_CALL(c,
             MPI_Neighbor_allgather(c->send, RAW(c), c->recv, RAW(c),
                                    ring.comm),
             MPI_Ineighbor_allgather(c->send, RAW(c), c->recv, RAW(c),
                                     ring.comm, &rq_));
}

/* neighbor_all_to_allw on the ring: block i goes strided, every deg-th
 * element from element i of the send buffer, and lands contiguous at
 * block i of the receive buffer; by hand, the same vector types on MPI's
 * graph. The types are made once per size. */
static dcoll_layout_t wl[2][2];    /* [send, recv][block] */
static MPI_Datatype wt[2][2];
static int64_t wcount = -1;

static int wsetup(struct perf_ctx *c)
{
    if (nsetup(c))
        return 1;
    if (wcount == c->count)
        return 0;
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 2 && wcount >= 0; k++)
            MPI_Type_free(&wt[k][i]);
        wl[0][i] = (dcoll_layout_t){i, c->count, 1, ring.deg, 0, 0};
        wl[1][i] = (dcoll_layout_t){i * c->count, 1, c->count, c->count, 0,
                                    0};
        for (int k = 0; k < 2; k++) {
            MPI_Type_vector((int)wl[k][i].count, (int)wl[k][i].blocklen,
                            (int)wl[k][i].stride, c->raw_type, &wt[k][i]);
            MPI_Type_commit(&wt[k][i]);
        }
    }
    wcount = c->count;
    return 0;
}

static int nalltoallw_d(struct perf_ctx *c)
{
    if (wsetup(c))
        return 1;
#define CALL(wp) dcoll_neighbor_all_to_allw(ring.nb, c->send, wl[0],       \
                                            c->recv, wl[1], c->o->dtype,    \
                                            NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int nalltoallw_r(struct perf_ctx *c)
{
    if (wsetup(c))
        return 1;
    int one[2] = {1, 1};
    MPI_Aint esz = (MPI_Aint)c->esz;
    MPI_Aint sd[2] = {0, esz}, rd[2] = {0, c->count * esz};
    RAW_CALL(c,
             MPI_Neighbor_alltoallw(c->send, one, sd, wt[0], c->recv, one,
                                    rd, wt[1], ring.comm),
             MPI_Ineighbor_alltoallw(c->send, one, sd, wt[0], c->recv, one,
                                     rd, wt[1], ring.comm, &rq_));
}

int perf_ring_lists(struct perf_ctx *c, bool w, int *deg, const int **in,
                    const int **out)
{
    if (w ? wsetup(c) : nsetup(c))
        return 1;
    *deg = ring.deg;
    *in = ring.in;
    *out = ring.out;
    return 0;
}

int perf_ring(struct perf_ctx *c, bool w, struct perf_ring *r)
{
    if (w ? wsetup(c) : nsetup(c))
        return 1;
    *r = (struct perf_ring){ring.nb, ring.comm, nv64, nd64, nvi, ndi,
                            {wl[0], wl[1]}, {wt[0], wt[1]}};
    return 0;
}

/* Where check.c finds block i of this rank's ring: its source and the
 * element of the source's send buffer it starts at (all_to_allv: the
 * source's block for this edge; all_gather: its first). */
int perf_ring_source(struct perf_ctx *c, int i, bool all_gather,
                     size_t *from, size_t *step)
{
    if (nsetup(c))
        return -1;
    *from = all_gather ? 0 : (size_t)i * (size_t)c->count;
    *step = 1;
    return i < ring.deg ? ring.in[i] : -1;
}

int perf_ring_source_w(struct perf_ctx *c, int i, size_t *from,
                       size_t *step)
{
    if (wsetup(c))
        return -1;
    *from = (size_t)i;
    *step = (size_t)ring.deg;
    return i < ring.deg ? ring.in[i] : -1;
}

/* all_reduce_multi over two buffers per process (send and recv, in
 * place), against the same by hand: MPI_Reduce_local of one into the
 * other, MPI_Allreduce in place, and a copy back. */
static int arm_d(struct perf_ctx *c)
{
    void *b[2] = {c->send, c->recv};
#define CALL(wp) dcoll_all_reduce_multi(c->group, b, 2, ARGS(c), c->o->op, \
                                        NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int arm_r(struct perf_ctx *c)
{
    if (MPI_Reduce_local(c->recv, c->send, RAW(c), c->raw_op) ||
        MPI_Allreduce(MPI_IN_PLACE, c->send, RAW(c), c->raw_op, c->comm))
        return 1;
    memcpy(c->recv, c->send, (size_t)c->count * c->esz);
    return 0;
}

/* The other multi-buffer forms, two buffers per process of count
 * elements each (gathered and scattered ones count per rank and buffer),
 * in buffers of their own, against the same steps by hand: the local
 * combine or pack, the MPI call, and the copies back. */
static char *slots[5];
static size_t slot_bytes[5];

static void *slot(int i, size_t bytes)
{
    if (bytes > slot_bytes[i]) {
        free(slots[i]);
        slots[i] = calloc(1, bytes);
        slot_bytes[i] = slots[i] ? bytes : 0;
    }
    return slots[i];
}

#define MB(c) ((size_t)(c)->count * (c)->esz)
#define MSLOT(i, bytes) char *s##i = slot(i, bytes); if (!s##i) return 1

static int bm_d(struct perf_ctx *c)
{
    MSLOT(0, MB(c));
    void *b[2] = {c->recv, s0};
#define CALL(wp) dcoll_broadcast_multi(c->group, b, 2, ARGS(c), c->root, 0,  \
                                       NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int bm_r(struct perf_ctx *c)
{
    MSLOT(0, MB(c));
    if (MPI_Bcast(c->recv, RAW(c), c->groot, c->comm))
        return 1;
    memcpy(s0, c->recv, MB(c));
    return 0;
}

/* reduce_multi: the result in buffer 0 of the root. */
static int rm_d(struct perf_ctx *c)
{
    MSLOT(0, MB(c));
    void *b[2] = {c->send, s0};
#define CALL(wp) dcoll_reduce_multi(c->group, b, 2, ARGS(c), c->o->op,       \
                                    c->root, 0, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int rm_r(struct perf_ctx *c)
{
    MSLOT(0, MB(c));
    MSLOT(1, MB(c));
    memcpy(s1, c->send, MB(c));
    return MPI_Reduce_local(s0, s1, RAW(c), c->raw_op) ||
           MPI_Reduce(s1, c->rank == c->groot ? c->send : NULL, RAW(c),
                      c->raw_op, c->groot, c->comm);
}

static int agm_d(struct perf_ctx *c)
{
    size_t all = 2 * MB(c) * (size_t)c->size;
    MSLOT(0, MB(c));
    MSLOT(1, all);
    MSLOT(2, all);
    const void *in[2] = {c->send, s0};
    void *out[2] = {s1, s2};
#define CALL(wp) dcoll_all_gather_multi(c->group, in, out, 2, ARGS(c), NULL, \
                                        wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int agm_r(struct perf_ctx *c)
{
    size_t all = 2 * MB(c) * (size_t)c->size;
    MSLOT(0, MB(c));
    MSLOT(1, all);
    MSLOT(2, all);
    MSLOT(3, 2 * MB(c));
    memcpy(s3, c->send, MB(c));
    memcpy(s3 + MB(c), s0, MB(c));
    if (MPI_Allgather(s3, 2 * c->raw_count, c->raw_type, s1,
                      2 * c->raw_count, c->raw_type, c->comm))
        return 1;
    memcpy(s2, s1, all);
    return 0;
}

static int rsm_d(struct perf_ctx *c)
{
    size_t all = 2 * MB(c) * (size_t)c->size;
    MSLOT(0, all);
    MSLOT(1, all);
    MSLOT(2, MB(c));
    const void *in[2] = {s0, s1};
    void *out[2] = {c->recv, s2};
#define CALL(wp) dcoll_reduce_scatter_multi(c->group, in, out, 2, ARGS(c),   \
                                            c->o->op, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int rsm_r(struct perf_ctx *c)
{
    size_t all = 2 * MB(c) * (size_t)c->size;
    MSLOT(0, all);
    MSLOT(1, all);
    MSLOT(2, MB(c));
    MSLOT(3, all);
    MSLOT(4, 2 * MB(c));
    memcpy(s3, s0, all);
    if (MPI_Reduce_local(s1, s3, 2 * c->raw_count * c->size, c->raw_type,
                         c->raw_op) ||
        MPI_Reduce_scatter_block(s3, s4, 2 * c->raw_count, c->raw_type,
                                 c->raw_op, c->comm))
        return 1;
    memcpy(c->recv, s4, MB(c));
    memcpy(s2, s4 + MB(c), MB(c));
    return 0;
}

/* split: a group made and destroyed, halves by rank parity, against
 * MPI_Comm_split and MPI_Comm_free. dcoll's also agrees on the arguments,
 * learns the members' world ranks, and sets up the group (its timeout
 * and mode agreed, its backend, a watchdog twin): what the size column
 * says is ignored. */
static int split_d(struct perf_ctx *c)
{
    dcoll_group_t *g = NULL;
    return dcoll_split_group(&g, c->group, c->rank % 2, c->rank, NULL) ||
           dcoll_group_destroy(&g);
}

static int split_r(struct perf_ctx *c)
{
    MPI_Comm nc;
    if (MPI_Comm_split(c->comm, c->rank % 2, c->rank, &nc))
        return 1;
    return MPI_Comm_free(&nc) != MPI_SUCCESS;
}

/* all_reduce_coalesced works in place on its tensors, as torch's does.
 * Raw packs the same tensors by hand into one buffer, reduces it with one
 * MPI_Allreduce and copies the results back. */
static int arc_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_all_reduce_coalesced(c->group, c->recvv, c->counts,   \
        c->ntensors, c->o->dtype, c->o->op, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int arc_r(struct perf_ctx *c)
{
    size_t off = 0;
    for (int t = 0; t < c->ntensors; t++) {
        size_t b = (size_t)c->counts[t] * c->esz;
        memcpy((char *)c->pack + off, c->recvv[t], b);
        off += b;
    }
    int rc;
    if (c->o->async) {
        MPI_Request rq;
        rc = MPI_Iallreduce(MPI_IN_PLACE, c->pack, RAW(c), c->raw_op, c->comm,
                            &rq);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Allreduce(MPI_IN_PLACE, c->pack, RAW(c), c->raw_op, c->comm);
    }
    off = 0;
    for (int t = 0; t < c->ntensors; t++) {
        size_t b = (size_t)c->counts[t] * c->esz;
        memcpy(c->recvv[t], (char *)c->pack + off, b);
        off += b;
    }
    return rc != MPI_SUCCESS;
}

/* The same tensors, one dcoll_all_reduce each (async: all posted, then
 * all waited, as a user overlapping them would). */
static int arc_sep(struct perf_ctx *c)
{
    if (!c->o->async) {
        for (int t = 0; t < c->ntensors; t++)
            if (dcoll_all_reduce(c->group, c->recvv[t], c->recvv[t],
                                 c->counts[t], c->o->dtype, c->o->op, NULL,
                                 NULL))
                return 1;
        return 0;
    }
    dcoll_work_t *w[64];
    for (int t0 = 0; t0 < c->ntensors; t0 += 64) {
        int m = c->ntensors - t0 < 64 ? c->ntensors - t0 : 64;
        for (int t = 0; t < m; t++)
            if (dcoll_all_reduce(c->group, c->recvv[t0 + t],
                                 c->recvv[t0 + t], c->counts[t0 + t],
                                 c->o->dtype, c->o->op, NULL, &w[t]))
                return 1;
        for (int t = 0; t < m; t++)
            if (dcoll_work_wait(w[t]) || dcoll_work_free(&w[t]))
                return 1;
    }
    return 0;
}

/* all_gather_coalesced: raw packs the inputs, one MPI_Allgather, and
 * scatters each rank's block back into the tensors. */
static int agc_d(struct perf_ctx *c)
{
#define CALL(wp) dcoll_all_gather_coalesced(c->group,                        \
        (const void *const *)c->sendv, c->recvv, c->counts, c->ntensors,     \
        c->o->dtype, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int agc_r(struct perf_ctx *c)
{
    size_t total = 0, off = 0;
    for (int t = 0; t < c->ntensors; t++)
        total += (size_t)c->counts[t] * c->esz;
    char *in = c->pack, *out = (char *)c->pack + total;
    for (int t = 0; t < c->ntensors; t++) {
        size_t b = (size_t)c->counts[t] * c->esz;
        memcpy(in + off, c->sendv[t], b);
        off += b;
    }
    int rc;
    if (c->o->async) {
        MPI_Request rq;
        rc = MPI_Iallgather(in, RAW(c), out, RAW(c), c->comm, &rq);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        rc = MPI_Allgather(in, RAW(c), out, RAW(c), c->comm);
    }
    off = 0;
    for (int t = 0; t < c->ntensors; t++) {
        size_t b = (size_t)c->counts[t] * c->esz;
        for (int r = 0; r < c->size; r++)
            memcpy((char *)c->recvv[t] + r * b, out + r * total + off, b);
        off += b;
    }
    return rc != MPI_SUCCESS;
}

static int agc_sep(struct perf_ctx *c)
{
    for (int t = 0; t < c->ntensors; t++)
        if (dcoll_all_gather(c->group, c->sendv[t], c->recvv[t],
                             c->counts[t], c->o->dtype, NULL, NULL))
            return 1;
    return 0;
}

/* The vector forms, every rank's count the same as the plain forms'
 * (so sizes compare), through their count arrays: dcoll's int64 ones and
 * the raw call's ints, made once per size outside the timed calls' work
 * (each side checks they are current, alike). */
static int64_t *v64, *d64;
static int *vi, *di, vsize = -1;
static int64_t vcount = -1;

static int vsetup(struct perf_ctx *c)
{
    if (vsize == c->size && vcount == c->count)
        return 0;
    free(v64);
    free(d64);
    free(vi);
    free(di);
    size_t n = (size_t)c->size;
    v64 = malloc(n * sizeof(*v64));
    d64 = malloc(n * sizeof(*d64));
    vi = malloc(n * sizeof(*vi));
    di = malloc(n * sizeof(*di));
    if (!v64 || !d64 || !vi || !di || c->count > 0x7fffffff / (int64_t)n)
        return 1;
    for (size_t i = 0; i < n; i++) {
        v64[i] = c->count;
        d64[i] = c->count * (int64_t)i;
        vi[i] = (int)c->count;
        di[i] = (int)(c->count * (int64_t)i);
    }
    vsize = c->size;
    vcount = c->count;
    return 0;
}

static int allgatherv_d(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
#define CALL(wp) dcoll_all_gatherv(c->group, c->send, c->count, c->recv, \
                                   v64, d64, c->o->dtype, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int allgatherv_r(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
    RAW_CALL(c,
             MPI_Allgatherv(c->send, RAW(c), c->recv, vi, di, c->raw_type,
                            c->comm),
             MPI_Iallgatherv(c->send, RAW(c), c->recv, vi, di, c->raw_type,
                             c->comm, &rq_));
}

static int gatherv_d(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
#define CALL(wp) dcoll_gatherv(c->group, c->send, c->count, c->recv, v64, \
                               d64, c->o->dtype, c->root, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int gatherv_r(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
    RAW_CALL(c,
             MPI_Gatherv(c->send, RAW(c), c->recv, vi, di, c->raw_type,
                         c->groot, c->comm),
             MPI_Igatherv(c->send, RAW(c), c->recv, vi, di, c->raw_type,
                          c->groot, c->comm, &rq_));
}

static int scatterv_d(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
#define CALL(wp) dcoll_scatterv(c->group, c->send, v64, d64, c->recv, \
                                c->count, c->o->dtype, c->root, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int scatterv_r(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
    RAW_CALL(c,
             MPI_Scatterv(c->send, vi, di, c->raw_type, c->recv, RAW(c),
                          c->groot, c->comm),
             MPI_Iscatterv(c->send, vi, di, c->raw_type, c->recv, RAW(c),
                           c->groot, c->comm, &rq_));
}

static int alltoallv_d(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
#define CALL(wp) dcoll_all_to_allv(c->group, c->send, v64, d64, c->recv, \
                                   v64, d64, c->o->dtype, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int alltoallv_r(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
    RAW_CALL(c,
             MPI_Alltoallv(c->send, vi, di, c->raw_type, c->recv, vi, di,
                           c->raw_type, c->comm),
             MPI_Ialltoallv(c->send, vi, di, c->raw_type, c->recv, vi, di,
                            c->raw_type, c->comm, &rq_));
}

static int redscatv_d(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
#define CALL(wp) dcoll_reduce_scatterv(c->group, c->send, c->recv, v64, \
                                       c->o->dtype, c->o->op, NULL, wp)
    DCOLL_CALL(c, CALL);
#undef CALL
}

static int redscatv_r(struct perf_ctx *c)
{
    if (vsetup(c))
        return 1;
    /* raw_count: float16 and bfloat16 are timed raw as float32 of the
     * same bytes, so the raw counts follow raw_count, not count. */
    for (int i = 0; i < c->size; i++)
        vi[i] = c->raw_count;
    vcount = -1;
    RAW_CALL(c,
             MPI_Reduce_scatter(c->send, c->recv, vi, c->raw_type,
                                c->raw_op, c->comm),
             MPI_Ireduce_scatter(c->send, c->recv, vi, c->raw_type,
                                 c->raw_op, c->comm, &rq_));
}

const struct perf_coll perf_colls[] = {
    {"all_reduce", f_allreduce, 0, true, false, false, allreduce_d,
     allreduce_r, NULL},
    {"broadcast", f_one, 0, false, true, false, bcast_d, bcast_r, NULL},
    {"reduce", f_one, 0, true, true, false, reduce_d, reduce_r, NULL},
    {"all_gather", f_ring, 1, false, false, false, allgather_d, allgather_r,
     NULL},
    {"gather", f_ring, 1, false, true, false, gather_d, gather_r, NULL},
    {"scatter", f_ring, 1, false, true, false, scatter_d, scatter_r, NULL},
    {"reduce_scatter", f_ring, 1, true, false, false, redscat_d, redscat_r,
     NULL},
    {"all_to_all", f_ring, 1, false, false, false, alltoall_d, alltoall_r,
     NULL},
    {"send_recv", f_one, 0, false, false, false, sendrecv_d, sendrecv_r,
     NULL},
    {"barrier", f_one, 0, false, false, false, barrier_d, barrier_r, NULL},
    {"all_gatherv", f_ring, 1, false, false, false, allgatherv_d,
     allgatherv_r, NULL},
    {"gatherv", f_ring, 1, false, true, false, gatherv_d, gatherv_r, NULL},
    {"scatterv", f_ring, 1, false, true, false, scatterv_d, scatterv_r, NULL},
    {"all_to_allv", f_ring, 1, false, false, false, alltoallv_d, alltoallv_r,
     NULL},
    {"reduce_scatterv", f_ring, 1, true, false, false, redscatv_d,
     redscatv_r, NULL},
    {"scan", f_one, 0, true, false, false, scan_d, scan_r, NULL},
    {"exscan", f_one, 0, true, false, false, exscan_d, exscan_r, NULL},
    {"neighbor_all_gather", f_one, 1, false, false, false, nallgather_d,
     nallgather_r, NULL},
    {"neighbor_all_to_allv", f_one, 1, false, false, false, nalltoallv_d,
     nalltoallv_r, NULL},
    {"neighbor_all_to_allw", f_one, 1, false, false, false, nalltoallw_d,
     nalltoallw_r, NULL},
    {"halo", f_one, 0, false, false, false, halo_d, halo_r, NULL},
    {"split", f_one, 0, false, false, false, split_d, split_r, NULL},
    {"all_reduce_multi", f_allreduce, 0, true, false, false, arm_d, arm_r,
     NULL},
    {"broadcast_multi", f_one, 0, false, true, false, bm_d, bm_r, NULL},
    {"reduce_multi", f_one, 0, true, true, false, rm_d, rm_r, NULL},
    {"all_gather_multi", f_ring, 0, false, false, false, agm_d, agm_r, NULL},
    {"reduce_scatter_multi", f_ring, 0, true, false, false, rsm_d, rsm_r,
     NULL},
    {"all_reduce_coalesced", f_allreduce, 0, true, false, true, arc_d, arc_r,
     arc_sep},
    {"all_gather_coalesced", f_ring, 1, false, false, true, agc_d, agc_r,
     agc_sep},
};

const int perf_ncolls = (int)(sizeof(perf_colls) / sizeof(perf_colls[0]));
