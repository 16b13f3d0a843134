/* Neighbourhood collectives: dcoll_neighbor_all_to_allv and
 * dcoll_neighbor_all_gather on graphs made with dcoll_neighborhood_create
 *   - a periodic ring (at 1 and 2 ranks every edge a rank to itself or a
 *     double edge), a chain with walls (DCOLL_PROC_NULL), an irregular
 *     graph with empty lists and a double edge;
 *   - on the world and on a group with gaps (world ranks in the lists);
 *   - blocking, async, plans started twice (blocking and with a work);
 *   - every received block checked against what its sender put there
 *     (edges matched in list order), the blocks a wall or a gap in the
 *     displacements leaves untouched, and, where the graph has no wall,
 *     bit for bit against MPI_Neighbor_alltoallv and
 *     MPI_Neighbor_allgather on MPI's own graph of the same lists;
 *   - lists that do not match refused on every rank, naming the edge, and
 *     the group usable after; bad lists and bad counts refused.
 * Run under mpirun with 1 to 4 ranks, or --sizes (test/sizes.h) for every
 * size inside one job. */
#include <mpi.h>
#include <stdlib.h>
#include "testutil.h"
#include "sizes.h"

int t_rank, t_failures;
static int job_size;

enum { MAXDEG = 16, GAP = 8, NGATHER = 3 };
enum graph { RING, WALLS, IRREGULAR, NGRAPHS };
static const char *const graph_names[] = {"ring", "walls", "irregular"};
enum form { BLOCKING, ASYNC, PLAN, PLAN_ASYNC, NFORMS };
static const char *const form_names[] = {"blocking", "async", "plan",
                                         "plan-async"};
static const double UNTOUCHED = -7.25;

struct lists {
    int nin, in[MAXDEG], nout, out[MAXDEG];
};

/* Graph k's lists of group rank r of n (group ranks; -1 a wall). The
 * irregular graph: r sends to every rank below it, highest first, and
 * the last rank to 0 once more; in-lists follow from the out-lists, by
 * sender from the highest. */
static void lists_of(enum graph k, int r, int n, struct lists *l)
{
    l->nin = l->nout = 0;
    if (k == RING || k == WALLS) {
        int up = r + 1 < n ? r + 1 : (k == RING ? 0 : DCOLL_PROC_NULL);
        int down = r > 0 ? r - 1 : (k == RING ? n - 1 : DCOLL_PROC_NULL);
        l->out[l->nout++] = up;
        l->out[l->nout++] = down;
        l->in[l->nin++] = down;
        l->in[l->nin++] = up;
        return;
    }
    for (int d = r - 1; d >= 0; d--)
        l->out[l->nout++] = d;
    if (r == n - 1 && n > 1)
        l->out[l->nout++] = 0;
    for (int s = n - 1; s >= 0; s--) {
        if (s <= r)
            continue;
        for (int d = s - 1; d >= 0; d--)
            if (d == r)
                l->in[l->nin++] = s;
        if (s == n - 1 && r == 0)
            l->in[l->nin++] = s;
    }
}

/* Which of sender s's out-edges feeds in-list entry i of receiver r. */
static int edge_at_sender(enum graph k, int r, int n, const struct lists *mine,
                          int i)
{
    int s = mine->in[i], m = 0;
    for (int j = 0; j < i; j++)
        m += mine->in[j] == s;
    struct lists ls;
    lists_of(k, s, n, &ls);
    for (int j = 0; j < ls.nout; j++)
        if (ls.out[j] == r && m-- == 0)
            return j;
    return -1;
}

static int count_of(int s, int j)
{
    return 1 + (s * 7 + j * 3) % 5;
}

static double value(int s, int j, int e, int start)
{
    return s * 100000.0 + j * 1000.0 + e + start * 0.5;
}

struct grp {
    dcoll_group_t *g;
    int m[T_MAXW], n, me;
    const char *name;
};

/* One call of form f on nb (graph k, lists l of this rank me): all_to_allv
 * with packed receive blocks or GAP apart, then all_gather. */
static void one(const struct grp *G, enum graph k, dcoll_neighborhood_t *nb,
                const struct lists *l, enum form f, bool gapped,
                MPI_Comm ref)
{
    int me = G->me, n = G->n;
    int64_t sc[MAXDEG], sd[MAXDEG], rc[MAXDEG], rd[MAXDEG];
    int64_t stot = 0, rtot = 0;
    /* Send blocks in reverse list order, to show the displacements are
     * read. */
    for (int j = l->nout - 1; j >= 0; j--) {
        sc[j] = count_of(me, j);
        sd[j] = stot;
        stot += sc[j];
    }
    int src_edge[MAXDEG];
    for (int i = 0; i < l->nin; i++) {
        src_edge[i] = l->in[i] < 0 ? -1 : edge_at_sender(k, me, n, l, i);
        rc[i] = l->in[i] < 0 ? 2 : count_of(l->in[i], src_edge[i]);
        rd[i] = gapped ? (int64_t)i * GAP + 1 : rtot;
        rtot += rc[i];
    }
    int64_t rlen = gapped ? (int64_t)l->nin * GAP + 1 : rtot;
    double *s = malloc(sizeof(double) * (size_t)(stot + 1));
    double *r = malloc(sizeof(double) * (size_t)(rlen + 1));
    double *g = malloc(sizeof(double) * NGATHER * (l->nin + 1));
    double gs[NGATHER];
    dcoll_plan_t *pa = NULL, *pg = NULL;
    int starts = f >= PLAN ? 2 : 1;
    if (f >= PLAN) {
        CHECK_OK(dcoll_neighbor_all_to_allv_plan(nb, s, sc, sd, r, rc,
                                                 gapped ? rd : NULL,
                                                 DCOLL_FLOAT64, NULL, &pa));
        CHECK_OK(dcoll_neighbor_all_gather_plan(nb, gs, NGATHER, g,
                                                DCOLL_FLOAT64, NULL, &pg));
    }
    for (int start = 0; start < starts; start++) {
        for (int j = 0; j < l->nout; j++)
            for (int e = 0; e < sc[j]; e++)
                s[sd[j] + e] = value(me, j, e, start);
        for (int64_t x = 0; x < rlen; x++)
            r[x] = UNTOUCHED;
        for (int e = 0; e < NGATHER; e++)
            gs[e] = value(me, 0, e, start) + 0.25;
        for (int x = 0; x < NGATHER * l->nin; x++)
            g[x] = UNTOUCHED;
        dcoll_work_t *w1 = NULL, *w2 = NULL;
        switch (f) {
        case BLOCKING:
            CHECK_OK(dcoll_neighbor_all_to_allv(nb, s, sc, sd, r, rc,
                                                gapped ? rd : NULL,
                                                DCOLL_FLOAT64, NULL, NULL));
            CHECK_OK(dcoll_neighbor_all_gather(nb, gs, NGATHER, g,
                                               DCOLL_FLOAT64, NULL, NULL));
            break;
        case ASYNC:
            CHECK_OK(dcoll_neighbor_all_to_allv(nb, s, sc, sd, r, rc,
                                                gapped ? rd : NULL,
                                                DCOLL_FLOAT64, NULL, &w1));
            CHECK_OK(dcoll_neighbor_all_gather(nb, gs, NGATHER, g,
                                               DCOLL_FLOAT64, NULL, &w2));
            CHECK_OK(dcoll_work_wait(w1));
            CHECK_OK(dcoll_work_wait(w2));
            dcoll_work_free(&w1);
            dcoll_work_free(&w2);
            break;
        case PLAN:
            CHECK_OK(dcoll_plan_start(pa, NULL));
            CHECK_OK(dcoll_plan_start(pg, NULL));
            break;
        default:
            CHECK_OK(dcoll_plan_start(pa, &w1));
            CHECK_OK(dcoll_plan_start(pg, &w2));
            CHECK_OK(dcoll_work_wait(w1));
            CHECK_OK(dcoll_work_wait(w2));
            break;
        }
        int bad = 0;
        for (int i = 0; i < l->nin; i++)
            for (int e = 0; e < rc[i]; e++) {
                double want = l->in[i] < 0 ? UNTOUCHED
                                           : value(l->in[i], src_edge[i], e,
                                                   start);
                bad += r[rd[i] + e] != want;
                for (int x = 0; e == 0 && x < NGATHER; x++)
                    bad += g[i * NGATHER + x] !=
                           (l->in[i] < 0 ? UNTOUCHED
                                         : value(l->in[i], 0, x, start) +
                                               0.25);
            }
        if (gapped)   /* the gaps between blocks, and before the first */
            for (int i = 0; i < l->nin; i++)
                for (int64_t x = rd[i] + rc[i]; x < (i + 1) * GAP + 1 &&
                                                x < rlen; x++)
                    bad += r[x] != UNTOUCHED;
        if (gapped && rlen > 0)
            bad += r[0] != UNTOUCHED;
        CHECK(!bad, "%s, %s graph, %s%s, start %d: %d element(s) wrong",
              G->name, graph_names[k], form_names[f],
              gapped ? ", gapped" : "", start, bad);
        /* MPI's own calls on MPI's graph of the same lists, bit for bit. */
        if (ref != MPI_COMM_NULL) {
            int isc[MAXDEG], isd[MAXDEG], irc[MAXDEG], ird[MAXDEG];
            for (int j = 0; j < l->nout; j++)
                isc[j] = (int)sc[j], isd[j] = (int)sd[j];
            for (int i = 0; i < l->nin; i++)
                irc[i] = (int)rc[i], ird[i] = (int)rd[i];
            double *mr = malloc(sizeof(double) * (size_t)(rlen + 1));
            double *mg = malloc(sizeof(double) * NGATHER * (l->nin + 1));
            for (int64_t x = 0; x < rlen; x++)
                mr[x] = UNTOUCHED;
            MPI_Neighbor_alltoallv(s, isc, isd, MPI_DOUBLE, mr, irc, ird,
                                   MPI_DOUBLE, ref);
            MPI_Neighbor_allgather(gs, NGATHER, MPI_DOUBLE, mg, NGATHER,
                                   MPI_DOUBLE, ref);
            CHECK(!memcmp(mr, r, sizeof(double) * (size_t)rlen) &&
                      !memcmp(mg, g, sizeof(double) * NGATHER *
                                         (size_t)l->nin),
                  "%s, %s graph, %s: differs from MPI's own calls",
                  G->name, graph_names[k], form_names[f]);
            free(mr);
            free(mg);
        }
    }
    if (pa)
        CHECK_OK(dcoll_plan_free(&pa));
    if (pg)
        CHECK_OK(dcoll_plan_free(&pg));
    free(s);
    free(r);
    free(g);
}

/* The world ranks of group G's lists for graph k. */
static void world_lists(const struct grp *G, enum graph k, struct lists *l,
                        int *win, int *wout)
{
    lists_of(k, G->me, G->n, l);
    for (int i = 0; i < l->nin; i++)
        win[i] = l->in[i] < 0 ? DCOLL_PROC_NULL : G->m[l->in[i]];
    for (int j = 0; j < l->nout; j++)
        wout[j] = l->out[j] < 0 ? DCOLL_PROC_NULL : G->m[l->out[j]];
}

static void graphs(struct grp *G, MPI_Comm gcomm)
{
    for (int k = 0; k < NGRAPHS; k++) {
        dcoll_neighborhood_t *nb = NULL;
        if (G->me < 0) {
            /* A non-member's handle: made, and its calls do nothing. */
            CHECK_OK(dcoll_neighborhood_create(G->g, 0, NULL, 0, NULL, &nb));
            double x = 1;
            CHECK_OK(dcoll_neighbor_all_gather(nb, &x, 1, &x, DCOLL_FLOAT64,
                                               NULL, NULL));
            CHECK_OK(dcoll_neighborhood_free(&nb));
            continue;
        }
        struct lists l;
        int win[MAXDEG], wout[MAXDEG], din = -1, dout = -1;
        world_lists(G, k, &l, win, wout);
        CHECK_OK(dcoll_neighborhood_create(G->g, l.nin, win, l.nout, wout,
                                           &nb));
        CHECK_OK(dcoll_neighborhood_degrees(nb, &din, &dout));
        CHECK(din == l.nin && dout == l.nout, "degrees %d %d, want %d %d",
              din, dout, l.nin, l.nout);
        /* MPI's graph of the same lists, where none is a wall. */
        MPI_Comm ref = MPI_COMM_NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
        if (k != WALLS)
            MPI_Dist_graph_create_adjacent(gcomm, l.nin, l.in, MPI_UNWEIGHTED,
                                           l.nout, l.out, MPI_UNWEIGHTED,
                                           MPI_INFO_NULL, 0, &ref);
#pragma GCC diagnostic pop
        for (int f = 0; f < NFORMS; f++)
            one(G, k, nb, &l, (enum form)f, (f + k) % 2 == 1, ref);
        if (ref != MPI_COMM_NULL)
            MPI_Comm_free(&ref);
        /* A plan outlives its neighbourhood's handle. */
        double a = G->me, b[2 * MAXDEG];
        dcoll_plan_t *p = NULL;
        CHECK_OK(dcoll_neighbor_all_gather_plan(nb, &a, 1, b, DCOLL_FLOAT64,
                                                NULL, &p));
        CHECK_OK(dcoll_neighborhood_free(&nb));
        CHECK(nb == NULL, "free left the handle set");
        CHECK_OK(dcoll_plan_start(p, NULL));
        for (int i = 0; i < l.nin; i++)
            CHECK(l.in[i] < 0 || b[i] == l.in[i], "%s graph: after the "
                  "handle's free, block %d is %g, want %d", graph_names[k],
                  i, b[i], l.in[i]);
        CHECK_OK(dcoll_plan_free(&p));
    }
}

/* Lists that do not match, and bad arguments: every rank's creation
 * fails alike, and the group stays usable. */
static void refusals(void)
{
    dcoll_neighborhood_t *nb = NULL;
    /* Places in the world; the lists and messages name job ranks. */
    int me = t_w.me, size = t_w.n, first = t_w.r[0], x = 0;
    int next = t_w.r[(me + 1) % size], second = t_w.r[size > 1 ? 1 : 0];
    /* Rank 0 sends to its next rank, which does not receive from it. */
    char want[160];
    snprintf(want, sizeof(want), "rank %d lists ", first);
    CHECK_REFUSED(dcoll_neighborhood_create(T_WORLD, 0, NULL, me == 0, &next,
                                            &nb),
                  DCOLL_ERR_INVALID_ARGUMENT, want);
    snprintf(want, sizeof(want), "rank %d lists %d as an out-neighbour but "
             "%d does not list %d as an in-neighbour", first, second, second,
             first);
    CHECK(strstr(dcoll_last_error(), want), "'%s' lacks '%s'",
          dcoll_last_error(), want);
    CHECK(nb == NULL, "a refused creation left a handle");
    /* The last rank receives from 0 twice, 0 sends to it once. */
    int zero[2] = {first, first}, last = t_w.r[size - 1];
    CHECK_REFUSED(dcoll_neighborhood_create(T_WORLD, me == size - 1 ? 2 : 0,
                                            zero, me == 0, &last, &nb),
                  DCOLL_ERR_INVALID_ARGUMENT, "time(s)");
    /* A bad rank on one rank: it says why, the others name it. */
    int bad = job_size + 5;
    dcoll_status_t st = dcoll_neighborhood_create(T_WORLD, me == size - 1,
                                                  &bad, 0, NULL, &nb);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), me == size - 1 ? "is not a world rank"
                                                    : "refused its lists"),
          "bad source: %s (%s)", dcoll_status_string(st),
          dcoll_last_error());
    CHECK_REFUSED(dcoll_neighborhood_create(T_WORLD, -1, NULL, 0, NULL, &nb),
                  DCOLL_ERR_INVALID_ARGUMENT, "indegree -1 is negative");
    CHECK_REFUSED(dcoll_neighborhood_create(T_WORLD, 1, NULL, 0, NULL, &nb),
                  DCOLL_ERR_INVALID_ARGUMENT, "sources is NULL");
    int minus = -3;
    CHECK_REFUSED(dcoll_neighborhood_create(T_WORLD, 0, NULL, 1, &minus, &nb),
                  DCOLL_ERR_INVALID_ARGUMENT, "DCOLL_PROC_NULL, -1");
    CHECK_REFUSED(dcoll_neighborhood_create(T_WORLD, 0, NULL, 0, NULL, NULL),
                  DCOLL_ERR_INVALID_ARGUMENT, "out is NULL");
    /* The world still runs. */
    int sum = 1;
    CHECK_OK(dcoll_all_reduce(T_WORLD, &sum, &sum, 1, DCOLL_INT32, DCOLL_SUM,
                              NULL, NULL));
    CHECK(sum == size, "all_reduce after the refusals: %d", sum);
    /* Bad handles. */
    CHECK_REFUSED(dcoll_neighbor_all_gather(NULL, &x, 1, &x, DCOLL_INT32,
                                            NULL, NULL),
                  DCOLL_ERR_INVALID_ARGUMENT, "neighbourhood is NULL");
    CHECK_OK(dcoll_neighborhood_free(&nb));
    /* Bad counts spend the group the call was on, as any refused call. */
    dcoll_group_t *g = t_spare();
    int prev = t_w.r[(me + size - 1) % size];
    CHECK_OK(dcoll_neighborhood_create(g, 1, &prev, 1, &next, &nb));
    int64_t neg = -1, one_ = 1;
    double d[4];
    CHECK_DEAD(g, dcoll_neighbor_all_to_allv(nb, d, &neg, NULL, d + 2, &one_,
                                             NULL, DCOLL_FLOAT64, NULL, NULL),
               DCOLL_ERR_INVALID_ARGUMENT, "sendcounts[0] = -1 is negative");
    CHECK_OK(dcoll_neighborhood_free(&nb));
    /* ... and a neighbourhood whose group is gone can only be freed. */
    CHECK_OK(dcoll_neighborhood_create(g, 1, &prev, 1, &next, &nb));
    CHECK_OK(dcoll_neighbor_all_to_allv(nb, d, &one_, NULL, d + 2, &one_,
                                        NULL, DCOLL_FLOAT64, NULL, NULL));
    CHECK_REFUSED(dcoll_neighbor_all_to_allv(nb, d, &one_, NULL, d,
                                             &one_, NULL, DCOLL_FLOAT64,
                                             NULL, NULL),
                  DCOLL_ERR_INVALID_ARGUMENT, "overlap");
    dcoll_group_destroy(&g);
    CHECK_REFUSED(dcoll_neighbor_all_gather(nb, d, 1, d + 2, DCOLL_FLOAT64,
                                            NULL, NULL),
                  DCOLL_ERR_INVALID_STATE, "can only be freed");
    CHECK_OK(dcoll_neighborhood_free(&nb));
}

/* Only rank 0 has an edge (to itself); the others have no neighbours
 * and pass no buffers, which MPICH refuses of MPI's own calls whatever
 * the degree: each form must still run, and rank 0 get its block. */
static void no_buffers(void)
{
    int self = t_w.r[0], me = t_w.me;
    dcoll_neighborhood_t *nb = NULL;
    CHECK_OK(dcoll_neighborhood_create(T_WORLD, me == 0, &self, me == 0,
                                       &self, &nb));
    if (!nb)
        return;
    double in[3] = {1, 2, 3}, out[3] = {0};
    int64_t one = 3, zero = 0;
    dcoll_layout_t l = {.count = 3, .blocklen = 1, .stride = 1};
    dcoll_plan_t *p = NULL;
    CHECK_OK(dcoll_neighbor_all_gather(nb, me ? NULL : in, 3, me ? NULL : out,
                                       DCOLL_FLOAT64, NULL, NULL));
    CHECK_OK(dcoll_neighbor_all_to_allv(nb, me ? NULL : in, &one, &zero,
                                        me ? NULL : out, &one, &zero,
                                        DCOLL_FLOAT64, NULL, NULL));
    CHECK_OK(dcoll_neighbor_all_to_allw(nb, me ? NULL : in, &l,
                                        me ? NULL : out, &l, DCOLL_FLOAT64,
                                        NULL, NULL));
    CHECK_OK(dcoll_neighbor_all_gather_plan(nb, me ? NULL : in, 3,
                                            me ? NULL : out, DCOLL_FLOAT64,
                                            NULL, &p));
    if (p) {
        CHECK_OK(dcoll_plan_start(p, NULL));
        CHECK_OK(dcoll_plan_free(&p));
    }
    CHECK(me || (out[0] == 1 && out[2] == 3), "no_buffers: rank 0 got "
          "%g %g %g", out[0], out[1], out[2]);
    CHECK_OK(dcoll_neighborhood_free(&nb));
}

/* The world, then t_world_ranks' group with gaps, each with MPI's own
 * communicator of the same ranks in the same order. */
static void body(void)
{
    struct grp G[2] = {{.name = "world"}, {.name = "gaps"}};
    G[0].n = t_w.n;
    memcpy(G[0].m, t_w.r, sizeof(int) * (size_t)t_w.n);
    G[0].g = T_WORLD;
    G[0].me = t_w.me;
    G[1].me = t_sorted_ranks(1, G[1].m, &G[1].n);
    CHECK_OK(t_new_group(&G[1].g, G[1].m, G[1].n, NULL));
    for (int k = 0; k < 2; k++) {
        MPI_Comm c = MPI_COMM_NULL;
        MPI_Comm_split(T_COMM, G[k].me >= 0 ? 0 : MPI_UNDEFINED, G[k].me,
                       &c);
        graphs(&G[k], c);
        if (c != MPI_COMM_NULL)
            MPI_Comm_free(&c);
    }
    refusals();
    no_buffers();
    dcoll_group_destroy(&G[1].g);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_size(MPI_COMM_WORLD, &job_size);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    CHECK_OK(dcoll_init(NULL));
    t_sizes(argc, argv, body);
    CHECK_OK(dcoll_finalize());
    int rc = t_finish("neighbor");
    MPI_Finalize();
    return rc;
}
