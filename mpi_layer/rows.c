/* Each kind's MPI mapping, one row a kind (struct dcoll_mpi_row): its
 * post (blocking, nonblocking or persistent), its blocking call straight
 * to MPI, its tuned ways, its plan's blocking call and what its MPI
 * calls read otherwise than dcoll's descriptor says. Counts above
 * INT_MAX become derived types, or chunks for reductions (MPI's built-in
 * ops take built-in types only). A new kind is a row here; a kind
 * without one is declined, never run as another. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "calls.h"

#define CALL(rq, B, NB) ((rq) ? (NB) : (B))
#define CHUNK DCOLL_MPI_CHUNK

static int len_at(int64_t count, int64_t off)
{
    if (count <= INT_MAX)
        return (int)count;
    return (int)(count - off < CHUNK ? count - off : CHUNK);
}

/* ---- posts ---- */

/* all_reduce and reduce, in chunks of at most CHUNK elements. */
static int post_reduce(struct dcoll_mpi_post *p, const struct dcoll_group *g,
                       const struct dcoll_coll *c, MPI_Comm comm,
                       MPI_Status *status, const char **call)
{
    (void)status;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    MPI_Datatype dt = dcoll_mpi_type(c);
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    bool all = c->kind == DCOLL_COLL_ALL_REDUCE;
    bool has_out = all || g->rank == c->root;
    const char *s = c->sendbuf;
    char *r = c->recvbuf;
    int64_t off = 0;
    int rc = MPI_SUCCESS;
    *call = all ? (p->w ? "MPI_Iallreduce" : "MPI_Allreduce")
                : (p->w ? "MPI_Ireduce" : "MPI_Reduce");
    do {
        int len = len_at(c->count, off);
        const void *in = (c->in_place && has_out) ? MPI_IN_PLACE
                                                  : s + (size_t)off * esz;
        void *out = has_out ? r + (size_t)off * esz : NULL;
        MPI_Request *rq = dcoll_mpi_slot(p);
        if (all)
            rc = CALL(rq, MPI_Allreduce(in, out, len, dt, op, comm),
                      DCOLL_NB(p->persist, MPI_Iallreduce, Allreduce, rq,
                               in, out, len, dt, op, comm));
        else
            rc = CALL(rq, dcoll_mpi_reduce(in, out, len, dt, op, c->root,
                                           comm),
                      DCOLL_NB(p->persist, MPI_Ireduce, Reduce, rq,
                               in, out, len, dt, op, c->root, comm));
        off += len;
    } while (rc == MPI_SUCCESS && off < c->count);
    return rc;
}

/* scan and exscan, in chunks of at most CHUNK elements (elementwise: a
 * chunk's prefix is its elements' own). */
static int post_scan(struct dcoll_mpi_post *p, const struct dcoll_group *g,
                     const struct dcoll_coll *c, MPI_Comm comm,
                     MPI_Status *status, const char **call)
{
    (void)g, (void)status;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    MPI_Datatype dt = dcoll_mpi_type(c);
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    bool ex = c->kind == DCOLL_COLL_EXSCAN;
    int64_t off = 0;
    int rc = MPI_SUCCESS;
    *call = ex ? (p->w ? "MPI_Iexscan" : "MPI_Exscan")
               : (p->w ? "MPI_Iscan" : "MPI_Scan");
    do {
        int len = len_at(c->count, off);
        const void *in = c->in_place ? MPI_IN_PLACE
                                     : (const char *)c->sendbuf +
                                           (size_t)off * esz;
        void *out = (char *)c->recvbuf + (size_t)off * esz;
        MPI_Request *rq = dcoll_mpi_slot(p);
        if (ex)
            rc = CALL(rq, MPI_Exscan(in, out, len, dt, op, comm),
                      DCOLL_NB(p->persist, MPI_Iexscan, Exscan, rq, in, out,
                               len, dt, op, comm));
        else
            rc = CALL(rq, MPI_Scan(in, out, len, dt, op, comm),
                      DCOLL_NB(p->persist, MPI_Iscan, Scan, rq, in, out, len,
                               dt, op, comm));
        off += len;
    } while (rc == MPI_SUCCESS && off < c->count);
    return rc;
}

/* A broadcast above INT_MAX elements goes in chunks: MPICH 4.0.2 fails an
 * MPI_Ibcast of one such derived type when MPI_Test drives it. */
static int post_bcast(struct dcoll_mpi_post *p, const struct dcoll_group *g,
                      const struct dcoll_coll *c, MPI_Comm comm,
                      MPI_Status *status, const char **call)
{
    (void)g, (void)status;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    MPI_Datatype dt = dcoll_mpi_type(c);
    int rc = MPI_SUCCESS;
    *call = p->w ? "MPI_Ibcast" : "MPI_Bcast";
    int64_t off = 0;
    do {
        int len = len_at(c->count, off);
        void *b = (char *)c->recvbuf + (size_t)off * esz;
        MPI_Request *rq = dcoll_mpi_slot(p);
        rc = CALL(rq, MPI_Bcast(b, len, dt, c->root, comm),
                  DCOLL_NB(p->persist, MPI_Ibcast, Bcast, rq,
                           b, len, dt, c->root, comm));
        off += len;
    } while (rc == MPI_SUCCESS && off < c->count);
    return rc;
}

/* reduce_scatter. MPI's in-place form leaves the result at the front of
 * the buffer, dcoll's (NCCL's) at rank * count: the block moves after. */
static int post_reduce_scatter(struct dcoll_mpi_post *p,
                               const struct dcoll_group *g,
                               const struct dcoll_coll *c, MPI_Comm comm,
                               MPI_Status *status, const char **call)
{
    (void)status;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    size_t block = (size_t)c->count * esz;
    MPI_Datatype dt = dcoll_mpi_type(c);
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    char *whole = (char *)c->sendbuf;
    int rc = MPI_SUCCESS;

    if (c->count <= INT_MAX) {
        MPI_Request *rq = dcoll_mpi_slot(p);
        const void *in = c->in_place ? MPI_IN_PLACE : c->sendbuf;
        void *out = c->in_place ? whole : c->recvbuf;
        int n = (int)c->count;
        *call = rq ? "MPI_Ireduce_scatter_block" : "MPI_Reduce_scatter_block";
        return CALL(rq, MPI_Reduce_scatter_block(in, out, n, dt, op, comm),
                    DCOLL_NB(p->persist, MPI_Ireduce_scatter_block,
                             Reduce_scatter_block, rq, in, out, n, dt, op,
                             comm));
    }
    /* Too big for one call: a reduce per rank and chunk, rooted there. */
    *call = p->w ? "MPI_Ireduce" : "MPI_Reduce";
    for (int root = 0; root < g->size && rc == MPI_SUCCESS; root++) {
        for (int64_t off = 0; off < c->count && rc == MPI_SUCCESS;) {
            int len = len_at(c->count, off);
            bool mine = root == g->rank;
            const char *src = whole + root * block + (size_t)off * esz;
            const void *in = mine && c->in_place ? MPI_IN_PLACE : src;
            void *out = mine ? (char *)c->recvbuf + (size_t)off * esz : NULL;
            MPI_Request *rq = dcoll_mpi_slot(p);
            rc = CALL(rq, dcoll_mpi_reduce(in, out, len, dt, op, root, comm),
                      DCOLL_NB(p->persist, MPI_Ireduce, Reduce, rq,
                               in, out, len, dt, op, root, comm));
            off += len;
        }
    }
    return rc;
}

/* A count MPI can take: n itself, or 1 of a big derived type. */
struct span {
    int n;
    MPI_Datatype type;
    bool derived;
};

static int span_make(const struct dcoll_coll *c, MPI_Datatype t,
                     struct span *s, const char **call)
{
    int64_t n = c->count;
    if (DCOLL_UNLIKELY(c->layout != NULL)) {
        s->derived = true;
        s->n = 1;
        *call = "MPI_Type_vector (a strided layout)";
        return dcoll_mpi_layout_type(c->layout, t, &s->type);
    }
    s->derived = n > INT_MAX;
    if (!s->derived) {
        s->n = (int)n;
        s->type = t;
        return MPI_SUCCESS;
    }
    s->n = 1;
    *call = "MPI_Type_create_struct (count above INT_MAX)";
    return dcoll_mpi_big_type(n, t, &s->type);
}

/* MPI lets a type go while requests use it, but MPICH 4.0.2 then fails
 * them (MPI_Ibcast: "Invalid communicator"): a work keeps its type. */
static void span_free(struct dcoll_mpi_post *p, struct span *s)
{
    if (s->derived && p->w)
        p->w->type = s->type;
    else if (s->derived)
        MPI_Type_free(&s->type);
}

/* The kinds of one call, with a derived type for big counts: s and r are
 * the send and receive sides (MPI_IN_PLACE on the send side where c is
 * in place), n and t the count and type, rq the request or NULL. */
#define POST_ONE(name, b_name, nb_name, blocking, nonblocking)              \
    static int post_##name(struct dcoll_mpi_post *p,                       \
                           const struct dcoll_group *g,                    \
                           const struct dcoll_coll *c, MPI_Comm comm,      \
                           MPI_Status *status, const char **call)          \
    {                                                                      \
        struct span sp;                                                    \
        int rc = span_make(c, dcoll_mpi_type(c), &sp, call);               \
        if (rc != MPI_SUCCESS)                                             \
            return rc;                                                     \
        MPI_Request *rq = dcoll_mpi_slot(p);                               \
        const void *s = c->in_place ? MPI_IN_PLACE : c->sendbuf;           \
        void *r = c->recvbuf;                                              \
        if (DCOLL_UNLIKELY(c->layout != NULL)) {                           \
            size_t at = (size_t)c->layout->offset *                        \
                        dcoll_dtype_sizes[c->dtype];                       \
            s = s ? (const char *)s + at : s;                              \
            r = r ? (char *)r + at : r;                                    \
        }                                                                  \
        int n = sp.n;                                                      \
        MPI_Datatype t = sp.type;                                          \
        (void)g, (void)status, (void)s, (void)r, (void)n, (void)t;         \
        *call = rq ? nb_name : b_name;                                     \
        rc = CALL(rq, blocking, nonblocking);                              \
        span_free(p, &sp);                                                 \
        return rc;                                                         \
    }
POST_ONE(all_gather, "MPI_Allgather", "MPI_Iallgather",
         MPI_Allgather(s, n, t, r, n, t, comm),
         DCOLL_NB(p->persist, MPI_Iallgather, Allgather, rq,
                  s, n, t, r, n, t, comm))
POST_ONE(gather, "MPI_Gather", "MPI_Igather",
         MPI_Gather(s, n, t, r, n, t, c->root, comm),
         DCOLL_NB(p->persist, MPI_Igather, Gather, rq,
                  s, n, t, r, n, t, c->root, comm))
/* MPI's in-place scatter marks the receive side instead. */
POST_ONE(scatter, "MPI_Scatter", "MPI_Iscatter",
         MPI_Scatter(c->sendbuf, n, t, c->in_place ? MPI_IN_PLACE : r, n, t,
                     c->root, comm),
         DCOLL_NB(p->persist, MPI_Iscatter, Scatter, rq, c->sendbuf, n, t,
                  c->in_place ? MPI_IN_PLACE : r, n, t, c->root, comm))
POST_ONE(all_to_all, "MPI_Alltoall", "MPI_Ialltoall",
         MPI_Alltoall(s, n, t, r, n, t, comm),
         DCOLL_NB(p->persist, MPI_Ialltoall, Alltoall, rq,
                  s, n, t, r, n, t, comm))
POST_ONE(barrier, "MPI_Barrier", "MPI_Ibarrier", MPI_Barrier(comm),
         DCOLL_NB(p->persist, MPI_Ibarrier, Barrier, rq, comm))
POST_ONE(send, "MPI_Send", "MPI_Isend",
         MPI_Send(s, n, t, c->root, c->tag, comm),
         (p->persist ? MPI_Send_init : MPI_Isend)(s, n, t, c->root, c->tag,
                                                  comm, rq))
POST_ONE(recv, "MPI_Recv", "MPI_Irecv",
         MPI_Recv(r, n, t, c->root == DCOLL_ANY_SOURCE ? MPI_ANY_SOURCE
                                                       : c->root,
                  c->tag, comm, status),
         (p->persist ? MPI_Recv_init : MPI_Irecv)(
             r, n, t, c->root == DCOLL_ANY_SOURCE ? MPI_ANY_SOURCE : c->root,
             c->tag, comm, rq))
#undef POST_ONE

/* ---- blocking calls straight to MPI ---- */

#define DIRECT(name, call_name, ...)                                        \
    static int direct_##name(const struct dcoll_coll *c, MPI_Comm comm,    \
                             int me, const char **call)                    \
    {                                                                      \
        int n = (int)c->count;                                             \
        MPI_Datatype t = dcoll_mpi_type(c);                        \
        const void *s = c->in_place ? MPI_IN_PLACE : c->sendbuf;           \
        void *r = c->recvbuf;                                              \
        (void)me, (void)n, (void)t, (void)s, (void)r;                      \
        *call = call_name;                                                 \
        return __VA_ARGS__;                                                \
    }
DIRECT(all_reduce, "MPI_Allreduce",
       MPI_Allreduce(s, r, n, t, dcoll_mpi_op(c->dtype, c->op), comm))
/* Off the root, an in-place call's input is its buffer. */
DIRECT(reduce, "MPI_Reduce",
       dcoll_mpi_reduce(me == c->root ? s : c->sendbuf,
                        me == c->root ? r : NULL, n, t,
                        dcoll_mpi_op(c->dtype, c->op), c->root, comm))
DIRECT(broadcast, "MPI_Bcast", MPI_Bcast(r, n, t, c->root, comm))
DIRECT(all_gather, "MPI_Allgather", MPI_Allgather(s, n, t, r, n, t, comm))
DIRECT(gather, "MPI_Gather", MPI_Gather(s, n, t, r, n, t, c->root, comm))
DIRECT(scatter, "MPI_Scatter",
       MPI_Scatter(c->sendbuf, n, t, c->in_place ? MPI_IN_PLACE : r, n, t,
                   c->root, comm))
DIRECT(all_to_all, "MPI_Alltoall", MPI_Alltoall(s, n, t, r, n, t, comm))
/* In place, MPI leaves the block at the front: the general path moves
 * it. */
DIRECT(reduce_scatter, "MPI_Reduce_scatter_block",
       c->in_place ? -1
                   : MPI_Reduce_scatter_block(s, r, n, t,
                                              dcoll_mpi_op(c->dtype, c->op),
                                              comm))
DIRECT(barrier, "MPI_Barrier", MPI_Barrier(comm))
DIRECT(scan, "MPI_Scan",
       MPI_Scan(s, r, n, t, dcoll_mpi_op(c->dtype, c->op), comm))
DIRECT(exscan, "MPI_Exscan",
       MPI_Exscan(s, r, n, t, dcoll_mpi_op(c->dtype, c->op), comm))
#undef DIRECT

/* ---- a tuning table's ways (compose.c) ---- */

static int tuned_all_reduce(enum dcoll_way way, const struct dcoll_mpi_args *a,
                            const struct dcoll_coll *c, size_t esz)
{
    return dcoll_compose_all_reduce(way, a->in, c->recvbuf, a->n, a->t, esz,
                                    a->op, a->comm, a->me, a->size);
}

static int tuned_reduce_scatter(enum dcoll_way way,
                                const struct dcoll_mpi_args *a,
                                const struct dcoll_coll *c, size_t esz)
{
    return dcoll_compose_reduce_scatter(way, c->sendbuf, c->recvbuf, a->n,
                                        a->t, esz, a->op, a->comm, a->me,
                                        a->size);
}

static int tuned_broadcast(enum dcoll_way way, const struct dcoll_mpi_args *a,
                           const struct dcoll_coll *c, size_t esz)
{
    return dcoll_compose_broadcast(way, c->recvbuf, a->n, a->t, esz, c->root,
                                   a->comm, a->me, a->size);
}

static int tuned_reduce(enum dcoll_way way, const struct dcoll_mpi_args *a,
                        const struct dcoll_coll *c, size_t esz)
{
    /* Off the root, an in-place call's input is its buffer. */
    return dcoll_compose_reduce(way, a->me == c->root ? a->in : c->sendbuf,
                                c->recvbuf, a->n, a->t, esz, a->op, c->root,
                                a->comm, a->me, a->size);
}

static int tuned_all_gather(enum dcoll_way way, const struct dcoll_mpi_args *a,
                            const struct dcoll_coll *c, size_t esz)
{
    return dcoll_compose_all_gather(way, a->in, c->recvbuf, a->n, a->t, esz,
                                    a->comm, a->me, a->size);
}

/* ---- a plan's blocking calls, from the arguments found at plan time ---- */

#define BLOCKING(name, ...)                                                 \
    static int call_##name(struct dcoll_plan_run *q)                       \
    {                                                                      \
        const struct dcoll_mpi_args *p = (const struct dcoll_mpi_args *)q; \
        const int *v = p->v, size = p->size;                               \
        bool root = p->me == p->root;                                      \
        (void)v, (void)size, (void)root;                                   \
        return __VA_ARGS__;                                                \
    }
BLOCKING(all_reduce, MPI_Allreduce(p->in, p->out, p->n, p->t, p->op, p->comm))
BLOCKING(reduce, MPI_Reduce(p->in, p->out, p->n, p->t, p->op, p->root,
                            p->comm))
BLOCKING(broadcast, MPI_Bcast(p->out, p->n, p->t, p->root, p->comm))
BLOCKING(all_gather, MPI_Allgather(p->in, p->n, p->t, p->out, p->n, p->t,
                                   p->comm))
BLOCKING(gather, MPI_Gather(p->in, p->n, p->t, p->out, p->n, p->t, p->root,
                            p->comm))
BLOCKING(scatter, MPI_Scatter(p->in, p->n, p->t, p->out, p->n, p->t, p->root,
                              p->comm))
BLOCKING(reduce_scatter, MPI_Reduce_scatter_block(p->in, p->out, p->n, p->t,
                                                  p->op, p->comm))
BLOCKING(all_to_all, MPI_Alltoall(p->in, p->n, p->t, p->out, p->n, p->t,
                                  p->comm))
BLOCKING(barrier, MPI_Barrier(p->comm))
BLOCKING(send, MPI_Send(p->in, p->n, p->t, p->root, p->tag, p->comm))
BLOCKING(recv, MPI_Recv(p->out, p->n, p->t, p->root, p->tag, p->comm,
                        MPI_STATUS_IGNORE))
BLOCKING(all_gatherv, MPI_Allgatherv(p->in, p->n, p->t, p->out, v, v + size,
                                     p->t, p->comm))
BLOCKING(gatherv, MPI_Gatherv(p->in, p->n, p->t, p->out, root ? v : NULL,
                              root ? v + size : NULL, p->t, p->root, p->comm))
BLOCKING(scatterv, MPI_Scatterv(p->in, root ? v : NULL, root ? v + size : NULL,
                                p->t, p->out, p->n, p->t, p->root, p->comm))
BLOCKING(all_to_allv, MPI_Alltoallv(p->in, v, v + size, p->t, p->out,
                                    v + 2 * size, v + 3 * size, p->t,
                                    p->comm))
BLOCKING(reduce_scatterv, MPI_Reduce_scatter(p->in, p->out, v, p->t, p->op,
                                             p->comm))
BLOCKING(scan, MPI_Scan(p->in, p->out, p->n, p->t, p->op, p->comm))
BLOCKING(exscan, MPI_Exscan(p->in, p->out, p->n, p->t, p->op, p->comm))
BLOCKING(neighbor_all_gather,
         p->gaps ? MPI_Neighbor_allgatherv(p->in, p->n, p->t, p->out,
                                           v + 2 * p->nout,
                                           v + 2 * p->nout + p->nin, p->t,
                                           p->comm)
                 : MPI_Neighbor_allgather(p->in, p->n, p->t, p->out, p->n,
                                          p->t, p->comm))
BLOCKING(neighbor_all_to_allw,
         MPI_Neighbor_alltoallw(p->in, p->nbw->cnt, p->nbw->disp,
                                p->nbw->type, p->out, p->nbw->cnt + p->nout,
                                p->nbw->disp + p->nout,
                                p->nbw->type + p->nout, p->comm))
BLOCKING(neighbor_all_to_allv,
         MPI_Neighbor_alltoallv(p->in, v, v + p->nout, p->t, p->out,
                                v + 2 * p->nout, v + 2 * p->nout + p->nin,
                                p->t, p->comm))
#undef BLOCKING

/* ---- where a plan's call reads its arguments otherwise ---- */

static bool args_reduce(struct dcoll_mpi_args *a, const struct dcoll_coll *c)
{
#ifdef MPICH
    /* dcoll_mpi_reduce mends MPICH's in-place root off 0 at each call. */
    if (c->in_place && c->root != 0)
        return false;
#endif
    if (a->me != c->root) {
        a->in = c->sendbuf;
        a->out = NULL;
    }
    return true;
}

/* MPI's in-place scatter(v) marks the receive side. */
static bool args_scatter(struct dcoll_mpi_args *a, const struct dcoll_coll *c)
{
    a->in = c->sendbuf;
    if (c->in_place)
        a->out = MPI_IN_PLACE;
    return true;
}

static bool args_send(struct dcoll_mpi_args *a, const struct dcoll_coll *c)
{
    if (!c->layout)   /* a strided send's is at its offset already */
        a->in = c->sendbuf;
    return true;
}

static bool args_all_gatherv(struct dcoll_mpi_args *a,
                             const struct dcoll_coll *c)
{
    (void)a;
#ifdef MPICH
    /* vector.c copies this rank's block before each call. */
    return c->in_place || !c->displs;
#else
    (void)c;
    return true;
#endif
}

/* all_to_allv's in-place send side is ignored by MPI, but must be
 * valid: the receive side's. */
static bool args_all_to_allv(struct dcoll_mpi_args *a,
                             const struct dcoll_coll *c)
{
    if (c->in_place)
        memcpy(a->v, a->v + 2 * a->size, sizeof(int) * 2 * (size_t)a->size);
    return true;
}

/* A neighbourhood's call: its int arrays, found once. */
static bool args_neighbor(struct dcoll_mpi_args *a,
                          const struct dcoll_coll *c)
{
    a->nin = c->nbh->nin;
    a->nout = c->nbh->nout;
    a->gaps = c->nbh->nin != c->nbh->indeg;
    if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW)
        return a->nbw || (a->nbw = dcoll_mpi_nbw_make(c)) != NULL;
    if (!a->v) {
        size_t len = dcoll_mpi_nbh_ints_len(c);
        if (!(a->v = malloc(sizeof(int) * (len ? len : 1))))
            return false;
        dcoll_mpi_nbh_ints(c, a->v);
    }
    return true;
}

/* ---- what persistent requests cannot hold ---- */

/* reduce_scatter above INT_MAX: a reduce per rank and chunk. */
static bool persist_reduce_scatter(const struct dcoll_coll *c)
{
    return DCOLL_MPI_PCOLL && c->count <= INT_MAX;
}

#ifdef MPICH
/* MPICH 4.0.2's persistent gather, scatter and all_gather give wrong
 * results: MPI_Gather_init gathers garbage (a 15-line program shows it,
 * on 1 rank too), MPI_Allgather_init repeats its first start's data,
 * MPI_Scatter_init fails its second start ("Invalid communicator").
 * test_plan under DCOLL_PLAN_CALLS=persistent finds each. */
static bool persist_never(const struct dcoll_coll *c)
{
    (void)c;
    return false;
}
#define PERSIST_MPICH_BROKEN persist_never
/* all_gatherv's copy of its own block before each call. */
static bool persist_all_gatherv(const struct dcoll_coll *c)
{
    return DCOLL_MPI_PCOLL && (c->in_place || !c->displs);
}
#define PERSIST_ALL_GATHERV persist_all_gatherv
#else
#define PERSIST_MPICH_BROKEN NULL
#define PERSIST_ALL_GATHERV NULL
#endif
#if DCOLL_MPI_PCOLL == 1
/* Below, MPI 4's MPI_*_init starts took longer than the blocking calls
 * (MPICH 4.0: reduce 0.40 against 0.35 us at 8 B, 2 ranks). */
#define PERSIST_FROM 4096
#else
#define PERSIST_FROM 0
#endif

/* Point-to-point has persistent requests in every MPI. */
static bool persist_p2p(const struct dcoll_coll *c)
{
    (void)c;
    return true;
}

const struct dcoll_mpi_row dcoll_mpi_rows[DCOLL_COLL_KIND_COUNT_] = {
    [DCOLL_COLL_BROADCAST] = {
        .post = post_bcast,
        .requests = DCOLL_MPI_REQ_CHUNKS,
        .direct = direct_broadcast,
        .tuned = tuned_broadcast,
        .plan_call = call_broadcast,
    },
    [DCOLL_COLL_ALL_REDUCE] = {
        .post = post_reduce,
        .requests = DCOLL_MPI_REQ_CHUNKS,
        .direct = direct_all_reduce,
        .tuned = tuned_all_reduce,
        .plan_call = call_all_reduce,
        .avg = 1,
    },
    [DCOLL_COLL_REDUCE] = {
        .post = post_reduce,
        .requests = DCOLL_MPI_REQ_CHUNKS,
        .direct = direct_reduce,
        .tuned = tuned_reduce,
        .plan_call = call_reduce,
        .plan_args = args_reduce,
        .persist_from = PERSIST_FROM,
        .avg = 2,
    },
    [DCOLL_COLL_ALL_GATHER] = {
        .post = post_all_gather,
        .direct = direct_all_gather,
        .tuned = tuned_all_gather,
        .plan_call = call_all_gather,
        .can_persist = PERSIST_MPICH_BROKEN,
    },
    [DCOLL_COLL_GATHER] = {
        .post = post_gather,
        .direct = direct_gather,
        .plan_call = call_gather,
        .can_persist = PERSIST_MPICH_BROKEN,
    },
    [DCOLL_COLL_SCATTER] = {
        .post = post_scatter,
        .direct = direct_scatter,
        .plan_call = call_scatter,
        .plan_args = args_scatter,
        .can_persist = PERSIST_MPICH_BROKEN,
    },
    [DCOLL_COLL_REDUCE_SCATTER] = {
        .post = post_reduce_scatter,
        .requests = DCOLL_MPI_REQ_CHUNKS_RANKS,
        .direct = direct_reduce_scatter,
        .tuned = tuned_reduce_scatter,
        .tuned_not_in_place = true,
        .plan_call = call_reduce_scatter,
        .can_persist = persist_reduce_scatter,
        .avg = 1,
        .moves = true,
    },
    [DCOLL_COLL_ALL_TO_ALL] = {
        .post = post_all_to_all,
        .direct = direct_all_to_all,
        .plan_call = call_all_to_all,
    },
    [DCOLL_COLL_BARRIER] = {
        .post = post_barrier,
        .direct = direct_barrier,
        .plan_call = call_barrier,
    },
    [DCOLL_COLL_SEND] = {
        .post = post_send,
        .tagged = true,
        .plan_call = call_send,
        .plan_args = args_send,
        .can_persist = persist_p2p,
    },
    [DCOLL_COLL_RECV] = {
        .post = post_recv,
        .tagged = true,
        .plan_call = call_recv,
        .can_persist = persist_p2p,
    },
    [DCOLL_COLL_ALL_GATHERV] = {
        .post = dcoll_mpi_post_allgatherv,
        .plan_call = call_all_gatherv,
        .plan_args = args_all_gatherv,
        .can_persist = PERSIST_ALL_GATHERV,
    },
    [DCOLL_COLL_GATHERV] = {
        .post = dcoll_mpi_post_gatherv,
        .plan_call = call_gatherv,
        .persist_from = PERSIST_FROM,
    },
    [DCOLL_COLL_SCATTERV] = {
        .post = dcoll_mpi_post_scatterv,
        .plan_call = call_scatterv,
        .plan_args = args_scatter,
        .persist_from = PERSIST_FROM,
    },
    [DCOLL_COLL_ALL_TO_ALLV] = {
        .post = dcoll_mpi_post_alltoallv,
        .plan_call = call_all_to_allv,
        .plan_args = args_all_to_allv,
    },
    [DCOLL_COLL_REDUCE_SCATTERV] = {
        .post = dcoll_mpi_post_reduce_scatterv,
        .plan_call = call_reduce_scatterv,
        .avg = 1,
        .moves = true,
    },
    [DCOLL_COLL_SCAN] = {
        .post = post_scan,
        .requests = DCOLL_MPI_REQ_CHUNKS,
        .direct = direct_scan,
        .plan_call = call_scan,
        .avg = DCOLL_MPI_AVG_PREFIX,
    },
    [DCOLL_COLL_EXSCAN] = {
        .post = post_scan,
        .requests = DCOLL_MPI_REQ_CHUNKS,
        .direct = direct_exscan,
        .plan_call = call_exscan,
        .avg = DCOLL_MPI_AVG_PREFIX,
    },
    [DCOLL_COLL_NEIGHBOR_ALL_GATHER] = {
        .post = dcoll_mpi_post_nbh,
        .plan_call = call_neighbor_all_gather,
        .plan_args = args_neighbor,
    },
    [DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV] = {
        .post = dcoll_mpi_post_nbh,
        .plan_call = call_neighbor_all_to_allv,
        .plan_args = args_neighbor,
    },
    [DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW] = {
        .post = dcoll_mpi_post_nbh,
        .plan_call = call_neighbor_all_to_allw,
        .plan_args = args_neighbor,
    },
};
