/* dcoll-gpu-probe: what this machine's CUDA does where dcoll depends on
 * it, measured, for scripts/gpu.sh (one rank or more under mpirun):
 *   - what cudaPointerGetAttributes answers for device, pinned, managed
 *     and ordinary host memory;
 *   - whether a copy queued on a non-blocking stream is still running
 *     when the call returns (stream order, not the host's);
 *   - how long a blocking dcoll call on a GPU buffer takes beyond the
 *     stream's own work: a 4-byte all_reduce against an empty
 *     cudaStreamSynchronize, medians of 200;
 *   - pinned and pageable copy bandwidth, both ways, 64 MiB.
 * Built against the CUDA runtime, and against the CUDA double (then the
 * figures are the double's). Exits 1 if a check fails, 77 with no GPU. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    double call[REPS], sync[REPS];
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
    cudaFree(d);
    cudaStreamDestroy(s);
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
    cudaFreeHost(p);
    cudaFree(d);
    free(h);
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
    bandwidth();
    dcoll_finalize();
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("probe: %d failure(s)\n", failures);
    MPI_Finalize();
    return failures != 0;
}
