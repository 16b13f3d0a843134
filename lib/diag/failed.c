/* A group's failure state: a timeout or an MPI error inside a collective
 * leaves it unusable (return mode), or ends the job with the report
 * (abort mode); so does a call this rank refused, which the other
 * ranks may be inside (unless debug mode's check told them). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report.h"

void dcoll_fault_mark(struct dcoll_group *g, const char *why)
{
    char *copy = strdup(why);
    if (copy) {
        free(g->diag->failed);
        g->diag->failed = copy;
    }
    g->diag->slow = true;
}

/* "all_reduce" for "dcoll_all_reduce": the name the reports use. */
static const char *short_fn(const char *fn)
{
    return strncmp(fn, "dcoll_", 6) ? fn : fn + 6;
}

/* msg without its leading "fn: ", as it follows fn in a report. */
static const char *reason_of(const char *msg, const char *fn)
{
    size_t n = strlen(fn);
    return !strncmp(msg, fn, n) && msg[n] == ':' && msg[n + 1] == ' '
               ? msg + n + 2
               : msg;
}

/* This rank leaves g at call #seq, for why (which follows "rank N
 * (world W) " in the other ranks' reports, when their roll call asks). */
static void leave(struct dcoll_group *g, uint64_t seq, const char *fmt, ...)
    DCOLL_PRINTF(3, 4);
static void leave(struct dcoll_group *g, uint64_t seq, const char *fmt, ...)
{
    if (DCOLL_PEEK(g->left))
        return;   /* the first reason stands */
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    char *copy = strdup(why);
    if (!copy)
        return;
    DCOLL_PUBLISH(g->left_seq, seq);
    DCOLL_PUBLISH(g->left, (const char *)copy);
}

dcoll_status_t dcoll_fault_refused(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   dcoll_status_t st, bool checked)
{
    /* A group of one rank: no other rank waits in the call. */
    if (g->size == 1)
        return st;
    char msg[DCOLL_ERROR_MAX], name[200], text[2 * DCOLL_ERROR_MAX];
    snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
    const char *why = reason_of(msg, c->fn);
    unsigned long long seq = (unsigned long long)c->seq;
    dcoll_group_name(g, name, sizeof(name));
    /* In debug mode the others are at the descriptor exchange, before
     * any data move: they learn it there, none runs the call, and the
     * group goes on. */
    if (dcoll_debug && !checked && dcoll_fault_check_refused(g, c, why))
        return dcoll_error(st, "%s: %s (collective #%llu on %s: every rank "
                           "learnt of it before any data moved, by "
                           "DCOLL_DEBUG=detail's check, so none ran it and "
                           "the group is still usable)", c->fn, why, seq,
                           name);
    /* Else the others may have refused it alike (they passed the same)
     * or be waiting inside it, and nothing here tells which: this rank
     * leaves the group, and their roll call at its deadline asks it,
     * which answers with why. */
    static const char unsure[] = "other ranks may have refused it alike "
                                 "or be waiting in it, and this rank cannot "
                                 "tell which";
    leave(g, c->seq, "refused %s #%llu: %s", dcoll_kind_name(c->kind), seq,
          why);
    snprintf(text, sizeof(text), "%s on %s: this rank refused collective "
             "#%llu (%s) before any data moved: %s. The %s, so the group "
             "is unusable from now on; other groups still work", c->fn, name,
             seq, dcoll_kind_name(c->kind), why, unsure);
    dcoll_fault_mark(g, text);
    /* Debug mode's check would have kept the group for a refusal its own
     * checks make, not for one the route makes after it. */
    bool hint = !checked && !dcoll_debug;
    return dcoll_error(st, "%s: %s (collective #%llu on %s, refused before "
                       "any data moved: the %s, so the group is unusable on "
                       "this rank from now on%s)", c->fn, why, seq, name,
                       unsure,
                       hint ? "; with DCOLL_DEBUG=detail the ranks compare "
                              "each call first and a refused one leaves the "
                              "group usable" : "");
}

void dcoll_fault_hung(struct dcoll_group *g, const char *fn, uint64_t seq,
                      int kind, int form, struct dcoll_roll *roll, bool mpi,
                      double waited)
{
    char msg[1400];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    dcoll_put_report(&t, g, fn, seq, kind, form, roll);
    if (!mpi)
        dcoll_put(&t, " after waiting %.1f s. The other ranks could not be "
            "asked where they are: MPI runs without MPI_THREAD_MULTIPLE, so "
            "the watchdog may not call it (start MPI with it, or let "
            "dcoll_init start MPI)", waited);
    dcoll_put(&t, ". dcoll ends the job (DCOLL_ON_TIMEOUT=abort) with exit "
              "code %d", DCOLL_HANG_EXIT_CODE);
    dcoll_put_hint(&t);
    dcoll_watchdog_end(g, msg, seq, kind, roll, mpi);
}

dcoll_status_t dcoll_fault_timed_out(struct dcoll_group *g, const char *fn,
                                     uint64_t seq, int kind, int form,
                                     struct dcoll_roll *roll)
{
    /* Found by the calling thread (a wait, a test, a debug check): in
     * abort mode the job ends as when the watchdog finds a hang. */
    if (!g->recoverable)
        dcoll_fault_hung(g, fn, seq, kind, form, roll, true, g->timeout);
    char msg[1400];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    dcoll_put_report(&t, g, fn, seq, kind, form, roll);
    dcoll_put(&t, ". The group is unusable from now on; other groups still "
        "work");
    dcoll_put_hint(&t);
    dcoll_fault_mark(g, msg);
    /* Every rank that arrived times out alike: the lowest of them, as
     * this rank's roll call found them, prints the report. */
    int lead = g->rank;
    for (int r = 0; roll && roll->n == g->size && r < g->rank; r++)
        if (roll->state[r] == DCOLL_ROLL_SAME) {
            lead = r;
            break;
        }
    char name[200], where[400];
    snprintf(where, sizeof(where), "%s #%llu on %s timed out here too; "
             "rank %d reports it", dcoll_kind_name(kind),
             (unsigned long long)seq, dcoll_group_name(g, name, sizeof(name)),
             lead);
    dcoll_fault_say(g, msg, lead == g->rank, where, false, NULL);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s", msg);
}

dcoll_status_t dcoll_fault_failed(struct dcoll_group *g, const char *fn,
                                  uint64_t seq, dcoll_status_t st)
{
    char msg[DCOLL_ERROR_MAX];
    snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
    bool named = !strncmp(msg, fn, strlen(fn)) && msg[strlen(fn)] == ':';
    if (st == DCOLL_ERR_MPI && dcoll_death_of) {
        /* MPI may find a dead peer's endpoint gone before its launcher's
         * notice is read (UCX does, in milliseconds): where a member is
         * said dead within a second, the death is the failure. */
        double until = dcoll_now() + 1.0;
        int dead;
        while ((dead = dcoll_death_of(g, NULL, 0)) < 0 && dcoll_now() < until)
            usleep(20000);
        if (dead >= 0)
            return dcoll_fault_died(g, fn, seq, seq ? g->cur_kind : -1,
                                    dead);
    }
    if (st != DCOLL_ERR_MPI || !seq)
        return named ? st : dcoll_error(st, "%s: %s", fn, msg);
    return dcoll_fault_broke(g, fn, seq, st);
}

dcoll_status_t dcoll_fault_broke(struct dcoll_group *g, const char *fn,
                                 uint64_t seq, dcoll_status_t st)
{
    char msg[DCOLL_ERROR_MAX], name[200];
    snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
    /* An MPI error inside a collective may leave messages behind that a
     * later call would take for its own, and a shared segment's ranks
     * whose steps went apart cannot take another: no later call may run.
     * The others may have seen nothing wrong (a truncation shows only on
     * the receiving side): their next call on the group finds this rank
     * gone at its deadline, and the report says why. */
    char text[2 * DCOLL_ERROR_MAX];
    struct dcoll_text t = {text, sizeof(text), 0};
    const char *why = reason_of(msg, fn);
    dcoll_put(&t, "%s on %s failed (collective #%llu): %s. The group is "
              "unusable from now on; other groups still work (the other "
              "ranks' next call on it times out, naming this error)", fn,
              dcoll_group_name(g, name, sizeof(name)),
              (unsigned long long)seq, why);
    dcoll_put_hint(&t);
    dcoll_fault_mark(g, text);
    leave(g, seq, "had %s in %s #%llu (%s)",
          st == DCOLL_ERR_MPI ? "an MPI error" : "an error", short_fn(fn),
          (unsigned long long)seq, why);
    return dcoll_error(st, "%s", text);
}

/* Margin below g's timeout within which ranks that arrived that far
 * apart treat the agreement as timed out: the first may have given up
 * before it saw the last's arrival. */
static double late_margin(const struct dcoll_group *g)
{
    return g->timeout / 4 < 1.0 ? g->timeout / 4 : 1.0;
}

/* In return mode, a rank that came after the first had given up still
 * completes the agreement (the others' requests stay posted), and would
 * wait alone in the steps after it. Every rank decides by the agreed
 * spread of arrivals, so the ranks that saw the agreement end decide
 * alike with the ones that timed out. */
static bool late(const struct dcoll_group *g, double spread)
{
    return g->recoverable && g->timeout > 0 &&
           spread > g->timeout - late_margin(g);
}

dcoll_status_t dcoll_fault_arrivals(struct dcoll_group *g,
                                    const struct dcoll_coll *c, double spread)
{
    if (!late(g, spread))
        return DCOLL_SUCCESS;
    char name[200], msg[DCOLL_ERROR_MAX];
    /* "fn:" first: the call's end passes it on as it is. */
    snprintf(msg, sizeof(msg), "%s: timed out on %s (collective #%llu, "
             "%s): the ranks arrived %.2f s apart, past its timeout of "
             "%g s less a margin of %g s, so the first to come have given "
             "up waiting or may have. The group is unusable from now on; "
             "other groups still work", c->fn,
             dcoll_group_name(g, name, sizeof(name)),
             (unsigned long long)c->seq, dcoll_kind_name((int)c->kind),
             spread, g->timeout, late_margin(g));
    dcoll_fault_mark(g, msg);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s", msg);
}

dcoll_status_t dcoll_fault_died(struct dcoll_group *g, const char *fn,
                                uint64_t seq, int kind, int dead)
{
    char said[400] = "", name[200], msg[DCOLL_ERROR_MAX];
    /* The launcher's words for the lowest dead member (dead, or one that
     * died since and is lower: either is dead). */
    int first = dcoll_death_of ? dcoll_death_of(g, said, sizeof(said)) : -1;
    if (first >= 0)
        dead = first;
    int world = dcoll_world_of(g, dead);
    char what[120];
    if (seq)
        snprintf(what, sizeof(what), "collective #%llu, %s",
                 (unsigned long long)seq, dcoll_kind_name(kind));
    else
        snprintf(what, sizeof(what), "%s", kind < 0 ? "a send or receive"
                                                    : dcoll_kind_name(kind));
    snprintf(msg, sizeof(msg), "%s on %s failed (%s): rank %d (world %d) "
             "died (%s). %s", fn,
             dcoll_group_name(g, name, sizeof(name)), what, dead, world,
             said[0] ? said : "no reason given",
             g->recoverable
                 ? "The group is unusable from now on; its living ranks "
                   "make a group of themselves with dcoll_group_shrink"
                 : "dcoll ends the job (DCOLL_ON_TIMEOUT=abort) with exit "
                   "code 3; with DCOLL_ON_TIMEOUT=return the call returns "
                   "DCOLL_ERR_RANK_DIED and the living ranks can go on "
                   "with dcoll_group_shrink");
    if (!g->recoverable)
        dcoll_watchdog_end(g, msg, seq, kind, NULL, true);
    dcoll_fault_mark(g, msg);
    /* The lowest living rank prints it; every rank returns it. */
    int lead = g->rank;
    for (int r = 0; r < g->rank; r++) {
        int w = dcoll_world_of(g, r);
        struct dcoll_group one = {.ranks = &w, .size = 1};
        if (!dcoll_death_of || dcoll_death_of(&one, NULL, 0) < 0) {
            lead = r;
            break;
        }
    }
    char where[300];
    snprintf(where, sizeof(where), "a rank of %s died; rank %d reports it",
             dcoll_group_name(g, name, sizeof(name)), lead);
    dcoll_fault_say(g, msg, lead == g->rank, where, false, NULL);
    return dcoll_error(DCOLL_ERR_RANK_DIED, "%s", msg);
}

dcoll_status_t dcoll_fault_outcome(struct dcoll_group *g,
                                   struct dcoll_outcome *out, const char *fn,
                                   uint64_t seq, int kind, int form)
{
    if (out->died) {
        int dead = out->died - 1;
        dcoll_roll_free(&out->roll);
        out->timed_out = false;
        out->died = 0;
        return dcoll_fault_died(g, fn, seq, kind, dead);
    }
    dcoll_status_t st = dcoll_fault_timed_out(g, fn, seq, kind,
                                              seq ? form : DCOLL_FORM_NONE,
                                              out->roll.n ? &out->roll
                                                          : NULL);
    dcoll_roll_free(&out->roll);
    out->timed_out = false;
    return st;
}
