/* The MPI transport's collectives, inside the layer: the per-kind table
 * (rows.c), the works its async calls make (work.c), its plans (plan.c)
 * and the blocking and async paths that read the table
 * (collectives.c). */
#ifndef DCOLL_MPI_CALLS_H
#define DCOLL_MPI_CALLS_H

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "mpi_internal.h"

#define DCOLL_MPI_CHUNK (INT64_C(1) << 30) /* elements per reduction call */

struct dcoll_mpi_work {
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
    struct dcoll_mpi_nbw *nbw;  /* a neighbourhood w call's arrays */
    MPI_Datatype type;          /* a big count's derived type */
    MPI_Request one;
};

/* Post state: blocking (w NULL) or filling w->reqs, with the
 * nonblocking calls or, for a plan (persist), their persistent forms. */
struct dcoll_mpi_post {
    struct dcoll_mpi_work *w;
    int used;
    bool persist;
};

static inline MPI_Request *dcoll_mpi_slot(struct dcoll_mpi_post *p)
{
    return p->w ? &p->w->reqs[p->used++] : NULL;
}

/* The arguments of a plan's blocking call, found once at plan time; what
 * a plan's state begins with (plan.c), so that a row's call reads them
 * from the core's struct dcoll_plan_run. */
struct dcoll_mpi_args {
    struct dcoll_plan_run way;
    int me, size;
    const void *in;
    void *out;
    int n, root, tag;
    MPI_Datatype t;
    MPI_Op op;
    MPI_Comm comm;
    int *v;              /* vector kinds: counts and displacements */
    int nin, nout;       /* neighbourhood kinds: v's entries a side */
    bool gaps;           /* a neighbourhood's all_gather in the v form */
    struct dcoll_mpi_nbw *nbw;  /* the w form's arrays */
};

/* How many requests a row's post fills: one, one per chunk of
 * DCOLL_MPI_CHUNK elements, or (reduce_scatter above INT_MAX) one per
 * chunk and rank. */
enum dcoll_mpi_reqs { DCOLL_MPI_REQ_ONE, DCOLL_MPI_REQ_CHUNKS,
                      DCOLL_MPI_REQ_CHUNKS_RANKS };

/* One kind's MPI mapping, a row of dcoll_mpi_rows. A kind without a row
 * (post NULL) is one this transport declines; no other field is read
 * then, and no other kind's call ever runs for it. */
struct dcoll_mpi_row {
    /* Post c: blocking where p->w is NULL, else into p->w's requests
     * (dcoll_mpi_slot). MPI's code; *call names the MPI call. */
    int (*post)(struct dcoll_mpi_post *p, const struct dcoll_group *g,
                const struct dcoll_coll *c, MPI_Comm comm,
                MPI_Status *status, const char **call);
    /* How many requests post fills (dcoll_mpi_requests). */
    enum dcoll_mpi_reqs requests;
    /* The common blocking call, straight to MPI, for a count of at most
     * INT_MAX and an op other than AVG: MPI's code, or -1 where the
     * general path (post) is needed. NULL: always the general path. */
    int (*direct)(const struct dcoll_coll *c, MPI_Comm comm, int me,
                  const char **call);
    /* A blocking call a tuning table may give another way (compose.c),
     * from the way and the call's MPI arguments; NULL: no ways. */
    int (*tuned)(enum dcoll_way way, const struct dcoll_mpi_args *a,
                 const struct dcoll_coll *c, size_t esz);
    bool tuned_not_in_place;  /* its ways take no in-place call */
    /* A plan's blocking start as MPI's blocking call, from the arguments
     * found at plan time. */
    int (*plan_call)(struct dcoll_plan_run *q);
    /* Mend the plan's arguments where this kind's MPI call reads them
     * otherwise (the root's side, MPI_IN_PLACE on the receive side);
     * false where the blocking call cannot be made from them as they are
     * (MPICH's own mends run at each call). NULL: as given. */
    bool (*plan_args)(struct dcoll_mpi_args *a, const struct dcoll_coll *c);
    /* Whether MPI's persistent requests can hold a plan of c; NULL: yes
     * where this MPI has persistent collectives. */
    bool (*can_persist)(const struct dcoll_coll *c);
    /* Bytes per rank from which this MPI's persistent start beats its
     * blocking call (MPICH: bench/README.md, "Plans"). */
    int64_t persist_from;
    /* What follows the transfer: AVG's division (1 on every rank, 2 on
     * the root alone, DCOLL_MPI_AVG_PREFIX by the inputs each rank's
     * result holds), the in-place block's move from the front. */
    unsigned char avg;
    bool moves;
    bool tagged;     /* a peer call: its tag must be within MPI_TAG_UB */
};

#define DCOLL_MPI_AVG_PREFIX 3

extern const struct dcoll_mpi_row dcoll_mpi_rows[DCOLL_COLL_KIND_COUNT_];

static inline int dcoll_mpi_requests(const struct dcoll_mpi_row *row,
                                     const struct dcoll_group *g,
                                     const struct dcoll_coll *c)
{
    if (DCOLL_LIKELY(c->count <= INT_MAX) ||
        row->requests == DCOLL_MPI_REQ_ONE)
        return 1;
    int n = (int)((c->count + DCOLL_MPI_CHUNK - 1) / DCOLL_MPI_CHUNK);
    return row->requests == DCOLL_MPI_REQ_CHUNKS ? n : n * g->size;
}

/* vector.c: each vector kind's post, as a row's post. */
#define DCOLL_MPI_VEC_POST(name)                                            \
    int dcoll_mpi_post_##name(struct dcoll_mpi_post *p,                    \
                              const struct dcoll_group *g,                 \
                              const struct dcoll_coll *c, MPI_Comm comm,   \
                              MPI_Status *status, const char **call)
DCOLL_MPI_VEC_POST(allgatherv);
DCOLL_MPI_VEC_POST(gatherv);
DCOLL_MPI_VEC_POST(scatterv);
DCOLL_MPI_VEC_POST(alltoallv);
DCOLL_MPI_VEC_POST(reduce_scatterv);
/* neighbor.c: the neighbourhood kinds' post (a row's post); their
 * communicator; the int counts and displacements MPI reads (the send
 * side's real entries' counts and displacements, then the receive
 * side's), and how many. */
DCOLL_MPI_VEC_POST(nbh);
/* A neighbourhood w call's arrays as MPI_Neighbor_alltoallw reads them:
 * the send side's real entries, then the receive side's (counts 1, or 0
 * for a layout that picks nothing; byte displacements; vector types,
 * which nbw_free frees). NULL: no memory, or MPI refused a type. */
struct dcoll_mpi_nbw {
    int *cnt;
    MPI_Aint *disp;
    MPI_Datatype *type;
    int n;
    _Atomic int refs;      /* each holder: the cache, a call, a work */
    dcoll_dtype_t dtype;   /* what they were made from: the key of */
    dcoll_layout_t *key;   /* the cache (outdegree + indegree layouts) */
};
/* The arrays for c: the neighbourhood's cached ones where c's layouts and
 * type are theirs, else new ones, cached; one reference the caller's. */
struct dcoll_mpi_nbw *dcoll_mpi_nbw_make(const struct dcoll_coll *c);
/* Give back a reference; the last frees the types. NULL: nothing. */
void dcoll_mpi_nbw_free(struct dcoll_mpi_nbw *w);
MPI_Comm dcoll_mpi_nbh_comm(const struct dcoll_coll *c);
size_t dcoll_mpi_nbh_ints_len(const struct dcoll_coll *c);
void dcoll_mpi_nbh_ints(const struct dcoll_coll *c, int *v);
/* The communicator c runs on: its neighbourhood's, or its group's. */
static inline MPI_Comm dcoll_mpi_comm_for(const struct dcoll_group *g,
                                          const struct dcoll_coll *c)
{
    return DCOLL_UNLIKELY(c->nbh != NULL) ? dcoll_mpi_nbh_comm(c)
                                          : dcoll_mpi_comm_of(g);
}
/* n counts and displacements (packed where displs is NULL) as ints, into
 * cnt and dsp. */
void dcoll_mpi_ints(const int64_t *counts, const int64_t *displs, int n,
                    int *cnt, int *dsp);

/* collectives.c: post c on g (the row's post, with the checks and clean
 * up around it), and what follows the transfer. */
dcoll_status_t dcoll_mpi_post(struct dcoll_group *g,
                              const struct dcoll_coll *c,
                              struct dcoll_mpi_post *p, MPI_Status *status,
                              const char **callp);
/* Whether c (of row) has an after-step: AVG's division, a block to move. */
static inline bool dcoll_mpi_has_after(const struct dcoll_mpi_row *row,
                                       const struct dcoll_coll *c)
{
    return c->op == DCOLL_AVG || row->moves;
}
void dcoll_mpi_plan_after(struct dcoll_mpi_work *w,
                          const struct dcoll_group *g,
                          const struct dcoll_coll *c);
void dcoll_mpi_run_after(struct dcoll_mpi_work *w);
/* w's after-step for c: plan_after's where c has one, else none (inline
 * for the async path, which mostly has none). */
static inline void dcoll_mpi_after_of(struct dcoll_mpi_work *w,
                                      const struct dcoll_group *g,
                                      const struct dcoll_coll *c,
                                      const struct dcoll_mpi_row *row)
{
    if (dcoll_mpi_has_after(row, c)) {
        dcoll_mpi_plan_after(w, g, c);
    } else {
        w->avg_buf = NULL;
        w->move_bytes = 0;
    }
}
/* Whether c moves nothing on any rank: a count of 0 for a kind whose
 * count is every rank's (not a vector kind's own part, a neighbourhood
 * call's, nor a peer call, which MPI still matches), and not a
 * barrier. */
static inline bool dcoll_mpi_moves_nothing(const struct dcoll_coll *c)
{
    return c->count == 0 && c->kind != DCOLL_COLL_BARRIER &&
           !dcoll_kind_has(c->kind, DCOLL_KF_VEC | DCOLL_KF_PEER |
                                        DCOLL_KF_NEIGHBOR);
}
dcoll_status_t dcoll_mpi_coll(struct dcoll_group *g,
                              const struct dcoll_coll *c,
                              struct dcoll_work **work,
                              struct dcoll_outcome *out);
struct dcoll_watch dcoll_mpi_watch_of(const struct dcoll_group *g,
                                      const struct dcoll_coll *c,
                                      const char *call,
                                      struct dcoll_outcome *out);

/* work.c: handles for async calls, kept for reuse (freed handles wait in
 * these slots: a loop of calls, or a halo's 16 posted at once, then
 * costs no malloc and free; atomic, so any thread may free a handle while
 * another starts one); their table's functions. */
#define DCOLL_MPI_SPARES 32
extern _Atomic(struct dcoll_mpi_work *) dcoll_mpi_spare[DCOLL_MPI_SPARES];

static inline struct dcoll_mpi_work *dcoll_mpi_work_take(void)
{
    for (int i = 0; i < DCOLL_MPI_SPARES; i++) {
        if (!atomic_load_explicit(&dcoll_mpi_spare[i], memory_order_relaxed))
            continue;
        struct dcoll_mpi_work *w = atomic_exchange(&dcoll_mpi_spare[i], NULL);
        if (w)
            return w;
    }
    return malloc(sizeof(struct dcoll_mpi_work));
}
dcoll_status_t dcoll_mpi_work_test(struct dcoll_work *bw, int *done);
dcoll_status_t dcoll_mpi_work_wait(struct dcoll_work *bw);
void dcoll_mpi_work_release(struct dcoll_work *bw);

/* plan.c: the backend table's plan functions. */
dcoll_status_t dcoll_mpi_plan_make(struct dcoll_group *g,
                                   const struct dcoll_coll *c, void **state);
dcoll_status_t dcoll_mpi_plan_start(struct dcoll_group *g,
                                    const struct dcoll_coll *c, void *state,
                                    struct dcoll_work **work,
                                    struct dcoll_outcome *out);
struct dcoll_plan_run *dcoll_mpi_plan_quick(void *state);
dcoll_status_t dcoll_mpi_plan_failed(const void *state, int code);
void dcoll_mpi_plan_free(void *state);

#endif
