/* Which transport runs a call: the one place that knows the rules
 * (route.c), as UCC's score map is for its components. The public path,
 * the multi-buffer forms and group teardown ask it; nothing else chooses. */
#ifndef DCOLL_ROUTE_H
#define DCOLL_ROUTE_H

#include "gpu.h"

dcoll_status_t dcoll_route_slow(struct dcoll_group *g, struct dcoll_coll *c,
                                struct dcoll_work **work,
                                struct dcoll_outcome *out);

/* Run c on g's transport for it. Host buffers on an "auto" or "mpi" group
 * where no GPU is in use go straight to MPI, decided by two loads inlined
 * into each public collective; everything else takes the rules. */
static inline dcoll_status_t dcoll_route_run(struct dcoll_group *g,
                                             struct dcoll_coll *c,
                                             struct dcoll_work **work,
                                             struct dcoll_outcome *out)
{
    /* Host memory: no GPU here, or the caller said so (opts.memory), in
     * which case no pointer is asked about; a barrier has no buffers. */
    if (DCOLL_LIKELY(g->choice <= DCOLL_CHOICE_MPI &&
                     (!dcoll_gpu_present() ||
                      c->kind == DCOLL_COLL_BARRIER ||
                      dcoll_opts_host(c->opts))))
        return dcoll_mpi_backend.coll(g, c, work, out);
    return dcoll_route_slow(g, c, work, out);
}

/* A plan's route, found once (lib/core/plan.c): *tl the transport whose
 * coll (or plan_start) runs c, or NULL for GPU buffers, which each start
 * hands to dcoll_route_gpu (NCCL, or staged where NCCL declines it).
 * Sets c->device. A refusal is this rank's alone. */
dcoll_status_t dcoll_route_plan(struct dcoll_group *g, struct dcoll_coll *c,
                                const struct dcoll_backend **tl);
dcoll_status_t dcoll_route_gpu(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               struct dcoll_work **work,
                               struct dcoll_outcome *out);

/* A plan of g on GPU buffers was freed here: each GPU transport's
 * plan_released. */
void dcoll_route_plan_released(struct dcoll_group *g);
/* Whether g's multi-buffer calls may take NCCL cliques (lib/gpu/multi.c
 * asks the plugin and the ranks the rest). */
bool dcoll_route_multi_nccl(const struct dcoll_group *g);
/* Each transport's part in making a group (collective over m->parent;
 * g NULL on a rank that joins none), in the order of enum dcoll_tl, up
 * to the first that fails. */
dcoll_status_t dcoll_route_group_make(struct dcoll_group *g,
                                      const struct dcoll_tl_make *m);
/* Free every transport's record of g (group destroy, finalize, a group
 * not made), in the reverse order. */
void dcoll_route_group_free(struct dcoll_group *g);
/* The transport a program names (one with a status: "mpi", "nccl"),
 * case-insensitively; NULL: none. */
const struct dcoll_backend *dcoll_route_named(const char *name);
/* Their names, comma-separated, into buf (for refusals that list them). */
void dcoll_route_names(char *buf, size_t cap);
/* Whether c's buffers are on a GPU (a query each: the debug check's
 * hook, dcoll_gpu_hook). */
bool dcoll_route_on_gpu(const struct dcoll_coll *c);
/* The transports' watch of g (the watchdog's hook, dcoll_watch_hook):
 * true with why where one found its running work failed. */
bool dcoll_route_watch(struct dcoll_group *g, char *why, size_t len,
                       int *kind);
/* The i-th transport of enum dcoll_tl; NULL past the last. */
const struct dcoll_backend *dcoll_route_transport(int i);
/* A call that every transport in line for it declined (no row for its
 * kind): the refusal, naming the kind. */
dcoll_status_t dcoll_route_declined(const struct dcoll_coll *c);

#endif
