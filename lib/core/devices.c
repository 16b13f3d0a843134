/* The public questions about GPUs and backends, answered from what the
 * GPU layer's loader found. */
#include <stdio.h>
#include <strings.h>
#include "core.h"
#include "gpu.h"

dcoll_status_t dcoll_device(int *out)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_device: device is NULL");
    *out = dcoll_gpu_device();
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_backend_status(const char *name, int *available,
                                    const char **text)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!name || !available)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_backend_status: %s is NULL",
                           !name ? "name" : "available");
    if (strcasecmp(name, "mpi") == 0) {
        *available = 1;
        /* What a plan's starts call depends on the MPI (and on
         * DCOLL_PLAN_CALLS), which the status says. */
        static char why[2400];
        snprintf(why, sizeof(why), "MPI: host buffers; plans start %s; %s",
                 dcoll_mpi_plan_rule(), dcoll_mpi_tuning_text());
        if (text)
            *text = why;
        return DCOLL_SUCCESS;
    }
    if (strcasecmp(name, "nccl") == 0) {
        /* A plugin built with NCCL, and a GPU to run it on. */
        *available = dcoll_gpu_has_nccl();
        if (text)
            *text = dcoll_gpu_detail();
        return DCOLL_SUCCESS;
    }
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "dcoll_backend_status: unknown backend '%s' (known: "
                       "mpi, nccl)", name);
}
