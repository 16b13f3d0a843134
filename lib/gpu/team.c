/* Teams of ranks that share a GPU (team.h). */
#include <stdlib.h>
#include <string.h>
#include "team.h"

int dcoll_teams_make(const unsigned char *ids, size_t idlen, int nranks,
                     struct dcoll_teams *t)
{
    memset(t, 0, sizeof(*t));
    size_t n = nranks > 0 ? (size_t)nranks : 1;
    t->of = malloc(n * sizeof(int));
    t->index = malloc(n * sizeof(int));
    t->size = calloc(n, sizeof(int));
    t->leader = malloc(n * sizeof(int));
    if (!t->of || !t->index || !t->size || !t->leader) {
        dcoll_teams_free(t);
        return -1;
    }
    t->nranks = nranks;
    /* A rank joins the team of the first earlier rank with its identity,
     * or leads a new one: n^2 compares, a few thousand ranks at most. */
    for (int r = 0; r < nranks; r++) {
        int k = -1;
        for (int q = 0; q < r && k < 0; q++)
            if (!memcmp(ids + (size_t)q * idlen, ids + (size_t)r * idlen,
                        idlen))
                k = t->of[q];
        if (k < 0) {
            k = t->n++;
            t->leader[k] = r;
        }
        t->of[r] = k;
        t->index[r] = t->size[k]++;
    }
    t->equal = true;
    for (int k = 1; k < t->n; k++)
        t->equal &= t->size[k] == t->size[0];
    return 0;
}

void dcoll_teams_free(struct dcoll_teams *t)
{
    free(t->of);
    free(t->index);
    free(t->size);
    free(t->leader);
    memset(t, 0, sizeof(*t));
}

void dcoll_teams_members(const struct dcoll_teams *t, int k, int *out)
{
    for (int r = 0; r < t->nranks; r++)
        if (t->of[r] == k)
            out[t->index[r]] = r;
}
