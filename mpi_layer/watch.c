/* Waiting on MPI against a deadline, and the roll call that tells which
 * ranks had not arrived when a wait ran out.
 *
 * The roll call runs on the group's control twin, in point-to-point
 * messages that never match the program's: the rank whose call timed out
 * asks every other rank where it is, and each answers with its latest
 * call on the group, that call's form and whether it is waiting in it.
 * Asks are answered by the watchdog thread where MPI allows one
 * (MPI_THREAD_MULTIPLE), whatever the rank is doing, and by a rank that
 * has waited on the group for a while from its own poll loop; a rank that
 * never answers within the grace time is silent (stopped or gone). An ask
 * also proves that its sender reached that call, so ranks timing out
 * together count each other even when one has already returned. Matched
 * probes (MPI_Improbe) keep two threads serving one twin apart.
 *
 * In DCOLL_ON_TIMEOUT_ABORT mode the rank that found the hang then tells
 * the others (a verdict), each prints its side and acknowledges, and the
 * job ends.
 *
 * A rank that has left a group (it refused a call by its own checks, such
 * as a count of -1 the others cannot see, or MPI failed a call there)
 * answers with the call and why (g->left), so the report names the rank
 * and its reason instead of calling it behind or silent. Nothing is sent
 * that no one asked for: a message left unreceived on a communicator
 * that is then freed would reach the next one given its context id. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpi_internal.h"

#define TAG_ASK 1
#define TAG_ANSWER 2
#define TAG_VERDICT 3
#define TAG_ACK 4
#define GRACE 1.0     /* seconds a roll call waits for answers */
#define GRACE_MAX 10.0 /* while they keep coming, at most */
#define QUIET 0.05    /* seconds of waiting before a rank answers asks */
#define WHY_MAX 232   /* bytes of a left rank's reason in its answer */
#define ABORT_GRACE 1 /* seconds MPI_Abort gets before _exit (MPICH) */
#define LEAD_WAIT 0.25 /* seconds a rank asked who leads may take */

/* What a rank answers an ask with. */
struct answer {
    int64_t asked, seq, kind, form, busy;
    int64_t left;          /* the call at which it left the group; 0: no */
    double due;            /* busy: seconds until its own deadline */
    char why[WHY_MAX];     /* why it left */
};

/* What this rank says of itself about g. The fields are the calling
 * thread's, read here perhaps from the watchdog's: each is read once. */
static void answer_of(struct dcoll_group *g, int64_t asked, struct answer *a)
{
    a->asked = asked;
    a->seq = (int64_t)DCOLL_PEEK(g->seq);
    a->kind = DCOLL_PEEK(g->cur_kind);
    a->form = DCOLL_PEEK(g->cur_form);
    double since = DCOLL_PEEK(g->busy_start);
    a->busy = since > 0 && DCOLL_PEEK(g->busy_seq) == (uint64_t)a->seq;
    a->due = a->busy ? since + g->timeout - dcoll_now() : 0;
    const char *left = DCOLL_PEEK(g->left);
    a->left = left ? (int64_t)DCOLL_PEEK(g->left_seq) : 0;
    snprintf(a->why, sizeof(a->why), "%s", left ? left : "");
    /* Not yet in the call asked about, with a GPU call of another group
     * put on the GPU last: the likely reason (NCCL's one order a GPU). */
    uint64_t gl = atomic_load_explicit(&dcoll_gpu_latest,
                                       memory_order_relaxed);
    int other = (int)(gl >> 44);
    if (!left && a->seq < asked && gl && other != g->id)
        snprintf(a->why, sizeof(a->why), "the last GPU call it started "
                 "was group %d's %s #%llu, before this one: NCCL runs one "
                 "order of calls a GPU, so start calls on several groups "
                 "in the same order on every rank", other,
                 dcoll_kind_name((int)(gl & 0xff)),
                 (unsigned long long)((gl >> 8) & 0xfffffffffull));
}

/* Receive one message of tag from anyone, if there is one: a matched
 * probe, so another thread serving the same twin cannot take it between
 * the probe and the receive. */
static bool take(MPI_Comm ctl, int tag, void *buf, int bytes, int *from)
{
    int flag = 0;
    MPI_Message m;
    MPI_Status s;
    if (MPI_Improbe(MPI_ANY_SOURCE, tag, ctl, &flag, &m, &s) !=
            MPI_SUCCESS || !flag)
        return false;
    if (MPI_Mrecv(buf, bytes, MPI_BYTE, &m, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return false;
    *from = s.MPI_SOURCE;
    return true;
}

/* Answer every pending ask; with roll, also note the askers that were in
 * call #seq themselves (one fewer silent in *silent for each). */
static void serve_asks(struct dcoll_group *g, struct dcoll_roll *roll,
                       uint64_t seq, int *silent)
{
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    int64_t asked;
    int from;
    while (take(ctl, TAG_ASK, &asked, (int)sizeof(asked), &from)) {
        struct answer a;
        answer_of(g, asked, &a);
        /* Small enough to go eagerly: the asker is polling for it. */
        MPI_Send(&a, (int)sizeof(a), MPI_BYTE, from, TAG_ANSWER, ctl);
        if (roll && (uint64_t)asked == seq &&
            roll->state[from] == DCOLL_ROLL_SILENT) {
            roll->state[from] = DCOLL_ROLL_SAME;
            roll->seq[from] = seq;
            roll->kind[from] = -1;   /* known only to be in it */
            if (silent)
                --*silent;
        }
    }
}

/* Why rank r left, at most WHY_MAX - 1 bytes of why, into roll (its
 * list made on first use; nothing kept without memory). */
static void set_why(struct dcoll_roll *roll, int r, const char *why)
{
    if (!roll->why && !(roll->why = calloc((size_t)roll->n, sizeof(char *))))
        return;
    free(roll->why[r]);
    roll->why[r] = strndup(why, WHY_MAX - 1);
}

/* What rank r answered, into roll: left ranks (at or before call #seq)
 * with why, the others by where they stand. */
static void note(struct dcoll_roll *roll, int r, uint64_t seq,
                 const struct answer *a)
{
    roll->seq[r] = (uint64_t)a->seq;
    roll->kind[r] = (int)a->kind;
    roll->form[r] = (unsigned char)a->form;
    roll->busy[r] = (unsigned char)a->busy;
    roll->state[r] = (uint64_t)a->seq == seq ? DCOLL_ROLL_SAME
                                             : DCOLL_ROLL_OTHER;
    if (!a->left && a->why[0] && (uint64_t)a->seq < seq)
        set_why(roll, r, a->why);   /* where it is instead */
    if (!a->left || (uint64_t)a->left > seq)
        return;
    roll->state[r] = DCOLL_ROLL_LEFT;
    roll->seq[r] = (uint64_t)a->left;
    roll->busy[r] = 0;
    set_why(roll, r, a->why);
}

/* Room for what n ranks answer, all silent; false (nothing kept) if
 * there is no memory for it. */
static bool roll_alloc(struct dcoll_roll *r, int n)
{
    r->state = calloc((size_t)n, 1);
    r->seq = calloc((size_t)n, sizeof(uint64_t));
    r->kind = calloc((size_t)n, sizeof(int));
    r->form = calloc((size_t)n, 1);
    r->busy = calloc((size_t)n, 1);
    r->n = n;
    if (r->state && r->seq && r->kind && r->form && r->busy)
        return true;
    dcoll_roll_free(r);
    return false;
}

/* A verdict on the wire: seq, kind, n, the sender's pid, then per rank
 * state, seq, kind, form, busy, then for each rank that left (in rank
 * order) why, in WHY_WORDS words. */
#define VERDICT_HEAD 4
#define VERDICT_EACH 5
#define WHY_WORDS (WHY_MAX / 8)

bool dcoll_mpi_serve(struct dcoll_group *g, struct dcoll_verdict *v)
{
    serve_asks(g, NULL, 0, NULL);
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    int flag = 0, len = 0;
    MPI_Message m;
    MPI_Status s;
    if (MPI_Improbe(MPI_ANY_SOURCE, TAG_VERDICT, ctl, &flag, &m, &s) !=
            MPI_SUCCESS || !flag)
        return false;
    MPI_Get_count(&s, MPI_INT64_T, &len);
    int64_t *said = malloc(sizeof(int64_t) * (size_t)(len > 0 ? len : 1));
    if (!said) {
        int64_t none;
        MPI_Mrecv(&none, 0, MPI_INT64_T, &m, MPI_STATUS_IGNORE);
        return false;
    }
    if (MPI_Mrecv(said, len, MPI_INT64_T, &m, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS || len < VERDICT_HEAD) {
        free(said);
        return false;
    }
    v->from = s.MPI_SOURCE;
    v->seq = (uint64_t)said[0];
    v->kind = (int)said[1];
    v->pid = said[3];
    v->roll = (struct dcoll_roll){0};
    int n = (int)said[2];
    struct dcoll_roll *r = &v->roll;
    int left = 0;
    for (int i = 0; n == g->size && len >= VERDICT_HEAD + VERDICT_EACH * n &&
                    i < n; i++)
        left += said[VERDICT_HEAD + VERDICT_EACH * i] == DCOLL_ROLL_LEFT;
    if (n == g->size &&
        len == VERDICT_HEAD + VERDICT_EACH * n + WHY_WORDS * left &&
        roll_alloc(r, n)) {
        const int64_t *why = said + VERDICT_HEAD + VERDICT_EACH * n;
        for (int i = 0; i < n; i++) {
            const int64_t *e = said + VERDICT_HEAD + VERDICT_EACH * i;
            r->state[i] = (unsigned char)e[0];
            r->seq[i] = (uint64_t)e[1];
            r->kind[i] = (int)e[2];
            r->form[i] = (unsigned char)e[3];
            r->busy[i] = (unsigned char)e[4];
            if (r->state[i] != DCOLL_ROLL_LEFT)
                continue;
            set_why(r, i, (const char *)why);
            why += WHY_WORDS;
        }
    } else {
        dcoll_roll_free(r);
    }
    free(said);
    return true;
}

void dcoll_mpi_ack(struct dcoll_group *g, int to)
{
    int64_t one = 1;
    MPI_Send(&one, 1, MPI_INT64_T, to, TAG_ACK, dcoll_mpi_ctl_of(g));
}

bool dcoll_mpi_threaded(void)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided == MPI_THREAD_MULTIPLE;
}

#ifdef MPICH
static void *abort_fallback(void *arg)
{
    sleep(ABORT_GRACE);
    dcoll_exit_now((int)(intptr_t)arg);
}
#endif

void dcoll_mpi_abort_job(struct dcoll_group *world, int code)
{
    /* The job ends here: dcoll must not end itself again from inside
     * MPI's teardown, which MPICH's abort path may start. */
    dcoll_mpi_at_end(NULL);
#ifdef MPICH
    /* MPICH 4.0's MPI_Abort waits for the lock that a thread hung in a
     * blocking call holds while it polls (the watchdog calls this beside
     * it): past a grace this process ends itself, and hydra then ends
     * the rest as it does for any rank that exits without finalizing. */
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &a, abort_fallback, (void *)(intptr_t)code);
    pthread_attr_destroy(&a);
#endif
    MPI_Abort(world->tl[DCOLL_TL_MPI] ? dcoll_mpi_comm_of(world) : MPI_COMM_WORLD,
              code);
}

/* End n sends of buf: free buf once they are done, or, where a rank
 * never receives, let MPI drop them and leave buf to them. Frees rq. */
static void let_go(int n, MPI_Request *rq, void *buf)
{
    int done = 0;
    MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE);
    if (done) {
        free(buf);
    } else {
        for (int i = 0; i < n; i++)
            if (rq[i] != MPI_REQUEST_NULL)
                MPI_Request_free(&rq[i]);
    }
    free(rq);
}

/* Ask every rank where it stands; fills roll, or returns false. */
static bool roll_call(struct dcoll_group *g, uint64_t seq,
                      struct dcoll_roll *roll)
{
    int n = g->size;
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    bool made = roll_alloc(roll, n);
    /* The ask outlives this call if a send never completes. */
    int64_t *ask = malloc(sizeof(*ask));
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n);
    if (!made || !ask || !rq) {
        free(ask);
        free(rq);
        return false;
    }
    *ask = (int64_t)seq;
    struct answer me;
    answer_of(g, (int64_t)seq, &me);
    roll->state[g->rank] = DCOLL_ROLL_SAME;
    roll->seq[g->rank] = seq;
    roll->kind[g->rank] = (int)me.kind;
    roll->form[g->rank] = (unsigned char)me.form;
    roll->busy[g->rank] = 1;
    int nrq = 0;
    for (int r = 0; r < n; r++)
        if (r != g->rank &&
            MPI_Isend(ask, 1, MPI_INT64_T, r, TAG_ASK, ctl, &rq[nrq]) ==
                MPI_SUCCESS)
            nrq++;
    /* Until every rank has answered for itself (an ask only proves the
     * asker was in the call), or the grace time is up. */
    unsigned char *got = calloc((size_t)n, 1);
    int answered = 1, quiet = n - 1;   /* quiet: ranks still silent */
    /* The grace runs on while answers keep coming (ranks many to a core
     * answer slowly), up to GRACE_MAX; silent ranks alone end it at
     * GRACE. */
    double t0 = dcoll_now(), end = t0 + GRACE, cap = t0 + GRACE_MAX;
    for (double now = t0; got && answered < n && now < end;
         now = dcoll_now()) {
        /* Everyone accounted for, some only by their own asks: a short
         * while more for their answers, which carry the call's form. */
        if (!quiet && now > t0 + GRACE / 4)
            break;
        serve_asks(g, roll, seq, &quiet);
        struct answer a;
        int r;
        if (!take(ctl, TAG_ANSWER, &a, (int)sizeof(a), &r) ||
            (uint64_t)a.asked != seq || got[r])
            continue; /* nothing, or an answer to an older roll call */
        got[r] = 1;
        answered++;
        quiet -= roll->state[r] == DCOLL_ROLL_SILENT;
        note(roll, r, seq, &a);
        if (now + GRACE / 2 > end)
            end = now + GRACE / 2 < cap ? now + GRACE / 2 : cap;
    }
    free(got);
    let_go(nrq, rq, ask);
    return true;
}

/* Which rank leads the report of a hang in call #seq: the lowest that
 * waits in it, as its watchdog will find it hung too. Asking the ranks
 * below this one in turn (most often rank 0 alone) costs a message or
 * two, where a roll call by every waiting rank would cost one to every
 * rank from each: n^2 messages, which at 256 ranks on one machine
 * outlast the grace. */
int dcoll_mpi_lead(struct dcoll_group *g, uint64_t seq, double *wait)
{
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    int64_t *ask = malloc(sizeof(*ask));
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)(g->rank + 1));
    unsigned char *heard = calloc((size_t)g->rank + 1, 1);
    int lead = g->rank, nrq = 0;
    *wait = 0;
    if (!ask || !rq || !heard) {
        free(ask);
        free(rq);
        free(heard);
        return lead;
    }
    *ask = (int64_t)seq;
    double end = dcoll_now() + GRACE;
    /* Each lower rank in turn, until one is in the call: a rank that
     * does not answer within LEAD_WAIT is passed over. */
    for (int q = 0; q < g->rank && lead == g->rank && dcoll_now() < end;
         q++) {
        if (MPI_Isend(ask, 1, MPI_INT64_T, q, TAG_ASK, ctl, &rq[nrq]) !=
            MPI_SUCCESS)
            continue;
        nrq++;
        double give_up = dcoll_now() + LEAD_WAIT;
        while (!heard[q] && lead == g->rank && dcoll_now() < give_up) {
            serve_asks(g, NULL, 0, NULL);
            struct answer a;
            int r;
            if (!take(ctl, TAG_ANSWER, &a, (int)sizeof(a), &r)) {
                usleep(200);
                continue;
            }
            if ((uint64_t)a.asked != seq || r >= g->rank)
                continue;
            heard[r] = 1;
            /* A late answer from a rank passed over counts too. */
            if ((uint64_t)a.seq == seq && a.busy && !a.left && r < lead) {
                lead = r;
                /* Its deadline, its roll call (which runs on while
                 * answers come, to GRACE_MAX), its telling, a margin. */
                *wait = (a.due > 0 ? a.due : 0) + GRACE_MAX + GRACE + 1.0;
            }
        }
    }
    free(heard);
    let_go(nrq, rq, ask);
    return lead;
}

/* A send or receive's roll: only its peer is asked where it stands (its
 * latest call on the group, whether it waits in it), within the grace;
 * the others are left silent and unnamed (roll->p2p). */
static bool ask_peer(struct dcoll_group *g, int peer, int tag,
                     struct dcoll_roll *roll)
{
    if (!roll_alloc(roll, g->size))
        return false;
    roll->p2p = true;
    roll->peer = peer;
    roll->tag = tag;
    if (peer < 0 || peer >= g->size || peer == g->rank)
        return true;   /* any source, or itself: no one to ask */
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    int64_t *ask = malloc(sizeof(*ask));   /* may outlive this call */
    MPI_Request *rq = malloc(sizeof(*rq));
    if (!ask || !rq || (*ask = 0,
                        MPI_Isend(ask, 1, MPI_INT64_T, peer, TAG_ASK, ctl,
                                  rq) != MPI_SUCCESS)) {
        free(ask);
        free(rq);
        return true;
    }
    /* Asked with number 0, which no call has: its answer is where it is. */
    for (double end = dcoll_now() + GRACE; dcoll_now() < end;) {
        serve_asks(g, NULL, 0, NULL);
        struct answer a;
        int r;
        if (!take(ctl, TAG_ANSWER, &a, (int)sizeof(a), &r)) {
            usleep(200);
            continue;
        }
        if (r != peer || a.asked != 0)
            continue;
        note(roll, r, 0, &a);
        /* Where it is, whatever its number: never "the same call"; or
         * the call at which it left the group, and why. */
        roll->state[r] = a.left ? DCOLL_ROLL_LEFT : DCOLL_ROLL_OTHER;
        if (a.left) {
            roll->seq[r] = (uint64_t)a.left;
            set_why(roll, r, a.why);
        }
        break;
    }
    let_go(1, rq, ask);
    return true;
}

dcoll_status_t dcoll_mpi_ask_peer(struct dcoll_group *g, int peer, int tag,
                                  struct dcoll_roll *roll)
{
    *roll = (struct dcoll_roll){0};
    if (ask_peer(g, peer, tag, roll))
        return DCOLL_SUCCESS;
    dcoll_roll_free(roll);
    return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a roll call of "
                       "%d ranks", g->size);
}

dcoll_status_t dcoll_mpi_roll_call(struct dcoll_group *g, uint64_t seq,
                                   struct dcoll_roll *roll)
{
    *roll = (struct dcoll_roll){0};
    if (roll_call(g, seq, roll))
        return DCOLL_SUCCESS;
    dcoll_roll_free(roll);
    return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a roll call of "
                       "%d ranks", g->size);
}

bool dcoll_mpi_tell(struct dcoll_group *g, uint64_t seq, int kind,
                    const struct dcoll_roll *roll, bool whole,
                    struct dcoll_verdict *lower)
{
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    int n = g->size, nrq = 0, waiting = 0, left = 0;
    for (int i = 0; roll->n == n && i < n; i++)
        left += roll->state[i] == DCOLL_ROLL_LEFT;
    /* The roll goes along only where each rank prints the whole report:
     * 40 bytes a rank, to every rank, is n^2 bytes. */
    /* A send or receive's roll has its peer only: not sent along. */
    int len = VERDICT_HEAD + (whole && roll->n == n && !roll->p2p
                                  ? VERDICT_EACH * n + WHY_WORDS * left
                                  : 0);
    /* Outlives this call if a send never completes. */
    int64_t *said = calloc((size_t)len, sizeof(int64_t));
    unsigned char *told = calloc((size_t)n, 1);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n);
    if (!said || !told || !rq) {
        free(said);
        free(told);
        free(rq);
        return false;
    }
    said[0] = (int64_t)seq;
    said[1] = kind;
    said[2] = len > VERDICT_HEAD ? n : 0;
    said[3] = (int64_t)getpid();
    for (int i = 0; len > VERDICT_HEAD && i < n; i++) {
        int64_t *e = said + VERDICT_HEAD + VERDICT_EACH * i;
        e[0] = roll->state[i];
        e[1] = (int64_t)roll->seq[i];
        e[2] = roll->kind[i];
        e[3] = roll->form[i];
        e[4] = roll->busy[i];
    }
    char *why = len > VERDICT_HEAD
                    ? (char *)(said + VERDICT_HEAD + VERDICT_EACH * n)
                    : NULL;
    for (int i = 0; len > VERDICT_HEAD && i < n; i++) {
        if (roll->state[i] != DCOLL_ROLL_LEFT)
            continue;
        snprintf(why, WHY_MAX, "%s",
                 roll->why && roll->why[i] ? roll->why[i] : "");
        why += WHY_MAX;
    }
    for (int r = 0; r < n; r++) {
        /* A silent rank would never take it (of a send or receive's
         * roll, only the peer was asked). */
        if (r == g->rank ||
            (roll->n && roll->state[r] == DCOLL_ROLL_SILENT &&
             (!roll->p2p || r == roll->peer)))
            continue;
        if (MPI_Isend(said, len, MPI_INT64_T, r, TAG_VERDICT, ctl,
                      &rq[nrq]) == MPI_SUCCESS) {
            nrq++;
            told[r] = 1;
            waiting++;
        }
    }
    double end = dcoll_now() + GRACE;
    bool defer = false;
    while (waiting && dcoll_now() < end) {
        serve_asks(g, NULL, 0, NULL);
        int64_t one;
        int from;
        if (take(ctl, TAG_ACK, &one, (int)sizeof(one), &from) &&
            told[from]) {
            told[from] = 0;
            waiting--;
        }
        /* Another rank found the same hang at once: acknowledge it, and
         * leave ending the job to the lower rank (one MPI_Abort). */
        struct dcoll_verdict v;
        if (dcoll_mpi_serve(g, &v)) {
            dcoll_roll_free(&v.roll);
            dcoll_mpi_ack(g, v.from);
            if (v.from < g->rank && (!defer || v.from < lower->from)) {
                lower->from = v.from;
                lower->pid = v.pid;
            }
            defer |= v.from < g->rank;
        }
    }
    let_go(nrq, rq, said);
    free(told);
    return defer;
}

dcoll_status_t dcoll_mpi_timed_out(struct dcoll_group *g,
                                   const struct dcoll_watch *wt)
{
    struct dcoll_outcome *out = wt->out;
    out->timed_out = true;
    out->died = 0;
    out->roll = (struct dcoll_roll){0};
    if (!wt->seq ? !ask_peer(g, wt->peer, wt->tag, &out->roll)
                 : !roll_call(g, wt->seq, &out->roll))
        dcoll_roll_free(&out->roll);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s: timed out", wt->fn);
}

/* A member of g died (group rank dead), as its launcher said: the call
 * fails as a timeout would, without waiting for its deadline. */
static dcoll_status_t died(const struct dcoll_watch *wt, int dead)
{
    struct dcoll_outcome *out = wt->out;
    out->timed_out = true;
    out->died = dead + 1;
    out->roll = (struct dcoll_roll){0};
    return dcoll_error(DCOLL_ERR_RANK_DIED, "%s: rank %d died", wt->fn,
                       dead);
}

dcoll_status_t dcoll_mpi_died(struct dcoll_group *g,
                              const struct dcoll_watch *wt)
{
    int dead = dcoll_death_of ? dcoll_death_of(g, NULL, 0) : -1;
    return dead < 0 ? DCOLL_SUCCESS : died(wt, dead);
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
    if (isinf(wt->deadline) && !dcoll_death_of) {
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
        dcoll_status_t st;
        if (spin % 64 == 63 && (st = dcoll_mpi_wait_look(g, wt, &quiet)))
            return st;
    }
}

dcoll_status_t dcoll_mpi_wait_look(struct dcoll_group *g,
                                   const struct dcoll_watch *wt,
                                   double *quiet)
{
    double now = dcoll_now();
    if (now >= wt->deadline)
        return dcoll_mpi_timed_out(g, wt);
    dcoll_status_t st;
    if (dcoll_death_of && (st = dcoll_mpi_died(g, wt)))
        return st;
    if (!*quiet)
        *quiet = now + QUIET;
    else if (now >= *quiet)
        serve_asks(g, NULL, 0, NULL);
    return DCOLL_SUCCESS;
}

/* The deadline a call's own poll keeps: in return mode only. In abort
 * mode the watchdog watches the call and reports its hang (the lowest
 * waiting rank leads); a poll that timed out too would make a second
 * roll call in this process, and the two would take each other's
 * answers. */
static double own_deadline(const struct dcoll_group *g,
                           const struct dcoll_coll *c)
{
    return g->timeout > 0 && g->recoverable ? c->start + g->timeout
                                            : INFINITY;
}

dcoll_status_t dcoll_mpi_agree_call(struct dcoll_group *g, int *ok,
                                    double *spread,
                                    const struct dcoll_coll *c,
                                    struct dcoll_outcome *out)
{
    MPI_Request rq;
    struct dcoll_watch wt = {
        .deadline = own_deadline(g, c),
        .seq = c->seq,
        .kind = c->kind,
        .fn = c->fn,
        .call = "MPI_Iallreduce (agree)",
        .out = out,
    };
    /* One maximum gives the minimum of ok and the first and last ranks'
     * arrival times (wall clock, which the hosts share within NTP's
     * milliseconds). */
    double at = dcoll_wall_now();
    /* On the heap: past the deadline the request stays posted, and a
     * late rank's arrival still writes here (left to it, 24 bytes). */
    double *v = malloc(3 * sizeof(double));
    if (!v)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "agreement", c->fn);
    v[0] = -(double)*ok;
    v[1] = at;
    v[2] = -at;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_MAX,
                            dcoll_mpi_ctl_of(g), &rq);
    if (rc != MPI_SUCCESS) {
        free(v);
        return dcoll_mpi_error(rc, wt.call);
    }
    dcoll_status_t st = dcoll_mpi_poll(g, &wt, 1, &rq, NULL);
    if (!st) {
        *ok = (int)-v[0];
        *spread = v[1] + v[2];
        free(v);
    }
    return st;
}

dcoll_status_t dcoll_mpi_exchange(struct dcoll_group *g, const void *mine,
                                  void *all, size_t len,
                                  const struct dcoll_coll *c,
                                  struct dcoll_outcome *out)
{
    MPI_Request rq;
    struct dcoll_watch wt = {
        .deadline = own_deadline(g, c),
        .seq = c->seq,
        .kind = c->kind,
        .fn = c->fn,
        .call = "MPI_Iallgather (an exchange of the group's records)",
        .out = out,
    };
    /* all holds g->size records: never exchange over more ranks. */
    int n = 0;
    MPI_Comm_size(dcoll_mpi_ctl_of(g), &n);
    if (n != g->size)
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: the group has %d ranks "
                           "but its communicator %d", c->fn, g->size, n);
    int rc = MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len,
                            MPI_BYTE, dcoll_mpi_ctl_of(g), &rq);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, wt.call);
    return dcoll_mpi_poll(g, &wt, 1, &rq, NULL);
}
