/* The peers' allocations a rank has mapped (ipc_cache.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ipc_cache.h"

struct entry {
    struct entry *next;
    int peer, refs;
    uint64_t base, used;   /* used: the cache's clock at the last get */
    unsigned char handle[DCOLL_IPC_HANDLE_BYTES];
    void *p;
};

struct dcoll_ipc_cache {
    const dcoll_cuda_plugin_t *cu;
    int device, max, n;
    uint64_t clock;
    struct entry *head;
    char why[200];   /* the last get's failure */
};

static int fail(struct dcoll_ipc_cache *c, const char *why)
{
    snprintf(c->why, sizeof(c->why), "%s", why);
    return -1;
}

struct dcoll_ipc_cache *dcoll_ipc_cache_new(const dcoll_cuda_plugin_t *cu,
                                            int device, int max)
{
    struct dcoll_ipc_cache *c = calloc(1, sizeof(*c));
    if (c) {
        c->cu = cu;
        c->device = device;
        c->max = max > 0 ? max : 1;
    }
    return c;
}

/* Close and drop *at's entry. */
static void drop(struct dcoll_ipc_cache *c, struct entry **at)
{
    struct entry *e = *at;
    *at = e->next;
    c->cu->ipc_close(e->p, c->device);
    free(e);
    c->n--;
}

/* Close the unused mappings of peer (all: -1), or beyond the bound the
 * least recently used unused one. */
static void close_unused(struct dcoll_ipc_cache *c, int peer)
{
    for (struct entry **at = &c->head; *at;)
        if (!(*at)->refs && (peer < 0 || (*at)->peer == peer))
            drop(c, at);
        else
            at = &(*at)->next;
}

static void bound(struct dcoll_ipc_cache *c)
{
    int unused = 0;
    for (struct entry *e = c->head; e; e = e->next)
        unused += !e->refs;
    while (unused-- > c->max) {
        struct entry **oldest = NULL;
        for (struct entry **at = &c->head; *at; at = &(*at)->next)
            if (!(*at)->refs && (!oldest || (*at)->used < (*oldest)->used))
                oldest = at;
        drop(c, oldest);
    }
}

void dcoll_ipc_cache_free(struct dcoll_ipc_cache *c)
{
    if (!c)
        return;
    while (c->head)
        drop(c, &c->head);
    free(c);
}

int dcoll_ipc_cache_get(struct dcoll_ipc_cache *c, int peer, uint64_t base,
                        const unsigned char handle[DCOLL_IPC_HANDLE_BYTES],
                        void **p)
{
    c->clock++;
    for (struct entry **at = &c->head; *at; at = &(*at)->next) {
        struct entry *e = *at;
        if (e->peer != peer || e->base != base)
            continue;
        if (!memcmp(e->handle, handle, DCOLL_IPC_HANDLE_BYTES)) {
            e->refs++;
            e->used = c->clock;
            *p = e->p;
            return 0;
        }
        if (e->refs)   /* freed by its peer while a call reads it */
            return fail(c, "a peer's allocation changed while a call "
                           "still uses it");
        drop(c, at);   /* freed and allocated again: stale */
        break;
    }
    struct entry *e = calloc(1, sizeof(*e));
    if (!e)
        return fail(c, "no memory");
    int rc = c->cu->ipc_open(handle, c->device, &e->p);
    if (rc == 1) {   /* over a stale mapping of that peer's: close, again */
        close_unused(c, peer);
        rc = c->cu->ipc_open(handle, c->device, &e->p);
    }
    if (rc) {
        free(e);
        return fail(c, rc == 1 ? "a peer's allocation over a range "
                                 "still mapped here"
                               : c->cu->last_error());
    }
    e->next = c->head;
    e->peer = peer;
    e->refs = 1;
    e->base = base;
    e->used = c->clock;
    memcpy(e->handle, handle, DCOLL_IPC_HANDLE_BYTES);
    c->head = e;
    c->n++;
    bound(c);
    *p = e->p;
    return 0;
}

void dcoll_ipc_cache_put(struct dcoll_ipc_cache *c, void *p)
{
    for (struct entry *e = c->head; e; e = e->next)
        if (e->p == p && e->refs > 0) {
            e->refs--;
            break;
        }
    bound(c);
}

void dcoll_ipc_cache_trim(struct dcoll_ipc_cache *c)
{
    close_unused(c, -1);
}

int dcoll_ipc_cache_open(const struct dcoll_ipc_cache *c)
{
    return c->n;
}

const char *dcoll_ipc_cache_why(const struct dcoll_ipc_cache *c)
{
    return c->why;
}
