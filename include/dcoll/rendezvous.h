/* dcoll: rendezvous by URL, and the registry of URL schemes. */
#ifndef DCOLL_RENDEZVOUS_H
#define DCOLL_RENDEZVOUS_H

#include "dcoll/common.h"
#include "dcoll/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A rendezvous handler: from @p url, find the other processes and yield a
 *  store they share (owned by the caller), this process's rank and the
 *  world size, waiting at most @p timeout seconds. @p arg is what was
 *  registered with it. It reports failures with a status (and may say
 *  why in the message it returns through @p why, a static or
 *  handler-owned string, or leave it NULL). */
typedef dcoll_status_t (*dcoll_rendezvous_fn)(void *arg, const char *url,
                                              double timeout,
                                              dcoll_store_t **store,
                                              int *rank, int *world_size,
                                              const char **why);

/** Make @p scheme (letters, digits, '+', '-', '.'; case-insensitive)
 *  mean @p handler in dcoll_rendezvous and dcoll_init. Built in: env,
 *  tcp, file (and mpi, which needs no store).
 *  @return DCOLL_ERR_INVALID_ARGUMENT if the scheme is registered already. */
DCOLL_API dcoll_status_t dcoll_register_rendezvous(const char *scheme,
                                                   dcoll_rendezvous_fn handler,
                                                   void *arg);

/** Rendezvous by @p url without starting MPI:
 *   - env://[?rank=R&world_size=N]: RANK, WORLD_SIZE, MASTER_ADDR and
 *     MASTER_PORT, the query winning;
 *   - tcp://host:port?rank=R&world_size=N[&token=T];
 *   - file:///path?rank=R&world_size=N;
 *   - any registered scheme.
 *  For env:// and tcp://, rank 0 serves the TCP store on host:port (bound
 *  to that address only) and every rank connects. @p timeout <= 0 means
 *  300 s. *store belongs to the caller (dcoll_store_destroy). */
DCOLL_API dcoll_status_t dcoll_rendezvous(const char *url, double timeout,
                                          dcoll_store_t **store, int *rank,
                                          int *world_size);

#ifdef __cplusplus
}
#endif
#endif
