/* Compiled by counts.sh: the vector forms' count arrays. Built as is, and
 * with -DCPLUSPLUS_STYLE as C++, it must compile; with -DBAD (an int array
 * to a 64-bit form) it must not. */
#include <stddef.h>
#include <stdint.h>
#include "dcoll/dcoll.h"

int use(dcoll_group_t *g, const void *s, void *r);
int use(dcoll_group_t *g, const void *s, void *r)
{
    int64_t c64[4] = {1, 1, 1, 1};
    int c32[4] = {1, 1, 1, 1};
    int st = 0;
    st |= dcoll_all_gatherv(g, s, 1, r, c64, NULL, DCOLL_INT32, NULL, NULL);
    st |= dcoll_all_gatherv_int(g, s, 1, r, c32, NULL, DCOLL_INT32, NULL,
                                NULL);
    st |= dcoll_reduce_scatterv(g, s, r, c64, DCOLL_INT32, DCOLL_SUM, NULL,
                                NULL);
#ifdef __cplusplus
    /* C++: the plain name takes int arrays by overload. */
    st |= dcoll_all_to_allv(g, s, c32, c32, r, c32, c32, DCOLL_INT32, NULL,
                            NULL);
#endif
#ifdef BAD
    st |= dcoll_all_to_allv(g, s, c64, NULL, r, c32, NULL, DCOLL_INT32, NULL,
                            NULL);
#endif
    return st;
}
