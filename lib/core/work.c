/* Work handles: the public wait/test/source/free over a backend's work. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "diag.h"

atomic_int dcoll_work_inflight;

dcoll_status_t dcoll_work_fail(struct dcoll_work *w, dcoll_status_t st)
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
    /* Map the sender now: the group may be destroyed before source(). */
    if (!st && w->is_recv && w->group->ranks)
        w->source = w->group->ranks[w->source];
    w->status = dcoll_work_fail(w, st);
    w->done = true;
    if (w->fid)
        dcoll_flight_end(w->group->flight, w->fid, st);
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
                                 w->kind, DCOLL_FORM_ASYNC);
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
    w->magic = DCOLL_DEAD_MAGIC;
    w->backend->work_release(w);
    *work = NULL;
    return st;
}
