/* dcoll's cost per blocking NCCL call above NCCL by hand, on the CUDA and
 * NCCL doubles, for callgrind: one rank, a 16-float all_reduce on the
 * device, N times each way. bench/gpu-overhead.sh runs this under
 * callgrind and divides each loop's inclusive instruction count by N.
 * The doubles' NCCL and stream work is the same on both sides; what
 * differs is dcoll's path: the checks, the route, the pointer queries,
 * the device checks, the events, the wait. */
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include "dcoll/dcoll_mpi.h"

#define N 2000
#define NOINLINE __attribute__((noipa))

static float *d;
static cudaStream_t s;
static ncclComm_t comm;
static dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;

#define LOOP(name, call)                                                     \
    NOINLINE static int name(void)                                           \
    {                                                                        \
        int bad = 0;                                                         \
        for (int i = 0; i < N; i++)                                          \
            bad |= (call) != 0;                                              \
        return bad;                                                          \
    }

LOOP(via_dcoll_blocking,
     dcoll_all_reduce(NULL, d, d, 16, DCOLL_FLOAT32, DCOLL_SUM, &o, NULL))
LOOP(via_nccl_enqueue,
     ncclAllReduce(d, d, 16, ncclFloat, ncclSum, comm, s))
LOOP(via_nccl_blocking,
     ncclAllReduce(d, d, 16, ncclFloat, ncclSum, comm, s) ||
         cudaStreamSynchronize(s))
#ifdef DCOLL_COLL_OPT_STREAM_ORDERED
static dcoll_coll_opts_t ordered;
LOOP(via_dcoll_ordered,
     dcoll_all_reduce(NULL, d, d, 16, DCOLL_FLOAT32, DCOLL_SUM, &ordered,
                      NULL))
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (dcoll_init(NULL)) {
        fprintf(stderr, "gpu_overhead: %s\n", dcoll_last_error());
        return 1;
    }
    int dev = 0;
    dcoll_device(&dev);
    cudaSetDevice(dev);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc((void **)&d, 16 * sizeof(float));
    cudaMemset(d, 0, 16 * sizeof(float));
    cudaDeviceSynchronize();
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) || ncclCommInitRank(&comm, 1, id, 0)) {
        fprintf(stderr, "gpu_overhead: no NCCL communicator\n");
        return 1;
    }
    o.mask = DCOLL_COLL_OPT_STREAM | DCOLL_COLL_OPT_MEMORY;
    o.stream = s;
    o.memory = DCOLL_MEMORY_CUDA;
    /* The group's communicator made, and each path warm. */
    int bad = dcoll_all_reduce(NULL, d, d, 16, DCOLL_FLOAT32, DCOLL_SUM, &o,
                               NULL) != 0;
    bad |= via_dcoll_blocking() | via_nccl_enqueue() | via_nccl_blocking();
    cudaStreamSynchronize(s);
#ifdef DCOLL_COLL_OPT_STREAM_ORDERED
    ordered = o;
    ordered.mask |= DCOLL_COLL_OPT_STREAM_ORDERED;
    bad |= via_dcoll_ordered();
    cudaStreamSynchronize(s);
#endif
    printf("calls per loop: %d\n", N);
    ncclCommDestroy(comm);
    cudaFree(d);
    dcoll_finalize();
    MPI_Finalize();
    return bad;
}
