/* The CUDA plugin loader: what dcoll_backend_status says with the plugin,
 * with a path that does not exist, with a shared object that is not a
 * plugin, and with plugins of other builds. argv[1] is the plugin's path
 * (or "-" where it was not built), argv[2] some other shared object,
 * argv[3] a plugin of this version built with another build id, argv[4]
 * one of dcoll 1.11's versioned plugin ABI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "dcoll/dcoll.h"

int t_rank, t_failures;

static const char *nccl_text(const char *plugin, int *available)
{
    static char copy[1024];
    const char *text = NULL;
    if (plugin)
        setenv("DCOLL_CUDA_PLUGIN", plugin, 1);
    else
        unsetenv("DCOLL_CUDA_PLUGIN");
    if (dcoll_init(NULL) != DCOLL_SUCCESS ||
        dcoll_backend_status("nccl", available, &text) != DCOLL_SUCCESS) {
        fprintf(stderr, "init/status: %s\n", dcoll_last_error());
        exit(1);
    }
    snprintf(copy, sizeof(copy), "%s", text);
    dcoll_finalize();
    return copy;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    /* MPI outlives each dcoll_init/finalize pair below. */
    MPI_Init(&argc, &argv);
    int avail = -1;
    const char *t;
    if (strcmp(argv[1], "-") != 0) {
        t = nccl_text(argv[1], &avail);
        printf("with the plugin: %s\n", t);
        CHECK(strstr(t, "plugin ") && strstr(t, "CUDA runtime"),
               "plugin not reported: %s", t);
        CHECK(strstr(t, "GPU(s):") || strstr(t, "no GPU: "),
               "GPUs not reported: %s", t);
        /* Available exactly when the plugin sees a GPU. */
        CHECK(avail == (strstr(t, "GPU(s):") != NULL),
               "nccl available = %d: %s", avail, t);
    }
    t = nccl_text("/nonexistent/libdcoll_cuda.so", &avail);
    printf("missing: %s\n", t);
    CHECK(avail == 0 && strstr(t, "no CUDA plugin loaded") &&
           strstr(t, "/nonexistent/libdcoll_cuda.so"), "missing: %s", t);
    t = nccl_text(argv[2], &avail);
    printf("not a plugin: %s\n", t);
    CHECK(avail == 0 && strstr(t, "not a dcoll CUDA plugin"),
           "not a plugin: %s", t);
    /* Plugins of other builds: refused, naming both builds and the file
     * (and said on stderr, which the line's checks cannot see). */
    t = nccl_text(argv[3], &avail);
    printf("another build: %s\n", t);
    CHECK(avail == 0 && strstr(t, argv[3]) &&
          strstr(t, "the CUDA plugin of another build") &&
          strstr(t, "build 0therb0ild000000") &&
          strstr(t, "not this library's (dcoll ") &&
          strstr(t, "install libdcoll and its plugin from one build"),
          "another build: %s", t);
    t = nccl_text(argv[4], &avail);
    printf("1.11's ABI: %s\n", t);
    CHECK(avail == 0 && strstr(t, argv[4]) &&
          strstr(t, "dcoll 1.11 or older, entry point dcoll_cuda_plugin_v13"),
          "1.11's ABI: %s", t);

    /* Status queries: mpi is always there; bad names and NULLs refused. */
    dcoll_init(NULL);
    int device = -2;
    CHECK(dcoll_device(&device) == DCOLL_SUCCESS && device == -1,
           "no GPU, yet dcoll_device = %d", device);
    CHECK(dcoll_device(NULL) == DCOLL_ERR_INVALID_ARGUMENT &&
           strstr(dcoll_last_error(), "device is NULL"), "dcoll_device(NULL)");
    CHECK(dcoll_backend_status("MPI", &avail, NULL) == DCOLL_SUCCESS &&
           avail == 1, "mpi not available");
    CHECK(dcoll_backend_status("gloo", &avail, &t) ==
           DCOLL_ERR_INVALID_ARGUMENT &&
           strstr(dcoll_last_error(), "'gloo'"), "gloo: %s",
           dcoll_last_error());
    CHECK(dcoll_backend_status("nccl", NULL, &t) ==
           DCOLL_ERR_INVALID_ARGUMENT, "NULL available accepted");
    dcoll_finalize();
    CHECK(dcoll_backend_status("mpi", &avail, &t) == DCOLL_ERR_FINALIZED,
           "status after finalize");
    printf("plugin: %d failure(s)\n", t_failures);
    MPI_Finalize();
    return T_EXIT;
}
