/* Helpers shared by the MPI tests: typed element access and the groups
 * every test uses; the checks are check.h's. */
#ifndef DCOLL_TESTUTIL_H
#define DCOLL_TESTUTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "dcoll/dcoll.h"
#include "half.h"

/* The world a test's checks run in: the job's, or (sizes.h, --sizes) a
 * group of the job's ranks, one after another inside one job. T_WORLD
 * stands where the job's world was NULL; t_w.n and t_w.me are its size
 * and this rank's place in it, t_w.r[i] the job rank of its rank i.
 * dcoll's roots, peers and members are job ranks, as torch's global
 * ranks are, so t_rank stays this process's job rank. */
#define T_MAXW 64
struct t_world {
    dcoll_group_t *g;   /* NULL for the job's world */
    int n;              /* ranks */
    int me;             /* this process's rank in it, or -1 */
    int whole;          /* the job's world itself */
    int r[T_MAXW];      /* job rank of each of its ranks */
};
static struct t_world t_w = {NULL, 1, 0, 1, {0}};
#define T_WORLD (t_w.g)

/* A group of the job ranks ranks[0..k) (NULL, 0: every rank of the
 * world), collective over the world: dcoll_new_group in the job's world;
 * in a smaller one, a split of it ordered by job rank, as
 * dcoll_new_group orders its members. */
static inline dcoll_status_t t_new_group(dcoll_group_t **out,
                                         const int *ranks, int k,
                                         const dcoll_group_params_t *p)
{
    if (t_w.whole)
        return dcoll_new_group(out, ranks, k, p);
    int in = ranks == NULL && k == 0;
    for (int i = 0; i < k && !in; i++)
        in = ranks[i] == t_rank;
    return dcoll_split_group(out, t_w.g, in ? 0 : DCOLL_SPLIT_NONE, t_rank,
                             p);
}

/* A collective refused on a member takes its number there and leaves its
 * group unusable on that rank (the other ranks may be waiting in the
 * call), so bad calls go to a spare group of all ranks; a group of one
 * rank, or any group in debug mode (every rank learns of the refusal),
 * is kept. CHECK_DEAD checks the refusal, that the group's next call
 * then fails naming it (or runs, where the group is kept), and gives g a
 * fresh spare for the next bad call. */
/* A group of every rank whose calls give up after seconds and return
 * (DCOLL_ON_TIMEOUT_RETURN), for tests that look at what comes after a
 * timeout rather than the job's end. */
static inline dcoll_group_t *t_returning_group(double seconds)
{
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT | DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.timeout = seconds;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    dcoll_group_t *g = NULL;
    CHECK_OK(t_new_group(&g, NULL, 0, &gp));
    return g;
}

static inline dcoll_group_t *t_spare(void)
{
    dcoll_group_t *g = NULL;
    CHECK_OK(t_new_group(&g, NULL, 0, NULL));
    return g;
}

static inline void t_spent(dcoll_group_t **g, const char *after)
{
    bool kept = t_kept(*g);
    dcoll_status_t st = dcoll_barrier(*g, NULL, NULL);
    CHECK(kept ? st == DCOLL_SUCCESS
               : st == DCOLL_ERR_GROUP_FAILED &&
                     strstr(dcoll_last_error(), "this rank refused"),
          "after %s: the group's next call gave %s (%s), where the group "
          "is %s", after, dcoll_status_string(st),
          st ? dcoll_last_error() : "", kept ? "kept" : "spent");
    CHECK_OK(dcoll_group_destroy(g));
    *g = t_spare();
}

#define CHECK_DEAD(g, call, want, text)                                      \
    do {                                                                     \
        CHECK_REFUSED(call, want, text);                                     \
        t_spent(&(g), #call);                                                \
    } while (0)

/* acc op x, on the small positive values the tests reduce (AVG sums;
 * t_average divides at the end, integer types rounding down). */
static inline double t_combine(dcoll_op_t op, double acc, double x)
{
    switch (op) {
    case DCOLL_SUM: case DCOLL_AVG: return acc + x;
    case DCOLL_PRODUCT: return acc * x;
    case DCOLL_MIN: return x < acc ? x : acc;
    case DCOLL_MAX: return x > acc ? x : acc;
    case DCOLL_BAND: return (double)((int64_t)acc & (int64_t)x);
    case DCOLL_BOR: return (double)((int64_t)acc | (int64_t)x);
    case DCOLL_BXOR: return (double)((int64_t)acc ^ (int64_t)x);
    case DCOLL_LAND: return (acc != 0) && (x != 0);
    case DCOLL_LOR: return (acc != 0) || (x != 0);
    case DCOLL_LXOR: return (acc != 0) != (x != 0);
    default: return acc;
    }
}

static inline double t_average(dcoll_op_t op, double acc, int n, int is_f)
{
    if (op != DCOLL_AVG)
        return acc;
    return is_f ? acc / n : floor(acc / n);
}

static inline void t_set(void *buf, dcoll_dtype_t dt, size_t i, double v)
{
    switch (dt) {
    case DCOLL_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case DCOLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case DCOLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DCOLL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case DCOLL_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case DCOLL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case DCOLL_FLOAT16: ((uint16_t *)buf)[i] = dcoll_float_to_half((float)v); break;
    case DCOLL_BFLOAT16: ((uint16_t *)buf)[i] = dcoll_float_to_bf16((float)v); break;
    case DCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case DCOLL_FLOAT64: ((double *)buf)[i] = v; break;
    case DCOLL_BOOL: ((bool *)buf)[i] = v != 0; break;
    case DCOLL_LOGICAL: ((int32_t *)buf)[i] = v != 0; break;
    default: break;
    }
}

static inline double t_get(const void *buf, dcoll_dtype_t dt, size_t i)
{
    switch (dt) {
    case DCOLL_INT8: return ((const int8_t *)buf)[i];
    case DCOLL_UINT8: return ((const uint8_t *)buf)[i];
    case DCOLL_INT32: return ((const int32_t *)buf)[i];
    case DCOLL_UINT32: return ((const uint32_t *)buf)[i];
    case DCOLL_INT64: return (double)((const int64_t *)buf)[i];
    case DCOLL_UINT64: return (double)((const uint64_t *)buf)[i];
    case DCOLL_FLOAT16: return dcoll_half_to_float(((const uint16_t *)buf)[i]);
    case DCOLL_BFLOAT16: return dcoll_bf16_to_float(((const uint16_t *)buf)[i]);
    case DCOLL_FLOAT32: return ((const float *)buf)[i];
    case DCOLL_FLOAT64: return ((const double *)buf)[i];
    case DCOLL_BOOL: return ((const bool *)buf)[i];
    case DCOLL_LOGICAL: return ((const int32_t *)buf)[i];
    default: return NAN;
    }
}

static inline size_t t_size(dcoll_dtype_t dt)
{
    size_t s = 0;
    dcoll_dtype_size(dt, &s);
    return s;
}

static inline int t_is_float(dcoll_dtype_t dt)
{
    return dt >= DCOLL_FLOAT16 && dt <= DCOLL_FLOAT64;
}

/* The numeric types (every op of theirs is exact on the tests' small
 * values) come first: loops over them stop here. bool, logical, the
 * complex and the pair types: test_mpitypes.c. */
#define T_NUMERIC DCOLL_BOOL

/* Whether op takes dt, as MPI's rules have it. */
static inline int t_op_ok(dcoll_dtype_t dt, dcoll_op_t op)
{
    if (dt >= DCOLL_FLOAT32_INT)
        return op >= DCOLL_MINLOC;
    if (op >= DCOLL_MINLOC)
        return 0;
    if (dt >= DCOLL_COMPLEX64)
        return op == DCOLL_SUM || op == DCOLL_PRODUCT || op == DCOLL_AVG;
    if (dt >= DCOLL_BOOL)
        return op >= DCOLL_LAND;
    if (op >= DCOLL_BAND && op <= DCOLL_BXOR)
        return !t_is_float(dt);
    if (op >= DCOLL_LAND)
        return !t_is_float(dt);
    return 1;
}

static const char *const t_dtype_names[] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "bfloat16", "float32", "float64", "bool", "logical",
    "complex64", "complex128", "float32int", "float64int", "int32int",
    "2float32", "2float64",
};
static const char *const t_op_names[] = {
    "SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "LAND",
    "LOR", "LXOR", "MINLOC", "MAXLOC",
};

/* The groups every multi-rank test runs on, for a world of n ranks:
 * the world, every other rank counted down from the top given in
 * descending order (gaps, non-members: {3,1} of 4), all but rank 1,
 * and the empty group (everyone a non-member). */
#define T_NGROUPS 4
static inline int t_group_ranks(int which, int n, int *ranks)
{
    int k = 0;
    switch (which) {
    case 0:
        for (int r = 0; r < n; r++)
            ranks[k++] = r;
        break;
    case 1:
        for (int r = n - 1; r >= 0; r -= 2)
            ranks[k++] = r;
        break;
    case 2:
        for (int r = 0; r < n; r++)
            if (r != 1 || n == 1)
                ranks[k++] = r;
        break;
    default:
        break;
    }
    return k;
}

/* t_group_ranks over the world: its places as job ranks. */
static inline int t_world_ranks(int which, int *ranks)
{
    int k = t_group_ranks(which, t_w.n, ranks);
    for (int i = 0; i < k; i++)
        ranks[i] = t_w.r[ranks[i]];
    return k;
}

/* t_world_ranks in the order a new group of them has (by job rank), *n
 * of them; this rank's place there, or -1 where it is not one. */
static inline int t_sorted_ranks(int which, int *ranks, int *n)
{
    *n = t_world_ranks(which, ranks);
    for (int i = 1; i < *n; i++)
        for (int j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
            int t = ranks[j];
            ranks[j] = ranks[j - 1];
            ranks[j - 1] = t;
        }
    int me = -1;
    for (int i = 0; i < *n; i++)
        if (ranks[i] == t_rank)
            me = i;
    return me;
}

/* Seconds on the monotonic clock, to time how long a call waited. */
static inline double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Report and return this rank's exit status. Each rank's verdict is its
 * own count, carried out by its exit code (the launcher fails the job when
 * any rank exits non-zero), never by a collective of the library under
 * test: an all_reduce that wrote zeros would hide every failure. */
static inline int t_finish(const char *name)
{
    if (t_failures)
        printf("[rank %d] %s: FAIL (%d failure%s on this rank)\n", t_rank,
               name, t_failures, t_failures == 1 ? "" : "s");
    else if (t_rank == 0)
        printf("%s: ok on rank 0 (every rank's exit code is its own "
               "verdict)\n", name);
    fflush(stdout);
    return t_failures ? 1 : 0;
}

#endif
