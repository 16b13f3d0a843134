/* Inside the core: library state, groups, the public path's dispatch and
 * the backend registry. Nothing outside lib/core/ includes this. */
#ifndef DCOLL_CORE_H
#define DCOLL_CORE_H

#include <stdatomic.h>
#include "tables.h"

/* work.c: works made and not yet finished, every group together. */
extern atomic_int dcoll_work_inflight;
/* work.c: the most unfinished works a group keeps (DCOLL_MAX_WORKS);
 * an async call past it is refused (dcoll_works_full). */
#define DCOLL_WORKS_DEFAULT 65536
extern int dcoll_works_most;
dcoll_status_t dcoll_works_full(const struct dcoll_group *g, const char *fn);
/* The core's side of a new work: counted in flight until it ends. */
static inline void dcoll_work_track(struct dcoll_work *w)
{
    w->group->inflight++;
    atomic_fetch_add_explicit(&dcoll_work_inflight, 1, memory_order_relaxed);
}

/* state.c: library life cycle. */
/* FORKED: a child fork() made of a ready process; it shares none of its
 * parent's groups, and every call is refused. */
enum dcoll_state { DCOLL_STATE_NEW, DCOLL_STATE_READY, DCOLL_STATE_DONE,
                   DCOLL_STATE_FORKED };
extern enum dcoll_state dcoll_state;
extern struct dcoll_group dcoll_world;
extern struct dcoll_group dcoll_non_member;
dcoll_status_t dcoll_check_ready_slow(void);
static inline dcoll_status_t dcoll_check_ready(void)
{
    if (DCOLL_LIKELY(dcoll_state == DCOLL_STATE_READY))
        return DCOLL_SUCCESS;
    return dcoll_check_ready_slow();
}

/* group.c */
extern int dcoll_groups_made;  /* new_group calls so far: the next id */
dcoll_status_t dcoll_group_resolve(struct dcoll_group *in,
                                   struct dcoll_group **out, const char *fn);
dcoll_status_t dcoll_group_root_slow(const struct dcoll_group *g,
                                     int global, const char *fn,
                                     const char *what, int *group_rank);
/* Group rank of world rank global, or an error that names fn and what. */
static inline dcoll_status_t dcoll_group_root(const struct dcoll_group *g,
                                              int global, const char *fn,
                                              const char *what,
                                              int *group_rank)
{
    if (!g->ranks && global >= 0 && global < g->size) {
        *group_rank = global; /* the world: ranks are the identity */
        return DCOLL_SUCCESS;
    }
    return dcoll_group_root_slow(g, global, fn, what, group_rank);
}
void dcoll_groups_free_all(void);
/* What a group's params come to (new_group, split_group). */
struct dcoll_group_opts {
    const struct dcoll_backend_entry *be;
    double timeout;
    bool recoverable;
};
dcoll_status_t dcoll_group_params_read(const dcoll_group_params_t *params,
                                       const char *fn,
                                       struct dcoll_group_opts *o);
/* Carry a refusal of arguments that one rank saw alone (local) to every
 * rank of g, which would otherwise wait in the next collective
 * (collective over g): each returns a status, the refusing rank its own
 * message, the others that another rank refused. It is g's call of
 * kind (DCOLL_COLL_NEW_GROUP, SPLIT_GROUP, MEM_ALLOC or MEM_FREE),
 * numbered and held to g's deadline like a collective. */
dcoll_status_t dcoll_group_agree_args(struct dcoll_group *g, int kind,
                                      dcoll_status_t local, const char *fn);
/* The head of making groups from parent (split, shrink): dcoll ready,
 * out given (and cleared), parent live. *p NULL with success: this
 * process is not in parent, so in none of its parts, and *out is the
 * NON-MEMBER handle, as for a collective. */
dcoll_status_t dcoll_group_parent(dcoll_group_t **out, dcoll_group_t *parent,
                                  const char *fn, struct dcoll_group **p);
/* backend.c: the route's choice of a group made with o. */
enum dcoll_choice dcoll_opts_choice(const struct dcoll_group_opts *o);
/* Make the group of parent's ranks of color (collective over parent:
 * every rank calls it, color < 0 on those that join none, which get the
 * NON-MEMBER handle): each transport's part (the route's
 * dcoll_route_group_make), then the group's diagnostics, agreement and
 * backend. A member is group rank me of n; ranks (group rank -> world
 * rank, any order) becomes the group's, or is freed. keep (shrink):
 * the parent ranks of the group, ascending, which alone take part. */
dcoll_status_t dcoll_group_make(struct dcoll_group *parent, int color,
                                int key, int me, int n, int *ranks, int id,
                                const int *keep,
                                const struct dcoll_group_opts *o,
                                const char *fn, struct dcoll_group **out);
/* Free a group's coalescing buffer (group destroy, finalize). */
void dcoll_group_stage_free(struct dcoll_group *g);

/* vector.c: a vector kind's counts, displacements and buffers, on a
 * member; sets c->in_place. */
dcoll_status_t dcoll_vec_check(const char *fn, const struct dcoll_group *g,
                               struct dcoll_coll *c);
/* One array of n counts (name) and displacements (dname; displs NULL:
 * packed): each in range; *extent = elements they span. */
dcoll_status_t dcoll_vec_array(const char *fn, const char *name,
                               const char *dname, const int64_t *counts,
                               const int64_t *displs, int n,
                               int64_t *extent);
/* Buffer p (name: sendbuf or recvbuf) of c is given where elems > 0 of
 * it are read or written, and holds them where c's opts bound it. */
dcoll_status_t dcoll_vec_need(const char *fn, const struct dcoll_coll *c,
                              const char *name, const void *p, int64_t elems);
/* collectives.c: a binding's refusal in opts (DCOLL_COLL_OPT_REFUSAL),
 * for the paths whose own checks run before coll_run's: they read
 * nothing more once it is set. */
dcoll_status_t dcoll_opts_refused(const char *fn,
                                  const dcoll_coll_opts_t *opts);
/* collectives.c: elems of c's buffer name (send: sendbuf, or the one
 * buffer) within the bytes c's opts say it holds (DCOLL_COLL_OPT_BOUNDS;
 * without the bit, nothing to check). */
dcoll_status_t dcoll_bound(const char *fn, const struct dcoll_coll *c,
                           bool send, const char *name, int64_t elems);

/* layout.c: layout l (name, or name[at] where at >= 0) in range; *elems
 * the elements it picks, *extent the elements it spans from the buffer's
 * start (0 where it picks none). A layout, and a call's layouts
 * together, reach at most DCOLL_LAYOUT_MOST elements, so that no byte
 * count of 16-byte elements overflows. */
#define DCOLL_LAYOUT_MOST (INT64_C(1) << 60)
dcoll_status_t dcoll_layout_check(const char *fn, const char *name, int at,
                                  const dcoll_layout_t *l, int64_t *elems,
                                  int64_t *extent);

/* neighbor.c: a neighbourhood kind's counts and buffers on a member,
 * against c->nbh's lists. */
dcoll_status_t dcoll_nbh_check(const char *fn, const struct dcoll_group *g,
                               struct dcoll_coll *c);
/* A plan's reference to a neighbourhood, taken and given back: the last
 * one frees it. */
void dcoll_nbh_hold(struct dcoll_nbh *n);
void dcoll_nbh_drop(struct dcoll_nbh *n);
/* Every neighbourhood of g loses its communicator (its group is going;
 * after its plans, whose requests use it). */
void dcoll_nbhs_group_gone(struct dcoll_group *g);

/* collectives.c: validate c and run it on group (the public path). */
dcoll_status_t dcoll_coll_run(dcoll_group_t *group, struct dcoll_coll *c,
                              int root, dcoll_work_t **work, int *source);
/* The public path's checks of c for a plan (lib/core/plan.c): resolves
 * group into *g (NULL where it is no live group) and checks c on it as a
 * call with a work would be; *member false on a NON-MEMBER handle. */
dcoll_status_t dcoll_coll_plan_check(dcoll_group_t *group,
                                     struct dcoll_coll *c, int root,
                                     struct dcoll_group **g, bool *member);
/* plan.c: make a plan of c (its fn set) on group; pre: a refusal this
 * rank's own checks made before (message set), or 0. Collective over a
 * member's group for the counted kinds. */
dcoll_status_t dcoll_plan_make(dcoll_group_t *group, struct dcoll_coll *c,
                               int root, dcoll_status_t pre,
                               struct dcoll_plan **plan);
/* Every plan of g can only be freed from now on (its group is going). */
void dcoll_plans_group_gone(struct dcoll_group *g);

/* A call of kind on group that a form's own checks refused with st
 * (message set) before dcoll_coll_run: on a member it takes its number
 * and the group becomes unusable here, as for coll_run's checks; a bad
 * handle, a non-member or st 0 pass through. Returns the status. */
dcoll_status_t dcoll_coll_refuse(dcoll_group_t *group,
                                 enum dcoll_coll_kind kind, const char *fn,
                                 bool async, dcoll_status_t st);

/* backend.c: the registry. lookup finds a name; attach sets the group's
 * choice (collective over a program's backend's group, whose
 * group_create it runs; route.c's dcoll_route_group_free undoes it). */
dcoll_status_t dcoll_backend_lookup(const char *name,
                                    const struct dcoll_backend_entry **out);
dcoll_status_t dcoll_backend_attach(struct dcoll_group *g,
                                    const struct dcoll_backend_entry *e,
                                    const char *fn);
/* Works that are finished when made (test: done; release: free). */
extern const struct dcoll_backend dcoll_done_backend;
/* A program's backend, as a transport. */
extern const struct dcoll_backend dcoll_user_backend;

/* DCOLL_PROFILE (collectives.c): call c on g, begun at g->diag->prof_t0
 * on the precise clock, is over (blocking) or posted as work, whose end
 * adds its time. */
void dcoll_coll_profile(struct dcoll_group *g, const struct dcoll_coll *c,
                        struct dcoll_work *work, dcoll_status_t st);

#endif
