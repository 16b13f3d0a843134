/* grid: a 2-D simulation step on a process grid, the pattern most
 * simulations start from.
 *
 * A periodic NX x NY plate is split over a PR x PC grid of ranks, one
 * block each. Every step:
 *   1. halo exchange: each rank swaps its edge rows and columns with its
 *      four neighbours (isend/irecv, then one wait_all for the eight);
 *   2. the explicit heat stencil on the block;
 *   3. the global residual, max |change|, with one all_reduce (MAX).
 * Each row and each column of the process grid is also a group, made by
 * two split_group calls, used for a per-band diagnostic: the heat in this
 * rank's band of rows, and in its band of columns.
 *
 * The start is 1 + sin(2 pi x / NX) sin(2 pi y / NY), an eigenmode of the
 * discrete stencil, so the answer is known: the sine's amplitude shrinks
 * by 1 - 4 A (sin^2(pi / NX) + sin^2(pi / NY)) per step, and every band
 * keeps its heat. The program checks both.
 *
 *   mpirun -n 4 ./grid            (any number of ranks) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dcoll/dcoll.h>

#define NX 96
#define NY 96
#define STEPS 200
#define A 0.2           /* diffusion number, stable below 0.25 in 2-D */

#define TRY(call)                                                            \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        if (st_ != DCOLL_SUCCESS) {                                          \
            fprintf(stderr, "%s failed: %s\n", #call, dcoll_last_error());   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Start and length of part p of n things split into parts. */
static int part_lo(int n, int parts, int p) { return n * p / parts; }
static int part_len(int n, int parts, int p)
{
    return part_lo(n, parts, p + 1) - part_lo(n, parts, p);
}

int main(void)
{
    int rank, size;
    TRY(dcoll_init(NULL));
    TRY(dcoll_group_rank(NULL, &rank));
    TRY(dcoll_group_size(NULL, &size));

    /* The most square PR x PC grid; this rank is at (pr, pc). */
    int pr = 1;
    for (int d = 1; d * d <= size; d++)
        if (size % d == 0)
            pr = d;
    int pc = size / pr, myr = rank / pc, myc = rank % pc;
    int x0 = part_lo(NX, pc, myc), nx = part_len(NX, pc, myc);
    int y0 = part_lo(NY, pr, myr), ny = part_len(NY, pr, myr);

    /* The block with a one-cell halo: u[(j + 1) * (nx + 2) + i + 1]. */
    int w = nx + 2;
    double *u = calloc((size_t)w * (ny + 2), sizeof(double));
    double *v = calloc((size_t)w * (ny + 2), sizeof(double));
    double *col[4]; /* packed left/right edges: send L, send R, recv L, R */
    for (int k = 0; k < 4; k++)
        col[k] = malloc(sizeof(double) * (size_t)ny);
    const double pi = acos(-1.0);
#define U(p, i, j) (p)[((j) + 1) * w + (i) + 1]
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++)
            U(u, i, j) = 1 + sin(2 * pi * (x0 + i) / NX) *
                             sin(2 * pi * (y0 + j) / NY);

    /* Neighbours, as world ranks (periodic in both directions). */
    int up = ((myr + pr - 1) % pr) * pc + myc, down = ((myr + 1) % pr) * pc + myc;
    int left = myr * pc + (myc + pc - 1) % pc, right = myr * pc + (myc + 1) % pc;

    /* This rank's row and column of the process grid as groups: one
     * split each (color: which row or column; key: the place in it). */
    dcoll_group_t *row = NULL, *column = NULL;
    TRY(dcoll_split_group(&row, NULL, myr, myc, NULL));
    TRY(dcoll_split_group(&column, NULL, myc, myr, NULL));

    double residual = 0;
    for (int step = 0; step < STEPS; step++) {
        /* 1. Halo exchange: rows are contiguous, columns are packed. */
        for (int j = 0; j < ny; j++) {
            col[0][j] = U(u, 0, j);
            col[1][j] = U(u, nx - 1, j);
        }
        dcoll_work_t *wk[8];
        TRY(dcoll_irecv(NULL, &U(u, 0, -1), nx, DCOLL_FLOAT64, up, 0, NULL, &wk[0]));
        TRY(dcoll_irecv(NULL, &U(u, 0, ny), nx, DCOLL_FLOAT64, down, 1, NULL, &wk[1]));
        TRY(dcoll_irecv(NULL, col[2], ny, DCOLL_FLOAT64, left, 2, NULL, &wk[2]));
        TRY(dcoll_irecv(NULL, col[3], ny, DCOLL_FLOAT64, right, 3, NULL, &wk[3]));
        TRY(dcoll_isend(NULL, &U(u, 0, ny - 1), nx, DCOLL_FLOAT64, down, 0, NULL, &wk[4]));
        TRY(dcoll_isend(NULL, &U(u, 0, 0), nx, DCOLL_FLOAT64, up, 1, NULL, &wk[5]));
        TRY(dcoll_isend(NULL, col[1], ny, DCOLL_FLOAT64, right, 2, NULL, &wk[6]));
        TRY(dcoll_isend(NULL, col[0], ny, DCOLL_FLOAT64, left, 3, NULL, &wk[7]));
        TRY(dcoll_work_wait_all(wk, 8, NULL));
        for (int k = 0; k < 8; k++)
            TRY(dcoll_work_free(&wk[k]));
        for (int j = 0; j < ny; j++) {
            U(u, -1, j) = col[2][j];
            U(u, nx, j) = col[3][j];
        }
        /* 2. The stencil. */
        double change = 0;
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                double lap = U(u, i - 1, j) + U(u, i + 1, j) + U(u, i, j - 1) +
                             U(u, i, j + 1) - 4 * U(u, i, j);
                U(v, i, j) = U(u, i, j) + A * lap;
                change = fmax(change, fabs(A * lap));
            }
        double *t = u;
        u = v;
        v = t;
        /* 3. The global residual. */
        TRY(dcoll_all_reduce(NULL, &change, &residual, 1, DCOLL_FLOAT64,
                             DCOLL_MAX, NULL, NULL));
    }

    /* Checks. The exact amplitude after STEPS steps: */
    double f = 1 - 4 * A * (pow(sin(pi / NX), 2) + pow(sin(pi / NY), 2));
    double amp = pow(f, STEPS), err = 0, band = 0, cband;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            double exact = 1 + amp * sin(2 * pi * (x0 + i) / NX) *
                                   sin(2 * pi * (y0 + j) / NY);
            err = fmax(err, fabs(U(u, i, j) - exact));
            band += U(u, i, j);
        }
    /* Heat in this band of rows: the sine sums to zero along x, so it is
     * the band's area. Summed over the row group only; the same for the
     * band of columns over the column group. */
    cband = band;
    TRY(dcoll_all_reduce(row, &band, &band, 1, DCOLL_FLOAT64, DCOLL_SUM,
                         NULL, NULL));
    TRY(dcoll_all_reduce(column, &cband, &cband, 1, DCOLL_FLOAT64, DCOLL_SUM,
                         NULL, NULL));
    int ok = err < 1e-9 && fabs(band - (double)NX * ny) < 1e-8 * NX * ny &&
             fabs(cband - (double)NY * nx) < 1e-8 * NY * nx;
    int all_ok;
    TRY(dcoll_all_reduce(NULL, &ok, &all_ok, 1, DCOLL_INT32, DCOLL_MIN,
                         NULL, NULL));
    if (rank == 0)
        printf("grid: %d x %d ranks, %d steps, residual %.3g, max error "
               "%.2g, band heat %.6g (want %d): %s\n", pr, pc, STEPS,
               residual, err, band, NX * ny, all_ok ? "ok" : "FAILED");
    TRY(dcoll_group_destroy(&row));
    TRY(dcoll_group_destroy(&column));
    for (int k = 0; k < 4; k++)
        free(col[k]);
    free(u);
    free(v);
    TRY(dcoll_finalize());
    return all_ok ? 0 : 1;
}
