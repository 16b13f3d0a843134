/* dcoll-survive-bench: how long survivors take to learn of a death and to
 * have a working group again. Run under dcollrun --on-failure continue,
 * or mpirun with DCOLL_ON_FAILURE=continue (bench/survive.sh):
 *   rank size/2 makes one 64 KiB all_reduce, then writes the wall time
 *   in the world's store (under mpirun, which has none: the file
 *   survive-death here, one host) and kills itself (SIGKILL) while the others
 *   wait in the next;
 *   each survivor times its failure status (DCOLL_ERR_RANK_DIED) from
 *   that instant, then dcoll_group_shrink and the first all_reduce on the
 *   new group. The lowest survivor prints the largest of each over the
 *   survivors, in ms. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <dcoll/dcoll.h>

static double wall(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

int main(void)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_ON_TIMEOUT | DCOLL_INIT_PARAM_COLL_TIMEOUT;
    p.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    p.coll_timeout = 120;
    if (dcoll_init(&p)) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    int rank, size;
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    dcoll_store_t *store = NULL;
    if (dcoll_world_store(&store))
        store = NULL;
    static double buf[8192];
    int victim = size / 2;
    if (rank == victim) {
        dcoll_all_reduce(NULL, buf, buf, 8192, DCOLL_FLOAT64, DCOLL_SUM,
                         NULL, NULL);
        usleep(500000);   /* the others are inside the next all_reduce */
        char t[32];
        snprintf(t, sizeof(t), "%.6f", wall());
        if (store) {
            dcoll_store_set(store, "death", t, strlen(t));
        } else {
            FILE *f = fopen("survive-death", "w");
            if (f) {
                fputs(t, f);
                fclose(f);
            }
        }
        raise(SIGKILL);
    }
    /* The first all_reduce, which the victim made too, then the one it
     * never comes to; on many oversubscribed ranks some are still in
     * the first when it dies, and it is the first that fails there. */
    dcoll_status_t st = DCOLL_SUCCESS;
    for (int i = 0; i < 2 && !st; i++)
        st = dcoll_all_reduce(NULL, buf, buf, 8192, DCOLL_FLOAT64, DCOLL_SUM,
                              NULL, NULL);
    double t_status = wall();
    if (st != DCOLL_ERR_RANK_DIED) {
        fprintf(stderr, "rank %d: status %d, not RANK_DIED: %s\n", rank, st,
                dcoll_last_error());
        return 1;
    }
    dcoll_group_t *alive = NULL;
    if (dcoll_group_shrink(NULL, &alive)) {
        fprintf(stderr, "shrink: %s\n", dcoll_last_error());
        return 1;
    }
    double t_shrunk = wall();
    int one = 1;
    dcoll_all_reduce(alive, &one, &one, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                     NULL);
    double t_working = wall();
    char t[32] = "";
    size_t len = 0;
    if (store) {
        dcoll_store_get(store, "death", t, sizeof(t) - 1, &len);
    } else {
        FILE *f = fopen("survive-death", "r");
        if (f) {
            len = fread(t, 1, sizeof(t) - 1, f);
            t[len] = '\0';
            fclose(f);
        }
    }
    double death = atof(t);
    double v[4] = {(t_status - death) * 1e3, (t_working - t_status) * 1e3,
                   (t_shrunk - t_status) * 1e3, (t_working - t_shrunk) * 1e3};
    dcoll_all_reduce(alive, v, v, 4, DCOLL_FLOAT64, DCOLL_MAX, NULL, NULL);
    int me;
    dcoll_group_rank(alive, &me);
    if (me == 0)
        printf("survive: %d ranks, %d left: death to RANK_DIED %.0f ms "
               "(slowest survivor), RANK_DIED to a working group %.0f ms "
               "(shrink %.0f ms, then the first all_reduce %.0f ms)\n",
               size, one, v[0], v[1], v[2], v[3]);
    dcoll_group_destroy(&alive);
    dcoll_finalize();
    return one == size - 1 ? 0 : 1;
}
