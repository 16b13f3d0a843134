/* The public questions about GPUs and backends, answered from the
 * transports' tables and what the GPU layer's loader found. */
#include "core.h"
#include "route.h"

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
    const struct dcoll_backend *be = dcoll_route_named(name);
    if (be) {
        const char *why = "";
        *available = be->status(&why);
        if (text)
            *text = why;
        return DCOLL_SUCCESS;
    }
    char known[128];
    dcoll_route_names(known, sizeof(known));
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "dcoll_backend_status: unknown backend '%s' (known: "
                       "%s)", name, known);
}
