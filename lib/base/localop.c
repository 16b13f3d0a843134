/* Reductions inside one process: what the multi-buffer collectives do
 * to a process's own buffers before and after the collective across
 * processes. Plain loops; float16 and bfloat16 go through float, as in
 * the MPI layer's ops. */
#include "base.h"
#include "half.h"

/* These loops are the whole cost of the multi-buffer forms' local step:
 * vectorized, as MPI_Reduce_local's are, whatever the build's level. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

/* One loop per op, so that each vectorizes. */
#define LOOP(T, expr)                                                        \
    do {                                                                     \
        T *restrict a = acc;                                                 \
        const T *restrict b = x;                                             \
        for (int64_t i = 0; i < n; i++)                                      \
            a[i] = (T)(expr);                                                \
    } while (0)

#define FOLD(T)                                                              \
    do {                                                                     \
        switch (op) {                                                        \
        case DCOLL_SUM: case DCOLL_AVG: LOOP(T, a[i] + b[i]); break;         \
        case DCOLL_PRODUCT: LOOP(T, a[i] * b[i]); break;                     \
        case DCOLL_MIN: LOOP(T, b[i] < a[i] ? b[i] : a[i]); break;           \
        case DCOLL_MAX: LOOP(T, b[i] > a[i] ? b[i] : a[i]); break;           \
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

#define INT_FOLD(T)                                                          \
    do {                                                                     \
        if (op >= DCOLL_BAND)                                                \
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

static void fold_half(uint16_t *a, const uint16_t *b, int64_t n,
                      dcoll_op_t op, bool bf)
{
    for (int64_t i = 0; i < n; i++) {
        float x = h2f(a[i], bf), y = h2f(b[i], bf);
        switch (op) {
        case DCOLL_SUM: case DCOLL_AVG: x += y; break;
        case DCOLL_PRODUCT: x *= y; break;
        case DCOLL_MIN: x = y < x ? y : x; break;
        case DCOLL_MAX: x = y > x ? y : x; break;
        default: break;
        }
        a[i] = f2h(x, bf);
    }
}

void dcoll_local_fold(void *acc, const void *x, int64_t n, dcoll_dtype_t dt,
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
    case DCOLL_FLOAT16: fold_half(acc, x, n, op, false); break;
    case DCOLL_BFLOAT16: fold_half(acc, x, n, op, true); break;
    default: break;
    }
}

#define DIV(T)                                                               \
    do {                                                                     \
        T *a = buf;                                                          \
        for (int64_t i = 0; i < n; i++)                                      \
            a[i] = (T)(a[i] / (T)by);                                        \
    } while (0)

void dcoll_local_divide(void *buf, int64_t n, dcoll_dtype_t dt, int by)
{
    uint16_t *h = buf;
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
        for (int64_t i = 0; i < n; i++)
            h[i] = f2h(h2f(h[i], dt == DCOLL_BFLOAT16) / (float)by,
                       dt == DCOLL_BFLOAT16);
        break;
    default:
        break;
    }
}
