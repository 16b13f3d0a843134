/* Plugins of ABI version 7 (plugin_abi_v7.h): version 6's table, whose
 * mem_kind may answer DCOLL_MEM_UNKNOWN. Taken as they are, the prefix of
 * the current table; nccl_split, which version 8 appended, stays NULL, so
 * each group makes a communicator of its own (nccl.c). */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v7(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 7,
                               sizeof(struct dcoll_cuda_plugin_v6));
}
