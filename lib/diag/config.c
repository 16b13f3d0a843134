/* Failure behaviour's configuration: the timeout every group has, what a
 * timeout does (end the job with a report, or leave the group unusable),
 * debug mode and the recorder's size, from the environment and from a
 * program's parameters; and each group's diagnostics record. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "diag.h"

double dcoll_default_timeout = DCOLL_BUILTIN_TIMEOUT;
bool dcoll_default_recoverable;
bool dcoll_debug;
unsigned dcoll_flight_size = 16;
int dcoll_report_mode = DCOLL_REPORT_BRIEF;
char dcoll_flight_dir[DCOLL_FLIGHT_DIR_MAX];
bool dcoll_flight_stderr;
int dcoll_dump_signal;

static dcoll_status_t bad_env(const char *name, const char *value,
                              const char *want)
{
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "dcoll_init: %s='%s' is not %s", name, value, want);
}

static bool timeout_ok(double t)
{
    return t >= 0 && t <= 1e9; /* false for NaN too */
}

dcoll_status_t dcoll_fault_timeout_ok(const char *fn, const char *name,
                                      double seconds)
{
    if (timeout_ok(seconds))
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: %s %g s is not a number of seconds from 0 (wait "
                       "forever) to 1e9", fn, name, seconds);
}

/* "abort" or "return" as a dcoll_on_timeout_t, else -1. */
static int mode_parse(const char *v)
{
    if (!strcmp(v, "abort") || !strcmp(v, "ABORT"))
        return DCOLL_ON_TIMEOUT_ABORT;
    if (!strcmp(v, "return") || !strcmp(v, "RETURN"))
        return DCOLL_ON_TIMEOUT_RETURN;
    return -1;
}

dcoll_status_t dcoll_fault_mode_ok(const char *fn, const char *name,
                                   int mode)
{
    if (mode == DCOLL_ON_TIMEOUT_ABORT || mode == DCOLL_ON_TIMEOUT_RETURN)
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: %s %d is not a dcoll_on_timeout_t "
                       "(DCOLL_ON_TIMEOUT_ABORT 0 or DCOLL_ON_TIMEOUT_RETURN "
                       "1)", fn, name, mode);
}

dcoll_status_t dcoll_fault_env(void)
{
    const char *v = getenv("DCOLL_TIMEOUT");
    dcoll_default_timeout = DCOLL_BUILTIN_TIMEOUT;
    if (v && *v) {
        char *end;
        errno = 0;
        double t = strtod(v, &end);
        if (errno || *end || !timeout_ok(t))
            return bad_env("DCOLL_TIMEOUT", v, "a number of seconds from 0 "
                           "(wait forever) to 1e9");
        dcoll_default_timeout = t;
    }
    v = getenv("DCOLL_ON_TIMEOUT");
    dcoll_default_recoverable = false;
    if (v && *v) {
        int mode = mode_parse(v);
        if (mode < 0)
            return bad_env("DCOLL_ON_TIMEOUT", v, "'abort' or 'return'");
        dcoll_default_recoverable = mode == DCOLL_ON_TIMEOUT_RETURN;
    }
    v = getenv("DCOLL_DEBUG");
    dcoll_debug = false;
    if (v && *v && strcmp(v, "off") && strcmp(v, "OFF") && strcmp(v, "0")) {
        if (strcmp(v, "detail") && strcmp(v, "DETAIL"))
            return bad_env("DCOLL_DEBUG", v, "'detail' or 'off'");
        dcoll_debug = true;
    }
    v = getenv("DCOLL_PLAN_CALLS");
    dcoll_plan_calls = DCOLL_PLAN_CALLS_AUTO;
    if (v && *v) {
        if (!strcmp(v, "persistent"))
            dcoll_plan_calls = DCOLL_PLAN_CALLS_PERSISTENT;
        else if (!strcmp(v, "plain"))
            dcoll_plan_calls = DCOLL_PLAN_CALLS_PLAIN;
        else if (strcmp(v, "auto"))
            return bad_env("DCOLL_PLAN_CALLS", v, "'auto', 'persistent' "
                           "or 'plain'");
    }
    v = getenv("DCOLL_FLIGHT_RECORDER");
    dcoll_flight_size = 16;
    if (v && *v) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < 0 || n > 1000000)
            return bad_env("DCOLL_FLIGHT_RECORDER", v, "a number of calls "
                           "from 0 to 1000000");
        dcoll_flight_size = (unsigned)n;
    }
    return dcoll_fault_env_output();
}

/* v's index among n words, or -1. */
static int word_of(const char *v, const char *const *words, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, words[i]))
            return i;
    return -1;
}

/* A signal's number from "USR1", "SIGUSR1" or "10"; 0 if it names none a
 * program may take for itself. */
static int signal_parse(const char *v)
{
    static const struct { const char *name; int sig; } names[] = {
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
        {"URG", SIGURG}, {"WINCH", SIGWINCH}, {"PWR", SIGPWR},
    };
    if (!strncmp(v, "SIG", 3))
        v += 3;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(v, names[i].name))
            return names[i].sig;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || end == v)
        return 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (n == names[i].sig)
            return (int)n;
    return n >= SIGRTMIN && n <= SIGRTMAX ? (int)n : 0;
}

/* Where reports and recorders go: DCOLL_REPORT, DCOLL_FLIGHT_DIR,
 * DCOLL_PROFILE and DCOLL_DUMP_SIGNAL. */
dcoll_status_t dcoll_fault_env_output(void)
{
    const char *v = getenv("DCOLL_REPORT");
    static const char *const modes[] = {"brief", "lines", "quiet", "all"};
    dcoll_report_mode = DCOLL_REPORT_BRIEF;
    if (v && *v) {
        int m = word_of(v, modes, 4);
        if (m < 0)
            return bad_env("DCOLL_REPORT", v, "'brief', 'lines', 'quiet' "
                           "or 'all'");
        dcoll_report_mode = m;
    }
    v = getenv("DCOLL_FLIGHT_DIR");
    dcoll_flight_stderr = false;
    snprintf(dcoll_flight_dir, sizeof(dcoll_flight_dir), ".");
    if (v && *v) {
        if (!strcmp(v, "stderr")) {
            dcoll_flight_stderr = true;
        } else {
            /* Room for "/dcoll-JOB-RANK.jsonl" after it. */
            if (strlen(v) >= sizeof(dcoll_flight_dir) - 160)
                return bad_env("DCOLL_FLIGHT_DIR", v, "a directory's path "
                               "under 3936 bytes, or 'stderr'");
            struct stat sb;
            if (stat(v, &sb) || !S_ISDIR(sb.st_mode) || access(v, W_OK | X_OK))
                return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                                   "DCOLL_FLIGHT_DIR='%s' is not a directory "
                                   "this process may write in (%s); name "
                                   "one that is, or 'stderr'", v,
                                   stat(v, &sb) ? strerror(errno)
                                   : !S_ISDIR(sb.st_mode) ? "not a directory"
                                   : "no write permission");
            snprintf(dcoll_flight_dir, sizeof(dcoll_flight_dir), "%s", v);
        }
    }
    v = getenv("DCOLL_PROFILE");
    dcoll_profile_mode = DCOLL_PROFILE_OFF;
    if (v && *v && strcmp(v, "off") && strcmp(v, "0")) {
        static const char *const kinds[] = {"text", "json", "all"};
        int m = word_of(v, kinds, 3);
        if (m < 0)
            return bad_env("DCOLL_PROFILE", v, "'text', 'json', 'all' or "
                           "'off'");
        dcoll_profile_mode = m + 1;
    }
    v = getenv("DCOLL_DUMP_SIGNAL");
    dcoll_dump_signal = 0;
    if (v && *v && strcmp(v, "none") && strcmp(v, "0")) {
        dcoll_dump_signal = signal_parse(v);
        if (!dcoll_dump_signal)
            return bad_env("DCOLL_DUMP_SIGNAL", v, "a signal a program may "
                           "take: USR1, USR2, HUP, URG, WINCH, PWR, a "
                           "real-time signal's number, or 'none'");
    }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_fault_group_init(struct dcoll_group *g, double timeout,
                                      bool recoverable)
{
    g->timeout = timeout;
    g->recoverable = recoverable;
    g->seq = 0;
    g->cur_kind = 0;
    g->cur_form = DCOLL_FORM_NONE;
    g->cur_fn = NULL;
    g->busy_start = 0;
    g->busy_seq = 0;
    g->busy_kind = 0;
    g->left = NULL;
    g->left_seq = 0;
    struct dcoll_diag_group *d = calloc(1, sizeof(*d));
    g->diag = d;
    if (!d)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a group's "
                           "diagnostics");
    d->slow = dcoll_debug;
    d->flight = dcoll_flight_new(dcoll_flight_size);
    if (dcoll_flight_size && !d->flight)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a flight "
                           "recorder of %u calls", dcoll_flight_size);
    return DCOLL_SUCCESS;
}

/* The settings every rank of a group must share, as bits of an int:
 * debug 1, a timeout 2, returning 4, DCOLL_PLAN_CALLS 8-16 (a blocking
 * call on some would meet a persistent one on others), DCOLL_PROFILE
 * 32-64 (its gather at finalize would wait for ranks that never come),
 * DCOLL_ON_FAILURE 128-256 (the keeper's ranks wait for each other at
 * init), the staged path's chunk in 4 KiB from bit 9 (ranks would split
 * a call into different numbers of MPI calls). */
enum { AG_DEBUG = 1, AG_TIMEOUT = 2, AG_RETURN = 4, AG_PLAN = 24,
       AG_PROFILE = 96, AG_FAILURE = 384, AG_CHUNK_SHIFT = 9,
       AG_CHUNK = -(1 << AG_CHUNK_SHIFT) };   /* bit 9 up */

static int agreed_bits(const struct dcoll_group *g, size_t stage_chunk,
                       int on_failure)
{
    bool has = g->timeout > 0;
    return (dcoll_debug ? AG_DEBUG : 0) | (has ? AG_TIMEOUT : 0) |
           (has && g->recoverable ? AG_RETURN : 0) | dcoll_plan_calls << 3 |
           dcoll_profile_mode << 5 | on_failure << 7 |
           (int)(stage_chunk >> 12) << AG_CHUNK_SHIFT;
}

/* The settings, in the order a difference among them is named. */
static const struct {
    const char *what;
    int mask;
} agreed[] = {
    {"DCOLL_DEBUG", AG_DEBUG},
    {"whether there is a timeout (0 on some, not others)", AG_TIMEOUT},
    {"DCOLL_PLAN_CALLS", AG_PLAN},
    {"DCOLL_PROFILE", AG_PROFILE},
    {"DCOLL_STAGE_CHUNK", AG_CHUNK},
    {"DCOLL_ON_FAILURE", AG_FAILURE},
    /* Some would poll their own algorithms while others sit in MPI's
     * blocking calls: they would never meet. */
    {"what a timeout does (DCOLL_ON_TIMEOUT, on_timeout)", AG_RETURN},
};

/* What setting agreed[i] is in bits x, in words. */
static void say_setting(int i, int x, char *out, size_t len)
{
    static const char *const calls[] = {"auto", "persistent", "plain"};
    static const char *const prof[] = {"off", "text", "json", "all"};
    static const char *const fails[] = {"stop (or unset)", "continue",
                                        "a value neither stop nor "
                                        "continue"};
    int v = x & agreed[i].mask;
    switch (agreed[i].mask) {
    case AG_DEBUG:
        snprintf(out, len, "%s", v ? "detail" : "off");
        break;
    case AG_TIMEOUT:
        snprintf(out, len, "%s", v ? "a timeout" : "none");
        break;
    case AG_PLAN:
        snprintf(out, len, "%s", calls[v >> 3]);
        break;
    case AG_PROFILE:
        snprintf(out, len, "%s", prof[v >> 5]);
        break;
    case AG_CHUNK:
        snprintf(out, len, "%d KiB", (x >> AG_CHUNK_SHIFT) * 4);
        break;
    case AG_FAILURE:
        snprintf(out, len, "%s", fails[(v >> 7) % 3]);
        break;
    default:
        snprintf(out, len, "%s", v ? "return" : "abort");
        break;
    }
}

dcoll_status_t dcoll_fault_agree(struct dcoll_group *g, const char *fn,
                                 size_t stage_chunk, int on_failure)
{
    int mine = agreed_bits(g, stage_chunk, on_failure);
    int lo = mine, neg = -mine;
    dcoll_status_t st = g->svc->agree(g, &lo);
    if (!st)
        st = g->svc->agree(g, &neg);
    if (st || lo == -neg)
        return st;
    /* They differ: every rank learns which rank first differs from rank
     * 0, and in what, so that each names the same. */
    int *all = malloc(sizeof(int) * (size_t)g->size);
    if (!all)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the ranks "
                           "disagree on a setting that must be alike "
                           "(DCOLL_DEBUG, DCOLL_ON_TIMEOUT, DCOLL_TIMEOUT 0 "
                           "or not, DCOLL_PLAN_CALLS, DCOLL_PROFILE, "
                           "DCOLL_STAGE_CHUNK, DCOLL_ON_FAILURE)", fn);
    if ((st = g->svc->allgather_bytes(g, &mine, all, sizeof(int)))) {
        free(all);
        return st;
    }
    int r = 1;
    while (r < g->size - 1 && all[r] == all[0])
        r++;
    int i = 0;
    while (!((all[r] ^ all[0]) & agreed[i].mask))
        i++;
    char here[32], there[32];
    say_setting(i, all[r], there, sizeof(there));
    say_setting(i, all[0], here, sizeof(here));
    free(all);
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: the ranks disagree on %s: rank %d has %s, rank "
                       "0 %s; set it alike on every rank", fn,
                       agreed[i].what, r, there, here);
}

void dcoll_fault_group_free(struct dcoll_group *g)
{
    struct dcoll_diag_group *d = g->diag;
    if (!d)
        return;
    free(d->failed);
    free((char *)g->left);
    g->left = NULL;
    dcoll_flight_free(d->flight);
    free(d);
    g->diag = NULL;
}
