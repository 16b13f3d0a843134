/* Host memory for staging GPU buffers, one pool for the whole process.
 * Page-locking memory (cudaMallocHost) and releasing it wait for every
 * stream of the device, so blocks are made once and reused by every
 * group and call, never made per call. The pool pins at most
 * DCOLL_STAGE_PINNED bytes in all; a call that finds no room gets
 * ordinary memory, which CUDA copies to and from correctly, only slower
 * (through the driver's own pinned buffers). And the settings of the
 * staged path: its pinned budget and its pipeline's chunk. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "bytes.h"
#include "gpu.h"
#include "plugin_abi.h"

#ifndef DCOLL_STAGE_CHUNK_DEFAULT
#define DCOLL_STAGE_CHUNK_DEFAULT ((size_t)1 << 20)
#endif
#define PINNED_DEFAULT ((size_t)256 << 20)

size_t dcoll_stage_chunk = DCOLL_STAGE_CHUNK_DEFAULT;
static size_t budget = PINNED_DEFAULT;

struct block {
    struct block *next;
    char *p;
    size_t bytes;
    bool busy;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *blocks;
static size_t pinned, busy;   /* bytes pinned; of them, in use */

dcoll_status_t dcoll_stage_env(void)
{
    const char *v = getenv("DCOLL_STAGE_CHUNK");
    dcoll_stage_chunk = DCOLL_STAGE_CHUNK_DEFAULT;
    if (v && *v && (!dcoll_parse_bytes(v, &dcoll_stage_chunk) ||
                    dcoll_stage_chunk < 4096 ||
                    dcoll_stage_chunk > ((size_t)1 << 30)))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_STAGE_CHUNK='%s' is not a size from 4K to "
                           "1G (bytes, or with K, M or G)", v);
    /* Whole pages: the ranks compare it in 4 KiB (dcoll_fault_agree). */
    dcoll_stage_chunk &= ~(size_t)4095;
    v = getenv("DCOLL_STAGE_PINNED");
    budget = PINNED_DEFAULT;
    if (v && *v && !dcoll_parse_bytes(v, &budget))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_STAGE_PINNED='%s' is not a size (bytes, or "
                           "with K, M or G; 0: pin nothing)", v);
    return DCOLL_SUCCESS;
}

/* Idle blocks released, to make room for a bigger one. */
static void drop_idle(void)
{
    for (struct block **at = &blocks; *at;) {
        struct block *b = *at;
        if (b->busy) {
            at = &b->next;
            continue;
        }
        *at = b->next;
        pinned -= b->bytes;
        dcoll_gpu_plugin->host_free(b->p);
        free(b);
    }
}

char *dcoll_stage_take(size_t bytes, bool *is_pinned)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    if (!bytes)
        bytes = 1;
    pthread_mutex_lock(&lock);
    struct block *best = NULL;
    for (struct block *b = blocks; b; b = b->next)
        if (!b->busy && b->bytes >= bytes && (!best || b->bytes < best->bytes))
            best = b;
    if (!best && busy <= budget && bytes <= budget - busy) {
        /* Room once the idle blocks go: one fitting block is made. */
        if (pinned + bytes > budget)
            drop_idle();
        struct block *b = calloc(1, sizeof(*b));
        if (b && (b->p = cu->host_alloc(bytes))) {
            b->bytes = bytes;
            b->next = blocks;
            blocks = b;
            pinned += bytes;
            best = b;
        } else {
            free(b);
        }
    }
    char *p = NULL;
    if (best) {
        best->busy = true;
        busy += best->bytes;
        p = best->p;
    }
    pthread_mutex_unlock(&lock);
    *is_pinned = p != NULL;
    return p ? p : malloc(bytes);
}

void dcoll_stage_give(char *p, bool is_pinned)
{
    if (!is_pinned) {
        free(p);
        return;
    }
    pthread_mutex_lock(&lock);
    for (struct block *b = blocks; b; b = b->next)
        if (b->p == p) {
            b->busy = false;
            busy -= b->bytes;
            break;
        }
    pthread_mutex_unlock(&lock);
}

void dcoll_stage_release(void)
{
    pthread_mutex_lock(&lock);
    if (dcoll_gpu_plugin)
        drop_idle();
    pthread_mutex_unlock(&lock);
}

size_t dcoll_stage_pinned(void)
{
    pthread_mutex_lock(&lock);
    size_t n = pinned;
    pthread_mutex_unlock(&lock);
    return n;
}
