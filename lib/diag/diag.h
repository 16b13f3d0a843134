/* Diagnostics: timeouts, the debug checks, the unusable state a failure
 * leaves on a group, and each group's flight recorder. The core calls in;
 * this layer reaches MPI only through the group's services table. */
#ifndef DCOLL_DIAG_H
#define DCOLL_DIAG_H

#include <stddef.h>
#include <string.h>
#include "tables.h"

struct dcoll_flight;

/* Diagnostics' record of a group (g->diag), made by
 * dcoll_fault_group_init. The core reads slow and flight on every call. */
struct dcoll_diag_group {
    bool slow;             /* failed, or debug checks: see diag/check.c */
    char *failed;          /* why the group is unusable, or NULL */
    struct dcoll_flight *flight;
    const char *said_way[DCOLL_COLL_KIND_COUNT_]; /* DCOLL_DEBUG=detail:
                                  the tuned way each kind last told */
    /* The watchdog's: call #lead_seq hung here, and a lower rank that
     * waits in it too leads the report; this one reports it only if no
     * verdict has come by lead_until. */
    uint64_t lead_seq;
    double lead_until;
    double prof_t0;        /* DCOLL_PROFILE: when the call in hand began
                              (one thread at a time issues calls here) */
};

/* After an agreement that every rank reached (group creation, c), with
 * the ranks' arrivals spread seconds apart: in return mode, ranks that
 * came so far apart that the first may have given up fail the call
 * alike (DCOLL_ERR_TIMEOUT, g marked unusable); else success. */
dcoll_status_t dcoll_fault_arrivals(struct dcoll_group *g,
                                    const struct dcoll_coll *c,
                                    double spread);

extern double dcoll_default_timeout; /* seconds; 0: forever */
#define DCOLL_BUILTIN_TIMEOUT 1800.0   /* without DCOLL_TIMEOUT */
extern bool dcoll_default_recoverable; /* DCOLL_ON_TIMEOUT=return */
extern bool dcoll_debug;             /* DCOLL_DEBUG=detail */
/* The transports' look at work they left running without a wait
 * (struct dcoll_backend's watch), which the watchdog takes each period
 * for every group it watches; set by the core at init (the route). */
extern bool (*dcoll_watch_hook)(struct dcoll_group *g, char *why,
                                size_t len, int *kind);
/* Whether c's buffers are on a GPU, for the debug check's signature
 * (DCOLL_DEBUG=detail); set by the core at init (the route). */
extern bool (*dcoll_gpu_hook)(const struct dcoll_coll *c);
extern unsigned dcoll_flight_size;   /* DCOLL_FLIGHT_RECORDER */
/* DCOLL_REPORT: what ranks other than the one that reports a failure
 * print. brief: one line where the rank is not in the failed call;
 * lines: one line each; quiet: nothing; all: the whole report each. */
enum { DCOLL_REPORT_BRIEF, DCOLL_REPORT_LINES, DCOLL_REPORT_QUIET,
       DCOLL_REPORT_ALL };
extern int dcoll_report_mode;
/* DCOLL_FLIGHT_DIR: where each rank's recorder file goes ("." by
 * default), or, with dcoll_flight_stderr, stderr as text. */
#define DCOLL_FLIGHT_DIR_MAX 4096
extern char dcoll_flight_dir[DCOLL_FLIGHT_DIR_MAX];
extern bool dcoll_flight_stderr;
extern int dcoll_dump_signal;        /* DCOLL_DUMP_SIGNAL; 0: none */
/* DCOLL_PROFILE: the profile at finalize (profile.c), and whether calls
 * are timed for it now (read on the public path). */
enum { DCOLL_PROFILE_OFF, DCOLL_PROFILE_TEXT, DCOLL_PROFILE_JSON,
       DCOLL_PROFILE_ALL };
extern int dcoll_profile_mode;
extern bool dcoll_profiling;
/* Read DCOLL_REPORT, DCOLL_FLIGHT_DIR, DCOLL_PROFILE and
 * DCOLL_DUMP_SIGNAL (by dcoll_fault_env). */
dcoll_status_t dcoll_fault_env_output(void);
/* A timeout given by a program (fn's field name): 0 to 1e9 seconds. */
dcoll_status_t dcoll_fault_timeout_ok(const char *fn, const char *name,
                                      double seconds);
/* An on_timeout value given by a program (fn's field name). */
dcoll_status_t dcoll_fault_mode_ok(const char *fn, const char *name,
                                   int mode);
/* Read DCOLL_TIMEOUT, DCOLL_ON_TIMEOUT, DCOLL_DEBUG and
 * DCOLL_FLIGHT_RECORDER (dcoll_init). */
dcoll_status_t dcoll_fault_env(void);
/* Give g its timeout, what a timeout does, and its recorder (new_group,
 * init). */
dcoll_status_t dcoll_fault_group_init(struct dcoll_group *g, double timeout,
                                      bool recoverable);
void dcoll_fault_group_free(struct dcoll_group *g);
/* Collective over g: every rank must share the debug mode, whether g
 * has a timeout and what it does, or some would talk over the twin
 * communicator or poll while others wait in MPI's own calls; and the
 * settings that change which calls a rank makes (DCOLL_PLAN_CALLS,
 * DCOLL_PROFILE, the GPU layer's stage_chunk and, at init,
 * DCOLL_ON_FAILURE: 0 stop, 1 continue, 2 neither, which the core
 * passes). A difference is refused on every rank, naming the first rank
 * that differs from rank 0 and both values. */
dcoll_status_t dcoll_fault_agree(struct dcoll_group *g, const char *fn,
                                 size_t stage_chunk, int on_failure);
/* The slow path before a call on a group with g->diag->slow set: refuse a
 * failed group, or (debug) check that every rank called the same. */
dcoll_status_t dcoll_fault_check(struct dcoll_group *g,
                                 const struct dcoll_coll *c);
/* Debug: every rank makes the same plan c (collective; its seq is the
 * group's last call's, as it takes no number). */
dcoll_status_t dcoll_fault_check_plan(struct dcoll_group *g,
                                      const struct dcoll_coll *c);
/* Debug: every rank starts the same plan (id: its number among g's
 * plans) in call c, where another rank might start another plan of the
 * same call or call it directly. */
dcoll_status_t dcoll_fault_check_start(struct dcoll_group *g,
                                       const struct dcoll_coll *c,
                                       uint64_t id);
/* A call (fn, seq, kind, form: enum dcoll_form) ran out of time on g.
 * Abort mode: end the job with the report (dcoll_fault_hung). Return
 * mode: make the group unusable, print its flight recorder and return
 * DCOLL_ERR_TIMEOUT with a message naming the ranks that had not arrived.
 * roll may be NULL or empty. */
dcoll_status_t dcoll_fault_timed_out(struct dcoll_group *g, const char *fn,
                                     uint64_t seq, int kind, int form,
                                     struct dcoll_roll *roll);
/* The same for a backend that reported a timeout in out (timed_out set):
 * its roll is used, then freed. */
dcoll_status_t dcoll_fault_outcome(struct dcoll_group *g,
                                   struct dcoll_outcome *out, const char *fn,
                                   uint64_t seq, int kind, int form);
/* A member of g (group rank dead) died, as its launcher said, during
 * call #seq of kind (seq 0: a send or receive; kind -1: which is not
 * known): abort mode ends the job with
 * the report; return mode makes the group unusable and returns
 * DCOLL_ERR_RANK_DIED naming the rank and the launcher's words. */
dcoll_status_t dcoll_fault_died(struct dcoll_group *g, const char *fn,
                                uint64_t seq, int kind, int dead);
/* A call (fn, seq) on g failed with st: name fn in the message; an MPI
 * error inside a collective (seq > 0) also makes the group unusable. */
dcoll_status_t dcoll_fault_failed(struct dcoll_group *g, const char *fn,
                                  uint64_t seq, dcoll_status_t st);
/* A failure the transport says leaves g past use (out->broken; MPI
 * errors too): g is unusable from now on, and this rank leaves it. */
dcoll_status_t dcoll_fault_broke(struct dcoll_group *g, const char *fn,
                                 uint64_t seq, dcoll_status_t st);
/* A counted call c that this member rank refused by its own checks, with
 * status st and the message set: c's number is used (the caller set
 * c->seq). In debug mode, unless checked says the debug exchange already
 * ran, every rank learns it there and the group goes on. Otherwise the
 * group becomes unusable here and the others learn why from this rank's
 * answer to their roll call at their deadline. A group of one rank is
 * left as it was. Returns st, the message extended where the group is
 * of more than one rank. */
dcoll_status_t dcoll_fault_refused(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   dcoll_status_t st, bool checked);
/* A hang in abort mode: print the report (what roll found; without mpi,
 * what this rank alone knows, having waited waited s) and end the job. */
_Noreturn void dcoll_fault_hung(struct dcoll_group *g, const char *fn,
                                uint64_t seq, int kind, int form,
                                struct dcoll_roll *roll, bool mpi,
                                double waited);

/* Print, with g's recorder, the report another rank sent before ending
 * the job, and where this rank stands. */
void dcoll_fault_told(struct dcoll_group *g, struct dcoll_verdict *v);

/* watchdog.c: the thread that watches blocking calls (see there). start
 * after the world is made, stop before MPI ends. add and remove a group
 * before its communicator is used or freed. */
dcoll_status_t dcoll_watchdog_start(struct dcoll_group *world);
void dcoll_watchdog_stop(void);
dcoll_status_t dcoll_watchdog_add(struct dcoll_group *g);
void dcoll_watchdog_remove(struct dcoll_group *g);
/* Print why and g's recorder, tell the ranks roll found (mpi: MPI may be
 * called from this thread) and end the job; once per process. */
_Noreturn void dcoll_watchdog_end(struct dcoll_group *g, const char *why,
                                  uint64_t seq, int kind,
                                  const struct dcoll_roll *roll, bool mpi);

/* A call on g that blocks in MPI while the watchdog watches it, on a
 * group whose timeouts end the job. */
static inline bool dcoll_watched(const struct dcoll_group *g)
{
    return g->timeout > 0 && !g->recoverable;
}

/* flight.c: each group's last calls. Writing an entry is a few stores,
 * inlined into the public path; no locks, as one thread at a time issues
 * calls on a group. */
struct dcoll_flight_entry {
    uint64_t id, seq;      /* seq 0: a send or receive */
    double start, end;     /* coarse clock; end 0: not finished */
    /* end and what follows: what a plan's starts copy (flight_put) */
    int64_t count;
    unsigned char kind_form;      /* kind | form << 6 (one store on the
                                     public path): dcoll_flight_kind/_form */
    signed char dtype, op;        /* op and root as passed: the kind says */
    int root;                     /* whether it has them (group rank) */
    dcoll_status_t status;
    const char *way;       /* what ran it where not MPI's own call: a
                              tuning table's way, or the transport
                              (its table's name); NULL: MPI */
};
#define DCOLL_FLIGHT_MADE_AT offsetof(struct dcoll_flight_entry, end)
_Static_assert(DCOLL_CALL_KIND_COUNT_ <= 64, "a kind fits in 6 bits");
static inline int dcoll_flight_kind(const struct dcoll_flight_entry *e)
{
    return e->kind_form & 63;
}
static inline int dcoll_flight_form_of(const struct dcoll_flight_entry *e)
{
    return e->kind_form >> 6;
}
struct dcoll_flight {
    unsigned cap;          /* entries shown: the last cap */
    uint64_t mask;         /* the ring's size, a power of two >= cap, - 1:
                              a mask instead of a division per call */
    uint64_t n;            /* entries ever written */
    struct dcoll_flight_entry e[];
};
struct dcoll_flight *dcoll_flight_new(unsigned n);
void dcoll_flight_free(struct dcoll_flight *f);
/* An entry's fields that c fixes; a plan keeps them to write its starts'
 * entries by one copy (dcoll_flight_put). */
static inline void dcoll_flight_fill(struct dcoll_flight_entry *e,
                                     const struct dcoll_coll *c)
{
    e->id = 0;
    e->seq = c->seq;
    e->start = c->start;
    e->end = 0;
    e->count = c->count;
    e->kind_form = (unsigned char)(c->kind | (DCOLL_FORM_BLOCKING + c->async)
                                                 << 6); /* or ASYNC */
    e->dtype = (signed char)c->dtype;
    e->op = (signed char)c->op;
    e->root = c->root;
    e->status = DCOLL_SUCCESS;
    e->way = NULL;
}
/* begin returns the entry's id for end (ids start at 1). */
static inline struct dcoll_flight_entry *
dcoll_flight_entry_new(struct dcoll_flight *f, const struct dcoll_coll *c)
{
    struct dcoll_flight_entry *e = &f->e[f->n++ & f->mask];
    dcoll_flight_fill(e, c);
    e->id = f->n;
    return e;
}
static inline uint64_t dcoll_flight_begin(struct dcoll_flight *f,
                                          const struct dcoll_coll *c)
{
    return dcoll_flight_entry_new(f, c)->id;
}
/* A new entry as made, numbered seq and stamped start; the caller ends
 * it itself (no other call on the group writes one meanwhile). */
static inline struct dcoll_flight_entry *
dcoll_flight_put(struct dcoll_flight *f, const struct dcoll_flight_entry *made,
                 uint64_t seq, double start)
{
    struct dcoll_flight_entry *e = &f->e[f->n++ & f->mask];
    memcpy((char *)e + DCOLL_FLIGHT_MADE_AT, (const char *)made +
           DCOLL_FLIGHT_MADE_AT, sizeof(*e) - DCOLL_FLIGHT_MADE_AT);
    e->id = f->n;
    e->seq = seq;
    e->start = start;
    return e;
}
static inline void dcoll_flight_end(struct dcoll_flight *f, uint64_t id,
                                    dcoll_status_t st)
{
    if (!f || !id)
        return;
    struct dcoll_flight_entry *e = &f->e[(id - 1) & f->mask];
    if (e->id != id)
        return; /* written over by later calls */
    e->end = dcoll_coarse_now();
    e->status = st;
}
/* The way a tuning table gave entry id's call (end first). */
static inline void dcoll_flight_way(struct dcoll_flight *f, uint64_t id,
                                    const char *way)
{
    struct dcoll_flight_entry *e = f ? &f->e[(id - 1) & f->mask] : NULL;
    if (e && id && e->id == id)
        e->way = way;
}
/* Entry id's transport, by its table's name, where the route chose
 * another than MPI, the host transport (in its way: the hot path writes
 * no field for it). */
static inline const char *dcoll_flight_tl_name(const struct dcoll_backend *be)
{
    return be->tl == DCOLL_TL_MPI ? NULL : be->name;
}
static inline void dcoll_flight_tl(struct dcoll_flight *f, uint64_t id,
                                   const struct dcoll_backend *be)
{
    dcoll_flight_way(f, id, dcoll_flight_tl_name(be));
}
/* A tuning table gave c the way @p way: its recorder entry names it, and
 * under DCOLL_DEBUG=detail g's rank 0 says so when c's kind takes
 * another way than the last it told (diag/check.c). */
void dcoll_diag_way(struct dcoll_group *g, const struct dcoll_coll *c,
                     const char *way);
/* Print g's recorder to stderr, headed by why. */
void dcoll_flight_print(const struct dcoll_group *g, const char *why);

/* job.c: who this process is in reports and recorder files: the
 * launcher's job and step (SLURM, Open MPI), or rank 0's host and pid,
 * which dcoll_init passes (host0 and pid0) from its gather of host
 * names. Fixed at init, read without locks afterwards. */
struct dcoll_job {
    char id[96];           /* names the job's files; [A-Za-z0-9._-] */
    char host[DCOLL_HOST_LEN];
    long pid;
    int rank, size;        /* in the world */
    char slurm_job[32], slurm_step[32], slurm_node[DCOLL_HOST_LEN];
    char ompi_job[32];
};
void dcoll_job_set(int rank, int size, const char *host0, long pid0);
const struct dcoll_job *dcoll_job(void);

/* profile.c: start at init; count a call of kind on g (counted: a new
 * call, with its bytes; else more time for one counted before, an async
 * call's end); report at finalize (collective over the world, before
 * MPI ends). */
void dcoll_profile_start(void);
void dcoll_profile_call(struct dcoll_group *g, int kind, int64_t bytes,
                        double seconds, bool counted);
dcoll_status_t dcoll_profile_report(struct dcoll_group *world);

/* trace.c: the recorder files. Every group is tracked from its making
 * to its end, so that a file holds all of them. */
dcoll_status_t dcoll_trace_track(struct dcoll_group *g);
void dcoll_trace_untrack(struct dcoll_group *g);
void dcoll_trace_untrack_all(void);
/* This rank's recorder file's path, into path. */
void dcoll_trace_path(char *path, size_t cap);
/* Write this rank's file now (why: what made it), every group's state and
 * recorder as JSON lines; no allocation. A status with the message on
 * failure. */
dcoll_status_t dcoll_trace_write(const char *why);
/* The same from a fatal signal's handler: no lock waited for, no
 * message kept (DCOLL_ERR_IO where it could not be written). */
dcoll_status_t dcoll_trace_write_crash(const char *why);
/* Every tracked group, read without the lock: for that handler only. */
struct dcoll_group *const *dcoll_trace_groups(int *n);
/* crash.c: from init to finalize, a fatal signal (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGABRT) while this rank is in a dcoll call prints the
 * call, the hint and the recorder file's place, writes the file, and
 * passes the signal on to the handler before dcoll's, or the default. */
void dcoll_crash_start(void);
void dcoll_crash_stop(void);
/* A dump on demand: the file, or with DCOLL_FLIGHT_DIR=stderr every
 * group's recorder printed there. */
dcoll_status_t dcoll_trace_dump(const char *why);
/* A failure on g, told by report (whole, without the rank's prefix): the
 * rank that leads (lowest that found it) prints it all; another prints
 * where (one line, or none: DCOLL_REPORT; elsewhere: it is not in the
 * failed call); each writes its recorder file, or, with
 * DCOLL_FLIGHT_DIR=stderr, prints it. kept: the file was written before
 * (dcoll_fault_keep's status), or NULL to write it now. */
void dcoll_fault_say(const struct dcoll_group *g, const char *report,
                     bool lead, const char *where, bool elsewhere,
                     const dcoll_status_t *kept);
/* The recorder file for report, written ahead of dcoll_fault_say where
 * the job may end before it (a rank that tells the others of a hang). */
dcoll_status_t dcoll_fault_keep(const char *report);
/* DCOLL_DUMP_SIGNAL: catch it from init to finalize; the watchdog's
 * dcoll_trace_poll writes the file when it has come. */
dcoll_status_t dcoll_trace_signal_start(void);
void dcoll_trace_signal_stop(void);
void dcoll_trace_poll(void);

#endif
