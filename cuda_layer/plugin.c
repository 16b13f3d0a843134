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

static const struct dcoll_cuda_plugin table = {
    .abi = DCOLL_PLUGIN_ABI,
    .probe = probe,
    .versions = versions,
    .pci_bus_id = pci_bus_id,
    .mem_kind = mem_kind,
};

__attribute__((visibility("default")))
const struct dcoll_cuda_plugin *dcoll_cuda_plugin_v1(void);

const struct dcoll_cuda_plugin *dcoll_cuda_plugin_v1(void)
{
    return &table;
}
