/* heat: the first dcoll program to run.
 *
 * A periodic 1-D rod of N points split across the ranks. Each step
 * exchanges one halo point with each neighbour, applies the explicit heat
 * stencil, and all_reduces the residual. The same calls run every step,
 * so they are planned once (dcoll_*_plan, API 1.8) and started each step:
 * the checks and set-up are paid once. The start is
 * 1 + sin(2 pi x), an eigenmode of the discrete stencil, so the result is
 * known exactly: total heat is conserved and the sine's amplitude shrinks
 * by (1 - 4 a sin^2(pi / N)) per step. The program checks both.
 *
 *   mpirun -n 4 ./heat            (any number of ranks) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dcoll/dcoll.h>

#define N 4096      /* points on the rod */
#define STEPS 500
#define ALPHA 0.25  /* diffusion number, stable below 0.5 */

#define TRY(call)                                                            \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        if (st_ != DCOLL_SUCCESS) {                                          \
            fprintf(stderr, "%s failed: %s\n", #call, dcoll_last_error());   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

int main(void)
{
    int rank, size;
    TRY(dcoll_init(NULL)); /* mpi:// under mpirun or srun */
    TRY(dcoll_group_rank(NULL, &rank));
    TRY(dcoll_group_size(NULL, &size));

    /* My share of the rod: points [lo, lo + n), plus a halo each side. */
    int lo = (int)((long)N * rank / size), n = (int)((long)N * (rank + 1) / size) - lo;
    double *u = calloc((size_t)n + 2, sizeof(double));
    double *v = calloc((size_t)n + 2, sizeof(double));
    const double pi = acos(-1.0);
    for (int i = 0; i < n; i++)
        u[i + 1] = 1.0 + sin(2 * pi * (lo + i) / N);

    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double residual = 0, local = 0;
    /* The halo exchange, planned for each of the two arrays the steps
     * swap (a plan fixes its buffers' addresses): my edges go out, my
     * neighbours' come in. And the residual's all_reduce. */
    dcoll_plan_t *halo[2][4], *sum;
    for (int b = 0; b < 2; b++) {
        double *x = b ? v : u;
        TRY(dcoll_recv_plan(NULL, &x[0], 1, DCOLL_FLOAT64, left, 1, NULL, &halo[b][0]));
        TRY(dcoll_recv_plan(NULL, &x[n + 1], 1, DCOLL_FLOAT64, right, 2, NULL, &halo[b][1]));
        TRY(dcoll_send_plan(NULL, &x[n], 1, DCOLL_FLOAT64, right, 1, NULL, &halo[b][2]));
        TRY(dcoll_send_plan(NULL, &x[1], 1, DCOLL_FLOAT64, left, 2, NULL, &halo[b][3]));
    }
    TRY(dcoll_all_reduce_plan(NULL, &local, &residual, 1, DCOLL_FLOAT64,
                              DCOLL_SUM, NULL, &sum));
    for (int step = 0; step < STEPS; step++) {
        dcoll_work_t *w[4];
        for (int k = 0; k < 4; k++)
            TRY(dcoll_plan_start(halo[step % 2][k], &w[k]));
        TRY(dcoll_work_wait_all(w, 4, NULL));
        local = 0;
        for (int i = 1; i <= n; i++) {
            v[i] = u[i] + ALPHA * (u[i - 1] - 2 * u[i] + u[i + 1]);
            local += (v[i] - u[i]) * (v[i] - u[i]);
        }
        double *t = u; u = v; v = t;
        /* The global residual: every rank gets the same number. */
        TRY(dcoll_plan_start(sum, NULL));
    }
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++)
            TRY(dcoll_plan_free(&halo[b][k]));
    TRY(dcoll_plan_free(&sum));

    /* Check: total heat and the sine's amplitude against the exact values. */
    double sums[2] = {0, 0}, peak = 0;
    for (int i = 1; i <= n; i++) {
        sums[0] += u[i];
        peak = fmax(peak, fabs(u[i] - 1.0));
    }
    TRY(dcoll_all_reduce(NULL, sums, sums, 1, DCOLL_FLOAT64, DCOLL_SUM, NULL, NULL));
    TRY(dcoll_all_reduce(NULL, &peak, &peak, 1, DCOLL_FLOAT64, DCOLL_MAX, NULL, NULL));
    double exact = pow(1 - 4 * ALPHA * pow(sin(pi / N), 2), STEPS);
    double heat_err = fabs(sums[0] - N) / N, amp_err = fabs(peak - exact) / exact;
    int ok = heat_err < 1e-12 && amp_err < 1e-9;
    if (rank == 0) {
        printf("heat: %d points on %d rank(s), %d steps\n", N, size, STEPS);
        printf("  total heat %.12f (want %d, rel. error %.1e)\n", sums[0], N, heat_err);
        printf("  amplitude  %.12f (exact %.12f, rel. error %.1e)\n", peak, exact, amp_err);
        printf("  last residual %.3e\n", sqrt(residual));
        printf("heat: %s\n", ok ? "OK" : "WRONG");
    }
    free(u);
    free(v);
    TRY(dcoll_finalize());
    return ok ? 0 : 1;
}
