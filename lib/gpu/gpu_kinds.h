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
 * ABI names (DCOLL_GPU_COLL_KINDS, plugin_abi.h), no other. Each has the
 * same number inside as in the public dcoll_call_kind_t. */
#define DCOLL_GPU_SAME_(k)                                                  \
    _Static_assert((int)DCOLL_COLL_##k == (int)DCOLL_KIND_##k,              \
                   "kind " #k " has another number inside");
DCOLL_GPU_COLL_KINDS(DCOLL_GPU_SAME_)
#undef DCOLL_GPU_SAME_

static inline bool dcoll_gpu_coll_kind(enum dcoll_coll_kind kind)
{
    return dcoll_gpu_kind_listed((int)kind);
}

#endif
