/* A fatal signal inside a dcoll call: before the process dies, say which
 * call this rank was in (its number, kind, type, count), that debug mode
 * compares every rank's call before any data moves, and write the rank's
 * recorder file; then pass the signal on, so the process still dies by
 * it and the launcher sees the same status. A crash outside any dcoll
 * call is passed on untouched.
 *
 * The handler allocates nothing and takes no lock it could wait on:
 * messages are formatted into static buffers and written with write(2),
 * the recorder file only if its lock is free. A group's in_call (core's
 * one-thread guard) says a call is in flight on it. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"

static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFATAL (int)(sizeof(fatal) / sizeof(fatal[0]))
static struct sigaction before[NFATAL];
static bool installed[NFATAL];
static atomic_int reported;

static const char *name_of(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV, a bad memory access";
    case SIGBUS: return "SIGBUS, a bad memory access";
    case SIGFPE: return "SIGFPE, an arithmetic fault";
    case SIGILL: return "SIGILL, an illegal instruction";
    default: return "SIGABRT, an abort";
    }
}

/* What call fn on g is, from its recorder entry where it has one. */
static void describe(struct dcoll_group *g, const char *fn, char *out,
                     size_t cap)
{
    char name[200];
    dcoll_group_name(g, name, sizeof(name));
    uint64_t seq = DCOLL_PEEK(g->seq);
    const struct dcoll_flight *f = g->diag ? g->diag->flight : NULL;
    const struct dcoll_flight_entry *e =
        f && f->n ? &f->e[(f->n - 1) & f->mask] : NULL;
    int n = snprintf(out, cap, "%s on %s", fn, name);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (!e) {
        snprintf(out + n, cap - (size_t)n, " (its latest call: #%llu, %s)",
                 (unsigned long long)seq,
                 dcoll_kind_name(DCOLL_PEEK(g->cur_kind)));
        return;
    }
    int kind = dcoll_flight_kind(e);
    int m = snprintf(out + n, cap - (size_t)n, " (%s%llu, %s",
                     e->seq ? "collective #" : "point-to-point, entry ",
                     (unsigned long long)(e->seq ? e->seq : e->id),
                     dcoll_kind_name(kind));
    if (m < 0 || (size_t)(n += m) >= cap)
        return;
    if (dcoll_kind_moves_data(kind))
        m = snprintf(out + n, cap - (size_t)n, " %s%s%s count %lld",
                     dcoll_dtype_name((dcoll_dtype_t)e->dtype),
                     dcoll_kind_has(kind, DCOLL_KF_OP) ? " " : "",
                     dcoll_kind_has(kind, DCOLL_KF_OP)
                         ? dcoll_op_name((dcoll_op_t)e->op) : "",
                     (long long)e->count);
    else
        m = 0;
    if (m < 0 || (size_t)(n += m) >= cap)
        return;
    if (dcoll_kind_has(kind, DCOLL_KF_ROOT | DCOLL_KF_PEER) && e->root >= 0)
        m = snprintf(out + n, cap - (size_t)n, ", %s %d",
                     dcoll_kind_has(kind, DCOLL_KF_ROOT) ? "root" : "peer",
                     e->root);
    else
        m = 0;
    if (m < 0 || (size_t)(n += m) >= cap)
        return;
    snprintf(out + n, cap - (size_t)n, ")");
}

static void report(int sig)
{
    static char line[DCOLL_FLIGHT_DIR_MAX + 2048], what[800];
    static char why[1000];
    int n = 0;
    struct dcoll_group *const *gs = dcoll_trace_groups(&n);
    struct dcoll_group *g = NULL;
    const char *fn = NULL;
    for (int i = 0; gs && i < n && !fn; i++)
        if ((fn = atomic_load_explicit(&gs[i]->in_call,
                                       memory_order_relaxed)))
            g = gs[i];
    if (!fn)
        return;   /* not in a dcoll call: not dcoll's to tell */
    describe(g, fn, what, sizeof(what));
    const struct dcoll_job *j = dcoll_job();
    snprintf(why, sizeof(why), "signal %d (%s) in %s", sig, name_of(sig),
             what);
    bool text = dcoll_flight_stderr;
    bool kept = !text && !dcoll_trace_write_crash(why);
    char path[DCOLL_FLIGHT_DIR_MAX + 160] = "";
    if (kept)
        dcoll_trace_path(path, sizeof(path));
    snprintf(line, sizeof(line), "dcoll[%d]: signal %d (%s) while this rank "
             "was in %s; the process ends by it. A crash inside a collective "
             "is most often a buffer smaller than another rank's call "
             "writes into it (counts or types that differ across ranks, or "
             "a rank that skipped a call)%s. Job %s: rank %d on %s, pid "
             "%ld; %s%s\n", j->rank, sig, name_of(sig), what,
             dcoll_debug ? "" : ": DCOLL_DEBUG=detail checks each call "
                                "against the others' before any data move",
             j->id, j->rank, j->host, j->pid,
             kept ? "its flight recorder is in " :
             text ? "its flight recorder follows" :
                    "its flight recorder file could not be written",
             path);
    ssize_t w = write(STDERR_FILENO, line, strlen(line));
    (void)w;
    if (text)
        dcoll_flight_print(g, why);
}

static void on_fatal(int sig)
{
    if (!atomic_exchange(&reported, 1))
        report(sig);
    /* Passed on: the handler before dcoll's (a function, or the default;
     * never ignored, or a fault would repeat without end), raised again
     * once this handler returns, as the signal is blocked until then. A
     * fault from an instruction faults again there in any case. */
    for (int i = 0; i < NFATAL; i++) {
        if (fatal[i] != sig)
            continue;
        struct sigaction sa = before[i];
        if (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN)
            sa.sa_handler = SIG_DFL;
        sigaction(sig, &sa, NULL);
        installed[i] = false;
    }
    /* A coverage build's counters, which the signal's end would drop
     * (nothing otherwise; libgcov is not async-signal-safe, but only
     * coverage builds call it). */
    dcoll_counters_flush();
    raise(sig);
}

void dcoll_crash_start(void)
{
    atomic_store(&reported, 0);
    for (int i = 0; i < NFATAL; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        installed[i] = sigaction(fatal[i], &sa, &before[i]) == 0;
    }
}

void dcoll_crash_stop(void)
{
    for (int i = 0; i < NFATAL; i++) {
        struct sigaction now;
        /* A handler the program set since is its own: left alone. */
        if (installed[i] && !sigaction(fatal[i], NULL, &now) &&
            !(now.sa_flags & SA_SIGINFO) && now.sa_handler == on_fatal)
            sigaction(fatal[i], &before[i], NULL);
        installed[i] = false;
    }
}
