/* A CUDA runtime for machines without a GPU that behaves as CUDA does
 * where dcoll depends on it, so that the real plugin (cuda_layer/) and the
 * GPU tests run against it and a missing synchronisation fails a test:
 *   - device memory is a mapping no host code may touch (PROT_NONE); the
 *     double works on a second mapping of the same pages;
 *   - work queued on a stream runs later, in stream order, on that
 *     stream's own thread, after a delay (FAKE_CUDA_DELAY_US, default
 *     200): a read before synchronising sees the old bytes;
 *   - cudaMemcpy from pageable memory to the device returns before the
 *     copy lands (it stays queued on the legacy stream, and lands
 *     FAKE_CUDA_PAGEABLE_US later, default 2000); other copies by
 *     cudaMemcpy return done;
 *   - the legacy default stream (NULL, cudaStreamLegacy) waits for the
 *     device's blocking streams' earlier work and they for its, while a
 *     cudaStreamNonBlocking stream waits for neither (CUDA Runtime API,
 *     "stream synchronization behavior");
 *   - events are done only once the stream reaches them;
 *   - cudaPointerGetAttributes answers device, pinned (cudaMallocHost),
 *     managed (cudaMallocManaged), unregistered host memory with
 *     cudaSuccess (CUDA 11 on), and an error for a pointer of a context
 *     the process cannot see (fake_cuda_foreign());
 *   - a sticky error (fake_cuda_fault()) fails every later call and is
 *     not cleared by cudaGetLastError;
 *   - cudaMallocHost and cudaFreeHost synchronise the device, as page
 *     locking does, and count themselves;
 *   - a context is made on a device by the first call that needs one
 *     (cudaSetDevice since CUDA 12, allocations, copies, event and
 *     stream queries and waits, event destruction), and counted: a
 *     thread that never chose a device gets one on device 0;
 *   - a stream being captured (cudaStreamBeginCapture) runs nothing: its
 *     ops go into the graph, which cudaGraphLaunch queues again each time;
 *     synchronising with the capture (cudaStreamSynchronize on it, a query
 *     or wait of an event recorded in it) fails and invalidates it, so
 *     cudaStreamEndCapture fails too, as in CUDA's global capture mode;
 *     and while one thread captures in global mode, another thread's
 *     query or synchronisation (in global mode itself, the default; see
 *     cudaThreadExchangeStreamCaptureMode) fails and invalidates it.
 *   - the runtime tears itself down at exit, in an atexit handler
 *     registered by its first call (as cudart's): it runs before the
 *     destructors of the libraries loaded at start or by dlopen, and a
 *     thread still inside the NCCL double then stops the process with a
 *     message, where one inside a real NCCL crashed (an H200: an abort
 *     on another thread at exit).
 *   - memory and events shared between processes (cudaIpc*): ipc.c.
 * FAKE_NGPUS=n gives n devices (1..8), FAKE_CUDA_NO_DEVICE=1 none;
 * FAKE_UUID_MAP=0,0,1,1 the physical GPUs of ranks 0, 1, 2, 3 (ranks
 * with one number share theirs: their identities and PCI addresses);
 * FAKE_CUDA_HOST_VISIBLE=1 lets host code (a CUDA-aware MPI) read and
 * write device memory.
 * Never installed: tests only. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "cudart_double.h"
#include "cudart_internal.h"

#define MAX_DEV 8
#define MAX_WAITS 64    /* streams one op may wait for */
#define ARENA_PER_DEV ((size_t)1 << 32)   /* reserved, not committed */

/* ---- errors ---- */

static _Thread_local cudaError_t last;
static atomic_int sticky;              /* cudaSuccess: none */

static cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess)
        last = e;
    return e;
}

/* The sticky error, if one happened: every call answers it. */
#define STICKY()                                                             \
    do {                                                                     \
        cudaError_t s_ = (cudaError_t)atomic_load(&sticky);                  \
        if (s_ != cudaSuccess)                                               \
            return ret(s_);                                                  \
    } while (0)

API void fake_cuda_fault(void)
{
    atomic_store(&sticky, cudaErrorIllegalAddress);
}

static atomic_int torn_down;

static void teardown(void)
{
    atomic_store(&torn_down, 1);
}

API int fake_cuda_torn_down(void)
{
    return atomic_load(&torn_down);
}

/* ---- devices, contexts ---- */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ndev;
static unsigned delay_us = 200;
static unsigned pageable_us = 2000;   /* FAKE_CUDA_PAGEABLE_US */
static char *dev_base, *shadow_base;   /* the two mappings of the arena */
static int arena_fd = -1;              /* kept: IPC peers map it */
static bool host_visible;
static char *foreign_base;             /* memory of "another context" */
static atomic_uint contexts;           /* bit d: device d has one */
static atomic_long pinned_calls, queries, pinned_bytes;
static atomic_long copies_left = -1;   /* fake_cuda_fault_after */
static _Thread_local int current = -1; /* -1: none chosen on this thread */

static void setup(void)
{
    atexit(teardown);
    const char *e = getenv("FAKE_NGPUS");
    ndev = e ? atoi(e) : 1;
    if (ndev < 1 || ndev > MAX_DEV)
        ndev = 1;
    if ((e = getenv("FAKE_CUDA_NO_DEVICE")) && *e == '1')
        ndev = 0;
    if ((e = getenv("FAKE_CUDA_DELAY_US")))
        delay_us = (unsigned)atoi(e);
    if ((e = getenv("FAKE_CUDA_PAGEABLE_US")))
        pageable_us = (unsigned)atoi(e);
    size_t bytes = ARENA_PER_DEV * (size_t)(ndev ? ndev : 1);
    int fd = memfd_create("fake-cuda-device", 0);
    if (fd < 0 || ftruncate(fd, (off_t)bytes)) {
        perror("fake CUDA: device memory");
        abort();
    }
    /* FAKE_CUDA_HOST_VISIBLE=1: the host may touch device memory, as a
     * CUDA-aware MPI does (it reads device pointers itself). */
    const char *vis = getenv("FAKE_CUDA_HOST_VISIBLE");
    host_visible = vis && *vis == '1';
    int prot = host_visible ? PROT_READ | PROT_WRITE : PROT_NONE;
    dev_base = mmap(NULL, bytes, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
    shadow_base = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_NORESERVE, fd, 0);
    foreign_base = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    arena_fd = fd;
    if (dev_base == MAP_FAILED || shadow_base == MAP_FAILED ||
        foreign_base == MAP_FAILED) {
        perror("fake CUDA: mapping device memory");
        abort();
    }
}

static void init(void)
{
    pthread_once(&once, setup);
}

/* The device of p in this process's own arena, or -1. */
static int arena_dev_of(const void *p)
{
    const char *c = p;
    if (!dev_base || c < dev_base ||
        c >= dev_base + ARENA_PER_DEV * (size_t)ndev)
        return -1;
    return (int)((size_t)(c - dev_base) / ARENA_PER_DEV);
}

/* The device of p, in the arena or a peer's memory opened here; -1. */
static int dev_of(const void *p)
{
    int d = arena_dev_of(p);
    if (d < 0 && !fake_ipc_find(p, NULL, &d))
        d = -1;
    return d;
}

/* Where the double reads and writes what p names. */
static void *real(const void *p)
{
    void *shadow;
    if (arena_dev_of(p) >= 0)
        return shadow_base + ((const char *)p - dev_base);
    if (fake_ipc_find(p, &shadow, NULL))
        return shadow;
    return (void *)p;
}

void fake_init(void)
{
    init();
}

cudaError_t fake_ret(cudaError_t e)
{
    return ret(e);
}

int fake_arena_fd(void)
{
    return arena_fd;
}

bool fake_host_visible(void)
{
    return host_visible;
}

/* This thread's device; a context on it from now on. */
static int here(void)
{
    if (current < 0)
        current = 0;
    atomic_fetch_or(&contexts, 1u << current);
    return current;
}

API unsigned fake_cuda_contexts(void)
{
    return atomic_load(&contexts);
}

API long fake_cuda_pinned_bytes(void)
{
    return atomic_load(&pinned_bytes);
}

API void fake_cuda_fault_after(long copies)
{
    atomic_store(&copies_left, copies);
}

API long fake_cuda_pinned_calls(void)
{
    return atomic_load(&pinned_calls);
}

/* The driver's calls the plugin uses to keep a thread without a context
 * without one (cuda.h: CUresult, CUcontext). A device's primary context
 * is named by its device + 1; a context a program made itself
 * (cuCtxCreate) by 65 + its device, and stays current until another is
 * set: cudaSetDevice makes the primary one current. */
static _Thread_local uintptr_t custom;   /* 0: the primary one */

API int cuCtxGetCurrent(void **ctx)
{
    *ctx = current < 0 ? NULL
           : custom    ? (void *)custom
                       : (void *)(uintptr_t)(current + 1);
    return 0;
}

API int cuCtxSetCurrent(void *ctx)
{
    uintptr_t v = (uintptr_t)ctx;
    custom = v > 64 ? v : 0;
    current = !ctx ? -1 : v > 64 ? (int)(v - 65) : (int)v - 1;
    return 0;
}

API long fake_cuda_queries(void)
{
    return atomic_load(&queries);
}

API void *fake_cuda_foreign(void)
{
    init();
    return foreign_base;
}

/* ---- memory: a first-fit list per device, and host ranges ---- */

struct block {
    struct block *next;
    size_t off, size;
    bool used;
    uint64_t gen;   /* which allocation, for IPC handles */
};
static uint64_t gens;
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks[MAX_DEV];

struct range {
    struct range *next;
    char *p;
    size_t size;
    enum cudaMemoryType type;
    int device;
};
static struct range *ranges;

static void *dev_alloc(int d, size_t size)
{
    size = (size + 255) & ~(size_t)255;
    pthread_mutex_lock(&mem_lock);
    if (!blocks[d] && (blocks[d] = calloc(1, sizeof(struct block))))
        blocks[d]->size = ARENA_PER_DEV;
    void *p = NULL;
    for (struct block *b = blocks[d]; b; b = b->next) {
        if (b->used || b->size < size)
            continue;
        if (b->size > size) {
            struct block *rest = malloc(sizeof(*rest));
            if (!rest)
                break;
            *rest = (struct block){b->next, b->off + size, b->size - size,
                                   false, 0};
            b->next = rest;
            b->size = size;
        }
        b->used = true;
        b->gen = ++gens;
        p = dev_base + ARENA_PER_DEV * (size_t)d + b->off;
        break;
    }
    pthread_mutex_unlock(&mem_lock);
    return p;
}

static bool dev_free(void *p)
{
    int d = arena_dev_of(p);
    if (d < 0)
        return false;
    size_t off = (size_t)((char *)p - dev_base) - ARENA_PER_DEV * (size_t)d;
    bool found = false;
    pthread_mutex_lock(&mem_lock);
    for (struct block *b = blocks[d]; b; b = b->next) {
        if (b->off != off || !b->used)
            continue;
        found = true;
        b->used = false;
        fake_ipc_freed(b->gen);
        /* Its whole pages go back; the next user finds zeros, as no
         * one promises, but never this user's bytes. Only pages the
         * block covers whole: a neighbour on a shared page keeps its
         * bytes (two threads' small buffers share one). */
        uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t lo = (uintptr_t)(shadow_base + ((char *)p - dev_base));
        uintptr_t hi = lo + b->size;
        lo = (lo + pg - 1) & ~(pg - 1);
        hi &= ~(pg - 1);
        if (hi > lo)
            madvise((void *)lo, hi - lo, MADV_REMOVE);
        break;
    }
    for (struct block *b = blocks[d]; b && b->next;) {
        struct block *n = b->next;
        if (!b->used && !n->used) {
            b->size += n->size;
            b->next = n->next;
            free(n);
        } else {
            b = n;
        }
    }
    pthread_mutex_unlock(&mem_lock);
    return found;
}

bool fake_block_of(const void *p, int *device, size_t *off, size_t *size,
                   uint64_t *gen)
{
    int d = arena_dev_of(p);
    if (d < 0)
        return false;
    size_t o = (size_t)((const char *)p - dev_base) -
               ARENA_PER_DEV * (size_t)d;
    bool found = false;
    pthread_mutex_lock(&mem_lock);
    for (struct block *b = blocks[d]; b && !found; b = b->next)
        if (b->used && b->off == o) {
            found = true;
            *device = d;
            *off = ARENA_PER_DEV * (size_t)d + o;
            *size = b->size;
            *gen = b->gen;
        }
    pthread_mutex_unlock(&mem_lock);
    return found;
}

/* The driver's cuMemGetAddressRange (cuda.h: CUresult, CUdeviceptr):
 * the live cudaMalloc block p lies in, of this process's arena; 1
 * (CUDA_ERROR_INVALID_VALUE) for anything else, memory opened from a
 * peer included, as this double keeps no ranges for those. */
API int cuMemGetAddressRange_v2(unsigned long long *base, size_t *size,
                                unsigned long long dptr)
{
    init();
    const char *p = (const char *)(uintptr_t)dptr;
    int d = arena_dev_of(p);
    if (d < 0)
        return 1;
    size_t o = (size_t)(p - dev_base) - ARENA_PER_DEV * (size_t)d;
    int rc = 1;
    pthread_mutex_lock(&mem_lock);
    for (struct block *b = blocks[d]; b && rc; b = b->next)
        if (b->used && o >= b->off && o < b->off + b->size) {
            *base = (unsigned long long)(uintptr_t)(dev_base +
                                                    ARENA_PER_DEV * (size_t)d +
                                                    b->off);
            *size = b->size;
            rc = 0;
        }
    pthread_mutex_unlock(&mem_lock);
    return rc;
}

static struct range *range_of(const void *p)
{
    for (struct range *r = ranges; r; r = r->next)
        if ((const char *)p >= r->p && (const char *)p < r->p + r->size)
            return r;
    return NULL;
}

static void *host_add(size_t size, enum cudaMemoryType type, int device)
{
    struct range *r = malloc(sizeof(*r));
    char *p = calloc(1, size ? size : 1);
    if (!r || !p) {
        free(r);
        free(p);
        return NULL;
    }
    *r = (struct range){NULL, p, size ? size : 1, type, device};
    if (type == cudaMemoryTypeHost)
        atomic_fetch_add(&pinned_bytes, (long)r->size);
    pthread_mutex_lock(&mem_lock);
    r->next = ranges;
    ranges = r;
    pthread_mutex_unlock(&mem_lock);
    return p;
}

static bool host_remove(void *p, enum cudaMemoryType type)
{
    pthread_mutex_lock(&mem_lock);
    for (struct range **at = &ranges; *at; at = &(*at)->next) {
        struct range *r = *at;
        if (r->p != p || r->type != type)
            continue;
        *at = r->next;
        pthread_mutex_unlock(&mem_lock);
        if (type == cudaMemoryTypeHost)
            atomic_fetch_sub(&pinned_bytes, (long)r->size);
        free(r->p);
        free(r);
        return true;
    }
    pthread_mutex_unlock(&mem_lock);
    return false;
}

/* ---- streams ---- */

enum op_kind { OP_COPY, OP_COPY2D, OP_SET, OP_EVENT, OP_CALL };

struct op {
    struct op *next;
    enum op_kind kind;
    void *dst;
    const void *src;
    size_t bytes;
    int value;
    void (*fn)(void *);
    void *arg;
    void (*drop)(void *);   /* a graph's OP_CALL: frees arg with it */
    struct graph *from;     /* a launched op: the graph it holds */
    void *owned;            /* an OP_COPY's staged source, freed after */
    size_t rows, dpitch, spitch;   /* an OP_COPY2D's: rows of bytes */
    /* Work this op must wait for: stream wait_on[i] up to its count. */
    int nwait;
    struct stream *wait_on[MAX_WAITS];
    uint64_t wait_upto[MAX_WAITS];
};

struct stream {
    int device;
    unsigned flags;
    bool legacy;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    struct op *head, *tail;
    uint64_t queued, done;     /* ops enqueued, ops run */
    bool stop;
    struct stream *next_on_dev;
    struct graph *capture;     /* being captured into it, or NULL */
    bool invalid;              /* that capture was invalidated */
    bool global;               /* captured in cudaStreamCaptureModeGlobal */
    pthread_t owner;           /* the thread that began the capture */
};

/* A captured graph: its ops in order, each queued again by a launch.
 * The graph, its executable and each launched op not yet run hold it:
 * as in CUDA, either may be destroyed while a launch is in flight, and
 * what the ops use is freed when the last of them is done. */
struct graph {
    struct op *head, *tail;
    atomic_int refs;
};

static void graph_put(struct graph *g)
{
    if (atomic_fetch_sub(&g->refs, 1) != 1)
        return;
    for (struct op *o = g->head, *next; o; o = next) {
        next = o->next;
        if (o->drop)
            o->drop(o->arg);
        if (o->from)
            graph_put(o->from);
        free(o);
    }
    free(g);
}

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;

/* Captures in global mode, and each thread's mode for unsafe calls: while
 * another thread captures in global mode, a thread in global mode may
 * not query or synchronise (CUDA Runtime API, cudaStreamBeginCapture):
 * the call fails and the capture is invalidated. */
static pthread_mutex_t captures_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream *captures[64];
static int ncaptures;
static _Thread_local enum cudaStreamCaptureMode thread_mode =
    cudaStreamCaptureModeGlobal;

static void global_capture(struct stream *s, bool on)
{
    pthread_mutex_lock(&captures_lock);
    for (int i = 0; i < ncaptures; i++)
        if (captures[i] == s)
            captures[i--] = captures[--ncaptures];
    if (on && ncaptures < 64)
        captures[ncaptures++] = s;
    pthread_mutex_unlock(&captures_lock);
}

/* An unsafe call from this thread: false, with the captures it spoiled,
 * where it is prohibited. */
static bool unsafe_ok(void)
{
    if (thread_mode != cudaStreamCaptureModeGlobal)
        return true;
    bool ok = true;
    pthread_mutex_lock(&captures_lock);
    for (int i = 0; i < ncaptures; i++) {
        struct stream *s = captures[i];
        if (pthread_equal(s->owner, pthread_self()))
            continue;
        pthread_mutex_lock(&s->lock);
        s->invalid = true;
        pthread_mutex_unlock(&s->lock);
        ok = false;
    }
    pthread_mutex_unlock(&captures_lock);
    return ok;
}
static struct stream *legacy[MAX_DEV];
static struct stream *on_dev[MAX_DEV];   /* every stream of a device */

static void wait_done(struct stream *s, uint64_t upto)
{
    pthread_mutex_lock(&s->lock);
    while (s->done < upto)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static void *run(void *arg)
{
    struct stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->head && !s->stop)
            pthread_cond_wait(&s->cond, &s->lock);
        if (!s->head)
            break;
        struct op *o = s->head;
        pthread_mutex_unlock(&s->lock);
        for (int i = 0; i < o->nwait; i++)
            wait_done(o->wait_on[i], o->wait_upto[i]);
        if (delay_us)
            usleep(delay_us);
        if (o->owned)   /* a DMA from CUDA's staging buffer: slower */
            usleep(pageable_us);
        switch (o->kind) {
        case OP_COPY:
            memmove(real(o->dst), real(o->src), o->bytes);
            break;
        case OP_COPY2D:
            for (size_t i = 0; i < o->rows; i++)
                memmove(real((char *)o->dst + i * o->dpitch),
                        real((const char *)o->src + i * o->spitch), o->bytes);
            break;
        case OP_SET:
            memset(real(o->dst), o->value, o->bytes);
            break;
        case OP_CALL:
            o->fn(o->arg);
            break;
        case OP_EVENT:
            break;
        }
        free(o->owned);
        if (o->from)
            graph_put(o->from);
        pthread_mutex_lock(&s->lock);
        s->head = o->next;
        if (!s->head)
            s->tail = NULL;
        s->done++;
        pthread_cond_broadcast(&s->cond);
        free(o);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static struct stream *stream_new(int device, unsigned flags, bool is_legacy)
{
    struct stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->device = device;
    s->flags = flags;
    s->legacy = is_legacy;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, run, s)) {
        free(s);
        return NULL;
    }
    pthread_mutex_lock(&streams_lock);
    s->next_on_dev = on_dev[device];
    on_dev[device] = s;
    pthread_mutex_unlock(&streams_lock);
    return s;
}

/* The stream a handle names: NULL and cudaStreamLegacy are the legacy
 * stream of this thread's device (cudaStreamPerThread too: the double
 * has no per-thread streams, and dcoll never asks for one). */
static struct stream *stream_of(cudaStream_t h)
{
    if (h && h != cudaStreamLegacy && h != cudaStreamPerThread)
        return (struct stream *)h;
    int d = here();
    pthread_mutex_lock(&streams_lock);
    struct stream *s = legacy[d];
    pthread_mutex_unlock(&streams_lock);
    if (!s) {
        s = stream_new(d, 0, true);
        pthread_mutex_lock(&streams_lock);
        if (legacy[d]) {
            /* another thread made it meanwhile: keep one (this one's
             * thread idles until exit) */
            s = legacy[d];
        } else {
            legacy[d] = s;
        }
        pthread_mutex_unlock(&streams_lock);
    }
    return s;
}

/* Queue o on s, after what stream semantics make it wait for (added to
 * the waits o has). */
static cudaError_t enqueue(struct stream *s, struct op *o)
{
    if (!s) {
        free(o);
        return ret(cudaErrorInvalidResourceHandle);
    }
    pthread_mutex_lock(&s->lock);
    struct graph *g = s->capture;
    if (g) {
        o->next = NULL;
        o->nwait = 0;   /* a graph's order is its stream's */
        if (g->tail)
            g->tail->next = o;
        else
            g->head = o;
        g->tail = o;
    }
    pthread_mutex_unlock(&s->lock);
    if (g)
        return cudaSuccess;
    if (!(s->flags & cudaStreamNonBlocking)) {
        pthread_mutex_lock(&streams_lock);
        for (struct stream *t = on_dev[s->device]; t; t = t->next_on_dev) {
            if (t == s || (t->flags & cudaStreamNonBlocking))
                continue;
            /* The legacy stream waits for every blocking stream, and a
             * blocking stream for the legacy one. */
            if (!s->legacy && !t->legacy)
                continue;
            if (o->nwait == MAX_WAITS)
                break;
            pthread_mutex_lock(&t->lock);
            o->wait_on[o->nwait] = t;
            o->wait_upto[o->nwait++] = t->queued;
            pthread_mutex_unlock(&t->lock);
        }
        pthread_mutex_unlock(&streams_lock);
    }
    o->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    s->queued++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

static void drain(struct stream *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t upto = s->queued;
    pthread_mutex_unlock(&s->lock);
    wait_done(s, upto);
}

static void drain_device(int d)
{
    pthread_mutex_lock(&streams_lock);
    int n = 0;
    struct stream *all[256];
    for (struct stream *t = on_dev[d]; t && n < 256; t = t->next_on_dev)
        all[n++] = t;
    pthread_mutex_unlock(&streams_lock);
    for (int i = 0; i < n; i++)
        drain(all[i]);
}

void fake_drain_device(int device)
{
    drain_device(device);
}

static void drain_all(void)
{
    for (int d = 0; d < ndev; d++)
        drain_device(d);
}

/* Whether s is being captured; if so the capture is invalidated (a
 * synchronisation with it, which CUDA's global mode forbids). */
static bool spoil(struct stream *s)
{
    pthread_mutex_lock(&s->lock);
    bool capturing = s->capture != NULL;
    if (capturing)
        s->invalid = true;
    pthread_mutex_unlock(&s->lock);
    return capturing;
}

/* ---- the API ---- */

API cudaError_t cudaGetDeviceCount(int *count)
{
    init();
    if (!count)
        return ret(cudaErrorInvalidValue);
    *count = ndev;
    return ndev ? cudaSuccess : ret(cudaErrorNoDevice);
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

API cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

API cudaError_t cudaGetLastError(void)
{
    cudaError_t s = (cudaError_t)atomic_load(&sticky);
    cudaError_t e = last;
    last = s;   /* a sticky error stays */
    return e != cudaSuccess ? e : s;
}

API cudaError_t cudaPeekAtLastError(void)
{
    return last != cudaSuccess ? last : (cudaError_t)atomic_load(&sticky);
}

API const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress:
        return "an illegal memory access was encountered";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed "
                                       "in the present state";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureIsolation:
        return "dependency created on uncaptured work in another stream";
    case cudaErrorCapturedEvent:
        return "operation not permitted on an event last recorded in a "
               "capturing stream";
    default: return "unknown error (fake CUDA)";
    }
}

API const char *cudaGetErrorName(cudaError_t e)
{
    return cudaGetErrorString(e);
}

API cudaError_t cudaSetDevice(int d)
{
    init();
    STICKY();
    if (d < 0 || d >= ndev)
        return ret(cudaErrorInvalidDevice);
    current = d;
    custom = 0;
    here();   /* CUDA 12 on: cudaSetDevice makes the primary context */
    return cudaSuccess;
}

API cudaError_t cudaGetDevice(int *d)
{
    init();
    STICKY();
    /* No context is made: this only reads the thread's choice. */
    *d = current < 0 ? 0 : current;
    return cudaSuccess;
}

/* FAKE_UUID_MAP=0,0,1,1: the physical GPUs of the job's ranks (this
 * process's rank as its launcher says), so that ranks with one number
 * share their GPUs and the others do not; -1 where unset. */
static int gpu_set(void)
{
    const char *map = getenv("FAKE_UUID_MAP"), *r = NULL;
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (int i = 0; i < 3 && !r; i++)
        r = getenv(vars[i]);
    if (!map || !*map)
        return -1;
    int rank = r ? atoi(r) : 0, set = 0;
    for (const char *c = map; rank >= 0; rank--) {
        set = atoi(c);
        const char *comma = strchr(c, ',');
        if (!comma)
            break;   /* ranks past the list take its last number */
        c = comma + 1;
    }
    return set & 0x0f;
}

API cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int d)
{
    init();
    if (d < 0 || d >= ndev)
        return ret(cudaErrorInvalidDevice);
    int set = gpu_set();
    snprintf(bus, (size_t)len, "0000:%02x:00.0",
             (set >= 0 ? 0x40 + 8 * set : 0x17) + d);
    return cudaSuccess;
}

API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    init();
    if (d < 0 || d >= ndev)
        return ret(cudaErrorInvalidDevice);
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "fake CUDA device %d", d);
    const char *shared = getenv("FAKE_SHARED_UUID");
    int set = gpu_set();
    /* Each process's GPU d is its own, unless they share GPUs. */
    uint32_t who = set >= 0                     ? 0x55000000u + (uint32_t)set
                   : shared && *shared == '1' ? 0
                                              : (uint32_t)getpid();
    memcpy(p->uuid.bytes, &who, sizeof(who));
    p->uuid.bytes[4] = (char)d;
    p->pciBusID = (set >= 0 ? 0x40 + 8 * set : 0x17) + d;
    p->totalGlobalMem = ARENA_PER_DEV;
    p->major = 9;
    return cudaSuccess;
}

API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a,
                                         const void *p)
{
    init();
    STICKY();
    atomic_fetch_add(&queries, 1);
    memset(a, 0, sizeof(*a));
    int d = dev_of(p);
    if (d >= 0) {
        a->type = cudaMemoryTypeDevice;
        a->device = d;
        a->devicePointer = (void *)p;
        return cudaSuccess;
    }
    if ((const char *)p >= foreign_base && (const char *)p < foreign_base + 4096)
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&mem_lock);
    struct range *r = range_of(p);
    if (r) {
        a->type = r->type;
        a->device = r->device;
        a->hostPointer = (void *)p;
        if (r->type == cudaMemoryTypeManaged)
            a->devicePointer = (void *)p;
    } else {
        /* CUDA 11 on: unregistered host memory is no error. */
        a->type = cudaMemoryTypeUnregistered;
        a->device = -2;
        a->hostPointer = (void *)p;
    }
    pthread_mutex_unlock(&mem_lock);
    return cudaSuccess;
}

API cudaError_t cudaMalloc(void **p, size_t bytes)
{
    init();
    STICKY();
    *p = dev_alloc(here(), bytes ? bytes : 1);
    return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

API cudaError_t cudaFree(void *p)
{
    init();
    STICKY();
    if (!p)
        return cudaSuccess;
    /* cudaFree waits for the device's work, as CUDA's does. */
    int d = dev_of(p);
    if (d >= 0)
        drain_device(d);
    if (dev_free(p) || host_remove(p, cudaMemoryTypeManaged))
        return cudaSuccess;
    return ret(cudaErrorInvalidValue);
}

static struct op *op_new(enum op_kind kind);

/* Stream-ordered: the memory is there at once (earlier than CUDA
 * promises, which is allowed), and freed only when the stream gets
 * there. */
API cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t h)
{
    (void)h;
    return cudaMalloc(p, bytes);
}

static void free_later(void *p)
{
    dev_free(p);
}

API cudaError_t cudaFreeAsync(void *p, cudaStream_t h)
{
    init();
    STICKY();
    if (!p)
        return cudaSuccess;
    if (dev_of(p) < 0)
        return ret(cudaErrorInvalidValue);
    struct op *o = op_new(OP_CALL);
    if (!o)
        return ret(cudaErrorMemoryAllocation);
    o->fn = free_later;
    o->arg = p;
    return enqueue(stream_of(h), o);
}

API cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    init();
    STICKY();
    *p = host_add(bytes, cudaMemoryTypeManaged, here());
    return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

API cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    init();
    STICKY();
    here();
    atomic_fetch_add(&pinned_calls, 1);
    drain_all();   /* page locking waits for every stream */
    *p = host_add(bytes, cudaMemoryTypeHost, current);
    return *p ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

API cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    return cudaMallocHost(p, bytes);
}

API cudaError_t cudaFreeHost(void *p)
{
    init();
    STICKY();
    drain_all();
    return host_remove(p, cudaMemoryTypeHost) ? cudaSuccess
                                              : ret(cudaErrorInvalidValue);
}

API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    init();
    STICKY();
    *s = (cudaStream_t)stream_new(here(), flags, false);
    return *s ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

API cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

API cudaError_t cudaStreamDestroy(cudaStream_t h)
{
    init();
    if (!h || h == cudaStreamLegacy || h == cudaStreamPerThread)
        return ret(cudaErrorInvalidResourceHandle);
    /* Its work still runs, as CUDA's does; the handle goes once done. */
    struct stream *s = (struct stream *)h;
    drain(s);
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&streams_lock);
    for (struct stream **at = &on_dev[s->device]; *at;
         at = &(*at)->next_on_dev)
        if (*at == s) {
            *at = s->next_on_dev;
            break;
        }
    pthread_mutex_unlock(&streams_lock);
    /* Not freed: ops of other streams may still name it in their waits
     * (all met, as it ran everything). A handle used after this is the
     * program's fault, as in CUDA. */
    return cudaSuccess;
}

API cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
    init();
    STICKY();
    if (!unsafe_ok())
        return ret(cudaErrorStreamCaptureUnsupported);
    struct stream *s = stream_of(h);
    if (!s)
        return ret(cudaErrorInvalidResourceHandle);
    if (spoil(s))
        return ret(cudaErrorStreamCaptureUnsupported);
    drain(s);   /* for the legacy stream, what it waits for too */
    return (cudaError_t)atomic_load(&sticky);
}

/* Whether everything queued on the stream so far has run; a query of a
 * stream being captured ends the capture, as a synchronisation does. */
API cudaError_t cudaStreamQuery(cudaStream_t h)
{
    init();
    STICKY();
    here();
    if (!unsafe_ok())
        return ret(cudaErrorStreamCaptureUnsupported);
    struct stream *s = stream_of(h);
    if (!s)
        return ret(cudaErrorInvalidResourceHandle);
    if (spoil(s))
        return ret(cudaErrorStreamCaptureUnsupported);
    pthread_mutex_lock(&s->lock);
    bool done = s->done >= s->queued;
    pthread_mutex_unlock(&s->lock);
    return done ? cudaSuccess : cudaErrorNotReady;
}

API cudaError_t cudaDeviceSynchronize(void)
{
    init();
    STICKY();
    drain_device(here());
    return cudaSuccess;
}

static struct op *op_new(enum op_kind kind)
{
    struct op *o = calloc(1, sizeof(*o));
    if (o)
        o->kind = kind;
    return o;
}

static atomic_long to_host;   /* copies from the device to the host */

API long fake_cuda_to_host(void)
{
    return atomic_load(&to_host);
}

/* rows rows of bytes each, dpitch and spitch apart (1 row: a plain
 * copy), as one operation on the stream. */
static cudaError_t copy_rows(void *dst, size_t dpitch, const void *src,
                             size_t spitch, size_t bytes, size_t rows,
                             cudaStream_t h, void *owned)
{
    init();
    STICKY();
    if (!bytes)
        return cudaSuccess;
    if (dev_of(src) >= 0 && dev_of(dst) < 0)
        atomic_fetch_add(&to_host, 1);
    if (atomic_load(&copies_left) >= 0 &&
        atomic_fetch_sub(&copies_left, 1) == 0) {
        fake_cuda_fault();
        return ret(cudaErrorIllegalAddress);
    }
    struct op *o = op_new(rows > 1 ? OP_COPY2D : OP_COPY);
    if (!o)
        return ret(cudaErrorMemoryAllocation);
    o->dst = dst;
    o->src = src;
    o->bytes = bytes;
    o->rows = rows;
    o->dpitch = dpitch;
    o->spitch = spitch;
    o->owned = owned;
    return enqueue(stream_of(h), o);
}

static cudaError_t copy_async(void *dst, const void *src, size_t bytes,
                              cudaStream_t h, void *owned)
{
    return copy_rows(dst, bytes, src, bytes, bytes, 1, h, owned);
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                enum cudaMemcpyKind kind, cudaStream_t h)
{
    (void)kind;
    return copy_async(dst, src, bytes, h, NULL);
}

/* One operation on the stream, row by row, as the device does it. */
API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                  size_t spitch, size_t width, size_t height,
                                  enum cudaMemcpyKind kind, cudaStream_t h)
{
    (void)kind;
    if (dpitch < width || spitch < width)
        return ret(cudaErrorInvalidPitchValue);
    if (!width || !height)
        return cudaSuccess;
    return copy_rows(dst, dpitch, src, spitch, width, height, h, NULL);
}

/* Host memory neither the device's nor registered with it. */
static bool pageable(const void *p)
{
    if (dev_of(p) >= 0)
        return false;
    pthread_mutex_lock(&mem_lock);
    bool is = range_of(p) == NULL;
    pthread_mutex_unlock(&mem_lock);
    return is;
}

API cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                           enum cudaMemcpyKind kind)
{
    (void)kind;
    /* From pageable memory to the device CUDA returns once the bytes are
     * in its staging buffer, before the DMA lands (Runtime API, "API
     * synchronization behavior"): the copy stays queued on the legacy
     * stream, from a copy of the source, and work on a non-blocking
     * stream does not wait for it (an H100 showed it: dcoll-perf's check
     * read partly old input at 512 KiB to 2 MiB). Otherwise the host
     * waits for the legacy stream. */
    if (bytes && dev_of(dst) >= 0 && pageable(src)) {
        void *staged = malloc(bytes);
        if (!staged)
            return ret(cudaErrorMemoryAllocation);
        memcpy(staged, src, bytes);
        cudaError_t e = copy_async(dst, staged, bytes, NULL, staged);
        if (e != cudaSuccess)
            free(staged);
        return e;
    }
    cudaError_t e = copy_async(dst, src, bytes, NULL, NULL);
    if (e == cudaSuccess)
        drain(stream_of(NULL));
    return e;
}

API cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes,
                                cudaStream_t h)
{
    init();
    STICKY();
    struct op *o = op_new(OP_SET);
    if (!o)
        return ret(cudaErrorMemoryAllocation);
    o->dst = dst;
    o->value = value;
    o->bytes = bytes;
    return enqueue(stream_of(h), o);
}

API cudaError_t cudaMemset(void *dst, int value, size_t bytes)
{
    cudaError_t e = cudaMemsetAsync(dst, value, bytes, NULL);
    if (e == cudaSuccess)
        drain(stream_of(NULL));
    return e;
}

/* ---- events: a stream and the count it must reach ---- */

struct event {
    struct stream *s;
    uint64_t upto;     /* 0: never recorded */
    struct stream *captured;   /* last recorded in this capture */
    struct fake_ipc_event *ipc;   /* interprocess: its shared state */
    bool imported;                /* that state is a peer's */
};

API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    init();
    STICKY();
    if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
        return ret(cudaErrorInvalidValue);
    struct event *ev = calloc(1, sizeof(struct event));
    if (ev && (flags & cudaEventInterprocess) &&
        !(ev->ipc = fake_ipc_event_new())) {
        free(ev);
        ev = NULL;
    }
    *e = (cudaEvent_t)ev;
    return ev ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

struct fake_ipc_event *fake_event_ipc(cudaEvent_t h)
{
    struct event *e = (struct event *)h;
    return e && !e->imported ? e->ipc : NULL;
}

cudaError_t fake_event_imported(cudaEvent_t *h, struct fake_ipc_event *s)
{
    struct event *e = calloc(1, sizeof(*e));
    if (!e)
        return ret(cudaErrorMemoryAllocation);
    e->ipc = s;
    e->imported = true;
    *h = (cudaEvent_t)e;
    return cudaSuccess;
}

/* An interprocess record reached by its stream, or a stream's wait for
 * one: run in stream order. */
struct ipc_step {
    struct fake_ipc_event *e;
    uint64_t n;
};

static void ipc_reached(void *arg)
{
    struct ipc_step *st = arg;
    uint64_t d = atomic_load(&st->e->done);
    while (d < st->n && !atomic_compare_exchange_weak(&st->e->done, &d,
                                                      st->n))
        ;
    free(st);
}

static void ipc_wait(void *arg)
{
    struct ipc_step *st = arg;
    while (atomic_load(&st->e->done) < st->n)
        usleep(20);
    free(st);
}

static cudaError_t ipc_step(cudaStream_t sh, struct fake_ipc_event *e,
                            uint64_t n, void (*fn)(void *))
{
    struct ipc_step *st = malloc(sizeof(*st));
    if (!st)
        return ret(cudaErrorMemoryAllocation);
    *st = (struct ipc_step){e, n};
    if (fake_cuda_enqueue(sh, fn, st, NULL)) {
        free(st);
        return ret(cudaErrorInvalidResourceHandle);
    }
    return cudaSuccess;
}

API cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, 0);
}

API cudaError_t cudaEventRecord(cudaEvent_t h, cudaStream_t sh)
{
    init();
    STICKY();
    struct event *e = (struct event *)h;
    struct stream *s = stream_of(sh);
    struct op *o = op_new(OP_EVENT);
    if (!e || !o || !s) {
        free(o);
        return ret(cudaErrorInvalidResourceHandle);
    }
    pthread_mutex_lock(&s->lock);
    bool capturing = s->capture != NULL;
    pthread_mutex_unlock(&s->lock);
    if (e->ipc) {
        /* Counted when made: a wait made after this call binds to it. */
        free(o);
        if (capturing)
            return ret(cudaErrorStreamCaptureUnsupported);
        return ipc_step(sh, e->ipc, atomic_fetch_add(&e->ipc->recorded, 1) + 1,
                        ipc_reached);
    }
    if (capturing) {
        free(o);
        e->s = NULL;
        e->captured = s;
        return cudaSuccess;
    }
    e->captured = NULL;
    cudaError_t r = enqueue(s, o);
    if (r != cudaSuccess)
        return r;
    pthread_mutex_lock(&s->lock);
    e->s = s;
    e->upto = s->queued;
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

API cudaError_t cudaEventQuery(cudaEvent_t h)
{
    init();
    STICKY();
    here();   /* as every call that needs a context */
    if (!unsafe_ok())
        return ret(cudaErrorStreamCaptureUnsupported);
    struct event *e = (struct event *)h;
    if (!e)
        return ret(cudaErrorInvalidResourceHandle);
    if (e->ipc)
        return atomic_load(&e->ipc->done) >= atomic_load(&e->ipc->recorded)
                   ? cudaSuccess : cudaErrorNotReady;
    if (e->captured) {
        spoil(e->captured);
        return ret(cudaErrorCapturedEvent);
    }
    if (!e->s)
        return cudaSuccess;
    pthread_mutex_lock(&e->s->lock);
    bool done = e->s->done >= e->upto;
    pthread_mutex_unlock(&e->s->lock);
    return done ? cudaSuccess : cudaErrorNotReady;  /* not sticky in CUDA */
}

API cudaError_t cudaEventSynchronize(cudaEvent_t h)
{
    init();
    STICKY();
    here();
    if (!unsafe_ok())
        return ret(cudaErrorStreamCaptureUnsupported);
    struct event *e = (struct event *)h;
    if (!e)
        return ret(cudaErrorInvalidResourceHandle);
    if (e->ipc) {
        uint64_t n = atomic_load(&e->ipc->recorded);
        while (atomic_load(&e->ipc->done) < n)
            usleep(20);
        return cudaSuccess;
    }
    if (e->captured) {
        spoil(e->captured);
        return ret(cudaErrorCapturedEvent);
    }
    if (e->s)
        wait_done(e->s, e->upto);
    return cudaSuccess;
}

API cudaError_t cudaStreamWaitEvent(cudaStream_t sh, cudaEvent_t h,
                                    unsigned flags)
{
    (void)flags;
    STICKY();
    struct event *e = (struct event *)h;
    if (e && e->ipc) {
        /* The records made before this call; none: nothing to wait for. */
        uint64_t n = atomic_load(&e->ipc->recorded);
        if (atomic_load(&e->ipc->done) >= n)
            return cudaSuccess;
        return ipc_step(sh, e->ipc, n, ipc_wait);
    }
    struct op *o = op_new(OP_EVENT);
    if (!e || !o) {
        free(o);
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (e->captured) {
        /* Only a stream of the same capture may wait for it. */
        free(o);
        struct stream *t = stream_of(sh);
        if (!t)
            return ret(cudaErrorInvalidResourceHandle);
        pthread_mutex_lock(&t->lock);
        bool joins = t->capture != NULL;
        pthread_mutex_unlock(&t->lock);
        if (!joins)
            spoil(e->captured);
        return joins ? cudaSuccess : ret(cudaErrorStreamCaptureIsolation);
    }
    if (e->s) {
        o->wait_on[o->nwait] = e->s;
        o->wait_upto[o->nwait++] = e->upto;
    }
    return enqueue(stream_of(sh), o);
}

API cudaError_t cudaEventDestroy(cudaEvent_t h)
{
    init();
    here();
    struct event *e = (struct event *)h;
    if (e && e->ipc && !e->imported)
        fake_ipc_event_free(e->ipc);
    free(h);
    return cudaSuccess;
}

/* ---- graphs ---- */

API cudaError_t cudaStreamBeginCapture(cudaStream_t h,
                                       enum cudaStreamCaptureMode mode)
{
    init();
    STICKY();
    if (!h || h == cudaStreamLegacy || h == cudaStreamPerThread)
        return ret(cudaErrorStreamCaptureUnsupported);
    struct stream *s = (struct stream *)h;
    struct graph *g = calloc(1, sizeof(*g));
    if (!g)
        return ret(cudaErrorMemoryAllocation);
    atomic_init(&g->refs, 1);
    pthread_mutex_lock(&s->lock);
    bool busy = s->capture != NULL;
    if (!busy) {
        s->capture = g;
        s->invalid = false;
        s->global = mode == cudaStreamCaptureModeGlobal;
        s->owner = pthread_self();
    }
    pthread_mutex_unlock(&s->lock);
    if (!busy && mode == cudaStreamCaptureModeGlobal)
        global_capture(s, true);
    if (busy) {
        free(g);
        return ret(cudaErrorIllegalState);
    }
    return cudaSuccess;
}

/* The calling thread's capture mode for unsafe calls (CUDA's
 * cudaThreadExchangeStreamCaptureMode): swapped with *mode. */
API cudaError_t cudaThreadExchangeStreamCaptureMode(
    enum cudaStreamCaptureMode *mode)
{
    enum cudaStreamCaptureMode was = thread_mode;
    thread_mode = *mode;
    *mode = was;
    return cudaSuccess;
}

API cudaError_t cudaStreamIsCapturing(cudaStream_t h,
                                      enum cudaStreamCaptureStatus *st)
{
    init();
    STICKY();
    struct stream *s = stream_of(h);
    if (!s || !st)
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&s->lock);
    *st = !s->capture ? cudaStreamCaptureStatusNone
          : s->invalid ? cudaStreamCaptureStatusInvalidated
                       : cudaStreamCaptureStatusActive;
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

API cudaError_t cudaGraphDestroy(cudaGraph_t h)
{
    struct graph *g = (struct graph *)h;
    if (!g)
        return ret(cudaErrorInvalidValue);
    graph_put(g);
    return cudaSuccess;
}

API cudaError_t cudaStreamEndCapture(cudaStream_t h, cudaGraph_t *out)
{
    init();
    STICKY();
    if (!h || h == cudaStreamLegacy || h == cudaStreamPerThread || !out)
        return ret(cudaErrorInvalidValue);
    struct stream *s = (struct stream *)h;
    pthread_mutex_lock(&s->lock);
    struct graph *g = s->capture;
    bool invalid = s->invalid;
    s->capture = NULL;
    s->invalid = false;
    pthread_mutex_unlock(&s->lock);
    global_capture(s, false);
    *out = NULL;
    if (!g)
        return ret(cudaErrorIllegalState);
    if (invalid) {
        cudaGraphDestroy((cudaGraph_t)g);
        return ret(cudaErrorStreamCaptureInvalidated);
    }
    *out = (cudaGraph_t)g;
    return cudaSuccess;
}

/* The executable graph is the graph itself, held once more: the double
 * has nothing to compile. */
API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g,
                                     unsigned long long flags)
{
    (void)flags;
    if (!exec || !g)
        return ret(cudaErrorInvalidValue);
    atomic_fetch_add(&((struct graph *)g)->refs, 1);
    *exec = (cudaGraphExec_t)g;
    return cudaSuccess;
}

API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!exec)
        return ret(cudaErrorInvalidValue);
    graph_put((struct graph *)exec);
    return cudaSuccess;
}

API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t h)
{
    init();
    STICKY();
    struct graph *g = (struct graph *)exec;
    struct stream *s = stream_of(h);
    if (!g || !s)
        return ret(cudaErrorInvalidValue);
    for (const struct op *o = g->head; o; o = o->next) {
        struct op *copy = op_new(o->kind);
        if (!copy)
            return ret(cudaErrorMemoryAllocation);
        *copy = *o;
        copy->next = NULL;
        copy->drop = NULL;
        copy->from = g;
        atomic_fetch_add(&g->refs, 1);
        cudaError_t r = enqueue(s, copy);
        if (r != cudaSuccess)
            return r;
    }
    return cudaSuccess;
}

/* A host function run in stream order (the double's NCCL queues its
 * collectives this way). Captured into a graph, it runs at each launch
 * and drop(arg), where given, when the graph is destroyed. */
API int fake_cuda_enqueue(void *stream, void (*fn)(void *), void *arg,
                          void (*drop)(void *))
{
    init();
    if (atomic_load(&sticky) != cudaSuccess)
        return -1;
    struct op *o = op_new(OP_CALL);
    if (!o)
        return -1;
    o->fn = fn;
    o->arg = arg;
    o->drop = drop;
    return enqueue(stream_of((cudaStream_t)stream), o) == cudaSuccess ? 0
                                                                      : -1;
}

API void *fake_cuda_real(const void *p)
{
    return real(p);
}

API int fake_cuda_device_of(const void *p)
{
    return dev_of(p);
}
