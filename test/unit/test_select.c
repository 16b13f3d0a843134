/* GPU choice: near GPUs first, ranks spread over them in turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "select.h"

static void choose(void **state)
{
    (void)state;
    const int two_nodes[4] = {0, 0, 1, 1};
    /* No GPU: none. */
    assert_int_equal(dcoll_choose_gpu(0, two_nodes, 0, 0), -1);
    /* Ranks on NUMA node 1 get GPUs 2 and 3 in turn. */
    assert_int_equal(dcoll_choose_gpu(4, two_nodes, 1, 0), 2);
    assert_int_equal(dcoll_choose_gpu(4, two_nodes, 1, 1), 3);
    assert_int_equal(dcoll_choose_gpu(4, two_nodes, 1, 2), 2);
    /* Node 0: GPUs 0 and 1. */
    assert_int_equal(dcoll_choose_gpu(4, two_nodes, 0, 3), 1);
    /* Binding unknown, or a node without GPUs: all GPUs in turn. */
    assert_int_equal(dcoll_choose_gpu(4, two_nodes, -1, 6), 2);
    assert_int_equal(dcoll_choose_gpu(4, two_nodes, 7, 5), 1);
    /* GPU placement unknown: the same. */
    const int unknown[2] = {-1, -1};
    assert_int_equal(dcoll_choose_gpu(2, unknown, 0, 3), 1);
    /* Several ranks, one GPU: all share it. */
    const int one[1] = {0};
    for (int r = 0; r < 4; r++)
        assert_int_equal(dcoll_choose_gpu(1, one, 0, r), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(choose)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
