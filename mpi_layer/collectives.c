/* Host collectives over MPI. A blocking call is MPI's blocking call (the
 * core's watchdog watches it), except on a group that returns from a
 * timeout (DCOLL_ON_TIMEOUT_RETURN): there it posts the nonblocking form,
 * or small.c's point-to-point ones for small calls, and polls them
 * against its deadline (watch.c). Counts above
 * INT_MAX become derived types, or chunks for reductions (MPI's built-in
 * ops take built-in types only). */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

#define REDUCE_CHUNK (INT64_C(1) << 30) /* elements per reduction call */

struct mpi_work {
    struct dcoll_work base;
    int nreq;
    MPI_Request *reqs;
    MPI_Status status;          /* a receive's, for its source */
    /* Done after the requests finish. */
    void *avg_buf;              /* AVG: divide avg_n elements by divisor */
    int64_t avg_n;
    int divisor;
    dcoll_dtype_t dtype;
    char *move_dst;             /* in-place reduce_scatter: move the block */
    const char *move_src;
    size_t move_bytes;
    int *vec;                   /* a vector call's int counts */
    MPI_Datatype type;          /* a big count's derived type */
    MPI_Request one;
};

static void mpi_work_release(struct dcoll_work *bw);

/* Post state: blocking (w NULL) or filling w->reqs, with the
 * nonblocking calls or, for a plan (persist), their persistent forms. */
struct post {
    struct mpi_work *w;
    int used;
    bool persist;
};

static MPI_Request *slot(struct post *p)
{
    return p->w ? &p->w->reqs[p->used++] : NULL;
}

#define CALL(rq, B, NB) ((rq) ? (NB) : (B))


static int64_t chunks(int64_t n)
{
    return n > INT_MAX ? (n + REDUCE_CHUNK - 1) / REDUCE_CHUNK : 1;
}

static int requests_needed(const struct dcoll_group *g,
                           const struct dcoll_coll *c)
{
    if (c->kind == DCOLL_COLL_ALL_REDUCE || c->kind == DCOLL_COLL_REDUCE ||
        c->kind == DCOLL_COLL_BROADCAST)
        return (int)chunks(c->count);
    if (c->kind == DCOLL_COLL_REDUCE_SCATTER && c->count > INT_MAX)
        return (int)chunks(c->count) * g->size;
    return 1;
}

/* A count MPI can take: n itself, or 1 of a big derived type. */
struct span {
    int n;
    MPI_Datatype type;
    bool derived;
};

static int span_make(int64_t n, dcoll_dtype_t dt, struct span *s)
{
    s->derived = n > INT_MAX;
    if (!s->derived) {
        s->n = (int)n;
        s->type = dcoll_mpi_dtype[dt];
        return MPI_SUCCESS;
    }
    s->n = 1;
    return dcoll_mpi_big_type(n, dcoll_mpi_dtype[dt], &s->type);
}

/* MPI lets a type go while requests use it, but MPICH 4.0.2 then fails
 * them (MPI_Ibcast: "Invalid communicator"): a work keeps its type. */
static void span_free(struct post *p, struct span *s)
{
    if (s->derived && p->w)
        p->w->type = s->type;
    else if (s->derived)
        MPI_Type_free(&s->type);
}

/* all_reduce and reduce, in chunks of at most REDUCE_CHUNK elements. */
static int post_reduce(struct post *p, const struct dcoll_coll *c,
                       MPI_Comm comm, int me, const char **call)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    MPI_Datatype dt = dcoll_mpi_dtype[c->dtype];
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    bool all = c->kind == DCOLL_COLL_ALL_REDUCE;
    bool has_out = all || me == c->root;
    const char *s = c->sendbuf;
    char *r = c->recvbuf;
    int64_t off = 0;
    int rc = MPI_SUCCESS;
    *call = all ? (p->w ? "MPI_Iallreduce" : "MPI_Allreduce")
                : (p->w ? "MPI_Ireduce" : "MPI_Reduce");
    do {
        int64_t left = c->count - off;
        int len = (int)(c->count <= INT_MAX ? c->count
                        : left < REDUCE_CHUNK ? left : REDUCE_CHUNK);
        const void *in = (c->in_place && has_out) ? MPI_IN_PLACE
                                                  : s + (size_t)off * esz;
        void *out = has_out ? r + (size_t)off * esz : NULL;
        MPI_Request *rq = slot(p);
        if (all)
            rc = CALL(rq, MPI_Allreduce(in, out, len, dt, op, comm),
                      DCOLL_NB(p->persist, MPI_Iallreduce, Allreduce, rq,
                               in, out, len, dt, op, comm));
        else
            rc = CALL(rq, dcoll_mpi_reduce(in, out, len, dt, op, c->root, comm),
                      DCOLL_NB(p->persist, MPI_Ireduce, Reduce, rq,
                               in, out, len, dt, op, c->root, comm));
        off += len;
    } while (rc == MPI_SUCCESS && off < c->count);
    return rc;
}

/* A broadcast above INT_MAX elements, in chunks: MPICH 4.0.2 fails an
 * MPI_Ibcast of one such derived type when MPI_Test drives it. */
static int post_bcast_chunks(struct post *p, const struct dcoll_coll *c,
                             MPI_Comm comm, const char **call)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    MPI_Datatype dt = dcoll_mpi_dtype[c->dtype];
    int rc = MPI_SUCCESS;
    *call = p->w ? "MPI_Ibcast" : "MPI_Bcast";
    for (int64_t off = 0; off < c->count && rc == MPI_SUCCESS;) {
        int len = (int)(c->count - off < REDUCE_CHUNK ? c->count - off
                                                      : REDUCE_CHUNK);
        void *b = (char *)c->recvbuf + (size_t)off * esz;
        MPI_Request *rq = slot(p);
        rc = CALL(rq, MPI_Bcast(b, len, dt, c->root, comm),
                  DCOLL_NB(p->persist, MPI_Ibcast, Bcast, rq,
                           b, len, dt, c->root, comm));
        off += len;
    }
    return rc;
}

/* reduce_scatter. MPI's in-place form leaves the result at the front of
 * the buffer, dcoll's (NCCL's) at rank * count: the block moves after. */
static int post_reduce_scatter(struct post *p, const struct dcoll_coll *c,
                               const struct dcoll_group *g, MPI_Comm comm,
                               const char **call)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    size_t block = (size_t)c->count * esz;
    MPI_Datatype dt = dcoll_mpi_dtype[c->dtype];
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    char *whole = (char *)c->sendbuf;
    int rc = MPI_SUCCESS;

    if (c->count <= INT_MAX) {
        MPI_Request *rq = slot(p);
        const void *in = c->in_place ? MPI_IN_PLACE : c->sendbuf;
        void *out = c->in_place ? whole : c->recvbuf;
        int n = (int)c->count;
        *call = rq ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block";
        return CALL(rq, MPI_Reduce_scatter_block(in, out, n, dt, op, comm),
                    DCOLL_NB(p->persist, MPI_Ireduce_scatter_block, Reduce_scatter_block, rq,
                             in, out, n, dt, op, comm));
    }
    /* Too big for one call: a reduce per rank and chunk, rooted there. */
    *call = p->w ? "MPI_Ireduce" : "MPI_Reduce";
    for (int root = 0; root < g->size && rc == MPI_SUCCESS; root++) {
        for (int64_t off = 0; off < c->count && rc == MPI_SUCCESS;) {
            int len = (int)(c->count - off < REDUCE_CHUNK ? c->count - off
                                                          : REDUCE_CHUNK);
            bool mine = root == g->rank;
            const char *src = whole + root * block + (size_t)off * esz;
            const void *in = mine && c->in_place ? MPI_IN_PLACE : src;
            void *out = mine ? (char *)c->recvbuf + (size_t)off * esz : NULL;
            MPI_Request *rq = slot(p);
            rc = CALL(rq, dcoll_mpi_reduce(in, out, len, dt, op, root, comm),
                      DCOLL_NB(p->persist, MPI_Ireduce, Reduce, rq,
                               in, out, len, dt, op, root, comm));
            off += len;
        }
    }
    return rc;
}

/* Everything else: one call, with a derived type for big counts. */
static int post_one(struct post *p, const struct dcoll_coll *c, MPI_Comm comm,
                    MPI_Status *status, const char **call)
{
    struct span sp;
    int rc = span_make(c->count, c->dtype, &sp);
    if (rc != MPI_SUCCESS) {
        *call = "MPI_Type_create_struct (count above INT_MAX)";
        return rc;
    }
    MPI_Request *rq = slot(p);
    const void *s = c->in_place ? MPI_IN_PLACE : c->sendbuf;
    void *r = c->recvbuf;
    int n = sp.n;
    MPI_Datatype t = sp.type;

    switch (c->kind) {
    case DCOLL_COLL_BROADCAST:
        *call = rq ? "MPI_Ibcast" : "MPI_Bcast";
        rc = CALL(rq, MPI_Bcast(r, n, t, c->root, comm),
                  DCOLL_NB(p->persist, MPI_Ibcast, Bcast, rq,
                           r, n, t, c->root, comm));
        break;
    case DCOLL_COLL_ALL_GATHER:
        *call = rq ? "MPI_Iallgather" : "MPI_Allgather";
        rc = CALL(rq, MPI_Allgather(s, n, t, r, n, t, comm),
                  DCOLL_NB(p->persist, MPI_Iallgather, Allgather, rq,
                           s, n, t, r, n, t, comm));
        break;
    case DCOLL_COLL_GATHER:
        *call = rq ? "MPI_Igather" : "MPI_Gather";
        rc = CALL(rq, MPI_Gather(s, n, t, r, n, t, c->root, comm),
                  DCOLL_NB(p->persist, MPI_Igather, Gather, rq,
                           s, n, t, r, n, t, c->root, comm));
        break;
    case DCOLL_COLL_SCATTER:
        /* MPI's in-place scatter marks the receive side instead. */
        s = c->sendbuf;
        if (c->in_place)
            r = MPI_IN_PLACE;
        *call = rq ? "MPI_Iscatter" : "MPI_Scatter";
        rc = CALL(rq, MPI_Scatter(s, n, t, r, n, t, c->root, comm),
                  DCOLL_NB(p->persist, MPI_Iscatter, Scatter, rq,
                           s, n, t, r, n, t, c->root, comm));
        break;
    case DCOLL_COLL_ALL_TO_ALL:
        *call = rq ? "MPI_Ialltoall" : "MPI_Alltoall";
        rc = CALL(rq, MPI_Alltoall(s, n, t, r, n, t, comm),
                  DCOLL_NB(p->persist, MPI_Ialltoall, Alltoall, rq,
                           s, n, t, r, n, t, comm));
        break;
    case DCOLL_COLL_BARRIER:
        *call = rq ? "MPI_Ibarrier" : "MPI_Barrier";
        rc = CALL(rq,
                 MPI_Barrier(comm), DCOLL_NB(p->persist, MPI_Ibarrier, Barrier, rq, comm));
        break;
    case DCOLL_COLL_SEND:
        *call = rq ? "MPI_Isend" : "MPI_Send";
        rc = CALL(rq, MPI_Send(c->sendbuf, n, t, c->root, c->tag, comm),
                  (p->persist ? MPI_Send_init : MPI_Isend)(c->sendbuf, n, t, c->root,
                                                        c->tag, comm, rq));
        break;
    case DCOLL_COLL_RECV: {
        int src = c->root == DCOLL_ANY_SOURCE ? MPI_ANY_SOURCE : c->root;
        *call = rq ? "MPI_Irecv" : "MPI_Recv";
        rc = CALL(rq, MPI_Recv(r, n, t, src, c->tag, comm, status),
                  (p->persist ? MPI_Recv_init : MPI_Irecv)(r, n, t, src, c->tag, comm,
                                                      rq));
        break;
    }
    default:
        rc = MPI_ERR_OTHER;
        *call = "dcoll MPI layer (unknown operation)";
        break;
    }
    span_free(p, &sp);
    return rc;
}

static inline bool scatters(const struct dcoll_coll *c)
{
    return c->kind == DCOLL_COLL_REDUCE_SCATTER ||
           c->kind == DCOLL_COLL_REDUCE_SCATTERV;
}

/* Whether anything may follow the transfer (plan_after). */
static inline bool has_after(const struct dcoll_coll *c)
{
    return c->op == DCOLL_AVG || scatters(c);
}

/* What follows the transfer: AVG's division, reduce_scatter's move. */
static void plan_after(struct mpi_work *w, const struct dcoll_group *g,
                       const struct dcoll_coll *c)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    w->avg_buf = NULL;
    w->move_bytes = 0;
    if (scatters(c) && c->in_place && c->count <= INT_MAX &&
        c->recvbuf != c->sendbuf) {
        w->move_src = c->sendbuf;
        w->move_dst = c->recvbuf;
        w->move_bytes = (size_t)c->count * esz;
    }
    if (c->op == DCOLL_AVG &&
        (c->kind == DCOLL_COLL_ALL_REDUCE || scatters(c) ||
         (c->kind == DCOLL_COLL_REDUCE && g->rank == c->root))) {
        w->avg_buf = c->recvbuf;
        w->avg_n = c->count;
        w->divisor = g->size;
        w->dtype = c->dtype;
    }
}

static void run_after(struct mpi_work *w)
{
    if (w->move_bytes)
        memmove(w->move_dst, w->move_src, w->move_bytes);
    if (w->avg_buf)
        dcoll_divide(w->avg_buf, w->avg_n, w->dtype, w->divisor);
}

static dcoll_status_t post(struct dcoll_group *g, const struct dcoll_coll *c,
                           struct post *p, MPI_Status *status,
                           const char **callp)
{
    MPI_Comm comm = dcoll_mpi_comm_of(g);
    const char *call = "MPI";
    int rc;
    if ((c->kind == DCOLL_COLL_SEND || c->kind == DCOLL_COLL_RECV) &&
        c->tag > dcoll_mpi_tag_ub)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: tag %d is above this MPI's MPI_TAG_UB %d",
                           c->kind == DCOLL_COLL_SEND ? "dcoll_send"
                                                      : "dcoll_recv",
                           c->tag, dcoll_mpi_tag_ub);
    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE:
    case DCOLL_COLL_REDUCE:
        rc = post_reduce(p, c, comm, g->rank, &call);
        break;
    case DCOLL_COLL_REDUCE_SCATTER:
        rc = post_reduce_scatter(p, c, g, comm, &call);
        break;
    case DCOLL_COLL_BROADCAST:
        rc = c->count > INT_MAX ? post_bcast_chunks(p, c, comm, &call)
                                : post_one(p, c, comm, status, &call);
        break;
    case DCOLL_COLL_ALL_GATHERV:
    case DCOLL_COLL_GATHERV:
    case DCOLL_COLL_SCATTERV:
    case DCOLL_COLL_ALL_TO_ALLV:
    case DCOLL_COLL_REDUCE_SCATTERV: {
        int *keep = NULL;
        rc = dcoll_mpi_post_vec(c, g, comm, slot(p), p->persist, &keep,
                                &call);
        /* Blocking: done with the counts; else they go with the work. */
        if (p->w && rc == MPI_SUCCESS)
            p->w->vec = keep;
        else
            free(keep);
        break;
    }
    default:
        rc = post_one(p, c, comm, status, &call);
        break;
    }
    *callp = call;
    if (rc == MPI_SUCCESS)
        return DCOLL_SUCCESS;
    dcoll_status_t st = dcoll_mpi_error(rc, call);
    /* Requests already posted cannot be cancelled: let them finish. */
    if (p->w && p->used > 1)
        MPI_Waitall(p->used - 1, p->w->reqs, MPI_STATUSES_IGNORE);
    return st;
}

/* Freed handles are kept for the next async calls: a loop of them, or a
 * halo's 16 posted at once, then costs no malloc and free. Atomic slots,
 * so any thread may free a handle while another starts one. */
#define SPARES 32
static _Atomic(struct mpi_work *) spare[SPARES];

static struct mpi_work *work_take(void)
{
    for (int i = 0; i < SPARES; i++) {
        if (!atomic_load_explicit(&spare[i], memory_order_relaxed))
            continue;
        struct mpi_work *w = atomic_exchange(&spare[i], NULL);
        if (w)
            return w;
    }
    return malloc(sizeof(struct mpi_work));
}

static void work_put(struct mpi_work *w)
{
    /* After stop too: a handle freed late waits in a slot for the next
     * start's calls, or the end of the process. */
    for (int i = 0; i < SPARES; i++) {
        struct mpi_work *none = NULL;
        if (!atomic_load_explicit(&spare[i], memory_order_relaxed) &&
            atomic_compare_exchange_strong(&spare[i], &none, w))
            return;
    }
    free(w);
}

void dcoll_mpi_work_cache_free(void)
{
    for (int i = 0; i < SPARES; i++)
        free(atomic_exchange(&spare[i], NULL));
}

static struct dcoll_watch watch_of(const struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   const char *call,
                                   struct dcoll_outcome *out)
{
    struct dcoll_watch wt = {
        .deadline = c->start + g->timeout,
        .seq = c->seq,
        .kind = c->kind,
        .fn = c->fn,
        .call = call,
        .out = out,
    };
    return wt;
}

/* A blocking call's end: the receive's source, then AVG's division or
 * the move of an in-place reduce_scatter's block from the front, where
 * MPI leaves it (@p mpi_layout; small.c puts it in place itself). */
static void blocking_done(const struct dcoll_group *g,
                          const struct dcoll_coll *c,
                          const MPI_Status *status, int *source,
                          bool mpi_layout)
{
    if (c->kind == DCOLL_COLL_RECV)
        *source = status->MPI_SOURCE;
    if (has_after(c)) {
        struct mpi_work after;
        plan_after(&after, g, c);
        if (!mpi_layout)
            after.move_bytes = 0;
        run_after(&after);
    }
}

/* A blocking call on a group with a timeout: post, then poll. */
static dcoll_status_t run_watched(struct dcoll_group *g,
                                  const struct dcoll_coll *c,
                                  struct dcoll_outcome *out)
{
    struct mpi_work w;
    /* Nothing to move: MPI's blocking calls return at once too. */
    if (c->count == 0 && c->kind != DCOLL_COLL_BARRIER &&
        c->kind != DCOLL_COLL_SEND && c->kind != DCOLL_COLL_RECV)
        return DCOLL_SUCCESS;
    if (dcoll_mpi_small_fits(g, c)) {
        struct dcoll_watch wt = watch_of(g, c, "MPI_Test (dcoll's own small-call algorithm)", out);
        dcoll_status_t st = dcoll_mpi_small(g, c, &wt);
        if (!st)
            blocking_done(g, c, NULL, &out->source, false);
        return st;
    }
    MPI_Request few[4];
    int nreq = requests_needed(g, c);
    w.reqs = nreq <= 4 ? few : malloc(sizeof(MPI_Request) * (size_t)nreq);
    if (!w.reqs)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for %d requests",
                           nreq);
    struct post p = {&w, 0, false};
    const char *call = "MPI";
    w.vec = NULL;
    dcoll_status_t st = post(g, c, &p, NULL, &call);
    if (!st) {
        struct dcoll_watch wt = watch_of(g, c, call, out);
        st = dcoll_mpi_poll(g, &wt, p.used, w.reqs, &w.status);
    }
    free(w.vec);
    if (w.reqs != few)
        free(w.reqs);
    if (!st)
        blocking_done(g, c, &w.status, &out->source, true);
    return st;
}

/* The common blocking call, straight to MPI: one call of at most INT_MAX
 * elements with nothing to do after it. Returns MPI's code, or -1 where
 * the general path is needed (big counts, AVG, send and recv, an in-place
 * reduce_scatter). */
static inline int direct(const struct dcoll_coll *c, MPI_Comm comm, int me,
                         const char **call)
{
    if (c->count > INT_MAX || c->op == DCOLL_AVG)
        return -1;
    int n = (int)c->count;
    MPI_Datatype t = dcoll_mpi_dtype[c->dtype];
    const void *s = c->in_place ? MPI_IN_PLACE : c->sendbuf;
    void *r = c->recvbuf;
    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE:
        *call = "MPI_Allreduce";
        return MPI_Allreduce(s, r, n, t, dcoll_mpi_op(c->dtype, c->op), comm);
    case DCOLL_COLL_REDUCE:
        *call = "MPI_Reduce";
        if (me != c->root) {
            s = c->sendbuf;
            r = NULL;
        }
        return dcoll_mpi_reduce(s, r, n, t, dcoll_mpi_op(c->dtype, c->op),
                           c->root, comm);
    case DCOLL_COLL_BROADCAST:
        *call = "MPI_Bcast";
        return MPI_Bcast(r, n, t, c->root, comm);
    case DCOLL_COLL_ALL_GATHER:
        *call = "MPI_Allgather";
        return MPI_Allgather(s, n, t, r, n, t, comm);
    case DCOLL_COLL_GATHER:
        *call = "MPI_Gather";
        return MPI_Gather(s, n, t, r, n, t, c->root, comm);
    case DCOLL_COLL_SCATTER:
        *call = "MPI_Scatter";
        return MPI_Scatter(c->sendbuf, n, t, c->in_place ? MPI_IN_PLACE : r,
                           n, t, c->root, comm);
    case DCOLL_COLL_ALL_TO_ALL:
        *call = "MPI_Alltoall";
        return MPI_Alltoall(s, n, t, r, n, t, comm);
    case DCOLL_COLL_REDUCE_SCATTER:
        if (c->in_place)
            return -1;
        *call = "MPI_Reduce_scatter_block";
        return MPI_Reduce_scatter_block(s, r, n, t,
                                        dcoll_mpi_op(c->dtype, c->op), comm);
    case DCOLL_COLL_BARRIER:
        *call = "MPI_Barrier";
        return MPI_Barrier(comm);
    default:
        return -1;
    }
}

/* A blocking call the tuning table gives another way (compose.c): MPI's
 * code, or -1 where it is MPI's own call. Where direct would make it. */
static __attribute__((noinline)) int tuned(const struct dcoll_group *g,
                                           const struct dcoll_coll *c,
                                           const char **call)
{
    switch (c->kind) {
    case DCOLL_COLL_REDUCE_SCATTER:
        if (c->in_place)
            return -1;
        break;
    case DCOLL_COLL_ALL_REDUCE:
    case DCOLL_COLL_BROADCAST:
    case DCOLL_COLL_REDUCE:
    case DCOLL_COLL_ALL_GATHER:
        break;
    default:
        return -1;
    }
    if (c->count > INT_MAX || c->op == DCOLL_AVG)
        return -1;
    enum dcoll_way way = dcoll_mpi_tuned(g, c);
    if (way == DCOLL_WAY_MPI)
        return -1;
    *call = dcoll_way_names[way];
    int n = (int)c->count, me = g->rank, size = g->size;
    MPI_Datatype t = dcoll_mpi_dtype[c->dtype];
    MPI_Op op = dcoll_kind_has(c->kind, DCOLL_KF_OP)
                    ? dcoll_mpi_op(c->dtype, c->op) : MPI_OP_NULL;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    MPI_Comm comm = dcoll_mpi_comm_of(g);
    const void *in = c->in_place ? MPI_IN_PLACE : c->sendbuf;
    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE:
        return dcoll_compose_all_reduce(way, in, c->recvbuf, n, t, esz, op,
                                        comm, me, size);
    case DCOLL_COLL_REDUCE_SCATTER:
        return dcoll_compose_reduce_scatter(way, c->sendbuf, c->recvbuf, n,
                                            t, esz, op, comm, me, size);
    case DCOLL_COLL_BROADCAST:
        return dcoll_compose_broadcast(way, c->recvbuf, n, t, esz, c->root,
                                       comm, me, size);
    case DCOLL_COLL_REDUCE:
        /* Off the root, an in-place call's input is its buffer. */
        return dcoll_compose_reduce(way, me == c->root ? in : c->sendbuf,
                                    c->recvbuf, n, t, esz, op, c->root, comm,
                                    me, size);
    default:
        return dcoll_compose_all_gather(way, in, c->recvbuf, n, t, esz, comm,
                                        me, size);
    }
}

static dcoll_status_t mpi_coll(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               struct dcoll_work **work,
                               struct dcoll_outcome *out)
{
    if (!work && g->timeout > 0 && g->recoverable)
        return run_watched(g, c, out);
    if (!work) {
        const char *call = "MPI";
        int rc = -1;
        if (DCOLL_UNLIKELY(dcoll_mpi_tuning != NULL) &&
            (rc = tuned(g, c, &call)) >= 0)
            out->way = call;
        if (rc < 0)
            rc = direct(c, dcoll_mpi_comm_of(g), g->rank, &call);
        if (DCOLL_LIKELY(rc == MPI_SUCCESS))
            return DCOLL_SUCCESS;
        if (rc > 0)
            return dcoll_mpi_error(rc, call);
        struct post p = {NULL, 0, false};
        MPI_Status status;
        dcoll_status_t st = post(g, c, &p, &status, &call);
        if (!st)
            blocking_done(g, c, &status, &out->source, true);
        return st;
    }
    int nreq = requests_needed(g, c);
    struct mpi_work *w = work_take();
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a work handle");
    w->reqs = nreq == 1 ? &w->one : malloc(sizeof(MPI_Request) * nreq);
    if (!w->reqs) {
        work_put(w);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for %d requests",
                           nreq);
    }
    w->nreq = nreq;
    w->vec = NULL;
    w->type = MPI_DATATYPE_NULL;
    struct post p = {w, 0, false};
    const char *call;
    dcoll_status_t st = post(g, c, &p, NULL, &call);
    if (st) {
        mpi_work_release(&w->base);
        return st;
    }
    w->nreq = p.used;
    if (has_after(c)) {
        plan_after(w, g, c);
    } else {
        w->avg_buf = NULL;
        w->move_bytes = 0;
    }
    dcoll_work_init(&w->base, g, &dcoll_mpi_backend);
    w->base.is_recv = c->kind == DCOLL_COLL_RECV;
    *work = &w->base;
    return DCOLL_SUCCESS;
}

static dcoll_status_t finished(struct mpi_work *w, int rc, const char *call)
{
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, call);
    if (w->base.is_recv)
        w->base.source = w->status.MPI_SOURCE;
    run_after(w);
    return DCOLL_SUCCESS;
}

static struct dcoll_watch work_watch(struct dcoll_work *w, const char *call)
{
    struct dcoll_watch wt = {
        .deadline = w->deadline,
        .seq = w->seq,
        .kind = w->kind,
        .fn = w->fn,
        .call = call,
        .out = &w->report,
    };
    return wt;
}

static dcoll_status_t mpi_work_test(struct dcoll_work *bw, int *done)
{
    struct mpi_work *w = (struct mpi_work *)bw;
    int rc = w->base.is_recv ? MPI_Test(w->reqs, done, &w->status)
             : w->nreq == 1  ? MPI_Test(w->reqs, done, MPI_STATUS_IGNORE)
                             : MPI_Testall(w->nreq, w->reqs, done,
                                           MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        *done = 1;
        return dcoll_mpi_error(rc, "MPI_Test");
    }
    if (*done)
        return finished(w, rc, "MPI_Test");
    if (!isinf(w->base.deadline) && dcoll_now() >= w->base.deadline) {
        struct dcoll_watch wt = work_watch(&w->base, "MPI_Test");
        *done = 1;
        return dcoll_mpi_timed_out(w->base.group, &wt);
    }
    return DCOLL_SUCCESS;
}

static dcoll_status_t mpi_work_wait(struct dcoll_work *bw)
{
    struct mpi_work *w = (struct mpi_work *)bw;
    if (!isinf(w->base.deadline)) {
        struct dcoll_watch wt = work_watch(&w->base, "MPI_Test");
        dcoll_status_t st = dcoll_mpi_poll(w->base.group, &wt, w->nreq,
                                           w->reqs, w->base.is_recv
                                                        ? &w->status
                                                        : NULL);
        return st ? st : finished(w, MPI_SUCCESS, "MPI_Test");
    }
    /* MPI_Wait for one request: MPI_Waitall costs twice the instructions. */
    int rc = w->base.is_recv ? MPI_Wait(w->reqs, &w->status)
             : w->nreq == 1  ? MPI_Wait(w->reqs, MPI_STATUS_IGNORE)
                             : MPI_Waitall(w->nreq, w->reqs,
                                           MPI_STATUSES_IGNORE);
    return finished(w, rc, "MPI_Wait");
}

static void mpi_work_release(struct dcoll_work *bw)
{
    struct mpi_work *w = (struct mpi_work *)bw;
    if (w->reqs != &w->one)
        free(w->reqs);
    free(w->vec);
    if (w->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&w->type);
    work_put(w);
}

/* ---- plans ---- */

/* What a plan's starts call: MPI's persistent request, made once at plan
 * time (MPI_Start, then MPI_Wait), or the blocking call (async: the
 * nonblocking one) from the plan's checked descriptor. Which is faster
 * depends on the MPI, the kind and the size: Open MPI 4.1's persistent
 * collectives (pcollreq) run on its nonblocking schedules, twice as slow
 * as its blocking calls when small and up to 12 times as fast for a
 * large reduce_scatter; MPICH 4.0's beat its own blocking calls for most
 * kinds (bench/README.md, "Plans"). So blocking starts try both
 * (run_trial). */
struct mpi_plan {
    /* A blocking start's way, found once: MPI's blocking call from the
     * arguments below (call), MPI_Start + MPI_Wait with nothing after
     * (run_started), a trial of both that settles on one (run_trial), or
     * with run NULL the general path (plan_start_slow). First: the core
     * calls it (plan_quick). */
    struct dcoll_plan_run way;
    struct mpi_work w;   /* its requests, counts, type and after-step */
    bool blocking;       /* a blocking start uses the requests */
    bool async;          /* an async start does */
    int (*call)(struct dcoll_plan_run *p); /* the blocking call, where
                                              direct_make could */
    int tries;               /* run_trial's starts so far */
    double ends[2][8];       /* when each start of the blocking call's
                                timed run and the request's ended
                                (TRIAL_STARTS) */
    int me, size;            /* the group's rank and size */
    enum dcoll_coll_kind kind;
    const void *in;
    void *out;
    int n, root, tag;
    MPI_Datatype t;
    MPI_Op op;
    MPI_Comm comm;
    int *v;              /* vector kinds: counts and displacements */
};

/* n counts and displacements (packed where displs is NULL) as ints. */
static void ints(const int64_t *counts, const int64_t *displs, int n,
                 int *cnt, int *dsp)
{
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        cnt[i] = (int)counts[i];
        dsp[i] = (int)(displs ? displs[i] : at);
        at += counts[i];
    }
}

/* Whether a blocking start of c can be MPI's blocking call as it is,
 * every time, and its arguments if so: no chunks, no after-step, none of
 * MPICH's own ways (mpi_layer's dcoll_mpi_reduce, all_gatherv's copy). */
static bool direct_make(struct mpi_plan *p, const struct dcoll_group *g,
                        const struct dcoll_coll *c)
{
    bool vec = dcoll_kind_has(c->kind, DCOLL_KF_VEC);
    struct mpi_work after;
    plan_after(&after, g, c);
    if (c->count > INT_MAX || after.avg_buf || after.move_bytes)
        return false;
#ifdef MPICH
    if ((c->kind == DCOLL_COLL_REDUCE && c->in_place && c->root != 0) ||
        (c->kind == DCOLL_COLL_ALL_GATHERV && !c->in_place && c->displs))
        return false;
#endif
    int n = g->size, me = g->rank;
    p->kind = c->kind;
    p->size = n;
    p->in = c->in_place ? MPI_IN_PLACE : c->sendbuf;
    p->out = c->recvbuf;
    p->n = (int)c->count;
    p->t = dcoll_mpi_dtype[c->dtype];
    p->op = dcoll_kind_has(c->kind, DCOLL_KF_OP)
                ? dcoll_mpi_op(c->dtype, c->op) : MPI_OP_NULL;
    p->root = c->root == DCOLL_ANY_SOURCE ? MPI_ANY_SOURCE : c->root;
    p->tag = c->tag;
    p->comm = dcoll_mpi_comm_of(g);
    switch (c->kind) {
    case DCOLL_COLL_REDUCE:
        if (me != c->root) {
            p->in = c->sendbuf;
            p->out = NULL;
        }
        break;
    case DCOLL_COLL_SCATTER:
    case DCOLL_COLL_SCATTERV:
        /* MPI's in-place scatter marks the receive side. */
        p->in = c->sendbuf;
        if (c->in_place)
            p->out = MPI_IN_PLACE;
        break;
    case DCOLL_COLL_SEND:
        p->in = c->sendbuf;
        break;
    default:
        break;
    }
    if (vec) {
        p->v = malloc(sizeof(int) * 4 * (size_t)n);
        if (!p->v)
            return false;
        if (c->counts)
            ints(c->counts, c->displs, n, p->v, p->v + n);
        if (c->kind == DCOLL_COLL_ALL_TO_ALLV) {
            ints(c->counts2, c->displs2, n, p->v + 2 * n, p->v + 3 * n);
            if (c->in_place)
                memcpy(p->v, p->v + 2 * n, sizeof(int) * 2 * (size_t)n);
        }
    }
    return true;
}

/* Each kind's blocking call, one function each, so that a start jumps
 * straight to MPI with the arguments found at plan time (direct_make). */
#define BLOCKING(name, ...)                                                 \
    static int call_##name(struct dcoll_plan_run *q)                       \
    {                                                                      \
        const struct mpi_plan *p = (const struct mpi_plan *)q;             \
        const int *v = p->v, size = p->size;                               \
        bool root = p->me == p->root;                                      \
        (void)v, (void)size, (void)root;                                   \
        return __VA_ARGS__;                                                \
    }
BLOCKING(allreduce, MPI_Allreduce(p->in, p->out, p->n, p->t, p->op, p->comm))
BLOCKING(reduce, MPI_Reduce(p->in, p->out, p->n, p->t, p->op, p->root,
                            p->comm))
BLOCKING(bcast, MPI_Bcast(p->out, p->n, p->t, p->root, p->comm))
BLOCKING(allgather, MPI_Allgather(p->in, p->n, p->t, p->out, p->n, p->t,
                                  p->comm))
BLOCKING(gather, MPI_Gather(p->in, p->n, p->t, p->out, p->n, p->t, p->root,
                            p->comm))
BLOCKING(scatter, MPI_Scatter(p->in, p->n, p->t, p->out, p->n, p->t, p->root,
                              p->comm))
BLOCKING(reduce_scatter_block, MPI_Reduce_scatter_block(p->in, p->out, p->n,
                                                        p->t, p->op, p->comm))
BLOCKING(alltoall, MPI_Alltoall(p->in, p->n, p->t, p->out, p->n, p->t,
                                p->comm))
BLOCKING(barrier, MPI_Barrier(p->comm))
BLOCKING(send, MPI_Send(p->in, p->n, p->t, p->root, p->tag, p->comm))
BLOCKING(recv, MPI_Recv(p->out, p->n, p->t, p->root, p->tag, p->comm,
                        MPI_STATUS_IGNORE))
BLOCKING(allgatherv, MPI_Allgatherv(p->in, p->n, p->t, p->out, v, v + size,
                                    p->t, p->comm))
BLOCKING(gatherv, MPI_Gatherv(p->in, p->n, p->t, p->out, root ? v : NULL,
                              root ? v + size : NULL, p->t, p->root, p->comm))
BLOCKING(scatterv, MPI_Scatterv(p->in, root ? v : NULL, root ? v + size : NULL,
                                p->t, p->out, p->n, p->t, p->root, p->comm))
BLOCKING(alltoallv, MPI_Alltoallv(p->in, v, v + size, p->t, p->out,
                                  v + 2 * size, v + 3 * size, p->t, p->comm))
BLOCKING(reduce_scatter, MPI_Reduce_scatter(p->in, p->out, v, p->t, p->op,
                                            p->comm))
#undef BLOCKING

/* The function a blocking start of kind calls. */
static int (*call_of(enum dcoll_coll_kind kind))(struct dcoll_plan_run *)
{
    switch (kind) {
    case DCOLL_COLL_ALL_REDUCE:
        return call_allreduce;
    case DCOLL_COLL_REDUCE:
        return call_reduce;
    case DCOLL_COLL_BROADCAST:
        return call_bcast;
    case DCOLL_COLL_ALL_GATHER:
        return call_allgather;
    case DCOLL_COLL_GATHER:
        return call_gather;
    case DCOLL_COLL_SCATTER:
        return call_scatter;
    case DCOLL_COLL_REDUCE_SCATTER:
        return call_reduce_scatter_block;
    case DCOLL_COLL_ALL_TO_ALL:
        return call_alltoall;
    case DCOLL_COLL_BARRIER:
        return call_barrier;
    case DCOLL_COLL_SEND:
        return call_send;
    case DCOLL_COLL_RECV:
        return call_recv;
    case DCOLL_COLL_ALL_GATHERV:
        return call_allgatherv;
    case DCOLL_COLL_GATHERV:
        return call_gatherv;
    case DCOLL_COLL_SCATTERV:
        return call_scatterv;
    case DCOLL_COLL_ALL_TO_ALLV:
        return call_alltoallv;
    default: /* DCOLL_COLL_REDUCE_SCATTERV */
        return call_reduce_scatter;
    }
}

#if DCOLL_MPI_PCOLL == 1
/* Per kind, the smallest message (bytes per rank) from which MPICH's
 * persistent call beats its blocking one. */
static int64_t mpich_persist_from(enum dcoll_coll_kind kind)
{
    switch (kind) {
    case DCOLL_COLL_REDUCE:
    case DCOLL_COLL_GATHERV:
    case DCOLL_COLL_SCATTERV:
        /* Below, their MPI_*_init starts took longer than the blocking
         * calls (reduce 0.40 against 0.35 us at 8 B, 2 ranks). */
        return 4096;
    default:
        return 0;
    }
}
#endif

/* Whether MPI's persistent requests can serve a plan of c at all. */
static bool can_persist(const struct dcoll_coll *c)
{
    bool p2p = c->kind == DCOLL_COLL_SEND || c->kind == DCOLL_COLL_RECV;
    if (!p2p && !DCOLL_MPI_PCOLL)
        return false;
    /* What the requests cannot hold: reduce_scatter's chunks of a count
     * above INT_MAX (a reduce per rank), MPICH's all_gatherv copy of its
     * own block before each call. */
    if (c->kind == DCOLL_COLL_REDUCE_SCATTER && c->count > INT_MAX)
        return false;
#ifdef MPICH
    if (c->kind == DCOLL_COLL_ALL_GATHERV && !c->in_place && c->displs)
        return false;
    /* MPICH 4.0.2's persistent gather, scatter and all_gather give wrong
     * results: MPI_Gather_init gathers garbage (a 15-line program shows
     * it, on 1 rank too), MPI_Allgather_init repeats its first start's
     * data, MPI_Scatter_init fails its second start ("Invalid
     * communicator"). test_plan under DCOLL_PLAN_CALLS=persistent finds
     * each. */
    if (c->kind == DCOLL_COLL_GATHER || c->kind == DCOLL_COLL_SCATTER ||
        c->kind == DCOLL_COLL_ALL_GATHER)
        return false;
#endif
    return true;
}

/* Whether a plan of c starts MPI's persistent requests: blocking starts
 * (blocking) or async ones. In auto mode a blocking start that can be
 * either call tries both first (mpi_plan_make): this rule is for the
 * others. */
static bool persists(const struct dcoll_group *g, const struct dcoll_coll *c,
                     bool blocking)
{
    bool p2p = c->kind == DCOLL_COLL_SEND || c->kind == DCOLL_COLL_RECV;
    if (!can_persist(c))
        return false;
    if (dcoll_plan_calls == DCOLL_PLAN_CALLS_PERSISTENT)
        return true;
    if (dcoll_plan_calls == DCOLL_PLAN_CALLS_PLAIN)
        return false;
    /* MPI_Send_init and MPI_Recv_init's starts took longer than
     * MPI_Isend and MPI_Irecv on both MPIs here (1.26 against 0.63 us on
     * Open MPI 4.1, 0.95 against 0.83 on MPICH 4.0, 8 B, 2 ranks). */
    if (p2p)
        return false;
    (void)g;
#if DCOLL_MPI_PCOLL == 1
    (void)blocking;
    return c->count * (int64_t)dcoll_dtype_sizes[c->dtype] >=
           mpich_persist_from(c->kind);
#elif DCOLL_MPI_PCOLL == 2
    /* Open MPI 4.1: a blocking start with no trial makes its blocking
     * call; an async one its persistent request, which beats its
     * nonblocking call (0.79-0.93 of MPI_Iallreduce's time to 4 KiB, 2
     * ranks; bench/README.md, "Plans"). */
    return !blocking;
#else
    return false;
#endif
}

const char *dcoll_mpi_plan_rule(void)
{
    if (dcoll_plan_calls == DCOLL_PLAN_CALLS_PERSISTENT)
        return DCOLL_MPI_PCOLL ? "MPI's persistent calls (DCOLL_PLAN_CALLS="
                                 "persistent)"
                               : "persistent point-to-point; this MPI has no "
                                 "persistent collectives";
    if (dcoll_plan_calls == DCOLL_PLAN_CALLS_PLAIN)
        return "MPI's blocking and nonblocking calls (DCOLL_PLAN_CALLS=plain)";
#if DCOLL_MPI_PCOLL == 1
    return "blocking starts: their first 32 try MPI's blocking call and MPI "
           "4's persistent request (MPI_*_init), and the ranks keep the "
           "faster (gather, scatter and all_gather: the blocking call, "
           "as this MPI's persistent ones give wrong results); async "
           "starts: the persistent request, but for reduce, gatherv and "
           "scatterv below 4 KiB (the nonblocking call); send/recv: "
           "blocking (async: nonblocking) calls";
#elif DCOLL_MPI_PCOLL == 2
    return "blocking starts: their first 32 try Open MPI's blocking call "
           "and its MPIX_*_init request (pcollreq), and the ranks keep the "
           "faster; async starts: the MPIX_*_init request, which "
           "beats the nonblocking call; send/recv: blocking (async: "
           "nonblocking) calls";
#else
    return "the blocking calls (async starts: the nonblocking ones): this "
           "MPI has no persistent collectives";
#endif
}

static void mpi_plan_free(void *state)
{
    struct mpi_plan *p = state;
    if (!p)
        return;
    free(p->v);
    for (int i = 0; i < p->w.nreq; i++)
        if (p->w.reqs[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&p->w.reqs[i]);
    if (p->w.reqs != &p->w.one)
        free(p->w.reqs);
    free(p->w.vec);
    if (p->w.type != MPI_DATATYPE_NULL)
        MPI_Type_free(&p->w.type);
    free(p);
}

static int run_started(struct dcoll_plan_run *q);
static int run_trial(struct dcoll_plan_run *q);

static dcoll_status_t mpi_plan_make(struct dcoll_group *g,
                                    const struct dcoll_coll *c, void **state)
{
    *state = NULL;
    bool blocking = persists(g, c, true), async = persists(g, c, false);
    /* Auto mode: a blocking start that either call can make tries both
     * (run_trial). */
    bool both = dcoll_plan_calls == DCOLL_PLAN_CALLS_AUTO &&
                c->kind != DCOLL_COLL_SEND && c->kind != DCOLL_COLL_RECV &&
                can_persist(c);
    /* Nothing to move: the general path returns at once, as MPI's
     * blocking calls do. */
    if (c->count == 0 && c->kind != DCOLL_COLL_BARRIER &&
        !dcoll_kind_has(c->kind, DCOLL_KF_VEC) &&
        c->kind != DCOLL_COLL_SEND && c->kind != DCOLL_COLL_RECV)
        return DCOLL_SUCCESS;
    struct mpi_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a plan",
                           c->fn);
    p->w.type = MPI_DATATYPE_NULL;
    p->me = g->rank;
    /* A group whose timeouts return polls its blocking starts. */
    bool polled = g->timeout > 0 && g->recoverable;
    if (!blocking && !async && !both) {
        if (direct_make(p, g, c)) {
            p->call = call_of(c->kind);
            p->way.run = polled ? NULL : p->call;
            *state = p;
            return DCOLL_SUCCESS;
        }
        mpi_plan_free(p);
        return DCOLL_SUCCESS;
    }
    int nreq = requests_needed(g, c);
    p->w.reqs = nreq == 1 ? &p->w.one
                          : malloc(sizeof(MPI_Request) * (size_t)nreq);
    if (!p->w.reqs) {
        free(p);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a plan's "
                           "%d request(s)", c->fn, nreq);
    }
    for (int i = 0; i < nreq; i++)
        p->w.reqs[i] = MPI_REQUEST_NULL;
    p->w.nreq = nreq;
    struct post pp = {&p->w, 0, true};
    const char *call = "MPI";
    dcoll_status_t st = post(g, c, &pp, NULL, &call);
    p->w.nreq = pp.used;
    if (st) {
        mpi_plan_free(p);
        return st;
    }
    if (has_after(c)) {
        plan_after(&p->w, g, c);
    } else {
        p->w.avg_buf = NULL;
        p->w.move_bytes = 0;
    }
    p->blocking = blocking;
    p->async = async;
    /* Blocking starts make the blocking call from arguments found now,
     * start the request alone (one request, nothing after it), or try
     * both. */
    bool direct = (!blocking || both) && direct_make(p, g, c);
    bool started = p->w.nreq == 1 && p->w.reqs == &p->w.one &&
                   !p->w.avg_buf && !p->w.move_bytes &&
                   c->kind != DCOLL_COLL_RECV;
    if (direct)
        p->call = call_of(c->kind);
    if (polled)
        p->way.run = NULL;
    else if (both && direct && started)
        p->way.run = run_trial;
    else if (direct && !blocking)
        p->way.run = p->call;
    else if (blocking && started)
        p->way.run = run_started;
    *state = p;
    return DCOLL_SUCCESS;
}

static void plan_work_keep(struct dcoll_work *w)
{
    (void)w; /* the plan's own: freed with it */
}

/* The works of a plan's async starts: its requests, waited for as any
 * work's; the plan keeps them. */
static const struct dcoll_backend mpi_plan_works = {
    .name = "mpi",
    .tl = DCOLL_TL_MPI,
    .work_test = mpi_work_test,
    .work_wait = mpi_work_wait,
    .work_release = plan_work_keep,
};

/* A start mpi_plan_start's short path does not take: async, polled, or
 * on the general path. */
static __attribute__((noinline)) dcoll_status_t
plan_start_slow(struct dcoll_group *g, const struct dcoll_coll *c,
                struct mpi_plan *p, struct dcoll_work **work,
                struct dcoll_outcome *out)
{
    if (!(work ? p->async : p->blocking))
        return mpi_coll(g, c, work, out);
    struct mpi_work *w = &p->w;
    int rc = w->nreq == 1 ? MPI_Start(w->reqs)
                          : MPI_Startall(w->nreq, w->reqs);
    if (DCOLL_UNLIKELY(rc != MPI_SUCCESS))
        return dcoll_mpi_error(rc, "MPI_Start");
    if (work) {
        dcoll_work_init(&w->base, g, &mpi_plan_works);
        w->base.is_recv = c->kind == DCOLL_COLL_RECV;
        *work = &w->base;
        return DCOLL_SUCCESS;
    }
    dcoll_status_t st;
    if (g->timeout > 0 && g->recoverable) {
        struct dcoll_watch wt = watch_of(g, c, "MPI_Test (a plan's start)",
                                         out);
        st = dcoll_mpi_poll(g, &wt, w->nreq, w->reqs, &w->status);
    } else {
        rc = w->nreq == 1 ? MPI_Wait(w->reqs, &w->status)
                          : MPI_Waitall(w->nreq, w->reqs,
                                        MPI_STATUSES_IGNORE);
        st = rc == MPI_SUCCESS ? DCOLL_SUCCESS
                               : dcoll_mpi_error(rc, "MPI_Wait");
    }
    if (!st)
        run_after(w);
    return st;
}

/* A blocking start of the persistent request alone, waited for. */
static int run_started(struct dcoll_plan_run *q)
{
    struct mpi_plan *p = (struct mpi_plan *)q;
    int rc = MPI_Start(&p->w.one);
    return rc == MPI_SUCCESS ? MPI_Wait(&p->w.one, MPI_STATUS_IGNORE) : rc;
}

/* run_trial: a plan's first 4 runs of TRIAL_STARTS blocking starts make
 * MPI's blocking call, start the persistent request, then the blocking
 * call and the request again, timed this time: the first runs warm both
 * up (a plan's first calls pay for MPI's set-up, tens of us here, more
 * than the calls; a request's first starts build and grow its schedule,
 * 2 to 3 starts). A call's time is
 * the median of the intervals between the ends of its timed run's
 * starts, back to back as a time step's starts are (whatever the program
 * does between them is in each): a call alone is no measure, since what
 * a request's schedule leaves to do after its wait on one rank delays
 * the next call on the others (Open MPI's small persistent broadcast is
 * quick alone and 3 times the blocking call's time in a row, and some of
 * its starts are quick in a row too, which the shortest interval would
 * take); and the median, as a start the scheduler preempts takes 10 us
 * and more on a busy core, and the one after it often more than its
 * share, which would decide a sum. The request must be 5% faster to be
 * kept: a noisy run costs no more than that where the blocking call wins,
 * while a wrong pick of a request can cost 3 times the call. At the
 * last start the ranks take the call whose time was the shorter on the
 * slowest rank (an MPI_Allreduce MAX of the times, so every rank has the
 * same figures and choice: MPI matches a persistent collective only with
 * persistent ones), and the later starts make that call alone. Every
 * rank makes the same starts of a plan, so they try and decide in step.
 * Which call is faster depends on the MPI, the kind, the size and the
 * ranks (bench/README.md, "Plans"). */
#define TRIAL_STARTS 8    /* a run: each call's, twice */

static int run_trial(struct dcoll_plan_run *q)
{
    struct mpi_plan *p = (struct mpi_plan *)q;
    int run = p->tries / TRIAL_STARTS;   /* 0, 1: warming up; 2, 3: timed */
    int which = run % 2;                 /* 0: the blocking call, 1: the
                                            request */
    int rc = which ? run_started(q) : p->call(q);
    if (rc != MPI_SUCCESS)
        return rc;
    if (run >= 2)
        p->ends[which][p->tries % TRIAL_STARTS] = dcoll_now();
    if (++p->tries < 4 * TRIAL_STARTS)
        return MPI_SUCCESS;
    double took[2];
    for (int w = 0; w < 2; w++) {
        /* The median interval: insertion sort of the few there are. */
        double d[TRIAL_STARTS - 1];
        for (int i = 1; i < TRIAL_STARTS; i++) {
            double x = p->ends[w][i] - p->ends[w][i - 1];
            int k = i - 1;
            for (; k > 0 && d[k - 1] > x; k--)
                d[k] = d[k - 1];
            d[k] = x;
        }
        took[w] = d[(TRIAL_STARTS - 1) / 2];
    }
    rc = MPI_Allreduce(MPI_IN_PLACE, took, 2, MPI_DOUBLE, MPI_MAX, p->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    p->way.run = took[1] < 0.95 * took[0] ? run_started : p->call;
    return MPI_SUCCESS;
}

/* What the core calls for a blocking start, where nothing but the MPI
 * call is needed (lib/core/plan.c's quick start). */
static struct dcoll_plan_run *mpi_plan_quick(void *state)
{
    struct mpi_plan *p = state;
    return p->way.run ? &p->way : NULL;
}

static dcoll_status_t mpi_plan_failed(const void *state, int rc)
{
    (void)state;
    return dcoll_mpi_error(rc, "MPI (a plan's start)");
}

/* Every other start: async, polled, or on the general path. */
static dcoll_status_t mpi_plan_start(struct dcoll_group *g,
                                     const struct dcoll_coll *c, void *state,
                                     struct dcoll_work **work,
                                     struct dcoll_outcome *out)
{
    struct mpi_plan *p = state;
    if (!work && p->way.run) {
        int rc = p->way.run(&p->way);
        return rc == MPI_SUCCESS ? DCOLL_SUCCESS : mpi_plan_failed(p, rc);
    }
    return plan_start_slow(g, c, p, work, out);
}

const struct dcoll_backend dcoll_mpi_backend = {
    .name = "mpi",
    .tl = DCOLL_TL_MPI,
    .coll = mpi_coll,
    .work_test = mpi_work_test,
    .work_wait = mpi_work_wait,
    .work_release = mpi_work_release,
    .plan_make = mpi_plan_make,
    .plan_start = mpi_plan_start,
    .plan_quick = mpi_plan_quick,
    .plan_failed = mpi_plan_failed,
    .plan_free = mpi_plan_free,
};
