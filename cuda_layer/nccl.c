/* The plugin's NCCL half: communicators made nonblocking and watched, so
 * that a dead peer ends in a timeout rather than a hang, and collectives
 * enqueued on the caller's stream. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include "dcoll/backend.h"
#include "nccl_plugin.h"
#include "plugin_abi.h"

/* NCCL 2.28's own all-to-all, gather and scatter: weak, so that the plugin
 * still loads on an older libnccl, where they are NULL and grouped sends
 * and receives do the work; ncclCommSplit (2.18) and ncclCommShrink
 * (2.27) the same, their callers then told this NCCL has none. */
#pragma weak ncclAlltoAll
#pragma weak ncclGather
#pragma weak ncclScatter
#pragma weak ncclCommSplit
#pragma weak ncclCommShrink

struct comm {
    ncclComm_t nc;   /* NULL once aborted */
    int device;
    double timeout;  /* the group's: how long a finalize may take */
    bool making;     /* being made: a timeout leaves the abort to reap */
    char why[200];   /* why it was aborted */
};

/* A work's completion marker: an event and the device it lives on, so
 * that whichever thread waits or frees enters that device rather than
 * making a context on GPU 0 (CUDA: a thread without a context that
 * calls the runtime gets its current device's, 0 by default). Kept in a
 * pool: making and destroying an event a call cost about 0.3 us. */
struct event {
    cudaEvent_t e;
    int device;
    struct event *next;   /* in the pool */
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct event *pool;
static int pooled;
enum { POOL_MAX = 64 };

/* NCCL's thread rule (usage/threadsafety.rst): operations on
 * communicators of one device may not be issued from several threads at
 * once, nor to a parent and its children. One lock for the process's
 * issues, held for a call or from group_start to group_end (a thread's
 * nesting counted), never across a wait for peers: uncontended it costs
 * tens of nanoseconds, and a thread waiting for its collective holds
 * no one up. */
static pthread_mutex_t issue_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int issuing;

static void issue_begin(void)
{
    if (issuing++ == 0)
        pthread_mutex_lock(&issue_lock);
}

static void issue_end(void)
{
    if (--issuing == 0)
        pthread_mutex_unlock(&issue_lock);
}

/* One NCCL call under the lock. */
#define ISSUE(call)                                                          \
    ({                                                                       \
        issue_begin();                                                       \
        ncclResult_t r__ = (call);                                           \
        issue_end();                                                         \
        r__;                                                                 \
    })

/* One NCCL call on c's communicator under the lock, its handle read
 * there too: an abort on another thread (the watchdog's) clears it under
 * the lock, and a cleared one answers ncclInvalidUsage. */
#define ISSUE_ON(c, call)                                                    \
    ({                                                                       \
        issue_begin();                                                       \
        ncclResult_t r__ = (c)->nc ? (call) : ncclInvalidUsage;              \
        issue_end();                                                         \
        r__;                                                                 \
    })

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int nccl_failed(const char *call, ncclResult_t r)
{
    return dcoll_cuda_fail(call, ncclGetErrorString(r));
}

/* End c's communicator for good: after an asynchronous error or a
 * timeout, ncclCommAbort is all NCCL allows, and it frees the handle
 * (nccl.h, 2.28: "Frees resources associated with communicator object
 * and aborts any operations"). Later calls get why, not freed memory. */
static void kill(struct comm *c, const char *why)
{
    /* Under the issue lock, handle and all: the watchdog's thread may
     * abort while another thread is about to issue on it (ENQ reads
     * c->nc under the lock too). */
    issue_begin();
    if (c->nc)
        ncclCommAbort(c->nc);
    c->nc = NULL;
    if (why != c->why)
        snprintf(c->why, sizeof(c->why), "%s", why);
    issue_end();
}

/* ncclCommGetAsyncError, with the handle read under the issue lock, as
 * an abort on another thread clears it there; a cleared one answers
 * ncclInvalidUsage. */
static ncclResult_t async_status(struct comm *c, ncclResult_t *st)
{
    issue_begin();
    ncclResult_t r = c->nc ? ncclCommGetAsyncError(c->nc, st)
                           : ncclInvalidUsage;
    issue_end();
    return r;
}

static int gone(const struct comm *c, const char *call)
{
    char why[300];
    snprintf(why, sizeof(why), "the group's NCCL communicator was aborted "
             "after %s; this group can run no more GPU collectives", c->why);
    return dcoll_cuda_fail(call, why);
}

/* Wait for a nonblocking communicator to leave ncclInProgress: after
 * init, finalize, a launch (nccl.h: "ncclCommGetAsyncError ... returns
 * ncclInProgress ... until the operation completes"). An error or the
 * deadline aborts it. */
static int settle(struct comm *c, double timeout, const char *call)
{
    double end = now() + timeout;
    ncclResult_t st;
    char why[200];
    if (!c->nc)
        return gone(c, call);
    for (;;) {
        ncclResult_t r = async_status(c, &st);
        if (r != ncclSuccess && !c->nc)
            return gone(c, call);   /* aborted by another thread */
        if (r != ncclSuccess) {
            /* Aborted before the caller frees c: an init still running
             * would store into c->nc when it ends (NCCL's init.cc). */
            snprintf(why, sizeof(why), "ncclCommGetAsyncError failed (%s)",
                     ncclGetErrorString(r));
            kill(c, why);
            return nccl_failed("ncclCommGetAsyncError", r);
        }
        if (st != ncclInProgress)
            break;
        if (now() > end) {
            snprintf(c->why, sizeof(c->why), "%s timed out after %g s",
                     call, timeout);
            if (!c->making)
                kill(c, c->why);
            dcoll_cuda_fail(call, "timed out; the communicator was aborted");
            return -2;
        }
        sched_yield();
    }
    if (st == ncclSuccess)
        return 0;
    snprintf(why, sizeof(why), "%s failed (%s)", call,
             ncclGetErrorString(st));
    kill(c, why);
    return nccl_failed(call, st);
}

/* Aborts left to threads of their own, counted so that the process's
 * exit waits for them: one still inside NCCL when CUDA's runtime tears
 * itself down crashes (an H200: every rank of the slow-init test, at
 * exit). */
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reaped = PTHREAD_COND_INITIALIZER;
static int reaping;
static pthread_once_t reap_once = PTHREAD_ONCE_INIT;

/* At exit, before the runtime's own handler (atexit runs the latest
 * first, and the runtime's came with its first call): the aborts still
 * running end, for at most a minute. */
static void reap_wait(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&reap_lock);
    while (reaping > 0 &&
           pthread_cond_timedwait(&reaped, &reap_lock, &until) == 0)
        ;
    pthread_mutex_unlock(&reap_lock);
}

static void reap_register(void)
{
    atexit(reap_wait);
}

static void *reaper(void *arg)
{
    struct comm *c = arg;
    kill(c, c->why);
    free(c);
    pthread_mutex_lock(&reap_lock);
    if (--reaping == 0)
        pthread_cond_broadcast(&reaped);
    pthread_mutex_unlock(&reap_lock);
    return NULL;
}

/* End c, a communicator being made that failed or missed its deadline,
 * and free it. NCCL's abort waits for an init still running, and not
 * every step of one looks at the abort flag (an H200 under
 * compute-sanitizer: a 2-s deadline, the abort returned 16 s later, in
 * NCCL's kernel loading): a live one is aborted on a thread of its own,
 * so that the call returns at its deadline. */
static void reap(struct comm *c)
{
    if (!c)
        return;
    if (c->nc) {
        pthread_attr_t a;
        pthread_t t;
        pthread_once(&reap_once, reap_register);
        pthread_mutex_lock(&reap_lock);
        reaping++;
        pthread_mutex_unlock(&reap_lock);
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int e = pthread_create(&t, &a, reaper, c);
        pthread_attr_destroy(&a);
        if (!e)
            return;
        pthread_mutex_lock(&reap_lock);
        reaping--;
        pthread_mutex_unlock(&reap_lock);
        kill(c, c->why);   /* no thread: here, however long it takes */
    }
    free(c);
}

int dcoll_nccl_id(void *id)
{
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess)
        return nccl_failed("ncclGetUniqueId", r);
    memcpy(id, &u, sizeof(u));
    return 0;
}

int dcoll_nccl_comm(const void *id, int nranks, int rank, int device,
                    double timeout, void **out)
{
    struct comm *c = calloc(1, sizeof(*c));
    if (!c)
        return dcoll_cuda_fail("dcoll_nccl_comm", "no memory");
    int old = dcoll_cuda_enter(device);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclUniqueId u;
    memcpy(&u, id, sizeof(u));
    c->making = true;
    ncclResult_t r = ISSUE(ncclCommInitRankConfig(&c->nc, nranks, u, rank,
                                                  &cfg));
    int rc;
    if (r != ncclSuccess && r != ncclInProgress) {
        rc = nccl_failed("ncclCommInitRankConfig", r); /* nothing made */
        c->nc = NULL;
    } else {
        rc = settle(c, timeout, "ncclCommInitRankConfig");
    }
    dcoll_cuda_leave(old, device);
    if (rc) {
        reap(c);
        return rc;
    }
    c->making = false;
    c->device = device;
    c->timeout = timeout;
    *out = c;
    return 0;
}

/* ndev communicators of one clique, one per GPU, made in one group: NCCL
 * needs every rank of a process initialised together, or the first
 * init waits for the others forever. */
int dcoll_nccl_comms(const void *id, int nranks, int first, int ndev,
                     const int *devices, double timeout, void **out)
{
    ncclUniqueId u;
    memcpy(&u, id, sizeof(u));
    int old = dcoll_cuda_enter(-1), rc = 0;
    for (int i = 0; i < ndev; i++)
        out[i] = NULL;
    issue_begin();
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) {
        issue_end();
        return nccl_failed("ncclGroupStart", r);
    }
    for (int made = 0; made < ndev; made++) {
        /* Each freed on its own (dcoll_nccl_free). */
        struct comm *c = calloc(1, sizeof(*c));
        out[made] = c;
        if (!c) {
            rc = dcoll_cuda_fail("dcoll_nccl_comms", "no memory");
            break;
        }
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.blocking = 0;
        c->device = devices[made];
        c->timeout = timeout;
        c->making = true;
        cudaSetDevice(devices[made]);
        r = ncclCommInitRankConfig(&c->nc, nranks, u, first + made, &cfg);
        if (r != ncclSuccess && r != ncclInProgress) {
            rc = nccl_failed("ncclCommInitRankConfig", r);
            c->nc = NULL;
            break;
        }
    }
    ncclResult_t e = ncclGroupEnd();
    issue_end();
    if (!rc && e != ncclSuccess && e != ncclInProgress)
        rc = nccl_failed("ncclGroupEnd", e);
    for (int i = 0; !rc && i < ndev; i++)
        rc = settle(out[i], timeout, "ncclCommInitRankConfig");
    dcoll_cuda_restore(old); /* the program's device, as it was */
    for (int i = 0; i < ndev && out[i]; i++) {
        if (rc) {   /* those made so far (the rest are NULL) */
            reap(out[i]);
            out[i] = NULL;
        } else {
            ((struct comm *)out[i])->making = false;
        }
    }
    return rc;
}

/* A child communicator from parent's (ncclCommSplit, NCCL 2.18 on),
 * nonblocking as every communicator here: the parent and the child are
 * settled. Ranks with a negative color take part and get none. Its
 * resources are its own (splitShare 0, NCCL's default): a child sharing
 * them shares its parent's abort flag (NCCL 2.28, init.cc), so that a
 * sub-group's timeout would stop the world's communicator while dcoll
 * still took it for ready, and their kernels would run one at a time on
 * the shared device stream. What a split still saves is the unique id's
 * rendezvous and a bootstrap of its own. */
int dcoll_nccl_split(void *parent, int color, int key, double timeout,
                     void **out)
{
    struct comm *p = parent;
    *out = NULL;
    if (!ncclCommSplit)
        return dcoll_cuda_fail("ncclCommSplit", "this NCCL has none");
    if (!p->nc)
        return gone(p, "ncclCommSplit");
    struct comm *c = calloc(1, sizeof(*c));
    if (!c)
        return dcoll_cuda_fail("dcoll_nccl_split", "no memory");
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    cfg.splitShare = 0;
    c->making = true;
    int old = dcoll_cuda_enter(p->device), rc;
    ncclResult_t r = ISSUE_ON(p, ncclCommSplit(p->nc,
                                               color < 0 ? NCCL_SPLIT_NOCOLOR
                                                         : color,
                                               key, &c->nc, &cfg));
    if (r != ncclSuccess && r != ncclInProgress) {
        rc = nccl_failed("ncclCommSplit", r);
    } else {
        rc = settle(p, timeout, "ncclCommSplit");
        if (!rc && c->nc)
            rc = settle(c, timeout, "ncclCommSplit");
    }
    dcoll_cuda_leave(old, p->device);
    if (rc || !c->nc) {
        reap(c);
        return rc;
    }
    c->making = false;
    c->device = p->device;
    c->timeout = timeout;
    *out = c;
    return 0;
}

/* A communicator of parent's ranks less those excluded (ncclCommShrink,
 * NCCL 2.27 on), made by the others alone, nonblocking as every
 * communicator here. NCCL_SHRINK_ABORT: a member died, so the parent's
 * kernels still waiting for it are ended first (nccl.h: "First,
 * terminate ongoing parent operations, and then shrink"). Its resources
 * are its own, as a split's. */
int dcoll_nccl_shrink(void *parent, const int *exclude, int nexclude,
                      double timeout, void **out)
{
    struct comm *p = parent;
    *out = NULL;
#ifndef NCCL_SHRINK_ABORT   /* built on a header before 2.27 */
    (void)p;
    (void)exclude;
    (void)nexclude;
    (void)timeout;
    return dcoll_cuda_fail("ncclCommShrink", "this plugin was built "
                           "without it (NCCL 2.27 or later has it)");
#else
    int version = 0;
    if (!ncclCommShrink || ncclGetVersion(&version) != ncclSuccess ||
        version < 22700)
        return dcoll_cuda_fail("ncclCommShrink", "this NCCL has none "
                               "(2.27 or later has)");
    if (!p->nc)
        return gone(p, "ncclCommShrink");
    struct comm *c = calloc(1, sizeof(*c));
    int *list = malloc(sizeof(int) * (size_t)(nexclude > 0 ? nexclude : 1));
    if (!c || !list) {
        free(c);
        free(list);
        return dcoll_cuda_fail("dcoll_nccl_shrink", "no memory");
    }
    for (int i = 0; i < nexclude; i++)
        list[i] = exclude[i];   /* NCCL's list is not const */
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    cfg.splitShare = 0;
    c->making = true;
    int old = dcoll_cuda_enter(p->device), rc;
    ncclResult_t r = ISSUE_ON(p, ncclCommShrink(p->nc, list, nexclude,
                                                &c->nc, &cfg,
                                                NCCL_SHRINK_ABORT));
    free(list);
    if (r != ncclSuccess && r != ncclInProgress)
        rc = nccl_failed("ncclCommShrink", r);
    else
        rc = c->nc ? settle(c, timeout, "ncclCommShrink")
                   : dcoll_cuda_fail("ncclCommShrink", "made none");
    dcoll_cuda_leave(old, p->device);
    if (rc) {
        reap(c);
        return rc;
    }
    c->making = false;
    c->device = p->device;
    c->timeout = timeout;
    *out = c;
    return 0;
#endif
}

/* The issue lock is held until group_end, which always follows. */
int dcoll_nccl_group_start(void)
{
    issue_begin();
    ncclResult_t r = ncclGroupStart();
    return r == ncclSuccess ? 0 : nccl_failed("ncclGroupStart", r);
}

/* Launch what the group holds; nonblocking communicators may answer
 * ncclInProgress, so each one the group used is settled. */
int dcoll_nccl_group_end(void *const *comms, int n, double timeout)
{
    ncclResult_t r = ncclGroupEnd();
    issue_end();
    if (r != ncclSuccess && r != ncclInProgress)
        return nccl_failed("ncclGroupEnd", r);
    int rc = 0;
    for (int i = 0; !rc && i < n; i++)
        rc = settle(comms[i], timeout, "ncclGroupEnd");
    return rc;
}

void dcoll_nccl_release(void *comm, double timeout, bool failed)
{
    struct comm *c = comm;
    if (!c)
        return;
    if (failed)
        kill(c, "its group failed");
    c->timeout = timeout;
    dcoll_nccl_free(c);
}

void dcoll_nccl_free(void *comm)
{
    struct comm *c = comm;
    if (!c)
        return;
    if (c->nc) {
        /* A nonblocking communicator's finalize answers ncclInProgress
         * and settles later (nccl.h, 2.28: ncclCommFinalize "marks
         * communicator state as ncclInProgress"); that is no failure. */
        /* As long as the group's calls may take, not a fixed minute: a
         * rank that died or frees its groups in another order would
         * hold each free that long. */
        ncclResult_t r = ISSUE_ON(c, ncclCommFinalize(c->nc));
        if ((r == ncclSuccess || r == ncclInProgress) &&
            settle(c, c->timeout, "ncclCommFinalize") == 0)
            ISSUE_ON(c, ncclCommDestroy(c->nc));
        else
            kill(c, "ncclCommFinalize");   /* settle may have already */
    }
    free(c);
}

/* bool, logical and the pair types never come here (the library stages
 * them), nor do complex types (the library gives their real view): their
 * entries are placeholders. */
static const ncclDataType_t types[DCOLL_DTYPE_COUNT_] = {
    ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
    ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64, ncclUint8, ncclInt32,
    ncclUint64, ncclUint64, ncclUint64, ncclUint64, ncclUint64, ncclUint64,
    ncclUint64,
};

static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMin, ncclMax,
                                  ncclAvg};

/* The plugin does not link libdcoll: its own copy of the sizes. */
static const size_t sizes[DCOLL_DTYPE_COUNT_] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8,
                                                  1, 4, 8, 16, 8, 16, 8,
                                                  8, 16};

/* Enqueue on c; a nonblocking communicator may answer ncclInProgress,
 * which is settled outside the issue lock. */
#define ENQ(call) ENQ_R(ISSUE_ON(c, call), #call)
#define ENQ_R(result, name)                                                  \
    do {                                                                     \
        ncclResult_t r_ = (result);                                          \
        if (r_ == ncclInProgress && !issuing)                                \
            rc = settle(c, timeout, name);                                   \
        else if (r_ != ncclSuccess && r_ != ncclInProgress)                  \
            rc = c->nc ? nccl_failed(name, r_) : gone(c, name);              \
    } while (0)

/* The end of a group of calls begun with issue_begin and ncclGroupStart:
 * ended whatever happened inside (NCCL wants every group ended), the
 * first failure inside kept. */
static int group_end(struct comm *c, double timeout, int inside)
{
    int rc = 0;
    ncclResult_t end = ncclGroupEnd();
    issue_end();
    ENQ_R(end, "ncclGroupEnd");
    return inside ? inside : rc;
}

static bool reduces(int kind)
{
    return kind == DCOLL_KIND_ALL_REDUCE || kind == DCOLL_KIND_REDUCE ||
           kind == DCOLL_KIND_REDUCE_SCATTER;
}

int dcoll_nccl_takes(const dcoll_plugin_call_t *k)
{
    /* nccl_coll has a case for DCOLL_GPU_COLL_KINDS, no other kind. */
    if (!dcoll_gpu_kind_listed(k->kind))
        return 1;
    /* Ops NCCL lacks go back to the staged path: every rank of a
     * collective names the same op, so all take the same path. */
    if (reduces(k->kind) && (unsigned)k->op >= sizeof(ops) / sizeof(ops[0]))
        return 1;
    if (k->dtype >= DCOLL_BOOL)   /* see types[] */
        return 1;
    /* Not point to point (not listed): an NCCL receive is a kernel that
     * holds its stream until the message comes, so an irecv posted before
     * an isend on two ranks would deadlock both. MPI matches them in any
     * order. */
    return 0;
}

/* All-to-all, gather and scatter: NCCL's own calls where it has them,
 * else point to point in one group. In place (MPI's form: the root's own
 * block, or an all-to-all's whole buffer, is already in recvbuf), NCCL
 * wants its offset pattern (nccl.h: gather in place "if sendbuff ==
 * recvbuff + root * count"), and an all-to-all, which has none, reads a
 * stream-ordered copy of its input. */
static int by_peer(struct comm *c, const dcoll_plugin_call_t *k, int rank,
                   int size, cudaStream_t s, double timeout)
{
    ncclDataType_t t = types[k->dtype];
    size_t n = (size_t)k->count, b = n * sizes[k->dtype];
    const char *in = k->sendbuf;
    char *out = k->recvbuf;
    void *copy = NULL;
    int rc = 0;
    bool own = k->in_place;   /* this rank's own block stays */
    if (k->kind == DCOLL_KIND_ALL_TO_ALL && k->in_place && b) {
        cudaError_t e = cudaMallocAsync(&copy, b * (size_t)size, s);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(copy, out, b * (size_t)size,
                                cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) {
            if (copy)
                cudaFreeAsync(copy, s);
            return dcoll_cuda_fail("an all_to_all in place: copying the "
                                   "input", cudaGetErrorString(e));
        }
        in = copy;
        own = false;
    }
    if (k->kind == DCOLL_KIND_ALL_TO_ALL && ncclAlltoAll) {
        ENQ(ncclAlltoAll(in, out, n, t, c->nc, s));
    } else if (k->kind == DCOLL_KIND_GATHER && ncclGather) {
        if (own)
            in = out + (size_t)k->root * b;
        ENQ(ncclGather(in, out, n, t, k->root, c->nc, s));
    } else if (k->kind == DCOLL_KIND_SCATTER && ncclScatter) {
        if (own)
            out = (char *)in + (size_t)k->root * b;
        ENQ(ncclScatter(in, out, n, t, k->root, c->nc, s));
    } else {
        issue_begin();   /* until the group's end */
        ENQ(ncclGroupStart());
        for (int p = 0; p < size && !rc; p++) {
            bool skip = p == rank && own;
            if (k->kind == DCOLL_KIND_ALL_TO_ALL) {
                ENQ(ncclSend(in + p * b, n, t, p, c->nc, s));
                ENQ(ncclRecv(out + p * b, n, t, p, c->nc, s));
            } else if (k->kind == DCOLL_KIND_GATHER) {
                if (p == k->root && !skip)
                    ENQ(ncclSend(in, n, t, p, c->nc, s));
                if (rank == k->root && !skip)
                    ENQ(ncclRecv(out + p * b, n, t, p, c->nc, s));
            } else {
                if (rank == k->root && !skip)
                    ENQ(ncclSend(in + p * b, n, t, p, c->nc, s));
                if (p == k->root && !skip)
                    ENQ(ncclRecv(out, n, t, p, c->nc, s));
            }
        }
        rc = group_end(c, timeout, rc);
    }
    if (copy)
        cudaFreeAsync(copy, s);
    return rc;
}

/* The strided transfers between their own bytes and their places in
 * scratch (in transfer order, the contiguous ones taking none): the sends
 * packed (send 1), or the receives unpacked (send 0), on s. */
static int scratch_pass(const dcoll_plugin_xfer_t *x, int n, char *tmp,
                        int send, int device, cudaStream_t s)
{
    size_t at = 0;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const dcoll_plugin_shape_t *sh = &x[i].shape;
        if (dcoll_shape_contiguous(sh))
            continue;
        dcoll_plugin_shape_t flat = dcoll_shape_flat(tmp + at, sh);
        if (x[i].send == send)
            rc = send ? dcoll_cuda_copy_shape(&flat, sh, device, s)
                      : dcoll_cuda_copy_shape(sh, &flat, device, s);
        at += dcoll_shape_bytes(sh);
    }
    return rc;
}

/* A neighbourhood's sends and receives in one group, as NCCL's
 * examples do a halo: each peer's matched in the order given. Strided
 * ones are packed into stream-ordered scratch before the group and
 * unpacked after, all on the caller's stream. */
int dcoll_nccl_exchange(void *comm, const dcoll_plugin_xfer_t *x, int n,
                        void *stream, double timeout)
{
    struct comm *c = comm;
    cudaStream_t s = (cudaStream_t)stream;
    if (!c->nc)
        return gone(c, "dcoll_nccl_exchange");
    size_t need = 0;
    for (int i = 0; i < n; i++)
        if (!dcoll_shape_contiguous(&x[i].shape))
            need += dcoll_shape_bytes(&x[i].shape);
    int rc = 0, old = dcoll_cuda_enter(c->device);
    char *tmp = NULL;
    if (need) {
        cudaError_t e = cudaMallocAsync((void **)&tmp, need, s);
        if (e != cudaSuccess) {
            dcoll_cuda_leave(old, c->device);
            return dcoll_cuda_fail("scratch for strided transfers",
                                   cudaGetErrorString(e));
        }
    }
    rc = scratch_pass(x, n, tmp, 1, c->device, s);
    if (!rc) {
        issue_begin();   /* until the group's end */
        ENQ(ncclGroupStart());
        size_t at = 0;
        for (int i = 0; i < n && !rc; i++) {
            size_t b = dcoll_shape_bytes(&x[i].shape);
            char *p = x[i].shape.buf;
            if (!dcoll_shape_contiguous(&x[i].shape)) {
                p = tmp + at;
                at += b;
            }
            if (!b)
                continue;
            if (x[i].send)
                ENQ(ncclSend(p, b, ncclUint8, x[i].peer, c->nc, s));
            else
                ENQ(ncclRecv(p, b, ncclUint8, x[i].peer, c->nc, s));
        }
        rc = group_end(c, timeout, rc);
    }
    if (!rc)
        rc = scratch_pass(x, n, tmp, 0, c->device, s);
    if (tmp)
        cudaFreeAsync(tmp, s);
    dcoll_cuda_leave(old, c->device);
    return rc;
}

int dcoll_nccl_coll(void *comm, const dcoll_plugin_call_t *k, int rank,
                    int size, void *stream, double timeout)
{
    struct comm *c = comm;
    cudaStream_t s = (cudaStream_t)stream;
    ncclDataType_t t = types[k->dtype];
    size_t n = (size_t)k->count;
    const char *in = k->sendbuf;
    char *out = k->recvbuf;
    int takes = dcoll_nccl_takes(k);
    if (takes)
        return takes;
    if (!c->nc)
        return gone(c, "dcoll_nccl_coll");
    ncclRedOp_t op = reduces(k->kind) ? ops[k->op] : ncclSum;
    int rc = 0, old = dcoll_cuda_enter(c->device);
    switch (k->kind) {
    case DCOLL_KIND_BROADCAST:
        ENQ(ncclBroadcast(out, out, n, t, k->root, c->nc, s));
        break;
    case DCOLL_KIND_ALL_REDUCE:
        ENQ(ncclAllReduce(in, out, n, t, op, c->nc, s));
        break;
    case DCOLL_KIND_REDUCE:
        ENQ(ncclReduce(in, out, n, t, op, k->root, c->nc, s));
        break;
    case DCOLL_KIND_ALL_GATHER:
        ENQ(ncclAllGather(in, out, n, t, c->nc, s));
        break;
    case DCOLL_KIND_REDUCE_SCATTER:
        ENQ(ncclReduceScatter(in, out, n, t, op, c->nc, s));
        break;
    case DCOLL_KIND_ALL_TO_ALL:
    case DCOLL_KIND_GATHER:
    case DCOLL_KIND_SCATTER:
        rc = by_peer(c, k, rank, size, s, timeout);
        break;
    default:   /* not listed: dcoll_nccl_takes declined it above */
        rc = 1;
        break;
    }
    dcoll_cuda_leave(old, c->device);
    return rc;
}

/* Whether stream is being captured into a CUDA graph. Then nothing is
 * recorded or waited for: the calls are the graph's, run at each launch
 * of it, and a query of the capture would end it. The work or the
 * blocking call is done as far as dcoll can see; the program
 * synchronises with its graph's launches, as for any captured work. */
static int capturing(void *stream, bool *yes)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t r = cudaStreamIsCapturing((cudaStream_t)stream, &cs);
    if (r == cudaSuccess && cs == cudaStreamCaptureStatusInvalidated)
        r = cudaErrorStreamCaptureInvalidated;
    *yes = cs == cudaStreamCaptureStatusActive;
    return r == cudaSuccess ? 0 : dcoll_cuda_fail("cudaStreamIsCapturing",
                                                  cudaGetErrorString(r));
}

/* An event of device's from the pool, or a new one; the caller has
 * entered device. */
static struct event *event_take(int device)
{
    pthread_mutex_lock(&pool_lock);
    struct event **pp = &pool;
    while (*pp && (*pp)->device != device)
        pp = &(*pp)->next;
    struct event *ev = *pp;
    if (ev) {
        *pp = ev->next;
        pooled--;
    }
    pthread_mutex_unlock(&pool_lock);
    if (ev)
        return ev;
    if (!(ev = calloc(1, sizeof(*ev)))) {
        dcoll_cuda_fail("an event for the work", "no memory");
        return NULL;
    }
    ev->device = device;
    cudaError_t r = cudaEventCreateWithFlags(&ev->e, cudaEventDisableTiming);
    if (r != cudaSuccess) {
        free(ev);
        dcoll_cuda_fail("cudaEventCreateWithFlags", cudaGetErrorString(r));
        return NULL;
    }
    return ev;
}

/* Back to the pool, or destroyed past its size; the caller has entered
 * ev->device. */
static void event_give(struct event *ev)
{
    pthread_mutex_lock(&pool_lock);
    if (pooled < POOL_MAX) {
        ev->next = pool;
        pool = ev;
        pooled++;
        ev = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    if (ev) {
        cudaEventDestroy(ev->e);
        free(ev);
    }
}

int dcoll_nccl_event_record(void *comm, void *stream, void **event)
{
    struct comm *c = comm;
    *event = NULL;
    if (!c->nc)
        return gone(c, "cudaEventRecord");
    bool cap = false;
    int old = dcoll_cuda_enter(c->device);
    int rc = capturing(stream, &cap);
    if (!rc && !cap) {
        struct event *ev = event_take(c->device);
        cudaError_t r = ev ? cudaEventRecord(ev->e, (cudaStream_t)stream)
                           : cudaSuccess;
        if (!ev) {
            rc = -1;
        } else if (r != cudaSuccess) {
            event_give(ev);
            rc = dcoll_cuda_fail("cudaEventRecord", cudaGetErrorString(r));
        } else {
            *event = ev;
        }
    }
    dcoll_cuda_leave(old, c->device);
    return rc;
}

/* NCCL's asynchronous error: after one the work may never end, so the
 * communicator is aborted and the error said. */
static int async_error(struct comm *c)
{
    ncclResult_t st;
    if (!c->nc)
        return gone(c, "waiting for NCCL");
    if (async_status(c, &st) != ncclSuccess ||
        st == ncclSuccess || st == ncclInProgress)
        return 0;
    char why[200];
    snprintf(why, sizeof(why), "NCCL reported an asynchronous error (%s)",
             ncclGetErrorString(st));
    kill(c, why);
    return nccl_failed("NCCL (asynchronous error); the communicator was "
                       "aborted", st);
}

int dcoll_nccl_check(void *comm)
{
    struct comm *c = comm;
    int old = dcoll_cuda_enter(c->device);
    int rc = async_error(c);
    dcoll_cuda_leave(old, c->device);
    return rc;
}

/* 1 done, 0 not yet, -1 failed: an event, or everything on a stream.
 * The caller has relaxed the capture mode. */
static int event_done(void *ev)
{
    cudaError_t r = cudaEventQuery(((struct event *)ev)->e);
    if (r == cudaSuccess || r == cudaErrorNotReady)
        return r == cudaSuccess;
    return dcoll_cuda_fail("cudaEventQuery", cudaGetErrorString(r));
}

static int stream_done(void *stream)
{
    cudaError_t r = cudaStreamQuery((cudaStream_t)stream);
    if (r == cudaSuccess || r == cudaErrorNotReady)
        return r == cudaSuccess;
    return dcoll_cuda_fail("cudaStreamQuery", cudaGetErrorString(r));
}

/* Until done(arg): a spin first, as cudaStreamSynchronize's own, then a
 * yield a turn after 50 us, then 20-us sleeps after 5 ms, so that a
 * long wait leaves the core to NCCL's proxy thread. The clock and NCCL's
 * asynchronous error are read every 64 turns, not every turn; past the
 * deadline the communicator is aborted (-2). The caller has entered the
 * device. Relaxed once for the whole wait, not a turn: the two swaps
 * cost about 120 ns on an H200's host, a third of a turn, and a turn is
 * how late a spin sees the end. */
static int wait_for(struct comm *c, int (*done)(void *), void *arg,
                    double timeout)
{
    double start = now(), end = start + timeout;
    int pace = 0;   /* 0 spin, 1 yield, 2 sleep */
    enum cudaStreamCaptureMode m = dcoll_cuda_relax();
    int rc;
    for (unsigned turn = 1;; turn++) {
        int d = done(arg);
        if (d) {
            rc = d > 0 ? 0 : -1;
            break;
        }
        if (turn % 64 == 0) {
            if ((rc = async_error(c)))
                break;
            double t = now();
            if (t > end) {
                char why[200];
                snprintf(why, sizeof(why), "a wait that timed out after "
                         "%g s", timeout);
                kill(c, why);
                dcoll_cuda_fail("waiting for NCCL", "timed out; the "
                                "communicator was aborted");
                rc = -2;
                break;
            }
            pace = t - start > 5e-3 ? 2 : t - start > 5e-5 ? 1 : 0;
        }
        if (pace == 1)
            sched_yield();
        else if (pace == 2)
            nanosleep(&(struct timespec){0, 20000}, NULL);
    }
    dcoll_cuda_unrelax(m);
    return rc;
}

int dcoll_nccl_event_poll(void *comm, void *event, int *done)
{
    struct comm *c = comm;
    struct event *ev = event;
    *done = 0;
    int old = dcoll_cuda_enter(c->device);
    int rc = async_error(c);
    if (!rc && ev) {
        enum cudaStreamCaptureMode m = dcoll_cuda_relax();
        int d = event_done(ev);
        dcoll_cuda_unrelax(m);
        rc = d < 0 ? -1 : 0;
        *done = d > 0;
    } else if (!rc) {
        *done = 1;   /* captured: nothing to wait for */
    }
    dcoll_cuda_leave(old, c->device);
    return rc;
}

void dcoll_nccl_event_free(void *event)
{
    struct event *ev = event;
    if (!ev)
        return;
    int old = dcoll_cuda_enter(ev->device);
    event_give(ev);
    dcoll_cuda_leave(old, ev->device);
}

int dcoll_nccl_event_wait(void *comm, void *event, double timeout)
{
    struct comm *c = comm;
    if (!c->nc)
        return gone(c, "waiting for NCCL");
    if (!event)
        return async_error(c);
    int old = dcoll_cuda_enter(c->device);
    int rc = wait_for(c, event_done, event, timeout);
    dcoll_cuda_leave(old, c->device);
    return rc;
}

/* A blocking call's wait: for the call's own stream, as the raw call's
 * cudaStreamSynchronize would, with no event to record. */
int dcoll_nccl_wait(void *comm, void *stream, double timeout)
{
    struct comm *c = comm;
    if (!c->nc)
        return gone(c, "waiting for NCCL");
    bool cap = false;
    int old = dcoll_cuda_enter(c->device);
    int rc = capturing(stream, &cap);
    if (!rc && !cap)
        rc = wait_for(c, stream_done, stream, timeout);
    dcoll_cuda_leave(old, c->device);
    return rc;
}
