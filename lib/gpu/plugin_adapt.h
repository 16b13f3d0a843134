/* The loader's adapters, one file per plugin ABI version it still takes
 * (plugin_v4.c to plugin_v12.c), as NCCL keeps one shim per old network
 * plugin version. Each turns what that version's entry point returned
 * into a table of the current layout, or NULL where its abi field says
 * it is not that version. */
#ifndef DCOLL_PLUGIN_ADAPT_H
#define DCOLL_PLUGIN_ADAPT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "plugin_abi.h"

const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v4(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v5(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v6(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v7(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v8(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v9(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v10(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v11(const void *table);
const dcoll_cuda_plugin_t *dcoll_plugin_adapt_v12(const void *table);
/* A version 6 to 12 table is the current one's prefix. */
_Static_assert(offsetof(dcoll_cuda_plugin_t, group_end) ==
                   offsetof(struct dcoll_cuda_plugin_v6, group_end),
               "the current version must begin with version 6's layout");
_Static_assert(offsetof(dcoll_cuda_plugin_t, nccl_split) ==
                   offsetof(struct dcoll_cuda_plugin_v8, nccl_split),
               "the current version must begin with version 8's layout");
_Static_assert(offsetof(dcoll_cuda_plugin_t, nccl_release) ==
                   offsetof(struct dcoll_cuda_plugin_v9, nccl_release),
               "the current version must begin with version 9's layout");
_Static_assert(offsetof(dcoll_cuda_plugin_t, reduce) ==
                   offsetof(struct dcoll_cuda_plugin_v10, reduce),
               "the current version must begin with version 10's layout");
_Static_assert(offsetof(dcoll_cuda_plugin_t, mem_range) ==
                   offsetof(struct dcoll_cuda_plugin_v11, mem_range),
               "the current version must begin with version 11's layout");
_Static_assert(offsetof(dcoll_cuda_plugin_t, nccl_shrink) ==
                   offsetof(struct dcoll_cuda_plugin_v12, nccl_shrink),
               "the current version must begin with version 12's layout");

/* An older table whose layout is the current one's first bytes (versions
 * 6 to 12): copied into t, the rest NULL, numbered as the current one;
 * NULL where its abi field (every table's first) is not want. */
static inline const dcoll_cuda_plugin_t *
dcoll_plugin_prefix(dcoll_cuda_plugin_t *t, const void *entry_table,
                    uint32_t want, size_t bytes)
{
    const uint32_t *abi = entry_table;
    if (!abi || *abi != want)
        return NULL;
    memset(t, 0, sizeof(*t));
    memcpy(t, entry_table, bytes);
    t->abi = DCOLL_PLUGIN_ABI;
    return t;
}

/* The calls versions 4 to 6 share, by name, from an old table p into a
 * current one t; nccl_coll's record changed in 5 and is each adapter's. */
#define DCOLL_PLUGIN_COPY_SHARED(t, p)                                      \
    do {                                                                    \
        (t)->probe = (p)->probe;                                            \
        (t)->versions = (p)->versions;                                      \
        (t)->pci_bus_id = (p)->pci_bus_id;                                  \
        (t)->mem_kind = (p)->mem_kind;                                      \
        (t)->host_alloc = (p)->host_alloc;                                  \
        (t)->host_free = (p)->host_free;                                    \
        (t)->copy = (p)->copy;                                              \
        (t)->sync = (p)->sync;                                              \
        (t)->last_error = (p)->last_error;                                  \
        (t)->select_device = (p)->select_device;                            \
        (t)->nccl_bytes = (p)->nccl_bytes;                                  \
        (t)->device_uuid = (p)->device_uuid;                                \
        (t)->nccl_id = (p)->nccl_id;                                        \
        (t)->nccl_comm = (p)->nccl_comm;                                    \
        (t)->nccl_free = (p)->nccl_free;                                    \
        (t)->nccl_wait = (p)->nccl_wait;                                    \
        (t)->event_record = (p)->event_record;                              \
        (t)->event_poll = (p)->event_poll;                                  \
        (t)->event_wait = (p)->event_wait;                                  \
        (t)->event_free = (p)->event_free;                                  \
    } while (0)

#endif
