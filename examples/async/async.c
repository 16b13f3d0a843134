/* async.c: work in flight while the program computes. A ring exchange
 * (isend to the right, irecv from the left) and an all_reduce started
 * async, interior work done meanwhile, then one dcoll_work_wait_all that
 * names the first failure if any.
 *
 *   mpirun -n 4 ./async            (any number of ranks)
 */
#include <stdio.h>
#include <dcoll/dcoll.h>

enum { N = 1 << 16 };

int main(void)
{
    static double out[N], in[N], local[N];
    int rank, size;
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++) {
        out[i] = rank * 1000.0 + i;
        local[i] = 1.0;
    }

    dcoll_work_t *w[3];
    dcoll_irecv(NULL, in, N, DCOLL_FLOAT64, left, 0, NULL, &w[0]);
    dcoll_isend(NULL, out, N, DCOLL_FLOAT64, right, 0, NULL, &w[1]);
    dcoll_all_reduce(NULL, local, local, N, DCOLL_FLOAT64, DCOLL_SUM, NULL,
                     &w[2]);

    double interior = 0;                 /* overlaps the three operations */
    for (int i = 0; i < N; i++)
        interior += (double)i * 0.5;

    int failed;
    if (dcoll_work_wait_all(w, 3, &failed) != DCOLL_SUCCESS) {
        fprintf(stderr, "work %d failed: %s\n", failed, dcoll_last_error());
        dcoll_abort(1, "async: a work failed");
    }
    for (int i = 0; i < 3; i++)
        dcoll_work_free(&w[i]);

    int ok = interior > 0;
    for (int i = 0; i < N; i++)
        ok &= in[i] == left * 1000.0 + i && local[i] == size;
    int all = ok;
    dcoll_all_reduce(NULL, &ok, &all, 1, DCOLL_INT32, DCOLL_LAND, NULL, NULL);
    if (rank == 0)
        printf("async: %d ranks, ring and all_reduce %s\n", size,
               all ? "ok" : "WRONG");
    dcoll_finalize();
    return all ? 0 : 1;
}
