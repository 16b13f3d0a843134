/* Inside diagnostics: the report text the failure state (failed.c) and
 * the debug check (check.c) write, built by report.c. */
#ifndef DCOLL_DIAG_REPORT_H
#define DCOLL_DIAG_REPORT_H

#include "diag.h"

/* A message being written: put appends (printf-style), cut at cap. */
struct dcoll_text {
    char *buf;
    size_t cap, off;
};
void dcoll_put(struct dcoll_text *t, const char *fmt, ...) DCOLL_PRINTF(2, 3);
/* "rank 3" or "ranks 0,1,2" for the group ranks r with pick(r) true,
 * and their world ranks after them in a sub-group. */
void dcoll_put_ranks(struct dcoll_text *t, const struct dcoll_group *g,
                     bool (*pick)(const void *, int), const void *arg);
/* A timed-out call's report: its head, then what roll found. */
void dcoll_put_report(struct dcoll_text *t, struct dcoll_group *g,
                      const char *fn, uint64_t seq, int kind, int form,
                      const struct dcoll_roll *roll);

/* The advice a timeout's or an MPI error's report ends with, where
 * debug mode is off. */
void dcoll_put_hint(struct dcoll_text *t);
/* g is unusable from now on, for why: its next call says so at once. */
void dcoll_fault_mark(struct dcoll_group *g, const char *why);
/* Debug mode: this rank refused call c for why; it takes its part in
 * the descriptor exchange saying so. True when every rank learnt it
 * there (none runs c, the group goes on); false when the exchange
 * failed, and the group with it (check.c). */
bool dcoll_fault_check_refused(struct dcoll_group *g,
                               const struct dcoll_coll *c, const char *why);

#endif
