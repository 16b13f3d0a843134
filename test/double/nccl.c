/* An NCCL for machines without a GPU, beside the CUDA double (cudart.c),
 * that behaves as NCCL 2.28 does where dcoll depends on it, so that the
 * plugin's NCCL half (cuda_layer/nccl.c) runs in tests:
 *   - a collective is queued on the caller's stream and runs there, in
 *     stream order, on the CUDA double's stream thread; the ranks (one
 *     process each, or several GPUs of one process) meet through files
 *     under /dev/shm (FAKE_NCCL_DIR), as large as the message: no cap;
 *   - a nonblocking communicator (config.blocking = 0) answers
 *     ncclInProgress from ncclCommInitRankConfig, ncclCommFinalize, every
 *     collective and ncclGroupEnd, and ncclCommGetAsyncError says
 *     ncclInProgress until it is done; using it before then is refused
 *     with ncclInvalidArgument, as ncclCommEnsureReady does (NCCL 2.28,
 *     src/init.cc);
 *   - ncclGroupStart/End defer every call, inits too, to the outermost
 *     ncclGroupEnd; a send or receive outside a group holds its stream
 *     until the peer's matching call comes, as NCCL's kernels do;
 *   - ncclCommFinalize waits for every rank's finalize or abort;
 *   - ncclCommAbort and ncclCommDestroy end the handle: any later call
 *     that names it stops the process with a message (use after free);
 *     an abort waits for a nonblocking init's pause (FAKE_NCCL_INIT_US)
 *     to end, as NCCL's waits for its init thread;
 *   - two ranks of one communicator on one GPU (same NCCL_HOSTID or host
 *     name, same device UUID) are refused ("Duplicate GPU detected"),
 *     unless it reports 2.30 or later (FAKE_NCCL_VERSION) and
 *     NCCL_MULTI_RANK_GPU_ENABLE=1, as NCCL 2.30's experimental mode;
 *   - arithmetic is NCCL's: fp16 and bf16 rounded at every step, AVG a
 *     pre-multiplied sum by 1/n in floating types and a sum divided after
 *     in integer types (src/enqueue.cc, hostToDevRedOp);
 *   - a collective takes its time on the stream (FAKE_NCCL_DELAY_US,
 *     default 1000, besides the CUDA double's own delay), so that a read
 *     that does not wait for it sees the old bytes;
 *   - ncclCommShrink (from 2.27, as FAKE_NCCL_VERSION says) is made by
 *     the ranks not excluded alone; with NCCL_SHRINK_ABORT the parent's
 *     queued work is ended first (it writes nothing), without it the
 *     shrink waits for that work, as a parent whose peer died never
 *     ends it;
 *   - fake_nccl_break() makes this process's next collective report an
 *     asynchronous error and hang its stream until aborted, as a lost
 *     peer does;
 *   - a call on a stream being captured into a CUDA graph runs at each
 *     launch of the graph, numbered among the communicator's collectives
 *     when it runs (so a program must not issue calls on the communicator
 *     while a launched graph's are pending: the double's limit, not
 *     NCCL's).
 * Ranks are reduced in rank order, one fixed order of NCCL's many. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include "cudart_double.h"

/* nccl.h declares these without (void): no prototype in C. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#define API __attribute__((visibility("default")))
#define MAX_RANKS 64
#define LIVE 0x6e63636cu
#define DEAD 0x0dead0ccu

/* One communicator's meeting place, shared by its ranks. */
struct ctl {
    atomic_int joined, finalized;
    _Atomic uint64_t posted[MAX_RANKS], finished[MAX_RANKS];
    char where[MAX_RANKS][96];   /* host and GPU: NCCL's duplicate check */
    /* ncclCommSplit: each rank's color and key for split n in slot n % 2
     * (a rank cannot reach split n + 2 before every rank has read n's),
     * and the last split each rank posted. */
    int color[2][MAX_RANKS], key[2][MAX_RANKS];
    _Atomic uint64_t split[MAX_RANKS];
    /* ncclCommShrink: the last shrink each rank posted (the excluded
     * never post). */
    _Atomic uint64_t shrink[MAX_RANKS];
};

struct ncclComm {
    unsigned magic;
    char name[64];
    int nranks, rank, device;
    bool blocking;
    atomic_int state;             /* ncclResult_t */
    _Atomic double launch_until;  /* a launch still "in progress" */
    struct ctl *ctl;
    uint64_t colls;               /* collectives queued */
    uint64_t splits;              /* ncclCommSplit calls */
    uint64_t shrinks;             /* ncclCommShrink calls */
    uint64_t sent[MAX_RANKS], recvd[MAX_RANKS];
    atomic_int aborted, finalizing;
    /* The abort flag its kernels and waits read: its own, or with
     * splitShare its parent's (NCCL 2.28 init.cc: a child sharing
     * resources takes the parent's abortFlag), so that aborting one
     * stops the family's queued work, which then writes nothing. */
    atomic_int *flag;
    atomic_int counted;           /* in ctl->finalized */
    atomic_long running;          /* queued ops not yet run */
    atomic_int initing;           /* a nonblocking init's thread runs */
};

static atomic_long aborts, lives, calls_run, inits, splits_made,
    shrinks_made;
static atomic_int broken;

API long fake_nccl_aborts(void)
{
    return atomic_load(&aborts);
}

API long fake_nccl_calls(void)
{
    return atomic_load(&calls_run);
}

API long fake_nccl_inits(void)
{
    return atomic_load(&inits);
}

API long fake_nccl_splits(void)
{
    return atomic_load(&splits_made);
}

API long fake_nccl_shrinks(void)
{
    return atomic_load(&shrinks_made);
}

API long fake_nccl_live(void)
{
    return atomic_load(&lives);
}

API void fake_nccl_break(void)
{
    atomic_store(&broken, 1);
}

/* NCCL's thread rule (usage/threadsafety.rst): operations on
 * communicators of one device must not be issued from several threads at
 * once, a group (ncclGroupStart to End) counting as one. Each device has
 * an owner while a thread is inside an NCCL call on it; a second thread
 * entering then stops the process. Each entry lingers a little, so that
 * a race shows in a test rather than once in a while. */
#define GUARD_DEVS 64
static atomic_ulong inside[GUARD_DEVS];
static atomic_ulong tokens;
static _Thread_local unsigned long token;
static _Thread_local uint64_t held;    /* devices this thread is inside */
static _Thread_local int depth;        /* ncclGroupStart nesting */

static int guard_begin(int dev, const char *call)
{
    if (fake_cuda_torn_down()) {
        fprintf(stderr, "fake NCCL: %s after the CUDA runtime was torn "
                "down at exit (a real one crashes)\n", call);
        abort();
    }
    if (!token)
        token = atomic_fetch_add(&tokens, 1) + 1;
    if (dev < 0)   /* enters nothing: ends the group's at scope exit */
        return 0;
    dev = dev >= GUARD_DEVS ? GUARD_DEVS - 1 : dev;
    if (held & (1ull << dev))
        return 0;
    unsigned long none = 0;
    if (!atomic_compare_exchange_strong(&inside[dev], &none, token)) {
        fprintf(stderr, "fake NCCL: %s: two threads in NCCL on device %d "
                "at once (NCCL's threadsafety.rst forbids it)\n", call, dev);
        abort();
    }
    held |= 1ull << dev;
    for (volatile int i = 0; i < 3000; i++)
        ;
    return 0;
}

/* Out of NCCL, unless a group is still open on this thread. */
static void guard_end(int *unused)
{
    (void)unused;
    if (depth > 0)
        return;
    for (int d = 0; d < GUARD_DEVS; d++)
        if (held & (1ull << d))
            atomic_store(&inside[d], 0);
    held = 0;
}

#define GUARD(dev, call)                                                     \
    int guard_ __attribute__((cleanup(guard_end), unused)) =                 \
        guard_begin((dev), (call))

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *dir(void)
{
    const char *d = getenv("FAKE_NCCL_DIR");
    return d && *d ? d : "/dev/shm";
}

/* A handle the program gave: a dead one stops the process, as touching
 * freed memory would at best. */
static struct ncclComm *use(ncclComm_t c, const char *call)
{
    if (c && c->magic == LIVE)
        return c;
    fprintf(stderr, "fake NCCL: %s on %s\n", call,
            !c ? "a NULL communicator"
            : c->magic == DEAD ? "a communicator that ncclCommAbort or "
                                 "ncclCommDestroy already freed"
                               : "something that is not a communicator");
    abort();
}

/* ncclCommEnsureReady: the previous call must have settled. */
static ncclResult_t ready(struct ncclComm *c, const char *call)
{
    int st = atomic_load(&c->state);
    if (st == ncclInProgress || now() < atomic_load(&c->launch_until)) {
        fprintf(stderr, "fake NCCL: %s: attempt to use communicator "
                "before the previous operation returned ncclSuccess\n",
                call);
        return ncclInvalidArgument;
    }
    return (ncclResult_t)st;
}

/* ---- types and NCCL's arithmetic ---- */

static size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

static float h2f(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f,
             m = h & 0x3ff, f;
    if (e == 0x1f) {
        f = s | 0x7f800000u | (m << 13);
    } else if (e) {
        f = s | ((e + 112) << 23) | (m << 13);
    } else {
        float v = ldexpf((float)m, -24);
        return s ? -v : v;
    }
    float r;
    memcpy(&r, &f, 4);
    return r;
}

static uint16_t f2h(float v)
{
    uint32_t f;
    memcpy(&f, &v, 4);
    uint16_t s = (uint16_t)((f >> 16) & 0x8000);
    uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u)
        return s | 0x7e00;
    if (a >= 0x477ff000u)   /* 65520 and up round to infinity */
        return s | 0x7c00;
    if (a < 0x38800000u)    /* below 2^-14: a multiple of 2^-24 */
        return s | (uint16_t)lrintf(fabsf(v) * 16777216.0f);
    a -= 112u << 23;
    return s | (uint16_t)((a + 0xfff + ((a >> 13) & 1)) >> 13);
}

static float b2f(uint16_t b)
{
    uint32_t f = (uint32_t)b << 16;
    float r;
    memcpy(&r, &f, 4);
    return r;
}

static uint16_t f2b(float v)
{
    uint32_t f;
    memcpy(&f, &v, 4);
    if ((f & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((f >> 16) | 0x40);
    return (uint16_t)((f + 0x7fff + ((f >> 16) & 1)) >> 16);
}

#define FOLD(T, U)                                                           \
    do {                                                                     \
        T *a = acc;                                                          \
        const T *x = in;                                                     \
        for (size_t i = 0; i < n; i++)                                       \
            switch (op) {                                                    \
            case ncclSum: case ncclAvg:                                      \
                a[i] = (T)((U)a[i] + (U)x[i]); break;                        \
            case ncclProd: a[i] = (T)((U)a[i] * (U)x[i]); break;             \
            case ncclMin: a[i] = x[i] < a[i] ? x[i] : a[i]; break;           \
            case ncclMax: a[i] = x[i] > a[i] ? x[i] : a[i]; break;           \
            default: break;                                                  \
            }                                                                \
    } while (0)

#define FOLD16(TO, FROM)                                                     \
    do {                                                                     \
        uint16_t *a = acc;                                                   \
        const uint16_t *x = in;                                              \
        for (size_t i = 0; i < n; i++) {                                     \
            float p = FROM(a[i]), q = FROM(x[i]), r = p;                     \
            switch (op) {                                                    \
            case ncclSum: case ncclAvg: r = p + q; break;                    \
            case ncclProd: r = p * q; break;                                 \
            case ncclMin: r = q < p ? q : p; break;                          \
            case ncclMax: r = q > p ? q : p; break;                          \
            default: break;                                                  \
            }                                                                \
            a[i] = TO(r);                                                    \
        }                                                                    \
    } while (0)

/* acc = acc op in, element by element, rounded to the type each time. */
static void fold(void *acc, const void *in, size_t n, ncclDataType_t t,
                 ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: FOLD(int8_t, uint8_t); break;
    case ncclUint8: FOLD(uint8_t, uint8_t); break;
    case ncclInt32: FOLD(int32_t, uint32_t); break;
    case ncclUint32: FOLD(uint32_t, uint32_t); break;
    case ncclInt64: FOLD(int64_t, uint64_t); break;
    case ncclUint64: FOLD(uint64_t, uint64_t); break;
    case ncclFloat32: FOLD(float, float); break;
    case ncclFloat64: FOLD(double, double); break;
    case ncclFloat16: FOLD16(f2h, h2f); break;
    case ncclBfloat16: FOLD16(f2b, b2f); break;
    default: break;
    }
}

/* AVG in a floating type: each input times the type's 1/n first
 * (ncclDevPreMulSum; the scalar is made from the double 1.0/n). */
static void premul(void *buf, size_t n, ncclDataType_t t, int nranks)
{
    double s = 1.0 / nranks;
    for (size_t i = 0; i < n; i++)
        switch (t) {
        case ncclFloat32: ((float *)buf)[i] *= (float)s; break;
        case ncclFloat64: ((double *)buf)[i] *= s; break;
        case ncclFloat16: {
            uint16_t *h = buf;
            h[i] = f2h(h2f(h[i]) * h2f(f2h((float)s)));
            break;
        }
        case ncclBfloat16: {
            uint16_t *h = buf;
            h[i] = f2b(b2f(h[i]) * b2f(f2b((float)s)));
            break;
        }
        default: return;
        }
}

#define DIVIDE(T)                                                            \
    for (size_t i = 0; i < n; i++)                                           \
        ((T *)buf)[i] = (T)(((T *)buf)[i] / (T)nranks)

/* AVG in an integer type: the sum divided after (ncclDevSumPostDiv). */
static void postdiv(void *buf, size_t n, ncclDataType_t t, int nranks)
{
    switch (t) {
    case ncclInt8: DIVIDE(int8_t); break;
    case ncclUint8: DIVIDE(uint8_t); break;
    case ncclInt32: DIVIDE(int32_t); break;
    case ncclUint32: DIVIDE(uint32_t); break;
    case ncclInt64: DIVIDE(int64_t); break;
    case ncclUint64: DIVIDE(uint64_t); break;
    default: break;
    }
}

static bool floating(ncclDataType_t t)
{
    return t == ncclFloat16 || t == ncclBfloat16 || t == ncclFloat32 ||
           t == ncclFloat64;
}

/* ---- the files the ranks meet through ---- */

static void path_of(char *p, size_t len, const struct ncclComm *c,
                    const char *what)
{
    snprintf(p, len, "%s/%s.%s", dir(), c->name, what);
}

static bool put(const char *path, const void *src, size_t bytes)
{
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0)
        return false;
    const char *p = src;
    for (size_t left = bytes; left;) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return false;
        }
        p += w;
        left -= (size_t)w;
    }
    close(fd);
    return rename(tmp, path) == 0;   /* there all at once */
}

/* path's bytes, mapped; *bytes its size. NULL if it is not there. */
static void *map(const char *path, size_t *bytes)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat s;
    void *p = NULL;
    if (fstat(fd, &s) == 0) {
        *bytes = (size_t)s.st_size;
        p = *bytes ? mmap(NULL, *bytes, PROT_READ, MAP_SHARED, fd, 0)
                   : (void *)"";
        if (p == MAP_FAILED)
            p = NULL;
    }
    close(fd);
    return p;
}

static void unmap(void *p, size_t bytes)
{
    if (bytes)
        munmap(p, bytes);
}

/* Until every rank's counter reaches k; false if aborted first. */
static bool meet(struct ncclComm *c, _Atomic uint64_t *counter, uint64_t k)
{
    for (int r = 0; r < c->nranks; r++)
        while (atomic_load(&counter[r]) < k) {
            if (atomic_load(c->flag))
                return false;
            usleep(20);
        }
    return true;
}

static void fail(struct ncclComm *c, ncclResult_t why, const char *fmt,
                 ...) __attribute__((format(printf, 3, 4)));

static void fail(struct ncclComm *c, ncclResult_t why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fake NCCL: rank %d of %s: ", c->rank, c->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_store(&c->state, why);
}

/* FAKE_NCCL_VERSION: the version it reports (default the header's). */
static int version(void)
{
    const char *e = getenv("FAKE_NCCL_VERSION");
    return e && *e ? atoi(e) : NCCL_VERSION_CODE;
}

/* ---- joining and leaving ---- */

static ncclResult_t join(struct ncclComm *c)
{
    char p[512];
    path_of(p, sizeof(p), c, "ctl");
    int fd = open(p, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(struct ctl))) {
        if (fd >= 0)
            close(fd);
        return ncclSystemError;
    }
    c->ctl = mmap(NULL, sizeof(struct ctl), PROT_READ | PROT_WRITE,
                  MAP_SHARED, fd, 0);
    close(fd);
    if (c->ctl == MAP_FAILED) {
        c->ctl = NULL;
        return ncclSystemError;
    }
    struct cudaDeviceProp prop;
    char host[64] = "";
    const char *hid = getenv("NCCL_HOSTID");
    if (!hid || !*hid) {
        gethostname(host, sizeof(host) - 1);
        hid = host;
    }
    if (cudaGetDeviceProperties(&prop, c->device) != cudaSuccess)
        return ncclUnhandledCudaError;
    char *w = c->ctl->where[c->rank];
    snprintf(w, sizeof(c->ctl->where[0]), "%.60s/", hid);
    memcpy(w + 80, prop.uuid.bytes, 16);
    atomic_fetch_add(&c->ctl->joined, 1);
    while (atomic_load(&c->ctl->joined) < c->nranks) {
        if (atomic_load(c->flag))
            return ncclSystemError;
        usleep(50);
    }
    unlink(p);   /* everyone has it open */
    const char *multi = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
    bool shares = version() >= 23000 && multi && !strcmp(multi, "1");
    for (int r = 0; r < c->nranks && !shares; r++)
        if (r != c->rank && !memcmp(c->ctl->where[r], w,
                                    sizeof(c->ctl->where[0]))) {
            fprintf(stderr, "fake NCCL: Duplicate GPU detected: rank %d "
                    "and rank %d both on CUDA device %d of host %s\n",
                    c->rank, r, c->device, hid);
            return ncclInvalidUsage;
        }
    return ncclSuccess;
}

/* FAKE_NCCL_INIT_US: how long an init takes before it meets its peers
 * (default 0); seconds, as a real one under compute-sanitizer takes. */
static void *join_thread(void *arg)
{
    struct ncclComm *c = arg;
    static int us = -1;
    if (us < 0) {
        const char *e = getenv("FAKE_NCCL_INIT_US");
        us = e ? atoi(e) : 0;
    }
    if (us > 0)
        usleep((useconds_t)us);
    atomic_store(&c->state, join(c));
    atomic_store(&c->initing, 0);
    return NULL;
}

API ncclResult_t ncclGetVersion(int *v)
{
    *v = version();
    return ncclSuccess;
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static atomic_int n;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    memset(id, 0, sizeof(*id));
    snprintf(id->internal, sizeof(id->internal), "fake-nccl-%d-%d-%lx",
             (int)getpid(), atomic_fetch_add(&n, 1),
             (unsigned long)t.tv_nsec ^ (unsigned long)rand());
    return ncclSuccess;
}

API const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a "
                                 "network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

API const char *ncclGetLastError(ncclComm_t c)
{
    (void)c;
    return "";
}

/* ---- groups ---- */

enum kind { K_INIT, K_BCAST, K_ALLREDUCE, K_REDUCE, K_ALLGATHER,
            K_REDSCAT, K_ALLTOALL, K_GATHER, K_SCATTER, K_SEND, K_RECV };

struct call {
    enum kind kind;
    struct ncclComm *comm;
    cudaStream_t stream;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;         /* the peer, for send and receive */
    uint64_t seq;
};

static _Thread_local struct call *pending;
static _Thread_local int npending, cap;

API ncclResult_t ncclGroupStart(void)
{
    depth++;
    return ncclSuccess;
}

/* One stream op: a collective, or the sends and receives of one group
 * on one communicator. */
struct job {
    struct ncclComm *comm;
    int n;
    bool kept;        /* a graph's: run at each launch, numbered then */
    struct call calls[];
};

static void run_coll(struct ncclComm *c, const struct call *k);
static void run_p2p(struct ncclComm *c, const struct call *k, int n);

static void run_job(void *arg)
{
    struct job *j = arg;
    struct ncclComm *c = j->comm;
    if (atomic_exchange(&broken, 0)) {
        fail(c, ncclRemoteError, "a peer was lost (fake_nccl_break); the "
             "stream waits until the communicator is aborted");
        while (!atomic_load(c->flag))
            usleep(100);
    } else if (!atomic_load(c->flag) &&
               atomic_load(&c->state) == ncclSuccess) {
        atomic_fetch_add(&calls_run, 1);
        if (j->kept && j->calls[0].kind != K_SEND &&
            j->calls[0].kind != K_RECV)
            j->calls[0].seq = ++c->colls;
        if (j->calls[0].kind == K_SEND || j->calls[0].kind == K_RECV)
            run_p2p(c, j->calls, j->n);
        else
            run_coll(c, &j->calls[0]);
    }
    if (!j->kept) {
        atomic_fetch_sub(&c->running, 1);
        free(j);
    }
}

static ncclResult_t launch(struct call *calls, int n)
{
    struct job *j = malloc(sizeof(*j) + (size_t)n * sizeof(*calls));
    if (!j)
        return ncclSystemError;
    j->comm = calls[0].comm;
    j->n = n;
    memcpy(j->calls, calls, (size_t)n * sizeof(*calls));
    int old;
    cudaGetDevice(&old);
    cudaSetDevice(j->comm->device);
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(calls[0].stream, &cs);
    j->kept = cs != cudaStreamCaptureStatusNone;
    if (j->kept && calls[0].kind != K_SEND && calls[0].kind != K_RECV)
        j->comm->colls--;   /* numbered when it runs */
    if (!j->kept)
        atomic_fetch_add(&j->comm->running, 1);
    int rc = fake_cuda_enqueue(calls[0].stream, run_job, j,
                               j->kept ? free : NULL);
    cudaSetDevice(old);
    if (rc) {
        if (!j->kept)
            atomic_fetch_sub(&j->comm->running, 1);
        free(j);
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}

static ncclResult_t start_inits(struct call *calls, int n)
{
    pthread_t t[MAX_RANKS];
    int nt = 0;
    for (int i = 0; i < n; i++) {
        if (calls[i].kind != K_INIT)
            continue;
        struct ncclComm *c = calls[i].comm;
        atomic_store(&c->initing, !c->blocking);
        if (nt == MAX_RANKS ||
            pthread_create(&t[nt], NULL, join_thread, c)) {
            atomic_store(&c->initing, 0);
            return ncclSystemError;
        }
        if (c->blocking)
            nt++;
        else
            pthread_detach(t[nt]);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
    return ncclSuccess;
}

/* A nonblocking communicator's launch is in progress for a while:
 * FAKE_NCCL_LAUNCH_US, default 200 (0: it answers ncclInProgress, and
 * the first ncclCommGetAsyncError says it is done). */
static ncclResult_t launched(struct ncclComm *c)
{
    static long us = -1;
    if (c->blocking)
        return ncclSuccess;
    if (us < 0) {
        const char *e = getenv("FAKE_NCCL_LAUNCH_US");
        us = e ? atol(e) : 200;
    }
    atomic_store(&c->launch_until, now() + 1e-6 * (double)us);
    return ncclInProgress;
}

API ncclResult_t ncclGroupEnd(void)
{
    if (depth == 0) {
        fprintf(stderr, "fake NCCL: ncclGroupEnd without ncclGroupStart\n");
        return ncclInvalidUsage;
    }
    if (--depth > 0)
        return ncclSuccess;
    GUARD(-1, "ncclGroupEnd");   /* ends what the group's calls entered */
    struct call *calls = pending;
    int n = npending;
    pending = NULL;
    npending = cap = 0;
    ncclResult_t rc = start_inits(calls, n), any = ncclSuccess;
    bool *done = calloc((size_t)n + 1, 1);
    for (int i = 0; rc == ncclSuccess && i < n; i++) {
        if (calls[i].kind == K_INIT || done[i])
            continue;
        struct ncclComm *c = calls[i].comm;
        if (calls[i].kind == K_SEND || calls[i].kind == K_RECV) {
            /* This communicator's sends and receives, as one. */
            struct call *p2p = malloc(sizeof(*p2p) * (size_t)n);
            int m = 0;
            for (int k = i; p2p && k < n; k++)
                if (calls[k].comm == c && !done[k] &&
                    (calls[k].kind == K_SEND || calls[k].kind == K_RECV)) {
                    p2p[m++] = calls[k];
                    done[k] = true;
                }
            rc = p2p ? launch(p2p, m) : ncclSystemError;
            free(p2p);
        } else {
            rc = launch(&calls[i], 1);
        }
        if (rc == ncclSuccess && launched(c) == ncclInProgress)
            any = ncclInProgress;
    }
    for (int i = 0; i < n; i++)
        if (calls[i].kind == K_INIT && !calls[i].comm->blocking)
            any = ncclInProgress;
    free(done);
    free(calls);
    return rc != ncclSuccess ? rc : any;
}

/* A call: held for the group's end, or run now. */
static ncclResult_t issue(struct call k, const char *name)
{
    if (k.kind != K_INIT) {
        ncclResult_t r = ready(k.comm, name);
        if (r != ncclSuccess)
            return r;
    }
    if (k.kind == K_SEND)
        k.seq = ++k.comm->sent[k.root];
    else if (k.kind == K_RECV)
        k.seq = ++k.comm->recvd[k.root];
    else if (k.kind != K_INIT)
        k.seq = ++k.comm->colls;
    bool alone = depth == 0;   /* a group of its own */
    if (alone)
        ncclGroupStart();
    if (npending == cap) {
        int ncap = cap ? 2 * cap : 16;
        struct call *p = realloc(pending, sizeof(*p) * (size_t)ncap);
        if (!p) {
            depth -= alone;
            return ncclSystemError;
        }
        pending = p;
        cap = ncap;
    }
    pending[npending++] = k;
    return alone ? ncclGroupEnd() : ncclSuccess;
}

/* ---- communicators ---- */

API ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks,
                                        ncclUniqueId id, int rank,
                                        ncclConfig_t *config)
{
    if (!out || nranks < 1 || nranks > MAX_RANKS || rank < 0 ||
        rank >= nranks || !id.internal[0])
        return ncclInvalidArgument;
    if (config && config->magic != 0xcafebeef)
        return ncclInvalidArgument;
    struct ncclComm *c = calloc(1, sizeof(*c));
    if (!c)
        return ncclSystemError;
    c->magic = LIVE;
    c->flag = &c->aborted;
    snprintf(c->name, sizeof(c->name), "%.50s", id.internal);
    c->nranks = nranks;
    c->rank = rank;
    c->blocking = !config || config->blocking != 0;
    if (cudaGetDevice(&c->device) != cudaSuccess)
        c->device = 0;
    GUARD(c->device, "ncclCommInitRankConfig");
    atomic_store(&c->state, ncclInProgress);
    atomic_fetch_add(&lives, 1);
    atomic_fetch_add(&inits, 1);
    *out = c;
    ncclResult_t r = issue((struct call){.kind = K_INIT, .comm = c},
                           "ncclCommInitRankConfig");
    if (c->blocking && r == ncclSuccess)
        r = (ncclResult_t)atomic_load(&c->state);
    return r;
}

/* ncclCommSplit: collective over the parent; the child's ranks are those
 * of one color, in key order (ties by parent rank), and it joins as a
 * new communicator does. NCCL_SPLIT_NOCOLOR: none. */
struct split_job {
    struct ncclComm *parent, *child;
    int color, key;
    uint64_t seq;
};

static void split_run(struct split_job *j)
{
    struct ncclComm *p = j->parent, *c = j->child;
    struct ctl *x = p->ctl;
    int slot = (int)(j->seq % 2);
    x->color[slot][p->rank] = j->color;
    x->key[slot][p->rank] = j->key;
    atomic_store(&x->split[p->rank], j->seq);
    bool met = meet(p, x->split, j->seq);
    if (c) {
        int n = 0, me = 0;
        for (int r = 0; met && r < p->nranks; r++) {
            if (x->color[slot][r] != j->color)
                continue;
            int kr = x->key[slot][r];
            if (kr < j->key || (kr == j->key && r < p->rank))
                me++;
            n++;
        }
        c->nranks = n;
        c->rank = me;
        atomic_store(&c->state, met ? join(c) : ncclSystemError);
    }
    atomic_store(&p->state, ncclSuccess);
    free(j);
}

static void *split_thread(void *arg)
{
    split_run(arg);
    return NULL;
}

API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                               ncclComm_t *out, ncclConfig_t *config)
{
    struct ncclComm *p = use(comm, "ncclCommSplit");
    GUARD(p->device, "ncclCommSplit");
    ncclResult_t r = ready(p, "ncclCommSplit");
    if (r != ncclSuccess)
        return r;
    if (!out || (config && config->magic != 0xcafebeef) ||
        (color < 0 && color != NCCL_SPLIT_NOCOLOR))
        return ncclInvalidArgument;
    struct split_job *j = calloc(1, sizeof(*j));
    struct ncclComm *c = color < 0 ? NULL : calloc(1, sizeof(*c));
    if (!j || (color >= 0 && !c)) {
        free(j);
        free(c);
        return ncclSystemError;
    }
    *out = c;
    j->parent = p;
    j->child = c;
    j->color = color;
    j->key = key;
    j->seq = ++p->splits;
    bool blocking = config ? config->blocking != 0 : p->blocking;
    if (c) {
        c->magic = LIVE;
        c->flag = config && config->splitShare == 1 ? p->flag : &c->aborted;
        snprintf(c->name, sizeof(c->name), "%.40s.s%llu-%d", p->name,
                 (unsigned long long)j->seq, color);
        c->device = p->device;
        c->blocking = blocking;
        atomic_store(&c->state, ncclInProgress);
        atomic_fetch_add(&lives, 1);
        atomic_fetch_add(&splits_made, 1);
    }
    if (blocking) {
        split_run(j);
        return c ? (ncclResult_t)atomic_load(&c->state) : ncclSuccess;
    }
    atomic_store(&p->state, ncclInProgress);
    pthread_t t;
    if (pthread_create(&t, NULL, split_thread, j))
        return ncclSystemError;
    pthread_detach(t);
    return ncclInProgress;
}

/* ncclCommShrink: the parent's ranks not excluded meet on the parent's
 * meeting place (counting only themselves: the excluded are dead), and
 * the child, their ranks in the parent's order, joins as a new
 * communicator does. */
struct shrink_job {
    struct ncclComm *parent, *child;
    bool out[MAX_RANKS];   /* excluded */
    bool abort;
    uint64_t seq;
};

static void shrink_run(struct shrink_job *j)
{
    struct ncclComm *p = j->parent, *c = j->child;
    struct ctl *x = p->ctl;
    if (j->abort) {
        atomic_store(p->flag, 1);   /* its kernels end, writing nothing */
        while (atomic_load(&p->running) > 0)
            usleep(50);
    }
    atomic_store(&x->shrink[p->rank], j->seq);
    bool met = true;
    for (int r = 0; r < p->nranks && met; r++)
        while (!j->out[r] && atomic_load(&x->shrink[r]) < j->seq) {
            if (atomic_load(&c->aborted)) {
                met = false;
                break;
            }
            usleep(20);
        }
    atomic_store(&c->state, met ? join(c) : ncclSystemError);
    free(j);
}

static void *shrink_thread(void *arg)
{
    shrink_run(arg);
    return NULL;
}

API ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude,
                                ncclComm_t *out, ncclConfig_t *config,
                                int flags)
{
    struct ncclComm *p = use(comm, "ncclCommShrink");
    if (version() < 22700) {
        fprintf(stderr, "fake NCCL: ncclCommShrink called on a version "
                "%d that has none\n", version());
        abort();
    }
    GUARD(p->device, "ncclCommShrink");
    /* Not ready(): a parent whose peer died has work that never ends,
     * which NCCL_SHRINK_ABORT is for. */
    if (!out || nexclude < 0 || nexclude >= p->nranks ||
        (nexclude && !exclude) ||
        (config && config->magic != 0xcafebeef) ||
        (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT))
        return ncclInvalidArgument;
    struct shrink_job *j = calloc(1, sizeof(*j));
    struct ncclComm *c = calloc(1, sizeof(*c));
    if (!j || !c) {
        free(j);
        free(c);
        return ncclSystemError;
    }
    for (int i = 0; i < nexclude; i++) {
        if (exclude[i] < 0 || exclude[i] >= p->nranks ||
            exclude[i] == p->rank || j->out[exclude[i]]) {
            free(j);
            free(c);
            return ncclInvalidArgument;
        }
        j->out[exclude[i]] = true;
    }
    if (flags != NCCL_SHRINK_ABORT)   /* its work first, as NCCL's */
        while (atomic_load(&p->running) > 0 && !atomic_load(p->flag))
            usleep(50);
    int me = 0;
    for (int r = 0; r < p->rank; r++)
        me += !j->out[r];
    *out = c;
    j->parent = p;
    j->child = c;
    j->abort = flags == NCCL_SHRINK_ABORT;
    j->seq = ++p->shrinks;
    c->magic = LIVE;
    c->flag = &c->aborted;
    snprintf(c->name, sizeof(c->name), "%.40s.k%llu", p->name,
             (unsigned long long)j->seq);
    c->device = p->device;
    c->nranks = p->nranks - nexclude;
    c->rank = me;
    c->blocking = config ? config->blocking != 0 : p->blocking;
    atomic_store(&c->state, ncclInProgress);
    atomic_fetch_add(&lives, 1);
    atomic_fetch_add(&shrinks_made, 1);
    if (c->blocking) {
        shrink_run(j);
        return (ncclResult_t)atomic_load(&c->state);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, shrink_thread, j))
        return ncclSystemError;
    pthread_detach(t);
    return ncclInProgress;
}

API ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks,
                                  ncclUniqueId id, int rank)
{
    return ncclCommInitRankConfig(out, nranks, id, rank, NULL);
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *st)
{
    struct ncclComm *c = use(comm, "ncclCommGetAsyncError");
    int s = atomic_load(&c->state);
    if (s == ncclSuccess && now() < atomic_load(&c->launch_until))
        s = ncclInProgress;
    *st = (ncclResult_t)s;
    return ncclSuccess;
}

static void finalize(struct ncclComm *c)
{
    while (atomic_load(&c->running) > 0 && !atomic_load(c->flag))
        usleep(50);
    if (!atomic_exchange(&c->counted, 1))
        atomic_fetch_add(&c->ctl->finalized, 1);
    while (atomic_load(&c->ctl->finalized) < c->nranks &&
           !atomic_load(c->flag))
        usleep(50);
    atomic_store(&c->state, ncclSuccess);
}

static void *finalize_thread(void *arg)
{
    finalize(arg);
    return NULL;
}

API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    struct ncclComm *c = use(comm, "ncclCommFinalize");
    GUARD(c->device, "ncclCommFinalize");
    ncclResult_t r = ready(c, "ncclCommFinalize");
    if (r != ncclSuccess)
        return r;
    atomic_store(&c->finalizing, 1);
    if (c->blocking) {
        finalize(c);
        return ncclSuccess;
    }
    atomic_store(&c->state, ncclInProgress);
    pthread_t t;
    if (pthread_create(&t, NULL, finalize_thread, c))
        return ncclSystemError;
    pthread_detach(t);
    return ncclInProgress;
}

static void end(struct ncclComm *c)
{
    c->magic = DEAD;   /* kept, so that a later use is caught */
    atomic_fetch_sub(&lives, 1);
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    struct ncclComm *c = use(comm, "ncclCommDestroy");
    GUARD(c->device, "ncclCommDestroy");
    if (atomic_load(&c->state) == ncclInProgress) {
        fprintf(stderr, "fake NCCL: ncclCommDestroy while the "
                "communicator is in progress\n");
        return ncclInvalidUsage;
    }
    if (!atomic_load(&c->finalizing) && c->ctl)
        finalize(c);   /* ncclCommDestroy finalizes one not finalized */
    end(c);
    return ncclSuccess;
}

API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    struct ncclComm *c = use(comm, "ncclCommAbort");
    GUARD(c->device, "ncclCommAbort");
    atomic_store(&c->aborted, 1);
    atomic_store(c->flag, 1);
    atomic_fetch_add(&aborts, 1);
    /* Its peers' finalize no longer waits for it: they see its
     * connections close, as a real one's do (seen on an H100: the rank
     * that stayed away finalized at once after the others aborted). */
    if (c->ctl && !atomic_exchange(&c->counted, 1))
        atomic_fetch_add(&c->ctl->finalized, 1);
    while (atomic_load(&c->running) > 0)   /* its kernels end */
        usleep(50);
    /* An init still running ends first: NCCL's abort waits for the
     * init's thread, whose steps do not all look at the abort flag (seen
     * on an H200 under compute-sanitizer: a 2-s deadline, the abort
     * returned 16 s later). Here the FAKE_NCCL_INIT_US pause is such a
     * step. */
    while (atomic_load(&c->initing))
        usleep(50);
    if (fake_cuda_torn_down()) {
        fprintf(stderr, "fake NCCL: ncclCommAbort still running after the "
                "CUDA runtime was torn down at exit (a real one crashes)\n");
        abort();
    }
    end(c);
    return ncclSuccess;
}

API ncclResult_t ncclCommCount(const ncclComm_t comm, int *n)
{
    *n = use(comm, "ncclCommCount")->nranks;
    return ncclSuccess;
}

API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *d)
{
    *d = use(comm, "ncclCommCuDevice")->device;
    return ncclSuccess;
}

API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *r)
{
    *r = use(comm, "ncclCommUserRank")->rank;
    return ncclSuccess;
}

/* ---- the calls ---- */

static ncclResult_t call(enum kind kind, const char *name, const void *send,
                         void *recv, size_t count, ncclDataType_t t,
                         ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t s)
{
    struct ncclComm *c = use(comm, name);
    GUARD(c->device, name);
    if (!type_size(t) || (unsigned)op >= ncclNumOps || root < 0 ||
        root >= c->nranks) {
        fprintf(stderr, "fake NCCL: %s: type %d, op %d or peer %d is not "
                "valid\n", name, (int)t, (int)op, root);
        return ncclInvalidArgument;
    }
    if (kind == K_ALLTOALL && count && send == recv) {
        /* NCCL's all-to-all is grouped sends and receives: in place, one
         * overwrites what another has still to send. */
        fprintf(stderr, "fake NCCL: ncclAlltoAll in place: NCCL's result "
                "would be undefined\n");
        return ncclInvalidArgument;
    }
    return issue((struct call){kind, c, s, send, recv, count, t, op, root,
                               0}, name);
}

API ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                               ncclDataType_t t, int root, ncclComm_t comm,
                               cudaStream_t s)
{
    return call(K_BCAST, "ncclBroadcast", send, recv, count, t, ncclSum,
                root, comm, s);
}

API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                               ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t s)
{
    return call(K_ALLREDUCE, "ncclAllReduce", send, recv, count, t, op, 0,
                comm, s);
}

API ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
                            ncclDataType_t t, ncclRedOp_t op, int root,
                            ncclComm_t comm, cudaStream_t s)
{
    return call(K_REDUCE, "ncclReduce", send, recv, count, t, op, root,
                comm, s);
}

API ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                               ncclDataType_t t, ncclComm_t comm,
                               cudaStream_t s)
{
    return call(K_ALLGATHER, "ncclAllGather", send, recv, count, t, ncclSum,
                0, comm, s);
}

API ncclResult_t ncclReduceScatter(const void *send, void *recv,
                                   size_t count, ncclDataType_t t,
                                   ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t s)
{
    return call(K_REDSCAT, "ncclReduceScatter", send, recv, count, t, op, 0,
                comm, s);
}

API ncclResult_t ncclAlltoAll(const void *send, void *recv, size_t count,
                              ncclDataType_t t, ncclComm_t comm,
                              cudaStream_t s)
{
    return call(K_ALLTOALL, "ncclAlltoAll", send, recv, count, t, ncclSum, 0,
                comm, s);
}

API ncclResult_t ncclGather(const void *send, void *recv, size_t count,
                            ncclDataType_t t, int root, ncclComm_t comm,
                            cudaStream_t s)
{
    return call(K_GATHER, "ncclGather", send, recv, count, t, ncclSum, root,
                comm, s);
}

API ncclResult_t ncclScatter(const void *send, void *recv, size_t count,
                             ncclDataType_t t, int root, ncclComm_t comm,
                             cudaStream_t s)
{
    return call(K_SCATTER, "ncclScatter", send, recv, count, t, ncclSum,
                root, comm, s);
}

API ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t,
                          int peer, ncclComm_t comm, cudaStream_t s)
{
    return call(K_SEND, "ncclSend", send, NULL, count, t, ncclSum, peer,
                comm, s);
}

API ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t,
                          int peer, ncclComm_t comm, cudaStream_t s)
{
    return call(K_RECV, "ncclRecv", NULL, recv, count, t, ncclSum, peer,
                comm, s);
}

/* ---- running them, on the stream's thread ---- */

/* What rank r puts in for k, in bytes (0: nothing). */
static size_t gives(const struct ncclComm *c, const struct call *k, int r)
{
    size_t b = k->count * type_size(k->type), n = (size_t)c->nranks;
    switch (k->kind) {
    case K_BCAST: return r == k->root ? b : 0;
    case K_SCATTER: return r == k->root ? b * n : 0;
    case K_REDSCAT: case K_ALLTOALL: return b * n;
    default: return b;
    }
}

static unsigned delay_us(void)
{
    static int us = -1;
    if (us < 0) {
        const char *e = getenv("FAKE_NCCL_DELAY_US");
        us = e ? atoi(e) : 1000;
    }
    return (unsigned)us;
}

static void run_coll(struct ncclComm *c, const struct call *k)
{
    char mine[512], peer[512], tag[64];
    if (delay_us())
        usleep(delay_us());   /* the kernel's time */
    size_t b = k->count * type_size(k->type);
    size_t own = gives(c, k, c->rank);
    snprintf(tag, sizeof(tag), "c%llu-%d", (unsigned long long)k->seq,
             c->rank);
    path_of(mine, sizeof(mine), c, tag);
    if (own && !put(mine, fake_cuda_real(k->send), own)) {
        fail(c, ncclSystemError, "cannot write %s", mine);
        return;
    }
    atomic_store(&c->ctl->posted[c->rank], k->seq);
    if (!meet(c, c->ctl->posted, k->seq)) {
        unlink(mine);
        return;
    }
    char *out = fake_cuda_real(k->recv);
    bool reduce = k->kind == K_ALLREDUCE || k->kind == K_REDSCAT ||
                  (k->kind == K_REDUCE && c->rank == k->root);
    size_t rb = b;   /* a reduction's result */
    char *acc = reduce && rb ? malloc(rb) : NULL;
    for (int r = 0; r < c->nranks; r++) {
        size_t want = gives(c, k, r), got = 0;
        bool needed = reduce || k->kind == K_ALLGATHER ||
                      k->kind == K_ALLTOALL ||
                      (k->kind == K_BCAST && r == k->root) ||
                      (k->kind == K_SCATTER && r == k->root) ||
                      (k->kind == K_GATHER && c->rank == k->root);
        if (!needed || !want)
            continue;
        snprintf(tag, sizeof(tag), "c%llu-%d", (unsigned long long)k->seq,
                 r);
        path_of(peer, sizeof(peer), c, tag);
        const char *in = map(peer, &got);
        if (!in || got != want) {
            fail(c, ncclInvalidUsage, "collective %llu: rank %d gave %zu "
                 "bytes, this rank expected %zu (the ranks' counts differ)",
                 (unsigned long long)k->seq, r, in ? got : 0, want);
            if (in)
                unmap((void *)in, got);
            break;
        }
        size_t me = (size_t)c->rank;
        switch (k->kind) {
        case K_ALLREDUCE: case K_REDUCE: case K_REDSCAT: {
            const char *part = in + (k->kind == K_REDSCAT ? me * b : 0);
            if (!acc)
                break;
            if (r == 0) {
                memcpy(acc, part, rb);
                if (k->op == ncclAvg && floating(k->type))
                    premul(acc, k->count, k->type, c->nranks);
            } else if (k->op == ncclAvg && floating(k->type)) {
                char *tmp = malloc(rb);
                if (tmp) {
                    memcpy(tmp, part, rb);
                    premul(tmp, k->count, k->type, c->nranks);
                    fold(acc, tmp, k->count, k->type, ncclSum);
                }
                free(tmp);
            } else {
                fold(acc, part, k->count, k->type, k->op);
            }
            break;
        }
        case K_BCAST: memmove(out, in, b); break;
        case K_ALLGATHER: case K_GATHER:
            memmove(out + (size_t)r * b, in, b);
            break;
        case K_ALLTOALL: memmove(out + (size_t)r * b, in + me * b, b); break;
        case K_SCATTER: memmove(out, in + me * b, b); break;
        default: break;
        }
        unmap((void *)in, got);
    }
    if (acc) {
        if (k->op == ncclAvg && !floating(k->type))
            postdiv(acc, k->count, k->type, c->nranks);
        if (atomic_load(&c->state) == ncclSuccess)
            memcpy(out, acc, rb);
        free(acc);
    }
    atomic_store(&c->ctl->finished[c->rank], k->seq);
    meet(c, c->ctl->finished, k->seq);
    if (own)
        unlink(mine);
}

static void p2p_path(char *p, size_t len, const struct ncclComm *c,
                     int from, int to, uint64_t seq)
{
    char tag[64];
    snprintf(tag, sizeof(tag), "p%d-%d-%llu", from, to,
             (unsigned long long)seq);
    path_of(p, len, c, tag);
}

/* A group's sends first, then its receives; each send ends when its
 * peer has taken it. */
static void run_p2p(struct ncclComm *c, const struct call *k, int n)
{
    char p[512];
    for (int i = 0; i < n; i++) {
        if (k[i].kind != K_SEND)
            continue;
        p2p_path(p, sizeof(p), c, c->rank, k[i].root, k[i].seq);
        if (!put(p, fake_cuda_real(k[i].send),
                 k[i].count * type_size(k[i].type))) {
            fail(c, ncclSystemError, "cannot write %s", p);
            return;
        }
    }
    for (int i = 0; i < n; i++) {
        if (k[i].kind != K_RECV)
            continue;
        p2p_path(p, sizeof(p), c, k[i].root, c->rank, k[i].seq);
        size_t want = k[i].count * type_size(k[i].type), got = 0;
        const char *in;
        while (!(in = map(p, &got))) {
            if (atomic_load(c->flag))
                return;
            usleep(20);
        }
        if (got != want)
            fail(c, ncclInvalidUsage, "receive from rank %d: %zu bytes "
                 "came, %zu expected", k[i].root, got, want);
        else
            memcpy(fake_cuda_real(k[i].recv), in, want);
        unmap((void *)in, got);
        unlink(p);
    }
    for (int i = 0; i < n; i++) {
        if (k[i].kind != K_SEND)
            continue;
        p2p_path(p, sizeof(p), c, c->rank, k[i].root, k[i].seq);
        while (access(p, F_OK) == 0) {
            if (atomic_load(c->flag)) {
                unlink(p);
                return;
            }
            usleep(20);
        }
    }
}
