/* shrink.c: a job that loses a rank and goes on with the rest:
 *
 *   dcollrun --on-failure continue -n 4 ./shrink 2 5
 *
 * kills rank 2 at step 5. dcollrun lets the others live and tells them;
 * their all_reduce returns DCOLL_ERR_RANK_DIED (the world returns
 * instead of ending the job: DCOLL_ON_TIMEOUT_RETURN below), and they
 * make a group of themselves with dcoll_group_shrink and finish the
 * steps on it. Each step counts the ranks that took part; the total is
 * checked. Without arguments no rank dies. dcollrun's exit status is
 * then the dead rank's (137). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <dcoll/dcoll.h>

#define STEPS 10

int main(int argc, char **argv)
{
    int kill_rank = argc > 2 ? atoi(argv[1]) : -1;
    int kill_step = argc > 2 ? atoi(argv[2]) : -1;
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_ON_TIMEOUT | DCOLL_INIT_PARAM_COLL_TIMEOUT;
    p.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    p.coll_timeout = 60;
    if (dcoll_init(&p) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    int rank, size;
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    dcoll_group_t *g = NULL;   /* the world, then the survivors */
    long total = 0, want = 0;
    for (int s = 0; s < STEPS; s++) {
        if (rank == kill_rank && s == kill_step)
            raise(SIGKILL);
        int n = 1;
        dcoll_status_t st = dcoll_all_reduce(g, &n, &n, 1, DCOLL_INT32,
                                             DCOLL_SUM, NULL, NULL);
        if (st == DCOLL_ERR_RANK_DIED) {
            /* The call did not complete: shrink, then do the step again
             * on the ranks that are left. */
            dcoll_group_t *alive = NULL;
            if (dcoll_group_shrink(g, &alive) != DCOLL_SUCCESS) {
                fprintf(stderr, "shrink: %s\n", dcoll_last_error());
                return 1;
            }
            if (g)
                dcoll_group_destroy(&g);
            g = alive;
            int left, first;
            dcoll_group_size(g, &left);
            dcoll_group_rank(g, &first);
            if (first == 0)
                printf("shrink: a rank died at step %d; going on with %d\n",
                       s, left);
            s--;
            continue;
        }
        if (st) {
            fprintf(stderr, "all_reduce: %s\n", dcoll_last_error());
            return 1;
        }
        total += n;
        want += kill_step >= 0 && s >= kill_step ? size - 1 : size;
    }
    int first;
    dcoll_group_rank(g, &first);
    if (first == 0)
        printf("shrink: %d steps, %ld rank-steps: %s\n", STEPS, total,
               total == want ? "ok" : "WRONG");
    if (g)
        dcoll_group_destroy(&g);
    dcoll_finalize();
    return total == want ? 0 : 1;
}
