/* Strided layouts (dcoll_layout_t): their checks, and the strided send
 * and receive, which are send and recv calls with a layout in the
 * descriptor; the MPI layer makes the vector type. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include "core.h"
#include "dcoll/plan.h"

/* Layout l's refusal: its name (name[at] where at >= 0) in the message,
 * formatted only here, off the path of a good call. */
static __attribute__((cold, format(printf, 6, 7))) dcoll_status_t
bad(dcoll_status_t st, const char *fn, const char *name, int at,
    const char *field, const char *fmt, ...)
{
    char who[48], why[160];
    if (at >= 0)
        snprintf(who, sizeof(who), "%s[%d]", name, at);
    else
        snprintf(who, sizeof(who), "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return dcoll_error(st, "%s: %s%s%s %s", fn, who, field ? "." : "",
                       field ? field : "", why);
}

dcoll_status_t dcoll_layout_check(const char *fn, const char *name, int at,
                                  const dcoll_layout_t *l, int64_t *elems,
                                  int64_t *extent)
{
    const dcoll_status_t inv = DCOLL_ERR_INVALID_ARGUMENT;
    if (!l)
        return bad(inv, fn, name, at, NULL, "is NULL");
    const int64_t v[6] = {l->offset, l->count, l->blocklen, l->stride,
                          l->count2, l->stride2};
    static const char *const field[6] = {"offset", "count", "blocklen",
                                         "stride", "count2", "stride2"};
    for (int i = 0; i < 6; i++) {
        if (v[i] < 0)
            return bad(inv, fn, name, at, field[i], "= %lld is negative",
                       (long long)v[i]);
        if (i > 0 && v[i] > INT_MAX)
            return bad(DCOLL_ERR_UNSUPPORTED, fn, name, at, field[i],
                       "= %lld is above INT_MAX, the most MPI's vector "
                       "types take", (long long)v[i]);
    }
    if (l->count > 1 && l->stride < l->blocklen)
        return bad(inv, fn, name, at, "stride", "= %lld is below its "
                   "blocklen %lld, so its blocks overlap",
                   (long long)l->stride, (long long)l->blocklen);
    /* Each product below is of two fields under 2^31: no overflow. */
    int64_t one = l->count * l->blocklen, reps = l->count2 > 1 ? l->count2
                                                                : 1;
    int64_t span = one ? (l->count - 1) * l->stride + l->blocklen : 0;
    if (reps > 1 && one && l->stride2 < span)
        return bad(inv, fn, name, at, "stride2", "= %lld is below the %lld "
                   "elements one pattern spans, so its patterns overlap",
                   (long long)l->stride2, (long long)span);
    if (one)
        span += (reps - 1) * l->stride2;
    /* Below 2^60 elements no byte count overflows (16-byte elements). */
    if (span > DCOLL_LAYOUT_MOST)
        return bad(inv, fn, name, at, NULL, "spans %lld elements, more "
                   "than the 2^60 a layout may", (long long)span);
    if (l->offset > DCOLL_LAYOUT_MOST - span)
        return bad(inv, fn, name, at, "offset", "= %lld is too large: with "
                   "the %lld elements the layout spans it ends past 2^60",
                   (long long)l->offset, (long long)span);
    /* Within the span, which holds them apart: at most 2^60. */
    *elems = one * reps;
    *extent = *elems ? l->offset + span : 0;
    return DCOLL_SUCCESS;
}

/* A strided send or receive (kind), as a call or (planned) a plan:
 * the layout checked, then the send or recv path with it in the
 * descriptor. A bad layout is refused as those paths refuse their own
 * arguments. */
static dcoll_status_t strided(const char *fn, enum dcoll_coll_kind kind,
                              dcoll_group_t *group, const void *buf,
                              const dcoll_layout_t *layout,
                              dcoll_dtype_t dtype, int peer, int tag,
                              const dcoll_coll_opts_t *opts,
                              dcoll_work_t **work, int *source,
                              bool planned, dcoll_plan_t **plan)
{
    int64_t n = 0, ext;
    dcoll_status_t st = dcoll_opts_refused(fn, opts);
    if (!st)
        st = dcoll_layout_check(fn, "layout", -1, layout, &n, &ext);
    bool send = kind == DCOLL_COLL_SEND;
    struct dcoll_coll c = {
        .kind = kind, .sendbuf = send ? buf : NULL,
        .recvbuf = send ? NULL : (void *)buf, .count = n, .dtype = dtype,
        .tag = tag, .opts = opts, .layout = st ? NULL : layout, .fn = fn};
    if (planned)
        return dcoll_plan_make(group, &c, peer, st, plan);
    if (st)
        return dcoll_coll_refuse(group, kind, fn, work != NULL, st);
    return dcoll_coll_run(group, &c, peer, work, source);
}

dcoll_status_t dcoll_send_layout(dcoll_group_t *group, const void *buf,
                                 const dcoll_layout_t *layout,
                                 dcoll_dtype_t dtype, int dst, int tag,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_work_t **work)
{
    return strided(__func__, DCOLL_COLL_SEND, group, buf, layout, dtype, dst,
                   tag, opts, work, NULL, false, NULL);
}

dcoll_status_t dcoll_recv_layout(dcoll_group_t *group, void *buf,
                                 const dcoll_layout_t *layout,
                                 dcoll_dtype_t dtype, int src, int tag,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_work_t **work, int *source)
{
    return strided(__func__, DCOLL_COLL_RECV, group, buf, layout, dtype, src,
                   tag, opts, work, source, false, NULL);
}

dcoll_status_t dcoll_send_layout_plan(dcoll_group_t *group, const void *buf,
                                      const dcoll_layout_t *layout,
                                      dcoll_dtype_t dtype, int dst, int tag,
                                      const dcoll_coll_opts_t *opts,
                                      dcoll_plan_t **plan)
{
    return strided(__func__, DCOLL_COLL_SEND, group, buf, layout, dtype, dst,
                   tag, opts, NULL, NULL, true, plan);
}

dcoll_status_t dcoll_recv_layout_plan(dcoll_group_t *group, void *buf,
                                      const dcoll_layout_t *layout,
                                      dcoll_dtype_t dtype, int src, int tag,
                                      const dcoll_coll_opts_t *opts,
                                      dcoll_plan_t **plan)
{
    return strided(__func__, DCOLL_COLL_RECV, group, buf, layout, dtype, src,
                   tag, opts, NULL, NULL, true, plan);
}
