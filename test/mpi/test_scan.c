/* Prefix reductions: dcoll_scan and dcoll_exscan on the world and on a
 * group with gaps (non-members untouched), blocking, async and plans,
 * in place too, for every type and op all_reduce takes:
 *   - bit for bit against MPI_Scan and MPI_Exscan on the same ranks,
 *     with inputs that round, wherever MPI has the type and op (AVG: its
 *     sum divided as dcoll divides, by r + 1 or r);
 *   - for the types MPI lacks (float16, bfloat16, logical, the 2-float
 *     pairs), against the inputs folded in rank order (exact values);
 * exscan leaves rank 0's buffer as it was; bad input is refused. Run
 * under mpirun with 1 to 4 ranks, or --sizes (test/sizes.h) for every
 * size inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

enum { NMAX = 257 };
enum form { BLOCKING, ASYNC, PLAN, NFORMS };
static const char *const form_names[] = {"blocking", "async", "plan"};
static const int64_t counts[] = {0, 1, NMAX};

struct grp {
    dcoll_group_t *g;
    MPI_Comm comm;   /* the same ranks, MPI's (MPI_COMM_NULL off it) */
    int m[T_MAXW], n, me;
    const char *name;
};

/* MPI's own type for dt, or MPI_DATATYPE_NULL. */
static MPI_Datatype mpi_type(dcoll_dtype_t dt)
{
    switch (dt) {
    case DCOLL_INT8: return MPI_INT8_T;
    case DCOLL_UINT8: return MPI_UINT8_T;
    case DCOLL_INT32: return MPI_INT32_T;
    case DCOLL_UINT32: return MPI_UINT32_T;
    case DCOLL_INT64: return MPI_INT64_T;
    case DCOLL_UINT64: return MPI_UINT64_T;
    case DCOLL_FLOAT32: return MPI_FLOAT;
    case DCOLL_FLOAT64: return MPI_DOUBLE;
    case DCOLL_BOOL: return MPI_C_BOOL;
    case DCOLL_COMPLEX64: return MPI_C_FLOAT_COMPLEX;
    case DCOLL_COMPLEX128: return MPI_C_DOUBLE_COMPLEX;
    case DCOLL_FLOAT32_INT: return MPI_FLOAT_INT;
    case DCOLL_FLOAT64_INT: return MPI_DOUBLE_INT;
    case DCOLL_INT32_INT: return MPI_2INT;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(dcoll_op_t op)
{
    switch (op) {
    case DCOLL_SUM: case DCOLL_AVG: return MPI_SUM;
    case DCOLL_PRODUCT: return MPI_PROD;
    case DCOLL_MIN: return MPI_MIN;
    case DCOLL_MAX: return MPI_MAX;
    case DCOLL_BAND: return MPI_BAND;
    case DCOLL_BOR: return MPI_BOR;
    case DCOLL_BXOR: return MPI_BXOR;
    case DCOLL_LAND: return MPI_LAND;
    case DCOLL_LOR: return MPI_LOR;
    case DCOLL_LXOR: return MPI_LXOR;
    case DCOLL_MINLOC: return MPI_MINLOC;
    default: return MPI_MAXLOC;
    }
}

/* Inputs that round in floating types, small in integer ones. */
static void inputs(void *b, dcoll_dtype_t dt, size_t n, int world)
{
    size_t es = t_size(dt);
    unsigned char *p = b;
    for (size_t i = 0; i < n; i++) {
        /* Values that round only where MPI has the type: the fold of
         * the others is exact in any order. */
        bool rounds = (t_is_float(dt) || dt >= DCOLL_COMPLEX64) &&
                      mpi_type(dt) != MPI_DATATYPE_NULL;
        double v = rounds ? 0.1 * (world + 1) + 1e-3 * (double)i + 1.0 / 3
                          : (double)(1 + (world + (int)i) % 3);
        if (dt == DCOLL_BOOL || dt == DCOLL_LOGICAL)
            v = (world + (int)i) % 3 != 0;
        if (dt >= DCOLL_COMPLEX64 && dt <= DCOLL_COMPLEX128) {
            t_set(p, dt == DCOLL_COMPLEX64 ? DCOLL_FLOAT32 : DCOLL_FLOAT64,
                  2 * i, v);
            t_set(p, dt == DCOLL_COMPLEX64 ? DCOLL_FLOAT32 : DCOLL_FLOAT64,
                  2 * i + 1, -v / 2);
        } else if (dt >= DCOLL_FLOAT32_INT) {
            /* value then index, as MPI's pairs; ties broken by index */
            unsigned char *e = p + i * es;
            double x = (double)((world * 5 + (int)i) % 4);
            int k = world;
            switch (dt) {
            case DCOLL_FLOAT32_INT: { float f = (float)x;
                memcpy(e, &f, 4); memcpy(e + 4, &k, 4); break; }
            case DCOLL_FLOAT64_INT: memcpy(e, &x, 8); memcpy(e + 8, &k, 4);
                break;
            case DCOLL_INT32_INT: { int f = (int)x;
                memcpy(e, &f, 4); memcpy(e + 4, &k, 4); break; }
            case DCOLL_2FLOAT32: { float f[2] = {(float)x, (float)k};
                memcpy(e, f, 8); break; }
            default: { double f[2] = {x, (double)k}; memcpy(e, f, 16); }
            }
        } else {
            t_set(p, dt, i, v);
        }
    }
}

/* AVG's division, as dcoll does it on the host: in the type. */
static void divide(void *b, dcoll_dtype_t dt, size_t n, int by)
{
    if (dt == DCOLL_COMPLEX64 || dt == DCOLL_COMPLEX128) {
        divide(b, dt == DCOLL_COMPLEX64 ? DCOLL_FLOAT32 : DCOLL_FLOAT64, 2 * n,
               by);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case DCOLL_FLOAT32: ((float *)b)[i] /= (float)by; break;
        case DCOLL_FLOAT64: ((double *)b)[i] /= (double)by; break;
        case DCOLL_INT8: ((int8_t *)b)[i] /= by; break;
        case DCOLL_UINT8: ((uint8_t *)b)[i] /= by; break;
        case DCOLL_INT32: ((int32_t *)b)[i] /= by; break;
        case DCOLL_UINT32: ((uint32_t *)b)[i] /= (uint32_t)by; break;
        case DCOLL_INT64: ((int64_t *)b)[i] /= by; break;
        case DCOLL_UINT64: ((uint64_t *)b)[i] /= (uint64_t)by; break;
        default: break;
        }
    }
}

/* What rank G->me gets: MPI's own call, or the fold of the members'
 * inputs in rank order; false where there is none (exscan's rank 0). */
static bool expected(struct grp *G, bool ex, dcoll_dtype_t dt, dcoll_op_t op,
                     size_t n, void *want)
{
    int upto = ex ? G->me - 1 : G->me;
    size_t es = t_size(dt);
    MPI_Datatype mt = mpi_type(dt);
    if (mt != MPI_DATATYPE_NULL) {   /* every member calls MPI's */
        unsigned char *in = malloc(es * n + 1);
        inputs(in, dt, n, t_rank);
        if (ex)
            MPI_Exscan(in, want, (int)n, mt, mpi_op(op), G->comm);
        else
            MPI_Scan(in, want, (int)n, mt, mpi_op(op), G->comm);
        free(in);
        if (op == DCOLL_AVG && upto >= 0)
            divide(want, dt, n, upto + 1);
        return upto >= 0;
    }
    if (upto < 0)
        return false;
    /* float16, bfloat16, logical, 2float32, 2float64: exact values. */
    unsigned char *one = malloc(es * n + 1);
    for (size_t i = 0; i < n; i++) {
        double acc = 0, idx = 0;
        for (int k = 0; k <= upto; k++) {
            inputs(one, dt, n, G->m[k]);
            double v = dt >= DCOLL_FLOAT32_INT
                           ? (dt == DCOLL_2FLOAT32 ? ((float *)one)[2 * i]
                                                   : ((double *)one)[2 * i])
                           : t_get(one, dt, i);
            double j = dt == DCOLL_2FLOAT32 ? ((float *)one)[2 * i + 1]
                       : dt == DCOLL_2FLOAT64 ? ((double *)one)[2 * i + 1]
                                              : 0;
            if (k == 0 || (op == DCOLL_MINLOC && (v < acc || (v == acc && j < idx))) ||
                (op == DCOLL_MAXLOC && (v > acc || (v == acc && j < idx)))) {
                if (k == 0 || op >= DCOLL_MINLOC) {
                    acc = v;
                    idx = j;
                    continue;
                }
            }
            if (op < DCOLL_MINLOC)
                acc = t_combine(op, acc, v);
        }
        if (dt == DCOLL_2FLOAT32) {
            float f[2] = {(float)acc, (float)idx};
            memcpy((char *)want + i * es, f, 8);
        } else if (dt == DCOLL_2FLOAT64) {
            double f[2] = {acc, idx};
            memcpy((char *)want + i * es, f, 16);
        } else {
            t_set(want, dt, i, t_average(op, acc, upto + 1, t_is_float(dt)));
        }
    }
    free(one);
    return true;
}

/* Bit for bit, but not a pair's padding (float64 and int: 12 bytes of
 * 16), which MPI does not write. */
static bool same(const void *a, const void *b, dcoll_dtype_t dt, size_t n)
{
    size_t es = t_size(dt), used = dt == DCOLL_FLOAT64_INT ? 12 : es;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * es, (const char *)b + i * es, used))
            return false;
    return true;
}

static void one(struct grp *G, bool ex, dcoll_dtype_t dt, dcoll_op_t op,
                int64_t count, enum form form, bool inplace)
{
    size_t es = t_size(dt), n = (size_t)count;
    bool member = G->me >= 0;
    unsigned char *s = malloc(es * NMAX + 1), *r = malloc(es * NMAX + 1);
    unsigned char *want = malloc(es * NMAX + 1), *before = malloc(es * NMAX + 1);
    char what[160];
    snprintf(what, sizeof(what), "%s %s %s %s n=%lld %s%s",
             ex ? "exscan" : "scan", G->name, t_dtype_names[dt],
             t_op_names[op], (long long)count, form_names[form],
             inplace ? " in place" : "");
    inputs(s, dt, n, t_rank);
    memset(r, 0x5a, es * NMAX);
    unsigned char *out = inplace ? s : r;
    memcpy(before, out, es * n);
    bool has = member && expected(G, ex, dt, op, n, want);
    dcoll_status_t (*call)(dcoll_group_t *, const void *, void *, int64_t,
                           dcoll_dtype_t, dcoll_op_t,
                           const dcoll_coll_opts_t *, dcoll_work_t **) =
        ex ? dcoll_exscan : dcoll_scan;
    dcoll_status_t st;
    if (form == PLAN) {
        dcoll_plan_t *p = NULL;
        st = (ex ? dcoll_exscan_plan : dcoll_scan_plan)(
            G->g, s, inplace ? s : r, count, dt, op, NULL, &p);
        /* Started twice: the second with the inputs again. */
        for (int k = 0; k < 2 && !st; k++) {
            inputs(s, dt, n, t_rank);
            st = dcoll_plan_start(p, NULL);
        }
        if (p)
            dcoll_plan_free(&p);
    } else if (form == ASYNC) {
        dcoll_work_t *w = NULL;
        st = call(G->g, s, inplace ? s : r, count, dt, op, NULL, &w);
        if (!st)
            st = dcoll_work_wait(w);
        dcoll_work_free(&w);
    } else {
        st = call(G->g, s, inplace ? s : r, count, dt, op, NULL, NULL);
    }
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    if (has && !st)
        CHECK(same(out, want, dt, n),
              "%s: rank %d's result differs from %s (first element %g, "
              "want %g)", what, G->me,
              mpi_type(dt) != MPI_DATATYPE_NULL ? "MPI's" : "the fold",
              t_get(out, dt, 0), t_get(want, dt, 0));
    if (!has && !inplace && !st)
        CHECK(!memcmp(r, before, es * n), "%s: rank %d's buffer written "
              "(exscan's rank 0, or a non-member)", what, G->me);
    free(s);
    free(r);
    free(want);
    free(before);
}

static void refusals(void)
{
    float f = 1;
    dcoll_group_t *g = t_spare();
    CHECK_DEAD(g, dcoll_scan(g, &f, &f, 1, DCOLL_FLOAT32, DCOLL_BAND, NULL,
                             NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "BAND");
    CHECK_DEAD(g, dcoll_exscan(g, &f, &f, -1, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                               NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "count -1 is negative");
    CHECK_DEAD(g, dcoll_scan(g, NULL, &f, 1, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                             NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
    dcoll_group_destroy(&g);
}

/* The world, then t_world_ranks' group with gaps, each with MPI's own
 * communicator of the same ranks in the same order. */
static void body(void)
{
    struct grp G[2] = {{.name = "world"}, {.name = "gaps"}};
    G[0].n = t_w.n;
    memcpy(G[0].m, t_w.r, sizeof(int) * (size_t)t_w.n);
    G[0].g = T_WORLD;
    G[0].comm = T_COMM;
    G[0].me = t_w.me;
    G[1].me = t_sorted_ranks(1, G[1].m, &G[1].n);
    CHECK_OK(t_new_group(&G[1].g, G[1].m, G[1].n, NULL));
    MPI_Comm_split(T_COMM, G[1].me >= 0 ? 0 : MPI_UNDEFINED, G[1].me,
                   &G[1].comm);
    for (int k = 0; k < 2; k++)
        for (int dt = 0; dt < DCOLL_DTYPE_COUNT_; dt++)
            for (int op = 0; op <= DCOLL_MAXLOC; op++) {
                if (!t_op_ok((dcoll_dtype_t)dt, (dcoll_op_t)op))
                    continue;
                /* Each form with each type and op, at a count of its
                 * own that turns with them, in place every other time:
                 * MPICH's busy polling makes every call cost time
                 * slices at 3 ranks on 2 cores. */
                for (int ex = 0; ex < 2; ex++)
                    for (int f = 0; f < NFORMS; f++)
                        one(&G[k], ex, (dcoll_dtype_t)dt, (dcoll_op_t)op,
                            counts[(f + dt + op) % 3], (enum form)f,
                            (f + dt + ex) % 2 == 1);
            }
    refusals();
    dcoll_group_destroy(&G[1].g);
    if (G[1].comm != MPI_COMM_NULL)
        MPI_Comm_free(&G[1].comm);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    CHECK_OK(dcoll_init(NULL));
    t_sizes(argc, argv, body);
    CHECK_OK(dcoll_finalize());
    int rc = t_finish("scan");
    MPI_Finalize();
    return rc;
}
