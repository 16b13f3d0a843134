/* Every collective's result, for every type and op, on the world and on
 * sub-groups with gaps and non-members: blocking, async (wait and test)
 * and in place. Run under mpirun with 1 to 4 ranks, or with --sizes on
 * the worlds of sizes.h inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;
static int job_size;

/* What rank g contributes at index i: small, so sums and products of four
 * ranks are exact in every type, bfloat16 and int8 included. */
static double val(int g, size_t i)
{
    return 1 + (double)((g + (int)i) % 3);
}

static double fold(dcoll_op_t op, const int *m, int n, size_t i, int is_f)
{
    double acc = val(m[0], i);
    for (int k = 1; k < n; k++)
        acc = t_combine(op, acc, val(m[k], i));
    return t_average(op, acc, n, is_f);
}

static int close_to(double got, double want, dcoll_dtype_t dt)
{
    double tol = dt == DCOLL_FLOAT16 || dt == DCOLL_BFLOAT16 ? 1e-2
                 : dt == DCOLL_FLOAT32 ? 1e-6 : dt == DCOLL_FLOAT64 ? 1e-12 : 0;
    return fabs(got - want) <= tol * fabs(want);
}

/* How an operation is finished: blocking, async + wait, async + test. */
enum mode { BLOCK, WAIT, TEST, NMODES };
static const char *const mode_names[] = {"blocking", "wait", "test"};

static dcoll_work_t *w_;
#define WORKP(mode) ((mode) == BLOCK ? NULL : &w_)

static void finish(enum mode mode, dcoll_status_t st, const char *what)
{
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    if (mode == BLOCK || st)
        return;
    CHECK(w_ != NULL, "%s: no work handle", what);
    if (!w_)
        return;
    if (mode == WAIT) {
        CHECK_OK(dcoll_work_wait(w_));
    } else {
        int done = 0;
        while (!done && dcoll_work_test(w_, &done) == DCOLL_SUCCESS)
            ;
        CHECK(done, "%s: test never said done: %s", what, dcoll_last_error());
    }
    CHECK_OK(dcoll_work_free(&w_));
    CHECK(w_ == NULL, "work_free did not clear the handle");
}

struct grp {
    dcoll_group_t *g;
    int m[64];      /* world ranks of the members, sorted */
    int n;          /* members */
    int me;         /* this process's group rank, or -1 */
    const char *name;
};

static const double SENTINEL = 99;

static void fill(void *b, dcoll_dtype_t dt, size_t n, double v)
{
    for (size_t i = 0; i < n; i++)
        t_set(b, dt, i, v);
}

static int untouched(const void *b, dcoll_dtype_t dt, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t_get(b, dt, i) != SENTINEL)
            return 0;
    return 1;
}

static void test_reductions(struct grp *G, dcoll_dtype_t dt, dcoll_op_t op,
                            int64_t count, enum mode mode, int inplace)
{
    size_t es = t_size(dt), n = (size_t)count, gs = G->n ? (size_t)G->n : 1;
    int me_world = t_rank, member = G->me >= 0, isf = t_is_float(dt);
    unsigned char *s = malloc(es * n * gs + 1), *r = malloc(es * n * gs + 1);
    char what[200];
    snprintf(what, sizeof(what), "%s %s %s n=%lld %s%s", G->name,
             t_dtype_names[dt], t_op_names[op], (long long)count,
             mode_names[mode], inplace ? " in-place" : "");

    /* all_reduce */
    for (size_t i = 0; i < n; i++)
        t_set(s, dt, i, val(me_world, i));
    fill(r, dt, n, SENTINEL);
    dcoll_status_t st = dcoll_all_reduce(G->g, s, inplace ? s : r, count, dt,
                                         op, NULL, WORKP(mode));
    finish(mode, st, what);
    unsigned char *out = inplace ? s : r;
    for (size_t i = 0; i < n && member; i++) {
        double want = fold(op, G->m, G->n, i, isf), got = t_get(out, dt, i);
        CHECK(close_to(got, want, dt), "all_reduce %s: [%zu] = %g, want %g",
              what, i, got, want);
    }
    if (!member && !inplace)
        CHECK(untouched(r, dt, n), "all_reduce %s: non-member buffer "
              "written", what);

    /* reduce, to every root */
    for (int k = 0; k < (G->n ? G->n : 1); k++) {
        int root = G->n ? G->m[k] : 0, at_root = root == me_world && member;
        for (size_t i = 0; i < n; i++)
            t_set(s, dt, i, val(me_world, i));
        fill(r, dt, n, SENTINEL);
        void *rb = inplace ? (void *)s : (at_root || k % 2 ? r : NULL);
        st = dcoll_reduce(G->g, s, rb, count, dt, op, root, NULL,
                          WORKP(mode));
        finish(mode, st, what);
        out = inplace ? s : r;
        for (size_t i = 0; i < n && at_root; i++) {
            double want = fold(op, G->m, G->n, i, isf), got = t_get(out, dt, i);
            CHECK(close_to(got, want, dt), "reduce root %d %s: [%zu] = %g, "
                  "want %g", root, what, i, got, want);
        }
        if (!at_root && !inplace)
            CHECK(untouched(r, dt, n), "reduce %s: recvbuf written off root",
                  what);
    }

    /* reduce_scatter: element j of the whole buffer is val(rank, j) */
    for (size_t j = 0; j < n * gs; j++)
        t_set(s, dt, j, val(me_world, j));
    fill(r, dt, n, SENTINEL);
    void *rs = inplace && member ? s + es * n * (size_t)G->me : (void *)r;
    st = dcoll_reduce_scatter(G->g, s, rs, count, dt, op, NULL, WORKP(mode));
    finish(mode, st, what);
    for (size_t i = 0; i < n && member; i++) {
        size_t j = (size_t)G->me * n + i;
        double want = fold(op, G->m, G->n, j, isf), got = t_get(rs, dt, i);
        CHECK(close_to(got, want, dt), "reduce_scatter %s: [%zu] = %g, want "
              "%g", what, i, got, want);
    }
    free(s);
    free(r);
}

/* Value rank g sends to group rank j at index i, in all_to_all/scatter. */
static double val2(int g, int j, size_t i)
{
    return (double)((g * 7 + j * 3 + (int)i) % 11);
}

static void test_moves(struct grp *G, dcoll_dtype_t dt, int64_t count,
                       enum mode mode, int inplace)
{
    size_t es = t_size(dt), n = (size_t)count, gs = G->n ? (size_t)G->n : 1;
    int me = t_rank, member = G->me >= 0;
    unsigned char *s = malloc(es * n * gs + 1), *r = malloc(es * n * gs + 1);
    char what[200];
    dcoll_status_t st;
    snprintf(what, sizeof(what), "%s %s n=%lld %s%s", G->name,
             t_dtype_names[dt], (long long)count, mode_names[mode],
             inplace ? " in-place" : "");

    for (int k = 0; k < (G->n ? G->n : 1); k++) {
        int root = G->n ? G->m[k] : 0, at_root = root == me && member;
        /* broadcast */
        for (size_t i = 0; i < n; i++)
            t_set(r, dt, i, at_root ? val(root, i) : SENTINEL);
        st = dcoll_broadcast(G->g, r, count, dt, root, NULL, WORKP(mode));
        finish(mode, st, what);
        for (size_t i = 0; i < n && member; i++)
            CHECK(t_get(r, dt, i) == val(root, i), "broadcast from %d %s: "
                  "[%zu] = %g", root, what, i, t_get(r, dt, i));
        if (!member)
            CHECK(untouched(r, dt, n), "broadcast %s: non-member written",
                  what);

        /* gather: recvbuf on the root only */
        fill(r, dt, n * gs, SENTINEL);
        void *sb = s;
        if (inplace && at_root)
            sb = r + es * n * (size_t)G->me;
        for (size_t i = 0; i < n; i++)
            t_set(sb, dt, i, val(me, i));
        st = dcoll_gather(G->g, sb, at_root ? r : NULL, count, dt, root, NULL,
                          WORKP(mode));
        finish(mode, st, what);
        for (int q = 0; q < G->n && at_root; q++)
            for (size_t i = 0; i < n; i++)
                CHECK(t_get(r, dt, q * n + i) == val(G->m[q], i),
                      "gather to %d %s: block %d [%zu] = %g", root, what, q,
                      i, t_get(r, dt, q * n + i));

        /* scatter: sendbuf on the root only */
        fill(r, dt, n, SENTINEL);
        if (at_root)
            for (int q = 0; q < G->n; q++)
                for (size_t i = 0; i < n; i++)
                    t_set(s, dt, q * n + i, val2(root, q, i));
        void *rb = inplace && at_root ? s + es * n * (size_t)G->me
                                      : (void *)r;
        st = dcoll_scatter(G->g, at_root ? s : NULL, rb, count, dt, root,
                           NULL, WORKP(mode));
        finish(mode, st, what);
        for (size_t i = 0; i < n && member; i++)
            CHECK(t_get(rb, dt, i) == val2(root, G->me, i), "scatter from %d "
                  "%s: [%zu] = %g", root, what, i, t_get(rb, dt, i));
    }

    /* all_gather */
    fill(r, dt, n * gs, SENTINEL);
    void *sb = inplace && member ? r + es * n * (size_t)G->me : (void *)s;
    for (size_t i = 0; i < n; i++)
        t_set(sb, dt, i, val(me, i));
    st = dcoll_all_gather(G->g, sb, r, count, dt, NULL, WORKP(mode));
    finish(mode, st, what);
    for (int q = 0; q < G->n && member; q++)
        for (size_t i = 0; i < n; i++)
            CHECK(t_get(r, dt, q * n + i) == val(G->m[q], i), "all_gather "
                  "%s: block %d [%zu] = %g", what, q, i,
                  t_get(r, dt, q * n + i));

    /* all_to_all */
    for (int q = 0; q < (int)gs; q++)
        for (size_t i = 0; i < n; i++)
            t_set(s, dt, q * n + i, val2(me, q, i));
    fill(r, dt, n * gs, SENTINEL);
    void *ab = inplace ? (void *)s : (void *)r;
    st = dcoll_all_to_all(G->g, s, ab, count, dt, NULL, WORKP(mode));
    finish(mode, st, what);
    for (int q = 0; q < G->n && member; q++)
        for (size_t i = 0; i < n; i++)
            CHECK(t_get(ab, dt, q * n + i) == val2(G->m[q], G->me, i),
                  "all_to_all %s: from %d [%zu] = %g", what, q, i,
                  t_get(ab, dt, q * n + i));
    free(s);
    free(r);
}

/* Ring exchange inside the group, then every rank to the lowest with
 * DCOLL_ANY_SOURCE, checking the reported source. */
static void test_p2p(struct grp *G, dcoll_dtype_t dt, int64_t count,
                     enum mode mode)
{
    if (G->me < 0) {
        /* Non-members have no peer: a message would be lost, so send and
         * receive are refused (collectives stay no-ops). */
        int src = -7;
        char b[8];
        CHECK(dcoll_send(G->g, b, 1, DCOLL_INT8, 0, 0, NULL, NULL) ==
                  DCOLL_ERR_INVALID_ARGUMENT &&
                  strstr(dcoll_last_error(), "not a member"),
              "send from a non-member: %s", dcoll_last_error());
        CHECK(dcoll_recv(G->g, b, 1, DCOLL_INT8, 0, 0, NULL, NULL, &src) ==
                  DCOLL_ERR_INVALID_ARGUMENT && src == -7,
              "recv on a non-member: %s", dcoll_last_error());
        return;
    }
    size_t es = t_size(dt), n = (size_t)count;
    unsigned char *s = malloc(es * n + 1), *r = malloc(es * n + 1);
    int next = G->m[(G->me + 1) % G->n], prev = G->m[(G->me + G->n - 1) % G->n];
    for (size_t i = 0; i < n; i++)
        t_set(s, dt, i, val(t_rank, i));
    fill(r, dt, n, SENTINEL);
    if (mode == BLOCK && G->n > 1) {
        int src = -1;
        if (G->me % 2 == 0) {
            CHECK_OK(dcoll_send(G->g, s, count, dt, next, 5, NULL, NULL));
            CHECK_OK(dcoll_recv(G->g, r, count, dt, prev, 5, NULL, NULL, &src));
        } else {
            CHECK_OK(dcoll_recv(G->g, r, count, dt, prev, 5, NULL, NULL, &src));
            CHECK_OK(dcoll_send(G->g, s, count, dt, next, 5, NULL, NULL));
        }
        CHECK(src == prev, "recv source %d, want %d", src, prev);
    } else if (mode != BLOCK) {
        dcoll_work_t *ws = NULL, *wr = NULL;
        CHECK_OK(dcoll_irecv(G->g, r, count, dt, prev, 6, NULL, &wr));
        CHECK_OK(dcoll_isend(G->g, s, count, dt, next, 6, NULL, &ws));
        CHECK_OK(dcoll_work_wait(ws));
        w_ = wr;
        finish(mode, DCOLL_SUCCESS, "irecv");
        CHECK_OK(dcoll_work_free(&ws));
    }
    for (size_t i = 0; i < n && (mode != BLOCK || G->n > 1); i++)
        CHECK(t_get(r, dt, i) == val(prev, i), "p2p %s from %d: [%zu] = %g",
              G->name, prev, i, t_get(r, dt, i));

    /* Any source: everyone else sends to the first member. */
    if (G->me > 0) {
        CHECK_OK(dcoll_send(G->g, s, count, dt, G->m[0], 7, NULL, NULL));
    } else {
        int seen[64] = {0};
        for (int k = 1; k < G->n; k++) {
            int src = -1;
            fill(r, dt, n, SENTINEL);
            if (mode == BLOCK) {
                CHECK_OK(dcoll_recv(G->g, r, count, dt, DCOLL_ANY_SOURCE, 7,
                                    NULL, NULL, &src));
            } else {
                dcoll_work_t *w = NULL;
                CHECK_OK(dcoll_irecv(G->g, r, count, dt, DCOLL_ANY_SOURCE, 7,
                                     NULL, &w));
                CHECK_OK(dcoll_work_wait(w));
                CHECK_OK(dcoll_work_source(w, &src));
                CHECK_OK(dcoll_work_free(&w));
            }
            CHECK(src >= 0 && src < job_size && !seen[src], "any-source "
                  "recv: source %d", src);
            if (src < 0 || src >= job_size)
                continue;
            seen[src] = 1;
            for (size_t i = 0; i < n; i++)
                CHECK(t_get(r, dt, i) == val(src, i), "any-source from %d: "
                      "[%zu] = %g", src, i, t_get(r, dt, i));
        }
    }
    free(s);
    free(r);
}

static void test_coalesced(struct grp *G, dcoll_dtype_t dt, dcoll_op_t op,
                           enum mode mode)
{
    enum { NB = 5 };
    int64_t counts[NB] = {3, 0, 1, 100, 17};
    void *bufs[NB], *outs[NB];
    size_t es = t_size(dt), gs = G->n ? (size_t)G->n : 1;
    int member = G->me >= 0;
    for (int b = 0; b < NB; b++) {
        bufs[b] = malloc(es * (size_t)counts[b] + 1);
        outs[b] = malloc(es * (size_t)counts[b] * gs + 1);
        for (int64_t i = 0; i < counts[b]; i++)
            t_set(bufs[b], dt, (size_t)i, val(t_rank, (size_t)(i + b)));
        fill(outs[b], dt, (size_t)counts[b] * gs, SENTINEL);
    }
    dcoll_status_t st = dcoll_all_gather_coalesced(
        G->g, (const void *const *)bufs, outs, counts, NB, dt, NULL,
        WORKP(mode));
    finish(mode, st, "all_gather_coalesced");
    st = dcoll_all_reduce_coalesced(G->g, bufs, counts, NB, dt, op, NULL,
                                    WORKP(mode));
    finish(mode, st, "all_reduce_coalesced");
    for (int b = 0; b < NB && member; b++) {
        for (int64_t i = 0; i < counts[b]; i++) {
            size_t j = (size_t)(i + b);
            double want = fold(op, G->m, G->n, j, t_is_float(dt));
            double got = t_get(bufs[b], dt, (size_t)i);
            CHECK(close_to(got, want, dt), "all_reduce_coalesced %s %s %s "
                  "buf %d [%lld] = %g, want %g", G->name, t_dtype_names[dt],
                  t_op_names[op], b, (long long)i, got, want);
            for (int q = 0; q < G->n; q++) {
                double g2 = t_get(outs[b], dt, (size_t)(q * counts[b] + i));
                CHECK(g2 == val(G->m[q], j), "all_gather_coalesced %s buf %d "
                      "block %d [%lld] = %g", G->name, b, q, (long long)i, g2);
            }
        }
    }
    for (int b = 0; b < NB; b++) {
        free(bufs[b]);
        free(outs[b]);
    }
}

static void test_queries(struct grp *G)
{
    int rank = -9, size = -9, x = -9;
    CHECK_OK(dcoll_group_rank(G->g, &rank));
    CHECK_OK(dcoll_group_size(G->g, &size));
    if (G->me < 0) {
        CHECK(rank == DCOLL_NON_MEMBER && size == DCOLL_NON_MEMBER,
              "%s non-member: rank %d size %d", G->name, rank, size);
        CHECK(dcoll_group_global_rank(G->g, 0, &x) ==
              DCOLL_ERR_INVALID_ARGUMENT, "non-member has a rank mapping");
        return;
    }
    CHECK(rank == G->me && size == G->n, "%s: rank %d size %d, want %d %d",
          G->name, rank, size, G->me, G->n);
    for (int k = 0; k < G->n; k++) {
        CHECK_OK(dcoll_group_global_rank(G->g, k, &x));
        CHECK(x == G->m[k], "%s: global of %d = %d, want %d", G->name, k, x,
              G->m[k]);
        CHECK_OK(dcoll_group_group_rank(G->g, G->m[k], &x));
        CHECK(x == k, "%s: group rank of %d = %d, want %d", G->name, G->m[k],
              x, k);
    }
    /* The group's own communicator: same ranks, same order, usable. */
    MPI_Comm comm = MPI_COMM_NULL;
    int mrank = -9, msize = -9, one = 1, sum = 0;
    CHECK_OK(dcoll_group_mpi_comm(G->g, &comm));
    if (comm == MPI_COMM_NULL)
        return;
    MPI_Comm_rank(comm, &mrank);
    MPI_Comm_size(comm, &msize);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(mrank == G->me && msize == G->n && sum == G->n,
          "%s: its MPI communicator has rank %d size %d sum %d", G->name,
          mrank, msize, sum);
}

static void run_group(struct grp *G)
{
    static const int64_t counts[] = {0, 3, 257};
    test_queries(G);
    for (int dt = 0; dt < T_NUMERIC; dt++) {
        /* The logical ops, bool, logical, complex: test_mpitypes.c. */
        for (int op = 0; op < DCOLL_LAND; op++) {
            if (!t_op_ok((dcoll_dtype_t)dt, (dcoll_op_t)op))
                continue; /* refused: test_errors checks that */
            for (size_t c = 0; c < 3; c++)
                for (int mode = 0; mode < NMODES; mode++)
                    for (int ip = 0; ip < 2; ip++)
                        if (c > 0 || (mode == BLOCK && !ip))
                            test_reductions(G, dt, op, counts[c], mode, ip);
            test_coalesced(G, dt, op, op % 2 ? WAIT : BLOCK);
        }
        for (size_t c = 0; c < 3; c++)
            for (int mode = 0; mode < NMODES; mode++) {
                for (int ip = 0; ip < 2; ip++)
                    test_moves(G, dt, counts[c], mode, ip);
                test_p2p(G, dt, counts[c], mode);
            }
    }
    for (int mode = 0; mode < NMODES; mode++)
        finish(mode, dcoll_barrier(G->g, NULL, WORKP(mode)), "barrier");
}

/* The groups of testutil.h inside the world, then the world's own
 * handle. */
static void body(void)
{
    static const char *const names[T_NGROUPS] = {
        "world", "every-other-from-top", "all-but-1", "empty"};
    for (int which = 0; which < T_NGROUPS; which++) {
        struct grp G = {.name = names[which], .me = -1};
        int ranks[64];
        int k = t_world_ranks(which, ranks);
        CHECK_OK(t_new_group(&G.g, ranks, k, NULL));
        for (int i = 0; i < k; i++)
            G.m[i] = ranks[i];
        /* members sorted ascending, as the group orders them */
        for (int i = 0; i < k; i++)
            for (int j = i + 1; j < k; j++)
                if (G.m[j] < G.m[i]) {
                    int t = G.m[i];
                    G.m[i] = G.m[j];
                    G.m[j] = t;
                }
        G.n = k;
        for (int i = 0; i < k; i++)
            if (G.m[i] == t_rank)
                G.me = i;
        run_group(&G);
        CHECK_OK(dcoll_group_destroy(&G.g));
        CHECK(G.g == DCOLL_GROUP_NULL, "destroy did not clear the handle");
    }
    /* The world's handle too: the job's as NULL gave it and as the
     * handle itself; a smaller world's, in its own rank order. */
    struct grp W = {.name = "world-handle", .n = t_w.n, .me = t_w.me,
                    .g = T_WORLD};
    if (t_w.whole)
        CHECK_OK(dcoll_group_world(&W.g));
    for (int i = 0; i < t_w.n; i++)
        W.m[i] = t_w.r[i];
    test_queries(&W);
    test_reductions(&W, DCOLL_FLOAT32, DCOLL_SUM, 5, WAIT, 0);
    test_moves(&W, DCOLL_INT32, 5, BLOCK, 0);
}

int main(int argc, char **argv)
{
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &job_size);
    t_sizes(argc, argv, body);
    int rc = t_finish("test_collectives");
    if (dcoll_finalize() != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_finalize: %s\n", dcoll_last_error());
        rc = 1;
    }
    return rc;
}
