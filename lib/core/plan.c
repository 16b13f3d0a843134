/* Plans: persistent calls. What can be done once is done when the plan is
 * made: the public path's checks, the agreement of the ranks on them (and
 * under DCOLL_DEBUG=detail on the call itself), the route, and the
 * transport's own set-up (MPI's persistent requests). A start does only
 * what each call needs: its number, the recorder, the watchdog's marker
 * and the transport's start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "diag.h"
#include "kinds.h"
#include "route.h"
#include "call.h"
#include "dcoll/plan.h"

#define PLAN_MAGIC 0x64637031u /* "dcp1" */

struct dcoll_plan {
    uint32_t magic;
    bool member;               /* false: a NON-MEMBER's, which does nothing */
    bool self;                 /* a send or recv to this rank itself */
    bool counted;              /* its starts are numbered (not send, recv) */
    uint64_t id;               /* a collective plan's number on its group
                                  (g->plans_made), alike on every rank */
    /* A blocking start's way (way_of), found at plan time, and the same
     * while the plan is ready (a member's, not to itself, on a live group,
     * no work of its starts pending): then a blocking start needs no more
     * checks than the group's health. NULL while not ready. */
    dcoll_status_t (*way)(struct dcoll_plan *p, struct dcoll_group *g);
    dcoll_status_t (*quick)(struct dcoll_plan *p, struct dcoll_group *g);
    struct dcoll_plan_run *run; /* tl's plan_quick: state, or NULL */
    struct dcoll_flight_entry entry; /* its starts' recorder entry */
    struct dcoll_group *group; /* NULL once the group is gone */
    struct dcoll_coll c;       /* the checked call; c.opts is &opts */
    dcoll_coll_opts_t opts;
    int64_t *arrays;           /* the vector forms' arrays, copied */
    dcoll_layout_t *layouts;   /* a strided call's layouts, copied */
    const struct dcoll_backend *tl; /* NULL: GPU buffers (route_gpu) */
    void *state;               /* tl's plan_make's, or NULL */
    struct dcoll_work *work;   /* the last start's work, or NULL */
    struct dcoll_plan *next, *prev; /* the group's live plans */
};

static void set_ready(struct dcoll_plan *p, bool ready)
{
    /* DCOLL_PROFILE times each start in start(), and DCOLL_DEBUG checks
     * it there: no quick way then. */
    p->quick = ready && !dcoll_profiling && !dcoll_debug ? p->way : NULL;
}

static dcoll_status_t (*way_of(const struct dcoll_plan *p,
                               const struct dcoll_group *g))(
    struct dcoll_plan *, struct dcoll_group *);

/* Drop the last start's work (finished): the plan's own are kept by the
 * transport, others go back to it. */
static void drop_work(struct dcoll_plan *p)
{
    struct dcoll_work *w = p->work;
    if (!w)
        return;
    p->work = NULL;
    set_ready(p, p->member && !p->self);
    free(w->errmsg);
    w->errmsg = NULL;
    dcoll_mark_dead(&w->magic);
    w->backend->work_release(w);
}

/* What the transport keeps for p goes (group destroy, finalize, free). */
static void unhook(struct dcoll_plan *p)
{
    struct dcoll_group *g = p->group;
    drop_work(p);
    if (p->state && p->tl && p->tl->plan_free)
        p->tl->plan_free(p->state);
    p->state = NULL;
    set_ready(p, false);
    if (!g || !p->member)
        return;
    if (p->prev)
        p->prev->next = p->next;
    else
        g->plans = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->group = NULL;
}

void dcoll_plans_group_gone(struct dcoll_group *g)
{
    while (g->plans)
        unhook(g->plans);
}

/* Copy the vector forms' arrays: the caller's may change or go. The
 * first two have n entries, the others n2 (a neighbourhood's send and
 * receive sides; n2 == n for the vector kinds). */
static dcoll_status_t keep_arrays(struct dcoll_plan *p, int n, int n2)
{
    const int64_t **a[4] = {&p->c.counts, &p->c.displs, &p->c.counts2,
                            &p->c.displs2};
    int len[4] = {n, n, n2, n2};
    size_t have = 0;
    for (int i = 0; i < 4; i++)
        have += *a[i] && len[i] > 0 ? (size_t)len[i] : 0;
    if (!have)
        return DCOLL_SUCCESS;
    p->arrays = malloc(sizeof(int64_t) * have);
    if (!p->arrays)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "plan's copy of %zu counts", p->c.fn, have);
    int64_t *at = p->arrays;
    for (int i = 0; i < 4; i++) {
        if (!*a[i] || len[i] <= 0)
            continue;
        memcpy(at, *a[i], sizeof(int64_t) * (size_t)len[i]);
        *a[i] = at;
        at += len[i];
    }
    return DCOLL_SUCCESS;
}

/* Copy a strided call's layouts: a send or receive's one, or a
 * neighbourhood's, one per entry of each list. */
static dcoll_status_t keep_layouts(struct dcoll_plan *p)
{
    const struct dcoll_nbh *n = p->c.nbh;
    size_t n1 = n ? (size_t)n->outdeg : 1, n2 = n ? (size_t)n->indeg : 0;
    p->layouts = malloc(sizeof(dcoll_layout_t) * (n1 + n2 + 1));
    if (!p->layouts)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "plan's copy of %zu layouts", p->c.fn, n1 + n2);
    if (p->c.layout && n1)
        memcpy(p->layouts, p->c.layout, sizeof(dcoll_layout_t) * n1);
    if (p->c.layout2 && n2)
        memcpy(p->layouts + n1, p->c.layout2, sizeof(dcoll_layout_t) * n2);
    p->c.layout = p->c.layout ? p->layouts : NULL;
    p->c.layout2 = p->c.layout2 ? p->layouts + n1 : NULL;
    return DCOLL_SUCCESS;
}

/* This rank's checks and route for p (a member's): a refusal here is
 * this rank's alone. */
static dcoll_status_t prepare(struct dcoll_plan *p, struct dcoll_group *g)
{
    /* A failed group refuses, as before any call (the plan takes no
     * number, so no debug exchange runs there). */
    if (g->diag->failed)
        return dcoll_fault_check(g, &p->c);
    dcoll_status_t st = DCOLL_SUCCESS;
    if (dcoll_kind_has(p->c.kind, DCOLL_KF_VEC))
        st = keep_arrays(p, g->size, g->size);
    else if (p->c.nbh)
        st = keep_arrays(p, p->c.nbh->outdeg, p->c.nbh->indeg);
    if (!st && (p->c.layout || p->c.layout2))
        st = keep_layouts(p);
    if (st)
        return st;
    return dcoll_route_plan(g, &p->c, &p->tl);
}

/* Every rank of g learns whether any refused its arguments for plan c
 * (local: this rank's refusal, message set), over the group's control
 * communicator and bounded by its timeout, as a call is: a rank that
 * never comes is reported at the deadline, not waited for forever. */
static dcoll_status_t agree(struct dcoll_group *g, struct dcoll_coll *c,
                            dcoll_status_t local)
{
    char why[DCOLL_ERROR_MAX];
    if (local)
        snprintf(why, sizeof(why), "%s", dcoll_last_error());
    int mine = local != DCOLL_SUCCESS, *all = calloc((size_t)g->size,
                                                      sizeof(int));
    if (!all)
        return local ? local
                     : dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for "
                                   "the agreement of %d ranks", c->fn,
                                   g->size);
    struct dcoll_outcome out = {.source = -1};
    c->start = dcoll_coarse_now();
    dcoll_status_t st = g->svc->exchange(g, &mine, all, sizeof(int), c,
                                         &out);
    if (out.timed_out)
        st = dcoll_fault_outcome(g, &out, c->fn, c->seq, c->kind,
                                 DCOLL_FORM_PLAN);
    int first = -1;
    for (int r = 0; !st && r < g->size && first < 0; r++)
        if (all[r])
            first = r;
    free(all);
    if (local)
        return dcoll_error(local, "%s", why);
    if (st)
        return st;
    if (first >= 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: rank %d (world "
                           "%d) refused its arguments (its message says "
                           "why), so no plan was made on any rank", c->fn,
                           first, g->ranks ? g->ranks[first] : first);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_plan_make(dcoll_group_t *group, struct dcoll_coll *c,
                               int root, dcoll_status_t pre,
                               dcoll_plan_t **out)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (out)
        *out = NULL;
    struct dcoll_plan *p = calloc(1, sizeof(*p));
    if (!p)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a plan",
                           c->fn ? c->fn : dcoll_kind_name(c->kind));
    /* The plan's own copy of the call and its options. */
    if (c->opts) {
        p->opts = *c->opts;
        c->opts = &p->opts;
    }
    struct dcoll_group *g = NULL;
    bool member = true;
    dcoll_status_t local;
    if (!pre) {
        local = dcoll_coll_plan_check(group, c, root, &g, &member);
    } else if ((local = dcoll_group_resolve(group, &g, c->fn))) {
        g = NULL;
    } else {
        local = pre;   /* its message is set */
        member = g->rank != DCOLL_NON_MEMBER;
    }
    p->c = *c;
    p->c.planned = true;
    if (!g) {
        free(p);
        return local;   /* no group to tell */
    }
    p->c.opts = c->opts ? &p->opts : NULL;
    if (!local && !out)
        local = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: plan is NULL; "
                            "it must receive the handle", p->c.fn);
    if (!local && member)
        local = prepare(p, g);
    /* A collective's plan is every rank's: a refusal one rank alone saw
     * fails it on all, and nothing is numbered or left behind. */
    bool collective = member && dcoll_kind_has(c->kind, DCOLL_KF_COUNTED);
    if (collective && !(g->diag->failed && local))
        local = agree(g, &p->c, local);
    if (!local && collective && dcoll_debug) {
        p->c.start = dcoll_coarse_now();
        local = dcoll_fault_check_plan(g, &p->c);
    }
    if (!local && member && p->tl && p->tl->plan_make)
        local = p->tl->plan_make(g, &p->c, &p->state);
    if (local) {
        free(p->arrays);
        free(p->layouts);
        free(p);
        return local;
    }
    p->magic = PLAN_MAGIC;
    p->member = member;
    if (p->c.nbh)
        dcoll_nbh_hold((struct dcoll_nbh *)p->c.nbh);
    p->group = g;
    p->self = member && dcoll_kind_has(c->kind, DCOLL_KF_PEER) &&
              p->c.root == g->rank;
    p->counted = dcoll_kind_has(c->kind, DCOLL_KF_COUNTED);
    if (collective)
        p->id = ++g->plans_made;
    if (p->state && p->tl->plan_quick)
        p->run = p->tl->plan_quick(p->state);
    p->way = way_of(p, g);
    set_ready(p, member && !p->self);
    dcoll_flight_fill(&p->entry, &p->c);
    p->entry.kind_form = (unsigned char)(p->c.kind | DCOLL_FORM_PLAN << 6);
    if (p->tl)
        p->entry.way = dcoll_flight_tl_name(p->tl);
    if (member) {
        p->next = g->plans;
        if (g->plans)
            g->plans->prev = p;
        g->plans = p;
    }
    *out = p;
    return DCOLL_SUCCESS;
}

static dcoll_status_t check_plan(const struct dcoll_plan *p, const char *fn)
{
    if (!p)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: plan is NULL",
                           fn);
    if (p->magic != PLAN_MAGIC)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: plan %p is not "
                           "a live plan (freed or never made)", fn,
                           (const void *)p);
    return DCOLL_SUCCESS;
}

static dcoll_status_t running(const struct dcoll_plan *p, const char *fn,
                              const char *what)
{
    return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s: the plan of %s is still "
                       "running (its last start's work has not finished); "
                       "wait for that work before %s", fn, p->c.fn, what);
}

/* A non-member's start, or a send or receive plan's with DCOLL_PROC_NULL:
 * nothing to do, and a finished work to show it. */
static dcoll_status_t start_nothing(struct dcoll_plan *p,
                                    dcoll_work_t **work)
{
    if (!work)
        return DCOLL_SUCCESS;
    struct dcoll_work *w = malloc(sizeof(*w));
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_plan_start: no "
                           "memory for a work handle");
    dcoll_work_init(w, p->group, &dcoll_done_backend);
    dcoll_work_track(w);
    if (p->c.kind == DCOLL_COLL_RECV && p->c.root == DCOLL_PROC_NULL) {
        w->is_recv = true;
        w->source = DCOLL_PROC_NULL;
    }
    w->plan = p;
    p->work = *work = w;
    set_ready(p, false);
    return DCOLL_SUCCESS;
}

static __attribute__((noinline, cold)) dcoll_status_t
start_refused(struct dcoll_plan *p, dcoll_work_t **work)
{
    const char *fn = "dcoll_plan_start";
    struct dcoll_group *g = p->group;
    if (!g || g->magic != DCOLL_GROUP_MAGIC)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s: the plan of %s "
                           "belongs to a group that was destroyed (or to "
                           "a finished dcoll); it can only be freed", fn,
                           p->c.fn);
    if (p->work && !p->work->done)
        return running(p, fn, "starting it again");
    if (p->self && !work)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the plan of %s "
                           "is to this process's own rank; a blocking "
                           "start would never finish (start it with a "
                           "work)", fn, p->c.fn);
    char name[200];
    return dcoll_error(DCOLL_ERR_GROUP_FAILED, "%s: the plan of %s: %s is "
                       "unusable after an earlier failure: %s", fn, p->c.fn,
                       dcoll_group_name(g, name, sizeof(name)),
                       g->diag->failed);
}

/* Any start of a member's plan on a live group (checked by the caller). */
static inline __attribute__((always_inline)) dcoll_status_t
start(struct dcoll_plan *p, struct dcoll_group *g, dcoll_work_t **work,
      const bool async)
{
    struct dcoll_coll *c = &p->c;
    struct dcoll_call call;
    const struct dcoll_call_how how = {
        .counted = p->counted,
        .form = async ? DCOLL_FORM_PLAN_ASYNC : DCOLL_FORM_PLAN,
        .async = async,
        .watch = -1,
    };
    dcoll_status_t st;
    if (DCOLL_UNLIKELY((st = dcoll_call_enter(g, "dcoll_plan_start"))))
        return st;
    /* The plan's own entry, form and transport in it already. */
    dcoll_call_begin(g, c, &call, how, &p->entry);
    /* Debug mode checks each start, as each call: two plans started in
     * different orders on different ranks pair at random otherwise. */
    if (DCOLL_UNLIKELY(dcoll_debug) && p->counted &&
        (st = dcoll_fault_check_start(g, c, p->id))) {
        dcoll_flight_end(call.f, c->fid, st);
        if (call.watched)
            dcoll_group_idle(g);
        dcoll_call_leave(g);
        return st;
    }
    if (DCOLL_LIKELY(p->state))
        st = p->tl->plan_start(g, c, p->state, work, &call.out);
    else if (p->tl)
        st = p->tl->coll(g, c, work, &call.out);
    else
        st = dcoll_route_gpu(g, c, work, &call.out);
    st = dcoll_call_end(g, c, &call, how, work, st);
    if (async && !st) {
        struct dcoll_work *w = *work;
        w->plan = p;
        p->work = w;
        set_ready(p, false);   /* the next start drops it first */
    }
    return st;
}

/* Every start but the plain blocking one: the checks, the previous
 * work, a non-member's plan. */
static __attribute__((noinline)) dcoll_status_t
start_slow(struct dcoll_plan *p, dcoll_work_t **work)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (work)
        *work = NULL;
    if ((st = check_plan(p, "dcoll_plan_start")))
        return st;
    struct dcoll_group *g = p->group;
    if (!g || g->magic != DCOLL_GROUP_MAGIC || (p->work && !p->work->done) ||
        (p->self && !work) || (p->member && g->diag->failed))
        return start_refused(p, work);
    if (p->work)
        drop_work(p);
    if (!p->member)
        return start_nothing(p, work);
    return work ? start(p, g, work, true) : start(p, g, NULL, false);
}

/* A quick start that failed: the group's failure, as any start's. */
static __attribute__((noinline, cold)) dcoll_status_t
quick_failed(struct dcoll_plan *p, struct dcoll_group *g,
             struct dcoll_flight_entry *e, bool watched, int code)
{
    struct dcoll_coll *c = &p->c;
    if (p->counted)
        c->seq = g->seq;   /* its number, which g holds as its latest */
    c->async = false;
    dcoll_status_t st = p->tl->plan_failed(p->state, code);
    /* In the call until its failure is handled (dcoll_call_end). */
    st = dcoll_call_failed(g, c, NULL, e, DCOLL_FORM_PLAN, false, st);
    if (watched)
        dcoll_group_idle(g);
    dcoll_call_leave(g);
    return st;
}

/* A blocking start the transport makes by one function (plan_quick): the
 * number, the recorder's entry copied from the plan's, the watchdog's
 * marker and the call; no timeout comes back (abort mode's watchdog, or
 * none), so there is no outcome to read. Made in the four kinds below,
 * as the plan is numbered and watched or not, so a start tests neither. */
static inline __attribute__((always_inline)) dcoll_status_t
quick_body(struct dcoll_plan *p, struct dcoll_group *g, const bool counted,
           const bool watched)
{
    struct dcoll_coll *c = &p->c;
    struct dcoll_call call;
    const struct dcoll_call_how how = {
        .counted = counted,
        .form = DCOLL_FORM_PLAN,
        .quick = true,
        .watch = watched,
    };
    dcoll_status_t st;
    if (DCOLL_UNLIKELY((st = dcoll_call_enter(g, "dcoll_plan_start"))))
        return st;
    dcoll_call_begin(g, c, &call, how, &p->entry);
    int code = p->run->run(p->run);
    if (DCOLL_UNLIKELY(code))
        return quick_failed(p, g, call.f ? call.e : NULL, watched, code);
    return dcoll_call_end(g, c, &call, how, NULL, DCOLL_SUCCESS);
}

#define QUICK(name, counted, watched)                                       \
    static __attribute__((noinline)) dcoll_status_t                        \
    name(struct dcoll_plan *p, struct dcoll_group *g)                      \
    {                                                                      \
        return quick_body(p, g, counted, watched);                         \
    }
QUICK(quick_counted_watched, true, true)
QUICK(quick_counted, true, false)
QUICK(quick_watched, false, true)
QUICK(quick_plain, false, false)

/* A blocking start that the transport's plan_start (or coll) makes. */
static __attribute__((noinline)) dcoll_status_t
start_blocking(struct dcoll_plan *p, struct dcoll_group *g)
{
    return start(p, g, NULL, false);
}

/* The way of p's blocking starts on g. */
static dcoll_status_t (*way_of(const struct dcoll_plan *p,
                               const struct dcoll_group *g))(
    struct dcoll_plan *, struct dcoll_group *)
{
    if (!p->run)
        return start_blocking;
    bool watched = dcoll_watched(g);
    if (p->counted)
        return watched ? quick_counted_watched : quick_counted;
    return watched ? quick_watched : quick_plain;
}

dcoll_status_t dcoll_plan_start(dcoll_plan_t *p, dcoll_work_t **work)
{
    /* The common case, a blocking start of a member's plan with no work
     * pending on a healthy group, tested in one go: a plan is quick only
     * while its group lives (unhook), and dcoll ends only with its
     * groups. The way on is a tail call, so this saves no registers. */
    struct dcoll_group *g;
    if (DCOLL_LIKELY(!work && p && p->magic == PLAN_MAGIC && p->quick &&
                     !(g = p->group)->diag->failed))
        return p->quick(p, g);
    return start_slow(p, work);
}

dcoll_status_t dcoll_plan_free(dcoll_plan_t **plan)
{
    if (!plan)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_plan_free: plan is NULL");
    struct dcoll_plan *p = *plan;
    if (!p)
        return DCOLL_SUCCESS;
    dcoll_status_t st = check_plan(p, __func__);
    if (st)
        return st;
    /* Once its group is gone (or dcoll finished) nothing of it runs. */
    if (p->group && p->work && !p->work->done)
        return running(p, __func__, "freeing it");
    if (p->group && p->member && !p->tl)
        dcoll_route_plan_released(p->group);
    unhook(p);
    free(p->arrays);
    free(p->layouts);
    if (p->c.nbh)
        dcoll_nbh_drop((struct dcoll_nbh *)p->c.nbh);
    dcoll_mark_dead(&p->magic);
    free(p);
    *plan = NULL;
    return DCOLL_SUCCESS;
}

/* ---- the plans of the single-buffer collectives and send/recv ---- */

#define PLAN(...) struct dcoll_coll c = {__VA_ARGS__}

dcoll_status_t dcoll_broadcast_plan(dcoll_group_t *group, void *buf,
                                    int64_t count, dcoll_dtype_t dtype,
                                    int root, const dcoll_coll_opts_t *opts,
                                    dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_BROADCAST, .recvbuf = buf, .count = count,
         .dtype = dtype, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, root, 0, plan);
}

dcoll_status_t dcoll_scan_plan(dcoll_group_t *group, const void *sendbuf,
                               void *recvbuf, int64_t count,
                               dcoll_dtype_t dtype, dcoll_op_t op,
                               const dcoll_coll_opts_t *opts,
                               dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_SCAN, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_exscan_plan(dcoll_group_t *group, const void *sendbuf,
                                 void *recvbuf, int64_t count,
                                 dcoll_dtype_t dtype, dcoll_op_t op,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_EXSCAN, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_all_reduce_plan(dcoll_group_t *group,
                                     const void *sendbuf, void *recvbuf,
                                     int64_t count, dcoll_dtype_t dtype,
                                     dcoll_op_t op,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_ALL_REDUCE, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .op = op,
         .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_reduce_plan(dcoll_group_t *group, const void *sendbuf,
                                 void *recvbuf, int64_t count,
                                 dcoll_dtype_t dtype, dcoll_op_t op, int root,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, root, 0, plan);
}

dcoll_status_t dcoll_all_gather_plan(dcoll_group_t *group,
                                     const void *sendbuf, void *recvbuf,
                                     int64_t count, dcoll_dtype_t dtype,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_ALL_GATHER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_gather_plan(dcoll_group_t *group, const void *sendbuf,
                                 void *recvbuf, int64_t count,
                                 dcoll_dtype_t dtype, int root,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, root, 0, plan);
}

dcoll_status_t dcoll_scatter_plan(dcoll_group_t *group, const void *sendbuf,
                                  void *recvbuf, int64_t count,
                                  dcoll_dtype_t dtype, int root,
                                  const dcoll_coll_opts_t *opts,
                                  dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, root, 0, plan);
}

dcoll_status_t dcoll_reduce_scatter_plan(dcoll_group_t *group,
                                         const void *sendbuf, void *recvbuf,
                                         int64_t count, dcoll_dtype_t dtype,
                                         dcoll_op_t op,
                                         const dcoll_coll_opts_t *opts,
                                         dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_REDUCE_SCATTER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .op = op,
         .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_all_to_all_plan(dcoll_group_t *group,
                                     const void *sendbuf, void *recvbuf,
                                     int64_t count, dcoll_dtype_t dtype,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_ALL_TO_ALL, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_barrier_plan(dcoll_group_t *group,
                                  const dcoll_coll_opts_t *opts,
                                  dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_BARRIER, .dtype = DCOLL_UINT8, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_send_plan(dcoll_group_t *group, const void *buf,
                               int64_t count, dcoll_dtype_t dtype, int dst,
                               int tag, const dcoll_coll_opts_t *opts,
                               dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_SEND, .sendbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, dst, 0, plan);
}

dcoll_status_t dcoll_recv_plan(dcoll_group_t *group, void *buf,
                               int64_t count, dcoll_dtype_t dtype, int src,
                               int tag, const dcoll_coll_opts_t *opts,
                               dcoll_plan_t **plan)
{
    PLAN(.kind = DCOLL_COLL_RECV, .recvbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, src, 0, plan);
}
