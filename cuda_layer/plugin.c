/* The CUDA plugin's entry: what the core asks of CUDA and NCCL. Built as
 * its own shared object (libdcoll_cuda.so) and loaded by lib/gpu/plugin.c, so
 * the core never links CUDA; on a machine without a GPU it loads, probes,
 * and reports why it has nothing to offer. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#ifdef DCOLL_HAVE_HWLOC
#include <hwloc.h>
#endif
#ifdef DCOLL_HAVE_NCCL
#include <nccl.h>
#endif
#include "nccl_plugin.h"
#include "plugin_abi.h"
#include "select.h"

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

static int failed(const char *call, cudaError_t e);

static enum dcoll_mem_kind mem_kind(const void *p, int *device)
{
    struct cudaPointerAttributes a;
    *device = -1;
    /* Since CUDA 11, host memory CUDA does not know answers cudaSuccess
     * with cudaMemoryTypeUnregistered (cuda_runtime_api.h,
     * cudaPointerGetAttributes): a failure is a real one (memory of a
     * context this process cannot see, CUDA in an error state). It is
     * said, never taken for host memory, which would hand a device
     * pointer to an MPI that cannot read it. */
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        failed("cudaPointerGetAttributes", e);
        /* This call's error is in the message; it is not left for the
         * program's next cudaGetLastError (a sticky one stays). */
        cudaGetLastError();
        return DCOLL_MEM_UNKNOWN;
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

int dcoll_cuda_fail(const char *call, const char *why)
{
    snprintf(failure, sizeof(failure), "%s: %s", call, why);
    return -1;
}

static int failed(const char *call, cudaError_t e)
{
    return dcoll_cuda_fail(call, cudaGetErrorString(e));
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

/* The driver's context calls, where there is a driver: cudart has
 * loaded it by now (the double exports them itself). */
static int (*ctx_get)(void **ctx);
static int (*ctx_set)(void *ctx);
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void driver_load(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *from = drv ? drv : RTLD_DEFAULT;
    *(void **)&ctx_get = dlsym(from, "cuCtxGetCurrent");
    *(void **)&ctx_set = dlsym(from, "cuCtxSetCurrent");
}

/* Whether this thread has a CUDA context: 1 yes, 0 no, -1 the driver
 * cannot be asked. */
static int context_state(void)
{
    pthread_once(&driver_once, driver_load);
    void *ctx = NULL;
    if (!ctx_get || !ctx_set || ctx_get(&ctx) != 0)
        return -1;
    return ctx != NULL;
}

#define NO_CONTEXT (-2)

int dcoll_cuda_enter(int device)
{
    int old = NO_CONTEXT;
    if (context_state() != 0)   /* unknown: restored as cudart sees it */
        cudaGetDevice(&old);   /* reads the choice; makes no context */
    if (device >= 0 && device != old)
        cudaSetDevice(device);
    return old;
}

void dcoll_cuda_restore(int old)
{
    /* A thread that had no context is left without one: restoring "the
     * old device" would make a context on GPU 0 (cudaGetDevice answers 0
     * there), which exclusive-process mode refuses to others. */
    if (old == NO_CONTEXT) {
        if (ctx_set)
            ctx_set(NULL);
    } else if (old >= 0) {
        cudaSetDevice(old);
    }
}

void dcoll_cuda_leave(int old, int device)
{
    if (device >= 0 && device != old)
        dcoll_cuda_restore(old);
}

#define ON_DEVICE(device, call, what)                                        \
    do {                                                                     \
        int old_ = dcoll_cuda_enter(device);                                 \
        cudaError_t e_ = (call);                                             \
        dcoll_cuda_leave(old_, device);                                      \
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

/* Each GPU's NUMA node and this process's, from hwloc; -1 unknown. */
static int numa_nodes(int n, int *gpu_numa)
{
    int mine = -1;
    for (int i = 0; i < n; i++)
        gpu_numa[i] = -1;
#ifdef DCOLL_HAVE_HWLOC
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo))
        return -1;
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) == 0) {
        for (int i = 0; i < n; i++) {
            char bus[32];
            hwloc_obj_t o, up;
            if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) != cudaSuccess)
                continue;
            if ((o = hwloc_get_pcidev_by_busidstring(topo, bus)) &&
                (up = hwloc_get_non_io_ancestor_obj(topo, o)) && up->nodeset)
                gpu_numa[i] = hwloc_bitmap_first(up->nodeset);
        }
        hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
        hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
        if (hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) == 0) {
            hwloc_cpuset_to_nodeset(topo, cpus, nodes);
            if (hwloc_bitmap_weight(nodes) == 1)
                mine = hwloc_bitmap_first(nodes);
        }
        hwloc_bitmap_free(cpus);
        hwloc_bitmap_free(nodes);
    }
    hwloc_topology_destroy(topo);
#endif
    return mine;
}

static int select_device(int local_rank, int *device, char *how, size_t len)
{
    int n = 0;
    *device = -1;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        snprintf(how, len, "no GPU");
        return 0;
    }
    if (context_state() == 1) {
        cudaGetDevice(device);
        snprintf(how, len, "GPU %d, the program's current device", *device);
        return 0;
    }
    int *numa = malloc(sizeof(int) * (size_t)n);
    if (!numa)
        return failed("select_device", cudaErrorMemoryAllocation);
    int mine = numa_nodes(n, numa);
    *device = dcoll_choose_gpu(n, numa, mine, local_rank);
    int near = *device >= 0 && mine >= 0 && numa[*device] == mine;
    free(numa);
    /* Not made current: since CUDA 12 cudaSetDevice makes the primary
     * context (cuda_runtime_api.h), which a host-only program must not
     * get (in exclusive-process mode it would take the GPU from the
     * process meant to use it). The program sets it, as torch's do. */
    snprintf(how, len, "GPU %d, chosen for local rank %d (%s), not made "
             "current", *device, local_rank,
             near ? "on its NUMA node" : "no GPU known near its CPUs");
    return 0;
}

static const dcoll_cuda_plugin_t table = {
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
    .select_device = select_device,
#ifdef DCOLL_HAVE_NCCL
    .nccl_bytes = sizeof(ncclUniqueId),
    .device_uuid = dcoll_nccl_uuid,
    .nccl_id = dcoll_nccl_id,
    .nccl_comm = dcoll_nccl_comm,
    .nccl_free = dcoll_nccl_free,
    .nccl_coll = dcoll_nccl_coll,
    .nccl_wait = dcoll_nccl_wait,
    .event_record = dcoll_nccl_event_record,
    .event_poll = dcoll_nccl_event_poll,
    .event_wait = dcoll_nccl_event_wait,
    .event_free = dcoll_nccl_event_free,
    .nccl_comms = dcoll_nccl_comms,
    .group_start = dcoll_nccl_group_start,
    .group_end = dcoll_nccl_group_end,
    .nccl_takes = dcoll_nccl_takes,
    .nccl_split = dcoll_nccl_split,
#endif
};

__attribute__((visibility("default")))
const dcoll_cuda_plugin_t *dcoll_cuda_plugin_v8(void);

const dcoll_cuda_plugin_t *dcoll_cuda_plugin_v8(void)
{
    return &table;
}
