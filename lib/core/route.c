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
#include "diag.h"
#include "route.h"

static const struct dcoll_backend *const transports[DCOLL_TL_COUNT_] = {
    [DCOLL_TL_MPI] = &dcoll_mpi_backend,
    [DCOLL_TL_STAGED] = &dcoll_staged_backend,
    [DCOLL_TL_NCCL] = &dcoll_nccl_backend,
    [DCOLL_TL_USER] = &dcoll_user_backend,
};

/* Where c's buffers are: *device -1 for host memory. A refusal is this
 * rank's alone (out->refused). */
static dcoll_status_t where(struct dcoll_group *g, struct dcoll_coll *c,
                            int *device, struct dcoll_outcome *out)
{
    const char *fn = c->fn;
    dcoll_status_t st;
    *device = -1;
    out->refused = true;
    /* The caller said host memory: no pointer query (opts.memory). */
    if (dcoll_gpu_present() && c->kind != DCOLL_COLL_BARRIER &&
        !dcoll_opts_host(c->opts) &&
        (st = dcoll_gpu_where(fn, c, device)))
        return st;
    if (*device < 0) {
        if (g->choice == DCOLL_CHOICE_NCCL && c->kind != DCOLL_COLL_BARRIER)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: the group's backend is nccl, which takes "
                               "GPU buffers, and these are in host memory "
                               "(use the mpi or auto backend for them)", fn);
    } else if (dcoll_kind_has(c->kind, DCOLL_KF_VEC)) {
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: the vector "
                           "collectives take host buffers only for now; "
                           "this one is on GPU %d", fn, *device);
    }
    out->refused = false;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_route_gpu(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               struct dcoll_work **work,
                               struct dcoll_outcome *out)
{
    /* The recorder names the transport that ran it. */
    struct dcoll_flight *f = g->diag->flight;
    if (g->choice != DCOLL_CHOICE_MPI && dcoll_gpu_has_nccl() &&
        !dcoll_kind_has(c->kind, DCOLL_KF_PEER)) {
        dcoll_flight_tl(f, c->fid, DCOLL_TL_NCCL);
        dcoll_status_t st = dcoll_nccl_backend.coll(g, c, work, out);
        if (st != DCOLL_DECLINED)
            return st;
    }
    dcoll_flight_tl(f, c->fid, DCOLL_TL_STAGED);
    return dcoll_staged_backend.coll(g, c, work, out);
}

dcoll_status_t dcoll_route_slow(struct dcoll_group *g, struct dcoll_coll *c,
                                struct dcoll_work **work,
                                struct dcoll_outcome *out)
{
    int device;
    dcoll_status_t st;
    if (g->choice == DCOLL_CHOICE_USER) {
        dcoll_flight_tl(g->diag->flight, c->fid, DCOLL_TL_USER);
        return dcoll_user_backend.coll(g, c, work, out);
    }
    if (c->multi) {
        dcoll_flight_tl(g->diag->flight, c->fid, DCOLL_TL_NCCL);
        return dcoll_nccl_backend.coll(g, c, work, out);
    }
    if ((st = where(g, c, &device, out)))
        return st;
    if (device < 0)
        return dcoll_mpi_backend.coll(g, c, work, out);
    c->device = device;
    return dcoll_route_gpu(g, c, work, out);
}

dcoll_status_t dcoll_route_plan(struct dcoll_group *g, struct dcoll_coll *c,
                                const struct dcoll_backend **tl)
{
    struct dcoll_outcome out = {.source = -1};
    int device;
    *tl = &dcoll_user_backend;
    if (g->choice == DCOLL_CHOICE_USER)
        return DCOLL_SUCCESS;
    *tl = &dcoll_mpi_backend;
    if (g->choice <= DCOLL_CHOICE_MPI &&
        (!dcoll_gpu_present() || c->kind == DCOLL_COLL_BARRIER ||
         dcoll_opts_host(c->opts)))
        return DCOLL_SUCCESS;
    dcoll_status_t st = where(g, c, &device, &out);
    if (st || device < 0)
        return st;
    c->device = device;
    *tl = NULL;
    return DCOLL_SUCCESS;
}

bool dcoll_route_multi_nccl(const struct dcoll_group *g)
{
    return g->choice == DCOLL_CHOICE_AUTO || g->choice == DCOLL_CHOICE_NCCL;
}

void dcoll_route_group_free(struct dcoll_group *g)
{
    /* Plans first: MPI's persistent requests use the communicator. */
    dcoll_plans_group_gone(g);
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (transports[i]->group_free)
            transports[i]->group_free(g);
}
