/* dcoll types and ops as MPI sees them; big counts as derived types. */
#include <stdlib.h>
#include "mpi_internal.h"

MPI_Datatype dcoll_mpi_dtype[DCOLL_DTYPE_COUNT_];
MPI_Datatype dcoll_mpi_move_dtype[DCOLL_DTYPE_COUNT_];
MPI_Op dcoll_mpi_native_op[DCOLL_OP_COUNT_];
MPI_Op dcoll_mpi_half_op[DCOLL_OP_COUNT_];
int dcoll_mpi_tag_ub = 32767; /* the least MPI promises */

/* halfops.c */
void dcoll_mpi_half_sum(void *in, void *inout, int *len, MPI_Datatype *dt);
void dcoll_mpi_half_prod(void *in, void *inout, int *len, MPI_Datatype *dt);
void dcoll_mpi_half_min(void *in, void *inout, int *len, MPI_Datatype *dt);
void dcoll_mpi_half_max(void *in, void *inout, int *len, MPI_Datatype *dt);

static MPI_User_function *const half_fns[4] = {
    dcoll_mpi_half_sum, dcoll_mpi_half_prod, dcoll_mpi_half_min,
    dcoll_mpi_half_max,
};

dcoll_status_t dcoll_mpi_types_create(void)
{
    dcoll_mpi_dtype[DCOLL_INT8] = MPI_INT8_T;
    dcoll_mpi_dtype[DCOLL_UINT8] = MPI_UINT8_T;
    dcoll_mpi_dtype[DCOLL_INT32] = MPI_INT32_T;
    dcoll_mpi_dtype[DCOLL_UINT32] = MPI_UINT32_T;
    dcoll_mpi_dtype[DCOLL_INT64] = MPI_INT64_T;
    dcoll_mpi_dtype[DCOLL_UINT64] = MPI_UINT64_T;
    dcoll_mpi_dtype[DCOLL_FLOAT32] = MPI_FLOAT;
    dcoll_mpi_dtype[DCOLL_FLOAT64] = MPI_DOUBLE;
    dcoll_mpi_dtype[DCOLL_BOOL] = MPI_C_BOOL;
    dcoll_mpi_dtype[DCOLL_LOGICAL] = MPI_LOGICAL;
    dcoll_mpi_dtype[DCOLL_COMPLEX64] = MPI_C_FLOAT_COMPLEX;
    dcoll_mpi_dtype[DCOLL_COMPLEX128] = MPI_C_DOUBLE_COMPLEX;
    dcoll_mpi_dtype[DCOLL_FLOAT32_INT] = MPI_FLOAT_INT;
    dcoll_mpi_dtype[DCOLL_FLOAT64_INT] = MPI_DOUBLE_INT;
    dcoll_mpi_dtype[DCOLL_INT32_INT] = MPI_2INT;
    dcoll_mpi_dtype[DCOLL_2FLOAT32] = MPI_2REAL;
    dcoll_mpi_dtype[DCOLL_2FLOAT64] = MPI_2DOUBLE_PRECISION;
    /* Two distinct 2-byte types, so one op function can tell them apart. */
    int rc;
    if ((rc = MPI_Type_contiguous(2, MPI_BYTE,
                                  &dcoll_mpi_dtype[DCOLL_FLOAT16])) ||
        (rc = MPI_Type_commit(&dcoll_mpi_dtype[DCOLL_FLOAT16])) ||
        (rc = MPI_Type_contiguous(2, MPI_BYTE,
                                  &dcoll_mpi_dtype[DCOLL_BFLOAT16])) ||
        (rc = MPI_Type_commit(&dcoll_mpi_dtype[DCOLL_BFLOAT16])))
        return dcoll_mpi_error(rc, "MPI_Type_contiguous (float16 types)");
    for (int i = 0; i < DCOLL_DTYPE_COUNT_; i++) {
        dcoll_mpi_move_dtype[i] = dcoll_mpi_dtype[i];
        if (i < DCOLL_FLOAT32_INT)
            continue;
        if ((rc = MPI_Type_contiguous((int)dcoll_dtype_sizes[i], MPI_BYTE,
                                      &dcoll_mpi_move_dtype[i])) ||
            (rc = MPI_Type_commit(&dcoll_mpi_move_dtype[i])))
            return dcoll_mpi_error(rc, "MPI_Type_contiguous (pair types)");
    }

    const MPI_Op native[DCOLL_OP_COUNT_] = {
        MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_SUM, MPI_BAND, MPI_BOR,
        MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_MINLOC, MPI_MAXLOC,
    };
    for (int i = 0; i < DCOLL_OP_COUNT_; i++) {
        dcoll_mpi_native_op[i] = native[i];
        dcoll_mpi_half_op[i] = MPI_OP_NULL;
    }
    for (int i = 0; i < 4; i++)
        if ((rc = MPI_Op_create(half_fns[i], 1, &dcoll_mpi_half_op[i])))
            return dcoll_mpi_error(rc, "MPI_Op_create (float16 ops)");
    dcoll_mpi_half_op[DCOLL_AVG] = dcoll_mpi_half_op[DCOLL_SUM];
    dcoll_kernels_setup();

    int *ub, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (flag)
        dcoll_mpi_tag_ub = *ub;
    return DCOLL_SUCCESS;
}

void dcoll_mpi_types_free(void)
{
    for (int i = 0; i < 4; i++)
        if (dcoll_mpi_half_op[i] != MPI_OP_NULL)
            MPI_Op_free(&dcoll_mpi_half_op[i]);
    for (int i = 0; i < DCOLL_OP_COUNT_; i++)
        dcoll_mpi_half_op[i] = MPI_OP_NULL;
    for (int i = DCOLL_FLOAT32_INT; i < DCOLL_DTYPE_COUNT_; i++)
        if (dcoll_mpi_move_dtype[i] != MPI_DATATYPE_NULL &&
            dcoll_mpi_move_dtype[i] != dcoll_mpi_dtype[i])
            MPI_Type_free(&dcoll_mpi_move_dtype[i]);
    if (dcoll_mpi_dtype[DCOLL_FLOAT16] != MPI_DATATYPE_NULL)
        MPI_Type_free(&dcoll_mpi_dtype[DCOLL_FLOAT16]);
    if (dcoll_mpi_dtype[DCOLL_BFLOAT16] != MPI_DATATYPE_NULL)
        MPI_Type_free(&dcoll_mpi_dtype[DCOLL_BFLOAT16]);
}

int dcoll_mpi_big_type(int64_t n, MPI_Datatype base, MPI_Datatype *out)
{
    const int64_t chunk = INT64_C(1) << 30;
    int64_t q = n / chunk, r = n % chunk;
    MPI_Aint lb, ext;
    MPI_Datatype blk, body, tail, parts;
    int rc;

    if ((rc = MPI_Type_get_extent(base, &lb, &ext)))
        return rc;
    if ((rc = MPI_Type_contiguous((int)chunk, base, &blk)))
        return rc;
    rc = MPI_Type_contiguous((int)q, blk, &body);
    MPI_Type_free(&blk);
    if (rc)
        return rc;
    if (r == 0) {
        parts = body;
    } else {
        if ((rc = MPI_Type_contiguous((int)r, base, &tail))) {
            MPI_Type_free(&body);
            return rc;
        }
        int lens[2] = {1, 1};
        MPI_Aint disp[2] = {0, (MPI_Aint)(q * chunk) * ext};
        MPI_Datatype types[2] = {body, tail};
        rc = MPI_Type_create_struct(2, lens, disp, types, &parts);
        MPI_Type_free(&body);
        MPI_Type_free(&tail);
        if (rc)
            return rc;
    }
    /* Pin the extent to n elements: a struct may pad it for alignment. */
    rc = MPI_Type_create_resized(parts, 0, (MPI_Aint)n * ext, out);
    MPI_Type_free(&parts);
    if (rc)
        return rc;
    return MPI_Type_commit(out);
}

int dcoll_mpi_layout_type(const dcoll_layout_t *l, MPI_Datatype base,
                          MPI_Datatype *out)
{
    MPI_Datatype one;
    int rc = MPI_Type_vector((int)l->count, (int)l->blocklen,
                             (int)l->stride, base, &one);
    if (rc != MPI_SUCCESS)
        return rc;
    if (l->count2 > 1) {
        MPI_Aint esz, lb;
        MPI_Type_get_extent(base, &lb, &esz);
        rc = MPI_Type_create_hvector((int)l->count2, 1,
                                     (MPI_Aint)l->stride2 * esz, one, out);
        MPI_Type_free(&one);
        if (rc != MPI_SUCCESS)
            return rc;
    } else {
        *out = one;
    }
    if ((rc = MPI_Type_commit(out)) != MPI_SUCCESS)
        MPI_Type_free(out);
    return rc;
}
