/* The CUDA plugin ABI, version 8: frozen. Version 7's table and answers,
 * with nccl_split appended, so that a group's NCCL communicator can be
 * split from its parent's instead of made anew. Entry point
 * dcoll_cuda_plugin_v8; the loader takes its table as the prefix of the
 * current one (lib/gpu/plugin_v8.c). Never edit. */
#ifndef DCOLL_PLUGIN_ABI_V8_H
#define DCOLL_PLUGIN_ABI_V8_H

#include "plugin_abi_v7.h"

#define DCOLL_CUDA_PLUGIN_V8_ENTRY "dcoll_cuda_plugin_v8"

struct dcoll_cuda_plugin_v8 {
    uint32_t abi;                     /* 8 */
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
    int (*nccl_coll)(void *comm, const struct dcoll_plugin_call_v5 *c, int rank,
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
    int (*nccl_takes)(const struct dcoll_plugin_call_v5 *c);
    int (*nccl_comms)(const void *id, int nranks, int first, int ndev,
                      const int *devices, double timeout, void **comms);
    int (*group_start)(void);
    int (*group_end)(void *const *comms, int n, double timeout);

    /* Version 8 (appended: a version 6 or 7 table is this one's prefix).
     * A child group's communicator split from its parent's (ncclCommSplit,
     * sharing the parent's resources), where the plugin has NCCL; NULL
     * otherwise. Collective over the parent's ranks: each names its color
     * (negative: not in the child, *comm stays NULL) and its key (the
     * order in the child). Settles the parent and the child; on failure
     * nothing is made. */
    int (*nccl_split)(void *parent, int color, int key, double timeout,
                      void **comm);
};

#endif
