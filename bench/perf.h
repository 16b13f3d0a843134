/* dcoll-perf: what its files share. One collective at a time is timed
 * through dcoll and through the raw MPI call on the same communicator. */
#ifndef DCOLL_BENCH_PERF_H
#define DCOLL_BENCH_PERF_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include "dcoll/dcoll.h"

struct perf_opts {
    size_t minbytes, maxbytes;
    double factor;
    int iters;              /* 0: chosen per size */
    int warmup;
    int rounds;             /* timed rounds; the median is reported */
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root;               /* world rank */
    bool async;             /* async call + wait, against MPI_I* + wait */
    bool calibrate;         /* -A: raw against raw, the noise floor */
    bool apart;             /* -S: each side's calls in a block of their own */
    bool check;
    int ntensors;           /* coalesced forms */
    const char *colls;      /* comma list, or "all" */
    int *members;           /* -g: world ranks of the group; NULL: world */
    int nmembers;
    const char *out;        /* -o: .json or .csv */
    bool cuda;              /* -m cuda: GPU buffers */
    bool said;              /* -K: opts.memory = DCOLL_MEMORY_CUDA */
    bool ordered;           /* -O: stream-ordered calls + the stream's sync */
    bool plan;              /* -P: plans, against MPI's blocking and
                               persistent calls */
    bool bound;             /* -M: the memcpy bound beside each size */
    bool heap;              /* -H: buffers from dcoll_mem_alloc */
    bool spare;             /* -G: a heap the buffers do not lie in */
};

/* Everything one measurement needs. */
struct perf_ctx {
    const struct perf_opts *o;
    dcoll_group_t *group;
    MPI_Comm comm;          /* the group's own communicator */
    int rank, size;         /* in the group */
    int root;               /* world rank, as dcoll takes it */
    int groot;              /* group rank, as MPI takes it */
    int64_t count;          /* elements per rank, as the dcoll call takes */
    size_t esz;
    void *send, *recv;
    size_t sendbytes, recvbytes;
    /* The raw call's view: MPI has no 16-bit floats, so a float16 or
     * bfloat16 reduction is timed raw as float32 of the same bytes. */
    MPI_Datatype raw_type;
    MPI_Op raw_op;
    int raw_count;
    /* Coalesced forms. */
    int ntensors;
    void **sendv, **recvv;
    int64_t *counts;
    void *pack;             /* the hand-packed staging buffer */
    /* -m cuda: send and recv are GPU memory; hsend and hrecv their host
     * images for the check; opts carries the stream. */
    bool cuda;
    void *stream;
    const dcoll_coll_opts_t *opts;
    void *hsend, *hrecv;
    const struct perf_coll *coll;   /* the one being measured */
    int (*unordered)(struct perf_ctx *c);  /* -O: dcoll's side, unsynced */
};

struct perf_coll {
    const char *name;
    double (*busfactor)(int n);
    int blocks;             /* size = count * esz * (blocks ? n : 1) */
    bool reduces, rooted, coalesced;
    int (*dcoll)(struct perf_ctx *c);     /* 0 on success */
    int (*raw)(struct perf_ctx *c);
    int (*separate)(struct perf_ctx *c); /* coalesced: one call per tensor */
};

extern const struct perf_coll perf_colls[];
extern const int perf_ncolls;

/* colls.c: the neighbourhood entries' ring. Its lists (group ranks) for
 * -m cuda's raw side, made first if need be (w: the all_to_allw form's
 * layouts too). */
int perf_ring_lists(struct perf_ctx *c, bool w, int *deg, const int **in,
                    const int **out);
/* The ring's handles for plans.c: dcoll's neighbourhood and MPI's graph,
 * the counts and displacements (elements), and with w the strided
 * layouts and MPI types of neighbor_all_to_allw, [send, recv][block]. */
struct perf_ring {
    dcoll_neighborhood_t *nb;
    MPI_Comm comm;
    const int64_t *v64, *d64;
    const int *vi, *di;
    const dcoll_layout_t *wl[2];
    const MPI_Datatype *wt[2];
};
int perf_ring(struct perf_ctx *c, bool w, struct perf_ring *r);
/* For check.c: the group rank whose block i of this rank's receive
 * buffer holds, where that block starts in the source's send buffer and
 * the step between its elements there; -1: none. The w form's in
 * perf_ring_source_w. */
int perf_ring_source(struct perf_ctx *c, int i, bool all_gather,
                     size_t *from, size_t *step);
int perf_ring_source_w(struct perf_ctx *c, int i, size_t *from,
                       size_t *step);

/* check.c: fill inputs, run once through dcoll, count wrong elements. */
long perf_check(struct perf_ctx *c, const struct perf_coll *k);

/* cuda.c (built where the CUDA headers are): -m cuda. open: load CUDA
 * and NCCL, pick dcoll's GPU, make a stream and the raw side's NCCL
 * communicator; *path says what the raw side is. takes: whether k can
 * run on GPU buffers here. raw: k by hand (NCCL, or staged by hand
 * through the pinned mirrors). */
int perf_cuda_open(struct perf_ctx *c, const char **path);
void perf_cuda_close(void);
void *perf_cuda_alloc(size_t bytes, bool host_pinned);
void perf_cuda_free(void *p, bool host_pinned);
void perf_cuda_mirrors(char *send, char *recv);
void perf_cuda_copy(void *dst, const void *src, size_t bytes);
int perf_cuda_sync(void);
bool perf_cuda_takes(const struct perf_ctx *c, const struct perf_coll *k);
int perf_cuda_raw(struct perf_ctx *c, const struct perf_coll *k);

/* plans.c (-P): make k's plan and MPI's persistent request for c's
 * current size (-1: k has no plan form, 1: failed); start the plan (as
 * dcoll's side) or MPI's request; whether MPI's side exists here. */
/* plans.c: each kind's plans, dcoll's (make: plan[] of plans.c) and
 * MPI's persistent requests by hand (raw; NULL where this MPI has none),
 * by dcoll-perf's name of the kind. */
struct perf_plan_row {
    const char *name;
    int (*make)(struct perf_ctx *c);
    int (*raw)(struct perf_ctx *c);
};
extern const struct perf_plan_row perf_plan_rows[];
extern const int perf_nplan_rows;
bool perf_plan_has(const struct perf_coll *k);
int perf_plan_make(struct perf_ctx *c, const struct perf_coll *k);
void perf_plan_free(void);
int perf_plan_d(struct perf_ctx *c);
int perf_plan_p(struct perf_ctx *c);
bool perf_plan_raw(void);

/* One row of results. */
struct perf_row {
    const char *coll;
    size_t size;
    int64_t count;
    const char *type, *op;
    int root;
    double us, algbw, busbw;        /* dcoll */
    long wrong;                     /* -1: not checked */
    double raw_us, raw_algbw, raw_busbw, ratio;
    double added_us;                /* median of the rounds' dcoll - raw */
    double sep_us;                  /* coalesced: separate calls; else 0 */
    double pers_us, pers_ratio;     /* -P: MPI's persistent call; 0: none */
    double best_ratio;              /* -P: the faster raw call / dcoll */
    int ntensors;
    double mcpy_gbs;                /* -M: GB/s of memcpy, every rank at
                                       once, of the size; 0: not taken */
};

/* report.c */
void perf_header(const struct perf_opts *o, const struct perf_coll *k,
                 int n, const char *group);
void perf_print(const struct perf_row *r, bool coalesced, bool plan);
int perf_write(const char *path, const struct perf_row *rows, int nrows,
               int nranks);

const char *perf_dtype_name(dcoll_dtype_t t);
const char *perf_op_name(dcoll_op_t op);

#endif
