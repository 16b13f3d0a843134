/* The public store calls: argument checks, then the store's own table
 * (dispatch). The parameters' limits are store_params.c's, the prefix
 * store store_prefix.c's. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "store.h"

bool dcoll_store_parse_int(const uint8_t *p, size_t len, int64_t *v)
{
    char buf[24], *end;
    if (len == 0 || len >= sizeof(buf))
        return false;
    memcpy(buf, p, len);
    buf[len] = '\0';
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

dcoll_status_t dcoll_store_check_handle(const char *fn, const dcoll_store_t *s)
{
    if (!s)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: store is NULL",
                           fn);
    if (s->magic != DCOLL_STORE_MAGIC)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: %p is not a live store handle", fn,
                           (const void *)s);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_check_key(const char *fn, const char *key)
{
    if (!key)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: key is NULL", fn);
    size_t n = strlen(key);
    if (n == 0 || n > DCOLL_STORE_MAX_KEY)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: key of %zu bytes (must be 1 to %d)", fn, n,
                           DCOLL_STORE_MAX_KEY);
    if (key[0] == '\001')
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: key starts with byte 0x01, which dcoll keeps "
                           "for itself", fn);
    return DCOLL_SUCCESS;
}

static dcoll_status_t check_value(const char *fn, const char *what,
                                  const void *v, size_t n)
{
    if (n > DCOLL_STORE_MAX_VALUE)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: %s of %zu bytes is over the limit of %d", fn,
                           what, n, DCOLL_STORE_MAX_VALUE);
    if (n && !v)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: %s is NULL with length %zu", fn, what, n);
    return DCOLL_SUCCESS;
}

static dcoll_status_t check_keys(const char *fn, const char *const *keys,
                                 int n)
{
    if (n < 1 || n > 255)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: nkeys %d (must be 1 to 255)", fn, n);
    if (!keys)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: keys is NULL",
                           fn);
    for (int i = 0; i < n; i++) {
        dcoll_status_t st = dcoll_store_check_key(fn, keys[i]);
        if (st)
            return st;
    }
    return DCOLL_SUCCESS;
}

/* Hand a value to the caller's buffer. */
static dcoll_status_t give(const char *fn, struct store_val *v, void *buf,
                           size_t cap, size_t *len)
{
    dcoll_status_t st = DCOLL_SUCCESS;
    if (len)
        *len = v->len;
    if (v->len > cap)
        st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                         "%s: the value has %zu bytes, more than the buffer's "
                         "%zu", fn, v->len, cap);
    else if (v->len)
        memcpy(buf, v->p, v->len);
    free(v->p);
    return st;
}

static dcoll_status_t check_out(const char *fn, void *buf, size_t cap,
                                size_t *len)
{
    if (!len)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: len is NULL", fn);
    if (cap && !buf)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: buf is NULL with cap %zu", fn, cap);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_tcp_create(dcoll_store_t **out, const char *host,
                                      int port,
                                      const dcoll_store_params_t *params)
{
    static const char fn[] = "dcoll_store_tcp_create";
    dcoll_store_params_t p;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *out = NULL;
    if (!host || !*host)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: host is %s", fn,
                           host ? "empty" : "NULL");
    dcoll_status_t st = dcoll_store_params_read(fn, params, &p);
    if (st)
        return st;
    if (port < 0 || port > 65535 || (port == 0 && !p.serve))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: port %d is not a port (1 to 65535, or 0 for "
                           "a serving store to pick one)", fn, port);
    return dcoll_store_tcp_open(out, host, port, &p);
}

dcoll_status_t dcoll_store_file_create(dcoll_store_t **out, const char *path,
                                       const dcoll_store_params_t *params)
{
    static const char fn[] = "dcoll_store_file_create";
    dcoll_store_params_t p;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *out = NULL;
    if (!path || !*path)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: path is %s", fn,
                           path ? "empty" : "NULL");
    dcoll_status_t st = dcoll_store_params_read(fn, params, &p);
    if (st)
        return st;
    if (p.serve || p.token)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: serve and token are for TCP stores; a file "
                           "store is guarded by the file's permissions", fn);
    return dcoll_store_file_open(out, path, &p);
}

/* ---- the public calls ---- */

dcoll_status_t dcoll_store_destroy(dcoll_store_t **store)
{
    if (!store)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_store_destroy: store is NULL");
    if (!*store)
        return DCOLL_SUCCESS;
    dcoll_status_t st =
        dcoll_store_check_handle("dcoll_store_destroy", *store);
    if (st)
        return st;
    if ((*store)->owned)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_store_destroy: "
                           "this is the world's store (dcoll_world_store), "
                           "which dcoll frees at dcoll_finalize");
    dcoll_mark_dead(&(*store)->magic);
    (*store)->ops->destroy(*store);
    *store = NULL;
    return DCOLL_SUCCESS;
}

void dcoll_store_keep(dcoll_store_t *s)
{
    s->owned = true;
}

void dcoll_store_release(dcoll_store_t **s)
{
    if (*s)
        (*s)->owned = false;
    dcoll_store_destroy(s);
}

dcoll_status_t dcoll_store_port(const dcoll_store_t *store, int *port)
{
    dcoll_status_t st = dcoll_store_check_handle("dcoll_store_port", store);
    if (st)
        return st;
    if (!port)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_store_port: port is NULL");
    if (!store->port)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_store_port: a %s store has no port",
                           store->ops->kind);
    *port = store->port;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_set(dcoll_store_t *store, const char *key,
                               const void *value, size_t len)
{
    static const char fn[] = "dcoll_store_set";
    dcoll_status_t st;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = dcoll_store_check_key(fn, key)) ||
        (st = check_value(fn, "value", value, len)))
        return st;
    return store->ops->set(store, key, value, len);
}

dcoll_status_t dcoll_store_get(dcoll_store_t *store, const char *key,
                               void *buf, size_t cap, size_t *len)
{
    static const char fn[] = "dcoll_store_get";
    dcoll_status_t st;
    struct store_val v;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = dcoll_store_check_key(fn, key)) ||
        (st = check_out(fn, buf, cap, len)))
        return st;
    if ((st = store->ops->get(store, key, store->timeout, &v)))
        return st;
    return give(fn, &v, buf, cap, len);
}

dcoll_status_t dcoll_store_add(dcoll_store_t *store, const char *key,
                               int64_t delta, int64_t *result)
{
    static const char fn[] = "dcoll_store_add";
    dcoll_status_t st;
    int64_t sum;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = dcoll_store_check_key(fn, key)))
        return st;
    if ((st = store->ops->add(store, key, delta, &sum)))
        return st;
    if (result)
        *result = sum;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_compare_set(dcoll_store_t *store, const char *key,
                                       const void *expected,
                                       size_t expected_len,
                                       const void *desired,
                                       size_t desired_len, void *buf,
                                       size_t cap, size_t *len)
{
    static const char fn[] = "dcoll_store_compare_set";
    dcoll_status_t st;
    struct store_val v;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = dcoll_store_check_key(fn, key)) ||
        (st = check_value(fn, "expected", expected, expected_len)) ||
        (st = check_value(fn, "desired", desired, desired_len)) ||
        (st = check_out(fn, buf, cap, len)))
        return st;
    if ((st = store->ops->cas(store, key, expected, expected_len, desired,
                              desired_len, &v)))
        return st;
    return give(fn, &v, buf, cap, len);
}

dcoll_status_t dcoll_store_wait(dcoll_store_t *store, const char *const *keys,
                                int nkeys, double timeout)
{
    static const char fn[] = "dcoll_store_wait";
    dcoll_status_t st;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = check_keys(fn, keys, nkeys)))
        return st;
    if (timeout != timeout || timeout > 1e9)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: timeout %g s is not a number of seconds", fn,
                           timeout);
    return store->ops->wait(store, keys, nkeys,
                            timeout < 0 ? store->timeout : timeout);
}

dcoll_status_t dcoll_store_check(dcoll_store_t *store,
                                 const char *const *keys, int nkeys,
                                 int *exist)
{
    static const char fn[] = "dcoll_store_check";
    dcoll_status_t st;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = check_keys(fn, keys, nkeys)))
        return st;
    if (!exist)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: exist is NULL",
                           fn);
    return store->ops->check(store, keys, nkeys, exist);
}

dcoll_status_t dcoll_store_delete_key(dcoll_store_t *store, const char *key,
                                      int *deleted)
{
    static const char fn[] = "dcoll_store_delete_key";
    dcoll_status_t st;
    int d;
    if ((st = dcoll_store_check_handle(fn, store)) ||
        (st = dcoll_store_check_key(fn, key)))
        return st;
    if ((st = store->ops->del(store, key, &d)))
        return st;
    if (deleted)
        *deleted = d;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_num_keys(dcoll_store_t *store, int64_t *count)
{
    static const char fn[] = "dcoll_store_num_keys";
    dcoll_status_t st;
    if ((st = dcoll_store_check_handle(fn, store)))
        return st;
    if (!count)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: count is NULL",
                           fn);
    return store->ops->num_keys(store, count);
}
