/* Collectives on GPU buffers (the gpu suite). Every rank uses GPU 0, so
 * with more than one rank the ranks share it, as simulations often do.
 * Results are checked on the host. Exits 77 where there is no GPU.
 *   mpirun -n N test_gpu
 * Built a second time with FAKE_DEVICE (test_staged, mpi suite): then the
 * "GPU" is test/gpu/fake_plugin.c, whose device memory no one but the
 * plugin can touch, to check the core's staging on any machine. */
#include "gpu_shim.h"
#include <mpi.h>
#include <complex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "newtypes.h"
#include "check.h"
#include "half.h"

#define N 1000
static int me, n;
int t_rank, t_failures;

#define OK(call)                                                             \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        CHECK(st_ == DCOLL_SUCCESS, "%s: %s", #call, dcoll_last_error());    \
    } while (0)

/* Host to device, and wait: from pageable memory cudaMemcpy returns before
 * the copy lands (CUDA Runtime API, "API synchronization behavior"), and
 * the calls that read it run on other streams. */
static void put(void *d, const void *h, size_t bytes)
{
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
#ifndef FAKE_DEVICE
    cudaDeviceSynchronize();
#endif
}

static float val(int r, int i) { return (float)(r + 1 + i % 7); }

/* A device buffer of m floats filled from f(rank, i), or zeros. */
static float *dev(int m, int r, int fill)
{
    float *h = malloc(sizeof(float) * (size_t)m), *d = NULL;
    for (int i = 0; i < m; i++)
        h[i] = fill ? val(r, i) : 0;
    cudaMalloc((void **)&d, sizeof(float) * (size_t)m);
    put(d, h, sizeof(float) * (size_t)m);
    free(h);
    return d;
}

static float *host(const float *d, int m)
{
    float *h = malloc(sizeof(float) * (size_t)m);
    cudaMemcpy(h, d, sizeof(float) * (size_t)m, cudaMemcpyDeviceToHost);
    return h;
}

static float sum_at(int i)
{
    float s = 0;
    for (int r = 0; r < n; r++)
        s += val(r, i);
    return s;
}

/* Plans on device buffers: the route (NCCL, or staged where NCCL
 * declines) and the options are fixed once, and each start runs again on
 * what the buffers hold then, blocking or with a work. On the CUDA
 * double a start asks CUDA nothing about its buffers (the plan did). A
 * ring of send and recv plans takes the staged path. */
static void plans(void)
{
    float *s = dev(N, me, 1), *r = dev(N, me, 0), *h;
    float *hs = malloc(sizeof(float) * N);
    dcoll_plan_t *p = NULL;
    OK(dcoll_all_reduce_plan(NULL, s, r, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                             &p));
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < N; i++)
            hs[i] = val(me, i) + (float)step;
        put(s, hs, sizeof(float) * N);
#ifdef CUDA_DOUBLE
        long asked = fake_cuda_queries();
#endif
        if (step == 1) {
            dcoll_work_t *w = NULL;
            OK(dcoll_plan_start(p, &w));
            OK(dcoll_work_wait(w));
        } else {
            OK(dcoll_plan_start(p, NULL));
        }
#ifdef CUDA_DOUBLE
        CHECK(fake_cuda_queries() == asked, "plan start %d asked CUDA %ld "
              "time(s) where its buffers are", step,
              fake_cuda_queries() - asked);
#endif
        h = host(r, N);
        for (int i = 0; i < N; i++)
            CHECK(h[i] == sum_at(i) + (float)(n * step),
                  "all_reduce plan, start %d: [%d] = %g", step, i, h[i]);
        free(h);
    }
    OK(dcoll_plan_free(&p));

    /* Send and recv plans in a ring. */
    int right = (me + 1) % n, left = (me + n - 1) % n;
    dcoll_plan_t *sp = NULL, *rp = NULL;
    OK(dcoll_send_plan(NULL, s, N, DCOLL_FLOAT32, right, 3, NULL, &sp));
    OK(dcoll_recv_plan(NULL, r, N, DCOLL_FLOAT32, left, 3, NULL, &rp));
    for (int step = 0; step < 2; step++) {
        for (int i = 0; i < N; i++)
            hs[i] = val(me, i) * (float)(step + 1);
        put(s, hs, sizeof(float) * N);
        dcoll_work_t *w[2] = {NULL, NULL};
        OK(dcoll_plan_start(rp, &w[0]));
        OK(dcoll_plan_start(sp, &w[1]));
        OK(dcoll_work_wait_all(w, 2, NULL));
        h = host(r, N);
        for (int i = 0; i < N; i++)
            CHECK(h[i] == val(left, i) * (float)(step + 1),
                  "recv plan, start %d: [%d] = %g", step, i, h[i]);
        free(h);
    }
    OK(dcoll_plan_free(&sp));
    OK(dcoll_plan_free(&rp));
    free(hs);
    cudaFree(s);
    cudaFree(r);
}

#ifndef FAKE_DEVICE
/* Starts and calls captured in a CUDA graph, on an NCCL group (the
 * staged path's MPI call on host memory cannot be captured): a plan's
 * blocking and async starts, and a blocking and an async call, each
 * queue NCCL's call in the graph and return; each launch of the graph
 * runs them all on what the send buffer holds then. */
static int nccl_there;   /* dcoll_backend_status("nccl") */

static void captured(void)
{
    const char *nccl = getenv("DCOLL_TEST_NCCL");
    const char *one = getenv("DCOLL_NCCL_ONE_GPU");
    if (!(nccl && !strcmp(nccl, "yes")) && !(one && !strcmp(one, "1")) &&
        !(n == 1 && nccl_there)) {
        if (me == 0)
            printf("capture: this group stages (no NCCL): not tried\n");
        return;
    }
    int failed = t_failures;
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) ==
          cudaSuccess, "capture: a stream");
    float *s = dev(N, me, 1), *r[3], *hs = malloc(sizeof(float) * N), *h;
    for (int k = 0; k < 3; k++)
        r[k] = dev(N, me, 0);
    dcoll_coll_opts_t o = {0};
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = st;
    dcoll_plan_t *p = NULL;
    OK(dcoll_all_reduce_plan(NULL, s, r[0], N, DCOLL_FLOAT32, DCOLL_SUM, &o,
                             &p));
    OK(dcoll_plan_start(p, NULL));   /* outside: as any start */
    h = host(r[0], N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == sum_at(i), "capture: the start before [%d] = %g", i,
              h[i]);
    free(h);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal) ==
          cudaSuccess, "capture: begin");
    OK(dcoll_plan_start(p, NULL));
    dcoll_work_t *w = NULL;
    OK(dcoll_plan_start(p, &w));
    OK(dcoll_work_wait(w));
    OK(dcoll_work_free(&w));
    OK(dcoll_all_reduce(NULL, s, r[1], N, DCOLL_FLOAT32, DCOLL_SUM, &o,
                        NULL));
    OK(dcoll_all_reduce(NULL, s, r[2], N, DCOLL_FLOAT32, DCOLL_SUM, &o, &w));
    OK(dcoll_work_wait(w));
    OK(dcoll_work_free(&w));
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    CHECK(e == cudaSuccess, "capture: end: %s", cudaGetErrorString(e));
    if (e == cudaSuccess)
        e = cudaGraphInstantiate(&exec, graph, 0);
    CHECK(e == cudaSuccess, "capture: instantiate: %s",
          cudaGetErrorString(e));
    static const char *what[3] = {"the plan's starts", "the blocking call",
                                  "the async call"};
    for (int step = 1; e == cudaSuccess && step < 4; step++) {
        for (int i = 0; i < N; i++)
            hs[i] = val(me, i) + (float)step;
        cudaMemcpyAsync(s, hs, sizeof(float) * N, cudaMemcpyHostToDevice,
                        st);
        CHECK(cudaGraphLaunch(exec, st) == cudaSuccess, "capture: launch");
        CHECK(cudaStreamSynchronize(st) == cudaSuccess, "capture: sync");
        for (int k = 0; k < 3; k++) {
            h = host(r[k], N);
            for (int i = 0; i < N; i++)
                CHECK(h[i] == sum_at(i) + (float)(n * step),
                      "capture: launch %d, %s: [%d] = %g", step, what[k], i,
                      h[i]);
            free(h);
        }
    }
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    OK(dcoll_plan_free(&p));
    free(hs);
    cudaFree(s);
    for (int k = 0; k < 3; k++)
        cudaFree(r[k]);
    cudaStreamDestroy(st);
    if (me == 0 && t_failures == failed)
        printf("capture: a plan's blocking and async starts, a blocking and "
               "an async call, 3 launches on new inputs: right\n");
}
#endif

/* Every API 1.7 type and op on device buffers (NCCL where it takes them,
 * staged where not) gives the host path's answer, which mpitypes-np*
 * holds to MPI's own calls. AVG aside: on GPU buffers it is NCCL's
 * pre-multiplied sum, on host buffers a sum divided. */
static void new_types(void)
{
    static const struct { dcoll_dtype_t t; dcoll_op_t op; } c[] = {
        {DCOLL_INT32, DCOLL_LAND},        {DCOLL_UINT8, DCOLL_LOR},
        {DCOLL_INT64, DCOLL_LXOR},        {DCOLL_BOOL, DCOLL_LAND},
        {DCOLL_BOOL, DCOLL_LOR},          {DCOLL_BOOL, DCOLL_LXOR},
        {DCOLL_LOGICAL, DCOLL_LOR},       {DCOLL_COMPLEX64, DCOLL_SUM},
        {DCOLL_COMPLEX64, DCOLL_PRODUCT}, {DCOLL_COMPLEX128, DCOLL_SUM},
        {DCOLL_COMPLEX128, DCOLL_PRODUCT},
        {DCOLL_FLOAT32_INT, DCOLL_MINLOC}, {DCOLL_FLOAT32_INT, DCOLL_MAXLOC},
        {DCOLL_FLOAT64_INT, DCOLL_MAXLOC}, {DCOLL_INT32_INT, DCOLL_MINLOC},
        {DCOLL_2FLOAT32, DCOLL_MAXLOC},   {DCOLL_2FLOAT64, DCOLL_MINLOC},
    };
    enum { M = 37 };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        size_t b = M * nt_size(c[i].t);
        char *h = calloc(1, b), *g = calloc(1, b);
        void *d = NULL;
        nt_fill(h, c[i].t, me, (int)i, M);
        cudaMalloc(&d, b);
        put(d, h, b);
        OK(dcoll_all_reduce(NULL, d, d, M, c[i].t, c[i].op, NULL, NULL));
        OK(dcoll_all_reduce(NULL, h, h, M, c[i].t, c[i].op, NULL, NULL));
        cudaMemcpy(g, d, b, cudaMemcpyDeviceToHost);
        long k = nt_differs(g, h, M, c[i].t);
        CHECK(k < 0, "type %d op %d: element %ld on the GPU is not the host "
              "path's", (int)c[i].t, (int)c[i].op, k);
        cudaFree(d);
        free(h);
        free(g);
    }
}

/* scan and exscan on device buffers (staged: NCCL has none) give the
 * host path's answer bit for bit, which scan-np* holds to MPI's own
 * calls: blocking, async and a plan's start, in place and not; exscan's
 * rank 0 keeps what its buffer held. */
/* Rank r's inputs: values that round in the floating types. */
static void prefix_fill(void *b, dcoll_dtype_t t, int r, int which, int m)
{
    for (int k = 0; k < m; k++) {
        float f = 0.1f * (float)(r + 1) + 1e-3f * (float)k + 1.0f / 3;
        switch (t) {
        case DCOLL_FLOAT32: ((float *)b)[k] = f; break;
        case DCOLL_FLOAT64: ((double *)b)[k] = (double)f / 7; break;
        case DCOLL_FLOAT16: ((uint16_t *)b)[k] = dcoll_float_to_half(f); break;
        case DCOLL_BFLOAT16:
            ((uint16_t *)b)[k] = dcoll_float_to_bf16(f);
            break;
        default: nt_fill(b, t, r, which, m); return;
        }
    }
}

static void prefixes(void)
{
    static const struct { dcoll_dtype_t t; dcoll_op_t op; } c[] = {
        {DCOLL_FLOAT32, DCOLL_SUM},   {DCOLL_FLOAT32, DCOLL_AVG},
        {DCOLL_FLOAT16, DCOLL_SUM},   {DCOLL_BFLOAT16, DCOLL_AVG},
        {DCOLL_INT64, DCOLL_PRODUCT}, {DCOLL_UINT8, DCOLL_BXOR},
        {DCOLL_BOOL, DCOLL_LOR},      {DCOLL_COMPLEX128, DCOLL_SUM},
        {DCOLL_FLOAT64, DCOLL_MAX},   {DCOLL_FLOAT32_INT, DCOLL_MINLOC},
    };
    enum { M = 41 };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        for (int ex = 0; ex < 2; ex++)
            for (int form = 0; form < 3; form++) {
                bool inplace = form == 1;
                size_t b = M * nt_size(c[i].t);
                char *hs = calloc(1, b), *hr = calloc(1, b),
                     *g = calloc(1, b);
                void *ds = NULL, *dr = NULL;
                prefix_fill(hs, c[i].t, me, (int)i, M);
                memset(hr, 0x3c, b);
                cudaMalloc(&ds, b);
                cudaMalloc(&dr, b);
                put(ds, hs, b);
                put(dr, hr, b);
                void *hout = inplace ? hs : hr, *dout = inplace ? ds : dr;
                dcoll_status_t (*call)(dcoll_group_t *, const void *, void *,
                                       int64_t, dcoll_dtype_t, dcoll_op_t,
                                       const dcoll_coll_opts_t *,
                                       dcoll_work_t **) =
                    ex ? dcoll_exscan : dcoll_scan;
                if (form == 2) {
                    dcoll_plan_t *p = NULL;
                    OK((ex ? dcoll_exscan_plan : dcoll_scan_plan)(
                        NULL, ds, dout, M, c[i].t, c[i].op, NULL, &p));
                    OK(dcoll_plan_start(p, NULL));
                    OK(dcoll_plan_free(&p));
                } else if (form == 1) {
                    dcoll_work_t *w = NULL;
                    OK(call(NULL, ds, dout, M, c[i].t, c[i].op, NULL, &w));
                    OK(dcoll_work_wait(w));
                    OK(dcoll_work_free(&w));
                } else {
                    OK(call(NULL, ds, dout, M, c[i].t, c[i].op, NULL, NULL));
                }
                OK(call(NULL, hs, hout, M, c[i].t, c[i].op, NULL, NULL));
                cudaMemcpy(g, dout, b, cudaMemcpyDeviceToHost);
                long k = memcmp(g, hout, b) ? nt_differs(g, hout, M, c[i].t)
                                            : -1;
                CHECK(k < 0 && !memcmp(g, hout, b),
                      "%s type %d op %d form %d: element %ld on the GPU is "
                      "not the host path's", ex ? "exscan" : "scan",
                      (int)c[i].t, (int)c[i].op, form, k);
                cudaFree(ds);
                cudaFree(dr);
                free(hs);
                free(hr);
                free(g);
            }
}

int main(int argc, char **argv)
{
    int ngpu = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
        if (me == 0)
            printf("no GPU here (%s): skipping\n",
                   cudaGetErrorString(cudaGetLastError()));
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(0);
    OK(dcoll_init(NULL));
    int avail;
    const char *text = "";
    dcoll_backend_status("nccl", &avail, &text);
#ifndef FAKE_DEVICE
    nccl_there = avail;
#endif
    if (me == 0)
        printf("%d rank(s) on GPU 0; %s\n", n, text);
    int chosen = -2;
    OK(dcoll_device(&chosen));
    CHECK(chosen == 0, "dcoll_device = %d, want 0", chosen);

    float *s = dev(N, me, 1), *r = dev(N * n, me, 0), *h;
    /* all_reduce, out of place and in place */
    OK(dcoll_all_reduce(NULL, s, r, N, DCOLL_FLOAT32, DCOLL_SUM, NULL, NULL));
    h = host(r, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == sum_at(i), "all_reduce[%d] = %g", i, h[i]);
    free(h);
    OK(dcoll_all_reduce(NULL, s, s, N, DCOLL_FLOAT32, DCOLL_MAX, NULL, NULL));
    h = host(s, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == val(n - 1, i), "all_reduce max in place[%d]", i);
    free(h);
    cudaFree(s);
    s = dev(N, me, 1);

    /* broadcast from the last rank */
    float *b = dev(N, me, 1);
    OK(dcoll_broadcast(NULL, b, N, DCOLL_FLOAT32, n - 1, NULL, NULL));
    h = host(b, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == val(n - 1, i), "broadcast[%d]", i);
    free(h);

    /* reduce to rank 0 */
    OK(dcoll_reduce(NULL, s, me == 0 ? r : NULL, N, DCOLL_FLOAT32, DCOLL_SUM,
                    0, NULL, NULL));
    if (me == 0) {
        h = host(r, N);
        for (int i = 0; i < N; i++)
            CHECK(h[i] == sum_at(i), "reduce[%d]", i);
        free(h);
    }

    /* all_gather, gather, scatter, reduce_scatter, all_to_all */
    OK(dcoll_all_gather(NULL, s, r, N, DCOLL_FLOAT32, NULL, NULL));
    h = host(r, N * n);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < N; i++)
            CHECK(h[k * N + i] == val(k, i), "all_gather[%d][%d]", k, i);
    free(h);
    /* In place: this rank's block is in the receive buffer already. */
    float *hb = calloc((size_t)N * (size_t)n, sizeof(float)), *ag = NULL;
    for (int i = 0; i < N; i++)
        hb[me * N + i] = val(me, i);
    cudaMalloc((void **)&ag, sizeof(float) * (size_t)N * (size_t)n);
    put(ag, hb, sizeof(float) * (size_t)N * (size_t)n);
    free(hb);
    OK(dcoll_all_gather(NULL, ag + (size_t)me * N, ag, N, DCOLL_FLOAT32, NULL,
                        NULL));
    h = host(ag, N * n);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < N; i++)
            CHECK(h[k * N + i] == val(k, i), "all_gather in place[%d][%d]", k,
                  i);
    free(h);
    /* MPI's in-place form, sendbuf == recvbuf: the same, on every rank. */
    OK(dcoll_all_gather(NULL, ag, ag, N, DCOLL_FLOAT32, NULL, NULL));
    h = host(ag, N * n);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < N; i++)
            CHECK(h[k * N + i] == val(k, i), "all_gather aliased[%d][%d]", k,
                  i);
    free(h);
    /* And a reduce_scatter so: the result at the front. */
    float *rs = dev(N * n, me, 1);
    OK(dcoll_reduce_scatter(NULL, rs, rs, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                            NULL));
    h = host(rs, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == sum_at(me * N + i), "reduce_scatter aliased[%d] = %g",
              i, h[i]);
    free(h);
    cudaFree(rs);
    cudaFree(ag);
    OK(dcoll_gather(NULL, s, me == 0 ? r : NULL, N, DCOLL_FLOAT32, 0, NULL,
                    NULL));
    if (me == 0) {
        h = host(r, N * n);
        for (int k = 0; k < n; k++)
            CHECK(h[k * N + 5] == val(k, 5), "gather[%d]", k);
        free(h);
    }
    float *big = dev(N * n, me, 1); /* block k holds val(me, k*N + i) */
    float *one = dev(N, me, 0);
    OK(dcoll_scatter(NULL, me == 0 ? big : NULL, one, N, DCOLL_FLOAT32, 0,
                     NULL, NULL));
    h = host(one, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == val(0, me * N + i), "scatter[%d]", i);
    free(h);
    OK(dcoll_reduce_scatter(NULL, big, one, N, DCOLL_FLOAT32, DCOLL_SUM,
                            NULL, NULL));
    h = host(one, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == sum_at(me * N + i), "reduce_scatter[%d]", i);
    free(h);
    OK(dcoll_all_to_all(NULL, big, r, N, DCOLL_FLOAT32, NULL, NULL));
    h = host(r, N * n);
    for (int k = 0; k < n; k++)
        CHECK(h[k * N + 3] == val(k, me * N + 3), "all_to_all[%d]", k);
    free(h);
    /* In place: an all_to_all (NCCL has no such form), a gather and a
     * scatter at the last rank, MPI's way (sendbuf == recvbuf). */
    float *a2a = dev(N * n, me, 1);
    OK(dcoll_all_to_all(NULL, a2a, a2a, N, DCOLL_FLOAT32, NULL, NULL));
    h = host(a2a, N * n);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < N; i++)
            CHECK(h[k * N + i] == val(k, me * N + i),
                  "all_to_all in place[%d][%d] = %g", k, i, h[k * N + i]);
    free(h);
    int last = n - 1;
    float *g = dev(N * n, me, 1);   /* the root's block: val(root, root*N+i) */
    OK(dcoll_gather(NULL, me == last ? g : g + (size_t)me * N,
                    me == last ? g : NULL, N, DCOLL_FLOAT32, last, NULL,
                    NULL));
    if (me == last) {
        h = host(g, N * n);
        for (int k = 0; k < n; k++)
            CHECK(h[k * N + 7] == val(k, k * N + 7), "gather in place[%d] = "
                  "%g", k, h[k * N + 7]);
        free(h);
    }
    cudaFree(g);
    g = dev(N * n, me, 1);
    OK(dcoll_scatter(NULL, me == last ? g : NULL,
                     me == last ? g : g + (size_t)me * N, N, DCOLL_FLOAT32,
                     last, NULL, NULL));
    h = host(g + (size_t)me * N, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == val(last, me * N + i), "scatter in place[%d] = %g", i,
              h[i]);
    free(h);
    cudaFree(g);
    cudaFree(a2a);

    /* A ring of isend/irecv, and async all_reduce on a named stream. */
    dcoll_work_t *ws, *wr;
    OK(dcoll_irecv(NULL, one, N, DCOLL_FLOAT32, (me + n - 1) % n, 3, NULL,
                   &wr));
    OK(dcoll_isend(NULL, s, N, DCOLL_FLOAT32, (me + 1) % n, 3, NULL, &ws));
    OK(dcoll_work_wait(wr));
    OK(dcoll_work_wait(ws));
    dcoll_work_free(&wr);
    dcoll_work_free(&ws);
    h = host(one, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == val((me + n - 1) % n, i), "ring[%d]", i);
    free(h);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    dcoll_coll_opts_t opts = DCOLL_COLL_OPTS_INIT;
    opts.mask = DCOLL_COLL_OPT_STREAM;
    opts.stream = stream;
    dcoll_work_t *w;
    OK(dcoll_all_reduce(NULL, s, r, N, DCOLL_FLOAT32, DCOLL_SUM, &opts, &w));
    OK(dcoll_work_wait(w));
    dcoll_work_free(&w);
    h = host(r, N);
    for (int i = 0; i < N; i++)
        CHECK(h[i] == sum_at(i), "async all_reduce[%d]", i);
    free(h);

    /* Big enough for the staged path's chunks (4 MiB; chunks of 1 MiB):
     * out of place, in place, from a root and to a root. */
    const int M = 1 << 20;
    float *bs = dev(M, me, 1), *br = dev(M, me, 0);
    OK(dcoll_all_reduce(NULL, bs, br, M, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                        NULL));
    h = host(br, M);
    for (int i = 0; i < M; i += 997)
        CHECK(h[i] == sum_at(i), "big all_reduce[%d] = %g", i, h[i]);
    CHECK(h[M - 1] == sum_at(M - 1), "big all_reduce, last");
    free(h);
    OK(dcoll_all_reduce(NULL, bs, bs, M, DCOLL_FLOAT32, DCOLL_MIN, NULL,
                        NULL));
    h = host(bs, M);
    for (int i = 0; i < M; i += 991)
        CHECK(h[i] == val(0, i), "big all_reduce min in place[%d]", i);
    free(h);
    cudaFree(bs);
    bs = dev(M, me, 1);
    OK(dcoll_broadcast(NULL, bs, M, DCOLL_FLOAT32, n - 1, NULL, NULL));
    h = host(bs, M);
    for (int i = 0; i < M; i += 983)
        CHECK(h[i] == val(n - 1, i), "big broadcast[%d]", i);
    CHECK(h[M - 1] == val(n - 1, M - 1), "big broadcast, last");
    free(h);
    cudaFree(bs);
    bs = dev(M, me, 1);
    OK(dcoll_reduce(NULL, bs, me == n - 1 ? br : NULL, M, DCOLL_FLOAT32,
                    DCOLL_SUM, n - 1, NULL, NULL));
    if (me == n - 1) {
        h = host(br, M);
        for (int i = 0; i < M; i += 977)
            CHECK(h[i] == sum_at(i), "big reduce[%d]", i);
        free(h);
    }
    cudaFree(bs);
    cudaFree(br);

    /* An op NCCL lacks (bitwise): the staged path, in an NCCL group too. */
    int *xi = NULL, xh[64];
    cudaMalloc((void **)&xi, sizeof(xh));
    for (int i = 0; i < 64; i++)
        xh[i] = (me + 1) << (i % 8);
    put(xi, xh, sizeof(xh));
    OK(dcoll_all_reduce(NULL, xi, xi, 64, DCOLL_INT32, DCOLL_BXOR, NULL,
                        NULL));
    cudaMemcpy(xh, xi, sizeof(xh), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 64; i++) {
        int want = 0;
        for (int r = 0; r < n; r++)
            want ^= (r + 1) << (i % 8);
        CHECK(xh[i] == want, "bxor[%d] = %d, want %d", i, xh[i], want);
    }
    cudaFree(xi);

    /* bool and the logical ops (NCCL has neither): staged, on device
     * buffers too. Element i is true on rank r where (i + r) % 3 != 0. */
    bool *xb = NULL, bh[64];
    cudaMalloc((void **)&xb, sizeof(bh));
    for (int op = DCOLL_LAND; op <= DCOLL_LXOR; op++) {
        for (int i = 0; i < 64; i++)
            bh[i] = (i + me) % 3 != 0;
        put(xb, bh, sizeof(bh));
        OK(dcoll_all_reduce(NULL, xb, xb, 64, DCOLL_BOOL, (dcoll_op_t)op,
                            NULL, NULL));
        cudaMemcpy(bh, xb, sizeof(bh), cudaMemcpyDeviceToHost);
        for (int i = 0; i < 64; i++) {
            int all = 1, any = 0, odd = 0;
            for (int r = 0; r < n; r++) {
                int v = (i + r) % 3 != 0;
                all &= v;
                any |= v;
                odd ^= v;
            }
            int want = op == DCOLL_LAND ? all : op == DCOLL_LOR ? any : odd;
            CHECK(bh[i] == want, "bool op %d [%d] = %d, want %d", op, i,
                  bh[i], want);
        }
    }
    cudaFree(xb);

    /* complex64: SUM and AVG on NCCL's real view where NCCL runs, PRODUCT
     * staged (NCCL's would multiply the parts). Rank r gives (1, r), then
     * (0, 1). */
    float _Complex *zc = NULL, zh[8];
    cudaMalloc((void **)&zc, sizeof(zh));
    for (int i = 0; i < 8; i++)
        zh[i] = 1.0f + (float)me * I;
    put(zc, zh, sizeof(zh));
    OK(dcoll_all_reduce(NULL, zc, zc, 8, DCOLL_COMPLEX64, DCOLL_SUM, NULL,
                        NULL));
    cudaMemcpy(zh, zc, sizeof(zh), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 8; i++)
        CHECK(crealf(zh[i]) == n && cimagf(zh[i]) == n * (n - 1) / 2,
              "complex sum[%d] = (%g, %g)", i, crealf(zh[i]), cimagf(zh[i]));
    for (int i = 0; i < 8; i++)
        zh[i] = I;
    put(zc, zh, sizeof(zh));
    OK(dcoll_all_reduce(NULL, zc, zc, 8, DCOLL_COMPLEX64, DCOLL_PRODUCT,
                        NULL, NULL));
    cudaMemcpy(zh, zc, sizeof(zh), cudaMemcpyDeviceToHost);
    float _Complex zwant = 1;
    for (int r = 0; r < n; r++)
        zwant *= I;
    for (int i = 0; i < 8; i++)
        CHECK(zh[i] == zwant, "complex product[%d] = (%g, %g), want (%g, "
              "%g)", i, crealf(zh[i]), cimagf(zh[i]), crealf(zwant),
              cimagf(zwant));
    cudaFree(zc);

    /* MAXLOC on float32int (NCCL has no pairs: staged): every rank has
     * the value 7 at element 0, so the lowest index (rank 0's) wins. */
    struct { float v; int i; } *pc = NULL, ph[4];
    cudaMalloc((void **)&pc, sizeof(ph));
    for (int i = 0; i < 4; i++) {
        ph[i].v = i == 0 ? 7.0f : (float)me;
        ph[i].i = me;
    }
    put(pc, ph, sizeof(ph));
    OK(dcoll_all_reduce(NULL, pc, pc, 4, DCOLL_FLOAT32_INT, DCOLL_MAXLOC,
                        NULL, NULL));
    cudaMemcpy(ph, pc, sizeof(ph), cudaMemcpyDeviceToHost);
    CHECK(ph[0].v == 7.0f && ph[0].i == 0, "maxloc tie: (%g, %d)", ph[0].v,
          ph[0].i);
    for (int i = 1; i < 4; i++)
        CHECK(ph[i].v == n - 1 && ph[i].i == n - 1, "maxloc[%d]: (%g, %d)",
              i, ph[i].v, ph[i].i);
    cudaFree(pc);
    new_types();
    prefixes();
    plans();
#ifndef FAKE_DEVICE
    captured();
#endif

    /* Mixed host and device buffers are refused, naming both. Where the
     * buffers live is this rank's alone to see, so the refusal leaves the
     * group unusable here, as a refused count does: a spare group. */
    float hbuf[N];
    memset(hbuf, 0, sizeof(hbuf));
    dcoll_group_t *spare = NULL;
    OK(dcoll_new_group(&spare, NULL, 0, NULL));
    dcoll_status_t st = dcoll_all_reduce(spare, s, hbuf, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT &&
          strstr(dcoll_last_error(), "sendbuf is device memory"),
          "mixed buffers: %s", dcoll_last_error());
    st = dcoll_all_reduce(spare, hbuf, hbuf, 4, DCOLL_FLOAT32, DCOLL_SUM,
                          NULL, NULL);
    if (t_kept(spare))
        CHECK(st == DCOLL_SUCCESS, "the kept group after a refused call: %s",
              dcoll_last_error());
    else
        CHECK(st == DCOLL_ERR_GROUP_FAILED &&
                  strstr(dcoll_last_error(), "this rank refused collective "
                         "#1 (all_reduce) before any data moved: sendbuf is "
                         "device memory"),
              "the group after a refused call: %s", dcoll_last_error());
    OK(dcoll_group_destroy(&spare));
    OK(dcoll_barrier(NULL, NULL, NULL));

    cudaStreamDestroy(stream);
    cudaFree(s);
    cudaFree(r);
    cudaFree(b);
    cudaFree(big);
    cudaFree(one);
#if defined(FAKE_DEVICE) || defined(CUDA_DOUBLE)
    /* DCOLL_TEST_NCCL=yes: the fake's (or the double's) NCCL ran calls,
     * through the plugin's table; no: none reached it. */
    const char *want = getenv("DCOLL_TEST_NCCL");
    if (want) {
        long calls = nccl_ran();
        CHECK(!strcmp(want, "yes") ? calls > 0 : calls == 0,
              "DCOLL_TEST_NCCL=%s, but the fake NCCL ran %ld calls", want,
              calls);
    }
#endif
    OK(dcoll_finalize());
#ifdef CUDA_DOUBLE
    /* Every communicator finalized and destroyed, none aborted: a healthy
     * one's ncclCommFinalize answers ncclInProgress (nonblocking). */
    CHECK(fake_nccl_aborts() == 0, "%ld NCCL communicator(s) aborted",
          fake_nccl_aborts());
    CHECK(fake_nccl_live() == 0, "%ld NCCL communicator(s) left",
          fake_nccl_live());
#endif
    MPI_Allreduce(MPI_IN_PLACE, &t_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("gpu: %d rank(s), %d failure(s)\n", n, t_failures);
    MPI_Finalize();
    return t_failures != 0;
}
