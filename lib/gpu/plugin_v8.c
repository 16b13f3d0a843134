/* Plugins of ABI version 8 (plugin_abi_v8.h): the prefix of the current
 * table. Taken as they are; gpu_view and nccl_check, which version 9
 * appended, stay NULL: the core then asks select_device for this rank's
 * GPU alone, and health is seen only where a call waits. */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v8(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 8,
                               sizeof(struct dcoll_cuda_plugin_v8));
}
