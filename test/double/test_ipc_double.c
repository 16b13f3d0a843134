/* The CUDA double's interprocess rules (ipc.c), on 2 ranks, so that a
 * transport between processes sharing a GPU can be tested on it:
 *   - memory exported by one rank and opened by the other is the same
 *     memory, both ways; opening it again counts a reference;
 *   - freed and allocated again at the same address, it gets a new
 *     handle; the old one opens no more, and the new one gives
 *     cudaErrorAlreadyMapped while the old mapping is open;
 *   - an interprocess event: a wait made after the peer's record holds
 *     the stream until the peer's stream reaches it; a wait made before
 *     the record binds to nothing, so a handshake that is skipped shows
 *     as old bytes;
 *   - the refusals: this process's own handle, an event without
 *     cudaEventDisableTiming, a pointer that is not an allocation's base;
 *   - through the plugin's IPC calls (DCOLL_CUDA_PLUGIN, the plugin
 *     double): the same memory and a handshake on its events;
 *   - the import cache (lib/gpu/ipc_cache.c) over them: a second get
 *     opens nothing; memory the peer freed and allocated again at the
 *     same address is reopened, as is a new allocation over a range a
 *     stale mapping still covers; a stale mapping still in use is
 *     refused, saying so.
 * Each rank's verdict is its exit code. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "ipc_cache.h"
#include "plugin_abi.h"

int t_rank, t_failures;
#include "check.h"

enum { N = 4096 };

#define REQUIRE_VOID(cond, ...)                                              \
    do {                                                                     \
        if (!(cond)) {                                                       \
            t_failures++;                                                    \
            T_SAY_(__VA_ARGS__);                                             \
            return;                                                          \
        }                                                                    \
    } while (0)

static void fill(int *d, int v, cudaStream_t s)
{
    int *h = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++)
        h[i] = v + i;
    cudaMemcpyAsync(d, h, sizeof(int) * N, cudaMemcpyHostToDevice, s);
    cudaStreamSynchronize(s);
    free(h);
}

/* How many of d's N ints are v + i. */
static int matches(const int *d, int v)
{
    int *h = malloc(sizeof(int) * N), m = 0;
    cudaMemcpy(h, d, sizeof(int) * N, cudaMemcpyDeviceToHost);
    for (int i = 0; i < N; i++)
        m += h[i] == v + i;
    free(h);
    return m;
}

static void swap(void *mine, void *theirs, size_t n)
{
    MPI_Sendrecv(mine, (int)n, MPI_BYTE, 1 - t_rank, 0, theirs, (int)n,
                 MPI_BYTE, 1 - t_rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void memory(void)
{
    int *mine = NULL, *peer = NULL, *again = NULL;
    cudaMalloc((void **)&mine, sizeof(int) * N);
    fill(mine, 100 * (t_rank + 1), 0);
    cudaIpcMemHandle_t h, ph;
    CHECK(cudaIpcGetMemHandle(&h, mine) == cudaSuccess, "export");
    CHECK(cudaIpcGetMemHandle(&h, (char *)mine + 256) == cudaErrorInvalidValue,
          "exporting a pointer inside an allocation is refused");
    CHECK(cudaIpcOpenMemHandle((void **)&peer, h,
                               cudaIpcMemLazyEnablePeerAccess) ==
          cudaErrorDeviceUninitialized, "this process's own handle");
    cudaGetLastError();
    swap(&h, &ph, sizeof(h));
    CHECK(cudaIpcOpenMemHandle((void **)&peer, ph,
                               cudaIpcMemLazyEnablePeerAccess) == cudaSuccess,
          "open the peer's");
    CHECK(cudaIpcOpenMemHandle((void **)&again, ph,
                               cudaIpcMemLazyEnablePeerAccess) ==
              cudaSuccess && again == peer, "open it again: the same pointer");
    struct cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, peer) == cudaSuccess &&
          a.type == cudaMemoryTypeDevice,
          "an opened pointer is device memory");
    CHECK(matches(peer, 100 * (2 - t_rank)) == N, "the peer's bytes");
    MPI_Barrier(MPI_COMM_WORLD);
    /* Each writes the other's buffer. */
    fill(peer, 1000 * (t_rank + 1), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(matches(mine, 1000 * (2 - t_rank)) == N, "written by the peer");
    CHECK(cudaIpcCloseMemHandle(again) == cudaSuccess, "close once");
    MPI_Barrier(MPI_COMM_WORLD);
    /* Rank 0 frees and allocates again at the same address. */
    cudaIpcMemHandle_t h2 = h, ph2;
    if (t_rank == 0) {
        cudaFree(mine);
        int *re = NULL;
        cudaMalloc((void **)&re, sizeof(int) * N);
        CHECK(re == mine, "the same address again (the double's first fit)");
        CHECK(cudaIpcGetMemHandle(&h2, re) == cudaSuccess &&
              memcmp(&h2, &h, sizeof(h)), "a new handle for new memory");
        mine = re;
    }
    swap(&h2, &ph2, sizeof(h2));
    if (t_rank == 1) {
        int *p = NULL;
        CHECK(cudaIpcOpenMemHandle((void **)&p, ph2,
                                   cudaIpcMemLazyEnablePeerAccess) ==
              cudaErrorAlreadyMapped, "the new memory over an open mapping");
        CHECK(cudaIpcCloseMemHandle(peer) == cudaSuccess, "close the old");
        CHECK(cudaIpcOpenMemHandle((void **)&p, ph,
                                   cudaIpcMemLazyEnablePeerAccess) ==
              cudaErrorMapBufferObjectFailed, "a freed allocation's handle");
        CHECK(cudaIpcOpenMemHandle((void **)&p, ph2,
                                   cudaIpcMemLazyEnablePeerAccess) ==
              cudaSuccess, "then the new one opens");
        peer = p;
    }
    cudaGetLastError();
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(cudaIpcCloseMemHandle(peer) == cudaSuccess, "close");
    MPI_Barrier(MPI_COMM_WORLD);
    cudaFree(mine);
}

/* Rank 0 writes its buffer on its stream behind other work (each op
 * takes FAKE_CUDA_DELAY_US) and records an interprocess event; rank 1
 * copies it out on its own stream after waiting for that event:
 * handshake tells whether rank 1's
 * wait is made after rank 0's record (right) or before it (the skipped
 * handshake, which must show as old bytes). */
static void events(bool handshake)
{
    cudaEvent_t ev = NULL, pev = NULL;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int *buf = NULL, *out = NULL;
    cudaMalloc((void **)&buf, sizeof(int) * N);
    cudaMalloc((void **)&out, sizeof(int) * N);
    fill(buf, 7, s);
    fill(out, 0, s);
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventInterprocess) ==
          cudaErrorInvalidValue, "interprocess needs DisableTiming");
    cudaGetLastError();
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventInterprocess |
                                           cudaEventDisableTiming) ==
          cudaSuccess, "an interprocess event");
    cudaIpcEventHandle_t eh, peh;
    cudaIpcMemHandle_t mh, pmh;
    CHECK(cudaIpcGetEventHandle(&eh, ev) == cudaSuccess, "export the event");
    cudaIpcGetMemHandle(&mh, buf);
    swap(&eh, &peh, sizeof(eh));
    swap(&mh, &pmh, sizeof(mh));
    int *pbuf = NULL;
    CHECK(cudaIpcOpenEventHandle(&pev, peh) == cudaSuccess, "open its event");
    cudaIpcOpenMemHandle((void **)&pbuf, pmh, cudaIpcMemLazyEnablePeerAccess);
    if (t_rank == 0) {
        if (!handshake)
            MPI_Barrier(MPI_COMM_WORLD);   /* the peer has waited already */
        int *h = malloc(sizeof(int) * N);
        for (int i = 0; i < N; i++)
            h[i] = 500 + i;
        /* Work ahead of the write: it lands well after the peer's copy
         * would run if that copy did not wait for it. */
        for (int i = 0; i < 6; i++)
            cudaMemsetAsync(out, 0, sizeof(int) * N, s);
        cudaMemcpyAsync(buf, h, sizeof(int) * N, cudaMemcpyHostToDevice, s);
        cudaEventRecord(ev, s);
        if (handshake)
            MPI_Barrier(MPI_COMM_WORLD);   /* recorded */
        cudaStreamSynchronize(s);
        free(h);
    } else {
        if (handshake)
            MPI_Barrier(MPI_COMM_WORLD);
        cudaStreamWaitEvent(s, pev, 0);
        cudaMemcpyAsync(out, pbuf, sizeof(int) * N, cudaMemcpyDeviceToDevice,
                        s);
        if (!handshake)
            MPI_Barrier(MPI_COMM_WORLD);
        cudaStreamSynchronize(s);
        int got = matches(out, 500);
        if (handshake)
            CHECK(got == N, "after the record: the new bytes (%d of %d)",
                  got, N);
        else
            CHECK(got == 0 && matches(out, 7) == N, "a wait before the "
                  "record waits for nothing: the old bytes (%d new)", got);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(cudaEventQuery(pev) == cudaSuccess, "the peer's event is done");
    cudaIpcCloseMemHandle(pbuf);
    cudaEventDestroy(pev);
    MPI_Barrier(MPI_COMM_WORLD);
    cudaEventDestroy(ev);
    cudaFree(buf);
    cudaFree(out);
    cudaStreamDestroy(s);
}

static void cached(const dcoll_cuda_plugin_t *p);

/* The plugin's calls: rank 0's buffer, written on its stream behind
 * other work, then a record; rank 1 opens both, waits for the record
 * (made before its wait: the handshake) and copies the buffer out. */
static void through_plugin(void)
{
    const char *path = getenv("DCOLL_CUDA_PLUGIN");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    const dcoll_cuda_plugin_t *(*entry)(void) = NULL;
    if (h)
        *(void **)&entry = dlsym(h, DCOLL_CUDA_PLUGIN_ENTRY);
    const dcoll_cuda_plugin_t *p = entry ? entry() : NULL;
    REQUIRE_VOID(p && p->id.magic == DCOLL_PLUGIN_MAGIC && p->ipc_open,
                 "the plugin's IPC (%s)",
                 path ? path : "DCOLL_CUDA_PLUGIN unset");
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int *buf = p->dev_alloc(sizeof(int) * N, 0), *out = NULL, *pbuf = NULL;
    /* The allocation of a pointer inside it, none of a host
     * pointer. */
    void *base = NULL;
    size_t size = 0;
    CHECK(p->mem_range && p->mem_range(buf + 5, 0, &base, &size) == 0 &&
              base == (void *)buf && size >= sizeof(int) * N,
          "mem_range of a pointer 20 bytes into an allocation: base %p "
          "(want %p), %zu bytes", base, (void *)buf, size);
    CHECK(p->mem_range(&size, 0, &base, &size) == -1 &&
              strstr(p->last_error(), "cuMemGetAddressRange"),
          "mem_range of host memory: %s", p->last_error());
    cudaMalloc((void **)&out, sizeof(int) * N);
    fill(buf, 7, s);
    fill(out, 0, s);
    unsigned char mh[DCOLL_IPC_HANDLE_BYTES], pmh[DCOLL_IPC_HANDLE_BYTES];
    unsigned char eh[DCOLL_IPC_HANDLE_BYTES], peh[DCOLL_IPC_HANDLE_BYTES];
    void *ev = NULL, *pev = NULL;
    CHECK(p->ipc_export(buf, 0, mh) == 0, "ipc_export: %s", p->last_error());
    CHECK(p->ipc_event(0, &ev, eh) == 0, "ipc_event: %s", p->last_error());
    swap(mh, pmh, sizeof(mh));
    swap(eh, peh, sizeof(eh));
    CHECK(p->ipc_open(pmh, 0, (void **)&pbuf) == 0, "ipc_open: %s",
          p->last_error());
    CHECK(p->ipc_event_open(peh, 0, &pev) == 0, "ipc_event_open: %s",
          p->last_error());
    void *own = NULL;
    CHECK(p->ipc_open(mh, 0, &own) == -1 && !own &&
          strstr(p->last_error(), "cudaIpcOpenMemHandle"),
          "its own handle is refused, named: %s", p->last_error());
    if (t_rank == 0) {
        int *hb = malloc(sizeof(int) * N);
        for (int i = 0; i < N; i++)
            hb[i] = 900 + i;
        for (int i = 0; i < 6; i++)
            cudaMemsetAsync(out, 0, sizeof(int) * N, s);
        cudaMemcpyAsync(buf, hb, sizeof(int) * N, cudaMemcpyHostToDevice, s);
        CHECK(p->ipc_record(ev, s, 0) == 0, "ipc_record");
        MPI_Barrier(MPI_COMM_WORLD);
        cudaStreamSynchronize(s);
        free(hb);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(p->ipc_query(pev, 0) == 0, "the peer's write is not done yet");
        CHECK(p->ipc_wait(s, pev, 0) == 0, "ipc_wait");
        CHECK(p->copy(out, pbuf, sizeof(int) * N, 0, s) == 0, "copy");
        cudaStreamSynchronize(s);
        CHECK(matches(out, 900) == N, "through the plugin: the peer's bytes");
        CHECK(p->ipc_query(pev, 0) == 1, "the peer's record is done");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(p->ipc_close(pbuf, 0) == 0, "ipc_close");
    p->ipc_event_free(pev, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    p->ipc_event_free(ev, 0);
    p->dev_free(buf, 0);
    cudaFree(out);
    cudaStreamDestroy(s);
    cached(p);
}

/* Rank 0 allocates ints ints with the plugin where first fit puts them,
 * fills them from v, and sends their address and handle; rank 1 gets
 * them through the cache and checks them (v >= 0). */
struct sent {
    uint64_t base;
    unsigned char h[DCOLL_IPC_HANDLE_BYTES];
};

static int *offer(const dcoll_cuda_plugin_t *p, int ints, int v)
{
    int *d = p->dev_alloc(sizeof(int) * (size_t)ints, 0);
    int *h = malloc(sizeof(int) * (size_t)ints);
    for (int i = 0; i < ints; i++)
        h[i] = v + i;
    cudaMemcpy(d, h, sizeof(int) * (size_t)ints, cudaMemcpyHostToDevice);
    cudaStreamSynchronize(0);   /* a pageable copy lands after it returns */
    free(h);
    struct sent s = {(uint64_t)(uintptr_t)d, {0}};
    p->ipc_export(d, 0, s.h);
    MPI_Send(&s, sizeof(s), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    return d;
}

static void *take(struct dcoll_ipc_cache *c, struct sent *s, int ints,
                  int v, int *rc)
{
    MPI_Recv(s, sizeof(*s), MPI_BYTE, 0, 1, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    void *p = NULL;
    *rc = dcoll_ipc_cache_get(c, 0, s->base, s->h, &p);
    if (*rc == 0 && v >= 0) {
        int *h = malloc(sizeof(int) * (size_t)ints), m = 0;
        cudaMemcpy(h, p, sizeof(int) * (size_t)ints, cudaMemcpyDeviceToHost);
        for (int i = 0; i < ints; i++)
            m += h[i] == v + i;
        free(h);
        CHECK(m == ints, "through the cache: %d of %d ints from %d", m, ints,
              v);
    }
    return p;
}

/* The plugin's opens and closes, counted under the cache (the double's
 * stale mapping shows the new bytes, so only the counts tell a reopen). */
static const dcoll_cuda_plugin_t *real_cu;
static int opens, refused, closes;

static int count_open(const unsigned char h[DCOLL_IPC_HANDLE_BYTES],
                      int device, void **p)
{
    int rc = real_cu->ipc_open(h, device, p);
    opens += rc == 0;
    refused += rc == 1;
    return rc;
}

static int count_close(void *p, int device)
{
    closes++;
    return real_cu->ipc_close(p, device);
}

static void cached(const dcoll_cuda_plugin_t *p)
{
    if (t_rank == 0) {
        int *a = offer(p, 4096, 100);
        MPI_Barrier(MPI_COMM_WORLD);
        p->dev_free(a, 0);
        a = offer(p, 4096, 200);   /* the same address, new memory */
        MPI_Barrier(MPI_COMM_WORLD);
        p->dev_free(a, 0);
        int *small = p->dev_alloc(256, 0);
        int *b = offer(p, 2048, 300);   /* over the stale mapping */
        MPI_Barrier(MPI_COMM_WORLD);
        p->dev_free(b, 0);
        b = offer(p, 2048, 400);   /* while the peer still holds b */
        MPI_Barrier(MPI_COMM_WORLD);   /* the peer's cache is freed */
        p->dev_free(b, 0);
        p->dev_free(small, 0);
        return;
    }
    static dcoll_cuda_plugin_t counted;
    counted = *p;
    real_cu = p;
    counted.ipc_open = count_open;
    counted.ipc_close = count_close;
    struct dcoll_ipc_cache *c = dcoll_ipc_cache_new(&counted, 0, 4);
    struct sent s;
    int rc;
    void *a = take(c, &s, 4096, 100, &rc), *again = NULL;
    CHECK(rc == 0 && dcoll_ipc_cache_open(c) == 1, "first get: %s",
          dcoll_ipc_cache_why(c));
    dcoll_ipc_cache_put(c, a);
    CHECK(dcoll_ipc_cache_get(c, 0, s.base, s.h, &again) == 0 &&
          again == a && opens == 1 && closes == 0,
          "a second get opens nothing (%d opens)", opens);
    dcoll_ipc_cache_put(c, again);
    MPI_Barrier(MPI_COMM_WORLD);
    void *a2 = take(c, &s, 4096, 200, &rc);
    CHECK(rc == 0 && dcoll_ipc_cache_open(c) == 1 && opens == 2 &&
          closes == 1, "freed and allocated again: reopened (%d opens, %d "
          "closes; %s)", opens, closes, dcoll_ipc_cache_why(c));
    dcoll_ipc_cache_put(c, a2);
    MPI_Barrier(MPI_COMM_WORLD);
    void *b = take(c, &s, 2048, 300, &rc);
    CHECK(rc == 0 && dcoll_ipc_cache_open(c) == 1 && refused == 1 &&
          opens == 3 && closes == 2, "a new allocation over a stale "
          "mapping: closed, then opened (%d refused, %d opens, %d closes; "
          "%s)", refused, opens, closes, dcoll_ipc_cache_why(c));
    /* b stays held, as by a call in flight. */
    MPI_Barrier(MPI_COMM_WORLD);
    take(c, &s, 2048, -1, &rc);
    CHECK(rc == -1 && strstr(dcoll_ipc_cache_why(c), "still uses it") &&
          opens == 3, "a stale mapping in use is refused: %d (%s)", rc,
          dcoll_ipc_cache_why(c));
    dcoll_ipc_cache_put(c, b);
    dcoll_ipc_cache_free(c);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (t_rank == 0)
            printf("needs 2 ranks: skipping\n");
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(0);
    memory();
    events(true);
    events(false);
    through_plugin();
    printf("ipc double: rank %d, %d failure(s)\n", t_rank, t_failures);
    MPI_Finalize();
    return T_EXIT;
}
