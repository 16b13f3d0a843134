/* The in-memory key/value table of the TCP server and the file store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store.h"
#include "store_table.h"

static size_t hash(const uint8_t *p, uint32_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return (size_t)(h ^ (h >> 29));
}

static bool same(const struct kv *e, struct wire_str k)
{
    return e->klen == k.len && memcmp(e->key, k.p, k.len) == 0;
}

/* The index slot that holds k, or the empty one where it would go. */
static size_t probe(const struct kv_table *t, struct wire_str k)
{
    size_t mask = t->nslot - 1, i = hash(k.p, k.len) & mask;
    while (t->slot[i] && !same(&t->kv[t->slot[i] - 1], k))
        i = (i + 1) & mask;
    return i;
}

/* Room in the index for one more entry, at most half full. */
static bool index_room(struct kv_table *t)
{
    if (2 * (t->n + 1) <= t->nslot)
        return true;
    size_t n = t->nslot ? 2 * t->nslot : 128;
    uint32_t *slot = calloc(n, sizeof(*slot));
    if (!slot)
        return false;
    free(t->slot);
    t->slot = slot;
    t->nslot = n;
    for (size_t i = 0; i < t->n; i++) {
        struct wire_str k = {t->kv[i].key, t->kv[i].klen};
        t->slot[probe(t, k)] = (uint32_t)(i + 1);
    }
    return true;
}

struct kv *kv_find(struct kv_table *t, struct wire_str k)
{
    if (!t->n)
        return NULL;
    uint32_t at = t->slot[probe(t, k)];
    return at ? &t->kv[at - 1] : NULL;
}

enum kv_result kv_put(struct kv_table *t, struct wire_str k,
                      struct wire_str v)
{
    struct kv *e = kv_find(t, k);
    size_t bytes = t->bytes + KV_COST(k.len, v.len) -
                   (e ? KV_COST(e->klen, e->vlen) : 0);
    if (t->limit && bytes > t->limit && bytes > t->bytes)
        return KV_FULL;
    uint8_t *val = malloc(v.len ? v.len : 1);
    if (!val)
        return KV_NO_MEMORY;
    if (v.len)
        memcpy(val, v.p, v.len);
    if (!e) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 64;
            struct kv *kv = realloc(t->kv, cap * sizeof(*kv));
            if (!kv) {
                free(val);
                return KV_NO_MEMORY;
            }
            t->kv = kv;
            t->cap = cap;
        }
        uint8_t *key = malloc(k.len ? k.len : 1);
        if (!key || !index_room(t)) {
            free(key);
            free(val);
            return KV_NO_MEMORY;
        }
        memcpy(key, k.p, k.len);
        t->slot[probe(t, k)] = (uint32_t)(t->n + 1);
        e = &t->kv[t->n++];
        *e = (struct kv){key, NULL, k.len, 0};
    }
    free(e->val);
    e->val = val;
    e->vlen = v.len;
    t->bytes = bytes;
    return KV_OK;
}

bool kv_erase(struct kv_table *t, struct wire_str k)
{
    if (!t->n)
        return false;
    size_t mask = t->nslot - 1, hole = probe(t, k);
    uint32_t at = t->slot[hole];
    if (!at)
        return false;
    /* Empty the slot, then pull back the rest of its run where their
     * probe would now stop short of them. */
    t->slot[hole] = 0;
    for (size_t j = (hole + 1) & mask; t->slot[j]; j = (j + 1) & mask) {
        const struct kv *o = &t->kv[t->slot[j] - 1];
        size_t home = hash(o->key, o->klen) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            t->slot[hole] = t->slot[j];
            t->slot[j] = 0;
            hole = j;
        }
    }
    struct kv *e = &t->kv[at - 1];
    t->bytes -= KV_COST(e->klen, e->vlen);
    free(e->key);
    free(e->val);
    /* The last entry fills the gap in the array; its slot follows. */
    size_t last = --t->n;
    if (at - 1 != last) {
        struct wire_str lk = {t->kv[last].key, t->kv[last].klen};
        t->slot[probe(t, lk)] = at;
        *e = t->kv[last];
    }
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
    free(t->slot);
    size_t limit = t->limit;
    *t = (struct kv_table){0};
    t->limit = limit;
}

enum kv_result kv_add(struct kv_table *t, struct wire_str key, int64_t delta,
                      int64_t *sum)
{
    struct kv *e = kv_find(t, key);
    int64_t v = 0;
    if (e && !dcoll_store_parse_int(e->val, e->vlen, &v))
        return KV_NOT_NUMBER;
    if (__builtin_add_overflow(v, delta, &v))
        return KV_OVERFLOW;
    char text[24];
    int n = snprintf(text, sizeof(text), "%lld", (long long)v);
    enum kv_result r = kv_put(t, key,
                              (struct wire_str){(uint8_t *)text, (uint32_t)n});
    if (r == KV_OK)
        *sum = v;
    return r;
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
        enum kv_result r = kv_put(t, key, desired);
        if (r != KV_OK)
            return r;
        e = kv_find(t, key);
    }
    *now = e;
    return KV_OK;
}
