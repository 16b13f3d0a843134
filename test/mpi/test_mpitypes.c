/* The types and ops of MPI's that dcoll added in API 1.7, against MPI's
 * own calls on the same inputs: the logical ops (LAND, LOR, LXOR) on
 * every integer type, bool and logical, SUM, PRODUCT (and AVG, as a SUM
 * divided) on complex64 and complex128, and MINLOC and MAXLOC on the
 * five pair types, with many ties (the lowest index must win).
 * all_reduce (blocking, async, in place), reduce, reduce_scatter, the
 * coalesced and the multi-buffer forms must give MPI's bytes. Inputs are
 * small (0, 1 and 2; 0 and 1 for bool and logical; complex parts from -1
 * to 1), odd counts. The new types also move through broadcast,
 * all_gather, scatter and gather (1100 elements: past MPICH's
 * truncation); the ops they do not take are refused with a message
 * naming the rule. Run under mpirun with 1 to 4 ranks, or --sizes
 * (test/sizes.h) for every size inside one job. */
#include <complex.h>
#include <mpi.h>
#include "testutil.h"
#include "newtypes.h"
#include "sizes.h"

int t_rank, t_failures;
#define world (t_w.n)
#define COUNT 37

static MPI_Datatype mpi_type(dcoll_dtype_t dt)
{
    switch (dt) {
    case DCOLL_INT8: return MPI_INT8_T;
    case DCOLL_UINT8: return MPI_UINT8_T;
    case DCOLL_INT32: return MPI_INT32_T;
    case DCOLL_UINT32: return MPI_UINT32_T;
    case DCOLL_INT64: return MPI_INT64_T;
    case DCOLL_UINT64: return MPI_UINT64_T;
    case DCOLL_BOOL: return MPI_C_BOOL;
    case DCOLL_COMPLEX64: return MPI_C_FLOAT_COMPLEX;
    case DCOLL_COMPLEX128: return MPI_C_DOUBLE_COMPLEX;
    case DCOLL_FLOAT32_INT: return MPI_FLOAT_INT;
    case DCOLL_FLOAT64_INT: return MPI_DOUBLE_INT;
    case DCOLL_INT32_INT: return MPI_2INT;
    case DCOLL_2FLOAT32: return MPI_2REAL;
    case DCOLL_2FLOAT64: return MPI_2DOUBLE_PRECISION;
    default: return MPI_LOGICAL;
    }
}

static MPI_Op mpi_op(dcoll_op_t op)
{
    switch (op) {
    case DCOLL_LAND: return MPI_LAND;
    case DCOLL_LOR: return MPI_LOR;
    case DCOLL_LXOR: return MPI_LXOR;
    case DCOLL_PRODUCT: return MPI_PROD;
    case DCOLL_MINLOC: return MPI_MINLOC;
    case DCOLL_MAXLOC: return MPI_MAXLOC;
    default: return MPI_SUM;   /* AVG: MPI's sum, divided after */
    }
}

/* io = in op io, element by element, as dcoll's own fold does. */
static void fold(void *io, const void *in, dcoll_dtype_t dt, dcoll_op_t op,
                 int n)
{
    for (int k = 0; k < n; k++) {
        if (nt_is_pair(dt)) {
            double av, ai, bv, bi;
            nt_pair_get(in, dt, k, &av, &ai);
            nt_pair_get(io, dt, k, &bv, &bi);
            bool better = op == DCOLL_MINLOC ? av < bv : av > bv;
            if (better || (av == bv && ai < bi))
                nt_pair_set(io, dt, k, av == bv ? bv : av, (int)ai);
        } else if (dt == DCOLL_COMPLEX64) {
            float _Complex a = ((const float _Complex *)in)[k];
            float _Complex *b = (float _Complex *)io + k;
            *b = op == DCOLL_PRODUCT ? a * *b : a + *b;
        } else if (dt == DCOLL_COMPLEX128) {
            double _Complex a = ((const double _Complex *)in)[k];
            double _Complex *b = (double _Complex *)io + k;
            *b = op == DCOLL_PRODUCT ? a * *b : a + *b;
        } else {
            t_set(io, dt, (size_t)k,
                  t_combine(op, t_get(in, dt, (size_t)k),
                            t_get(io, dt, (size_t)k)));
        }
    }
}

/* AVG: MPI's sum divided by the group's size, part by part. */
static void divide(void *buf, dcoll_dtype_t dt, int n, int by)
{
    for (int k = 0; k < n; k++) {
        if (dt == DCOLL_COMPLEX64) {
            float *p = (float *)buf + 2 * k;
            p[0] /= (float)by;
            p[1] /= (float)by;
        } else {
            double *p = (double *)buf + 2 * k;
            p[0] /= by;
            p[1] /= by;
        }
    }
}

/* The dtype of the buffers same() compares. */
static dcoll_dtype_t cur;

static void same(const void *got, const void *want, size_t bytes,
                 const char *what, const char *tn, const char *on)
{
    long k = nt_differs(got, want, (int64_t)(bytes / t_size(cur)), cur);
    CHECK(k < 0, "%s %s %s: element %ld is not MPI's", what, tn, on, k);
}

static void reductions(dcoll_dtype_t dt, dcoll_op_t op)
{
    size_t esz = t_size(dt), n = COUNT * (size_t)(world + 1);
    const char *tn = t_dtype_names[dt], *on = t_op_names[op];
    cur = dt;
    char *in = calloc(n, esz), *got = calloc(n, esz), *want = calloc(n, esz);
    MPI_Datatype mt = mpi_type(dt);
    MPI_Op mo = mpi_op(op);

    int avg = op == DCOLL_AVG;
    nt_fill(in, dt, t_rank, 0, (int)n);
    MPI_Allreduce(in, want, COUNT, mt, mo, T_COMM);
    if (avg)
        divide(want, dt, COUNT, world);
    CHECK_OK(dcoll_all_reduce(T_WORLD, in, got, COUNT, dt, op, NULL, NULL));
    same(got, want, COUNT * esz, "all_reduce", tn, on);

    /* Async, in place. */
    memcpy(got, in, COUNT * esz);
    dcoll_work_t *w = NULL;
    CHECK_OK(dcoll_all_reduce(T_WORLD, got, got, COUNT, dt, op, NULL, &w));
    CHECK_OK(dcoll_work_wait(w));
    CHECK_OK(dcoll_work_free(&w));
    same(got, want, COUNT * esz, "all_reduce async in place", tn, on);

    int root = world - 1;   /* in the world's order; dcoll's is a job rank */
    memset(want, 0x5a, n * esz);
    memset(got, 0x5a, n * esz);
    MPI_Reduce(in, want, COUNT, mt, mo, root, T_COMM);
    if (avg && t_w.me == root)
        divide(want, dt, COUNT, world);
    CHECK_OK(dcoll_reduce(T_WORLD, in, got, COUNT, dt, op, t_w.r[root], NULL,
                          NULL));
    if (t_w.me == root)
        same(got, want, COUNT * esz, "reduce", tn, on);

    MPI_Reduce_scatter_block(in, want, COUNT, mt, mo, T_COMM);
    if (avg)
        divide(want, dt, COUNT, world);
    CHECK_OK(dcoll_reduce_scatter(T_WORLD, in, got, COUNT, dt, op, NULL,
                                  NULL));
    same(got, want, COUNT * esz, "reduce_scatter", tn, on);

    /* Coalesced: two tensors, each as its own all_reduce. */
    char *a = calloc(COUNT, esz), *b = calloc(5, esz);
    nt_fill(a, dt, t_rank, 1, COUNT);
    nt_fill(b, dt, t_rank, 2, 5);
    MPI_Allreduce(a, want, COUNT, mt, mo, T_COMM);
    MPI_Allreduce(b, want + COUNT * esz, 5, mt, mo, T_COMM);
    if (avg) {
        divide(want, dt, COUNT, world);
        divide(want + COUNT * esz, dt, 5, world);
    }
    void *bufs[2] = {a, b};
    int64_t counts[2] = {COUNT, 5};
    CHECK_OK(dcoll_all_reduce_coalesced(T_WORLD, bufs, counts, 2, dt, op, NULL,
                                        NULL));
    same(a, want, COUNT * esz, "all_reduce_coalesced [0]", tn, on);
    same(b, want + COUNT * esz, 5 * esz, "all_reduce_coalesced [1]", tn, on);

    /* Multi-buffer: each buffer a rank of its own. MPI's side: this
     * process's two buffers folded by hand, then MPI_Allreduce. */
    nt_fill(a, dt, t_rank, 3, COUNT);
    nt_fill(got, dt, t_rank, 6, COUNT);   /* values as buffer 3's: ties */
    char *mine = calloc(COUNT, esz);
    memcpy(mine, got, COUNT * esz);
    fold(mine, a, dt, op, COUNT);
    MPI_Allreduce(mine, want, COUNT, mt, mo, T_COMM);
    if (avg)
        divide(want, dt, COUNT, 2 * world);
    void *multi[2] = {a, got};
    CHECK_OK(dcoll_all_reduce_multi(T_WORLD, multi, 2, COUNT, dt, op, NULL,
                                    NULL));
    same(a, want, COUNT * esz, "all_reduce_multi [0]", tn, on);
    same(got, want, COUNT * esz, "all_reduce_multi [1]", tn, on);
    free(mine);
    free(a);
    free(b);
    free(in);
    free(got);
    free(want);
}

/* The new types move as they are, and take no other op. */
static void moves(dcoll_dtype_t dt)
{
    size_t esz = t_size(dt);
    const char *tn = t_dtype_names[dt];
    cur = dt;
    char *x = calloc((size_t)world * COUNT, esz);
    char *y = calloc((size_t)world * COUNT, esz);
    nt_fill(x, dt, t_rank, 0, COUNT);
    CHECK_OK(dcoll_all_gather(T_WORLD, x, y, COUNT, dt, NULL, NULL));
    for (int r = 0; r < world; r++) {
        nt_fill(x, dt, t_w.r[r], 0, COUNT);
        same(y + (size_t)r * COUNT * esz, x, COUNT * esz, "all_gather", tn,
             "");
    }
    nt_fill(x, dt, 0, 9, COUNT);
    if (t_w.me != 0)
        memset(x, 0, COUNT * esz);
    CHECK_OK(dcoll_broadcast(T_WORLD, x, COUNT, dt, t_w.r[0], NULL, NULL));
    nt_fill(y, dt, 0, 9, COUNT);
    same(x, y, COUNT * esz, "broadcast", tn, "");
    free(x);
    free(y);
    /* Scattered and gathered past a few hundred elements: MPICH 4.0's
     * scatter truncated the padded MPI_DOUBLE_INT there. */
    enum { BIG = 1100 };
    size_t big = BIG * esz;
    char *all = calloc((size_t)world, big), *mine = calloc(1, big);
    char *back = calloc((size_t)world, big), *want = calloc(1, big);
    for (int r = 0; r < world; r++)
        nt_fill(all + (size_t)r * big, dt, t_w.r[r], 3, BIG);
    int root = t_w.r[world - 1];   /* MPICH failed at root 1 of 2, 0 of 4 */
    CHECK_OK(dcoll_scatter(T_WORLD, all, mine, BIG, dt, root, NULL, NULL));
    nt_fill(want, dt, t_rank, 3, BIG);
    same(mine, want, big, "scatter", tn, "");
    CHECK_OK(dcoll_gather(T_WORLD, mine, back, BIG, dt, root, NULL, NULL));
    if (t_rank == root)
        same(back, all, (size_t)world * big, "gather", tn, "");
    free(all);
    free(mine);
    free(back);
    free(want);

    double v[4] = {0};
    for (int op = 0; op < DCOLL_OP_COUNT_; op++) {
        char want[96];
        if (nt_is_pair(dt)) {
            if (op >= DCOLL_MINLOC)
                continue;
            snprintf(want, sizeof(want), "a pair type takes only MINLOC and "
                     "MAXLOC");
        } else if (nt_is_complex(dt)) {
            if (op == DCOLL_SUM || op == DCOLL_PRODUCT || op == DCOLL_AVG)
                continue;
            snprintf(want, sizeof(want), op >= DCOLL_MINLOC
                     ? "op %s needs a (value, index) pair type"
                     : "op %s is not one of a complex type's (SUM, "
                       "PRODUCT, AVG)", t_op_names[op]);
        } else if (op >= DCOLL_MINLOC) {
            snprintf(want, sizeof(want), "op %s needs a (value, index) pair "
                     "type", t_op_names[op]);
        } else if (op >= DCOLL_LAND) {
            continue;
        } else if (op >= DCOLL_BAND) {
            snprintf(want, sizeof(want), "is bitwise and needs an integer "
                     "type, not %s", tn);
        } else {
            snprintf(want, sizeof(want), "%s takes only the logical ops",
                     tn);
        }
        dcoll_group_t *g = t_spare();
        CHECK_DEAD(g, dcoll_all_reduce(g, v, v, 1, dt, (dcoll_op_t)op, NULL,
                                       NULL),
                   DCOLL_ERR_INVALID_ARGUMENT, want);
        CHECK_OK(dcoll_group_destroy(&g));
    }
}

static void body(void)
{
    static const dcoll_dtype_t types[] = {
        DCOLL_INT8, DCOLL_UINT8, DCOLL_INT32, DCOLL_UINT32, DCOLL_INT64,
        DCOLL_UINT64, DCOLL_BOOL, DCOLL_LOGICAL,
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        for (int op = DCOLL_LAND; op <= DCOLL_LXOR; op++)
            reductions(types[i], (dcoll_op_t)op);
    for (int dt = DCOLL_COMPLEX64; dt <= DCOLL_COMPLEX128; dt++) {
        reductions((dcoll_dtype_t)dt, DCOLL_SUM);
        reductions((dcoll_dtype_t)dt, DCOLL_PRODUCT);
        reductions((dcoll_dtype_t)dt, DCOLL_AVG);
    }
    for (int dt = DCOLL_FLOAT32_INT; dt <= DCOLL_2FLOAT64; dt++) {
        reductions((dcoll_dtype_t)dt, DCOLL_MINLOC);
        reductions((dcoll_dtype_t)dt, DCOLL_MAXLOC);
    }
    for (int dt = DCOLL_BOOL; dt < DCOLL_DTYPE_COUNT_; dt++)
        moves((dcoll_dtype_t)dt);
    /* Floating types take no logical op. */
    float f = 1;
    dcoll_group_t *g = t_spare();
    CHECK_DEAD(g, dcoll_all_reduce(g, &f, &f, 1, DCOLL_FLOAT32, DCOLL_LOR,
                                   NULL, NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "op LOR is logical and needs an "
               "integer type, bool or logical, not float32");
    CHECK_OK(dcoll_group_destroy(&g));
    /* What MPI says a logical is, dcoll says too. */
    int msize = 0;
    size_t dsize = 0;
    MPI_Type_size(MPI_LOGICAL, &msize);
    dcoll_dtype_size(DCOLL_LOGICAL, &dsize);
    CHECK((size_t)msize == dsize, "MPI_LOGICAL has %d bytes, DCOLL_LOGICAL "
          "%zu", msize, dsize);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    t_sizes(argc, argv, body);
    int rc = t_finish("mpitypes");
    dcoll_finalize();
    MPI_Finalize();
    return rc;
}
