/* The recorder files: each rank writes its groups' state and flight
 * recorders to DCOLL_FLIGHT_DIR/dcoll-JOB-RANK.jsonl, one JSON object a
 * line (docs/trace.md has the schema), when a call times out or the ranks
 * disagree, on dcoll_dump, and on DCOLL_DUMP_SIGNAL. A job of thousands of
 * ranks then leaves one report on stderr and a file per rank to merge,
 * instead of every rank's recorder interleaved on stderr.
 *
 * Writing needs no allocation: lines are formatted into a fixed buffer
 * and written out as it fills, to a temporary file renamed over the last
 * one, so a reader never sees half a file. One writer at a time (the
 * watchdog's dump and a failing call's may meet). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "diag.h"

#define TRACE_VERSION 1

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dcoll_group **groups;   /* every live group, under lock */
static int ngroups, capgroups;

dcoll_status_t dcoll_trace_track(struct dcoll_group *g)
{
    pthread_mutex_lock(&lock);
    if (ngroups == capgroups) {
        int cap = capgroups ? 2 * capgroups : 16;
        struct dcoll_group **p = realloc(groups, sizeof(*p) * (size_t)cap);
        if (!p) {
            pthread_mutex_unlock(&lock);
            return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for the list "
                               "of %d groups the recorder files hold", cap);
        }
        groups = p;
        capgroups = cap;
    }
    groups[ngroups++] = g;
    pthread_mutex_unlock(&lock);
    return DCOLL_SUCCESS;
}

void dcoll_trace_untrack(struct dcoll_group *g)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ngroups; i++)
        if (groups[i] == g) {
            memmove(&groups[i], &groups[i + 1],
                    sizeof(*groups) * (size_t)(ngroups - i - 1));
            ngroups--;
            break;
        }
    pthread_mutex_unlock(&lock);
}

void dcoll_trace_untrack_all(void)
{
    pthread_mutex_lock(&lock);
    free(groups);
    groups = NULL;
    ngroups = capgroups = 0;
    pthread_mutex_unlock(&lock);
}

void dcoll_trace_path(char *path, size_t cap)
{
    const struct dcoll_job *j = dcoll_job();
    snprintf(path, cap, "%s/dcoll-%s-%d.jsonl", dcoll_flight_dir,
             j->id[0] ? j->id : "unknown", j->rank);
}

/* A file being written: lines gather in buf. */
struct out {
    int fd;
    int err;               /* errno of the first failed write, or 0 */
    size_t used;
    char buf[16384];
};

static void flush_out(struct out *o)
{
    size_t at = 0;
    while (at < o->used && !o->err) {
        ssize_t n = write(o->fd, o->buf + at, o->used - at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            o->err = n < 0 ? errno : EIO;
        else
            at += (size_t)n;
    }
    o->used = 0;
}

static void put(struct out *o, const char *fmt, ...) DCOLL_PRINTF(2, 3);
static void put(struct out *o, const char *fmt, ...)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t room = sizeof(o->buf) - o->used;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->used, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            o->used += (size_t)n;
            return;
        }
        /* Did not fit: write what is there and try once more, or keep
         * what fits of a line longer than the buffer. */
        if (pass || !o->used) {
            o->used = sizeof(o->buf) - 1;
            return;
        }
        flush_out(o);
    }
}

/* s as a JSON string, quotes included; NULL as null. */
static void put_str(struct out *o, const char *s)
{
    if (!s) {
        put(o, "null");
        return;
    }
    char esc[512];
    size_t k = 0;
    put(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (k + 8 > sizeof(esc)) {
            put(o, "%.*s", (int)k, esc);
            k = 0;
        }
        if (*p == '"' || *p == '\\') {
            esc[k++] = '\\';
            esc[k++] = (char)*p;
        } else if (*p < 0x20) {
            k += (size_t)snprintf(esc + k, sizeof(esc) - k, "\\u%04x", *p);
        } else {
            esc[k++] = (char)*p;
        }
    }
    put(o, "%.*s\"", (int)k, esc);
}

static const char *form_word(int form)
{
    return form == DCOLL_FORM_ASYNC      ? "async"
           : form == DCOLL_FORM_BLOCKING ? "blocking"
           : form == DCOLL_FORM_PLAN ||
                     form == DCOLL_FORM_PLAN_ASYNC ? "plan"
                                         : NULL;
}

static void put_head(struct out *o, const char *why)
{
    const struct dcoll_job *j = dcoll_job();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    double clock = dcoll_now();
    put(o, "{\"schema\":\"dcoll-trace\",\"version\":%d,\"job\":", TRACE_VERSION);
    put_str(o, j->id);
    put(o, ",\"rank\":%d,\"size\":%d,\"host\":", j->rank, j->size);
    put_str(o, j->host);
    put(o, ",\"pid\":%ld,\"reason\":", j->pid);
    put_str(o, why);
    put(o, ",\"wall\":%.6f,\"clock\":%.6f,\"clock_resolution\":%g",
        (double)wall.tv_sec + wall.tv_nsec * 1e-9, clock, DCOLL_COARSE_S);
    /* The launcher's ids, where it set them. */
    const struct { const char *key, *value; } ids[] = {
        {"slurm_job_id", j->slurm_job}, {"slurm_step_id", j->slurm_step},
        {"slurmd_nodename", j->slurm_node}, {"ompi_jobid", j->ompi_job},
    };
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (ids[i].value[0]) {
            put(o, ",\"%s\":", ids[i].key);
            put_str(o, ids[i].value);
        }
    put(o, "}\n");
}

/* What every rank must pass alike in e's call, as one number: kind,
 * type, count (not for the vector kinds, where each rank has its own),
 * op and root where the kind has them, and form. Equal on every rank
 * that made the same call, so a reader compares ranks without parsing
 * the rest of the line. */
static uint64_t signature(const struct dcoll_flight_entry *e)
{
    int kind = dcoll_flight_kind(e);
    int64_t v[6] = {
        kind,
        !dcoll_kind_moves_data(kind) ? -1 : e->dtype,
        dcoll_kind_has(kind, DCOLL_KF_VEC | DCOLL_KF_NEIGHBOR) ||
                !dcoll_kind_moves_data(kind)
            ? -1 : e->count,
        dcoll_kind_has(kind, DCOLL_KF_OP) ? e->op : -1,
        dcoll_kind_has(kind, DCOLL_KF_ROOT) ? e->root : -1,
        dcoll_flight_form_of(e),
    };
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 6; i++) {
        h = (h ^ (uint64_t)v[i]) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return h;
}

/* g's state, then its recorder's entries, oldest first. The calling
 * thread may be writing them meanwhile: each field is read once. */
static void put_group(struct out *o, struct dcoll_group *g)
{
    char name[200];
    uint64_t seq = DCOLL_PEEK(g->seq);
    int kind = DCOLL_PEEK(g->cur_kind), form = DCOLL_PEEK(g->cur_form);
    double busy = DCOLL_PEEK(g->busy_start);
    const char *left = DCOLL_PEEK(g->left);
    const char *failed = g->diag ? g->diag->failed : NULL;
    put(o, "{\"group\":%d,\"name\":", g->id);
    put_str(o, dcoll_group_name(g, name, sizeof(name)));
    put(o, ",\"group_rank\":%d,\"group_size\":%d,\"calls\":%llu", g->rank,
        g->size, (unsigned long long)seq);
    if (seq) {
        put(o, ",\"latest\":{\"call\":%llu,\"kind\":",
            (unsigned long long)seq);
        put_str(o, dcoll_kind_name(kind));
        put(o, ",\"form\":");
        put_str(o, form_word(form));
        put(o, "}");
    }
    put(o, ",\"state\":\"%s\"", failed ? "failed" : left ? "left"
                                : busy > 0 ? "waiting" : "idle");
    /* A send or receive not finished, newest in the recorder: what a
     * rank waiting there (or in a wait on its work) is in. */
    const struct dcoll_flight *rf = g->diag ? g->diag->flight : NULL;
    if (rf && rf->n) {
        struct dcoll_flight_entry e = rf->e[(rf->n - 1) & rf->mask];
        int k = dcoll_flight_kind(&e);
        if (!e.seq && e.end <= 0 &&
            (k == DCOLL_COLL_SEND || k == DCOLL_COLL_RECV)) {
            put(o, ",\"p2p\":{\"kind\":");
            put_str(o, dcoll_kind_name(k));
            put(o, ",\"peer\":%d,\"since\":%.6f}", e.root, e.start);
        }
    }
    if (busy > 0)
        put(o, ",\"waiting_since\":%.6f", busy);
    if (failed || left) {
        put(o, ",\"why\":");
        put_str(o, failed ? failed : left);
    }
    put(o, ",\"timeout\":%g,\"on_timeout\":\"%s\"", g->timeout,
        g->recoverable ? "return" : "abort");
    const struct dcoll_flight *f = g->diag ? g->diag->flight : NULL;
    uint64_t n = f ? f->n : 0, shown = f ? (n < f->cap ? n : f->cap) : 0;
    put(o, ",\"recorded\":%llu,\"kept\":%llu}\n", (unsigned long long)n,
        (unsigned long long)shown);
    for (uint64_t i = n - shown; i < n; i++) {
        struct dcoll_flight_entry e = f->e[i & f->mask];
        put(o, "{\"call\":%llu,\"entry\":%llu,\"group\":%d,\"sig\":"
            "\"%016llx\",\"kind\":", (unsigned long long)e.seq,
            (unsigned long long)e.id, g->id,
            (unsigned long long)signature(&e));
        int kind = dcoll_flight_kind(&e);
        put_str(o, dcoll_kind_name(kind));
        if (dcoll_kind_moves_data(kind)) {
            put(o, ",\"dtype\":");
            put_str(o, dcoll_dtype_name((dcoll_dtype_t)e.dtype));
            put(o, ",\"count\":%lld,\"bytes\":%lld", (long long)e.count,
                (long long)e.count *
                    (long long)dcoll_dtype_sizes[(unsigned char)e.dtype %
                                                 DCOLL_DTYPE_COUNT_]);
        }
        if (dcoll_kind_has(kind, DCOLL_KF_OP)) {
            put(o, ",\"op\":");
            put_str(o, dcoll_op_name((dcoll_op_t)e.op));
        }
        if (dcoll_kind_has(kind, DCOLL_KF_ROOT) && e.root >= 0)
            put(o, ",\"root\":%d", e.root);
        if (dcoll_kind_has(kind, DCOLL_KF_PEER) && e.root >= 0)
            put(o, ",\"peer\":%d", e.root);
        put(o, ",\"form\":");
        put_str(o, form_word(dcoll_flight_form_of(&e)));
        put(o, ",\"start\":%.6f,\"duration\":", e.start);
        if (e.end > 0)
            /* %.6g: the coarse clock's ms need no more, and a short
             * line is a fast read at thousands of ranks. */
            put(o, "%.6g,\"status\":%d", e.end - e.start, (int)e.status);
        else
            put(o, "null,\"status\":null");
        put(o, ",\"by\":");
        put_str(o, e.way ? e.way : "mpi");
        put(o, "}\n");
    }
}

struct dcoll_group *const *dcoll_trace_groups(int *n)
{
    *n = ngroups;
    return groups;
}

/* The file, under lock; crash: only if the lock is free (a thread that
 * holds it may be the one that crashed), and no message is kept. */
static dcoll_status_t write_file(const char *why, bool crash)
{
    static struct out o;   /* under lock: no allocation, no big stack */
    char path[DCOLL_FLIGHT_DIR_MAX + 160], tmp[sizeof(path) + 8];
    dcoll_trace_path(path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (!crash)
        pthread_mutex_lock(&lock);
    else if (pthread_mutex_trylock(&lock))
        return DCOLL_ERR_IO;
    o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o.fd < 0) {
        int err = errno;
        pthread_mutex_unlock(&lock);
        if (crash)
            return DCOLL_ERR_IO;
        return dcoll_error(DCOLL_ERR_IO, "cannot write the flight recorder "
                           "file %s: %s", tmp, strerror(err));
    }
    o.err = 0;
    o.used = 0;
    put_head(&o, why);
    for (int i = 0; i < ngroups; i++)
        put_group(&o, groups[i]);
    flush_out(&o);
    int err = o.err;
    if (close(o.fd) && !err)
        err = errno;
    if (!err && rename(tmp, path))
        err = errno;
    pthread_mutex_unlock(&lock);
    if (err) {
        unlink(tmp);
        if (crash)
            return DCOLL_ERR_IO;
        return dcoll_error(DCOLL_ERR_IO, "cannot write the flight recorder "
                           "file %s: %s", path, strerror(err));
    }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_trace_write(const char *why)
{
    return write_file(why, false);
}

dcoll_status_t dcoll_trace_write_crash(const char *why)
{
    return write_file(why, true);
}

dcoll_status_t dcoll_trace_dump(const char *why)
{
    if (!dcoll_flight_stderr)
        return dcoll_trace_write(why);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ngroups; i++)
        dcoll_flight_print(groups[i], why);
    pthread_mutex_unlock(&lock);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_fault_keep(const char *report)
{
    return dcoll_flight_stderr ? DCOLL_SUCCESS : dcoll_trace_write(report);
}

void dcoll_fault_say(const struct dcoll_group *g, const char *report,
                     bool lead, const char *where, bool elsewhere,
                     const dcoll_status_t *kept)
{
    const struct dcoll_job *j = dcoll_job();
    int me = j->rank;
    char path[DCOLL_FLIGHT_DIR_MAX + 160], saved[400] = "";
    bool text = dcoll_flight_stderr;
    if (!text) {
        dcoll_trace_path(path, sizeof(path));
        if (kept ? *kept : dcoll_trace_write(report)) {
            /* Keep it on stderr instead, and say why. */
            snprintf(saved, sizeof(saved), "; %s, so it follows here",
                     dcoll_last_error());
            text = true;
        }
    }
    bool full = lead || dcoll_report_mode == DCOLL_REPORT_ALL;
    bool line = !full && (dcoll_report_mode == DCOLL_REPORT_LINES ||
                          (dcoll_report_mode == DCOLL_REPORT_BRIEF &&
                           elsewhere));
    char msg[DCOLL_FLIGHT_DIR_MAX + 4800];
    if (full && dcoll_flight_stderr)
        snprintf(msg, sizeof(msg), "%s. Job %s: rank %d on %s, pid %ld",
                 report, j->id, me, j->host, j->pid);
    else if (full)
        snprintf(msg, sizeof(msg), "%s. Job %s: rank %d on %s, pid %ld; "
                 "each rank's flight recorder is in %s/dcoll-%s-RANK.jsonl%s",
                 report, j->id, me, j->host, j->pid, dcoll_flight_dir,
                 j->id, saved);
    else if (dcoll_flight_stderr)
        snprintf(msg, sizeof(msg), "rank %d on %s, pid %ld: %s", me,
                 j->host, j->pid, where);
    else
        snprintf(msg, sizeof(msg), "rank %d on %s, pid %ld: %s; its flight "
                 "recorder is in %s%s", me, j->host, j->pid, where, path,
                 saved);
    if (text) {
        /* Today's form: the recorder on stderr, headed by what this rank
         * says (a rank that says nothing still shows its recorder). */
        dcoll_flight_print(g, full || line ? msg : where);
    } else if (full || line) {
        fprintf(stderr, "dcoll[%d]: %s\n", me, msg);
        fflush(stderr);
    }
}

/* DCOLL_DUMP_SIGNAL: the handler only notes it; the watchdog writes. */
static atomic_int asked;
static struct sigaction before;
static int caught;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&asked, 1);
}

dcoll_status_t dcoll_trace_signal_start(void)
{
    atomic_store(&asked, 0);
    caught = 0;
    if (!dcoll_dump_signal)
        return DCOLL_SUCCESS;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(dcoll_dump_signal, &sa, &before))
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: cannot catch "
                           "signal %d (DCOLL_DUMP_SIGNAL): %s",
                           dcoll_dump_signal, strerror(errno));
    caught = dcoll_dump_signal;
    return DCOLL_SUCCESS;
}

void dcoll_trace_signal_stop(void)
{
    if (caught)
        sigaction(caught, &before, NULL);
    caught = 0;
}

void dcoll_trace_poll(void)
{
    if (!atomic_exchange(&asked, 0))
        return;
    char why[64];
    snprintf(why, sizeof(why), "dump asked by signal %d (%s)", caught,
             strsignal(caught));
    dcoll_status_t st = dcoll_trace_dump(why);
    const struct dcoll_job *j = dcoll_job();
    /* Thousands of ranks write at once: one says where, and a rank that
     * could not write says why. */
    if (st)
        fprintf(stderr, "dcoll[%d]: %s\n", j->rank, dcoll_last_error());
    else if (j->rank == 0 && !dcoll_flight_stderr)
        fprintf(stderr, "dcoll[0]: %s: each rank wrote its flight recorder "
                "to %s/dcoll-%s-RANK.jsonl\n", why, dcoll_flight_dir, j->id);
}
