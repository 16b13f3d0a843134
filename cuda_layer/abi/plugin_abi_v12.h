/* The CUDA plugin ABI, version 12: frozen (version 13 followed).
 * Version 11's table, with a communicator of a parent's surviving ranks
 * appended (ncclCommShrink), so that dcoll_group_shrink keeps a GPU
 * group's NCCL without a new bootstrap. Entry point
 * dcoll_cuda_plugin_v12. */
#ifndef DCOLL_PLUGIN_ABI_V12_H
#define DCOLL_PLUGIN_ABI_V12_H

#include <stdint.h>
#include "plugin_abi_v11.h"

#define DCOLL_CUDA_PLUGIN_V12_ENTRY "dcoll_cuda_plugin_v12"

struct dcoll_cuda_plugin_v12 {
    uint32_t abi;                     /* 12 */
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
    /* This process's GPU on its own, without the node's picture: the
     * current one if the program already made a CUDA context, else one
     * by local rank. how says which rule. Asked only where gpu_view is
     * NULL. */
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
     * A child group's communicator split from its parent's (ncclCommSplit:
     * no new bootstrap; its resources its own, so that an abort of one
     * leaves the others running), where the plugin has NCCL; NULL
     * otherwise. Collective over the parent's ranks: each names its color
     * (negative: not in the child, *comm stays NULL) and its key (the
     * order in the child). Settles the parent and the child; on failure
     * nothing is made. */
    int (*nccl_split)(void *parent, int color, int key, double timeout,
                      void **comm);

    /* Version 9 (appended: a version 8 table is this one's prefix).
     * What this process sees (local_rank: its index on the node, for
     * test settings that differ per rank); never makes a context. 0, or
     * -1 with last_error. NULL: the core asks select_device instead. */
    int (*gpu_view)(int local_rank, struct dcoll_gpu_view_v9 *view);
    /* A communicator's health without a wait: 0 healthy (or still
     * running), -1 after an asynchronous error, which aborts it (later
     * calls say why). Any thread; enters the communicator's device. */
    int (*nccl_check)(void *comm);
    /* Free a communicator as its group goes: finalized within timeout
     * seconds (its peers' finalizes, which a rank that frees its groups
     * in another order or died never makes, then an abort), or at once
     * aborted where its group failed. nccl_free's finalize waits as long
     * as the communicator's maker said. */
    void (*nccl_release)(void *comm, double timeout, bool failed);

    /* Version 10 (appended: a version 9 table is this one's prefix).
     * CUDA IPC between processes that share a GPU, for the IPC transport
     * (lib/gpu/ipc.c); NULL where the plugin has none. Each returns 0,
     * or -1 with last_error; device is the GPU concerned, entered and
     * left as the other calls do. Device memory (cudaMalloc's: IPC
     * exports whole allocations): */
    void *(*dev_alloc)(size_t bytes, int device);
    void (*dev_free)(void *p, int device);
    /* An allocation's handle, from its base; a new one where the memory
     * was freed and allocated again at the same address. */
    int (*ipc_export)(void *base, int device,
                      unsigned char handle[DCOLL_IPC_HANDLE_BYTES]);
    /* A peer's allocation mapped here (a second open of one handle
     * counts a reference, closed as often); 1 where other memory of that
     * peer is still mapped over its range (close that first). */
    int (*ipc_open)(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                    int device, void **p);
    int (*ipc_close)(void *p, int device);
    /* An interprocess event (no timing) and its handle; a peer's opened
     * from its handle; either freed. */
    int (*ipc_event)(int device, void **event,
                     unsigned char handle[DCOLL_IPC_HANDLE_BYTES]);
    int (*ipc_event_open)(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                          int device, void **event);
    void (*ipc_event_free)(void *event, int device);
    /* Record event on stream; whether every record made so far is done
     * (1, 0 not yet, -1 failed); make stream wait for the records made
     * so far (not for later ones: a handshake must order the two). */
    int (*ipc_record)(void *event, void *stream, int device);
    int (*ipc_query)(void *event, int device);
    int (*ipc_wait)(void *stream, void *event, int device);
    /* On stream: dst[i] = srcs[0][i] op srcs[1][i] op ... in that
     * order, for count elements of dtype (dcoll_dtype_t, op dcoll_op_t),
     * with the host path's arithmetic (fp16 and bf16 rounded at every
     * step; DCOLL_AVG as a sum of each input times 1/avg_n in floating
     * types, a sum divided by avg_n after in integer ones). 0; 1 where
     * the kernels lack dtype or op (nothing enqueued); -1 failed. NULL:
     * built without kernels. */
    int (*reduce)(void *dst, const void *const *srcs, int nsrc,
                  int64_t count, int dtype, int op, int avg_n, void *stream,
                  int device);

    /* Version 11 (appended: a version 10 table is this one's prefix).
     * The device allocation p lies in (cuMemGetAddressRange): its base
     * and size. 0; -1 with last_error where p is no device memory of
     * this process or the driver cannot say. NULL: none. */
    int (*mem_range)(const void *p, int device, void **base, size_t *size);

    /* Version 12 (appended: a version 11 table is this one's prefix).
     * A communicator of parent's ranks less the nexclude ranks of
     * exclude (parent ranks, ascending), made by those ranks alone
     * (ncclCommShrink, NCCL 2.27 on), in their order: the excluded are
     * dead, and the parent's operations still running, which wait for
     * them, are ended first (NCCL_SHRINK_ABORT). Settles the child; the
     * parent is left to be released as failed. 0, or -1 with last_error
     * (an NCCL without it, or a parent already aborted: nothing made).
     * NULL where the plugin has no NCCL. */
    int (*nccl_shrink)(void *parent, const int *exclude, int nexclude,
                       double timeout, void **comm);
};

#endif
