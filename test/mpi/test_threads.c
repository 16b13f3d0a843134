/* Two threads on one group (issue 52, finding 9): a group takes calls
 * from one thread at a time, and a second thread's call while another's
 * runs is refused (DCOLL_ERR_INVALID_STATE, naming the call in the way)
 * with no number taken, instead of pairing with the other ranks' calls
 * at random. On rank 0, thread A sits in an all_reduce that rank 1 joins
 * late; thread B's barrier, all_reduce, plan start and split on the
 * group meanwhile are refused; A's sum is right, and the group works on
 * after. Under mpirun, 2 ranks or more. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "testutil.h"

int t_rank, t_failures;
static dcoll_group_t *g;
static int sum = -1;
static volatile int inside;

static void *thread_a(void *arg)
{
    (void)arg;
    int one = 1;
    inside = 1;
    CHECK_OK(dcoll_all_reduce(g, &one, &sum, 1, DCOLL_INT32, DCOLL_SUM,
                              NULL, NULL));
    return NULL;
}

#define CLASH(call, what)                                                    \
    CHECK((call) == DCOLL_ERR_INVALID_STATE &&                               \
              strstr(dcoll_last_error(), "another thread is in "             \
                                         "dcoll_all_reduce") &&              \
              strstr(dcoll_last_error(), what),                              \
          "%s while another thread's all_reduce runs: %s", what,             \
          dcoll_last_error())

int main(void)
{
    int provided, n, x = 7, y = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &n);
    if (n < 2) {
        printf("needs 2 ranks; skipping\n");
        dcoll_finalize();
        MPI_Finalize();
        return 77;
    }
    CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
    dcoll_plan_t *plan = NULL;
    CHECK_OK(dcoll_all_reduce_plan(g, &x, &y, 1, DCOLL_INT32, DCOLL_SUM,
                                   NULL, &plan));
    if (t_rank == 0) {
        pthread_t a;
        pthread_create(&a, NULL, thread_a, NULL);
        while (!inside)
            usleep(1000);
        usleep(200000);   /* A is in its call: rank 1 comes at 1 s */
        dcoll_group_t *s = NULL;
        CLASH(dcoll_barrier(g, NULL, NULL), "dcoll_barrier");
        CLASH(dcoll_all_reduce(g, &x, &y, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                               NULL), "dcoll_all_reduce");
        CLASH(dcoll_plan_start(plan, NULL), "dcoll_plan_start");
        CLASH(dcoll_split_group(&s, g, 0, 0, NULL), "dcoll_split_group");
        CHECK(!s && y == 0, "a refused call changed its output");
        pthread_join(a, NULL);
    } else {
        if (t_rank == 1)
            sleep(1);
        thread_a(NULL);
    }
    CHECK(sum == n, "the first thread's sum %d, want %d", sum, n);
    /* Nothing was numbered: the group goes on, every rank alike. */
    CHECK_OK(dcoll_plan_start(plan, NULL));
    CHECK(y == 7 * n, "plan sum %d", y);
    CHECK_OK(dcoll_barrier(g, NULL, NULL));
    CHECK_OK(dcoll_plan_free(&plan));
    CHECK_OK(dcoll_group_destroy(&g));
    CHECK_OK(dcoll_finalize());
    MPI_Finalize();
    if (t_rank == 0)
        printf("threads: %s\n", t_failures ? "FAIL" : "ok");
    return t_failures ? 1 : 0;
}
