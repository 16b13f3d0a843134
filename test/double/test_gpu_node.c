/* GPU nodes as users run them, on the CUDA and NCCL doubles through the
 * real plugin (issue 48). One mode a run:
 *   multigpu   (4 ranks; FAKE_NGPUS=4, one UUID per GPU for every
 *              process, GPUs 0-1 on NUMA node 0 and 2-3 on 1, ranks
 *              bound by socket: 0,1,0,1) every rank gets a GPU of its
 *              own, says why, and the world's GPU all_reduce reaches
 *              NCCL instead of staging;
 *   splitshare (3 ranks) a sub-group's timeout, in return mode, leaves
 *              the world's communicator working: the next world
 *              all_reduce gives the right sum;
 *   threads    (2 ranks) two threads, each with its group, issue small
 *              all_reduces at once: the NCCL double stops the process if
 *              two threads are ever inside NCCL on one device;
 *   context    (2 ranks; FAKE_NGPUS=2) the rank on GPU 1 waits for and
 *              frees an async work on a thread that never chose a GPU:
 *              no context on GPU 0;
 *   initcount  (3 ranks; DCOLL_NCCL_EAGER=1) the world's communicator at
 *              init, then three groups (new_group, a split of the world,
 *              a split of a sub-group) split from their parents: one
 *              init and three splits, and each group's sum right;
 *   capture    (2 ranks) a thread waits for an async work while the main
 *              thread captures a call into a CUDA graph in global mode:
 *              the capture survives, and its launch gives the sum;
 *   ctxrestore (2 ranks; FAKE_NGPUS=2) a thread whose current context is
 *              its own (cuCtxCreate), not a primary one, has it current
 *              again after a call on another GPU's buffers;
 *   multirank  (2 ranks on one GPU; NCCL 2.30 and
 *              NCCL_MULTI_RANK_GPU_ENABLE=1) the ranks use NCCL, not
 *              staging;
 *   cudaaware  (2 ranks; DCOLL_MPI_CUDA=1, the double's device memory
 *              visible to MPI) send/recv and all_gatherv on GPU buffers
 *              go to MPI with the device pointers, after their stream,
 *              pinning nothing; the results right;
 *   unwaited   (2 ranks) a call captured in a CUDA graph meets a lost
 *              peer when the graph runs, and nothing waits for it: the
 *              watchdog finds NCCL's error, and the group's next call
 *              says it (the other rank's times out);
 *   mixed      (2 ranks) one int32 MIN all_reduce, rank 0's buffers on
 *              the GPU and rank 1's on the host (bad input): no rank
 *              gets success, and none waits past the group's timeout
 *              (the GPU side's setup no longer matches the host side's
 *              MPI_Allreduce);
 *   order      (2 ranks, return mode) async calls on two groups started
 *              in different orders on the two ranks, legal for MPI, hang
 *              NCCL (one stream, in issue order): every wait ends at the
 *              groups' deadline with an error, none hangs; in debug mode
 *              the report names where the other rank is;
 *   freeorder  (2 ranks) two groups with NCCL communicators destroyed
 *              in opposite orders on the two ranks: both frees end
 *              within about the groups' timeout, not a minute each;
 *   ordered    (2 ranks; FAKE_NCCL_DELAY_US=300000) a stream-ordered
 *              call returns before NCCL is done and its result is there
 *              for the stream's next copy; with a lost peer, the
 *              watchdog finds it and the group's next call says why
 *              (timeout on one rank, NCCL's error on the other). */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include "cudart_double.h"
#include "testutil.h"

enum { N = 256 };
int t_rank, t_failures;
static int n;

static float *filled(size_t count, float v)
{
    float *h = malloc(count * sizeof(float)), *d = NULL;
    for (size_t i = 0; i < count; i++)
        h[i] = v;
    cudaMalloc((void **)&d, count * sizeof(float));
    cudaMemcpy(d, h, count * sizeof(float), cudaMemcpyHostToDevice);
    /* A pageable copy may still be queued (CUDA's rule, the double's
     * too): landed before another stream reads it. */
    cudaStreamSynchronize(NULL);
    free(h);
    return d;
}

/* Elements of d not equal to want. */
static int wrong(const float *d, size_t count, float want)
{
    float *h = malloc(count * sizeof(float));
    cudaMemcpy(h, d, count * sizeof(float), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += h[i] != want;
    free(h);
    return bad;
}

/* The sum of every rank's v on g; 0 bad elements on success. */
static void sum_ok(dcoll_group_t *g, const char *what)
{
    int size = 0, rank = 0;
    dcoll_group_size(g, &size);
    dcoll_group_rank(g, &rank);
    float *d = filled(N, (float)(rank + 1));
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    if (st == DCOLL_SUCCESS)
        CHECK(!wrong(d, N, (float)(size * (size + 1) / 2)), "%s: wrong sum",
              what);
    cudaFree(d);
}

static void multigpu(void)
{
    int dev = -1, all[64];
    CHECK_OK(dcoll_device(&dev));
    MPI_Allgather(&dev, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            CHECK(all[a] != all[b], "ranks %d and %d both got GPU %d", a, b,
                  all[a]);
    /* Ranks 0 and 2 on NUMA node 0 get its two GPUs, 1 and 3 node 1's. */
    int want = t_rank % 2 * 2 + t_rank / 2;
    CHECK(dev == want, "GPU %d, want %d", dev, want);
    int avail = 0;
    const char *text = "";
    dcoll_backend_status("nccl", &avail, &text);
    CHECK(strstr(text, "on its NUMA node"), "the status does not say why: %s",
          text);
    cudaSetDevice(dev);
    long before = fake_nccl_calls();
    sum_ok(NULL, "the world's all_reduce");
    CHECK(fake_nccl_calls() > before, "the world's all_reduce was staged, "
          "not run by NCCL");
}

static void splitshare(void)
{
    sum_ok(NULL, "the world's first all_reduce");
    dcoll_group_t *g = t_returning_group(1);
    CHECK(fake_nccl_splits() == 1, "the group was not split from the world "
          "(%ld splits)", fake_nccl_splits());
    if (t_rank == n - 1)
        fake_nccl_break();
    float *d = filled(N, 1);
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    CHECK(st != DCOLL_SUCCESS, "the sub-group's call with a lost peer "
          "succeeded");
    cudaFree(d);
    dcoll_group_destroy(&g);
    /* The world's communicator is another failure domain. */
    sum_ok(NULL, "the world's all_reduce after a sub-group's abort");
}

struct lane {
    dcoll_group_t *g;
    int calls;
};

static void *lane(void *arg)
{
    struct lane *l = arg;
    cudaSetDevice(0);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    float *d = filled(16, 1);
    for (int i = 0; i < l->calls; i++) {
        dcoll_status_t st = dcoll_all_reduce(l->g, d, d, 16, DCOLL_FLOAT32,
                                             DCOLL_MAX, &o, NULL);
        if (st) {
            CHECK(0, "call %d: %s", i, dcoll_last_error());
            break;
        }
    }
    float h[16];
    cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
    CHECK(h[0] == 1 && h[15] == 1, "a thread's MAX: %g and %g, want 1",
          h[0], h[15]);
    cudaFree(d);
    cudaStreamDestroy(s);
    return NULL;
}

static void threads(void)
{
    sum_ok(NULL, "the world's first all_reduce");
    struct lane l[2] = {{NULL, 2000}, {NULL, 2000}};
    CHECK_OK(dcoll_new_group(&l[0].g, NULL, 0, NULL));
    CHECK_OK(dcoll_new_group(&l[1].g, NULL, 0, NULL));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, lane, &l[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        CHECK_OK(dcoll_group_destroy(&l[i].g));
}

static void *waiter(void *arg)
{
    dcoll_work_t *w = arg;
    CHECK(dcoll_work_wait(w) == DCOLL_SUCCESS, "wait: %s",
          dcoll_last_error());
    dcoll_work_free(&w);
    return NULL;
}

static void context(void)
{
    cudaSetDevice(1);
    float *d = filled(N, 1);
    dcoll_work_t *w = NULL;
    CHECK_OK(dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              &w));
    pthread_t t;
    pthread_create(&t, NULL, waiter, w);
    pthread_join(t, NULL);
    CHECK(!wrong(d, N, (float)n), "the async sum");
    CHECK(fake_cuda_contexts() == 1u << 1, "contexts 0x%x, want GPU 1's "
          "alone (a waiting thread made one on GPU 0)", fake_cuda_contexts());
    cudaFree(d);
}

static void initcount(void)
{
    CHECK(fake_nccl_inits() == 1, "dcoll_init made %ld communicators, want "
          "the world's", fake_nccl_inits());
    dcoll_group_t *all = NULL, *half = NULL, *sub = NULL;
    CHECK_OK(dcoll_new_group(&all, NULL, 0, NULL));
    CHECK_OK(dcoll_split_group(&half, NULL, t_rank % 2, t_rank, NULL));
    CHECK_OK(dcoll_split_group(&sub, all, 0, -t_rank, NULL));
    sum_ok(all, "new_group");
    sum_ok(half, "a split of the world");
    sum_ok(sub, "a split of a sub-group");
    CHECK(fake_nccl_inits() == 1 && fake_nccl_splits() == 3,
          "%ld inits and %ld splits, want 1 and 3", fake_nccl_inits(),
          fake_nccl_splits());
    dcoll_group_destroy(&sub);
    dcoll_group_destroy(&half);
    dcoll_group_destroy(&all);
}

static void *waiter_only(void *arg)
{
    return waiter(arg);
}

static void capture(void)
{
    dcoll_group_t *g2 = NULL;
    CHECK_OK(dcoll_new_group(&g2, NULL, 0, NULL));
    sum_ok(NULL, "the world's first all_reduce");
    sum_ok(g2, "the second group's first all_reduce");
    float *a = filled(N, 1), *b = filled(N, 1);
    dcoll_work_t *w = NULL;
    CHECK_OK(dcoll_all_reduce(g2, a, a, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              &w));
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    pthread_t t;
    pthread_create(&t, NULL, waiter_only, w);
    pthread_join(t, NULL);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    CHECK_OK(dcoll_all_reduce(NULL, b, b, N, DCOLL_FLOAT32, DCOLL_SUM, &o,
                              NULL));
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    CHECK(e == cudaSuccess, "the capture was invalidated by another "
          "thread's wait: %s", cudaGetErrorString(e));
    if (e == cudaSuccess) {
        cudaGraphExec_t x;
        cudaGraphInstantiate(&x, graph, 0);
        cudaGraphLaunch(x, s);
        cudaStreamSynchronize(s);
        CHECK(!wrong(b, N, (float)n), "the captured sum");
        cudaGraphExecDestroy(x);
        cudaGraphDestroy(graph);
    }
    CHECK(!wrong(a, N, (float)n), "the waited sum");
    cudaStreamDestroy(s);
    cudaFree(a);
    cudaFree(b);
    dcoll_group_destroy(&g2);
}

static void ordered(void)
{
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM | DCOLL_COLL_OPT_STREAM_ORDERED;
    o.stream = s;
    sum_ok(NULL, "the world's first all_reduce");
    float *d = filled(N, 2), *h = malloc(N * sizeof(float));
    double t0 = MPI_Wtime();
    CHECK_OK(dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, &o,
                              NULL));
    double took = MPI_Wtime() - t0;
    CHECK(took < 0.15, "a stream-ordered call waited %.3f s for NCCL", took);
    cudaMemcpyAsync(h, d, N * sizeof(float), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    CHECK(h[0] == 2.0f * (float)n && h[N - 1] == 2.0f * (float)n,
          "the stream's next copy read %g, not the sum", h[0]);
    /* A lost peer, on a group in return mode. Its communicator made and
     * idle first: the break fails the next NCCL job this process runs,
     * and a job of the group's making, run after it, took it in CI (the
     * all_reduce below then failed as it was posted). */
    dcoll_group_t *g = t_returning_group(1);
    sum_ok(g, "the group's first all_reduce");
    if (t_rank == n - 1)
        fake_nccl_break();
    /* The broken job fails as the stream runs it. A loaded machine may
     * run it before dcoll's look at NCCL's error after the enqueue, and
     * the call then fails as posted, as NCCL's can: either is right. */
    dcoll_status_t posted = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                             DCOLL_SUM, &o, NULL);
    if (posted)
        CHECK(t_rank == n - 1 && strstr(dcoll_last_error(), "remote "
                                        "process exited"),
              "the stream-ordered call: %s (%s)",
              dcoll_status_string(posted), dcoll_last_error());
    usleep(2000000);   /* the timeout, and the watchdog's look */
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, &o, NULL);
    /* The rank whose NCCL lost its peer says NCCL's error (or, where it
     * said it as posted, that the communicator is gone); the other
     * times out, as a blocking call would have. */
    if (t_rank == n - 1)
        CHECK(st != DCOLL_SUCCESS &&
                  strstr(dcoll_last_error(), posted ? "was aborted"
                                                    : "failed on the GPU"),
              "after a lost peer: %s (%s)", dcoll_status_string(st),
              dcoll_last_error());
    else
        CHECK(st == DCOLL_ERR_TIMEOUT, "after a lost peer: %s (%s)",
              dcoll_status_string(st), dcoll_last_error());
    dcoll_group_destroy(&g);
    cudaStreamDestroy(s);
    cudaFree(d);
    free(h);
}

static void multirank(void)
{
    long before = fake_nccl_calls();
    sum_ok(NULL, "the world's all_reduce, two ranks on one GPU");
    CHECK(fake_nccl_calls() > before, "ranks sharing a GPU staged although "
          "NCCL 2.30 takes them (NCCL_MULTI_RANK_GPU_ENABLE=1)");
}

static void cudaaware(void)
{
    float *d = filled(N, (float)(t_rank + 1));
    long pinned = fake_cuda_pinned_calls();
    /* The input written on the stream, not yet there: MPI must wait. */
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    float *h = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        h[i] = 7;
    cudaMemcpyAsync(d, h, N * sizeof(float), cudaMemcpyHostToDevice, s);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    if (t_rank == 0)
        CHECK_OK(dcoll_send(NULL, d, N, DCOLL_FLOAT32, 1, 0, &o, NULL));
    else if (t_rank == 1)
        CHECK_OK(dcoll_recv(NULL, d, N, DCOLL_FLOAT32, 0, 0, &o, NULL,
                            NULL));
    if (t_rank < 2)
        CHECK(!wrong(d, N, 7), "send/recv over a CUDA-aware MPI");
    int64_t counts[64];
    for (int r = 0; r < n; r++)
        counts[r] = r + 1;
    float *all = NULL;
    cudaMalloc((void **)&all, sizeof(float) * (size_t)(n * (n + 1) / 2));
    dcoll_status_t st = dcoll_all_gatherv(NULL, d, t_rank + 1, all, counts,
                                          NULL, DCOLL_FLOAT32, &o, NULL);
    CHECK(st == DCOLL_SUCCESS, "all_gatherv on GPU buffers: %s",
          dcoll_last_error());
    if (!st && n == 2)
        CHECK(!wrong(all, 3, 7), "all_gatherv's result");
    CHECK(fake_cuda_pinned_calls() == pinned, "MPI's GPU calls were staged "
          "(%ld pinned blocks)", fake_cuda_pinned_calls() - pinned);
    cudaFree(all);
    cudaStreamDestroy(s);
    free(h);
    cudaFree(d);
}

static void unwaited(void)
{
    dcoll_group_t *g = t_returning_group(1);
    sum_ok(g, "the group's first all_reduce");
    float *d = filled(N, 1);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    CHECK_OK(dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, &o,
                              NULL));
    cudaGraph_t graph = NULL;
    cudaGraphExec_t x;
    cudaStreamEndCapture(s, &graph);
    cudaGraphInstantiate(&x, graph, 0);
    if (t_rank == n - 1)
        fake_nccl_break();
    cudaGraphLaunch(x, s);
    usleep(2000000);
    dcoll_status_t st = dcoll_all_reduce(g, d, d, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, NULL, NULL);
    if (t_rank == n - 1)
        CHECK(st != DCOLL_SUCCESS &&
                  strstr(dcoll_last_error(), "NCCL reported an error"),
              "after a lost peer in a graph: %s (%s)",
              dcoll_status_string(st), dcoll_last_error());
    else
        CHECK(st == DCOLL_ERR_TIMEOUT, "after a lost peer in a graph: %s "
              "(%s)", dcoll_status_string(st), dcoll_last_error());
    dcoll_group_destroy(&g);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
    cudaFree(d);
}

static void mixed(void)
{
    dcoll_group_t *g = t_returning_group(1);
    int32_t h = t_rank + 5, *d = NULL;
    cudaMalloc((void **)&d, sizeof(h));
    cudaMemcpy(d, &h, sizeof(h), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    double t0 = MPI_Wtime();
    dcoll_status_t st = t_rank == 0
        ? dcoll_all_reduce(g, d, d, 1, DCOLL_INT32, DCOLL_MIN, NULL, NULL)
        : dcoll_all_reduce(g, &h, &h, 1, DCOLL_INT32, DCOLL_MIN, NULL, NULL);
    double took = MPI_Wtime() - t0;
    CHECK(st != DCOLL_SUCCESS, "a call with GPU buffers on one rank and "
          "host buffers on the other succeeded");
    /* In debug mode the ranks compare their calls first: named. */
    if (t_debug())
        CHECK(st == DCOLL_ERR_MISMATCH &&
                  strstr(dcoll_last_error(), "on a GPU"),
              "debug mode did not name the GPU and host buffers: %s (%s)",
              dcoll_status_string(st), dcoll_last_error());
    CHECK(took < 10, "the mixed call took %.1f s", took);
    dcoll_group_destroy(&g);
    cudaFree(d);
}

static void order(void)
{
    sum_ok(NULL, "the world's first all_reduce");
    dcoll_group_t *g[2];
    g[0] = t_returning_group(1);   /* collective: one after the other */
    g[1] = t_returning_group(1);
    float *d[2] = {filled(N, 1), filled(N, 1)};
    dcoll_work_t *w[2] = {NULL, NULL};
    dcoll_status_t st[2];
    int hinted = 0;   /* an error here named the order rule */
    double t0 = MPI_Wtime();
    for (int k = 0; k < 2; k++) {
        int i = t_rank == 0 ? k : 1 - k;
        st[i] = dcoll_all_reduce(g[i], d[i], d[i], N, DCOLL_FLOAT32,
                                 DCOLL_SUM, NULL, &w[i]);
        hinted |= st[i] && strstr(dcoll_last_error(), "one order of calls");
    }
    for (int i = 0; i < 2; i++)
        if (!st[i]) {
            st[i] = dcoll_work_wait(w[i]);
            hinted |= st[i] &&
                      strstr(dcoll_last_error(), "one order of calls");
            dcoll_work_free(&w[i]);
        }
    MPI_Allreduce(MPI_IN_PLACE, &hinted, 1, MPI_INT, MPI_MAX,
                  MPI_COMM_WORLD);
    if (t_debug())
        CHECK(hinted, "no rank's error said that the two groups' calls "
              "were started in different orders");
    CHECK(st[0] || st[1], "two groups' calls in different orders on the "
          "two ranks both succeeded");
    CHECK(MPI_Wtime() - t0 < 15, "the waits took %.1f s",
          MPI_Wtime() - t0);
    for (int i = 0; i < 2; i++) {
        dcoll_group_destroy(&g[i]);
        cudaFree(d[i]);
    }
}

static void freeorder(void)
{
    sum_ok(NULL, "the world's first all_reduce");
    dcoll_group_t *g[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        g[i] = t_returning_group(1);
        sum_ok(g[i], "a group's all_reduce");
    }
    double t0 = MPI_Wtime();
    for (int k = 0; k < 2; k++)
        dcoll_group_destroy(&g[t_rank == 0 ? k : 1 - k]);
    double took = MPI_Wtime() - t0;
    CHECK(took < 6, "freeing two groups in opposite orders took %.1f s",
          took);
}

static void ctxrestore(void)
{
    cudaSetDevice(1);
    sum_ok(NULL, "the world's first all_reduce, on GPU 1");
    float *d = filled(N, 1);
    void *mine = (void *)(uintptr_t)(65 + 0);   /* the double's own
                                                  * context on GPU 0 */
    cuCtxSetCurrent(mine);
    CHECK_OK(dcoll_all_reduce(NULL, d, d, N, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                              NULL));
    void *now_ = NULL;
    cuCtxGetCurrent(&now_);
    CHECK(now_ == mine, "the thread's own context %p became %p after a "
          "call on GPU 1", mine, now_);
    cudaSetDevice(1);
    CHECK(!wrong(d, N, (float)n), "the sum");
    cudaFree(d);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } modes[] = {{"multigpu", multigpu}, {"splitshare", splitshare},
                 {"threads", threads}, {"context", context},
                 {"initcount", initcount}, {"capture", capture},
                 {"ordered", ordered}, {"ctxrestore", ctxrestore},
                 {"multirank", multirank}, {"cudaaware", cudaaware},
                 {"unwaited", unwaited}, {"mixed", mixed},
                 {"order", order}, {"freeorder", freeorder}};
    int level, m = -1;
    for (int i = 0; argc > 1 && i < 14; i++)
        if (!strcmp(argv[1], modes[i].name))
            m = i;
    if (m < 0) {
        fprintf(stderr, "usage: test_nodes multigpu|splitshare|threads|"
                "context|initcount|capture|ordered|ctxrestore|"
                "multirank|cudaaware|unwaited|mixed|order|freeorder\n");
        return 2;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* No CUDA call before dcoll_init: it chooses each rank's GPU. */
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    if (m != 0 && m != 3 && m != 7) {
        int dev = 0;
        dcoll_device(&dev);
        cudaSetDevice(dev);
    }
    modes[m].run();
    char what[64];
    snprintf(what, sizeof(what), "nodes %s", modes[m].name);
    int rc = t_finish(what);
    dcoll_finalize();
    MPI_Finalize();
    return rc;
}
