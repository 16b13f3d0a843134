/* How reports name a group: its world ranks, and "the world" or "group N".
 * Below every layer that prints a report (diag, core), so none of them
 * calls up for it. */
#include <stdio.h>
#include "tables.h"

/* Print a group's world ranks into buf, shortened for big groups. */
const char *dcoll_group_ranks_text(const struct dcoll_group *g, char *buf,
                                   size_t len)
{
    if (!g->ranks) {
        snprintf(buf, len, "the world, ranks 0..%d", g->size - 1);
        return buf;
    }
    size_t off = (size_t)snprintf(buf, len, "ranks {");
    for (int i = 0; i < g->size && off < len; i++) {
        if (i == 8 && g->size > 9) {
            off += (size_t)snprintf(buf + off, len - off, ", ... %d more",
                                    g->size - 8);
            break;
        }
        off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "",
                                g->ranks[i]);
    }
    if (off < len)
        snprintf(buf + off, len - off, "}");
    return buf;
}

const char *dcoll_group_name(const struct dcoll_group *g, char *buf,
                             size_t len)
{
    char ranks[160];
    if (!g->ranks)
        snprintf(buf, len, "the world (%d ranks)", g->size);
    else
        snprintf(buf, len, "group %d (world %s)", g->id,
                 dcoll_group_ranks_text(g, ranks, sizeof(ranks)));
    return buf;
}
