/* Between the CUDA double's files (cudart.c, ipc.c): not its API. */
#ifndef DCOLL_CUDART_INTERNAL_H
#define DCOLL_CUDART_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#define API __attribute__((visibility("default")))

/* An interprocess event's state, in its owner's shared table: records
 * made, and the last record its stream reached. */
struct fake_ipc_event {
    _Atomic uint64_t gen;   /* 0: free */
    _Atomic uint64_t recorded, done;
};

/* cudart.c */
void fake_init(void);
cudaError_t fake_ret(cudaError_t e);
/* p is the base of a live cudaMalloc block: its device, offset in the
 * arena's file, size and generation. */
bool fake_block_of(const void *p, int *device, size_t *off, size_t *size,
                   uint64_t *gen);
int fake_arena_fd(void);
bool fake_host_visible(void);
void fake_drain_device(int device);
/* An event's interprocess state (NULL: an ordinary event, or one
 * imported); a new event over an imported state. */
struct fake_ipc_event *fake_event_ipc(cudaEvent_t ev);
cudaError_t fake_event_imported(cudaEvent_t *ev, struct fake_ipc_event *s);

/* ipc.c */
bool fake_ipc_find(const void *p, void **shadow, int *device);
void fake_ipc_freed(uint64_t gen);
struct fake_ipc_event *fake_ipc_event_new(void);
void fake_ipc_event_free(struct fake_ipc_event *e);

#endif
