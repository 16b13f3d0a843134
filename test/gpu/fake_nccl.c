/* An NCCL for the fake plugin. A clique is a shared memory segment named
 * for its id: a barrier and one slot per rank. A collective is two
 * phases: every rank writes its input to its slot, then (after a
 * barrier) each computes its own output from all the slots. One process
 * may hold several ranks of a clique (the multi-GPU forms); then, as in
 * NCCL, its calls must come together in one group, or NCCL would wait
 * forever on the first: here that is an error the test sees. Completes
 * every call at once, so events are always done. */
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "dcoll/backend.h"
#include "fake_nccl.h"

#define SLOT ((size_t)8 << 20)     /* the most one rank may contribute */
#define MAX_QUEUED 64

struct header {
    atomic_uint count, gen;
};

/* One clique as this process sees it. */
struct seg {
    struct seg *next;
    unsigned char id[FAKE_NCCL_ID_BYTES];
    struct header *h;
    size_t bytes;
    int nranks;
    int local;                    /* ranks this process holds */
};

struct fcomm {
    struct seg *seg;
    int rank;
};

struct op {
    struct fcomm *c;
    dcoll_plugin_call_t call;
};

static struct seg *segs;
static struct fcomm done_mark;          /* an op already run */
static struct op queue[MAX_QUEUED];
static int queued, depth;
static char failure[256];
static long calls;

static int fail(int rc, const char *why)
{
    snprintf(failure, sizeof(failure), "fake NCCL: %s", why);
    return rc;
}

const char *fake_nccl_error(void)
{
    return failure;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *slot(struct seg *s, int r)
{
    return (char *)s->h + 4096 + SLOT * (size_t)r;
}

/* n of this process's ranks arrive; wait for every rank. */
static int barrier(struct seg *s, int n, double timeout)
{
    struct header *h = s->h;
    unsigned gen = atomic_load(&h->gen);
    if (atomic_fetch_add(&h->count, (unsigned)n) + (unsigned)n ==
        (unsigned)s->nranks) {
        atomic_store(&h->count, 0);
        atomic_fetch_add(&h->gen, 1);
        return 0;
    }
    double end = now() + timeout;
    while (atomic_load(&h->gen) == gen) {
        if (now() > end)
            return fail(-2, "timed out waiting for the other ranks");
        sched_yield();
    }
    return 0;
}

int fake_nccl_id(void *id)
{
    static unsigned counter;
    unsigned v[4] = {(unsigned)getpid(), (unsigned)time(NULL), ++counter,
                     (unsigned)clock()};
    memcpy(id, v, FAKE_NCCL_ID_BYTES);
    return 0;
}

/* The segment's name: /dcoll-fake- and the id in hex. */
static void seg_name(const void *id, char name[64])
{
    strcpy(name, "/dcoll-fake-");
    for (int i = 0; i < FAKE_NCCL_ID_BYTES; i++)
        sprintf(name + strlen(name), "%02x", ((const unsigned char *)id)[i]);
}

static struct seg *seg_open(const void *id, int nranks)
{
    for (struct seg *s = segs; s; s = s->next)
        if (!memcmp(s->id, id, FAKE_NCCL_ID_BYTES))
            return s;
    char name[64];
    seg_name(id, name);
    struct seg *s = calloc(1, sizeof(*s));
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    size_t bytes = 4096 + SLOT * (size_t)nranks;
    if (!s || fd < 0 || ftruncate(fd, (off_t)bytes)) {
        if (fd >= 0)
            close(fd);
        free(s);
        fail(-1, "cannot make the shared segment");
        return NULL;
    }
    s->h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->h == MAP_FAILED) {
        free(s);
        fail(-1, "cannot map the shared segment");
        return NULL;
    }
    memcpy(s->id, id, FAKE_NCCL_ID_BYTES);
    s->bytes = bytes;
    s->nranks = nranks;
    s->next = segs;
    segs = s;
    return s;
}

static void seg_unname(const struct seg *s)
{
    char name[64];
    seg_name(s->id, name);
    shm_unlink(name);
}

int fake_nccl_comms(const void *id, int nranks, int first, int ndev,
                    const int *devices, double timeout, void **comms)
{
    (void)devices;
    struct seg *s = seg_open(id, nranks);
    if (!s)
        return -1;
    for (int i = 0; i < ndev; i++) {
        struct fcomm *c = malloc(sizeof(*c));
        if (!c)
            return fail(-1, "no memory");
        *c = (struct fcomm){s, first + i};
        comms[i] = c;
    }
    s->local += ndev;
    /* Made together, as NCCL's init: then the name may go. */
    int rc = barrier(s, ndev, timeout);
    if (!rc)
        seg_unname(s);
    return rc;
}

int fake_nccl_comm(const void *id, int nranks, int rank, int device,
                   double timeout, void **comm)
{
    return fake_nccl_comms(id, nranks, rank, 1, &device, timeout, comm);
}

void fake_nccl_free(void *comm)
{
    struct fcomm *c = comm;
    struct seg *s = c->seg;
    free(c);
    if (--s->local > 0)
        return;
    for (struct seg **p = &segs; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    munmap(s->h, s->bytes);
    free(s);
}

static size_t esize(int dtype)
{
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    return sizes[dtype];
}

static bool reduces(int kind)
{
    return kind == DCOLL_KIND_ALL_REDUCE || kind == DCOLL_KIND_REDUCE ||
           kind == DCOLL_KIND_REDUCE_SCATTER;
}

/* What this NCCL offers: the five kinds of the multi-GPU forms; no half
 * types; AVG on floating types only. The rest is staged (1). */
static bool offered(const dcoll_plugin_call_t *k)
{
    if (k->kind == DCOLL_KIND_BARRIER)
        return false;
    if (k->kind != DCOLL_KIND_BROADCAST && k->kind != DCOLL_KIND_ALL_GATHER &&
        !reduces(k->kind))
        return false;
    if (k->dtype == DCOLL_FLOAT16 || k->dtype == DCOLL_BFLOAT16)
        return false;
    if (reduces(k->kind))
        return k->op <= DCOLL_MAX ||
               (k->op == DCOLL_AVG &&
                (k->dtype == DCOLL_FLOAT32 || k->dtype == DCOLL_FLOAT64));
    return true;
}

#define FOLD(T)                                                              \
    do {                                                                     \
        T *o = out;                                                          \
        for (int r = 0; r < s->nranks; r++) {                                \
            const T *x = (const T *)(slot(s, r) + off);                      \
            for (size_t j = 0; j < n; j++) {                                 \
                T a = o[j], b = x[j];                                        \
                if (r == 0)                                                  \
                    o[j] = b;                                                \
                else if (op == DCOLL_SUM || op == DCOLL_AVG)                 \
                    o[j] = (T)(a + b);                                       \
                else if (op == DCOLL_PRODUCT)                                \
                    o[j] = (T)(a * b);                                       \
                else if (op == DCOLL_MIN)                                    \
                    o[j] = b < a ? b : a;                                    \
                else                                                         \
                    o[j] = b > a ? b : a;                                    \
            }                                                                \
            if (op == DCOLL_AVG && r == s->nranks - 1)                       \
                for (size_t j = 0; j < n; j++)                               \
                    o[j] = (T)(o[j] / (T)s->nranks);                         \
        }                                                                    \
    } while (0)

static void fold(struct seg *s, void *out, size_t off, size_t n, int dtype,
                 int op)
{
    switch (dtype) {
    case DCOLL_INT8: FOLD(int8_t); break;
    case DCOLL_UINT8: FOLD(uint8_t); break;
    case DCOLL_INT32: FOLD(int32_t); break;
    case DCOLL_UINT32: FOLD(uint32_t); break;
    case DCOLL_INT64: FOLD(int64_t); break;
    case DCOLL_UINT64: FOLD(uint64_t); break;
    case DCOLL_FLOAT32: FOLD(float); break;
    case DCOLL_FLOAT64: FOLD(double); break;
    }
}

/* Phase one for one rank: its input into its slot. */
static int put(const struct op *o)
{
    const dcoll_plugin_call_t *k = &o->call;
    struct seg *s = o->c->seg;
    size_t b = (size_t)k->count * esize(k->dtype);
    const void *in = k->sendbuf;
    if (k->kind == DCOLL_KIND_REDUCE_SCATTER)
        b *= (size_t)s->nranks;
    if (k->kind == DCOLL_KIND_BROADCAST && o->c->rank != k->root)
        return 0;
    if (k->kind == DCOLL_KIND_BROADCAST)
        in = k->recvbuf;
    if (b > SLOT)
        return fail(-1, "more than 8 MiB from one rank");
    memcpy(slot(s, o->c->rank), in, b);
    return 0;
}

/* Phase two: this rank's output from every slot. */
static void take(const struct op *o)
{
    const dcoll_plugin_call_t *k = &o->call;
    struct seg *s = o->c->seg;
    int rank = o->c->rank;
    size_t n = (size_t)k->count, b = n * esize(k->dtype);
    switch (k->kind) {
    case DCOLL_KIND_BROADCAST:
        memcpy(k->recvbuf, slot(s, k->root), b);
        break;
    case DCOLL_KIND_ALL_GATHER:
        for (int r = 0; r < s->nranks; r++)
            memcpy((char *)k->recvbuf + b * (size_t)r, slot(s, r), b);
        break;
    case DCOLL_KIND_REDUCE:
        if (rank != k->root)
            break;
        /* fall through */
    case DCOLL_KIND_ALL_REDUCE:
        fold(s, k->recvbuf, 0, n, k->dtype, k->op);
        break;
    case DCOLL_KIND_REDUCE_SCATTER:
        fold(s, k->recvbuf, b * (size_t)rank, n, k->dtype, k->op);
        break;
    }
}

/* Run ops[0..n): per clique, in the order first named, every rank this
 * process holds in it at once. */
static int run(struct op *ops, int n, double timeout)
{
    int rc = 0;
    fake_open_device_memory(1);
    for (int i = 0; i < n && !rc; i++) {
        struct seg *s = ops[i].c->seg;
        if (!s)
            continue;                 /* done with its clique */
        int mine = 0;
        for (int j = i; j < n && !rc; j++)
            if (ops[j].c->seg == s && (rc = put(&ops[j])) == 0)
                mine++;
        if (!rc && mine != s->local) {
            snprintf(failure, sizeof(failure), "fake NCCL: a call on %d of "
                     "the %d ranks this process holds in a clique, outside "
                     "one group; NCCL would wait forever", mine, s->local);
            rc = -1;
        }
        if (!rc)
            rc = barrier(s, mine, timeout);
        for (int j = i; j < n && !rc; j++)
            if (ops[j].c->seg == s) {
                take(&ops[j]);
                calls++;
            }
        if (!rc)
            rc = barrier(s, mine, timeout);
        for (int j = i + 1; j < n; j++)
            if (ops[j].c->seg == s)
                ops[j].c = &done_mark;
    }
    fake_open_device_memory(0);
    return rc;
}

int fake_nccl_takes(const dcoll_plugin_call_t *k)
{
    return offered(k) ? 0 : 1;
}

/* Whether the buffers are in place as NCCL tells it, from the pointers:
 * the core's flag in the record must say the same, or the record was
 * misread (a layout the two sides do not share). Broadcast has one
 * buffer. */
static bool placed(const dcoll_plugin_call_t *k, int rank)
{
    const char *sb = k->sendbuf, *rb = k->recvbuf;
    size_t b = (size_t)k->count * esize(k->dtype);
    switch (k->kind) {
    case DCOLL_KIND_ALL_GATHER:
        return rb && sb == rb + b * (size_t)rank;
    case DCOLL_KIND_REDUCE_SCATTER:
        return sb && rb == sb + b * (size_t)rank;
    default:
        return sb && sb == rb;
    }
}

int fake_nccl_coll(void *comm, const dcoll_plugin_call_t *k, int rank,
                   int size, void *stream, double timeout)
{
    struct fcomm *c = comm;
    (void)stream;
    if (!offered(k))
        return 1;
    if (k->kind != DCOLL_KIND_BROADCAST && k->count > 0 &&
        k->in_place != placed(k, rank)) {
        snprintf(failure, sizeof(failure), "fake NCCL: the call record says "
                 "%s, but its buffers are %s", k->in_place ? "in place"
                 : "not in place", k->in_place ? "not" : "in place");
        return -1;
    }
    if (rank != c->rank || size != c->seg->nranks)
        return fail(-1, "rank or size differs from the communicator's");
    struct op o = {c, *k};
    if (depth == 0)
        return run(&o, 1, timeout);
    if (queued == MAX_QUEUED)
        return fail(-1, "too many calls in one group");
    queue[queued++] = o;
    return 0;
}

int fake_group_start(void)
{
    depth++;
    return 0;
}

int fake_group_end(void *const *comms, int n, double timeout)
{
    (void)comms, (void)n;
    if (depth == 0)
        return fail(-1, "group_end without group_start");
    if (--depth > 0)
        return 0;
    int rc = run(queue, queued, timeout);
    queued = 0;
    return rc;
}

/* For the tests: calls this process's ranks have run. */
__attribute__((visibility("default"))) long fake_nccl_calls(void);
long fake_nccl_calls(void)
{
    return calls;
}

int fake_nccl_wait(void *comm, void *stream, double timeout)
{
    (void)comm, (void)stream, (void)timeout;
    return 0;
}

int fake_event_record(void *comm, void *stream, void **event)
{
    (void)comm, (void)stream;
    *event = &queue;                  /* any non-NULL mark */
    return 0;
}

int fake_event_poll(void *comm, void *event, int *done)
{
    (void)comm, (void)event;
    *done = 1;
    return 0;
}

int fake_event_wait(void *comm, void *event, double timeout)
{
    (void)comm, (void)event, (void)timeout;
    return 0;
}

void fake_event_free(void *event)
{
    (void)event;
}
