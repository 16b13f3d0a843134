/* The multi-buffer forms: broadcast, all_reduce, reduce, all_gather and
 * reduce_scatter over 1 to 3 buffers per process, every type (every op
 * for all_reduce), blocking and async, on the world, sub-groups and
 * non-members, buffers that must stay as they were, and refusals. Each
 * buffer acts as a rank of its own: buffer j of group rank g is "virtual
 * rank" g * nbufs + j. Run under mpirun with 1 to 4 ranks, or with
 * --sizes on the worlds of sizes.h inside one job.
 *   DCOLL_TEST_PLACE=host  (default) host buffers;
 *                    gpu   buffer j on GPU j % (the GPUs there are);
 *                    mix   odd buffers on the GPU, even ones on the host.
 * Built against CUDA for the gpu suite (test_multi_gpu), and with
 * FAKE_DEVICE for the fake plugin's GPUs (test/gpu/fake_plugin.c); then
 * DCOLL_TEST_NCCL=yes|no says whether its NCCL must have been used. */
#include <stdbool.h>
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;
static int job_size;

/* Device memory: the fake plugin's, CUDA's, or none. */
enum { ON_HOST, ON_GPU, MIXED };
static int place = ON_HOST, ngpus;
#if defined(FAKE_DEVICE)
#include <dlfcn.h>
static void *(*dev_alloc)(int, size_t);
static void (*dev_copy)(void *, const void *, size_t);
static long (*nccl_calls)(void);
static void dev_open(void)
{
    const char *path = getenv("DCOLL_CUDA_PLUGIN");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    *(void **)&dev_alloc = h ? dlsym(h, "fake_device_alloc_on") : NULL;
    *(void **)&dev_copy = h ? dlsym(h, "fake_device_copy") : NULL;
    *(void **)&nccl_calls = h ? dlsym(h, "fake_nccl_calls") : NULL;
    const char *e = getenv("FAKE_NGPUS");
    ngpus = dev_alloc && dev_copy ? (e ? atoi(e) : 1) : 0;
}
static void *dev_new(int d, size_t bytes) { return dev_alloc(d, bytes); }
static void dev_free(void *p) { (void)p; /* the arena is never reused */ }
#elif defined(CUDA_DEVICE)
#include <cuda_runtime_api.h>
static void dev_open(void)
{
    if (cudaGetDeviceCount(&ngpus) != cudaSuccess)
        ngpus = 0;
}
static void *dev_new(int d, size_t bytes)
{
    void *p = NULL;
    int old = 0;
    cudaGetDevice(&old);
    cudaSetDevice(d);
    cudaMalloc(&p, bytes ? bytes : 1);
    cudaSetDevice(old);
    return p;
}
static void dev_copy(void *dst, const void *src, size_t bytes)
{
    cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
}
static void dev_free(void *p) { cudaFree(p); }
#else
static void dev_open(void) { ngpus = 0; }
static void *dev_new(int d, size_t bytes) { (void)d, (void)bytes; return NULL; }
static void dev_copy(void *dst, const void *src, size_t bytes)
{
    (void)dst, (void)src, (void)bytes;
}
static void dev_free(void *p) { (void)p; }
#endif

/* Element k of virtual rank x: small, and for PRODUCT mostly 1, so that
 * every op over 12 virtual ranks is exact in every type. */
static double val(int x, int64_t k, dcoll_op_t op)
{
    if (op == DCOLL_PRODUCT)
        return 1 + ((x + (int)k) % 7 == 0);
    return 1 + (double)((x + (int)k) % 3);
}

static double fold(dcoll_op_t op, int nx, int64_t k, int is_f)
{
    double acc = val(0, k, op);
    for (int x = 1; x < nx; x++)
        acc = t_combine(op, acc, val(x, k, op));
    return t_average(op, acc, nx, is_f);
}

static int near(double got, double want, dcoll_dtype_t dt)
{
    double tol = dt == DCOLL_FLOAT16 || dt == DCOLL_BFLOAT16 ? 1e-2 : 1e-6;
    return fabs(got - want) <= tol * fabs(want);
}

struct ctx {
    dcoll_group_t *g;
    int n, me, nb;          /* group size, rank, buffers per process */
    const int *m;           /* members in group order (world ranks) */
    dcoll_dtype_t dt;
    int async;
    char what[128];
};

#define COUNT 5

static void done(struct ctx *x, dcoll_status_t st, dcoll_work_t **w,
                 const char *fn)
{
    CHECK(st == DCOLL_SUCCESS, "%s %s: %s", x->what, fn, dcoll_last_error());
    if (!st && x->async) {
        CHECK_OK(dcoll_work_wait(*w));
        CHECK_OK(dcoll_work_free(w));
    }
}

/* nb buffers of bytes each where DCOLL_TEST_PLACE puts them, and their
 * host views: filled there and pushed, or pulled and checked there. */
struct list {
    int nb;
    size_t bytes;
    void **p;               /* what the call gets */
    void **h;               /* host views (== p on the host) */
};

static bool on_gpu(int j)
{
    return place == ON_GPU || (place == MIXED && j % 2);
}

static struct list bufs(int nb, size_t bytes)
{
    struct list l = {nb, bytes, calloc((size_t)nb, sizeof(void *)),
                     calloc((size_t)nb, sizeof(void *))};
    for (int j = 0; j < nb; j++) {
        l.h[j] = calloc(1, bytes ? bytes : 1);
        l.p[j] = on_gpu(j) ? dev_new(j % ngpus, bytes) : l.h[j];
        if (l.p[j] != l.h[j])
            dev_copy(l.p[j], l.h[j], bytes);
    }
    return l;
}

static void push(struct list *l)
{
    for (int j = 0; j < l->nb; j++)
        if (l->p[j] != l->h[j])
            dev_copy(l->p[j], l->h[j], l->bytes);
}

static void pull(struct list *l)
{
    for (int j = 0; j < l->nb; j++)
        if (l->p[j] != l->h[j])
            dev_copy(l->h[j], l->p[j], l->bytes);
}

static void bufs_free(struct list *l)
{
    for (int j = 0; j < l->nb; j++) {
        if (l->p[j] != l->h[j])
            dev_free(l->p[j]);
        free(l->h[j]);
    }
    free(l->p);
    free(l->h);
}

static void fill(struct ctx *x, struct list *b, int64_t count, dcoll_op_t op)
{
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < count; k++)
            t_set(b->h[j], x->dt, (size_t)k, val(x->me * x->nb + j, k, op));
    push(b);
}

static void all_reduce(struct ctx *x, dcoll_op_t op)
{
    struct list b = bufs(x->nb, COUNT * t_size(x->dt));
    fill(x, &b, COUNT, op);
    dcoll_work_t *w = NULL;
    done(x, dcoll_all_reduce_multi(x->g, b.p, x->nb, COUNT, x->dt, op, NULL,
                                   x->async ? &w : NULL), &w,
         "all_reduce_multi");
    pull(&b);
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < COUNT; k++) {
            double got = t_get(b.h[j], x->dt, (size_t)k);
            double want = fold(op, x->n * x->nb, k, t_is_float(x->dt));
            CHECK(near(got, want, x->dt), "%s all_reduce_multi(%s) buf %d "
                  "[%lld] = %g, want %g", x->what, t_op_names[op], j,
                  (long long)k, got, want);
        }
    bufs_free(&b);
}

static void broadcast(struct ctx *x)
{
    int root = x->n - 1, rb = x->nb - 1;
    struct list b = bufs(x->nb, COUNT * t_size(x->dt));
    fill(x, &b, COUNT, DCOLL_SUM);
    dcoll_work_t *w = NULL;
    done(x, dcoll_broadcast_multi(x->g, b.p, x->nb, COUNT, x->dt, x->m[root],
                                  rb, NULL, x->async ? &w : NULL), &w,
         "broadcast_multi");
    pull(&b);
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < COUNT; k++) {
            double got = t_get(b.h[j], x->dt, (size_t)k);
            double want = val(root * x->nb + rb, k, DCOLL_SUM);
            CHECK(got == want, "%s broadcast_multi buf %d [%lld] = %g, want "
                  "%g", x->what, j, (long long)k, got, want);
        }
    bufs_free(&b);
}

static void reduce(struct ctx *x, dcoll_op_t op)
{
    int root = 0, rb = x->nb / 2;
    struct list b = bufs(x->nb, COUNT * t_size(x->dt));
    fill(x, &b, COUNT, op);
    dcoll_work_t *w = NULL;
    done(x, dcoll_reduce_multi(x->g, b.p, x->nb, COUNT, x->dt, op, x->m[root],
                               rb, NULL, x->async ? &w : NULL), &w,
         "reduce_multi");
    pull(&b);
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < COUNT; k++) {
            double got = t_get(b.h[j], x->dt, (size_t)k);
            bool result = x->me == root && j == rb;
            double want = result ? fold(op, x->n * x->nb, k,
                                        t_is_float(x->dt))
                                 : val(x->me * x->nb + j, k, op);
            CHECK(near(got, want, x->dt), "%s reduce_multi(%s) buf %d [%lld] "
                  "= %g, want %g (%s)", x->what, t_op_names[op], j,
                  (long long)k, got, want, result ? "the result" : "as it was");
        }
    bufs_free(&b);
}

static void all_gather(struct ctx *x)
{
    struct list s = bufs(x->nb, COUNT * t_size(x->dt));
    size_t nblocks = (size_t)x->n * (size_t)x->nb;
    struct list r = bufs(x->nb, nblocks * COUNT * t_size(x->dt));
    fill(x, &s, COUNT, DCOLL_SUM);
    dcoll_work_t *w = NULL;
    done(x, dcoll_all_gather_multi(x->g, (const void *const *)s.p, r.p,
                                   x->nb, COUNT, x->dt, NULL,
                                   x->async ? &w : NULL),
         &w, "all_gather_multi");
    pull(&r);
    for (int i = 0; i < x->nb; i++)
        for (size_t blk = 0; blk < nblocks; blk++)
            for (int64_t k = 0; k < COUNT; k++) {
                double got = t_get(r.h[i], x->dt, blk * COUNT + (size_t)k);
                double want = val((int)blk, k, DCOLL_SUM);
                CHECK(got == want, "%s all_gather_multi out %d block %zu "
                      "[%lld] = %g, want %g", x->what, i, blk, (long long)k,
                      got, want);
            }
    bufs_free(&s);
    bufs_free(&r);
}

static void reduce_scatter(struct ctx *x, dcoll_op_t op)
{
    int64_t all = (int64_t)x->n * x->nb * COUNT;
    struct list s = bufs(x->nb, (size_t)all * t_size(x->dt));
    struct list r = bufs(x->nb, COUNT * t_size(x->dt));
    /* Element e of buffer j: virtual rank me * nb + j's element e. */
    for (int j = 0; j < x->nb; j++)
        for (int64_t e = 0; e < all; e++)
            t_set(s.h[j], x->dt, (size_t)e, val(x->me * x->nb + j, e, op));
    push(&s);
    dcoll_work_t *w = NULL;
    done(x, dcoll_reduce_scatter_multi(x->g, (const void *const *)s.p, r.p,
                                       x->nb, COUNT, x->dt, op, NULL,
                                       x->async ? &w : NULL), &w,
         "reduce_scatter_multi");
    pull(&r);
    for (int i = 0; i < x->nb; i++)
        for (int64_t k = 0; k < COUNT; k++) {
            int64_t e = ((int64_t)x->me * x->nb + i) * COUNT + k;
            double got = t_get(r.h[i], x->dt, (size_t)k);
            double want = fold(op, x->n * x->nb, e, t_is_float(x->dt));
            CHECK(near(got, want, x->dt), "%s reduce_scatter_multi(%s) out "
                  "%d [%lld] = %g, want %g", x->what, t_op_names[op], i,
                  (long long)k, got, want);
        }
    bufs_free(&s);
    bufs_free(&r);
}

static void on_group(int which)
{
    int ranks[8] = {0}, n = t_world_ranks(which, ranks);
    dcoll_group_t *g = T_WORLD;
    if (which)
        CHECK_OK(t_new_group(&g, ranks, n, NULL));
    int me = -1;
    dcoll_group_rank(g, &me);
    for (int i = 0; i < n && which; i++)   /* the world's: its own order */
        for (int j = i + 1; j < n; j++)
            if (ranks[j] < ranks[i]) {
                int t = ranks[i];
                ranks[i] = ranks[j];
                ranks[j] = t;
            }
    for (int nb = 1; nb <= 3; nb++)
        for (int dt = 0; dt < T_NUMERIC; dt++)
            for (int async = 0; async < 2; async++) {
                struct ctx x = {g, n, me, nb, ranks, (dcoll_dtype_t)dt,
                                async, ""};
                snprintf(x.what, sizeof(x.what), "group %d, %d buffer(s), "
                         "%s%s", which, nb, t_dtype_names[dt],
                         async ? ", async" : "");
                if (me == DCOLL_NON_MEMBER) {
                    /* Nothing happens, to the buffers either. */
                    struct list b = bufs(nb, COUNT * t_size(x.dt));
                    fill(&x, &b, COUNT, DCOLL_SUM);
                    dcoll_work_t *w = NULL;
                    done(&x, dcoll_all_reduce_multi(g, b.p, nb, COUNT, x.dt,
                                                    DCOLL_SUM, NULL,
                                                    async ? &w : NULL),
                         &w, "all_reduce_multi");
                    pull(&b);
                    CHECK(t_get(b.h[nb - 1], x.dt, 0) ==
                              val((me * nb) + nb - 1, 0, DCOLL_SUM),
                          "%s: a non-member's buffer changed", x.what);
                    bufs_free(&b);
                    continue;
                }
                broadcast(&x);
                all_gather(&x);
                for (int op = 0; op < DCOLL_OP_COUNT_; op++) {
                    if (!t_op_ok(x.dt, (dcoll_op_t)op))
                        continue;
                    if (async && op != DCOLL_SUM && op != DCOLL_AVG)
                        continue;
                    all_reduce(&x, (dcoll_op_t)op);
                    if (op == DCOLL_SUM || op == DCOLL_AVG ||
                        op == DCOLL_MAX) {
                        reduce(&x, (dcoll_op_t)op);
                        reduce_scatter(&x, (dcoll_op_t)op);
                    }
                }
            }
    if (which)
        CHECK_OK(dcoll_group_destroy(&g));
}


static void refused(void)
{
    float a[4], b[4];
    void *two[2] = {a, b}, *holed[2] = {a, NULL};
    dcoll_status_t bad = DCOLL_ERR_INVALID_ARGUMENT;
    dcoll_group_t *G = t_spare();
    CHECK_DEAD(G, dcoll_all_reduce_multi(G, two, 0, 4, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL),
                  bad, "nbufs 0");
    CHECK_DEAD(G, dcoll_all_reduce_multi(G, NULL, 2, 4, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL),
                  bad, "bufs is NULL with nbufs 2");
    CHECK_DEAD(G, dcoll_all_reduce_multi(G, holed, 2, 4, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL),
                  bad, "bufs[1] is NULL with count 4");
    CHECK_DEAD(G, dcoll_all_reduce_multi(G, two, 2, 4, DCOLL_FLOAT32,
                                         DCOLL_BAND, NULL, NULL),
                  bad, "BAND");
    CHECK_DEAD(G, dcoll_broadcast_multi(G, two, 2, 4, DCOLL_FLOAT32, 0, 2,
                                        NULL, NULL),
                  bad, "root_buf 2 is not a buffer index");
    CHECK_DEAD(G, dcoll_reduce_multi(G, two, 2, 4, DCOLL_FLOAT32,
                                     DCOLL_SUM, job_size, 0, NULL, NULL),
                  bad, "root");
    /* Overlapping buffers, other than NCCL's in-place form (a race on
     * the GPU): refused on every path. */
    float big[2][64];
    const void *send[2] = {big[0], big[1] + 1};
    void *recv[2] = {big[0], big[1]};
    int gme = 0, gn = 0;   /* G is ordered by job rank, as new_group's */
    dcoll_group_rank(G, &gme);
    dcoll_group_size(G, &gn);
    if (gn * 2 * 4 <= 64) {
        size_t mine = (size_t)gme * 2 * 4;
        CHECK_DEAD(G, dcoll_all_gather_multi(G, send, recv, 2, 4,
                                             DCOLL_FLOAT32, NULL, NULL),
                   bad, gme ? "sendbufs[0] overlaps recvbufs[0]"
                            : "sendbufs[1] overlaps recvbufs[1]");
        CHECK_DEAD(G, dcoll_reduce_scatter_multi(G, (const void *const *)recv,
                                                 (void *const *)send, 2, 4,
                                                 DCOLL_FLOAT32, DCOLL_SUM,
                                                 NULL, NULL),
                   bad, "but is not this rank's block");
        /* NCCL's form is taken: each input at this rank's block. */
        for (int i = 0; i < 2; i++) {
            for (int e = 0; e < 64; e++)
                big[i][e] = -1;
            for (int e = 0; e < 4; e++)
                big[i][mine + (size_t)i * 4 + (size_t)e] =
                    (float)(gme * 2 + i);
            send[i] = big[i] + mine + (size_t)i * 4;
            recv[i] = big[i];
        }
        CHECK_OK(dcoll_all_gather_multi(G, send, recv, 2, 4, DCOLL_FLOAT32,
                                        NULL, NULL));
        for (int i = 0; i < 2; i++)
            for (int blk = 0; blk < gn * 2; blk++)
                CHECK(big[i][blk * 4 + 3] == (float)blk, "all_gather_multi "
                      "in place: buffer %d block %d = %g", i, blk,
                      big[i][blk * 4 + 3]);
    }
    CHECK_OK(dcoll_group_destroy(&G));
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
}

/* On GPUs of the NCCL path: a stream belongs to one GPU. */
static void refused_gpu(void)
{
    if (place != ON_GPU || ngpus < 2)
        return;
    struct list b = bufs(2, 4 * sizeof(float));
    dcoll_coll_opts_t o = {.mask = DCOLL_COLL_OPT_STREAM,
                           .stream = (void *)0x5};
    dcoll_status_t st = dcoll_all_reduce_multi(T_WORLD, b.p, 2, 4,
                                               DCOLL_FLOAT32, DCOLL_SUM, &o,
                                               NULL);
    const char *want = getenv("DCOLL_TEST_NCCL");
    if (want && !strcmp(want, "yes"))
        CHECK(st == DCOLL_ERR_INVALID_ARGUMENT &&
                  strstr(dcoll_last_error(), "stream of one GPU"),
              "a stream with buffers on 2 GPUs: %d %s", st,
              dcoll_last_error());
    bufs_free(&b);
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
}

/* DCOLL_DEBUG=detail: counts that disagree are caught on every rank
 * before anything runs, on GPU buffers (NCCL's path) as on the host; the
 * same placement as the world's earlier calls, so no new clique. */
static void mismatched(void)
{
    if (!t_debug() || t_w.n < 2)
        return;
    struct list b = bufs(2, 8 * sizeof(float));
    int64_t count = 4 + (t_w.me == 1);
    dcoll_status_t st = dcoll_all_reduce_multi(T_WORLD, b.p, 2, count,
                                               DCOLL_FLOAT32, DCOLL_SUM, NULL,
                                               NULL);
    CHECK(st == DCOLL_ERR_MISMATCH, "all_reduce_multi, count 5 on rank 1 "
          "and 4 elsewhere: %s: %s", dcoll_status_string(st),
          dcoll_last_error());
    bufs_free(&b);
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
}

static void body(void)
{
    on_group(0);
#ifdef FAKE_DEVICE
    /* That the fake NCCL ran the world's calls, or that none reached it
     * (a one-rank sub-group shares no GPU, so it may use NCCL anyway). */
    const char *want = getenv("DCOLL_TEST_NCCL");
    if (want) {
        long calls = nccl_calls ? nccl_calls() : -1;
        CHECK(!strcmp(want, "yes") ? calls > 0 : calls == 0,
              "DCOLL_TEST_NCCL=%s, but the fake NCCL ran %ld calls for the "
              "world", want, calls);
        if (t_rank == 0)
            printf("fake NCCL calls on rank 0 for the world: %ld\n", calls);
    }
#endif
    mismatched();
    for (int which = 1; which < T_NGROUPS; which++)
        on_group(which);
    refused();
    refused_gpu();
}

int main(int argc, char **argv)
{
    const char *pl = getenv("DCOLL_TEST_PLACE");
    place = !pl || !strcmp(pl, "host") ? ON_HOST
            : !strcmp(pl, "gpu")       ? ON_GPU
                                       : MIXED;
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &job_size);
    if (place != ON_HOST) {
        dev_open();
        if (ngpus < 1) {
            if (t_rank == 0)
                printf("skip: no GPU (DCOLL_TEST_PLACE=%s)\n", pl);
            dcoll_finalize();
            return 77;
        }
    }
    t_sizes(argc, argv, body);
    int rc = t_finish("multi");
    dcoll_finalize();
    return rc;
}
