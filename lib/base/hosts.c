/* Each world rank's host name, so that reports of missing ranks can say
 * which node they were on. The core fills it at dcoll_init (one gather of
 * the names) and empties it at dcoll_finalize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base.h"

static char (*hosts)[DCOLL_HOST_LEN];
static int nhosts;

void dcoll_hosts_set(char (*names)[DCOLL_HOST_LEN], int n)
{
    free(hosts);
    hosts = names;
    nhosts = names ? n : 0;
}

const char *dcoll_host_of(int world_rank)
{
    if (world_rank < 0 || world_rank >= nhosts)
        return NULL;
    return hosts[world_rank];
}

int dcoll_hosts_sharing(int world_rank)
{
    const char *mine = dcoll_host_of(world_rank);
    int n = 0;
    for (int i = 0; mine && i < nhosts; i++)
        n += !strcmp(hosts[i], mine);
    return n;
}

void dcoll_host_name(char *out, size_t cap)
{
    if (!cap)
        return;
    out[cap - 1] = '\0';
    if (gethostname(out, cap - 1))
        snprintf(out, cap, "unknown");
}
