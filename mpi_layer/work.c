/* The MPI transport's works: an async call's requests and what follows
 * them, waited for or tested against the call's deadline. Freed handles
 * are kept for the next async calls. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "calls.h"

_Atomic(struct dcoll_mpi_work *) dcoll_mpi_spare[DCOLL_MPI_SPARES];

static void work_put(struct dcoll_mpi_work *w)
{
    /* After stop too: a handle freed late waits in a slot for the next
     * start's calls, or the end of the process. */
    for (int i = 0; i < DCOLL_MPI_SPARES; i++) {
        struct dcoll_mpi_work *none = NULL;
        if (!atomic_load_explicit(&dcoll_mpi_spare[i], memory_order_relaxed) &&
            atomic_compare_exchange_strong(&dcoll_mpi_spare[i], &none, w))
            return;
    }
    free(w);
}

void dcoll_mpi_work_cache_free(void)
{
    for (int i = 0; i < DCOLL_MPI_SPARES; i++)
        free(atomic_exchange(&dcoll_mpi_spare[i], NULL));
}

static dcoll_status_t finished(struct dcoll_mpi_work *w, int rc,
                               const char *call)
{
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, call);
    if (w->base.is_recv)
        w->base.source = w->status.MPI_SOURCE;
    dcoll_mpi_run_after(w);
    return DCOLL_SUCCESS;
}

static struct dcoll_watch work_watch(struct dcoll_work *w, const char *call)
{
    struct dcoll_watch wt = {
        .deadline = w->deadline,
        .seq = w->seq,
        .kind = w->kind,
        .fn = w->fn,
        .call = call,
        .out = &w->report,
        .peer = w->peer,
        .tag = w->tag,
    };
    return wt;
}

dcoll_status_t dcoll_mpi_work_test(struct dcoll_work *bw, int *done)
{
    struct dcoll_mpi_work *w = (struct dcoll_mpi_work *)bw;
    int rc = w->base.is_recv ? MPI_Test(w->reqs, done, &w->status)
             : w->nreq == 1  ? MPI_Test(w->reqs, done, MPI_STATUS_IGNORE)
                             : MPI_Testall(w->nreq, w->reqs, done,
                                           MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        *done = 1;
        return dcoll_mpi_error(rc, "MPI_Test");
    }
    if (*done)
        return finished(w, rc, "MPI_Test");
    if (!isinf(w->base.deadline) && dcoll_now() >= w->base.deadline) {
        struct dcoll_watch wt = work_watch(&w->base, "MPI_Test");
        *done = 1;
        return dcoll_mpi_timed_out(w->base.group, &wt);
    }
    if (DCOLL_UNLIKELY(dcoll_death_of != NULL)) {
        struct dcoll_watch wt = work_watch(&w->base, "MPI_Test");
        dcoll_status_t st = dcoll_mpi_died(w->base.group, &wt);
        *done = st != DCOLL_SUCCESS;
        return st;
    }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_work_wait(struct dcoll_work *bw)
{
    struct dcoll_mpi_work *w = (struct dcoll_mpi_work *)bw;
    if (!isinf(w->base.deadline) || dcoll_death_of) {
        struct dcoll_watch wt = work_watch(&w->base, "MPI_Test");
        dcoll_status_t st = dcoll_mpi_poll(w->base.group, &wt, w->nreq,
                                           w->reqs, w->base.is_recv
                                                        ? &w->status
                                                        : NULL);
        return st ? st : finished(w, MPI_SUCCESS, "MPI_Test");
    }
    /* MPI_Wait for one request: MPI_Waitall costs twice the instructions. */
    int rc = w->base.is_recv ? MPI_Wait(w->reqs, &w->status)
             : w->nreq == 1  ? MPI_Wait(w->reqs, MPI_STATUS_IGNORE)
                             : MPI_Waitall(w->nreq, w->reqs,
                                           MPI_STATUSES_IGNORE);
    return finished(w, rc, "MPI_Wait");
}

void dcoll_mpi_work_release(struct dcoll_work *bw)
{
    struct dcoll_mpi_work *w = (struct dcoll_mpi_work *)bw;
    if (w->reqs != &w->one)
        free(w->reqs);
    free(w->vec);
    dcoll_mpi_nbw_free(w->nbw);
    if (w->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&w->type);
    work_put(w);
}

