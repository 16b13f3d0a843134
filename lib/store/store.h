/* Stores: one table of operations per kind (TCP, file, prefix) behind the
 * public dcoll_store_* calls, which check arguments first. Not installed. */
#ifndef DCOLL_LIB_STORE_H
#define DCOLL_LIB_STORE_H

#include "base.h"
#include "dcoll/store.h"

#define DCOLL_STORE_MAGIC 0x64637331u /* "dcs1" */
#define DCOLL_STORE_DEFAULT_TIMEOUT 300.0

/* A value handed back by an operation: malloc'd, the caller frees it. */
struct store_val {
    uint8_t *p;
    size_t len;
};

struct store_ops {
    const char *kind;
    dcoll_status_t (*set)(dcoll_store_t *s, const char *key, const void *v,
                          size_t n);
    /* Waits for the key up to timeout seconds. */
    dcoll_status_t (*get)(dcoll_store_t *s, const char *key, double timeout,
                          struct store_val *out);
    dcoll_status_t (*add)(dcoll_store_t *s, const char *key, int64_t delta,
                          int64_t *sum);
    dcoll_status_t (*cas)(dcoll_store_t *s, const char *key, const void *exp,
                          size_t elen, const void *des, size_t dlen,
                          struct store_val *now);
    dcoll_status_t (*wait)(dcoll_store_t *s, const char *const *keys, int n,
                           double timeout);
    dcoll_status_t (*check)(dcoll_store_t *s, const char *const *keys, int n,
                            int *exist);
    dcoll_status_t (*del)(dcoll_store_t *s, const char *key, int *deleted);
    dcoll_status_t (*num_keys)(dcoll_store_t *s, int64_t *count);
    void (*destroy)(dcoll_store_t *s);
};

struct dcoll_store {
    uint32_t magic;
    const struct store_ops *ops;
    double timeout;
    int port;             /* TCP only */
    bool owned;           /* dcoll's (dcoll_world_store's): the program's
                             dcoll_store_destroy refuses it */
};

/* store_prefix.c: a prefix view that owns base: destroying the view
 * destroys base too (a rendezvous's view of an agent's store). */
dcoll_status_t dcoll_store_prefix_over(dcoll_store_t **out,
                                       const char *prefix,
                                       dcoll_store_t *base);

/* store.c: mark s as dcoll's own, and free one so marked (finalize). */
void dcoll_store_keep(dcoll_store_t *s);
void dcoll_store_release(dcoll_store_t **s);

/* store_params.c: fill defaults from params (NULL: all defaults) and
 * check them. */
dcoll_status_t dcoll_store_params_read(const char *fn,
                                       const dcoll_store_params_t *params,
                                       dcoll_store_params_t *p);

/* store.c: fn's argument checks, shared with the prefix store: a live
 * store handle, and a key a program may use. */
dcoll_status_t dcoll_store_check_handle(const char *fn,
                                        const dcoll_store_t *s);
dcoll_status_t dcoll_store_check_key(const char *fn, const char *key);

/* An integer as the stores keep it (decimal text); false if it is not. */
bool dcoll_store_parse_int(const uint8_t *p, size_t len, int64_t *v);

/* store_tcp.c / store_file.c */
dcoll_status_t dcoll_store_tcp_open(dcoll_store_t **out, const char *host,
                                    int port, const dcoll_store_params_t *p);
dcoll_status_t dcoll_store_file_open(dcoll_store_t **out, const char *path,
                                     const dcoll_store_params_t *p);

/* store_server.c: the TCP store's server, on its own thread. */
struct store_server;
dcoll_status_t dcoll_store_server_start(const char *host, int port,
                                        const dcoll_store_params_t *p,
                                        struct store_server **out, int *bound);
void dcoll_store_server_stop(struct store_server *srv);

#endif
