/* Survivors go on (run by shrink.sh under dcollrun, shrink-mpirun.sh
 * under mpirun with DCOLL_ON_FAILURE=continue):
 *   test_shrink killed   4 ranks: rank 2 dies (SIGKILL) while the others
 *                        wait for it in a blocking all_reduce; they get
 *                        DCOLL_ERR_RANK_DIED naming it before the
 *                        timeout, shrink the world to 3 and sum over
 *                        them
 *   test_shrink killed0  the same with rank 0 dead
 *   test_shrink twice    the same, then world rank 3 dies in a call on
 *                        the 3-rank group: shrunk again, to 2
 *   test_shrink slow     3 ranks: rank 2 is only late (past the
 *                        timeout): the others time out, and their
 *                        shrink waits for it, so the group keeps all 3;
 *                        then a shrink that times out before rank 2
 *                        comes, tried again until it does: all 3
 *   test_shrink restart  3 ranks under --max-restarts: rank 1 fails in
 *                        the first attempt; the second completes
 *   test_shrink abort    killed, at the default timeout mode: the job
 *                        ends with the report (shrink.sh checks it)
 *   test_shrink stopped  under mpirun with DCOLL_ON_FAILURE=continue:
 *                        rank 2 stops (SIGSTOP) past DCOLL_FENCE; the
 *                        keeper takes it as dead, the others shrink,
 *                        then let it go on (SIGCONT): it ends itself
 *                        with DCOLL_FENCED_EXIT_CODE before its call
 *                        returns
 *   test_shrink rows     4 ranks, nobody dies: the rows {0,1,2} and
 *                        {3} of one split shrink at once, each to itself;
 *                        then a group of all four, made after a split
 *                        that only rows {0,1,2} took part in, shrinks to
 *                        all four
 *   test_shrink rows-killed  rows {0,1} and {2,3}, rank 1 killed: the
 *                        rows shrink at once, to {0} and to {2,3}
 *   test_shrink link     2 nodes x 2 ranks (test/nodes/keeper.sh): all
 *                        loop on all_reduce until node 2 is cut off;
 *                        node 1's ranks get the death by the keeper's
 *                        lease and shrink to 2
 *   test_shrink refused  under mpirun: no launcher reports deaths, so
 *                        dcoll_group_shrink is refused, saying why
 *   test_shrink gpu      built on the CUDA and NCCL doubles (test/double),
 *                        and on a GPU's (test/gpu: the gpu suite, NCCL
 *                        on one GPU by the test knob; skips without one):
 *                        killed, on GPU buffers through NCCL; the
 *                        survivors' wait in NCCL ends at the launcher's
 *                        word, and the shrunk group's communicator comes
 *                        from ncclCommShrink (no new bootstrap)
 *   test_shrink gpu-fresh  the same, waiting on an async call's work, on
 *                        an NCCL without ncclCommShrink (FAKE_NCCL_VERSION
 *                        2.26): the parent's is aborted and the shrunk
 *                        group makes its own
 *   test_shrink gpu-ipc  killed, the 4 ranks on one GPU (the IPC
 *                        transport, no NCCL): the survivors' wait for
 *                        their peer's steps ends at the launcher's word
 * Each survivor prints one line "MODE: rank R ok ..."; the script counts
 * them. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "check.h"
#include "dcoll/dcoll.h"
#ifdef CUDA_DEVICE
#include <cuda_runtime_api.h>
#endif
#ifdef CUDA_DOUBLE
#include "cudart_double.h"
#endif

int t_rank, t_failures;

/* Rank dies while the others wait in an all_reduce of g for it. (Dying
 * with its own part posted would not do: MPI may have sent all it
 * needed from this rank, and the others' call then ends well.) */
static void die_in_call(dcoll_group_t *g)
{
    (void)g;
    fflush(NULL);
    usleep(300000);
    raise(SIGKILL);
}

/* The survivors' all_reduce on g fails with the death of world rank
 * dead, before the timeout; true if it did. */
static int died(dcoll_group_t *g, int dead, double timeout)
{
    static int64_t v[1 << 16];
    double t0 = dcoll_wtime();
    dcoll_status_t st = dcoll_all_reduce(g, v, v, 1 << 16,
                                         DCOLL_INT64, DCOLL_SUM, NULL, NULL);
    double took = dcoll_wtime() - t0;
    /* The witness: dcollrun's waitpid, or under mpirun the keeper's
     * pidfd on the host (killed) or its lease (stopped). */
    const char *how = getenv("TEST_SHRINK_WITNESS");
    char want[128];
    snprintf(want, sizeof(want), "(world %d) died (%s", dead,
             how ? how : "killed by signal 9");
    CHECK(st == DCOLL_ERR_RANK_DIED, "status %d, not RANK_DIED", st);
    CHECK(strstr(dcoll_last_error(), want), "no '%s'", want);
    CHECK(took < timeout, "took %.2f s, past the timeout of %g s", took,
          timeout);
    /* The group is unusable after it. */
    int x = 1;
    CHECK(dcoll_all_reduce(g, &x, &x, 1, DCOLL_INT32, DCOLL_SUM, NULL, NULL) ==
              DCOLL_ERR_GROUP_FAILED, "a second call on the failed group");
    return (int)(took * 1000);
}

/* A shrink of g to the ranks alive (world ranks want, n of them), and a
 * sum of world ranks over it. */
static dcoll_group_t *shrunk(dcoll_group_t *g, const int *want, int n)
{
    dcoll_group_t *s = NULL;
    double t0 = dcoll_wtime();
    dcoll_status_t st = dcoll_group_shrink(g, &s);
    double took = dcoll_wtime() - t0;
    CHECK(st == DCOLL_SUCCESS, "shrink: status %d", st);
    if (st)
        return NULL;
    int size = 0, rank = -1, me = -1, sum = 0, expect = 0;
    dcoll_group_size(s, &size);
    dcoll_group_rank(s, &rank);
    dcoll_group_rank(NULL, &me);
    CHECK(size == n, "shrunk to %d ranks, not %d", size, n);
    for (int i = 0; i < n; i++) {
        int w = -1;
        dcoll_group_global_rank(s, i, &w);
        CHECK(w == want[i], "group rank %d is world %d, not %d", i, w,
              want[i]);
        expect += want[i];
    }
    sum = me;
    CHECK(dcoll_all_reduce(s, &sum, &sum, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS && sum == expect,
          "sum %d, not %d", sum, expect);
    CHECK(dcoll_barrier(s, NULL, NULL) == DCOLL_SUCCESS, "barrier");
    fprintf(stderr, "shrink: rank %d of %d, shrunk in %.1f ms\n", rank, n,
            took * 1000);
    return s;
}

#ifdef CUDA_DEVICE
/* n floats on this rank's GPU, each v. */
static float *on_gpu(size_t n, float v)
{
    float *h = malloc(n * sizeof(float)), *d = NULL;
    for (size_t i = 0; h && i < n; i++)
        h[i] = v;
    if (!h || cudaMalloc((void **)&d, n * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice) !=
            cudaSuccess) {
        free(h);
        return NULL;
    }
    free(h);
    return d;
}

/* Whether the n floats at d on the GPU are all v. */
static int all_are(const float *d, size_t n, float v)
{
    float *h = malloc(n * sizeof(float));
    int ok = h && cudaMemcpy(h, d, n * sizeof(float),
                             cudaMemcpyDeviceToHost) == cudaSuccess;
    for (size_t i = 0; ok && i < n; i++)
        ok = h[i] == v;
    free(h);
    return ok;
}

/* gpu and gpu-fresh (4 ranks, each its own GPU of the doubles'). */
static int gpu(const char *mode, int rank, int size, double timeout)
{
    enum { N = 4096 };
    int fresh = !strcmp(mode, "gpu-fresh"), ipc = !strcmp(mode, "gpu-ipc");
    float *d = on_gpu(N, 1);
    CHECK(d && size == 4, "a GPU buffer on 4 ranks");
    if (!d || size != 4)
        return 0;
    CHECK(dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS && all_are(d, N, 4),
          "the world's GPU sum");
#ifdef CUDA_DOUBLE
    long inits = fake_nccl_inits();
    CHECK(inits == !ipc, "the world's GPU sum made %ld NCCL communicators, "
          "not %d", inits, !ipc);
#endif
    if (rank == 2)
        die_in_call(NULL);
    /* The others wait in NCCL for rank 2, which never comes: the wait
     * ends at the launcher's word, not at the group's timeout. gpu waits
     * in the blocking call, gpu-fresh on the work of an async one. */
    double t0 = dcoll_wtime();
    dcoll_work_t *w = NULL;
    dcoll_status_t st = dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, fresh ? &w : NULL);
    if (fresh) {
        CHECK(st == DCOLL_SUCCESS, "the async GPU all_reduce: status %d",
              st);
        st = w ? dcoll_work_wait(w) : st;
        dcoll_work_free(&w);
    }
    double took = dcoll_wtime() - t0;
    CHECK(st == DCOLL_ERR_RANK_DIED && strstr(dcoll_last_error(),
                                              "(world 2) died (killed"),
          "GPU all_reduce: status %d, not RANK_DIED for rank 2", st);
    CHECK(took < timeout / 2, "the death seen after %.1f s", took);
    int three[] = {0, 1, 3};
    dcoll_group_t *s = shrunk(NULL, three, 3);
    if (s) {
        float *e = on_gpu(N, (float)(rank + 1));
        CHECK(e && dcoll_all_reduce(s, e, e, N, DCOLL_FLOAT32, DCOLL_SUM,
                                    NULL, NULL) == DCOLL_SUCCESS &&
                  all_are(e, N, 1 + 2 + 4),
              "the shrunk group's GPU sum");
        cudaFree(e);
#ifdef CUDA_DOUBLE
        long shrinks = fake_nccl_shrinks();
        CHECK(shrinks == (fresh || ipc ? 0 : 1) &&
                  fake_nccl_inits() == inits + (fresh ? 1 : 0),
              "%s: %ld ncclCommShrink, %ld inits (had %ld)", mode, shrinks,
              fake_nccl_inits(), inits);
#else
        (void)ipc;
#endif
        dcoll_group_destroy(&s);
    }
    cudaFree(d);
    return (int)(took * 1000);
}
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (dcoll_init(NULL)) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    int rank = -1, size = 0;
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    t_rank = rank;
    int x = 1;
    CHECK(dcoll_all_reduce(NULL, &x, &x, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS && x == size,
          "the first sum");
    /* A survivor writes to a socket whose peer is gone and lives (EPIPE,
     * not SIGPIPE), under dcollrun's continue and the keeper's alike. */
    const char *cont = getenv("DCOLL_ON_FAILURE");
    int sv[2];
    if (cont && !strcmp(cont, "continue"))
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 &&
              close(sv[1]) == 0 && write(sv[0], "x", 1) == -1 &&
              errno == EPIPE && close(sv[0]) == 0,
              "a write to a peer that is gone fails with EPIPE");
    double timeout = 20;
    if (!strcmp(mode, "killed") || !strcmp(mode, "twice") ||
        !strcmp(mode, "abort") || !strcmp(mode, "killed0") ||
        !strcmp(mode, "stopped")) {
        /* killed0: rank 0 dies, which started the join's helper (Open
         * MPI's ompi-server, MPICH's PMI server) or the keeper. */
        int victim = !strcmp(mode, "killed0") ? 0 : 2;
        int64_t pid = (int64_t)getpid(), pids[4] = {0};
        CHECK(size == 4 && dcoll_all_gather(NULL, &pid, pids, 1, DCOLL_INT64,
                                            NULL, NULL) == DCOLL_SUCCESS,
              "the pids");
        if (rank == victim && !strcmp(mode, "stopped")) {
            /* Stopped past the fence, then let go by the survivors: it
             * must end itself before its call goes anywhere. */
            fflush(NULL);
            usleep(300000);
            raise(SIGSTOP);
            x = 1;
            dcoll_status_t st = dcoll_all_reduce(NULL, &x, &x, 1,
                                                 DCOLL_INT32, DCOLL_SUM,
                                                 NULL, NULL);
            printf("FAIL: the fenced rank went on (status %d)\n", st);
            return 1;
        }
        if (rank == victim)
            die_in_call(NULL);
        int ms = died(NULL, victim, timeout);
        int three[3];
        for (int i = 0, k = 0; i < 4; i++)
            if (i != victim)
                three[k++] = i;
        dcoll_group_t *s = shrunk(NULL, three, 3);
        if (!strcmp(mode, "stopped") && rank == 0)
            kill((pid_t)pids[victim], SIGCONT);
        if (s && !strcmp(mode, "twice")) {
            if (rank == 3)
                die_in_call(s);
            died(s, 3, timeout);
            int two[] = {0, 1};
            dcoll_group_t *t = shrunk(s, two, 2);
            dcoll_group_destroy(&t);
        }
        dcoll_group_destroy(&s);
        if (!t_failures)
            printf("%s: rank %d ok, the death seen in %d ms\n", mode, rank,
                   ms);
    } else if (!strcmp(mode, "rows") && size == 4) {
        /* Nobody dies. The rows {0,1,2} and {3} of one split shrink at
         * once, and each gets itself back, not the other's list. Then
         * rows {0,1,2} alone split again (their count of groups moves,
         * rank 3's does not), and a group of all four made after it
         * shrinks to all four. */
        dcoll_group_t *row = NULL, *again = NULL, *all = NULL;
        int top[] = {0, 1, 2}, low[] = {3}, four[] = {0, 1, 2, 3};
        CHECK_OK(dcoll_split_group(&row, NULL, rank < 3 ? 0 : 1, rank, NULL));
        dcoll_group_t *s = shrunk(row, rank < 3 ? top : low,
                                  rank < 3 ? 3 : 1);
        dcoll_group_destroy(&s);
        if (rank < 3) {
            CHECK_OK(dcoll_split_group(&again, row, 0, rank, NULL));
            dcoll_group_destroy(&again);
        }
        CHECK_OK(dcoll_new_group(&all, four, 4, NULL));
        s = shrunk(all, four, 4);
        dcoll_group_destroy(&s);
        dcoll_group_destroy(&all);
        dcoll_group_destroy(&row);
        if (!t_failures)
            printf("%s: rank %d ok\n", mode, rank);
    } else if (!strcmp(mode, "rows-killed") && size == 4) {
        /* Rows {0,1} and {2,3}; rank 1 dies in a call on its row. Both
         * rows shrink at once: {0} and {2,3}, each its own. */
        dcoll_group_t *row = NULL;
        int one[] = {0}, pair[] = {2, 3};
        CHECK_OK(dcoll_split_group(&row, NULL, rank / 2, rank, NULL));
        int ms = 0;
        if (rank == 1)
            die_in_call(row);
        if (rank == 0)
            ms = died(row, 1, timeout);
        dcoll_group_t *s = shrunk(row, rank < 2 ? one : pair,
                                  rank < 2 ? 1 : 2);
        dcoll_group_destroy(&s);
        /* Every survivor sees the death before it finalizes: MPICH's
         * MPI_Finalize, which dcoll skips once a world rank is dead,
         * would wait on rank 1 forever. */
        died(NULL, 1, timeout);
        dcoll_group_destroy(&row);
        if (!t_failures)
            printf("%s: rank %d ok, the death seen in %d ms\n", mode, rank,
                   ms);
    } else if (!strcmp(mode, "link")) {
        /* Across nodes (test/nodes/keeper.sh): every rank loops until a
         * call fails; node 2's (ranks 2, 3) are cut off and end
         * themselves, node 1's get the death and go on as two. */
        printf("looping\n");
        fflush(stdout);
        dcoll_status_t st;
        do {
            x = 1;
            st = dcoll_all_reduce(NULL, &x, &x, 1, DCOLL_INT32, DCOLL_SUM,
                                  NULL, NULL);
        } while (!st && x == size);
        /* Both of node 2's leases lapse at once: the death named is
         * whichever the keeper finds first (rank 3 first under load). */
        const char *e = dcoll_last_error();
        CHECK(st == DCOLL_ERR_RANK_DIED &&
                  (strstr(e, "(world 2) died (it sent dcoll's keeper no "
                             "heartbeat") ||
                   strstr(e, "(world 3) died (it sent dcoll's keeper no "
                             "heartbeat")),
              "status %d, not RANK_DIED for rank 2 or 3 by its lease", st);
        int two[] = {0, 1};
        dcoll_group_t *s = shrunk(NULL, two, 2);
        dcoll_group_destroy(&s);
        if (!t_failures)
            printf("link: rank %d ok\n", rank);
    } else if (!strcmp(mode, "slow")) {
        dcoll_group_t *g = NULL;
        dcoll_group_params_t p = DCOLL_GROUP_PARAMS_INIT;
        p.mask = DCOLL_GROUP_PARAM_TIMEOUT | DCOLL_GROUP_PARAM_ON_TIMEOUT;
        p.timeout = 2;
        p.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
        int all[] = {0, 1, 2};
        CHECK(dcoll_new_group(&g, all, 3, &p) == DCOLL_SUCCESS, "group");
        if (rank == 2)
            sleep(3);
        x = 1;
        dcoll_status_t st = dcoll_all_reduce(g, &x, &x, 1, DCOLL_INT32,
                                             DCOLL_SUM, NULL, NULL);
        if (rank != 2)
            CHECK(st == DCOLL_ERR_TIMEOUT, "status %d, not TIMEOUT", st);
        dcoll_group_t *s = shrunk(g, all, 3);
        dcoll_group_destroy(&s);
        dcoll_group_destroy(&g);
        /* A shrink that timed out, tried again: the same agreement, which
         * the late rank joins (1-s timeout, rank 2 there after 2.5 s). */
        p.timeout = 1;
        CHECK(dcoll_new_group(&g, all, 3, &p) == DCOLL_SUCCESS, "group");
        if (rank == 2)
            usleep(2500000);
        int tries = 0;
        do {
            s = NULL;
            st = dcoll_group_shrink(g, &s);
            tries++;
        } while (st == DCOLL_ERR_TIMEOUT && tries < 10);
        CHECK(st == DCOLL_SUCCESS, "shrink after %d tries: status %d: %s",
              tries, st, dcoll_last_error());
        CHECK(rank == 2 || tries > 1, "rank %d's first shrink did not time "
              "out", rank);
        int n = 0;
        dcoll_group_size(s, &n);
        CHECK(!s || n == 3, "retried shrink: %d ranks, not 3", n);
        dcoll_group_destroy(&s);
        dcoll_group_destroy(&g);
        if (!t_failures)
            printf("slow: rank %d ok, nobody left out\n", rank);
    } else if (!strcmp(mode, "restart")) {
        const char *a = getenv("DCOLL_RESTART_COUNT");
        const char *t = getenv("TORCHELASTIC_RESTART_COUNT");
        CHECK(a && t && !strcmp(a, t), "DCOLL_RESTART_COUNT %s, torch's %s",
              a ? a : "unset", t ? t : "unset");
        if (a && !strcmp(a, "0") && rank == 1) {
            fprintf(stderr, "restart: rank 1 fails in attempt 0\n");
            return 5;
        }
        x = 1;
        CHECK(dcoll_all_reduce(NULL, &x, &x, 1, DCOLL_INT32, DCOLL_SUM,
                               NULL, NULL) == DCOLL_SUCCESS && x == size,
              "the second sum");
        if (!t_failures)
            printf("restart: rank %d ok in attempt %s\n", rank, a);
#ifdef CUDA_DEVICE
    } else if (!strncmp(mode, "gpu", 3)) {
        int ngpus = 0;
        if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 1) {
            printf("%s: no GPU here: skipping\n", mode);
            dcoll_finalize();
            return 77;
        }
        int ms = gpu(mode, rank, size, timeout);
        if (!t_failures)
            printf("%s: rank %d ok, the death seen in %d ms\n", mode, rank,
                   ms);
#endif
    } else if (!strcmp(mode, "refused")) {
        dcoll_group_t *s = NULL;
        CHECK(dcoll_group_shrink(NULL, &s) == DCOLL_ERR_UNSUPPORTED &&
                  strstr(dcoll_last_error(), "--on-failure continue"),
              "shrink without a launcher's word");
        CHECK(dcoll_group_shrink(NULL, NULL) == DCOLL_ERR_INVALID_ARGUMENT,
              "out NULL");
        CHECK(dcoll_group_shrink(DCOLL_GROUP_NULL, &s) ==
                  DCOLL_ERR_INVALID_ARGUMENT, "a destroyed group");
        if (!t_failures)
            printf("refused: rank %d ok\n", rank);
    } else {
        fprintf(stderr, "usage: test_shrink killed|twice|slow|restart|"
                "refused\n");
        return 2;
    }
    fflush(NULL);
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    return T_EXIT;
}
