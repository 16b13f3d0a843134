/* dcoll_group_shrink: the group of a group's living ranks, after one
 * died. The survivors agree on who is alive through the job's store
 * (launch/deaths.c), where the launcher that saw the death said so (or,
 * under mpirun and srun, dcoll's keeper: launch/keeper.c), and
 * never through the group's communicator, on which a collective would
 * wait for the dead. The new communicator is made among the survivors
 * alone (MPI_Comm_create_group), then the group as new_group makes one. */
#include <stdio.h>
#include <stdlib.h>
#include "core.h"
#include "diag.h"
#include "launch.h"

dcoll_status_t dcoll_group_shrink(dcoll_group_t *group, dcoll_group_t **out)
{
    static const char fn[] = "dcoll_group_shrink";
    struct dcoll_group *g;
    dcoll_status_t st = dcoll_group_parent(out, group, fn, &g);
    if (st || !g)
        return st;
    if (!dcoll_death_of)
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: no launcher tells "
                           "this job which ranks died, so a dead rank "
                           "cannot be told from a slow one: start the job "
                           "with dcollrun --on-failure continue (or "
                           "dcoll_spawn with on_failure continue), or under "
                           "mpirun or srun set DCOLL_ON_FAILURE=continue "
                           "with the launcher's settings that keep the "
                           "survivors (docs/failures.md)", fn);
    char name[200];
    dcoll_group_name(g, name, sizeof(name));
    /* The store's keys for this shrink: the group's number, its first
     * member's world rank and how many times it has been shrunk here,
     * alike on every survivor that calls it as often. A rank's groups
     * have numbers of their own, but groups split from disjoint parents
     * may share one: they share no member, so the first tells them
     * apart. */
    int *alive = malloc(sizeof(int) * (size_t)g->size);
    if (!alive)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    char key[64];
    snprintf(key, sizeof(key), "%d.%d.%d", g->id, dcoll_world_of(g, 0),
             ++g->shrinks);
    double timeout = g->timeout > 0 ? g->timeout : 300;
    int n = 0, id = 0;
    st = dcoll_deaths_agree(fn, key, name, g->rank, g->size, g->ranks,
                            dcoll_groups_made, timeout, alive, &n, &id);
    int me = -1;
    int *ranks = st ? NULL : malloc(sizeof(int) * (size_t)n);
    if (!st && !ranks)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    for (int i = 0; !st && i < n; i++) {
        ranks[i] = dcoll_world_of(g, alive[i]);
        if (alive[i] == g->rank)
            me = i;
    }
    if (st) {
        /* Nothing was agreed: a retry is the same agreement, which a
         * late rank may still join, not the next one. */
        if (st == DCOLL_ERR_TIMEOUT)
            g->shrinks--;
        free(alive);
        return st;
    }
    if (dcoll_groups_made < id)
        dcoll_groups_made = id;
    struct dcoll_group_opts o = {
        .be = g->bentry,
        .timeout = g->timeout,
        .recoverable = g->recoverable,
    };
    st = dcoll_group_make(g, 0, me, me, n, ranks, id, alive, &o, fn, out);
    free(alive);
    return st;
}
