/* heat3d: a 3-D heat stencil on a grid of ranks, its halo in one call.
 *
 * Each rank holds an N^3 block of a box with cold walls (u = 0 outside),
 * plus one layer of ghost cells. Every step it exchanges its six faces
 * with its neighbours' ghosts through one neighbourhood plan of strided
 * faces (dcoll_neighborhood_create, dcoll_neighbor_all_to_allw_plan; no
 * packing by hand, DCOLL_PROC_NULL at the walls), then applies the
 * explicit 7-point stencil. The start, a product of sines, is an
 * eigenmode of the discrete stencil, so the answer is known exactly: its
 * amplitude shrinks by 1 - 4 a (sum over the axes of sin^2(pi / 2(G+1)))
 * per step. Where each rank's cells would go in a file all ranks write
 * comes from an exscan of the cell counts (MPI_Exscan's offset).
 *
 *   mpirun -n 4 ./heat3d          (any number of ranks) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dcoll/dcoll.h>

#define N 12        /* interior cells per rank along each axis */
#define STEPS 100
#define ALPHA 0.1   /* diffusion number, stable below 1/6 */
#define X (N + 2)   /* with the ghosts */
#define PI 3.14159265358979323846
#define AT(i, j, k) ((i) + X * ((j) + X * (k)))

#define TRY(call)                                                            \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        if (st_ != DCOLL_SUCCESS) {                                          \
            fprintf(stderr, "%s failed: %s\n", #call, dcoll_last_error());   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* The interior face of axis d at layer at (1 or N), or the ghost layer
 * (0 or N + 1): a layout of the block, x fastest. */
static dcoll_layout_t face(int d, int at)
{
    if (d == 0)   /* x = at: one cell a row, N rows a plane, N planes */
        return (dcoll_layout_t){AT(at, 1, 1), N, 1, X, N, X * X};
    if (d == 1)   /* y = at: N cells a row, one row a plane */
        return (dcoll_layout_t){AT(1, at, 1), N, N, X * X, 0, 0};
    return (dcoll_layout_t){AT(1, 1, at), N, N, X, 0, 0};   /* z = at */
}

int main(void)
{
    TRY(dcoll_init(NULL));
    int rank, size;
    TRY(dcoll_group_rank(NULL, &rank));
    TRY(dcoll_group_size(NULL, &size));

    /* The ranks as a grid dims[0] x dims[1] x dims[2], as even as the
     * count allows; this rank's place in it. */
    int dims[3] = {1, 1, 1}, left = size;
    for (int f = 2; left > 1;) {
        if (left % f) {
            f++;
            continue;
        }
        int d = dims[0] <= dims[1] && dims[0] <= dims[2] ? 0
                : dims[1] <= dims[2]                     ? 1 : 2;
        dims[d] *= f;
        left /= f;
    }
    int me[3] = {rank % dims[0], rank / dims[0] % dims[1],
                 rank / (dims[0] * dims[1])};

    /* Per axis: sources upper then lower, destinations lower then upper,
     * so that each face lands in the ghost on the side it faces; walls
     * where the box ends. */
    int src[6], dst[6];
    dcoll_layout_t sendf[6], recvf[6];
    for (int d = 0; d < 3; d++) {
        int lo = DCOLL_PROC_NULL, hi = DCOLL_PROC_NULL;
        int step = d == 0 ? 1 : d == 1 ? dims[0] : dims[0] * dims[1];
        if (me[d] > 0)
            lo = rank - step;
        if (me[d] < dims[d] - 1)
            hi = rank + step;
        src[2 * d] = hi, recvf[2 * d] = face(d, N + 1);
        src[2 * d + 1] = lo, recvf[2 * d + 1] = face(d, 0);
        dst[2 * d] = lo, sendf[2 * d] = face(d, 1);
        dst[2 * d + 1] = hi, sendf[2 * d + 1] = face(d, N);
    }

    double *u = calloc(X * X * X, sizeof(double));
    double *v = calloc(X * X * X, sizeof(double));
    if (!u || !v)
        return 1;
    double kx[3], decay = 1.0;
    for (int d = 0; d < 3; d++) {
        kx[d] = PI / (dims[d] * N + 1);
        decay -= 4 * ALPHA * pow(sin(kx[d] / 2), 2);
    }
    /* u = sin(kx gx) sin(ky gy) sin(kz gz), g the global cell index
     * (1 to G; the walls at 0 and G + 1 are zero). */
    for (int k = 1; k <= N; k++)
        for (int j = 1; j <= N; j++)
            for (int i = 1; i <= N; i++)
                u[AT(i, j, k)] = sin(kx[0] * (me[0] * N + i)) *
                                 sin(kx[1] * (me[1] * N + j)) *
                                 sin(kx[2] * (me[2] * N + k));

    /* The halo: made once, started every step. Faces and ghosts are in
     * one array, so u is both buffers; after the swap, v's plan runs. */
    dcoll_neighborhood_t *nb;
    dcoll_plan_t *halo[2];
    TRY(dcoll_neighborhood_create(NULL, 6, src, 6, dst, &nb));
    TRY(dcoll_neighbor_all_to_allw_plan(nb, u, sendf, u, recvf,
                                        DCOLL_FLOAT64, NULL, &halo[0]));
    TRY(dcoll_neighbor_all_to_allw_plan(nb, v, sendf, v, recvf,
                                        DCOLL_FLOAT64, NULL, &halo[1]));
    for (int s = 0; s < STEPS; s++) {
        TRY(dcoll_plan_start(halo[s % 2], NULL));
        for (int k = 1; k <= N; k++)
            for (int j = 1; j <= N; j++)
                for (int i = 1; i <= N; i++) {
                    int c = AT(i, j, k);
                    v[c] = u[c] + ALPHA * (u[c - 1] + u[c + 1] +
                                           u[c - X] + u[c + X] +
                                           u[c - X * X] + u[c + X * X] -
                                           6 * u[c]);
                }
        double *t = u;
        u = v;
        v = t;
    }

    /* Against the exact answer; the worst error over all ranks. */
    double err = 0, amp = pow(decay, STEPS);
    for (int k = 1; k <= N; k++)
        for (int j = 1; j <= N; j++)
            for (int i = 1; i <= N; i++) {
                double want = amp * sin(kx[0] * (me[0] * N + i)) *
                              sin(kx[1] * (me[1] * N + j)) *
                              sin(kx[2] * (me[2] * N + k));
                err = fmax(err, fabs(u[AT(i, j, k)] - want));
            }
    TRY(dcoll_all_reduce(NULL, &err, &err, 1, DCOLL_FLOAT64, DCOLL_MAX,
                         NULL, NULL));

    /* Where this rank's cells start in a file of every rank's, in rank
     * order: the cells of the ranks before it (rank 0: 0, left as is). */
    int64_t cells = (int64_t)N * N * N, offset = 0;
    TRY(dcoll_exscan(NULL, &cells, &offset, 1, DCOLL_INT64, DCOLL_SUM, NULL,
                     NULL));
    int ok = err < 1e-12 && offset == (int64_t)rank * cells;
    TRY(dcoll_all_reduce(NULL, &ok, &ok, 1, DCOLL_INT32, DCOLL_MIN, NULL,
                         NULL));
    if (rank == 0)
        printf("heat3d: %d ranks as %dx%dx%d, %d^3 cells each, %d steps: "
               "amplitude %.6f, worst error %.2e, offsets by exscan: %s\n",
               size, dims[0], dims[1], dims[2], N, STEPS, amp, err,
               ok ? "ok" : "WRONG");

    TRY(dcoll_plan_free(&halo[0]));
    TRY(dcoll_plan_free(&halo[1]));
    TRY(dcoll_neighborhood_free(&nb));
    free(u);
    free(v);
    TRY(dcoll_finalize());
    return ok ? 0 : 1;
}
