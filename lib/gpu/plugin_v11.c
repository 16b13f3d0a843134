/* Plugins of ABI version 11 (plugin_abi_v11.h): the prefix of the current
 * table. Taken as they are; nccl_shrink, which version 12 appended, stays
 * NULL, and a shrunk group then makes a fresh NCCL communicator at its
 * first GPU call. */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v11(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 11,
                               sizeof(struct dcoll_cuda_plugin_v11));
}
