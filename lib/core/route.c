/* The route: from the group's choice (g->choice, set by the registry) and
 * where a call's buffers live, the transport that runs it. A new
 * transport is an entry in enum dcoll_tl (tables.h), its table in its own
 * layer, and its place in the rules below.
 *
 *   a program's backend        every buffer, as it is
 *   host buffers               MPI; refused on an "nccl" group, but for
 *                              a barrier, which has none
 *   GPU buffers, collective    NCCL (not on an "mpi" group), which may
 *                              decline the call on every rank alike;
 *                              then the staged path, which takes all
 *   GPU buffers, send/recv     staged: NCCL's communicator is collective
 *                              to make, a peer call must not make it
 *   multi-buffer on a clique   NCCL (core/multi.c asked for the clique) */
#include "core.h"
#include "kinds.h"
#include "route.h"

static const struct dcoll_backend *const transports[DCOLL_TL_COUNT_] = {
    [DCOLL_TL_MPI] = &dcoll_mpi_backend,
    [DCOLL_TL_STAGED] = &dcoll_staged_backend,
    [DCOLL_TL_NCCL] = &dcoll_nccl_backend,
    [DCOLL_TL_USER] = &dcoll_user_backend,
};

dcoll_status_t dcoll_route_slow(struct dcoll_group *g, struct dcoll_coll *c,
                                struct dcoll_work **work,
                                struct dcoll_outcome *out)
{
    const char *fn = c->fn;
    dcoll_status_t st;
    int device = -1;
    if (g->choice == DCOLL_CHOICE_USER)
        return dcoll_user_backend.coll(g, c, work, out);
    if (c->multi)
        return dcoll_nccl_backend.coll(g, c, work, out);
    /* The refusals below are this rank's alone (where its buffers are):
     * out->refused, so that the core treats them as its own checks'. */
    out->refused = true;
    /* The caller said host memory: no pointer query (opts.memory). */
    if (dcoll_gpu_present() && c->kind != DCOLL_COLL_BARRIER &&
        !dcoll_opts_host(c->opts) &&
        (st = dcoll_gpu_where(fn, c, &device)))
        return st;
    if (device < 0) {
        if (g->choice == DCOLL_CHOICE_NCCL && c->kind != DCOLL_COLL_BARRIER)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: the group's backend is nccl, which takes "
                               "GPU buffers, and these are in host memory "
                               "(use the mpi or auto backend for them)", fn);
        out->refused = false;
        return dcoll_mpi_backend.coll(g, c, work, out);
    }
    if (dcoll_kind_has(c->kind, DCOLL_KF_VEC))
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: the vector "
                           "collectives take host buffers only for now; "
                           "this one is on GPU %d", fn, device);
    out->refused = false;
    c->device = device;
    if (g->choice != DCOLL_CHOICE_MPI && dcoll_gpu_has_nccl() &&
        !dcoll_kind_has(c->kind, DCOLL_KF_PEER)) {
        st = dcoll_nccl_backend.coll(g, c, work, out);
        if (st != DCOLL_DECLINED)
            return st;
    }
    return dcoll_staged_backend.coll(g, c, work, out);
}

bool dcoll_route_multi_nccl(const struct dcoll_group *g)
{
    return g->choice == DCOLL_CHOICE_AUTO || g->choice == DCOLL_CHOICE_NCCL;
}

void dcoll_route_group_free(struct dcoll_group *g)
{
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (transports[i]->group_free)
            transports[i]->group_free(g);
}
