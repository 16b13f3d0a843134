/* The public collectives: validate, map roots, detect in-place use, then
 * hand one descriptor to the group's backend. */
#include <math.h>
#include <stdlib.h>
#include "internal.h"
#include "plugin.h"

static const char *const kind_fn[DCOLL_COLL_KIND_COUNT_] = {
    [DCOLL_COLL_BROADCAST] = "dcoll_broadcast",
    [DCOLL_COLL_ALL_REDUCE] = "dcoll_all_reduce",
    [DCOLL_COLL_REDUCE] = "dcoll_reduce",
    [DCOLL_COLL_ALL_GATHER] = "dcoll_all_gather",
    [DCOLL_COLL_GATHER] = "dcoll_gather",
    [DCOLL_COLL_SCATTER] = "dcoll_scatter",
    [DCOLL_COLL_REDUCE_SCATTER] = "dcoll_reduce_scatter",
    [DCOLL_COLL_ALL_TO_ALL] = "dcoll_all_to_all",
    [DCOLL_COLL_BARRIER] = "dcoll_barrier",
    [DCOLL_COLL_SEND] = "dcoll_send",
    [DCOLL_COLL_RECV] = "dcoll_recv",
};

const char *dcoll_kind_name(enum dcoll_coll_kind k)
{
    if ((unsigned)k >= DCOLL_COLL_KIND_COUNT_)
        return "unknown";
    return kind_fn[k] + sizeof("dcoll_") - 1;
}

/* A NON-MEMBER's work: finished as soon as it is made. */
static dcoll_status_t noop_work(struct dcoll_group *g, const char *fn,
                                dcoll_work_t **work)
{
    struct dcoll_work *w = malloc(sizeof(*w));
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a work "
                           "handle", fn);
    dcoll_work_init(w, g, &dcoll_done_backend);
    *work = w;
    return DCOLL_SUCCESS;
}

static bool overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return alen && blen && x < y + blen && y < x + alen;
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

static dcoll_status_t aliased(const char *fn, const char *rule)
{
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "%s: sendbuf and recvbuf overlap; in place needs %s",
                       fn, rule);
}

/* Checks that need the caller's group rank and the root's; only members
 * get here. Sets c->in_place. */
static dcoll_status_t check_layout(const char *fn, struct dcoll_group *g,
                                   struct dcoll_coll *c, size_t bytes)
{
    const char *s = c->sendbuf;
    char *r = c->recvbuf;
    size_t all = bytes * (size_t)g->size;
    bool root = g->rank == c->root;

    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE:
        c->in_place = s == r;
        if (!c->in_place && overlap(s, bytes, r, bytes))
            return aliased(fn, "sendbuf == recvbuf");
        break;
    case DCOLL_COLL_REDUCE:
        if (!root)
            break;
        if (need_buf(fn, "recvbuf (on the root)", r, c->count))
            return DCOLL_ERR_INVALID_ARGUMENT;
        c->in_place = s == r;
        if (!c->in_place && overlap(s, bytes, r, bytes))
            return aliased(fn, "sendbuf == recvbuf");
        break;
    case DCOLL_COLL_ALL_GATHER:
        c->in_place = r && s == r + bytes * (size_t)g->rank;
        if (!c->in_place && overlap(s, bytes, r, all))
            return aliased(fn, "sendbuf == recvbuf + rank * count");
        break;
    case DCOLL_COLL_GATHER:
        if (!root) {
            if (r)
                return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                                   "%s: recvbuf must be NULL on ranks other "
                                   "than the root", fn);
            break;
        }
        if (!r)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: recvbuf must be given on the root", fn);
        c->in_place = s == r + bytes * (size_t)c->root;
        if (!c->in_place && overlap(s, bytes, r, all))
            return aliased(fn, "sendbuf == recvbuf + root * count");
        break;
    case DCOLL_COLL_SCATTER:
        if (!root) {
            if (s)
                return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                                   "%s: sendbuf must be NULL on ranks other "
                                   "than the root", fn);
            break;
        }
        if (!s)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: sendbuf must be given on the root", fn);
        c->in_place = r == s + bytes * (size_t)c->root;
        if (!c->in_place && overlap(s, all, r, bytes))
            return aliased(fn, "recvbuf == sendbuf + root * count");
        break;
    case DCOLL_COLL_REDUCE_SCATTER:
        c->in_place = s && r == s + bytes * (size_t)g->rank;
        if (!c->in_place && overlap(s, all, r, bytes))
            return aliased(fn, "recvbuf == sendbuf + rank * count");
        break;
    case DCOLL_COLL_ALL_TO_ALL:
        c->in_place = s == r;
        if (!c->in_place && overlap(s, all, r, all))
            return aliased(fn, "sendbuf == recvbuf");
        break;
    default:
        break;
    }
    return DCOLL_SUCCESS;
}

static bool is_rooted(enum dcoll_coll_kind k)
{
    return dcoll_kind_has_root(k) || k == DCOLL_COLL_SEND ||
           k == DCOLL_COLL_RECV;
}

/* How many count-sized blocks the largest buffer of a kind holds. */
static int64_t blocks(enum dcoll_coll_kind k, int size)
{
    switch (k) {
    case DCOLL_COLL_ALL_GATHER:
    case DCOLL_COLL_GATHER:
    case DCOLL_COLL_SCATTER:
    case DCOLL_COLL_REDUCE_SCATTER:
    case DCOLL_COLL_ALL_TO_ALL:
        return size > 0 ? size : 1;
    default:
        return 1;
    }
}

static const char *root_name(enum dcoll_coll_kind k)
{
    return k == DCOLL_COLL_SEND ? "dst" : k == DCOLL_COLL_RECV ? "src"
                                                                : "root";
}

#define KNOWN_OPTS DCOLL_COLL_OPT_STREAM

/* The common answer of dcoll_check_dtype_op, without a call: a valid type,
 * and a valid op where the kind reduces (bitwise ones on integers only). */
static inline bool dtype_op_ok(const struct dcoll_coll *c)
{
    if ((unsigned)c->dtype >= DCOLL_DTYPE_COUNT_)
        return false;
    if (!dcoll_kind_has_op(c->kind))
        return true;
    return (unsigned)c->op < DCOLL_BAND ||
           ((unsigned)c->op < DCOLL_OP_COUNT_ && !dcoll_dtype_is_float(c->dtype));
}

dcoll_status_t dcoll_coll_run(dcoll_group_t *group, struct dcoll_coll *c,
                              int root, dcoll_work_t **work, int *source)
{
    const char *fn = c->fn ? c->fn : kind_fn[c->kind];
    struct dcoll_group *g;
    dcoll_status_t st = dcoll_check_ready();
    if (DCOLL_UNLIKELY(st))
        return st;
    if (work)
        *work = NULL;
    if (DCOLL_UNLIKELY((st = dcoll_group_resolve(group, &g))))
        return st;
    if (DCOLL_UNLIKELY(c->opts && (c->opts->mask & ~KNOWN_OPTS)))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: opts->mask 0x%llx has bits this library "
                           "does not know", fn,
                           (unsigned long long)c->opts->mask);
    if (DCOLL_UNLIKELY(!dtype_op_ok(c)) &&
        (st = dcoll_check_dtype_op(fn, c->dtype, c->op,
                                   dcoll_kind_has_op(c->kind))))
        return st;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    if (DCOLL_UNLIKELY(c->count < 0))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: count %lld is negative", fn,
                           (long long)c->count);
    int64_t nb = blocks(c->kind, g->size);
    /* Divide only for counts that could overflow: most never come near. */
    if (DCOLL_UNLIKELY(c->count > (INT64_C(1) << 40) / nb &&
                       c->count > INT64_MAX / (int64_t)esz / nb))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: count %lld is too large: %lld block(s) of "
                           "that many %s elements overflow a 64-bit size",
                           fn, (long long)c->count, (long long)nb,
                           dcoll_dtype_name(c->dtype));
    /* Buffers every rank must pass; rooted ones are checked later. */
    switch (c->kind) {
    case DCOLL_COLL_BROADCAST:
    case DCOLL_COLL_RECV:
        st = need_buf(fn, "buf", c->recvbuf, c->count);
        break;
    case DCOLL_COLL_SEND:
        st = need_buf(fn, "buf", c->sendbuf, c->count);
        break;
    case DCOLL_COLL_REDUCE:
    case DCOLL_COLL_GATHER:
        st = need_buf(fn, "sendbuf", c->sendbuf, c->count);
        break;
    case DCOLL_COLL_SCATTER:
        st = need_buf(fn, "recvbuf", c->recvbuf, c->count);
        break;
    case DCOLL_COLL_BARRIER:
        break;
    default:
        if (!(st = need_buf(fn, "sendbuf", c->sendbuf, c->count)))
            st = need_buf(fn, "recvbuf", c->recvbuf, c->count);
        break;
    }
    if (DCOLL_UNLIKELY(st))
        return st;
    if (c->kind == DCOLL_COLL_SEND || c->kind == DCOLL_COLL_RECV) {
        if (DCOLL_UNLIKELY(c->tag < 0))
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: tag %d is negative", fn, c->tag);
    }

    if (DCOLL_UNLIKELY(g->rank == DCOLL_NON_MEMBER))
        return work ? noop_work(g, fn, work) : DCOLL_SUCCESS;

    if (is_rooted(c->kind)) {
        if (c->kind == DCOLL_COLL_RECV && root == DCOLL_ANY_SOURCE) {
            c->root = DCOLL_ANY_SOURCE;
        } else {
            st = dcoll_group_root(g, root, fn, root_name(c->kind), &c->root);
            if (DCOLL_UNLIKELY(st))
                return st;
        }
        if ((c->kind == DCOLL_COLL_SEND || c->kind == DCOLL_COLL_RECV) &&
            !work && c->root == g->rank)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: %s %d is this process's own rank; a "
                               "blocking self-%s would never finish (use "
                               "isend/irecv)", fn, root_name(c->kind), root,
                               c->kind == DCOLL_COLL_SEND ? "send" : "recv");
    }
    if (DCOLL_UNLIKELY((st = check_layout(fn, g, c, (size_t)c->count * esz))))
        return st;

    int src = -1, device = -1;
    const struct dcoll_cuda_plugin *cu = dcoll_cuda();
    c->fn = fn;
    /* Numbered, timed and recorded; send and recv are not numbered, since
     * ranks make different numbers of them. */
    if (c->kind != DCOLL_COLL_SEND && c->kind != DCOLL_COLL_RECV) {
        c->seq = ++g->seq;
        g->cur_kind = c->kind;
    }
    if (g->timeout > 0 || g->flight)
        c->start = dcoll_now();
    if (g->flight)
        c->fid = dcoll_flight_begin(g->flight, c);
    if (DCOLL_UNLIKELY(g->slow) && (st = dcoll_fault_check(g, c))) {
        dcoll_flight_end(g->flight, c->fid, st);
        return st;
    }
    /* GPU buffers: NCCL where the group can use it, else staged; a
     * program's backend takes them as they are. */
    if (DCOLL_UNLIKELY(cu != NULL) && c->kind != DCOLL_COLL_BARRIER &&
        g->backend->route != DCOLL_ROUTE_NONE &&
        (st = dcoll_route(cu, fn, c, &device)))
        return st;
    if (DCOLL_UNLIKELY(device >= 0)) {
        st = dcoll_gpu_run(g, c, device, work, &src);
    } else {
        st = g->backend->coll(g, c, work, &src);
    }
    if (work && !st) {
        struct dcoll_work *w = *work;
        w->deadline = g->timeout > 0 ? c->start + g->timeout : INFINITY;
        w->seq = c->seq;
        w->fid = c->fid;
        w->kind = c->kind;
        w->fn = fn;
    } else if (c->fid) {
        dcoll_flight_end(g->flight, c->fid, st);
    }
    if (!st && source && c->kind == DCOLL_COLL_RECV && !work)
        *source = g->ranks ? g->ranks[src] : src;
    return st;
}

#define COLL(...) struct dcoll_coll c = {__VA_ARGS__}

dcoll_status_t dcoll_broadcast(dcoll_group_t *group, void *buf, int64_t count,
                               dcoll_dtype_t dtype, int root,
                               const dcoll_coll_opts_t *opts,
                               dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_BROADCAST, .recvbuf = buf, .count = count,
         .dtype = dtype, .opts = opts);
    return dcoll_coll_run(group, &c, root, work, NULL);
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
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_reduce(dcoll_group_t *group, const void *sendbuf,
                            void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                            dcoll_op_t op, int root,
                            const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .op = op, .opts = opts);
    return dcoll_coll_run(group, &c, root, work, NULL);
}

dcoll_status_t dcoll_all_gather(dcoll_group_t *group, const void *sendbuf,
                                void *recvbuf, int64_t count,
                                dcoll_dtype_t dtype,
                                const dcoll_coll_opts_t *opts,
                                dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_ALL_GATHER, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts);
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_gather(dcoll_group_t *group, const void *sendbuf,
                            void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                            int root, const dcoll_coll_opts_t *opts,
                            dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .opts = opts);
    return dcoll_coll_run(group, &c, root, work, NULL);
}

dcoll_status_t dcoll_scatter(dcoll_group_t *group, const void *sendbuf,
                             void *recvbuf, int64_t count, dcoll_dtype_t dtype,
                             int root, const dcoll_coll_opts_t *opts,
                             dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = count, .dtype = dtype, .opts = opts);
    return dcoll_coll_run(group, &c, root, work, NULL);
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
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_all_to_all(dcoll_group_t *group, const void *sendbuf,
                                void *recvbuf, int64_t count,
                                dcoll_dtype_t dtype,
                                const dcoll_coll_opts_t *opts,
                                dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_ALL_TO_ALL, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = count, .dtype = dtype, .opts = opts);
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_barrier(dcoll_group_t *group,
                             const dcoll_coll_opts_t *opts,
                             dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_BARRIER, .dtype = DCOLL_UINT8, .opts = opts);
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t dcoll_send(dcoll_group_t *group, const void *buf,
                          int64_t count, dcoll_dtype_t dtype, int dst,
                          int tag, const dcoll_coll_opts_t *opts,
                          dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_SEND, .sendbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts);
    return dcoll_coll_run(group, &c, dst, work, NULL);
}

dcoll_status_t dcoll_recv(dcoll_group_t *group, void *buf, int64_t count,
                          dcoll_dtype_t dtype, int src, int tag,
                          const dcoll_coll_opts_t *opts, dcoll_work_t **work,
                          int *source)
{
    COLL(.kind = DCOLL_COLL_RECV, .recvbuf = buf, .count = count,
         .dtype = dtype, .tag = tag, .opts = opts);
    return dcoll_coll_run(group, &c, src, work, source);
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
    return st ? st : dcoll_send(group, buf, count, dtype, dst, tag, opts,
                                work);
}

dcoll_status_t dcoll_irecv(dcoll_group_t *group, void *buf, int64_t count,
                           dcoll_dtype_t dtype, int src, int tag,
                           const dcoll_coll_opts_t *opts, dcoll_work_t **work)
{
    dcoll_status_t st = need_work(__func__, work);
    return st ? st : dcoll_recv(group, buf, count, dtype, src, tag, opts,
                                work, NULL);
}
