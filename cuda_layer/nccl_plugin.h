/* Inside the plugin: its NCCL half (nccl.c), and what its files share
 * (plugin.c): the failure text, entering a device, relaxed queries. */
#ifndef DCOLL_CUDA_NCCL_PLUGIN_H
#define DCOLL_CUDA_NCCL_PLUGIN_H

#include <cuda_runtime_api.h>
#include "plugin_abi.h"

int dcoll_cuda_fail(const char *call, const char *why);

/* Make device current for a call and put the caller's back after: dcoll
 * must not change what the program's next CUDA call does. enter returns
 * what leave needs. */
int dcoll_cuda_enter(int device);
void dcoll_cuda_leave(int old, int device);
/* Back to what enter found, whatever happened since. */
void dcoll_cuda_restore(int old);

/* One CUDA call on device: return 0, or fail(what, its error). */
#define DCOLL_CUDA_ON(device, call, what, fail)                              \
    do {                                                                     \
        int old_ = dcoll_cuda_enter(device);                                 \
        cudaError_t e_ = (call);                                             \
        dcoll_cuda_leave(old_, device);                                      \
        return e_ == cudaSuccess ? 0 : fail(what, e_);                       \
    } while (0)

/* Queries and waits in relaxed capture mode: in CUDA's default (global)
 * mode they are unsafe calls, which fail and invalidate a graph capture
 * that another thread of the program has under way (pytorch hit it with
 * its watchdog's queries). Swapped in, and back out with what relax
 * returned. */
static inline enum cudaStreamCaptureMode dcoll_cuda_relax(void)
{
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&m);
    return m;
}

static inline void dcoll_cuda_unrelax(enum cudaStreamCaptureMode m)
{
    cudaThreadExchangeStreamCaptureMode(&m);
}

/* Copy a shape's bytes on stream (plugin.c; the table's copy_shape). */
int dcoll_cuda_copy_shape(const dcoll_plugin_shape_t *dst,
                          const dcoll_plugin_shape_t *src, int device,
                          void *stream);

int dcoll_nccl_id(void *id);
int dcoll_nccl_comm(const void *id, int nranks, int rank, int device,
                    double timeout, void **comm);
int dcoll_nccl_comms(const void *id, int nranks, int first, int ndev,
                     const int *devices, double timeout, void **comms);
int dcoll_nccl_group_start(void);
int dcoll_nccl_group_end(void *const *comms, int n, double timeout);
void dcoll_nccl_free(void *comm);
int dcoll_nccl_split(void *parent, int color, int key, double timeout,
                     void **comm);
int dcoll_nccl_takes(const dcoll_plugin_call_t *c);
int dcoll_nccl_coll(void *comm, const dcoll_plugin_call_t *c, int rank,
                    int size, void *stream, double timeout);
int dcoll_nccl_wait(void *comm, void *stream, double timeout);
int dcoll_nccl_event_record(void *comm, void *stream, void **event);
int dcoll_nccl_event_poll(void *comm, void *event, int *done);
int dcoll_nccl_event_wait(void *comm, void *event, double timeout);
void dcoll_nccl_event_free(void *event);
int dcoll_nccl_check(void *comm);
void dcoll_nccl_release(void *comm, double timeout, bool failed);
int dcoll_nccl_exchange(void *comm, const dcoll_plugin_xfer_t *x, int n,
                        void *stream, double timeout);
int dcoll_nccl_shrink(void *parent, const int *exclude, int nexclude,
                      double timeout, void **out);

#endif
