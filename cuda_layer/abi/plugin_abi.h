/* The CUDA plugin's ABI: the only header the plugin (cuda_layer/) and the
 * core's loader (lib/gpu/plugin.c) share. The plugin is a shared object
 * loaded with dlopen, so that libdcoll never links CUDA or NCCL. It
 * exports dcoll_cuda_plugin_v<N>, named for the version of the table it
 * returns, as NCCL's network plugins name theirs. A change to either
 * table is a new version: add it here, keep the old one's layout in the
 * loader's shim, and the loader goes on accepting plugins of every
 * version it knows. Not installed. */
#ifndef DCOLL_PLUGIN_ABI_H
#define DCOLL_PLUGIN_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dcoll/common.h"

#define DCOLL_PLUGIN_ABI 6u
#define DCOLL_CUDA_PLUGIN_ENTRY "dcoll_cuda_plugin_v6"

/* One call for NCCL, as the core checked it; group ranks throughout. */
struct dcoll_plugin_call {
    int kind;                /* dcoll_call_kind_t (dcoll/backend.h) */
    const void *sendbuf;     /* == recvbuf in place; NULL where none */
    void *recvbuf;
    int64_t count;           /* elements per rank */
    int dtype;               /* dcoll_dtype_t */
    int op;                  /* dcoll_op_t, where the kind reduces */
    int root;                /* the root, where the kind has one */
    bool in_place;
};

/* Where a buffer lives, as the CUDA driver sees it. */
enum dcoll_mem_kind {
    DCOLL_MEM_HOST,      /* ordinary host memory, unknown to CUDA */
    DCOLL_MEM_PINNED,    /* host memory registered with or allocated by CUDA */
    DCOLL_MEM_DEVICE,    /* GPU memory */
    DCOLL_MEM_MANAGED,   /* unified memory */
};

struct dcoll_cuda_plugin {
    uint32_t abi;                     /* DCOLL_PLUGIN_ABI */
    /* Probe the machine: the usable GPUs. With none, *ngpus = 0 and why
     * says what was missing (no driver, no device). Never fails. */
    void (*probe)(int *ngpus, char *why, size_t whylen);
    /* Versions as CUDA and NCCL encode them; 0 where absent. */
    void (*versions)(int *runtime, int *driver, int *nccl);
    /* GPU i's PCI bus id, "0000:17:00.0". */
    int (*pci_bus_id)(int i, char *busid, size_t len);
    /* Where p lives; *device gets the GPU for device and managed memory. */
    enum dcoll_mem_kind (*mem_kind)(const void *p, int *device);

    /* Staging device buffers through host memory. Each returns 0 on
     * success; on failure, last_error() says what CUDA reported. */
    void *(*host_alloc)(size_t bytes);              /* pinned; NULL: none */
    void (*host_free)(void *p);
    /* bytes from src to dst (either side on the GPU device), ordered on
     * stream (a cudaStream_t; NULL: the default stream). */
    int (*copy)(void *dst, const void *src, size_t bytes, int device,
                void *stream);
    int (*sync)(int device, void *stream);          /* that stream only */
    const char *(*last_error)(void);
    /* This process's GPU: the current one if the program already made a
     * CUDA context, else the one closest to its CPU binding, spread over
     * the local ranks, which it makes current. how says which rule. */
    int (*select_device)(int local_rank, int *device, char *how, size_t len);

    /* NCCL, where the plugin was built with it (nccl_bytes > 0). Waits
     * poll the communicator's asynchronous error and give up after
     * timeout seconds, aborting it: those return -2. */
    size_t nccl_bytes;                               /* ncclUniqueId */
    int (*device_uuid)(int device, unsigned char uuid[16]);
    int (*nccl_id)(void *id);
    int (*nccl_comm)(const void *id, int nranks, int rank, int device,
                     double timeout, void **comm);
    void (*nccl_free)(void *comm);
    /* Enqueue c on stream (group ranks in c->root). Nothing is enqueued
     * when it returns 1 (an op NCCL lacks: stage it) or 2 (a pattern
     * NCCL cannot match: refuse it). */
    int (*nccl_coll)(void *comm, const struct dcoll_plugin_call *c, int rank,
                     int size, void *stream, double timeout);
    /* Until the work enqueued on stream so far is done. */
    int (*nccl_wait)(void *comm, void *stream, double timeout);
    int (*event_record)(void *comm, void *stream, void **event);
    int (*event_poll)(void *comm, void *event, int *done);
    int (*event_wait)(void *comm, void *event, double timeout);
    void (*event_free)(void *event);

    /* Version 6 (appended: a version 5 table is this one's prefix).
     * Several GPUs of one process in one NCCL clique, for the
     * multi-buffer forms; NULL where the plugin has no NCCL. nccl_comms
     * makes ndev communicators at once, ranks first .. first + ndev - 1,
     * GPU devices[i] for comms[i]. nccl_coll calls between group_start
     * and group_end are launched together at group_end, as NCCL's
     * ncclGroupStart/End do; group_end settles the n communicators they
     * used. One thread only, as NCCL's groups. nccl_takes answers as
     * nccl_coll would (0, 1 or 2) without enqueuing anything, so that a
     * group is never opened for a call NCCL declines. */
    int (*nccl_takes)(const struct dcoll_plugin_call *c);
    int (*nccl_comms)(const void *id, int nranks, int first, int ndev,
                      const int *devices, double timeout, void **comms);
    int (*group_start)(void);
    int (*group_end)(void *const *comms, int n, double timeout);
};

typedef const struct dcoll_cuda_plugin *(*dcoll_cuda_plugin_fn)(void);

#endif
