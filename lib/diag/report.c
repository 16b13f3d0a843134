/* The text of diagnostics' reports: rank lists (by host where a group
 * spans several), what a timed-out call's roll call found, and the report
 * another rank sent before ending the job. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"

void dcoll_put(struct dcoll_text *t, const char *fmt, ...)
{
    if (t->off >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->off, t->cap - t->off, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->off += (size_t)n;
}

/* "rank 3" or "ranks 0,1,2" for the group ranks r with pick(r) true,
 * and their world ranks after them in a sub-group. */
void dcoll_put_ranks(struct dcoll_text *t, const struct dcoll_group *g,
                     bool (*pick)(const void *, int), const void *arg)
{
    int n = 0;
    for (int r = 0; r < g->size; r++)
        n += pick(arg, r);
    for (int pass = 0; pass < (g->ranks ? 2 : 1); pass++) {
        dcoll_put(t, "%s", pass ? " (world " : n == 1 ? "rank " : "ranks ");
        int shown = 0;
        for (int r = 0; r < g->size; r++) {
            if (!pick(arg, r))
                continue;
            if (shown == 16) {
                dcoll_put(t, ", ... %d more", n - 16);
                break;
            }
            dcoll_put(t, "%s%d", shown++ ? "," : "",
                pass ? g->ranks[r] : r);
        }
        if (pass)
            dcoll_put(t, ")");
    }
}

struct roll_pick {
    const struct dcoll_roll *roll;
    int state;
};

static bool pick_state(const void *arg, int r)
{
    const struct roll_pick *p = arg;
    return p->roll->state[r] == p->state;
}

/* "async", "blocking", "persistent start" or "-", for an enum
 * dcoll_form. */
static const char *form_name(int form)
{
    return form == DCOLL_FORM_ASYNC        ? "async"
           : form == DCOLL_FORM_BLOCKING   ? "blocking"
           : form == DCOLL_FORM_PLAN       ? "persistent start"
           : form == DCOLL_FORM_PLAN_ASYNC ? "persistent start, async"
                                           : "-";
}

static bool pick_behind(const void *arg, int r)
{
    const struct roll_pick *p = arg;
    return p->roll->state[r] == DCOLL_ROLL_OTHER &&
           p->roll->seq[r] < (uint64_t)p->state;
}

struct form_pick {
    const struct dcoll_roll *roll;
    int form;
};

static bool pick_form(const void *arg, int r)
{
    const struct form_pick *p = arg;
    return p->roll->state[r] == DCOLL_ROLL_SAME && p->roll->form[r] == p->form;
}

/* The ranks that called in form a, said_a, those in form b, said_b:
 * two forms of one call that MPI never matches. */
static void put_two_forms(struct dcoll_text *t, const struct dcoll_group *g,
                          const struct dcoll_roll *roll, int a,
                          const char *said_a, int b, const char *said_b)
{
    struct form_pick f = {roll, a};
    dcoll_put(t, ", but in different forms: ");
    dcoll_put_ranks(t, g, pick_form, &f);
    dcoll_put(t, "%s", said_a);
    f.form = b;
    dcoll_put_ranks(t, g, pick_form, &f);
    dcoll_put(t, "%s", said_b);
}

/* Ranks in a call of the same number but of another kind than kind (a
 * barrier where the others all_reduce: one skipped a call, or called
 * another in its place), or of it (or not known: an asker). */
struct kind_pick {
    const struct dcoll_roll *roll;
    int kind;
    bool other;
};

static bool pick_kind(const void *arg, int r)
{
    const struct kind_pick *p = arg;
    if (p->roll->state[r] != DCOLL_ROLL_SAME)
        return false;
    bool other = p->roll->kind[r] >= 0 && p->roll->kind[r] != p->kind;
    return other == p->other;
}

static bool pick_one(const void *arg, int r)
{
    return r == *(const int *)arg;
}

/* The picked ranks by host, where the group spans several hosts and each
 * one's is known: ", on nodeA {2,3}, nodeB {5}" (group ranks). */
static void put_hosts(struct dcoll_text *t, const struct dcoll_group *g,
                      bool (*pick)(const void *, int), const void *arg)
{
    const char *h0 = dcoll_host_of(dcoll_world_of(g, 0));
    int r = 1;
    while (h0 && r < g->size && dcoll_host_of(dcoll_world_of(g, r)) &&
           !strcmp(dcoll_host_of(dcoll_world_of(g, r)), h0))
        r++;
    if (!h0 || r == g->size)
        return;   /* one host, or not known */
    int shown = 0;
    for (r = 0; r < g->size; r++) {
        const char *h = dcoll_host_of(dcoll_world_of(g, r));
        if (!h)
            return;
        if (!pick(arg, r))
            continue;
        int q = 0;
        while (q < r && !(pick(arg, q) &&
                          !strcmp(dcoll_host_of(dcoll_world_of(g, q)), h)))
            q++;
        if (q < r)
            continue;   /* its host is shown already */
        if (shown == 8) {
            dcoll_put(t, ", ...");
            return;
        }
        dcoll_put(t, "%s%s {", shown++ ? ", " : ", on ", h);
        for (int n = 0, u = r; u < g->size; u++)
            if (pick(arg, u) &&
                !strcmp(dcoll_host_of(dcoll_world_of(g, u)), h))
                dcoll_put(t, "%s%d", n++ ? "," : "", u);
        dcoll_put(t, "}");
    }
}

/* What the roll call found, after "...timed out after T s (...)". */
static void put_roll(struct dcoll_text *t, const struct dcoll_group *g,
                     uint64_t seq, int kind, const struct dcoll_roll *roll)
{
    struct roll_pick p = {roll, DCOLL_ROLL_SILENT};
    int silent = 0, behind = 0, forms[DCOLL_FORMS_] = {0};
    for (int r = 0; r < g->size; r++) {
        silent += roll->state[r] == DCOLL_ROLL_SILENT;
        behind += roll->state[r] == DCOLL_ROLL_OTHER && roll->seq[r] < seq;
        if (roll->state[r] == DCOLL_ROLL_SAME && roll->form[r] < DCOLL_FORMS_)
            forms[roll->form[r]]++;
    }
    dcoll_put(t, ": ");
    for (int r = 0, shown = 0; r < g->size; r++) {
        if (roll->state[r] != DCOLL_ROLL_LEFT)
            continue;
        if (shown++ == 8) {
            dcoll_put(t, "more ranks left the group; ");
            break;
        }
        if (roll->why && roll->why[r])
            dcoll_put(t, "rank %d (world %d) %s, and left the group there; ",
                      r, dcoll_world_of(g, r), roll->why[r]);
        else
            dcoll_put(t, "rank %d (world %d) left the group at its call "
                      "#%llu; ", r, dcoll_world_of(g, r),
                      (unsigned long long)roll->seq[r]);
    }
    if (silent) {
        /* No answer is no proof of absence: a rank that finished the
         * call (its count differed, and MPI let it go) and left dcoll
         * cannot answer either. */
        dcoll_put_ranks(t, g, pick_state, &p);
        dcoll_put(t, " did not answer (not in a dcoll call on the group: "
            "never came, or finished this call and left dcoll, or stopped, "
            "or gone)");
        put_hosts(t, g, pick_state, &p);
        dcoll_put(t, "; ");
    }
    if (behind) {
        struct roll_pick b = {roll, (int)seq};
        dcoll_put_ranks(t, g, pick_behind, &b);
        dcoll_put(t, " did not arrive (");
        int shown = 0;
        for (int r = 0; r < g->size && shown < 8; r++) {
            if (!pick_behind(&b, r))
                continue;
            dcoll_put(t, "%srank %d: latest call #%llu, %s, %s, %s",
                      shown++ ? "; " : "",
                r, (unsigned long long)roll->seq[r],
                roll->seq[r] ? dcoll_kind_name(roll->kind[r]) : "none",
                form_name(roll->form[r]),
                roll->busy[r] ? "waiting in it"
                              : "not waiting in a call on the group");
            if (roll->why && roll->why[r] && roll->why[r][0])
                dcoll_put(t, "; %s", roll->why[r]);
        }
        dcoll_put(t, ")");
        put_hosts(t, g, pick_behind, &b);
        dcoll_put(t, "; ");
    }
    for (int r = 0; r < g->size; r++)
        if (roll->state[r] == DCOLL_ROLL_OTHER && roll->seq[r] > seq)
            dcoll_put(t, "rank %d (world %d) is at collective #%llu (%s); ",
                r, dcoll_world_of(g, r), (unsigned long long)roll->seq[r],
                dcoll_kind_name(roll->kind[r]));
    /* The same number is no proof of the same call: each in another
     * kind is named with it. */
    struct kind_pick k = {roll, kind, true};
    for (int r = 0, shown = 0; r < g->size; r++) {
        if (!pick_kind(&k, r))
            continue;
        if (shown++ == 8) {
            dcoll_put(t, "more ranks are in other calls of that number; ");
            break;
        }
        dcoll_put(t, "rank %d (world %d) is in %s #%llu instead (%s): the "
                  "ranks' calls differ there (one skipped a call, or made "
                  "another in its place); ", r, dcoll_world_of(g, r),
                  dcoll_kind_name(roll->kind[r]),
                  (unsigned long long)roll->seq[r],
                  form_name(roll->form[r]));
    }
    k.other = false;
    dcoll_put_ranks(t, g, pick_kind, &k);
    dcoll_put(t, " arrived");
    if (forms[DCOLL_FORM_BLOCKING] && forms[DCOLL_FORM_ASYNC])
        put_two_forms(t, g, roll, DCOLL_FORM_BLOCKING, " called it blocking "
            "and ", DCOLL_FORM_ASYNC, " async (with a work handle); MPI never "
            "matches a blocking collective with a nonblocking one, so call it "
            "the same way on every rank");
    bool planned = forms[DCOLL_FORM_PLAN] || forms[DCOLL_FORM_PLAN_ASYNC];
    if (planned && (forms[DCOLL_FORM_BLOCKING] || forms[DCOLL_FORM_ASYNC])) {
        struct form_pick f = {roll, DCOLL_FORM_BLOCKING};
        dcoll_put(t, ", but in different forms: ");
        bool first = true;
        for (int form = DCOLL_FORM_BLOCKING; form < DCOLL_FORMS_; form++) {
            if (!forms[form])
                continue;
            f.form = form;
            dcoll_put(t, "%s", first ? "" : ", ");
            dcoll_put_ranks(t, g, pick_form, &f);
            dcoll_put(t, " %s",
                      form == DCOLL_FORM_BLOCKING ? "called it blocking"
                      : form == DCOLL_FORM_ASYNC  ? "called it async"
                      : form == DCOLL_FORM_PLAN
                          ? "started a plan of it blocking"
                          : "started a plan of it async");
            first = false;
        }
        dcoll_put(t, "; MPI never matches a persistent collective with "
            "another form, so use the plan on every rank or on none");
    } else if (forms[DCOLL_FORM_PLAN] && forms[DCOLL_FORM_PLAN_ASYNC]) {
        put_two_forms(t, g, roll, DCOLL_FORM_PLAN, " started the plan "
            "blocking and ", DCOLL_FORM_PLAN_ASYNC, " with a work handle "
            "(async); the two forms may run different MPI calls, which never "
            "match, so start it the same way on every rank");
    }
}

void dcoll_put_hint(struct dcoll_text *t)
{
    if (!dcoll_debug)
        dcoll_put(t, ". If the ranks' calls may differ (counts, types, a "
            "rank skipping one), DCOLL_DEBUG=detail checks each call "
            "against the others' before any data move");
}

/* The report's head and the roll call, into t. */
/* A send or receive's peer, as its roll found it. */
static void put_peer(struct dcoll_text *t, const struct dcoll_group *g,
                     const struct dcoll_roll *roll)
{
    int r = roll->peer;
    if (r < 0 || r >= g->size || r == g->rank || roll->n != g->size)
        return;
    dcoll_put(t, ": the peer, rank %d (world %d), ", r, dcoll_world_of(g, r));
    switch (roll->state[r]) {
    case DCOLL_ROLL_SILENT:
        dcoll_put(t, "did not answer (not in a dcoll call on the group, "
            "stopped, or gone)");
        break;
    case DCOLL_ROLL_LEFT:
        dcoll_put(t, "left the group at its call #%llu%s%s",
            (unsigned long long)roll->seq[r],
            roll->why && roll->why[r] ? ": " : "",
            roll->why && roll->why[r] ? roll->why[r] : "");
        break;
    default:
        if (!roll->seq[r])
            dcoll_put(t, "has made no collective on the group yet");
        else
            dcoll_put(t, "%s %s #%llu (%s)",
                roll->busy[r] ? "is waiting in" : "is not waiting in a "
                "call on the group; its latest is",
                dcoll_kind_name(roll->kind[r]),
                (unsigned long long)roll->seq[r], form_name(roll->form[r]));
        if (roll->why && roll->why[r] && roll->why[r][0])
            dcoll_put(t, "; %s", roll->why[r]);
        break;
    }
    put_hosts(t, g, pick_one, &r);
}

void dcoll_put_report(struct dcoll_text *t, struct dcoll_group *g,
                      const char *fn, uint64_t seq, int kind, int form,
                      const struct dcoll_roll *roll)
{
    char name[200];
    dcoll_group_name(g, name, sizeof(name));
    dcoll_put(t, "%s on %s timed out after %g s (", fn, name, g->timeout);
    if (seq)
        dcoll_put(t, "collective #%llu, %s", (unsigned long long)seq,
            dcoll_kind_name(kind));
    else
        dcoll_put(t, "%s", dcoll_kind_name(kind));
    if (!seq && roll && roll->p2p) {
        const char *dir = kind == DCOLL_COLL_SEND ? "to" : "from";
        if (roll->peer >= 0 && roll->peer < g->size)
            dcoll_put(t, " %s rank %d (world %d), tag %d", dir, roll->peer,
                dcoll_world_of(g, roll->peer), roll->tag);
        else
            dcoll_put(t, " %s any rank, tag %d", dir, roll->tag);
    }
    if (form)
        dcoll_put(t, ", %s", form_name(form));
    dcoll_put(t, ")");
    if (roll && roll->p2p) {
        put_peer(t, g, roll);
        return;
    }
    if (roll && roll->n == g->size) {
        roll->state[g->rank] = DCOLL_ROLL_SAME;
        roll->seq[g->rank] = seq;
        roll->kind[g->rank] = kind;
        if (form)
            roll->form[g->rank] = (unsigned char)form;
        put_roll(t, g, seq, kind, roll);
    }
}

void dcoll_fault_told(struct dcoll_group *g, struct dcoll_verdict *v)
{
    char name[200], msg[1600];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    const char *fn = v->kind >= 0 && v->kind < DCOLL_CALL_KIND_COUNT_
                         ? dcoll_kinds[v->kind].fn
                         : "a collective";
    dcoll_group_name(g, name, sizeof(name));
    if (v->seq)
        dcoll_put(&t, "%s on %s timed out after %g s on rank %d (world %d) "
            "(collective #%llu, %s)", fn, name, g->timeout, v->from,
            dcoll_world_of(g, v->from), (unsigned long long)v->seq,
            dcoll_kind_name(v->kind));
    else
        dcoll_put(&t, "%s on %s timed out after %g s on rank %d (world %d) "
            "(a point-to-point %s)", fn, name, g->timeout, v->from,
            dcoll_world_of(g, v->from), dcoll_kind_name(v->kind));
    if (v->roll.n == g->size)
        put_roll(&t, g, v->seq, v->kind, &v->roll);
    dcoll_put(&t, ". Rank %d ends the job (DCOLL_ON_TIMEOUT=abort, exit code "
        "%d). This rank ", v->from, DCOLL_HANG_EXIT_CODE);
    /* Where this rank stands: the end of the whole report, and the one
     * line a rank other than the reporter prints. */
    char where[600];
    struct dcoll_text w = {where, sizeof(where), 0};
    uint64_t seq = DCOLL_PEEK(g->seq);
    int kind = DCOLL_PEEK(g->cur_kind), form = DCOLL_PEEK(g->cur_form);
    bool busy = DCOLL_PEEK(g->busy_start) > 0 &&
                DCOLL_PEEK(g->busy_seq) == seq;
    if (v->seq)
        dcoll_put(&w, "%s #%llu on %s timed out on rank %d (world %d), "
            "which told this rank; this rank ", dcoll_kind_name(v->kind),
            (unsigned long long)v->seq, name, v->from,
            dcoll_world_of(g, v->from));
    else
        dcoll_put(&w, "a %s on %s timed out on rank %d (world %d), which "
            "told this rank; this rank ", dcoll_kind_name(v->kind), name,
            v->from, dcoll_world_of(g, v->from));
    size_t own = w.off;
    if (!v->seq && !seq)
        dcoll_put(&w, "has made no collective on the group yet");
    else if (!v->seq)   /* where it is, the told call having no number */
        dcoll_put(&w, "%s %s #%llu (%s)", busy ? "is waiting in"
            : "is not waiting in a call on the group; its latest is",
            dcoll_kind_name(kind), (unsigned long long)seq,
            form_name(form));
    else if (seq == v->seq)
        dcoll_put(&w, "%s it (%s)", busy ? "is waiting in" : "posted",
            form_name(form));
    else if (seq < v->seq)
        dcoll_put(&w, "never reached it: its latest call on the group is "
            "#%llu (%s, %s), %s", (unsigned long long)seq,
            seq ? dcoll_kind_name(kind) : "none", form_name(form),
            busy ? "waiting in it" : "not waiting in a call on the group");
    else
        dcoll_put(&w, "is already at #%llu (%s)", (unsigned long long)seq,
            dcoll_kind_name(kind));
    dcoll_put(&t, "%s", where + own);
    dcoll_fault_say(g, msg, false, where, seq != v->seq, NULL);
}
