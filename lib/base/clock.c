/* The one clock every deadline is measured on, and the variables that set
 * deadlines. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base.h"

double dcoll_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double dcoll_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double coarse_read(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__) || defined(__i386__)
/* The coarse clock moves once a kernel tick (1 to 4 ms), yet each call
 * stamps its start and end with it: dcoll_coarse_now (base.h) reads it
 * here only once 2^20 TSC cycles have passed since the last read. The
 * two values are updated apart, so a reader may pair one read's TSC with
 * another's time: both are from the last millisecond. A TSC that is not
 * in step across cores only makes the difference large: then the clock
 * is read. */
uint64_t dcoll_clock_tsc;
uint64_t dcoll_clock_bits;   /* the last read's double */

double dcoll_coarse_read(uint64_t tsc)
{
    double now = coarse_read();
    uint64_t bits;
    memcpy(&bits, &now, sizeof(bits));
    __atomic_store_n(&dcoll_clock_bits, bits, __ATOMIC_RELAXED);
    __atomic_store_n(&dcoll_clock_tsc, tsc, __ATOMIC_RELAXED);
    return now;
}
#else
double dcoll_coarse_now(void)
{
    return coarse_read();
}
#endif

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
