/* Neighbourhood calls and strided faces on GPU buffers (issue 51's GPU
 * half): every call is made twice, once on GPU buffers and once on host
 * copies of them (the host path, which the mpi suite holds to MPI's own
 * calls), and the arrays must agree byte for byte, ghosts at the walls
 * untouched; a few values are checked by hand too.
 *   mpirun -n N test_gpu_halo
 * DCOLL_TEST_NCCL=yes: the neighbourhood calls must reach NCCL (its
 * grouped sends and receives); no: they must not (staged). Built on the
 * CUDA double (CUDA_DOUBLE) and on the fake plugin (FAKE_DEVICE). */
#include "gpu_shim.h"
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"

int t_rank, t_failures;
static int me, n;

#define OK(call) CHECK_OK(call)

/* The block: X x Y x Z interior cells and one ghost layer. */
enum { X = 5, Y = 4, Z = 3, XG = X + 2, YG = Y + 2, ZG = Z + 2 };
#define CELLS ((size_t)XG * YG * ZG)
#define AT(i, j, k) ((int64_t)(i) + XG * ((int64_t)(j) + YG * (int64_t)(k)))

static void *dalloc(size_t bytes)
{
    void *d = NULL;
    cudaMalloc(&d, bytes);
    return d;
}

static void put(void *d, const void *h, size_t bytes)
{
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
#ifndef FAKE_DEVICE
    cudaDeviceSynchronize();
#endif
}

static void get(void *h, const void *d, size_t bytes)
{
    cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost);
}

/* Interior cells say who and where; ghosts start at -1, a wall's stay. */
static void fill(double *a, int step)
{
    for (int k = 0; k < ZG; k++)
        for (int j = 0; j < YG; j++)
            for (int i = 0; i < XG; i++) {
                bool ghost = !i || i == XG - 1 || !j || j == YG - 1 || !k ||
                             k == ZG - 1;
                a[AT(i, j, k)] = ghost ? -1.0
                                       : me * 1e6 + step * 1e5 + i +
                                             10 * j + 100 * k;
            }
}

/* A face of the block as a layout: axis d (0 x, 1 y, 2 z) at plane p. */
static dcoll_layout_t face(int d, int p)
{
    if (d == 0)   /* x: a cell a row, rows XG apart, planes XG*YG apart */
        return (dcoll_layout_t){.offset = AT(p, 1, 1), .count = Y,
                                .blocklen = 1, .stride = XG, .count2 = Z,
                                .stride2 = (int64_t)XG * YG};
    if (d == 1)   /* y: a row of X a plane */
        return (dcoll_layout_t){.offset = AT(1, p, 1), .count = Z,
                                .blocklen = X, .stride = (int64_t)XG * YG};
    return (dcoll_layout_t){.offset = AT(1, 1, p), .count = Y,
                            .blocklen = X, .stride = XG};
}

/* The grid: x and y periodic within this rank (self edges), z across
 * the ranks with walls at its ends. Per axis, sources lower then upper,
 * destinations upper then lower (docs/halo.md). */
struct grid {
    int src[6], dst[6];
    dcoll_layout_t sl[6], rl[6];
};

static void grid(struct grid *g)
{
    int lo = me > 0 ? me - 1 : DCOLL_PROC_NULL;
    int hi = me < n - 1 ? me + 1 : DCOLL_PROC_NULL;
    int ext[3] = {X, Y, Z};
    for (int d = 0; d < 3; d++) {
        g->src[2 * d] = d < 2 ? me : lo;
        g->src[2 * d + 1] = d < 2 ? me : hi;
        g->dst[2 * d] = d < 2 ? me : hi;
        g->dst[2 * d + 1] = d < 2 ? me : lo;
        g->rl[2 * d] = face(d, 0);              /* from lower: its ghost */
        g->rl[2 * d + 1] = face(d, ext[d] + 1);
        g->sl[2 * d] = face(d, ext[d]);         /* to upper: top cells */
        g->sl[2 * d + 1] = face(d, 1);
    }
}

/* NCCL's calls so far, or -1 where there is none to ask. */
static long nccl_now(void)
{
#if defined(FAKE_DEVICE) || defined(CUDA_DOUBLE)
    return nccl_ran();
#else
    return -1;
#endif
}

/* Whether the call since before reached NCCL as DCOLL_TEST_NCCL says. */
static void route(const char *what, long before)
{
    const char *want = getenv("DCOLL_TEST_NCCL");
    long now = nccl_now();
    if (!want || now < 0)
        return;
    bool yes = !strcmp(want, "yes");
    CHECK(yes ? now > before : now == before,
          "%s: DCOLL_TEST_NCCL=%s, but NCCL ran %ld calls for it", what,
          want, now - before);
}

static void same(const char *what, const void *gpu_side, const void *host,
                 size_t bytes)
{
    const unsigned char *a = gpu_side, *b = host;
    size_t i = 0;
    while (i < bytes && a[i] == b[i])
        i++;
    CHECK(i == bytes, "%s: the GPU result differs from the host's at byte "
          "%zu of %zu", what, i, bytes);
}

/* The six faces in one w call, in place on one array: blocking, async
 * and a plan started twice; every array against the host's. */
static void halo(dcoll_neighborhood_t *nb, const struct grid *g)
{
    double *h = malloc(CELLS * sizeof(double));
    double *back = malloc(CELLS * sizeof(double));
    double *d = dalloc(CELLS * sizeof(double));
    dcoll_plan_t *plan = NULL;
    OK(dcoll_neighbor_all_to_allw_plan(nb, d, g->sl, d, g->rl, DCOLL_FLOAT64,
                                       NULL, &plan));
    for (int form = 0; form < 4; form++) {
        fill(h, form);
        put(d, h, CELLS * sizeof(double));
        long before = nccl_now();
        dcoll_work_t *w = NULL;
        if (form == 0) {
            OK(dcoll_neighbor_all_to_allw(nb, d, g->sl, d, g->rl,
                                          DCOLL_FLOAT64, NULL, NULL));
        } else if (form == 1) {
            OK(dcoll_neighbor_all_to_allw(nb, d, g->sl, d, g->rl,
                                          DCOLL_FLOAT64, NULL, &w));
            OK(dcoll_work_wait(w));
            OK(dcoll_work_free(&w));
        } else {
            OK(dcoll_plan_start(plan, form == 3 ? &w : NULL));
            if (w) {
                OK(dcoll_work_wait(w));
                OK(dcoll_work_free(&w));
            }
        }
        route("neighbor_all_to_allw", before);
        OK(dcoll_neighbor_all_to_allw(nb, h, g->sl, h, g->rl, DCOLL_FLOAT64,
                                      NULL, NULL));
        get(back, d, CELLS * sizeof(double));
        static const char *forms[] = {"w, blocking", "w, async",
                                      "w, plan", "w, plan async"};
        same(forms[form], back, h, CELLS * sizeof(double));
        /* By hand: the z ghost below holds the lower rank's top cells; a
         * wall's stays -1. */
        double want = me > 0 ? (me - 1) * 1e6 + form * 1e5 + 2 + 10 * 3 +
                                   100 * Z
                             : -1.0;
        CHECK(back[AT(2, 3, 0)] == want, "%s: z ghost (2,3,0) = %g, want %g",
              forms[form], back[AT(2, 3, 0)], want);
        /* And the x ghost on the right wraps to this rank's left cells. */
        CHECK(back[AT(X + 1, 2, 2)] == me * 1e6 + form * 1e5 + 1 + 20 + 200,
              "%s: x ghost (%d,2,2) = %g", forms[form], X + 1,
              back[AT(X + 1, 2, 2)]);
    }
    OK(dcoll_plan_free(&plan));
    cudaFree(d);
    free(h);
    free(back);
}

/* neighbor_all_gather of floats and of bools, and all_to_allv of int32
 * with uneven counts and gaps, against the host's. */
static void gather_v(dcoll_neighborhood_t *nb, const struct grid *g)
{
    enum { C = 300 };
    float hs[C], hr[6 * C], back[6 * C];
    for (int i = 0; i < C; i++)
        hs[i] = (float)(me * 1000 + i);
    for (int i = 0; i < 6 * C; i++)
        hr[i] = -1.0f;
    float *ds = dalloc(sizeof(hs)), *dr = dalloc(sizeof(hr));
    put(ds, hs, sizeof(hs));
    put(dr, hr, sizeof(hr));
    long before = nccl_now();
    OK(dcoll_neighbor_all_gather(nb, ds, C, dr, DCOLL_FLOAT32, NULL, NULL));
    route("neighbor_all_gather", before);
    OK(dcoll_neighbor_all_gather(nb, hs, C, hr, DCOLL_FLOAT32, NULL, NULL));
    get(back, dr, sizeof(back));
    same("all_gather", back, hr, sizeof(hr));
    CHECK(back[4 * C + 7] == (me > 0 ? (float)((me - 1) * 1000 + 7) : -1.0f),
          "all_gather: block 4 (z lower) [7] = %g", back[4 * C + 7]);

    /* Bools: one byte each, which NCCL's types do not have. */
    bool bs[C], br[6 * C], bb[6 * C];
    for (int i = 0; i < C; i++)
        bs[i] = (i + me) % 3 == 0;
    memset(br, 0, sizeof(br));
    bool *dbs = dalloc(sizeof(bs)), *dbr = dalloc(sizeof(br));
    put(dbs, bs, sizeof(bs));
    put(dbr, br, sizeof(br));
    OK(dcoll_neighbor_all_gather(nb, dbs, C, dbr, DCOLL_BOOL, NULL, NULL));
    OK(dcoll_neighbor_all_gather(nb, bs, C, br, DCOLL_BOOL, NULL, NULL));
    get(bb, dbr, sizeof(bb));
    same("all_gather of bools", bb, br, sizeof(br));

    /* v: the edge's count from its ends and its place in the lists. */
    int64_t sc[6], sd[6], rc[6], rd[6], stot = 0, rtot = 0;
    for (int k = 0; k < 6; k++) {
        int to = g->dst[k], from = g->src[k];
        sc[k] = to == DCOLL_PROC_NULL ? 0 : 1 + (me + 2 * to + k) % 5;
        rc[k] = from == DCOLL_PROC_NULL ? 0 : 1 + (from + 2 * me + k) % 5;
        sd[k] = stot;
        rd[k] = rtot + 2;   /* gaps the call must leave alone */
        stot += sc[k] + 1;
        rtot += rc[k] + 2;
    }
    rtot += 2;
    int32_t *vs = malloc(sizeof(int32_t) * (size_t)stot);
    int32_t *vr = malloc(sizeof(int32_t) * (size_t)rtot);
    int32_t *vb = malloc(sizeof(int32_t) * (size_t)rtot);
    for (int64_t i = 0; i < stot; i++)
        vs[i] = me * 100 + (int32_t)i;
    for (int64_t i = 0; i < rtot; i++)
        vr[i] = -7;
    int32_t *dvs = dalloc(sizeof(int32_t) * (size_t)stot);
    int32_t *dvr = dalloc(sizeof(int32_t) * (size_t)rtot);
    put(dvs, vs, sizeof(int32_t) * (size_t)stot);
    put(dvr, vr, sizeof(int32_t) * (size_t)rtot);
    dcoll_work_t *w = NULL;
    before = nccl_now();
    OK(dcoll_neighbor_all_to_allv(nb, dvs, sc, sd, dvr, rc, rd, DCOLL_INT32,
                                  NULL, &w));
    OK(dcoll_work_wait(w));
    OK(dcoll_work_free(&w));
    route("neighbor_all_to_allv", before);
    OK(dcoll_neighbor_all_to_allv(nb, vs, sc, sd, vr, rc, rd, DCOLL_INT32,
                                  NULL, NULL));
    get(vb, dvr, sizeof(int32_t) * (size_t)rtot);
    same("all_to_allv", vb, vr, sizeof(int32_t) * (size_t)rtot);
    CHECK(vb[0] == -7 && vb[1] == -7, "all_to_allv: a gap was written");
    cudaFree(ds), cudaFree(dr), cudaFree(dbs), cudaFree(dbr);
    cudaFree(dvs), cudaFree(dvr);
    free(vs), free(vr), free(vb);
}

/* A neighbourhood where only rank 0 has an edge (to itself): the other
 * ranks have no neighbours and pass no buffers, so their call takes the
 * host's way while rank 0's takes the GPU's; neither may wait for the
 * other. */
static void lonely(void)
{
    int self = 0;
    dcoll_neighborhood_t *nb = NULL;
    OK(dcoll_neighborhood_create(NULL, me == 0, &self, me == 0, &self, &nb));
    if (!nb)
        return;
    float h[4] = {1, 2, 3, 4}, back[4];
    float *ds = me == 0 ? dalloc(sizeof(h)) : NULL;
    float *dr = me == 0 ? dalloc(sizeof(h)) : NULL;
    if (me == 0)
        put(ds, h, sizeof(h));
    for (int round = 0; round < 2; round++)
        OK(dcoll_neighbor_all_gather(nb, ds, 4, dr, DCOLL_FLOAT32, NULL,
                                     NULL));
    if (me == 0) {
        get(back, dr, sizeof(back));
        same("a neighbourhood of one rank", back, h, sizeof(h));
        cudaFree(ds), cudaFree(dr);
    }
    OK(dcoll_neighborhood_free(&nb));
}

/* A strided send and receive on GPU buffers (staged, or MPI's own where
 * it is CUDA-aware): this rank's top z face to the next rank's bottom
 * ghost, around a ring, as async calls and as plans. */
static void send_recv(void)
{
    double *h = malloc(CELLS * sizeof(double));
    double *back = malloc(CELLS * sizeof(double));
    double *d = dalloc(CELLS * sizeof(double));
    dcoll_layout_t top = face(2, Z), ghost = face(2, 0);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    dcoll_plan_t *sp = NULL, *rp = NULL;
    OK(dcoll_send_layout_plan(NULL, d, &top, DCOLL_FLOAT64, next, 5, NULL,
                              &sp));
    OK(dcoll_recv_layout_plan(NULL, d, &ghost, DCOLL_FLOAT64, prev, 5, NULL,
                              &rp));
    for (int form = 0; form < 2; form++) {
        fill(h, 10 + form);
        put(d, h, CELLS * sizeof(double));
        dcoll_work_t *ws = NULL, *wr = NULL;
        int src = -1;
        if (form == 0) {
            OK(dcoll_recv_layout(NULL, d, &ghost, DCOLL_FLOAT64, prev, 5,
                                 NULL, &wr, &src));
            OK(dcoll_send_layout(NULL, d, &top, DCOLL_FLOAT64, next, 5,
                                 NULL, &ws));
        } else {
            OK(dcoll_plan_start(rp, &wr));
            OK(dcoll_plan_start(sp, &ws));
        }
        OK(dcoll_work_wait(ws));
        OK(dcoll_work_wait(wr));
        OK(dcoll_work_free(&ws));
        OK(dcoll_work_free(&wr));
        /* The host's, by the same calls. */
        OK(dcoll_recv_layout(NULL, h, &ghost, DCOLL_FLOAT64, prev, 6, NULL,
                             &wr, NULL));
        OK(dcoll_send_layout(NULL, h, &top, DCOLL_FLOAT64, next, 6, NULL,
                             &ws));
        OK(dcoll_work_wait(ws));
        OK(dcoll_work_wait(wr));
        OK(dcoll_work_free(&ws));
        OK(dcoll_work_free(&wr));
        get(back, d, CELLS * sizeof(double));
        same(form ? "send/recv_layout plans" : "send/recv_layout", back, h,
             CELLS * sizeof(double));
        CHECK(back[AT(1, 1, 0)] == prev * 1e6 + (10 + form) * 1e5 + 1 + 10 +
                                       100 * Z,
              "send/recv_layout: ghost (1,1,0) = %g", back[AT(1, 1, 0)]);
        CHECK(back[AT(0, 1, 0)] == -1.0, "send/recv_layout: a cell outside "
              "the layout was written");
    }
    OK(dcoll_plan_free(&sp));
    OK(dcoll_plan_free(&rp));
    cudaFree(d);
    free(h);
    free(back);
}

int main(int argc, char **argv)
{
    int have = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    t_rank = me;
    if (cudaGetDeviceCount(&have) != cudaSuccess || have < 1) {
        if (me == 0)
            printf("no GPU: skipping\n");
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(0);
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        MPI_Finalize();
        return 1;
    }
    struct grid g;
    grid(&g);
    dcoll_neighborhood_t *nb = NULL;
    OK(dcoll_neighborhood_create(NULL, 6, g.src, 6, g.dst, &nb));
    if (nb) {
        halo(nb, &g);
        gather_v(nb, &g);
        OK(dcoll_neighborhood_free(&nb));
    }
    send_recv();
    lonely();
    OK(dcoll_finalize());
    MPI_Allreduce(MPI_IN_PLACE, &t_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("gpu halo: %d rank(s), %d failure(s)\n", n, t_failures);
    MPI_Finalize();
    return t_failures != 0;
}
