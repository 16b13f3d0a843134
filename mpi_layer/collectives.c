/* Host collectives over MPI: the paths that read the per-kind table
 * (rows.c). A blocking call is MPI's blocking call (the core's watchdog
 * watches it), except on a group that returns from a timeout
 * (DCOLL_ON_TIMEOUT_RETURN): there it posts the nonblocking form, or
 * small.c's point-to-point ones for small calls, and polls them against
 * its deadline (watch.c). An async call posts the nonblocking form into
 * a work (work.c); plans are plan.c's. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calls.h"

/* Post c by its row, with the checks and clean up around it; inlined in
 * this file's paths, out of line for plans (dcoll_mpi_post). */
static inline __attribute__((always_inline)) dcoll_status_t
post(struct dcoll_group *g, const struct dcoll_coll *c,
     const struct dcoll_mpi_row *row, struct dcoll_mpi_post *p,
     MPI_Status *status, const char **callp)
{
    const char *call = "MPI";
    if (row->tagged && DCOLL_UNLIKELY(c->tag > dcoll_mpi_tag_ub))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: tag %d is above this MPI's MPI_TAG_UB %d",
                           c->fn, c->tag, dcoll_mpi_tag_ub);
    int rc = row->post(p, g, c, dcoll_mpi_comm_for(g, c), status, &call);
    *callp = call;
    if (DCOLL_LIKELY(rc == MPI_SUCCESS))
        return DCOLL_SUCCESS;
    dcoll_status_t st = dcoll_mpi_error(rc, call);
    /* Requests already posted cannot be cancelled: let them finish. */
    if (p->w && p->used > 1)
        MPI_Waitall(p->used - 1, p->w->reqs, MPI_STATUSES_IGNORE);
    return st;
}

dcoll_status_t dcoll_mpi_post(struct dcoll_group *g,
                              const struct dcoll_coll *c,
                              struct dcoll_mpi_post *p, MPI_Status *status,
                              const char **callp)
{
    return post(g, c, &dcoll_mpi_rows[c->kind], p, status, callp);
}

/* What AVG divides this rank's result by after MPI's SUM (or a tuned
 * way's): the group's size, or a prefix's inputs held (scan: r + 1;
 * exscan: r, none on rank 0, whose buffer is left as it was); 0: no
 * division here. */
static int avg_divisor(const struct dcoll_mpi_row *row,
                       const struct dcoll_group *g,
                       const struct dcoll_coll *c)
{
    if (c->op != DCOLL_AVG)
        return 0;
    if (row->avg == DCOLL_MPI_AVG_PREFIX)
        return c->kind == DCOLL_COLL_EXSCAN ? g->rank : g->rank + 1;
    return row->avg == 1 || (row->avg == 2 && g->rank == c->root) ? g->size
                                                                  : 0;
}

/* What follows the transfer: AVG's division, reduce_scatter's move. */
void dcoll_mpi_plan_after(struct dcoll_mpi_work *w,
                          const struct dcoll_group *g,
                          const struct dcoll_coll *c)
{
    const struct dcoll_mpi_row *row = &dcoll_mpi_rows[c->kind];
    size_t esz = dcoll_dtype_sizes[c->dtype];
    w->avg_buf = NULL;
    w->move_bytes = 0;
    if (row->moves && c->in_place && c->count <= INT_MAX &&
        c->recvbuf != c->sendbuf) {
        w->move_src = c->sendbuf;
        w->move_dst = c->recvbuf;
        w->move_bytes = (size_t)c->count * esz;
    }
    int by = avg_divisor(row, g, c);
    if (by > 0) {
        w->avg_buf = c->recvbuf;
        w->avg_n = c->count;
        w->divisor = by;
        w->dtype = c->dtype;
    }
}

void dcoll_mpi_run_after(struct dcoll_mpi_work *w)
{
    if (w->move_bytes)
        memmove(w->move_dst, w->move_src, w->move_bytes);
    if (w->avg_buf)
        dcoll_divide(w->avg_buf, w->avg_n, w->dtype, w->divisor);
}

struct dcoll_watch dcoll_mpi_watch_of(const struct dcoll_group *g,
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
        .peer = c->root,
        .tag = c->tag,
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
    if (dcoll_mpi_has_after(&dcoll_mpi_rows[c->kind], c)) {
        struct dcoll_mpi_work after;
        dcoll_mpi_plan_after(&after, g, c);
        if (!mpi_layout)
            after.move_bytes = 0;
        dcoll_mpi_run_after(&after);
    }
}

/* A blocking call on a group with a timeout: post, then poll. */
static dcoll_status_t run_watched(struct dcoll_group *g,
                                  const struct dcoll_coll *c,
                                  struct dcoll_outcome *out)
{
    struct dcoll_mpi_work w;
    const struct dcoll_mpi_row *row = &dcoll_mpi_rows[c->kind];
    /* MPI's blocking calls return at once too. */
    if (dcoll_mpi_moves_nothing(c))
        return DCOLL_SUCCESS;
    if (dcoll_mpi_small_fits(g, c)) {
        struct dcoll_watch wt = dcoll_mpi_watch_of(
            g, c, "MPI_Test (dcoll's own small-call algorithm)", out);
        dcoll_status_t st = dcoll_mpi_small(g, c, &wt);
        if (!st)
            blocking_done(g, c, NULL, &out->source, false);
        return st;
    }
    MPI_Request few[4];
    int nreq = dcoll_mpi_requests(row, g, c);
    w.reqs = nreq <= 4 ? few : malloc(sizeof(MPI_Request) * (size_t)nreq);
    if (!w.reqs)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for %d requests",
                           nreq);
    struct dcoll_mpi_post p = {&w, 0, false};
    const char *call = "MPI";
    w.vec = NULL;
    w.nbw = NULL;
    w.type = MPI_DATATYPE_NULL;
    dcoll_status_t st = post(g, c, row, &p, NULL, &call);
    if (!st) {
        struct dcoll_watch wt = dcoll_mpi_watch_of(g, c, call, out);
        st = dcoll_mpi_poll(g, &wt, p.used, w.reqs, &w.status);
    }
    free(w.vec);
    dcoll_mpi_nbw_free(w.nbw);
    if (w.type != MPI_DATATYPE_NULL)
        MPI_Type_free(&w.type);
    if (w.reqs != few)
        free(w.reqs);
    if (!st)
        blocking_done(g, c, &w.status, &out->source, true);
    return st;
}

/* A blocking call the tuning table gives another way (compose.c): MPI's
 * code, or -1 where it is MPI's own call. Where the row's direct call
 * would make it. */
static __attribute__((noinline)) int tuned(const struct dcoll_group *g,
                                           const struct dcoll_coll *c,
                                           const struct dcoll_mpi_row *row,
                                           const char **call)
{
    if (!row->tuned || (row->tuned_not_in_place && c->in_place) ||
        c->count > INT_MAX)
        return -1;
    bool found;
    enum dcoll_way way = dcoll_mpi_tuned(g, c, &found);
    /* shm: the shared segment's, which dcoll_mpi_coll asked first; on a
     * group it cannot run on, MPI's own call. */
    if (way == DCOLL_WAY_MPI || way == DCOLL_WAY_SHM)
        return -1;
    *call = dcoll_way_names[way];
    struct dcoll_mpi_args a = {
        .me = g->rank,
        .size = g->size,
        .in = c->in_place ? MPI_IN_PLACE : c->sendbuf,
        .n = (int)c->count,
        .t = dcoll_mpi_type(c),
        .op = dcoll_kind_has(c->kind, DCOLL_KF_OP)
                  ? dcoll_mpi_op(c->dtype, c->op) : MPI_OP_NULL,
        .comm = dcoll_mpi_comm_of(g),
    };
    int rc = row->tuned(way, &a, c, dcoll_dtype_sizes[c->dtype]);
    /* AVG: the way sums (MPI's op for it is SUM); the division is the
     * host path's own, as after MPI's call. */
    int by = rc == MPI_SUCCESS ? avg_divisor(row, g, c) : 0;
    if (by > 0)
        dcoll_divide(c->recvbuf, c->count, c->dtype, by);
    return rc;
}

/* An async call: the row's post into a new work. */
static dcoll_status_t post_work(struct dcoll_group *g,
                                const struct dcoll_coll *c,
                                const struct dcoll_mpi_row *row,
                                struct dcoll_work **work)
{
    int nreq = dcoll_mpi_requests(row, g, c);
    struct dcoll_mpi_work *w = dcoll_mpi_work_take();
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a work handle");
    w->reqs = nreq == 1 ? &w->one : malloc(sizeof(MPI_Request) * nreq);
    w->vec = NULL;
    w->nbw = NULL;
    w->type = MPI_DATATYPE_NULL;
    if (!w->reqs) {
        w->reqs = &w->one;
        dcoll_mpi_work_release(&w->base);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for %d requests",
                           nreq);
    }
    w->nreq = nreq;
    struct dcoll_mpi_post p = {w, 0, false};
    const char *call;
    dcoll_status_t st = post(g, c, row, &p, NULL, &call);
    if (st) {
        dcoll_mpi_work_release(&w->base);
        return st;
    }
    w->nreq = p.used;
    dcoll_mpi_after_of(w, g, c, row);
    dcoll_work_init(&w->base, g, &dcoll_mpi_backend);
    w->base.is_recv = c->kind == DCOLL_COLL_RECV;
    *work = &w->base;
    return DCOLL_SUCCESS;
}

static inline __attribute__((always_inline)) dcoll_status_t
blocking(struct dcoll_group *g, const struct dcoll_coll *c,
         const struct dcoll_mpi_row *row, struct dcoll_outcome *out);

/* A blocking call of a kind the shared segment runs, on a group that
 * may be of one node (shm.c): its way, or MPI's; timed where it is part
 * of a trial. */
static __attribute__((noinline)) dcoll_status_t
shm_or_mpi(struct dcoll_group *g, const struct dcoll_coll *c,
           const struct dcoll_mpi_row *row, struct dcoll_outcome *out)
{
    struct dcoll_mpi_shm_trial *t;
    int way = dcoll_mpi_shm_pick(g, c, &t);
    double t0 = t ? dcoll_now() : 0;
    dcoll_status_t st = DCOLL_DECLINED;
    if (way) {
        st = way == 3 ? dcoll_mpi_shm_run_placed(g, c, out)
                      : dcoll_mpi_shm_run(g, c, out);
        if (way == 2 && st != DCOLL_DECLINED)
            out->way = dcoll_way_names[DCOLL_WAY_SHM];
    }
    if (st == DCOLL_DECLINED)
        st = blocking(g, c, row, out);
    return t ? dcoll_mpi_shm_timed(g, c, out, t, t0, st) : st;
}

dcoll_status_t dcoll_mpi_coll(struct dcoll_group *g,
                              const struct dcoll_coll *c,
                              struct dcoll_work **work,
                              struct dcoll_outcome *out)
{
    const struct dcoll_mpi_row *row = &dcoll_mpi_rows[c->kind];
    /* A kind without a row: declined, for the route to say so; never run
     * as another kind's call. */
    if (DCOLL_UNLIKELY(!row->post))
        return DCOLL_DECLINED;
    if (work)
        return post_work(g, c, row, work);
    if (((DCOLL_MPI_SHM_KINDS >> c->kind) & 1) &&
        dcoll_mpi_of(g)->shm_on >= 0)
        return shm_or_mpi(g, c, row, out);
    return blocking(g, c, row, out);
}

/* A blocking call by MPI's calls: polled in return mode, a tuning
 * table's way, MPI's direct call, or the row's general post. */
static inline __attribute__((always_inline)) dcoll_status_t
blocking(struct dcoll_group *g, const struct dcoll_coll *c,
         const struct dcoll_mpi_row *row, struct dcoll_outcome *out)
{
    if (g->timeout > 0 && g->recoverable)
        return run_watched(g, c, out);
    const char *call = "MPI";
    int rc = -1;
    if (DCOLL_UNLIKELY(dcoll_mpi_tuning != NULL) &&
        (rc = tuned(g, c, row, &call)) >= 0)
        out->way = call;
    if (rc < 0 && row->direct && c->count <= INT_MAX && c->op != DCOLL_AVG)
        rc = row->direct(c, dcoll_mpi_comm_of(g), g->rank, &call);
    if (DCOLL_LIKELY(rc == MPI_SUCCESS))
        return DCOLL_SUCCESS;
    if (rc > 0)
        return dcoll_mpi_error(rc, call);
    struct dcoll_mpi_post p = {NULL, 0, false};
    MPI_Status status;
    dcoll_status_t st = post(g, c, row, &p, &status, &call);
    if (!st)
        blocking_done(g, c, &status, &out->source, true);
    return st;
}

/* Whether the transport has a row for kind (the transport-table test
 * asks; the host path reads the row itself). */
static bool mpi_runs(enum dcoll_coll_kind kind)
{
    return (unsigned)kind < DCOLL_COLL_KIND_COUNT_ &&
           dcoll_mpi_rows[kind].post != NULL;
}

/* The group's communicator, split from its parent's (or made among the
 * kept ranks alone, for a shrink). The world's is made
 * by the services' start and freed by their stop. */
static dcoll_status_t mpi_group_make(struct dcoll_group *g,
                                     const struct dcoll_tl_make *m)
{
    void *comm = NULL;
    dcoll_status_t st =
        m->keep ? (g ? dcoll_mpi_create(m->parent, m->keep, m->nkeep, &comm)
                     : DCOLL_SUCCESS)
                : dcoll_mpi_split(m->parent, m->color, m->key, &comm);
    if (g)
        g->tl[DCOLL_TL_MPI] = comm;
    else
        dcoll_mpi_comm_free(comm);
    return st;
}

static void mpi_group_free(struct dcoll_group *g)
{
    if (g->id == 0)
        return;
    dcoll_mpi_comm_free(g->tl[DCOLL_TL_MPI]);
    g->tl[DCOLL_TL_MPI] = NULL;
}

/* What a plan's starts call depends on the MPI (and on
 * DCOLL_PLAN_CALLS), and a tuning table may be in force: the status says
 * both. */
static bool mpi_status(const char **text)
{
    static char why[2400];
    snprintf(why, sizeof(why), "MPI: host buffers; plans start %s; %s; "
             "%s", dcoll_mpi_plan_rule(), dcoll_mpi_tuning_text(),
             dcoll_mpi_shm_rule());
    *text = why;
    return true;
}

const struct dcoll_backend dcoll_mpi_backend = {
    .name = "mpi",
    .tl = DCOLL_TL_MPI,
    .memory = DCOLL_TL_HOST,
    .runs = mpi_runs,
    .choice = DCOLL_CHOICE_MPI,
    .status = mpi_status,
    .group_make = mpi_group_make,
    .group_free = mpi_group_free,
    .coll = dcoll_mpi_coll,
    .work_test = dcoll_mpi_work_test,
    .work_wait = dcoll_mpi_work_wait,
    .work_release = dcoll_mpi_work_release,
    .plan_make = dcoll_mpi_plan_make,
    .plan_start = dcoll_mpi_plan_start,
    .plan_quick = dcoll_mpi_plan_quick,
    .plan_failed = dcoll_mpi_plan_failed,
    .plan_free = dcoll_mpi_plan_free,
};
