/* fork() after dcoll_init (issue 52, finding 8): the child's calls are
 * refused naming the fork (a collective, a group's making, dcoll_init,
 * and dcoll_finalize, which used to hang joining a watchdog thread the
 * child lacks) and return at once; the parent's groups, calls and
 * finalize go on as if no child had been made. Under mpirun, any size. */
#include <mpi.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

int t_rank, t_failures;

/* In the child: every call refused, naming the fork and the parent. */
static int child(void)
{
    char want[64];
    snprintf(want, sizeof(want), "fork() made of world rank %d", t_rank);
    int x = 1, flag = 1;
    double t0 = MPI_Wtime();
    CHECK(dcoll_all_reduce(NULL, &x, &x, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_ERR_INVALID_STATE &&
              strstr(dcoll_last_error(), want),
          "a collective in the child: %s", dcoll_last_error());
    dcoll_group_t *g = NULL;
    CHECK(dcoll_new_group(&g, NULL, 0, NULL) == DCOLL_ERR_INVALID_STATE,
          "a group in the child: %s", dcoll_last_error());
    CHECK(dcoll_init(NULL) == DCOLL_ERR_INVALID_STATE &&
              strstr(dcoll_last_error(), want),
          "dcoll_init in the child: %s", dcoll_last_error());
    CHECK(dcoll_initialized(&flag) == DCOLL_SUCCESS && flag == 0,
          "the child says dcoll is initialised");
    CHECK(dcoll_finalize() == DCOLL_ERR_INVALID_STATE &&
              strstr(dcoll_last_error(), "the parent finalizes"),
          "dcoll_finalize in the child: %s", dcoll_last_error());
    CHECK(MPI_Wtime() - t0 < 5, "the child's refusals took %.1f s",
          MPI_Wtime() - t0);
    return t_failures ? 1 : 0;
}

int main(void)
{
    int provided, n;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &n);
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
    pid_t pid = fork();
    if (pid == 0)
        _exit(child());   /* not exit: the parent's MPI is not its own */
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "the child (pid %d) ended with status 0x%x", (int)pid, status);
    int x = t_rank + 1;
    CHECK_OK(dcoll_all_reduce(g, &x, &x, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                              NULL));
    CHECK(x == n * (n + 1) / 2, "the parent's sum after the fork: %d", x);
    CHECK_OK(dcoll_group_destroy(&g));
    CHECK_OK(dcoll_finalize());
    MPI_Finalize();
    if (t_rank == 0)
        printf("fork: the child refused, the parent went on: %s\n",
               t_failures ? "FAIL" : "ok");
    return T_EXIT;
}
