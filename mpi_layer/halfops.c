/* float16 and bfloat16 reductions as MPI user ops. */
#include "mpi_internal.h"

/* MPI's user function for the 16-bit float types: dcoll's kernel (the
 * rule and loops in lib/base/kernels.c), told the type by its handle. */
#define HALF_OP(name, op)                                                    \
    void dcoll_mpi_half_##name(void *in, void *inout, int *len,              \
                               MPI_Datatype *dt);                            \
    void dcoll_mpi_half_##name(void *in, void *inout, int *len,              \
                               MPI_Datatype *dt)                             \
    {                                                                        \
        dcoll_fold(inout, in, *len,                                          \
                   *dt == dcoll_mpi_dtype[DCOLL_BFLOAT16] ? DCOLL_BFLOAT16   \
                                                          : DCOLL_FLOAT16,   \
                   op);                                                      \
    }

HALF_OP(sum, DCOLL_SUM)
HALF_OP(prod, DCOLL_PRODUCT)
HALF_OP(min, DCOLL_MIN)
HALF_OP(max, DCOLL_MAX)
