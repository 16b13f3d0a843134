/* float16 and bfloat16 reduction kernels, 8 elements at a time, for CPUs
 * with AVX2 and F16C. Each returns how many leading elements it handled (a
 * multiple of 8); the caller's scalar loop, whose results they match bit
 * for bit (NaN payloads aside), does the rest. */
#ifndef DCOLL_MPI_HALFVEC_H
#define DCOLL_MPI_HALFVEC_H

#include <stdbool.h>
#include <stdint.h>

enum dcoll_half_vop {
    DCOLL_HALF_SUM,
    DCOLL_HALF_PROD,
    DCOLL_HALF_MIN,
    DCOLL_HALF_MAX,
};

/* Whether this CPU runs the kernels; false where they are not built. */
bool dcoll_half_vec_usable(void);

/* io[i] = io[i] op in[i] */
int dcoll_half_vec(enum dcoll_half_vop op, bool bf16, const uint16_t *in,
                   uint16_t *io, int n);
/* io[i] = io[i] / divisor */
int64_t dcoll_half_vec_divide(bool bf16, uint16_t *io, int64_t n,
                              float divisor);

#endif
