/* What CUDA's own rules decide, checked on the CUDA double (cudart.c)
 * through the real plugin (issue 28):
 *   double    the double itself: a copy queued on a stream is not there
 *             before the stream is waited for, so a missing wait fails;
 *   foreign   a pointer CUDA cannot place (cudaPointerGetAttributes
 *             fails) is refused, named, never read as host memory, and
 *             its error is not left for the program's cudaGetLastError;
 *   managed   managed memory a copy on the call's stream is still
 *             writing: the collective reads it after that copy.
 * Under mpirun, 1 to 4 ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include "cudart_double.h"
#include "dcoll/dcoll.h"

enum { N = 4096 };
static int me, n, failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond) && failures++ < 20) {                                    \
            fprintf(stderr, "[rank %d] line %d: ", me, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

static void the_double(void)
{
    float *d = NULL, *back = NULL, h[N];
    for (int i = 0; i < N; i++)
        h[i] = (float)i;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc((void **)&d, sizeof(h));
    cudaMallocHost((void **)&back, sizeof(h));
    memset(back, 0, sizeof(h));
    cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaMemcpyAsync(back, d, sizeof(h), cudaMemcpyDeviceToHost, s);
    cudaEventRecord(e, s);
    /* Read at once, not waited for: the copy has not run yet. */
    CHECK(back[N - 1] == 0.0f && cudaEventQuery(e) == cudaErrorNotReady,
          "the double ran a queued copy at once: a missing wait would pass");
    cudaStreamSynchronize(s);
    CHECK(back[N - 1] == (float)(N - 1) && cudaEventQuery(e) == cudaSuccess,
          "after the wait: %g", back[N - 1]);
    cudaEventDestroy(e);
    cudaFreeHost(back);
    cudaFree(d);
    cudaStreamDestroy(s);
}

static void foreign(void)
{
    dcoll_group_t *g = NULL;
    CHECK(dcoll_new_group(&g, NULL, 0, NULL) == DCOLL_SUCCESS, "spare");
    float out[4];
    dcoll_status_t st = dcoll_all_reduce(g, fake_cuda_foreign(), out, 4,
                                         DCOLL_FLOAT32, DCOLL_SUM, NULL,
                                         NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "CUDA cannot say where sendbuf") &&
              strstr(dcoll_last_error(), "cudaPointerGetAttributes"),
          "a pointer CUDA cannot place: %s (%s)", dcoll_status_string(st),
          dcoll_last_error());
    CHECK(cudaGetLastError() == cudaSuccess, "dcoll's query left its error "
          "for the program");
    dcoll_group_destroy(&g);
}

static void managed(void)
{
    float *m = NULL, h[N];
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMallocManaged((void **)&m, sizeof(h), cudaMemAttachGlobal);
    for (int i = 0; i < N; i++)
        h[i] = (float)(me + 1);
    /* Written on the stream, as a kernel would: the call, on the same
     * stream, must read it after. */
    cudaMemcpyAsync(m, h, sizeof(h), cudaMemcpyDefault, s);
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = DCOLL_COLL_OPT_STREAM;
    o.stream = s;
    dcoll_status_t st = dcoll_all_reduce(NULL, m, m, N, DCOLL_FLOAT32,
                                         DCOLL_SUM, &o, NULL);
    CHECK(st == DCOLL_SUCCESS, "managed all_reduce: %s", dcoll_last_error());
    float want = (float)(n * (n + 1) / 2);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += m[i] != want;
    CHECK(!bad, "managed all_reduce: %d of %d wrong (m[0] = %g, want %g): "
          "read before the stream's copy", bad, N, m[0], want);
    cudaFree(m);
    cudaStreamDestroy(s);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    cudaSetDevice(0);
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "init: %s\n", dcoll_last_error());
        return 1;
    }
    the_double();
    foreign();
    managed();
    if (failures)
        printf("[rank %d] double: FAIL (%d)\n", me, failures);
    else if (me == 0)
        printf("double: ok on %d rank(s)\n", n);
    dcoll_finalize();
    MPI_Finalize();
    return failures != 0;
}
