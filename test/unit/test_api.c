/* The API without MPI running: status strings, last error, versions,
 * dtype sizes, and every call before init refused with its message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "dcoll/dcoll.h"

static void status_strings(void **state)
{
    (void)state;
    for (int s = 0; s < DCOLL_STATUS_COUNT_; s++) {
        const char *t = dcoll_status_string((dcoll_status_t)s);
        assert_non_null(t);
        assert_string_not_equal(t, "unknown status");
    }
    assert_string_equal(dcoll_status_string((dcoll_status_t)-1),
                        "unknown status");
    assert_string_equal(dcoll_status_string(DCOLL_STATUS_COUNT_),
                        "unknown status");
}

static void versions(void **state)
{
    (void)state;
    int a = -1, b = -1, c = -1;
    assert_int_equal(dcoll_version(&a, &b, &c), DCOLL_SUCCESS);
    assert_int_equal(a, DCOLL_API_VERSION_MAJOR);
    assert_int_equal(b, DCOLL_API_VERSION_MINOR);
    assert_int_equal(c, DCOLL_API_VERSION_PATCH);
    assert_int_equal(dcoll_version(NULL, NULL, NULL), DCOLL_SUCCESS);
}

static void dtype_sizes(void **state)
{
    (void)state;
    /* logical: 4, gfortran's default LOGICAL (fortran-sizes holds it to
     * the compiler's); float64int: a double and an int, padded. */
    static const size_t want[DCOLL_DTYPE_COUNT_] = {
        1, 1, 4, 4, 8, 8, 2, 2, 4, 8, 1, 4, 8, 16, 8, 16, 8, 8, 16};
    for (int t = 0; t < DCOLL_DTYPE_COUNT_; t++) {
        size_t s = 0;
        assert_int_equal(dcoll_dtype_size((dcoll_dtype_t)t, &s),
                         DCOLL_SUCCESS);
        assert_int_equal(s, want[t]);
    }
    size_t s;
    assert_int_equal(dcoll_dtype_size(DCOLL_DTYPE_COUNT_, &s),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dcoll_last_error(), "dtype 19"));
    /* The pair structs are the pair types' elements: MPI's layout. */
    assert_int_equal(sizeof(dcoll_float32_int_t), want[DCOLL_FLOAT32_INT]);
    assert_int_equal(sizeof(dcoll_float64_int_t), want[DCOLL_FLOAT64_INT]);
    assert_int_equal(sizeof(dcoll_int32_int_t), want[DCOLL_INT32_INT]);
    assert_int_equal(offsetof(dcoll_float64_int_t, index), sizeof(double));
    assert_int_equal(offsetof(dcoll_float32_int_t, index), sizeof(float));
}

#define REFUSED(call)                                                        \
    do {                                                                     \
        assert_int_equal((call), DCOLL_ERR_NOT_INITIALIZED);                 \
        assert_non_null(strstr(dcoll_last_error(), "dcoll_init"));           \
    } while (0)

static void before_init(void **state)
{
    (void)state;
    dcoll_group_t *g = NULL;
    dcoll_work_t *w = NULL;
    int x, done;
    const char *name;
    char b[16];
    void *bufs[1] = {b};
    const void *cbufs[1] = {b};
    int64_t counts[1] = {1};
    REFUSED(dcoll_finalize());
    REFUSED(dcoll_group_world(&g));
    REFUSED(dcoll_new_group(&g, NULL, 0, NULL));
    REFUSED(dcoll_group_destroy(&g));
    REFUSED(dcoll_group_rank(NULL, &x));
    REFUSED(dcoll_group_size(NULL, &x));
    REFUSED(dcoll_group_global_rank(NULL, 0, &x));
    REFUSED(dcoll_group_group_rank(NULL, 0, &x));
    REFUSED(dcoll_group_backend(NULL, &name));
    REFUSED(dcoll_group_comm(NULL, &x));
    REFUSED(dcoll_local_rank(&x, &x));
    REFUSED(dcoll_backend_status("mpi", &x, NULL));
    REFUSED(dcoll_device(&x));
    REFUSED(dcoll_broadcast(NULL, b, 1, DCOLL_INT8, 0, NULL, NULL));
    REFUSED(dcoll_all_reduce(NULL, b, b, 1, DCOLL_INT8, DCOLL_SUM, NULL,
                             NULL));
    REFUSED(dcoll_reduce(NULL, b, b, 1, DCOLL_INT8, DCOLL_SUM, 0, NULL,
                         NULL));
    REFUSED(dcoll_all_gather(NULL, b, b, 1, DCOLL_INT8, NULL, NULL));
    REFUSED(dcoll_gather(NULL, b, b, 1, DCOLL_INT8, 0, NULL, NULL));
    REFUSED(dcoll_scatter(NULL, b, b, 1, DCOLL_INT8, 0, NULL, NULL));
    REFUSED(dcoll_reduce_scatter(NULL, b, b, 1, DCOLL_INT8, DCOLL_SUM, NULL,
                                 NULL));
    REFUSED(dcoll_all_to_all(NULL, b, b, 1, DCOLL_INT8, NULL, NULL));
    REFUSED(dcoll_barrier(NULL, NULL, &w));
    REFUSED(dcoll_send(NULL, b, 1, DCOLL_INT8, 0, 0, NULL, NULL));
    REFUSED(dcoll_recv(NULL, b, 1, DCOLL_INT8, 0, 0, NULL, NULL, &x));
    REFUSED(dcoll_isend(NULL, b, 1, DCOLL_INT8, 0, 0, NULL, &w));
    REFUSED(dcoll_irecv(NULL, b, 1, DCOLL_INT8, 0, 0, NULL, &w));
    REFUSED(dcoll_all_reduce_coalesced(NULL, bufs, counts, 1, DCOLL_INT8,
                                       DCOLL_SUM, NULL, NULL));
    REFUSED(dcoll_all_gather_coalesced(NULL, cbufs, bufs, counts, 1,
                                       DCOLL_INT8, NULL, NULL));
    REFUSED(dcoll_work_wait(w));
    REFUSED(dcoll_work_test(w, &done));
    REFUSED(dcoll_work_source(w, &x));
    int flag = -1;
    assert_int_equal(dcoll_initialized(&flag), DCOLL_SUCCESS);
    assert_int_equal(flag, 0);
}

static void last_error_per_thread(void **state)
{
    (void)state;
    /* A success does not clear the message; a failure replaces it. */
    size_t s;
    dcoll_dtype_size((dcoll_dtype_t)77, &s);
    assert_non_null(strstr(dcoll_last_error(), "dtype 77"));
    dcoll_dtype_size(DCOLL_INT8, &s);
    assert_non_null(strstr(dcoll_last_error(), "dtype 77"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_strings),
        cmocka_unit_test(versions),
        cmocka_unit_test(dtype_sizes),
        cmocka_unit_test(before_init),
        cmocka_unit_test(last_error_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
