/* The MPI transport's plans: what a plan's starts call, found once at
 * plan time from the kind's row (rows.c). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "calls.h"

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
    /* A blocking start's way, found once (a.way): MPI's blocking call
     * from the arguments in a (call), MPI_Start + MPI_Wait with nothing
     * after (run_started), a trial of both that settles on one
     * (run_trial), or with run NULL the general path (plan_start_slow).
     * First: the core calls it (plan_quick), and the row's call reads
     * a. */
    struct dcoll_mpi_args a;
    struct dcoll_mpi_work w;   /* its requests, counts, type and
                                  after-step */
    bool blocking;       /* a blocking start uses the requests */
    bool async;          /* an async start does */
    int (*call)(struct dcoll_plan_run *p); /* the blocking call, where
                                              direct_make could */
    int tries;               /* run_trial's starts so far */
    double ends[2][8];       /* when each start of the blocking call's
                                timed run and the request's ended
                                (TRIAL_STARTS) */
};

/* Whether c's AVG divides after the transfer on some rank: decided alike
 * on every rank (a reduce's root divides, an exscan's rank 0 does not),
 * since ranks whose starts took different MPI calls, blocking against
 * nonblocking or persistent, would never match (MPI-4 5.12). */
static bool avg_after(const struct dcoll_mpi_row *row,
                      const struct dcoll_coll *c)
{
    return c->op == DCOLL_AVG && row->avg;
}

/* Whether a blocking start of c can be MPI's blocking call as it is,
 * every time, and its arguments if so: no chunks, no after-step, none of
 * MPICH's own mends (the row's plan_args says). */
static bool direct_make(struct mpi_plan *p, const struct dcoll_group *g,
                        const struct dcoll_coll *c)
{
    const struct dcoll_mpi_row *row = &dcoll_mpi_rows[c->kind];
    struct dcoll_mpi_args *a = &p->a;
    struct dcoll_mpi_work after;
    dcoll_mpi_plan_after(&after, g, c);
    if (!row->plan_call || c->count > INT_MAX || avg_after(row, c) ||
        after.move_bytes)
        return false;
    /* A strided send or receive: its vector type, made once (or the one
     * its persistent request was made with) and freed with the plan. */
    if (c->layout && !c->nbh) {
        if (p->w.type == MPI_DATATYPE_NULL &&
            dcoll_mpi_layout_type(c->layout, dcoll_mpi_type(c), &p->w.type))
            return false;
        size_t at = (size_t)c->layout->offset * dcoll_dtype_sizes[c->dtype];
        p->a.in = c->sendbuf ? (const char *)c->sendbuf + at : NULL;
        p->a.out = c->recvbuf ? (char *)c->recvbuf + at : NULL;
    }
    int n = g->size;
    a->size = n;
    if (!c->layout || c->nbh) {
        a->in = c->in_place ? MPI_IN_PLACE : c->sendbuf;
        a->out = c->recvbuf;
    }
    if (c->nbh) {
        a->in = dcoll_mpi_nbh_buf(a->in);
        a->out = dcoll_mpi_nbh_buf(a->out);
    }
    a->n = c->layout && !c->nbh ? 1 : (int)c->count;
    a->t = c->layout && !c->nbh ? p->w.type : dcoll_mpi_type(c);
    a->op = dcoll_kind_has(c->kind, DCOLL_KF_OP)
                ? dcoll_mpi_op(c->dtype, c->op) : MPI_OP_NULL;
    a->root = c->root == DCOLL_ANY_SOURCE ? MPI_ANY_SOURCE : c->root;
    a->tag = c->tag;
    a->comm = dcoll_mpi_comm_for(g, c);
    if (dcoll_kind_has(c->kind, DCOLL_KF_VEC) && !a->v) {
        a->v = malloc(sizeof(int) * 4 * (size_t)n);
        if (!a->v)
            return false;
        if (c->counts)
            dcoll_mpi_ints(c->counts, c->displs, n, a->v, a->v + n);
        if (c->counts2)
            dcoll_mpi_ints(c->counts2, c->displs2, n, a->v + 2 * n,
                           a->v + 3 * n);
    }
    if (row->plan_args && !row->plan_args(a, c))
        return false;
    p->call = row->plan_call;
    return true;
}

/* Whether MPI's persistent requests can serve a plan of c at all. */
static bool can_persist(const struct dcoll_coll *c)
{
    const struct dcoll_mpi_row *row = &dcoll_mpi_rows[c->kind];
    return row->can_persist ? row->can_persist(c) : DCOLL_MPI_PCOLL != 0;
}

/* Whether a plan of c starts MPI's persistent requests: blocking starts
 * (blocking) or async ones. In auto mode a blocking start that can be
 * either call tries both first (dcoll_mpi_plan_make): this rule is for
 * the others. */
static bool persists(const struct dcoll_coll *c, bool blocking)
{
    if (!can_persist(c))
        return false;
    if (dcoll_plan_calls == DCOLL_PLAN_CALLS_PERSISTENT)
        return true;
    if (dcoll_plan_calls == DCOLL_PLAN_CALLS_PLAIN)
        return false;
    /* MPI_Send_init and MPI_Recv_init's starts took longer than
     * MPI_Isend and MPI_Irecv on both MPIs here (1.26 against 0.63 us on
     * Open MPI 4.1, 0.95 against 0.83 on MPICH 4.0, 8 B, 2 ranks). */
    if (dcoll_kind_has(c->kind, DCOLL_KF_PEER))
        return false;
#if DCOLL_MPI_PCOLL == 1
    (void)blocking;
    return c->count * (int64_t)dcoll_dtype_sizes[c->dtype] >=
           dcoll_mpi_rows[c->kind].persist_from;
#elif DCOLL_MPI_PCOLL == 2
    /* Open MPI 4.1: a blocking start with no trial makes its blocking
     * call; an async one its persistent request, which beats its
     * nonblocking call (0.79-0.93 of MPI_Iallreduce's time to 4 KiB, 2
     * ranks; bench/README.md, "Plans"). */
    return !blocking;
#else
    (void)blocking;
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

void dcoll_mpi_plan_free(void *state)
{
    struct mpi_plan *p = state;
    if (!p)
        return;
    free(p->a.v);
    dcoll_mpi_nbw_free(p->a.nbw);
    dcoll_mpi_nbw_free(p->w.nbw);
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

dcoll_status_t dcoll_mpi_plan_make(struct dcoll_group *g,
                                   const struct dcoll_coll *c, void **state)
{
    *state = NULL;
    /* No row: each start runs dcoll_mpi_coll, which declines it. */
    if (!dcoll_mpi_rows[c->kind].post)
        return DCOLL_SUCCESS;
    bool blocking = persists(c, true), async = persists(c, false);
    /* Auto mode: a blocking start that either call can make tries both
     * (run_trial). */
    bool both = dcoll_plan_calls == DCOLL_PLAN_CALLS_AUTO &&
                !dcoll_kind_has(c->kind, DCOLL_KF_PEER) && can_persist(c);
    /* The general path returns at once, as MPI's blocking calls do. */
    if (dcoll_mpi_moves_nothing(c))
        return DCOLL_SUCCESS;
    /* A group's shared segment takes its blocking starts (shm.c): each
     * start is then a call of the transport's, as a blocking call is,
     * and an async one MPI's nonblocking call. DCOLL_PLAN_CALLS=
     * persistent asks for MPI's persistent requests instead. */
    if (dcoll_plan_calls != DCOLL_PLAN_CALLS_PERSISTENT &&
        dcoll_mpi_shm_takes(g, c))
        return DCOLL_SUCCESS;
    struct mpi_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a plan",
                           c->fn);
    p->w.type = MPI_DATATYPE_NULL;
    p->a.me = g->rank;
    /* A group whose timeouts return polls its blocking starts. */
    bool polled = g->timeout > 0 && g->recoverable;
    if (!blocking && !async && !both) {
        if (direct_make(p, g, c)) {
            p->a.way.run = polled ? NULL : p->call;
            *state = p;
            return DCOLL_SUCCESS;
        }
        dcoll_mpi_plan_free(p);
        return DCOLL_SUCCESS;
    }
    const struct dcoll_mpi_row *row = &dcoll_mpi_rows[c->kind];
    int nreq = dcoll_mpi_requests(row, g, c);
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
    struct dcoll_mpi_post pp = {&p->w, 0, true};
    const char *call = "MPI";
    dcoll_status_t st = dcoll_mpi_post(g, c, &pp, NULL, &call);
    p->w.nreq = pp.used;
    if (st) {
        dcoll_mpi_plan_free(p);
        return st;
    }
    dcoll_mpi_after_of(&p->w, g, c, row);
    p->blocking = blocking;
    p->async = async;
    /* Blocking starts make the blocking call from arguments found now,
     * start the request alone (one request, nothing after it), or try
     * both. */
    bool direct = (!blocking || both) && direct_make(p, g, c);
    bool started = p->w.nreq == 1 && p->w.reqs == &p->w.one &&
                   !avg_after(row, c) && !p->w.move_bytes &&
                   c->kind != DCOLL_COLL_RECV;
    if (polled)
        p->a.way.run = NULL;
    else if (both && direct && started)
        p->a.way.run = run_trial;
    else if (direct && !blocking)
        p->a.way.run = p->call;
    else if (blocking && started)
        p->a.way.run = run_started;
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
    .work_test = dcoll_mpi_work_test,
    .work_wait = dcoll_mpi_work_wait,
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
        return dcoll_mpi_coll(g, c, work, out);
    struct dcoll_mpi_work *w = &p->w;
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
        struct dcoll_watch wt =
            dcoll_mpi_watch_of(g, c, "MPI_Test (a plan's start)", out);
        st = dcoll_mpi_poll(g, &wt, w->nreq, w->reqs, &w->status);
    } else {
        rc = w->nreq == 1 ? MPI_Wait(w->reqs, &w->status)
                          : MPI_Waitall(w->nreq, w->reqs,
                                        MPI_STATUSES_IGNORE);
        st = rc == MPI_SUCCESS ? DCOLL_SUCCESS
                               : dcoll_mpi_error(rc, "MPI_Wait");
    }
    if (!st)
        dcoll_mpi_run_after(w);
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
    rc = MPI_Allreduce(MPI_IN_PLACE, took, 2, MPI_DOUBLE, MPI_MAX,
                       p->a.comm);
    if (rc != MPI_SUCCESS)
        return rc;
    p->a.way.run = took[1] < 0.95 * took[0] ? run_started : p->call;
    return MPI_SUCCESS;
}

/* What the core calls for a blocking start, where nothing but the MPI
 * call is needed (lib/core/plan.c's quick start). */
struct dcoll_plan_run *dcoll_mpi_plan_quick(void *state)
{
    struct mpi_plan *p = state;
    return p->a.way.run ? &p->a.way : NULL;
}

dcoll_status_t dcoll_mpi_plan_failed(const void *state, int rc)
{
    (void)state;
    return dcoll_mpi_error(rc, "MPI (a plan's start)");
}

/* Every other start: async, polled, or on the general path. */
dcoll_status_t dcoll_mpi_plan_start(struct dcoll_group *g,
                                    const struct dcoll_coll *c, void *state,
                                    struct dcoll_work **work,
                                    struct dcoll_outcome *out)
{
    struct mpi_plan *p = state;
    if (!work && p->a.way.run) {
        int rc = p->a.way.run(&p->a.way);
        return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                                 : dcoll_mpi_plan_failed(p, rc);
    }
    return plan_start_slow(g, c, p, work, out);
}

