/* Choosing every local rank's GPU from the whole node's picture: no CUDA
 * here, so it is unit-tested anywhere. */
#ifndef DCOLL_GPU_SELECT_H
#define DCOLL_GPU_SELECT_H

#include "plugin_abi.h"

/* Why a rank got its GPU. */
enum dcoll_gpu_why {
    DCOLL_GPU_NONE,      /* it sees no GPU */
    DCOLL_GPU_CURRENT,   /* the program had made it current */
    DCOLL_GPU_NEAR,      /* a GPU of its own on its NUMA node */
    DCOLL_GPU_FREE,      /* a GPU of its own, not on its NUMA node (or
                          * placement unknown) */
    DCOLL_GPU_SHARED,    /* more ranks than GPUs: shared, evenly */
};

struct dcoll_gpu_pick {
    int device;          /* an ordinal of the rank's own view; -1 none */
    enum dcoll_gpu_why why;
    int sharers;         /* local ranks on that GPU, this one included */
};

/* The GPU of each of the n ranks of a node, from what each sees (views,
 * by local rank); every rank computes the same from the same views.
 * Ranks get distinct GPUs whenever a way to give them exists, whatever
 * the launcher's mapping or each rank's CUDA_VISIBLE_DEVICES: a GPU a
 * rank made current is its own first; then GPUs on each rank's NUMA node,
 * the i-th rank of a node taking its i-th free one; then any free GPU a
 * rank sees, moving earlier choices where that frees one; ranks left over
 * share the least used GPU they see. 0, or -1 without memory. */
int dcoll_assign_gpus(int n, const dcoll_gpu_view_t *views,
                      struct dcoll_gpu_pick *picks);

/* A short phrase for why, for dcoll-info and the debug output. */
const char *dcoll_gpu_why_text(enum dcoll_gpu_why why);

#endif
