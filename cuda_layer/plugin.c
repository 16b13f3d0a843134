/* The CUDA plugin's entry: what the core asks of CUDA and NCCL. Built as
 * its own shared object (libdcoll_cuda.so) and loaded by lib/gpu/plugin.c, so
 * the core never links CUDA; on a machine without a GPU it loads, probes,
 * and reports why it has nothing to offer. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#ifdef DCOLL_HAVE_HWLOC
#include <hwloc.h>
#endif
#ifdef DCOLL_HAVE_NCCL
#include <nccl.h>
#endif
#include "ipc_plugin.h"
#include "nccl_plugin.h"
#include "plugin_abi.h"
#include "plugin_build.h"

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
/* A context the thread had, kept to be made current again: a device
 * number would bring back the device's primary context instead of the
 * program's own (cuCtxCreate, a green context). Enters nest rarely; a
 * few deep is plenty. Returned as SAVED - depth. */
#define SAVED (-3)
static _Thread_local void *saved[4];
static _Thread_local int nsaved;

int dcoll_cuda_enter(int device)
{
    /* The common case first, one thread-local read in cudart: already
     * there, nothing to change or restore. (A thread without a context
     * reads 0 here; entering device 0 then lets the call make device 0's
     * context, the one it needs anyway.) */
    int cur;
    if (device >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur == device)
        return device;
    int old = NO_CONTEXT, state = context_state();
    if (state != 0)   /* unknown: restored as cudart sees it */
        cudaGetDevice(&old);   /* reads the choice; makes no context */
    if (device >= 0 && device != old) {
        if (state == 1 && nsaved < 4 && ctx_get(&saved[nsaved]) == 0)
            old = SAVED - nsaved++;
        cudaSetDevice(device);
    }
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
    } else if (old <= SAVED) {
        nsaved = SAVED - old;
        ctx_set(saved[nsaved]);
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
    DCOLL_CUDA_ON(device, call, what, failed)

static int copy(void *dst, const void *src, size_t bytes, int device,
                void *stream)
{
    ON_DEVICE(device, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                      (cudaStream_t)stream),
              "cudaMemcpyAsync");
}

int dcoll_cuda_copy_shape(const dcoll_plugin_shape_t *dst,
                          const dcoll_plugin_shape_t *src, int device,
                          void *stream)
{
    /* One 2-D copy a plane; a single row's pitch is its width, which
     * cudaMemcpy2DAsync wants no smaller. */
    size_t w = src->width, rows = src->rows;
    size_t dp = rows > 1 ? dst->pitch : w, sp = rows > 1 ? src->pitch : w;
    int old = dcoll_cuda_enter(device);
    cudaError_t e = cudaSuccess;
    for (size_t k = 0; k < src->planes && e == cudaSuccess && w && rows; k++)
        e = cudaMemcpy2DAsync(dst->buf + k * dst->plane_pitch, dp,
                              src->buf + k * src->plane_pitch, sp, w, rows,
                              cudaMemcpyDefault, (cudaStream_t)stream);
    dcoll_cuda_leave(old, device);
    return e == cudaSuccess ? 0 : failed("cudaMemcpy2DAsync", e);
}

/* In relaxed capture mode, as the NCCL half's waits (nccl.c): another
 * thread's graph capture survives it. */
static cudaError_t sync_relaxed(cudaStream_t s)
{
    enum cudaStreamCaptureMode m = dcoll_cuda_relax();
    cudaError_t e = cudaStreamSynchronize(s);
    dcoll_cuda_unrelax(m);
    return e;
}

static int sync_stream(int device, void *stream)
{
    ON_DEVICE(device, sync_relaxed((cudaStream_t)stream),
              "cudaStreamSynchronize");
}

/* A test setting: a list of integers ("0,0,1,1") into out (up to n);
 * how many were read, 0 where unset. For the doubles, which have GPUs
 * but no topology to place them in. */
static int test_list(const char *name, int *out, int n)
{
    const char *e = getenv(name);
    int k = 0;
    while (e && *e && k < n) {
        char *end;
        out[k++] = (int)strtol(e, &end, 10);
        e = *end == ',' ? end + 1 : "";
    }
    return k;
}

/* Each GPU's NUMA node and this process's, from hwloc; -1 unknown.
 * DCOLL_TEST_GPU_NUMA (each GPU's) and DCOLL_TEST_MY_NUMA (each local
 * rank's) stand in for the machine's in tests. */
static int numa_nodes(int n, int *gpu_numa, int local_rank)
{
    int mine = -1, ranks[256];
    for (int i = 0; i < n; i++)
        gpu_numa[i] = -1;
    if (test_list("DCOLL_TEST_GPU_NUMA", gpu_numa, n) > 0) {
        int k = test_list("DCOLL_TEST_MY_NUMA", ranks, 256);
        return local_rank >= 0 && local_rank < k ? ranks[local_rank] : -1;
    }
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

/* The device the program made current, where it made a context; -1. */
static int current_device(void)
{
    int d = -1;
    if (context_state() == 1 && cudaGetDevice(&d) != cudaSuccess)
        d = -1;
    return d;
}

/* What this process sees, for the core's choice over the node. A GPU is
 * named by its PCI address, which CUDA_VISIBLE_DEVICES does not change. */
static int gpu_view(int local_rank, dcoll_gpu_view_t *v)
{
    int n = 0;
    memset(v, 0, sizeof(*v));
    v->numa = v->current = -1;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0)
        return 0;
    if (n > DCOLL_VIEW_MAX_GPUS)
        n = DCOLL_VIEW_MAX_GPUS;
    for (int i = 0; i < n; i++) {
        char bus[32] = "";
        unsigned dom = 0, b = 0, dev = 0, fn = 0;
        if (cudaDeviceGetPCIBusId(bus, sizeof(bus), i) != cudaSuccess ||
            sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn) != 4)
            return dcoll_cuda_fail("gpu_view", "a GPU without a PCI address");
        v->pci[i] = (uint32_t)(dom << 16 | (b & 0xff) << 8 |
                               (dev & 0x1f) << 3 | (fn & 7));
    }
    v->ngpus = n;
    v->numa = numa_nodes(n, v->gpu_numa, local_rank);
    v->current = current_device();
    return 0;
}

/* Without the node's picture (asked where gpu_view is NULL): the
 * current device, else by local rank, as torch's default. */
static int select_device(int local_rank, int *device, char *how, size_t len)
{
    int n = 0;
    *device = -1;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        snprintf(how, len, "no GPU");
        return 0;
    }
    if ((*device = current_device()) >= 0) {
        snprintf(how, len, "GPU %d, the program's current device", *device);
        return 0;
    }
    *device = local_rank % n;
    snprintf(how, len, "GPU %d, by local rank %d, not made current",
             *device, local_rank);
    return 0;
}

static const dcoll_cuda_plugin_t table = {
    .id = {DCOLL_PLUGIN_MAGIC, sizeof(dcoll_cuda_plugin_t),
           DCOLL_BUILD_VERSION, DCOLL_BUILD_ID},
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
    .gpu_view = gpu_view,
    .device_uuid = dcoll_ipc_uuid,
#ifdef DCOLL_HAVE_NCCL
    .nccl_bytes = sizeof(ncclUniqueId),
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
    .nccl_check = dcoll_nccl_check,
    .nccl_release = dcoll_nccl_release,
    .nccl_shrink = dcoll_nccl_shrink,
    .nccl_exchange = dcoll_nccl_exchange,
#endif
    .dev_alloc = dcoll_ipc_dev_alloc,
    .dev_free = dcoll_ipc_dev_free,
    .ipc_export = dcoll_ipc_export,
    .ipc_open = dcoll_ipc_open,
    .ipc_close = dcoll_ipc_close,
    .ipc_event = dcoll_ipc_event,
    .ipc_event_open = dcoll_ipc_event_open,
    .ipc_event_free = dcoll_ipc_event_free,
    .ipc_record = dcoll_ipc_record,
    .ipc_query = dcoll_ipc_query,
    .ipc_wait = dcoll_ipc_wait,
#ifdef DCOLL_HAVE_KERNELS
    .reduce = dcoll_ipc_reduce,
#endif
    .mem_range = dcoll_ipc_mem_range,
    .copy_shape = dcoll_cuda_copy_shape,
};

/* The one export (plugin_abi.h's DCOLL_CUDA_PLUGIN_ENTRY). */
__attribute__((visibility("default")))
const dcoll_cuda_plugin_t *dcoll_cuda_plugin(void);

const dcoll_cuda_plugin_t *dcoll_cuda_plugin(void)
{
    return &table;
}
