/* Plugins of ABI version 4 (plugin_abi_v4.h): version 5's calls, but
 * nccl_coll reads the core's call descriptor as it was laid out then.
 * The shim hands it a record of that layout of its own, filled from the
 * current call, so that a v4 plugin reads every field where it was
 * (in_place at offset 48) whatever the core's descriptor has become. */
#include <stddef.h>
#include <string.h>
#include "plugin_adapt.h"

_Static_assert(offsetof(struct dcoll_plugin_call_v4, in_place) == 48,
               "version 4's call record is frozen");

static dcoll_cuda_plugin_t table;
static int (*nccl_coll_v4)(void *comm, const struct dcoll_plugin_call_v4 *c,
                           int rank, int size, void *stream, double timeout);

static int nccl_coll_shim(void *comm, const dcoll_plugin_call_t *pc, int rank,
                          int size, void *stream, double timeout)
{
    struct dcoll_plugin_call_v4 c = {
        .kind = pc->kind, .sendbuf = pc->sendbuf, .recvbuf = pc->recvbuf,
        .count = pc->count, .dtype = pc->dtype, .op = pc->op,
        .root = pc->root, .in_place = pc->in_place,
    };
    return nccl_coll_v4(comm, &c, rank, size, stream, timeout);
}

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v4(const void *entry_table)
{
    const struct dcoll_cuda_plugin_v4 *p = entry_table;
    if (!p || p->abi != 4)
        return NULL;
    memset(&table, 0, sizeof(table));
    table.abi = DCOLL_PLUGIN_ABI;
    DCOLL_PLUGIN_COPY_SHARED(&table, p);
    nccl_coll_v4 = p->nccl_coll;
    table.nccl_coll = p->nccl_coll ? nccl_coll_shim : NULL;
    return &table;
}
