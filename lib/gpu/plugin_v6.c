/* Plugins of ABI version 6 (plugin_abi_v6.h): the prefix of the current
 * layout, whose mem_kind never answers DCOLL_MEM_UNKNOWN (it said host
 * where CUDA failed). Taken as they are, with the current version
 * number; nccl_split stays NULL. */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v6(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 6,
                               sizeof(struct dcoll_cuda_plugin_v6));
}
