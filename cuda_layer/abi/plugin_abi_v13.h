/* The CUDA plugin ABI, version 13: frozen once a version 14 exists.
 * Version 12's table, with strided copies and one NCCL group of sends
 * and receives appended, for the neighbourhood calls and strided faces
 * on GPU buffers (dcoll/neighbor.h). Entry point dcoll_cuda_plugin_v13. */
#ifndef DCOLL_PLUGIN_ABI_V13_H
#define DCOLL_PLUGIN_ABI_V13_H

#include <stddef.h>
#include <stdint.h>
#include "plugin_abi_v12.h"

#define DCOLL_CUDA_PLUGIN_V13_ENTRY "dcoll_cuda_plugin_v13"

/* Bytes in memory as planes of rows: planes planes plane_pitch bytes
 * apart, each rows rows pitch bytes apart, each width bytes from buf on.
 * Contiguous bytes are one row of one plane. */
struct dcoll_plugin_shape_v13 {
    char *buf;
    size_t width, rows, pitch, planes, plane_pitch;
};

/* One transfer of an exchange: shape's bytes to or from peer (a rank
 * of the communicator). */
struct dcoll_plugin_xfer_v13 {
    struct dcoll_plugin_shape_v13 shape;
    int peer;
    int send;                         /* 1 send, 0 receive */
};

struct dcoll_cuda_plugin_v13 {
    /* Version 12's table, as it is. */
    uint32_t abi;                     /* 13 */
    void (*probe)(int *ngpus, char *why, size_t whylen);
    void (*versions)(int *runtime, int *driver, int *nccl);
    int (*pci_bus_id)(int i, char *busid, size_t len);
    enum dcoll_mem_kind (*mem_kind)(const void *p, int *device);
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    int (*copy)(void *dst, const void *src, size_t bytes, int device,
                void *stream);
    int (*sync)(int device, void *stream);
    const char *(*last_error)(void);
    int (*select_device)(int local_rank, int *device, char *how, size_t len);
    size_t nccl_bytes;
    int (*device_uuid)(int device, unsigned char uuid[16]);
    int (*nccl_id)(void *id);
    int (*nccl_comm)(const void *id, int nranks, int rank, int device,
                     double timeout, void **comm);
    void (*nccl_free)(void *comm);
    int (*nccl_coll)(void *comm, const struct dcoll_plugin_call_v5 *c,
                     int rank, int size, void *stream, double timeout);
    int (*nccl_wait)(void *comm, void *stream, double timeout);
    int (*event_record)(void *comm, void *stream, void **event);
    int (*event_poll)(void *comm, void *event, int *done);
    int (*event_wait)(void *comm, void *event, double timeout);
    void (*event_free)(void *event);
    int (*nccl_takes)(const struct dcoll_plugin_call_v5 *c);
    int (*nccl_comms)(const void *id, int nranks, int first, int ndev,
                      const int *devices, double timeout, void **comms);
    int (*group_start)(void);
    int (*group_end)(void *const *comms, int n, double timeout);
    int (*nccl_split)(void *parent, int color, int key, double timeout,
                      void **comm);
    int (*gpu_view)(int local_rank, struct dcoll_gpu_view_v9 *view);
    int (*nccl_check)(void *comm);
    void (*nccl_release)(void *comm, double timeout, bool failed);
    void *(*dev_alloc)(size_t bytes, int device);
    void (*dev_free)(void *p, int device);
    int (*ipc_export)(void *base, int device,
                      unsigned char handle[DCOLL_IPC_HANDLE_BYTES]);
    int (*ipc_open)(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                    int device, void **p);
    int (*ipc_close)(void *p, int device);
    int (*ipc_event)(int device, void **event,
                     unsigned char handle[DCOLL_IPC_HANDLE_BYTES]);
    int (*ipc_event_open)(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                          int device, void **event);
    void (*ipc_event_free)(void *event, int device);
    int (*ipc_record)(void *event, void *stream, int device);
    int (*ipc_query)(void *event, int device);
    int (*ipc_wait)(void *stream, void *event, int device);
    int (*reduce)(void *dst, const void *const *srcs, int nsrc,
                  int64_t count, int dtype, int op, int avg_n, void *stream,
                  int device);
    int (*mem_range)(const void *p, int device, void **base, size_t *size);
    int (*nccl_shrink)(void *parent, const int *exclude, int nexclude,
                       double timeout, void **comm);

    /* Version 13 (appended: a version 12 table is this one's prefix).
     * Copy src's bytes into dst's, shape by shape (the same width, rows
     * and planes; pitches and bases their own), on stream, as
     * cudaMemcpy2DAsync does a plane: either side on the GPU device, the
     * other on the host or that GPU. 0, or -1 with last_error. NULL: the
     * core copies row by row with copy. */
    int (*copy_shape)(const struct dcoll_plugin_shape_v13 *dst,
                      const struct dcoll_plugin_shape_v13 *src, int device,
                      void *stream);
    /* One exchange on comm: the n transfers' sends and receives in one
     * NCCL group on stream, so that NCCL runs them together and pairs
     * each peer's in the order given. A transfer that is not contiguous
     * goes through stream-ordered scratch on the GPU (packed before the
     * group, unpacked after). 0, -1 with last_error, -2 timed out. NULL
     * where the plugin has no NCCL. */
    int (*nccl_exchange)(void *comm, const struct dcoll_plugin_xfer_v13 *x,
                         int n, void *stream, double timeout);
};

#endif
