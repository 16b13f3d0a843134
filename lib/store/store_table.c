/* The in-memory key/value table of the TCP server and the file store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store.h"
#include "store_table.h"

struct kv *kv_find(struct kv_table *t, struct wire_str k)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->kv[i].klen == k.len && memcmp(t->kv[i].key, k.p, k.len) == 0)
            return &t->kv[i];
    return NULL;
}

bool kv_put(struct kv_table *t, struct wire_str k, struct wire_str v)
{
    uint8_t *val = malloc(v.len ? v.len : 1);
    if (!val)
        return false;
    if (v.len)
        memcpy(val, v.p, v.len);
    struct kv *e = kv_find(t, k);
    if (!e) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 64;
            struct kv *kv = realloc(t->kv, cap * sizeof(*kv));
            if (!kv) {
                free(val);
                return false;
            }
            t->kv = kv;
            t->cap = cap;
        }
        uint8_t *key = malloc(k.len ? k.len : 1);
        if (!key) {
            free(val);
            return false;
        }
        memcpy(key, k.p, k.len);
        e = &t->kv[t->n++];
        *e = (struct kv){key, NULL, k.len, 0};
    }
    free(e->val);
    e->val = val;
    e->vlen = v.len;
    return true;
}

bool kv_erase(struct kv_table *t, struct wire_str k)
{
    struct kv *e = kv_find(t, k);
    if (!e)
        return false;
    free(e->key);
    free(e->val);
    *e = t->kv[--t->n];
    return true;
}

bool kv_all(struct kv_table *t, int n, const struct wire_str *keys)
{
    for (int i = 0; i < n; i++)
        if (!kv_find(t, keys[i]))
            return false;
    return true;
}

void kv_free(struct kv_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->kv[i].key);
        free(t->kv[i].val);
    }
    free(t->kv);
    *t = (struct kv_table){0};
}

enum kv_result kv_add(struct kv_table *t, struct wire_str key, int64_t delta,
                      int64_t *sum)
{
    struct kv *e = kv_find(t, key);
    int64_t v = 0;
    if (e && !dcoll_store_parse_int(e->val, e->vlen, &v))
        return KV_NOT_NUMBER;
    if (__builtin_add_overflow(v, delta, &v))
        return KV_NOT_NUMBER;
    char text[24];
    int n = snprintf(text, sizeof(text), "%lld", (long long)v);
    if (!kv_put(t, key, (struct wire_str){(uint8_t *)text, (uint32_t)n}))
        return KV_NO_MEMORY;
    *sum = v;
    return KV_OK;
}

enum kv_result kv_cas(struct kv_table *t, struct wire_str key,
                      struct wire_str expected, struct wire_str desired,
                      struct kv **now)
{
    struct kv *e = kv_find(t, key);
    bool match = e ? e->vlen == expected.len &&
                         (!e->vlen || !memcmp(e->val, expected.p, e->vlen))
                   : expected.len == 0;
    if (match) {
        if (!kv_put(t, key, desired))
            return KV_NO_MEMORY;
        e = kv_find(t, key);
    }
    *now = e;
    return KV_OK;
}
