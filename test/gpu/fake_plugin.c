/* A test double of the CUDA plugin, for the staged path's tests on
 * machines without a GPU. Its "device memory" is an arena that stays
 * PROT_NONE except inside the plugin's own copies, so any code that
 * touches a device pointer directly (the core, or MPI handed one by
 * mistake) crashes the test instead of passing it. Never installed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "plugin_abi.h"

#define ARENA ((size_t)64 << 20)
static char *arena;
static size_t used;

static void open_arena(void)
{
    if (!arena) {
        arena = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
        if (arena == MAP_FAILED)
            arena = NULL;
    }
}

static int in_arena(const void *p)
{
    return arena && (const char *)p >= arena && (const char *)p < arena + ARENA;
}

static void probe(int *ngpus, char *why, size_t len)
{
    (void)why, (void)len;
    open_arena();
    *ngpus = arena ? 1 : 0;
}

static void versions(int *rt, int *drv, int *nccl) { *rt = *drv = *nccl = 0; }

static int pci_bus_id(int i, char *busid, size_t len)
{
    (void)i;
    strncpy(busid, "fake", len);
    return 0;
}

static enum dcoll_mem_kind mem_kind(const void *p, int *device)
{
    *device = in_arena(p) ? 0 : -1;
    return in_arena(p) ? DCOLL_MEM_DEVICE : DCOLL_MEM_HOST;
}

static void *host_alloc(size_t bytes) { return malloc(bytes); }
static void host_free(void *p) { free(p); }

static int copy(void *dst, const void *src, size_t bytes, int device,
                void *stream)
{
    (void)device, (void)stream;
    mprotect(arena, ARENA, PROT_READ | PROT_WRITE);
    memmove(dst, src, bytes);
    mprotect(arena, ARENA, PROT_NONE);
    return 0;
}

static int sync_stream(int device, void *stream)
{
    (void)device, (void)stream;
    return 0;
}

static const char *last_error(void) { return "fake plugin"; }

static int select_device(int local_rank, int *device, char *how, size_t len)
{
    (void)local_rank;
    *device = 0;
    strncpy(how, "GPU 0, the fake one", len);
    return 0;
}

/* No NCCL: every device call takes the staged path. */
static const struct dcoll_cuda_plugin table = {
    .abi = DCOLL_PLUGIN_ABI, .probe = probe, .versions = versions,
    .pci_bus_id = pci_bus_id, .mem_kind = mem_kind,
    .host_alloc = host_alloc, .host_free = host_free, .copy = copy,
    .sync = sync_stream, .last_error = last_error,
    .select_device = select_device,
};

__attribute__((visibility("default")))
const struct dcoll_cuda_plugin *dcoll_cuda_plugin_v5(void);
const struct dcoll_cuda_plugin *dcoll_cuda_plugin_v5(void) { return &table; }

/* For the test: "device" memory, and copies in and out of it. */
__attribute__((visibility("default"))) void *fake_device_alloc(size_t bytes);
void *fake_device_alloc(size_t bytes)
{
    open_arena();
    bytes = (bytes + 63) & ~(size_t)63;
    if (!arena || used + bytes > ARENA)
        return NULL;
    used += bytes;
    return arena + used - bytes;
}

__attribute__((visibility("default")))
void fake_device_copy(void *dst, const void *src, size_t bytes);
void fake_device_copy(void *dst, const void *src, size_t bytes)
{
    copy(dst, src, bytes, 0, NULL);
}
