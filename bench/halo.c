/* dcoll-halo: a 3-D halo exchange of six faces, three ways in one run.
 * Each rank holds an n^3 block of doubles with one ghost layer, on a
 * periodic Cartesian grid of ranks (MPI_Dims_create), and exchanges its
 * six interior faces with its neighbours' ghost faces:
 *   dcoll   a neighbourhood plan (dcoll_neighbor_all_to_allw_plan),
 *           started blocking;
 *   hand    six MPI_Irecv and six MPI_Isend of vector types made once,
 *           then MPI_Waitall, as stencil codes write it;
 *   nbr     MPI_Neighbor_alltoallw on MPI's graph of the same lists,
 *           with the same types.
 * Each way runs its calls in a block of its own (rounds rotate the order,
 * so no way's waiting is charged to another); the median round is shown,
 * and ratio = the faster raw way's time / dcoll's (above 1: dcoll
 * faster). Faces are checked after each way's block.
 *
 * usage: mpirun -n N dcoll-halo [-R rounds] [n ...]   (default 16 64 256) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dcoll/dcoll.h"

enum { WAYS = 3, MAXR = 64 };
static const char *const way_names[WAYS] = {"dcoll", "hand", "nbr"};

struct halo {
    int n, X, Y, Z;
    double *u;
    int src[6], dst[6];
    dcoll_layout_t sl[6], rl[6];
    MPI_Datatype st[6], rt[6];
    int one[6];
    MPI_Aint sd[6], rd[6];
    MPI_Comm cart, graph;
    dcoll_neighborhood_t *nb;
    dcoll_plan_t *plan;
};

static dcoll_layout_t face(const struct halo *h, int d, int at)
{
    int X = h->X, Y = h->Y, Z = h->Z;
    if (d == 0)
        return (dcoll_layout_t){at + X + (int64_t)X * Y, Y - 2, 1, X, Z - 2,
                                (int64_t)X * Y};
    if (d == 1)
        return (dcoll_layout_t){1 + (int64_t)X * at + (int64_t)X * Y, Z - 2,
                                X - 2, (int64_t)X * Y, 0, 0};
    return (dcoll_layout_t){1 + X + (int64_t)X * Y * at, Y - 2, X - 2, X, 0,
                            0};
}

static MPI_Datatype type_of(const dcoll_layout_t *l)
{
    MPI_Datatype v, t;
    MPI_Type_vector((int)l->count, (int)l->blocklen, (int)l->stride,
                    MPI_DOUBLE, &v);
    if (l->count2 > 1) {
        MPI_Type_create_hvector((int)l->count2, 1,
                                (MPI_Aint)l->stride2 * 8, v, &t);
        MPI_Type_free(&v);
    } else {
        t = v;
    }
    MPI_Type_commit(&t);
    return t;
}

static int setup(struct halo *h, int n)
{
    int size, dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &h->cart);
    h->n = n;
    h->X = h->Y = h->Z = n + 2;
    size_t all = (size_t)h->X * h->Y * h->Z;
    if (!(h->u = malloc(sizeof(double) * all)))
        return 1;
    for (int d = 0; d < 3; d++) {
        int lo, hi, last = n + 1;
        MPI_Cart_shift(h->cart, d, 1, &lo, &hi);
        /* Sources upper then lower, destinations lower then upper: the
         * blocks pair right where both neighbours are one rank. */
        h->src[2 * d] = hi, h->src[2 * d + 1] = lo;
        h->dst[2 * d] = lo, h->dst[2 * d + 1] = hi;
        h->rl[2 * d] = face(h, d, last);
        h->rl[2 * d + 1] = face(h, d, 0);
        h->sl[2 * d] = face(h, d, 1);
        h->sl[2 * d + 1] = face(h, d, last - 1);
    }
    for (int i = 0; i < 6; i++) {
        h->st[i] = type_of(&h->sl[i]);
        h->rt[i] = type_of(&h->rl[i]);
        h->one[i] = 1;
        h->sd[i] = (MPI_Aint)h->sl[i].offset * 8;
        h->rd[i] = (MPI_Aint)h->rl[i].offset * 8;
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 6, h->src, MPI_UNWEIGHTED,
                                   6, h->dst, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   0, &h->graph);
#pragma GCC diagnostic pop
    if (dcoll_neighborhood_create(NULL, 6, h->src, 6, h->dst, &h->nb) ||
        dcoll_neighbor_all_to_allw_plan(h->nb, h->u, h->sl, h->u, h->rl,
                                        DCOLL_FLOAT64, NULL, &h->plan))
        return 1;
    return 0;
}

static void teardown(struct halo *h)
{
    dcoll_plan_free(&h->plan);
    dcoll_neighborhood_free(&h->nb);
    for (int i = 0; i < 6; i++) {
        MPI_Type_free(&h->st[i]);
        MPI_Type_free(&h->rt[i]);
    }
    MPI_Comm_free(&h->graph);
    MPI_Comm_free(&h->cart);
    free(h->u);
}

static int run(struct halo *h, int way)
{
    if (way == 0)
        return dcoll_plan_start(h->plan, NULL) != DCOLL_SUCCESS;
    if (way == 2)
        return MPI_Neighbor_alltoallw(h->u, h->one, h->sd, h->st, h->u,
                                      h->one, h->rd, h->rt, h->graph) !=
               MPI_SUCCESS;
    MPI_Request rq[12];
    for (int i = 0; i < 6; i++) {
        MPI_Irecv(h->u + h->rl[i].offset, 1, h->rt[i], h->src[i], i, h->cart,
                  &rq[2 * i]);
        MPI_Isend(h->u + h->sl[i].offset, 1, h->st[i], h->dst[i], i, h->cart,
                  &rq[2 * i + 1]);
    }
    return MPI_Waitall(12, rq, MPI_STATUSES_IGNORE) != MPI_SUCCESS;
}

/* Fill the block with values that name rank and cell; after one
 * exchange, every ghost face must hold its neighbour's face. Returns the
 * wrong cells. */
static long check(struct halo *h, int way)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    size_t all = (size_t)h->X * h->Y * h->Z;
    for (size_t i = 0; i < all; i++)
        h->u[i] = me * 1e9 + (double)i;
    if (run(h, way))
        return -1;
    long bad = 0;
    for (int i = 0; i < 6; i++) {
        /* Ghost face i holds the source's face sl[i]: the source sends
         * it down the same slot (upper source, lower destination). */
        const dcoll_layout_t *r = &h->rl[i], *s = &h->sl[i];
        int64_t reps = r->count2 > 1 ? r->count2 : 1;
        for (int64_t q = 0; q < reps; q++)
            for (int64_t c = 0; c < r->count; c++)
                for (int64_t b = 0; b < r->blocklen; b++) {
                    int64_t at = q * r->stride2 + c * r->stride + b;
                    double want = h->src[i] * 1e9 +
                                  (double)(s->offset + at);
                    bad += h->u[r->offset + at] != want;
                }
    }
    return bad;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int provided, me, size, rounds = 5, opt;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "R:")) != -1)
        rounds = opt == 'R' ? atoi(optarg) : rounds;
    if (rounds < 1 || rounds > MAXR)
        rounds = 5;
    if (dcoll_init(NULL)) {
        fprintf(stderr, "dcoll-halo: %s\n", dcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int defaults[] = {16, 64, 256}, nsizes = argc - optind;
    if (me == 0)
        printf("# dcoll-halo: 6 faces of an n^3 block of doubles per rank, "
               "%d ranks, %d rounds (median), each way in its own block\n"
               "#   n  face(B)   calls  dcoll(us)   hand(us)    nbr(us)  "
               "ratio  #wrong\n", size, rounds);
    for (int k = 0; k < (nsizes ? nsizes : 3); k++) {
        int n = nsizes ? atoi(argv[optind + k]) : defaults[k];
        struct halo h;
        memset(&h, 0, sizeof(h));
        if (n < 1 || setup(&h, n)) {
            fprintf(stderr, "dcoll-halo: n = %d: %s\n", n,
                    dcoll_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        long wrong = 0;
        for (int w = 0; w < WAYS; w++)
            wrong += check(&h, w);
        /* About 0.2 s of exchanges per way and round, by a trial of 10
         * calls (every rank makes as many: they are collective). */
        double t0 = MPI_Wtime();
        for (int c = 0; c < 10; c++)
            run(&h, 2);
        double per = (MPI_Wtime() - t0) / 10;
        MPI_Allreduce(MPI_IN_PLACE, &per, 1, MPI_DOUBLE, MPI_MAX,
                      MPI_COMM_WORLD);
        int calls = per > 0 ? (int)(0.2 / per) : 100000;
        calls = calls < 3 ? 3 : calls > 100000 ? 100000 : calls;
        double t[WAYS][MAXR];
        for (int r = 0; r < rounds; r++)
            for (int j = 0; j < WAYS; j++) {
                int w = (j + r) % WAYS;
                MPI_Barrier(MPI_COMM_WORLD);
                double a = MPI_Wtime();
                for (int c = 0; c < calls; c++)
                    run(&h, w);
                double b = MPI_Wtime() - a;
                MPI_Allreduce(MPI_IN_PLACE, &b, 1, MPI_DOUBLE, MPI_MAX,
                              MPI_COMM_WORLD);
                t[w][r] = b / calls * 1e6;
            }
        double med[WAYS];
        for (int w = 0; w < WAYS; w++) {
            qsort(t[w], (size_t)rounds, sizeof(double), cmp);
            med[w] = t[w][rounds / 2];
        }
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM,
                      MPI_COMM_WORLD);
        double best = med[1] < med[2] ? med[1] : med[2];
        if (me == 0 && printf("%5d %8lld %7d %10.2f %10.2f %10.2f %6.3f %7ld\n", n,
                   (long long)n * n * 8, calls, med[0], med[1], med[2],
                   best / med[0], wrong) > 0)
            fflush(stdout);
        teardown(&h);
    }
    (void)way_names;
    dcoll_finalize();
    MPI_Finalize();
    return 0;
}
