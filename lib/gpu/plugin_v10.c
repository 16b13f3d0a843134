/* Plugins of ABI version 10 (plugin_abi_v10.h): the prefix of the current
 * table. Taken as they are; mem_range, which version 11 appended, stays
 * NULL, and the IPC transport then copies every buffer through its
 * scratch (no zero copy for plans). */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v10(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 10,
                               sizeof(struct dcoll_cuda_plugin_v10));
}
