/* The multi-buffer forms (torch's *_multigpu): several buffers per
 * process, the operation over every buffer of every process. On host
 * buffers this process's buffers are combined first (lib/base/kernels.c),
 * one collective runs across processes, and its result is spread back
 * over the buffers, after the collective (at once, or in the work's
 * finish step for an async call). GPU buffers go to NCCL, one
 * communicator per GPU (lib/gpu/multi.c), where every rank can; else
 * they are mirrored in host memory and take the same host path, the
 * results copied back in the after step. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "route.h"

/* What runs after the collective. */
struct multi {
    void **out;            /* buffers to fill: copies of the caller's */
    int nout;
    const char *from;      /* the collective's result */
    size_t bytes;          /* each out[i] gets bytes ... */
    size_t stride;         /* ... from from + i * stride */
    void *divide;          /* AVG: divide this (n elements) by by */
    int64_t n;
    int by;
    dcoll_dtype_t dtype;
    void *tmp;             /* scratch: the group's kept block, or own */
    bool own;
    struct dcoll_group *group;
    struct mirrors *mir;   /* GPU buffers mirrored, or NULL */
};

/* GPU buffers the host path works on through host copies. */
struct mirrors {
    struct dcoll_mirror *in, *out;   /* separate send list; receive list */
    int back;              /* which out buffer to copy back: -1 all,
                              -2 none */
};

static void mirrors_free(struct mirrors *mr)
{
    if (mr) {
        dcoll_mirror_free(mr->in);
        dcoll_mirror_free(mr->out);
        mr->in = mr->out = NULL;
    }
}

static dcoll_status_t after(struct multi *m, dcoll_status_t st)
{
    if (!st) {
        if (m->divide)
            dcoll_divide(m->divide, m->n, m->dtype, m->by);
        for (int i = 0; i < m->nout; i++)
            if (m->bytes && m->out[i] != m->from + (size_t)i * m->stride)
                memcpy(m->out[i], m->from + (size_t)i * m->stride, m->bytes);
        if (m->mir && m->mir->out && m->mir->back != -2)
            st = dcoll_mirror_back(m->mir->out, m->mir->back);
    }
    mirrors_free(m->mir);
    free(m->mir);
    if (m->tmp)
        dcoll_kept_give(&m->group->stage, m->tmp, m->own, free);
    free(m->out);
    free(m);
    return st;
}

/* AVG over nbufs > 1 buffers a process: the collective's AVG divides by
 * the ranks, the after step by nbufs (n elements at buf). */
static void avg_later(struct multi *m, dcoll_op_t op, int nbufs, void *buf,
                      int64_t n, dcoll_dtype_t dtype)
{
    if (op == DCOLL_AVG && nbufs > 1) {
        m->divide = buf;
        m->n = n;
        m->by = nbufs;
        m->dtype = dtype;
    }
}

static dcoll_status_t finish_multi(struct dcoll_work *w, dcoll_status_t st)
{
    return after(w->finish_data, st);
}

/* Run c, then the after step: now, or when its work finishes. */
static dcoll_status_t run(dcoll_group_t *group, struct dcoll_coll *c,
                          int root, struct multi *m, dcoll_work_t **work)
{
    dcoll_status_t st = dcoll_coll_run(group, c, root, work, NULL);
    if (st || !work || !*work)
        return after(m, st);
    (*work)->finish = finish_multi;
    (*work)->finish_data = m;
    return DCOLL_SUCCESS;
}

/* A list of nbufs buffers of count elements (per block: blocks of them). */
static dcoll_status_t check_bufs(const char *fn,
                                 const dcoll_coll_opts_t *opts,
                                 const void *const *bufs, const char *name,
                                 int nbufs, int64_t count, int64_t blocks,
                                 dcoll_dtype_t dtype)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st || (st = dcoll_opts_refused(fn, opts)))
        return st;
    if (nbufs < 1)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: nbufs %d: at "
                           "least one buffer is needed", fn, nbufs);
    if (!bufs)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL with "
                           "nbufs %d", fn, name, nbufs);
    if (count < 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: count %lld is "
                           "negative", fn, (long long)count);
    if ((st = dcoll_check_dtype_op(fn, dtype, DCOLL_SUM, false)))
        return st;
    if (count && count > INT64_MAX / (int64_t)dcoll_dtype_sizes[dtype] /
                             blocks / nbufs)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: count %lld in "
                           "%d buffers overflows a 64-bit size", fn,
                           (long long)count, nbufs);
    for (int i = 0; i < nbufs; i++) {
        if (!bufs[i] && count > 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s[%d] is "
                               "NULL with count %lld", fn, name, i,
                               (long long)count);
    }
    return DCOLL_SUCCESS;
}

/* The after step's record; it takes mr's mirrors, even on failure. */
static struct multi *multi_new(struct dcoll_group *g, const char *fn,
                               void *const *out, int nout, size_t tmpbytes,
                               const struct mirrors *mr)
{
    struct multi *m = calloc(1, sizeof(*m));
    if (m) {
        m->group = g;
        m->out = malloc(sizeof(void *) * (size_t)(nout ? nout : 1));
    }
    /* Scratch kept with the group between calls: a fresh block of this
     * size each call would be mapped and faulted in each time. */
    if (m && tmpbytes)
        m->tmp = dcoll_kept_take(&g->stage, tmpbytes, &m->own, malloc, free);
    if (m && (mr->in || mr->out) && (m->mir = malloc(sizeof(*mr))))
        *m->mir = *mr;
    if (!m || !m->out || (tmpbytes && !m->tmp) ||
        ((mr->in || mr->out) && !m->mir)) {
        if (m) {
            if (m->tmp)
                dcoll_kept_give(&g->stage, m->tmp, m->own, free);
            free(m->out);
            free(m->mir);
            free(m);
        }
        mirrors_free((struct mirrors *)mr);
        dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
        return NULL;
    }
    if (nout)
        memcpy(m->out, out, sizeof(void *) * (size_t)nout);
    m->nout = nout;
    return m;
}

/* The group, in *g; true when the call ends here: a bad handle, or a
 * NON-MEMBER one, on which a call does nothing, as every collective
 * there (this process's buffers are not combined either). */
static bool outside(dcoll_group_t *group, enum dcoll_coll_kind kind,
                    const char *fn, dcoll_work_t **work, dcoll_status_t *st,
                    struct dcoll_group **g)
{
    if ((*st = dcoll_group_resolve(group, g, fn)))
        return true;
    if ((*g)->rank != DCOLL_NON_MEMBER)
        return false;
    struct dcoll_coll c = {.kind = kind, .dtype = DCOLL_UINT8, .fn = fn};
    *st = dcoll_coll_run(group, &c, 0, work, NULL);
    return true;
}

/* A root given as a world rank, and its buffer index, on a member:
 * whether this rank is the root. */
static dcoll_status_t root_of(const char *fn, const struct dcoll_group *g,
                              int root, int root_buf, int nbufs, bool *mine,
                              int *gr_out)
{
    if (root_buf < 0 || root_buf >= nbufs)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: root_buf %d is "
                           "not a buffer index (0..%d)", fn, root_buf,
                           nbufs - 1);
    int gr = -1;
    dcoll_status_t st = dcoll_group_root(g, root, fn, "root", &gr);
    *mine = gr == g->rank;
    *gr_out = gr;
    return st;
}

/* GPU buffers: to NCCL (*done, through the core's dispatch, so that the
 * call is numbered, checked in debug mode and recorded like any other),
 * or mirrored in *mr, whose host lists the caller then uses. in_bytes:
 * each send buffer (a separate list); out_bytes: each receive buffer,
 * whose contents are copied in too where the list works in place. Host
 * buffers: nothing. root: the world rank, as the public call had it. */
static dcoll_status_t on_gpu(dcoll_group_t *group, struct dcoll_group *g,
                             struct dcoll_multi_call *mc, int root,
                             size_t in_bytes, size_t out_bytes,
                             dcoll_work_t **work, struct mirrors *mr,
                             bool *done)
{
    *done = false;
    *mr = (struct mirrors){NULL, NULL, -1};
    if (DCOLL_LIKELY(!dcoll_gpu_present()))
        return DCOLL_SUCCESS;
    int small[8], *devices = mc->n <= 8 ? small
                                        : malloc(sizeof(int) * (size_t)mc->n);
    if (!devices)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", mc->fn);
    dcoll_status_t st = DCOLL_SUCCESS;
    if (dcoll_multi_devices(mc, devices) &&
        !(st = dcoll_gpu_multi_choose(g, mc, devices,
                                        dcoll_route_multi_nccl(g)))) {
        if (mc->clique) {
            /* Described as NCCL sees each rank's part: count per buffer,
             * and its first buffers. */
            struct dcoll_coll c = {
                .kind = mc->kind, .recvbuf = mc->recv[0],
                .sendbuf = mc->kind == DCOLL_COLL_BROADCAST ? NULL
                           : mc->send ? mc->send[0] : mc->recv[0],
                .count = mc->count, .dtype = mc->dtype, .op = mc->op,
                .opts = mc->opts, .fn = mc->fn, .multi = mc};
            *done = true;
            st = dcoll_coll_run(group, &c, root, work, NULL);
        } else {
            if (mc->send)
                st = dcoll_mirror_make(mc->fn, mc->send, mc->n, in_bytes,
                                       true, mc->opts, &mr->in);
            if (!st)
                st = dcoll_mirror_make(mc->fn, (const void *const *)mc->recv,
                                       mc->n, out_bytes, !mc->send, mc->opts,
                                       &mr->out);
            if (st)
                mirrors_free(mr);
        }
    }
    if (devices != small)
        free(devices);
    return st;
}

static void *const *host_list(const struct dcoll_mirror *m, void *const *l)
{
    return m ? dcoll_mirror_host(m) : l;
}

dcoll_status_t dcoll_broadcast_multi(dcoll_group_t *group, void *const *bufs,
                                     int nbufs, int64_t count,
                                     dcoll_dtype_t dtype, int root,
                                     int root_buf,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_work_t **work)
{
    static const char fn[] = "dcoll_broadcast_multi";
    bool mine, done;
    int gr;
    struct mirrors mr;
    dcoll_status_t st = check_bufs(fn, opts, (const void *const *)bufs,
                                   "bufs", nbufs, count, 1, dtype);
    struct dcoll_group *g;
    if (st || outside(group, DCOLL_COLL_BROADCAST, fn, work, &st, &g) ||
        (st = root_of(fn, g, root, root_buf, nbufs, &mine, &gr)))
        return dcoll_coll_refuse(group, DCOLL_COLL_BROADCAST, fn, work != NULL,
                                st);
    size_t bytes = (size_t)count * dcoll_dtype_sizes[dtype];
    struct dcoll_multi_call mc = {
        .kind = DCOLL_COLL_BROADCAST, .recv = bufs, .n = nbufs,
        .count = count, .dtype = dtype, .root = gr, .root_buf = root_buf,
        .opts = opts, .fn = fn};
    if ((st = on_gpu(group, g, &mc, root, 0, bytes, work, &mr, &done)) ||
        done)
        return st;
    bufs = host_list(mr.out, bufs);
    struct multi *m = multi_new(g, fn, bufs, nbufs, 0, &mr);
    if (!m)
        return DCOLL_ERR_NO_MEMORY;
    void *src = bufs[mine ? root_buf : 0];
    m->from = src;
    m->bytes = bytes;
    struct dcoll_coll c = {.kind = DCOLL_COLL_BROADCAST, .recvbuf = src,
                           .count = count, .dtype = dtype, .opts = opts,
                           .fn = fn};
    return run(group, &c, root, m, work);
}

dcoll_status_t dcoll_all_reduce_multi(dcoll_group_t *group, void *const *bufs,
                                      int nbufs, int64_t count,
                                      dcoll_dtype_t dtype, dcoll_op_t op,
                                      const dcoll_coll_opts_t *opts,
                                      dcoll_work_t **work)
{
    static const char fn[] = "dcoll_all_reduce_multi";
    struct dcoll_group *g;
    struct mirrors mr;
    bool done;
    dcoll_status_t st = check_bufs(fn, opts, (const void *const *)bufs,
                                   "bufs", nbufs, count, 1, dtype);
    if (st || (st = dcoll_check_dtype_op(fn, dtype, op, true)) ||
        outside(group, DCOLL_COLL_ALL_REDUCE, fn, work, &st, &g))
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_REDUCE, fn, work != NULL,
                                st);
    size_t bytes = (size_t)count * dcoll_dtype_sizes[dtype];
    struct dcoll_multi_call mc = {
        .kind = DCOLL_COLL_ALL_REDUCE, .recv = bufs, .n = nbufs,
        .count = count, .dtype = dtype, .op = op, .opts = opts, .fn = fn};
    if ((st = on_gpu(group, g, &mc, 0, 0, bytes, work, &mr, &done)) ||
        done)
        return st;
    bufs = host_list(mr.out, bufs);
    struct multi *m = multi_new(g, fn, bufs, nbufs, 0, &mr);
    if (!m)
        return DCOLL_ERR_NO_MEMORY;
    /* Every buffer gets the result: the first one gathers them here. */
    for (int i = 1; i < nbufs; i++)
        dcoll_fold(bufs[0], bufs[i], count, dtype, op);
    m->from = bufs[0];
    m->bytes = bytes;
    avg_later(m, op, nbufs, bufs[0], count, dtype);
    struct dcoll_coll c = {.kind = DCOLL_COLL_ALL_REDUCE, .sendbuf = bufs[0],
                           .recvbuf = bufs[0], .count = count,
                           .dtype = dtype, .op = op, .opts = opts, .fn = fn};
    return run(group, &c, 0, m, work);
}

dcoll_status_t dcoll_reduce_multi(dcoll_group_t *group, void *const *bufs,
                                  int nbufs, int64_t count,
                                  dcoll_dtype_t dtype, dcoll_op_t op,
                                  int root, int root_buf,
                                  const dcoll_coll_opts_t *opts,
                                  dcoll_work_t **work)
{
    static const char fn[] = "dcoll_reduce_multi";
    struct dcoll_group *g;
    struct mirrors mr;
    bool mine, done;
    int gr;
    dcoll_status_t st = check_bufs(fn, opts, (const void *const *)bufs,
                                   "bufs", nbufs, count, 1, dtype);
    if (st || (st = dcoll_check_dtype_op(fn, dtype, op, true)) ||
        outside(group, DCOLL_COLL_REDUCE, fn, work, &st, &g) ||
        (st = root_of(fn, g, root, root_buf, nbufs, &mine, &gr)))
        return dcoll_coll_refuse(group, DCOLL_COLL_REDUCE, fn, work != NULL,
                                st);
    size_t bytes = (size_t)count * dcoll_dtype_sizes[dtype];
    struct dcoll_multi_call mc = {
        .kind = DCOLL_COLL_REDUCE, .recv = bufs, .n = nbufs, .count = count,
        .dtype = dtype, .op = op, .root = gr, .root_buf = root_buf,
        .opts = opts, .fn = fn};
    if ((st = on_gpu(group, g, &mc, root, 0, bytes, work, &mr, &done)) ||
        done)
        return st;
    mr.back = mine ? root_buf : -2;   /* only the root's buffer changes */
    bufs = host_list(mr.out, bufs);
    /* The inputs stay as they were: they are combined in a copy. */
    struct multi *m = multi_new(g, fn, bufs, 0, bytes, &mr);
    if (!m)
        return DCOLL_ERR_NO_MEMORY;
    if (bytes)
        memcpy(m->tmp, bufs[0], bytes);
    for (int i = 1; i < nbufs; i++)
        dcoll_fold(m->tmp, bufs[i], count, dtype, op);
    if (mine)
        avg_later(m, op, nbufs, bufs[root_buf], count, dtype);
    struct dcoll_coll c = {.kind = DCOLL_COLL_REDUCE, .sendbuf = m->tmp,
                           .recvbuf = mine ? bufs[root_buf] : NULL,
                           .count = count, .dtype = dtype, .op = op,
                           .opts = opts, .fn = fn};
    return run(group, &c, root, m, work);
}

/* small[i] and big[i] (bytes and bytes * blocks) may share memory only
 * in NCCL's in-place form: small[i] is exactly this rank's block of
 * big[i], block rank * nbufs + i (nccl.h: all-gather in place "if
 * sendbuff == recvbuff + rank * sendcount"). Any other overlap is a race
 * on the GPU, where NCCL overwrites what it has still to read: refused
 * on every path alike. */
static dcoll_status_t check_alias(const char *fn, const void *const *small,
                                  const char *sname, const void *const *big,
                                  const char *bname, int nbufs, size_t bytes,
                                  int blocks, int rank)
{
    size_t whole = bytes * (size_t)blocks;
    for (int i = 0; i < nbufs && bytes; i++) {
        uintptr_t s = (uintptr_t)small[i], b = (uintptr_t)big[i];
        size_t mine = (size_t)rank * (size_t)nbufs + (size_t)i;
        if (s + bytes <= b || b + whole <= s || s == b + mine * bytes)
            continue;
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s[%d] overlaps "
                           "%s[%d] (at byte %lld of it) but is not this "
                           "rank's block %zu of it (byte %zu): in place, "
                           "it must be exactly that block", fn, sname, i,
                           bname, i, (long long)((intptr_t)s - (intptr_t)b),
                           mine, mine * bytes);
    }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_all_gather_multi(dcoll_group_t *group,
                                      const void *const *sendbufs,
                                      void *const *recvbufs, int nbufs,
                                      int64_t count, dcoll_dtype_t dtype,
                                      const dcoll_coll_opts_t *opts,
                                      dcoll_work_t **work)
{
    static const char fn[] = "dcoll_all_gather_multi";
    struct dcoll_group *g;
    struct mirrors mr;
    bool done;
    dcoll_status_t st = check_bufs(fn, opts, sendbufs, "sendbufs", nbufs, count, 1,
                                   dtype);
    if (st || outside(group, DCOLL_COLL_ALL_GATHER, fn, work, &st, &g))
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_GATHER, fn, work != NULL,
                                st);
    int size = g->size;
    size_t bytes = (size_t)count * dcoll_dtype_sizes[dtype];
    if ((st = check_bufs(fn, opts, (const void *const *)recvbufs, "recvbufs",
                         nbufs, count, size, dtype)) ||
        (st = check_alias(fn, sendbufs, "sendbufs",
                          (const void *const *)recvbufs, "recvbufs", nbufs,
                          bytes, size * nbufs, g->rank)))
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_GATHER, fn, work != NULL,
                                st);
    size_t all = bytes * (size_t)nbufs * (size_t)size;
    struct dcoll_multi_call mc = {
        .kind = DCOLL_COLL_ALL_GATHER, .send = sendbufs, .recv = recvbufs,
        .n = nbufs, .count = count, .dtype = dtype, .opts = opts, .fn = fn};
    if ((st = on_gpu(group, g, &mc, 0, bytes, all, work, &mr, &done)) || done)
        return st;
    sendbufs = (const void *const *)host_list(mr.in, (void *const *)sendbufs);
    recvbufs = host_list(mr.out, recvbufs);
    /* This rank's buffers side by side: one block per rank to gather. */
    struct multi *m = multi_new(g, fn, recvbufs, nbufs, bytes * (size_t)nbufs,
                                &mr);
    if (!m)
        return DCOLL_ERR_NO_MEMORY;
    for (int i = 0; i < nbufs && bytes; i++)
        memcpy((char *)m->tmp + (size_t)i * bytes, sendbufs[i], bytes);
    m->from = recvbufs[0];
    m->bytes = all;
    struct dcoll_coll c = {.kind = DCOLL_COLL_ALL_GATHER, .sendbuf = m->tmp,
                           .recvbuf = recvbufs[0],
                           .count = count * nbufs, .dtype = dtype,
                           .opts = opts, .fn = fn};
    return run(group, &c, 0, m, work);
}

dcoll_status_t dcoll_reduce_scatter_multi(dcoll_group_t *group,
                                          const void *const *sendbufs,
                                          void *const *recvbufs, int nbufs,
                                          int64_t count, dcoll_dtype_t dtype,
                                          dcoll_op_t op,
                                          const dcoll_coll_opts_t *opts,
                                          dcoll_work_t **work)
{
    static const char fn[] = "dcoll_reduce_scatter_multi";
    struct dcoll_group *g;
    struct mirrors mr;
    bool done;
    dcoll_status_t st = check_bufs(fn, opts, (const void *const *)recvbufs,
                                   "recvbufs", nbufs, count, 1, dtype);
    if (st || (st = dcoll_check_dtype_op(fn, dtype, op, true)) ||
        outside(group, DCOLL_COLL_REDUCE_SCATTER, fn, work, &st, &g))
        return dcoll_coll_refuse(group, DCOLL_COLL_REDUCE_SCATTER, fn, work != NULL,
                                st);
    int size = g->size;
    size_t bytes = (size_t)count * dcoll_dtype_sizes[dtype];
    if ((st = check_bufs(fn, opts, sendbufs, "sendbufs", nbufs, count, size,
                         dtype)) ||
        (st = check_alias(fn, (const void *const *)recvbufs, "recvbufs",
                          sendbufs, "sendbufs", nbufs, bytes, size * nbufs,
                          g->rank)))
        return dcoll_coll_refuse(group, DCOLL_COLL_REDUCE_SCATTER, fn, work != NULL,
                                st);
    size_t in = bytes * (size_t)nbufs * (size_t)size;
    struct dcoll_multi_call mc = {
        .kind = DCOLL_COLL_REDUCE_SCATTER, .send = sendbufs,
        .recv = recvbufs, .n = nbufs, .count = count, .dtype = dtype,
        .op = op, .opts = opts, .fn = fn};
    if ((st = on_gpu(group, g, &mc, 0, in, bytes, work, &mr, &done)) || done)
        return st;
    sendbufs = (const void *const *)host_list(mr.in, (void *const *)sendbufs);
    recvbufs = host_list(mr.out, recvbufs);
    /* The inputs combined in a copy, then this rank's nbufs blocks. */
    struct multi *m = multi_new(g, fn, recvbufs, nbufs,
                                in + bytes * (size_t)nbufs, &mr);
    if (!m)
        return DCOLL_ERR_NO_MEMORY;
    int64_t all = count * nbufs * size;
    if (in)
        memcpy(m->tmp, sendbufs[0], in);
    for (int i = 1; i < nbufs; i++)
        dcoll_fold(m->tmp, sendbufs[i], all, dtype, op);
    char *res = (char *)m->tmp + in;
    m->from = res;
    m->bytes = bytes;
    m->stride = bytes;
    avg_later(m, op, nbufs, res, count * nbufs, dtype);
    struct dcoll_coll c = {.kind = DCOLL_COLL_REDUCE_SCATTER,
                           .sendbuf = m->tmp, .recvbuf = res,
                           .count = count * nbufs, .dtype = dtype, .op = op,
                           .opts = opts, .fn = fn};
    return run(group, &c, 0, m, work);
}
