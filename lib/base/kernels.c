/* Every reduction kernel dcoll runs itself, in one place: the MPI layer's
 * float16/bfloat16 ops and AVG division (mpi_layer/halfops.c wraps them
 * as MPI user functions) and the multi-buffer forms' folds over a
 * process's own buffers (lib/core/multi.c) call the same loops, so both
 * paths give the same bits.
 *
 * The rules: io[i] = in[i] op io[i]. Integer and native float types take
 * what MPI's own ops do (min: in < io ? in : io). float16 and bfloat16 are
 * computed in float32 and rounded back to nearest even, and a NaN in
 * either operand comes out of min and max, as in torch. */
#include <stdlib.h>
#include "base.h"
#include "half.h"
#include "halfvec.h"

/* These loops are the whole cost of the local step of the multi-buffer
 * forms: vectorized, as MPI_Reduce_local's are, whatever the build's
 * level. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

static bool half_vec;

void dcoll_kernels_setup(void)
{
    half_vec = dcoll_half_vec_usable() && !getenv("DCOLL_NO_HALF_VEC");
}

/* One loop per op, so that each vectorizes. */
#define LOOP(T, expr)                                                        \
    do {                                                                     \
        T *restrict b = io;                                                  \
        const T *restrict a = in;                                            \
        for (int64_t i = 0; i < n; i++)                                      \
            b[i] = (T)(expr);                                                \
    } while (0)

#define FOLD(T)                                                              \
    do {                                                                     \
        switch (op) {                                                        \
        case DCOLL_SUM: case DCOLL_AVG: LOOP(T, a[i] + b[i]); break;         \
        case DCOLL_PRODUCT: LOOP(T, a[i] * b[i]); break;                     \
        case DCOLL_MIN: LOOP(T, a[i] < b[i] ? a[i] : b[i]); break;           \
        case DCOLL_MAX: LOOP(T, a[i] > b[i] ? a[i] : b[i]); break;           \
        default: break;                                                      \
        }                                                                    \
    } while (0)

#define FOLD_BITS(T)                                                         \
    do {                                                                     \
        switch (op) {                                                        \
        case DCOLL_BAND: LOOP(T, a[i] & b[i]); break;                        \
        case DCOLL_BOR: LOOP(T, a[i] | b[i]); break;                         \
        default: LOOP(T, a[i] ^ b[i]); break;                                \
        }                                                                    \
    } while (0)

/* MINLOC and MAXLOC on (value, index) pairs, as MPI defines them: the
 * lesser (greater) value with its index, the lower index among equals. */
#define FOLD_PAIR(V, X)                                                      \
    do {                                                                     \
        struct pair { V v; X i; } *restrict b = io;                          \
        const struct pair *restrict a = in;                                  \
        bool lo = op == DCOLL_MINLOC;                                        \
        for (int64_t i = 0; i < n; i++) {                                    \
            if (lo ? a[i].v < b[i].v : a[i].v > b[i].v)                      \
                b[i] = a[i];                                                 \
            else if (a[i].v == b[i].v && a[i].i < b[i].i)                    \
                b[i].i = a[i].i;                                             \
        }                                                                    \
    } while (0)

/* Logical ops give 1 or 0 in the operands' type, as MPI's do. */
#define FOLD_LOGIC(T)                                                        \
    do {                                                                     \
        switch (op) {                                                        \
        case DCOLL_LAND: LOOP(T, (a[i] != 0) & (b[i] != 0)); break;          \
        case DCOLL_LOR: LOOP(T, (a[i] != 0) | (b[i] != 0)); break;           \
        default: LOOP(T, (a[i] != 0) ^ (b[i] != 0)); break;                  \
        }                                                                    \
    } while (0)

#define INT_FOLD(T)                                                          \
    do {                                                                     \
        if (op >= DCOLL_LAND)                                                \
            FOLD_LOGIC(T);                                                   \
        else if (op >= DCOLL_BAND)                                           \
            FOLD_BITS(T);                                                    \
        else                                                                 \
            FOLD(T);                                                         \
    } while (0)

static float h2f(uint16_t h, bool bf)
{
    return bf ? dcoll_bf16_to_float(h) : dcoll_half_to_float(h);
}

static uint16_t f2h(float f, bool bf)
{
    return bf ? dcoll_float_to_bf16(f) : dcoll_float_to_half(f);
}

float dcoll_half_rule(int op, float a, float b)
{
    switch (op) {
    case DCOLL_SUM: case DCOLL_AVG: return a + b;
    case DCOLL_PRODUCT: return a * b;
    case DCOLL_MIN: return (a != a || a < b) ? a : b;
    default: return (a != a || a > b) ? a : b;
    }
}

static const enum dcoll_half_vop vop[] = {
    [DCOLL_SUM] = DCOLL_HALF_SUM, [DCOLL_AVG] = DCOLL_HALF_SUM,
    [DCOLL_PRODUCT] = DCOLL_HALF_PROD, [DCOLL_MIN] = DCOLL_HALF_MIN,
    [DCOLL_MAX] = DCOLL_HALF_MAX,
};

/* The vector kernel takes what it can (8 at a time, bit for bit the
 * scalar rule's), the scalar loop the rest. */
static void fold_half(uint16_t *io, const uint16_t *in, int64_t n,
                      dcoll_op_t op, bool bf)
{
    int64_t i = 0;
    /* The kernel counts in int: a billion elements a pass at most. */
    while (half_vec && n - i >= 8)
        i += dcoll_half_vec(vop[op], bf, in + i, io + i,
                            (int)(n - i < (1 << 30) ? n - i : (1 << 30)));
    for (; i < n; i++)
        io[i] = f2h(dcoll_half_rule(op, h2f(in[i], bf), h2f(io[i], bf)), bf);
}

void dcoll_fold(void *io, const void *in, int64_t n, dcoll_dtype_t dt,
                dcoll_op_t op)
{
    switch (dt) {
    case DCOLL_INT8: INT_FOLD(int8_t); break;
    case DCOLL_UINT8: INT_FOLD(uint8_t); break;
    case DCOLL_INT32: INT_FOLD(int32_t); break;
    case DCOLL_UINT32: INT_FOLD(uint32_t); break;
    case DCOLL_INT64: INT_FOLD(int64_t); break;
    case DCOLL_UINT64: INT_FOLD(uint64_t); break;
    case DCOLL_FLOAT32: FOLD(float); break;
    case DCOLL_FLOAT64: FOLD(double); break;
    case DCOLL_FLOAT16: fold_half(io, in, n, op, false); break;
    case DCOLL_BFLOAT16: fold_half(io, in, n, op, true); break;
    /* Complex: SUM (and AVG's) part by part, PRODUCT as C multiplies,
     * which is what MPI's own op does. */
    case DCOLL_COMPLEX64:
        if (op == DCOLL_PRODUCT)
            LOOP(float _Complex, a[i] * b[i]);
        else
            dcoll_fold(io, in, 2 * n, DCOLL_FLOAT32, op);
        break;
    case DCOLL_COMPLEX128:
        if (op == DCOLL_PRODUCT)
            LOOP(double _Complex, a[i] * b[i]);
        else
            dcoll_fold(io, in, 2 * n, DCOLL_FLOAT64, op);
        break;
    case DCOLL_FLOAT32_INT: FOLD_PAIR(float, int); break;
    case DCOLL_FLOAT64_INT: FOLD_PAIR(double, int); break;
    case DCOLL_INT32_INT: FOLD_PAIR(int, int); break;
    case DCOLL_2FLOAT32: FOLD_PAIR(float, float); break;
    case DCOLL_2FLOAT64: FOLD_PAIR(double, double); break;
    /* bool and logical take the logical ops only. */
    case DCOLL_BOOL: FOLD_LOGIC(uint8_t); break;
    case DCOLL_LOGICAL:
        if (dcoll_dtype_sizes[DCOLL_LOGICAL] == 4)
            FOLD_LOGIC(int32_t);
        else if (dcoll_dtype_sizes[DCOLL_LOGICAL] == 8)
            FOLD_LOGIC(int64_t);
        else if (dcoll_dtype_sizes[DCOLL_LOGICAL] == 2)
            FOLD_LOGIC(int16_t);
        else
            FOLD_LOGIC(int8_t);
        break;
    default: break;
    }
}

#define DIV(T)                                                               \
    do {                                                                     \
        T *a = buf;                                                          \
        for (int64_t i = 0; i < n; i++)                                      \
            a[i] = (T)(a[i] / (T)by);                                        \
    } while (0)

void dcoll_divide(void *buf, int64_t n, dcoll_dtype_t dt, int by)
{
    if (dcoll_dtype_is_complex(dt)) {   /* both parts */
        dcoll_divide(buf, 2 * n, dcoll_dtype_real(dt), by);
        return;
    }
    uint16_t *h = buf;
    bool bf = dt == DCOLL_BFLOAT16;
    switch (dt) {
    case DCOLL_INT8: DIV(int8_t); break;
    case DCOLL_UINT8: DIV(uint8_t); break;
    case DCOLL_INT32: DIV(int32_t); break;
    case DCOLL_UINT32: DIV(uint32_t); break;
    case DCOLL_INT64: DIV(int64_t); break;
    case DCOLL_UINT64: DIV(uint64_t); break;
    case DCOLL_FLOAT32: DIV(float); break;
    case DCOLL_FLOAT64: DIV(double); break;
    case DCOLL_FLOAT16:
    case DCOLL_BFLOAT16:
        for (int64_t i = half_vec ? dcoll_half_vec_divide(bf, h, n, (float)by)
                                  : 0;
             i < n; i++)
            h[i] = f2h(h2f(h[i], bf) / (float)by, bf);
        break;
    default:
        break;
    }
}

/* AVG the way NCCL computes it in floating types, each input times the
 * type's 1/by before the sum (NCCL 2.28 src/enqueue.cc: ncclAvg is
 * ncclDevPreMulSum there, with the scalar made from the double 1.0/by),
 * so that GPU buffers give the same answer on the staged path as on
 * NCCL's. A 16-bit product of two 16-bit values rounds once from float.
 * Other types are left alone: their AVG divides the sum, on both. */
void dcoll_premul(void *buf, int64_t n, dcoll_dtype_t dt, int by)
{
    if (dcoll_dtype_is_complex(dt)) {   /* NCCL's real view */
        dcoll_premul(buf, 2 * n, dcoll_dtype_real(dt), by);
        return;
    }
    double s = 1.0 / by;
    uint16_t *h = buf;
    bool bf = dt == DCOLL_BFLOAT16;
    switch (dt) {
    case DCOLL_FLOAT32: {
        float *f = buf;
        for (int64_t i = 0; i < n; i++)
            f[i] *= (float)s;
        break;
    }
    case DCOLL_FLOAT64: {
        double *d = buf;
        for (int64_t i = 0; i < n; i++)
            d[i] *= s;
        break;
    }
    case DCOLL_FLOAT16:
    case DCOLL_BFLOAT16: {
        float hs = h2f(f2h((float)s, bf), bf);
        for (int64_t i = 0; i < n; i++)
            h[i] = f2h(h2f(h[i], bf) * hs, bf);
        break;
    }
    default:
        break;
    }
}
