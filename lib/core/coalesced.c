/* Coalesced collectives: many buffers packed into one operation. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "gpu.h"

struct pack {
    char *send;            /* packed inputs */
    char *recv;            /* packed outputs (== send for all_reduce) */
    struct dcoll_group *group;
    bool own;              /* send is ours to free, not the group's stage */
    int n;
    int size;              /* group size, for all_gather */
    size_t esz;
    int64_t total;         /* elements over all buffers, one rank */
    void **out;            /* copies of the caller's arrays */
    int64_t *counts;
};

static void pack_free(struct pack *p)
{
    dcoll_kept_give(&p->group->stage, p->send, p->own, free);
    free(p->out);
    free(p);
}

/* Validate n buffers of counts; the total in elements goes to *total. */
static dcoll_status_t check_list(const char *fn, const void *const *bufs,
                                 const char *name, const int64_t *counts,
                                 int n, dcoll_dtype_t dtype, int64_t *total)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (n < 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: n %d is negative",
                           fn, n);
    if (n > 0 && (!bufs || !counts))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL with "
                           "n %d", fn, !counts ? "counts" : name, n);
    if ((st = dcoll_check_dtype_op(fn, dtype, DCOLL_SUM, false)))
        return st;
    int64_t limit = INT64_MAX / (int64_t)dcoll_dtype_sizes[dtype], sum = 0;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: counts[%d] = %lld is negative", fn, i,
                               (long long)counts[i]);
        if (counts[i] > limit - sum)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: counts[%d] = %lld makes the total "
                               "overflow a 64-bit size", fn, i,
                               (long long)counts[i]);
        if (!bufs[i] && counts[i] > 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: %s[%d] is NULL with count %lld", fn,
                               name, i, (long long)counts[i]);
        /* Packing copies with memcpy: host memory only, for now. */
        if (DCOLL_UNLIKELY(dcoll_on_device(bufs[i])))
            return dcoll_error(DCOLL_ERR_UNSUPPORTED,
                               "%s: %s[%d] is on the GPU; coalesced calls "
                               "take host buffers in this build", fn, name,
                               i);
        sum += counts[i];
    }
    *total = sum;
    return DCOLL_SUCCESS;
}

static struct pack *pack_new(const char *fn, struct dcoll_group *g,
                             void *const *out, const int64_t *counts, int n,
                             size_t esz, int64_t total, bool separate_recv)
{
    struct pack *p = calloc(1, sizeof(*p));
    size_t bytes = (size_t)total * esz;
    size_t size = separate_recv ? (size_t)g->size : 0;
    if (!p)
        goto oom;
    p->group = g;
    p->n = n;
    p->size = g->size;
    p->esz = esz;
    p->total = total;
    p->out = malloc((sizeof(void *) + sizeof(int64_t)) * (size_t)n + 1);
    p->send = dcoll_kept_take(&g->stage, bytes + bytes * size, &p->own,
                              malloc, free);
    if (!p->out || !p->send)
        goto oom;
    p->recv = separate_recv ? p->send + bytes : p->send;
    p->counts = (int64_t *)(p->out + n);
    memcpy(p->out, out, sizeof(void *) * (size_t)n);
    memcpy(p->counts, counts, sizeof(int64_t) * (size_t)n);
    return p;
oom:
    if (p)
        pack_free(p);
    dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory to pack %lld elements",
                fn, (long long)total);
    return NULL;
}

static dcoll_status_t unpack_reduce(struct pack *p, dcoll_status_t st)
{
    if (!st) {
        const char *src = p->recv;
        for (int i = 0; i < p->n; i++) {
            size_t b = (size_t)p->counts[i] * p->esz;
            if (b)
                memcpy(p->out[i], src, b);
            src += b;
        }
    }
    pack_free(p);
    return st;
}

static dcoll_status_t unpack_gather(struct pack *p, dcoll_status_t st)
{
    if (!st) {
        size_t stride = (size_t)p->total * p->esz, off = 0;
        for (int i = 0; i < p->n; i++) {
            size_t b = (size_t)p->counts[i] * p->esz;
            for (int r = 0; r < p->size && b; r++)
                memcpy((char *)p->out[i] + (size_t)r * b,
                       p->recv + (size_t)r * stride + off, b);
            off += b;
        }
    }
    pack_free(p);
    return st;
}

static dcoll_status_t finish_reduce(struct dcoll_work *w, dcoll_status_t st)
{
    return unpack_reduce(w->finish_data, st);
}

static dcoll_status_t finish_gather(struct dcoll_work *w, dcoll_status_t st)
{
    return unpack_gather(w->finish_data, st);
}

dcoll_status_t dcoll_all_reduce_coalesced(dcoll_group_t *group,
                                          void *const *bufs,
                                          const int64_t *counts, int n,
                                          dcoll_dtype_t dtype, dcoll_op_t op,
                                          const dcoll_coll_opts_t *opts,
                                          dcoll_work_t **work)
{
    int64_t total;
    struct dcoll_group *g;
    dcoll_status_t st = check_list(__func__, (const void *const *)bufs,
                                   "bufs", counts, n, dtype, &total);
    if (st)
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_REDUCE, __func__,
                                 work != NULL, st);
    if ((st = dcoll_group_resolve(group, &g, __func__)))
        return st;
    struct dcoll_coll c = {.kind = DCOLL_COLL_ALL_REDUCE, .dtype = dtype,
                           .op = op, .opts = opts, .fn = __func__};
    /* One buffer, or none to move (NON-MEMBER, nothing at all): no pack. */
    if (n == 1 || total == 0 || g->rank == DCOLL_NON_MEMBER) {
        c.sendbuf = c.recvbuf = n == 1 ? bufs[0] : NULL;
        c.count = n == 1 ? counts[0] : 0;
        return dcoll_coll_run(group, &c, 0, work, NULL);
    }
    if ((st = dcoll_check_dtype_op(__func__, dtype, op, true)))
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_REDUCE, __func__,
                                 work != NULL, st);
    size_t esz = dcoll_dtype_sizes[dtype];
    struct pack *p = pack_new(__func__, g, bufs, counts, n, esz, total,
                              false);
    if (!p)
        return DCOLL_ERR_NO_MEMORY;
    char *dst = p->send;
    for (int i = 0; i < n; i++) {
        size_t b = (size_t)counts[i] * esz;
        if (b)
            memcpy(dst, bufs[i], b);
        dst += b;
    }
    c.sendbuf = c.recvbuf = p->send;
    c.count = total;
    st = dcoll_coll_run(group, &c, 0, work, NULL);
    if (st || !work)
        return unpack_reduce(p, st);
    (*work)->finish = finish_reduce;
    (*work)->finish_data = p;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_all_gather_coalesced(dcoll_group_t *group,
                                          const void *const *sendbufs,
                                          void *const *recvbufs,
                                          const int64_t *counts, int n,
                                          dcoll_dtype_t dtype,
                                          const dcoll_coll_opts_t *opts,
                                          dcoll_work_t **work)
{
    int64_t total;
    struct dcoll_group *g;
    dcoll_status_t st = check_list(__func__, sendbufs, "sendbufs", counts, n,
                                   dtype, &total);
    if (st || (st = check_list(__func__, (const void *const *)recvbufs,
                               "recvbufs", counts, n, dtype, &total)))
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_GATHER, __func__,
                                 work != NULL, st);
    if ((st = dcoll_group_resolve(group, &g, __func__)))
        return st;
    struct dcoll_coll c = {.kind = DCOLL_COLL_ALL_GATHER, .dtype = dtype,
                           .opts = opts, .fn = __func__};
    if (total == 0 || g->rank == DCOLL_NON_MEMBER)
        return dcoll_coll_run(group, &c, 0, work, NULL);
    size_t esz = dcoll_dtype_sizes[dtype];
    if (total > INT64_MAX / (int64_t)esz / g->size)
        return dcoll_coll_refuse(
            group, DCOLL_COLL_ALL_GATHER, __func__, work != NULL,
            dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %lld elements from "
                        "%d ranks overflow a 64-bit size", __func__,
                        (long long)total, g->size));
    struct pack *p = pack_new(__func__, g, recvbufs, counts, n, esz, total,
                              true);
    if (!p)
        return DCOLL_ERR_NO_MEMORY;
    char *dst = p->send;
    for (int i = 0; i < n; i++) {
        size_t b = (size_t)counts[i] * esz;
        if (b)
            memcpy(dst, sendbufs[i], b);
        dst += b;
    }
    c.sendbuf = p->send;
    c.recvbuf = p->recv;
    c.count = total;
    st = dcoll_coll_run(group, &c, 0, work, NULL);
    if (st || !work)
        return unpack_gather(p, st);
    (*work)->finish = finish_gather;
    (*work)->finish_data = p;
    return DCOLL_SUCCESS;
}
