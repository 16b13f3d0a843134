/* Backend names: parsed case-insensitively, unknown names refused. */
#include <strings.h>
#include "internal.h"
#include "mpi_layer.h"

dcoll_status_t dcoll_backend_lookup(const char *name,
                                    const struct dcoll_backend **be,
                                    const char **canonical)
{
    if (!name)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "backend name is NULL but its mask bit is set");
    /* Host buffers are all there is until the CUDA layer lands, so auto
     * routes everything to MPI. */
    if (strcasecmp(name, "auto") == 0) {
        *be = &dcoll_mpi_backend;
        *canonical = "auto";
        return DCOLL_SUCCESS;
    }
    if (strcasecmp(name, "mpi") == 0) {
        *be = &dcoll_mpi_backend;
        *canonical = "mpi";
        return DCOLL_SUCCESS;
    }
    if (strcasecmp(name, "nccl") == 0)
        return dcoll_error(DCOLL_ERR_UNSUPPORTED,
                           "backend 'nccl' needs the CUDA layer, which this "
                           "build does not have");
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "invalid backend '%s' (known: auto, mpi, nccl)", name);
}
