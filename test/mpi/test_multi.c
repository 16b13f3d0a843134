/* The multi-buffer forms on host buffers: broadcast, all_reduce, reduce,
 * all_gather and reduce_scatter over 1 to 3 buffers per process, every
 * type (every op for all_reduce), blocking and async, on the world,
 * sub-groups and non-members, buffers that must stay as they were, and
 * refusals. Each buffer acts as a rank of its own: buffer j of group
 * rank g is "virtual rank" g * nbufs + j. Run under mpirun with 1 to 4
 * ranks. */
#include <stdbool.h>
#include "testutil.h"

int t_rank, t_failures;
static int world_size;

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

static void **bufs(int nb, size_t bytes)
{
    void **b = calloc((size_t)nb, sizeof(void *));
    for (int j = 0; j < nb; j++)
        b[j] = calloc(1, bytes);
    return b;
}

static void bufs_free(void **b, int nb)
{
    for (int j = 0; j < nb; j++)
        free(b[j]);
    free(b);
}

static void fill(struct ctx *x, void **b, int64_t count, dcoll_op_t op)
{
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < count; k++)
            t_set(b[j], x->dt, (size_t)k, val(x->me * x->nb + j, k, op));
}

static void all_reduce(struct ctx *x, dcoll_op_t op)
{
    void **b = bufs(x->nb, COUNT * t_size(x->dt));
    fill(x, b, COUNT, op);
    dcoll_work_t *w = NULL;
    done(x, dcoll_all_reduce_multi(x->g, b, x->nb, COUNT, x->dt, op, NULL,
                                   x->async ? &w : NULL), &w,
         "all_reduce_multi");
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < COUNT; k++) {
            double got = t_get(b[j], x->dt, (size_t)k);
            double want = fold(op, x->n * x->nb, k, t_is_float(x->dt));
            CHECK(near(got, want, x->dt), "%s all_reduce_multi(%s) buf %d "
                  "[%lld] = %g, want %g", x->what, t_op_names[op], j,
                  (long long)k, got, want);
        }
    bufs_free(b, x->nb);
}

static void broadcast(struct ctx *x)
{
    int root = x->n - 1, rb = x->nb - 1;
    void **b = bufs(x->nb, COUNT * t_size(x->dt));
    fill(x, b, COUNT, DCOLL_SUM);
    dcoll_work_t *w = NULL;
    done(x, dcoll_broadcast_multi(x->g, b, x->nb, COUNT, x->dt, x->m[root],
                                  rb, NULL, x->async ? &w : NULL), &w,
         "broadcast_multi");
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < COUNT; k++) {
            double got = t_get(b[j], x->dt, (size_t)k);
            double want = val(root * x->nb + rb, k, DCOLL_SUM);
            CHECK(got == want, "%s broadcast_multi buf %d [%lld] = %g, want "
                  "%g", x->what, j, (long long)k, got, want);
        }
    bufs_free(b, x->nb);
}

static void reduce(struct ctx *x, dcoll_op_t op)
{
    int root = 0, rb = x->nb / 2;
    void **b = bufs(x->nb, COUNT * t_size(x->dt));
    fill(x, b, COUNT, op);
    dcoll_work_t *w = NULL;
    done(x, dcoll_reduce_multi(x->g, b, x->nb, COUNT, x->dt, op, x->m[root],
                               rb, NULL, x->async ? &w : NULL), &w,
         "reduce_multi");
    for (int j = 0; j < x->nb; j++)
        for (int64_t k = 0; k < COUNT; k++) {
            double got = t_get(b[j], x->dt, (size_t)k);
            bool result = x->me == root && j == rb;
            double want = result ? fold(op, x->n * x->nb, k,
                                        t_is_float(x->dt))
                                 : val(x->me * x->nb + j, k, op);
            CHECK(near(got, want, x->dt), "%s reduce_multi(%s) buf %d [%lld] "
                  "= %g, want %g (%s)", x->what, t_op_names[op], j,
                  (long long)k, got, want, result ? "the result" : "as it was");
        }
    bufs_free(b, x->nb);
}

static void all_gather(struct ctx *x)
{
    void **s = bufs(x->nb, COUNT * t_size(x->dt));
    size_t nblocks = (size_t)x->n * (size_t)x->nb;
    void **r = bufs(x->nb, nblocks * COUNT * t_size(x->dt));
    fill(x, s, COUNT, DCOLL_SUM);
    dcoll_work_t *w = NULL;
    done(x, dcoll_all_gather_multi(x->g, (const void *const *)s, r, x->nb,
                                   COUNT, x->dt, NULL, x->async ? &w : NULL),
         &w, "all_gather_multi");
    for (int i = 0; i < x->nb; i++)
        for (size_t blk = 0; blk < nblocks; blk++)
            for (int64_t k = 0; k < COUNT; k++) {
                double got = t_get(r[i], x->dt, blk * COUNT + (size_t)k);
                double want = val((int)blk, k, DCOLL_SUM);
                CHECK(got == want, "%s all_gather_multi out %d block %zu "
                      "[%lld] = %g, want %g", x->what, i, blk, (long long)k,
                      got, want);
            }
    bufs_free(s, x->nb);
    bufs_free(r, x->nb);
}

static void reduce_scatter(struct ctx *x, dcoll_op_t op)
{
    int64_t all = (int64_t)x->n * x->nb * COUNT;
    void **s = bufs(x->nb, (size_t)all * t_size(x->dt));
    void **r = bufs(x->nb, COUNT * t_size(x->dt));
    /* Element e of buffer j: virtual rank me * nb + j's element e. */
    for (int j = 0; j < x->nb; j++)
        for (int64_t e = 0; e < all; e++)
            t_set(s[j], x->dt, (size_t)e, val(x->me * x->nb + j, e, op));
    dcoll_work_t *w = NULL;
    done(x, dcoll_reduce_scatter_multi(x->g, (const void *const *)s, r,
                                       x->nb, COUNT, x->dt, op, NULL,
                                       x->async ? &w : NULL), &w,
         "reduce_scatter_multi");
    for (int i = 0; i < x->nb; i++)
        for (int64_t k = 0; k < COUNT; k++) {
            int64_t e = ((int64_t)x->me * x->nb + i) * COUNT + k;
            double got = t_get(r[i], x->dt, (size_t)k);
            double want = fold(op, x->n * x->nb, e, t_is_float(x->dt));
            CHECK(near(got, want, x->dt), "%s reduce_scatter_multi(%s) out "
                  "%d [%lld] = %g, want %g", x->what, t_op_names[op], i,
                  (long long)k, got, want);
        }
    bufs_free(s, x->nb);
    bufs_free(r, x->nb);
}

static void on_group(int which)
{
    int ranks[8] = {0}, n = t_group_ranks(which, world_size, ranks);
    dcoll_group_t *g = NULL;
    if (which)
        CHECK_OK(dcoll_new_group(&g, ranks, n, NULL));
    int me = -1;
    dcoll_group_rank(g, &me);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (ranks[j] < ranks[i]) {
                int t = ranks[i];
                ranks[i] = ranks[j];
                ranks[j] = t;
            }
    for (int nb = 1; nb <= 3; nb++)
        for (int dt = 0; dt < DCOLL_DTYPE_COUNT_; dt++)
            for (int async = 0; async < 2; async++) {
                struct ctx x = {g, n, me, nb, ranks, (dcoll_dtype_t)dt,
                                async, ""};
                snprintf(x.what, sizeof(x.what), "group %d, %d buffer(s), "
                         "%s%s", which, nb, t_dtype_names[dt],
                         async ? ", async" : "");
                if (me == DCOLL_NON_MEMBER) {
                    /* Nothing happens, to the buffers either. */
                    void **b = bufs(nb, COUNT * t_size(x.dt));
                    fill(&x, b, COUNT, DCOLL_SUM);
                    dcoll_work_t *w = NULL;
                    done(&x, dcoll_all_reduce_multi(g, b, nb, COUNT, x.dt,
                                                    DCOLL_SUM, NULL,
                                                    async ? &w : NULL),
                         &w, "all_reduce_multi");
                    CHECK(t_get(b[nb - 1], x.dt, 0) ==
                              val((me * nb) + nb - 1, 0, DCOLL_SUM),
                          "%s: a non-member's buffer changed", x.what);
                    bufs_free(b, nb);
                    continue;
                }
                broadcast(&x);
                all_gather(&x);
                for (int op = 0; op < DCOLL_OP_COUNT_; op++) {
                    if (op >= DCOLL_BAND && t_is_float(x.dt))
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
    if (g)
        CHECK_OK(dcoll_group_destroy(&g));
}


static void refused(void)
{
    float a[4], b[4];
    void *two[2] = {a, b}, *holed[2] = {a, NULL};
    dcoll_status_t bad = DCOLL_ERR_INVALID_ARGUMENT;
    CHECK_REFUSED(dcoll_all_reduce_multi(NULL, two, 0, 4, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL),
                  bad, "nbufs 0");
    CHECK_REFUSED(dcoll_all_reduce_multi(NULL, NULL, 2, 4, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL),
                  bad, "bufs is NULL with nbufs 2");
    CHECK_REFUSED(dcoll_all_reduce_multi(NULL, holed, 2, 4, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL),
                  bad, "bufs[1] is NULL with count 4");
    CHECK_REFUSED(dcoll_all_reduce_multi(NULL, two, 2, 4, DCOLL_FLOAT32,
                                         DCOLL_BAND, NULL, NULL),
                  bad, "BAND");
    CHECK_REFUSED(dcoll_broadcast_multi(NULL, two, 2, 4, DCOLL_FLOAT32, 0, 2,
                                        NULL, NULL),
                  bad, "root_buf 2 is not a buffer index");
    CHECK_REFUSED(dcoll_reduce_multi(NULL, two, 2, 4, DCOLL_FLOAT32,
                                     DCOLL_SUM, world_size, 0, NULL, NULL),
                  bad, "root");
    CHECK_OK(dcoll_barrier(NULL, NULL, NULL));
}

int main(void)
{
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &world_size);
    for (int which = 0; which < T_NGROUPS; which++)
        on_group(which);
    refused();
    int rc = t_finish("multi");
    dcoll_finalize();
    return rc;
}
