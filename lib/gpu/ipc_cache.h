/* The peers' allocations a rank has mapped (CUDA IPC), kept open between
 * calls: opening one costs tens of microseconds, a call that finds it
 * open nothing. Keyed by peer and the allocation's address there; a
 * handle that differs for the same key is memory the peer freed and
 * allocated again at that address, so the stale mapping is closed and
 * the new one opened. A new allocation over a range a stale mapping
 * still covers is refused by CUDA (cudaErrorAlreadyMapped): the peer's
 * unused mappings are closed and the open tried again. Unused mappings
 * beyond a bound are closed, oldest use first. No locks: one per
 * thread that uses it (a group's transport record, under its lock). */
#ifndef DCOLL_GPU_IPC_CACHE_H
#define DCOLL_GPU_IPC_CACHE_H

#include <stdint.h>
#include "plugin_abi.h"

struct dcoll_ipc_cache;

/* A cache over plugin cu's IPC calls on device, at most max mappings
 * kept that no call uses; NULL without memory. */
struct dcoll_ipc_cache *dcoll_ipc_cache_new(const dcoll_cuda_plugin_t *cu,
                                            int device, int max);
/* Close every mapping (none may be in use) and free the cache. */
void dcoll_ipc_cache_free(struct dcoll_ipc_cache *c);

/* Peer's allocation at base (its address there), named by handle,
 * mapped here in *p and held until put. 0; -1 with why (the plugin's
 * error, or a call that still holds the stale mapping of that
 * address). */
int dcoll_ipc_cache_get(struct dcoll_ipc_cache *c, int peer, uint64_t base,
                        const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                        void **p);
void dcoll_ipc_cache_put(struct dcoll_ipc_cache *c, void *p);
/* Close every mapping no call holds. */
void dcoll_ipc_cache_trim(struct dcoll_ipc_cache *c);

/* Mappings open now (for tests and dcoll-info); why the last get
 * failed. */
int dcoll_ipc_cache_open(const struct dcoll_ipc_cache *c);
const char *dcoll_ipc_cache_why(const struct dcoll_ipc_cache *c);

#endif
