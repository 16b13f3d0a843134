/* The plugin double's reduction (cuda_layer/reduce.h) without a GPU: the
 * host path's own loops (lib/base/kernels.c), run in stream order on the
 * CUDA double's stream, through its second mapping of device memory. So
 * the IPC transport's results on the double are the host path's bits by
 * construction, and a missing handshake shows as a wrong input read. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "base.h"
#include "cudart_double.h"
#include "reduce.h"

enum { BLOCK = 4096 };   /* elements folded at a time */

struct job {
    void *dst;
    int nsrc;
    int64_t count;
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int avg_n;
    bool kept;              /* captured: run at every launch */
    const void *srcs[];
};

static void run(void *arg)
{
    struct job *j = arg;
    size_t esz = dcoll_dtype_sizes[j->dtype];
    char *tmp = malloc(BLOCK * esz);
    char *dst = fake_cuda_real(j->dst);
    bool avg = j->op == DCOLL_AVG && j->avg_n > 0;
    bool premul = avg && (dcoll_dtype_is_float(j->dtype) ||
                          dcoll_dtype_is_complex(j->dtype));
    for (int64_t at = 0; tmp && at < j->count; at += BLOCK) {
        int64_t n = j->count - at < BLOCK ? j->count - at : BLOCK;
        size_t off = (size_t)at * esz, len = (size_t)n * esz;
        for (int s = 0; s < j->nsrc; s++) {
            const char *src = fake_cuda_real(j->srcs[s]);
            memcpy(s ? tmp : dst + off, src + off, len);
            if (premul)
                dcoll_premul(s ? tmp : dst + off, n, j->dtype, j->avg_n);
            if (s)
                dcoll_fold(dst + off, tmp, n, j->dtype, j->op);
        }
        if (avg && !premul)
            dcoll_divide(dst + off, n, j->dtype, j->avg_n);
    }
    free(tmp);
    if (!j->kept)
        free(j);
}

int dcoll_reduce_launch(void *dst, const void *const *srcs, int nsrc,
                        int64_t count, int dtype, int op, int avg_n,
                        void *stream)
{
    struct job *j = malloc(sizeof(*j) + sizeof(void *) * (size_t)nsrc);
    if (!j)
        return -1;
    *j = (struct job){dst, nsrc, count, dtype, op, avg_n, false};
    memcpy(j->srcs, srcs, sizeof(void *) * (size_t)nsrc);
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing((cudaStream_t)stream, &cap);
    j->kept = cap == cudaStreamCaptureStatusActive;
    if (fake_cuda_enqueue(stream, run, j, j->kept ? free : NULL)) {
        free(j);
        return -1;
    }
    return 0;
}
