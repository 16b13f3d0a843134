/* Plugins of ABI version 9 (plugin_abi_v9.h): the prefix of the current
 * table. Taken as they are; the IPC and reduction calls version 10
 * appended stay NULL, and groups whose ranks share a GPU then stage as
 * before. */
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v9(const void *entry_table)
{
    return dcoll_plugin_prefix(&table, entry_table, 9,
                               sizeof(struct dcoll_cuda_plugin_v9));
}
