/* Where a call's buffers live, asked of the CUDA plugin: the route's
 * question (lib/core/route.c), answered before any transport is chosen. A
 * pointer CUDA cannot place, or buffers on two sides, are refused here,
 * naming them. */
#include <stdbool.h>
#include "gpu.h"
#include "plugin_abi.h"

static const char *const kind_name[] = {
    [DCOLL_MEM_HOST] = "host", [DCOLL_MEM_PINNED] = "pinned host",
    [DCOLL_MEM_DEVICE] = "device", [DCOLL_MEM_MANAGED] = "managed",
    [DCOLL_MEM_UNKNOWN] = "unknown",
};

/* Where p lives; a pointer CUDA cannot place is refused, naming it. */
static dcoll_status_t kind_of(const char *fn, const char *name,
                              const void *p, enum dcoll_mem_kind *kind,
                              int *device)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    *kind = cu->mem_kind(p, device);
    if (*kind != DCOLL_MEM_UNKNOWN)
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: CUDA cannot say "
                       "where %s %p lives (%s): memory of a CUDA context "
                       "this process cannot see, or CUDA in an error state",
                       fn, name, p, cu->last_error());
}

/* GPU memory, or managed memory (which NCCL's kernels and staging's
 * copies read alike). */
static bool gpu_side(enum dcoll_mem_kind k)
{
    return k == DCOLL_MEM_DEVICE || k == DCOLL_MEM_MANAGED;
}

dcoll_status_t dcoll_gpu_where(struct dcoll_group *g, const char *fn,
                               const struct dcoll_coll *c, int *device)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    int sdev = -1, rdev = -1;
    enum dcoll_mem_kind sk = DCOLL_MEM_HOST, rk = DCOLL_MEM_HOST;
    *device = -1;
    /* No pointer query (about 0.35 us each on an H100) where the kind is
     * known: the caller said GPU memory (opts.memory), or the group's
     * backend is NCCL, which takes nothing else; the device is then the
     * group's, once its first call has found it. */
    int known = dcoll_nccl_device(g);
    if (known >= 0 && (dcoll_opts_cuda(c->opts) ||
                       g->choice == DCOLL_CHOICE_NCCL)) {
        *device = known;
        return DCOLL_SUCCESS;
    }
    dcoll_status_t st;
    if (c->sendbuf &&
        (st = kind_of(fn, "sendbuf", c->sendbuf, &sk, &sdev)))
        return st;
    if (c->recvbuf && c->recvbuf == c->sendbuf) {   /* in place: once */
        rk = sk;
        rdev = sdev;
    } else if (c->recvbuf &&
               (st = kind_of(fn, "recvbuf", c->recvbuf, &rk, &rdev))) {
        return st;
    }
    bool sd = sk == DCOLL_MEM_DEVICE, rd = rk == DCOLL_MEM_DEVICE;
    /* Managed memory goes with the other buffer: to the GPU beside
     * device or managed memory (NCCL reads it in place, with no pages
     * moving to the host and back each call), to the host beside host
     * memory. */
    bool sg = gpu_side(sk), rg = gpu_side(rk);
    bool gpu = c->sendbuf && c->recvbuf ? sg && rg : sg || rg;
    if (c->sendbuf && c->recvbuf && sd != rd && !gpu)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: sendbuf is %s memory%s but recvbuf is %s "
                           "memory; both must be on the GPU or both on the "
                           "host", fn, kind_name[sk], sd ? " (on the GPU)" : "",
                           kind_name[rk]);
    if (gpu && sg && rg && sdev != rdev && sd && rd)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: sendbuf is on GPU %d but recvbuf on GPU %d",
                           fn, sdev, rdev);
    if (gpu) {
        /* A managed buffer's device is where it was made; the group's
         * GPU, once known, is where NCCL reads it. */
        *device = sd ? sdev : rd ? rdev : known >= 0 ? known
                                                      : sg ? sdev : rdev;
        return DCOLL_SUCCESS;
    }
    /* Managed memory the host way, but a kernel on the call's stream
     * may still be writing it: the host reads only after the stream's
     * earlier work (CUDA Runtime API, unified memory coherency: the CPU
     * may not touch managed memory a kernel in flight uses). */
    if (sk == DCOLL_MEM_MANAGED || rk == DCOLL_MEM_MANAGED) {
        int dev = sk == DCOLL_MEM_MANAGED ? sdev : rdev;
        if (cu->sync(dev, dcoll_opts_stream(c->opts)))
            return dcoll_error(DCOLL_ERR_INTERNAL, "%s: waiting for the "
                               "stream before reading managed memory: %s",
                               fn, cu->last_error());
    }
    return DCOLL_SUCCESS;
}

int dcoll_device_of(const void *p)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    int dev = -1;
    if (!cu || !p || cu->mem_kind(p, &dev) != DCOLL_MEM_DEVICE)
        return -1;
    return dev;
}

bool dcoll_on_device(const void *p)
{
    return dcoll_device_of(p) >= 0;
}
