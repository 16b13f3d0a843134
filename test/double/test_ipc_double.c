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
 *   - through the plugin's ABI 10 calls (DCOLL_CUDA_PLUGIN, the plugin
 *     double): the same memory and a handshake on its events.
 * Each rank's verdict is its exit code. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
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
          a.type == cudaMemoryTypeDevice, "an opened pointer is device memory");
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
 * takes FAKE_CUDA_DELAY_US) and records an interprocess event; rank 1 copies it out on its own
 * stream after waiting for that event: handshake tells whether rank 1's
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

/* The plugin's calls: rank 0's buffer, written on its stream behind
 * other work, then a record; rank 1 opens both, waits for the record
 * (made before its wait: the handshake) and copies the buffer out. */
static void through_plugin(void)
{
    const char *path = getenv("DCOLL_CUDA_PLUGIN");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    const dcoll_cuda_plugin_t *(*entry)(void) = NULL;
    if (h)
        *(void **)&entry = dlsym(h, "dcoll_cuda_plugin_v10");
    const dcoll_cuda_plugin_t *p = entry ? entry() : NULL;
    REQUIRE_VOID(p && p->abi == 10 && p->ipc_open, "the plugin's IPC (%s)",
                 path ? path : "DCOLL_CUDA_PLUGIN unset");
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int *buf = p->dev_alloc(sizeof(int) * N, 0), *out = NULL, *pbuf = NULL;
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
