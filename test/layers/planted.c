/* A call up, planted for the layer check's self-test: built into a copy
 * of the diag layer, it calls the core's group lookup, which diag may
 * never do. Never linked into anything. */
#include "tables.h"

dcoll_status_t dcoll_group_resolve(struct dcoll_group *in,
                                   struct dcoll_group **out, const char *fn);
dcoll_status_t dcoll_planted_up(void);

dcoll_status_t dcoll_planted_up(void)
{
    struct dcoll_group *g;
    return dcoll_group_resolve(NULL, &g, "planted");
}
