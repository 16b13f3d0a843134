/* A byte count as people write it: "4096", "64K", "1M", "2G" (either
 * case). Header-only, so that the installed tools and the benchmark read
 * sizes as the library reads its own settings. */
#ifndef DCOLL_BASE_BYTES_H
#define DCOLL_BASE_BYTES_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* false if v is none of those, or too big for a size_t. */
static inline bool dcoll_parse_bytes(const char *v, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *v == '-')
        return false;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end || n > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)n << shift;
    return true;
}

#endif
