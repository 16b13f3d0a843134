/* Before a call on a group whose diagnostics are on the slow path: a
 * failed group refuses it, and in debug mode (DCOLL_DEBUG=detail) every
 * rank checks that every other called the same collective, with the same
 * counts, types and root, before any of them runs it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"

/* What a rank says it called; equal bytes mean the same call. A vector
 * kind whose counts every rank passes alike (all_gatherv,
 * reduce_scatterv) carries their hash in count and the first few in v;
 * the others carry neither, and their counts are matched pair by pair
 * (check_counts). */
#define SHOWN_COUNTS 6
#define PLAN_FORM 2
#define PLAN_START 3
#define WHY_SHOWN 160
#define CALL_MAGIC 0x64636b31u /* "dck1" */
struct call {
    uint32_t magic, size;          /* what a record is: a rank in another
                                      exchange sends something else */
    int64_t seq, count;
    int64_t plan;                  /* PLAN_START: the plan's number */
    int32_t kind, dtype, op, root; /* op, root -1 where the kind has none */
    int32_t async, nv;             /* MPI never matches the two forms;
                                      PLAN_FORM: a plan being made */
    int64_t v[SHOWN_COUNTS];
    int32_t refused;               /* refused by its own checks: why */
    int32_t gpu;                   /* its buffers are on a GPU */
    char why[WHY_SHOWN];
};

static void describe(const struct call *c, struct dcoll_text *t)
{
    dcoll_put(t, "%s(%s", dcoll_kind_name(c->kind),
        dcoll_dtype_name((dcoll_dtype_t)c->dtype));
    if (c->op >= 0)
        dcoll_put(t, ", %s", dcoll_op_name((dcoll_op_t)c->op));
    if (c->nv) {
        dcoll_put(t, ", recvcounts {");
        for (int i = 0; i < c->nv && i < SHOWN_COUNTS; i++)
            dcoll_put(t, "%s%lld", i ? "," : "", (long long)c->v[i]);
        dcoll_put(t, "%s}", c->nv > SHOWN_COUNTS ? ",..." : "");
    } else if (!dcoll_kind_has(c->kind, DCOLL_KF_VEC | DCOLL_KF_NEIGHBOR)) {
        dcoll_put(t, ", count %lld", (long long)c->count);
    }
    if (dcoll_kind_has(c->kind, DCOLL_KF_NEIGHBOR))
        dcoll_put(t, ", neighbourhood #%d", c->root);
    else if (c->root >= 0)
        dcoll_put(t, ", root %d", c->root);
    if (c->gpu)
        dcoll_put(t, ", on a GPU");
    if (c->async == PLAN_FORM)
        dcoll_put(t, ") as a plan");
    else if (c->async == PLAN_START)
        dcoll_put(t, ") as a start of plan #%lld, collective #%lld",
            (long long)c->plan, (long long)c->seq);
    else
        dcoll_put(t, "%s) as collective #%lld", c->async ? ", async" : "",
            (long long)c->seq);
}

struct same_pick {
    const struct call *all;
    int like;
};

static bool pick_same(const void *arg, int r)
{
    const struct same_pick *p = arg;
    return !memcmp(&p->all[r], &p->all[p->like], sizeof(struct call));
}

/* Every rank's len bytes of mine into all, over g's control twin, bounded
 * by c's deadline: a timeout there is c's, reported as any other. *late:
 * it timed out, and MPI may still write into all when the others come
 * (the exchange is left to finish in the background), so all must not
 * be freed: one buffer kept for each group that failed so. */
static dcoll_status_t exchange(struct dcoll_group *g,
                               const struct dcoll_coll *c, const void *mine,
                               void *all, size_t len, bool *late)
{
    struct dcoll_outcome out = {.source = -1};
    dcoll_status_t st = g->svc->exchange(g, mine, all, len, c, &out);
    *late = out.timed_out;
    if (out.timed_out)
        st = dcoll_fault_outcome(g, &out, c->fn, c->seq, c->kind,
                                 c->async ? DCOLL_FORM_ASYNC
                                          : DCOLL_FORM_BLOCKING);
    return st;
}

/* Above this many ranks the pairwise count check is skipped: each rank
 * would gather 16 * size^2 bytes. */
#define COUNTS_CHECK_MAX 1024

/* Every rank found the same: the group's rank 0 prints the report, the
 * others at most a line (DCOLL_REPORT), and each writes its recorder. */
static void say(const struct dcoll_group *g, const struct dcoll_coll *c,
                const char *msg)
{
    char name[200], where[400];
    snprintf(where, sizeof(where), "the ranks disagree on %s #%llu on %s, "
             "so none ran; rank 0 reports it", dcoll_kind_name(c->kind),
             (unsigned long long)c->seq,
             dcoll_group_name(g, name, sizeof(name)));
    dcoll_fault_say(g, msg, g->rank == 0, where, false, NULL);
}

/* A vector call whose counts are not the same on every rank (gatherv,
 * scatterv, all_to_allv) or a neighbourhood call (each edge's two ends):
 * every rank gathers what each says it sends to and expects from each
 * other, so all see the same pairs that disagree. */
static dcoll_status_t check_counts(struct dcoll_group *g,
                                   const struct dcoll_coll *c)
{
    int n = g->size, me = g->rank;
    if (c->kind == DCOLL_COLL_ALL_GATHERV ||
        c->kind == DCOLL_COLL_REDUCE_SCATTERV || n > COUNTS_CHECK_MAX)
        return DCOLL_SUCCESS;
    size_t row = 2 * (size_t)n;
    int64_t *mine = malloc(sizeof(int64_t) * row);
    int64_t *all = malloc(sizeof(int64_t) * row * (size_t)n);
    if (!mine || !all) {
        free(mine);
        free(all);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "debug check of %d ranks' counts", c->fn, n);
    }
    /* mine[j]: elements this rank sends to j; mine[n + j]: expects from
     * j; -1 where it does not say. */
    for (size_t i = 0; i < row; i++)
        mine[i] = -1;
    const struct dcoll_nbh *nb = c->nbh;
    switch (c->kind) {
    case DCOLL_COLL_NEIGHBOR_ALL_GATHER:
    case DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV:
    case DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW:
        /* Per neighbour, the edges to it summed (MPI pairs a rank's
         * edges to another in list order; their sums must agree). */
        for (int side = 0; side < 2; side++) {
            int deg = side ? nb->indeg : nb->outdeg;
            const int *to = side ? nb->in : nb->out;
            for (int i = 0; i < deg; i++)
                if (to[i] >= 0)
                    mine[(size_t)side * n + to[i]] = 0;
            for (int i = 0; i < deg; i++) {
                if (to[i] < 0)
                    continue;
                int64_t e = c->count;
                if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV) {
                    e = (side ? c->counts2 : c->counts)[i];
                } else if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW) {
                    /* The elements it picks (checked by the call). */
                    const dcoll_layout_t *l =
                        (side ? c->layout2 : c->layout) + i;
                    e = l->count * l->blocklen *
                        (l->count2 > 1 ? l->count2 : 1);
                }
                mine[(size_t)side * n + to[i]] += e;
            }
        }
        break;
    case DCOLL_COLL_GATHERV:
        mine[c->root] = c->count;
        for (int j = 0; me == c->root && j < n; j++)
            mine[n + j] = c->counts[j];
        break;
    case DCOLL_COLL_SCATTERV:
        mine[n + c->root] = c->count;
        for (int j = 0; me == c->root && j < n; j++)
            mine[j] = c->counts[j];
        break;
    default: /* all_to_allv; in place, the receive side is both */
        for (int j = 0; j < n; j++) {
            mine[j] = c->counts ? c->counts[j] : c->counts2[j];
            mine[n + j] = c->counts2[j];
        }
        break;
    }
    bool late = false;
    dcoll_status_t st = exchange(g, c, mine, all, sizeof(int64_t) * row,
                                 &late);
    if (st) {
        if (!late) {   /* else MPI may still read mine and write all */
            free(mine);
            free(all);
        }
        return st;
    }
    free(mine);
    char name[200], msg[1000];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    int bad = 0;
    for (int r = 0; r < n; r++)
        for (int j = 0; j < n; j++) {
            int64_t sends = all[(size_t)r * row + (size_t)j];
            int64_t expects = all[(size_t)j * row + (size_t)n + (size_t)r];
            if (sends < 0 || expects < 0 || sends == expects)
                continue;
            if (!bad++)
                dcoll_put(&t, "%s on %s: the ranks' counts disagree, so "
                          "none ran (found by DCOLL_DEBUG=detail): ", c->fn,
                    dcoll_group_name(g, name, sizeof(name)));
            if (bad <= 4)
                dcoll_put(&t, "%srank %d (world %d) sends %lld element(s) "
                          "to rank %d (world %d), which expects %lld",
                          bad > 1 ? "; " : "", r, dcoll_world_of(g, r),
                          (long long)sends, j, dcoll_world_of(g, j),
                          (long long)expects);
        }
    free(all);
    if (!bad)
        return DCOLL_SUCCESS;
    if (bad > 4)
        dcoll_put(&t, "; %d more pair(s)", bad - 4);
    say(g, c, msg);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s", msg);
}

static dcoll_status_t judge(struct dcoll_group *g, const struct dcoll_coll *c,
                            const struct call *mine);

/* This rank's record of c, made in form, of plan (0: none). */
static void record(struct call *me, const struct dcoll_coll *c, int form,
                   uint64_t plan)
{
    memset(me, 0, sizeof(*me));
    me->magic = CALL_MAGIC;
    me->size = (uint32_t)sizeof(*me);
    me->seq = (int64_t)c->seq;
    me->kind = c->kind;
    me->async = form;
    me->plan = (int64_t)plan;
}

static dcoll_status_t check_same(struct dcoll_group *g,
                                 const struct dcoll_coll *c, int form,
                                 uint64_t plan)
{
    struct call me;
    record(&me, c, form, plan);
    me.count = c->kind == DCOLL_COLL_BARRIER ? 0 : c->count;
    if (dcoll_kind_has(c->kind, DCOLL_KF_VEC)) {
        me.count = 0;
        if (c->kind == DCOLL_COLL_ALL_GATHERV ||
            c->kind == DCOLL_COLL_REDUCE_SCATTERV) {
            uint64_t h = 1469598103934665603ull;
            for (int i = 0; i < g->size; i++) {
                h ^= (uint64_t)c->counts[i];
                h *= 1099511628211ull;
                if (i < SHOWN_COUNTS)
                    me.v[i] = c->counts[i];
            }
            me.count = (int64_t)h;
            me.nv = g->size;
        }
    }
    me.dtype = c->kind == DCOLL_COLL_BARRIER ? 0 : c->dtype;
    me.op = dcoll_kind_has(c->kind, DCOLL_KF_OP) ? (int32_t)c->op : -1;
    me.root = dcoll_kind_has(c->kind, DCOLL_KF_ROOT)
                  ? dcoll_world_of(g, c->root) : -1;
    /* A neighbourhood call: each rank's counts are its own, and the
     * neighbourhood (numbered alike on every rank) is what must agree. */
    if (dcoll_kind_has(c->kind, DCOLL_KF_NEIGHBOR)) {
        me.count = 0;
        me.root = c->nbh->id;
    }
    /* One rank's buffers on the host and another's on a GPU take
     * different routes, which never meet: named here, before either. */
    me.gpu = dcoll_gpu_hook && dcoll_gpu_hook(c);
    /* Started here, before the ranks meet: a roll call on another group
     * can say this rank went to this one first. */
    if (me.gpu)
        atomic_store_explicit(&dcoll_gpu_latest,
                              dcoll_gpu_latest_pack(g->id, c->seq, c->kind),
                              memory_order_relaxed);
    return judge(g, c, &me);
}

/* Some ranks refused the call (all: every rank's record, freed here),
 * and every rank learns it here, before any data moved: none runs it,
 * and the group goes on (each rank took the call's number alike). */
static dcoll_status_t refused(struct dcoll_group *g,
                              const struct dcoll_coll *c, struct call *all)
{
    char name[200], msg[1400];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    dcoll_put(&t, "%s on %s: ", c->fn,
        dcoll_group_name(g, name, sizeof(name)));
    /* Every rank refused it for one reason (a type with no such op, a
     * root out of range passed everywhere): said once. */
    bool alike = true;
    for (int r = 0; r < g->size; r++) {
        all[r].why[WHY_SHOWN - 1] = 0;
        alike = alike && all[r].refused && all[r].kind == all[0].kind &&
                !strcmp(all[r].why, all[0].why);
    }
    if (alike) {
        dcoll_put(&t, "every rank refused %s #%lld: %s",
            dcoll_kind_name(all[0].kind), (long long)all[0].seq, all[0].why);
    } else {
        int shown = 0;
        for (int r = 0; r < g->size; r++) {
            if (!all[r].refused)
                continue;
            if (shown++ == 4) {
                dcoll_put(&t, "; and more");
                break;
            }
            dcoll_put(&t, "%srank %d (world %d) refused %s #%lld: %s",
                shown > 1 ? "; " : "", r, dcoll_world_of(g, r),
                dcoll_kind_name(all[r].kind), (long long)all[r].seq,
                all[r].why);
        }
    }
    dcoll_put(&t, ", so none ran (found by DCOLL_DEBUG=detail before any "
        "data moved) and the group is still usable");
    free(all);
    say(g, c, msg);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s", msg);
}

/* Rank r's record is not one (all: every rank's, freed here): it was in
 * another exchange of the same size, so the calls differ; what it sent
 * is never read as a record. The group is unusable: the exchanges left
 * do not pair. */
static dcoll_status_t stranger(struct dcoll_group *g,
                               const struct dcoll_coll *c, struct call *all,
                               int r)
{
    char name[200], msg[1000];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    dcoll_put(&t, "%s on %s: rank %d (world %d) sent no record of a call "
        "to the debug check (it was in another dcoll exchange: a count "
        "check of a vector call, or a call this rank did not make), so "
        "the ranks' calls differ and none ran (found by "
        "DCOLL_DEBUG=detail); this rank called ", c->fn,
        dcoll_group_name(g, name, sizeof(name)), r, dcoll_world_of(g, r));
    describe(&all[g->size], &t);
    dcoll_put(&t, ". The group is unusable from now on; other groups "
        "still work");
    free(all);
    dcoll_fault_mark(g, msg);
    say(g, c, msg);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s", msg);
}

bool dcoll_fault_check_refused(struct dcoll_group *g,
                               const struct dcoll_coll *c, const char *why)
{
    struct call me;
    record(&me, c, c->async, 0);
    me.refused = 1;
    snprintf(me.why, sizeof(me.why), "%s", why);
    /* A record refused always ends in refused() (a mismatch, the group
     * kept) unless the exchange itself failed or met a stranger, which
     * left the group failed. */
    return judge(g, c, &me) == DCOLL_ERR_MISMATCH && !g->diag->failed;
}

static dcoll_status_t judge(struct dcoll_group *g, const struct dcoll_coll *c,
                            const struct call *mine)
{
    struct call me = *mine;
    /* Room for every rank's record and, after them, this rank's own, sent
     * from there: a timed-out exchange keeps both. */
    struct call *all = malloc(sizeof(me) * ((size_t)g->size + 1));
    if (!all)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "debug check of %d ranks", c->fn, g->size);
    /* Zeros where a rank's record does not arrive whole: nothing is
     * read that was not received. */
    memset(all, 0, sizeof(me) * (size_t)g->size);
    all[g->size] = me;
    bool late = false;
    dcoll_status_t st = exchange(g, c, &all[g->size], all, sizeof(me),
                                 &late);
    if (st) {
        if (!late)
            free(all);
        return st;
    }
    for (int r = 0; r < g->size; r++)
        if (all[r].magic != CALL_MAGIC || all[r].size != sizeof(me))
            return stranger(g, c, all, r);
    for (int r = 0; r < g->size; r++)
        if (all[r].refused)
            return refused(g, c, all);
    int first_other = -1;
    for (int r = 0; r < g->size && first_other < 0; r++)
        if (memcmp(&all[r], &all[0], sizeof(me)))
            first_other = r;
    if (first_other < 0) {
        free(all);
        return dcoll_kind_has(c->kind, DCOLL_KF_VEC | DCOLL_KF_NEIGHBOR)
                   ? check_counts(g, c)
                   : DCOLL_SUCCESS;
    }
    /* Every rank has the same table, so every rank says the same. */
    char name[200], msg[1000];
    struct dcoll_text t = {msg, sizeof(msg), 0};
    dcoll_group_name(g, name, sizeof(name));
    dcoll_put(&t, "%s on %s: the ranks called different collectives, so none "
        "ran (found by DCOLL_DEBUG=detail): ", c->fn, name);
    unsigned char *told = calloc((size_t)g->size, 1);
    for (int r = 0; r < g->size; r++) {
        if (told && told[r])
            continue;
        struct same_pick p = {all, r};
        if (r)
            dcoll_put(&t, "; ");
        dcoll_put_ranks(&t, g, pick_same, &p);
        dcoll_put(&t, " called ");
        describe(&all[r], &t);
        for (int q = r; told && q < g->size; q++)
            if (pick_same(&p, q))
                told[q] = 1;
        if (!told)
            break;
    }
    free(told);
    free(all);
    say(g, c, msg);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s", msg);
}

dcoll_status_t dcoll_fault_check(struct dcoll_group *g,
                                 const struct dcoll_coll *c)
{
    if (g->diag->failed) {
        char name[200];
        return dcoll_error(DCOLL_ERR_GROUP_FAILED, "%s: %s is unusable "
                           "after an earlier failure: %s", c->fn,
                           dcoll_group_name(g, name, sizeof(name)),
                           g->diag->failed);
    }
    if (dcoll_debug && c->seq)
        return check_same(g, c, c->async, 0);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_fault_check_plan(struct dcoll_group *g,
                                      const struct dcoll_coll *c)
{
    return check_same(g, c, PLAN_FORM, 0);
}

dcoll_status_t dcoll_fault_check_start(struct dcoll_group *g,
                                       const struct dcoll_coll *c,
                                       uint64_t id)
{
    struct dcoll_coll start = *c;
    start.fn = "dcoll_plan_start";   /* the call the program made */
    return check_same(g, &start, PLAN_START, id);
}

void dcoll_diag_way(struct dcoll_group *g, const struct dcoll_coll *c,
                     const char *way)
{
    if (c->fid)
        dcoll_flight_way(g->diag->flight, c->fid, way);
    if (!dcoll_debug)
        return;
    const char **said = &g->diag->said_way[c->kind];
    if (*said == way)
        return;
    *said = way;
    if (g->rank == 0)
        fprintf(stderr, "dcoll: group %d: %s of %lld B a rank by %s, as the "
                "tuning table says (DCOLL_DEBUG=detail; said again when the "
                "way changes)\n", g->id, dcoll_kind_name((int)c->kind),
                (long long)c->count * (long long)dcoll_dtype_sizes[c->dtype],
                way);
}
