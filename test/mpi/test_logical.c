/* The logical ops (LAND, LOR, LXOR) on every integer type, bool and
 * logical, against MPI's own calls on the same inputs: all_reduce
 * (blocking, async, in place), reduce, reduce_scatter, the coalesced and
 * the multi-buffer forms must give MPI's bytes. Inputs are 0, 1 and 2
 * (0 and 1 for bool and logical), odd counts. bool and logical also move
 * through broadcast and all_gather; the ops they do not take are refused
 * with a message naming the rule. Run under mpirun with 1 to 4 ranks. */
#include <mpi.h>
#include "testutil.h"

int t_rank, t_failures;
static int world;
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
    default: return MPI_LOGICAL;
    }
}

static MPI_Op mpi_op(dcoll_op_t op)
{
    return op == DCOLL_LAND ? MPI_LAND : op == DCOLL_LOR ? MPI_LOR : MPI_LXOR;
}

/* Element k of rank r's buffer b. */
static void fill(void *buf, dcoll_dtype_t dt, int r, int b, int n)
{
    for (int k = 0; k < n; k++)
        t_set(buf, dt, (size_t)k, (double)((r * 5 + b * 7 + k * 3) % 3));
}

static void same(const void *got, const void *want, size_t bytes,
                 const char *what, const char *tn, const char *on)
{
    CHECK(!memcmp(got, want, bytes), "%s %s %s: not MPI's bytes", what, tn,
          on);
}

static void reductions(dcoll_dtype_t dt, dcoll_op_t op)
{
    size_t esz = t_size(dt), n = COUNT * (size_t)(world + 1);
    const char *tn = t_dtype_names[dt], *on = t_op_names[op];
    char *in = calloc(n, esz), *got = calloc(n, esz), *want = calloc(n, esz);
    MPI_Datatype mt = mpi_type(dt);
    MPI_Op mo = mpi_op(op);

    fill(in, dt, t_rank, 0, (int)n);
    MPI_Allreduce(in, want, COUNT, mt, mo, MPI_COMM_WORLD);
    CHECK_OK(dcoll_all_reduce(NULL, in, got, COUNT, dt, op, NULL, NULL));
    same(got, want, COUNT * esz, "all_reduce", tn, on);

    /* Async, in place. */
    memcpy(got, in, COUNT * esz);
    dcoll_work_t *w = NULL;
    CHECK_OK(dcoll_all_reduce(NULL, got, got, COUNT, dt, op, NULL, &w));
    CHECK_OK(dcoll_work_wait(w));
    CHECK_OK(dcoll_work_free(&w));
    same(got, want, COUNT * esz, "all_reduce async in place", tn, on);

    int root = world - 1;
    memset(want, 0x5a, n * esz);
    memset(got, 0x5a, n * esz);
    MPI_Reduce(in, want, COUNT, mt, mo, root, MPI_COMM_WORLD);
    CHECK_OK(dcoll_reduce(NULL, in, got, COUNT, dt, op, root, NULL, NULL));
    if (t_rank == root)
        same(got, want, COUNT * esz, "reduce", tn, on);

    MPI_Reduce_scatter_block(in, want, COUNT, mt, mo, MPI_COMM_WORLD);
    CHECK_OK(dcoll_reduce_scatter(NULL, in, got, COUNT, dt, op, NULL, NULL));
    same(got, want, COUNT * esz, "reduce_scatter", tn, on);

    /* Coalesced: two tensors, each as its own all_reduce. */
    char *a = calloc(COUNT, esz), *b = calloc(5, esz);
    fill(a, dt, t_rank, 1, COUNT);
    fill(b, dt, t_rank, 2, 5);
    MPI_Allreduce(a, want, COUNT, mt, mo, MPI_COMM_WORLD);
    MPI_Allreduce(b, want + COUNT * esz, 5, mt, mo, MPI_COMM_WORLD);
    void *bufs[2] = {a, b};
    int64_t counts[2] = {COUNT, 5};
    CHECK_OK(dcoll_all_reduce_coalesced(NULL, bufs, counts, 2, dt, op, NULL,
                                        NULL));
    same(a, want, COUNT * esz, "all_reduce_coalesced [0]", tn, on);
    same(b, want + COUNT * esz, 5 * esz, "all_reduce_coalesced [1]", tn, on);

    /* Multi-buffer: each buffer a rank of its own. MPI's side: this
     * process's two buffers folded by hand, then MPI_Allreduce. */
    fill(a, dt, t_rank, 3, COUNT);
    fill(got, dt, t_rank, 4, COUNT);
    char *mine = calloc(COUNT, esz);
    for (int k = 0; k < COUNT; k++)
        t_set(mine, dt, (size_t)k,
              t_combine(op, t_get(a, dt, (size_t)k),
                        t_get(got, dt, (size_t)k)));
    MPI_Allreduce(mine, want, COUNT, mt, mo, MPI_COMM_WORLD);
    void *multi[2] = {a, got};
    CHECK_OK(dcoll_all_reduce_multi(NULL, multi, 2, COUNT, dt, op, NULL,
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

/* bool and logical move as they are, and take no other op. */
static void truths(dcoll_dtype_t dt)
{
    size_t esz = t_size(dt);
    const char *tn = t_dtype_names[dt];
    char *x = calloc((size_t)world * COUNT, esz);
    char *y = calloc((size_t)world * COUNT, esz);
    fill(x, dt, t_rank, 0, COUNT);
    CHECK_OK(dcoll_all_gather(NULL, x, y, COUNT, dt, NULL, NULL));
    for (int r = 0; r < world; r++) {
        fill(x, dt, r, 0, COUNT);
        same(y + (size_t)r * COUNT * esz, x, COUNT * esz, "all_gather", tn,
             "");
    }
    fill(x, dt, 0, 9, COUNT);
    if (t_rank != 0)
        memset(x, 0, COUNT * esz);
    CHECK_OK(dcoll_broadcast(NULL, x, COUNT, dt, 0, NULL, NULL));
    fill(y, dt, 0, 9, COUNT);
    same(x, y, COUNT * esz, "broadcast", tn, "");
    free(x);
    free(y);

    int v[4] = {0};
    for (int op = 0; op < DCOLL_LAND; op++) {
        char want[96];
        snprintf(want, sizeof(want), "%s takes only the logical ops", tn);
        if (op >= DCOLL_BAND)
            snprintf(want, sizeof(want), "is bitwise and needs an integer "
                     "type, not %s", tn);
        dcoll_group_t *g = t_spare();
        CHECK_DEAD(g, dcoll_all_reduce(g, v, v, 1, dt, (dcoll_op_t)op, NULL,
                                       NULL),
                   DCOLL_ERR_INVALID_ARGUMENT, want);
        CHECK_OK(dcoll_group_destroy(&g));
    }
}

int main(void)
{
    int provided;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &world);
    static const dcoll_dtype_t types[] = {
        DCOLL_INT8, DCOLL_UINT8, DCOLL_INT32, DCOLL_UINT32, DCOLL_INT64,
        DCOLL_UINT64, DCOLL_BOOL, DCOLL_LOGICAL,
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        for (int op = DCOLL_LAND; op <= DCOLL_LXOR; op++)
            reductions(types[i], (dcoll_op_t)op);
    truths(DCOLL_BOOL);
    truths(DCOLL_LOGICAL);
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
    int rc = t_finish("logical");
    dcoll_finalize();
    MPI_Finalize();
    return rc;
}
