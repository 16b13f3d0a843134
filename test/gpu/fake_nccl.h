/* The fake plugin's NCCL (fake_nccl.c): the plugin ABI's NCCL calls over
 * shared memory between the processes of one machine. Test only. */
#ifndef DCOLL_FAKE_NCCL_H
#define DCOLL_FAKE_NCCL_H

#include <stddef.h>
#include "plugin_abi.h"

#define FAKE_NCCL_ID_BYTES 16

/* fake_plugin.c: device memory readable and writable (on) or not. */
void fake_open_device_memory(int on);

const char *fake_nccl_error(void);
int fake_nccl_id(void *id);
int fake_nccl_comm(const void *id, int nranks, int rank, int device,
                   double timeout, void **comm);
int fake_nccl_comms(const void *id, int nranks, int first, int ndev,
                    const int *devices, double timeout, void **comms);
void fake_nccl_free(void *comm);
int fake_nccl_takes(const dcoll_plugin_call_t *c);
int fake_nccl_coll(void *comm, const dcoll_plugin_call_t *c, int rank,
                   int size, void *stream, double timeout);
int fake_nccl_wait(void *comm, void *stream, double timeout);
int fake_event_record(void *comm, void *stream, void **event);
int fake_event_poll(void *comm, void *event, int *done);
int fake_event_wait(void *comm, void *event, double timeout);
void fake_event_free(void *event);
int fake_group_start(void);
int fake_group_end(void *const *comms, int n, double timeout);

#endif
