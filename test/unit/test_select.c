/* GPU choice from the node's picture: every common launcher mapping of 8
 * ranks on a node of 8 GPUs over 2 NUMA nodes gets 8 distinct GPUs, near
 * ones where the mapping allows; more ranks than GPUs spread evenly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "select.h"

#define PCI(i) (0x170000u + ((uint32_t)(i) << 8))

/* n ranks, each seeing the node's ngpus GPUs (GPUs 0..ngpus/2-1 on NUMA 0,
 * the rest on 1), rank r bound to NUMA node numa[r]. */
static void node(dcoll_gpu_view_t *v, int n, int ngpus, const int *numa)
{
    for (int r = 0; r < n; r++) {
        memset(&v[r], 0, sizeof(v[r]));
        v[r].numa = numa ? numa[r] : -1;
        v[r].current = -1;
        v[r].ngpus = ngpus;
        for (int d = 0; d < ngpus; d++) {
            v[r].pci[d] = PCI(d);
            v[r].gpu_numa[d] = d < ngpus / 2 ? 0 : 1;
        }
    }
}

/* Every rank's physical GPU, distinct; how many are near. */
static int distinct(const dcoll_gpu_view_t *v, int n,
                    const struct dcoll_gpu_pick *p, const char *mapping)
{
    int nearby = 0;
    for (int a = 0; a < n; a++) {
        assert_true(p[a].device >= 0);
        assert_int_equal(p[a].sharers, 1);
        nearby += p[a].why == DCOLL_GPU_NEAR;
        for (int b = a + 1; b < n; b++)
            if (v[a].pci[p[a].device] == v[b].pci[p[b].device])
                fail_msg("%s: ranks %d and %d share GPU %#x", mapping, a, b,
                         (unsigned)v[a].pci[p[a].device]);
    }
    return nearby;
}

static void mappings(void **state)
{
    (void)state;
    dcoll_gpu_view_t v[16];
    struct dcoll_gpu_pick p[16];
    int by_socket[8], by_core[8], block[8];
    for (int r = 0; r < 8; r++) {
        by_socket[r] = r % 2;   /* Open MPI's default for np > 2, Slurm's
                                 * cyclic distribution */
        by_core[r] = 0;         /* 8 ranks fit on socket 0 */
        block[r] = r / 4;       /* ppr:4:socket */
    }
    node(v, 8, 8, by_socket);
    assert_int_equal(dcoll_assign_gpus(8, v, p), 0);
    assert_int_equal(distinct(v, 8, p, "by socket"), 8);
    assert_int_equal(p[0].device, 0);
    assert_int_equal(p[1].device, 4);
    assert_int_equal(p[2].device, 1);
    node(v, 8, 8, block);
    assert_int_equal(dcoll_assign_gpus(8, v, p), 0);
    assert_int_equal(distinct(v, 8, p, "block"), 8);
    for (int r = 0; r < 8; r++)
        assert_int_equal(p[r].device, r);
    node(v, 8, 8, by_core);
    assert_int_equal(dcoll_assign_gpus(8, v, p), 0);
    assert_int_equal(distinct(v, 8, p, "by core"), 4);
    node(v, 8, 8, NULL);   /* unbound: local rank order */
    assert_int_equal(dcoll_assign_gpus(8, v, p), 0);
    distinct(v, 8, p, "unbound");
    for (int r = 0; r < 8; r++) {
        assert_int_equal(p[r].device, r);
        assert_int_equal(p[r].why, DCOLL_GPU_FREE);
    }
    /* CUDA_VISIBLE_DEVICES per rank: each sees one GPU, its device 0. */
    node(v, 8, 8, by_socket);
    for (int r = 0; r < 8; r++) {
        v[r].ngpus = 1;
        v[r].pci[0] = PCI(7 - r);
        v[r].gpu_numa[0] = 7 - r < 4 ? 0 : 1;
    }
    assert_int_equal(dcoll_assign_gpus(8, v, p), 0);
    distinct(v, 8, p, "CUDA_VISIBLE_DEVICES per rank");
    /* 4 ranks by socket on 4 GPUs: the old rule's pair on GPU 0. */
    node(v, 4, 4, by_socket);
    assert_int_equal(dcoll_assign_gpus(4, v, p), 0);
    assert_int_equal(distinct(v, 4, p, "4 by socket"), 4);
}

static void overlapping_views(void **state)
{
    (void)state;
    /* Rank 0 sees GPUs A and B, rank 1 only A: rank 0 moves to B. */
    dcoll_gpu_view_t v[2];
    struct dcoll_gpu_pick p[2];
    node(v, 2, 2, NULL);
    v[1].ngpus = 1;
    assert_int_equal(dcoll_assign_gpus(2, v, p), 0);
    distinct(v, 2, p, "overlapping");
    assert_int_equal(v[0].pci[p[0].device], PCI(1));
    /* A GPU the program made current stands; others work round it. */
    node(v, 2, 2, NULL);
    v[1].current = 0;
    assert_int_equal(dcoll_assign_gpus(2, v, p), 0);
    assert_int_equal(p[1].device, 0);
    assert_int_equal(p[1].why, DCOLL_GPU_CURRENT);
    assert_int_equal(p[0].device, 1);
}

static void more_ranks_than_gpus(void **state)
{
    (void)state;
    dcoll_gpu_view_t v[16];
    struct dcoll_gpu_pick p[16];
    int numa[16];
    for (int r = 0; r < 16; r++)
        numa[r] = r % 2;
    node(v, 16, 8, numa);
    assert_int_equal(dcoll_assign_gpus(16, v, p), 0);
    int load[8] = {0};
    for (int r = 0; r < 16; r++) {
        assert_true(p[r].device >= 0 && p[r].device < 8);
        load[p[r].device]++;
        assert_int_equal(p[r].sharers, 2);
        /* Overflow ranks still share a GPU near them. */
        assert_int_equal(p[r].device < 4 ? 0 : 1, numa[r]);
    }
    for (int g = 0; g < 8; g++)
        assert_int_equal(load[g], 2);
    /* 3 ranks, 2 GPUs: one pair, one alone. */
    node(v, 3, 2, NULL);
    assert_int_equal(dcoll_assign_gpus(3, v, p), 0);
    assert_int_equal(p[2].why, DCOLL_GPU_SHARED);
    assert_int_equal(p[2].sharers, 2);
    /* No GPU: none. */
    node(v, 2, 0, NULL);
    assert_int_equal(dcoll_assign_gpus(2, v, p), 0);
    assert_int_equal(p[0].device, -1);
    assert_int_equal(p[0].why, DCOLL_GPU_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mappings),
        cmocka_unit_test(overlapping_views),
        cmocka_unit_test(more_ranks_than_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
