/* The plugin's CUDA IPC: device memory and interprocess events
 * that processes sharing a GPU export to each other, for the core's IPC
 * transport (lib/gpu/ipc.c). Each call enters the GPU it concerns and
 * leaves the caller's device as it was. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "ipc_plugin.h"
#include "nccl_plugin.h"
#include "reduce.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == DCOLL_IPC_HANDLE_BYTES &&
                   sizeof(cudaIpcEventHandle_t) == DCOLL_IPC_HANDLE_BYTES,
               "CUDA's IPC handles are 64 bytes");

static int failed(const char *call, cudaError_t e)
{
    cudaGetLastError();   /* not left for the program's next check */
    return dcoll_cuda_fail(call, cudaGetErrorString(e));
}

/* One CUDA call on device: 0, or -1 naming it. */
#define ON(device, call, what) DCOLL_CUDA_ON(device, call, what, failed)

void *dcoll_ipc_dev_alloc(size_t bytes, int device)
{
    void *p = NULL;
    int old = dcoll_cuda_enter(device);
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    dcoll_cuda_leave(old, device);
    if (e != cudaSuccess) {
        failed("cudaMalloc", e);
        return NULL;
    }
    return p;
}

void dcoll_ipc_dev_free(void *p, int device)
{
    if (!p)
        return;
    int old = dcoll_cuda_enter(device);
    cudaFree(p);
    dcoll_cuda_leave(old, device);
}

int dcoll_ipc_export(void *base, int device,
                     unsigned char handle[DCOLL_IPC_HANDLE_BYTES])
{
    cudaIpcMemHandle_t h;
    int old = dcoll_cuda_enter(device);
    cudaError_t e = cudaIpcGetMemHandle(&h, base);
    dcoll_cuda_leave(old, device);
    if (e != cudaSuccess)
        return failed("cudaIpcGetMemHandle", e);
    memcpy(handle, &h, sizeof(h));
    return 0;
}

/* cuMemGetAddressRange, from the driver cudart has loaded (the double
 * exports its own); the runtime has no such call. */
static int (*range_of)(unsigned long long *base, size_t *size,
                       unsigned long long p);
static pthread_once_t range_once = PTHREAD_ONCE_INIT;

static void range_load(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    *(void **)&range_of = dlsym(drv ? drv : RTLD_DEFAULT,
                                "cuMemGetAddressRange_v2");
}

int dcoll_ipc_mem_range(const void *p, int device, void **base,
                        size_t *size)
{
    pthread_once(&range_once, range_load);
    if (!range_of)
        return dcoll_cuda_fail("cuMemGetAddressRange", "not in the driver");
    unsigned long long b = 0;
    size_t n = 0;
    int old = dcoll_cuda_enter(device);
    int rc = range_of(&b, &n, (unsigned long long)(uintptr_t)p);
    dcoll_cuda_leave(old, device);
    if (rc)
        return dcoll_cuda_fail("cuMemGetAddressRange", "not device memory "
                               "of this process");
    *base = (void *)(uintptr_t)b;
    *size = n;
    return 0;
}

int dcoll_ipc_open(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                   int device, void **p)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof(h));
    *p = NULL;
    int old = dcoll_cuda_enter(device);
    cudaError_t e = cudaIpcOpenMemHandle(p, h,
                                         cudaIpcMemLazyEnablePeerAccess);
    dcoll_cuda_leave(old, device);
    if (e == cudaErrorAlreadyMapped) {
        cudaGetLastError();
        return 1;   /* a stale mapping of that peer's is still open */
    }
    return e == cudaSuccess ? 0 : failed("cudaIpcOpenMemHandle", e);
}

int dcoll_ipc_close(void *p, int device)
{
    ON(device, cudaIpcCloseMemHandle(p), "cudaIpcCloseMemHandle");
}

int dcoll_ipc_event(int device, void **event,
                    unsigned char handle[DCOLL_IPC_HANDLE_BYTES])
{
    cudaEvent_t ev = NULL;
    cudaIpcEventHandle_t h;
    *event = NULL;
    int old = dcoll_cuda_enter(device);
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventInterprocess |
                                                      cudaEventDisableTiming);
    const char *what = "cudaEventCreateWithFlags";
    if (e == cudaSuccess) {
        what = "cudaIpcGetEventHandle";
        if ((e = cudaIpcGetEventHandle(&h, ev)) != cudaSuccess)
            cudaEventDestroy(ev);
    }
    dcoll_cuda_leave(old, device);
    if (e != cudaSuccess)
        return failed(what, e);
    memcpy(handle, &h, sizeof(h));
    *event = ev;
    return 0;
}

int dcoll_ipc_event_open(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                         int device, void **event)
{
    cudaIpcEventHandle_t h;
    memcpy(&h, handle, sizeof(h));
    *event = NULL;
    ON(device, cudaIpcOpenEventHandle((cudaEvent_t *)event, h),
       "cudaIpcOpenEventHandle");
}

void dcoll_ipc_event_free(void *event, int device)
{
    if (!event)
        return;
    int old = dcoll_cuda_enter(device);
    cudaEventDestroy((cudaEvent_t)event);
    dcoll_cuda_leave(old, device);
}

int dcoll_ipc_record(void *event, void *stream, int device)
{
    ON(device, cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream),
       "cudaEventRecord");
}

/* In relaxed capture mode, as the NCCL half's queries: another thread's
 * graph capture survives it. */
int dcoll_ipc_query(void *event, int device)
{
    int old = dcoll_cuda_enter(device);
    enum cudaStreamCaptureMode m = dcoll_cuda_relax();
    cudaError_t e = cudaEventQuery((cudaEvent_t)event);
    dcoll_cuda_unrelax(m);
    dcoll_cuda_leave(old, device);
    if (e == cudaSuccess || e == cudaErrorNotReady)
        return e == cudaSuccess;
    return failed("cudaEventQuery", e);
}

int dcoll_ipc_wait(void *stream, void *event, int device)
{
    ON(device, cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event,
                                   0),
       "cudaStreamWaitEvent");
}

int dcoll_ipc_uuid(int device, unsigned char uuid[16])
{
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess)
        return failed("cudaGetDeviceProperties", e);
    memcpy(uuid, p.uuid.bytes, 16);
    return 0;
}

#ifdef DCOLL_HAVE_KERNELS
int dcoll_ipc_reduce(void *dst, const void *const *srcs, int nsrc,
                     int64_t count, int dtype, int op, int avg_n,
                     void *stream, int device)
{
    if (nsrc < 1 || count < 0 || !dst || !srcs)
        return dcoll_cuda_fail("reduce", "no inputs, or a negative count");
    if (count == 0)
        return 0;
    int old = dcoll_cuda_enter(device);
    int rc = dcoll_reduce_launch(dst, srcs, nsrc, count, dtype, op, avg_n,
                                 stream);
    dcoll_cuda_leave(old, device);
    return rc;
}
#endif
