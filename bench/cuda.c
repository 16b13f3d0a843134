/* dcoll-perf -m cuda: the collectives on GPU buffers. CUDA and NCCL are
 * opened at run time, so that dcoll-perf needs neither for host runs:
 * libcudart and libnccl by name, or the libraries DCOLL_PERF_CUDA lists
 * (colon-separated; the CUDA and NCCL doubles on a machine without a
 * GPU). The raw side is what a program would write by hand:
 *   nccl    where dcoll's group runs on NCCL, the same NCCL call on a
 *           communicator of the same ranks, made by hand, on the same
 *           stream, and a wait for that stream;
 *   staged  where dcoll stages (the ranks share a GPU), the copy of the
 *           input to pinned host memory, MPI's call, and the copy back.
 * Built where the toolkit's headers are. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include "perf.h"

#define FN(name) static __typeof__(name) *p_##name
FN(cudaSetDevice);
FN(cudaGetDeviceProperties);
FN(cudaMalloc);
FN(cudaFree);
FN(cudaMallocHost);
FN(cudaFreeHost);
FN(cudaMemcpy);
FN(cudaMemcpyAsync);
FN(cudaMemset);
FN(cudaStreamCreateWithFlags);
FN(cudaStreamSynchronize);
FN(cudaGetErrorString);
FN(ncclGetUniqueId);
FN(ncclCommInitRank);
FN(ncclCommDestroy);
FN(ncclAllReduce);
FN(ncclBroadcast);
FN(ncclReduce);
FN(ncclAllGather);
FN(ncclReduceScatter);
FN(ncclAlltoAll);
FN(ncclGather);
FN(ncclScatter);
FN(ncclGroupStart);
FN(ncclGroupEnd);
FN(ncclSend);
FN(ncclRecv);
FN(cudaMemcpy2DAsync);
#undef FN

static void *libs[4];
static int nlibs;
static cudaStream_t stream;
static ncclComm_t raw_comm;
static bool staged;
static char *pin_send, *pin_recv;   /* the staged raw side's copies */

static void *sym(const char *name)
{
    for (int i = 0; i < nlibs; i++) {
        void *f = dlsym(libs[i], name);
        if (f)
            return f;
    }
    return NULL;
}

static bool open_libs(char *why, size_t len)
{
    const char *list = getenv("DCOLL_PERF_CUDA");
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", list && *list ? list
             : "libcudart.so:libcudart.so.13:libcudart.so.12:libnccl.so.2:"
               "libnccl.so");
    for (char *save = NULL, *t = strtok_r(buf, ":", &save); t && nlibs < 4;
         t = strtok_r(NULL, ":", &save)) {
        void *h = dlopen(t, RTLD_NOW | RTLD_GLOBAL);
        if (h)
            libs[nlibs++] = h;
    }
#define GET(name) (p_##name = (__typeof__(p_##name))sym(#name))
    bool ok = GET(cudaSetDevice) && GET(cudaGetDeviceProperties) &&
              GET(cudaMalloc) && GET(cudaFree) && GET(cudaMallocHost) &&
              GET(cudaFreeHost) && GET(cudaMemcpy) && GET(cudaMemcpyAsync) &&
              GET(cudaMemset) && GET(cudaStreamCreateWithFlags) &&
              GET(cudaStreamSynchronize) && GET(cudaGetErrorString);
    bool nccl = GET(ncclGetUniqueId) && GET(ncclCommInitRank) &&
                GET(ncclCommDestroy) && GET(ncclAllReduce) &&
                GET(ncclBroadcast) && GET(ncclReduce) && GET(ncclAllGather) &&
                GET(ncclReduceScatter);
    GET(ncclAlltoAll);
    GET(ncclGather);
    GET(ncclScatter);
    GET(ncclGroupStart);
    GET(ncclGroupEnd);
    GET(ncclSend);
    GET(ncclRecv);
    GET(cudaMemcpy2DAsync);
#undef GET
    if (!ok)
        snprintf(why, len, "the CUDA runtime is not there (%s)",
                 list && *list ? list : "libcudart.so; DCOLL_PERF_CUDA names "
                                        "others");
    else if (!nccl)
        snprintf(why, len, "NCCL is not there (libnccl.so.2)");
    return ok && nccl;
}

int perf_cuda_open(struct perf_ctx *c, const char **path)
{
    char why[200];
    if (!open_libs(why, sizeof(why))) {
        fprintf(stderr, "dcoll-perf: -m cuda: %s\n", why);
        return -1;
    }
    int dev = 0;
    if (dcoll_device(&dev) || dev < 0)
        dev = 0;
    if (p_cudaSetDevice(dev) ||
        p_cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) {
        fprintf(stderr, "dcoll-perf: -m cuda: no GPU %d\n", dev);
        return -1;
    }
    c->stream = stream;
    /* dcoll's own rule: ranks sharing a GPU stage (unless the test-only
     * DCOLL_NCCL_ONE_GPU lets them use NCCL). */
    struct cudaDeviceProp p;
    unsigned char *all = malloc(16 * (size_t)c->size);
    p_cudaGetDeviceProperties(&p, dev);
    MPI_Allgather(p.uuid.bytes, 16, MPI_BYTE, all, 16, MPI_BYTE, c->comm);
    const char *one = getenv("DCOLL_NCCL_ONE_GPU");
    for (int a = 0; a < c->size && !(one && !strcmp(one, "1")); a++)
        for (int b = a + 1; b < c->size; b++)
            staged |= !memcmp(all + 16 * a, all + 16 * b, 16);
    free(all);
    if (!staged) {
        /* Ranks on one GPU (the test-only setting): each process names
         * itself a host of its own, as dcoll does (lib/gpu/nccl.c), or
         * NCCL refuses the hand-made communicator ("Duplicate GPU"). */
        if (one && !strcmp(one, "1")) {
            char host[64] = "", hid[160];
            const char *was = getenv("NCCL_HOSTID");
            if (!was || !*was) {
                gethostname(host, sizeof(host) - 1);
                was = host;
            }
            snprintf(hid, sizeof(hid), "%s-perf-%d", was, (int)getpid());
            setenv("NCCL_HOSTID", hid, 1);
        }
        ncclUniqueId id;
        if (c->rank == 0)
            p_ncclGetUniqueId(&id);
        MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, c->comm);
        if (p_ncclCommInitRank(&raw_comm, c->size, id, c->rank)) {
            fprintf(stderr, "dcoll-perf: -m cuda: the raw side's NCCL "
                    "communicator could not be made\n");
            return -1;
        }
    }
    *path = staged ? "staged (ranks share a GPU): raw = copy to pinned "
                     "memory, MPI, copy back"
                   : "NCCL: raw = the same NCCL call on a hand-made "
                     "communicator, same stream";
    return 0;
}

void *perf_cuda_alloc(size_t bytes, bool host_pinned)
{
    void *p = NULL;
    if (host_pinned ? p_cudaMallocHost(&p, bytes) : p_cudaMalloc(&p, bytes))
        return NULL;
    if (!host_pinned)
        p_cudaMemset(p, 0, bytes);
    return p;
}

void perf_cuda_free(void *p, bool host_pinned)
{
    if (p)
        host_pinned ? p_cudaFreeHost(p) : p_cudaFree(p);
}

void perf_cuda_mirrors(char *send, char *recv)
{
    pin_send = send;
    pin_recv = recv;
}

void perf_cuda_close(void)
{
    if (raw_comm)
        p_ncclCommDestroy(raw_comm);
    raw_comm = NULL;
}

/* -O: wait for what dcoll's stream-ordered call enqueued. */
int perf_cuda_sync(void)
{
    return p_cudaStreamSynchronize(stream) != 0;
}

/* The check's copies, on the calls' stream and waited for. A cudaMemcpy
 * from pageable memory returns before its last DMA lands, and on the
 * legacy stream is not ordered before work on a non-blocking one: a
 * call made right after it read a partly old input (seen on an H100,
 * 512 KiB to 2 MiB, dcoll's side and the raw one's alike). */
void perf_cuda_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes && (p_cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                    stream) ||
                  p_cudaStreamSynchronize(stream)))
        fprintf(stderr, "dcoll-perf: -m cuda: a check's copy of %zu "
                "bytes failed\n", bytes);
}

static const ncclDataType_t nt[DCOLL_DTYPE_COUNT_] = {
    ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
    ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64, ncclUint8, ncclInt32,
    ncclUint64, ncclUint64, ncclUint64, ncclUint64, ncclUint64, ncclUint64,
    ncclUint64,
};
static const ncclRedOp_t nop[] = {ncclSum, ncclProd, ncclMin, ncclMax,
                                  ncclAvg};

bool perf_cuda_takes(const struct perf_ctx *c, const struct perf_coll *k)
{
    static const char *const ok[] = {"all_reduce", "broadcast", "reduce",
                                     "all_gather", "reduce_scatter",
                                     "all_to_all", "gather", "scatter",
                                     "neighbor_all_gather",
                                     "neighbor_all_to_allv",
                                     "neighbor_all_to_allw"};
    bool known = false;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        known |= !strcmp(k->name, ok[i]);
    if (!known || (k->reduces && (unsigned)c->o->op >= 5 && !staged))
        return false;
    if (!staged && !strncmp(k->name, "neighbor_", 9) &&
        !(p_ncclGroupStart && p_ncclGroupEnd && p_ncclSend && p_ncclRecv &&
          p_cudaMemcpy2DAsync))
        return false;
    if (!staged && ((!strcmp(k->name, "all_to_all") && !p_ncclAlltoAll) ||
                    (!strcmp(k->name, "gather") && !p_ncclGather) ||
                    (!strcmp(k->name, "scatter") && !p_ncclScatter)))
        return false;
    return true;
}

/* The neighbourhood calls by hand, as NCCL's examples do a halo: every
 * block of the ring in one group of sends and receives; the w form's
 * strided blocks (every deg-th element) packed first with
 * cudaMemcpy2DAsync into scratch kept between calls. */
static char *scratch;
static size_t scratch_bytes;

static ncclResult_t raw_ring(struct perf_ctx *c, const char *nm)
{
    int deg;
    const int *in, *out;
    bool w = !strcmp(nm, "neighbor_all_to_allw");
    bool ag = !strcmp(nm, "neighbor_all_gather");
    if (perf_ring_lists(c, w, &deg, &in, &out))
        return ncclInternalError;
    size_t n = (size_t)c->count, b = n * c->esz;
    const char *src = c->send;
    if (w && b) {
        if (scratch_bytes < b * (size_t)deg) {
            if (scratch)
                p_cudaFree(scratch);
            scratch = NULL;
            scratch_bytes = 0;
            if (p_cudaMalloc((void **)&scratch, b * (size_t)deg))
                return ncclSystemError;
            scratch_bytes = b * (size_t)deg;
        }
        for (int i = 0; i < deg; i++)
            if (p_cudaMemcpy2DAsync(scratch + (size_t)i * b, c->esz,
                                    (const char *)c->send +
                                        (size_t)i * c->esz,
                                    (size_t)deg * c->esz, c->esz, n,
                                    cudaMemcpyDeviceToDevice, stream))
                return ncclUnhandledCudaError;
        src = scratch;
    }
    ncclResult_t r = p_ncclGroupStart();
    for (int i = 0; r == ncclSuccess && i < deg; i++) {
        r = p_ncclSend(ag ? src : src + (size_t)i * b, b, ncclUint8, out[i],
                       raw_comm, stream);
        if (r == ncclSuccess)
            r = p_ncclRecv((char *)c->recv + (size_t)i * b, b, ncclUint8,
                           in[i], raw_comm, stream);
    }
    ncclResult_t e = p_ncclGroupEnd();
    return r != ncclSuccess ? r : e;
}

/* The raw side, NCCL's way: the call on the stream, then its wait. */
static int raw_nccl(struct perf_ctx *c, const struct perf_coll *k)
{
    size_t n = (size_t)c->count;
    ncclDataType_t t = nt[c->o->dtype];
    ncclRedOp_t op = nop[c->o->op < 5 ? c->o->op : 0];
    ncclResult_t r = ncclInvalidArgument;
    const char *nm = k->name;
    if (!strcmp(nm, "all_reduce"))
        r = p_ncclAllReduce(c->send, c->recv, n, t, op, raw_comm, stream);
    else if (!strcmp(nm, "broadcast"))
        r = p_ncclBroadcast(c->recv, c->recv, n, t, c->groot, raw_comm,
                            stream);
    else if (!strcmp(nm, "reduce"))
        r = p_ncclReduce(c->send, c->recv, n, t, op, c->groot, raw_comm,
                         stream);
    else if (!strcmp(nm, "all_gather"))
        r = p_ncclAllGather(c->send, c->recv, n, t, raw_comm, stream);
    else if (!strcmp(nm, "reduce_scatter"))
        r = p_ncclReduceScatter(c->send, c->recv, n, t, op, raw_comm, stream);
    else if (!strcmp(nm, "all_to_all"))
        r = p_ncclAlltoAll(c->send, c->recv, n, t, raw_comm, stream);
    else if (!strcmp(nm, "gather"))
        r = p_ncclGather(c->send, c->recv, n, t, c->groot, raw_comm, stream);
    else if (!strcmp(nm, "scatter"))
        r = p_ncclScatter(c->send, c->recv, n, t, c->groot, raw_comm, stream);
    else if (!strncmp(nm, "neighbor_", 9))
        r = raw_ring(c, nm);
    return r != ncclSuccess || p_cudaStreamSynchronize(stream) != 0;
}

/* The raw side, staged by hand: what the call reads copied to pinned
 * memory, MPI's call there, what it wrote copied back. */
static int raw_staged(struct perf_ctx *c, const struct perf_coll *k)
{
    void *dsend = c->send, *drecv = c->recv;
    bool bcast = !strcmp(k->name, "broadcast");
    size_t in = bcast ? (c->rank == c->groot ? c->recvbytes : 0)
                      : c->sendbytes;
    if (in && (p_cudaMemcpyAsync(bcast ? pin_recv : pin_send,
                                 bcast ? drecv : dsend, in,
                                 cudaMemcpyDeviceToHost, stream) ||
               p_cudaStreamSynchronize(stream)))
        return 1;
    c->send = pin_send;
    c->recv = pin_recv;
    int rc = k->raw(c);
    c->send = dsend;
    c->recv = drecv;
    bool out = !((!strcmp(k->name, "reduce") || !strcmp(k->name, "gather")) &&
                 c->rank != c->groot);
    if (!rc && out && c->recvbytes &&
        (p_cudaMemcpyAsync(drecv, pin_recv, c->recvbytes,
                           cudaMemcpyHostToDevice, stream) ||
         p_cudaStreamSynchronize(stream)))
        rc = 1;
    return rc;
}

int perf_cuda_raw(struct perf_ctx *c, const struct perf_coll *k)
{
    return staged ? raw_staged(c, k) : raw_nccl(c, k);
}
