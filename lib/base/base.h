/* What every layer of dcoll shares: statuses and the last error, the
 * clock, element types, the per-kind facts of each call, and kept buffers.
 * Below everything else; includes nothing but the public headers. */
#ifndef DCOLL_BASE_H
#define DCOLL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dcoll/dcoll.h"

/* What a call's opts say, for every layer that reads them: the stream
 * (NULL: none named, the legacy default stream), and whether the caller
 * said its buffers are host memory (DCOLL_MEMORY_HOST). */
static inline void *dcoll_opts_stream(const dcoll_coll_opts_t *o)
{
    return o && (o->mask & DCOLL_COLL_OPT_STREAM) ? o->stream : NULL;
}

static inline bool dcoll_opts_host(const dcoll_coll_opts_t *o)
{
    return o && (o->mask & DCOLL_COLL_OPT_MEMORY) &&
           o->memory == DCOLL_MEMORY_HOST;
}

static inline bool dcoll_opts_ordered(const dcoll_coll_opts_t *o)
{
    return o && (o->mask & DCOLL_COLL_OPT_STREAM_ORDERED);
}

static inline bool dcoll_opts_cuda(const dcoll_coll_opts_t *o)
{
    return o && (o->mask & DCOLL_COLL_OPT_MEMORY) &&
           o->memory == DCOLL_MEMORY_CUDA;
}

#define DCOLL_GROUP_MAGIC 0x64636731u /* "dcg1" */
#define DCOLL_WORK_MAGIC  0x64637731u /* "dcw1" */
#define DCOLL_DEAD_MAGIC  0xdeadd0c1u

/* A handle marked dead as it dies, so that a stale copy of it is refused
 * while its memory is not reused. The store goes through a volatile
 * lvalue: a plain one just before free() is dead to the compiler, which
 * drops it, and the stale handle then passed as live. */
static inline void dcoll_mark_dead(uint32_t *magic)
{
    *(volatile uint32_t *)magic = DCOLL_DEAD_MAGIC;
}

#if defined(__GNUC__)
#define DCOLL_LIKELY(x) __builtin_expect(!!(x), 1)
#define DCOLL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DCOLL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DCOLL_LIKELY(x) (x)
#define DCOLL_UNLIKELY(x) (x)
#define DCOLL_PRINTF(a, b)
#endif

/* The longest last-error message, with its terminator. */
#define DCOLL_ERROR_MAX 1024

/* errors.c: set the thread's last error and return its status. */
dcoll_status_t dcoll_error(dcoll_status_t st, const char *fmt, ...)
    DCOLL_PRINTF(2, 3);

/* hosts.c: each world rank's host name (DCOLL_HOST_LEN bytes, ended by a
 * zero), for reports by node. dcoll_hosts_set takes names (malloc'd, n
 * of them; NULL: none known) and frees the previous ones. */
#define DCOLL_HOST_LEN 64
void dcoll_hosts_set(char (*names)[DCOLL_HOST_LEN], int n);
/* NULL where the rank's host is not known. */
const char *dcoll_host_of(int world_rank);
/* How many world ranks share world_rank's host (0: not known). */
int dcoll_hosts_sharing(int world_rank);
/* This host's name into out (cap bytes, ended by a zero); "unknown" where
 * the system will not say. */
void dcoll_host_name(char *out, size_t cap);

/* stdfds.c: open each of fds 0, 1 and 2 that is closed on /dev/null, so
 * that no socket or file of dcoll's gets one of their numbers. */
void dcoll_stdfds_open(void);

/* quit.c: _exit(code), after a coverage build's counters are written
 * (dcoll_counters_flush alone: before a call that may end the process,
 * as an MPI abort). */
void dcoll_counters_flush(void);
_Noreturn void dcoll_exit_now(int code);

/* clock.c: seconds since an arbitrary start, from CLOCK_MONOTONIC. */
double dcoll_now(void);
/* Seconds on the wall clock, which hosts share within NTP's milliseconds:
 * for comparing when ranks on several hosts arrived, never a deadline. */
double dcoll_wall_now(void);
/* Seconds from variable name (dflt where unset or empty); a value that is
 * not a positive number up to 1e9 is refused, naming fn and it. */
dcoll_status_t dcoll_env_seconds(const char *fn, const char *name,
                                 double dflt, double *out);
/* The same clock as the kernel last ticked it (CLOCK_MONOTONIC_COARSE):
 * a fifth of dcoll_now's cost, at most DCOLL_COARSE_S behind it. For
 * every call's start and end, where deadlines of seconds need no finer
 * grain and two precise reads would be half of dcoll's cost per call. */
#define DCOLL_COARSE_S 0.004
#if defined(__x86_64__) || defined(__i386__)
#include <stdint.h>
#include <string.h>
#include <x86intrin.h>
/* While fewer than 2^20 TSC cycles (0.25 to 1 ms) have passed since the
 * clock was last read, that read stands (clock.c): inlined, as every
 * call's start and end stamps take it. Relaxed atomic loads of plain
 * words (the time as its bits), declared hidden so that each is one
 * move, not a load of its address first. */
extern __attribute__((visibility("hidden"))) uint64_t dcoll_clock_tsc;
extern __attribute__((visibility("hidden"))) uint64_t dcoll_clock_bits;
double dcoll_coarse_read(uint64_t tsc);
static inline double dcoll_coarse_now(void)
{
    uint64_t t = __rdtsc();
    if (__builtin_expect(t - __atomic_load_n(&dcoll_clock_tsc,
                                             __ATOMIC_RELAXED) <
                         (UINT64_C(1) << 20), 1)) {
        uint64_t bits = __atomic_load_n(&dcoll_clock_bits, __ATOMIC_RELAXED);
        double now;
        memcpy(&now, &bits, sizeof(now));
        return now;
    }
    return dcoll_coarse_read(t);
}
#else
double dcoll_coarse_now(void);
#endif

/* dtype.c */
extern const size_t dcoll_dtype_sizes[DCOLL_DTYPE_COUNT_];
const char *dcoll_dtype_name(dcoll_dtype_t dtype);
const char *dcoll_op_name(dcoll_op_t op);
static inline bool dcoll_dtype_is_float(dcoll_dtype_t dtype)
{
    return dtype >= DCOLL_FLOAT16 && dtype <= DCOLL_FLOAT64;
}
static inline bool dcoll_dtype_is_complex(dcoll_dtype_t dtype)
{
    return dtype == DCOLL_COMPLEX64 || dtype == DCOLL_COMPLEX128;
}
/* A complex type's real view: its parts' type (n complex elements are
 * 2n of it); other types are their own. */
static inline dcoll_dtype_t dcoll_dtype_real(dcoll_dtype_t dtype)
{
    return dtype == DCOLL_COMPLEX64    ? DCOLL_FLOAT32
           : dtype == DCOLL_COMPLEX128 ? DCOLL_FLOAT64
                                       : dtype;
}
/* Bit t of dcoll_op_types[op]: op takes type t. */
extern const uint32_t dcoll_op_types[DCOLL_OP_COUNT_];
static inline bool dcoll_dtype_op_valid(dcoll_dtype_t dtype, dcoll_op_t op)
{
    return (unsigned)dtype < DCOLL_DTYPE_COUNT_ &&
           (unsigned)op < DCOLL_OP_COUNT_ &&
           ((dcoll_op_types[op] >> dtype) & 1);
}
dcoll_status_t dcoll_check_dtype_op(const char *fn, dcoll_dtype_t dtype,
                                    dcoll_op_t op, bool has_op);

/* The kinds of call a backend is asked to run; the numbers are the public
 * dcoll_call_kind_t's (dcoll/backend.h). */
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
    /* Vector forms: a count per rank (core/vector.c checks them). */
    DCOLL_COLL_ALL_GATHERV,
    DCOLL_COLL_GATHERV,
    DCOLL_COLL_SCATTERV,
    DCOLL_COLL_ALL_TO_ALLV,
    DCOLL_COLL_REDUCE_SCATTERV,
    /* Prefix reductions (API 1.11): rank r's result reduces the inputs
     * of ranks 0 to r (scan) or 0 to r - 1 (exscan; rank 0's is left as
     * it was). */
    DCOLL_COLL_SCAN,
    DCOLL_COLL_EXSCAN,
    /* Neighbourhood collectives (API 1.11): on a neighbourhood of the
     * group (core/neighbor.c), each rank's blocks those of its lists. */
    DCOLL_COLL_NEIGHBOR_ALL_GATHER,
    DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV,
    DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW,
    DCOLL_COLL_KIND_COUNT_,
    /* Calls that are not collectives on buffers: group creation,
     * numbered among the parent's calls so that a rank that never comes
     * is named like one absent from a collective. No transport has a row
     * for them; only the kinds table names them. */
    DCOLL_COLL_NEW_GROUP = DCOLL_COLL_KIND_COUNT_,
    DCOLL_COLL_SPLIT_GROUP,
    /* A group's shared memory (dcoll_mem_alloc, dcoll_mem_free). */
    DCOLL_COLL_MEM_ALLOC,
    DCOLL_COLL_MEM_FREE,
    DCOLL_CALL_KIND_COUNT_
};

/* kinds.c: what each kind needs, in one table that validation, routing,
 * the flight recorder and the debug check all read. Its flags (KF: kind
 * facts) are apart from the public DCOLL_KIND_* call kinds. */
enum {
    DCOLL_KF_OP = 1u << 0,       /* takes a reduction op */
    DCOLL_KF_ROOT = 1u << 1,     /* has a root */
    DCOLL_KF_PEER = 1u << 2,     /* names a peer (send, recv) */
    DCOLL_KF_COUNTED = 1u << 3,  /* numbered among a group's collectives */
    DCOLL_KF_ONE_BUF = 1u << 4,  /* one buffer, read on the root and
                                      written elsewhere (broadcast) */
    DCOLL_KF_STRICT_ROOT = 1u << 5, /* the root must give its own buffer
                                         even for count 0 */
    DCOLL_KF_ELEMENTWISE = 1u << 6, /* may be cut into chunks */
    DCOLL_KF_VEC = 1u << 7,      /* counts per rank: checked by
                                    dcoll_vec_check, not by spans */
    DCOLL_KF_NEIGHBOR = 1u << 8, /* on a neighbourhood: blocks per listed
                                    neighbour (checked by
                                    dcoll_nbh_check), no in-place form */
};

/* Blocks of count elements a buffer spans: none, one, or one per rank. */
enum { DCOLL_SPAN_NONE = 0, DCOLL_SPAN_ONE = 1, DCOLL_SPAN_ALL = 2 };

/* Where the buffers sit when a call is in place: the same address, or
 * one inside the other at block (rank or root). */
enum dcoll_inplace {
    DCOLL_IP_NONE,
    DCOLL_IP_SAME,
    DCOLL_IP_SEND_IN_RECV,   /* sendbuf == recvbuf + block * count */
    DCOLL_IP_RECV_IN_SEND,   /* recvbuf == sendbuf + block * count */
};

/* Which buffer a kind's spans ask for on every rank, and which the root
 * alone passes: derived from the spans when the table is compiled. */
enum {
    DCOLL_BUF_SEND = 1,
    DCOLL_BUF_RECV = 2,
};

struct dcoll_kind_info {
    const char *name;        /* "all_reduce" */
    const char *fn;          /* "dcoll_all_reduce" */
    unsigned flags;
    unsigned char in[2];     /* span read: [0] another rank, [1] the root */
    unsigned char out[2];    /* span written, likewise */
    unsigned char inplace;   /* enum dcoll_inplace */
    const char *rule;        /* the in-place pattern, for messages */
    const char *peer;        /* what its root argument is called: "root",
                                "dst", "src"; NULL: none */
    /* Derived from in and out (kinds.c): */
    unsigned char every;     /* DCOLL_BUF_*: buffers every rank passes
                                (a one-buffer kind's is called "buf") */
    unsigned char root_own;  /* DCOLL_BUF_*: the buffer only the root has */
    bool wide;               /* some buffer spans a block per rank */
};

extern const struct dcoll_kind_info dcoll_kinds[DCOLL_CALL_KIND_COUNT_];

/* "all_reduce", or "unknown" outside the table. */
const char *dcoll_kind_name(int kind);
static inline bool dcoll_kind_has(int kind, unsigned flag)
{
    return (dcoll_kinds[kind].flags & flag) != 0;
}
/* Whether a call of kind has a type and count to show (a barrier and
 * group creation have none). */
static inline bool dcoll_kind_moves_data(int kind)
{
    return (unsigned)kind < DCOLL_COLL_KIND_COUNT_ &&
           kind != DCOLL_COLL_BARRIER;
}
/* A kind, and of one buffer layout per rank (no counts per rank): what a
 * program's backend and the staged path take. */
static inline bool dcoll_kind_one_layout(int kind)
{
    return (unsigned)kind < DCOLL_COLL_KIND_COUNT_ &&
           !dcoll_kind_has(kind, DCOLL_KF_VEC | DCOLL_KF_NEIGHBOR);
}
/* Bytes a span covers for count-byte blocks in a group of size. */
static inline size_t dcoll_span_bytes(unsigned span, size_t block, int size)
{
    return span == DCOLL_SPAN_ALL ? block * (size_t)size
                                  : span == DCOLL_SPAN_ONE ? block : 0;
}
/* Whether [a, a + alen) and [b, b + blen) share a byte. */
static inline bool dcoll_overlap(const void *a, size_t alen, const void *b,
                                 size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen && blen && x < y + blen && y < x + alen;
}

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

/* kernels.c: every reduction dcoll computes itself (see there for the
 * rules). fold: io[i] = in[i] op io[i] for n elements (AVG folds as SUM);
 * divide: buf[i] /= by. The MPI layer's float16/bfloat16 ops and AVG and
 * the multi-buffer forms' local steps both run them. setup: once, before
 * any fold (whether this CPU's AVX2/F16C kernels may run;
 * DCOLL_NO_HALF_VEC=1 keeps to the scalar loops). */
void dcoll_kernels_setup(void);
void dcoll_fold(void *io, const void *in, int64_t n, dcoll_dtype_t dt,
                dcoll_op_t op);
void dcoll_divide(void *buf, int64_t n, dcoll_dtype_t dt, int by);
/* AVG as NCCL computes it in floating types: buf[i] *= the type's 1/by,
 * before a sum. Other types: nothing. */
void dcoll_premul(void *buf, int64_t n, dcoll_dtype_t dt, int by);
/* The float16/bfloat16 rule for one element pair, in float32 (a: in). */
float dcoll_half_rule(int op, float a, float b);

#endif
