/* One rank per GPU, as GPU nodes run (issue 48, the review's D15): no
 * cudaSetDevice before dcoll_init, then the GPU dcoll_device names;
 * every rank's must differ from the others', the world's all_reduce must
 * go through NCCL (the flight recorder says which transport ran it),
 * groups made by new_group and split_group give the right sums, and a
 * sub-group's timeout (return mode, the last rank staying away) leaves
 * the world's GPU calls working. Skips (77) where there are fewer GPUs
 * than ranks; scripts/gpu.sh runs it on as many ranks as GPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include "testutil.h"

enum { N = 4096 };
int t_rank, t_failures;
static int n;

/* g's sum of rank + 1 over its ranks, on the GPU. */
static void sum_ok(dcoll_group_t *g, const char *what)
{
    int size = 0, rank = 0;
    dcoll_group_size(g, &size);
    dcoll_group_rank(g, &rank);
    float *h = malloc(N * sizeof(float)), *d = NULL;
    for (int i = 0; i < N; i++)
        h[i] = (float)(rank + 1);
    cudaMalloc((void **)&d, N * sizeof(float));
    cudaMemcpy(d, h, N * sizeof(float), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    cudaMemcpy(h, d, N * sizeof(float), cudaMemcpyDeviceToHost);
    float want = (float)(size * (size + 1) / 2);
    CHECK(st || (h[0] == want && h[N - 1] == want), "%s: %g, want %g", what,
          h[0], want);
    cudaFree(d);
    free(h);
}

/* Whether this rank's recorder file says a call of the world ran on NCCL. */
static bool ran_on_nccl(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "grep -l '\"by\":\"nccl\"' %s/dcoll-*-%d.jsonl "
             ">/dev/null 2>&1", dir, t_rank);
    return system(cmd) == 0;
}

int main(int argc, char **argv)
{
    int level, ngpu = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < n) {
        if (t_rank == 0)
            printf("%d GPU(s) here, %d rank(s) need one each: skipping\n",
                   ngpu, n);
        MPI_Finalize();
        return 77;
    }
    char dir[] = "/tmp/dcoll-per-rank-XXXXXX";
    if (t_rank == 0 && !mkdtemp(dir))
        return 1;
    MPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    setenv("DCOLL_FLIGHT_DIR", dir, 1);
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    int dev = -1, all[64];
    CHECK_OK(dcoll_device(&dev));
    MPI_Allgather(&dev, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            CHECK(all[a] != all[b], "ranks %d and %d both got GPU %d", a, b,
                  all[a]);
    const char *text = "";
    int avail = 0;
    dcoll_backend_status("nccl", &avail, &text);
    printf("[rank %d] %s\n", t_rank, text);
    cudaSetDevice(dev);
    sum_ok(NULL, "the world's all_reduce");
    CHECK_OK(dcoll_dump());
    CHECK(ran_on_nccl(dir), "the world's all_reduce did not run on NCCL "
          "(recorder files in %s)", dir);
    dcoll_group_t *all_g = NULL, *half = NULL;
    CHECK_OK(dcoll_new_group(&all_g, NULL, 0, NULL));
    CHECK_OK(dcoll_split_group(&half, NULL, t_rank % 2, t_rank, NULL));
    sum_ok(all_g, "new_group");
    sum_ok(half, "split_group by parity");
    dcoll_group_destroy(&half);
    dcoll_group_destroy(&all_g);
    if (n > 1) {
        dcoll_group_t *g = t_returning_group(1);
        sum_ok(g, "the sub-group's first all_reduce");
        if (t_rank != n - 1) {
            float *d = NULL;
            cudaMalloc((void **)&d, N * sizeof(float));
            dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                                 DCOLL_SUM, NULL, NULL);
            CHECK(st == DCOLL_ERR_TIMEOUT, "a rank away: %s (%s)",
                  dcoll_status_string(st), dcoll_last_error());
            cudaFree(d);
        }
        dcoll_group_destroy(&g);
        sum_ok(NULL, "the world's all_reduce after a sub-group's timeout");
    }
    int rc = t_finish("gpu per rank");
    dcoll_finalize();
    if (t_rank == 0) {
        char cmd[200];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    MPI_Finalize();
    return rc;
}
