/* Buffers that are not one contiguous range, as the plugin's shapes
 * (plugin_abi.h): a strided layout's elements, and a neighbourhood
 * call's transfers, one per listed neighbour. shape.c. */
#ifndef DCOLL_GPU_SHAPE_H
#define DCOLL_GPU_SHAPE_H

#include "gpu.h"
#include "plugin_abi.h"

/* A layout's elements of esz bytes in the array at base. */
void dcoll_shape_of(const dcoll_layout_t *l, const void *base, size_t esz,
                    dcoll_plugin_shape_t *s);

/* Between a shape on GPU device and contiguous bytes at flat (host
 * memory, or the same GPU), on stream: pack reads the shape, else it is
 * written. With the plugin's copy_shape, else row by row. 0, or -1 with
 * the plugin's last_error. */
int dcoll_shape_copy(const dcoll_plugin_shape_t *shape, char *flat,
                     bool pack, int device, void *stream);

/* A neighbourhood call's transfers on this rank (c->nbh): its outdeg
 * sends in list order, then its indeg receives, device pointers and
 * group ranks; a wall (DCOLL_PROC_NULL) is an empty one with peer
 * DCOLL_PROC_NULL. *x is malloc'd (free it). */
dcoll_status_t dcoll_nbh_xfers(const struct dcoll_coll *c,
                               dcoll_plugin_xfer_t **x);

/* staged_strided.c: the staged path of a strided send or receive
 * (c->layout) and of a neighbourhood call, by shapes. */
dcoll_status_t dcoll_staged_shaped(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_work **work,
                                   struct dcoll_outcome *oc);

#endif
