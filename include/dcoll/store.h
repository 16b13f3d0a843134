/* dcoll: the key/value store that processes meet through. */
#ifndef DCOLL_STORE_H
#define DCOLL_STORE_H

#include "dcoll/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A key/value store shared by the processes of a job: a TCP store served
 *  by one of them, a file store on a shared file system, or a prefix store
 *  over either. Keys are strings; values are bytes. Every call that waits
 *  gives up after the store's timeout with DCOLL_ERR_TIMEOUT.
 *  Not thread-safe: one thread at a time per handle (open one handle per
 *  thread; many handles may share a server or a file). */
typedef struct dcoll_store dcoll_store_t;

/* Bits of dcoll_store_params_t.mask. */
#define DCOLL_STORE_PARAM_TIMEOUT (UINT64_C(1) << 0)
#define DCOLL_STORE_PARAM_TOKEN   (UINT64_C(1) << 1)
#define DCOLL_STORE_PARAM_SERVE   (UINT64_C(1) << 2)
#define DCOLL_STORE_PARAM_MAX_CLIENTS    (UINT64_C(1) << 3)
#define DCOLL_STORE_PARAM_MAX_UNAUTHED   (UINT64_C(1) << 4)
#define DCOLL_STORE_PARAM_UNAUTHED_FRAME (UINT64_C(1) << 5)
#define DCOLL_STORE_PARAM_IDLE_TIMEOUT   (UINT64_C(1) << 6)
#define DCOLL_STORE_PARAM_MAX_MEMORY     (UINT64_C(1) << 7)
#define DCOLL_STORE_PARAM_IDLE_CLOSE     (UINT64_C(1) << 8)

/* The TCP server's limits, when a field is not set: first the
 * environment variable named, then these. */
#define DCOLL_STORE_DEFAULT_MAX_CLIENTS    16384   /* DCOLL_STORE_MAX_CLIENTS */
#define DCOLL_STORE_DEFAULT_MAX_UNAUTHED   1024    /* DCOLL_STORE_MAX_UNAUTHED */
#define DCOLL_STORE_DEFAULT_UNAUTHED_FRAME 8192    /* DCOLL_STORE_UNAUTHED_FRAME */
#define DCOLL_STORE_DEFAULT_IDLE_TIMEOUT   30.0    /* DCOLL_STORE_IDLE_TIMEOUT */
#define DCOLL_STORE_DEFAULT_MAX_MEMORY     (INT64_C(1) << 30) /* DCOLL_STORE_MAX_MEMORY */
#define DCOLL_STORE_DEFAULT_IDLE_CLOSE     600.0   /* DCOLL_STORE_IDLE_CLOSE */

typedef struct dcoll_store_params {
    uint64_t mask;        /**< which fields below are set */
    double timeout;       /**< seconds any call may wait; default 300 */
    const char *token;    /**< shared secret: a TCP server answers only
                               clients that present it; a client presents
                               it. Default: $DCOLL_STORE_TOKEN, else none */
    int serve;            /**< TCP: 1 to run the server in this process (on
                               its own thread) as well as a client */
    /* The server's limits (API 1.4); they matter only where it serves. A
     * client is authenticated once it has shown the token, or at once
     * when the server has none. */
    int max_clients;      /**< connections served at once; one more is
                               refused with a message, and the client
                               retries until its timeout */
    int max_unauthed;     /**< of those, how many may be unauthenticated */
    int unauthed_frame;   /**< largest request, in bytes, before the token
                               (the token itself must fit) */
    double idle_timeout;  /**< seconds a client may take to complete a
                               request it started, to show its token after
                               connecting, or to read a reply; then it is
                               cut off */
    int64_t max_memory;   /**< bytes the server holds: keys and values, and
                               past 64 KiB per connection each, unfinished
                               requests and unread replies. A SET, ADD or
                               compare_set past it fails with
                               DCOLL_ERR_NO_MEMORY and changes nothing; so
                               does a GET whose reply does not fit; a
                               request that does not fit is refused */
    double idle_close;    /**< seconds an authenticated client may stay
                               connected with nothing to do (no request,
                               no wait) before its connection is closed,
                               so that its place comes back; a dcoll
                               client connects again when it next asks.
                               0: never (API 1.5) */
} dcoll_store_params_t;

#define DCOLL_STORE_PARAMS_INIT {0, 0.0, NULL, 0, 0, 0, 0, 0.0, 0, 0.0}

/* Largest key and value the stores accept, in bytes. */
#define DCOLL_STORE_MAX_KEY   4096
#define DCOLL_STORE_MAX_VALUE (4 << 20)

/** Connect to the TCP store at @p host:@p port, first serving it if
 *  params->serve is set. The server binds @p host only (e.g. "127.0.0.1"
 *  listens on loopback alone); port 0 picks a free port, which
 *  dcoll_store_port reports. A client retries until the server is up or
 *  the timeout passes. */
DCOLL_API dcoll_status_t dcoll_store_tcp_create(dcoll_store_t **out,
                                                const char *host, int port,
                                                const dcoll_store_params_t *params);

/** Open the file store at @p path (made if missing). The last handle
 *  destroyed removes the file. */
DCOLL_API dcoll_status_t dcoll_store_file_create(dcoll_store_t **out,
                                                 const char *path,
                                                 const dcoll_store_params_t *params);

/** A view of @p base in which every key is "<prefix>/<key>". @p base must
 *  outlive it and is not destroyed with it. */
DCOLL_API dcoll_status_t dcoll_store_prefix_create(dcoll_store_t **out,
                                                   const char *prefix,
                                                   dcoll_store_t *base);

/** The store the world met through at dcoll_init, for the program's own
 *  keys, as torch.distributed programs use their default store: a prefix
 *  view of it ("user/"), so that no key of the program meets one of
 *  dcoll's. Every call gives the same handle; dcoll frees it at
 *  dcoll_finalize, and dcoll_store_destroy refuses it. The world's ranks
 *  share it (a key one sets, the others get). DCOLL_ERR_UNSUPPORTED where
 *  the world was made without a store (mpi://, or env:// under an MPI
 *  launcher without MASTER_ADDR and MASTER_PORT), saying so. (API 1.6.) */
DCOLL_API dcoll_status_t dcoll_world_store(dcoll_store_t **store);

/** Close the store and set *store to NULL; a serving TCP store stops its
 *  server. NULL *store is fine; the world's store (dcoll_world_store) is
 *  refused. */
DCOLL_API dcoll_status_t dcoll_store_destroy(dcoll_store_t **store);

/** The port a TCP store is on (after port 0 chose one). */
DCOLL_API dcoll_status_t dcoll_store_port(const dcoll_store_t *store, int *port);

DCOLL_API dcoll_status_t dcoll_store_set(dcoll_store_t *store, const char *key,
                                         const void *value, size_t len);

/** Wait for @p key, then copy its value into @p buf (capacity @p cap) and
 *  its length into *len. A value longer than @p cap is not copied:
 *  DCOLL_ERR_INVALID_ARGUMENT, with *len set to the length needed. */
DCOLL_API dcoll_status_t dcoll_store_get(dcoll_store_t *store, const char *key,
                                         void *buf, size_t cap, size_t *len);

/** Add @p delta to the integer (decimal text) under @p key, 0 if missing,
 *  and return the sum in *result (may be NULL). */
DCOLL_API dcoll_status_t dcoll_store_add(dcoll_store_t *store, const char *key,
                                         int64_t delta, int64_t *result);

/** Set @p key to @p desired if its value is @p expected, or if it is
 *  missing and @p expected_len is 0. The value after the call (the new one
 *  or the one that did not match) goes to @p buf, @p cap and *len as in
 *  dcoll_store_get. */
DCOLL_API dcoll_status_t dcoll_store_compare_set(dcoll_store_t *store,
                                                 const char *key,
                                                 const void *expected,
                                                 size_t expected_len,
                                                 const void *desired,
                                                 size_t desired_len, void *buf,
                                                 size_t cap, size_t *len);

/** Wait until all @p nkeys keys exist, for at most @p timeout seconds
 *  (negative: the store's timeout). */
DCOLL_API dcoll_status_t dcoll_store_wait(dcoll_store_t *store,
                                          const char *const *keys, int nkeys,
                                          double timeout);

/** *exist = 1 if all @p nkeys keys exist now, else 0. Does not wait. */
DCOLL_API dcoll_status_t dcoll_store_check(dcoll_store_t *store,
                                           const char *const *keys, int nkeys,
                                           int *exist);

/** Remove @p key; *deleted (may be NULL) says whether it was there. */
DCOLL_API dcoll_status_t dcoll_store_delete_key(dcoll_store_t *store,
                                                const char *key, int *deleted);

/** Number of keys in the store (for a prefix store: in its base). */
DCOLL_API dcoll_status_t dcoll_store_num_keys(dcoll_store_t *store,
                                              int64_t *count);

#ifdef __cplusplus
}
#endif
#endif
