/* dcoll core: what lib/ and the backends share. Not installed. */
#ifndef DCOLL_LIB_INTERNAL_H
#define DCOLL_LIB_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include "dcoll/dcoll.h"

#define DCOLL_GROUP_MAGIC 0x64636731u /* "dcg1" */
#define DCOLL_WORK_MAGIC  0x64637731u /* "dcw1" */
#define DCOLL_DEAD_MAGIC  0xdeadd0c1u

#if defined(__GNUC__)
#define DCOLL_LIKELY(x) __builtin_expect(!!(x), 1)
#define DCOLL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DCOLL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DCOLL_LIKELY(x) (x)
#define DCOLL_UNLIKELY(x) (x)
#define DCOLL_PRINTF(a, b)
#endif

/* errors.c: set the thread's last error and return its status. */
dcoll_status_t dcoll_error(dcoll_status_t st, const char *fmt, ...)
    DCOLL_PRINTF(2, 3);
void dcoll_error_clear(void);

/* store.c: seconds since an arbitrary start, from CLOCK_MONOTONIC. */
double dcoll_now(void);

/* dtype.c */
extern const size_t dcoll_dtype_sizes[DCOLL_DTYPE_COUNT_];
const char *dcoll_dtype_name(dcoll_dtype_t dtype);
const char *dcoll_op_name(dcoll_op_t op);
static inline bool dcoll_dtype_is_float(dcoll_dtype_t dtype)
{
    return dtype >= DCOLL_FLOAT16 && dtype <= DCOLL_FLOAT64;
}
dcoll_status_t dcoll_check_dtype_op(const char *fn, dcoll_dtype_t dtype,
                                    dcoll_op_t op, bool has_op);

/* What a backend is asked to do: one descriptor for every collective. */
enum dcoll_coll_kind {
    DCOLL_COLL_BROADCAST,
    DCOLL_COLL_ALL_REDUCE,
    DCOLL_COLL_REDUCE,
    DCOLL_COLL_ALL_GATHER,
    DCOLL_COLL_GATHER,
    DCOLL_COLL_SCATTER,
    DCOLL_COLL_REDUCE_SCATTER,
    DCOLL_COLL_ALL_TO_ALL,
    DCOLL_COLL_BARRIER,
    DCOLL_COLL_SEND,
    DCOLL_COLL_RECV,
    DCOLL_COLL_KIND_COUNT_
};

struct dcoll_coll {
    enum dcoll_coll_kind kind;
    const void *sendbuf;    /* NULL where the kind has none */
    void *recvbuf;
    int64_t count;          /* elements per rank, as in the public call */
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root;               /* GROUP rank of root/src/dst, or ANY_SOURCE */
    int tag;
    bool in_place;          /* the public call's in-place pattern was used */
    const dcoll_coll_opts_t *opts;
    const char *fn;         /* public name for messages; NULL: by kind */
    double start;           /* dcoll_now() when it began, 0 if unread */
    uint64_t seq;           /* its number among the group's collectives;
                               0 for send and recv, which are not counted */
    uint64_t fid;           /* its flight recorder entry, 0: none */
};

/* Kinds that take an op, and collectives with a root (send and recv name
 * a peer instead). */
static inline bool dcoll_kind_has_op(int k)
{
    return k == DCOLL_COLL_ALL_REDUCE || k == DCOLL_COLL_REDUCE ||
           k == DCOLL_COLL_REDUCE_SCATTER;
}
static inline bool dcoll_kind_has_root(int k)
{
    return k == DCOLL_COLL_BROADCAST || k == DCOLL_COLL_REDUCE ||
           k == DCOLL_COLL_GATHER || k == DCOLL_COLL_SCATTER;
}

/* collectives.c: "all_reduce" and so on. */
const char *dcoll_kind_name(enum dcoll_coll_kind k);

struct dcoll_group;
struct dcoll_work;

/* A buffer a group keeps between calls: fresh megabytes from an allocator
 * arrive through mmap (or cudaMallocHost) and cost page faults or a
 * driver call every time. One user at a time (an async call holds it
 * until its work finishes); a call meanwhile gets a buffer of its own. */
struct dcoll_kept {
    char *buf;
    size_t bytes;
    bool busy;
};

/* kept.c. take: the kept buffer if free (grown to fit), else a fresh one,
 * *own saying which; NULL when out of memory. give: the end of a take. */
char *dcoll_kept_take(struct dcoll_kept *k, size_t bytes, bool *own,
                      void *(*alloc)(size_t), void (*release)(void *));
void dcoll_kept_give(struct dcoll_kept *k, char *buf, bool own,
                     void (*release)(void *));
void dcoll_kept_free(struct dcoll_kept *k, void (*release)(void *));

/* A backend: one table of function pointers, the only door from lib/ into
 * mpi_layer/ or cuda_layer/. Backends never call the public API. */
/* Where a group's GPU buffers go (see dcoll_coll_run). */
enum dcoll_route {
    DCOLL_ROUTE_AUTO = 0,    /* NCCL where the group can, else staged */
    DCOLL_ROUTE_STAGED,      /* "mpi": staged through host memory */
    DCOLL_ROUTE_GPU_ONLY,    /* "nccl": GPU buffers only */
    DCOLL_ROUTE_NONE,        /* a program's backend takes every buffer */
};

struct dcoll_backend {
    const char *name;
    /* Run c on g. work NULL: block; else store a new work in *work. A
     * blocking receive stores the sender's group rank in *source. */
    dcoll_status_t (*coll)(struct dcoll_group *g, const struct dcoll_coll *c,
                           struct dcoll_work **work, int *source);
    dcoll_status_t (*work_test)(struct dcoll_work *w, int *done);
    dcoll_status_t (*work_wait)(struct dcoll_work *w);
    void (*work_release)(struct dcoll_work *w);
    enum dcoll_route route;
};

struct dcoll_backend_entry;

struct dcoll_group {
    uint32_t magic;
    int rank;              /* DCOLL_NON_MEMBER for the non-member handle */
    int size;
    int *ranks;            /* group rank -> world rank, sorted; NULL: world */
    const char *backend_name;
    const struct dcoll_backend *backend;
    const struct dcoll_backend_entry *bentry;  /* its registry entry */
    void *bstate;          /* a program's backend's state for the group */
    void *comm;            /* the MPI communicator */
    int inflight;          /* work handles not yet finished */
    int local_rank, local_size; /* the world only: this node's share */
    struct dcoll_kept stage;   /* coalesced packing, from malloc */
    struct dcoll_kept pinned;  /* GPU staging, pinned by the CUDA plugin */
    /* The group's NCCL communicator (lib/nccl.c), made on first use. */
    void *nccl;
    int nccl_state;
    int nccl_device;
    struct dcoll_group *next, *prev; /* live user groups, for finalize */
    /* Failure behaviour (fault.c, flight.c). */
    int id;                /* 0: the world; then 1, 2, ... as made */
    double timeout;        /* seconds a call may wait; 0: forever */
    uint64_t seq;          /* calls started on the group */
    int cur_kind;          /* the kind of call #seq, for roll calls */
    bool slow;             /* failed, or debug checks: see fault.c */
    char *failed;          /* why the group is unusable, or NULL */
    struct dcoll_flight *flight;
};

/* Runs exactly once when the backend has finished, with its status, before
 * wait reports done; returns the operation's final status. */
typedef dcoll_status_t (*dcoll_work_finish_fn)(struct dcoll_work *w,
                                               dcoll_status_t st);

struct dcoll_work {
    uint32_t magic;
    bool done;
    bool is_recv;
    dcoll_status_t status;
    int source;                       /* receive's sender: group rank while
                                         running, world rank once done */
    struct dcoll_group *group;
    const struct dcoll_backend *backend;
    dcoll_work_finish_fn finish;      /* lib/'s own post-processing */
    void *finish_data;
    char *errmsg;                     /* the failure's detail, for wait */
    /* Set by dcoll_coll_run once the backend has made the work. */
    double deadline;                  /* dcoll_now() limit; INFINITY: none */
    uint64_t seq;                     /* the call's number in its group,
                                         0: a send or receive */
    uint64_t fid;                     /* its flight recorder entry */
    int kind;                         /* enum dcoll_coll_kind */
    const char *fn;                   /* the public name, for messages */
};

/* work.c */
void dcoll_work_init(struct dcoll_work *w, struct dcoll_group *g,
                     const struct dcoll_backend *be);
/* Record a failure inside an operation: kept for wait to report. */
dcoll_status_t dcoll_work_fail(struct dcoll_work *w, dcoll_status_t st);
extern atomic_int dcoll_work_inflight;

/* state.c: library life cycle. */
enum dcoll_state { DCOLL_STATE_NEW, DCOLL_STATE_READY, DCOLL_STATE_DONE };
extern enum dcoll_state dcoll_state;
extern struct dcoll_group dcoll_world;
extern struct dcoll_group dcoll_non_member;
dcoll_status_t dcoll_check_ready_slow(void);
static inline dcoll_status_t dcoll_check_ready(void)
{
    if (DCOLL_LIKELY(dcoll_state == DCOLL_STATE_READY))
        return DCOLL_SUCCESS;
    return dcoll_check_ready_slow();
}

/* group.c */
extern int dcoll_groups_made;  /* new_group calls so far: the next id */
dcoll_status_t dcoll_group_resolve(struct dcoll_group *in,
                                   struct dcoll_group **out);
dcoll_status_t dcoll_group_root_slow(const struct dcoll_group *g,
                                     int global, const char *fn,
                                     const char *what, int *group_rank);
/* Group rank of world rank global, or an error that names fn and what. */
static inline dcoll_status_t dcoll_group_root(const struct dcoll_group *g,
                                              int global, const char *fn,
                                              const char *what,
                                              int *group_rank)
{
    if (!g->ranks && global >= 0 && global < g->size) {
        *group_rank = global; /* the world: ranks are the identity */
        return DCOLL_SUCCESS;
    }
    return dcoll_group_root_slow(g, global, fn, what, group_rank);
}
void dcoll_groups_free_all(void);
/* Free a group's coalescing buffer (group destroy, finalize). */
void dcoll_group_stage_free(struct dcoll_group *g);

/* staged.c: GPU buffers. route: *device = the GPU that c's buffers are on,
 * or -1 for host memory; mixed buffers are an error naming both. */
struct dcoll_cuda_plugin;
dcoll_status_t dcoll_route(const struct dcoll_cuda_plugin *cu, const char *fn,
                           const struct dcoll_coll *c, int *device);
bool dcoll_on_device(const void *p);
/* Run c, whose buffers are on GPU device, through pinned host memory. */
dcoll_status_t dcoll_staged_run(struct dcoll_group *g,
                                const struct dcoll_coll *c, int device,
                                struct dcoll_work **work, int *source);
void dcoll_group_pinned_free(struct dcoll_group *g);
/* nccl.c: device buffers through NCCL where the group can, else staged. */
dcoll_status_t dcoll_gpu_run(struct dcoll_group *g, const struct dcoll_coll *c,
                             int device, struct dcoll_work **work, int *source);
void dcoll_group_nccl_free(struct dcoll_group *g);

/* fault.c: timeouts, debug checks and the groups they make unusable. */
extern double dcoll_default_timeout; /* seconds; 0: forever */
extern bool dcoll_debug;             /* DCOLL_DEBUG=detail */
extern unsigned dcoll_flight_size;   /* DCOLL_FLIGHT_RECORDER */
/* A timeout given by a program (fn's field name): 0 to 1e9 seconds. */
dcoll_status_t dcoll_fault_timeout_ok(const char *fn, const char *name,
                                      double seconds);
/* Read DCOLL_TIMEOUT, DCOLL_DEBUG and DCOLL_FLIGHT_RECORDER (dcoll_init). */
dcoll_status_t dcoll_fault_env(void);
/* Give g its id, timeout and recorder (new_group, init). */
dcoll_status_t dcoll_fault_group_init(struct dcoll_group *g, double timeout);
void dcoll_fault_group_free(struct dcoll_group *g);
/* Collective over g: every rank must share the debug mode and whether g
 * has a timeout, or some would talk over the twin communicator while
 * others wait in MPI's own calls. */
dcoll_status_t dcoll_fault_agree(struct dcoll_group *g, const char *fn);
/* "the world" or "group 3 (ranks {0,2,5})", into buf. */
const char *dcoll_group_name(const struct dcoll_group *g, char *buf,
                             size_t len);
/* The slow path before a call on a group with g->slow set: refuse a
 * failed group, or (debug) check that every rank called the same. */
dcoll_status_t dcoll_fault_check(struct dcoll_group *g,
                                 const struct dcoll_coll *c);
/* How the ranks of a group stood when a call ran out of time. */
enum dcoll_roll_state {
    DCOLL_ROLL_SILENT,   /* no answer */
    DCOLL_ROLL_SAME,     /* in the same call */
    DCOLL_ROLL_OTHER,    /* in another call on the group: seq, kind */
};
struct dcoll_roll {
    int n;
    unsigned char *state;
    uint64_t *seq;
    int *kind;
};
/* A call (fn, seq, kind) ran out of time on g: make the group unusable,
 * print its flight recorder and return DCOLL_ERR_TIMEOUT with a message
 * naming the ranks that had not arrived. roll may be NULL. */
dcoll_status_t dcoll_fault_timed_out(struct dcoll_group *g, const char *fn,
                                     uint64_t seq, int kind,
                                     const struct dcoll_roll *roll);

/* flight.c: each group's last calls. */
struct dcoll_flight;
struct dcoll_flight *dcoll_flight_new(unsigned n);
void dcoll_flight_free(struct dcoll_flight *f);
/* begin returns the entry's id for end (ids start at 1). */
uint64_t dcoll_flight_begin(struct dcoll_flight *f,
                            const struct dcoll_coll *c);
void dcoll_flight_end(struct dcoll_flight *f, uint64_t id, dcoll_status_t st);
/* Print g's recorder to stderr, headed by why. */
void dcoll_flight_print(const struct dcoll_group *g, const char *why);

/* collectives.c: validate c and run it on group (the public path). */
dcoll_status_t dcoll_coll_run(dcoll_group_t *group, struct dcoll_coll *c,
                              int root, dcoll_work_t **work, int *source);

/* backend.c: the registry. lookup finds a name; attach sets the group's
 * backend (collective over a program's backend's group), detach undoes
 * it. */
dcoll_status_t dcoll_backend_lookup(const char *name,
                                    const struct dcoll_backend_entry **out);
dcoll_status_t dcoll_backend_attach(struct dcoll_group *g,
                                    const struct dcoll_backend_entry *e,
                                    const char *fn);
void dcoll_backend_detach(struct dcoll_group *g);
/* Works that are finished when made (test: done; release: free). */
extern const struct dcoll_backend dcoll_done_backend;

#endif
