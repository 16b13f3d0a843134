/* Element types and reduction ops: sizes, names, which pairs are valid. */
#include "base.h"

#ifndef DCOLL_LOGICAL_SIZE
#define DCOLL_LOGICAL_SIZE 4   /* gfortran's default LOGICAL */
#endif

const size_t dcoll_dtype_sizes[DCOLL_DTYPE_COUNT_] = {
    [DCOLL_INT8] = 1,    [DCOLL_UINT8] = 1,    [DCOLL_INT32] = 4,
    [DCOLL_UINT32] = 4,  [DCOLL_INT64] = 8,    [DCOLL_UINT64] = 8,
    [DCOLL_FLOAT16] = 2, [DCOLL_BFLOAT16] = 2, [DCOLL_FLOAT32] = 4,
    [DCOLL_FLOAT64] = 8, [DCOLL_BOOL] = 1,
    [DCOLL_LOGICAL] = DCOLL_LOGICAL_SIZE, [DCOLL_COMPLEX64] = 8,
    [DCOLL_COMPLEX128] = 16,
    [DCOLL_FLOAT32_INT] = sizeof(struct { float v; int i; }),
    [DCOLL_FLOAT64_INT] = sizeof(struct { double v; int i; }),
    [DCOLL_INT32_INT] = 2 * sizeof(int), [DCOLL_2FLOAT32] = 8,
    [DCOLL_2FLOAT64] = 16,
};

static const char *const dtype_names[DCOLL_DTYPE_COUNT_] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "bfloat16", "float32", "float64", "bool", "logical",
    "complex64", "complex128", "float32int", "float64int", "int32int",
    "2float32", "2float64",
};

static const char *const op_names[DCOLL_OP_COUNT_] = {
    "SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "LAND",
    "LOR", "LXOR", "MINLOC", "MAXLOC",
};

#define T(t) (UINT32_C(1) << (t))
#define INTS                                                                 \
    (T(DCOLL_INT8) | T(DCOLL_UINT8) | T(DCOLL_INT32) | T(DCOLL_UINT32) |     \
     T(DCOLL_INT64) | T(DCOLL_UINT64))
#define FLOATS                                                               \
    (T(DCOLL_FLOAT16) | T(DCOLL_BFLOAT16) | T(DCOLL_FLOAT32) |               \
     T(DCOLL_FLOAT64))
#define TRUTHS (T(DCOLL_BOOL) | T(DCOLL_LOGICAL))
#define COMPLEX (T(DCOLL_COMPLEX64) | T(DCOLL_COMPLEX128))
#define PAIRS                                                                \
    (T(DCOLL_FLOAT32_INT) | T(DCOLL_FLOAT64_INT) | T(DCOLL_INT32_INT) |      \
     T(DCOLL_2FLOAT32) | T(DCOLL_2FLOAT64))

/* Which types each op takes, as MPI's rules have it. */
const uint32_t dcoll_op_types[DCOLL_OP_COUNT_] = {
    [DCOLL_SUM] = INTS | FLOATS | COMPLEX,
    [DCOLL_PRODUCT] = INTS | FLOATS | COMPLEX,
    [DCOLL_MIN] = INTS | FLOATS,  [DCOLL_MAX] = INTS | FLOATS,
    [DCOLL_AVG] = INTS | FLOATS | COMPLEX,  [DCOLL_BAND] = INTS,
    [DCOLL_BOR] = INTS,           [DCOLL_BXOR] = INTS,
    [DCOLL_LAND] = INTS | TRUTHS, [DCOLL_LOR] = INTS | TRUTHS,
    [DCOLL_LXOR] = INTS | TRUTHS, [DCOLL_MINLOC] = PAIRS,
    [DCOLL_MAXLOC] = PAIRS,
};

const char *dcoll_dtype_name(dcoll_dtype_t dtype)
{
    return (unsigned)dtype < DCOLL_DTYPE_COUNT_ ? dtype_names[dtype] : "?";
}

const char *dcoll_op_name(dcoll_op_t op)
{
    return (unsigned)op < DCOLL_OP_COUNT_ ? op_names[op] : "?";
}

dcoll_status_t dcoll_check_dtype_op(const char *fn, dcoll_dtype_t dtype,
                                    dcoll_op_t op, bool has_op)
{
    if ((unsigned)dtype >= DCOLL_DTYPE_COUNT_)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: dtype %d is not a dcoll_dtype_t (0..%d)",
                           fn, (int)dtype, DCOLL_DTYPE_COUNT_ - 1);
    if (!has_op)
        return DCOLL_SUCCESS;
    if ((unsigned)op >= DCOLL_OP_COUNT_)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: op %d is not a dcoll_op_t (0..%d)", fn, (int)op,
                           DCOLL_OP_COUNT_ - 1);
    if (dcoll_op_types[op] & T(dtype))
        return DCOLL_SUCCESS;
    if (op >= DCOLL_MINLOC)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: op %s needs a (value, index) pair type "
                           "(float32int, float64int, int32int, 2float32, "
                           "2float64), not %s", fn, op_names[op],
                           dtype_names[dtype]);
    if (PAIRS & T(dtype))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: op %s on %s: a pair type takes only MINLOC "
                           "and MAXLOC", fn, op_names[op],
                           dtype_names[dtype]);
    if (COMPLEX & T(dtype))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: op %s is not one of a complex type's (SUM, "
                           "PRODUCT, AVG): %s has no order and no bits to "
                           "combine", fn, op_names[op], dtype_names[dtype]);
    if (op >= DCOLL_BAND && op <= DCOLL_BXOR)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: op %s is bitwise and needs an integer "
                           "type, not %s", fn, op_names[op], dtype_names[dtype]);
    if (op >= DCOLL_LAND)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: op %s is logical and needs an integer type, "
                           "bool or logical, not %s", fn, op_names[op],
                           dtype_names[dtype]);
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: op %s is arithmetic; %s takes only the logical "
                       "ops (LAND, LOR, LXOR)", fn, op_names[op],
                       dtype_names[dtype]);
}

dcoll_status_t dcoll_dtype_size(dcoll_dtype_t dtype, size_t *size)
{
    dcoll_status_t st = dcoll_check_dtype_op(__func__, dtype, DCOLL_SUM, false);
    if (st)
        return st;
    if (!size)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_dtype_size: size is NULL");
    *size = dcoll_dtype_sizes[dtype];
    return DCOLL_SUCCESS;
}
