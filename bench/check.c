/* The correctness check behind #wrong: inputs from a formula, one call
 * through dcoll, every output element compared with the formula's result.
 * The values are small integers, exact in every type, bfloat16 included. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "half.h"
#include "perf.h"

static void put(void *b, dcoll_dtype_t t, size_t i, double v)
{
    switch (t) {
    case DCOLL_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
    case DCOLL_UINT8: ((uint8_t *)b)[i] = (uint8_t)v; break;
    case DCOLL_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
    case DCOLL_UINT32: ((uint32_t *)b)[i] = (uint32_t)v; break;
    case DCOLL_INT64: ((int64_t *)b)[i] = (int64_t)v; break;
    case DCOLL_UINT64: ((uint64_t *)b)[i] = (uint64_t)v; break;
    case DCOLL_FLOAT16: ((uint16_t *)b)[i] = dcoll_float_to_half((float)v); break;
    case DCOLL_BFLOAT16: ((uint16_t *)b)[i] = dcoll_float_to_bf16((float)v); break;
    case DCOLL_FLOAT32: ((float *)b)[i] = (float)v; break;
    case DCOLL_FLOAT64: ((double *)b)[i] = v; break;
    case DCOLL_BOOL: ((bool *)b)[i] = v != 0; break;
    case DCOLL_LOGICAL: ((int32_t *)b)[i] = v != 0; break;
    /* Complex: the value, and an imaginary part of 0, which every op
     * keeps 0 (get says NAN where it is not). */
    case DCOLL_COMPLEX64: ((float *)b)[2 * i] = (float)v;
                          ((float *)b)[2 * i + 1] = 0; break;
    case DCOLL_COMPLEX128: ((double *)b)[2 * i] = v;
                           ((double *)b)[2 * i + 1] = 0; break;
    /* Pairs: the value, and its index, the value's last three digits
     * (MINLOC and MAXLOC's inputs put the rank there). */
#define PAIR_PUT(V, X)                                                       \
    do {                                                                     \
        struct { V v; X i; } *p = b;                                         \
        p[i].v = (V)v;                                                       \
        p[i].i = (X)((int64_t)v % 1000);                                     \
    } while (0)
    case DCOLL_FLOAT32_INT: PAIR_PUT(float, int); break;
    case DCOLL_FLOAT64_INT: PAIR_PUT(double, int); break;
    case DCOLL_INT32_INT: PAIR_PUT(int, int); break;
    case DCOLL_2FLOAT32: PAIR_PUT(float, float); break;
    case DCOLL_2FLOAT64: PAIR_PUT(double, double); break;
    default: break;
    }
}

static double get(const void *b, dcoll_dtype_t t, size_t i)
{
    switch (t) {
    case DCOLL_INT8: return ((const int8_t *)b)[i];
    case DCOLL_UINT8: return ((const uint8_t *)b)[i];
    case DCOLL_INT32: return ((const int32_t *)b)[i];
    case DCOLL_UINT32: return ((const uint32_t *)b)[i];
    case DCOLL_INT64: return (double)((const int64_t *)b)[i];
    case DCOLL_UINT64: return (double)((const uint64_t *)b)[i];
    case DCOLL_FLOAT16: return dcoll_half_to_float(((const uint16_t *)b)[i]);
    case DCOLL_BFLOAT16: return dcoll_bf16_to_float(((const uint16_t *)b)[i]);
    case DCOLL_FLOAT32: return ((const float *)b)[i];
    case DCOLL_FLOAT64: return ((const double *)b)[i];
    case DCOLL_BOOL: return ((const bool *)b)[i];
    case DCOLL_LOGICAL: return ((const int32_t *)b)[i];
    case DCOLL_COMPLEX64: {
        const float *f = (const float *)b + 2 * i;
        return f[1] == 0 ? f[0] : NAN;
    }
    case DCOLL_COMPLEX128: {
        const double *d = (const double *)b + 2 * i;
        return d[1] == 0 ? d[0] : NAN;
    }
    /* A pair whose index is not its value's: NAN, a wrong answer. */
#define PAIR_GET(V, X)                                                       \
    do {                                                                     \
        const struct { V v; X i; } *p = b;                                   \
        return (int64_t)p[i].i == (int64_t)p[i].v % 1000 ? (double)p[i].v    \
                                                         : NAN;              \
    } while (0)
    case DCOLL_FLOAT32_INT: PAIR_GET(float, int);
    case DCOLL_FLOAT64_INT: PAIR_GET(double, int);
    case DCOLL_INT32_INT: PAIR_GET(int, int);
    case DCOLL_2FLOAT32: PAIR_GET(float, float);
    case DCOLL_2FLOAT64: PAIR_GET(double, double);
    default: return NAN;
    }
}

/* Rank r's input element j. */
static double val(const struct perf_ctx *c, bool reduces, int r, size_t j)
{
    bool truth = c->o->dtype == DCOLL_BOOL || c->o->dtype == DCOLL_LOGICAL;
    if (!reduces)
        return truth ? (double)((r + j) % 2)
                     : (double)((r * 37 + j * 11) % 97 + 1);
    switch (c->o->op) {
    case DCOLL_MINLOC:
    case DCOLL_MAXLOC:
        /* Small values, each rank's own: its rank in the last digits. */
        return (double)(((r * 7 + j) % 5) * 1000 + r);
    case DCOLL_LAND:
    case DCOLL_LOR:
    case DCOLL_LXOR:
        return (double)((r * 3 + j) % 4 == 0 ? 0 : truth ? 1 : (j % 5));
    case DCOLL_PRODUCT:
        return (r + j) % 4 == 0 ? 2 : 1;
    case DCOLL_BAND:
    case DCOLL_BOR:
    case DCOLL_BXOR:
        return (double)((r * 5 + j * 3) & 0x3f);
    default:
        return (double)(1 + (r * 7 + j) % 5);
    }
}

/* The reduction of element j over the group's ranks. */
/* Element j reduced over ranks 0 to upto (AVG: divided by upto + 1). */
static double fold_to(const struct perf_ctx *c, size_t j, int upto)
{
    double a = val(c, true, 0, j);
    uint64_t u = (uint64_t)a;
    for (int r = 1; r <= upto; r++) {
        double v = val(c, true, r, j);
        switch (c->o->op) {
        case DCOLL_PRODUCT: a *= v; break;
        case DCOLL_MIN: a = v < a ? v : a; break;
        case DCOLL_MAX: a = v > a ? v : a; break;
        case DCOLL_BAND: u &= (uint64_t)v; break;
        case DCOLL_BOR: u |= (uint64_t)v; break;
        case DCOLL_BXOR: u ^= (uint64_t)v; break;
        case DCOLL_MINLOC: a = v < a ? v : a; break;
        case DCOLL_MAXLOC: a = v > a ? v : a; break;
        case DCOLL_LAND: a = (a != 0) && (v != 0); break;
        case DCOLL_LOR: a = (a != 0) || (v != 0); break;
        case DCOLL_LXOR: a = (a != 0) != (v != 0); break;
        default: a += v; break;
        }
    }
    dcoll_op_t op = c->o->op;
    if (op == DCOLL_BAND || op == DCOLL_BOR || op == DCOLL_BXOR)
        return (double)u;
    if (op == DCOLL_AVG) {
        bool is_float = c->o->dtype >= DCOLL_FLOAT16 &&
                        c->o->dtype <= DCOLL_FLOAT64;
        is_float = is_float || c->o->dtype >= DCOLL_COMPLEX64;
        a = is_float ? a / (upto + 1) : trunc(a / (upto + 1));
    }
    return a;
}

static double fold(const struct perf_ctx *c, size_t j)
{
    return fold_to(c, j, c->size - 1);
}

static long differs(const struct perf_ctx *c, const void *b, size_t i,
                    double want)
{
    static const double tol[DCOLL_DTYPE_COUNT_] = {
        [DCOLL_FLOAT16] = 1e-3, [DCOLL_BFLOAT16] = 8e-3,
        [DCOLL_FLOAT32] = 1e-6, [DCOLL_FLOAT64] = 1e-12,
        [DCOLL_COMPLEX64] = 1e-6, [DCOLL_COMPLEX128] = 1e-12,
    };
    double got = get(b, c->o->dtype, i);
    return fabs(got - want) > tol[c->o->dtype] * fabs(want);
}

static void fill(void *b, const struct perf_ctx *c, bool reduces, int r,
                 size_t n, size_t from)
{
    for (size_t j = 0; j < n; j++)
        put(b, c->o->dtype, j, val(c, reduces, r, from + j));
}

/* Coalesced tensors as one long vector: element i of tensor t is j. */
static long check_coalesced(struct perf_ctx *c, const struct perf_coll *k)
{
    bool red = k->reduces;
    long wrong = 0;
    size_t from = 0;
    for (int t = 0; t < c->ntensors; t++) {
        size_t n = (size_t)c->counts[t];
        if (red) { /* in place */
            fill(c->recvv[t], c, red, c->rank, n, from);
        } else {
            fill(c->sendv[t], c, red, c->rank, n, from);
            memset(c->recvv[t], 0, n * c->esz * (size_t)c->size);
        }
        from += n;
    }
    if (k->dcoll(c))
        return -2;
    from = 0;
    for (int t = 0; t < c->ntensors; t++) {
        size_t n = (size_t)c->counts[t];
        for (size_t i = 0; i < n; i++) {
            if (red) {
                wrong += differs(c, c->recvv[t], i, fold(c, from + i));
                continue;
            }
            for (int r = 0; r < c->size; r++)
                wrong += differs(c, c->recvv[t], r * n + i,
                                 val(c, false, r, from + i));
        }
        from += n;
    }
    return wrong;
}

long perf_check(struct perf_ctx *c, const struct perf_coll *k)
{
    size_t n = (size_t)c->count, all = n * (size_t)c->size;
    bool red = k->reduces, root = c->rank == c->groot;
    int me = c->rank, prev = (me + c->size - 1) % c->size;
    long wrong = 0;

    /* Timed only: their results are checked by the test suite (works,
     * multi), not here. */
    size_t nl = strlen(k->name);
    if (!strcmp(k->name, "halo") || !strcmp(k->name, "split") ||
        (nl > 6 && !strcmp(k->name + nl - 6, "_multi")))
        return -1;
    if (k->coalesced)
        wrong = check_coalesced(c, k);
    else if (strcmp(k->name, "barrier") == 0)
        wrong = k->dcoll(c) ? -2 : 0;
    if (k->coalesced || strcmp(k->name, "barrier") == 0)
        goto out;

    /* On GPU buffers (-m cuda), filled and read through host images. */
    void *in = c->cuda ? c->hsend : c->send;
    void *res = c->cuda ? c->hrecv : c->recv;
    fill(in, c, red, me, k->blocks ? all : n, 0);
    memset(res, 0, c->recvbytes);
    if (strcmp(k->name, "broadcast") == 0 && root)
        fill(res, c, false, me, n, 0);
#ifdef DCOLL_PERF_CUDA
    if (c->cuda) {
        perf_cuda_copy(c->send, in, c->sendbytes);
        perf_cuda_copy(c->recv, res, c->recvbytes);
    }
#endif
    if (k->dcoll(c)) {
        wrong = -2;
        goto out;
    }
#ifdef DCOLL_PERF_CUDA
    if (c->cuda)
        perf_cuda_copy(res, c->recv, c->recvbytes);
#endif
    /* The neighbourhood entries: each received block its source's. */
    if (!strncmp(k->name, "neighbor_", 9)) {
        bool ag = !strcmp(k->name, "neighbor_all_gather");
        bool w = !strcmp(k->name, "neighbor_all_to_allw");
        size_t from, step;
        for (int b = 0; b < 2; b++) {
            int src = w ? perf_ring_source_w(c, b, &from, &step)
                        : perf_ring_source(c, b, ag, &from, &step);
            for (size_t i = 0; src >= 0 && i < n; i++)
                wrong += differs(c, res, b * n + i,
                                 val(c, false, src, from + i * step));
        }
        goto out;
    }
    /* A vector form with every count the same checks as its plain form. */
    char plain[32];
    snprintf(plain, sizeof(plain), "%s", k->name);
    size_t len = strlen(plain);
    if (len > 1 && plain[len - 1] == 'v' && strcmp(plain, "send_recv"))
        plain[len - 1] = '\0';
    const char *nm = plain;
    /* A collective this check has no rule for fails the run: it must not
     * pass as checked. */
    static const char *const known[] = {
        "all_reduce", "reduce", "reduce_scatter", "broadcast", "scatter",
        "send_recv", "all_gather", "gather", "all_to_all", "scan", "exscan"};
    bool have = false;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        have = have || !strcmp(nm, known[i]);
    if (!have) {
        if (c->rank == 0)
            fprintf(stderr, "dcoll-perf: no check for '%s' (bench/check.c)"
                    "\n", k->name);
        wrong = -2;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(nm, "all_reduce") || (!strcmp(nm, "reduce") && root)) {
            wrong += differs(c, res, i, fold(c, i));
        } else if (!strcmp(nm, "scan")) {
            wrong += differs(c, res, i, fold_to(c, i, me));
        } else if (!strcmp(nm, "exscan")) {   /* rank 0's stays 0 */
            wrong += differs(c, res, i, me ? fold_to(c, i, me - 1) : 0);
        } else if (!strcmp(nm, "reduce_scatter")) {
            wrong += differs(c, res, i, fold(c, me * n + i));
        } else if (!strcmp(nm, "broadcast")) {
            wrong += differs(c, res, i, val(c, false, c->groot, i));
        } else if (!strcmp(nm, "scatter")) {
            wrong += differs(c, res, i,
                             val(c, false, c->groot, me * n + i));
        } else if (!strcmp(nm, "send_recv")) {
            wrong += differs(c, res, i, val(c, false, prev, i));
        } else {
            for (int r = 0; r < c->size; r++) {
                size_t at = r * n + i;
                if (!strcmp(nm, "all_gather") ||
                    (!strcmp(nm, "gather") && root))
                    wrong += differs(c, res, at, val(c, false, r, i));
                else if (!strcmp(nm, "all_to_all"))
                    wrong += differs(c, res, at,
                                     val(c, false, r, me * n + i));
            }
        }
    }
out:
    /* -2 marks a failed call on some rank; otherwise sum the counts. */
    {
        long failed = wrong < 0, sum;
        MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_LONG, MPI_MAX, c->comm);
        if (wrong < 0)
            wrong = 0;
        MPI_Allreduce(&wrong, &sum, 1, MPI_LONG, MPI_SUM, c->comm);
        return failed ? -2 : sum;
    }
}
