/* The one clock every deadline is measured on, and the variables that set
 * deadlines. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "base.h"

double dcoll_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double dcoll_coarse_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

dcoll_status_t dcoll_env_seconds(const char *fn, const char *name,
                                 double dflt, double *out)
{
    const char *v = getenv(name);
    *out = dflt;
    if (!v || !*v)
        return DCOLL_SUCCESS;
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    if (errno || *end || !(t > 0) || t > 1e9)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s='%s' is not a "
                           "positive number of seconds (up to 1e9)", fn, name,
                           v);
    *out = t;
    return DCOLL_SUCCESS;
}
