/* A test double of the CUDA plugin, for the staged path's tests on
 * machines without a GPU. Its "device memory" is an arena that stays
 * PROT_NONE except inside the plugin's own calls, so any code that
 * touches a device pointer directly (the core, or MPI handed one by
 * mistake) crashes the test instead of passing it.
 *   FAKE_NGPUS=n   n GPUs per process (1..4), the arena split among them;
 *   FAKE_NCCL=1    an NCCL of its own (fake_nccl.c): collectives through
 *                  shared memory between the processes of one machine,
 *                  with NCCL's grouping rules enforced;
 *   FAKE_SHARED_UUID=1  every process's GPU i has the same identity, as
 *                  processes sharing real GPUs do.
 *   FAKE_NO_COPY_SHAPE=1  no copy_shape: strided copies row by row.
 * Built with this build's identity (fake_cuda_plugin), and once more
 * with another build's (fake_cuda_plugin_other), which the loader must
 * refuse.
 * Never installed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fake_nccl.h"
#include "plugin_abi.h"
#include "plugin_build.h"

#define ARENA ((size_t)64 << 20)
#define MAX_GPUS 4
static char *arena;
static int ngpus = 1;
static size_t used[MAX_GPUS];

static void open_arena(void)
{
    if (!arena) {
        const char *e = getenv("FAKE_NGPUS");
        ngpus = e ? atoi(e) : 1;
        if (ngpus < 1 || ngpus > MAX_GPUS)
            ngpus = 1;
        arena = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
        if (arena == MAP_FAILED)
            arena = NULL;
    }
}

/* Each GPU's share of the arena, 64-byte aligned like cudaMalloc's. */
static size_t region(void)
{
    return (ARENA / (size_t)ngpus) & ~(size_t)63;
}

static int in_arena(const void *p)
{
    return arena && (const char *)p >= arena && (const char *)p < arena + ARENA;
}

void fake_open_device_memory(int on)
{
    if (arena)
        mprotect(arena, ARENA, on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static void probe(int *n, char *why, size_t len)
{
    (void)why, (void)len;
    open_arena();
    *n = arena ? ngpus : 0;
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
    *device = in_arena(p) ? (int)((size_t)((const char *)p - arena) /
                                  region())
                          : -1;
    return in_arena(p) ? DCOLL_MEM_DEVICE : DCOLL_MEM_HOST;
}

static void *host_alloc(size_t bytes) { return malloc(bytes); }
static void host_free(void *p) { free(p); }

static int copy(void *dst, const void *src, size_t bytes, int device,
                void *stream)
{
    (void)device, (void)stream;
    fake_open_device_memory(1);
    memmove(dst, src, bytes);
    fake_open_device_memory(0);
    return 0;
}

static int sync_stream(int device, void *stream)
{
    (void)device, (void)stream;
    return 0;
}

static const char *last_error(void)
{
    const char *e = fake_nccl_error();
    return *e ? e : "fake plugin";
}

static int select_device(int local_rank, int *device, char *how, size_t len)
{
    (void)local_rank;
    *device = 0;
    strncpy(how, "GPU 0, the fake one", len);
    return 0;
}

/* A GPU's identity: this process's own, unless FAKE_SHARED_UUID. */
static int device_uuid(int device, unsigned char uuid[16])
{
    memset(uuid, 0, 16);
    unsigned pid = getenv("FAKE_SHARED_UUID") ? 0 : (unsigned)getpid();
    memcpy(uuid, &pid, sizeof(pid));
    memcpy(uuid + 8, &device, sizeof(device));
    return 0;
}

static int copy_shape(const dcoll_plugin_shape_t *dst,
                      const dcoll_plugin_shape_t *src, int device,
                      void *stream)
{
    (void)device, (void)stream;
    fake_open_device_memory(1);
    for (size_t k = 0; k < src->planes; k++)
        for (size_t i = 0; i < src->rows; i++)
            memmove(dst->buf + k * dst->plane_pitch + i * dst->pitch,
                    src->buf + k * src->plane_pitch + i * src->pitch,
                    src->width);
    fake_open_device_memory(0);
    return 0;
}

/* Without IPC (its calls NULL), gpu_view, nccl_split, nccl_shrink or
 * nccl_exchange, so that the core's paths for a plugin without each run:
 * it chooses the GPU with select_device, a group makes its communicator
 * from an id, neighbourhood calls stage. */
static dcoll_cuda_plugin_t table = {
    .id = {DCOLL_PLUGIN_MAGIC, sizeof(dcoll_cuda_plugin_t),
           DCOLL_BUILD_VERSION, DCOLL_BUILD_ID},
    .probe = probe, .versions = versions,
    .pci_bus_id = pci_bus_id, .mem_kind = mem_kind,
    .host_alloc = host_alloc, .host_free = host_free, .copy = copy,
    .sync = sync_stream, .last_error = last_error,
    .select_device = select_device,
};

__attribute__((visibility("default")))
const dcoll_cuda_plugin_t *dcoll_cuda_plugin(void);
const dcoll_cuda_plugin_t *dcoll_cuda_plugin(void)
{
    /* FAKE_NO_COPY_SHAPE=1: strided copies row by row through copy. */
    const char *e = getenv("FAKE_NO_COPY_SHAPE");
    table.copy_shape = e && *e == '1' ? NULL : copy_shape;
    /* Without FAKE_NCCL, no NCCL: every device call is staged. */
    e = getenv("FAKE_NCCL");
    if (e && *e == '1') {
        table.nccl_bytes = FAKE_NCCL_ID_BYTES;
        table.device_uuid = device_uuid;
        table.nccl_id = fake_nccl_id;
        table.nccl_comm = fake_nccl_comm;
        table.nccl_free = fake_nccl_free;
        table.nccl_coll = fake_nccl_coll;
        table.nccl_wait = fake_nccl_wait;
        table.event_record = fake_event_record;
        table.event_poll = fake_event_poll;
        table.event_wait = fake_event_wait;
        table.event_free = fake_event_free;
        table.nccl_comms = fake_nccl_comms;
        table.group_start = fake_group_start;
        table.group_end = fake_group_end;
        table.nccl_takes = fake_nccl_takes;
    }
    return &table;
}

/* For the test: "device" memory on GPU 0 or another, and copies in and
 * out of it. */
__attribute__((visibility("default")))
void *fake_device_alloc_on(int device, size_t bytes);
void *fake_device_alloc_on(int device, size_t bytes)
{
    open_arena();
    bytes = (bytes + 63) & ~(size_t)63;
    if (!arena || device < 0 || device >= ngpus ||
        used[device] + bytes > region())
        return NULL;
    used[device] += bytes;
    return arena + region() * (size_t)device + used[device] - bytes;
}

__attribute__((visibility("default"))) void *fake_device_alloc(size_t bytes);
void *fake_device_alloc(size_t bytes)
{
    return fake_device_alloc_on(0, bytes);
}

__attribute__((visibility("default")))
void fake_device_copy(void *dst, const void *src, size_t bytes);
void fake_device_copy(void *dst, const void *src, size_t bytes)
{
    copy(dst, src, bytes, 0, NULL);
}
