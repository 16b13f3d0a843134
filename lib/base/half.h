/* float16 and bfloat16 <-> float32, round to nearest even, NaN kept.
 * Bit-exact and branch-light so the reduction loops vectorize. */
#ifndef DCOLL_LIB_HALF_H
#define DCOLL_LIB_HALF_H

#include <stdint.h>
#include <string.h>

static inline float dcoll_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint32_t dcoll_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float dcoll_bf16_to_float(uint16_t h)
{
    return dcoll_bits_float((uint32_t)h << 16);
}

static inline uint16_t dcoll_float_to_bf16(float f)
{
    uint32_t u = dcoll_float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet the NaN */
    u += 0x7fffu + ((u >> 16) & 1u);         /* ties go to even */
    return (uint16_t)(u >> 16);
}

static inline float dcoll_half_to_float(uint16_t h)
{
    /* Move exponent and mantissa into place, rebias, then fix the two
     * special exponents: all ones (inf/NaN) and zero (subnormal). */
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t exp = o & (0x7c00u << 13);
    o += (127u - 15u) << 23;
    if (exp == (0x7c00u << 13))
        o += (128u - 16u) << 23;
    else if (exp == 0)
        o = dcoll_float_bits(dcoll_bits_float(o + (1u << 23)) -
                             dcoll_bits_float(113u << 23));
    return dcoll_bits_float(o | ((uint32_t)(h & 0x8000u) << 16));
}

static inline uint16_t dcoll_float_to_half(float f)
{
    uint32_t x = dcoll_float_bits(f);
    uint32_t sign = x & 0x80000000u;
    uint16_t o;
    x ^= sign;
    if (x >= (143u << 23)) {            /* >= 65536, inf or NaN */
        o = x > (255u << 23) ? 0x7e00 : 0x7c00;
    } else if (x < (113u << 23)) {      /* result is subnormal or zero */
        /* Adding 0.5 lets the FPU round the bits into place. */
        const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
        o = (uint16_t)(dcoll_float_bits(dcoll_bits_float(x) +
                                        dcoll_bits_float(magic)) - magic);
    } else {
        uint32_t odd = (x >> 13) & 1u;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        o = (uint16_t)(x >> 13);
    }
    return (uint16_t)(o | (sign >> 16));
}

#endif
