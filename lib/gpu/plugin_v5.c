/* Plugins of ABI version 5 (plugin_abi_v5.h). Its calls are the current
 * ones; the multi-GPU calls version 6 appended stay NULL, so multi-buffer
 * calls on such a plugin stage (multi.c). */
#include <string.h>
#include "plugin_adapt.h"

static dcoll_cuda_plugin_t table;

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v5(const void *entry_table)
{
    const struct dcoll_cuda_plugin_v5 *p = entry_table;
    if (!p || p->abi != 5)
        return NULL;
    memset(&table, 0, sizeof(table));
    table.abi = DCOLL_PLUGIN_ABI;
    DCOLL_PLUGIN_COPY_SHARED(&table, p);
    table.nccl_coll = p->nccl_coll;
    return &table;
}
