/* The AVX2/F16C kernels against the scalar loops they stand in for: every
 * float16 and bfloat16 bit pattern as an operand, through every op and the
 * AVG division, bit for bit (a NaN need only stay a NaN). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
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

/* The scalar expressions of mpi_layer/halfops.c. */
static float scalar(enum dcoll_half_vop op, float a, float b)
{
    switch (op) {
    case DCOLL_HALF_SUM: return a + b;
    case DCOLL_HALF_PROD: return a * b;
    case DCOLL_HALF_MIN: return (a != a || a < b) ? a : b;
    default: return (a != a || a > b) ? a : b;
    }
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
