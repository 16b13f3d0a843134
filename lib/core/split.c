/* dcoll_split_group: one group per color out of a parent group, ranked by
 * key, as MPI_Comm_split. One agreement and one allgather of (color, key)
 * over the parent tell every member its group's ranks; the split itself
 * is MPI's, which orders the same way. */
#include <stdlib.h>
#include "core.h"
#include "diag.h"
#include "route.h"

struct member {
    int key, prank;
};

static int by_key(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->prank > y->prank) - (x->prank < y->prank);
}

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* What each parent member sends: its color and key, and how many groups
 * it has numbered, so that each new group's number agrees on its ranks. */
struct entry {
    int color, key, made;
};

dcoll_status_t dcoll_split_group(dcoll_group_t **out, dcoll_group_t *parent,
                                 int color, int key,
                                 const dcoll_group_params_t *params)
{
    static const char fn[] = "dcoll_split_group";
    struct dcoll_group *p;
    dcoll_status_t st = dcoll_group_parent(out, parent, fn, &p);
    if (st || !p)
        return st;
    if (p->diag->failed)
        return dcoll_error(DCOLL_ERR_GROUP_FAILED, "%s: the parent group is "
                           "unusable after an earlier failure: %s", fn,
                           p->diag->failed);

    /* Checked alone, then agreed, so that a refusal one member sees
     * reaches the others. */
    struct dcoll_group_opts o;
    size_t np = (size_t)p->size;
    struct entry *all = malloc(sizeof(*all) * np);
    struct member *m = malloc(sizeof(*m) * np);
    int *ranks = malloc(sizeof(int) * np);
    dcoll_status_t local = DCOLL_SUCCESS;
    if (color < DCOLL_SPLIT_NONE)
        local = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: color %d is "
                            "negative (DCOLL_SPLIT_NONE, -1, joins no "
                            "group)", fn, color);
    else if (!(local = dcoll_group_params_read(params, fn, &o)) &&
             (!all || !m || !ranks))
        local = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                            "colors of %d ranks", fn, p->size);
    if ((st = dcoll_group_agree_args(p, DCOLL_COLL_SPLIT_GROUP, local, fn))) {
        free(all);
        free(m);
        free(ranks);
        return st;
    }
    struct entry mine = {color, key, dcoll_groups_made};
    if ((st = p->svc->allgather_bytes(p, &mine, all, sizeof(mine)))) {
        free(all);
        free(m);
        free(ranks);
        return st;
    }
    /* Each color's group its own number (made + 1 + the color's place
     * among the colors given, smallest first): the shrink's keys in the
     * store and the profile's rows are told apart by it. The colors go
     * in ranks meanwhile, which holds the group's ranks below. */
    int made = 0, n = 0, given = 0, colors = 0, below = 0;
    for (int r = 0; r < p->size; r++) {
        made = all[r].made > made ? all[r].made : made;
        n += color >= 0 && all[r].color == color;
        if (all[r].color >= 0)
            ranks[given++] = all[r].color;
    }
    qsort(ranks, (size_t)given, sizeof(int), by_int);
    for (int i = 0; i < given; i++)
        if (i == 0 || ranks[i] != ranks[i - 1]) {
            colors++;
            below += ranks[i] < color;
        }
    int id = made + 1 + below;
    dcoll_groups_made = made + colors;

    for (int r = 0, k = 0; r < p->size; r++)
        if (color >= 0 && all[r].color == color)
            m[k++] = (struct member){all[r].key, r};
    free(all);
    qsort(m, (size_t)n, sizeof(*m), by_key);
    int me = -1;
    for (int i = 0; i < n; i++) {
        ranks[i] = p->ranks ? p->ranks[m[i].prank] : m[i].prank;
        if (m[i].prank == p->rank)
            me = i;
    }
    free(m);
    return dcoll_group_make(p, color, key, me, n, ranks, id, NULL, &o, fn,
                            out);
}
