/* Failure behaviour: the timeout every group has, what a timeout does
 * (end the job with a report, or leave the group unusable), and the debug
 * mode that checks, before a collective runs, that every rank of the
 * group called the same one. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"

double dcoll_default_timeout = 1800;
bool dcoll_default_recoverable;
bool dcoll_debug;
unsigned dcoll_flight_size = 16;

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

int dcoll_fault_mode_parse(const char *v)
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
    dcoll_default_timeout = 1800;
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
        int mode = dcoll_fault_mode_parse(v);
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

dcoll_status_t dcoll_fault_agree(struct dcoll_group *g, const char *fn)
{
    bool has = g->timeout > 0;
    int mine = (dcoll_debug ? 1 : 0) | (has ? 2 : 0) |
               (has && g->recoverable ? 4 : 0);
    int lo = mine, neg = -mine;
    dcoll_status_t st = g->svc->agree(g, &lo);
    if (!st)
        st = g->svc->agree(g, &neg);
    if (st || lo == -neg)
        return st;
    int differ = lo ^ -neg;
    const char *what, *here;
    if (differ & 1) {
        what = "DCOLL_DEBUG";
        here = dcoll_debug ? "detail" : "off";
    } else if (differ & 2) {
        what = "whether there is a timeout (0 on some, not others)";
        here = has ? "a timeout" : "none";
    } else {
        /* Some would poll their own algorithms while others sit in MPI's
         * blocking calls: they would never meet. */
        what = "what a timeout does (DCOLL_ON_TIMEOUT, on_timeout)";
        here = g->recoverable ? "return" : "abort";
    }
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: the ranks disagree on %s (this one: %s); set "
                       "it alike on every rank", fn, what, here);
}

void dcoll_fault_group_free(struct dcoll_group *g)
{
    struct dcoll_diag_group *d = g->diag;
    if (!d)
        return;
    free(d->failed);
    dcoll_flight_free(d->flight);
    free(d);
    g->diag = NULL;
}

static int world_of(const struct dcoll_group *g, int r)
{
    return g->ranks ? g->ranks[r] : r;
}

/* Append ", rank r" or ", group rank r (world w)" lists to a buffer. */
struct text {
    char *buf;
    size_t cap, off;
};

static void put(struct text *t, const char *fmt, ...) DCOLL_PRINTF(2, 3);

static void put(struct text *t, const char *fmt, ...)
{
    if (t->off >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->off, t->cap - t->off, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->off += (size_t)n;
}

/* "rank 3" or "ranks 0,1,2" for the group ranks r with pick(r) true,
 * and their world ranks after them in a sub-group. */
static void put_ranks(struct text *t, const struct dcoll_group *g,
                      bool (*pick)(const void *, int), const void *arg)
{
    int n = 0;
    for (int r = 0; r < g->size; r++)
        n += pick(arg, r);
    for (int pass = 0; pass < (g->ranks ? 2 : 1); pass++) {
        put(t, "%s", pass ? " (world " : n == 1 ? "rank " : "ranks ");
        int shown = 0;
        for (int r = 0; r < g->size; r++) {
            if (!pick(arg, r))
                continue;
            if (shown == 16) {
                put(t, ", ... %d more", n - 16);
                break;
            }
            put(t, "%s%d", shown++ ? "," : "",
                pass ? g->ranks[r] : r);
        }
        if (pass)
            put(t, ")");
    }
}

/* ---- timeouts ---- */

struct roll_pick {
    const struct dcoll_roll *roll;
    int state;
};

static bool pick_state(const void *arg, int r)
{
    const struct roll_pick *p = arg;
    return p->roll->state[r] == p->state;
}

static const char *form_name(int form)
{
    return form == DCOLL_FORM_ASYNC      ? "async"
           : form == DCOLL_FORM_BLOCKING ? "blocking"
                                         : "-";
}

static bool pick_behind(const void *arg, int r)
{
    const struct roll_pick *p = arg;
    return p->roll->state[r] == DCOLL_ROLL_OTHER &&
           p->roll->seq[r] < (uint64_t)p->state;
}

struct form_pick {
    const struct dcoll_roll *roll;
    int form;
};

static bool pick_form(const void *arg, int r)
{
    const struct form_pick *p = arg;
    return p->roll->state[r] == DCOLL_ROLL_SAME && p->roll->form[r] == p->form;
}

/* The picked ranks by host, where the group spans several hosts and each
 * one's is known: ", on nodeA {2,3}, nodeB {5}" (group ranks). */
static void put_hosts(struct text *t, const struct dcoll_group *g,
                      bool (*pick)(const void *, int), const void *arg)
{
    const char *h0 = dcoll_host_of(world_of(g, 0));
    int r = 1;
    while (h0 && r < g->size && dcoll_host_of(world_of(g, r)) &&
           !strcmp(dcoll_host_of(world_of(g, r)), h0))
        r++;
    if (!h0 || r == g->size)
        return;   /* one host, or not known */
    int shown = 0;
    for (r = 0; r < g->size; r++) {
        const char *h = dcoll_host_of(world_of(g, r));
        if (!h)
            return;
        if (!pick(arg, r))
            continue;
        int q = 0;
        while (q < r && !(pick(arg, q) &&
                          !strcmp(dcoll_host_of(world_of(g, q)), h)))
            q++;
        if (q < r)
            continue;   /* its host is shown already */
        if (shown == 8) {
            put(t, ", ...");
            return;
        }
        put(t, "%s%s {", shown++ ? ", " : ", on ", h);
        for (int n = 0, u = r; u < g->size; u++)
            if (pick(arg, u) && !strcmp(dcoll_host_of(world_of(g, u)), h))
                put(t, "%s%d", n++ ? "," : "", u);
        put(t, "}");
    }
}

/* What the roll call found, after "...timed out after T s (...)". */
static void put_roll(struct text *t, const struct dcoll_group *g,
                     uint64_t seq, const struct dcoll_roll *roll)
{
    struct roll_pick p = {roll, DCOLL_ROLL_SILENT};
    int silent = 0, behind = 0, forms[3] = {0};
    for (int r = 0; r < g->size; r++) {
        silent += roll->state[r] == DCOLL_ROLL_SILENT;
        behind += roll->state[r] == DCOLL_ROLL_OTHER && roll->seq[r] < seq;
        if (roll->state[r] == DCOLL_ROLL_SAME && roll->form[r] < 3)
            forms[roll->form[r]]++;
    }
    put(t, ": ");
    if (silent) {
        put_ranks(t, g, pick_state, &p);
        put(t, " did not arrive (no answer: not in a dcoll call on the "
            "group, stopped, or gone)");
        put_hosts(t, g, pick_state, &p);
        put(t, "; ");
    }
    if (behind) {
        struct roll_pick b = {roll, (int)seq};
        put_ranks(t, g, pick_behind, &b);
        put(t, " did not arrive (");
        int shown = 0;
        for (int r = 0; r < g->size && shown < 8; r++) {
            if (!pick_behind(&b, r))
                continue;
            put(t, "%srank %d: latest call #%llu, %s, %s, %s", shown++ ? "; "
                                                                    : "",
                r, (unsigned long long)roll->seq[r],
                roll->seq[r] ? dcoll_kind_name(roll->kind[r]) : "none",
                form_name(roll->form[r]),
                roll->busy[r] ? "waiting in it"
                              : "not waiting in a call on the group");
        }
        put(t, "); ");
    }
    for (int r = 0; r < g->size; r++)
        if (roll->state[r] == DCOLL_ROLL_OTHER && roll->seq[r] > seq)
            put(t, "rank %d (world %d) is at collective #%llu (%s); ",
                r, world_of(g, r), (unsigned long long)roll->seq[r],
                dcoll_kind_name(roll->kind[r]));
    p.state = DCOLL_ROLL_SAME;
    put_ranks(t, g, pick_state, &p);
    put(t, " arrived");
    if (forms[DCOLL_FORM_BLOCKING] && forms[DCOLL_FORM_ASYNC]) {
        struct form_pick f = {roll, DCOLL_FORM_BLOCKING};
        put(t, ", but in different forms: ");
        put_ranks(t, g, pick_form, &f);
        put(t, " called it blocking and ");
        f.form = DCOLL_FORM_ASYNC;
        put_ranks(t, g, pick_form, &f);
        put(t, " async (with a work handle); MPI never matches a blocking "
            "collective with a nonblocking one, so call it the same way on "
            "every rank");
    }
}

/* The report's head and the roll call, into t. */
static void put_report(struct text *t, struct dcoll_group *g, const char *fn,
                       uint64_t seq, int kind, int form,
                       const struct dcoll_roll *roll)
{
    char name[200];
    dcoll_group_name(g, name, sizeof(name));
    put(t, "%s on %s timed out after %g s (", fn, name, g->timeout);
    if (seq)
        put(t, "collective #%llu, %s", (unsigned long long)seq,
            dcoll_kind_name(kind));
    else
        put(t, "%s", dcoll_kind_name(kind));
    if (form)
        put(t, ", %s", form_name(form));
    put(t, ")");
    if (roll && roll->n == g->size) {
        roll->state[g->rank] = DCOLL_ROLL_SAME;
        roll->seq[g->rank] = seq;
        if (form)
            roll->form[g->rank] = (unsigned char)form;
        put_roll(t, g, seq, roll);
    }
}

void dcoll_fault_told(struct dcoll_group *g, struct dcoll_verdict *v)
{
    char name[200], msg[1600];
    struct text t = {msg, sizeof(msg), 0};
    const char *fn = v->kind >= 0 && v->kind < DCOLL_COLL_KIND_COUNT_
                         ? dcoll_kinds[v->kind].fn
                         : "a collective";
    dcoll_group_name(g, name, sizeof(name));
    put(&t, "%s on %s timed out after %g s on rank %d (world %d) "
        "(collective #%llu, %s)", fn, name, g->timeout, v->from,
        world_of(g, v->from), (unsigned long long)v->seq,
        dcoll_kind_name(v->kind));
    if (v->roll.n == g->size)
        put_roll(&t, g, v->seq, &v->roll);
    put(&t, ". Rank %d ends the job (DCOLL_ON_TIMEOUT=abort, exit code "
        "%d). This rank ", v->from, DCOLL_HANG_EXIT_CODE);
    uint64_t seq = DCOLL_PEEK(g->seq);
    int kind = DCOLL_PEEK(g->cur_kind), form = DCOLL_PEEK(g->cur_form);
    bool busy = DCOLL_PEEK(g->busy_start) > 0 &&
                DCOLL_PEEK(g->busy_seq) == seq;
    if (seq == v->seq)
        put(&t, "%s it (%s)", busy ? "is waiting in" : "posted",
            form_name(form));
    else if (seq < v->seq)
        put(&t, "never reached it: its latest call on the group is #%llu "
            "(%s, %s), %s", (unsigned long long)seq,
            seq ? dcoll_kind_name(kind) : "none", form_name(form),
            busy ? "waiting in it" : "not waiting in a call on the group");
    else
        put(&t, "is already at #%llu (%s)", (unsigned long long)seq,
            dcoll_kind_name(kind));
    dcoll_flight_print(g, msg);
}

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
    struct text t = {msg, sizeof(msg), 0};
    put_report(&t, g, fn, seq, kind, form, roll);
    if (!mpi)
        put(&t, " after waiting %.1f s. The other ranks could not be asked "
            "where they are: MPI runs without MPI_THREAD_MULTIPLE, so the "
            "watchdog may not call it (start MPI with it, or let dcoll_init "
            "start MPI)", waited);
    put(&t, ". dcoll ends the job (DCOLL_ON_TIMEOUT=abort) with exit code "
        "%d", DCOLL_HANG_EXIT_CODE);
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
    struct text t = {msg, sizeof(msg), 0};
    put_report(&t, g, fn, seq, kind, form, roll);
    put(&t, ". The group is unusable from now on; other groups still "
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

/* ---- debug mode: every rank called the same collective? ---- */

/* What a rank says it called; equal bytes mean the same call. A vector
 * kind whose counts every rank passes alike (all_gatherv,
 * reduce_scatterv) carries their hash in count and the first few in v;
 * the others carry neither, and their counts are matched pair by pair
 * (check_counts). */
#define SHOWN_COUNTS 6
struct call {
    int64_t seq, count;
    int32_t kind, dtype, op, root; /* op, root -1 where the kind has none */
    int32_t async, nv;             /* MPI never matches the two forms */
    int64_t v[SHOWN_COUNTS];
};

static void describe(const struct call *c, struct text *t)
{
    put(t, "%s(%s", dcoll_kind_name(c->kind),
        dcoll_dtype_name((dcoll_dtype_t)c->dtype));
    if (c->op >= 0)
        put(t, ", %s", dcoll_op_name((dcoll_op_t)c->op));
    if (c->nv) {
        put(t, ", recvcounts {");
        for (int i = 0; i < c->nv && i < SHOWN_COUNTS; i++)
            put(t, "%s%lld", i ? "," : "", (long long)c->v[i]);
        put(t, "%s}", c->nv > SHOWN_COUNTS ? ",..." : "");
    } else if (!dcoll_kind_has(c->kind, DCOLL_KF_VEC)) {
        put(t, ", count %lld", (long long)c->count);
    }
    if (c->root >= 0)
        put(t, ", root %d", c->root);
    put(t, "%s) as collective #%lld", c->async ? ", async" : "",
        (long long)c->seq);
}

struct same_pick {
    const struct call *all;
    int like;
};

static bool pick_same(const void *arg, int r)
{
    const struct same_pick *p = arg;
    return !memcmp(&p->all[r], &p->all[p->like], sizeof(struct call));
}

/* Above this many ranks the pairwise count check is skipped: each rank
 * would gather 16 * size^2 bytes. */
#define COUNTS_CHECK_MAX 1024

/* A vector call whose counts are not the same on every rank (gatherv,
 * scatterv, all_to_allv): every rank gathers what each says it sends to
 * and expects from each other, so all see the same pairs that disagree. */
static dcoll_status_t check_counts(struct dcoll_group *g,
                                   const struct dcoll_coll *c)
{
    int n = g->size, me = g->rank;
    if (c->kind == DCOLL_COLL_ALL_GATHERV ||
        c->kind == DCOLL_COLL_REDUCE_SCATTERV || n > COUNTS_CHECK_MAX)
        return DCOLL_SUCCESS;
    size_t row = 2 * (size_t)n;
    int64_t *mine = malloc(sizeof(int64_t) * row);
    int64_t *all = malloc(sizeof(int64_t) * row * (size_t)n);
    if (!mine || !all) {
        free(mine);
        free(all);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "debug check of %d ranks' counts", c->fn, n);
    }
    /* mine[j]: elements this rank sends to j; mine[n + j]: expects from
     * j; -1 where it does not say. */
    for (size_t i = 0; i < row; i++)
        mine[i] = -1;
    switch (c->kind) {
    case DCOLL_COLL_GATHERV:
        mine[c->root] = c->count;
        for (int j = 0; me == c->root && j < n; j++)
            mine[n + j] = c->counts[j];
        break;
    case DCOLL_COLL_SCATTERV:
        mine[n + c->root] = c->count;
        for (int j = 0; me == c->root && j < n; j++)
            mine[j] = c->counts[j];
        break;
    default: /* all_to_allv; in place, the receive side is both */
        for (int j = 0; j < n; j++) {
            mine[j] = c->counts ? c->counts[j] : c->counts2[j];
            mine[n + j] = c->counts2[j];
        }
        break;
    }
    struct dcoll_outcome out = {.source = -1};
    dcoll_status_t st = g->svc->exchange(g, mine, all, sizeof(int64_t) * row,
                                         c, &out);
    free(mine);
    if (out.timed_out)
        st = dcoll_fault_outcome(g, &out, c->fn, c->seq, c->kind,
                                 c->async ? DCOLL_FORM_ASYNC
                                          : DCOLL_FORM_BLOCKING);
    if (st) {
        free(all);
        return st;
    }
    char name[200], msg[1000];
    struct text t = {msg, sizeof(msg), 0};
    int bad = 0;
    for (int r = 0; r < n; r++)
        for (int j = 0; j < n; j++) {
            int64_t sends = all[(size_t)r * row + (size_t)j];
            int64_t expects = all[(size_t)j * row + (size_t)n + (size_t)r];
            if (sends < 0 || expects < 0 || sends == expects)
                continue;
            if (!bad++)
                put(&t, "%s on %s: the ranks' counts disagree, so none ran "
                    "(found by DCOLL_DEBUG=detail): ", c->fn,
                    dcoll_group_name(g, name, sizeof(name)));
            if (bad <= 4)
                put(&t, "%srank %d (world %d) sends %lld element(s) to rank "
                    "%d (world %d), which expects %lld", bad > 1 ? "; " : "",
                    r, world_of(g, r), (long long)sends, j, world_of(g, j),
                    (long long)expects);
        }
    free(all);
    if (!bad)
        return DCOLL_SUCCESS;
    if (bad > 4)
        put(&t, "; %d more pair(s)", bad - 4);
    dcoll_flight_print(g, msg);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s", msg);
}

static dcoll_status_t check_same(struct dcoll_group *g,
                                 const struct dcoll_coll *c)
{
    struct call me;
    memset(&me, 0, sizeof(me));
    me.seq = (int64_t)c->seq;
    me.count = c->kind == DCOLL_COLL_BARRIER ? 0 : c->count;
    if (dcoll_kind_has(c->kind, DCOLL_KF_VEC)) {
        me.count = 0;
        if (c->kind == DCOLL_COLL_ALL_GATHERV ||
            c->kind == DCOLL_COLL_REDUCE_SCATTERV) {
            uint64_t h = 1469598103934665603ull;
            for (int i = 0; i < g->size; i++) {
                h ^= (uint64_t)c->counts[i];
                h *= 1099511628211ull;
                if (i < SHOWN_COUNTS)
                    me.v[i] = c->counts[i];
            }
            me.count = (int64_t)h;
            me.nv = g->size;
        }
    }
    me.kind = c->kind;
    me.dtype = c->kind == DCOLL_COLL_BARRIER ? 0 : c->dtype;
    me.op = dcoll_kind_has(c->kind, DCOLL_KF_OP) ? (int32_t)c->op : -1;
    me.root = dcoll_kind_has(c->kind, DCOLL_KF_ROOT) ? world_of(g, c->root) : -1;
    me.async = c->async;
    struct call *all = malloc(sizeof(me) * (size_t)g->size);
    if (!all)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "debug check of %d ranks", c->fn, g->size);
    struct dcoll_outcome out = {.source = -1};
    dcoll_status_t st = g->svc->exchange(g, &me, all, sizeof(me), c, &out);
    if (out.timed_out)
        st = dcoll_fault_outcome(g, &out, c->fn, c->seq, c->kind,
                                 c->async ? DCOLL_FORM_ASYNC
                                          : DCOLL_FORM_BLOCKING);
    if (st) {
        free(all);
        return st;
    }
    int first_other = -1;
    for (int r = 0; r < g->size && first_other < 0; r++)
        if (memcmp(&all[r], &all[0], sizeof(me)))
            first_other = r;
    if (first_other < 0) {
        free(all);
        return dcoll_kind_has(c->kind, DCOLL_KF_VEC) ? check_counts(g, c)
                                                     : DCOLL_SUCCESS;
    }
    /* Every rank has the same table, so every rank says the same. */
    char name[200], msg[1000];
    struct text t = {msg, sizeof(msg), 0};
    dcoll_group_name(g, name, sizeof(name));
    put(&t, "%s on %s: the ranks called different collectives, so none "
        "ran (found by DCOLL_DEBUG=detail): ", c->fn, name);
    unsigned char *told = calloc((size_t)g->size, 1);
    for (int r = 0; r < g->size; r++) {
        if (told && told[r])
            continue;
        struct same_pick p = {all, r};
        if (r)
            put(&t, "; ");
        put_ranks(&t, g, pick_same, &p);
        put(&t, " called ");
        describe(&all[r], &t);
        for (int q = r; told && q < g->size; q++)
            if (pick_same(&p, q))
                told[q] = 1;
        if (!told)
            break;
    }
    free(told);
    free(all);
    dcoll_flight_print(g, msg);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s", msg);
}

dcoll_status_t dcoll_fault_check(struct dcoll_group *g,
                                 const struct dcoll_coll *c)
{
    if (g->diag->failed) {
        char name[200];
        return dcoll_error(DCOLL_ERR_GROUP_FAILED, "%s: %s is unusable "
                           "after an earlier failure: %s", c->fn,
                           dcoll_group_name(g, name, sizeof(name)),
                           g->diag->failed);
    }
    if (dcoll_debug && c->seq)
        return check_same(g, c);
    return DCOLL_SUCCESS;
}
