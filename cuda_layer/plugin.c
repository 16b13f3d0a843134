/* The CUDA plugin's entry: what the core asks of CUDA and NCCL. Built as
 * its own shared object (libdcoll_cuda.so) and loaded by lib/plugin.c, so
 * the core never links CUDA; on a machine without a GPU it loads, probes,
 * and reports why it has nothing to offer. */
#include <stdio.h>
#include <cuda_runtime_api.h>
#ifdef DCOLL_HAVE_NCCL
#include <nccl.h>
#endif
#include "plugin.h"

static void probe(int *ngpus, char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, whylen, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        n = 0;
    } else if (n == 0) {
        snprintf(why, whylen, "the driver reports no device");
    }
    *ngpus = n;
}

static void versions(int *runtime, int *driver, int *nccl)
{
    *runtime = *driver = *nccl = 0;
    if (cudaRuntimeGetVersion(runtime) != cudaSuccess)
        *runtime = 0;
    if (cudaDriverGetVersion(driver) != cudaSuccess)
        *driver = 0;
#ifdef DCOLL_HAVE_NCCL
    if (ncclGetVersion(nccl) != ncclSuccess)
        *nccl = 0;
#endif
}

static int pci_bus_id(int i, char *busid, size_t len)
{
    return cudaDeviceGetPCIBusId(busid, (int)len, i) == cudaSuccess ? 0 : -1;
}

static enum dcoll_mem_kind mem_kind(const void *p, int *device)
{
    struct cudaPointerAttributes a;
    *device = -1;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* a host pointer is not an error to keep */
        return DCOLL_MEM_HOST;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
        *device = a.device;
        return DCOLL_MEM_DEVICE;
    case cudaMemoryTypeManaged:
        *device = a.device;
        return DCOLL_MEM_MANAGED;
    case cudaMemoryTypeHost:
        return DCOLL_MEM_PINNED;
    default:
        return DCOLL_MEM_HOST;
    }
}

/* The text of the last CUDA failure, for the core's message. Per thread,
 * as the core's own last error is. */
static _Thread_local char failure[256];

static int failed(const char *call, cudaError_t e)
{
    snprintf(failure, sizeof(failure), "%s: %s", call, cudaGetErrorString(e));
    return -1;
}

static const char *last_error(void)
{
    return failure;
}

static void *host_alloc(size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        failed("cudaMallocHost", e);
        return NULL;
    }
    return p;
}

static void host_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

/* Run on device, then put the caller's current device back: dcoll must
 * not change what the program's next CUDA call does. */
#define ON_DEVICE(device, call, what)                                        \
    do {                                                                     \
        int old_ = -1;                                                       \
        cudaGetDevice(&old_);                                                \
        if ((device) >= 0 && (device) != old_)                               \
            cudaSetDevice(device);                                           \
        cudaError_t e_ = (call);                                             \
        if ((device) >= 0 && (device) != old_ && old_ >= 0)                  \
            cudaSetDevice(old_);                                             \
        if (e_ != cudaSuccess)                                               \
            return failed(what, e_);                                         \
        return 0;                                                            \
    } while (0)

static int copy(void *dst, const void *src, size_t bytes, int device,
                void *stream)
{
    ON_DEVICE(device, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                      (cudaStream_t)stream),
              "cudaMemcpyAsync");
}

static int sync_stream(int device, void *stream)
{
    ON_DEVICE(device, cudaStreamSynchronize((cudaStream_t)stream),
              "cudaStreamSynchronize");
}

static const struct dcoll_cuda_plugin table = {
    .abi = DCOLL_PLUGIN_ABI,
    .probe = probe,
    .versions = versions,
    .pci_bus_id = pci_bus_id,
    .mem_kind = mem_kind,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .copy = copy,
    .sync = sync_stream,
    .last_error = last_error,
};

__attribute__((visibility("default")))
const struct dcoll_cuda_plugin *dcoll_cuda_plugin_v1(void);

const struct dcoll_cuda_plugin *dcoll_cuda_plugin_v1(void)
{
    return &table;
}
