/* Teams of ranks that share a GPU (lib/gpu/team.c): every rank computes
 * the same teams from the same identities, led by their lowest rank,
 * whatever order the identities come in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "team.h"

/* Identities from small numbers: rank r's GPU is map[r]. */
static void make(const int *map, int n, struct dcoll_teams *t)
{
    unsigned char ids[64][16];
    memset(ids, 0, sizeof(ids));
    for (int r = 0; r < n; r++)
        ids[r][3] = (unsigned char)map[r];
    assert_int_equal(dcoll_teams_make(&ids[0][0], 16, n, t), 0);
}

static void one_gpu(void **state)
{
    (void)state;
    struct dcoll_teams t;
    make((int[]){0, 0, 0, 0}, 4, &t);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.size[0], 4);
    assert_int_equal(t.leader[0], 0);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(t.of[r], 0);
        assert_int_equal(t.index[r], r);
    }
    assert_true(t.equal);
    dcoll_teams_free(&t);
}

/* NCCL's case: one rank a GPU. */
static void own_gpus(void **state)
{
    (void)state;
    struct dcoll_teams t;
    make((int[]){0, 1, 2}, 3, &t);
    assert_int_equal(t.n, 3);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(t.size[k], 1);
        assert_int_equal(t.leader[k], k);
    }
    assert_true(t.equal);
    dcoll_teams_free(&t);
}

/* Cyclic and blocked placements, and unequal teams. */
static void mixed(void **state)
{
    (void)state;
    struct dcoll_teams t;
    int members[4];
    make((int[]){7, 3, 7, 3}, 4, &t);   /* cyclic: 0,2 and 1,3 */
    assert_int_equal(t.n, 2);
    assert_int_equal(t.leader[0], 0);
    assert_int_equal(t.leader[1], 1);
    dcoll_teams_members(&t, 1, members);
    assert_int_equal(members[0], 1);
    assert_int_equal(members[1], 3);
    assert_int_equal(t.index[3], 1);
    assert_true(t.equal);
    dcoll_teams_free(&t);
    make((int[]){5, 5, 5, 9, 9}, 5, &t);   /* 3 and 2 */
    assert_int_equal(t.n, 2);
    assert_int_equal(t.size[0], 3);
    assert_int_equal(t.size[1], 2);
    assert_int_equal(t.leader[1], 3);
    assert_false(t.equal);
    dcoll_teams_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_gpu),
        cmocka_unit_test(own_gpus),
        cmocka_unit_test(mixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
