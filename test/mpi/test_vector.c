/* The vector collectives' results: all_gatherv, gatherv, scatterv,
 * all_to_allv and reduce_scatterv, for every type (and every op), uneven
 * counts with zeros, packed and gapped displacements (the gaps must stay
 * untouched), in place, blocking and async, on the world, on sub-groups
 * with gaps and non-members, and what bad counts get; the int forms give
 * the same. Run under mpirun with 1 to 4 ranks, or with --sizes on the
 * worlds of sizes.h inside one job. */
#include <mpi.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;

/* Element k of what group rank g contributes (to rank j where that
 * matters): small, so that every op is exact in every type. */
static double val(int g, int j, int64_t k)
{
    return 1 + (double)((g + 2 * j + (int)k) % 3);
}

/* Counts per rank, zeros among them; salt varies the pattern. */
static int64_t cnt(int i, int salt)
{
    return (int64_t)((i + salt) % 3) * 2;
}

#define SENTINEL 99.0

enum mode { BLOCK, WAIT, TEST };

static void finish(enum mode m, dcoll_status_t st, dcoll_work_t **w,
                   const char *what)
{
    CHECK(st == DCOLL_SUCCESS, "%s: %s", what, dcoll_last_error());
    if (m == BLOCK || st)
        return;
    if (m == WAIT) {
        CHECK_OK(dcoll_work_wait(*w));
    } else {
        int done = 0;
        while (!done)
            CHECK_OK(dcoll_work_test(*w, &done));
    }
    CHECK_OK(dcoll_work_free(w));
}

#define WP(m) ((m) == BLOCK ? NULL : &w)

/* Layout of n blocks: packed, or with a one-element gap before each. */
static int64_t layout(int n, int salt, int gapped, int64_t *c, int64_t *d)
{
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        c[i] = cnt(i, salt);
        at += gapped;
        d[i] = at;
        at += c[i];
    }
    return at;
}

struct ctx {
    dcoll_group_t *g;
    int n, me;            /* group size and rank */
    const int *m;         /* members, group order (world ranks) */
    dcoll_dtype_t dt;
    size_t esz;
    enum mode mode;
    int gapped;
    char what[160];
};

static void fill(void *buf, dcoll_dtype_t dt, int64_t n, double v)
{
    for (int64_t i = 0; i < n; i++)
        t_set(buf, dt, (size_t)i, v);
}

/* Each call by its 64-bit form, or, with as_int, by its int form on int
 * copies of the same arrays (junk stays junk). */
static int as_int;
#define NMAX 8

static const int *narrow(const int64_t *a, int n, int *to)
{
    if (!a)
        return NULL;
    for (int i = 0; i < n; i++)
        to[i] = (int)a[i];
    return to;
}

static dcoll_status_t v_all_gatherv(dcoll_group_t *g, const void *s,
                                    int64_t sc, void *r, const int64_t *rc,
                                    const int64_t *d, dcoll_dtype_t t,
                                    const dcoll_coll_opts_t *o,
                                    dcoll_work_t **w)
{
    int n = 0, a[NMAX], b[NMAX];
    dcoll_group_size(g, &n);
    if (!as_int)
        return dcoll_all_gatherv(g, s, sc, r, rc, d, t, o, w);
    return dcoll_all_gatherv_int(g, s, (int)sc, r, narrow(rc, n, a),
                                 narrow(d, n, b), t, o, w);
}

static dcoll_status_t v_gatherv(dcoll_group_t *g, const void *s, int64_t sc,
                                void *r, const int64_t *rc, const int64_t *d,
                                dcoll_dtype_t t, int root,
                                const dcoll_coll_opts_t *o, dcoll_work_t **w)
{
    int n = 0, a[NMAX], b[NMAX];
    dcoll_group_size(g, &n);
    if (!as_int)
        return dcoll_gatherv(g, s, sc, r, rc, d, t, root, o, w);
    return dcoll_gatherv_int(g, s, (int)sc, r, narrow(rc, n, a),
                             narrow(d, n, b), t, root, o, w);
}

static dcoll_status_t v_scatterv(dcoll_group_t *g, const void *s,
                                 const int64_t *sc, const int64_t *d,
                                 void *r, int64_t rc, dcoll_dtype_t t,
                                 int root, const dcoll_coll_opts_t *o,
                                 dcoll_work_t **w)
{
    int n = 0, a[NMAX], b[NMAX];
    dcoll_group_size(g, &n);
    if (!as_int)
        return dcoll_scatterv(g, s, sc, d, r, rc, t, root, o, w);
    return dcoll_scatterv_int(g, s, narrow(sc, n, a), narrow(d, n, b), r,
                              (int)rc, t, root, o, w);
}

static dcoll_status_t v_all_to_allv(dcoll_group_t *g, const void *s,
                                    const int64_t *sc, const int64_t *sd,
                                    void *r, const int64_t *rc,
                                    const int64_t *rd, dcoll_dtype_t t,
                                    const dcoll_coll_opts_t *o,
                                    dcoll_work_t **w)
{
    int n = 0, a[NMAX], b[NMAX], c[NMAX], e[NMAX];
    dcoll_group_size(g, &n);
    if (!as_int)
        return dcoll_all_to_allv(g, s, sc, sd, r, rc, rd, t, o, w);
    return dcoll_all_to_allv_int(g, s, narrow(sc, n, a), narrow(sd, n, b), r,
                                 narrow(rc, n, c), narrow(rd, n, e), t, o,
                                 w);
}

static dcoll_status_t v_reduce_scatterv(dcoll_group_t *g, const void *s,
                                        void *r, const int64_t *rc,
                                        dcoll_dtype_t t, dcoll_op_t op,
                                        const dcoll_coll_opts_t *o,
                                        dcoll_work_t **w)
{
    int n = 0, a[NMAX];
    dcoll_group_size(g, &n);
    if (!as_int)
        return dcoll_reduce_scatterv(g, s, r, rc, t, op, o, w);
    return dcoll_reduce_scatterv_int(g, s, r, narrow(rc, n, a), t, op, o,
                                     w);
}

static void all_gatherv(struct ctx *x, int in_place)
{
    int64_t c[8], d[8];
    int64_t total = layout(x->n, 1, x->gapped, c, d);
    char *r = malloc((size_t)(total + 1) * x->esz);
    char *s = malloc((size_t)(c[x->me] + 1) * x->esz);
    fill(r, x->dt, total, SENTINEL);
    char *src = in_place ? r + (size_t)d[x->me] * x->esz : s;
    for (int64_t k = 0; k < c[x->me]; k++)
        t_set(src, x->dt, (size_t)k, val(x->me, 0, k));
    dcoll_work_t *w = NULL;
    dcoll_status_t st = v_all_gatherv(x->g, src, c[x->me], r, c,
                                          x->gapped ? d : NULL, x->dt, NULL,
                                          WP(x->mode));
    finish(x->mode, st, &w, x->what);
    for (int i = 0; i < x->n; i++) {
        for (int64_t k = 0; k < c[i]; k++) {
            double got = t_get(r, x->dt, (size_t)(d[i] + k));
            CHECK(got == val(i, 0, k), "%s all_gatherv%s: block %d [%lld] "
                  "= %g, want %g", x->what, in_place ? " in place" : "", i,
                  (long long)k, got, val(i, 0, k));
        }
        if (x->gapped)
            CHECK(t_get(r, x->dt, (size_t)d[i] - 1) == SENTINEL,
                  "%s all_gatherv: gap before block %d written", x->what, i);
    }
    free(r);
    free(s);
}

static void gatherv(struct ctx *x, int in_place)
{
    int root = x->n - 1;   /* group rank; passed as its world rank */
    int64_t c[8], d[8];
    int64_t total = layout(x->n, 2, x->gapped, c, d);
    char *r = malloc((size_t)(total + 1) * x->esz);
    char *s = malloc((size_t)(c[x->me] + 1) * x->esz);
    fill(r, x->dt, total, SENTINEL);
    int ip = in_place && x->me == root;
    char *src = ip ? r + (size_t)d[x->me] * x->esz : s;
    for (int64_t k = 0; k < c[x->me]; k++)
        t_set(src, x->dt, (size_t)k, val(x->me, 0, k));
    dcoll_work_t *w = NULL;
    /* Off the root the receive side means nothing: garbage there. */
    int64_t junk[8] = {-5, -5, -5, -5, -5, -5, -5, -5};
    int at_root = x->me == root;
    dcoll_status_t st = v_gatherv(x->g, src, c[x->me],
                                      at_root ? r : NULL, at_root ? c : junk,
                                      x->gapped ? d : NULL, x->dt,
                                      x->m[root], NULL, WP(x->mode));
    finish(x->mode, st, &w, x->what);
    for (int i = 0; at_root && i < x->n; i++)
        for (int64_t k = 0; k < c[i]; k++) {
            double got = t_get(r, x->dt, (size_t)(d[i] + k));
            CHECK(got == val(i, 0, k), "%s gatherv%s: block %d [%lld] = %g",
                  x->what, ip ? " in place" : "", i, (long long)k, got);
        }
    free(r);
    free(s);
}

static void scatterv(struct ctx *x, int in_place)
{
    int root = 0;
    int64_t c[8], d[8];
    int64_t total = layout(x->n, 0, x->gapped, c, d);
    char *s = malloc((size_t)(total + 1) * x->esz);
    char *r = malloc((size_t)(c[x->me] + 1) * x->esz);
    for (int i = 0; i < x->n; i++)
        for (int64_t k = 0; k < c[i]; k++)
            t_set(s, x->dt, (size_t)(d[i] + k), val(i, 1, k));
    fill(r, x->dt, c[x->me], SENTINEL);
    int ip = in_place && x->me == root;
    char *dst = ip ? s + (size_t)d[x->me] * x->esz : r;
    dcoll_work_t *w = NULL;
    int at_root = x->me == root;
    dcoll_status_t st = v_scatterv(x->g, at_root ? s : NULL,
                                       at_root ? c : NULL,
                                       x->gapped ? d : NULL, dst, c[x->me],
                                       x->dt, x->m[root], NULL, WP(x->mode));
    finish(x->mode, st, &w, x->what);
    for (int64_t k = 0; k < c[x->me]; k++) {
        double got = t_get(dst, x->dt, (size_t)k);
        CHECK(got == val(x->me, 1, k), "%s scatterv%s: [%lld] = %g, want %g",
              x->what, ip ? " in place" : "", (long long)k, got,
              val(x->me, 1, k));
    }
    free(r);
    free(s);
}

/* Rank g sends (g + 2 j) % 3 elements to rank j; in place, where both
 * sides share one layout, as many as j sends back ((g + j) % 3). */
static int64_t a2a(int g, int j, int sym)
{
    return (int64_t)((g + (sym ? 1 : 2) * j) % 3);
}

static void all_to_allv(struct ctx *x, int in_place)
{
    int64_t sc[8], sd[8], rc[8], rd[8], sat = 0, rat = 0;
    for (int j = 0; j < x->n; j++) {
        sc[j] = a2a(x->me, j, in_place);
        rc[j] = a2a(j, x->me, in_place);
        sat += x->gapped;
        rat += x->gapped;
        sd[j] = sat;
        rd[j] = rat;
        sat += sc[j];
        rat += rc[j];
    }
    if (in_place) {   /* both sides in the receive layout */
        for (int j = 0; j < x->n; j++) {
            sc[j] = rc[j];
            sd[j] = rd[j];
        }
        sat = rat;
    }
    char *s = malloc((size_t)(sat + 1) * x->esz);
    char *r = malloc((size_t)(rat + 1) * x->esz);
    fill(r, x->dt, rat, SENTINEL);
    char *src = in_place ? r : s;
    for (int j = 0; j < x->n; j++)
        for (int64_t k = 0; k < sc[j]; k++)
            t_set(src, x->dt, (size_t)(sd[j] + k), val(x->me, j, k));
    dcoll_work_t *w = NULL;
    dcoll_status_t st = v_all_to_allv(x->g, src, sc,
                                          x->gapped ? sd : NULL, r, rc,
                                          x->gapped ? rd : NULL, x->dt, NULL,
                                          WP(x->mode));
    finish(x->mode, st, &w, x->what);
    for (int j = 0; j < x->n; j++) {
        for (int64_t k = 0; k < rc[j]; k++) {
            double got = t_get(r, x->dt, (size_t)(rd[j] + k));
            CHECK(got == val(j, x->me, k), "%s all_to_allv%s: from %d [%lld] "
                  "= %g, want %g", x->what, in_place ? " in place" : "", j,
                  (long long)k, got, val(j, x->me, k));
        }
        if (x->gapped)
            CHECK(t_get(r, x->dt, (size_t)rd[j] - 1) == SENTINEL,
                  "%s all_to_allv: gap before block %d written", x->what, j);
    }
    free(s);
    free(r);
}

static double fold(dcoll_op_t op, int n, int j, int64_t k, int is_f)
{
    double acc = val(0, j, k);
    for (int g = 1; g < n; g++)
        acc = t_combine(op, acc, val(g, j, k));
    return t_average(op, acc, n, is_f);
}

static void reduce_scatterv(struct ctx *x, dcoll_op_t op, int in_place)
{
    int64_t c[8], d[8];
    int64_t total = layout(x->n, 1, 0, c, d);
    char *s = malloc((size_t)(total + 1) * x->esz);
    char *r = malloc((size_t)(c[x->me] + 1) * x->esz);
    for (int j = 0; j < x->n; j++)
        for (int64_t k = 0; k < c[j]; k++)
            t_set(s, x->dt, (size_t)(d[j] + k), val(x->me, j, k));
    char *dst = in_place ? s + (size_t)d[x->me] * x->esz : r;
    dcoll_work_t *w = NULL;
    dcoll_status_t st = v_reduce_scatterv(x->g, s, dst, c, x->dt, op,
                                              NULL, WP(x->mode));
    finish(x->mode, st, &w, x->what);
    for (int64_t k = 0; k < c[x->me]; k++) {
        double got = t_get(dst, x->dt, (size_t)k);
        double want = fold(op, x->n, x->me, k, t_is_float(x->dt));
        double tol = x->dt == DCOLL_FLOAT16 || x->dt == DCOLL_BFLOAT16
                         ? 1e-2 * fabs(want) : 1e-6 * fabs(want);
        CHECK(fabs(got - want) <= tol, "%s reduce_scatterv(%s)%s: [%lld] = "
              "%g, want %g", x->what, t_op_names[op],
              in_place ? " in place" : "", (long long)k, got, want);
    }
    free(s);
    free(r);
}

static void on_group(int which)
{
    int ranks[8] = {0}, n = t_world_ranks(which, ranks);
    dcoll_group_t *g = NULL;
    if (which == 0) {
        g = T_WORLD;
    } else {
        CHECK_OK(t_new_group(&g, ranks, n, NULL));
    }
    int me = -1, members[8];
    dcoll_group_rank(g, &me);
    for (int i = 0; i < n; i++)   /* group order: ascending job ranks */
        members[i] = ranks[i];
    for (int i = 0; i < n && which > 0; i++)   /* the world's: its own */
        for (int j = i + 1; j < n; j++)
            if (members[j] < members[i]) {
                int t = members[i];
                members[i] = members[j];
                members[j] = t;
            }
    for (int dt = 0; dt < T_NUMERIC; dt++) {
        for (int mode = BLOCK; mode <= TEST; mode++) {
            struct ctx x = {g, n, me, members, (dcoll_dtype_t)dt,
                            t_size((dcoll_dtype_t)dt), (enum mode)mode,
                            mode % 2, ""};
            snprintf(x.what, sizeof(x.what), "group %d %s mode %d%s%s",
                     which, t_dtype_names[dt], mode,
                     x.gapped ? " gapped" : "", as_int ? " (int form)" : "");
            if (me == DCOLL_NON_MEMBER) {
                /* Calls succeed at once and touch nothing. */
                dcoll_work_t *w = NULL;
                finish(x.mode, dcoll_all_gatherv(g, NULL, 0, NULL, NULL,
                                                 NULL, x.dt, NULL,
                                                 WP(x.mode)), &w, x.what);
                continue;
            }
            for (int ip = 0; ip < 2; ip++) {
                x.gapped = ip ? 0 : mode % 2;  /* in place: packed or not */
                all_gatherv(&x, ip);
                gatherv(&x, ip);
                scatterv(&x, ip);
                all_to_allv(&x, ip);
                for (int op = 0; op < DCOLL_OP_COUNT_; op++) {
                    if (!t_op_ok(x.dt, (dcoll_op_t)op))
                        continue;
                    if (mode != BLOCK && op != DCOLL_SUM && op != DCOLL_AVG)
                        continue;   /* every op once, blocking */
                    reduce_scatterv(&x, (dcoll_op_t)op, ip);
                }
            }
        }
    }
    if (which > 0)
        CHECK_OK(dcoll_group_destroy(&g));
}


/* What bad input gets: refused before any communication, so no buffer
 * changes. Every rank passes the same mistake here: one rank alone
 * refusing would leave the others waiting, as in MPI (DCOLL_DEBUG=detail
 * catches counts that disagree). */
static void refused(void)
{
    int n = t_w.n, me = t_w.me;
    int64_t c[8], d[8], big[8];
    layout(n, 0, 0, c, d);
    for (int i = 0; i < n; i++)
        big[i] = (int64_t)1 << 33;
    int buf[64] = {0};
    dcoll_status_t bad = DCOLL_ERR_INVALID_ARGUMENT;
    dcoll_group_t *G = t_spare();
    dcoll_group_rank(G, &me);   /* ordered by job rank, as new_group's */
    CHECK_DEAD(G, dcoll_all_gatherv(G, buf, -1, buf, c, NULL, DCOLL_INT32,
                                    NULL, NULL),
                  bad, "sendcount -1 is negative");
    CHECK_DEAD(G, dcoll_all_gatherv(G, buf, c[me], buf + 32, NULL, NULL,
                                    DCOLL_INT32, NULL, NULL),
                  bad, "recvcounts is NULL");
    CHECK_DEAD(G, dcoll_all_gatherv(G, buf, c[me] + 1, buf + 32, c, NULL,
                                    DCOLL_INT32, NULL, NULL),
                  bad, "differs from recvcounts");
    int64_t neg[8];
    memcpy(neg, c, sizeof(neg));
    neg[n - 1] = -3;
    CHECK_DEAD(G, dcoll_reduce_scatterv(G, buf, buf + 32, neg, DCOLL_INT32,
                                        DCOLL_SUM, NULL, NULL),
                  bad, "is negative");
    CHECK_DEAD(G, dcoll_all_to_allv(G, buf, big, NULL, buf + 32, big, NULL,
                                    DCOLL_INT32, NULL, NULL),
                  DCOLL_ERR_UNSUPPORTED, "above INT_MAX");
    /* The int forms' refusals name the same entries. */
    int ineg[8];
    for (int i = 0; i < n; i++)
        ineg[i] = (int)c[i];
    ineg[n - 1] = -3;
    char want[48];
    snprintf(want, sizeof(want), "recvcounts[%d] = -3 is negative", n - 1);
    CHECK_DEAD(G, dcoll_reduce_scatterv_int(G, buf, buf + 32, ineg,
                                            DCOLL_INT32, DCOLL_SUM, NULL,
                                            NULL),
                  bad, want);
    CHECK_DEAD(G, dcoll_scatterv(G, buf, c, NULL, buf + 32, -2,
                                 DCOLL_INT32, 0, NULL, NULL),
                  bad, "recvcount -2 is negative");
    /* Overlap that is not the in-place pattern. */
    int64_t one[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    CHECK_DEAD(G, dcoll_all_gatherv(G, buf + 1, 2, buf, one, NULL,
                                    DCOLL_INT32, NULL, NULL),
                  bad, "overlap");
    CHECK_OK(dcoll_group_destroy(&G));
    /* The world still answers after the refusals. */
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
}

/* DCOLL_DEBUG=detail: counts that disagree between ranks are caught on
 * every rank before anything runs, named pair by pair, and the group
 * stays usable. */
static void mismatched(void)
{
    int n = t_w.n, me = t_w.me;
    if (n < 2)
        return;
    int64_t c[8], d[8];
    layout(n, 0, 0, c, d);
    int buf[64], ref[64];
    for (int i = 0; i < 64; i++)
        buf[i] = ref[i] = 1000 + i;
    /* gatherv: rank 1 sends one more than the root expects. */
    int64_t mine = c[me] + (me == 1);
    dcoll_status_t st = dcoll_gatherv(T_WORLD, buf, mine, buf + 32, c, NULL,
                                      DCOLL_INT32, t_w.r[0], NULL, NULL);
    char want[160];
    snprintf(want, sizeof(want), "rank 1 (world %d) sends %lld element(s) "
             "to rank 0 (world %d), which expects %lld", t_w.r[1],
             (long long)c[1] + 1, t_w.r[0], (long long)c[1]);
    CHECK(st == DCOLL_ERR_MISMATCH && strstr(dcoll_last_error(), want),
          "gatherv mismatch: %s: %s", dcoll_status_string(st),
          dcoll_last_error());
    /* all_gatherv: the last rank passes other recvcounts. */
    int64_t other[8];
    memcpy(other, c, sizeof(other));
    if (me == n - 1)
        other[0] += 1;
    st = dcoll_all_gatherv(T_WORLD, buf, other[me], buf + 32, other, NULL,
                           DCOLL_INT32, NULL, NULL);
    CHECK(st == DCOLL_ERR_MISMATCH &&
          strstr(dcoll_last_error(), "recvcounts {1,"),
          "all_gatherv mismatch: %s: %s", dcoll_status_string(st),
          dcoll_last_error());
    /* all_to_allv: rank 0 expects one more from rank 1 than it sends. */
    int64_t sc[8], rc[8];
    for (int j = 0; j < n; j++) {
        sc[j] = 1;
        rc[j] = 1 + (me == 0 && j == 1);
    }
    st = dcoll_all_to_allv(T_WORLD, buf, sc, NULL, buf + 32, rc, NULL,
                           DCOLL_INT32, NULL, NULL);
    snprintf(want, sizeof(want), "rank 1 (world %d) sends 1 element(s) to "
             "rank 0 (world %d), which expects 2", t_w.r[1], t_w.r[0]);
    CHECK(st == DCOLL_ERR_MISMATCH && strstr(dcoll_last_error(), want),
          "all_to_allv mismatch: %s: %s", dcoll_status_string(st),
          dcoll_last_error());
    CHECK(!memcmp(buf, ref, sizeof(buf)), "a mismatched call wrote a buffer");
    CHECK_OK(dcoll_barrier(T_WORLD, NULL, NULL));
}

static void body(void)
{
    for (int which = 0; which < T_NGROUPS; which++)
        on_group(which);
    /* The int forms: the same results on the world, on a group whose
     * ranks are not the world's (a root's arrays found by its group
     * rank) and on one with no members. */
    as_int = 1;
    on_group(0);
    on_group(1);
    on_group(T_NGROUPS - 1);
    as_int = 0;
    refused();
    if (t_debug())
        mismatched();
}

int main(int argc, char **argv)
{
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &t_rank);
    t_sizes(argc, argv, body);
    int rc = t_finish("vector");
    dcoll_finalize();
    return rc;
}
