/* dcoll-trace: merge a job's recorder files (dcoll-JOB-RANK.jsonl, schema
 * dcoll-trace version 1, docs/trace.md) and say what happened:
 *   - where each rank stands on each group, ranks grouped by their latest
 *     call ("ranks 0-4095 in all_reduce #9182"), those behind apart;
 *   - the first call on each group where the ranks' records disagree
 *     (kind, type, count, op, root or form), and on what;
 *   - time by call kind and size: calls, mean and max per call, the
 *     rank that took longest and the one that took least (the last to
 *     arrive waits least).
 * Files are read through mmap by as many threads as there are CPUs, each
 * reduced to small per-file summaries, so memory does not grow with the
 * calls recorded.
 *
 *   dcoll-trace [-s] [-q] [-j THREADS] FILE|DIR... */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dcoll/dcoll.h"

#define MAX_GROUPS 64     /* groups a file may list; more are left out */

/* ---- reading the lines ---- */

/* The value of "key": in [p, end), or NULL; *len is its length (a string
 * without its quotes). Values our writer puts never hold the pattern
 * "key": (a quote inside a string is escaped). */
static const char *field(const char *p, const char *end, const char *key,
                         size_t *len)
{
    char pat[40];
    int n = snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char *at = memmem(p, (size_t)(end - p), pat, (size_t)n);
    if (!at)
        return NULL;
    const char *v = at + n, *e = v;
    if (v < end && *v == '"') {
        v++;
        for (e = v; e < end && *e != '"'; e++)
            if (*e == '\\' && e + 1 < end)
                e++;
    } else {
        while (e < end && *e != ',' && *e != '}')
            e++;
    }
    *len = (size_t)(e - v);
    return v;
}

static bool get_str(const char *p, const char *end, const char *key,
                    char *out, size_t cap)
{
    size_t len;
    const char *v = field(p, end, key, &len);
    if (!v) {
        if (cap)
            out[0] = '\0';
        return false;
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return true;
}

static bool get_num(const char *p, const char *end, const char *key,
                    double *out)
{
    size_t len;
    const char *v = field(p, end, key, &len);
    if (!v || (len == 4 && !memcmp(v, "null", 4)))
        return false;
    char buf[40];
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    char *stop;
    *out = strtod(buf, &stop);
    return stop != buf;
}

static long long get_int(const char *p, const char *end, const char *key,
                         long long dflt)
{
    double d;
    return get_num(p, end, key, &d) ? (long long)d : dflt;
}

/* ---- what each file says ---- */

struct gstate {
    int id, group_rank, group_size;
    unsigned long long calls, latest;
    char kind[24], form[12], state[12], name[160];
    double waiting;        /* seconds waiting at the writing; <0: none */
    char p2p[8];           /* an unfinished send or recv, newest: its kind */
    int peer;              /* and its peer (group rank; <0: any) */
    double p2p_for;        /* seconds it had been posted at the writing */
};

/* A call's description for comparing ranks. */
struct sig {
    unsigned long long seq;
    uint64_t hash;
    const char *line;      /* in the reference's mapping, kept to the end */
    int len;
};

/* The time of one (group, kind, size) on one file. */
struct stat_key {
    bool used;
    uint32_t key;
    int id, kind, bucket;  /* bucket: bytes up to 2^bucket; -1: none */
    unsigned long long calls;
    double total, max;
};

struct file {
    const char *path;
    int rank, size;
    char job[96], host[64];
    char reason[600];
    bool ok;
    char error[200];
    int ngroups;
    struct gstate g[MAX_GROUPS];
    /* Its first disagreement with the reference, per group slot. */
    unsigned long long differs[MAX_GROUPS];
    size_t cursor[MAX_GROUPS];   /* where the next call is in the ref */
    char said[MAX_GROUPS][200];
    struct stat_key stats[256];
    int nstats;
};

/* The reference's calls per group id (the lowest rank's file). */
struct ref {
    int id;
    struct sig *s;
    size_t n, cap;
};
static struct ref refs[MAX_GROUPS];
static int nrefs;
static bool building_ref;
/* A second reading, for a group the first reference lacked: only that
 * group's calls are compared, nothing else is counted again. */
static int only = -1;

static struct ref *ref_of(int id)
{
    for (int i = 0; i < nrefs; i++)
        if (refs[i].id == id)
            return &refs[i];
    return NULL;
}

static const char *const vector_kinds[] = {
    "all_gatherv", "gatherv", "scatterv", "reduce_scatterv", "all_to_allv",
};

/* A value in a line, not copied. */
struct view {
    const char *p;
    int n;
};

/* A call line's fields, read in one pass. */
struct rec {
    long long call, group, count, bytes, root;
    double duration;
    bool has_duration, has_sig;
    uint64_t sig;          /* the writer's signature of the call */
    struct view kind, dtype, op, form;
};

static long long to_int(const char *p, const char *end)
{
    bool neg = p < end && *p == '-';
    long long v = 0;
    for (p += neg; p < end && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return neg ? -v : v;
}

/* "12.345678" as our writer prints it; anything else through strtod. */
static double to_double(const char *p, const char *end)
{
    const char *q = p;
    double v = 0;
    while (q < end && *q >= '0' && *q <= '9')
        v = v * 10 + (*q++ - '0');
    if (q < end && *q == '.') {
        double scale = 0.1;
        for (q++; q < end && *q >= '0' && *q <= '9'; q++, scale *= 0.1)
            v += (*q - '0') * scale;
    }
    if (q == end || *q == ',' || *q == '}')
        return v;
    char buf[48];
    int n = (int)(end - p) < 47 ? (int)(end - p) : 47;
    memcpy(buf, p, (size_t)n);
    buf[n] = '\0';
    return strtod(buf, NULL);
}

static bool hex64(const char *p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    if (end - p != 16)
        return false;
    for (; p < end; p++) {
        int d = *p >= '0' && *p <= '9'   ? *p - '0'
                : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                         : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* Digits at *pp up to stop, into *out; false where there are none. */
static bool digits(const char **pp, const char *end, char stop,
                   long long *out)
{
    const char *p = *pp;
    long long v = 0;
    while (p < end && *p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    if (p == *pp || p >= end || *p != stop)
        return false;
    *out = v;
    *pp = p + 1;
    return true;
}

static bool want_times;   /* -s: time by kind and size */

/* The head our writer puts first on a call line, read in place:
 * {"call":N,"entry":N,"group":N,"sig":"16 hex". False where the line is
 * laid out otherwise; the whole line is then read. */
static bool fast_head(const char *p, const char *end, struct rec *r)
{
    static const char a[] = "{\"call\":", b[] = "\"entry\":",
                      c[] = "\"group\":", d[] = "\"sig\":\"";
    long long entry;
    if (end - p < 64 || memcmp(p, a, sizeof(a) - 1))
        return false;
    p += sizeof(a) - 1;
    if (!digits(&p, end, ',', &r->call) || memcmp(p, b, sizeof(b) - 1))
        return false;
    p += sizeof(b) - 1;
    if (!digits(&p, end, ',', &entry) || memcmp(p, c, sizeof(c) - 1))
        return false;
    p += sizeof(c) - 1;
    if (!digits(&p, end, ',', &r->group) || memcmp(p, d, sizeof(d) - 1))
        return false;
    p += sizeof(d) - 1;
    r->has_sig = end - p > 17 && p[16] == '"' && hex64(p, p + 16, &r->sig);
    if (!r->has_sig || !want_times)
        return r->has_sig;
    /* -s: the kind next, then bytes and duration found by name. */
    static const char k[] = ",\"kind\":\"", by[] = "\"bytes\":",
                      du[] = "\"duration\":";
    p += 17;
    if (end - p < (long)sizeof(k) || memcmp(p, k, sizeof(k) - 1))
        return false;
    r->kind.p = p + sizeof(k) - 1;
    const char *q = memchr(r->kind.p, '"', (size_t)(end - r->kind.p));
    if (!q)
        return false;
    r->kind.n = (int)(q - r->kind.p);
    const char *at = memmem(q, (size_t)(end - q), by, sizeof(by) - 1);
    if (at)
        r->bytes = to_int(at + sizeof(by) - 1, end);
    const char *t = memmem(q, (size_t)(end - q), du, sizeof(du) - 1);
    if (t) {
        t += sizeof(du) - 1;
        const char *te = t;
        while (te < end && *te != ',' && *te != '}')
            te++;
        r->has_duration = !(te - t == 4 && !memcmp(t, "null", 4));
        if (r->has_duration)
            r->duration = to_double(t, te);
    }
    return true;
}

static bool is(struct view k, const char *name)
{
    size_t n = strlen(name);
    return (size_t)k.n == n && !memcmp(k.p, name, n);
}
/* The same against a literal, its length known when compiled. */
#define IS(k, lit) ((k).n == (int)sizeof(lit) - 1 && \
                    !memcmp((k).p, lit, sizeof(lit) - 1))

/* The closing quote of a string that starts at p (escapes skipped). */
static const char *string_end(const char *p, const char *end)
{
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return end;
        int backslashes = 0;
        while (q - backslashes > p && q[-1 - backslashes] == '\\')
            backslashes++;
        if (backslashes % 2 == 0)
            return q;
        p = q + 1;
    }
}

/* Every "key":value of a flat line, into r; false if it is not one. */
static bool parse_call(const char *p, const char *end, struct rec *r)
{
    memset(r, 0, sizeof(*r));
    r->root = -1;
    r->count = -1;
    if (p >= end || *p != '{')
        return false;
    p++;
    while (p < end && *p == '"') {
        struct view k = {++p, 0};
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q || q + 1 >= end || q[1] != ':')
            return false;
        k.n = (int)(q - k.p);
        p = q + 2;
        struct view v = {p, 0};
        if (p < end && *p == '"') {
            v.p = ++p;
            p = string_end(p, end);
            v.n = (int)(p - v.p);
            p++;
        } else {
            while (p < end && *p != ',' && *p != '}')
                p++;
            v.n = (int)(p - v.p);
        }
        const char *ve = v.p + v.n;
        switch (k.n ? k.p[0] : 0) {
        case 'b':
            if (IS(k, "bytes"))
                r->bytes = to_int(v.p, ve);
            break;
        case 'c':
            if (IS(k, "call"))
                r->call = to_int(v.p, ve);
            else if (IS(k, "count"))
                r->count = to_int(v.p, ve);
            break;
        case 'd':
            if (IS(k, "duration") && !IS(v, "null")) {
                r->duration = to_double(v.p, ve);
                r->has_duration = true;
            } else if (IS(k, "dtype")) {
                r->dtype = v;
            }
            break;
        case 'f':
            if (IS(k, "form"))
                r->form = v;
            break;
        case 'g':
            if (IS(k, "group"))
                r->group = to_int(v.p, ve);
            break;
        case 'k':
            if (IS(k, "kind"))
                r->kind = v;
            break;
        case 'o':
            if (IS(k, "op"))
                r->op = v;
            break;
        case 'r':
            if (IS(k, "root"))
                r->root = to_int(v.p, ve);
            break;
        case 's':
            if (IS(k, "sig"))
                r->has_sig = hex64(v.p, ve, &r->sig);
            break;
        }
        if (p < end && *p == ',')
            p++;
    }
    return true;
}

static bool vector_kind(struct view kind)
{
    for (size_t i = 0; i < sizeof(vector_kinds) / sizeof(vector_kinds[0]); i++)
        if (is(kind, vector_kinds[i]))
            return true;
    return false;
}

/* What every rank must pass alike in a call: its hash, from the values'
 * bytes as written. */
/* A view into h, eight bytes a step (the reading's hot spot). */
static uint64_t mix(uint64_t h, struct view v)
{
    const char *p = v.p;
    int n = v.n;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    uint64_t w = (uint64_t)v.n << 56;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t signature(const struct rec *r)
{
    uint64_t h = 1469598103934665603ull;
    h = mix(h, r->kind);
    h = mix(h, r->dtype);
    h = mix(h, r->op);
    h = mix(h, r->form);
    h = (h ^ (uint64_t)(vector_kind(r->kind) ? -1 : r->count)) *
        0x9e3779b97f4a7c15ull;
    h = (h ^ (uint64_t)r->root) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

/* The same in words, where it is shown. */
static void describe(const struct rec *r, char *said, size_t cap)
{
    long long count = vector_kind(r->kind) ? -1 : r->count;
    int n = snprintf(said, cap, "%.*s", r->kind.n, r->kind.p);
    if (r->dtype.n && n > 0 && (size_t)n < cap)
        n += snprintf(said + n, cap - (size_t)n, " %.*s", r->dtype.n,
                      r->dtype.p);
    if (count >= 0 && n > 0 && (size_t)n < cap)
        n += snprintf(said + n, cap - (size_t)n, " count %lld", count);
    if (r->op.n && n > 0 && (size_t)n < cap)
        n += snprintf(said + n, cap - (size_t)n, " %.*s", r->op.n, r->op.p);
    if (r->root >= 0 && n > 0 && (size_t)n < cap)
        n += snprintf(said + n, cap - (size_t)n, " root %lld", r->root);
    if (n > 0 && (size_t)n < cap)
        snprintf(said + n, cap - (size_t)n, ", %.*s", r->form.n, r->form.p);
}

static int bucket(long long bytes)
{
    int b = 0;
    while (b < 62 && (1LL << b) < bytes)
        b++;
    return bytes <= 0 ? -1 : b;
}

/* Kinds by number, as the files name them: a short list, shared. */
static char kinds[64][24];
static int nkinds;
static pthread_mutex_t kinds_lock = PTHREAD_MUTEX_INITIALIZER;

static int kind_no(struct view k)
{
    int n = __atomic_load_n(&nkinds, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (is(k, kinds[i]))
            return i;
    pthread_mutex_lock(&kinds_lock);
    int i = 0;
    while (i < nkinds && !is(k, kinds[i]))
        i++;
    if (i == nkinds && nkinds < 64 && k.n < 24) {
        memcpy(kinds[i], k.p, (size_t)k.n);
        kinds[i][k.n] = '\0';
        __atomic_store_n(&nkinds, nkinds + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&kinds_lock);
    return i < 64 ? i : 63;
}

/* The time of a (group, kind, size) on one file, in a small open hash. */
static struct stat_key *stat_of(struct file *f, int id, int kind, int b)
{
    uint32_t key = ((uint32_t)(id & 0xffff) << 16) |
                   ((uint32_t)kind << 8) | (uint32_t)(b + 1);
    uint32_t h = (key * 2654435761u) >> 24;   /* 256 slots */
    for (int probe = 0; probe < 256; probe++) {
        struct stat_key *s = &f->stats[(h + (uint32_t)probe) & 255];
        if (s->used && s->key == key)
            return s;
        if (!s->used) {
            s->used = true;
            s->key = key;
            s->id = id;
            s->kind = kind;
            s->bucket = b;
            f->nstats++;
            return s;
        }
    }
    return NULL;
}

static int slot_of(const struct file *f, int id)
{
    for (int i = 0; i < f->ngroups; i++)
        if (f->g[i].id == id)
            return i;
    return -1;
}

static void call_line(struct file *f, const char *p, const char *end)
{
    struct rec r;
    /* Where the writer put the head first, only it (and for -s kind,
     * bytes and duration) is read. */
    memset(&r, 0, sizeof(r));
    if (!fast_head(p, end, &r)) {
        if (!parse_call(p, end, &r))
            return;
    }
    int id = (int)r.group;
    unsigned long long seq = (unsigned long long)r.call;
    int slot = slot_of(f, id);
    if (slot < 0 || (only >= 0 && id != only))
        return;
    if (only < 0 && want_times && r.has_duration) {
        struct stat_key *s = stat_of(f, id, kind_no(r.kind), bucket(r.bytes));
        if (s) {
            s->calls++;
            s->total += r.duration;
            if (r.duration > s->max)
                s->max = r.duration;
        }
    }
    if (!seq)
        return;   /* sends and receives: ranks make different numbers */
    uint64_t h = r.has_sig ? r.sig : signature(&r);
    if (building_ref) {
        struct ref *rf = ref_of(id);
        if (!rf || (rf->n && rf->s[rf->n - 1].seq >= seq))
            return;
        if (rf->n == rf->cap) {
            size_t cap = rf->cap ? 2 * rf->cap : 1024;
            struct sig *sg = realloc(rf->s, sizeof(*sg) * cap);
            if (!sg)
                return;
            rf->s = sg;
            rf->cap = cap;
        }
        rf->s[rf->n++] = (struct sig){seq, h, p, (int)(end - p)};
        return;
    }
    if (f->differs[slot])
        return;   /* its first disagreement is known */
    const struct ref *rf = ref_of(id);
    if (!rf || !rf->n)
        return;
    size_t lo = 0, hi = rf->n;
    /* Mostly the next after the last found: try there first. */
    size_t guess = f->cursor[slot];
    if (guess < rf->n && rf->s[guess].seq == seq) {
        lo = guess;
    } else {
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (rf->s[mid].seq < seq)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    if (lo < rf->n && rf->s[lo].seq == seq) {
        f->cursor[slot] = lo + 1;
        if (rf->s[lo].hash != h) {
            f->differs[slot] = seq;
            struct rec whole;
            if (parse_call(p, end, &whole))
                describe(&whole, f->said[slot], sizeof(f->said[slot]));
        }
    }
}

static void group_line(struct file *f, const char *p, const char *end,
                       double clock)
{
    if (only >= 0) {
        if (building_ref && get_int(p, end, "group", -1) == only &&
            nrefs < MAX_GROUPS && !ref_of(only))
            refs[nrefs++].id = only;
        return;
    }
    if (f->ngroups == MAX_GROUPS)
        return;
    struct gstate *g = &f->g[f->ngroups++];
    memset(g, 0, sizeof(*g));
    g->id = (int)get_int(p, end, "group", -1);
    g->group_rank = (int)get_int(p, end, "group_rank", -1);
    g->group_size = (int)get_int(p, end, "group_size", 0);
    g->calls = (unsigned long long)get_int(p, end, "calls", 0);
    get_str(p, end, "name", g->name, sizeof(g->name));
    get_str(p, end, "state", g->state, sizeof(g->state));
    size_t len;
    const char *lat = field(p, end, "latest", &len);
    if (lat) {
        const char *le = memchr(lat, '}', (size_t)(end - lat));
        le = le ? le : end;
        g->latest = (unsigned long long)get_int(lat, le, "call", 0);
        get_str(lat, le, "kind", g->kind, sizeof(g->kind));
        get_str(lat, le, "form", g->form, sizeof(g->form));
    }
    double since;
    g->waiting = get_num(p, end, "waiting_since", &since) ? clock - since
                                                          : -1;
    const char *pp = field(p, end, "p2p", &len);
    if (pp) {
        const char *pe = memchr(pp, '}', (size_t)(end - pp));
        pe = pe ? pe : end;
        get_str(pp, pe, "kind", g->p2p, sizeof(g->p2p));
        g->peer = (int)get_int(pp, pe, "peer", -1);
        g->p2p_for = get_num(pp, pe, "since", &since) ? clock - since : -1;
    }
    if (building_ref && nrefs < MAX_GROUPS && !ref_of(g->id))
        refs[nrefs++].id = g->id;
}

/* One line of f's file (its number from 1); false to stop reading. */
static bool one_line(struct file *f, int line, const char *p,
                     const char *end, double *clock)
{
    if (line == 1) {
        char schema[32];
        long long version = get_int(p, end, "version", 0);
        if (!get_str(p, end, "schema", schema, sizeof(schema)) ||
            strcmp(schema, "dcoll-trace") || version != 1) {
            snprintf(f->error, sizeof(f->error), "not a dcoll-trace "
                     "version 1 file (schema '%s', version %lld)", schema,
                     version);
            return false;
        }
        if (only >= 0)
            return true;   /* read before */
        f->rank = (int)get_int(p, end, "rank", -1);
        long long size = get_int(p, end, "size", 0);
        f->size = size < 0 ? 0 : size > INT32_MAX ? INT32_MAX : (int)size;
        get_str(p, end, "job", f->job, sizeof(f->job));
        get_str(p, end, "host", f->host, sizeof(f->host));
        get_str(p, end, "reason", f->reason, sizeof(f->reason));
        get_num(p, end, "clock", clock);
        f->ok = f->rank >= 0;
    } else if (end - p > 9 && !memcmp(p, "{\"call\":", 8)) {
        call_line(f, p, end);
    } else if (end - p > 10 && !memcmp(p, "{\"group\":", 9)) {
        group_line(f, p, end, *clock);
    }
    return true;
}

#define CHUNK (4 << 20)   /* bytes a read takes */

/* path opened for reading if it is a regular file (a FIFO named like a
 * recorder file would block the open, a device the reads): the fd, or
 * -1 with why in err. */
static int open_regular(const char *path, struct stat *sb, char *err,
                        size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, sb)) {
        snprintf(err, len, "%s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(sb->st_mode)) {
        snprintf(err, len, "not a regular file");
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static void read_file(struct file *f)
{
    struct stat sb;
    int fd = open_regular(f->path, &sb, f->error, sizeof(f->error));
    if (fd < 0)
        return;
    if (sb.st_size == 0) {
        close(fd);
        snprintf(f->error, sizeof(f->error), "empty");
        return;
    }
    double clock = 0;
    int line = 1;
    if (building_ref) {
        /* The reference stays mapped: its lines describe its calls
         * until the end. */
        const char *base = mmap(NULL, (size_t)sb.st_size, PROT_READ,
                                MAP_PRIVATE, fd, 0);
        close(fd);
        if (base == MAP_FAILED) {
            snprintf(f->error, sizeof(f->error), "%s", strerror(errno));
            return;
        }
        for (const char *p = base, *all = base + sb.st_size; p < all;
             line++) {
            const char *end = memchr(p, '\n', (size_t)(all - p));
            end = end ? end : all;
            if (!one_line(f, line, p, end, &clock))
                break;
            p = end + 1;
        }
        return;
    }
    /* The rest by plain reads into this thread's buffer: the kernel reads
     * ahead, with no page to fault in for each 4 KiB. */
    static _Thread_local char *buf;
    if (!buf && !(buf = malloc(CHUNK + 1))) {
        close(fd);
        snprintf(f->error, sizeof(f->error), "no memory");
        return;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t have = 0;
    bool go = true;
    for (;;) {
        ssize_t n = read(fd, buf + have, CHUNK - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(f->error, sizeof(f->error), "%s", strerror(errno));
            break;
        }
        have += (size_t)n;
        const char *p = buf, *all = buf + have;
        while (go && p < all) {
            const char *end = memchr(p, '\n', (size_t)(all - p));
            if (!end) {
                if (n > 0 && p > buf)
                    break;       /* the rest of it comes with the next read */
                end = all;       /* the last line, or one longer than a read */
            }
            go = one_line(f, line++, p, end, &clock);
            p = end + 1;
        }
        if (!go || n == 0)
            break;
        have = p < all ? (size_t)(all - p) : 0;
        memmove(buf, p, have);
    }
    close(fd);
}

/* ---- reading every file, on every CPU ---- */

static struct file *files;
static int nfiles;
static int next_file;
static pthread_mutex_t take = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&take);
        int i = next_file++;
        pthread_mutex_unlock(&take);
        if (i >= nfiles)
            return NULL;
        read_file(&files[i]);
    }
}

static int add_path(const char *path, char ***list, int *n, int *cap)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        char **l = realloc(*list, sizeof(char *) * (size_t)*cap);
        if (!l)
            return -1;
        *list = l;
    }
    (*list)[(*n)++] = strdup(path);
    return 0;
}

static bool is_trace_name(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, "dcoll-", 6) && n > 12 &&
           !strcmp(name + n - 6, ".jsonl");
}

static int cmp_rank(const void *a, const void *b)
{
    const struct file *x = a, *y = b;
    if (x->ok != y->ok)
        return x->ok ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* ---- saying it ---- */

/* world ranks r[0..n) (sorted) as "rank 3" or "ranks 0-4095,4097". */
/* Ranks from to to as the range lists say them, the *shown-th; false
 * once 12 are shown (",..." then ends the list). */
static bool put_range(int *shown, int from, int to)
{
    if (*shown == 12) {
        printf(",...");
        return false;
    }
    printf(*shown ? "," : "");
    if (to == from)
        printf("%d", from);
    else
        printf("%d-%d", from, to);
    ++*shown;
    return true;
}

static void put_ranks(const int *r, int n)
{
    printf("%s", n == 1 ? "rank " : "ranks ");
    int shown = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1)
            j++;
        if (!put_range(&shown, r[i], r[j]))
            break;
        i = j + 1;
    }
}

static int by_rank(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The ranks below size that no file came from, as put_ranks says them:
 * from the gaps between the files' ranks, so that a size a file states
 * (any number) costs no memory. */
static void put_missing(int size)
{
    int *have = malloc(sizeof(int) * (size_t)nfiles + 1), n = 0;
    if (!have)
        return;
    for (int i = 0; i < nfiles; i++)
        if (files[i].ok && files[i].rank < size)
            have[n++] = files[i].rank;
    qsort(have, (size_t)n, sizeof(int), by_rank);
    int uniq = 0;
    for (int i = 0; i < n; i++)
        if (!uniq || have[uniq - 1] != have[i])
            have[uniq++] = have[i];
    printf("%s", size - uniq == 1 ? "rank " : "ranks ");
    int shown = 0, from = 0;
    for (int i = 0; i <= uniq; i++) {
        int to = i < uniq ? have[i] - 1 : size - 1;
        if (to >= from && !put_range(&shown, from, to))
            break;
        if (i < uniq)
            from = have[i] + 1;
    }
    free(have);
}

/* The hosts of the files fi[0..n), where they are few. */
static void put_hosts(const int *fi, int n)
{
    if (n > 8)
        return;
    printf(" (");
    for (int i = 0; i < n; i++) {
        int q = 0;
        while (q < i && strcmp(files[fi[q]].host, files[fi[i]].host))
            q++;
        if (q < i)
            continue;
        printf("%s%s", i ? ", " : "", files[fi[i]].host);
    }
    printf(")");
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Every group id a file lists, in the order the lowest ranks list them. */
static int ids[MAX_GROUPS * 4], nids;

static void collect_ids(void)
{
    for (int i = 0; i < nfiles; i++)
        for (int s = 0; files[i].ok && s < files[i].ngroups; s++) {
            int k = 0;
            while (k < nids && ids[k] != files[i].g[s].id)
                k++;
            if (k == nids && nids < (int)(sizeof(ids) / sizeof(ids[0])))
                ids[nids++] = files[i].g[s].id;
        }
}

static void where(void)
{
    printf("\nWhere the ranks stand, by group:\n");
    int *ranks = malloc(sizeof(int) * (size_t)nfiles);
    int *fi = malloc(sizeof(int) * (size_t)nfiles);
    unsigned char *done = malloc((size_t)nfiles);
    if (!ranks || !fi || !done)
        return;
    for (int k = 0; k < nids; k++) {
        int id = ids[k];
        unsigned long long top = 0;
        int members = 0, size = 0;
        const char *name = "";
        for (int i = 0; i < nfiles; i++) {
            int s = files[i].ok ? slot_of(&files[i], id) : -1;
            if (s < 0)
                continue;
            members++;
            size = files[i].g[s].group_size;
            name = files[i].g[s].name;
            if (files[i].g[s].latest > top)
                top = files[i].g[s].latest;
        }
        printf("  %s", name);
        if (members < size)
            printf(" (files from %d of its %d ranks)", members, size);
        printf(":\n");
        memset(done, 0, (size_t)nfiles);
        for (int i = 0; i < nfiles; i++) {
            int s = files[i].ok ? slot_of(&files[i], id) : -1;
            if (s < 0 || done[i])
                continue;
            const struct gstate *a = &files[i].g[s];
            int n = 0;
            double wmin = 1e300, wmax = -1;
            for (int j = i; j < nfiles; j++) {
                int t = files[j].ok ? slot_of(&files[j], id) : -1;
                if (t < 0 || done[j])
                    continue;
                const struct gstate *b = &files[j].g[t];
                if (b->latest != a->latest || strcmp(b->kind, a->kind) ||
                    strcmp(b->form, a->form) || strcmp(b->state, a->state) ||
                    strcmp(b->p2p, a->p2p) || b->peer != a->peer)
                    continue;
                done[j] = 1;
                fi[n] = j;
                ranks[n++] = files[j].rank;
                if (b->waiting >= 0) {
                    wmin = b->waiting < wmin ? b->waiting : wmin;
                    wmax = b->waiting > wmax ? b->waiting : wmax;
                }
            }
            qsort(ranks, (size_t)n, sizeof(int), cmp_int);
            printf("    ");
            put_ranks(ranks, n);
            put_hosts(fi, n);
            if (a->p2p[0]) {
                /* Its newest call is a send or receive not finished:
                 * that is where it is, not idle at its latest collective. */
                printf(": in %s %s ", a->p2p, strcmp(a->p2p, "send")
                       ? "from" : "to");
                if (a->peer >= 0)
                    printf("rank %d", a->peer);
                else
                    printf("any rank");
                printf(" (unfinished");
                if (a->p2p_for >= 0)
                    printf(", posted %.1f s before the writing", a->p2p_for);
                printf(")");
                if (a->latest)
                    printf("; latest collective %s #%llu (%s)", a->kind,
                           a->latest, a->form);
                printf("\n");
                continue;
            }
            if (!a->latest)
                printf(": no call yet");
            else
                printf(": %s %s #%llu (%s), %s", a->latest < top ? "behind, at"
                       : !strcmp(a->state, "waiting") ? "in" : "at", a->kind,
                       a->latest, a->form, a->state);
            if (wmax >= 0 && wmax - wmin < 0.05)
                printf(" for %.1f s", wmax);
            else if (wmax >= 0)
                printf(" for %.1f-%.1f s", wmin, wmax);
            printf("\n");
        }
    }
    free(ranks);
    free(fi);
    free(done);
}

static void disagreements(void)
{
    printf("\nFirst call where the ranks' records disagree, by group:\n");
    bool any = false;
    int *ranks = malloc(sizeof(int) * (size_t)nfiles);
    if (!ranks)
        return;
    for (int k = 0; k < nrefs; k++) {
        int id = refs[k].id;
        unsigned long long first = 0;
        for (int i = 0; i < nfiles; i++) {
            int s = files[i].ok ? slot_of(&files[i], id) : -1;
            if (s >= 0 && files[i].differs[s] &&
                (!first || files[i].differs[s] < first))
                first = files[i].differs[s];
        }
        if (!first)
            continue;
        any = true;
        const struct ref *r = &refs[k];
        char refsaid[200] = "";
        for (size_t q = 0; q < r->n; q++)
            if (r->s[q].seq == first) {
                struct rec rc;
                if (parse_call(r->s[q].line, r->s[q].line + r->s[q].len,
                               &rc))
                    describe(&rc, refsaid, sizeof(refsaid));
            }
        const char *name = "";
        for (int i = 0; i < nfiles && !name[0]; i++) {
            int s = files[i].ok ? slot_of(&files[i], id) : -1;
            if (s >= 0)
                name = files[i].g[s].name;
        }
        printf("  %s, call #%llu:\n", name, first);
        /* Those that differ there, each description once; the rest as
         * the reference (the lowest rank) recorded it. */
        unsigned char *done = calloc((size_t)nfiles, 1);
        for (int i = 0; done && i < nfiles; i++) {
            int s = files[i].ok ? slot_of(&files[i], id) : -1;
            if (s < 0 || done[i] || files[i].differs[s] != first)
                continue;
            int n = 0;
            for (int j = i; j < nfiles; j++) {
                int t = files[j].ok ? slot_of(&files[j], id) : -1;
                if (t < 0 || done[j] || files[j].differs[t] != first ||
                    strcmp(files[j].said[t], files[i].said[s]))
                    continue;
                done[j] = 1;
                ranks[n++] = files[j].rank;
            }
            printf("    ");
            put_ranks(ranks, n);
            printf(": %s\n", files[i].said[s]);
        }
        int n = 0;
        for (int i = 0; done && i < nfiles; i++) {
            int s = files[i].ok ? slot_of(&files[i], id) : -1;
            if (s >= 0 && !done[i])
                ranks[n++] = files[i].rank;
        }
        printf("    ");
        put_ranks(ranks, n);
        printf(": %s%s\n", refsaid, n > 1 ? " (or not recorded)" : "");
        free(done);
    }
    if (!any)
        printf("  none: every call recorded on more than one rank was "
               "recorded alike\n");
    free(ranks);
}

static int cmp_key(const void *a, const void *b)
{
    const struct stat_key *x = a, *y = b;
    if (x->id != y->id)
        return x->id - y->id;
    int c = strcmp(kinds[x->kind], kinds[y->kind]);
    return c ? c : x->bucket - y->bucket;
}

static void times(void)
{
    /* Every key any file has, then each file's figures for it. */
    struct stat_key *keys = NULL;
    int nkeys = 0, cap = 0;
    for (int i = 0; i < nfiles; i++)
        for (int s = 0; files[i].ok && s < 256; s++) {
            const struct stat_key *x = &files[i].stats[s];
            if (!x->used)
                continue;
            int k = 0;
            while (k < nkeys && keys[k].key != x->key)
                k++;
            if (k < nkeys)
                continue;
            if (nkeys == cap) {
                cap = cap ? 2 * cap : 64;
                struct stat_key *nk = realloc(keys, sizeof(*nk) * (size_t)cap);
                if (!nk)
                    return;
                keys = nk;
            }
            keys[nkeys++] = *x;
        }
    qsort(keys, (size_t)nkeys, sizeof(*keys), cmp_key);
    printf("\nTime by group, call kind and size, over every rank (the "
           "recorders' clock: a few ms\nresolution). The rank with the "
           "least mean waited least: the last to arrive.\n");
    printf("  %5s %-16s %12s %10s %10s %10s %8s %10s %8s\n", "group", "kind",
           "bytes up to", "calls", "mean s", "max s", "on rank",
           "least mean", "on rank");
    for (int k = 0; k < nkeys; k++) {
        unsigned long long calls = 0;
        double total = 0, max = -1, least = 1e300;
        int max_rank = -1, least_rank = -1;
        for (int i = 0; i < nfiles; i++) {
            struct stat_key *x = files[i].ok
                ? stat_of(&files[i], keys[k].id, keys[k].kind, keys[k].bucket)
                : NULL;
            if (!x || !x->calls)
                continue;
            calls += x->calls;
            total += x->total;
            if (x->max > max) {
                max = x->max;
                max_rank = files[i].rank;
            }
            double mean = x->total / (double)x->calls;
            if (mean < least) {
                least = mean;
                least_rank = files[i].rank;
            }
        }
        char bytes[32];
        if (keys[k].bucket < 0)
            snprintf(bytes, sizeof(bytes), "-");
        else
            snprintf(bytes, sizeof(bytes), "%llu", 1ULL << keys[k].bucket);
        printf("  %5d %-16s %12s %10llu %10.6f %10.6f %8d %10.6f %8d\n",
               keys[k].id, kinds[keys[k].kind], bytes, calls,
               calls ? total / (double)calls : 0, max, max_rank, least,
               least_rank);
    }
    free(keys);
}

static void usage(FILE *to)
{
    fprintf(to, "usage: dcoll-trace [-s] [-q] [-j THREADS] FILE|DIR...\n"
            "Merges a job's flight recorder files (dcoll-JOB-RANK.jsonl, "
            "written on a hang,\na mismatch, dcoll_dump or "
            "DCOLL_DUMP_SIGNAL; a directory stands for those in it)\nand "
            "says where each rank stands on each group, the first call "
            "where the\nranks' records disagree, and (-s) the time by call "
            "kind and size.\n"
            "  -s          also the time by group, call kind and size\n"
            "  -q          leave out the first report's text\n"
            "  -j THREADS  files read at once (default: 8 a CPU, at most "
            "64)\n"
            "  --version   dcoll's version\n");
}

int main(int argc, char **argv)
{
    bool quiet = false;
    /* Reading is mostly waiting for the disk: several files a CPU. */
    long threads = 8 * sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1 || threads > 64)
        threads = threads < 1 ? 8 : 64;
    char **paths = NULL;
    int npaths = 0, cap = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[a], "--version")) {
            int ma, mi, pa;
            dcoll_version(&ma, &mi, &pa);
            printf("dcoll-trace (dcoll %d.%d.%d), reads dcoll-trace version "
                   "1\n", ma, mi, pa);
            return 0;
        }
        if (!strcmp(argv[a], "-s")) {
            want_times = true;
        } else if (!strcmp(argv[a], "-q")) {
            quiet = true;
        } else if (!strcmp(argv[a], "-j")) {
            char *end;
            threads = a + 1 < argc ? strtol(argv[++a], &end, 10) : 0;
            if (threads < 1 || threads > 256 || *end) {
                fprintf(stderr, "dcoll-trace: -j takes a number of threads "
                        "from 1 to 256, not '%s'\n", argv[a]);
                return 2;
            }
        } else if (argv[a][0] == '-') {
            fprintf(stderr, "dcoll-trace: unknown option '%s'\n", argv[a]);
            usage(stderr);
            return 2;
        } else {
            struct stat sb;
            if (stat(argv[a], &sb)) {
                fprintf(stderr, "dcoll-trace: %s: %s\n", argv[a],
                        strerror(errno));
                return 2;
            }
            if (S_ISDIR(sb.st_mode)) {
                DIR *d = opendir(argv[a]);
                struct dirent *e;
                while (d && (e = readdir(d))) {
                    if (!is_trace_name(e->d_name))
                        continue;
                    char p[4096];
                    snprintf(p, sizeof(p), "%s/%s", argv[a], e->d_name);
                    if (add_path(p, &paths, &npaths, &cap))
                        return 2;
                }
                if (d)
                    closedir(d);
            } else if (add_path(argv[a], &paths, &npaths, &cap)) {
                return 2;
            }
        }
    }
    if (!npaths) {
        fprintf(stderr, "dcoll-trace: no recorder files (dcoll-*.jsonl) "
                "given or found\n");
        usage(stderr);
        return 2;
    }
    files = calloc((size_t)npaths, sizeof(*files));
    if (!files)
        return 2;
    nfiles = npaths;
    for (int i = 0; i < nfiles; i++)
        files[i].path = paths[i];
    /* The lowest rank's file is the reference the others are held to:
     * find it by its header first, read it whole, then the rest. */
    int low = -1, lowrank = 0;
    for (int i = 0; i < nfiles; i++) {
        struct stat sb;
        char why[8];
        int fd = open_regular(files[i].path, &sb, why, sizeof(why));
        FILE *fp = fd < 0 ? NULL : fdopen(fd, "r");
        if (fd >= 0 && !fp)
            close(fd);
        char head[2048];
        if (fp && fgets(head, sizeof(head), fp)) {
            int r = (int)get_int(head, head + strlen(head), "rank", -1);
            if (r >= 0 && (low < 0 || r < lowrank)) {
                low = i;
                lowrank = r;
            }
        }
        if (fp)
            fclose(fp);
    }
    if (low > 0) {
        struct file t = files[0];
        files[0] = files[low];
        files[low] = t;
    }
    building_ref = true;
    read_file(&files[0]);
    building_ref = false;
    next_file = 1;
    pthread_t *t = calloc((size_t)threads, sizeof(*t));
    long started = 0;
    for (long i = 0; t && i < threads; i++)
        started += !pthread_create(&t[i], NULL, worker, NULL);
    if (!started)
        worker(NULL);
    for (long i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    qsort(files, (size_t)nfiles, sizeof(*files), cmp_rank);
    collect_ids();
    /* A group the reference is not in (rank 0 left out of it): its
     * lowest member's file is its reference, and its members are read
     * again for it alone. */
    for (int k = 0; k < nids; k++) {
        if (ref_of(ids[k]) || nrefs == MAX_GROUPS)
            continue;
        only = ids[k];
        int first = -1;
        for (int i = 0; i < nfiles; i++) {
            if (!files[i].ok || slot_of(&files[i], only) < 0)
                continue;
            if (first < 0) {
                first = i;
                building_ref = true;
                read_file(&files[i]);
                building_ref = false;
            } else {
                read_file(&files[i]);
            }
        }
        only = -1;
    }

    int ok = 0, size = 0;
    const char *job = "";
    for (int i = 0; i < nfiles; i++) {
        if (!files[i].ok) {
            fprintf(stderr, "dcoll-trace: %s: %s\n", files[i].path,
                    files[i].error[0] ? files[i].error : "no header");
            continue;
        }
        ok++;
        if (files[i].size > size)
            size = files[i].size;
        if (!job[0])
            job = files[i].job;
        else if (strcmp(job, files[i].job))
            fprintf(stderr, "dcoll-trace: %s is of job %s, not %s\n",
                    files[i].path, files[i].job, job);
    }
    if (!ok) {
        fprintf(stderr, "dcoll-trace: no file could be read\n");
        return 1;
    }
    /* A reference read out of order (not rank 0) still holds. */
    printf("job %s: %d rank(s), files from %d", job, size, ok);
    if (ok < size) {
        printf("; none from ");
        put_missing(size);
        printf(" (never wrote one, or it is elsewhere)");
    }
    printf("\n");
    if (!quiet)
        for (int i = 0; i < nfiles; i++)
            if (files[i].ok && strcmp(files[i].reason, "dcoll_dump") &&
                strncmp(files[i].reason, "dump asked", 10)) {
                printf("rank %d reported: %.400s%s\n", files[i].rank,
                       files[i].reason,
                       strlen(files[i].reason) > 400 ? "..." : "");
                break;
            }
    where();
    disagreements();
    if (want_times)
        times();
    return 0;
}
