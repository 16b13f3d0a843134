/* Inside the plugin: its IPC half (ipc.c), the table's IPC calls
 * and mem_range. */
#ifndef DCOLL_CUDA_IPC_PLUGIN_H
#define DCOLL_CUDA_IPC_PLUGIN_H

#include <stddef.h>
#include "plugin_abi.h"

void *dcoll_ipc_dev_alloc(size_t bytes, int device);
void dcoll_ipc_dev_free(void *p, int device);
int dcoll_ipc_export(void *base, int device,
                     unsigned char handle[DCOLL_IPC_HANDLE_BYTES]);
int dcoll_ipc_mem_range(const void *p, int device, void **base,
                        size_t *size);
int dcoll_ipc_open(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                   int device, void **p);
int dcoll_ipc_close(void *p, int device);
int dcoll_ipc_event(int device, void **event,
                    unsigned char handle[DCOLL_IPC_HANDLE_BYTES]);
int dcoll_ipc_event_open(const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                         int device, void **event);
void dcoll_ipc_event_free(void *event, int device);
int dcoll_ipc_record(void *event, void *stream, int device);
int dcoll_ipc_query(void *event, int device);
int dcoll_ipc_wait(void *stream, void *event, int device);
/* The GPU's identity (IPC needs it without NCCL too). */
int dcoll_ipc_uuid(int device, unsigned char uuid[16]);
/* The table's reduce, where the plugin has kernels (reduce.h). */
int dcoll_ipc_reduce(void *dst, const void *const *srcs, int nsrc,
                     int64_t count, int dtype, int op, int avg_n,
                     void *stream, int device);

#endif
