/* dcoll-tune: measure MPI's own call, each way of making the same
 * collective from MPI's other calls (mpi_layer/compose.c) and the shared
 * segment's way (mpi_layer/shm_*.c), on the allocation it runs on, and
 * write the tuning table that DCOLL_TUNING loads (docs/performance.md,
 * Tuning tables). The segment's way runs through dcoll's own call on
 * the world group, with the library linked in statically and the
 * segment forced: it carries dcoll's cost per call, as a job's does.
 *
 *   mpirun -n 4 dcoll-tune -o tuning.txt
 *
 * dcoll-perf -S's method, per size: each way's calls in a block of their
 * own (the ways take turns going first, round by round), a block's time
 * the slowest rank's mean per call. MPI's collectives can be bimodal on
 * one machine (a size taking 240 us in one run and 1,200 in the next), so
 * a way replaces MPI's call only where it beat it in every round, each by
 * the margin; a lucky median never decides. Each round lays its buffers
 * out anew, at another offset. Every rank decides from the same figures
 * (the slowest rank's), and rank 0 writes the table. */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bytes.h"
#include "dcoll/dcoll.h"
#include "mpi_internal.h"
#include "shm.h"

#define MAX_ROUNDS 64
#define MAX_SIZES 64
#define MAX_WAYS 4     /* the ways a kind has, MPI's own call first */

static int me, nranks, ppn;
static dcoll_group_t *world;   /* dcoll's, for the segment's way */

#define SAY(...)                                                             \
    do {                                                                     \
        if (me == 0)                                                         \
            fprintf(stderr, __VA_ARGS__);                                    \
    } while (0)

/* The kinds a table covers (compose.c's list, with their ways), and
 * how each lays out its buffers. Sizes are dcoll-perf's: reduce_scatter's
 * the whole input and all_gather's the whole output, a rank's share
 * being size / ranks (blocks). */
enum shape { ALL_REDUCE, REDUCE_SCATTER, BROADCAST, REDUCE, ALL_GATHER };
struct kind {
    const struct dcoll_way_kind *w;
    enum shape shape;
    bool blocks;
};
static const struct kind kinds[] = {
    {&dcoll_way_kinds[0], ALL_REDUCE, false},
    {&dcoll_way_kinds[1], REDUCE_SCATTER, true},
    {&dcoll_way_kinds[2], BROADCAST, false},
    {&dcoll_way_kinds[3], REDUCE, false},
    {&dcoll_way_kinds[4], ALL_GATHER, true},
};
#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

/* Whether the segment's way runs kind k on this job: a world of two
 * ranks or more on one node (every kind), or across nodes with two or
 * more on some (the node-aware way's kinds); elsewhere dcoll makes
 * MPI's call, which is measured already. */
static bool shm_runs(const struct kind *k)
{
    if (nranks < 2 || ppn < 2)
        return false;
    return ppn == nranks || ((NODE_KINDS >> k->w->kind) & 1);
}

/* The ways measured here: those made of MPI's calls, and the segment's
 * (last) where it runs. */
static int ways_of(const struct kind *k)
{
    int n = k->w->nways;
    if (n > 1 && k->w->ways[n - 1] == DCOLL_WAY_SHM && !shm_runs(k))
        n--;
    return n;
}
_Static_assert(NKINDS == DCOLL_WAY_KINDS, "a shape for each kind");

struct opts {
    size_t minbytes, maxbytes;
    double factor;
    int iters, warmup, rounds;
    double margin;          /* a win is a round at least this much faster */
    const char *out;
    bool agree;             /* -k: keep only what the file already chose */
    bool heap;              /* -H: timed buffers from dcoll_mem_alloc */
    bool want[NKINDS];
};

/* What one size found: each way's median, rounds won, and the pick. */
struct result {
    int64_t bytes;          /* a rank's bytes, as the table counts them */
    size_t size;            /* as dcoll-perf's size column */
    double us[MAX_WAYS], gain[MAX_WAYS];
    int won[MAX_WAYS];
    bool wrong[MAX_WAYS];
    int pick;               /* index into the kind's ways */
};

static void usage(FILE *f)
{
    if (me == 0)
        fprintf(f, "usage: dcoll-tune [options] [kind ...]\n"
        "  -b SIZE   smallest size in bytes (K, M, G suffixes; default 8)\n"
        "  -e SIZE   largest size (default 16M)\n"
        "  -f N      factor between sizes (default 2)\n"
        "  -n N      timed calls per round (default: by size, 10..1000)\n"
        "  -w N      warm-up calls of each way (default 5)\n"
        "  -R N      rounds (default 7); a way must win every one\n"
        "  -m PCT    by at least PCT percent (default 5)\n"
        "  -o FILE   write the table to FILE: its rows for other group\n"
        "            sizes are kept, its rows for this one replaced\n"
        "  -H        time every way on buffers from dcoll_mem_alloc (the\n"
        "            world's shared heap), for jobs whose buffers lie there\n"
        "  -k        with -o: keep a way only where FILE's table already\n"
        "            had it (tables from several runs agree)\n"
        "  --help, --version\n"
        "Run it under mpirun or srun with the job's ranks and ranks a node\n"
        "(the table's rows are for that shape); under dcollrun it refuses.\n"
        "kinds: all_reduce reduce_scatter broadcast reduce all_gather\n"
        "(default: all). Sizes are dcoll-perf's: reduce_scatter's is the\n"
        "whole input and all_gather's the whole output, a rank's share\n"
        "being size / ranks; the table counts a rank's bytes. Ways: MPI's\n"
        "call, compositions of MPI's other calls, and the shared segment's\n"
        "(shm) where two ranks or more share a node; where shm is measured,\n"
        "every size gets a row, mpi included.\n");
}

/* A size in bytes (K, M, G suffixes), up to 16 GiB. */
static int parse_size(const char *s, size_t *out)
{
    return dcoll_parse_bytes(s, out) && *out <= ((size_t)1 << 34) ? 0 : -1;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
    int c;
    double v;
    while ((c = getopt(argc, argv, "b:e:f:n:w:R:m:o:kHh")) != -1) {
        switch (c) {
        case 'b':
            if (parse_size(optarg, &o->minbytes))
                goto bad;
            break;
        case 'e':
            if (parse_size(optarg, &o->maxbytes))
                goto bad;
            break;
        case 'f':
            if (parse_num(optarg, 1.01, 1024, &o->factor))
                goto bad;
            break;
        case 'n':
            if (parse_num(optarg, 1, 1e7, &v))
                goto bad;
            o->iters = (int)v;
            break;
        case 'w':
            if (parse_num(optarg, 0, 1e6, &v))
                goto bad;
            o->warmup = (int)v;
            break;
        case 'R':
            if (parse_num(optarg, 1, MAX_ROUNDS, &v))
                goto bad;
            o->rounds = (int)v;
            break;
        case 'm':
            if (parse_num(optarg, 0, 100, &o->margin))
                goto bad;
            o->margin /= 100;
            break;
        case 'o': o->out = optarg; break;
        case 'k': o->agree = true; break;
        case 'H': o->heap = true; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return -1;
        }
    }
    if (o->minbytes > o->maxbytes) {
        SAY("dcoll-tune: -b %zu is above -e %zu\n", o->minbytes,
            o->maxbytes);
        return -1;
    }
    if (o->agree && !o->out) {
        SAY("dcoll-tune: -k needs -o FILE, the table to agree with\n");
        return -1;
    }
    bool any = false;
    for (int i = optind; i < argc; i++) {
        int k = 0;
        while (k < NKINDS && strcmp(argv[i], kinds[k].w->name))
            k++;
        if (k == NKINDS) {
            SAY("dcoll-tune: '%s' is not a kind a table covers (all_reduce, "
                "reduce_scatter, broadcast, reduce, all_gather)\n", argv[i]);
            return -1;
        }
        o->want[k] = any = true;
    }
    for (int k = 0; k < NKINDS && !any; k++)
        o->want[k] = true;
    return 0;
bad:
    SAY("dcoll-tune: -%c: '%s' is out of range or not a number\n", c,
        optarg);
    usage(stderr);
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The segment's way: dcoll's call on the world (roots are rank 0), its
 * status as MPI's code (dcoll's message said first). */
static int call_shm(const struct kind *k, const void *in, void *out, int n,
                    MPI_Datatype t)
{
    dcoll_dtype_t dt = t == MPI_FLOAT ? DCOLL_FLOAT32 : DCOLL_INT32;
    dcoll_status_t st;
    switch (k->shape) {
    case ALL_REDUCE:
        st = dcoll_all_reduce(world, in, out, n, dt, DCOLL_SUM, NULL,
                              NULL);
        break;
    case REDUCE_SCATTER:
        st = dcoll_reduce_scatter(world, in, out, n, dt, DCOLL_SUM, NULL,
                                  NULL);
        break;
    case BROADCAST:
        st = dcoll_broadcast(world, out, n, dt, 0, NULL, NULL);
        break;
    case REDUCE:
        st = dcoll_reduce(world, in, out, n, dt, DCOLL_SUM, 0, NULL, NULL);
        break;
    default:
        st = dcoll_all_gather(world, in, out, n, dt, NULL, NULL);
        break;
    }
    if (st == DCOLL_SUCCESS)
        return MPI_SUCCESS;
    fprintf(stderr, "dcoll-tune: rank %d: %s\n", me, dcoll_last_error());
    return MPI_ERR_OTHER;
}

/* One call of way w of kind k: n elements a rank (reduce_scatter: a
 * rank's block; all_gather: a rank's part). Roots are rank 0;
 * broadcast's buffer is out. */
static int call(const struct kind *k, enum dcoll_way w, const void *in,
                void *out, int n, MPI_Datatype t, size_t esz, MPI_Op op)
{
    MPI_Comm c = MPI_COMM_WORLD;
    if (w == DCOLL_WAY_SHM)
        return call_shm(k, in, out, n, t);
    switch (k->shape) {
    case ALL_REDUCE:
        return dcoll_compose_all_reduce(w, in, out, n, t, esz, op, c, me,
                                        nranks);
    case REDUCE_SCATTER:
        return dcoll_compose_reduce_scatter(w, in, out, n, t, esz, op, c, me,
                                            nranks);
    case BROADCAST:
        return dcoll_compose_broadcast(w, out, n, t, esz, 0, c, me, nranks);
    case REDUCE:
        return dcoll_compose_reduce(w, in, out, n, t, esz, op, 0, c, me,
                                    nranks);
    default:
        return dcoll_compose_all_gather(w, in, out, n, t, esz, c, me,
                                        nranks);
    }
}

/* Elements of k's input and output a rank, for n. */
static size_t in_count(const struct kind *k, int n)
{
    return (size_t)n * (k->shape == REDUCE_SCATTER ? (size_t)nranks : 1);
}
static size_t out_count(const struct kind *k, int n)
{
    return (size_t)n * (k->shape == ALL_GATHER ? (size_t)nranks : 1);
}

static void fail(const char *what, const struct kind *k, enum dcoll_way w,
                 int rc)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    fprintf(stderr, "dcoll-tune: rank %d: %s %s by %s: %s\n", me, what,
            k->w->name, dcoll_way_names[w], s);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Whether way w gives MPI's exact result (an int32 sum, which every
 * order gets alike) and, for all_reduce, the same bits of a float32 sum
 * on every rank. */
static bool right(const struct kind *k, enum dcoll_way w, int n)
{
    size_t in_n = in_count(k, n), out_n = out_count(k, n);
    int32_t *in = malloc(in_n * 4), *got = malloc(out_n * 4),
            *ref = malloc(out_n * 4);
    float *fin = (float *)in, *fgot = (float *)got;
    int bad = !in || !got || !ref;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!bad) {
        for (size_t i = 0; i < in_n; i++)
            in[i] = (int32_t)((me * 7 + i * 3) % 19) - 9;
        /* broadcast: the root's input is its buffer; the others' is
         * overwritten. */
        for (size_t i = 0; i < out_n; i++)
            got[i] = ref[i] = k->shape == BROADCAST && me == 0
                                  ? in[i] : -1;
        int rc = call(k, DCOLL_WAY_MPI, in, ref, n, MPI_INT32_T, 4, MPI_SUM);
        if (rc == MPI_SUCCESS)
            rc = call(k, w, in, got, n, MPI_INT32_T, 4, MPI_SUM);
        if (rc != MPI_SUCCESS)
            fail("checking", k, w, rc);
        /* reduce: only the root's result is one. */
        if (k->shape != REDUCE || me == 0)
            bad = memcmp(got, ref, out_n * 4) != 0;
    }
    /* Agreed before the next collective, which every rank makes or none. */
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!bad && k->shape == ALL_REDUCE) {
        /* Sums that round: all_reduce's result has the same bits on
         * every rank (not always MPI's: another order). */
        for (size_t i = 0; i < in_n; i++)
            fin[i] = 1.0f / (float)(me + 3 + (int)(i % 7));
        int rc = call(k, w, in, got, n, MPI_FLOAT, 4, MPI_SUM);
        if (rc != MPI_SUCCESS)
            fail("checking", k, w, rc);
        uint64_t h = 1469598103934665603ull;
        const unsigned char *b = (const unsigned char *)fgot;
        for (size_t i = 0; i < (size_t)n * 4; i++)
            h = (h ^ b[i]) * 1099511628211ull;
        uint64_t lo = h, hi = h;
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN,
                      MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX,
                      MPI_COMM_WORLD);
        bad = lo != hi;
    }
    free(in);
    free(got);
    free(ref);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return !bad;
}

static int iters_for(const struct opts *o, size_t size)
{
    if (o->iters)
        return o->iters;
    size_t n = ((size_t)256 << 20) / (size ? size : 1);
    return n < 10 ? 10 : n > 1000 ? 1000 : (int)n;
}

/* A rank's float32 count at dcoll-perf's size (at least 1). */
static int count_of(const struct kind *k, size_t size)
{
    size_t n = size / 4 / (k->blocks ? (size_t)nranks : 1);
    return n < 1 ? 1 : n > INT32_MAX ? INT32_MAX : (int)n;
}

/* A round's buffer of bytes: the heap's (-H: every rank asks the same
 * bytes, as dcoll_mem_alloc wants) or malloc's; and its release. */
static char *buffer(const struct opts *o, size_t bytes)
{
    void *p = NULL;
    if (!o->heap)
        p = malloc(bytes);
    else if (dcoll_mem_alloc(world, bytes, &p))
        fprintf(stderr, "dcoll-tune: rank %d: %s\n", me, dcoll_last_error());
    if (!p) {
        fprintf(stderr, "dcoll-tune: rank %d: no memory for %zu bytes\n", me,
                bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void release(const struct opts *o, char *p)
{
    if (o->heap && dcoll_mem_free(world, p)) {
        fprintf(stderr, "dcoll-tune: rank %d: %s\n", me, dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!o->heap)
        free(p);
}

/* Measure kind k at one size: float32 sums, every way, o->rounds rounds. */
static void measure(const struct opts *o, const struct kind *k, size_t size,
                    struct result *res)
{
    int n = count_of(k, size);
    size_t in_bytes = in_count(k, n) * 4, out_bytes = out_count(k, n) * 4;
    res->bytes = (int64_t)n * 4;
    res->size = (size_t)n * 4 * (k->blocks ? (size_t)nranks : 1);
    int nways = ways_of(k);
    for (int i = 0; i < nways; i++) {
        res->wrong[i] = i > 0 && !right(k, k->w->ways[i], n);
        if (res->wrong[i])
            SAY("dcoll-tune: %s by %s is WRONG at %zu bytes: left out (a "
                "bug: please report it)\n", k->w->name,
                dcoll_way_names[k->w->ways[i]], res->size);
    }
    int iters = iters_for(o, res->size);
    double t[MAX_ROUNDS][MAX_WAYS] = {{0}};
    for (int r = 0; r < o->rounds; r++) {
        /* A new layout each round: 64-byte steps through a page and
         * beyond, so that no one alignment decides. */
        size_t off = (size_t)(r * 17 % 97) * 64;
        char *in = buffer(o, in_bytes + off), *out = buffer(o, out_bytes + off);
        float *fin = (float *)(in + off);
        for (size_t i = 0; i < in_bytes / 4; i++)
            fin[i] = (float)((i + (size_t)me) % 13);
        for (int j = 0; j < nways; j++) {
            int w = (j + r) % nways;
            t[r][w] = 0;
            if (res->wrong[w])
                continue;
            enum dcoll_way way = k->w->ways[w];
            int warm = r == 0 ? o->warmup : 1;
            for (int i = 0; i < warm; i++) {
                int rc = call(k, way, fin, out + off, n, MPI_FLOAT, 4,
                              MPI_SUM);
                if (rc != MPI_SUCCESS)
                    fail("warming up", k, way, rc);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                int rc = call(k, way, fin, out + off, n, MPI_FLOAT, 4,
                              MPI_SUM);
                if (rc != MPI_SUCCESS)
                    fail("timing", k, way, rc);
            }
            t[r][w] = (MPI_Wtime() - t0) * 1e6 / iters;
        }
        MPI_Allreduce(MPI_IN_PLACE, t[r], MAX_WAYS, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD);
        release(o, in);
        release(o, out);
    }
    /* The pick: of the ways that won every round by the margin, the one
     * whose rounds' ratios have the best median. */
    res->pick = 0;
    double best = 1;
    for (int w = 0; w < nways; w++) {
        double col[MAX_ROUNDS], q[MAX_ROUNDS];
        res->won[w] = 0;
        for (int r = 0; r < o->rounds; r++) {
            col[r] = t[r][w];
            q[r] = t[r][w] > 0 ? t[r][0] / t[r][w] : 0;
            res->won[w] += w > 0 && q[r] >= 1 + o->margin;
        }
        res->us[w] = res->wrong[w] ? 0 : median(col, o->rounds);
        res->gain[w] = res->wrong[w] ? 0 : median(q, o->rounds);
        if (w > 0 && !res->wrong[w] && res->won[w] == o->rounds &&
            res->gain[w] > best) {
            best = res->gain[w];
            res->pick = w;
        }
    }
}

/* One size's line, for the screen and as a comment in the table. */
static void line_of(const struct opts *o, const struct kind *k,
                    const struct result *r, char *s, size_t cap)
{
    size_t at = (size_t)snprintf(s, cap, "%-14s %10zu %10lld  %9.1f",
                                 k->w->name, r->size, (long long)r->bytes,
                                 r->us[0]);
    for (int w = 1; w < ways_of(k) && at < cap; w++) {
        if (r->wrong[w])
            at += (size_t)snprintf(s + at, cap - at, "  %9s %13s", "WRONG",
                                   "");
        else
            at += (size_t)snprintf(s + at, cap - at, "  %9.1f %5.2fx %2d/%-2d",
                                   r->us[w], r->gain[w], r->won[w], o->rounds);
    }
    if (at < cap)
        snprintf(s + at, cap - at, "  %s %.2fx",
                 dcoll_way_names[k->w->ways[r->pick]],
                 r->pick ? r->gain[r->pick] : 1.0);
}

static void header_of(const struct kind *k, char *s, size_t cap)
{
    size_t at = (size_t)snprintf(s, cap, "%-14s %10s %10s  %9s", "kind",
                                 "size", "rank bytes", "mpi us");
    for (int w = 1; w < ways_of(k) && at < cap; w++)
        at += (size_t)snprintf(s + at, cap - at, "  %-23s",
                               dcoll_way_names[k->w->ways[w]]);
    if (at < cap)
        snprintf(s + at, cap - at, "  pick, gain");
}

/* Whether two tables' MPIs are one (mpiname.c's comparison). */
static bool same_mpi(const char *a, const char *b)
{
    char x[MPI_MAX_LIBRARY_VERSION_STRING + 1],
        y[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    snprintf(x, sizeof(x), "%s", a);
    snprintf(y, sizeof(y), "%s", b);
    dcoll_mpi_squeeze(x);
    dcoll_mpi_squeeze(y);
    return !strcmp(x, y);
}

/* The file's text, or NULL with *why (missing: *why is empty). */
static char *slurp(const char *path, char *why, size_t cap)
{
    why[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno != ENOENT)
            snprintf(why, cap, "%s", strerror(errno));
        return NULL;
    }
    char *text = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && n <= 1 << 24 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)n + 1)) &&
        fread(text, 1, (size_t)n, f) == (size_t)n)
        text[n] = '\0';
    else {
        free(text);
        text = NULL;
        snprintf(why, cap, "%s", n > 1 << 24 ? "it is over 16 MiB"
                                             : "it could not be read");
    }
    fclose(f);
    return text;
}

/* A row of a table: its fields, if the line is one (not a comment, the
 * header, the mpi line or end). */
struct row {
    char kind[32], way[64];
    int ranks, ppn;
    long long from, to;
};

static bool row_of(const char *line, struct row *r)
{
    char to[32];
    if (sscanf(line, " %31s %d %d %lld %31s %63s", r->kind, &r->ranks,
               &r->ppn, &r->from, to, r->way) != 6)
        return false;
    r->to = strcmp(to, "-") ? strtoll(to, NULL, 10) : INT64_MAX;
    return true;
}

/* -k: the way the old table gives kind k at bytes for this group, or
 * NULL where it has no row (MPI's call). */
static const char *old_way(const struct row *rows, int nrows,
                           const char *kind, int64_t bytes)
{
    for (int i = 0; i < nrows; i++)
        if (!strcmp(rows[i].kind, kind) && rows[i].ranks == nranks &&
            rows[i].ppn == ppn && bytes >= rows[i].from &&
            bytes <= rows[i].to)
            return rows[i].way;
    return NULL;
}

/* Whether this run remakes kind's rows and figures. */
static bool remade(const struct opts *o, const char *kind)
{
    for (int k = 0; k < NKINDS; k++)
        if (!strcmp(kinds[k].w->name, kind))
            return o->want[k];
    return false;
}

/* Rank 0: the table for o->out, keeping what the file holds for other
 * groups (its lines between this program's group markers), or a message
 * saying why the file cannot take it. Returns the number of rows of the
 * old table for this group in *rows (for -k). */
static int read_old(const struct opts *o, const char *mpi, char **keep,
                    struct row **rows, int *nrows)
{
    char why[128];
    *keep = NULL;
    *rows = NULL;
    *nrows = 0;
    char *text = slurp(o->out, why, sizeof(why));
    if (!text) {
        if (why[0]) {
            fprintf(stderr, "dcoll-tune: %s: %s\n", o->out, why);
            return -1;
        }
        if (o->agree) {
            fprintf(stderr, "dcoll-tune: -k: %s does not exist: no table to "
                    "agree with\n", o->out);
            return -1;
        }
        return 0;
    }
    size_t len = strlen(text);
    *keep = calloc(1, len + 1);
    *rows = calloc(len / 8 + 1, sizeof(struct row));
    if (!*keep || !*rows) {
        fprintf(stderr, "dcoll-tune: no memory for %s\n", o->out);
        return -1;
    }
    /* Sections start at "# group RANKS PPN KIND" lines: those this run
     * remakes are dropped (their rows read, for -k). */
    int no = 0;
    bool ours = false, ended = false;
    size_t at = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        no++;
        const char *s = line + strspn(line, " \t");
        if (no == 1) {
            if (strncmp(s, "dcoll-tuning 1", 14)) {
                fprintf(stderr, "dcoll-tune: %s is not a dcoll tuning table "
                        "(its first line is not 'dcoll-tuning 1'): not "
                        "overwritten\n", o->out);
                return -1;
            }
            continue;
        }
        if (no == 2) {
            if (strncmp(s, "mpi ", 4) || !same_mpi(s + 4, mpi)) {
                fprintf(stderr, "dcoll-tune: %s was made with another MPI "
                        "(line 2: '%s'; this is '%s'): not overwritten\n",
                        o->out, s, mpi);
                return -1;
            }
            continue;
        }
        int r = 0, p = 0;
        char kind[32];
        if (sscanf(s, "# group %d %d %31[a-z_]", &r, &p, kind) == 3) {
            ours = r == nranks && p == ppn && remade(o, kind);
        } else if (!strncmp(s, "end", 3) && (!s[3] || s[3] == ' ' ||
                                              s[3] == '#' || s[3] == '\r')) {
            ended = true;
            break;
        }
        /* This group's rows are remade; other groups' rows are kept
         * wherever they stand, comments only outside this section. */
        struct row rw;
        bool row = s[0] != '#' && row_of(s, &rw);
        if (row && rw.ranks == nranks && rw.ppn == ppn && remade(o, rw.kind))
            (*rows)[(*nrows)++] = rw;
        else if (row || !ours)
            at += (size_t)sprintf(*keep + at, "%s\n", line);
    }
    free(text);
    if (!ended) {
        fprintf(stderr, "dcoll-tune: %s has no 'end' line (truncated?): not "
                "overwritten\n", o->out);
        return -1;
    }
    return 0;
}

/* --help and --version, before MPI starts (as the other tools): 1 if
 * one was asked and answered. */
static int early(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(argv[i], "--version")) {
            int ma, mi, pa;
            dcoll_version(&ma, &mi, &pa);
            printf("dcoll-tune (dcoll) %d.%d.%d\n", ma, mi, pa);
            return 1;
        }
    }
    return 0;
}

/* Started as one of N by dcollrun or torchrun (RANK and WORLD_SIZE set),
 * MPI makes each process a world of its own: N tunings of one rank, each
 * writing the same file. Refused, as dcoll_init refuses mpi:// there.
 * Every process says why: the launcher stops the rest when the first
 * exits, so a line left to rank 0 alone may never be written. */
static int one_of_n(void)
{
    const char *rank = getenv("RANK"), *size = getenv("WORLD_SIZE");
    if (nranks != 1 || !rank || !size || atoi(size) < 2)
        return 0;
    fprintf(stderr, "dcoll-tune (RANK=%s): started as one of WORLD_SIZE=%s "
            "processes (dcollrun or torchrun), which MPI does not join: "
            "each would tune a world of one rank and write the same "
            "table. Start it with mpirun or srun (mpirun -n %s "
            "dcoll-tune ...)\n", rank, size, size);
    return 1;
}

int main(int argc, char **argv)
{
    if (early(argc, argv))
        return 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (one_of_n()) {
        MPI_Finalize();
        return 2;
    }
    struct opts o = {.minbytes = 8, .maxbytes = 16 << 20, .factor = 2,
                     .warmup = 5, .rounds = 7, .margin = 0.05};
    int rc = parse(argc, argv, &o);
    if (rc) {
        MPI_Finalize();
        return rc < 0 ? 2 : 0;
    }
    /* Ranks per node as tuning.c learns them: the largest share of one. */
    MPI_Comm node;
    int mine = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                            MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &mine);
        MPI_Comm_free(&node);
    }
    MPI_Allreduce(&mine, &ppn, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    dcoll_mpi_library(mpi, sizeof(mpi));
    /* The segment's way: dcoll on this MPI world, no table of its own
     * (a job's table or rules must not choose for it), the segment
     * forced: where it cannot be made, dcoll's call is MPI's, which
     * then wins nothing. */
    bool shm = false;
    for (int k = 0; k < NKINDS; k++)
        shm |= o.want[k] && shm_runs(&kinds[k]);
    if (shm || o.heap) {
        dcoll_init_params_t ip = DCOLL_INIT_PARAMS_INIT;
        ip.mask = DCOLL_INIT_PARAM_URL | DCOLL_INIT_PARAM_TUNING;
        ip.url = "mpi://";
        ip.tuning = "";
        if (dcoll_init(&ip) || dcoll_group_world(&world)) {
            fprintf(stderr, "dcoll-tune: rank %d: dcoll_init: %s\n", me,
                    dcoll_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        dcoll_mpi_shm_mode = DCOLL_SHM_ALWAYS;
    }

    /* The file is checked before the hours of measuring, not after. */
    char *keep = NULL;
    struct row *old = NULL;
    int nold = 0, bad = 0;
    if (me == 0 && o.out)
        bad = read_old(&o, mpi, &keep, &old, &nold);
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) {
        MPI_Finalize();
        return 1;
    }

    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (double s = (double)o.minbytes; s <= (double)o.maxbytes + 0.5 &&
         nsizes < MAX_SIZES; s = s * o.factor > s + 1 ? s * o.factor : s + 1)
        sizes[nsizes++] = (size_t)s;
    SAY("# dcoll-tune: %d ranks, %d a node; %s\n# %d rounds of each way's "
        "calls apart; a way must be %.0f%% faster than MPI's call in every "
        "one\n# columns: a way's median us, its median gain over MPI's call "
        "and the rounds it won\n", nranks, ppn, mpi, o.rounds,
        o.margin * 100);
    if (o.heap)
        SAY("# timed buffers from dcoll_mem_alloc (-H), for every way\n");

    static struct result res[NKINDS][MAX_SIZES];
    int nres[NKINDS] = {0};
    char text[512];
    for (int k = 0; k < NKINDS; k++) {
        if (!o.want[k])
            continue;
        header_of(&kinds[k], text, sizeof(text));
        SAY("# %s\n", text);
        for (int i = 0; i < nsizes; i++) {
            /* Sizes that give one count (reduce_scatter's smallest, over
             * many ranks) are one measurement. */
            if (nres[k] && (int64_t)count_of(&kinds[k], sizes[i]) * 4 ==
                               res[k][nres[k] - 1].bytes)
                continue;
            struct result *r = &res[k][nres[k]++];
            measure(&o, &kinds[k], sizes[i], r);
            const char *note = "";
            if (o.agree && r->pick) {
                const char *was = old_way(old, nold, kinds[k].w->name,
                                          r->bytes);
                const char *now = dcoll_way_names[kinds[k].w->ways[r->pick]];
                if (!was || strcmp(was, now)) {
                    r->pick = 0;
                    note = " (-k: the file's table disagrees: mpi)";
                }
            }
            line_of(&o, &kinds[k], r, text, sizeof(text));
            SAY("  %s%s\n", text, note);
        }
    }

    /* The table: runs of sizes with the same pick become one row, from
     * its first size's bytes to just below the next size's. */
    /* Written beside the file and renamed over it: a run cut short
     * leaves the old table whole. */
    FILE *f = NULL;
    int err = 0, kept = 0, rows = 0;
    char tmp[4096] = "";
    if (me == 0 && o.out) {
        snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", o.out, (long)getpid());
        f = fopen(tmp, "w");
        if (!f)
            fprintf(stderr, "dcoll-tune: cannot write %s: %s\n", tmp,
                    strerror(errno));
    }
    if (me == 0) {
        FILE *to[2] = {stdout, f};
        time_t now = time(NULL);
        char when[32];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M", localtime(&now));
        for (int d = 0; d < 2; d++) {
            FILE *x = to[d];
            if (!x)
                continue;
            fprintf(x, "dcoll-tuning 1\nmpi %s\n", mpi);
            if (d == 1 && keep)
                fputs(keep, x);
            for (int k = 0; k < NKINDS; k++) {
                if (!o.want[k])
                    continue;
                fprintf(x, "# group %d %d %s: %d ranks, %d a node; "
                        "dcoll-tune %s%srounds %d, margin %.0f%%, %s\n",
                        nranks, ppn, kinds[k].w->name, nranks, ppn,
                        o.heap ? "-H (buffers from dcoll_mem_alloc), " : "",
                        o.agree ? "-k, " : "", o.rounds, o.margin * 100,
                        when);
                header_of(&kinds[k], text, sizeof(text));
                fprintf(x, "#   %s\n", text);
                for (int i = 0; i < nres[k]; i++) {
                    line_of(&o, &kinds[k], &res[k][i], text, sizeof(text));
                    fprintf(x, "#   %s\n", text);
                }
                /* Where the segment's way was measured, MPI's call gets
                 * rows too: without one, the rules would choose. */
                bool every = shm_runs(&kinds[k]);
                for (int i = 0; i < nres[k]; i++) {
                    const struct result *r = &res[k][i];
                    if (!r->pick && !every)
                        continue;
                    int j = i;
                    while (j + 1 < nres[k] && res[k][j + 1].pick == r->pick)
                        j++;
                    long long to_b = j + 1 < nres[k]
                                         ? (long long)res[k][j + 1].bytes - 1
                                         : (long long)res[k][j].bytes;
                    fprintf(x, "%-14s %4d %4d %10lld %10lld  %s\n",
                            kinds[k].w->name, nranks, ppn, (long long)r->bytes,
                            to_b, dcoll_way_names[kinds[k].w->ways[r->pick]]);
                    kept += d == 1 && r->pick;
                    rows += d == 1;
                    i = j;
                }
            }
            fprintf(x, "end\n");
        }
        if (f && (fclose(f) || rename(tmp, o.out))) {
            fprintf(stderr, "dcoll-tune: writing %s: %s\n", o.out,
                    strerror(errno));
            remove(tmp);
            err = 1;
        } else if (f && !kept) {
            fprintf(stderr, "dcoll-tune: the table for %d ranks, %d a node is "
                    "empty of other ways: none beat MPI's own call by %.0f%% "
                    "in every round at any size%s (wrote %s; %s)\n", nranks,
                    ppn, o.margin * 100,
                    o.agree ? " where the file had it (-k)" : "", o.out,
                    rows ? "its rows keep MPI's call where dcoll's rules "
                           "could take the shared segment"
                         : "with it dcoll calls MPI as it does without a "
                           "table");
        } else if (f) {
            fprintf(stderr, "dcoll-tune: wrote %s (%d rows for %d ranks, %d "
                    "a node, %d of another way than MPI's call); load it "
                    "with DCOLL_TUNING=%s\n", o.out, rows, nranks, ppn, kept,
                    o.out);
        }
        if (o.out && !f)
            err = 1;
    }
    free(keep);
    free(old);
    MPI_Bcast(&err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (shm || o.heap)
        dcoll_finalize();
    MPI_Finalize();
    return err;
}
