/* DCOLL_PROC_NULL, MPI_PROC_NULL's twin: a 1-D chain of ranks with walls
 * (the ends have no neighbour) exchanged by isend/irecv, by blocking
 * send/recv and by plans, against the same exchange with MPI's own
 * calls and MPI_PROC_NULL, bit for bit; a wall's receive buffer is left
 * as it was and its source is DCOLL_PROC_NULL; a null peer costs nothing
 * on a GPU path either (it never reaches one); other negative peers are
 * refused with the hint. Run under mpirun with 1 to 4 ranks, or --sizes
 * (test/sizes.h) for every size inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

enum { N = 33 };
#define WALL (-12345.0)

/* This rank's neighbours along the world's order: DCOLL_PROC_NULL and
 * MPI_PROC_NULL past the ends; dcoll's as job ranks, MPI's as ranks of
 * the world's communicator. */
static void neighbours(int *left, int *right, int *mleft, int *mright)
{
    int me = t_w.me, size = t_w.n;
    *left = me > 0 ? t_w.r[me - 1] : DCOLL_PROC_NULL;
    *right = me < size - 1 ? t_w.r[me + 1] : DCOLL_PROC_NULL;
    *mleft = me > 0 ? me - 1 : MPI_PROC_NULL;
    *mright = me < size - 1 ? me + 1 : MPI_PROC_NULL;
}

static void fill(double *edge_l, double *edge_r, double *ghost_l,
                 double *ghost_r)
{
    for (int i = 0; i < N; i++) {
        edge_l[i] = 1000.0 * t_rank + i + 0.25;
        edge_r[i] = -1000.0 * t_rank - i - 0.5;
        ghost_l[i] = ghost_r[i] = WALL;
    }
}

/* The reference: MPI's own calls with MPI_PROC_NULL. */
static void by_mpi(double *ghost_l, double *ghost_r)
{
    int l, r, ml, mr;
    neighbours(&l, &r, &ml, &mr);
    double el[N], er[N];
    fill(el, er, ghost_l, ghost_r);
    MPI_Request q[4];
    MPI_Status s[4];
    MPI_Irecv(ghost_l, N, MPI_DOUBLE, ml, 1, T_COMM, &q[0]);
    MPI_Irecv(ghost_r, N, MPI_DOUBLE, mr, 2, T_COMM, &q[1]);
    MPI_Isend(er, N, MPI_DOUBLE, mr, 1, T_COMM, &q[2]);
    MPI_Isend(el, N, MPI_DOUBLE, ml, 2, T_COMM, &q[3]);
    /* Its statuses are not compared: MPICH 4.0.2's MPI_Waitall gives
     * source 0 for a receive from MPI_PROC_NULL, which MPI says is
     * MPI_PROC_NULL (dcoll's is DCOLL_PROC_NULL, checked below). */
    MPI_Waitall(4, q, s);
}

static void same(const char *how, const double *a, const double *b,
                 const double *ra, const double *rb)
{
    CHECK(!memcmp(a, ra, sizeof(double) * N) &&
              !memcmp(b, rb, sizeof(double) * N),
          "%s: the ghosts differ from MPI's (left[0] %g want %g, right[0] "
          "%g want %g)", how, a[0], ra[0], b[0], rb[0]);
}

static void async(const double *ref_l, const double *ref_r)
{
    int l, r, ml, mr;
    neighbours(&l, &r, &ml, &mr);
    double el[N], er[N], gl[N], gr[N];
    fill(el, er, gl, gr);
    dcoll_work_t *w[4] = {0};
    CHECK_OK(dcoll_irecv(T_WORLD, gl, N, DCOLL_FLOAT64, l, 1, NULL, &w[0]));
    CHECK_OK(dcoll_irecv(T_WORLD, gr, N, DCOLL_FLOAT64, r, 2, NULL, &w[1]));
    CHECK_OK(dcoll_isend(T_WORLD, er, N, DCOLL_FLOAT64, r, 1, NULL, &w[2]));
    CHECK_OK(dcoll_isend(T_WORLD, el, N, DCOLL_FLOAT64, l, 2, NULL, &w[3]));
    int failed = 0, src = -99;
    CHECK_OK(dcoll_work_wait_all(w, 4, &failed));
    CHECK_OK(dcoll_work_source(w[0], &src));
    CHECK(src == l, "async: the left receive's source %d, want %d", src, l);
    CHECK_OK(dcoll_work_source(w[1], &src));
    CHECK(src == r, "async: the right receive's source %d, want %d", src, r);
    for (int i = 0; i < 4; i++)
        dcoll_work_free(&w[i]);
    same("async", gl, gr, ref_l, ref_r);
}

/* Blocking, in an order that cannot deadlock on a chain: even ranks
 * send first, odd ones receive first. */
static void blocking(const double *ref_l, const double *ref_r)
{
    int l, r, ml, mr;
    neighbours(&l, &r, &ml, &mr);
    double el[N], er[N], gl[N], gr[N];
    fill(el, er, gl, gr);
    int sl = -99, sr = -99;
    for (int turn = 0; turn < 2; turn++) {
        if (turn == t_w.me % 2) {
            CHECK_OK(dcoll_send(T_WORLD, er, N, DCOLL_FLOAT64, r, 1, NULL,
                                NULL));
            CHECK_OK(dcoll_send(T_WORLD, el, N, DCOLL_FLOAT64, l, 2, NULL,
                                NULL));
        } else {
            CHECK_OK(dcoll_recv(T_WORLD, gl, N, DCOLL_FLOAT64, l, 1, NULL,
                                NULL, &sl));
            CHECK_OK(dcoll_recv(T_WORLD, gr, N, DCOLL_FLOAT64, r, 2, NULL,
                                NULL, &sr));
        }
    }
    CHECK(sl == l && sr == r, "blocking: sources %d and %d, want %d and %d",
          sl, sr, l, r);
    same("blocking", gl, gr, ref_l, ref_r);
}

/* Plans, started three times; the walls' are plans that do nothing. */
static void plans(const double *ref_l, const double *ref_r)
{
    int l, r, ml, mr;
    neighbours(&l, &r, &ml, &mr);
    double el[N], er[N], gl[N], gr[N];
    dcoll_plan_t *p[4] = {0};
    CHECK_OK(dcoll_recv_plan(T_WORLD, gl, N, DCOLL_FLOAT64, l, 1, NULL,
                             &p[0]));
    CHECK_OK(dcoll_recv_plan(T_WORLD, gr, N, DCOLL_FLOAT64, r, 2, NULL,
                             &p[1]));
    CHECK_OK(dcoll_send_plan(T_WORLD, er, N, DCOLL_FLOAT64, r, 1, NULL,
                             &p[2]));
    CHECK_OK(dcoll_send_plan(T_WORLD, el, N, DCOLL_FLOAT64, l, 2, NULL,
                             &p[3]));
    for (int round = 0; round < 3; round++) {
        fill(el, er, gl, gr);
        dcoll_work_t *w[4] = {0};
        for (int i = 0; i < 4; i++)
            CHECK_OK(dcoll_plan_start(p[i], &w[i]));
        int failed = 0, src = -99;
        CHECK_OK(dcoll_work_wait_all(w, 4, &failed));
        CHECK_OK(dcoll_work_source(w[0], &src));
        CHECK(src == l, "plan: the left receive's source %d, want %d", src,
              l);
        same("plans", gl, gr, ref_l, ref_r);
    }
    for (int i = 0; i < 4; i++)
        CHECK_OK(dcoll_plan_free(&p[i]));
}

static void refused(void)
{
    double x = 0;
    dcoll_status_t st = dcoll_send(T_WORLD, &x, 1, DCOLL_FLOAT64, -5, 0, NULL,
                                   NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "dst -5 is not a rank") &&
              strstr(dcoll_last_error(), "DCOLL_PROC_NULL"),
          "dst -5: %s", dcoll_last_error());
    dcoll_work_t *w = NULL;
    st = dcoll_irecv(T_WORLD, &x, 1, DCOLL_FLOAT64, -7, 0, NULL, &w);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT && !w &&
              strstr(dcoll_last_error(), "src -7 is not a rank"),
          "src -7: %s", dcoll_last_error());
    /* Its other arguments are still checked, as MPI's are. */
    st = dcoll_send(T_WORLD, &x, -1, DCOLL_FLOAT64, DCOLL_PROC_NULL, 0, NULL,
                    NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "count -1 to no one: %d", st);
    st = dcoll_send(T_WORLD, &x, 1, DCOLL_FLOAT64, DCOLL_PROC_NULL, -3, NULL,
                    NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "tag -3 to no one: %d", st);
    /* A root is a rank: DCOLL_PROC_NULL is no root. */
    dcoll_group_t *g = t_spare();
    st = dcoll_broadcast(g, &x, 1, DCOLL_FLOAT64, DCOLL_PROC_NULL, NULL,
                         NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "broadcast from no one: %d", st);
    dcoll_group_destroy(&g);
    /* A NULL buffer with count 0, as MPI allows. */
    CHECK_OK(dcoll_recv(T_WORLD, NULL, 0, DCOLL_FLOAT64, DCOLL_PROC_NULL, 0,
                        NULL, NULL, NULL));
}

static void body(void)
{
    double ref_l[N], ref_r[N];
    by_mpi(ref_l, ref_r);
    async(ref_l, ref_r);
    blocking(ref_l, ref_r);
    plans(ref_l, ref_r);
    refused();
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    CHECK_OK(dcoll_init(NULL));
    t_sizes(argc, argv, body);
    CHECK_OK(dcoll_finalize());
    int rc = t_finish("proc_null");
    MPI_Finalize();
    return rc;
}
