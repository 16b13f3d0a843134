/* The shared segment's way (mpi_layer/shm.c): all_reduce, reduce,
 * broadcast, all_gather, reduce_scatter and barrier on every numeric
 * type and op, odd counts and counts past a chunk, in place, roots off
 * 0, against the values MPI's rules give (inputs whose reductions are
 * exact); inputs that round give the same bits on every rank and on a
 * second call; with DCOLL_SHM=trial the trial settles alike on every
 * rank. Run under mpirun
 * with --sizes (test/sizes.h) and DCOLL_SHM=always (with a small
 * DCOLL_SHM_SEGMENT, every call goes in many chunks), auto (the rules)
 * or trial.
 *
 * Other modes, the world alone:
 *   settings  bad DCOLL_SHM and DCOLL_SHM_SEGMENT values, and ranks that
 *             disagree, refused by dcoll_init on every rank
 *   absent    the last rank skips a call in return mode: the others'
 *             waits on the segment end at the deadline with a timeout
 *   differ    the last rank's call differs (count, type, kind, op):
 *             every rank fails at once, naming what differs, and the
 *             group with it; the world goes on
 *   heap      dcoll_mem_alloc's memory in every way a call takes it,
 *             inputs read in place that change between calls, a plan
 *             on it, its refusals on one rank alone; nothing left mapped
 *   groups    10,000 groups made, used and destroyed: no segment left
 *             mapped or named in /dev/shm
 *   nodes     a job over two hosts (test/nodes): the node-aware way's
 *             all_reduce, broadcast and barrier, on the world and on a
 *             group of 3; dcoll_mem_alloc's memory there */
#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <unistd.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;
static int mpi_allreduces;

int MPI_Allreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o,
                  MPI_Comm m)
{
    mpi_allreduces++;
    return PMPI_Allreduce(s, r, c, t, o, m);
}

static int mpi_iallreduces;
int MPI_Iallreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o,
                   MPI_Comm m, MPI_Request *rq)
{
    mpi_iallreduces++;
    return PMPI_Iallreduce(s, r, c, t, o, m, rq);
}

/* Rank r's element i: small values whose every reduction is exact in
 * every numeric type (products of at most four 1s and 2s). */
static double val(dcoll_op_t op, int r, int64_t i)
{
    if (op == DCOLL_PRODUCT)
        return 1 + (double)((r + i) % 2);
    return (double)((r * 3 + i) % 4);
}

static double want(dcoll_dtype_t dt, dcoll_op_t op, int64_t i)
{
    double acc = val(op, t_w.r[0], i);
    for (int k = 1; k < t_w.n; k++)
        acc = t_combine(op, acc, val(op, t_w.r[k], i));
    return t_average(op, acc, t_w.n, t_is_float(dt));
}

static void fill(void *b, dcoll_dtype_t dt, dcoll_op_t op, int r,
                 int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        t_set(b, dt, (size_t)i, val(op, r, i));
}

/* The first element of got[0..n) that is not w(i), or -1. */
static int64_t wrong(const void *got, dcoll_dtype_t dt, int64_t n,
                     double (*w)(dcoll_dtype_t, dcoll_op_t, int64_t),
                     dcoll_op_t op)
{
    /* The value wanted as the type holds it (AVG's quotient rounds). */
    char as[16];
    for (int64_t i = 0; i < n; i++) {
        t_set(as, dt, 0, w(dt, op, i));
        if (t_get(got, dt, (size_t)i) != t_get(as, dt, 0))
            return i;
    }
    return -1;
}

static int64_t block_of;   /* all_gather: the rank whose block is read */
static double gathered(dcoll_dtype_t dt, dcoll_op_t op, int64_t i)
{
    (void)dt;
    return val(op, t_w.r[block_of], i);
}

static void reductions(dcoll_dtype_t dt, dcoll_op_t op, int64_t n)
{
    int k = t_w.n, me = t_w.me;
    size_t esz = t_size(dt);
    const char *tn = t_dtype_names[dt], *on = t_op_names[op];
    char *in = calloc((size_t)(n * k), esz), *out = calloc((size_t)(n * k),
                                                           esz);
    int64_t at;
    for (int ip = 0; ip < 2; ip++) {
        /* all_reduce */
        fill(in, dt, op, t_rank, n);
        if (ip)
            memcpy(out, in, (size_t)n * esz);
        CHECK_OK(dcoll_all_reduce(T_WORLD, ip ? out : in, out, n, dt, op,
                                  NULL, NULL));
        at = wrong(out, dt, n, want, op);
        CHECK(at < 0, "all_reduce %s %s count %lld%s: [%lld] = %g, want %g",
              tn, on, (long long)n, ip ? " in place" : "", (long long)at,
              at < 0 ? 0 : t_get(out, dt, (size_t)at),
              at < 0 ? 0 : want(dt, op, at));
        /* reduce to the last rank */
        int root = t_w.r[k - 1];
        fill(in, dt, op, t_rank, n);
        memset(out, 0x5a, (size_t)n * esz);
        if (ip && me == k - 1)
            memcpy(out, in, (size_t)n * esz);
        CHECK_OK(dcoll_reduce(T_WORLD, ip && me == k - 1 ? out : in, out,
                              n, dt, op, root, NULL, NULL));
        if (me == k - 1) {
            at = wrong(out, dt, n, want, op);
            CHECK(at < 0, "reduce %s %s count %lld root %d%s: [%lld]", tn,
                  on, (long long)n, root, ip ? " in place" : "",
                  (long long)at);
        }
        /* reduce_scatter: block j of every rank's input reduced on rank
         * j; in place, the input is in recvbuf's place at the front. */
        for (int j = 0; j < k; j++)
            for (int64_t i = 0; i < n; i++)
                t_set(in, dt, (size_t)(j * n + i),
                      val(op, t_rank, i));
        char *res = ip ? in : out;
        CHECK_OK(dcoll_reduce_scatter(T_WORLD, in, res, n, dt, op, NULL,
                                      NULL));
        at = wrong(res, dt, n, want, op);
        CHECK(at < 0, "reduce_scatter %s %s count %lld%s: [%lld]", tn, on,
              (long long)n, ip ? " in place" : "", (long long)at);
    }
    free(in);
    free(out);
}

static void moves(dcoll_dtype_t dt, int64_t n)
{
    int k = t_w.n, me = t_w.me;
    size_t esz = t_size(dt);
    const char *tn = t_dtype_names[dt];
    char *in = calloc((size_t)(n * k), esz), *out = calloc((size_t)(n * k),
                                                           esz);
    for (int ri = 0; ri < 2; ri++) {
        int root = ri ? k - 1 : 0;
        block_of = root;
        if (me == root)
            fill(out, dt, DCOLL_SUM, t_rank, n);
        else
            memset(out, 0x77, (size_t)n * esz);
        CHECK_OK(dcoll_broadcast(T_WORLD, out, n, dt, t_w.r[root], NULL,
                                 NULL));
        int64_t at = wrong(out, dt, n, gathered, DCOLL_SUM);
        CHECK(at < 0, "broadcast %s count %lld root %d: [%lld]", tn,
              (long long)n, t_w.r[root], (long long)at);
    }
    for (int ip = 0; ip < 2; ip++) {
        memset(out, 0x33, (size_t)(n * k) * esz);
        fill(ip ? out + (size_t)(me * n) * esz : in, dt, DCOLL_SUM, t_rank,
             n);
        CHECK_OK(dcoll_all_gather(T_WORLD,
                                  ip ? out + (size_t)(me * n) * esz : in,
                                  out, n, dt, NULL, NULL));
        for (int r = 0; r < k; r++) {
            block_of = r;
            int64_t at = wrong(out + (size_t)(r * n) * esz, dt, n,
                               gathered, DCOLL_SUM);
            CHECK(at < 0, "all_gather %s count %lld%s: block %d [%lld]", tn,
                  (long long)n, ip ? " in place" : "", r, (long long)at);
        }
    }
    free(in);
    free(out);
}

/* Inputs that round: the same bits on every rank, and again. */
static void rounding(int64_t n)
{
    float *in = malloc(sizeof(float) * (size_t)n);
    float *a = malloc(sizeof(float) * (size_t)n);
    float *b = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        in[i] = 1.0f / (float)(t_rank + 3 + (int)(i % 7));
    CHECK_OK(dcoll_all_reduce(T_WORLD, in, a, n, DCOLL_FLOAT32, DCOLL_SUM,
                              NULL, NULL));
    CHECK_OK(dcoll_all_reduce(T_WORLD, in, b, n, DCOLL_FLOAT32, DCOLL_SUM,
                              NULL, NULL));
    /* A trial takes both ways on its first calls (docs/performance.md):
     * the same bits on every rank, not on every call. */
    const char *mode = getenv("DCOLL_SHM");
    CHECK((mode && !strcmp(mode, "trial")) ||
              !memcmp(a, b, sizeof(float) * (size_t)n), "count %lld: a "
          "second all_reduce of the same inputs gave other bits",
          (long long)n);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(float) * (size_t)n; i++)
        h = (h ^ ((unsigned char *)a)[i]) * 1099511628211ull;
    uint64_t lo = h, hi = h;
    PMPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, T_COMM);
    PMPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, T_COMM);
    CHECK(lo == hi, "count %lld: the ranks' all_reduce results differ in "
          "their bits", (long long)n);
    free(in);
    free(a);
    free(b);
}

/* DCOLL_SHM=trial: after a kind and size's trial (12 calls), every
 * later call takes one way, the same on every rank. */
static void settled(void)
{
    float x[64] = {0};
    for (int i = 0; i < 12; i++)
        CHECK_OK(dcoll_all_reduce(T_WORLD, x, x, 64, DCOLL_FLOAT32,
                                  DCOLL_SUM, NULL, NULL));
    int before = mpi_allreduces;
    for (int i = 0; i < 10; i++)
        CHECK_OK(dcoll_all_reduce(T_WORLD, x, x, 64, DCOLL_FLOAT32,
                                  DCOLL_SUM, NULL, NULL));
    int got = mpi_allreduces - before, lo = got, hi = got;
    CHECK(got == 0 || got == 10, "after the trial %d of 10 calls were "
          "MPI's", got);
    PMPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, T_COMM);
    PMPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, T_COMM);
    CHECK(lo == hi, "the ranks settled on different ways (%d and %d MPI "
          "calls of 10)", lo, hi);
}

/* Kinds one after another in an order every rank draws alike, at sizes
 * from one element to several chunks: each kind's steps leave the
 * halves as the next kind expects them. */
static void mixed(void)
{
    int k = t_w.n;
    unsigned x = 12345;
    enum { MOST = 40000 };
    int32_t *in = malloc(sizeof(int32_t) * MOST * (size_t)k);
    int32_t *out = malloc(sizeof(int32_t) * MOST * (size_t)k);
    for (int it = 0; it < 300 && !t_failures; it++) {
        x = x * 1103515245u + 12345u;
        int kind = (int)((x >> 8) % 6);
        int64_t n = 1 + (int64_t)((x >> 12) % (it % 3 ? 700 : MOST));
        int root = (int)((x >> 4) % (unsigned)k);
        for (int64_t i = 0; i < n * k; i++)
            in[i] = (int32_t)val(DCOLL_SUM, t_rank, i);
        int64_t bad = -1;
        switch (kind) {
        case 0:
            CHECK_OK(dcoll_all_reduce(T_WORLD, in, out, n, DCOLL_INT32,
                                      DCOLL_SUM, NULL, NULL));
            bad = wrong(out, DCOLL_INT32, n, want, DCOLL_SUM);
            break;
        case 1:
            CHECK_OK(dcoll_reduce(T_WORLD, in, out, n, DCOLL_INT32,
                                  DCOLL_SUM, t_w.r[root], NULL, NULL));
            if (t_w.me == root)
                bad = wrong(out, DCOLL_INT32, n, want, DCOLL_SUM);
            break;
        case 2:
            if (t_w.me == root)
                memcpy(out, in, sizeof(int32_t) * (size_t)n);
            CHECK_OK(dcoll_broadcast(T_WORLD, out, n, DCOLL_INT32,
                                     t_w.r[root], NULL, NULL));
            for (int64_t i = 0; i < n && bad < 0; i++)
                if (out[i] != val(DCOLL_SUM, t_w.r[root], i))
                    bad = i;
            break;
        case 3:
            CHECK_OK(dcoll_all_gather(T_WORLD, in, out, n, DCOLL_INT32,
                                      NULL, NULL));
            for (int64_t i = 0; i < n * k && bad < 0; i++)
                if (out[i] != val(DCOLL_SUM, t_w.r[i / n], i % n))
                    bad = i;
            break;
        case 4:
            for (int64_t i = 0; i < n * k; i++)
                in[i] = (int32_t)val(DCOLL_SUM, t_rank, i % n);
            CHECK_OK(dcoll_reduce_scatter(T_WORLD, in, out, n, DCOLL_INT32,
                                          DCOLL_SUM, NULL, NULL));
            bad = wrong(out, DCOLL_INT32, n, want, DCOLL_SUM);
            break;
        default:
            CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
        }
        CHECK(bad < 0, "call %d (kind %d, count %lld, root %d): element "
              "%lld is wrong", it, kind, (long long)n, root, (long long)bad);
    }
    free(in);
    free(out);
}

static void body(void)
{
    static const int64_t counts[] = {1, 7, 1029, 5003};
    const char *mode = getenv("DCOLL_SHM");
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int d = 0; d < T_NUMERIC; d++) {
            for (int op = 0; op < DCOLL_MINLOC; op++)
                if (t_op_ok((dcoll_dtype_t)d, (dcoll_op_t)op))
                    reductions((dcoll_dtype_t)d, (dcoll_op_t)op, counts[c]);
            moves((dcoll_dtype_t)d, counts[c]);
        }
        rounding(counts[c]);
        CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
    }
    rounding(300001);
    mixed();
    if (mode && !strcmp(mode, "trial"))
        settled();
    if ((!mode || !strcmp(mode, "auto")) && t_w.n > 1) {
        /* The rules: an all_reduce of a group on one node is the
         * segment's, at every size. */
        int before = mpi_allreduces;
        float x[8] = {0};
        CHECK_OK(dcoll_all_reduce(T_WORLD, x, x, 8, DCOLL_FLOAT32,
                                  DCOLL_SUM, NULL, NULL));
        CHECK(mpi_allreduces == before, "DCOLL_SHM=auto: MPI_Allreduce "
              "was called for 32 bytes");
    }
    if (mode && !strcmp(mode, "always") && t_w.n > 1) {
        /* Forced: no all_reduce reaches MPI. */
        int before = mpi_allreduces;
        float x[8] = {0};
        CHECK_OK(dcoll_all_reduce(T_WORLD, x, x, 8, DCOLL_FLOAT32,
                                  DCOLL_SUM, NULL, NULL));
        CHECK(mpi_allreduces == before, "DCOLL_SHM=always: MPI_Allreduce "
              "was called");
    }
}

/* ---- across nodes ---- */

/* The world of a job over several hosts (test/nodes: network
 * namespaces), and a group of 3 that leaves one host a rank alone:
 * each node reduces and broadcasts through its segment, and its first
 * rank alone calls MPI (one MPI_Iallreduce an all_reduce). */
static void across(dcoll_group_t *g, int k, const int *members,
                   bool polled)
{
    int me = -1;
    for (int i = 0; i < k; i++)
        if (members[i] == t_rank)
            me = i;
    /* This rank leads its node where no member before it shares its
     * host (every job rank's host, from MPI: collective over the job). */
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    int jn = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &jn);
    char (*names)[64] = calloc((size_t)jn, 64);
    PMPI_Allgather(host, 64, MPI_CHAR, names, 64, MPI_CHAR, MPI_COMM_WORLD);
    bool lead = true;
    for (int i = 0; i < me && lead; i++)
        lead = strcmp(names[members[i]], host) != 0;
    free(names);
    if (me < 0)
        return;
    t_w.n = k;
    t_w.me = me;
    for (int i = 0; i < k; i++)
        t_w.r[i] = members[i];
    t_w.g = g;
    static const int64_t counts[] = {1, 7, 5003, 300001};
    static const dcoll_dtype_t types[] = {DCOLL_INT32, DCOLL_FLOAT64,
                                          DCOLL_BFLOAT16, DCOLL_UINT8};
    for (size_t ci = 0; ci < 4; ci++)
        for (size_t ti = 0; ti < 4; ti++)
            for (int op = 0; op <= DCOLL_AVG; op++) {
                dcoll_dtype_t dt = types[ti];
                if (!t_op_ok(dt, (dcoll_op_t)op) ||
                    (dt == DCOLL_UINT8 && op == DCOLL_PRODUCT))
                    continue;
                int64_t n = counts[ci];
                char *in = calloc((size_t)n, t_size(dt));
                char *out = calloc((size_t)n, t_size(dt));
                fill(in, dt, (dcoll_op_t)op, t_rank, n);
                int a = mpi_allreduces, ia = mpi_iallreduces;
                CHECK_OK(dcoll_all_reduce(g, in, out, n, dt, (dcoll_op_t)op,
                                          NULL, NULL));
                int64_t at = wrong(out, dt, n, want, (dcoll_op_t)op);
                CHECK(at < 0, "across nodes: all_reduce %s %s count %lld: "
                      "[%lld]", t_dtype_names[dt], t_op_names[op],
                      (long long)n, (long long)at);
                /* Abort mode: the leaders' blocking call; return mode:
                 * the nonblocking one, polled. */
                int blocking = polled ? 0 : 1;
                CHECK(mpi_allreduces - a == (lead ? blocking : 0) &&
                          mpi_iallreduces - ia == (lead ? 1 - blocking : 0),
                      "across nodes: %s rank made %d MPI_Allreduce and %d "
                      "MPI_Iallreduce", lead ? "a node's first" : "another",
                      mpi_allreduces - a, mpi_iallreduces - ia);
                /* In place. */
                CHECK_OK(dcoll_all_reduce(g, in, in, n, dt, (dcoll_op_t)op,
                                          NULL, NULL));
                at = wrong(in, dt, n, want, (dcoll_op_t)op);
                CHECK(at < 0, "across nodes: all_reduce in place %s %s "
                      "count %lld: [%lld]", t_dtype_names[dt],
                      t_op_names[op], (long long)n, (long long)at);
                free(in);
                free(out);
            }
    for (int root = 0; root < k; root++)
        for (size_t ci = 0; ci < 4; ci++) {
            int64_t n = counts[ci];
            int32_t *b = calloc((size_t)n, sizeof(int32_t));
            block_of = root;
            if (me == root)
                fill(b, DCOLL_INT32, DCOLL_SUM, t_rank, n);
            CHECK_OK(dcoll_broadcast(g, b, n, DCOLL_INT32, members[root],
                                     NULL, NULL));
            int64_t at = wrong(b, DCOLL_INT32, n, gathered, DCOLL_SUM);
            CHECK(at < 0, "across nodes: broadcast count %lld root %d: "
                  "[%lld]", (long long)n, members[root], (long long)at);
            free(b);
        }
    for (int i = 0; i < 10; i++)
        CHECK_OK(dcoll_barrier(g, NULL, NULL));
    rounding(300001);
}

static void heap_calls(dcoll_group_t *g, int me, int k, const int *ranks,
                       int64_t n);

static int nodes(void)
{
    CHECK_OK(dcoll_init(NULL));
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int all[T_MAXW];
    for (int i = 0; i < n; i++)
        all[i] = i;
    t_wcomm = MPI_COMM_WORLD;
    across(NULL, n, all, false);
    /* Return mode: the leaders' call polled against the deadline. */
    dcoll_group_t *r = NULL;
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT | DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.timeout = 60;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    CHECK_OK(dcoll_new_group(&r, NULL, 0, &gp));
    across(r, n, all, true);
    CHECK_OK(dcoll_group_destroy(&r));
    /* dcoll_mem_alloc across nodes: memory of each process's own, which
     * every call takes. */
    r = NULL;
    CHECK_OK(dcoll_new_group(&r, NULL, 0, NULL));
    heap_calls(r, t_rank, n, all, 5003);
    CHECK_OK(dcoll_group_destroy(&r));
    /* Ranks 0, 1 and the last: one host two, another one. */
    int three[3] = {0, 1, n - 1};
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, three, 3, NULL));
    MPI_Comm sub;
    PMPI_Comm_split(MPI_COMM_WORLD, t_rank < 2 || t_rank == n - 1 ? 0
                    : MPI_UNDEFINED, t_rank, &sub);
    t_wcomm = sub;
    across(g, 3, three, false);
    if (sub != MPI_COMM_NULL)
        PMPI_Comm_free(&sub);
    if (g)
        CHECK_OK(dcoll_group_destroy(&g));
    CHECK_OK(dcoll_finalize());
    return t_finish("shm nodes");
}

/* ---- settings ---- */

static void refused(const char *var, const char *value, const char *says,
                    bool all)
{
    if (all || t_rank == 0)
        setenv(var, value, 1);
    dcoll_status_t st = dcoll_init(NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "%s=%s%s: init gave %s", var,
          value, all ? "" : " on rank 0", dcoll_status_string(st));
    if (st == DCOLL_SUCCESS)
        dcoll_finalize();
    const char *msg = dcoll_last_error();
    bool mine = all || t_rank == 0;
    CHECK(strstr(msg, mine ? says : "DCOLL_SHM"), "%s=%s: message '%s' "
          "lacks '%s'", var, value, msg, mine ? says : "DCOLL_SHM");
    unsetenv(var);
}

static int settings(void)
{
    refused("DCOLL_SHM", "sometimes", "DCOLL_SHM='sometimes' is not auto, "
            "never, always or trial", true);
    refused("DCOLL_SHM_SEGMENT", "1K", "DCOLL_SHM_SEGMENT='1K' is not a "
            "size from 8K to 1G", true);
    refused("DCOLL_SHM_SEGMENT", "lots", "DCOLL_SHM_SEGMENT='lots'", true);
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n > 1) {
        refused("DCOLL_SHM", "never", "the ranks disagree on DCOLL_SHM",
                false);
        refused("DCOLL_SHM", "bad", "DCOLL_SHM='bad'", false);
    }
    /* Good values are taken, and the status names the rule. */
    setenv("DCOLL_SHM", "never", 1);
    setenv("DCOLL_SHM_SEGMENT", "64K", 1);
    CHECK_OK(dcoll_init(NULL));
    const char *text = NULL;
    int avail = 0;
    CHECK_OK(dcoll_backend_status("mpi", &avail, &text));
    CHECK(text && strstr(text, "no shared segment (DCOLL_SHM=never)"),
          "status: %s", text ? text : "(none)");
    CHECK_OK(dcoll_finalize());
    return t_finish("shm settings");
}

/* ---- a rank that never comes ---- */

static int absent(void)
{
    setenv("DCOLL_SHM", "always", 1);
    CHECK_OK(dcoll_init(NULL));
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    dcoll_group_t *g = t_returning_group(2.0);
    float x[1000] = {0};
    CHECK_OK(dcoll_all_reduce(g, x, x, 1000, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL));
    if (t_rank == n - 1) {
        /* Gone past the others' deadline, then out without the group. */
        sleep(4);
    } else {
        double t0 = t_now();
        dcoll_status_t st = dcoll_all_reduce(g, x, x, 1000, DCOLL_FLOAT32,
                                             DCOLL_SUM, NULL, NULL);
        double took = t_now() - t0;
        CHECK(st == DCOLL_ERR_TIMEOUT, "a missing rank gave %s (%s)",
              dcoll_status_string(st), dcoll_last_error());
        CHECK(took > 1.5 && took < 4.0, "the timeout came after %.2f s (2 s "
              "asked)", took);
        CHECK(strstr(dcoll_last_error(), "shared segment") ||
              strstr(dcoll_last_error(), "rank"), "message: %s",
              dcoll_last_error());
    }
    CHECK_OK(dcoll_group_destroy(&g));
    CHECK_OK(dcoll_finalize());
    return t_finish("shm absent");
}

/* ---- calls that differ ---- */

/* The last rank's call differs from the others' (how): every rank gets
 * DCOLL_ERR_MISMATCH naming the difference at once, at default
 * settings (no deadline); the group's next call fails at once; the
 * world goes on. (A root that differs is not always seen: a root does
 * not wait for the others' steps, as MPI's does not wait for theirs.) */
static void differ(const char *how, int n)
{
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
    bool last = t_rank == n - 1;
    int x[4096] = {0};
    dcoll_status_t st;
    double t0 = t_now();
    const char *says = NULL;
    if (!strcmp(how, "count")) {
        st = dcoll_all_reduce(g, x, x, last ? 4096 : 2048, DCOLL_INT32,
                              DCOLL_SUM, NULL, NULL);
        says = last ? "count 2048 (this rank: 4096)"
                    : "count 4096 (this rank: 2048)";
    } else if (!strcmp(how, "type")) {
        st = dcoll_all_reduce(g, x, x, 100, last ? DCOLL_FLOAT32
                                                 : DCOLL_INT32,
                              DCOLL_SUM, NULL, NULL);
        says = last ? "type int32 (this rank: float32)"
                    : "type float32 (this rank: int32)";
    } else if (!strcmp(how, "kind")) {
        st = last ? dcoll_barrier(g, NULL, NULL)
                  : dcoll_all_reduce(g, x, x, 100, DCOLL_INT32, DCOLL_SUM,
                                     NULL, NULL);
        says = last ? "all_reduce (this rank: barrier)"
                    : "barrier (this rank: all_reduce)";
    } else {
        st = dcoll_all_reduce(g, x, x, 100, DCOLL_INT32,
                              last ? DCOLL_MAX : DCOLL_SUM, NULL, NULL);
        says = last ? "op SUM (this rank: MAX)" : "op MAX (this rank: SUM)";
    }
    CHECK(st == DCOLL_ERR_MISMATCH, "%s: %s (%s)", how,
          dcoll_status_string(st), dcoll_last_error());
    CHECK(strstr(dcoll_last_error(), says) &&
          strstr(dcoll_last_error(), "unusable"),
          "%s: the message does not say '%s': %s", how, says,
          dcoll_last_error());
    /* The group is past use on every rank, and says so at once. */
    st = dcoll_barrier(g, NULL, NULL);
    CHECK(st != DCOLL_SUCCESS, "%s: the group's next call went through",
          how);
    double took = t_now() - t0;
    CHECK(took < 2.0, "%s: the failures took %.2f s", how, took);
    CHECK_OK(dcoll_group_destroy(&g));
    int one = 1;
    CHECK_OK(dcoll_all_reduce(NULL, &one, &one, 1, DCOLL_INT32, DCOLL_SUM,
                              NULL, NULL));
    CHECK(one == n, "%s: the world's sum after it is %d", how, one);
}

static int differs(void)
{
    setenv("DCOLL_SHM", "always", 1);
    CHECK_OK(dcoll_init(NULL));
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *hows[] = {"count", "type", "kind", "op"};
    for (int i = 0; i < 4; i++)
        differ(hows[i], n);
    CHECK_OK(dcoll_finalize());
    return t_finish("shm differ");
}

/* ---- memory the group shares (dcoll_mem_alloc) ---- */

static long mappings(void);

/* Rank r's element i of round t: exact in int32 and float64 sums. */
static int32_t hv(int r, int64_t i, int t)
{
    return (int32_t)((r * 7 + i * 3 + t) % 64);
}

static int32_t hsum(int k, const int *ranks, int64_t i, int t)
{
    int32_t acc = 0;
    for (int j = 0; j < k; j++)
        acc += hv(ranks[j], i, t);
    return acc;
}

/* reduce and broadcast from every root, on in and out (the same: in
 * place), t the round: the others' inputs of a reduce and a broadcast
 * root's buffer, read in place where they lie in a heap, are changed
 * as soon as the call returns, before the check; the root of a reduce
 * and the others of a broadcast check. */
static void rooted(dcoll_group_t *g, int me, int k, const int *ranks,
                   int64_t n, int32_t *in, int32_t *out, int t)
{
    for (int root = 0; root < k; root++) {
        for (int64_t i = 0; i < n; i++)
            in[i] = hv(ranks[me], i, t + root);
        CHECK_OK(dcoll_reduce(g, in, out, n, DCOLL_INT32, DCOLL_SUM, root,
                              NULL, NULL));
        int64_t bad = -1;
        if (me != root)
            memset(in, 0x5a, sizeof(int32_t) * (size_t)n);
        for (int64_t i = 0; me == root && i < n && bad < 0; i++)
            if (out[i] != hsum(k, ranks, i, t + root))
                bad = i;
        CHECK(bad < 0, "%s reduce to %d of %lld elements: element %lld "
              "wrong", in == out ? "in place" : "heap", root, (long long)n,
              (long long)bad);
        CHECK_OK(dcoll_barrier(g, NULL, NULL));
        for (int64_t i = 0; i < n; i++)
            in[i] = me == root ? hv(ranks[root], i, t + 7) : -1;
        CHECK_OK(dcoll_broadcast(g, in, n, DCOLL_INT32, root, NULL, NULL));
        if (me == root)
            memset(in, 0x5a, sizeof(int32_t) * (size_t)n);
        for (int64_t i = 0; me != root && i < n && bad < 0; i++)
            if (in[i] != hv(ranks[root], i, t + 7))
                bad = i;
        CHECK(bad < 0, "heap broadcast from %d of %lld elements: element "
              "%lld is %d", root, (long long)n, (long long)bad,
              bad < 0 ? 0 : in[bad]);
        CHECK_OK(dcoll_barrier(g, NULL, NULL));
    }
}

/* all_reduce, all_gather and reduce_scatter with buffers in g's heap
 * (both, the input alone, in place, only on some ranks), several
 * rounds whose inputs change between calls, and a plan made on them:
 * results right every round, as with any other memory. me: the rank's
 * place in g, of k; ranks: the world ranks of g's members. */
static void heap_calls(dcoll_group_t *g, int me, int k, const int *ranks,
                       int64_t n)
{
    size_t bytes = (size_t)n * (size_t)k * sizeof(int32_t);
    int32_t *a = NULL, *b = NULL;
    CHECK_OK(dcoll_mem_alloc(g, bytes, (void **)&a));
    CHECK_OK(dcoll_mem_alloc(g, bytes, (void **)&b));
    if (!a || !b)
        return;
    CHECK(((uintptr_t)a & 4095) == 0, "heap memory at %p is not "
          "page-aligned", (void *)a);
    int32_t *own = malloc(bytes), *own_out = malloc(bytes);
    for (int mode = 0; mode < 4 && own && own_out; mode++) {
        /* 0: in and out in the heap; 1: the input alone; 2: in place in
         * the heap; 3: the heap on even ranks only. */
        bool heap = mode != 3 || me % 2 == 0;
        int32_t *in = heap ? a : own;
        int32_t *out = mode == 1 || !heap ? own_out : b;
        for (int t = 0; t < 3; t++) {
            for (int64_t i = 0; i < n; i++)
                in[i] = hv(ranks[me], i, t + mode);
            int32_t *res = mode == 2 ? in : out;
            const void *send = in;
            CHECK_OK(dcoll_all_reduce(g, send, res, n, DCOLL_INT32,
                                      DCOLL_SUM, NULL, NULL));
            int64_t bad = -1;
            for (int64_t i = 0; i < n && bad < 0; i++)
                if (res[i] != hsum(k, ranks, i, t + mode))
                    bad = i;
            CHECK(bad < 0, "heap mode %d round %d, %lld elements: "
                  "all_reduce element %lld is %d, not %d", mode, t,
                  (long long)n, (long long)bad, bad < 0 ? 0 : res[bad],
                  bad < 0 ? 0 : hsum(k, ranks, bad, t + mode));
            /* all_gather: each rank's n/k block; in place, it lies at its
             * own place of the output. */
            int64_t m = n / k > 0 ? n / k : 1;
            for (int64_t i = 0; i < m; i++)
                in[i] = hv(ranks[me], i, t);
            if (mode == 2) {
                memmove(in + m * me, in, sizeof(int32_t) * (size_t)m);
                CHECK_OK(dcoll_all_gather(g, in, in, m, DCOLL_INT32, NULL,
                                          NULL));
            } else {
                CHECK_OK(dcoll_all_gather(g, in, out, m, DCOLL_INT32,
                                          NULL, NULL));
            }
            bad = -1;
            for (int64_t i = 0; i < m * k && bad < 0; i++)
                if (res[i] != hv(ranks[i / m], i % m, t))
                    bad = i;
            CHECK(bad < 0, "heap mode %d round %d: all_gather element "
                  "%lld wrong", mode, t, (long long)bad);
            /* reduce_scatter: k blocks of m in, block me out. */
            for (int64_t i = 0; i < m * k; i++)
                in[i] = hv(ranks[me], i, t);
            int32_t *rs = mode == 2 ? in : out;
            CHECK_OK(dcoll_reduce_scatter(g, in, rs, m, DCOLL_INT32,
                                          DCOLL_SUM, NULL, NULL));
            bad = -1;
            for (int64_t i = 0; i < m && bad < 0; i++)
                if (rs[i] != hsum(k, ranks, m * me + i, t))
                    bad = i;
            CHECK(bad < 0, "heap mode %d round %d: reduce_scatter element "
                  "%lld wrong", mode, t, (long long)bad);
            rooted(g, me, k, ranks, n, in, mode == 2 ? in : out, t + mode);
        }
    }
    /* A plan on heap buffers reads them at each start. */
    dcoll_plan_t *plan = NULL;
    CHECK_OK(dcoll_all_reduce_plan(g, a, b, n, DCOLL_INT32, DCOLL_SUM, NULL,
                                   &plan));
    for (int t = 0; t < 3 && plan; t++) {
        for (int64_t i = 0; i < n; i++)
            a[i] = hv(ranks[me], i, 10 + t);
        CHECK_OK(dcoll_plan_start(plan, NULL));
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (b[i] != hsum(k, ranks, i, 10 + t))
                bad = i;
        CHECK(bad < 0, "plan start %d: element %lld wrong", t,
              (long long)bad);
    }
    CHECK_OK(dcoll_plan_free(&plan));
    free(own);
    free(own_out);
    CHECK_OK(dcoll_mem_free(g, a));
    /* b goes with the group. */
}

/* On a group with a heap, broadcasts and reduces the segment declines
 * (malloc'd buffers: MPI's call), small ones it takes by the rules, and
 * ones on heap buffers it takes in place, in turn from every root, the
 * ranks skewed now and then: every result right, none of the calls'
 * words taken for another's (dcoll_shm_fence). */
static void declined_runs(dcoll_group_t *g, int me, int k)
{
    const int64_t n = 16384;
    int32_t *h = NULL, *m = malloc(sizeof(int32_t) * (size_t)n),
            *out = malloc(sizeof(int32_t) * (size_t)n);
    CHECK_OK(dcoll_mem_alloc(g, sizeof(int32_t) * (size_t)n, (void **)&h));
    for (int t = 0; t < 300 && h && m && out; t++) {
        int root = t % k;
        int64_t sizes[3] = {n, 64, n};
        for (int j = 0; j < 3; j++) {
            int32_t *b = j == 2 ? h : m;
            for (int64_t i = 0; i < sizes[j]; i++)
                b[i] = me == root ? (int32_t)(t * 7 + j + i) : -1;
            CHECK_OK(dcoll_broadcast(g, b, sizes[j], DCOLL_INT32, root, NULL,
                                     NULL));
            int64_t bad = -1;
            for (int64_t i = 0; i < sizes[j] && bad < 0; i++)
                if (b[i] != (int32_t)(t * 7 + j + i))
                    bad = i;
            CHECK(bad < 0, "round %d, broadcast %d from %d: element %lld "
                  "wrong", t, j, root, (long long)bad);
        }
        for (int j = 0; j < 3; j++) {
            int32_t *b = j == 2 ? h : m;
            for (int64_t i = 0; i < sizes[j]; i++)
                b[i] = (int32_t)(t + me * i);
            CHECK_OK(dcoll_reduce(g, b, out, sizes[j], DCOLL_INT32,
                                  DCOLL_SUM, root, NULL, NULL));
            int64_t bad = -1;
            for (int64_t i = 0; me == root && i < sizes[j] && bad < 0; i++)
                if (out[i] != (int32_t)(k * t + (int64_t)k * (k - 1) / 2 * i))
                    bad = i;
            CHECK(bad < 0, "round %d, reduce %d to %d: element %lld wrong",
                  t, j, root, (long long)bad);
        }
        if (t % 7 == me)
            usleep(100);
    }
    free(m);
    free(out);
    CHECK_OK(dcoll_mem_free(g, h));
}

static void heap_refusals(dcoll_group_t *g, int me, int k)
{
    void *p = (void *)1;
    /* Alone on one rank, each refusal reaches the others. */
    dcoll_status_t st = dcoll_mem_alloc(g, me == k - 1 ? 0 : 64, &p);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT && !p, "bytes 0 on one rank: "
          "%s", dcoll_status_string(st));
    CHECK(strstr(dcoll_last_error(), me == k - 1 ? "bytes is 0"
                                   : "another rank refused"),
          "message: %s", dcoll_last_error());
    st = dcoll_mem_alloc(g, 64, me == 0 ? NULL : &p);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "NULL ptr on rank 0: %s",
          dcoll_status_string(st));
    st = dcoll_mem_alloc(g, (size_t)64 << me, &p);
    CHECK(k == 1 ? st == DCOLL_SUCCESS : st == DCOLL_ERR_INVALID_ARGUMENT,
          "sizes that differ: %s", dcoll_status_string(st));
    CHECK(k == 1 || strstr(dcoll_last_error(), "asked for"),
          "message: %s", dcoll_last_error());
    if (k == 1)
        CHECK_OK(dcoll_mem_free(g, p));
    st = dcoll_mem_alloc(g, ((size_t)1 << 40) + 1, &p);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "2^40 + 1 bytes: %s",
          dcoll_status_string(st));
    int mine = 0;
    st = dcoll_mem_free(g, me == 0 ? (void *)&mine : NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "freeing foreign memory: %s",
          dcoll_status_string(st));
    CHECK(strstr(dcoll_last_error(), me == 0 ? "is not memory"
                                   : "ptr is NULL"),
          "message: %s", dcoll_last_error());
    /* The group goes on. */
    CHECK_OK(dcoll_mem_alloc(g, 100, &p));
    CHECK_OK(dcoll_mem_free(g, p));
    st = dcoll_mem_free(g, p);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "a second free: %s",
          dcoll_status_string(st));
}

static int heaps(void)
{
    CHECK_OK(dcoll_init(NULL));
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int all[4] = {0, 1, 2, 3};
    heap_refusals(NULL, t_rank, n);
    int64_t sizes[] = {1, 1000, 4099, 70001};
    for (int i = 0; i < 4; i++) {
        dcoll_group_t *g = NULL;
        CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
        heap_calls(g, t_rank, n, all, sizes[i]);
        CHECK_OK(dcoll_group_destroy(&g));
    }
    dcoll_group_t *d = NULL;
    CHECK_OK(dcoll_new_group(&d, NULL, 0, NULL));
    declined_runs(d, t_rank, n);
    CHECK_OK(dcoll_group_destroy(&d));
    /* A group of the first n - 1 ranks, the last outside. */
    if (n >= 3) {
        int sub[3] = {0, 1, 2};
        dcoll_group_t *g = NULL;
        CHECK_OK(dcoll_new_group(&g, sub, n - 1, NULL));
        if (t_rank < n - 1)
            heap_calls(g, t_rank, n - 1, sub, 5003);
        else
            CHECK(dcoll_mem_alloc(g, 64, &(void *){NULL}) ==
                  DCOLL_ERR_INVALID_ARGUMENT, "a NON-MEMBER's allocation");
        CHECK_OK(dcoll_group_destroy(&g));
    }
    CHECK(mappings() == 0, "%ld segment(s) or heap(s) still mapped",
          mappings());
    CHECK_OK(dcoll_finalize());
    return t_finish("shm heap");
}

/* ---- many groups ---- */

static int segments_named(void)
{
    DIR *d = opendir("/dev/shm");
    int n = 0;
    char mine[32];
    snprintf(mine, sizeof(mine), "dcoll-%ld-", (long)getpid());
    for (struct dirent *e; d && (e = readdir(d));)
        n += !strncmp(e->d_name, mine, strlen(mine));
    if (d)
        closedir(d);
    return n;
}

static long mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    char line[512];
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, "/dev/shm/dcoll-") != NULL;
    if (f)
        fclose(f);
    return n;
}

static int groups(void)
{
    setenv("DCOLL_SHM", "always", 1);
    setenv("DCOLL_SHM_SEGMENT", "8K", 1);
    CHECK_OK(dcoll_init(NULL));
    float x[16];
    for (int i = 0; i < 10000 && !t_failures; i++) {
        dcoll_group_t *g = NULL;
        CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
        for (int j = 0; j < 16; j++)
            x[j] = 1;
        CHECK_OK(dcoll_all_reduce(g, x, x, 16, DCOLL_FLOAT32, DCOLL_SUM,
                                  NULL, NULL));
        int n = 1;
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        CHECK(x[15] == (float)n, "group %d: sum %g", i, x[15]);
        CHECK_OK(dcoll_group_destroy(&g));
        CHECK(mappings() == 0, "group %d: %ld segment(s) still mapped", i,
              mappings());
    }
    CHECK(segments_named() == 0, "%d segment(s) left in /dev/shm",
          segments_named());
    CHECK_OK(dcoll_finalize());
    CHECK(mappings() == 0, "after finalize: %ld segment(s) mapped",
          mappings());
    return t_finish("shm groups");
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    const char *mode = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
    int rc;
    if (!strcmp(mode, "settings"))
        rc = settings();
    else if (!strcmp(mode, "absent"))
        rc = absent();
    else if (!strcmp(mode, "groups"))
        rc = groups();
    else if (!strcmp(mode, "differ"))
        rc = differs();
    else if (!strcmp(mode, "heap"))
        rc = heaps();
    else if (!strcmp(mode, "nodes"))
        rc = nodes();
    else {
        CHECK_OK(dcoll_init(NULL));
        t_sizes(argc, argv, body);
        CHECK_OK(dcoll_finalize());
        rc = t_finish("shm");
    }
    MPI_Finalize();
    return rc;
}
