/* Work handles: the public wait/test/source/free over a backend's work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "diag.h"

atomic_int dcoll_work_inflight;
int dcoll_works_most = DCOLL_WORKS_DEFAULT;

dcoll_status_t dcoll_works_full(const struct dcoll_group *g, const char *fn)
{
    char name[200];
    return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s: %d works on %s are not "
                       "finished yet, the most a group keeps "
                       "(DCOLL_MAX_WORKS=%d); wait for some "
                       "(dcoll_work_wait, _wait_all, _test) before posting "
                       "more", fn, g->inflight,
                       dcoll_group_name(g, name, sizeof(name)),
                       dcoll_works_most);
}

/* Record a failure inside an operation: kept for wait to report. */
static dcoll_status_t work_fail(struct dcoll_work *w, dcoll_status_t st)
{
    if (st && !w->errmsg)
        w->errmsg = strdup(dcoll_last_error());
    return st;
}

/* Record the end of an operation exactly once. */
static dcoll_status_t complete(struct dcoll_work *w, dcoll_status_t st)
{
    if (w->finish)
        st = w->finish(w, st);
    /* Map the sender now: the group may be destroyed before source().
     * DCOLL_PROC_NULL's stays as it is. */
    if (!st && w->is_recv && w->group->ranks && w->source >= 0)
        w->source = w->group->ranks[w->source];
    w->status = work_fail(w, st);
    w->done = true;
    if (w->fid)
        dcoll_flight_end(w->group->diag->flight, w->fid, st);
    if (DCOLL_UNLIKELY(w->prof_t0 > 0)) {
        /* DCOLL_PROFILE: from its post to this end. */
        dcoll_profile_call(w->group, w->kind, 0, dcoll_now() - w->prof_t0,
                           false);
        w->prof_t0 = 0;
    }
    w->group->inflight--;
    atomic_fetch_sub_explicit(&dcoll_work_inflight, 1, memory_order_relaxed);
    return st;
}

/* Wait for, or test, the backend's side of w; a timeout it reports
 * becomes the group's failure. */
static inline __attribute__((always_inline)) dcoll_status_t
backend_end(struct dcoll_work *w, int *done)
{
    dcoll_status_t st = done ? w->backend->work_test(w, done)
                             : w->backend->work_wait(w);
    if (DCOLL_UNLIKELY(w->report.timed_out))
        st = dcoll_fault_outcome(w->group, &w->report, w->fn, w->seq,
                                 w->kind, w->plan ? DCOLL_FORM_PLAN_ASYNC
                                                  : DCOLL_FORM_ASYNC);
    else if (DCOLL_UNLIKELY(st) && w->fn)
        st = dcoll_fault_failed(w->group, w->fn, w->seq, st);
    return st;
}

/* A finished work's status again, with its message restored. */
static dcoll_status_t replay(const struct dcoll_work *w)
{
    if (w->status)
        return dcoll_error(w->status, "%s",
                           w->errmsg ? w->errmsg : "operation failed");
    return DCOLL_SUCCESS;
}

static dcoll_status_t check_work(const struct dcoll_work *w, const char *fn)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!w)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: work is NULL",
                           fn);
    if (w->magic != DCOLL_WORK_MAGIC)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: work %p is not a live work handle (freed "
                           "or never made)", fn, (const void *)w);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_work_wait(dcoll_work_t *w)
{
    dcoll_status_t st = check_work(w, __func__);
    if (st)
        return st;
    if (w->done)
        return replay(w);
    return complete(w, backend_end(w, NULL));
}

dcoll_status_t dcoll_work_test(dcoll_work_t *w, int *done)
{
    dcoll_status_t st = check_work(w, __func__);
    if (st)
        return st;
    if (!done)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_work_test: done is NULL");
    if (w->done) {
        *done = 1;
        return replay(w);
    }
    int flag = 0;
    st = backend_end(w, &flag);
    if (!st && !flag) {
        *done = 0;
        return DCOLL_SUCCESS;
    }
    *done = 1;
    return complete(w, st);
}

dcoll_status_t dcoll_work_source(dcoll_work_t *w, int *source)
{
    dcoll_status_t st = check_work(w, __func__);
    if (st)
        return st;
    if (!source)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_work_source: source is NULL");
    if (!w->is_recv)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_work_source: the work is not a receive");
    if (!w->done)
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "dcoll_work_source: the receive has not finished; "
                           "wait or test first");
    if (w->status)
        return replay(w);
    *source = w->source;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_work_free(dcoll_work_t **work)
{
    if (!work)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_work_free: work is NULL");
    if (!*work)
        return DCOLL_SUCCESS;
    struct dcoll_work *w = *work;
    dcoll_status_t st = check_work(w, __func__);
    /* A plan's work is the plan's: waited for, and left to it. */
    if (!st && w->plan) {
        if (!w->done)
            st = complete(w, backend_end(w, NULL));
        *work = NULL;
        return st;
    }
    /* After finalize every work has finished (finalize refuses while any
     * is in flight): its handle is still the program's to free. */
    if (DCOLL_UNLIKELY(st)) {
        if (st != DCOLL_ERR_FINALIZED || w->magic != DCOLL_WORK_MAGIC ||
            !w->done)
            return st;
        st = DCOLL_SUCCESS;
    }
    if (!w->done)
        st = complete(w, backend_end(w, NULL));
    if (w->errmsg)
        free(w->errmsg);
    dcoll_mark_dead(&w->magic);
    w->backend->work_release(w);
    *work = NULL;
    return st;
}

/* ---- many works ---- */

/* A list of works: n in range, the array given, every entry NULL or live. */
static dcoll_status_t check_list(dcoll_work_t *const *works, int n,
                                 const void *out, const char *fn)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (n < 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: n %d is "
                           "negative", fn, n);
    if (!works && n > 0)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: works is NULL "
                           "with n %d", fn, n);
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the output is "
                           "NULL", fn);
    for (int i = 0; i < n; i++)
        if (works[i] && works[i]->magic != DCOLL_WORK_MAGIC)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: works[%d] "
                               "(%p) is not a live work handle (freed or "
                               "never made)", fn, i, (const void *)works[i]);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_work_wait_all(dcoll_work_t *const *works, int n,
                                   int *failed)
{
    int dummy;
    dcoll_status_t st = check_list(works, n, &dummy, __func__);
    if (failed)
        *failed = -1;
    if (st)
        return st;
    /* Each wait makes progress on all of them (MPI progresses every
     * request in any wait), so waiting in order costs no more than
     * MPI_Waitall. The first failure's message is kept over later ones. */
    dcoll_status_t first = DCOLL_SUCCESS;
    char msg[DCOLL_ERROR_MAX];
    for (int i = 0; i < n; i++) {
        if (!works[i])
            continue;
        st = works[i]->done ? replay(works[i])
                            : complete(works[i], backend_end(works[i], NULL));
        if (st && !first) {
            first = st;
            snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
            if (failed)
                *failed = i;
        }
    }
    return first ? dcoll_error(first, "%s", msg) : DCOLL_SUCCESS;
}

/* One pass over the unfinished works: the first that is done now. */
static dcoll_status_t any_pass(dcoll_work_t *const *works, int n,
                               int *index, int *done)
{
    bool active = false;
    for (int i = 0; i < n; i++) {
        struct dcoll_work *w = works[i];
        if (!w || w->done)
            continue;
        active = true;
        int flag = 0;
        dcoll_status_t st = backend_end(w, &flag);
        if (st || flag) {
            *index = i;
            *done = 1;
            return complete(w, st);
        }
    }
    *index = DCOLL_NO_WORK;
    *done = !active;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_work_test_any(dcoll_work_t *const *works, int n,
                                   int *index, int *done)
{
    dcoll_status_t st = check_list(works, n, index, __func__);
    if (!st && !done)
        st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                         "dcoll_work_test_any: done is NULL");
    if (st)
        return st;
    return any_pass(works, n, index, done);
}

dcoll_status_t dcoll_work_wait_any(dcoll_work_t *const *works, int n,
                                   int *index)
{
    dcoll_status_t st = check_list(works, n, index, __func__);
    if (st)
        return st;
    /* Polled, as MPI_Waitany polls; each test checks its own deadline. */
    int done = 0;
    do
        st = any_pass(works, n, index, &done);
    while (!done);
    return st;
}
