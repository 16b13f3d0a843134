/* The prefix store: another store's keys under a prefix. It only rewrites
 * keys; everything else is the inner store's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "store.h"

struct prefix_store {
    struct dcoll_store base;
    dcoll_store_t *inner;
    char *prefix;
    bool owns_inner;      /* dcoll_store_prefix_over: inner goes with it */
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

static dcoll_status_t key_error(dcoll_store_t *s, const char *key)
{
    struct prefix_store *ps = (struct prefix_store *)s;
    if (errno == E2BIG) {
        size_t a = strlen(ps->prefix), b = strlen(key);
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "prefix store: key of %zu bytes ('%.32s%s') is "
                           "%zu bytes with its prefix '%.64s/', over %d", b,
                           key, b > 32 ? "..." : "", a + 1 + b, ps->prefix,
                           DCOLL_STORE_MAX_KEY);
    }
    return dcoll_error(DCOLL_ERR_NO_MEMORY, "prefix store: no memory");
}

#define INNER(s) (((struct prefix_store *)(s))->inner)
#define WITH_KEY(s, key, call)                                             \
    do {                                                                   \
        char *k_ = prefixed(s, key);                                       \
        if (!k_)                                                           \
            return key_error(s, key);                                      \
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
            st = key_error(s, keys[made]);
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
    struct prefix_store *ps = (struct prefix_store *)s;
    if (ps->owns_inner)
        dcoll_store_destroy(&ps->inner);
    free(ps->prefix);
    free(ps);
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
    dcoll_status_t st = dcoll_store_check_handle(fn, base);
    if (st)
        return st;
    if ((st = dcoll_store_check_key(fn, prefix)))
        return st;
    struct prefix_store *ps = calloc(1, sizeof(*ps));
    if (!ps || !(ps->prefix = strdup(prefix))) {
        free(ps);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    ps->base = (struct dcoll_store){DCOLL_STORE_MAGIC, &prefix_ops,
                                    base->timeout, base->port, false};
    ps->inner = base;
    *out = &ps->base;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_prefix_over(dcoll_store_t **out,
                                       const char *prefix,
                                       dcoll_store_t *base)
{
    dcoll_status_t st = dcoll_store_prefix_create(out, prefix, base);
    if (!st)
        ((struct prefix_store *)*out)->owns_inner = true;
    return st;
}
