/* The public store calls: argument checks, then the store's own table.
 * Also the prefix store, which only rewrites keys. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "store.h"
#include "store_wire.h"

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

#define PARAMS_KNOWN                                                        \
    (DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_TOKEN |                  \
     DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_MAX_CLIENTS |              \
     DCOLL_STORE_PARAM_MAX_UNAUTHED | DCOLL_STORE_PARAM_UNAUTHED_FRAME |    \
     DCOLL_STORE_PARAM_IDLE_TIMEOUT | DCOLL_STORE_PARAM_MAX_MEMORY)

/* A limit not set in the params: its environment variable, else the
 * default. The variable is checked as the field would be. */
static dcoll_status_t limit_env(const char *fn, const char *var, double lo,
                                double hi, double *v)
{
    const char *e = getenv(var);
    if (!e || !*e)
        return DCOLL_SUCCESS;
    char *end;
    errno = 0;
    double x = strtod(e, &end);
    if (errno || *end || !(x >= lo && x <= hi))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s='%s' is not "
                           "a number from %g to %g", fn, var, e, lo, hi);
    *v = x;
    return DCOLL_SUCCESS;
}

/* A limit's field, found by offset and type. */
enum limit_type { LIMIT_INT, LIMIT_INT64, LIMIT_DOUBLE };

struct limit {
    uint64_t bit;
    const char *field, *var;
    size_t off;
    enum limit_type type;
    double def, lo, hi;
};

#define LIMIT(bit, f, var, type, def, lo, hi)                               \
    {bit, #f, var, offsetof(dcoll_store_params_t, f), type, def, lo, hi}

/* The server's limits: default and the range each may take. The token
 * must fit in the unauthenticated frame, so that one is at least 64 bytes
 * over the longest token. */
static const struct limit limits[] = {
    LIMIT(DCOLL_STORE_PARAM_MAX_CLIENTS, max_clients,
          "DCOLL_STORE_MAX_CLIENTS", LIMIT_INT,
          DCOLL_STORE_DEFAULT_MAX_CLIENTS, 1, 1 << 24),
    LIMIT(DCOLL_STORE_PARAM_MAX_UNAUTHED, max_unauthed,
          "DCOLL_STORE_MAX_UNAUTHED", LIMIT_INT,
          DCOLL_STORE_DEFAULT_MAX_UNAUTHED, 1, 1 << 24),
    LIMIT(DCOLL_STORE_PARAM_UNAUTHED_FRAME, unauthed_frame,
          "DCOLL_STORE_UNAUTHED_FRAME", LIMIT_INT,
          DCOLL_STORE_DEFAULT_UNAUTHED_FRAME, 64, WIRE_MAX_BODY),
    LIMIT(DCOLL_STORE_PARAM_IDLE_TIMEOUT, idle_timeout,
          "DCOLL_STORE_IDLE_TIMEOUT", LIMIT_DOUBLE,
          DCOLL_STORE_DEFAULT_IDLE_TIMEOUT, 0.001, 1e9),
    LIMIT(DCOLL_STORE_PARAM_MAX_MEMORY, max_memory, "DCOLL_STORE_MAX_MEMORY",
          LIMIT_INT64, (double)DCOLL_STORE_DEFAULT_MAX_MEMORY, 1, 9.0e18),
};

static double limit_get(const dcoll_store_params_t *p, const struct limit *l)
{
    const char *at = (const char *)p + l->off;
    switch (l->type) {
    case LIMIT_INT: return *(const int *)at;
    case LIMIT_INT64: return (double)*(const int64_t *)at;
    default: return *(const double *)at;
    }
}

static void limit_put(dcoll_store_params_t *p, const struct limit *l,
                      double v)
{
    char *at = (char *)p + l->off;
    switch (l->type) {
    case LIMIT_INT: *(int *)at = (int)v; break;
    case LIMIT_INT64: *(int64_t *)at = (int64_t)v; break;
    default: *(double *)at = v; break;
    }
}

static dcoll_status_t read_limits(const char *fn,
                                  const dcoll_store_params_t *params,
                                  dcoll_store_params_t *p)
{
    for (int i = 0; i < (int)(sizeof(limits) / sizeof(limits[0])); i++) {
        const struct limit *l = &limits[i];
        double v = l->def;
        if (params && (params->mask & l->bit)) {
            v = limit_get(params, l);
            if (!(v >= l->lo && v <= l->hi))
                return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %g is "
                                   "out of range (%g to %g)", fn, l->field,
                                   v, l->lo, l->hi);
        } else {
            dcoll_status_t st = limit_env(fn, l->var, l->lo, l->hi, &v);
            if (st)
                return st;
        }
        if (l->type != LIMIT_DOUBLE && v != (double)(int64_t)v)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %g is not "
                               "a whole number", fn, l->field, v);
        limit_put(p, l, v);
    }
    if (p->token && strlen(p->token) + 64 > (size_t)p->unauthed_frame)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the token (%zu "
                           "bytes) does not fit in unauthed_frame %d, the "
                           "largest request before the token is shown", fn,
                           strlen(p->token), p->unauthed_frame);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_params_read(const char *fn,
                                       const dcoll_store_params_t *params,
                                       dcoll_store_params_t *p)
{
    *p = (dcoll_store_params_t)DCOLL_STORE_PARAMS_INIT;
    p->timeout = DCOLL_STORE_DEFAULT_TIMEOUT;
    if (params) {
        if (params->mask & ~PARAMS_KNOWN)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: params->mask 0x%llx has unknown bits",
                               fn, (unsigned long long)params->mask);
        p->mask = params->mask;
        if (p->mask & DCOLL_STORE_PARAM_TIMEOUT)
            p->timeout = params->timeout;
        if (p->mask & DCOLL_STORE_PARAM_TOKEN)
            p->token = params->token;
        if (p->mask & DCOLL_STORE_PARAM_SERVE)
            p->serve = params->serve;
    }
    if (!(p->timeout > 0) || p->timeout > 1e9)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: timeout %g s is not a positive number of "
                           "seconds", fn, p->timeout);
    if (p->serve != 0 && p->serve != 1)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: serve %d is neither 0 nor 1", fn, p->serve);
    if (!(p->mask & DCOLL_STORE_PARAM_TOKEN)) {
        const char *t = getenv("DCOLL_STORE_TOKEN");
        p->token = t && *t ? t : NULL;
    }
    if (p->token && strlen(p->token) > DCOLL_STORE_MAX_KEY)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: the token is longer than %d bytes", fn,
                           DCOLL_STORE_MAX_KEY);
    return read_limits(fn, params, p);
}

static dcoll_status_t check_store(const char *fn, const dcoll_store_t *s)
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

static dcoll_status_t check_key(const char *fn, const char *key)
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
        dcoll_status_t st = check_key(fn, keys[i]);
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

/* ---- prefix store ---- */

struct prefix_store {
    struct dcoll_store base;
    dcoll_store_t *inner;
    char *prefix;
};

static char *prefixed(dcoll_store_t *s, const char *key)
{
    struct prefix_store *ps = (struct prefix_store *)s;
    size_t a = strlen(ps->prefix), b = strlen(key);
    char *k = malloc(a + b + 2);
    if (!k)
        return NULL;
    memcpy(k, ps->prefix, a);
    k[a] = '/';
    memcpy(k + a + 1, key, b + 1);
    if (a + 1 + b > DCOLL_STORE_MAX_KEY) {
        free(k);
        errno = E2BIG;
        return NULL;
    }
    return k;
}

static dcoll_status_t key_error(const char *key)
{
    if (errno == E2BIG)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "prefix store: key '%.64s' with its prefix is over "
                           "%d bytes", key, DCOLL_STORE_MAX_KEY);
    return dcoll_error(DCOLL_ERR_NO_MEMORY, "prefix store: no memory");
}

#define INNER(s) (((struct prefix_store *)(s))->inner)
#define WITH_KEY(s, key, call)                                             \
    do {                                                                   \
        char *k_ = prefixed(s, key);                                       \
        if (!k_)                                                           \
            return key_error(key);                                         \
        dcoll_status_t st_ = (call);                                       \
        free(k_);                                                          \
        return st_;                                                        \
    } while (0)

static dcoll_status_t px_set(dcoll_store_t *s, const char *key, const void *v,
                             size_t n)
{
    WITH_KEY(s, key, INNER(s)->ops->set(INNER(s), k_, v, n));
}

static dcoll_status_t px_get(dcoll_store_t *s, const char *key, double t,
                             struct store_val *out)
{
    WITH_KEY(s, key, INNER(s)->ops->get(INNER(s), k_, t, out));
}

static dcoll_status_t px_add(dcoll_store_t *s, const char *key, int64_t d,
                             int64_t *sum)
{
    WITH_KEY(s, key, INNER(s)->ops->add(INNER(s), k_, d, sum));
}

static dcoll_status_t px_cas(dcoll_store_t *s, const char *key,
                             const void *e, size_t el, const void *d,
                             size_t dl, struct store_val *now)
{
    WITH_KEY(s, key, INNER(s)->ops->cas(INNER(s), k_, e, el, d, dl, now));
}

static dcoll_status_t px_del(dcoll_store_t *s, const char *key, int *deleted)
{
    WITH_KEY(s, key, INNER(s)->ops->del(INNER(s), k_, deleted));
}

static dcoll_status_t px_many(dcoll_store_t *s, const char *const *keys,
                              int n, double t, int *exist)
{
    char *ks[255];
    dcoll_status_t st = DCOLL_SUCCESS;
    int made = 0;
    for (; made < n; made++)
        if (!(ks[made] = prefixed(s, keys[made]))) {
            st = key_error(keys[made]);
            break;
        }
    if (!st)
        st = exist ? INNER(s)->ops->check(INNER(s), (const char *const *)ks,
                                          n, exist)
                   : INNER(s)->ops->wait(INNER(s), (const char *const *)ks,
                                         n, t);
    while (made--)
        free(ks[made]);
    return st;
}

static dcoll_status_t px_wait(dcoll_store_t *s, const char *const *keys,
                              int n, double t)
{
    return px_many(s, keys, n, t, NULL);
}

static dcoll_status_t px_check(dcoll_store_t *s, const char *const *keys,
                               int n, int *exist)
{
    return px_many(s, keys, n, 0, exist);
}

static dcoll_status_t px_num_keys(dcoll_store_t *s, int64_t *count)
{
    return INNER(s)->ops->num_keys(INNER(s), count);
}

static void px_destroy(dcoll_store_t *s)
{
    free(((struct prefix_store *)s)->prefix);
    free(s);
}

static const struct store_ops prefix_ops = {
    "prefix", px_set, px_get, px_add, px_cas, px_wait, px_check, px_del,
    px_num_keys, px_destroy,
};

dcoll_status_t dcoll_store_prefix_create(dcoll_store_t **out,
                                         const char *prefix,
                                         dcoll_store_t *base)
{
    static const char fn[] = "dcoll_store_prefix_create";
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *out = NULL;
    dcoll_status_t st = check_store(fn, base);
    if (st)
        return st;
    if ((st = check_key(fn, prefix)))
        return st;
    struct prefix_store *ps = calloc(1, sizeof(*ps));
    if (!ps || !(ps->prefix = strdup(prefix))) {
        free(ps);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    ps->base = (struct dcoll_store){DCOLL_STORE_MAGIC, &prefix_ops,
                                    base->timeout, base->port};
    ps->inner = base;
    *out = &ps->base;
    return DCOLL_SUCCESS;
}

/* ---- the public calls ---- */

dcoll_status_t dcoll_store_destroy(dcoll_store_t **store)
{
    if (!store)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_store_destroy: store is NULL");
    if (!*store)
        return DCOLL_SUCCESS;
    dcoll_status_t st = check_store("dcoll_store_destroy", *store);
    if (st)
        return st;
    (*store)->magic = DCOLL_DEAD_MAGIC;
    (*store)->ops->destroy(*store);
    *store = NULL;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_port(const dcoll_store_t *store, int *port)
{
    dcoll_status_t st = check_store("dcoll_store_port", store);
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
    if ((st = check_store(fn, store)) || (st = check_key(fn, key)) ||
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
    if ((st = check_store(fn, store)) || (st = check_key(fn, key)) ||
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
    if ((st = check_store(fn, store)) || (st = check_key(fn, key)))
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
    if ((st = check_store(fn, store)) || (st = check_key(fn, key)) ||
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
    if ((st = check_store(fn, store)) || (st = check_keys(fn, keys, nkeys)))
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
    if ((st = check_store(fn, store)) || (st = check_keys(fn, keys, nkeys)))
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
    if ((st = check_store(fn, store)) || (st = check_key(fn, key)))
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
    if ((st = check_store(fn, store)))
        return st;
    if (!count)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: count is NULL",
                           fn);
    return store->ops->num_keys(store, count);
}
