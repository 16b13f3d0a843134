/* The CUDA plugin's ABI: what the plugin (cuda_layer/) and the core's
 * loader (lib/gpu/plugin.c) share. The plugin is a shared object loaded
 * with dlopen, so that libdcoll never links CUDA or NCCL. Not installed:
 * the plugin and the core come from one build, and nobody else builds a
 * plugin, so this header changes freely with the tree. What does not
 * change is how a core tells a plugin of its own build from another's:
 * the entry point's name and the identity every table begins with
 * (struct dcoll_plugin_identity). The loader refuses a plugin whose
 * identity is not its own build's, and says so, naming both builds and
 * the file: a mixed install is the only way to get one. */
#ifndef DCOLL_PLUGIN_ABI_H
#define DCOLL_PLUGIN_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dcoll/backend.h"
#include "dcoll/common.h"

/* The plugin's one export: a function of no arguments that returns its
 * table. Named once; plugins of dcoll 1.11 and older exported
 * dcoll_cuda_plugin_v<N> (v1, v5 to v13), which the loader recognises
 * only to say what they are. */
#define DCOLL_CUDA_PLUGIN_ENTRY "dcoll_cuda_plugin"
typedef const void *(*dcoll_cuda_plugin_fn)(void);

/* The first bytes of every table, in every build: never change. */
#define DCOLL_PLUGIN_MAGIC 0x64634350u   /* "dcCP" */
struct dcoll_plugin_identity {
    uint32_t magic;          /* DCOLL_PLUGIN_MAGIC */
    uint32_t table_bytes;    /* sizeof the whole table */
    const char *version;     /* the dcoll version built, "1.11.0" */
    const char *build;       /* the build id (plugin_build.h) */
};

/* Where a buffer lives, as the CUDA driver sees it. */
enum dcoll_mem_kind {
    DCOLL_MEM_HOST,      /* ordinary host memory, unknown to CUDA */
    DCOLL_MEM_PINNED,    /* host memory registered with or allocated by CUDA */
    DCOLL_MEM_DEVICE,    /* GPU memory */
    DCOLL_MEM_MANAGED,   /* unified memory */
    /* CUDA could not tell (cudaPointerGetAttributes failed: memory of a
     * context this process cannot see, or CUDA in an error state);
     * last_error() says what CUDA reported. Never treated as host. */
    DCOLL_MEM_UNKNOWN,
};

/* The kinds of call the GPU transports run among a group's ranks, by
 * name (the part after DCOLL_KIND_ / DCOLL_COLL_): nccl_coll has a case
 * for each (cuda_layer/nccl.c), the core's NCCL and IPC transports take
 * only these (lib/gpu/gpu_kinds.h), and IPC's steps have a case for each
 * (lib/gpu/ipc/steps.c). A kind not listed is declined by all of them and
 * staged: a list fails closed where a rule over the kinds' facts, which a
 * new kind may satisfy, would run it as another kind. Not barrier (no
 * buffers) nor send and recv (MPI matches those in any order). */
#define DCOLL_GPU_COLL_KINDS(X)                                             \
    X(BROADCAST) X(ALL_REDUCE) X(REDUCE) X(ALL_GATHER) X(GATHER)            \
    X(SCATTER) X(REDUCE_SCATTER) X(ALL_TO_ALL)

/* Whether kind (a dcoll_call_kind_t) is listed: both sides ask this. */
static inline bool dcoll_gpu_kind_listed(int kind)
{
    switch (kind) {
#define DCOLL_GPU_CASE_(k) case DCOLL_KIND_##k:
    DCOLL_GPU_COLL_KINDS(DCOLL_GPU_CASE_)
#undef DCOLL_GPU_CASE_
        return true;
    default:
        return false;
    }
}

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

/* The GPUs one process sees, as the core gathers them over its node. */
#define DCOLL_VIEW_MAX_GPUS 16
struct dcoll_gpu_view {
    int32_t numa;                  /* this process's NUMA node; -1 unknown */
    int32_t current;               /* the device the program made current
                                    * (a context exists); -1 none */
    int32_t ngpus;                 /* entries below (at most the max) */
    /* Each visible device's physical identity (its PCI address: domain
     * << 16 | bus << 8 | device << 3 | function) and NUMA node (-1
     * unknown), in device-ordinal order. */
    uint32_t pci[DCOLL_VIEW_MAX_GPUS];
    int32_t gpu_numa[DCOLL_VIEW_MAX_GPUS];
};

/* CUDA's IPC handles are this long (CUDA_IPC_HANDLE_SIZE). */
#define DCOLL_IPC_HANDLE_BYTES 64

/* Bytes in memory as planes of rows: planes planes plane_pitch bytes
 * apart, each rows rows pitch bytes apart, each width bytes from buf on.
 * Contiguous bytes are one row of one plane. */
struct dcoll_plugin_shape {
    char *buf;
    size_t width, rows, pitch, planes, plane_pitch;
};

/* One transfer of an exchange: shape's bytes to or from peer (a rank
 * of the communicator). */
struct dcoll_plugin_xfer {
    struct dcoll_plugin_shape shape;
    int peer;
    int send;                         /* 1 send, 0 receive */
};

/* The table. A call the plugin lacks is NULL, and the core goes without
 * it (stages, or copies row by row), as each says. */
struct dcoll_cuda_plugin {
    struct dcoll_plugin_identity id;
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
    int (*nccl_coll)(void *comm, const struct dcoll_plugin_call *c, int rank,
                     int size, void *stream, double timeout);
    /* Until the work enqueued on stream so far is done. */
    int (*nccl_wait)(void *comm, void *stream, double timeout);
    int (*event_record)(void *comm, void *stream, void **event);
    int (*event_poll)(void *comm, void *event, int *done);
    int (*event_wait)(void *comm, void *event, double timeout);
    void (*event_free)(void *event);

    /* Several GPUs of one process in one NCCL clique, for the
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

    /* A child group's communicator split from its parent's (ncclCommSplit:
     * no new bootstrap; its resources its own, so that an abort of one
     * leaves the others running), where the plugin has NCCL; NULL
     * otherwise. Collective over the parent's ranks: each names its color
     * (negative: not in the child, *comm stays NULL) and its key (the
     * order in the child). Settles the parent and the child; on failure
     * nothing is made. */
    int (*nccl_split)(void *parent, int color, int key, double timeout,
                      void **comm);

    /* What this process sees (local_rank: its index on the node, for
     * test settings that differ per rank); never makes a context. 0, or
     * -1 with last_error. NULL: the core asks select_device instead. */
    int (*gpu_view)(int local_rank, struct dcoll_gpu_view *view);
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

    /* CUDA IPC between processes that share a GPU, for the IPC transport
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

    /* The device allocation p lies in (cuMemGetAddressRange): its base
     * and size. 0; -1 with last_error where p is no device memory of
     * this process or the driver cannot say. NULL: none. */
    int (*mem_range)(const void *p, int device, void **base, size_t *size);

    /* A communicator of parent's ranks less the nexclude ranks of
     * exclude (parent ranks, ascending), made by those ranks alone
     * (ncclCommShrink, NCCL 2.27 on), in their order: the excluded are
     * dead, and the parent's operations still running, which wait for
     * them, are ended first (NCCL_SHRINK_ABORT). Settles the child; the
     * parent is left to be released as failed. 0, or -1 with last_error
     * (an NCCL without it, or a parent already aborted: nothing made).
     * NULL where the plugin has no NCCL. */
    int (*nccl_shrink)(void *parent, const int *exclude, int nexclude,
                       double timeout, void **comm);

    /* Copy src's bytes into dst's, shape by shape (the same width, rows
     * and planes; pitches and bases their own), on stream, as
     * cudaMemcpy2DAsync does a plane: either side on the GPU device, the
     * other on the host or that GPU. 0, or -1 with last_error. NULL: the
     * core copies row by row with copy. */
    int (*copy_shape)(const struct dcoll_plugin_shape *dst,
                      const struct dcoll_plugin_shape *src, int device,
                      void *stream);
    /* One exchange on comm: the n transfers' sends and receives in one
     * NCCL group on stream, so that NCCL runs them together and pairs
     * each peer's in the order given. A transfer that is not contiguous
     * goes through stream-ordered scratch on the GPU (packed before the
     * group, unpacked after). 0, -1 with last_error, -2 timed out. NULL
     * where the plugin has no NCCL. */
    int (*nccl_exchange)(void *comm, const struct dcoll_plugin_xfer *x,
                         int n, void *stream, double timeout);
};

typedef struct dcoll_cuda_plugin dcoll_cuda_plugin_t;
typedef struct dcoll_gpu_view dcoll_gpu_view_t;
typedef struct dcoll_plugin_call dcoll_plugin_call_t;
typedef struct dcoll_plugin_shape dcoll_plugin_shape_t;
typedef struct dcoll_plugin_xfer dcoll_plugin_xfer_t;

/* What both sides read off a shape: its bytes, whether they are one
 * range, and a contiguous shape of the same rows and planes at buf. */
static inline size_t dcoll_shape_bytes(const dcoll_plugin_shape_t *s)
{
    return s->width * s->rows * s->planes;
}

static inline int dcoll_shape_contiguous(const dcoll_plugin_shape_t *s)
{
    return (s->rows <= 1 || s->pitch == s->width) &&
           (s->planes <= 1 || s->plane_pitch == s->width * s->rows);
}

static inline dcoll_plugin_shape_t dcoll_shape_flat(char *buf,
                                                    const dcoll_plugin_shape_t *like)
{
    dcoll_plugin_shape_t f = {buf, like->width, like->rows, like->width,
                              like->planes, like->width * like->rows};
    return f;
}

#endif
