/* Counts above INT_MAX: 2^31 + 3 int8 elements (about 2.1 GB) through
 * all_reduce (chunked), broadcast and send/recv (derived types), between
 * one pair of ranks. Run under mpirun -n 2. */
#include <limits.h>
#include <string.h>
#include "testutil.h"

int t_rank, t_failures;

#define N ((int64_t)INT_MAX + 4)

/* Spot-check a few places, the chunk seams and the very end included. */
static void spot(const int8_t *b, int8_t (*want)(int64_t), const char *what)
{
    static const int64_t at[] = {0, 1, (INT64_C(1) << 30) - 1,
                                 INT64_C(1) << 30, INT_MAX - 1, INT_MAX,
                                 N - 2, N - 1};
    for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++)
        CHECK(b[at[k]] == want(at[k]), "%s: [%lld] = %d, want %d", what,
              (long long)at[k], b[at[k]], want(at[k]));
}

static int8_t pattern(int64_t i) { return (int8_t)(i % 61); }
static int8_t doubled(int64_t i) { return (int8_t)(2 * (i % 61)); }

/* b[i] = fn(i) for all N: fn's period is 61, so its first period is
 * written, then copied onto itself doubling (a byte loop with a modulo
 * took most of the test's time, under AddressSanitizer most of all). */
static void fill(int8_t *b, int8_t (*fn)(int64_t))
{
    for (int64_t i = 0; i < 61; i++)
        b[i] = fn(i);
    for (int64_t len = 61; len < N; len *= 2)
        memcpy(b + len, b, (size_t)(len < N - len ? len : N - len));
}

int main(void)
{
    CHECK_OK(dcoll_init(NULL));
    int size;
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &size);
    if (size != 2) {
        if (t_rank == 0)
            printf("test_bigcount needs exactly 2 ranks, has %d\n", size);
        dcoll_finalize();
        return 77;
    }
    int8_t *b = malloc((size_t)N);
    if (!b) {
        printf("no memory for %lld bytes: skipping\n", (long long)N);
        dcoll_finalize();
        return 77;
    }
    fill(b, pattern);
    CHECK_OK(dcoll_all_reduce(NULL, b, b, N, DCOLL_INT8, DCOLL_SUM, NULL,
                              NULL));
    spot(b, doubled, "all_reduce");

    if (t_rank == 1)
        memset(b, 0, (size_t)N);
    else
        fill(b, pattern);
    dcoll_work_t *w = NULL;
    CHECK_OK(dcoll_broadcast(NULL, b, N, DCOLL_INT8, 0, NULL, &w));
    CHECK_OK(dcoll_work_wait(w));
    CHECK_OK(dcoll_work_free(&w));
    spot(b, pattern, "broadcast");

    if (t_rank == 0) {
        fill(b, doubled);
        CHECK_OK(dcoll_send(NULL, b, N, DCOLL_INT8, 1, 1, NULL, NULL));
    } else {
        int src = -1;
        memset(b, 0, (size_t)N);
        CHECK_OK(dcoll_recv(NULL, b, N, DCOLL_INT8, DCOLL_ANY_SOURCE, 1,
                            NULL, NULL, &src));
        CHECK(src == 0, "source %d", src);
        spot(b, doubled, "send/recv");
    }
    free(b);
    int rc = t_finish("test_bigcount");
    CHECK_OK(dcoll_finalize());
    return rc;
}
