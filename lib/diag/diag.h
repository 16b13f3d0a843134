/* Diagnostics: timeouts, the debug checks, the unusable state a failure
 * leaves on a group, and each group's flight recorder. The core calls in;
 * this layer reaches MPI only through the group's services table. */
#ifndef DCOLL_DIAG_H
#define DCOLL_DIAG_H

#include "tables.h"

extern double dcoll_default_timeout; /* seconds; 0: forever */
extern bool dcoll_debug;             /* DCOLL_DEBUG=detail */
extern unsigned dcoll_flight_size;   /* DCOLL_FLIGHT_RECORDER */
/* A timeout given by a program (fn's field name): 0 to 1e9 seconds. */
dcoll_status_t dcoll_fault_timeout_ok(const char *fn, const char *name,
                                      double seconds);
/* Read DCOLL_TIMEOUT, DCOLL_DEBUG and DCOLL_FLIGHT_RECORDER (dcoll_init). */
dcoll_status_t dcoll_fault_env(void);
/* Give g its timeout and recorder (new_group, init). */
dcoll_status_t dcoll_fault_group_init(struct dcoll_group *g, double timeout);
void dcoll_fault_group_free(struct dcoll_group *g);
/* Collective over g: every rank must share the debug mode and whether g
 * has a timeout, or some would talk over the twin communicator while
 * others wait in MPI's own calls. */
dcoll_status_t dcoll_fault_agree(struct dcoll_group *g, const char *fn);
/* "the world" or "group 3 (ranks {0,2,5})", into buf. */
const char *dcoll_group_name(const struct dcoll_group *g, char *buf,
                             size_t len);
/* The slow path before a call on a group with g->slow set: refuse a
 * failed group, or (debug) check that every rank called the same. */
dcoll_status_t dcoll_fault_check(struct dcoll_group *g,
                                 const struct dcoll_coll *c);
/* A call (fn, seq, kind) ran out of time on g: make the group unusable,
 * print its flight recorder and return DCOLL_ERR_TIMEOUT with a message
 * naming the ranks that had not arrived. roll may be NULL or empty. */
dcoll_status_t dcoll_fault_timed_out(struct dcoll_group *g, const char *fn,
                                     uint64_t seq, int kind,
                                     const struct dcoll_roll *roll);
/* The same for a backend that reported a timeout in out (timed_out set):
 * its roll is used, then freed. */
dcoll_status_t dcoll_fault_outcome(struct dcoll_group *g,
                                   struct dcoll_outcome *out, const char *fn,
                                   uint64_t seq, int kind);

/* flight.c: each group's last calls. */
struct dcoll_flight *dcoll_flight_new(unsigned n);
void dcoll_flight_free(struct dcoll_flight *f);
/* begin returns the entry's id for end (ids start at 1). */
uint64_t dcoll_flight_begin(struct dcoll_flight *f,
                            const struct dcoll_coll *c);
void dcoll_flight_end(struct dcoll_flight *f, uint64_t id, dcoll_status_t st);
/* Print g's recorder to stderr, headed by why. */
void dcoll_flight_print(const struct dcoll_group *g, const char *why);

#endif
