/* AVX2 + F16C kernels for the 16-bit float reductions. F16C converts
 * float16 in hardware with round-to-nearest-even, as dcoll_float_to_half
 * does; bfloat16 is a shift one way and the same rounding add the other. */
#include "halfvec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#define VEC __attribute__((target("avx2,f16c")))

/* F16C from CPUID itself: clang's __builtin_cpu_supports has no name for
 * it. */
bool dcoll_half_vec_usable(void)
{
    unsigned a, b, c, d;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) &&
           (c & bit_F16C);
}

VEC static inline __m256 load_f16(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

VEC static inline void store_f16(uint16_t *p, __m256 v)
{
    _mm_storeu_si128((__m128i *)p,
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT |
                                            _MM_FROUND_NO_EXC));
}

VEC static inline __m256 load_bf16(const uint16_t *p)
{
    __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
}

VEC static inline void store_bf16(uint16_t *p, __m256 v)
{
    __m256i u = _mm256_castps_si256(v);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16),
                                   _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(
                                        _mm256_set1_epi32(0x7fff), odd));
    r = _mm256_srli_epi32(r, 16);
    /* NaN: keep it, quieted, rather than let the add carry it to inf. */
    __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
    __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16),
                                _mm256_set1_epi32(0x40));
    r = _mm256_blendv_epi8(r, q, nan);
    __m128i lo = _mm256_castsi256_si128(r);
    __m128i hi = _mm256_extracti128_si256(r, 1);
    _mm_storeu_si128((__m128i *)p, _mm_packus_epi32(lo, hi));
}

/* min and max let a NaN in either operand through, as the scalar code. */
VEC static inline __m256 vmin(__m256 a, __m256 b)
{
    __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q),
                                 _mm256_cmp_ps(a, b, _CMP_LT_OQ));
    return _mm256_blendv_ps(b, a, take_a);
}

VEC static inline __m256 vmax(__m256 a, __m256 b)
{
    __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q),
                                 _mm256_cmp_ps(a, b, _CMP_GT_OQ));
    return _mm256_blendv_ps(b, a, take_a);
}

#define LOOP(load, store, expr)                                              \
    for (; i + 8 <= n; i += 8) {                                             \
        __m256 a = load(in + i), b = load(io + i);                           \
        store(io + i, expr);                                                 \
    }

#define KERNEL(name, load, store)                                            \
    VEC static int name(enum dcoll_half_vop op, const uint16_t *in,          \
                        uint16_t *io, int n)                                 \
    {                                                                        \
        int i = 0;                                                           \
        switch (op) {                                                        \
        case DCOLL_HALF_SUM: LOOP(load, store, _mm256_add_ps(a, b)); break;  \
        case DCOLL_HALF_PROD: LOOP(load, store, _mm256_mul_ps(a, b)); break; \
        case DCOLL_HALF_MIN: LOOP(load, store, vmin(a, b)); break;           \
        case DCOLL_HALF_MAX: LOOP(load, store, vmax(a, b)); break;           \
        }                                                                    \
        return i;                                                            \
    }

KERNEL(f16_kernel, load_f16, store_f16)
KERNEL(bf16_kernel, load_bf16, store_bf16)

int dcoll_half_vec(enum dcoll_half_vop op, bool bf16, const uint16_t *in,
                   uint16_t *io, int n)
{
    return bf16 ? bf16_kernel(op, in, io, n) : f16_kernel(op, in, io, n);
}

#define DIV_LOOP(load, store)                                                \
    for (; i + 8 <= n; i += 8)                                               \
        store(io + i, _mm256_div_ps(load(io + i), d))

VEC static int64_t div_kernel(bool bf16, uint16_t *io, int64_t n,
                              float divisor)
{
    __m256 d = _mm256_set1_ps(divisor);
    int64_t i = 0;
    if (bf16)
        DIV_LOOP(load_bf16, store_bf16);
    else
        DIV_LOOP(load_f16, store_f16);
    return i;
}

int64_t dcoll_half_vec_divide(bool bf16, uint16_t *io, int64_t n,
                              float divisor)
{
    return div_kernel(bf16, io, n, divisor);
}

#else /* not x86-64 with GCC or clang: the scalar loops do everything */

bool dcoll_half_vec_usable(void)
{
    return false;
}

int dcoll_half_vec(enum dcoll_half_vop op, bool bf16, const uint16_t *in,
                   uint16_t *io, int n)
{
    (void)op, (void)bf16, (void)in, (void)io, (void)n;
    return 0;
}

int64_t dcoll_half_vec_divide(bool bf16, uint16_t *io, int64_t n,
                              float divisor)
{
    (void)bf16, (void)io, (void)n, (void)divisor;
    return 0;
}
#endif
