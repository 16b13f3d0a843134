/* float16 and bfloat16 reductions, computed in float32, and the AVG
 * division for every type. */
#include "half.h"
#include "halfvec.h"
#include "mpi_internal.h"

/* Set once at start: whether the AVX2/F16C kernels may run. */
bool dcoll_mpi_half_vec;

/* Each op is a conversion sandwich: the vector kernel takes what it can,
 * the scalar loop the rest (or all, on other CPUs). */
#define HALF_OP(name, vop, expr)                                             \
    static void name##_f16(const uint16_t *in, uint16_t *io, int n)          \
    {                                                                        \
        int i = dcoll_mpi_half_vec ? dcoll_half_vec(vop, false, in, io, n)   \
                                   : 0;                                      \
        for (; i < n; i++) {                                        \
            float a = dcoll_half_to_float(in[i]);                            \
            float b = dcoll_half_to_float(io[i]);                            \
            io[i] = dcoll_float_to_half(expr);                               \
        }                                                                    \
    }                                                                        \
    static void name##_bf16(const uint16_t *in, uint16_t *io, int n)         \
    {                                                                        \
        int i = dcoll_mpi_half_vec ? dcoll_half_vec(vop, true, in, io, n)    \
                                   : 0;                                      \
        for (; i < n; i++) {                                        \
            float a = dcoll_bf16_to_float(in[i]);                            \
            float b = dcoll_bf16_to_float(io[i]);                            \
            io[i] = dcoll_float_to_bf16(expr);                               \
        }                                                                    \
    }                                                                        \
    void dcoll_mpi_half_##name(void *in, void *inout, int *len,              \
                               MPI_Datatype *dt);                            \
    void dcoll_mpi_half_##name(void *in, void *inout, int *len,              \
                               MPI_Datatype *dt)                             \
    {                                                                        \
        if (*dt == dcoll_mpi_dtype[DCOLL_BFLOAT16])                          \
            name##_bf16(in, inout, *len);                                    \
        else                                                                 \
            name##_f16(in, inout, *len);                                     \
    }

/* NaN propagates through min and max, as in torch. */
HALF_OP(sum, DCOLL_HALF_SUM, a + b)
HALF_OP(prod, DCOLL_HALF_PROD, a * b)
HALF_OP(min, DCOLL_HALF_MIN, (a != a || a < b) ? a : b)
HALF_OP(max, DCOLL_HALF_MAX, (a != a || a > b) ? a : b)

#define DIVIDE(T)                                                            \
    do {                                                                     \
        T *p = buf;                                                          \
        for (int64_t i = 0; i < n; i++)                                      \
            p[i] = (T)(p[i] / (T)divisor);                                   \
    } while (0)

void dcoll_mpi_divide(void *buf, int64_t n, dcoll_dtype_t dt, int divisor)
{
    uint16_t *h = buf;
    switch (dt) {
    case DCOLL_INT8: DIVIDE(int8_t); break;
    case DCOLL_UINT8: DIVIDE(uint8_t); break;
    case DCOLL_INT32: DIVIDE(int32_t); break;
    case DCOLL_UINT32: DIVIDE(uint32_t); break;
    case DCOLL_INT64: DIVIDE(int64_t); break;
    case DCOLL_UINT64: DIVIDE(uint64_t); break;
    case DCOLL_FLOAT32: DIVIDE(float); break;
    case DCOLL_FLOAT64: DIVIDE(double); break;
    case DCOLL_FLOAT16:
        for (int64_t i = dcoll_mpi_half_vec ? dcoll_half_vec_divide(
                             false, h, n, (float)divisor) : 0;
             i < n; i++)
            h[i] = dcoll_float_to_half(dcoll_half_to_float(h[i]) /
                                       (float)divisor);
        break;
    case DCOLL_BFLOAT16:
        for (int64_t i = dcoll_mpi_half_vec ? dcoll_half_vec_divide(
                             true, h, n, (float)divisor) : 0;
             i < n; i++)
            h[i] = dcoll_float_to_bf16(dcoll_bf16_to_float(h[i]) /
                                       (float)divisor);
        break;
    default:
        break;
    }
}
