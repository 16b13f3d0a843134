/* float16/bfloat16 conversions: exact against the compiler's _Float16 and
 * against hand-picked rounding cases. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "half.h"

static void half_roundtrip_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = dcoll_half_to_float((uint16_t)h);
        uint16_t back = dcoll_float_to_half(f);
        if (isnan(f))
            assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff));
        else
            assert_int_equal(back, h);
    }
}

#ifdef __FLT16_MAX__
static void half_matches_compiler(void **state)
{
    (void)state;
    /* Every float whose top 20 bits vary: rounding, subnormals, overflow. */
    for (uint32_t hi = 0; hi < (1u << 20); hi++) {
        uint32_t u = (hi << 12) | (hi & 0xfff);
        float f = dcoll_bits_float(u);
        if (isnan(f))
            continue;
        _Float16 ref = (_Float16)f;
        uint16_t rb;
        memcpy(&rb, &ref, 2);
        assert_int_equal(dcoll_float_to_half(f), rb);
        assert_true(dcoll_half_to_float(rb) == (float)ref);
    }
}
#endif

static void half_cases(void **state)
{
    (void)state;
    assert_int_equal(dcoll_float_to_half(1.0f), 0x3c00);
    assert_int_equal(dcoll_float_to_half(-2.0f), 0xc000);
    assert_int_equal(dcoll_float_to_half(65504.0f), 0x7bff);
    assert_int_equal(dcoll_float_to_half(65520.0f), 0x7c00); /* rounds up */
    assert_int_equal(dcoll_float_to_half(0x1p-24f), 0x0001);   /* subnormal */
    assert_int_equal(dcoll_float_to_half(0x1p-26f), 0x0000);   /* underflow */
    assert_int_equal(dcoll_float_to_half(1.0f + 0x1p-11f), 0x3c00); /* tie */
    assert_int_equal(dcoll_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_true(dcoll_half_to_float(0x7c00) == INFINITY);
}

static void bf16_cases(void **state)
{
    (void)state;
    assert_int_equal(dcoll_float_to_bf16(1.0f), 0x3f80);
    assert_true(dcoll_bf16_to_float(0x3f80) == 1.0f);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1). */
    assert_int_equal(dcoll_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(dcoll_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_int_equal(dcoll_float_to_bf16(INFINITY), 0x7f80);
    uint16_t nan = dcoll_float_to_bf16(NAN);
    assert_true((nan & 0x7f80) == 0x7f80 && (nan & 0x7f));
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = dcoll_bf16_to_float((uint16_t)h);
        if (!isnan(f))
            assert_int_equal(dcoll_float_to_bf16(f), h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(half_roundtrip_all),
#ifdef __FLT16_MAX__
        cmocka_unit_test(half_matches_compiler),
#endif
        cmocka_unit_test(half_cases),
        cmocka_unit_test(bf16_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
