/* Waiting on MPI against a deadline, and the roll call that tells which
 * ranks had not arrived when a wait ran out.
 *
 * The roll call runs on the group's control twin, in point-to-point
 * messages that never match the program's: the rank whose call timed out
 * asks every other rank where it is; a rank that has waited on the group
 * for a while answers from its own poll loop; a rank that never answers
 * within the grace time did not arrive. An ask also proves that its
 * sender reached that call, so ranks timing out together count each other
 * even when one has already returned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

#define TAG_ASK 1
#define TAG_ANSWER 2
#define GRACE 1.0     /* seconds a roll call waits for answers */
#define QUIET 0.05    /* seconds of waiting before a rank answers asks */

/* Answer every pending ask; with roll, also note the askers that were in
 * call #seq themselves. */
static void serve_asks(struct dcoll_group *g, struct dcoll_roll *roll,
                       uint64_t seq)
{
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    for (;;) {
        int flag = 0;
        MPI_Status s;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, ctl, &flag, &s) != MPI_SUCCESS
            || !flag)
            return;
        int64_t asked;
        if (MPI_Recv(&asked, 1, MPI_INT64_T, s.MPI_SOURCE, TAG_ASK, ctl,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return;
        int64_t answer[3] = {asked, (int64_t)g->seq, g->cur_kind};
        /* Small enough to go eagerly: the asker is polling for it. */
        MPI_Send(answer, 3, MPI_INT64_T, s.MPI_SOURCE, TAG_ANSWER, ctl);
        if (roll && (uint64_t)asked == seq &&
            roll->state[s.MPI_SOURCE] == DCOLL_ROLL_SILENT)
            roll->state[s.MPI_SOURCE] = DCOLL_ROLL_SAME;
    }
}

static int silent(const struct dcoll_roll *roll)
{
    int n = 0;
    for (int r = 0; r < roll->n; r++)
        n += roll->state[r] == DCOLL_ROLL_SILENT;
    return n;
}

/* Ask every rank where it stands; fills roll, or returns false. */
static bool roll_call(struct dcoll_group *g, uint64_t seq,
                      struct dcoll_roll *roll)
{
    int n = g->size;
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    roll->n = n;
    roll->state = calloc((size_t)n, 1);
    roll->seq = calloc((size_t)n, sizeof(uint64_t));
    roll->kind = calloc((size_t)n, sizeof(int));
    /* The ask outlives this call if a send never completes. */
    int64_t *ask = malloc(sizeof(*ask));
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n);
    if (!roll->state || !roll->seq || !roll->kind || !ask || !rq) {
        free(ask);
        free(rq);
        return false;
    }
    *ask = (int64_t)seq;
    roll->state[g->rank] = DCOLL_ROLL_SAME;
    int nrq = 0;
    for (int r = 0; r < n; r++)
        if (r != g->rank &&
            MPI_Isend(ask, 1, MPI_INT64_T, r, TAG_ASK, ctl, &rq[nrq]) ==
                MPI_SUCCESS)
            nrq++;
    double end = dcoll_now() + GRACE;
    while (silent(roll) && dcoll_now() < end) {
        serve_asks(g, roll, seq);
        int flag = 0;
        MPI_Status s;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ANSWER, ctl, &flag, &s) !=
            MPI_SUCCESS)
            break;
        if (!flag)
            continue;
        int64_t a[3];
        if (MPI_Recv(a, 3, MPI_INT64_T, s.MPI_SOURCE, TAG_ANSWER, ctl,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            break;
        if ((uint64_t)a[0] != seq)
            continue; /* an answer to an older roll call */
        int r = s.MPI_SOURCE;
        roll->state[r] = (uint64_t)a[1] == seq ? DCOLL_ROLL_SAME
                                               : DCOLL_ROLL_OTHER;
        roll->seq[r] = (uint64_t)a[1];
        roll->kind[r] = (int)a[2];
    }
    int done = 0;
    MPI_Testall(nrq, rq, &done, MPI_STATUSES_IGNORE);
    if (done) {
        free(ask);
    } else {
        /* A rank that never receives: let MPI drop the sends. */
        for (int i = 0; i < nrq; i++)
            if (rq[i] != MPI_REQUEST_NULL)
                MPI_Request_free(&rq[i]);
    }
    free(rq);
    return true;
}

dcoll_status_t dcoll_mpi_timed_out(struct dcoll_group *g,
                                   const struct dcoll_watch *wt)
{
    struct dcoll_outcome *out = wt->out;
    out->timed_out = true;
    out->roll = (struct dcoll_roll){0};
    if (!wt->seq || !roll_call(g, wt->seq, &out->roll))
        dcoll_roll_free(&out->roll);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s: timed out", wt->fn);
}

void dcoll_mpi_settle(struct dcoll_group *g, const struct dcoll_watch *wt,
                      int n, MPI_Request *reqs)
{
    if (n <= 0)
        return;
    char msg[DCOLL_ERROR_MAX];
    snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
    dcoll_status_t st = dcoll_mpi_poll(g, wt, n, reqs, NULL);
    if (st) {
        /* Past the deadline: MPI ends them when it can. */
        for (int i = 0; i < n; i++)
            if (reqs[i] != MPI_REQUEST_NULL)
                MPI_Request_free(&reqs[i]);
        wt->out->timed_out = false;
        dcoll_roll_free(&wt->out->roll);
    }
    dcoll_error(DCOLL_ERR_MPI, "%s", msg);
}

dcoll_status_t dcoll_mpi_poll(struct dcoll_group *g,
                              const struct dcoll_watch *wt, int n,
                              MPI_Request *reqs, MPI_Status *status)
{
    int rc, flag = 0;
    if (isinf(wt->deadline)) {
        rc = n == 1 ? MPI_Wait(reqs, status ? status : MPI_STATUS_IGNORE)
                    : MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                                 : dcoll_mpi_error(rc, wt->call);
    }
    double quiet = 0;
    for (unsigned spin = 0;; spin++) {
        rc = n == 1 ? MPI_Test(reqs, &flag, status ? status
                                                   : MPI_STATUS_IGNORE)
                    : MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return dcoll_mpi_error(rc, wt->call);
        if (flag)
            return DCOLL_SUCCESS;
        /* The clock only now and then: most calls end in a few tests. */
        if (spin % 64 != 63)
            continue;
        double now = dcoll_now();
        if (now >= wt->deadline)
            return dcoll_mpi_timed_out(g, wt);
        if (!quiet)
            quiet = now + QUIET;
        else if (now >= quiet)
            serve_asks(g, NULL, 0);
    }
}

dcoll_status_t dcoll_mpi_exchange(struct dcoll_group *g, const void *mine,
                                  void *all, size_t len,
                                  const struct dcoll_coll *c,
                                  struct dcoll_outcome *out)
{
    MPI_Request rq;
    struct dcoll_watch wt = {
        .deadline = g->timeout > 0 ? c->start + g->timeout : INFINITY,
        .seq = c->seq,
        .kind = c->kind,
        .fn = c->fn,
        .call = "MPI_Iallgather (debug check)",
        .out = out,
    };
    int rc = MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len,
                            MPI_BYTE, dcoll_mpi_ctl_of(g), &rq);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, wt.call);
    return dcoll_mpi_poll(g, &wt, 1, &rq, NULL);
}
