/* The group's timeout on the GPU path (issue 28, finding 7): a rank that
 * never comes to a GPU all_reduce on NCCL's path (the fake plugin's) is
 * waited for the group's timeout, not a fixed 600 s; with on_timeout
 * return every other rank gets DCOLL_ERR_TIMEOUT, the group is failed,
 * and the next call says so. Blocking and async.
 * Built with CUDA_DEVICE (test_gpu_timeout_cuda, suite gpu) it runs on a
 * real GPU's memory instead: staged where the ranks share it, NCCL with
 * DCOLL_NCCL_ONE_GPU=1. With "slowinit", an NCCL init slower than the
 * timeout (slow_init, below). */
#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <string.h>
#include "testutil.h"
#ifdef CUDA_DEVICE
#include <cuda_runtime_api.h>

static void *device_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}
#endif

int t_rank, t_failures;
static int n;
/* The group's timeout: 1 s, or TEST_GPU_TIMEOUT seconds where everything
 * runs slower (under compute-sanitizer, an NCCL init takes seconds). */
static int limit = 1;

static void one(void *(*alloc)(size_t), bool async)
{
    dcoll_group_t *g = t_returning_group(limit);
    float *d = alloc(64 * sizeof(float));
    /* Every rank once: the group's NCCL communicator is made on its first
     * GPU call, collectively. */
    CHECK(dcoll_all_reduce(g, d, d, 64, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "warm-up: %s",
          dcoll_last_error());
    if (t_rank != n - 1) {
        double t0 = t_now();
        dcoll_work_t *w = NULL;
        dcoll_status_t st = dcoll_all_reduce(g, d, d, 64, DCOLL_FLOAT32,
                                             DCOLL_SUM, NULL,
                                             async ? &w : NULL);
        if (!st && w)
            st = dcoll_work_wait(w);
        dcoll_work_free(&w);
        double took = t_now() - t0;
        CHECK(st == DCOLL_ERR_TIMEOUT && took < limit + 4, "%s GPU "
              "all_reduce with a rank absent: %s after %.1f s (%s)",
              async ? "async" : "blocking", dcoll_status_string(st), took,
              dcoll_last_error());
        st = dcoll_all_reduce(g, d, d, 64, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL);
        CHECK(st == DCOLL_ERR_GROUP_FAILED, "next call: %s",
              dcoll_status_string(st));
#ifdef CUDA_DEVICE
        /* Nothing the timed-out call left waits on the absent rank: a
         * later copy on the same stream completes. */
        float back[64];
        t0 = t_now();
        CHECK(cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost) ==
                      cudaSuccess &&
                  t_now() - t0 < 2,
              "a copy on the stream after the timeout: %.1f s",
              t_now() - t0);
#endif
    }
    MPI_Barrier(MPI_COMM_WORLD);   /* the absent rank waits here */
    dcoll_group_destroy(&g);
}

/* "slowinit": the NCCL init outlasts the group's 1-s timeout (the NCCL
 * double's FAKE_NCCL_INIT_US; a real one under compute-sanitizer). The
 * first GPU call times out on every rank and fails the group: the next
 * gets DCOLL_ERR_GROUP_FAILED at once, rather than starting another init
 * whose agreement over MPI would wait without bound. */
static void slow_init(void *(*alloc)(size_t))
{
    dcoll_group_t *g = t_returning_group(limit);
    float *d = alloc(64 * sizeof(float));
    double t0 = t_now();
    dcoll_status_t st = dcoll_all_reduce(g, d, d, 64, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    double took = t_now() - t0;
    CHECK(st == DCOLL_ERR_TIMEOUT && took < limit + 4, "a slow init: %s "
          "after %.1f s (%s)", dcoll_status_string(st), took,
          dcoll_last_error());
    t0 = t_now();
    st = dcoll_all_reduce(g, d, d, 64, DCOLL_FLOAT32, DCOLL_SUM, NULL, NULL);
    took = t_now() - t0;
    CHECK(st == DCOLL_ERR_GROUP_FAILED && took < 1, "the call after: %s "
          "after %.1f s", dcoll_status_string(st), took);
    dcoll_group_destroy(&g);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *e = getenv("TEST_GPU_TIMEOUT");
    if (e && atoi(e) > 0)
        limit = atoi(e);
    void *(*alloc)(size_t) = NULL;
#ifdef CUDA_DEVICE
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0)
        alloc = device_alloc;
#else
    const char *path = getenv("DCOLL_CUDA_PLUGIN");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    *(void **)&alloc = h ? dlsym(h, "fake_device_alloc") : NULL;
#endif
    if (!alloc || n < 2) {
        if (t_rank == 0)
            printf("needs a GPU (or the fake plugin) and 2 ranks: "
                   "skipping\n");
        MPI_Finalize();
        return 77;
    }
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "slowinit")) {
        slow_init(alloc);
    } else {
        one(alloc, false);
        one(alloc, true);
    }
    int rc = t_finish("gpu timeout");
    dcoll_finalize();
    MPI_Finalize();
    return rc;
}
