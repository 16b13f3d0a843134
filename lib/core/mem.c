/* A group's memory for its collectives (dcoll_mem_alloc, dcoll_mem_free):
 * checked here, agreed as a numbered call of the group's, then made or
 * freed by the MPI layer's services (a shared heap on one node). */
#include <stdint.h>
#include <stdlib.h>
#include "core.h"
#include "diag.h"

#define MEM_MOST (UINT64_C(1) << 40)

/* g for fn, or a refusal no other rank waits on: a handle that is not a
 * live group's, a NON-MEMBER one, a group already unusable. */
static dcoll_status_t mem_group(dcoll_group_t *group, const char *fn,
                                struct dcoll_group **g)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st || (st = dcoll_group_resolve(group, g, fn)))
        return st;
    if ((*g)->rank == DCOLL_NON_MEMBER)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the group "
                           "handle is NON-MEMBER: this rank is not in the "
                           "group, whose members alone share its memory",
                           fn);
    if ((*g)->diag->failed)
        return dcoll_error(DCOLL_ERR_GROUP_FAILED, "%s: the group is "
                           "unusable after an earlier failure: %s", fn,
                           (*g)->diag->failed);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mem_alloc(dcoll_group_t *group, size_t bytes,
                               void **ptr)
{
    static const char fn[] = "dcoll_mem_alloc";
    struct dcoll_group *g;
    dcoll_status_t st = mem_group(group, fn, &g);
    if (ptr)
        *ptr = NULL;
    if (st)
        return st;
    /* Refused here, a member still takes part in the agreement, where
     * the others learn of it. */
    dcoll_status_t local = DCOLL_SUCCESS;
    if (!ptr)
        local = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: ptr is NULL",
                            fn);
    else if (bytes == 0 || (uint64_t)bytes > MEM_MOST)
        local = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: bytes is %zu, "
                            "not from 1 to 2^40", fn, bytes);
    if ((st = dcoll_group_agree_args(g, DCOLL_COLL_MEM_ALLOC, local, fn)))
        return st;
    uint64_t mine = bytes, *all = malloc(sizeof(uint64_t) * (size_t)g->size);
    int ok = all != NULL;
    if ((st = g->svc->agree(g, &ok)) || !ok) {
        free(all);
        return st ? st : dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory "
                                     "for the sizes of %d ranks (here or "
                                     "on another rank)", fn, g->size);
    }
    if ((st = g->svc->allgather_bytes(g, &mine, all, sizeof(mine)))) {
        free(all);
        return st;
    }
    for (int r = 0; r < g->size; r++)
        if (all[r] != mine) {
            unsigned long long theirs = (unsigned long long)all[r];
            free(all);
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: rank %d "
                               "(world %d) asked for %llu bytes and this "
                               "rank for %zu; every member passes the same "
                               "size, so nothing was allocated", fn, r,
                               dcoll_world_of(g, r), theirs, bytes);
        }
    free(all);
    return g->svc->mem_alloc(g, bytes, ptr, fn);
}

dcoll_status_t dcoll_mem_free(dcoll_group_t *group, void *ptr)
{
    static const char fn[] = "dcoll_mem_free";
    struct dcoll_group *g;
    dcoll_status_t st = mem_group(group, fn, &g);
    if (st)
        return st;
    dcoll_status_t local = DCOLL_SUCCESS;
    if (!ptr)
        local = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: ptr is NULL",
                            fn);
    else if (!g->svc->mem_owns(g, ptr))
        local = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: ptr %p is not "
                            "memory that dcoll_mem_alloc gave on this group "
                            "(or it was freed already)", fn, ptr);
    if ((st = dcoll_group_agree_args(g, DCOLL_COLL_MEM_FREE, local, fn)))
        return st;
    g->svc->mem_free(g, ptr);
    return DCOLL_SUCCESS;
}
