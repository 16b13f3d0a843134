/* Inside the plugin: the reduction of k inputs in rank order behind the
 * table's reduce (ipc.c enters the device and calls it). Built from
 * reduce.cu where meson finds nvcc; on the CUDA double, from
 * test/double/reduce.c, which runs the host path's own loops, so that
 * the IPC transport's results are checked bit for bit in CI. */
#ifndef DCOLL_CUDA_REDUCE_H
#define DCOLL_CUDA_REDUCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = srcs[nsrc-1][i] op (... op (srcs[1][i] op srcs[0][i])) on
 * stream, on the current device, with the rules of the table's reduce
 * (plugin_abi.h).
 * 0; 1 where dtype or op has no kernel (nothing enqueued); -1 failed,
 * said through dcoll_cuda_fail. */
int dcoll_reduce_launch(void *dst, const void *const *srcs, int nsrc,
                        int64_t count, int dtype, int op, int avg_n,
                        void *stream);

#ifdef __cplusplus
}
#endif
#endif
