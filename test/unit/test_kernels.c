/* The reduction kernels of lib/base/kernels.c. The AVX2/F16C kernels
 * against the scalar rule they stand in for: every float16 and bfloat16
 * bit pattern as an operand, through every op and the AVG division, bit
 * for bit (a NaN need only stay a NaN). And the one NaN rule: a NaN on
 * either side of min and max comes out, through dcoll_fold, whether the
 * vector kernels run or not. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "base.h"
#include "half.h"
#include "halfvec.h"

static float to_f(uint16_t h, bool bf16)
{
    return bf16 ? dcoll_bf16_to_float(h) : dcoll_half_to_float(h);
}

static uint16_t from_f(float f, bool bf16)
{
    return bf16 ? dcoll_float_to_bf16(f) : dcoll_float_to_half(f);
}

/* The rule the kernels share (kernels.c), by vector op. */
static float scalar(enum dcoll_half_vop op, float a, float b)
{
    static const dcoll_op_t ops[] = {
        [DCOLL_HALF_SUM] = DCOLL_SUM, [DCOLL_HALF_PROD] = DCOLL_PRODUCT,
        [DCOLL_HALF_MIN] = DCOLL_MIN, [DCOLL_HALF_MAX] = DCOLL_MAX,
    };
    return dcoll_half_rule(ops[op], a, b);
}

static void same(uint16_t got, uint16_t want, bool bf16, uint16_t a,
                 uint16_t b, int op)
{
    bool nan_got = to_f(got, bf16) != to_f(got, bf16);
    bool nan_want = to_f(want, bf16) != to_f(want, bf16);
    if (nan_got && nan_want)
        return;
    if (got != want)
        fail_msg("%s op %d: 0x%04x, 0x%04x -> 0x%04x, scalar 0x%04x",
                 bf16 ? "bfloat16" : "float16", op, a, b, got, want);
}

enum { N = 1 << 16 };

static void kernels_match(void **state)
{
    (void)state;
    if (!dcoll_half_vec_usable())
        skip();
    uint16_t *in = malloc(N * 2), *io = malloc(N * 2), *orig = malloc(N * 2);
    srand(7);
    for (int bf = 0; bf < 2; bf++) {
        for (int op = DCOLL_HALF_SUM; op <= DCOLL_HALF_MAX; op++) {
            /* Every pattern against a shifted copy of every pattern, and
             * against random ones: specials meet ordinary values too. */
            for (int pass = 0; pass < 4; pass++) {
                for (uint32_t i = 0; i < N; i++) {
                    in[i] = (uint16_t)i;
                    orig[i] = pass == 0 ? (uint16_t)i
                              : pass == 1 ? (uint16_t)(i * 40503u + 17)
                                          : (uint16_t)rand();
                    io[i] = orig[i];
                }
                int done = dcoll_half_vec((enum dcoll_half_vop)op, bf, in,
                                          io, N - 3);
                assert_int_equal(done, (N - 3) & ~7);
                for (int i = 0; i < done; i++) {
                    float r = scalar((enum dcoll_half_vop)op, to_f(in[i], bf),
                                     to_f(orig[i], bf));
                    same(io[i], from_f(r, bf), bf, in[i], orig[i], op);
                }
                for (int i = done; i < N; i++)
                    assert_int_equal(io[i], orig[i]); /* left for scalar */
            }
        }
        for (int d = 2; d <= 7; d++) {
            for (uint32_t i = 0; i < N; i++)
                io[i] = (uint16_t)i;
            int64_t done = dcoll_half_vec_divide(bf, io, N, (float)d);
            assert_int_equal(done, N);
            for (uint32_t i = 0; i < N; i++)
                same(io[i], from_f(to_f((uint16_t)i, bf) / (float)d, bf),
                     bf, (uint16_t)i, (uint16_t)d, 9);
        }
    }
    free(in);
    free(io);
    free(orig);
}

/* NaN at element i of in (i % 3 == 1) or of io (i % 3 == 2), beside
 * ordinary values: min and max give NaN exactly there, for both types,
 * lengths that leave a scalar tail, with and without the vector kernels. */
static void nan_rule(void **state)
{
    (void)state;
    enum { M = 45 };
    for (int vec = 0; vec < 2; vec++) {
        if (vec)
            unsetenv("DCOLL_NO_HALF_VEC");
        else
            setenv("DCOLL_NO_HALF_VEC", "1", 1);
        dcoll_kernels_setup();
        for (int bf = 0; bf < 2; bf++) {
            dcoll_dtype_t dt = bf ? DCOLL_BFLOAT16 : DCOLL_FLOAT16;
            for (dcoll_op_t op = DCOLL_MIN; op <= DCOLL_MAX; op++) {
                uint16_t in[M], io[M];
                for (int i = 0; i < M; i++) {
                    in[i] = from_f(i % 3 == 1 ? NAN : (float)(i % 5), bf);
                    io[i] = from_f(i % 3 == 2 ? NAN : (float)(i % 4), bf);
                }
                dcoll_fold(io, in, M, dt, op);
                for (int i = 0; i < M; i++) {
                    float got = to_f(io[i], bf);
                    float a = (float)(i % 5), b = (float)(i % 4);
                    float want = op == DCOLL_MIN ? (a < b ? a : b)
                                                 : (a > b ? a : b);
                    if (i % 3)
                        assert_true(got != got);
                    else
                        assert_true(got == want);
                }
            }
        }
    }
    unsetenv("DCOLL_NO_HALF_VEC");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_match),
        cmocka_unit_test(nan_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
