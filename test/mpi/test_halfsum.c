/* float16 and bfloat16 sums of non-trivial values against a float32
 * reference computed from the same rounded inputs: the result must be the
 * reference rounded once more, within the rounding of each partial sum.
 * And their one NaN rule for min and max (lib/base/kernels.c), through
 * both paths that apply it: MPI's user op across ranks, and the local
 * fold of the multi-buffer forms within a rank. Inputs follow the rank
 * in the world; --sizes (test/sizes.h) runs every size inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

static double input(int rank, int i)
{
    /* Values with full mantissas, mixed signs and magnitudes. */
    return sin(0.37 * i + rank) * (1 + (i % 17)) * (i % 3 ? 1.0 : 0.01);
}

static void body(void)
{
    int size = t_w.n, me = t_w.me;
    enum { N = 4099 };
    static const dcoll_dtype_t types[] = {DCOLL_FLOAT16, DCOLL_BFLOAT16};
    /* Relative error allowed: one rounding per rank plus the last. */
    static const double eps[] = {0x1p-11, 0x1p-8};
    for (int k = 0; k < 2; k++) {
        dcoll_dtype_t dt = types[k];
        uint16_t *b = malloc(N * 2);
        for (int i = 0; i < N; i++)
            t_set(b, dt, i, input(me, i));
        CHECK_OK(dcoll_all_reduce(T_WORLD, b, b, N, dt, DCOLL_SUM, NULL,
                                  NULL));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float ref = 0, mag = 0;
            for (int r = 0; r < size; r++) {
                uint64_t h = 0;
                t_set(&h, dt, 0, input(r, i));
                float x = (float)t_get(&h, dt, 0);
                ref += x;
                mag += fabsf(x);
            }
            double got = t_get(b, dt, i);
            /* Count every miss; describe only the first. */
            if (fabs(got - ref) > eps[k] * size * mag + 1e-7 && ++bad == 1)
                CHECK(0, "%s sum [%d] = %g, float32 reference %g",
                      t_dtype_names[dt], i, got, ref);
        }
        CHECK(bad == 0, "%s: %d of %d sums off the float32 reference",
              t_dtype_names[dt], bad, N);
        free(b);
    }
    /* NaN where rank r (i % size == r, every other i) or buffer j of
     * three (i % 3 == j) put one in, ordinary values elsewhere: a NaN
     * from any rank or buffer comes out of min and max, wherever it is. */
    for (int k = 0; k < 2; k++) {
        dcoll_dtype_t dt = types[k];
        for (dcoll_op_t op = DCOLL_MIN; op <= DCOLL_MAX; op++) {
            enum { M = 61 };
            uint16_t one[M], three[3][M];
            void *bufs[3] = {three[0], three[1], three[2]};
            for (int i = 0; i < M; i++) {
                int nan = i % 2 == 0 && i / 2 % size == me;
                t_set(one, dt, i, nan ? NAN : (double)((i + me) % 5));
                for (int j = 0; j < 3; j++)
                    t_set(three[j], dt, i,
                          i % 3 == j && i % 2 ? NAN
                                              : (double)((i + j + me) % 5));
            }
            CHECK_OK(dcoll_all_reduce(T_WORLD, one, one, M, dt, op, NULL,
                                      NULL));
            CHECK_OK(dcoll_all_reduce_multi(T_WORLD, bufs, 3, M, dt, op, NULL,
                                            NULL));
            for (int i = 0; i < M; i++) {
                double lo = 1e9, hi = -1e9;
                for (int r = 0; r < size; r++)
                    for (int j = 0; j < 3; j++) {
                        double v = (i + j + r) % 5;
                        lo = v < lo ? v : lo;
                        hi = v > hi ? v : hi;
                    }
                double w3 = op == DCOLL_MIN ? lo : hi, w1;
                /* The single-buffer call's values: (i + r) % 5. */
                lo = 1e9, hi = -1e9;
                for (int r = 0; r < size; r++) {
                    double v = (i + r) % 5;
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
                w1 = op == DCOLL_MIN ? lo : hi;
                double g1 = t_get(one, dt, i), g3 = t_get(three[0], dt, i);
                CHECK(i % 2 == 0 ? g1 != g1 : g1 == w1,
                      "%s all_reduce %s [%d] = %g (NaN from rank %d)",
                      t_dtype_names[dt], op == DCOLL_MIN ? "min" : "max", i,
                      g1, i % 2 == 0 ? i / 2 % size : -1);
                CHECK(i % 2 ? g3 != g3 : g3 == w3,
                      "%s all_reduce_multi %s [%d] = %g (NaN in buffer %d)",
                      t_dtype_names[dt], op == DCOLL_MIN ? "min" : "max", i,
                      g3, i % 2 ? i % 3 : -1);
            }
        }
    }
}

int main(int argc, char **argv)
{
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_rank(NULL, &t_rank);
    t_sizes(argc, argv, body);
    int rc = t_finish("test_halfsum");
    CHECK_OK(dcoll_finalize());
    return rc;
}
