/* The route: from the group's choice (g->choice, set by the registry) and
 * where a call's buffers live, the transport that runs it. A new
 * transport is its table in its own layer, an entry in enum dcoll_tl
 * (tables.h), whose place is its place in line, and a line in
 * transports[] below; the rules read the rest from its table.
 *
 *   a program's backend        every buffer, as it is
 *   host buffers               MPI; refused on an "nccl" group, but for
 *                              a barrier, which has none
 *   GPU buffers                each transport that takes them, in line
 *                              (NCCL, then IPC where every rank is on
 *                              one GPU, then staged, which takes every
 *                              kind of one layout, strided or not, and
 *                              the neighbourhood kinds), but on an "mpi"
 *                              group only those that move data over MPI
 *                              (staged); a transport without a row for
 *                              the kind (NCCL: send/recv, whose
 *                              communicator a peer call must not make)
 *                              or that declines the call on every rank
 *                              alike hands it to the next
 *   multi-buffer on a clique   NCCL (core/multi.c asked for the clique)
 *   GPU buffers, a CUDA-aware  send, recv and the kinds no GPU transport
 *   MPI                        has a row for (the vector ones): MPI,
 *                              with the device pointers, once the call's
 *                              stream is done; not on an "nccl" group
 *
 * Where none in line is left, the call is refused, naming the kind. */
#include <stdio.h>
#include <strings.h>
#include "core.h"
#include "kinds.h"
#include "diag.h"
#include "route.h"

static const struct dcoll_backend *const transports[DCOLL_TL_COUNT_] = {
    [DCOLL_TL_MPI] = &dcoll_mpi_backend,
    [DCOLL_TL_NCCL] = &dcoll_nccl_backend,
    [DCOLL_TL_IPC] = &dcoll_ipc_backend,
    [DCOLL_TL_STAGED] = &dcoll_staged_backend,
    [DCOLL_TL_USER] = &dcoll_user_backend,
};

/* Whether a transport in line for GPU buffers may run c on g. */
static bool gpu_takes(const struct dcoll_backend *be,
                      const struct dcoll_group *g, enum dcoll_coll_kind k)
{
    return (be->memory & DCOLL_TL_GPU) && be->runs(k) &&
           (g->choice != DCOLL_CHOICE_MPI || be->over_mpi);
}

/* Whether any transport in line for GPU buffers has a row for kind:
 * else a call of it on them is this rank's refusal, at once. */
static bool gpu_line_runs(const struct dcoll_group *g,
                          enum dcoll_coll_kind kind)
{
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (gpu_takes(transports[i], g, kind))
            return true;
    return false;
}

/* Whether MPI itself moves c's GPU buffers: a CUDA-aware MPI, for the
 * kinds NCCL cannot take (a peer call, whose communicator a peer must
 * not make; a vector kind), which would stage through host memory
 * otherwise. */
static bool mpi_moves_gpu(const struct dcoll_group *g,
                          enum dcoll_coll_kind kind)
{
    /* MPI's answer first: it is cached, and most MPIs say no. */
    return g->choice != DCOLL_CHOICE_NCCL && g->svc->cuda_aware() &&
           (dcoll_kind_has(kind, DCOLL_KF_PEER) || !gpu_line_runs(g, kind));
}

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
        (st = dcoll_gpu_where(g, fn, c, device)))
        return st;
    if (*device < 0) {
        if (g->choice == DCOLL_CHOICE_NCCL && c->kind != DCOLL_COLL_BARRIER)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: the group's backend is nccl, which takes "
                               "GPU buffers, and these are in host memory "
                               "(use the mpi or auto backend for them)", fn);
    } else if (!gpu_line_runs(g, c->kind) && !mpi_moves_gpu(g, c->kind)) {
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: no transport runs "
                           "%s on GPU buffers yet (the vector collectives "
                           "take host buffers only for now); this one is on "
                           "GPU %d", fn, dcoll_kind_name(c->kind), *device);
    }
    out->refused = false;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_route_gpu(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               struct dcoll_work **work,
                               struct dcoll_outcome *out)
{
    for (int i = 0; i < DCOLL_TL_COUNT_; i++) {
        const struct dcoll_backend *be = transports[i];
        if (!gpu_takes(be, g, c->kind))
            continue;
        /* The recorder names the transport that ran it. */
        dcoll_flight_tl(g->diag->flight, c->fid, be);
        dcoll_status_t st = be->coll(g, c, work, out);
        if (st != DCOLL_DECLINED)
            return st;
    }
    return DCOLL_DECLINED;
}

void dcoll_route_plan_released(struct dcoll_group *g)
{
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (transports[i] && transports[i]->memory == DCOLL_TL_GPU &&
            transports[i]->plan_released)
            transports[i]->plan_released(g);
}

dcoll_status_t dcoll_route_slow(struct dcoll_group *g, struct dcoll_coll *c,
                                struct dcoll_work **work,
                                struct dcoll_outcome *out)
{
    int device;
    dcoll_status_t st;
    if (g->choice == DCOLL_CHOICE_USER) {
        dcoll_flight_tl(g->diag->flight, c->fid, &dcoll_user_backend);
        return dcoll_user_backend.coll(g, c, work, out);
    }
    if (c->multi) {
        dcoll_flight_tl(g->diag->flight, c->fid, &dcoll_nccl_backend);
        return dcoll_nccl_backend.coll(g, c, work, out);
    }
    if ((st = where(g, c, &device, out)))
        return st;
    if (device < 0)
        return dcoll_mpi_backend.coll(g, c, work, out);
    c->device = device;
    if (mpi_moves_gpu(g, c->kind)) {
        /* MPI knows no stream: it reads once the stream's earlier work
         * (what wrote the buffers) is done. */
        if ((st = dcoll_gpu_ready(c)))
            return st;
        dcoll_flight_tl(g->diag->flight, c->fid, &dcoll_mpi_backend);
        return dcoll_mpi_backend.coll(g, c, work, out);
    }
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
    /* A plan's starts go to the GPU transports (a CUDA-aware MPI takes
     * only the calls themselves, after their stream). */
    if (!gpu_line_runs(g, c->kind))
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: no transport runs "
                           "a plan of %s on GPU buffers yet; the call "
                           "itself runs (this one is on GPU %d)", c->fn,
                           dcoll_kind_name(c->kind), device);
    c->device = device;
    *tl = NULL;
    return DCOLL_SUCCESS;
}

bool dcoll_route_multi_nccl(const struct dcoll_group *g)
{
    return g->choice == DCOLL_CHOICE_AUTO || g->choice == DCOLL_CHOICE_NCCL;
}

dcoll_status_t dcoll_route_group_make(struct dcoll_group *g,
                                      const struct dcoll_tl_make *m)
{
    dcoll_status_t st = DCOLL_SUCCESS;
    for (int i = 0; i < DCOLL_TL_COUNT_ && !st; i++)
        if (transports[i]->group_make)
            st = transports[i]->group_make(g, m);
    return st;
}

void dcoll_route_group_free(struct dcoll_group *g)
{
    /* Plans first: MPI's persistent requests use the communicator. */
    dcoll_plans_group_gone(g);
    dcoll_nbhs_group_gone(g);
    for (int i = DCOLL_TL_COUNT_ - 1; i >= 0; i--)
        if (transports[i]->group_free)
            transports[i]->group_free(g);
}

const struct dcoll_backend *dcoll_route_named(const char *name)
{
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (transports[i]->status && !strcasecmp(transports[i]->name, name))
            return transports[i];
    return NULL;
}

void dcoll_route_names(char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < DCOLL_TL_COUNT_ && at < cap; i++)
        if (transports[i]->status)
            at += (size_t)snprintf(buf + at, cap - at, "%s%s",
                                   at ? ", " : "", transports[i]->name);
}

bool dcoll_route_on_gpu(const struct dcoll_coll *c)
{
    return dcoll_gpu_present() && c->kind != DCOLL_COLL_BARRIER &&
           !dcoll_opts_host(c->opts) &&
           (dcoll_on_device(c->sendbuf) || dcoll_on_device(c->recvbuf));
}

bool dcoll_route_watch(struct dcoll_group *g, char *why, size_t len,
                       int *kind)
{
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (transports[i]->watch &&
            transports[i]->watch(g, why, len, kind))
            return true;
    return false;
}

const struct dcoll_backend *dcoll_route_transport(int i)
{
    return i >= 0 && i < DCOLL_TL_COUNT_ ? transports[i] : NULL;
}

dcoll_status_t dcoll_route_declined(const struct dcoll_coll *c)
{
    return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: no transport of this "
                       "build runs %s on these buffers", c->fn,
                       dcoll_kind_name(c->kind));
}
