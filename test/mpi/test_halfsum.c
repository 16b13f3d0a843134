/* float16 and bfloat16 sums of non-trivial values against a float32
 * reference computed from the same rounded inputs: the result must be the
 * reference rounded once more, within the rounding of each partial sum. */
#include "testutil.h"

int t_rank, t_failures;

static double input(int rank, int i)
{
    /* Values with full mantissas, mixed signs and magnitudes. */
    return sin(0.37 * i + rank) * (1 + (i % 17)) * (i % 3 ? 1.0 : 0.01);
}

int main(void)
{
    CHECK_OK(dcoll_init(NULL));
    int size;
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &size);
    enum { N = 4099 };
    static const dcoll_dtype_t types[] = {DCOLL_FLOAT16, DCOLL_BFLOAT16};
    /* Relative error allowed: one rounding per rank plus the last. */
    static const double eps[] = {0x1p-11, 0x1p-8};
    for (int k = 0; k < 2; k++) {
        dcoll_dtype_t dt = types[k];
        uint16_t *b = malloc(N * 2);
        for (int i = 0; i < N; i++)
            t_set(b, dt, i, input(t_rank, i));
        CHECK_OK(dcoll_all_reduce(NULL, b, b, N, dt, DCOLL_SUM, NULL, NULL));
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
    int rc = t_finish("test_halfsum");
    CHECK_OK(dcoll_finalize());
    return rc;
}
