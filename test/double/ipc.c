/* The CUDA double's interprocess half (cudaIpc*), as CUDA behaves where a
 * transport between processes sharing a GPU depends on it:
 *   - a memory handle names one allocation (cudaMalloc's base) and its
 *     generation: memory freed and allocated again at the same address
 *     gets a new handle; the importer maps the exporter's pages (the
 *     arena's memfd, through /proc/PID/fd: the same user, as CUDA IPC
 *     needs), so that both see the same bytes;
 *   - opening a handle already open in this process counts a reference
 *     and returns the same pointer; a handle of other memory over a range
 *     still open gives cudaErrorAlreadyMapped (an importer that kept a
 *     freed allocation's mapping); a handle whose memory was freed gives
 *     cudaErrorMapBufferObjectFailed; this process's own gives
 *     cudaErrorDeviceUninitialized;
 *   - an interprocess event (cudaEventInterprocess, which needs
 *     cudaEventDisableTiming) lives in shared memory: a record counts
 *     itself when it is made and is done when its stream gets there; a
 *     wait binds to the records made before the wait call, so that a
 *     peer that waits before the record it meant sees nothing to wait
 *     for, as on a GPU.
 * Never installed: tests only. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "cudart_double.h"
#include "cudart_internal.h"

#define MAGIC_MEM 0x66436d49u   /* "ImCf" */
#define MAGIC_EVENT 0x66436549u
#define SLOTS 4096              /* exported allocations, events: each */

/* What a handle carries (64 bytes at most). */
struct mem_handle {
    uint32_t magic;
    int32_t pid, arena_fd, table_fd;
    uint32_t slot, device;
    uint64_t off, size;    /* the allocation, in the arena's file */
    uint64_t gen;
};

struct event_handle {
    uint32_t magic;
    int32_t pid, table_fd;
    uint32_t slot;
    uint64_t gen;
};

/* One process's shared tables: its exported allocations (live while not
 * freed) and its interprocess events. */
struct export_slot {
    _Atomic uint64_t gen;   /* 0: free */
    uint64_t off;
};

struct table {
    struct export_slot mem[SLOTS];
    struct fake_ipc_event ev[SLOTS];
};

_Static_assert(sizeof(struct mem_handle) <= CUDA_IPC_HANDLE_SIZE, "");
_Static_assert(sizeof(struct event_handle) <= CUDA_IPC_HANDLE_SIZE, "");

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table *mine;
static int mine_fd = -1;

static struct table *own_table(void)
{
    pthread_mutex_lock(&lock);
    if (!mine) {
        int fd = memfd_create("fake-cuda-ipc", 0);
        void *t = MAP_FAILED;
        if (fd >= 0 && ftruncate(fd, (off_t)sizeof(struct table)) == 0)
            t = mmap(NULL, sizeof(struct table), PROT_READ | PROT_WRITE,
                     MAP_SHARED, fd, 0);
        if (t == MAP_FAILED) {
            perror("fake CUDA: IPC table");
            abort();
        }
        mine = t;
        mine_fd = fd;   /* kept open: peers map it through /proc */
    }
    pthread_mutex_unlock(&lock);
    return mine;
}

/* A peer's file descriptor, opened through /proc (-1: gone). */
static int peer_fd(int pid, int fd)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    return open(path, O_RDWR | O_CLOEXEC);
}

/* Peers' tables, mapped once each. */
static struct peer {
    int pid;
    struct table *t;
} peers[64];
static int npeers;

static struct table *peer_table(int pid, int fd)
{
    struct table *t = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < npeers && !t; i++)
        if (peers[i].pid == pid)
            t = peers[i].t;
    if (!t && npeers < 64) {
        int f = peer_fd(pid, fd);
        void *m = f < 0 ? MAP_FAILED
                        : mmap(NULL, sizeof(struct table),
                               PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        if (f >= 0)
            close(f);
        if (m != MAP_FAILED) {
            t = m;
            peers[npeers++] = (struct peer){pid, t};
        }
    }
    pthread_mutex_unlock(&lock);
    return t;
}

/* ---- memory ---- */

/* Imports of peers' memory: each a device mapping (no host access, as
 * the arena's) and a shadow the double works on. */
struct import {
    struct import *next;
    int pid, device, refs;
    uint64_t off, size, gen;
    char *dev, *shadow;   /* page-aligned mappings */
    size_t len, lead;     /* their length; the allocation's offset in them */
};
static struct import *imports;

bool fake_ipc_find(const void *p, void **shadow, int *device)
{
    const char *c = p;
    bool found = false;
    pthread_mutex_lock(&lock);
    for (struct import *m = imports; m && !found; m = m->next)
        if (c >= m->dev && c < m->dev + m->len) {
            found = true;
            if (shadow)
                *shadow = m->shadow + (c - m->dev);
            if (device)
                *device = m->device;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    fake_init();
    size_t off, size;
    uint64_t gen;
    int device;
    if (!h || !fake_block_of(p, &device, &off, &size, &gen))
        return fake_ret(cudaErrorInvalidValue);   /* not cudaMalloc's base */
    struct table *t = own_table();
    uint32_t slot = SLOTS;
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < SLOTS && slot == SLOTS; i++)
        if (atomic_load(&t->mem[i].gen) == gen)
            slot = i;
    for (uint32_t i = 0; i < SLOTS && slot == SLOTS; i++)
        if (atomic_load(&t->mem[i].gen) == 0) {
            slot = i;
            t->mem[i].off = off;
            atomic_store(&t->mem[i].gen, gen);
        }
    pthread_mutex_unlock(&lock);
    if (slot == SLOTS)
        return fake_ret(cudaErrorMemoryAllocation);
    struct mem_handle m = {MAGIC_MEM, (int32_t)getpid(), fake_arena_fd(),
                           mine_fd, slot, (uint32_t)device, off, size, gen};
    memset(h, 0, sizeof(*h));
    memcpy(h->reserved, &m, sizeof(m));
    return cudaSuccess;
}

/* cudaFree of an allocation: a handle of it opens no more. */
void fake_ipc_freed(uint64_t gen)
{
    if (!mine)
        return;
    for (uint32_t i = 0; i < SLOTS; i++) {
        uint64_t g = gen;
        if (atomic_compare_exchange_strong(&mine->mem[i].gen, &g, 0))
            break;
    }
}

static _Atomic long opens;

API long fake_cuda_ipc_opens(void)
{
    return atomic_load(&opens);
}

API cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h,
                                     unsigned flags)
{
    fake_init();
    struct mem_handle m;
    memcpy(&m, h.reserved, sizeof(m));
    if (!p || flags != cudaIpcMemLazyEnablePeerAccess || m.magic != MAGIC_MEM)
        return fake_ret(cudaErrorInvalidValue);
    if (m.pid == getpid())
        return fake_ret(cudaErrorDeviceUninitialized);
    struct table *t = peer_table(m.pid, m.table_fd);
    if (!t || m.slot >= SLOTS || atomic_load(&t->mem[m.slot].gen) != m.gen)
        return fake_ret(cudaErrorMapBufferObjectFailed);
    pthread_mutex_lock(&lock);
    for (struct import *i = imports; i; i = i->next) {
        if (i->pid != m.pid || i->off >= m.off + m.size ||
            m.off >= i->off + i->size)
            continue;
        cudaError_t e = cudaErrorAlreadyMapped;
        if (i->gen == m.gen && i->off == m.off) {
            atomic_fetch_add(&opens, 1);
            i->refs++;
            *p = i->dev + i->lead;
            e = cudaSuccess;
        }
        pthread_mutex_unlock(&lock);
        return e == cudaSuccess ? e : fake_ret(e);
    }
    pthread_mutex_unlock(&lock);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t lo = m.off & ~(pg - 1), hi = (m.off + m.size + pg - 1) & ~(pg - 1);
    int f = peer_fd(m.pid, m.arena_fd);
    struct import *i = calloc(1, sizeof(*i));
    char *dev = MAP_FAILED, *shadow = MAP_FAILED;
    if (f >= 0 && i) {
        dev = mmap(NULL, hi - lo, fake_host_visible() ? PROT_READ | PROT_WRITE
                                                      : PROT_NONE,
                   MAP_SHARED, f, (off_t)lo);
        shadow = mmap(NULL, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED, f,
                      (off_t)lo);
    }
    if (f >= 0)
        close(f);
    if (!i || dev == MAP_FAILED || shadow == MAP_FAILED) {
        if (dev != MAP_FAILED)
            munmap(dev, hi - lo);
        if (shadow != MAP_FAILED)
            munmap(shadow, hi - lo);
        free(i);
        return fake_ret(cudaErrorMapBufferObjectFailed);
    }
    *i = (struct import){NULL, m.pid, (int)m.device, 1, m.off, m.size, m.gen,
                         dev, shadow, hi - lo, m.off - lo};
    pthread_mutex_lock(&lock);
    i->next = imports;
    imports = i;
    pthread_mutex_unlock(&lock);
    *p = dev + i->lead;
    atomic_fetch_add(&opens, 1);
    return cudaSuccess;
}

API cudaError_t cudaIpcCloseMemHandle(void *p)
{
    fake_init();
    pthread_mutex_lock(&lock);
    struct import **at = &imports, *i = NULL;
    while (*at && (*at)->dev + (*at)->lead != (char *)p)
        at = &(*at)->next;
    if ((i = *at) && --i->refs == 0)
        *at = i->next;
    pthread_mutex_unlock(&lock);
    if (!i)
        return fake_ret(cudaErrorInvalidValue);
    if (i->refs == 0) {
        /* Its work ends first, as a close waits for the device's. */
        fake_drain_device(i->device);
        munmap(i->dev, i->len);
        munmap(i->shadow, i->len);
        free(i);
    }
    return cudaSuccess;
}

/* ---- events ---- */

struct fake_ipc_event *fake_ipc_event_new(void)
{
    struct table *t = own_table();
    static _Atomic uint64_t gens;
    pthread_mutex_lock(&lock);
    struct fake_ipc_event *e = NULL;
    for (uint32_t i = 0; i < SLOTS && !e; i++)
        if (atomic_load(&t->ev[i].gen) == 0) {
            e = &t->ev[i];
            atomic_store(&e->recorded, 0);
            atomic_store(&e->done, 0);
            atomic_store(&e->gen, atomic_fetch_add(&gens, 1) + 1);
        }
    pthread_mutex_unlock(&lock);
    return e;
}

void fake_ipc_event_free(struct fake_ipc_event *e)
{
    if (mine && e >= mine->ev && e < mine->ev + SLOTS)
        atomic_store(&e->gen, 0);   /* an imported one stays mapped */
}

API cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *h, cudaEvent_t ev)
{
    fake_init();
    struct fake_ipc_event *e = fake_event_ipc(ev);
    if (!h || !e || !mine || e < mine->ev || e >= mine->ev + SLOTS)
        return fake_ret(cudaErrorInvalidResourceHandle);
    struct event_handle m = {MAGIC_EVENT, (int32_t)getpid(), mine_fd,
                             (uint32_t)(e - mine->ev), atomic_load(&e->gen)};
    memset(h, 0, sizeof(*h));
    memcpy(h->reserved, &m, sizeof(m));
    return cudaSuccess;
}

API cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *ev, cudaIpcEventHandle_t h)
{
    fake_init();
    struct event_handle m;
    memcpy(&m, h.reserved, sizeof(m));
    if (!ev || m.magic != MAGIC_EVENT || m.slot >= SLOTS)
        return fake_ret(cudaErrorInvalidValue);
    if (m.pid == getpid())
        return fake_ret(cudaErrorDeviceUninitialized);
    struct table *t = peer_table(m.pid, m.table_fd);
    if (!t || atomic_load(&t->ev[m.slot].gen) != m.gen)
        return fake_ret(cudaErrorMapBufferObjectFailed);
    return fake_event_imported(ev, &t->ev[m.slot]);
}
