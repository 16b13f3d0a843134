/* The GPU transports as the core sees them: where a call's buffers live,
 * the staged path through pinned host memory and NCCL, each a struct
 * dcoll_backend with its own per-group record, and the plugin loader.
 * Which of them runs a call is the core's route (lib/core/route.c).
 * Reaches the CUDA plugin only through its ABI header, and MPI only
 * through the group's tables. */
#ifndef DCOLL_GPU_H
#define DCOLL_GPU_H

#include <pthread.h>
#include <stdatomic.h>
#include "tables.h"

/* plugin.c: load at init, unload at finalize. Loading never fails
 * dcoll_init; it records what it found for dcoll_backend_status.
 * Collective over the world, whose host names and local ranks are
 * known: every rank's GPU is chosen from its node's picture. */
void dcoll_plugins_load(struct dcoll_group *world);
void dcoll_plugins_unload(void);
/* Whether a plugin that sees a GPU is loaded (NCCL too, with nccl). Read
 * on every collective: a variable, not a call. */
struct dcoll_cuda_plugin;  /* the table: plugin_abi.h */
extern const struct dcoll_cuda_plugin *dcoll_gpu_plugin;
static inline bool dcoll_gpu_present(void)
{
    return dcoll_gpu_plugin != NULL;
}
bool dcoll_gpu_has_nccl(void);
/* The GPU chosen at load (-1: none), which one and why in words ("" if
 * this rank saw no GPU), and what the loader found. */
int dcoll_gpu_device(void);
int dcoll_gpu_count(void);   /* GPUs this process sees */
const char *dcoll_gpu_choice(void);
const char *dcoll_gpu_detail(void);

/* pinned.c: the process's pool of host memory for staging (pinned up
 * to DCOLL_STAGE_PINNED, ordinary past it: *pinned says which; NULL only
 * when there is no memory at all), its settings from the environment
 * (at init), the pipeline's chunk, and the pinned bytes it holds. */
char *dcoll_stage_take(size_t bytes, bool *pinned);
void dcoll_stage_give(char *p, bool pinned);
void dcoll_stage_release(void);
dcoll_status_t dcoll_stage_env(void);
extern size_t dcoll_stage_chunk;
size_t dcoll_stage_pinned(void);

/* The transports: staged.c's runs any call on GPU buffers (c->device)
 * through pinned host memory and the group's host table; nccl.c's runs
 * them on the group's NCCL communicator, made on first use, and declines
 * (DCOLL_DECLINED) where the group's ranks share a GPU or NCCL lacks the
 * op; ipc/ipc.c's takes what NCCL declines where ranks share GPUs.
 * Each keeps its record of a group in g->tl[its slot]. */
extern const struct dcoll_backend dcoll_staged_backend;
extern const struct dcoll_backend dcoll_nccl_backend;
/* ipc/ipc.c: GPU buffers of a group whose ranks share GPUs, moved on
 * them through CUDA IPC; declined, alike on every rank, by any
 * other group (and by all where DCOLL_IPC=0); where several GPUs are
 * shared, all_reduce and broadcast go over IPC within each GPU and NCCL
 * among them. */
extern const struct dcoll_backend dcoll_ipc_backend;
/* Its settings, read and checked at init: DCOLL_IPC_SCRATCH (bytes of
 * scratch a rank) and DCOLL_IPC (0: off, which dcoll_ipc_on says). */
dcoll_status_t dcoll_ipc_env(void);
extern bool dcoll_ipc_on;

/* staged.c: *device = the GPU that c's buffers are on, or -1 for host
 * memory; mixed buffers are an error naming both. Managed memory goes
 * with the other buffer (the GPU beside GPU memory). No pointer is asked
 * about where g's GPU is known and the call said GPU memory or g is an
 * NCCL group. */
dcoll_status_t dcoll_gpu_where(struct dcoll_group *g, const char *fn,
                               const struct dcoll_coll *c, int *device);
bool dcoll_on_device(const void *p);
/* staged.c: c's stream's earlier work done, for an MPI that reads c's
 * GPU buffers itself (a CUDA-aware one). */
dcoll_status_t dcoll_gpu_ready(const struct dcoll_coll *c);
/* The GPU that p is on, -1 for host memory (or no GPU plugin). */
int dcoll_device_of(const void *p);
/* How long a GPU operation on g may take before the plugin gives up
 * (and aborts its communicator): the group's timeout, as for host calls;
 * none (0) is as long as a wait can be. */
static inline double dcoll_gpu_timeout(const struct dcoll_group *g)
{
    return g->timeout > 0 ? g->timeout : 1e9;
}
/* nccl.c: the plugin's failure rc (-2: timed out) as fn's status. With
 * out, a timeout is reported there too, so that the core treats it as a
 * host call's: the group is failed, or in abort mode the job ends. */
dcoll_status_t dcoll_gpu_error(const char *fn, int rc);
dcoll_status_t dcoll_gpu_fail(const char *fn, int rc,
                              struct dcoll_outcome *out);
/* nccl.c: the NCCL transport's record of a group (g->tl[DCOLL_TL_NCCL]),
 * made on first use; NULL with a message when there is no memory. */
struct dcoll_clique;
struct dcoll_nccl_group {
    void *comm;            /* the group's communicator, once made */
    int state;             /* untried, ready, or shared: see nccl.c */
    int device;            /* the GPU comm is on */
    bool broken;           /* a call on comm failed here */
    struct dcoll_clique *cliques;  /* multi.c's, one per placement */
    /* Stream-ordered calls' samples (nccl.c): the caller's thread records
     * them, the watchdog's polls them, under lock. */
    pthread_mutex_t lock;
    int nsample;
    void *sample[2];       /* events: the oldest first */
    double sample_at[2];   /* when each was recorded */
    int sample_kind[2];
    char failed[256];      /* what the watchdog found */
    bool failed_late;      /* it was a timeout */
    _Atomic bool tripped;  /* failed is set: read on every call */
    bool lock_made;
};
struct dcoll_nccl_group *dcoll_nccl_group(struct dcoll_group *g,
                                          const char *fn);
/* nccl.c: the GPU g's NCCL record found at its first call, or -1. */
int dcoll_nccl_device(const struct dcoll_group *g);
/* nccl.c: the world's communicator at init where every rank asks for it
 * (DCOLL_NCCL_EAGER=1), for groups to split from. Collective. */
dcoll_status_t dcoll_nccl_eager(struct dcoll_group *world);
/* multi.c: the multi-buffer forms (lib/core/multi.c) with GPU buffers.
 * One call of k = n buffers: send NULL for the kinds that work in place;
 * root is a group rank. */
struct dcoll_multi_call {
    enum dcoll_coll_kind kind;
    const void *const *send;
    void *const *recv;
    int n;
    int64_t count;
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root, root_buf;
    const dcoll_coll_opts_t *opts;
    const char *fn;
    struct dcoll_clique *clique;   /* set by dcoll_gpu_multi_choose */
};
/* devices[i]: buffer i's GPU, -1 on the host, -2 send and receive apart;
 * returns how many buffers touch a GPU. */
int dcoll_multi_devices(const struct dcoll_multi_call *mc, int *devices);
/* Whether the call goes to NCCL (mc->clique set) or is mirrored (NULL),
 * as every rank of g agrees; collective the first time a placement is
 * seen on g. nccl: whether the route lets g's calls use NCCL at all. */
dcoll_status_t dcoll_gpu_multi_choose(struct dcoll_group *g,
                                      struct dcoll_multi_call *mc,
                                      const int *devices, bool nccl);
/* Whether the plugin's NCCL path may see this type and op: not bool,
 * logical, the pair types, the logical ops or MINLOC/MAXLOC, which NCCL
 * lacks and plugins built before API 1.7 have no entry for; complex types only as their real view
 * (dcoll_nccl_view), where NCCL's arithmetic is right: moving data, SUM
 * and AVG, not PRODUCT. (op is SUM, 0, in calls that do not reduce.) */
static inline bool dcoll_nccl_knows(dcoll_dtype_t dtype, dcoll_op_t op)
{
    if (dtype == DCOLL_BOOL || dtype == DCOLL_LOGICAL ||
        dtype >= DCOLL_FLOAT32_INT || op >= DCOLL_LAND)
        return false;
    return !dcoll_dtype_is_complex(dtype) || op != DCOLL_PRODUCT;
}

/* What the plugin is given for a call (a dcoll_plugin_call_t's count and
 * dtype): a complex type as twice as many of its parts' type. */
static inline void dcoll_nccl_view(int64_t *count, int *dtype)
{
    if (dcoll_dtype_is_complex((dcoll_dtype_t)*dtype)) {
        *count *= 2;
        *dtype = dcoll_dtype_real((dcoll_dtype_t)*dtype);
    }
}

/* Launch c->multi on its clique: the NCCL transport's, for the route. */
dcoll_status_t dcoll_gpu_multi_run(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_work **work,
                                   struct dcoll_outcome *out);
void dcoll_cliques_free(struct dcoll_nccl_group *ng);
/* A list of n buffers of bytes each as host memory: GPU ones copied to
 * pinned blocks (copy_in: their contents too), host ones as they are.
 * Copies both ways go on the call's stream (opts), which is of one GPU:
 * buffers on another are refused with it. */
struct dcoll_mirror;
dcoll_status_t dcoll_mirror_make(const char *fn, const void *const *list,
                                 int n, size_t bytes, bool copy_in,
                                 const dcoll_coll_opts_t *opts,
                                 struct dcoll_mirror **m);
void *const *dcoll_mirror_host(const struct dcoll_mirror *m);
/* Copy the mirrors back to their GPUs: buffer which, or all (-1). */
dcoll_status_t dcoll_mirror_back(const struct dcoll_mirror *m, int which);
void dcoll_mirror_free(struct dcoll_mirror *m);

#endif
