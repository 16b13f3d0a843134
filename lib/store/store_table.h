/* A store's keys and values in memory: what the TCP server holds and what
 * the file store replays its file into. Not installed. */
#ifndef DCOLL_LIB_STORE_TABLE_H
#define DCOLL_LIB_STORE_TABLE_H

#include <stdbool.h>
#include "store_wire.h"

struct kv {
    uint8_t *key, *val;
    uint32_t klen, vlen;
};

/* The entries in one array, found through an open-addressing index of
 * their positions (linear probing, no tombstones): a rendezvous of
 * thousands of ranks holds a few keys for each. */
struct kv_table {
    struct kv *kv;
    size_t n, cap;
    uint32_t *slot;   /* position + 1, 0: empty; nslot a power of two */
    size_t nslot;
    size_t bytes;     /* what the entries hold, as KV_COST counts it */
    size_t limit;     /* most bytes it may hold; 0: no limit */
};

/* What one entry costs against the limit: its key, its value and the
 * table's own bookkeeping for it. */
#define KV_COST(klen, vlen) ((size_t)(klen) + (vlen) + 48)

enum kv_result { KV_OK, KV_NOT_NUMBER, KV_NO_MEMORY, KV_FULL, KV_OVERFLOW };

struct kv *kv_find(struct kv_table *t, struct wire_str key);
/* Set key to val. KV_FULL: it would take the table past its limit, and
 * nothing changed. */
enum kv_result kv_put(struct kv_table *t, struct wire_str key,
                      struct wire_str val);
bool kv_erase(struct kv_table *t, struct wire_str key);
bool kv_all(struct kv_table *t, int n, const struct wire_str *keys);
void kv_free(struct kv_table *t);

/* The integer under key (0 if missing) plus delta, stored as decimal
 * text; KV_NOT_NUMBER if the value is not an integer, KV_OVERFLOW if
 * the sum leaves int64 (the value then stays). */
enum kv_result kv_add(struct kv_table *t, struct wire_str key, int64_t delta,
                      int64_t *sum);

/* Compare-and-set: desired replaces the value if it equals expected, or if
 * the key is missing and expected is empty. *now is the entry after the
 * call, NULL if the key is (still) missing. */
enum kv_result kv_cas(struct kv_table *t, struct wire_str key,
                      struct wire_str expected, struct wire_str desired,
                      struct kv **now);

#endif
