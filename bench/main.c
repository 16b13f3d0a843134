/* dcoll-perf: nccl-tests' measurements for dcoll, each beside the raw MPI
 * call on the same communicator in the same run.
 *
 *   mpirun -n 4 dcoll-perf -b 8 -e 64M -f 2 all_reduce broadcast
 *
 * Per size: a correctness check (#wrong), warm-up, then rounds in which
 * dcoll's and the raw call alternate call by call. A round's time is the
 * maximum over ranks of each rank's mean per call; the median round is
 * reported, and the median of the rounds' raw/dcoll ratios. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "dcoll/dcoll_mpi.h"
#include "perf.h"

static int world_rank;

#define SAY(...)                                                             \
    do {                                                                     \
        if (world_rank == 0)                                                 \
            fprintf(stderr, __VA_ARGS__);                                    \
    } while (0)

static void usage(FILE *f)
{
    if (world_rank == 0)
        fprintf(f, "usage: dcoll-perf [options] [collective ...]\n"
        "  -b SIZE   smallest size in bytes (K, M, G suffixes; default 8)\n"
        "  -e SIZE   largest size (default 64M)\n"
        "  -f N      factor between sizes (default 2)\n"
        "  -n N      timed calls per round (default: by size, 10..1000)\n"
        "  -w N      warm-up calls (default 5)\n"
        "  -R N      rounds, raw and dcoll taking turns (default 5)\n"
        "  -d TYPE   int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
        "            float32 float64 bool logical complex64 complex128\n"
        "            float32int float64int int32int 2float32 2float64\n"
        "            (default float32)\n"
        "  -p OP     sum prod min max avg band bor bxor land lor lxor\n"
        "            minloc maxloc (default sum)\n"
        "  -r RANK   root, a world rank (default: the group's first)\n"
        "  -a        async calls + wait, against MPI's I-calls + MPI_Wait\n"
        "  -K        with -m cuda: say the buffers are GPU memory (opts.memory):\n"
        "            no pointer query after the group's first call\n"
        "  -O        with -m cuda: stream-ordered calls\n"
        "            (DCOLL_COLL_OPT_STREAM_ORDERED), each followed by\n"
        "            cudaStreamSynchronize as the raw NCCL call is\n"
        "  -A        calibrate: time the raw call against itself, in dcoll's\n"
        "            place, to show this machine's noise floor\n"
        "  -S        time each side's calls in a block of their own, not\n"
        "            call by call (which goes first alternates by round)\n"
        "  -P        plans: a plan's start (with -a: + wait) against MPI's\n"
        "            blocking call (-a: nonblocking) and MPI's persistent\n"
        "            request (MPI_Start + MPI_Wait), made once per size\n"
        "  -M        the memory's bound: every rank's memcpy of the size at\n"
        "            once, timed in each round, with each side's busbw as a\n"
        "            share of it\n"
        "  -H        buffers from dcoll_mem_alloc on the group (both\n"
        "            sides): the shared segment reads send buffers in place\n"
        "  -G        malloc'd buffers on a group that also has a heap from\n"
        "            dcoll_mem_alloc: what other memory costs on such a group\n"
        "  -c 0|1    check results (default 1)\n"
        "  -t N      tensors for the coalesced forms (default 1000)\n"
        "  -g LIST   run on a sub-group: comma list of world ranks\n"
        "  -m MEM    host (default) or cuda\n"
        "  -o FILE   also write the results to FILE.json or FILE.csv\n"
        "collectives: all (every one below), ");
    for (int i = 0; i < perf_ncolls && world_rank == 0; i++)
        fprintf(f, "%s%s", perf_colls[i].name,
                i + 1 < perf_ncolls ? ", " : "\n");
}

/* A size in bytes (K, M, G suffixes), up to 1 TiB. */
static int parse_size(const char *s, size_t *out)
{
    return dcoll_parse_bytes(s, out) && *out <= ((size_t)1 << 40) ? 0 : -1;
}

static int parse_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1 << 30)
        return -1;
    *out = (int)v;
    return 0;
}

static int lookup(const char *s, const char *(*name)(int), int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, name(i)) == 0)
            return i;
    return -1;
}

static const char *dt_name(int i) { return perf_dtype_name((dcoll_dtype_t)i); }
static const char *op_name(int i) { return perf_op_name((dcoll_op_t)i); }

static int parse_members(char *s, struct perf_opts *o, int world)
{
    o->members = malloc(sizeof(int) * (size_t)world);
    o->nmembers = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        int r;
        if (o->nmembers == world || parse_int(tok, 0, &r) || r >= world) {
            SAY("dcoll-perf: -g: '%s' is not a world rank (0..%d) or the "
                "list is longer than the world\n", tok, world - 1);
            return -1;
        }
        o->members[o->nmembers++] = r;
    }
    return o->nmembers ? 0 : -1;
}

/* Fills o from argv; returns the index of the first collective name. */
static int parse(int argc, char **argv, struct perf_opts *o, int world)
{
    int c, v;
    const char *mem = "host";
    while ((c = getopt(argc, argv, "b:e:f:n:w:R:d:p:r:aASPKMHGOc:t:g:m:o:h")) != -1) {
        switch (c) {
        case 'b': if (parse_size(optarg, &o->minbytes)) goto bad; break;
        case 'e': if (parse_size(optarg, &o->maxbytes)) goto bad; break;
        case 'f':
            o->factor = strtod(optarg, NULL);
            if (!(o->factor >= 1.0 && o->factor <= 1024.0)) goto bad;
            break;
        case 'n': if (parse_int(optarg, 1, &o->iters)) goto bad; break;
        case 'w': if (parse_int(optarg, 0, &o->warmup)) goto bad; break;
        case 'R': if (parse_int(optarg, 1, &o->rounds)) goto bad; break;
        case 'd':
            if ((v = lookup(optarg, dt_name, DCOLL_DTYPE_COUNT_)) < 0)
                goto bad;
            o->dtype = (dcoll_dtype_t)v;
            break;
        case 'p':
            if ((v = lookup(optarg, op_name, DCOLL_OP_COUNT_)) < 0) goto bad;
            o->op = (dcoll_op_t)v;
            break;
        case 'r': if (parse_int(optarg, 0, &o->root)) goto bad; break;
        case 'a': o->async = true; break;
        case 'A': o->calibrate = true; break;
        case 'S': o->apart = true; break;
        case 'P': o->plan = true; break;
        case 'M': o->bound = true; break;
        case 'H': o->heap = true; break;
        case 'G': o->spare = true; break;
        case 'c':
            if (parse_int(optarg, 0, &v) || v > 1) goto bad;
            o->check = v;
            break;
        case 't': if (parse_int(optarg, 1, &o->ntensors)) goto bad; break;
        case 'g': if (parse_members(optarg, o, world)) goto bad; break;
        case 'm': mem = optarg; break;
        case 'K': o->said = true; break;
        case 'O': o->ordered = true; break;
        case 'o': o->out = optarg; break;
        case 'h': usage(stderr); return -2;
        default: usage(stderr); return -1;
        }
    }
    if (strcmp(mem, "cuda") == 0) {
#ifdef DCOLL_PERF_CUDA
        o->cuda = true;
#else
        SAY("dcoll-perf: -m cuda: this dcoll-perf was built without the "
            "CUDA toolkit's headers\n");
        return -1;
#endif
    } else if (strcmp(mem, "host") != 0) {
        SAY("dcoll-perf: -m '%s': use host or cuda\n", mem);
        return -1;
    }
    if ((o->said || o->ordered) && !o->cuda) {
        SAY("dcoll-perf: -%c: only with -m cuda\n", o->said ? 'K' : 'O');
        return -1;
    }
    bool root_ok = o->root < world;
    if (o->root >= 0 && o->members) {
        root_ok = false;
        for (int i = 0; i < o->nmembers; i++)
            root_ok |= o->members[i] == o->root;
    }
    if (!root_ok) {
        SAY("dcoll-perf: -r %d: not a rank of the group\n", o->root);
        return -1;
    }
    if (o->minbytes > o->maxbytes ||
        (o->factor == 1.0 && o->minbytes != o->maxbytes)) {
        SAY("dcoll-perf: sizes %zu..%zu with factor %g never end\n",
            o->minbytes, o->maxbytes, o->factor);
        return -1;
    }
    return optind;
bad:
    SAY("dcoll-perf: -%c: bad value '%s'\n", c, optarg);
    usage(stderr);
    return -1;
}

#ifdef DCOLL_PERF_CUDA
/* The raw side on GPU buffers: the collective's own by hand. */
static int cuda_raw(struct perf_ctx *c)
{
    return perf_cuda_raw(c, c->coll);
}
#endif

static void die(const char *what, const char *coll)
{
    fprintf(stderr, "dcoll-perf [rank %d]: %s %s failed: %s\n", world_rank,
            what, coll, dcoll_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double now(void)
{
    return MPI_Wtime();
}

/* One round of iters calls: the slowest rank's mean per call, in us. */
static double round_us(struct perf_ctx *c, const struct perf_coll *k,
                       int (*fn)(struct perf_ctx *), int iters,
                       const char *what)
{
    MPI_Barrier(c->comm);
    double t0 = now();
    for (int i = 0; i < iters; i++)
        if (fn(c))
            die(what, k->name);
    double us = (now() - t0) * 1e6 / iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    return us;
}

/* One round of iters calls of each, interleaved call by call, the side
 * that goes first changing every pair and every round: whatever else the
 * machine does then lands on both sides alike. The slowest rank's mean. */
static void round_pair(struct perf_ctx *c, const struct perf_coll *k,
                       int iters, int round, double *d_us, double *r_us,
                       double *p_us)
{
    double t[3] = {0, 0, 0};
    int (*side[3])(struct perf_ctx *) = {k->raw, c->o->calibrate ? k->raw
                                                                  : k->dcoll,
                                         perf_plan_p};
    /* -P: MPI's persistent request is a third side, where there is one. */
    int nsides = p_us ? 3 : 2;
    if (c->o->apart) {
        /* Where the two run different algorithms, taking turns call by
         * call can charge one side's waiting to the other. */
        for (int j = 0; j < nsides; j++) {
            int s = (j + round) % nsides;
            MPI_Barrier(c->comm);
            if (side[s](c))
                die("warm-up of", k->name);
            double t0 = now();
            for (int i = 0; i < iters; i++)
                if (side[s](c))
                    die(s == 1 ? "dcoll" : "raw MPI", k->name);
            t[s] = now() - t0;
        }
        goto done;
    }
    MPI_Barrier(c->comm);
    /* Untimed: the first calls after a barrier pay for its exit skew. */
    for (int s = 0; s < nsides; s++)
        if (side[s](c))
            die("warm-up of", k->name);
    for (int i = 0; i < iters; i++) {
        for (int j = 0; j < nsides; j++) {
            int s = (i + j + round) % nsides;
            double t0 = now();
            if (side[s](c))
                die(s == 1 ? "dcoll" : "raw MPI", k->name);
            t[s] += now() - t0;
        }
    }
done:
    for (int s = 0; s < 3; s++)
        t[s] = t[s] * 1e6 / iters;
    MPI_Allreduce(MPI_IN_PLACE, t, 3, MPI_DOUBLE, MPI_MAX, c->comm);
    *r_us = t[0];
    *d_us = t[1];
    if (p_us)
        *p_us = t[2];
}

/* -M: iters copies of size bytes by every rank at once, after a
 * barrier: the slowest rank's mean, in us. What a call on one node
 * could reach at best: it reads and writes at least this much. */
static double memcpy_us(struct perf_ctx *c, char *from, char *to,
                        size_t size, int iters)
{
    MPI_Barrier(c->comm);
    double t0 = now();
    for (int i = 0; i < iters; i++) {
        memcpy(to, from, size);
        /* Kept: the copy is the measure, not dead code. */
        __asm__ __volatile__("" : : "r"(to) : "memory");
    }
    double us = (now() - t0) * 1e6 / iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    return us;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int iters_for(const struct perf_opts *o, const struct perf_coll *k,
                     size_t size)
{
    if (o->iters)
        return o->iters;
    size_t n = ((size_t)256 << 20) / (size ? size : 1);
    int most = k->coalesced ? 100 : 1000;
    return n < 10 ? 10 : n > (size_t)most ? most : (int)n;
}

/* Lay out c's buffers for one size; returns the bytes of the largest. */
static size_t setup(struct perf_ctx *c, const struct perf_coll *k,
                    size_t want, char *send, char *recv)
{
    const struct perf_opts *o = c->o;
    size_t per_block = k->blocks ? (size_t)c->size : 1;
    size_t nt = k->coalesced ? (size_t)o->ntensors : 1;
    size_t per = want / (c->esz * per_block * nt); /* per tensor and rank */
    c->count = (int64_t)(per * nt);
    c->send = send;
    c->recv = recv;
    size_t bytes = (size_t)c->count * c->esz;
    c->sendbytes = bytes * (k->blocks && strcmp(k->name, "all_gather") &&
                            strcmp(k->name, "gather") ? per_block : 1);
    c->recvbytes = bytes * (k->blocks && strcmp(k->name, "reduce_scatter") &&
                            strcmp(k->name, "scatter") ? per_block : 1);
    if (k->coalesced) {
        /* Tensors apart from each other, 64 bytes between them. */
        size_t sb = per * c->esz, rb = sb * per_block;
        c->ntensors = o->ntensors;
        for (size_t t = 0; t < nt; t++) {
            c->counts[t] = (int64_t)per;
            c->sendv[t] = send + t * (sb + 64);
            c->recvv[t] = recv + t * (rb + 64);
        }
        c->sendbytes = bytes;
        c->recvbytes = bytes * per_block;
    }
    /* The raw call: same bytes; 16-bit floats reduce as float32. */
    bool half = o->dtype == DCOLL_FLOAT16 || o->dtype == DCOLL_BFLOAT16;
    static const MPI_Datatype types[DCOLL_DTYPE_COUNT_] = {
        MPI_INT8_T, MPI_UINT8_T, MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T,
        MPI_UINT64_T, MPI_UINT16_T, MPI_UINT16_T, MPI_FLOAT, MPI_DOUBLE,
        MPI_C_BOOL, MPI_LOGICAL, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
        MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_2INT, MPI_2REAL,
        MPI_2DOUBLE_PRECISION,
    };
    static const MPI_Op ops[DCOLL_OP_COUNT_] = {
        MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_SUM, MPI_BAND, MPI_BOR,
        MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MINLOC, MPI_MAXLOC,
    };
    c->raw_type = types[o->dtype];
    c->raw_op = ops[o->op];
    c->raw_count = (int)c->count;
    if (half && k->reduces) {
        c->raw_type = MPI_FLOAT;
        c->raw_count = (int)(c->count / 2);
    }
    return (k->blocks || k->coalesced) ? bytes * per_block : bytes;
}

#ifdef DCOLL_PERF_CUDA
/* -O: a stream-ordered call returns once enqueued; the raw side waits
 * for its stream, so dcoll's does too. */
static int ordered_d(struct perf_ctx *c)
{
    return c->unordered(c) || perf_cuda_sync();
}
#endif

static void run_size(struct perf_ctx *c, const struct perf_coll *k,
                     size_t want, char *send, char *recv,
                     struct perf_row *row)
{
    const struct perf_opts *o = c->o;
    size_t size = setup(c, k, want, send, recv);
    int iters = iters_for(o, k, size);
    double t_d[64], t_r[64], t_s[64], q[64], add[64], t_p[64], qp[64],
        qb[64], t_m[64];
    char *mfrom = NULL, *mto = NULL;
    if (o->bound && size) {
        mfrom = malloc(size);
        mto = malloc(size);
        if (!mfrom || !mto)
            die("memory for -M's copies of", k->name);
        memset(mfrom, 1, size);
        memset(mto, 2, size);
    }
    /* -P: dcoll's side is the plan's start. */
    struct perf_coll kp;
    bool pers = false;
    if (o->plan) {
        int rc = perf_plan_make(c, k);
        if (rc)
            die(rc < 0 ? "(no plan form) -P with" : "making the plans of",
                k->name);
        kp = *k;
        kp.dcoll = perf_plan_d;
        k = &kp;
        pers = perf_plan_raw();
    }
#ifdef DCOLL_PERF_CUDA
    struct perf_coll ko;
    if (o->ordered) {
        ko = *k;
        c->unordered = k->dcoll;
        ko.dcoll = ordered_d;
        k = &ko;
    }
#endif

    row->wrong = o->check ? perf_check(c, k) : -1;
    if (row->wrong == -2)
        die("check of", k->name);
    /* A plan's first 32 blocking starts are its trial of MPI's two calls
     * (docs/performance.md): once, not a start's cost, so not timed. */
    int warm = o->plan && o->warmup < 32 ? 32 : o->warmup;
    for (int i = 0; i < warm; i++)
        if (k->raw(c) || k->dcoll(c))
            die("warm-up of", k->name);
    for (int r = 0; r < o->rounds; r++) {
        round_pair(c, k, iters, r, &t_d[r], &t_r[r], pers ? &t_p[r] : NULL);
        q[r] = t_r[r] / t_d[r];
        qp[r] = pers ? t_p[r] / t_d[r] : 0;
        qb[r] = (pers && t_p[r] < t_r[r] ? t_p[r] : t_r[r]) / t_d[r];
        add[r] = t_d[r] - t_r[r];
        t_s[r] = k->separate ? round_us(c, k, k->separate, iters,
                                        "separate calls of") : 0;
        t_m[r] = mfrom ? memcpy_us(c, mfrom, mto, size, iters) : 0;
    }
    free(mfrom);
    free(mto);
    row->mcpy_gbs = 0;
    if (o->bound && size) {
        double m = median(t_m, o->rounds);
        row->mcpy_gbs = m > 0 ? size / m / 1e3 : 0;
    }
    double f = k->busfactor(c->size);
    row->coll = k->name;
    row->size = size;
    row->count = k->blocks ? c->count * c->size : c->count;
    row->type = perf_dtype_name(o->dtype);
    row->op = k->reduces ? perf_op_name(o->op) : "none";
    row->root = k->rooted ? c->root : -1;
    row->us = median(t_d, o->rounds);
    row->raw_us = median(t_r, o->rounds);
    row->sep_us = k->separate ? median(t_s, o->rounds) : 0;
    row->algbw = size / row->us / 1e3;
    row->busbw = row->algbw * f;
    row->raw_algbw = size / row->raw_us / 1e3;
    row->raw_busbw = row->raw_algbw * f;
    /* The two sides of one round ran under the same conditions: the
     * median of the rounds' ratios is steadier than a ratio of medians. */
    row->ratio = median(q, o->rounds);
    row->added_us = median(add, o->rounds);
    row->pers_us = pers ? median(t_p, o->rounds) : 0;
    row->pers_ratio = pers ? median(qp, o->rounds) : 0;
    row->best_ratio = median(qb, o->rounds);
    if (o->plan)
        perf_plan_free();
    row->ntensors = k->coalesced ? c->ntensors : 0;
}

int main(int argc, char **argv)
{
    struct perf_opts o = {
        .minbytes = 8, .maxbytes = 64 << 20, .factor = 2, .warmup = 5,
        .rounds = 5, .dtype = DCOLL_FLOAT32, .op = DCOLL_SUM, .root = -1,
        .check = true, .ntensors = 1000,
    };
    int world, provided;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("dcoll-perf (dcoll) %d.%d.%d\n", DCOLL_API_VERSION_MAJOR,
                   DCOLL_API_VERSION_MINOR, DCOLL_API_VERSION_PATCH);
            return 0;
        }
    }
    /* What dcoll_init asks for when it starts MPI: the watchdog needs it
     * to ask other ranks where they are. Both sides run under it. */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    int first = parse(argc, argv, &o, world);
    if (first < 0) {
        MPI_Finalize();
        return first == -2 ? 0 : 2;
    }
    if (o.rounds > 64)
        o.rounds = 64;
    const struct perf_coll *todo[64];
    int ntodo = 0;
    if (first == argc)
        todo[ntodo++] = &perf_colls[0];
    for (int i = first; i < argc && ntodo + perf_ncolls <= 64; i++) {
        int found = 0;
        for (int j = 0; j < perf_ncolls; j++)
            if (!strcmp(argv[i], "all") || !strcmp(argv[i], perf_colls[j].name)) {
                todo[ntodo++] = &perf_colls[j];
                found = 1;
            }
        if (!found) {
            SAY("dcoll-perf: unknown collective '%s'\n", argv[i]);
            usage(stderr);
            MPI_Finalize();
            return 2;
        }
    }

    if (dcoll_init_comm(MPI_COMM_WORLD))
        die("dcoll_init", "");
    if (world_rank == 0) {
        const char *t = getenv("DCOLL_TIMEOUT"), *m = getenv("DCOLL_ON_TIMEOUT");
        printf("# settings: DCOLL_TIMEOUT=%s, DCOLL_ON_TIMEOUT=%s, MPI thread "
               "level %s\n", t && *t ? t : "(unset: 1800 s)",
               m && *m ? m : "(unset: abort)",
               provided == MPI_THREAD_MULTIPLE ? "multiple" : "below multiple");
    }
    struct perf_ctx c = {.o = &o, .group = NULL};
    char gname[64] = "the world";
    if (o.members) {
        if (dcoll_new_group(&c.group, o.members, o.nmembers, NULL))
            die("dcoll_new_group", "(-g)");
        snprintf(gname, sizeof(gname), "a %d-rank sub-group", o.nmembers);
    }
    dcoll_group_rank(c.group, &c.rank);
    dcoll_group_size(c.group, &c.size);
    struct perf_row *rows = NULL;
    int nrows = 0;
#ifdef DCOLL_PERF_CUDA
    dcoll_coll_opts_t gpu_opts = DCOLL_COLL_OPTS_INIT;
#endif

    if (c.rank != DCOLL_NON_MEMBER) {
        if (dcoll_group_mpi_comm(c.group, &c.comm))
            die("dcoll_group_comm", "");
        dcoll_dtype_size(o.dtype, &c.esz);
        c.root = o.root;
        if (c.root < 0)
            dcoll_group_global_rank(c.group, 0, &c.root);
        if (dcoll_group_group_rank(c.group, c.root, &c.groot))
            die("dcoll_group_group_rank", "(-r)");
        size_t gap = (size_t)o.ntensors * 64 * (size_t)c.size;
        char *send = NULL, *recv = NULL;
        if (o.heap) {
            if (o.cuda)
                die("-H", "(host buffers only, not with -m cuda)");
            if (dcoll_mem_alloc(c.group, o.maxbytes + gap, (void **)&send) ||
                dcoll_mem_alloc(c.group, o.maxbytes + gap, (void **)&recv))
                die("dcoll_mem_alloc", "(-H)");
            if (c.rank == 0)
                printf("# buffers from dcoll_mem_alloc (-H), for both "
                       "sides\n");
        } else {
            send = malloc(o.maxbytes + gap);
            recv = malloc(o.maxbytes + gap);
        }
        void *spare = NULL;
        if (o.spare) {
            if (dcoll_mem_alloc(c.group, 4096, &spare))
                die("dcoll_mem_alloc", "(-G)");
            if (c.rank == 0)
                printf("# malloc'd buffers on a group with a heap from "
                       "dcoll_mem_alloc (-G)\n");
        }
#ifdef DCOLL_PERF_CUDA
        char *pin_send = NULL, *pin_recv = NULL;
        if (o.cuda) {
            const char *path;
            if (perf_cuda_open(&c, &path))
                MPI_Abort(MPI_COMM_WORLD, 2);
            c.cuda = true;
            gpu_opts.mask = DCOLL_COLL_OPT_STREAM;
            gpu_opts.stream = c.stream;
            if (o.said) {   /* -K: no pointer query after the first */
                gpu_opts.mask |= DCOLL_COLL_OPT_MEMORY;
                gpu_opts.memory = DCOLL_MEMORY_CUDA;
            }
            if (o.ordered)   /* -O: the call returns once enqueued */
                gpu_opts.mask |= DCOLL_COLL_OPT_STREAM_ORDERED;
            c.opts = &gpu_opts;
            /* send and recv become the host images; the GPU's own. */
            c.hsend = send;
            c.hrecv = recv;
            send = perf_cuda_alloc(o.maxbytes + gap, false);
            recv = perf_cuda_alloc(o.maxbytes + gap, false);
            pin_send = perf_cuda_alloc(o.maxbytes + gap, true);
            pin_recv = perf_cuda_alloc(o.maxbytes + gap, true);
            if (!send || !recv || !pin_send || !pin_recv) {
                fprintf(stderr, "dcoll-perf: -m cuda: no memory for "
                        "%zu-byte GPU and pinned buffers\n", o.maxbytes);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            perf_cuda_mirrors(pin_send, pin_recv);
            if (c.rank == 0)
                printf("# GPU buffers (-m cuda), on dcoll's GPU, one "
                       "non-blocking stream for both sides; %s\n", path);
        }
#endif
        c.pack = malloc(2 * o.maxbytes + 64);
        c.sendv = malloc(sizeof(void *) * (size_t)o.ntensors);
        c.recvv = malloc(sizeof(void *) * (size_t)o.ntensors);
        c.counts = malloc(sizeof(int64_t) * (size_t)o.ntensors);
        if (!send || !recv || !c.pack || !c.sendv || !c.recvv || !c.counts) {
            fprintf(stderr, "dcoll-perf: no memory for %zu-byte buffers\n",
                    o.maxbytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (!c.cuda) {
            memset(send, 0, o.maxbytes + gap);   /* touch every page now */
            memset(recv, 0, o.maxbytes + gap);
        } else {
            memset(c.hsend, 0, o.maxbytes + gap);
            memset(c.hrecv, 0, o.maxbytes + gap);
        }
        memset(c.pack, 0, 2 * o.maxbytes + 64);

        int nsizes = 1;
        for (double s = (double)o.minbytes; o.factor > 1 && s * o.factor <=
                                                           (double)o.maxbytes;
             s *= o.factor)
            nsizes++;
        rows = calloc((size_t)(nsizes * ntodo), sizeof(*rows));
        for (int t = 0; t < ntodo; t++) {
            const struct perf_coll *k = todo[t];
#ifdef DCOLL_PERF_CUDA
            struct perf_coll gpu_k;
            if (c.cuda) {
                if (!perf_cuda_takes(&c, k)) {
                    if (c.rank == 0)
                        printf("# %s: not measured on GPU buffers here\n",
                               k->name);
                    continue;
                }
                gpu_k = *k;
                gpu_k.raw = cuda_raw;
                c.coll = k;
                k = &gpu_k;
            }
#endif
            if (o.plan && !perf_plan_has(k)) {
                if (c.rank == 0)
                    printf("# %s: no plan form (-P)\n", k->name);
                continue;
            }
            if (c.rank == 0)
                perf_header(&o, k, c.size, gname);
            double s = (double)o.minbytes;
            /* A barrier moves no data: one row, size 0. */
            bool barrier = strcmp(k->name, "barrier") == 0;
            for (int i = 0; i < (barrier ? 1 : nsizes); i++, s *= o.factor) {
                run_size(&c, k, barrier ? 0 : (size_t)s, send, recv,
                         &rows[nrows]);
                if (c.rank == 0)
                    perf_print(&rows[nrows], k->coalesced, o.plan);
                fflush(stdout);
                nrows++;
            }
        }
#ifdef DCOLL_PERF_CUDA
        if (c.cuda) {
            perf_cuda_free(send, false);
            perf_cuda_free(recv, false);
            perf_cuda_free(pin_send, true);
            perf_cuda_free(pin_recv, true);
            perf_cuda_close();
            send = c.hsend;
            recv = c.hrecv;
        }
#endif
        if (spare)
            dcoll_mem_free(c.group, spare);
        if (o.heap) {
            dcoll_mem_free(c.group, send);
            dcoll_mem_free(c.group, recv);
        } else {
            free(send);
            free(recv);
        }
        free(c.pack);
        free(c.sendv);
        free(c.recvv);
        free(c.counts);
    }
    long wrong = 0;
    for (int i = 0; i < nrows; i++)
        wrong += rows[i].wrong > 0 ? rows[i].wrong : 0;
    int rc = wrong ? 1 : 0;
    if (c.rank == 0) {
        printf("# total #wrong: %ld\n", wrong);
        if (o.out && perf_write(o.out, rows, nrows, c.size))
            rc = 2;
    }
    MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(rows);
    free(o.members);
    dcoll_group_destroy(&c.group);
    dcoll_finalize();
    MPI_Finalize();
    return rc;
}
