/* dcoll: element types and reduction operations. */
#ifndef DCOLL_TYPES_H
#define DCOLL_TYPES_H

#include "dcoll/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Values are part of the ABI. */
typedef enum dcoll_dtype {
    DCOLL_INT8 = 0,
    DCOLL_UINT8 = 1,
    DCOLL_INT32 = 2,
    DCOLL_UINT32 = 3,
    DCOLL_INT64 = 4,
    DCOLL_UINT64 = 5,
    DCOLL_FLOAT16 = 6,   /* IEEE 754 binary16 */
    DCOLL_BFLOAT16 = 7,  /* bfloat16: the top half of a binary32 */
    DCOLL_FLOAT32 = 8,
    DCOLL_FLOAT64 = 9,
    DCOLL_BOOL = 10,     /* C's bool (_Bool), Fortran's logical(c_bool):
                            1 byte, 0 or 1 (API 1.7) */
    DCOLL_LOGICAL = 11,  /* Fortran's default LOGICAL, as MPI_LOGICAL
                            (4 bytes with gfortran; dcoll_dtype_size says) */
    DCOLL_COMPLEX64 = 12,  /* float _Complex, complex(c_float_complex):
                              MPI_C_FLOAT_COMPLEX (API 1.7) */
    DCOLL_COMPLEX128 = 13, /* double _Complex, complex(c_double_complex):
                              MPI_C_DOUBLE_COMPLEX (API 1.7) */
    /* (value, index) pairs for MINLOC and MAXLOC (API 1.7), laid out as
     * C structs of the two, as MPI's pair types are: */
    DCOLL_FLOAT32_INT = 14, /* struct { float v; int i; }: MPI_FLOAT_INT */
    DCOLL_FLOAT64_INT = 15, /* struct { double v; int i; } (16 bytes):
                               MPI_DOUBLE_INT */
    DCOLL_INT32_INT = 16,   /* struct { int v; int i; }: MPI_2INT, and
                               Fortran's 2INTEGER */
    DCOLL_2FLOAT32 = 17,    /* two floats: Fortran's 2REAL (MPI_2REAL) */
    DCOLL_2FLOAT64 = 18,    /* two doubles: Fortran's 2DOUBLE PRECISION */
    DCOLL_DTYPE_COUNT_ = 19 /* not a type */
} dcoll_dtype_t;

/* The pair types' elements (API 1.11), for C and C++ programs: */
typedef struct dcoll_float32_int {
    float value;
    int index;
} dcoll_float32_int_t;                 /* DCOLL_FLOAT32_INT */
typedef struct dcoll_float64_int {
    double value;
    int index;
} dcoll_float64_int_t;                 /* DCOLL_FLOAT64_INT, 16 bytes */
typedef struct dcoll_int32_int {
    int value;
    int index;
} dcoll_int32_int_t;                   /* DCOLL_INT32_INT */

/* Reduction operations. Bitwise ones apply to integer types only; logical
 * ones to integer types, bool and logical, which take no other; complex
 * types take SUM, PRODUCT and AVG (as in MPI, AVG aside); MINLOC and MAXLOC
 * take the pair types, which take no other. */
typedef enum dcoll_op {
    DCOLL_SUM = 0,
    DCOLL_PRODUCT = 1,
    DCOLL_MIN = 2,
    DCOLL_MAX = 3,
    DCOLL_AVG = 4,   /* sum divided by the group size (integers truncate) */
    DCOLL_BAND = 5,
    DCOLL_BOR = 6,
    DCOLL_BXOR = 7,
    DCOLL_LAND = 8,  /* logical and, or, exclusive or: 1 or 0 (API 1.7) */
    DCOLL_LOR = 9,
    DCOLL_LXOR = 10,
    DCOLL_MINLOC = 11, /* on pair types: the least (greatest) value and its
                          index, the lowest index among equals (API 1.7) */
    DCOLL_MAXLOC = 12,
    DCOLL_OP_COUNT_ = 13 /* not an op */
} dcoll_op_t;

/** Bytes per element of @p dtype in *size.
 *  @return DCOLL_ERR_INVALID_ARGUMENT for an unknown type or NULL size. */
DCOLL_API dcoll_status_t dcoll_dtype_size(dcoll_dtype_t dtype, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
