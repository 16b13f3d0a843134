/* restart.c: a job that checkpoints every few steps and, started again
 * after a failure, resumes from its last checkpoint (torchrun's
 * --max-restarts, here dcollrun's):
 *
 *   dcollrun --max-restarts 2 -n 4 ./restart 1 7
 *
 * makes rank 1 fail at step 7 of the first attempt; dcollrun stops the
 * others and starts the job again with DCOLL_RESTART_COUNT=1, and every
 * rank goes on from step 5, its last checkpoint. Without arguments no
 * rank fails. Each rank keeps its checkpoint in ./restart-RANK.ckpt
 * (written to a new file, then renamed, so a death mid-write leaves the
 * last one whole). The result is checked against the same steps
 * computed in one process. */
#include <stdio.h>
#include <stdlib.h>
#include <dcoll/dcoll.h>

#define STEPS 20
#define EVERY 5   /* steps between checkpoints */

/* One step: every rank moves toward the mean of all. */
static double step(double x, double sum, int size)
{
    return 0.5 * x + 0.5 * sum / size;
}

static int save(int rank, int at, double x)
{
    char path[64], tmp[72];
    snprintf(path, sizeof(path), "restart-%d.ckpt", rank);
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d %.17g\n", at, x) < 0 || fclose(f))
        return -1;
    return rename(tmp, path);
}

/* The step to start from: 0, or one past the last checkpoint's. */
static int load(int rank, double *x)
{
    char path[64];
    snprintf(path, sizeof(path), "restart-%d.ckpt", rank);
    FILE *f = fopen(path, "r");
    int at = 0;
    if (f && fscanf(f, "%d %lg", &at, x) != 2)
        at = 0;
    if (f)
        fclose(f);
    return at;
}

int main(int argc, char **argv)
{
    int fail_rank = argc > 2 ? atoi(argv[1]) : -1;
    int fail_step = argc > 2 ? atoi(argv[2]) : -1;
    const char *a = getenv("DCOLL_RESTART_COUNT");
    int attempt = a ? atoi(a) : 0;
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    int rank, size;
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    double x = rank + 1;
    int from = attempt > 0 ? load(rank, &x) : 0;
    /* Every rank must resume from the same step. */
    int lo = from, hi = from;
    dcoll_all_reduce(NULL, &lo, &lo, 1, DCOLL_INT32, DCOLL_MIN, NULL, NULL);
    dcoll_all_reduce(NULL, &hi, &hi, 1, DCOLL_INT32, DCOLL_MAX, NULL, NULL);
    if (lo != hi) {
        fprintf(stderr, "restart: the checkpoints differ (steps %d to %d)\n",
                lo, hi);
        return 1;
    }
    if (rank == 0)
        printf("restart: attempt %d starts at step %d\n", attempt, from);
    for (int s = from; s < STEPS; s++) {
        if (attempt == 0 && rank == fail_rank && s == fail_step) {
            fprintf(stderr, "restart: rank %d fails at step %d\n", rank, s);
            return 1;
        }
        double sum = x;
        if (dcoll_all_reduce(NULL, &sum, &sum, 1, DCOLL_FLOAT64, DCOLL_SUM,
                             NULL, NULL) != DCOLL_SUCCESS) {
            fprintf(stderr, "all_reduce: %s\n", dcoll_last_error());
            return 1;
        }
        x = step(x, sum, size);
        if ((s + 1) % EVERY == 0 && save(rank, s + 1, x)) {
            fprintf(stderr, "restart: cannot write rank %d's checkpoint\n",
                    rank);
            return 1;
        }
    }
    /* The same steps in one process. */
    double *all = malloc(sizeof(double) * (size_t)size);
    for (int r = 0; r < size; r++)
        all[r] = r + 1;
    for (int s = 0; s < STEPS; s++) {
        double sum = 0;
        for (int r = 0; r < size; r++)
            sum += all[r];
        for (int r = 0; r < size; r++)
            all[r] = step(all[r], sum, size);
    }
    int ok = all[rank] == x;
    free(all);
    dcoll_all_reduce(NULL, &ok, &ok, 1, DCOLL_INT32, DCOLL_MIN, NULL, NULL);
    if (rank == 0)
        printf("restart: %d steps on %d ranks in attempt %d: %s\n", STEPS,
               size, attempt, ok ? "ok" : "WRONG");
    dcoll_finalize();
    return ok ? 0 : 1;
}
