/* Plugins of ABI version 12 (plugin_abi_v12.h): the prefix of the current
 * table. Taken as they are; copy_shape and nccl_exchange, which version
 * 13 appended, stay NULL: strided copies then go row by row, and the
 * neighbourhood calls on GPU buffers are staged. */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v12(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 12,
                               sizeof(struct dcoll_cuda_plugin_v12));
}
