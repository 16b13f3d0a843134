/* The public collectives: validate, map roots, detect in-place use, then
 * hand one descriptor to the route, which picks the transport. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "diag.h"
#include "kinds.h"
#include "route.h"
#include "call.h"

/* The kinds table, visible here so that each public collective, whose
 * kind is a constant, reads its facts at compile time. */
static const struct dcoll_kind_info kinds[DCOLL_CALL_KIND_COUNT_] =
    DCOLL_KINDS_INIT;

/* A NON-MEMBER's work: finished as soon as it is made. */
static dcoll_status_t noop_work(struct dcoll_group *g, const char *fn,
                                dcoll_work_t **work)
{
    struct dcoll_work *w = malloc(sizeof(*w));
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a work "
                           "handle", fn);
    dcoll_work_init(w, g, &dcoll_done_backend);
    dcoll_work_track(w);
    *work = w;
    return DCOLL_SUCCESS;
}

/* A call with nothing to do here: a non-member's collective, or a send
 * or receive with DCOLL_PROC_NULL, whose source is DCOLL_PROC_NULL. */
static dcoll_status_t null_call(struct dcoll_group *g,
                                const struct dcoll_coll *c, const char *fn,
                                dcoll_work_t **work, int *source)
{
    bool null_recv = c->kind == DCOLL_COLL_RECV &&
                     c->root == DCOLL_PROC_NULL;
    if (!work) {
        if (null_recv && source)
            *source = DCOLL_PROC_NULL;
        return DCOLL_SUCCESS;
    }
    dcoll_status_t st = noop_work(g, fn, work);
    if (!st && null_recv) {
        (*work)->is_recv = true;
        (*work)->source = DCOLL_PROC_NULL;
    }
    return st;
}

static dcoll_status_t need_buf(const char *fn, const char *name,
                               const void *p, int64_t count)
{
    if (DCOLL_UNLIKELY(!p && count > 0))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: %s is NULL with count %lld", fn, name,
                           (long long)count);
    return DCOLL_SUCCESS;
}

/* The message for a buffer every rank must pass that is NULL. */
static dcoll_status_t missing_buf(const char *fn,
                                  const struct dcoll_kind_info *k,
                                  const struct dcoll_coll *c)
{
    bool send = (k->every & DCOLL_BUF_SEND) && !c->sendbuf;
    return need_buf(fn, (k->flags & DCOLL_KF_ONE_BUF) ? "buf"
                        : send                        ? "sendbuf"
                                                      : "recvbuf",
                    send ? c->sendbuf : c->recvbuf, c->count);
}

static dcoll_status_t aliased(const char *fn, const char *rule)
{
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: sendbuf and recvbuf overlap; in place needs %s",
                       fn, rule);
}

/* Why the root's own buffer (reduce's and gather's recvbuf, scatter's
 * sendbuf) is refused on the root: missing. */
static dcoll_status_t bad_root_own(const char *fn,
                                   const struct dcoll_kind_info *k,
                                   const struct dcoll_coll *c)
{
    bool on_send = k->root_own == DCOLL_BUF_SEND;
    const char *name = on_send ? "sendbuf" : "recvbuf";
    if (k->flags & DCOLL_KF_STRICT_ROOT)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: %s must be given on the root", fn, name);
    return need_buf(fn, on_send ? "sendbuf (on the root)"
                                : "recvbuf (on the root)",
                    NULL, c->count);
}

/* Checks that need the caller's group rank and the root's, for kinds with
 * a send and a receive buffer; only members get here. Sets c->in_place.
 * Inlined with coll_run, so that k is a constant there. */
static inline __attribute__((always_inline)) dcoll_status_t check_layout(const char *fn,
                                   const struct dcoll_kind_info *k,
                                   struct dcoll_group *g,
                                   struct dcoll_coll *c, size_t bytes)
{
    const char *s = c->sendbuf;
    char *r = c->recvbuf;
    int role = 0, at = g->rank;  /* in place: the block at rank or root */
    if (k->flags & DCOLL_KF_ROOT) {
        role = g->rank == c->root;
        at = c->root;
        const void *own = k->root_own == DCOLL_BUF_SEND ? s : r;
        /* A root without it (unless it moves nothing) is refused. On the
         * other ranks it means nothing, as in MPI, and is dropped: a rank
         * that refused it alone would leave the root waiting. */
        if (k->root_own && role && !own &&
            DCOLL_UNLIKELY(c->count > 0 || (k->flags & DCOLL_KF_STRICT_ROOT)))
            return bad_root_own(fn, k, c);
        if (k->root_own && !role && own) {
            if (k->root_own == DCOLL_BUF_SEND)
                c->sendbuf = s = NULL;
            else
                c->recvbuf = r = NULL;
        }
    }
    unsigned in = k->in[role], out = k->out[role];
    if (!in || !out)
        return DCOLL_SUCCESS;   /* one buffer on this rank: nothing to alias */
    /* sendbuf == recvbuf is in place for every kind and on every rank, as
     * MPI_IN_PLACE is: for the kinds whose own block sits at an offset,
     * rank 0 could not tell it from the offset pattern, so any other rank
     * refusing it would leave rank 0 waiting. The rank's block is where
     * the pattern puts it; a scatter of results (reduce_scatter) leaves
     * this rank's at the front, as MPI does. */
    switch (k->inplace) {
    case DCOLL_IP_SAME:
        c->in_place = s == r;
        break;
    case DCOLL_IP_SEND_IN_RECV:
        c->in_place = r && (s == r || s == r + bytes * (size_t)at);
        break;
    default: /* DCOLL_IP_RECV_IN_SEND */
        c->in_place = s && (r == s || r == s + bytes * (size_t)at);
        break;
    }
    if (c->in_place ||
        !dcoll_overlap(s, dcoll_span_bytes(in, bytes, g->size), r,
                 dcoll_span_bytes(out, bytes, g->size)))
        return DCOLL_SUCCESS;
    return aliased(fn, k->rule);
}

#define KNOWN_OPTS (DCOLL_COLL_OPT_STREAM | DCOLL_COLL_OPT_MEMORY | \
                    DCOLL_COLL_OPT_STREAM_ORDERED | DCOLL_COLL_OPT_BOUNDS | \
                    DCOLL_COLL_OPT_REFUSAL)

/* opts past its stream: a binding's refusal, first, as no other argument
 * may be read then (a counts array shorter than the group); bits this
 * library knows, a memory kind it has, bounds. */
static __attribute__((noinline, cold)) dcoll_status_t
check_opts(const char *fn, const dcoll_coll_opts_t *o)
{
    if (o->mask & DCOLL_COLL_OPT_REFUSAL) {
        if (!o->refusal || !o->refusal[0])
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: "
                               "DCOLL_COLL_OPT_REFUSAL is set with no "
                               "opts->refusal to say why", fn);
        size_t n = strlen(fn);
        bool named = !strncmp(o->refusal, fn, n) && o->refusal[n] == ':';
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s%s%s",
                           named ? "" : fn, named ? "" : ": ", o->refusal);
    }
    if (o->mask & ~KNOWN_OPTS)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: opts->mask "
                           "0x%llx has bits this library does not know", fn,
                           (unsigned long long)o->mask);
    if ((o->mask & DCOLL_COLL_OPT_MEMORY) &&
        (unsigned)o->memory > DCOLL_MEMORY_CUDA)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: opts->memory %d "
                           "is not DCOLL_MEMORY_HOST (0) or "
                           "DCOLL_MEMORY_CUDA (1)", fn, o->memory);
    if ((o->mask & DCOLL_COLL_OPT_BOUNDS) &&
        (o->sendbytes < 0 || o->recvbytes < 0))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: opts->%s %lld "
                           "is negative", fn, o->sendbytes < 0 ? "sendbytes"
                                                               : "recvbytes",
                           (long long)(o->sendbytes < 0 ? o->sendbytes
                                                        : o->recvbytes));
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_opts_refused(const char *fn,
                                  const dcoll_coll_opts_t *opts)
{
    if (DCOLL_LIKELY(!opts || !(opts->mask & DCOLL_COLL_OPT_REFUSAL)))
        return DCOLL_SUCCESS;
    return check_opts(fn, opts);
}

dcoll_status_t dcoll_bound(const char *fn, const struct dcoll_coll *c,
                           bool send, const char *name, int64_t elems)
{
    const dcoll_coll_opts_t *o = c->opts;
    if (DCOLL_LIKELY(!o || !(o->mask & DCOLL_COLL_OPT_BOUNDS)) || elems <= 0)
        return DCOLL_SUCCESS;
    int64_t have = send ? o->sendbytes : o->recvbytes;
    int64_t esz = (int64_t)dcoll_dtype_sizes[c->dtype];
    if (elems <= have / esz)
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s holds %lld "
                       "bytes (%lld %s elements), and the call %s %lld "
                       "elements (%lld bytes) there", fn, name,
                       (long long)have, (long long)(have / esz),
                       dcoll_dtype_name(c->dtype),
                       !strcmp(name, "buf") ? "uses"
                       : send                ? "reads"
                                             : "writes",
                       (long long)elems, (long long)(elems * esz));
}

/* The bounds of a call of a kind with spans (not a vector or
 * neighbourhood kind, whose checks bound their buffers as they find
 * their extents): each buffer's span for this rank's role, or a
 * strided send's or receive's layout's extent. */
static __attribute__((noinline, cold)) dcoll_status_t
check_bounds(const char *fn, const struct dcoll_kind_info *k,
             const struct dcoll_group *g, const struct dcoll_coll *c)
{
    if (k->flags & DCOLL_KF_ONE_BUF) {
        int64_t elems = c->count, ext = 0;
        if (c->layout && !dcoll_layout_check(fn, "layout", -1, c->layout,
                                             &elems, &ext))
            elems = ext;
        return dcoll_bound(fn, c, true, "buf", elems);
    }
    int role = (k->flags & DCOLL_KF_ROOT) && g->rank == c->root;
    int64_t block = c->count, n = g->size;
    int64_t in = k->in[role] == DCOLL_SPAN_ALL   ? block * n
                 : k->in[role] == DCOLL_SPAN_ONE ? block : 0;
    int64_t out = k->out[role] == DCOLL_SPAN_ALL   ? block * n
                  : k->out[role] == DCOLL_SPAN_ONE ? block : 0;
    dcoll_status_t st = dcoll_bound(fn, c, true, "sendbuf", in);
    return st ? st : dcoll_bound(fn, c, false, "recvbuf", out);
}

/* The common answer of dcoll_check_dtype_op, without a call: a valid type,
 * and where the kind reduces, an op that takes it. */
static inline bool dtype_op_ok(const struct dcoll_coll *c)
{
    if ((unsigned)c->dtype >= DCOLL_DTYPE_COUNT_)
        return false;
    if (!(kinds[c->kind].flags & DCOLL_KF_OP))
        return true;
    return dcoll_dtype_op_valid(c->dtype, c->op);
}

/* Inside coll_run: a check failed with status st, after the group is
 * known (the rest of the path does not run). */
#define REFUSE(st_)                                                          \
    do {                                                                     \
        st = (st_);                                                          \
        goto refused;                                                        \
    } while (0)

/* A member's counted call that its own checks refused (st, message
 * set): it still takes its number, as the other ranks' call of that
 * number may be waiting for it; diag tells them (debug mode) or makes
 * the group unusable here. Out of line: the public path only jumps
 * here. */
static __attribute__((noinline, cold)) dcoll_status_t
refuse(struct dcoll_group *g, struct dcoll_coll *c, dcoll_status_t st)
{
    if (g->rank == DCOLL_NON_MEMBER ||
        !(kinds[c->kind].flags & DCOLL_KF_COUNTED) || g->diag->failed)
        return st;
    c->seq = g->seq + 1;
    dcoll_group_number(g, c->seq, (int)c->kind,
                       c->async ? DCOLL_FORM_ASYNC : DCOLL_FORM_BLOCKING);
    c->start = dcoll_coarse_now();
    if (g->diag->flight)
        c->fid = dcoll_flight_begin(g->diag->flight, c);
    st = dcoll_fault_refused(g, c, st, false);
    dcoll_flight_end(g->diag->flight, c->fid, st);
    return st;
}

/* DCOLL_PROFILE: a call that began at t0 on the precise clock is over
 * (blocking), or posted as *work, whose end completes its time. */
__attribute__((noinline, cold)) void
dcoll_coll_profile(struct dcoll_group *g, const struct dcoll_coll *c,
                   struct dcoll_work *work, dcoll_status_t st)
{
    double t0 = g->diag->prof_t0;
    int64_t bytes = c->kind == DCOLL_COLL_BARRIER
                        ? 0 : c->count * (int64_t)dcoll_dtype_sizes[c->dtype];
    dcoll_profile_call(g, (int)c->kind, bytes, dcoll_now() - t0, true);
    if (work && !st)
        work->prof_t0 = t0;
}

__attribute__((noinline, cold)) dcoll_status_t
dcoll_call_failed(struct dcoll_group *g, struct dcoll_coll *c,
                  struct dcoll_outcome *out, struct dcoll_flight_entry *e,
                  int form, bool profile, dcoll_status_t st)
{
    if (out && out->timed_out)
        st = dcoll_fault_outcome(g, out, c->fn, c->seq, c->kind, form);
    else if (st == DCOLL_DECLINED)
        st = dcoll_route_declined(c);
    else if (out && out->refused && c->seq)
        st = dcoll_fault_refused(g, c, st, true);
    else if (out && out->broken && c->seq)
        st = dcoll_fault_broke(g, c->fn, c->seq, st);
    else
        st = dcoll_fault_failed(g, c->fn, c->seq, st);
    if (e) {
        e->end = dcoll_coarse_now();
        e->status = st;
    }
    if (profile && dcoll_profiling)
        dcoll_coll_profile(g, c, NULL, st);
    return st;
}

dcoll_status_t dcoll_call_clash(struct dcoll_group *g, const char *fn,
                                const char *other)
{
    char name[200];
    return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s: another thread is in "
                       "%s on %s now, and a group takes calls from one "
                       "thread at a time (their calls would pair with the "
                       "other ranks' at random). This call was not made "
                       "and the group is unchanged; give each thread its "
                       "own group (dcoll_new_group), or serialize the "
                       "calls", fn, other,
                       dcoll_group_name(g, name, sizeof(name)));
}

dcoll_status_t dcoll_coll_refuse(dcoll_group_t *group,
                                 enum dcoll_coll_kind kind, const char *fn,
                                 bool async, dcoll_status_t st)
{
    struct dcoll_group *g = group ? group : &dcoll_world;
    /* Not ready: st is check_ready's own, and there is no group yet. */
    if (!st || dcoll_check_ready() || g == DCOLL_GROUP_NULL ||
        g->magic != DCOLL_GROUP_MAGIC)
        return st;
    struct dcoll_coll c = {.kind = kind, .fn = fn, .async = async,
                           .dtype = DCOLL_UINT8};
    return refuse(g, &c, st);
}

/* The checks of a call that need no other rank: c (of kind k) on g
 * (resolved), with root as the caller gave it. *member is false on a
 * NON-MEMBER handle, which has nothing more to check. blocking: a call
 * that must finish before it returns (a plan's starts are checked for it
 * later). Inlined with coll_run, which takes k before any call: once c's
 * address has gone to a function, c->kind is read again after each. */
static inline __attribute__((always_inline)) dcoll_status_t
coll_check(const struct dcoll_kind_info *k, struct dcoll_group *g,
           struct dcoll_coll *c, int root, bool blocking, const char *fn,
           bool *member)
{
    dcoll_status_t st;
    *member = true;
    /* One test on the common path: only opts with more than a stream
     * are looked at further. */
    if (DCOLL_UNLIKELY(c->opts && (c->opts->mask & ~DCOLL_COLL_OPT_STREAM)) &&
        (st = check_opts(fn, c->opts)))
        return st;
    if (DCOLL_UNLIKELY(!dtype_op_ok(c)) &&
        (st = dcoll_check_dtype_op(fn, c->dtype, c->op,
                                   (k->flags & DCOLL_KF_OP) != 0)))
        return st;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    if (DCOLL_UNLIKELY(c->count < 0))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: count %lld is negative", fn,
                           (long long)c->count);
    /* Below 2^28 elements no buffer overflows a 64-bit size (8-byte
     * elements, fewer than 2^31 blocks): most calls skip the division. */
    if (DCOLL_UNLIKELY(c->count >= (INT64_C(1) << 28))) {
        int64_t nb = k->wide && g->size > 0 ? g->size : 1;
        if (c->count > INT64_MAX / (int64_t)esz / nb)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: count %lld is too large: %lld block(s) "
                               "of that many %s elements overflow a 64-bit "
                               "size", fn, (long long)c->count,
                               (long long)nb, dcoll_dtype_name(c->dtype));
    }
    /* Buffers every rank must pass; the root's own are checked later. */
    if (c->count > 0 &&
        DCOLL_UNLIKELY(((k->every & DCOLL_BUF_SEND) && !c->sendbuf) ||
                       ((k->every & DCOLL_BUF_RECV) && !c->recvbuf)))
        return missing_buf(fn, k, c);
    if (k->flags & DCOLL_KF_PEER) {
        if (DCOLL_UNLIKELY(c->tag < 0))
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: tag %d is negative", fn, c->tag);
    }

    if (DCOLL_UNLIKELY(g->rank == DCOLL_NON_MEMBER)) {
        /* A collective is every rank's, and a non-member's part is none;
         * a message to or from one would be silently lost. */
        if (k->flags & DCOLL_KF_PEER)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: this process is not a member of the "
                               "group (its handle is the NON-MEMBER one), "
                               "so it has no %s there", fn,
                               c->kind == DCOLL_COLL_SEND ? "peer to send to"
                                                          : "peer to receive from");
        *member = false;
        return DCOLL_SUCCESS;
    }

    if (k->flags & (DCOLL_KF_ROOT | DCOLL_KF_PEER)) {
        if (c->kind == DCOLL_COLL_RECV && root == DCOLL_ANY_SOURCE) {
            c->root = DCOLL_ANY_SOURCE;
        } else if ((k->flags & DCOLL_KF_PEER) && root == DCOLL_PROC_NULL) {
            /* MPI's null peer: nothing to do, done at once (coll_run). */
            c->root = DCOLL_PROC_NULL;
            *member = false;
            return DCOLL_SUCCESS;
        } else {
            st = dcoll_group_root(g, root, fn, k->peer, &c->root);
            if (DCOLL_UNLIKELY(st))
                return st;
        }
        if ((c->kind == DCOLL_COLL_SEND || c->kind == DCOLL_COLL_RECV) &&
            blocking && c->root == g->rank)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: %s %d is this process's own rank; a "
                               "blocking self-%s would never finish (use "
                               "isend/irecv)", fn, k->peer, root,
                               c->kind == DCOLL_COLL_SEND ? "send" : "recv");
    }
    if (k->flags & DCOLL_KF_VEC)
        return dcoll_vec_check(fn, g, c);
    if (k->flags & DCOLL_KF_NEIGHBOR)
        return dcoll_nbh_check(fn, g, c);
    if (DCOLL_UNLIKELY(c->opts && (c->opts->mask & DCOLL_COLL_OPT_BOUNDS)) &&
        (st = check_bounds(fn, k, g, c)))
        return st;
    if (!(k->flags & DCOLL_KF_ONE_BUF))
        return check_layout(fn, k, g, c, (size_t)c->count * esz);
    return DCOLL_SUCCESS;
}

/* The public path, inlined into each public collective: there the kind is
 * a constant, so the compiler folds every look-up in kinds and the
 * branches on it, and the table costs nothing per call. */
static inline __attribute__((always_inline)) dcoll_status_t
coll_run(dcoll_group_t *group, struct dcoll_coll *c, int root,
         dcoll_work_t **work, int *source)
{
    const struct dcoll_kind_info *k = &kinds[c->kind];
    const char *fn = c->fn ? c->fn : k->fn;
    struct dcoll_group *g;
    bool member;
    dcoll_status_t st = dcoll_check_ready();
    if (DCOLL_UNLIKELY(st))
        return st;
    if (work)
        *work = NULL;
    if (DCOLL_UNLIKELY((st = dcoll_group_resolve(group, &g, fn))))
        return st;
    if (DCOLL_UNLIKELY((st = coll_check(k, g, c, root, !work, fn,
                                        &member))))
        REFUSE(st);
    /* Works never waited for would take memory without bound (about
     * 1.7 KB each): a group keeps at most dcoll_works_most. */
    if (work && DCOLL_UNLIKELY(g->inflight >= dcoll_works_most))
        REFUSE(dcoll_works_full(g, fn));
    if (DCOLL_UNLIKELY(!member))
        return null_call(g, c, fn, work, source);

    c->fn = fn;
    struct dcoll_call call;
    const struct dcoll_call_how how = {
        .counted = (k->flags & DCOLL_KF_COUNTED) != 0,
        .form = work ? DCOLL_FORM_ASYNC : DCOLL_FORM_BLOCKING,
        .async = work != NULL,
        .checked = true,
        .watch = -1,
    };
    if (DCOLL_UNLIKELY((st = dcoll_call_enter(g, fn))) ||
        (st = dcoll_call_begin(g, c, &call, how, NULL)))
        return st;
    st = dcoll_route_run(g, c, work, &call.out);
    st = dcoll_call_end(g, c, &call, how, work, st);
    /* A way a tuning table gave: the recorder's entry and DCOLL_DEBUG
     * name it. */
    if (DCOLL_UNLIKELY(call.out.way != NULL))
        dcoll_diag_way(g, c, call.out.way);
    if (!st && source && c->kind == DCOLL_COLL_RECV && !work)
        *source = g->ranks ? g->ranks[call.out.source] : call.out.source;
    return st;
refused:
    c->fn = fn;
    c->async = work != NULL;
    return refuse(g, c, st);
}

dcoll_status_t dcoll_coll_run(dcoll_group_t *group, struct dcoll_coll *c,
                              int root, dcoll_work_t **work, int *source)
{
    return coll_run(group, c, root, work, source);
}

dcoll_status_t dcoll_coll_plan_check(dcoll_group_t *group,
                                     struct dcoll_coll *c, int root,
                                     struct dcoll_group **g, bool *member)
{
    const char *fn = c->fn ? c->fn : kinds[c->kind].fn;
    c->fn = fn;
    *g = NULL;
    *member = false;
    dcoll_status_t st = dcoll_group_resolve(group, g, fn);
    if (st) {
        *g = NULL;
        return st;
    }
    return coll_check(&kinds[c->kind], *g, c, root, false, fn, member);
}

#define COLL(...) struct dcoll_coll c = {__VA_ARGS__}

dcoll_status_t dcoll_broadcast(dcoll_group_t *group, void *buf, int64_t count,
                               dcoll_dtype_t dtype, int root,
                               const dcoll_coll_opts_t *opts,
                               dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_BROADCAST, .recvbuf = buf, .count = count,
         .dtype = dtype, .opts = opts);
    return coll_run(group, &c, root, work, NULL);
}

dcoll_status_t dcoll_all_reduce(dcoll_group_t *group, const void *sendbuf,
                                void *recvbuf, int64_t count,
                                dcoll_dtype_t dtype, dcoll_op_t op,
                                const dcoll_coll_opts_t *opts,
                                dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_ALL_REDUCE, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .op = op,
         .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_scan(dcoll_group_t *group, const void *sendbuf,
                          void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                          dcoll_op_t op, const dcoll_coll_opts_t *opts,
                          dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_SCAN, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_exscan(dcoll_group_t *group, const void *sendbuf,
                            void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                            dcoll_op_t op, const dcoll_coll_opts_t *opts,
                            dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_EXSCAN, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_reduce(dcoll_group_t *group, const void *sendbuf,
                            void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                            dcoll_op_t op, int root,
                            const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts);
    return coll_run(group, &c, root, work, NULL);
}

dcoll_status_t dcoll_all_gather(dcoll_group_t *group, const void *sendbuf,
                                void *recvbuf, int64_t count,
                                dcoll_dtype_t dtype,
                                const dcoll_coll_opts_t *opts,
                                dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_ALL_GATHER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_gather(dcoll_group_t *group, const void *sendbuf,
                            void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                            int root, const dcoll_coll_opts_t *opts,
                            dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .opts = opts);
    return coll_run(group, &c, root, work, NULL);
}

dcoll_status_t dcoll_scatter(dcoll_group_t *group, const void *sendbuf,
                             void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                             int root, const dcoll_coll_opts_t *opts,
                             dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .opts = opts);
    return coll_run(group, &c, root, work, NULL);
}

dcoll_status_t dcoll_reduce_scatter(dcoll_group_t *group, const void *sendbuf,
                                    void *recvbuf, int64_t count,
                                    dcoll_dtype_t dtype, dcoll_op_t op,
                                    const dcoll_coll_opts_t *opts,
                                    dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_REDUCE_SCATTER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .op = op,
         .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_all_to_all(dcoll_group_t *group, const void *sendbuf,
                                void *recvbuf, int64_t count,
                                dcoll_dtype_t dtype,
                                const dcoll_coll_opts_t *opts,
                                dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_ALL_TO_ALL, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_barrier(dcoll_group_t *group,
                             const dcoll_coll_opts_t *opts,
                             dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_BARRIER, .dtype = DCOLL_UINT8, .opts = opts);
    return coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_send(dcoll_group_t *group, const void *buf,
                          int64_t count, dcoll_dtype_t dtype, int dst,
                          int tag, const dcoll_coll_opts_t *opts,
                          dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_SEND, .sendbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts);
    return coll_run(group, &c, dst, work, NULL);
}

dcoll_status_t dcoll_recv(dcoll_group_t *group, void *buf, int64_t count,
                          dcoll_dtype_t dtype, int src, int tag,
                          const dcoll_coll_opts_t *opts, dcoll_work_t **work,
                          int *source)
{
    COLL(.kind = DCOLL_COLL_RECV, .recvbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts);
    return coll_run(group, &c, src, work, source);
}

static dcoll_status_t need_work(const char *fn, dcoll_work_t **work)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!work)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: work is NULL; it must receive the handle",
                           fn);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_isend(dcoll_group_t *group, const void *buf,
                           int64_t count, dcoll_dtype_t dtype, int dst,
                           int tag, const dcoll_coll_opts_t *opts,
                           dcoll_work_t **work)
{
    dcoll_status_t st = need_work(__func__, work);
    if (st)
        return st;
    /* Its own name in messages, not dcoll_send's. */
    COLL(.kind = DCOLL_COLL_SEND, .sendbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts, .fn = __func__);
    return coll_run(group, &c, dst, work, NULL);
}

dcoll_status_t dcoll_irecv(dcoll_group_t *group, void *buf, int64_t count,
                           dcoll_dtype_t dtype, int src, int tag,
                           const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    dcoll_status_t st = need_work(__func__, work);
    if (st)
        return st;
    COLL(.kind = DCOLL_COLL_RECV, .recvbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts, .fn = __func__);
    return coll_run(group, &c, src, work, NULL);
}
