/* The CUDA plugin ABI, version 5: frozen. Version 4's table, with a call
 * record of the plugin ABI's own instead of the core's descriptor.
 * Entry point dcoll_cuda_plugin_v5; the loader turns the table into the
 * current one (lib/gpu/plugin_v5.c). Never edit. */
#ifndef DCOLL_PLUGIN_ABI_V5_H
#define DCOLL_PLUGIN_ABI_V5_H

#include "plugin_abi_v4.h"

#define DCOLL_CUDA_PLUGIN_V5_ENTRY "dcoll_cuda_plugin_v5"

/* One call for NCCL, as the core checked it; group ranks throughout.
 * Versions 5 and 6 share it. */
struct dcoll_plugin_call_v5 {
    int kind;                /* dcoll_call_kind_t (dcoll/backend.h) */
    const void *sendbuf;     /* == recvbuf in place; NULL where none */
    void *recvbuf;
    int64_t count;           /* elements per rank */
    int dtype;               /* dcoll_dtype_t */
    int op;                  /* dcoll_op_t, where the kind reduces */
    int root;                /* the root, where the kind has one */
    bool in_place;
};

struct dcoll_cuda_plugin_v5 {
    uint32_t abi;                     /* 5 */
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
};

#endif
