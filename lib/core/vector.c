/* The vector collectives: a count per rank. The public calls fill the
 * descriptor's arrays; dcoll_vec_check, called by the public path once the
 * group and root are known, checks them against the group, finds in-place
 * use and refuses overlapping buffers. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "core.h"
#include "dcoll/plan.h"

/* One array of counts (and its displacements) over n entries: every
 * entry in range; *extent = elements the layout spans. */
dcoll_status_t dcoll_vec_array(const char *fn, const char *name,
                                  const char *dname, const int64_t *counts,
                                  const int64_t *displs, int n,
                                  int64_t *extent)
{
    /* NULL where there is nothing to count (a rank with no neighbours). */
    if (!counts && n > 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           name);
    int64_t end = 0, packed = 0;
    for (int i = 0; i < n; i++) {
        int64_t c = counts[i], d = displs ? displs[i] : packed;
        if (c < 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s[%d] = "
                               "%lld is negative", fn, name, i, (long long)c);
        if (displs && d < 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s[%d] = "
                               "%lld is negative", fn, dname, i, (long long)d);
        if (c > INT_MAX || d > INT_MAX)
            return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: %s[%d] = %lld is "
                               "above INT_MAX, the most MPI's vector "
                               "collectives take", fn, c > INT_MAX ? name
                               : dname, i, (long long)(c > INT_MAX ? c : d));
        packed += c;
        if (d + c > end)
            end = d + c;
    }
    *extent = end;
    return DCOLL_SUCCESS;
}

/* Where block i starts: displs[i], or after the blocks before it. */
static int64_t start_of(const int64_t *counts, const int64_t *displs, int i)
{
    if (displs)
        return displs[i];
    int64_t at = 0;
    for (int k = 0; k < i; k++)
        at += counts[k];
    return at;
}

dcoll_status_t dcoll_vec_need(const char *fn, const struct dcoll_coll *c,
                              const char *name, const void *p, int64_t elems)
{
    if (!p && elems > 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL with "
                           "%lld elements to %s", fn, name, (long long)elems,
                           name[0] == 's' ? "send" : "receive");
    return dcoll_bound(fn, c, name[0] == 's', name, elems);
}

static dcoll_status_t same_count(const char *fn, const char *own,
                                 int64_t mine, const char *name, int at,
                                 int64_t theirs)
{
    if (mine == theirs)
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %lld differs from "
                       "%s[%d] = %lld, this rank's entry", fn, own,
                       (long long)mine, name, at, (long long)theirs);
}

/* Not in place: the send and receive ranges must not meet. */
static dcoll_status_t apart(const char *fn, const struct dcoll_coll *c,
                            int64_t sendn, int64_t recvn, size_t esz)
{
    uintptr_t s = (uintptr_t)c->sendbuf, r = (uintptr_t)c->recvbuf;
    size_t sb = (size_t)sendn * esz, rb = (size_t)recvn * esz;
    if (!c->in_place && s && r && sb && rb && s < r + rb && r < s + sb)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: sendbuf and "
                           "recvbuf overlap; in place needs %s", fn,
                           dcoll_kinds[c->kind].rule);
    return DCOLL_SUCCESS;
}

/* all_gatherv, and gatherv and scatterv on the root: one side holds every
 * rank's block (the receive side when gathering), the other this rank's
 * own count, and the call is in place when the own side sits at this
 * rank's block of the whole. where: " (on the root)" or "". */
static dcoll_status_t whole_and_own(const char *fn, struct dcoll_coll *c,
                                    int n, int me, bool gather,
                                    const char *where)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    const char *array = gather ? "recvcounts" : "sendcounts";
    const char *whole = gather ? c->recvbuf : c->sendbuf;
    const char *own = gather ? c->sendbuf : c->recvbuf;
    char aname[40], wname[40];
    snprintf(aname, sizeof(aname), "%s%s", array, where);
    snprintf(wname, sizeof(wname), "%s%s", gather ? "recvbuf" : "sendbuf",
             where);
    int64_t ext = 0;
    dcoll_status_t st;
    if ((st = dcoll_vec_array(fn, aname, "displs", c->counts, c->displs, n,
                          &ext)) ||
        (st = same_count(fn, gather ? "sendcount" : "recvcount", c->count,
                         array, me, c->counts[me])) ||
        (st = dcoll_vec_need(fn, c, wname, whole, ext)))
        return st;
    /* sendbuf == recvbuf too, as MPI_IN_PLACE (see check_layout in
     * collectives.c): this rank's block already at its displacement. */
    c->in_place = whole && (own == whole ||
                            own == whole + (size_t)start_of(c->counts,
                                                            c->displs, me) *
                                               esz);
    if (!c->in_place &&
        (st = dcoll_vec_need(fn, c, gather ? "sendbuf" : "recvbuf", own,
                             c->count)))
        return st;
    return gather ? apart(fn, c, c->count, ext, esz)
                  : apart(fn, c, ext, c->count, esz);
}

dcoll_status_t dcoll_vec_check(const char *fn, const struct dcoll_group *g,
                               struct dcoll_coll *c)
{
    int n = g->size, me = g->rank;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t ext = 0, ext2 = 0;
    const char *s = c->sendbuf;
    char *r = c->recvbuf;
    dcoll_status_t st;
    switch (c->kind) {
    case DCOLL_COLL_ALL_GATHERV:
        return whole_and_own(fn, c, n, me, true, "");
    case DCOLL_COLL_GATHERV:
        if (me != c->root) {
            /* The root's arguments mean nothing here, as in MPI. */
            c->recvbuf = NULL;
            c->counts = c->displs = NULL;
            return dcoll_vec_need(fn, c, "sendbuf", s, c->count);
        }
        return whole_and_own(fn, c, n, me, true, " (on the root)");
    case DCOLL_COLL_SCATTERV:
        if (me != c->root) {
            c->sendbuf = NULL;
            c->counts = c->displs = NULL;
            return dcoll_vec_need(fn, c, "recvbuf", r, c->count);
        }
        return whole_and_own(fn, c, n, me, false, " (on the root)");
    case DCOLL_COLL_ALL_TO_ALLV:
        if ((st = dcoll_vec_array(fn, "recvcounts", "rdispls", c->counts2,
                              c->displs2, n, &ext2)) ||
            (st = dcoll_vec_need(fn, c, "recvbuf", r, ext2)))
            return st;
        c->in_place = s && s == r;
        if (c->in_place) {
            c->counts = c->displs = NULL;
            c->count = ext2;
            return DCOLL_SUCCESS;
        }
        if ((st = dcoll_vec_array(fn, "sendcounts", "sdispls", c->counts,
                              c->displs, n, &ext)) ||
            (st = dcoll_vec_need(fn, c, "sendbuf", s, ext)))
            return st;
        c->count = ext;
        return apart(fn, c, ext, ext2, esz);
    default: { /* DCOLL_COLL_REDUCE_SCATTERV */
        if ((st = dcoll_vec_array(fn, "recvcounts", "", c->counts, NULL, n,
                              &ext)) ||
            (st = dcoll_vec_need(fn, c, "sendbuf", s, ext)))
            return st;
        c->count = c->counts[me];
        /* r == s too: the result at the front, as MPI_IN_PLACE. */
        c->in_place = s && (r == s || r == s + (size_t)start_of(c->counts,
                                                               NULL, me) *
                                                  esz);
        if (!c->in_place &&
            (st = dcoll_vec_need(fn, c, "recvbuf", r, c->count)))
            return st;
        return apart(fn, c, ext, c->count, esz);
    }
    }
}

/* The scalar counts the public calls take: never negative. */
static dcoll_status_t count_ok(const char *fn, const char *name, int64_t n)
{
    if (n < 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %lld is "
                           "negative", fn, name, (long long)n);
    if (n > INT_MAX)
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: %s %lld is above "
                           "INT_MAX, the most MPI's vector collectives take",
                           fn, name, (long long)n);
    return DCOLL_SUCCESS;
}

#define COLL(...) struct dcoll_coll c = {__VA_ARGS__}

dcoll_status_t (dcoll_all_gatherv)(dcoll_group_t *group, const void *sendbuf,
                                 int64_t sendcount, void *recvbuf,
                                 const int64_t *recvcounts,
                                 const int64_t *displs, dcoll_dtype_t dtype,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_work_t **work)
{
    dcoll_status_t st = dcoll_opts_refused(__func__, opts);
    if (!st)
        st = count_ok(__func__, "sendcount", sendcount);
    if (st)
        return dcoll_coll_refuse(group, DCOLL_COLL_ALL_GATHERV, __func__,
                                 work != NULL, st);
    COLL(.kind = DCOLL_COLL_ALL_GATHERV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = sendcount, .dtype = dtype,
         .counts = recvcounts, .displs = displs, .opts = opts);
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t (dcoll_gatherv)(dcoll_group_t *group, const void *sendbuf,
                             int64_t sendcount, void *recvbuf,
                             const int64_t *recvcounts, const int64_t *displs,
                             dcoll_dtype_t dtype, int root,
                             const dcoll_coll_opts_t *opts,
                             dcoll_work_t **work)
{
    dcoll_status_t st = dcoll_opts_refused(__func__, opts);
    if (!st)
        st = count_ok(__func__, "sendcount", sendcount);
    if (st)
        return dcoll_coll_refuse(group, DCOLL_COLL_GATHERV, __func__,
                                 work != NULL, st);
    COLL(.kind = DCOLL_COLL_GATHERV, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = sendcount, .dtype = dtype, .counts = recvcounts,
         .displs = displs, .opts = opts);
    return dcoll_coll_run(group, &c, root, work, NULL);
}

dcoll_status_t (dcoll_scatterv)(dcoll_group_t *group, const void *sendbuf,
                              const int64_t *sendcounts,
                              const int64_t *displs, void *recvbuf,
                              int64_t recvcount, dcoll_dtype_t dtype,
                              int root, const dcoll_coll_opts_t *opts,
                              dcoll_work_t **work)
{
    dcoll_status_t st = dcoll_opts_refused(__func__, opts);
    if (!st)
        st = count_ok(__func__, "recvcount", recvcount);
    if (st)
        return dcoll_coll_refuse(group, DCOLL_COLL_SCATTERV, __func__,
                                 work != NULL, st);
    COLL(.kind = DCOLL_COLL_SCATTERV, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = recvcount, .dtype = dtype, .counts = sendcounts,
         .displs = displs, .opts = opts);
    return dcoll_coll_run(group, &c, root, work, NULL);
}

dcoll_status_t (dcoll_all_to_allv)(dcoll_group_t *group, const void *sendbuf,
                                 const int64_t *sendcounts,
                                 const int64_t *sdispls, void *recvbuf,
                                 const int64_t *recvcounts,
                                 const int64_t *rdispls, dcoll_dtype_t dtype,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_ALL_TO_ALLV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .counts = sendcounts,
         .displs = sdispls, .counts2 = recvcounts, .displs2 = rdispls,
         .opts = opts);
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

dcoll_status_t (dcoll_reduce_scatterv)(dcoll_group_t *group,
                                     const void *sendbuf, void *recvbuf,
                                     const int64_t *recvcounts,
                                     dcoll_dtype_t dtype, dcoll_op_t op,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_work_t **work)
{
    COLL(.kind = DCOLL_COLL_REDUCE_SCATTERV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .op = op, .counts = recvcounts,
         .opts = opts);
    return dcoll_coll_run(group, &c, 0, work, NULL);
}

/* Their plans (lib/core/plan.c): the same descriptors. */
dcoll_status_t dcoll_all_gatherv_plan(dcoll_group_t *group,
                                      const void *sendbuf, int64_t sendcount,
                                      void *recvbuf,
                                      const int64_t *recvcounts,
                                      const int64_t *displs,
                                      dcoll_dtype_t dtype,
                                      const dcoll_coll_opts_t *opts,
                                      dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_ALL_GATHERV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .count = sendcount, .dtype = dtype,
         .counts = recvcounts, .displs = displs, .opts = opts,
         .fn = __func__);
    return dcoll_plan_make(group, &c, 0,
                           count_ok(__func__, "sendcount", sendcount), plan);
}

dcoll_status_t dcoll_gatherv_plan(dcoll_group_t *group, const void *sendbuf,
                                  int64_t sendcount, void *recvbuf,
                                  const int64_t *recvcounts,
                                  const int64_t *displs, dcoll_dtype_t dtype,
                                  int root, const dcoll_coll_opts_t *opts,
                                  dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_GATHERV, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = sendcount, .dtype = dtype, .counts = recvcounts,
         .displs = displs, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, root,
                           count_ok(__func__, "sendcount", sendcount), plan);
}

dcoll_status_t dcoll_scatterv_plan(dcoll_group_t *group, const void *sendbuf,
                                   const int64_t *sendcounts,
                                   const int64_t *displs, void *recvbuf,
                                   int64_t recvcount, dcoll_dtype_t dtype,
                                   int root, const dcoll_coll_opts_t *opts,
                                   dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_SCATTERV, .sendbuf = sendbuf, .recvbuf = recvbuf,
         .count = recvcount, .dtype = dtype, .counts = sendcounts,
         .displs = displs, .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, root,
                           count_ok(__func__, "recvcount", recvcount), plan);
}

dcoll_status_t dcoll_all_to_allv_plan(dcoll_group_t *group,
                                      const void *sendbuf,
                                      const int64_t *sendcounts,
                                      const int64_t *sdispls, void *recvbuf,
                                      const int64_t *recvcounts,
                                      const int64_t *rdispls,
                                      dcoll_dtype_t dtype,
                                      const dcoll_coll_opts_t *opts,
                                      dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_ALL_TO_ALLV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .counts = sendcounts,
         .displs = sdispls, .counts2 = recvcounts, .displs2 = rdispls,
         .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

dcoll_status_t dcoll_reduce_scatterv_plan(dcoll_group_t *group,
                                          const void *sendbuf, void *recvbuf,
                                          const int64_t *recvcounts,
                                          dcoll_dtype_t dtype, dcoll_op_t op,
                                          const dcoll_coll_opts_t *opts,
                                          dcoll_plan_t **plan)
{
    COLL(.kind = DCOLL_COLL_REDUCE_SCATTERV, .sendbuf = sendbuf,
         .recvbuf = recvbuf, .dtype = dtype, .op = op, .counts = recvcounts,
         .opts = opts, .fn = __func__);
    return dcoll_plan_make(group, &c, 0, 0, plan);
}

/* The int forms: the arrays widened to int64_t, then the calls above.
 * Only arrays that call reads are read: on a rank that is not the root,
 * gatherv's and scatterv's arrays are not (MPI lets them be anything). A
 * group this rank cannot read the size of goes on with no arrays, so the
 * call above gives that group's own error. */
struct wide {
    int64_t stack[4][64];
    int64_t *heap;
    int n;            /* entries per array; 0: none widened */
};

/* Room for the copies; no memory is this rank's refusal of call kind. */
static dcoll_status_t widen_begin(const char *fn, dcoll_group_t *group,
                                  enum dcoll_coll_kind kind, int root,
                                  bool rooted, bool async, struct wide *w)
{
    int n = 0, me = -1, at = -1;
    w->heap = NULL;
    w->n = 0;
    /* root is a world rank; this rank is the root where its group rank
     * is root's (a root outside the group: the call above refuses it). */
    if (dcoll_group_size(group, &n) || dcoll_group_rank(group, &me) ||
        n < 1 ||
        (rooted && (dcoll_group_group_rank(group, root, &at) || me != at)))
        return DCOLL_SUCCESS;
    if (n > 64 && !(w->heap = malloc(sizeof(int64_t) * 4 * (size_t)n)))
        return dcoll_coll_refuse(group, kind, fn, async,
                                 dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no "
                                             "memory for the 64-bit copies "
                                             "of %d counts", fn, n));
    w->n = n;
    return DCOLL_SUCCESS;
}

/* Array k of w holding a's entries, or NULL for NULL (or none read). */
static const int64_t *widen(struct wide *w, int k, const int *a)
{
    if (!a || !w->n)
        return NULL;
    int64_t *to = w->heap ? w->heap + (size_t)k * (size_t)w->n
                          : w->stack[k];
    for (int i = 0; i < w->n; i++)
        to[i] = a[i];
    return to;
}

dcoll_status_t dcoll_all_gatherv_int(dcoll_group_t *group,
                                     const void *sendbuf, int sendcount,
                                     void *recvbuf, const int *recvcounts,
                                     const int *displs, dcoll_dtype_t dtype,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_work_t **work)
{
    struct wide w;
    dcoll_status_t st = widen_begin(__func__, group, DCOLL_COLL_ALL_GATHERV, 0, false,
                                    work != NULL, &w);
    if (st)
        return st;
    st = (dcoll_all_gatherv)(group, sendbuf, sendcount, recvbuf,
                             widen(&w, 0, recvcounts), widen(&w, 1, displs),
                             dtype, opts, work);
    free(w.heap);
    return st;
}

dcoll_status_t dcoll_gatherv_int(dcoll_group_t *group, const void *sendbuf,
                                 int sendcount, void *recvbuf,
                                 const int *recvcounts, const int *displs,
                                 dcoll_dtype_t dtype, int root,
                                 const dcoll_coll_opts_t *opts,
                                 dcoll_work_t **work)
{
    struct wide w;
    dcoll_status_t st = widen_begin(__func__, group, DCOLL_COLL_GATHERV, root, true,
                                    work != NULL, &w);
    if (st)
        return st;
    st = (dcoll_gatherv)(group, sendbuf, sendcount, recvbuf,
                         widen(&w, 0, recvcounts), widen(&w, 1, displs),
                         dtype, root, opts, work);
    free(w.heap);
    return st;
}

dcoll_status_t dcoll_scatterv_int(dcoll_group_t *group, const void *sendbuf,
                                  const int *sendcounts, const int *displs,
                                  void *recvbuf, int recvcount,
                                  dcoll_dtype_t dtype, int root,
                                  const dcoll_coll_opts_t *opts,
                                  dcoll_work_t **work)
{
    struct wide w;
    dcoll_status_t st = widen_begin(__func__, group, DCOLL_COLL_SCATTERV, root, true,
                                    work != NULL, &w);
    if (st)
        return st;
    st = (dcoll_scatterv)(group, sendbuf, widen(&w, 0, sendcounts),
                          widen(&w, 1, displs), recvbuf, recvcount, dtype,
                          root, opts, work);
    free(w.heap);
    return st;
}

dcoll_status_t dcoll_all_to_allv_int(dcoll_group_t *group,
                                     const void *sendbuf,
                                     const int *sendcounts,
                                     const int *sdispls, void *recvbuf,
                                     const int *recvcounts,
                                     const int *rdispls, dcoll_dtype_t dtype,
                                     const dcoll_coll_opts_t *opts,
                                     dcoll_work_t **work)
{
    struct wide w;
    dcoll_status_t st = widen_begin(__func__, group, DCOLL_COLL_ALL_TO_ALLV, 0, false,
                                    work != NULL, &w);
    if (st)
        return st;
    st = (dcoll_all_to_allv)(group, sendbuf, widen(&w, 0, sendcounts),
                             widen(&w, 1, sdispls), recvbuf,
                             widen(&w, 2, recvcounts), widen(&w, 3, rdispls),
                             dtype, opts, work);
    free(w.heap);
    return st;
}

dcoll_status_t dcoll_reduce_scatterv_int(dcoll_group_t *group,
                                         const void *sendbuf, void *recvbuf,
                                         const int *recvcounts,
                                         dcoll_dtype_t dtype, dcoll_op_t op,
                                         const dcoll_coll_opts_t *opts,
                                         dcoll_work_t **work)
{
    struct wide w;
    dcoll_status_t st = widen_begin(__func__, group, DCOLL_COLL_REDUCE_SCATTERV, 0, false,
                                    work != NULL, &w);
    if (st)
        return st;
    st = (dcoll_reduce_scatterv)(group, sendbuf, recvbuf,
                                 widen(&w, 0, recvcounts), dtype, op, opts,
                                 work);
    free(w.heap);
    return st;
}
