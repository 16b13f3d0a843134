/* The CUDA plugin ABI, version 7: frozen once a version 8 exists. Version
 * 6's table, the same layout, with one answer more: mem_kind may say
 * DCOLL_MEM_UNKNOWN where CUDA could not tell where a pointer lives
 * (cudaPointerGetAttributes failed: memory of a context this process
 * cannot see, or CUDA in an error state), with last_error() saying what
 * CUDA reported. A version 6 plugin answered host there, and a device
 * pointer could reach an MPI that is not CUDA-aware. Entry point
 * dcoll_cuda_plugin_v7. */
#ifndef DCOLL_PLUGIN_ABI_V7_H
#define DCOLL_PLUGIN_ABI_V7_H

#include "plugin_abi_v6.h"

#define DCOLL_CUDA_PLUGIN_V7_ENTRY "dcoll_cuda_plugin_v7"

/* mem_kind's answer when CUDA failed to say (version 7 on). */
#define DCOLL_MEM_UNKNOWN ((enum dcoll_mem_kind)4)

#endif
