/* Inside the GPU layer: the kinds its transports among a group's ranks
 * (NCCL, IPC) run, from the list the plugin's ABI names, so that the
 * core's NCCL transport and the plugin's switch agree by construction.
 * Not in gpu.h, which the core reads and which must not see the plugin's
 * ABI. */
#ifndef DCOLL_GPU_KINDS_H
#define DCOLL_GPU_KINDS_H

#include <stdbool.h>
#include "base.h"
#include "plugin_abi.h"

/* The kinds NCCL and IPC run among the group's ranks: those the plugin's
 * ABI names (DCOLL_GPU_COLL_KINDS, plugin_abi.h), no other. */
static inline bool dcoll_gpu_coll_kind(enum dcoll_coll_kind kind)
{
    switch (kind) {
#define DCOLL_GPU_CASE_(k) case DCOLL_COLL_##k:
    DCOLL_GPU_COLL_KINDS(DCOLL_GPU_CASE_)
#undef DCOLL_GPU_CASE_
        return true;
    default:
        return false;
    }
}

#endif
