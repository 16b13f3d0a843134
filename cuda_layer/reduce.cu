/* The reduction kernels behind the table's reduce (reduce.h): k inputs in
 * rank order into one output, with the host path's rules
 * (lib/base/kernels.c): io = in op io, input by input; float16 and
 * bfloat16 in float32, rounded to nearest even at every step; MIN and MAX
 * on them pass a NaN on, as torch does; AVG of a floating type as the sum
 * of each input times the type's 1/n (NCCL's way), of an integer type as
 * the sum divided by n. Built with -fmad=false, so that no product and
 * sum are fused where the host rounds twice. The op is a switch inside
 * one kernel per type: the loop is bound by memory, not by the branch,
 * and one kernel a type keeps nvcc's time in the build short. */
#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "dcoll/types.h"
#include "reduce.h"

extern "C" int dcoll_cuda_fail(const char *call, const char *why);

namespace {

constexpr int kMaxSrc = 16;   /* inputs a launch reads; more take passes */

struct Srcs {
    const void *p[kMaxSrc];
};

struct Ctx {
    int op;
    bool premul;      /* AVG of a floating type */
    float fs;         /* the 1/n each input is multiplied by */
    double ds;
    int divide;       /* AVG of an integer type: the sum / divide */
};

template <typename T> struct Int {
    using E = T;
    __device__ static T pre(T x, const Ctx &) { return x; }
    __device__ static T fold(int op, T a, T b)
    {
        switch (op) {
        case DCOLL_SUM: case DCOLL_AVG: return (T)(a + b);
        case DCOLL_PRODUCT: return (T)(a * b);
        case DCOLL_MIN: return a < b ? a : b;
        case DCOLL_MAX: return a > b ? a : b;
        case DCOLL_BAND: return (T)(a & b);
        case DCOLL_BOR: return (T)(a | b);
        case DCOLL_BXOR: return (T)(a ^ b);
        case DCOLL_LAND: return (T)((a != 0) & (b != 0));
        case DCOLL_LOR: return (T)((a != 0) | (b != 0));
        default: return (T)((a != 0) ^ (b != 0));
        }
    }
    __device__ static T post(T x, const Ctx &c)
    {
        return c.divide ? (T)(x / (T)c.divide) : x;
    }
};

template <typename T> struct Real {
    using E = T;
    __device__ static T pre(T x, const Ctx &c)
    {
        if (!c.premul)
            return x;
        return sizeof(T) == 4 ? (T)(x * c.fs) : (T)(x * c.ds);
    }
    __device__ static T fold(int op, T a, T b)
    {
        switch (op) {
        case DCOLL_PRODUCT: return a * b;
        case DCOLL_MIN: return a < b ? a : b;
        case DCOLL_MAX: return a > b ? a : b;
        default: return a + b;
        }
    }
    __device__ static T post(T x, const Ctx &) { return x; }
};

/* float16 (bf false) and bfloat16 as their bits. */
template <bool bf> struct Half {
    using E = uint16_t;
    __device__ static float h2f(uint16_t h)
    {
        if (bf)
            return __bfloat162float(__ushort_as_bfloat16(h));
        return __half2float(__ushort_as_half(h));
    }
    __device__ static uint16_t f2h(float f)
    {
        if (bf)
            return __bfloat16_as_ushort(__float2bfloat16_rn(f));
        return __half_as_ushort(__float2half_rn(f));
    }
    __device__ static uint16_t pre(uint16_t x, const Ctx &c)
    {
        /* The scale is the type's own 1/n, the product rounded once. */
        return c.premul ? f2h(h2f(x) * h2f(f2h(c.fs))) : x;
    }
    __device__ static uint16_t fold(int op, uint16_t ha, uint16_t hb)
    {
        float a = h2f(ha), b = h2f(hb), r;
        switch (op) {
        case DCOLL_PRODUCT: r = a * b; break;
        case DCOLL_MIN: r = (a != a || a < b) ? a : b; break;
        case DCOLL_MAX: r = (a != a || a > b) ? a : b; break;
        default: r = a + b; break;
        }
        return f2h(r);
    }
    __device__ static uint16_t post(uint16_t x, const Ctx &) { return x; }
};

/* Complex PRODUCT as C multiplies (a: the input); the other complex ops
 * come as their real view. */
template <typename V> struct Cplx {
    struct E {
        V re, im;
    };
    __device__ static E pre(E x, const Ctx &) { return x; }
    __device__ static E fold(int, E a, E b)
    {
        E r;
        r.re = a.re * b.re - a.im * b.im;
        r.im = a.re * b.im + a.im * b.re;
        return r;
    }
    __device__ static E post(E x, const Ctx &) { return x; }
};

/* MINLOC and MAXLOC on (value, index) pairs, as MPI defines them. */
template <typename V, typename X> struct Pair {
    struct E {
        V v;
        X i;
    };
    __device__ static E pre(E x, const Ctx &) { return x; }
    __device__ static E fold(int op, E a, E b)
    {
        bool lo = op == DCOLL_MINLOC;
        if (lo ? a.v < b.v : a.v > b.v)
            return a;
        if (a.v == b.v && a.i < b.i)
            b.i = a.i;
        return b;
    }
    __device__ static E post(E x, const Ctx &) { return x; }
};

/* from_dst: dst already holds the inputs before these (a later pass). */
template <class R>
__global__ void reduce_k(typename R::E *dst, Srcs s, int nsrc, int64_t n,
                         Ctx c, bool from_dst, bool last)
{
    using E = typename R::E;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += step) {
        int j = 0;
        E acc = from_dst ? dst[i]
                         : R::pre(static_cast<const E *>(s.p[j++])[i], c);
        for (; j < nsrc; j++)
            acc = R::fold(c.op, R::pre(static_cast<const E *>(s.p[j])[i], c),
                          acc);
        dst[i] = last ? R::post(acc, c) : acc;
    }
}

template <class R>
int run(void *dst, const void *const *srcs, int nsrc, int64_t n,
        const Ctx &c, cudaStream_t stream)
{
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 8192)
        blocks = 8192;
    for (int first = 0; first < nsrc; first += kMaxSrc) {
        int m = nsrc - first < kMaxSrc ? nsrc - first : kMaxSrc;
        Srcs s = {};
        for (int j = 0; j < m; j++)
            s.p[j] = srcs[first + j];
        reduce_k<R><<<(unsigned)blocks, threads, 0, stream>>>(
            static_cast<typename R::E *>(dst), s, m, n, c, first > 0,
            first + m == nsrc);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return dcoll_cuda_fail("the reduction kernel's launch",
                                   cudaGetErrorString(e));
    }
    return 0;
}

} // namespace

extern "C" int dcoll_reduce_launch(void *dst, const void *const *srcs,
                                   int nsrc, int64_t count, int dtype, int op,
                                   int avg_n, void *stream)
{
    Ctx c = {op, false, 0.0f, 0.0, 0};
    bool avg = op == DCOLL_AVG && avg_n > 0;
    bool real = dtype == DCOLL_FLOAT16 || dtype == DCOLL_BFLOAT16 ||
                dtype == DCOLL_FLOAT32 || dtype == DCOLL_FLOAT64;
    if (avg && real) {
        c.premul = true;
        c.ds = 1.0 / avg_n;
        c.fs = (float)c.ds;
    } else if (avg) {
        c.divide = avg_n;
    }
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    switch (dtype) {
    case DCOLL_INT8: return run<Int<int8_t>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_UINT8: return run<Int<uint8_t>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_INT32: return run<Int<int32_t>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_UINT32:
        return run<Int<uint32_t>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_INT64: return run<Int<int64_t>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_UINT64:
        return run<Int<uint64_t>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_FLOAT32: return run<Real<float>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_FLOAT64:
        return run<Real<double>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_FLOAT16: return run<Half<false>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_BFLOAT16: return run<Half<true>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_COMPLEX64:
        return op == DCOLL_PRODUCT
                   ? run<Cplx<float>>(dst, srcs, nsrc, count, c, st)
                   : 1;
    case DCOLL_COMPLEX128:
        return op == DCOLL_PRODUCT
                   ? run<Cplx<double>>(dst, srcs, nsrc, count, c, st)
                   : 1;
    case DCOLL_FLOAT32_INT:
        return run<Pair<float, int>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_FLOAT64_INT:
        return run<Pair<double, int>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_INT32_INT:
        return run<Pair<int, int>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_2FLOAT32:
        return run<Pair<float, float>>(dst, srcs, nsrc, count, c, st);
    case DCOLL_2FLOAT64:
        return run<Pair<double, double>>(dst, srcs, nsrc, count, c, st);
    default:
        return 1;   /* bool and logical come as integers of their size */
    }
}
