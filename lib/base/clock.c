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

static double coarse_read(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__) || defined(__i386__)
#include <stdatomic.h>
#include <stdint.h>
#include <x86intrin.h>
/* The coarse clock moves once a kernel tick (1 to 4 ms), yet each call
 * stamps its start and end with it: while fewer than 2^20 TSC cycles
 * (0.25 to 1 ms) have passed since the last read, that read stands. The
 * two values are updated apart, so a reader may pair one read's TSC with
 * another's time: both are from the last millisecond. A TSC that is not
 * in step across cores only makes the difference large: then the clock
 * is read. */
static _Atomic uint64_t last_tsc;
static _Atomic double last_coarse;

double dcoll_coarse_now(void)
{
    uint64_t t = __rdtsc();
    uint64_t at = atomic_load_explicit(&last_tsc, memory_order_relaxed);
    if (t - at < (UINT64_C(1) << 20))
        return atomic_load_explicit(&last_coarse, memory_order_relaxed);
    double now = coarse_read();
    atomic_store_explicit(&last_coarse, now, memory_order_relaxed);
    atomic_store_explicit(&last_tsc, t, memory_order_relaxed);
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
