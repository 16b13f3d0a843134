/* dcoll-gpu-probe: what this machine's CUDA does where dcoll depends on
 * it, measured, for scripts/gpu.sh (one rank or more under mpirun):
 *   - what cudaPointerGetAttributes answers for device, pinned, managed
 *     and ordinary host memory;
 *   - whether a copy queued on a non-blocking stream is still running
 *     when the call returns (stream order, not the host's);
 *   - how long a blocking dcoll call on a GPU buffer takes beyond the
 *     stream's own work: a 4-byte all_reduce against an empty
 *     cudaStreamSynchronize, medians of 200;
 *   - each item on the path of a blocking NCCL call, timed alone
 *     (DCOLL_PROBE_ITEMS calls each, default 10^6, rank 0): the pointer
 *     query for device, pinned and ordinary memory, cudaGetDevice,
 *     cuCtxGetCurrent, cudaStreamIsCapturing, an event's record and
 *     query, cudaStreamQuery on an idle stream, the capture-mode swap,
 *     ncclCommGetAsyncError, sched_yield and the clock;
 *   - pinned and pageable copy bandwidth, both ways, and device to
 *     device, 64 MiB;
 *   - on one rank, whether a 256 MiB all_reduce on one stream overlaps a
 *     kernel twice its length on another, and whether the blocking call
 *     returns before that kernel ends (it waits on its own stream only).
 *     The kernel is
 *     a spin of fixed length, PTX loaded through the driver (libcuda) at
 *     run time, so that the probe needs no CUDA compiler.
 * Built against the CUDA runtime, and against the CUDA double (then the
 * figures are the double's). Exits 1 if a check fails, 77 with no GPU. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "dcoll/dcoll.h"

static int me, failures;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return v[n / 2];
}

static const char *kind(const void *p)
{
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    switch (a.type) {
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeHost: return "pinned host";
    case cudaMemoryTypeManaged: return "managed";
    default: return "unregistered host";
    }
}

static void kinds(void)
{
    void *d = NULL, *p = NULL, *m = NULL, *h = malloc(64);
    cudaMalloc(&d, 64);
    cudaMallocHost(&p, 64);
    cudaMallocManaged(&m, 64, cudaMemAttachGlobal);
    const char *want[4] = {"device", "pinned host", "managed",
                           "unregistered host"};
    const char *got[4] = {kind(d), kind(p), kind(m), kind(h)};
    for (int i = 0; i < 4; i++) {
        if (me == 0)
            printf("pointer kind: %-18s -> %s\n", want[i], got[i]);
        if (strcmp(want[i], got[i]))
            failures++;
    }
    cudaFree(d);
    cudaFreeHost(p);
    cudaFree(m);
    free(h);
}

static void ordering(void)
{
    size_t bytes = (size_t)64 << 20;
    void *d = NULL, *p = NULL;
    cudaStream_t s;
    cudaEvent_t e;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaMalloc(&d, bytes);
    cudaMallocHost(&p, bytes);
    double t0 = now();
    cudaMemcpyAsync(p, d, bytes, cudaMemcpyDeviceToHost, s);
    cudaEventRecord(e, s);
    double queued = now() - t0;
    int pending = cudaEventQuery(e) == cudaErrorNotReady;
    cudaStreamSynchronize(s);
    double done = now() - t0;
    if (me == 0)
        printf("stream order: a 64 MiB copy queued in %.1f us, %s at "
               "return, done after %.1f us\n", queued * 1e6,
               pending ? "still running" : "already done", done * 1e6);
    cudaFreeHost(p);
    cudaFree(d);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
}

static void blocking_wait(void)
{
    enum { REPS = 200 };
    float *d = NULL;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc((void **)&d, sizeof(float));
    cudaMemset(d, 0, sizeof(float));
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    double call[REPS], sync[REPS], said[REPS], ordered[REPS];
    /* With the memory said (no pointer query), and stream-ordered (the
     * call returns once enqueued; the sync that follows waits). */
    dcoll_coll_opts_t k = o, q = o;
    k.mask |= DCOLL_COLL_OPT_MEMORY;
    k.memory = DCOLL_MEMORY_CUDA;
    q = k;
    q.mask |= DCOLL_COLL_OPT_STREAM_ORDERED;
    for (int i = 0; i < REPS; i++) {
        double t0 = now();
        int bad = dcoll_all_reduce(NULL, d, d, 1, DCOLL_FLOAT32, DCOLL_SUM,
                                   &k, NULL) != 0;
        said[i] = now() - t0;
        t0 = now();
        bad |= dcoll_all_reduce(NULL, d, d, 1, DCOLL_FLOAT32, DCOLL_SUM, &q,
                                NULL) != 0;
        cudaStreamSynchronize(s);
        ordered[i] = now() - t0;
        if (bad) {
            fprintf(stderr, "[rank %d] probe all_reduce (memory said): %s\n",
                    me, dcoll_last_error());
            failures++;
            break;
        }
    }
    for (int i = 0; i < REPS; i++) {
        double t0 = now();
        if (dcoll_all_reduce(NULL, d, d, 1, DCOLL_FLOAT32, DCOLL_SUM, &o,
                             NULL)) {
            fprintf(stderr, "[rank %d] probe all_reduce: %s\n", me,
                    dcoll_last_error());
            failures++;
            break;
        }
        call[i] = now() - t0;
        t0 = now();
        cudaStreamSynchronize(s);
        sync[i] = now() - t0;
    }
    int avail = 0;
    const char *text = "";
    dcoll_backend_status("nccl", &avail, &text);
    if (me == 0)
        printf("blocking wait: a 4-byte all_reduce on the GPU takes %.1f us "
               "(median of %d), an empty cudaStreamSynchronize %.1f us "
               "(NCCL %s)\n", median(call, REPS) * 1e6, REPS,
               median(sync, REPS) * 1e6, avail ? "available" : "absent");
    if (me == 0)
        printf("blocking wait: with opts.memory said %.1f us; stream-ordered "
               "(DCOLL_COLL_OPT_STREAM_ORDERED) with the stream's sync after "
               "%.1f us (medians of %d)\n", median(said, REPS) * 1e6,
               median(ordered, REPS) * 1e6, REPS);
    cudaFree(d);
    cudaStreamDestroy(s);
}

/* NCCL's calls, found at run time (the plugin loaded libnccl; the
 * double exports them itself): NULL where there is none. */
typedef struct { char internal[128]; } probe_uid;
static void *nccl_sym(const char *name)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;
    return f ? f : dlsym(RTLD_DEFAULT, name);
}

/* ns a call of what BODY does, over reps calls. */
#define ITEM(what, body)                                                     \
    do {                                                                     \
        double t0_ = now();                                                  \
        for (long i_ = 0; i_ < reps; i_++) {                                 \
            body;                                                            \
        }                                                                    \
        printf("  %-44s %8.1f ns\n", what, (now() - t0_) / reps * 1e9);     \
    } while (0)

static void items(void)
{
    const char *e = getenv("DCOLL_PROBE_ITEMS");
    long reps = e ? atol(e) : 1000000;
    if (me != 0 || reps < 1)
        return;
    struct cudaPointerAttributes a;
    float *d = NULL, *pin = NULL, *host = malloc(64);
    cudaMalloc((void **)&d, 64);
    cudaMallocHost((void **)&pin, 64);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    cudaEventRecord(ev, s);
    cudaStreamSynchronize(s);
    int dev;
    void *ctx;
    enum cudaStreamCaptureStatus cs;
    struct timespec ts;
    int (*ctx_get)(void **) = (int (*)(void **))dlsym(RTLD_DEFAULT,
                                                      "cuCtxGetCurrent");
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!ctx_get && drv)
        ctx_get = (int (*)(void **))dlsym(drv, "cuCtxGetCurrent");
    printf("items on the call path (%ld calls each, rank 0):\n", reps);
    ITEM("cudaPointerGetAttributes, device memory",
         cudaPointerGetAttributes(&a, d));
    ITEM("cudaPointerGetAttributes, pinned memory",
         cudaPointerGetAttributes(&a, pin));
    ITEM("cudaPointerGetAttributes, ordinary memory",
         cudaPointerGetAttributes(&a, host));
    ITEM("cudaGetDevice", cudaGetDevice(&dev));
    if (ctx_get)
        ITEM("cuCtxGetCurrent", ctx_get(&ctx));
    ITEM("cudaStreamIsCapturing", cudaStreamIsCapturing(s, &cs));
    ITEM("cudaEventRecord, idle stream", cudaEventRecord(ev, s));
    cudaStreamSynchronize(s);
    ITEM("cudaEventQuery, done event", cudaEventQuery(ev));
    ITEM("cudaStreamQuery, idle stream", cudaStreamQuery(s));
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    ITEM("cudaThreadExchangeStreamCaptureMode, twice",
         cudaThreadExchangeStreamCaptureMode(&m);
         cudaThreadExchangeStreamCaptureMode(&m));
    int (*get_id)(probe_uid *) = (int (*)(probe_uid *))nccl_sym(
        "ncclGetUniqueId");
    int (*init)(void **, int, probe_uid, int) =
        (int (*)(void **, int, probe_uid, int))nccl_sym("ncclCommInitRank");
    int (*async)(void *, int *) = (int (*)(void *, int *))nccl_sym(
        "ncclCommGetAsyncError");
    int (*destroy)(void *) = (int (*)(void *))nccl_sym("ncclCommDestroy");
    probe_uid id;
    void *comm = NULL;
    int st;
    if (get_id && init && async && destroy && get_id(&id) == 0 &&
        init(&comm, 1, id, 0) == 0) {
        ITEM("ncclCommGetAsyncError", async(comm, &st));
        destroy(comm);
    } else {
        printf("  %-44s %8s\n", "ncclCommGetAsyncError", "no NCCL");
    }
    ITEM("sched_yield", sched_yield());
    ITEM("clock_gettime(CLOCK_MONOTONIC)",
         clock_gettime(CLOCK_MONOTONIC, &ts));
    cudaEventDestroy(ev);
    cudaStreamDestroy(s);
    cudaFreeHost(pin);
    cudaFree(d);
    free(host);
}

static void bandwidth(void)
{
    size_t bytes = (size_t)64 << 20;
    void *d = NULL, *p = NULL, *h = malloc(bytes);
    cudaMalloc(&d, bytes);
    cudaMallocHost(&p, bytes);
    memset(h, 1, bytes);
    struct { const char *what; void *dst; const void *src; } run[4] = {
        {"pinned -> device", d, p}, {"device -> pinned", p, d},
        {"pageable -> device", d, h}, {"device -> pageable", h, d},
    };
    for (int i = 0; i < 4; i++) {
        double best = 1e9;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            cudaMemcpy(run[i].dst, run[i].src, bytes, cudaMemcpyDefault);
            double t = now() - t0;
            best = t < best ? t : best;
        }
        if (me == 0)
            printf("bandwidth: %-19s %7.2f GB/s\n", run[i].what,
                   (double)bytes / best / 1e9);
    }
    /* Device to device, the ceiling of a transport between ranks that
     * share the GPU: cudaMemcpy of device memory returns before the copy
     * is done, so timed to its stream's end. The payload rate; the
     * memory moves twice as many bytes (each read and written). */
    void *d2 = NULL;
    cudaStream_t s;
    cudaMalloc(&d2, bytes);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        cudaMemcpyAsync(d2, d, bytes, cudaMemcpyDeviceToDevice, s);
        cudaStreamSynchronize(s);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    if (me == 0)
        printf("bandwidth: %-19s %7.2f GB/s (payload; twice that read and "
               "written)\n", "device -> device", (double)bytes / best / 1e9);
    cudaStreamDestroy(s);
    cudaFree(d2);
    cudaFreeHost(p);
    cudaFree(d);
    free(h);
}

/* A kernel that spins for a given number of clock cycles, one thread. */
static const char spin_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 cycles)\n{\n"
    "  .reg .u64 %rd<4>;\n  .reg .pred %p;\n"
    "  ld.param.u64 %rd1, [cycles];\n  mov.u64 %rd2, %clock64;\n"
    "LOOP:\n  mov.u64 %rd3, %clock64;\n  sub.u64 %rd3, %rd3, %rd2;\n"
    "  setp.lt.u64 %p, %rd3, %rd1;\n  @%p bra LOOP;\n  ret;\n}\n";

typedef int (*load_fn)(void **, const void *);
typedef int (*get_fn)(void **, void *, const char *);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned,
                         unsigned, unsigned, unsigned, void *, void **,
                         void **);

/* The spin kernel, or NULL where the driver would not load it. */
static void *spin_kernel(launch_fn *launch)
{
    void *cu = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cu)
        return NULL;
    load_fn load = (load_fn)dlsym(cu, "cuModuleLoadData");
    get_fn get = (get_fn)dlsym(cu, "cuModuleGetFunction");
    *launch = (launch_fn)dlsym(cu, "cuLaunchKernel");
    void *mod = NULL, *fn = NULL;
    if (!load || !get || !*launch || load(&mod, spin_ptx) ||
        get(&fn, mod, "spin"))
        return NULL;
    return fn;
}

/* Best of three host-timed runs of a kernel of `cycles` on ks. */
static double spin_time(launch_fn launch, void *fn, cudaStream_t ks,
                        unsigned long long cycles)
{
    void *args[] = {&cycles};
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        launch(fn, 1, 1, 1, 1, 1, 1, 0, ks, args, NULL);
        cudaStreamSynchronize(ks);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static void overlap(int nranks)
{
    launch_fn launch = NULL;
    void *fn = spin_kernel(&launch);
    if (!fn || nranks != 1) {
        if (me == 0)
            printf("overlap: not measured (%s)\n", !fn ? "the driver "
                   "(libcuda.so.1) did not load the spin kernel" :
                   "one rank only: processes sharing a GPU time-slice it");
        return;
    }
    size_t count = (size_t)64 << 20;   /* 256 MiB of float, out of place */
    float *in = NULL, *out = NULL;
    cudaStream_t ks, cs;
    cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
    cudaMalloc((void **)&in, count * sizeof(float));
    cudaMalloc((void **)&out, count * sizeof(float));
    cudaMemset(in, 0, count * sizeof(float));
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = cs;
    double coll = 1e9, both = 1e9, ret = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        if (dcoll_all_reduce(NULL, in, out, count, DCOLL_FLOAT32, DCOLL_SUM,
                             &o, NULL))
            goto failed;
        cudaStreamSynchronize(cs);
        double t = now() - t0;
        coll = t < coll ? t : coll;
    }
    /* The kernel made twice as long as the call: run one after the other
     * they take 3 units, overlapped 2. */
    unsigned long long cycles = 1000000;
    double unit = spin_time(launch, fn, ks, cycles);
    cycles = (unsigned long long)((double)cycles * 2 * coll / unit);
    if (cycles < 1000)
        cycles = 1000;
    double kern = spin_time(launch, fn, ks, cycles);
    void *args[] = {&cycles};
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        launch(fn, 1, 1, 1, 1, 1, 1, 0, ks, args, NULL);
        if (dcoll_all_reduce(NULL, in, out, count, DCOLL_FLOAT32, DCOLL_SUM,
                             &o, NULL))
            goto failed;
        double t = now() - t0;
        ret = t < ret ? t : ret;
        cudaStreamSynchronize(cs);
        cudaStreamSynchronize(ks);
        t = now() - t0;
        both = t < both ? t : both;
    }
    bool overlaps = both < kern + 0.5 * coll;
    bool own = ret < kern * 0.8;
    printf("overlap: spin kernel alone %.3f ms, 256 MiB all_reduce (out of "
           "place) alone %.3f ms, both on two streams %.3f ms, %.3f ms if "
           "one after the other (%s); the blocking call returned after "
           "%.3f ms with the kernel still running (%s)\n",
           kern * 1e3, coll * 1e3, both * 1e3, (kern + coll) * 1e3,
           overlaps ? "they overlap" : "NO OVERLAP", ret * 1e3,
           own ? "it waited on its own stream only" :
                 "IT WAITED FOR THE OTHER STREAM");
    failures += !overlaps + !own;
    goto done;
failed:
    fprintf(stderr, "[rank %d] overlap all_reduce: %s\n", me,
            dcoll_last_error());
    failures++;
done:
    cudaDeviceSynchronize();
    cudaFree(in);
    cudaFree(out);
    cudaStreamDestroy(ks);
    cudaStreamDestroy(cs);
}

int main(int argc, char **argv)
{
    int level, n = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        if (me == 0)
            printf("no GPU here (%s): skipping\n",
                   cudaGetErrorString(cudaGetLastError()));
        MPI_Finalize();
        return 77;
    }
    if (dcoll_init(NULL)) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    int dev = 0;
    dcoll_device(&dev);
    cudaSetDevice(dev < 0 ? 0 : dev);
    const char *text = "";
    int avail = 0;
    dcoll_backend_status("nccl", &avail, &text);
    if (me == 0)
        printf("probe: %s\n", text);
    kinds();
    ordering();
    blocking_wait();
    items();
    bandwidth();
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    overlap(nranks);
    dcoll_finalize();
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("probe: %d failure(s)\n", failures);
    MPI_Finalize();
    return failures != 0;
}
