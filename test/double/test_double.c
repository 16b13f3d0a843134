/* What CUDA's own rules decide, checked on the CUDA double (cudart.c)
 * through the real plugin (issue 28):
 *   double    the double itself: a copy queued on a stream is not there
 *             before the stream is waited for, so a missing wait fails;
 *   foreign   a pointer CUDA cannot place (cudaPointerGetAttributes
 *             fails) is refused, named, never read as host memory, and
 *             its error is not left for the program's cudaGetLastError;
 *   managed   managed memory a copy on the call's stream is still
 *             writing: the collective reads it after that copy;
 *   multi     the multi-buffer form's host copies, on the call's stream;
 *   host      opts.memory = DCOLL_MEMORY_HOST: no pointer query;
 *   agree     a group on NCCL and a group staged through the host give
 *             the same bits for SUM and AVG of fp16, bf16, float32 and
 *             float64 where the order of the sum cannot matter (every
 *             rank's input the same, up to 3 ranks): AVG is a sum of
 *             inputs times 1/n on both, as NCCL computes it, so an fp16
 *             average of 40000 is 40000 on both, not infinity;
 *   valid     when a GPU result may be read, on an NCCL group and a
 *             staged one alike: once a blocking call returns, once
 *             dcoll_work_wait returns, from any stream or the host (read
 *             here on a second non-blocking stream);
 *   pinned    (test_double pinned; DCOLL_STAGE_PINNED=1M,
 *             DCOLL_STAGE_CHUNK=256K) staging pins memory once, not per
 *             call: rounds of async calls outstanding together and of
 *             multi-buffer calls make a few blocks in all; a call bigger
 *             than the budget stages through ordinary memory and pins
 *             nothing more; a copy failing on one rank in the middle of
 *             a pipelined call ends the call at once on every rank with
 *             an error that names it, instead of a wait for the timeout;
 *   copyfail  (test_double copyfail, 2 ranks or more) the last rank's copy
 *             off its GPU fails before a staged call's host part: it
 *             leaves the group, which is unusable there, and the others'
 *             call fails at the group's deadline naming it and why,
 *             rather than matching the rank's next call;
 *   split     (test_double split) once the world has an NCCL
 *             communicator, a group made by new_group or by a split of
 *             the world gets one split from it (ncclCommSplit), not a
 *             new one, and its calls give the right answers; a group
 *             whose backend is "mpi" gets none;
 *   abort     (test_double abort) a lost peer: the rank that sees NCCL's
 *             asynchronous error and the ranks that time out each abort
 *             their communicator once; later calls on the group get a
 *             clear error and its destroy touches no freed handle (the
 *             NCCL double stops the process on any use after abort);
 *   contexts  (test_double contexts, 2 GPUs) a host-only program gets no
 *             CUDA context from dcoll_init or its calls, and a thread
 *             that never chose a GPU is left without one after a call on
 *             GPU 1 (restoring "its device" made one on GPU 0).
 * Under mpirun, 1 to 4 ranks. */
#include <pthread.h>
#include <stdbool.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include "cudart_double.h"
#include "testutil.h"

enum { N = 4096 };
int t_rank, t_failures;
static int n;

/* The double's delays, in seconds, as cudart.c reads them. */
static double delay_of(const char *var, unsigned dflt_us)
{
    const char *e = getenv(var);
    return (e ? (unsigned)atoi(e) : dflt_us) / 1e6;
}

/* A check that a copy has not landed can only be decided by a run that
 * read it sooner than the double's delay: on a loaded machine a thread
 * may sleep past it (CI's sanitizer pass did, once in a run). So each
 * premise is tried up to TRIES times: a run that read too late decides
 * nothing, one that read in time and saw the copy landed fails, and so
 * do TRIES runs that all read too late, as a double that waited for the
 * copy would make them (here they take 0.3-0.6 ms of 20 and 7-70 us of
 * 200 under ASan). */
enum { TRIES = 50 };

static void the_double(void)
{
    float *d = NULL, *back = NULL, h[N];
    for (int i = 0; i < N; i++)
        h[i] = (float)i;
    const double pageable_s = delay_of("FAKE_CUDA_PAGEABLE_US", 2000);
    const double queued_s = delay_of("FAKE_CUDA_DELAY_US", 200);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc((void **)&d, sizeof(h));
    cudaMallocHost((void **)&back, sizeof(h));
    int decided = 0;
    for (int t = 0; t < TRIES && decided < 3; t++) {
        memset(back, 0, sizeof(h));
        cudaMemset(d, 0, sizeof(h));
        double t0 = t_now();
        cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
        /* From pageable memory cudaMemcpy returns before the copy lands:
         * a non-blocking stream, which does not wait for the legacy one,
         * reads the old bytes (an H100 did, at 512 KiB to 2 MiB). */
        cudaMemcpyAsync(back, d, sizeof(h), cudaMemcpyDeviceToHost, s);
        cudaStreamSynchronize(s);
        float seen = back[N - 1];
        double took = t_now() - t0;
        cudaDeviceSynchronize();
        if (took >= pageable_s)
            continue;
        decided++;
        CHECK(seen == 0.0f, "a pageable cudaMemcpy landed %.1f ms after it "
              "began, before its delay of %.1f ms: a missing wait for it "
              "would pass", took * 1e3, pageable_s * 1e3);
    }
    CHECK(decided, "none of %d pageable copies was read back within its "
          "delay of %.1f ms: cudaMemcpy waited for it", TRIES,
          pageable_s * 1e3);
    decided = 0;
    for (int t = 0; t < TRIES && decided < 3; t++) {
        memset(back, 0, sizeof(h));
        cudaEvent_t e;
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        double t0 = t_now();
        cudaMemcpyAsync(back, d, sizeof(h), cudaMemcpyDeviceToHost, s);
        cudaEventRecord(e, s);
        /* Read at once, not waited for: the copy has not run yet. */
        float seen = back[N - 1];
        cudaError_t q = cudaEventQuery(e);
        double took = t_now() - t0;
        if (took < queued_s) {
            decided++;
            CHECK(seen == 0.0f && q == cudaErrorNotReady,
                  "the double ran a queued copy within %.0f us, before its "
                  "delay of %.0f us (%s): a missing wait would pass",
                  took * 1e6, queued_s * 1e6, cudaGetErrorName(q));
        }
        cudaStreamSynchronize(s);
        CHECK(back[N - 1] == (float)(N - 1) && cudaEventQuery(e) == cudaSuccess,
              "after the wait: %g", back[N - 1]);
        cudaEventDestroy(e);
    }
    CHECK(decided, "none of %d queued copies was read within its delay of "
          "%.0f us: queueing ran them", TRIES, queued_s * 1e6);
    cudaFreeHost(back);
    cudaFree(d);
    cudaStreamDestroy(s);
}

static void foreign(void)
{
    dcoll_group_t *g = NULL;
    CHECK(dcoll_new_group(&g, NULL, 0, NULL) == DCOLL_SUCCESS, "spare");
    float out[4];
    dcoll_status_t st = dcoll_all_reduce(g, fake_cuda_foreign(), out, 4,
                                         DCOLL_FLOAT32, DCOLL_SUM, NULL,
                                         NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "CUDA cannot say where sendbuf") &&
              strstr(dcoll_last_error(), "cudaPointerGetAttributes"),
          "a pointer CUDA cannot place: %s (%s)", dcoll_status_string(st),
          dcoll_last_error());
    CHECK(cudaGetLastError() == cudaSuccess, "dcoll's query left its error "
          "for the program");
    dcoll_group_destroy(&g);
}

static void managed(void)
{
    float *m = NULL, h[N];
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMallocManaged((void **)&m, sizeof(h), cudaMemAttachGlobal);
    for (int i = 0; i < N; i++)
        h[i] = (float)(t_rank + 1);
    /* Written on the stream, as a kernel would: the call, on the same
     * stream, must read it after. */
    cudaMemcpyAsync(m, h, sizeof(h), cudaMemcpyDefault, s);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    dcoll_status_t st = dcoll_all_reduce(NULL, m, m, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, &o, NULL);
    CHECK(st == DCOLL_SUCCESS, "managed all_reduce: %s", dcoll_last_error());
    float want = (float)(n * (n + 1) / 2);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += m[i] != want;
    CHECK(!bad, "managed all_reduce: %d of %d wrong (m[0] = %g, want %g): "
          "read before the stream's copy", bad, N, m[0], want);
    cudaFree(m);
    cudaStreamDestroy(s);
}

/* The multi-buffer form's host mirrors copy on the call's stream: inputs
 * a non-blocking stream is still writing are read after it. */
static void multi_stream(void)
{
    float *b[2] = {NULL, NULL}, h[N];
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int i = 0; i < N; i++)
        h[i] = (float)(t_rank + 1);
    for (int j = 0; j < 2; j++) {
        cudaMalloc((void **)&b[j], sizeof(h));
        cudaMemcpyAsync(b[j], h, sizeof(h), cudaMemcpyHostToDevice, s);
    }
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    dcoll_status_t st = dcoll_all_reduce_multi(NULL, (void *const *)b, 2, N,
                                               DCOLL_FLOAT32, DCOLL_SUM, &o,
                                               NULL);
    CHECK(st == DCOLL_SUCCESS, "all_reduce_multi: %s", dcoll_last_error());
    cudaStreamSynchronize(s);
    float want = (float)(n * (n + 1));
    for (int j = 0; j < 2; j++) {
        cudaMemcpy(h, b[j], sizeof(h), cudaMemcpyDeviceToHost);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += h[i] != want;
        CHECK(!bad, "all_reduce_multi buffer %d: %d of %d wrong (%g, want "
              "%g): copied off the GPU before the stream's writes", j, bad,
              N, h[0], want);
        cudaFree(b[j]);
    }
    cudaStreamDestroy(s);
}

/* A host call on a GPU machine asks CUDA of each buffer, unless the
 * caller says where they live (opts.memory). */
/* The same call on g, on the GPU; the result's bytes on the host. */
static void *on_gpu(dcoll_group_t *g, const void *in, size_t esz,
                    dcoll_dtype_t t, dcoll_op_t op)
{
    size_t bytes = (size_t)N * esz;
    void *d = NULL, *h = malloc(bytes);
    cudaMalloc(&d, bytes);
    cudaMemcpy(d, in, bytes, cudaMemcpyHostToDevice);
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, t, op, NULL, NULL);
    CHECK(st == DCOLL_SUCCESS, "all_reduce type %d op %d: %s", (int)t,
          (int)op, dcoll_last_error());
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return h;
}

/* Two groups of every rank: "auto" (NCCL on the double, each process's
 * GPU its own) and "mpi" (staged). */
static void both_paths(dcoll_group_t **nccl, dcoll_group_t **staged)
{
    dcoll_group_params_t p = DCOLL_GROUP_PARAMS_INIT;
    p.mask = DCOLL_GROUP_PARAM_BACKEND;
    p.backend = "auto";
    CHECK_OK(dcoll_new_group(nccl, NULL, 0, &p));
    p.backend = "mpi";
    CHECK_OK(dcoll_new_group(staged, NULL, 0, &p));
}

static void agree(void)
{
    if (n > 3)
        return;   /* beyond 3, MPI's tree and NCCL's order may differ */
    dcoll_group_t *nccl = NULL, *staged = NULL;
    both_paths(&nccl, &staged);
    static const dcoll_dtype_t types[] = {DCOLL_FLOAT16, DCOLL_BFLOAT16,
                                          DCOLL_FLOAT32, DCOLL_FLOAT64};
    static const size_t sizes[] = {2, 2, 4, 8};
    static const dcoll_op_t ops[] = {DCOLL_SUM, DCOLL_AVG};
    long ran = fake_nccl_calls();
    for (int t = 0; t < 4; t++) {
        unsigned char in[N * 8];
        unsigned x = 12345;
        for (size_t i = 0; i < sizeof(in); i++) {
            x = x * 1103515245u + 12345u;
            in[i] = (unsigned char)(x >> 16);
        }
        /* Finite, and big: the top exponents, where a sum overflows. */
        for (int i = 0; i < N; i++) {
            unsigned char *top = in + (size_t)i * sizes[t] + sizes[t] - 1;
            *top = (unsigned char)((*top & 0x80) | 0x77);
        }
        if (types[t] == DCOLL_FLOAT16)
            for (int i = 0; i < N; i++)
                ((uint16_t *)in)[i] = 0x78e2;   /* 40000 */
        for (int o = 0; o < 2; o++) {
            unsigned char *a = on_gpu(nccl, in, sizes[t], types[t], ops[o]);
            unsigned char *b = on_gpu(staged, in, sizes[t], types[t], ops[o]);
            int bad = 0, first = -1;
            for (int i = 0; i < N; i++)
                if (memcmp(a + (size_t)i * sizes[t], b + (size_t)i * sizes[t],
                           sizes[t]) && bad++ == 0)
                    first = i;
            CHECK(!bad, "type %d op %d: NCCL and staged groups differ at %d "
                  "of %d elements (first %d)", (int)types[t], (int)ops[o],
                  bad, N, first);
            if (types[t] == DCOLL_FLOAT16 && ops[o] == DCOLL_AVG)
                CHECK(((uint16_t *)a)[0] == 0x78e2 &&
                          ((uint16_t *)b)[0] == 0x78e2,
                      "fp16 AVG of 40000: NCCL %#x, staged %#x, want "
                      "0x78e2", ((uint16_t *)a)[0], ((uint16_t *)b)[0]);
            free(a);
            free(b);
        }
    }
    CHECK(fake_nccl_calls() > ran, "the \"auto\" group did not use NCCL");
    CHECK_OK(dcoll_group_destroy(&nccl));
    CHECK_OK(dcoll_group_destroy(&staged));
}

/* in: N floats of rank + 1 on a non-blocking stream; the all_reduce's
 * result read on another non-blocking stream, which waits for nothing. */
static void read_after(dcoll_group_t *g, bool async, const char *what)
{
    cudaStream_t s, other;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
    float *d = NULL, h[N];
    cudaMalloc((void **)&d, sizeof(h));
    for (int i = 0; i < N; i++)
        h[i] = (float)(t_rank + 1);
    cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, s);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    dcoll_work_t *w = NULL;
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, &o, async ? &w : NULL);
    if (st == DCOLL_SUCCESS && async) {
        st = dcoll_work_wait(w);
        dcoll_work_free(&w);
    }
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    memset(h, 0, sizeof(h));
    cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, other);
    cudaStreamSynchronize(other);
    float want = (float)(n * (n + 1) / 2);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += h[i] != want;
    CHECK(!bad, "%s: %d of %d not yet the result (%g, want %g) when the "
          "call said it was done", what, bad, N, h[0], want);
    cudaFree(d);
    cudaStreamDestroy(s);
    cudaStreamDestroy(other);
}

static void valid(void)
{
    dcoll_group_t *nccl = NULL, *staged = NULL;
    both_paths(&nccl, &staged);
    read_after(nccl, false, "NCCL, blocking");
    read_after(nccl, true, "NCCL, after dcoll_work_wait");
    read_after(staged, false, "staged, blocking");
    read_after(staged, true, "staged, after dcoll_work_wait");
    CHECK_OK(dcoll_group_destroy(&nccl));
    CHECK_OK(dcoll_group_destroy(&staged));
}

static dcoll_group_t *staged_group(double timeout)
{
    dcoll_group_params_t p = DCOLL_GROUP_PARAMS_INIT;
    p.mask = DCOLL_GROUP_PARAM_BACKEND | DCOLL_GROUP_PARAM_TIMEOUT |
             DCOLL_GROUP_PARAM_ON_TIMEOUT;
    p.backend = "mpi";
    p.timeout = timeout;
    p.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, &p));
    return g;
}

static float *filled(size_t count, float v)
{
    float *h = malloc(count * sizeof(float)), *d = NULL;
    for (size_t i = 0; i < count; i++)
        h[i] = v;
    cudaMalloc((void **)&d, count * sizeof(float));
    cudaMemcpy(d, h, count * sizeof(float), cudaMemcpyHostToDevice);
    free(h);
    return d;
}

/* count floats of d all want? */
static int wrong(const float *d, size_t count, float want)
{
    float *h = malloc(count * sizeof(float));
    cudaMemcpy(h, d, count * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += h[i] != want;
    free(h);
    return bad;
}

static void pinned(void)
{
    dcoll_group_t *g = staged_group(60), *g2 = staged_group(60);
    float *d[3];
    for (int j = 0; j < 3; j++)
        d[j] = filled(N, 1);
    long before = fake_cuda_pinned_calls();
    for (int round = 0; round < 10; round++) {
        dcoll_work_t *w[3];
        for (int j = 0; j < 3; j++)
            CHECK_OK(dcoll_all_reduce(j == 2 ? g2 : g, d[j], d[j], N,
                                      DCOLL_FLOAT32, DCOLL_MAX, NULL, &w[j]));
        for (int j = 0; j < 3; j++) {
            CHECK_OK(dcoll_work_wait(w[j]));
            dcoll_work_free(&w[j]);
        }
        void *two[2] = {d[0], d[1]};
        CHECK_OK(dcoll_all_reduce_multi(g, two, 2, N, DCOLL_FLOAT32,
                                        DCOLL_MAX, NULL, NULL));
    }
    long made = fake_cuda_pinned_calls() - before;
    CHECK(made <= 4, "30 async staged calls (3 at a time) and 10 multi "
          "calls pinned memory %ld times: page-locking per call", made);
    for (int j = 0; j < 3; j++) {
        CHECK(!wrong(d[j], N, 1), "buffer %d after the rounds", j);
        cudaFree(d[j]);
    }

    /* 8 MiB out, over the 1 MiB budget: ordinary memory, right answer. */
    size_t each = (size_t)1 << 19, all = each * (size_t)n;
    float *in = filled(each, (float)(t_rank + 1)), *out = filled(all, 0);
    CHECK_OK(dcoll_all_gather(g, in, out, (int64_t)each, DCOLL_FLOAT32, NULL,
                              NULL));
    for (int r = 0; r < n; r++)
        CHECK(!wrong(out + (size_t)r * each, each, (float)(r + 1)),
              "big all_gather, block %d", r);
    CHECK(fake_cuda_pinned_bytes() <= ((long)1 << 20),
          "%ld bytes pinned, over DCOLL_STAGE_PINNED=1M",
          fake_cuda_pinned_bytes());
    /* A pipelined all_reduce (2 MiB in 256 KiB chunks). */
    float *big = filled(each, 1);
    CHECK_OK(dcoll_all_reduce(g, big, big, (int64_t)each, DCOLL_FLOAT32,
                              DCOLL_SUM, NULL, NULL));
    CHECK(!wrong(big, each, (float)n), "pipelined all_reduce");
    CHECK_OK(dcoll_group_destroy(&g2));

    /* The last rank's copies fail from its fourth on, mid-pipeline. */
    if (n > 1) {
        if (t_rank == n - 1)
            fake_cuda_fault_after(3);
        double t0 = t_now();
        dcoll_status_t st = dcoll_all_reduce(g, big, big, (int64_t)each,
                                             DCOLL_FLOAT32, DCOLL_SUM, NULL,
                                             NULL);
        double took = t_now() - t0;
        CHECK(st == DCOLL_ERR_INTERNAL && took < 20,
              "a copy failing mid-pipeline on rank %d: %s after %.1f s (%s)",
              n - 1, dcoll_status_string(st), took, dcoll_last_error());
        if (t_rank == n - 1) {
            CHECK(strstr(dcoll_last_error(), "illegal memory access") &&
                      strstr(dcoll_last_error(), "not valid on any rank"),
                  "the failing rank's message: %s", dcoll_last_error());
        } else {
            char want[64];
            snprintf(want, sizeof(want), "rank %d of the group could not "
                     "copy", n - 1);
            CHECK(strstr(dcoll_last_error(), want), "a peer's message: %s",
                  dcoll_last_error());
        }
    }
    /* The group is whole (every rank ran every chunk); CUDA is dead on
     * the last rank, so the check is a host barrier. */
    CHECK_OK(dcoll_barrier(g, NULL, NULL));
    CHECK_OK(dcoll_group_destroy(&g));
}

static void copy_fails(void)
{
    dcoll_group_t *g = staged_group(3);
    float *d = filled(N, 1);
    if (t_rank == n - 1)
        fake_cuda_fault_after(0);
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    char want[160];
    snprintf(want, sizeof(want), "rank %d (world %d) refused all_reduce #1: "
             "copying the input off GPU 0", n - 1, n - 1);
    if (t_rank == n - 1) {
        CHECK(st == DCOLL_ERR_INTERNAL &&
                  strstr(dcoll_last_error(), "copying the input off"),
              "the failing rank: %s (%s)", dcoll_status_string(st),
              dcoll_last_error());
        st = dcoll_barrier(g, NULL, NULL);
        CHECK(st == DCOLL_ERR_GROUP_FAILED, "its next call: %s (%s)",
              dcoll_status_string(st), dcoll_last_error());
    } else {
        CHECK(st == DCOLL_ERR_TIMEOUT && strstr(dcoll_last_error(), want),
              "a peer: %s (%s), want \"%s\"", dcoll_status_string(st),
              dcoll_last_error(), want);
    }
    /* In a dcoll call meanwhile, the last rank answers the others' roll
     * call with its reason. */
    CHECK_OK(dcoll_barrier(NULL, NULL, NULL));
    CHECK_OK(dcoll_group_destroy(&g));
}

static void split_ok(dcoll_group_t *g, const char *what)
{
    int size = 0;
    dcoll_group_size(g, &size);
    float *d = filled(N, 2);
    CHECK_OK(dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL));
    CHECK(!wrong(d, N, (float)(2 * size)), "%s: all_reduce", what);
    cudaFree(d);
}

static void splits(void)
{
    float *d = filled(N, 1);
    CHECK_OK(dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL));
    cudaFree(d);
    long inits = fake_nccl_inits(), made = fake_nccl_splits();
    CHECK(inits == 1, "the world's communicator: %ld inits", inits);
    /* The first n - 1 ranks (all of them on one rank). */
    int ranks[8], m = n > 1 ? n - 1 : 1;
    for (int i = 0; i < m; i++)
        ranks[i] = i;
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, ranks, m, NULL));
    if (t_rank < m) {
        CHECK(fake_nccl_splits() == made + 1, "new_group: %ld splits, want "
              "%ld", fake_nccl_splits(), made + 1);
        split_ok(g, "new_group");
    }
    CHECK(fake_nccl_inits() == inits, "new_group made a communicator of "
          "its own (%ld inits)", fake_nccl_inits());
    CHECK_OK(dcoll_group_destroy(&g));
    /* By parity, from the world. */
    dcoll_group_t *half = NULL;
    CHECK_OK(dcoll_split_group(&half, NULL, t_rank % 2, t_rank, NULL));
    split_ok(half, "split by parity");
    CHECK(fake_nccl_inits() == inits, "a split group made a communicator "
          "of its own (%ld inits)", fake_nccl_inits());
    CHECK_OK(dcoll_group_destroy(&half));
    /* A staged group needs none. */
    long before = fake_nccl_splits();
    dcoll_group_params_t p = DCOLL_GROUP_PARAMS_INIT;
    p.mask = DCOLL_GROUP_PARAM_BACKEND;
    p.backend = "mpi";
    CHECK_OK(dcoll_new_group(&g, NULL, 0, &p));
    CHECK(fake_nccl_splits() == before, "an \"mpi\" group got an NCCL "
          "communicator");
    split_ok(g, "staged group");
    CHECK_OK(dcoll_group_destroy(&g));
}

static void lost_peer(void)
{
    dcoll_group_t *g = t_returning_group(3);
    float *d = NULL;
    cudaMalloc((void **)&d, N * sizeof(float));
    cudaMemset(d, 0, N * sizeof(float));
    /* A good call first: it makes the group's communicator. */
    CHECK_OK(dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL));
    long before = fake_nccl_calls();
    CHECK(before > 0, "the NCCL double ran nothing: no NCCL group here");
    if (t_rank == 0)
        fake_nccl_break();
    dcoll_work_t *w = NULL;
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, &w);
    if (st == DCOLL_SUCCESS) {
        st = dcoll_work_wait(w);
        dcoll_work_free(&w);
    }
    /* Rank 0 learns of the lost peer from NCCL, as an asynchronous error
     * or, where the stream got to it before the launch settled, from the
     * launch itself: either way with NCCL's reason. */
    const char *want = t_rank == 0 ? "remote process exited" : "timed out";
    CHECK(st != DCOLL_SUCCESS && strstr(dcoll_last_error(), want),
          "the lost peer's call: %s (%s), want \"%s\"",
          dcoll_status_string(st), dcoll_last_error(), want);
    CHECK(fake_nccl_aborts() == 1, "%ld aborts, want 1", fake_nccl_aborts());
    /* The next call: an error that says why, not the freed handle. */
    st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL, NULL);
    CHECK(st != DCOLL_SUCCESS && *dcoll_last_error(),
          "a call after the abort: %s (%s)", dcoll_status_string(st),
          dcoll_last_error());
    if (t_rank == 0)
        CHECK(strstr(dcoll_last_error(), "was aborted after") &&
                  strstr(dcoll_last_error(), "remote process exited"),
              "a call after the abort does not say why: %s",
              dcoll_last_error());
    CHECK_OK(dcoll_group_destroy(&g));
    CHECK(fake_nccl_aborts() == 1, "%ld aborts after destroy, want 1",
          fake_nccl_aborts());
    cudaFree(d);
}

static void host_said(void)
{
    int a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b[8];
    long q0 = fake_cuda_queries();
    CHECK(dcoll_all_reduce(NULL, a, b, 8, DCOLL_INT32, DCOLL_SUM, NULL, NULL)
              == DCOLL_SUCCESS && b[0] == n, "host all_reduce");
    long asked = fake_cuda_queries() - q0;
    CHECK(asked == 2, "an unsaid host all_reduce asked %ld times", asked);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_MEMORY;
    o.memory = DCOLL_MEMORY_HOST;
    q0 = fake_cuda_queries();
    CHECK(dcoll_all_reduce(NULL, a, b, 8, DCOLL_INT32, DCOLL_SUM, &o, NULL)
              == DCOLL_SUCCESS && b[0] == n, "host all_reduce, said");
    CHECK(fake_cuda_queries() == q0, "a host all_reduce said so asked CUDA "
          "%ld times", fake_cuda_queries() - q0);
    dcoll_group_t *g = NULL;
    dcoll_new_group(&g, NULL, 0, NULL);
    o.memory = 7;
    CHECK(dcoll_all_reduce(g, a, b, 8, DCOLL_INT32, DCOLL_SUM, &o, NULL) ==
              DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "opts->memory 7"),
          "a bad memory kind: %s", dcoll_last_error());
    dcoll_group_destroy(&g);
}

static void *on_gpu1(void *arg)
{
    float *d = arg;
    dcoll_status_t st = dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    CHECK(st == DCOLL_SUCCESS, "all_reduce from a new thread: %s",
          dcoll_last_error());
    void *ctx = (void *)1;
    cuCtxGetCurrent(&ctx);
    CHECK(ctx == NULL, "the thread has a context after dcoll's call");
    return NULL;
}

static void contexts(void)
{
    /* No CUDA call of the program's own before this. */
    int one = 1, sum = 0, dev = -2;
    CHECK(dcoll_all_reduce(NULL, &one, &sum, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS && sum == n,
          "host all_reduce: %d", sum);
    CHECK(dcoll_device(&dev) == DCOLL_SUCCESS && dev >= 0, "device %d", dev);
    CHECK(fake_cuda_contexts() == 0, "a host-only program got contexts "
          "0x%x from dcoll_init and a host call", fake_cuda_contexts());
    /* The program takes GPU 1; a thread of its, which never chose one,
     * calls on its buffer. */
    cudaSetDevice(1);
    float *d = NULL, h[N];
    for (int i = 0; i < N; i++)
        h[i] = 1;
    cudaMalloc((void **)&d, sizeof(h));
    cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
    /* Once here first: the world's pinned block is made (in this
     * thread's context) and kept, so the thread's call needs none. */
    float zero[N] = {0};
    float *z = NULL;
    cudaMalloc((void **)&z, sizeof(zero));
    cudaMemcpy(z, zero, sizeof(zero), cudaMemcpyHostToDevice);
    CHECK(dcoll_all_reduce(NULL, z, z, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "warm-up: %s",
          dcoll_last_error());
    cudaFree(z);
    pthread_t t;
    pthread_create(&t, NULL, on_gpu1, d);
    pthread_join(t, NULL);
    cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
    CHECK(h[0] == (float)n, "sum %g", h[0]);
    CHECK(fake_cuda_contexts() == 2u, "contexts 0x%x, want GPU 1's alone",
          fake_cuda_contexts());
    cudaFree(d);
}

int main(int argc, char **argv)
{
    bool ctx_mode = argc > 1 && !strcmp(argv[1], "contexts");
    bool abort_mode = argc > 1 && !strcmp(argv[1], "abort");
    bool pinned_mode = argc > 1 && !strcmp(argv[1], "pinned");
    bool copy_mode = argc > 1 && !strcmp(argv[1], "copyfail");
    bool split_mode = argc > 1 && !strcmp(argv[1], "split");
    /* MPI_THREAD_MULTIPLE, as dcoll_init asks when it starts MPI itself:
     * the watchdog then answers the others' roll calls at any time. */
    int level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (!ctx_mode)
        cudaSetDevice(0);
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    if (ctx_mode) {
        contexts();
    } else if (abort_mode) {
        lost_peer();
    } else if (pinned_mode) {
        pinned();
    } else if (copy_mode) {
        copy_fails();
    } else if (split_mode) {
        splits();
    } else {
        the_double();
        foreign();
        managed();
        multi_stream();
        host_said();
        agree();
        valid();
    }
    int rc = t_finish(ctx_mode      ? "double contexts"
                      : abort_mode  ? "double abort"
                      : pinned_mode ? "double pinned"
                      : copy_mode   ? "double copyfail"
                      : split_mode  ? "double split"
                                    : "double");
    dcoll_finalize();
    MPI_Finalize();
    return rc;
}
