/* The CUDA plugin ABI, version 4: frozen. A plugin of this version
 * exports dcoll_cuda_plugin_v1 (the entry point's name predates the
 * version-named ones) returning a table whose abi is 4; the loader turns
 * it into the current table (lib/gpu/plugin_v4.c). Never edit. */
#ifndef DCOLL_PLUGIN_ABI_V4_H
#define DCOLL_PLUGIN_ABI_V4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DCOLL_CUDA_PLUGIN_V4_ENTRY "dcoll_cuda_plugin_v1"

/* Where a buffer lives, as the CUDA driver sees it (every version). */
#ifndef DCOLL_MEM_KIND_DEFINED
#define DCOLL_MEM_KIND_DEFINED
enum dcoll_mem_kind {
    DCOLL_MEM_HOST,      /* ordinary host memory, unknown to CUDA */
    DCOLL_MEM_PINNED,    /* host memory registered with or allocated by CUDA */
    DCOLL_MEM_DEVICE,    /* GPU memory */
    DCOLL_MEM_MANAGED,   /* unified memory */
};
#endif

/* Version 4's call record: the core's call descriptor as it was laid out
 * then (in_place at offset 48), which v4 plugins read. Group ranks. */
struct dcoll_plugin_call_v4 {
    int kind;                /* dcoll_call_kind_t */
    const void *sendbuf;
    void *recvbuf;
    int64_t count;
    int dtype;
    int op;
    int root;
    int tag;
    bool in_place;
    const void *opts;        /* the public call's options */
    const char *fn;          /* the public name */
    double start;
    uint64_t seq;
    uint64_t fid;
};

struct dcoll_cuda_plugin_v4 {
    uint32_t abi;                     /* 4 */
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
    int (*nccl_coll)(void *comm, const struct dcoll_plugin_call_v4 *c,
                     int rank, int size, void *stream, double timeout);
    int (*nccl_wait)(void *comm, void *stream, double timeout);
    int (*event_record)(void *comm, void *stream, void **event);
    int (*event_poll)(void *comm, void *event, int *done);
    int (*event_wait)(void *comm, void *event, double timeout);
    void (*event_free)(void *event);
};

#endif
