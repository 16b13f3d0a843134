/* The README's tour of the API, compiled and run by the mpi suite. */
#include <stdio.h>
#include <dcoll/dcoll.h>

int main(void)
{
    int rank, size;
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {        /* mpi:// under mpirun/srun */
        fprintf(stderr, "%s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &rank);                   /* NULL group = the world */
    dcoll_group_size(NULL, &size);

    /* A distributed dot product: each rank owns 1000 entries of x and y. */
    double x[1000], y[1000], dot = 0;
    for (int i = 0; i < 1000; i++) {
        x[i] = rank * 1000 + i;
        y[i] = 2.0;
    }
    for (int i = 0; i < 1000; i++)
        dot += x[i] * y[i];
    dcoll_all_reduce(NULL, &dot, &dot, 1, DCOLL_FLOAT64, DCOLL_SUM,
                     NULL, NULL);                    /* in place: send == recv */

    /* A sub-group of the even ranks. Every rank calls new_group; odd ranks
     * get a NON-MEMBER handle on which collectives do nothing. */
    int evens[64], n = 0;
    for (int r = 0; r < size; r += 2)
        evens[n++] = r;
    dcoll_group_t *even;
    dcoll_new_group(&even, evens, n, NULL);

    /* Async: pass a work pointer, wait later. Roots are world ranks. */
    double token = rank == 0 ? 42 : 0;
    dcoll_work_t *work;
    dcoll_broadcast(even, &token, 1, DCOLL_FLOAT64, 0, NULL, &work);
    dcoll_status_t st = dcoll_work_wait(work);       /* errors come out here */
    dcoll_work_free(&work);

    /* A plan: a call made every time step is checked and set up once,
     * then started again on what its buffers hold (API 1.8). */
    dcoll_plan_t *plan;
    double mine, sum = 0;
    dcoll_all_reduce_plan(NULL, &mine, &sum, 1, DCOLL_FLOAT64, DCOLL_SUM,
                          NULL, &plan);
    for (int step = 0; step < 3; step++) {
        mine = rank + step;
        dcoll_plan_start(plan, NULL);                /* sum = sum of mine */
    }
    dcoll_plan_free(&plan);

    double n_total = 1000.0 * size;
    double want = 2 * n_total * (n_total - 1) / 2;
    double want_sum = size * (size - 1) / 2.0 + 2.0 * size;
    if (rank == 0)
        printf("dot = %.0f (want %.0f), token = %g, sum = %g (want %g), %s\n",
               dot, want, token, sum, want_sum, dcoll_status_string(st));
    dcoll_group_destroy(&even);
    dcoll_finalize();
    return dot == want && sum == want_sum ? 0 : 1;
}
