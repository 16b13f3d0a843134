/* The IPC transport (lib/gpu/ipc/) on the CUDA double, every rank on one
 * GPU (FAKE_SHARED_UUID=1), a small scratch so that calls go in chunks:
 *   all    every kind of a row, every type and op, in rank order bit for
 *          bit against the same call on host buffers (AVG, which divides
 *          on the host: on GPU buffers of a group that stages, backend
 *          "mpi"); then async calls waited out of order,
 *          a released work, a plan, MPI's in-place forms, another stream,
 *          and a call on a stream being captured (refused);
 *   hier   the same on two GPUs of two ranks each (FAKE_UUID_MAP=0,0,1,1):
 *          all_reduce and broadcast go over IPC within each GPU and the
 *          NCCL double among the leaders (ranks 0 and 2), which alone
 *          make NCCL calls (with DCOLL_IPC_TEST_LEADERS=mpi, as where
 *          NCCL is missing, the leaders stage over MPI and none does);
 *          the other kinds stage;
 *          plans of every kind on inputs read where they are (zero
 *          copy: peers' buffers mapped once, then found in the cache);
 *   stale  a plan's input freed and allocated again, larger, at the same
 *          address: the peer maps the new allocation, not the stale one;
 *   race   with DCOLL_IPC_TEST_SKIP=ready (no ready handshake) and one
 *          rank late, results must come out wrong: proof that the double
 *          sees a missing handshake (the test fails if all are right).
 * Values are small integers, exact in every type, so any order of the
 * same inputs gives the same bits.
 *   mpirun -n 2|4 test_ipc [all|hier|stale|race] */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "cudart_double.h"
#include "testutil.h"

#define N 1100   /* past a 4-KiB chunk for every type */
int t_rank, t_failures;
static int me, n;

/* Element i of rank r's input in type dt, exact everywhere: 1 to 3 (1, 2
 * or 4 in the 16-bit floats), and pair values that tie. */
static void fill(void *buf, size_t esz, dcoll_dtype_t dt, int r, int64_t cnt,
                 int salt)
{
    unsigned char *b = buf;
    for (int64_t i = 0; i < cnt; i++) {
        int v = (int)((i * 7 + r * 3 + salt) % 3) + 1;
        unsigned char *e = b + (size_t)i * esz;
        memset(e, 0, esz);
        switch (dt) {
        case DCOLL_FLOAT16:   /* 1, 2, 4 */
            *(uint16_t *)e = (uint16_t)(0x3c00 + (v - 1) * 0x400);
            break;
        case DCOLL_BFLOAT16:
            *(uint16_t *)e = (uint16_t)(0x3f80 + (v - 1) * 0x80);
            break;
        case DCOLL_FLOAT32: *(float *)e = (float)v; break;
        case DCOLL_FLOAT64: *(double *)e = v; break;
        case DCOLL_COMPLEX64:
            ((float *)e)[0] = (float)v;
            ((float *)e)[1] = 1;
            break;
        case DCOLL_COMPLEX128:
            ((double *)e)[0] = v;
            ((double *)e)[1] = 1;
            break;
        case DCOLL_BOOL: *e = (unsigned char)(v & 1); break;
        case DCOLL_FLOAT32_INT:
            *(float *)e = (float)v;
            ((int *)e)[1] = r + v;
            break;
        case DCOLL_FLOAT64_INT: *(double *)e = v; ((int *)e)[2] = r; break;
        case DCOLL_INT32_INT: ((int *)e)[0] = v; ((int *)e)[1] = r; break;
        case DCOLL_2FLOAT32:
            ((float *)e)[0] = (float)v;
            ((float *)e)[1] = (float)r;
            break;
        case DCOLL_2FLOAT64: ((double *)e)[0] = v; ((double *)e)[1] = r; break;
        default: *e = (unsigned char)v; break;   /* integers, logical */
        }
    }
}

static void *dev(size_t bytes)
{
    void *p = NULL;
    cudaMalloc(&p, bytes ? bytes : 1);
    return p;
}

static void *host(const void *d, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
    return h;
}

/* One call of kind on g with sendbuf s, recvbuf r (root 1 % n). */
static dcoll_status_t call(dcoll_group_t *g, const char *kind, void *s,
                           void *r, int64_t cnt, dcoll_dtype_t dt,
                           dcoll_op_t op, const dcoll_coll_opts_t *o,
                           dcoll_work_t **w)
{
    int root = 1 % n;
    if (!strcmp(kind, "broadcast"))
        return dcoll_broadcast(g, r, cnt, dt, root, o, w);
    if (!strcmp(kind, "all_reduce"))
        return dcoll_all_reduce(g, s, r, cnt, dt, op, o, w);
    if (!strcmp(kind, "reduce"))
        return dcoll_reduce(g, s, r, cnt, dt, op, root, o, w);
    if (!strcmp(kind, "all_gather"))
        return dcoll_all_gather(g, s, r, cnt, dt, o, w);
    if (!strcmp(kind, "gather"))
        return dcoll_gather(g, s, r, cnt, dt, root, o, w);
    if (!strcmp(kind, "scatter"))
        return dcoll_scatter(g, s, r, cnt, dt, root, o, w);
    if (!strcmp(kind, "reduce_scatter"))
        return dcoll_reduce_scatter(g, s, r, cnt, dt, op, o, w);
    return dcoll_all_to_all(g, s, r, cnt, dt, o, w);
}

/* Input and output elements of kind for this rank, cnt a block. */
static void extent(const char *kind, int64_t cnt, int64_t *in,
                   int64_t *out)
{
    bool wide_in = !strcmp(kind, "scatter") ||
                   !strcmp(kind, "reduce_scatter") ||
                   !strcmp(kind, "all_to_all");
    bool wide_out = !strcmp(kind, "all_gather") || !strcmp(kind, "gather") ||
                    !strcmp(kind, "all_to_all");
    *in = wide_in ? cnt * n : cnt;
    *out = wide_out ? cnt * n : cnt;
}

/* Equal values: a float64int's padding (bytes 12-15) is no value, and
 * MPI's pair type leaves it alone where IPC copies it. */
static bool same(const char *a, const char *b, size_t bytes,
                 dcoll_dtype_t dt)
{
    if (dt != DCOLL_FLOAT64_INT)
        return !memcmp(a, b, bytes);
    for (size_t i = 0; i < bytes; i += 16)
        if (memcmp(a + i, b + i, 12))
            return false;
    return true;
}

/* kind on dt and op three ways; whether it is a pair dcoll takes. */
static bool compare(dcoll_group_t *ipc, dcoll_group_t *staged,
                    const char *kind, dcoll_dtype_t dt, dcoll_op_t op)
{
    size_t esz;
    /* Only what dcoll takes: a refusal would leave the world unusable. */
    if (strstr(kind, "reduce") ? !t_op_ok(dt, op)
                               : dt >= DCOLL_FLOAT32_INT &&
                                     dt != DCOLL_FLOAT64_INT)
        return false;
    dcoll_dtype_size(dt, &esz);
    int64_t in, out;
    extent(kind, N, &in, &out);
    size_t ib = (size_t)in * esz, ob = (size_t)out * esz;
    char *hs = malloc(ib), *hr = calloc(1, ob);
    fill(hs, esz, dt, me, in, 0);
    bool bcast = !strcmp(kind, "broadcast");
    if (bcast)
        memcpy(hr, hs, ob);
    /* The host's answer; for AVG, which divides the sum on the host and
     * premultiplies on the GPU, staging's. */
    bool avg = op == DCOLL_AVG;
    if (!avg)
        CHECK_OK(call(NULL, kind, hs, hr, N, dt, op, NULL, NULL));
    char *res[2] = {NULL, NULL};
    dcoll_group_t *gs[2] = {ipc, staged};
    for (int w = 0; w < (avg ? 2 : 1); w++) {
        char *ds = dev(ib), *dr = dev(ob), *ini = calloc(1, ob);
        cudaMemcpy(ds, hs, ib, cudaMemcpyHostToDevice);
        if (bcast)
            fill(ini, esz, dt, me, out, 0);
        cudaMemcpy(dr, ini, ob, cudaMemcpyHostToDevice);
        CHECK_OK(call(gs[w], kind, ds, dr, N, dt, op, NULL, NULL));
        res[w] = host(dr, ob);
        cudaFree(ds);
        cudaFree(dr);
        free(ini);
    }
    /* What a rank's output holds: reduce and gather only at the root. */
    bool rooted = !strcmp(kind, "reduce") || !strcmp(kind, "gather");
    if (!rooted || me == 1 % n) {
        CHECK(same(res[0], avg ? res[1] : hr, ob, dt), "%s of type %d op "
              "%d: the IPC transport's bits differ from %s", kind, dt, op,
              avg ? "staging's" : "the host's");
    }
    free(res[0]);
    free(res[1]);
    free(hs);
    free(hr);
    return true;
}

/* A group of every rank; !ipc: backend "mpi", whose GPU calls stage. */
static dcoll_group_t *group(bool ipc)
{
    dcoll_group_t *g = NULL;
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = ipc ? 0 : DCOLL_GROUP_PARAM_BACKEND;
    gp.backend = "mpi";
    CHECK_OK(dcoll_new_group(&g, NULL, 0, &gp));
    float *d = dev(sizeof(float));
    CHECK_OK(dcoll_all_reduce(g, d, d, 1, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL));
    cudaFree(d);
    return g;
}

/* Async calls waited in the reverse order, one released unwaited, a
 * plan started three times, the in-place forms, a stream of its own. */
static void forms(dcoll_group_t *g)
{
    /* Several chunks each: a call's chunks are numbered as they run,
     * behind the calls queued before it. */
    enum { K = 4, M = 5000 };
    float *d[K];
    dcoll_work_t *w[K];
    for (int j = 0; j < K; j++) {
        float *h = malloc(sizeof(float) * M);
        for (int i = 0; i < M; i++)
            h[i] = (float)(me + j + i % 5);
        d[j] = dev(sizeof(float) * M);
        cudaMemcpy(d[j], h, sizeof(float) * M, cudaMemcpyHostToDevice);
        free(h);
        CHECK_OK(dcoll_all_reduce(g, d[j], d[j], M, DCOLL_FLOAT32, DCOLL_SUM,
                                  NULL, &w[j]));
    }
    dcoll_work_free(&w[1]);   /* still runs: the others count on it */
    for (int j = K - 1; j >= 0; j--)
        if (j != 1)
            CHECK_OK(dcoll_work_wait(w[j]));
    cudaDeviceSynchronize();
    for (int j = 0; j < K; j++) {
        float *h = host(d[j], sizeof(float) * M);
        for (int i = 0; i < M; i++) {
            float want = (float)(n * (n - 1) / 2 + n * (j + i % 5));
            CHECK(h[i] == want, "async all_reduce %d [%d]: %g, want %g", j,
                  i, h[i], want);
            if (h[i] != want)
                break;
        }
        free(h);
        if (j != 1)
            dcoll_work_free(&w[j]);
    }
    dcoll_plan_t *p = NULL;
    CHECK_OK(dcoll_all_reduce_plan(g, d[0], d[1], N, DCOLL_FLOAT32,
                                   DCOLL_MAX, NULL, &p));
    for (int s = 0; s < 3; s++) {
        float *h = malloc(sizeof(float) * N);
        for (int i = 0; i < N; i++)
            h[i] = (float)(me * 10 + s + i % 3);
        cudaMemcpy(d[0], h, sizeof(float) * N, cudaMemcpyHostToDevice);
        CHECK_OK(dcoll_plan_start(p, NULL));
        cudaMemcpy(h, d[1], sizeof(float) * N, cudaMemcpyDeviceToHost);
        for (int i = 0; i < N; i++)
            CHECK(h[i] == (float)((n - 1) * 10 + s + i % 3),
                  "plan start %d [%d]: %g", s, i, h[i]);
        free(h);
    }
    dcoll_plan_free(&p);
    /* all_gather in place both ways, on a stream of its own. */
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = st;
    int *ag = dev(sizeof(int) * N * (size_t)n);
    int *hi = calloc((size_t)N * (size_t)n, sizeof(int));
    for (int i = 0; i < N; i++)
        hi[(size_t)me * N + (size_t)i] = me * 1000 + i;
    cudaMemcpy(ag, hi, sizeof(int) * N * (size_t)n, cudaMemcpyHostToDevice);
    /* A pageable copy may land after it returns, ordered on the legacy
     * stream only, which st does not wait for. */
    cudaDeviceSynchronize();
    CHECK_OK(dcoll_all_gather(g, ag, ag, N, DCOLL_INT32, &o, NULL));
    CHECK_OK(dcoll_all_gather(g, ag + (size_t)me * N, ag, N, DCOLL_INT32, &o,
                              NULL));
    cudaMemcpy(hi, ag, sizeof(int) * N * (size_t)n, cudaMemcpyDeviceToHost);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < N; i++)
            CHECK(hi[(size_t)r * N + (size_t)i] == r * 1000 + i,
                  "all_gather in place [%d][%d]: %d", r, i,
                  hi[(size_t)r * N + (size_t)i]);
    free(hi);
    cudaFree(ag);
    cudaStreamDestroy(st);
    for (int j = 0; j < K; j++)
        cudaFree(d[j]);
}

/* Every kind planned on inputs large enough to be read where they are
 * (zero copy), against the same call made blocking (through scratch):
 * the first start maps the peers' buffers, later starts find them in
 * the import cache; an in-place plan goes through scratch. */
static void planned(dcoll_group_t *g, bool flat)
{
    enum { C = 20000 };   /* 80 KB of int32: past IPC_IN_PLACE_LEAST */
    static const char *const kinds[] = {
        "broadcast", "all_reduce", "reduce", "all_gather", "gather",
        "scatter", "reduce_scatter", "all_to_all"};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
        const char *kind = kinds[k];
        int64_t in, out;
        extent(kind, C, &in, &out);
        size_t ib = sizeof(int) * (size_t)in, ob = sizeof(int) * (size_t)out;
        int *hs = malloc(ib);
        int *ds = dev(ib), *dr = dev(ob), *dw = dev(ob);
        char *want = NULL, *got = NULL;
        dcoll_plan_t *p = NULL;
        int root = 1 % n;
        dcoll_op_t op = DCOLL_SUM;
        if (!strcmp(kind, "broadcast"))
            CHECK_OK(dcoll_broadcast_plan(g, dr, C, DCOLL_INT32, root, NULL,
                                          &p));
        else if (!strcmp(kind, "all_reduce"))
            CHECK_OK(dcoll_all_reduce_plan(g, ds, dr, C, DCOLL_INT32, op,
                                           NULL, &p));
        else if (!strcmp(kind, "reduce"))
            CHECK_OK(dcoll_reduce_plan(g, ds, dr, C, DCOLL_INT32, op, root,
                                       NULL, &p));
        else if (!strcmp(kind, "all_gather"))
            CHECK_OK(dcoll_all_gather_plan(g, ds, dr, C, DCOLL_INT32, NULL,
                                           &p));
        else if (!strcmp(kind, "gather"))
            CHECK_OK(dcoll_gather_plan(g, ds, dr, C, DCOLL_INT32, root, NULL,
                                       &p));
        else if (!strcmp(kind, "scatter"))
            CHECK_OK(dcoll_scatter_plan(g, ds, dr, C, DCOLL_INT32, root, NULL,
                                        &p));
        else if (!strcmp(kind, "reduce_scatter"))
            CHECK_OK(dcoll_reduce_scatter_plan(g, ds, dr, C, DCOLL_INT32, op,
                                               NULL, &p));
        else
            CHECK_OK(dcoll_all_to_all_plan(g, ds, dr, C, DCOLL_INT32, NULL,
                                           &p));
        long opened = fake_cuda_ipc_opens(), first = 0;
        for (int s = 0; s < 3 && p; s++) {
            for (size_t i = 0; i < ib / sizeof(int); i++)
                hs[i] = (int)((size_t)me * 7 + i % 11) + s;
            cudaMemcpy(ds, hs, ib, cudaMemcpyHostToDevice);
            cudaMemcpy(dr, hs, ib < ob ? ib : ob, cudaMemcpyHostToDevice);
            cudaMemcpy(dw, hs, ib < ob ? ib : ob, cudaMemcpyHostToDevice);
            CHECK_OK(call(g, kind, ds, dw, C, DCOLL_INT32, op, NULL, NULL));
            CHECK_OK(dcoll_plan_start(p, NULL));
            want = host(dw, ob);
            got = host(dr, ob);
            bool rooted = !strcmp(kind, "reduce") || !strcmp(kind, "gather");
            CHECK((rooted && me != root) || !memcmp(want, got, ob),
                  "%s planned on %zu bytes, start %d: not the blocking "
                  "call's result", kind, ib, s);
            free(want);
            free(got);
            if (s == 0)
                first = fake_cuda_ipc_opens() - opened;
        }
        /* Where this rank reads others' inputs, it mapped them once. */
        bool reads = !((!strcmp(kind, "broadcast") ||
                        !strcmp(kind, "scatter")) && me == root) &&
                     !(!strcmp(kind, "reduce") && me != root) &&
                     !(!strcmp(kind, "gather") && me != root);
        CHECK(!flat || !reads ||
                  (first > 0 && fake_cuda_ipc_opens() - opened == first),
              "%s planned: %ld buffers mapped at the first start, %ld in "
              "all; want some, then none (zero copy, the cache)", kind,
              first, fake_cuda_ipc_opens() - opened);
        dcoll_plan_free(&p);
        cudaFree(ds);
        cudaFree(dr);
        cudaFree(dw);
        free(hs);
    }
    /* In place: each rank writes what the others read, so scratch. */
    int *d = dev(sizeof(int) * C), *h = malloc(sizeof(int) * C);
    dcoll_plan_t *p = NULL;
    CHECK_OK(dcoll_all_reduce_plan(g, d, d, C, DCOLL_INT32, DCOLL_SUM, NULL,
                                   &p));
    for (int i = 0; i < C; i++)
        h[i] = me + i;
    cudaMemcpy(d, h, sizeof(int) * C, cudaMemcpyHostToDevice);
    CHECK_OK(dcoll_plan_start(p, NULL));
    cudaMemcpy(h, d, sizeof(int) * C, cudaMemcpyDeviceToHost);
    for (int i = 0; i < C; i++)
        if (h[i] != n * (n - 1) / 2 + n * i) {
            CHECK(0, "in-place plan [%d]: %d", i, h[i]);
            break;
        }
    dcoll_plan_free(&p);
    cudaFree(d);
    free(h);
}

/* A plan kept while rank 0 frees its input and allocates a larger one at
 * the same address, planned again: the new allocation's handle differs,
 * so the peer's cache drops its stale mapping (which covers the old size
 * only) and maps the new one. */
static void stale(dcoll_group_t *g)
{
    enum { C = 20000 };
    /* x last: freed, its block joins the free end, where y goes. */
    int *r = dev(sizeof(int) * 2 * C), *x = dev(sizeof(int) * C);
    int *h = malloc(sizeof(int) * 2 * C);
    dcoll_plan_t *p1 = NULL, *p2 = NULL;
    for (int i = 0; i < 2 * C; i++)
        h[i] = me + i;
    cudaMemcpy(x, h, sizeof(int) * C, cudaMemcpyHostToDevice);
    CHECK_OK(dcoll_all_reduce_plan(g, x, r, C, DCOLL_INT32, DCOLL_SUM, NULL,
                                   &p1));
    CHECK_OK(dcoll_plan_start(p1, NULL));
    long opened = fake_cuda_ipc_opens();
    uintptr_t was = (uintptr_t)x;
    cudaFree(x);
    int *y = dev(sizeof(int) * 2 * C);
    int moved = (uintptr_t)y != was;
    MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(!moved, "the double gave the new buffer another address: the "
          "test needs the old one");
    cudaMemcpy(y, h, sizeof(int) * 2 * C, cudaMemcpyHostToDevice);
    CHECK_OK(dcoll_all_reduce_plan(g, y, r, 2 * C, DCOLL_INT32, DCOLL_SUM,
                                   NULL, &p2));
    CHECK_OK(dcoll_plan_start(p2, NULL));
    cudaMemcpy(h, r, sizeof(int) * 2 * C, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 2 * C; i++)
        if (h[i] != n * (n - 1) / 2 + n * i) {
            CHECK(0, "after the reallocation [%d]: %d, want %d", i, h[i],
                  n * (n - 1) / 2 + n * i);
            break;
        }
    CHECK(fake_cuda_ipc_opens() - opened == 1, "the new buffer mapped %ld "
          "times, want once", fake_cuda_ipc_opens() - opened);
    dcoll_plan_free(&p1);
    dcoll_plan_free(&p2);
    cudaFree(y);
    cudaFree(r);
    free(h);
}

/* A call on a stream being captured into a graph: the handshakes run on
 * the host, so it fails with a status that says so (and the group with
 * it), never captured half. */
static void capture(void)
{
    dcoll_group_t *g = group(true);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    float *d = dev(sizeof(float) * N);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = st;
    cudaGraph_t graph = NULL;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed) ==
              cudaSuccess, "begin capture");
    dcoll_status_t rc = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, &o, NULL);
    CHECK(rc == DCOLL_ERR_INTERNAL &&
              strstr(dcoll_last_error(), "captured into a graph"),
          "a call on a capturing stream: %s (%s)", dcoll_status_string(rc),
          dcoll_last_error());
    cudaStreamEndCapture(st, &graph);
    if (graph)
        cudaGraphDestroy(graph);
    cudaFree(d);
    cudaStreamDestroy(st);
    dcoll_group_destroy(&g);
}

/* No ready handshake, rank 0 late: the others read its scratch before
 * its input is there. */
static void race(dcoll_group_t *g)
{
    int wrong = 0;
    for (int s = 0; s < 10; s++) {
        int *h = malloc(sizeof(int) * N), *d = dev(sizeof(int) * N);
        for (int i = 0; i < N; i++)
            h[i] = s * 100 + me;
        cudaMemcpy(d, h, sizeof(int) * N, cudaMemcpyHostToDevice);
        if (me == 0)
            usleep(50000);
        CHECK_OK(dcoll_all_reduce(g, d, d, N, DCOLL_INT32, DCOLL_SUM, NULL,
                                  NULL));
        cudaMemcpy(h, d, sizeof(int) * N, cudaMemcpyDeviceToHost);
        for (int i = 0; i < N; i++)
            wrong += h[i] != s * 100 * n + n * (n - 1) / 2;
        free(h);
        cudaFree(d);
    }
    int any = wrong;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(any > 0, "every result right without the ready handshake: the "
          "double did not see the missing synchronization");
    if (me == 0)
        printf("race: %d wrong elements on all ranks\n", any);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    int have = 0;
    if (cudaGetDeviceCount(&have) != cudaSuccess || !have) {
        printf("no GPU\n");
        return 77;
    }
    cudaSetDevice(0);
    MPI_Init(&argc, &argv);
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_rank(NULL, &me);
    dcoll_group_size(NULL, &n);
    t_rank = me;
    bool hier = !strcmp(mode, "hier");
    long opened = fake_cuda_ipc_opens();
    dcoll_group_t *ipc = group(true);
    int peers = hier ? 1 : n - 1;
    CHECK(fake_cuda_ipc_opens() - opened == peers, "the IPC group opened "
          "%ld scratches of its peers, want %d: it did not take IPC",
          fake_cuda_ipc_opens() - opened, peers);
    if (!strcmp(mode, "race")) {
        race(ipc);
    } else if (!strcmp(mode, "stale")) {
        stale(ipc);
    } else {
        dcoll_group_t *staged = group(false);
        static const char *const kinds[] = {
            "broadcast", "all_reduce", "reduce", "all_gather", "gather",
            "scatter", "reduce_scatter", "all_to_all"};
        int ran = 0;
        for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
            bool reduces = strstr(kinds[k], "reduce") != NULL;
            for (int dt = 0; dt < DCOLL_DTYPE_COUNT_; dt++)
                for (int op = 0; op < (reduces ? DCOLL_OP_COUNT_ : 1); op++)
                    ran += compare(ipc, staged, kinds[k], (dcoll_dtype_t)dt,
                                   (dcoll_op_t)op);
        }
        forms(ipc);
        planned(ipc, !hier);
        if (!hier)
            capture();
        for (int root = 0; hier && root < n; root++) {
            double *h = malloc(sizeof(double) * N);
            double *d = dev(sizeof(double) * N);
            for (int i = 0; i < N; i++)
                h[i] = me == root ? i + root * 0.5 : -1;
            cudaMemcpy(d, h, sizeof(double) * N, cudaMemcpyHostToDevice);
            CHECK_OK(dcoll_broadcast(ipc, d, N, DCOLL_FLOAT64, root, NULL,
                                     NULL));
            cudaMemcpy(h, d, sizeof(double) * N, cudaMemcpyDeviceToHost);
            for (int i = 0; i < N; i++)
                CHECK(h[i] == i + root * 0.5, "broadcast from %d [%d]: %g",
                      root, i, h[i]);
            free(h);
            cudaFree(d);
        }
        /* A team member's all_reduce never leaves the GPU: its team's
         * steps are IPC's, and only leaders stage (where they do). */
        if (hier) {
            float *d = dev(sizeof(float) * N);
            cudaMemset(d, 0, sizeof(float) * N);
            cudaDeviceSynchronize();
            long before = fake_cuda_to_host();
            CHECK_OK(dcoll_all_reduce(ipc, d, d, N, DCOLL_FLOAT32, DCOLL_SUM,
                                      NULL, NULL));
            long moved = fake_cuda_to_host() - before;
            CHECK(me % 2 == 0 || moved == 0, "a team member's all_reduce "
                  "copied to the host %ld times: it staged", moved);
            cudaFree(d);
        }
        /* NCCL on the leaders only: one rank a GPU; none where they
         * stage over MPI (DCOLL_IPC_TEST_LEADERS=mpi, as without NCCL). */
        const char *lead = getenv("DCOLL_IPC_TEST_LEADERS");
        bool leader = me % 2 == 0 && !(lead && !strcmp(lead, "mpi"));
        CHECK(!hier || (fake_nccl_calls() > 0) == leader, "rank %d made %ld "
              "NCCL calls as a %s", me, fake_nccl_calls(),
              leader ? "leader" : "team member or MPI leader");
        dcoll_group_destroy(&staged);
        if (me == 0)
            printf("ipc: %d kind, type and op combinations, bit for bit\n",
                   ran);
    }
    dcoll_group_destroy(&ipc);
    dcoll_finalize();
    MPI_Finalize();
    return T_EXIT;
}
