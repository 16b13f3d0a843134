/* Inside the MPI layer: MPI types are allowed here and nowhere above. */
#ifndef DCOLL_MPI_INTERNAL_H
#define DCOLL_MPI_INTERNAL_H

#include <mpi.h>
#include "mpi_layer.h"

struct dcoll_mpi_comm {
    MPI_Comm comm;
    MPI_Comm ctl;   /* its twin for roll calls, debug checks and small
                       collectives, so that they never match the
                       program's own calls */
    char *scratch;  /* small.c's receive buffer, made on first use */
};

static inline MPI_Comm dcoll_mpi_comm_of(const struct dcoll_group *g)
{
    return ((const struct dcoll_mpi_comm *)g->comm)->comm;
}

static inline MPI_Comm dcoll_mpi_ctl_of(const struct dcoll_group *g)
{
    return ((const struct dcoll_mpi_comm *)g->comm)->ctl;
}

/* watch.c: wait for n requests until deadline (a dcoll_now() time;
 * INFINITY: plain MPI_Wait). On time out, ask the group's ranks where they
 * are, make g unusable and return DCOLL_ERR_TIMEOUT naming call fn, the
 * group's collective #seq of the given kind (seq 0: a send or receive). */
struct dcoll_watch {
    double deadline;
    uint64_t seq;
    int kind;
    const char *fn;
    const char *call;  /* the MPI call, for MPI errors */
};
dcoll_status_t dcoll_mpi_poll(struct dcoll_group *g,
                              const struct dcoll_watch *wt, int n,
                              MPI_Request *reqs, MPI_Status *status);
/* small.c: whether c is a small all_reduce, reduce, broadcast or barrier
 * that dcoll_mpi_small runs over point-to-point messages, under wt. */
bool dcoll_mpi_small_fits(const struct dcoll_group *g,
                          const struct dcoll_coll *c);
dcoll_status_t dcoll_mpi_small(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               const struct dcoll_watch *wt);
/* The same, once the deadline has passed without the requests ending. */
dcoll_status_t dcoll_mpi_timed_out(struct dcoll_group *g,
                                   const struct dcoll_watch *wt);

/* dtypes.c: filled by dcoll_mpi_types_create at start. */
extern MPI_Datatype dcoll_mpi_dtype[DCOLL_DTYPE_COUNT_];
extern MPI_Op dcoll_mpi_native_op[DCOLL_OP_COUNT_];
extern MPI_Op dcoll_mpi_half_op[DCOLL_OP_COUNT_];
extern int dcoll_mpi_tag_ub;

dcoll_status_t dcoll_mpi_types_create(void);
void dcoll_mpi_types_free(void);

static inline MPI_Op dcoll_mpi_op(dcoll_dtype_t dt, dcoll_op_t op)
{
    bool half = dt == DCOLL_FLOAT16 || dt == DCOLL_BFLOAT16;
    return half ? dcoll_mpi_half_op[op] : dcoll_mpi_native_op[op];
}

/* Describe n > INT_MAX elements of base as one derived type whose extent
 * is exactly n elements, so block i of a gather still starts at i * n. */
int dcoll_mpi_big_type(int64_t n, MPI_Datatype base, MPI_Datatype *out);

/* halfops.c: buf[i] /= divisor, for AVG after a SUM; and whether the
 * 16-bit float ops use the AVX2/F16C kernels (set by types_create). */
extern bool dcoll_mpi_half_vec;
/* halfops.c: buf[i] /= divisor, for AVG after a SUM. */
void dcoll_mpi_divide(void *buf, int64_t n, dcoll_dtype_t dt, int divisor);

/* collectives.c: free the cached work handle (at stop). */
void dcoll_mpi_work_cache_free(void);

/* Turn an MPI error code into a dcoll status and message. */
dcoll_status_t dcoll_mpi_error(int rc, const char *call);

#endif
