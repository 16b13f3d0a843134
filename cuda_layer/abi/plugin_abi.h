/* The CUDA plugin's ABI: what the plugin (cuda_layer/) and the core's
 * loader (lib/gpu/plugin.c) share. The plugin is a shared object loaded
 * with dlopen, so that libdcoll never links CUDA or NCCL. It exports
 * dcoll_cuda_plugin_v<N>, named for the version of the table it returns,
 * as NCCL's network plugins name theirs.
 *
 * Each version has a frozen header of its own (plugin_abi_v4.h to
 * _v13.h), as NCCL keeps one per network plugin version; this one names
 * the current version. A change to a table or a call record is a new
 * version: a new header, this one pointed at it, and an adapter for the
 * version it replaces (lib/gpu/plugin_v<N>.c) that turns that version's
 * table into the current one, so that the loader goes on accepting
 * plugins of every version it knows. Not installed. */
#ifndef DCOLL_PLUGIN_ABI_H
#define DCOLL_PLUGIN_ABI_H

#include "dcoll/common.h"
#include "plugin_abi_v13.h"

#define DCOLL_PLUGIN_ABI 13u
#define DCOLL_CUDA_PLUGIN_ENTRY DCOLL_CUDA_PLUGIN_V13_ENTRY

/* The current table and call record. */
typedef struct dcoll_cuda_plugin_v13 dcoll_cuda_plugin_t;
typedef struct dcoll_gpu_view_v9 dcoll_gpu_view_t;
typedef struct dcoll_plugin_call_v5 dcoll_plugin_call_t;
typedef struct dcoll_plugin_shape_v13 dcoll_plugin_shape_t;
typedef struct dcoll_plugin_xfer_v13 dcoll_plugin_xfer_t;

/* What both sides read off a shape: its bytes, whether they are one
 * range, and a contiguous shape of the same rows and planes at buf. */
static inline size_t dcoll_shape_bytes(const dcoll_plugin_shape_t *s)
{
    return s->width * s->rows * s->planes;
}

static inline int dcoll_shape_contiguous(const dcoll_plugin_shape_t *s)
{
    return (s->rows <= 1 || s->pitch == s->width) &&
           (s->planes <= 1 || s->plane_pitch == s->width * s->rows);
}

static inline dcoll_plugin_shape_t dcoll_shape_flat(char *buf,
                                                    const dcoll_plugin_shape_t *like)
{
    dcoll_plugin_shape_t f = {buf, like->width, like->rows, like->width,
                              like->planes, like->width * like->rows};
    return f;
}

typedef const void *(*dcoll_cuda_plugin_fn)(void);

#endif
