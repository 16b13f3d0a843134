/* A group's failure state: a timeout or an MPI error inside a collective
 * leaves it unusable (return mode), or ends the job with the report
 * (abort mode). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"

/* g is unusable from now on, for why: its next call says so at once. */
static void mark_failed(struct dcoll_group *g, const char *why)
{
    char *copy = strdup(why);
    if (copy) {
        free(g->diag->failed);
        g->diag->failed = copy;
    }
    g->diag->slow = true;
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
    mark_failed(g, msg);
    dcoll_flight_print(g, msg);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s", msg);
}

dcoll_status_t dcoll_fault_failed(struct dcoll_group *g, const char *fn,
                                  uint64_t seq, dcoll_status_t st)
{
    char msg[DCOLL_ERROR_MAX], name[200];
    snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
    bool named = !strncmp(msg, fn, strlen(fn)) && msg[strlen(fn)] == ':';
    if (st != DCOLL_ERR_MPI || !seq)
        return named ? st : dcoll_error(st, "%s: %s", fn, msg);
    /* An MPI error inside a collective may leave messages behind that a
     * later call would take for its own: no later call may run. */
    char text[2 * DCOLL_ERROR_MAX];
    snprintf(text, sizeof(text), "%s on %s failed (collective #%llu): %s. "
             "The group is unusable from now on; other groups still work",
             fn, dcoll_group_name(g, name, sizeof(name)),
             (unsigned long long)seq, msg);
    mark_failed(g, text);
    return dcoll_error(st, "%s", text);
}

dcoll_status_t dcoll_fault_outcome(struct dcoll_group *g,
                                   struct dcoll_outcome *out, const char *fn,
                                   uint64_t seq, int kind, int form)
{
    dcoll_status_t st = dcoll_fault_timed_out(g, fn, seq, kind,
                                              seq ? form : DCOLL_FORM_NONE,
                                              out->roll.n ? &out->roll
                                                          : NULL);
    dcoll_roll_free(&out->roll);
    out->timed_out = false;
    return st;
}
