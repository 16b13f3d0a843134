/* Strided layouts: the faces of a 3-D block with one ghost layer
 *   - dcoll_send_layout / dcoll_recv_layout (blocking, async, plans
 *     started twice) on a ring, each face into the neighbour's ghost
 *     face, and a strided send into a contiguous receive;
 *   - dcoll_neighbor_all_to_allw: the six faces of a Cartesian grid of
 *     ranks (periodic in x, walls in y and z) in one call, faces and
 *     ghosts in one array, blocking, async and planned;
 *   - every result bit for bit against MPI's own sends and receives of
 *     the same vector types made by hand;
 *   - bad layouts refused, naming the field.
 * Run under mpirun with 1 to 4 ranks, or --sizes (test/sizes.h) for every
 * size inside one job. dcoll's peers are job ranks, MPI's ranks of the
 * world's communicator. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;
#define size (t_w.n)

enum { X = 6, Y = 5, Z = 4, N = X * Y * Z };
enum form { BLOCKING, ASYNC, PLAN, PLAN_ASYNC, NFORMS };
static const char *const form_names[] = {"blocking", "async", "plan",
                                         "plan-async"};

/* The interior face of axis d at layer at (1 or the last interior one,
 * or 0 and the last for the ghosts). */
static dcoll_layout_t face(int d, int at)
{
    dcoll_layout_t l = {0};
    if (d == 0)
        l = (dcoll_layout_t){at + X + X * Y, Y - 2, 1, X, Z - 2, X * Y};
    else if (d == 1)
        l = (dcoll_layout_t){1 + X * at + X * Y, Z - 2, X - 2, X * Y, 0, 0};
    else
        l = (dcoll_layout_t){1 + X + X * Y * at, Y - 2, X - 2, X, 0, 0};
    return l;
}

static int last(int d)
{
    return (d == 0 ? X : d == 1 ? Y : Z) - 1;
}

/* MPI's own type for l, made by hand. */
static MPI_Datatype by_hand(const dcoll_layout_t *l)
{
    MPI_Datatype v, t;
    MPI_Type_vector((int)l->count, (int)l->blocklen, (int)l->stride,
                    MPI_DOUBLE, &v);
    if (l->count2 > 1) {
        MPI_Type_create_hvector((int)l->count2, 1,
                                (MPI_Aint)l->stride2 * 8, v, &t);
        MPI_Type_free(&v);
    } else {
        t = v;
    }
    MPI_Type_commit(&t);
    return t;
}

static void fill(double *a, int start)
{
    for (int i = 0; i < N; i++)
        a[i] = t_rank * 1e6 + i + start * 0.5;
}

/* Send and receive: each face of this rank to the next rank's ghost
 * face, as dcoll and by hand. */
static void ring(void)
{
    int mnext = (t_w.me + 1) % size, mprev = (t_w.me + size - 1) % size;
    int next = t_w.r[mnext], prev = t_w.r[mprev];
    double a[N], b[N];
    for (int d = 0; d < 3; d++) {
        dcoll_layout_t s = face(d, 1), r = face(d, 0);
        MPI_Datatype ts = by_hand(&s), tr = by_hand(&r);
        for (int f = 0; f < NFORMS; f++) {
            dcoll_plan_t *ps = NULL, *pr = NULL;
            if (f >= PLAN) {
                CHECK_OK(dcoll_send_layout_plan(T_WORLD, a, &s, DCOLL_FLOAT64,
                                                next, 7, NULL, &ps));
                CHECK_OK(dcoll_recv_layout_plan(T_WORLD, a, &r, DCOLL_FLOAT64,
                                                prev, 7, NULL, &pr));
            }
            for (int start = 0; start < (f >= PLAN ? 2 : 1); start++) {
                fill(a, start);
                fill(b, start);
                dcoll_work_t *w[2] = {NULL, NULL};
                switch (f) {
                case BLOCKING:   /* the receive blocks (not from itself) */
                    CHECK_OK(dcoll_send_layout(T_WORLD, a, &s, DCOLL_FLOAT64,
                                               next, 7, NULL, &w[0]));
                    CHECK_OK(dcoll_recv_layout(T_WORLD, a, &r, DCOLL_FLOAT64,
                                               prev, 7, NULL,
                                               size > 1 ? NULL : &w[1],
                                               NULL));
                    CHECK_OK(dcoll_work_wait(w[0]));
                    if (w[1])
                        CHECK_OK(dcoll_work_wait(w[1]));
                    break;
                case ASYNC:
                    CHECK_OK(dcoll_recv_layout(T_WORLD, a, &r, DCOLL_FLOAT64,
                                               prev, 7, NULL, &w[1], NULL));
                    CHECK_OK(dcoll_send_layout(T_WORLD, a, &s, DCOLL_FLOAT64,
                                               next, 7, NULL, &w[0]));
                    CHECK_OK(dcoll_work_wait_all(w, 2, NULL));
                    break;
                default:
                    CHECK_OK(dcoll_plan_start(pr, &w[1]));
                    CHECK_OK(dcoll_plan_start(ps, &w[0]));
                    CHECK_OK(dcoll_work_wait_all(w, 2, NULL));
                    w[0] = w[1] = NULL;   /* the plans' own */
                    break;
                }
                for (int i = 0; i < 2; i++)
                    if (w[i])
                        dcoll_work_free(&w[i]);
                MPI_Sendrecv(b + s.offset, 1, ts, mnext, 8, b + r.offset, 1,
                             tr, mprev, 8, T_COMM, MPI_STATUS_IGNORE);
                CHECK(!memcmp(a, b, sizeof(a)), "axis %d face, %s, start "
                      "%d: differs from MPI's own", d, form_names[f], start);
            }
            if (ps)
                CHECK_OK(dcoll_plan_free(&ps));
            if (pr)
                CHECK_OK(dcoll_plan_free(&pr));
        }
        /* Strided into contiguous: the face's elements in order. */
        double got[X * Y];
        int64_t n = s.count * s.blocklen * (s.count2 > 1 ? s.count2 : 1);
        fill(a, 3);
        dcoll_work_t *w = NULL;
        CHECK_OK(dcoll_send_layout(T_WORLD, a, &s, DCOLL_FLOAT64, next, 9,
                                   NULL, &w));
        int src = -5;
        dcoll_work_t *wr = NULL;
        CHECK_OK(dcoll_recv(T_WORLD, got, n, DCOLL_FLOAT64, prev, 9, NULL,
                            size > 1 ? NULL : &wr, &src));
        if (wr) {
            CHECK_OK(dcoll_work_wait(wr));
            CHECK_OK(dcoll_work_source(wr, &src));
            dcoll_work_free(&wr);
        }
        CHECK_OK(dcoll_work_wait(w));
        dcoll_work_free(&w);
        fill(b, 3);
        MPI_Sendrecv(b + s.offset, 1, ts, mnext, 10, b, (int)n, MPI_DOUBLE,
                     mprev, 10, T_COMM, MPI_STATUS_IGNORE);
        CHECK(src == prev && !memcmp(got, b, sizeof(double) * (size_t)n),
              "axis %d: a strided send into a contiguous receive differs",
              d);
        MPI_Type_free(&ts);
        MPI_Type_free(&tr);
    }
    /* To no one: nothing moves. */
    dcoll_layout_t s = face(0, 1);
    fill(a, 0);
    memcpy(b, a, sizeof(a));
    CHECK_OK(dcoll_recv_layout(T_WORLD, a, &s, DCOLL_FLOAT64, DCOLL_PROC_NULL,
                               1, NULL, NULL, NULL));
    CHECK_OK(dcoll_send_layout(T_WORLD, a, &s, DCOLL_FLOAT64, DCOLL_PROC_NULL,
                               1, NULL, NULL));
    CHECK(!memcmp(a, b, sizeof(a)), "DCOLL_PROC_NULL moved something");
}

/* The six faces of a Cartesian grid of ranks in one call. Sources per
 * axis are the upper then the lower neighbour, destinations the lower
 * then the upper: an edge's blocks then pair right where both
 * neighbours are one rank (an axis of 1 or 2 periodic ranks). */
static void grid(void)
{
    int dims[3] = {0, 0, 0}, periods[3] = {1, 0, 0};
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(T_COMM, 3, dims, periods, 0, &cart);
    int lo[3], hi[3], src[6], dst[6], msrc[6], mdst[6];
    dcoll_layout_t sl[6], rl[6];
    MPI_Datatype st[6], rt[6];
    for (int d = 0; d < 3; d++) {
        MPI_Cart_shift(cart, d, 1, &lo[d], &hi[d]);
        /* Ranks of cart are the world's (no reordering); dcoll's lists
         * name their job ranks. */
        msrc[2 * d] = hi[d];
        msrc[2 * d + 1] = lo[d];
        mdst[2 * d] = lo[d];
        mdst[2 * d + 1] = hi[d];
        rl[2 * d] = face(d, last(d));
        rl[2 * d + 1] = face(d, 0);
        sl[2 * d] = face(d, 1);
        sl[2 * d + 1] = face(d, last(d) - 1);
    }
    for (int i = 0; i < 6; i++) {
        src[i] = msrc[i] == MPI_PROC_NULL ? DCOLL_PROC_NULL : t_w.r[msrc[i]];
        dst[i] = mdst[i] == MPI_PROC_NULL ? DCOLL_PROC_NULL : t_w.r[mdst[i]];
        st[i] = by_hand(&sl[i]);
        rt[i] = by_hand(&rl[i]);
    }
    dcoll_neighborhood_t *nb = NULL;
    CHECK_OK(dcoll_neighborhood_create(T_WORLD, 6, src, 6, dst, &nb));
    double a[N], b[N];
    for (int f = 0; f < NFORMS; f++) {
        dcoll_plan_t *p = NULL;
        if (f >= PLAN)
            CHECK_OK(dcoll_neighbor_all_to_allw_plan(nb, a, sl, a, rl,
                                                     DCOLL_FLOAT64, NULL,
                                                     &p));
        for (int start = 0; start < (f >= PLAN ? 2 : 1); start++) {
            fill(a, start);
            fill(b, start);
            dcoll_work_t *w = NULL;
            if (f == BLOCKING)
                CHECK_OK(dcoll_neighbor_all_to_allw(nb, a, sl, a, rl,
                                                    DCOLL_FLOAT64, NULL,
                                                    NULL));
            else if (f == ASYNC)
                CHECK_OK(dcoll_neighbor_all_to_allw(nb, a, sl, a, rl,
                                                    DCOLL_FLOAT64, NULL, &w));
            else
                CHECK_OK(dcoll_plan_start(p, f == PLAN ? NULL : &w));
            if (w)
                CHECK_OK(dcoll_work_wait(w));
            if (w && f == ASYNC)
                dcoll_work_free(&w);
            /* By hand: a receive and a send per face, the tag naming the
             * face as its receiver sees it. */
            MPI_Request rq[12];
            int k = 0;
            for (int i = 0; i < 6; i++) {
                if (msrc[i] != MPI_PROC_NULL)
                    MPI_Irecv(b + rl[i].offset, 1, rt[i], msrc[i], i, cart,
                              &rq[k++]);
                if (mdst[i] != MPI_PROC_NULL)
                    MPI_Isend(b + sl[i].offset, 1, st[i], mdst[i], i, cart,
                              &rq[k++]);
            }
            MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
            CHECK(!memcmp(a, b, sizeof(a)), "grid %dx%dx%d, %s, start %d: "
                  "differs from MPI's own sends and receives", dims[0],
                  dims[1], dims[2], form_names[f], start);
        }
        if (p)
            CHECK_OK(dcoll_plan_free(&p));
    }
    CHECK_OK(dcoll_neighborhood_free(&nb));
    for (int i = 0; i < 6; i++) {
        MPI_Type_free(&st[i]);
        MPI_Type_free(&rt[i]);
    }
    MPI_Comm_free(&cart);
}

/* A refused send or receive leaves the group usable (they are not the
 * group's numbered calls); a refused collective spends it. */
static void refusals(void)
{
    dcoll_group_t *g = t_spare();
    double a[N];
    int next = t_w.r[(t_w.me + 1) % size];
    dcoll_layout_t bad = face(0, 1);
    bad.blocklen = -2;
    CHECK_REFUSED(dcoll_send_layout(g, a, &bad, DCOLL_FLOAT64, next, 1, NULL,
                                    NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "layout.blocklen = -2 is negative");
    bad = face(1, 1);
    bad.stride = bad.blocklen - 1;
    CHECK_REFUSED(dcoll_recv_layout(g, a, &bad, DCOLL_FLOAT64, next, 1, NULL,
                                    NULL, NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "so its blocks overlap");
    bad = face(0, 1);
    bad.stride2 = 3;
    CHECK_REFUSED(dcoll_send_layout(g, a, &bad, DCOLL_FLOAT64, next, 1, NULL,
                                    NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "so its patterns overlap");
    CHECK_REFUSED(dcoll_send_layout(g, a, NULL, DCOLL_FLOAT64, next, 1, NULL,
                                    NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "layout is NULL");
    /* Past 2^60 elements: its span, named as such, and an offset. */
    bad = (dcoll_layout_t){0, 1 << 30, 1, INT_MAX, 1, 0};
    CHECK_REFUSED(dcoll_send_layout(g, a, &bad, DCOLL_FLOAT64, next, 1, NULL,
                                    NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "layout spans 2305843005992468482 "
               "elements, more than the 2^60");
    bad = (dcoll_layout_t){(int64_t)1 << 60, 1, 1, 1, 1, 0};
    CHECK_REFUSED(dcoll_send_layout(g, a, &bad, DCOLL_FLOAT64, next, 1, NULL,
                                    NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "layout.offset = "
               "1152921504606846976 is too large: with the 1 elements");
    /* A neighbourhood's: every rank passes the same bad layout. */
    int me = t_rank;
    dcoll_neighborhood_t *nb = NULL;
    CHECK_OK(dcoll_neighborhood_create(g, 1, &me, 1, &me, &nb));
    bad = face(2, 1);
    bad.count = (int64_t)1 << 40;
    CHECK_DEAD(g, dcoll_neighbor_all_to_allw(nb, a, &bad, a, &bad,
                                             DCOLL_FLOAT64, NULL, NULL),
               DCOLL_ERR_UNSUPPORTED, "sendlayouts[0].count = 1099511627776 "
               "is above INT_MAX");
    CHECK_OK(dcoll_neighborhood_free(&nb));
    dcoll_group_destroy(&g);
    /* Sixteen self edges of 2^57 elements each: their sum, past 2^60, is
     * refused where it passes, not wrapped (it wrapped to 0 and NULL
     * buffers went to MPI). */
    g = t_spare();
    int self[16];
    dcoll_layout_t huge[16];
    for (int i = 0; i < 16; i++) {
        self[i] = me;
        huge[i] = (dcoll_layout_t){0, 1 << 30, 1 << 27, 1 << 27, 1, 0};
    }
    CHECK_OK(dcoll_neighborhood_create(g, 16, self, 16, self, &nb));
    CHECK_DEAD(g, dcoll_neighbor_all_to_allw(nb, NULL, huge, NULL, huge,
                                             DCOLL_FLOAT64, NULL, NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "sendlayouts[0..8] pick more "
               "than 2^60 elements in all (at sendlayouts[8], "
               "144115188075855872 more)");
    CHECK_OK(dcoll_neighborhood_free(&nb));
    dcoll_group_destroy(&g);
}

static void body(void)
{
    ring();
    grid();
    refusals();
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    CHECK_OK(dcoll_init(NULL));
    t_sizes(argc, argv, body);
    CHECK_OK(dcoll_finalize());
    int rc = t_finish("strided");
    MPI_Finalize();
    return rc;
}
