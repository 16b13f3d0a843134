/* One call's bookkeeping, written once for every way a call is made: the
 * public blocking and async calls (collectives.c) and a plan's starts,
 * the general and the quick ones (plan.c). begin numbers the call, reads
 * the clock, writes its recorder entry and tells the watchdog; end maps
 * what the transport reported to the group's fate, finishes the entry
 * or hands it to the work, and profiles. Both are inlined with constant
 * flags, so each path keeps only the steps it has. */
#ifndef DCOLL_CALL_H
#define DCOLL_CALL_H

#include "core.h"
#include "diag.h"
#include "route.h"

/* What a call carries from begin to end. */
struct dcoll_call {
    struct dcoll_outcome out;
    struct dcoll_flight *f;         /* the group's recorder, or NULL */
    struct dcoll_flight_entry *e;   /* its entry there, where f is set */
    bool watched;                   /* the watchdog was told it runs */
};

/* How a path calls: a constant at each use. */
struct dcoll_call_how {
    bool counted;      /* numbered among the group's collectives */
    int form;          /* enum dcoll_form */
    bool async;        /* posted with a work handle */
    bool checked;      /* DCOLL_DEBUG's checks run here (not a plan's
                          start: its plan was checked) */
    bool quick;        /* a quick start: no outcome comes back, no work,
                          and no profile (plan.c's set_ready gives no
                          quick way while DCOLL_PROFILE times calls) */
    int watch;         /* -1: ask dcoll_watched; else known */
};

/* The end of a call that failed (out of line): a timeout the transport
 * reported in out, a kind no transport in line runs, a refusal of this
 * rank alone, or a failure, which the group takes; then its recorder
 * entry e (or none), and its profile where profile. out NULL: none came
 * back (a quick start). */
dcoll_status_t dcoll_call_failed(struct dcoll_group *g, struct dcoll_coll *c,
                                 struct dcoll_outcome *out,
                                 struct dcoll_flight_entry *e, int form,
                                 bool profile, dcoll_status_t st);

/* A call on g while another thread is in in_call there (out of line):
 * refused, with no number taken and nothing else changed. */
dcoll_status_t dcoll_call_clash(struct dcoll_group *g, const char *fn,
                                const char *other);

/* One thread at a time in a call on g (group.h's rule): a second
 * thread's call is refused before it takes a number, where it would
 * otherwise pair with another rank's call of the first thread at
 * random (wrong sums marked success). One compare-and-swap on a line
 * the calling core already holds; dcoll_call_leave ends it. */
static inline __attribute__((always_inline)) dcoll_status_t
dcoll_call_enter(struct dcoll_group *g, const char *fn)
{
    const char *none = NULL;
    if (DCOLL_LIKELY(atomic_compare_exchange_strong_explicit(
            &g->in_call, &none, fn, memory_order_acquire,
            memory_order_relaxed)))
        return DCOLL_SUCCESS;
    return dcoll_call_clash(g, fn, none);
}

static inline __attribute__((always_inline)) void
dcoll_call_leave(struct dcoll_group *g)
{
    atomic_store_explicit(&g->in_call, NULL, memory_order_release);
}

/* Begin c on g, entered (dcoll_call_enter): made is the plan's own
 * recorder entry to copy (NULL: a new one from c). Returns a refusal by
 * DCOLL_DEBUG's checks (checked), the call then not made, its entry
 * ended and g left. */
static inline __attribute__((always_inline)) dcoll_status_t
dcoll_call_begin(struct dcoll_group *g, struct dcoll_coll *c,
                 struct dcoll_call *k, const struct dcoll_call_how how,
                 const struct dcoll_flight_entry *made)
{
    uint64_t seq = c->seq;
    /* A quick start's number goes to c only if it fails (its
     * quick_failed reads it from g). */
    if (how.counted) {
        seq = g->seq + 1;
        if (!how.quick)
            c->seq = seq;
        dcoll_group_number(g, seq, (int)c->kind, how.form);
    }
    if (!how.quick) {
        c->async = how.async;
        k->out.timed_out = false;
        k->out.refused = false;  /* source: set by a receive */
        k->out.broken = false;
        k->out.way = NULL;
    }
    if (!how.quick && DCOLL_UNLIKELY(dcoll_profiling))
        g->diag->prof_t0 = dcoll_now();
    struct dcoll_flight *f = g->diag->flight;
    bool watched = !how.async && (how.watch < 0 ? dcoll_watched(g)
                                                : how.watch > 0);
    double t0 = 0;
    /* A quick start never reads its start time or entry id back. */
    if ((how.watch < 0 ? g->timeout > 0 : watched) || f) {
        t0 = dcoll_coarse_now();
        if (!how.quick)
            c->start = t0;
    }
    k->f = f;
    if (f) {
        k->e = made ? dcoll_flight_put(f, made, seq, t0)
                    : dcoll_flight_entry_new(f, c);
        if (!how.quick)
            c->fid = k->e->id;
    } else if (made && !how.quick) {
        c->fid = 0;
    }
    dcoll_status_t st;
    if (how.checked && DCOLL_UNLIKELY(g->diag->slow) &&
        (st = dcoll_fault_check(g, c))) {
        dcoll_flight_end(f, c->fid, st);
        dcoll_call_leave(g);
        return st;
    }
    k->watched = watched;
    if (watched && !how.counted) {
        /* A send or receive: whom the watchdog's report names. */
        DCOLL_PUBLISH(g->busy_peer, c->root);
        DCOLL_PUBLISH(g->busy_tag, c->tag);
    }
    if (watched)
        dcoll_group_busy(g, seq, (int)c->kind, c->fn, t0);
    return DCOLL_SUCCESS;
}

/* End c with the transport's status st (and k->out): the group's
 * verdict, the entry ended or handed to *work (async), the profile; g
 * left for the next call. */
static inline __attribute__((always_inline)) dcoll_status_t
dcoll_call_end(struct dcoll_group *g, struct dcoll_coll *c,
               struct dcoll_call *k, const struct dcoll_call_how how,
               struct dcoll_work **work, dcoll_status_t st)
{
    if (DCOLL_UNLIKELY(st || (!how.quick && k->out.timed_out))) {
        /* Still shown in the call while it fails: a timeout in abort
         * mode ends the job from here, and the flight recorders written
         * then must put this rank in it. */
        st = dcoll_call_failed(g, c, how.quick ? NULL : &k->out,
                               k->f ? k->e : NULL, how.form, !how.quick, st);
        if (k->watched)
            dcoll_group_idle(g);
        dcoll_call_leave(g);
        return st;
    }
    if (k->watched)
        dcoll_group_idle(g);
    dcoll_call_leave(g);
    if (how.async) {
        dcoll_work_stamp(*work, g, c);
        dcoll_work_track(*work);
    } else if (k->f) {
        k->e->end = dcoll_coarse_now();  /* made with DCOLL_SUCCESS */
    }
    if (!how.quick && DCOLL_UNLIKELY(dcoll_profiling))
        dcoll_coll_profile(g, c, how.async ? *work : NULL, DCOLL_SUCCESS);
    return DCOLL_SUCCESS;
}

#endif
