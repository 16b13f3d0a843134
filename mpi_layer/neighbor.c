/* The neighbourhood collectives over MPI: MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoallv and MPI_Neighbor_alltoallw on the
 * neighbourhood's graph communicator, blocking, nonblocking or
 * persistent (rows.c's rows), and the w form's vector types, cached per
 * neighbourhood. The graph holds the lists' real entries only: a
 * DCOLL_PROC_NULL entry's block is left out of the arrays MPI reads, so
 * it is neither sent nor written. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "calls.h"

MPI_Comm dcoll_mpi_nbh_comm(const struct dcoll_coll *c)
{
    return ((const struct dcoll_mpi_nbh *)c->nbh->comm)->comm;
}

/* One side's real entries as ints: counts (or each count) and
 * displacements (packed in list order where displs is NULL). */
static void side(const int64_t *counts, const int64_t *displs,
                 int64_t count, const int *list, int deg, int *cnt, int *dsp)
{
    int64_t at = 0;
    int k = 0;
    for (int i = 0; i < deg; i++) {
        int64_t n = counts ? counts[i] : count;
        int64_t d = displs ? displs[i] : at;
        at += n;
        if (list[i] == DCOLL_PROC_NULL)
            continue;
        cnt[k] = (int)n;
        dsp[k++] = (int)d;
    }
}

size_t dcoll_mpi_nbh_ints_len(const struct dcoll_coll *c)
{
    return 2 * ((size_t)c->nbh->nout + (size_t)c->nbh->nin);
}

void dcoll_mpi_nbh_ints(const struct dcoll_coll *c, int *v)
{
    const struct dcoll_nbh *n = c->nbh;
    int *rc = v + 2 * n->nout;
    if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV)
        side(c->counts, c->displs, 0, n->out, n->outdeg, v, v + n->nout);
    side(c->counts2, c->displs2, c->count, n->in, n->indeg, rc,
         rc + n->nin);
}

/* Whether an all_gather needs MPI's v form: a source is DCOLL_PROC_NULL,
 * so the blocks MPI writes are not all consecutive. */
static bool gaps(const struct dcoll_nbh *n)
{
    return n->nin != n->indeg;
}

void dcoll_mpi_nbw_free(struct dcoll_mpi_nbw *w)
{
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    for (int i = 0; i < w->n; i++)
        if (w->cnt[i])
            MPI_Type_free(&w->type[i]);
    free(w);
}

void dcoll_mpi_nbh_free(void *comm)
{
    struct dcoll_mpi_nbh *h = comm;
    if (!h)
        return;
    dcoll_mpi_nbw_free(h->cache);
    MPI_Comm_free(&h->comm);
    free(h);
}

/* One side's real entries into w from k on: layout l[i] for list[i]. */
static int w_side(struct dcoll_mpi_nbw *w, int k, const dcoll_layout_t *l,
                  const int *list, int deg, MPI_Datatype base, size_t esz)
{
    for (int i = 0; i < deg; i++) {
        if (list[i] == DCOLL_PROC_NULL)
            continue;
        w->cnt[k] = l[i].count && l[i].blocklen;
        w->disp[k] = (MPI_Aint)((size_t)l[i].offset * esz);
        w->type[k] = base;
        if (w->cnt[k] &&
            dcoll_mpi_layout_type(&l[i], base, &w->type[k]) != MPI_SUCCESS) {
            w->cnt[k] = 0;
            return -1;
        }
        w->n = ++k;
    }
    return k;
}

/* Whether w was made from c's layouts and type. */
static bool same(const struct dcoll_mpi_nbw *w, const struct dcoll_coll *c)
{
    const struct dcoll_nbh *n = c->nbh;
    size_t so = sizeof(dcoll_layout_t) * (size_t)n->outdeg;
    return w->dtype == c->dtype &&
           (!so || !memcmp(w->key, c->layout, so)) &&
           (!n->indeg || !memcmp(w->key + n->outdeg, c->layout2,
                                 sizeof(dcoll_layout_t) * (size_t)n->indeg));
}

struct dcoll_mpi_nbw *dcoll_mpi_nbw_make(const struct dcoll_coll *c)
{
    const struct dcoll_nbh *n = c->nbh;
    struct dcoll_mpi_nbh *h = n->comm;
    if (h->cache && same(h->cache, c)) {
        atomic_fetch_add(&h->cache->refs, 1);
        return h->cache;
    }
    size_t m = (size_t)n->nout + (size_t)n->nin + 1;
    size_t keys = (size_t)n->outdeg + (size_t)n->indeg + 1;
    struct dcoll_mpi_nbw *w = malloc(sizeof(*w) +
                                     keys * sizeof(dcoll_layout_t) +
                                     m * (sizeof(int) + sizeof(MPI_Aint) +
                                          sizeof(MPI_Datatype)));
    if (!w)
        return NULL;
    w->key = (dcoll_layout_t *)(w + 1);
    w->disp = (MPI_Aint *)(w->key + keys);
    w->type = (MPI_Datatype *)(w->disp + m);
    w->cnt = (int *)(w->type + m);
    w->n = 0;
    atomic_init(&w->refs, 1);
    w->dtype = c->dtype;
    if (n->outdeg)
        memcpy(w->key, c->layout, sizeof(dcoll_layout_t) * (size_t)n->outdeg);
    if (n->indeg)
        memcpy(w->key + n->outdeg, c->layout2,
               sizeof(dcoll_layout_t) * (size_t)n->indeg);
    MPI_Datatype base = dcoll_mpi_type(c);
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int k = w_side(w, 0, c->layout, n->out, n->outdeg, base, esz);
    if (k < 0 || w_side(w, k, c->layout2, n->in, n->indeg, base, esz) < 0) {
        dcoll_mpi_nbw_free(w);
        return NULL;
    }
    /* The cache's reference; the one it held goes (a work still using
     * those types keeps its own). */
    atomic_fetch_add(&w->refs, 1);
    dcoll_mpi_nbw_free(h->cache);
    h->cache = w;
    return w;
}

char dcoll_mpi_no_buffer;

int dcoll_mpi_post_nbh(struct dcoll_mpi_post *p, const struct dcoll_group *g,
                       const struct dcoll_coll *c, MPI_Comm comm,
                       MPI_Status *status, const char **call)
{
    (void)g, (void)status;
    const struct dcoll_nbh *n = c->nbh;
    MPI_Request *rq = dcoll_mpi_slot(p);
    const void *sb = dcoll_mpi_nbh_buf(c->sendbuf);
    void *rb = dcoll_mpi_nbh_buf(c->recvbuf);
    MPI_Datatype t = dcoll_mpi_type(c);
    bool all_gather = c->kind == DCOLL_COLL_NEIGHBOR_ALL_GATHER;
    int rc;
    if (c->kind == DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW) {
        /* The types: made once while the calls pass the same layouts
         * (the neighbourhood's cache), as a plan's are. */
        struct dcoll_mpi_nbw *w = dcoll_mpi_nbw_make(c);
        if (!w) {
            *call = "MPI_Type_vector (the layouts), or no memory for them";
            return MPI_ERR_NO_MEM;
        }
        int *rc_ = w->cnt + n->nout;
        MPI_Aint *rd = w->disp + n->nout;
        MPI_Datatype *rt = w->type + n->nout;
        *call = rq ? "MPI_Ineighbor_alltoallw" : "MPI_Neighbor_alltoallw";
        rc = rq ? DCOLL_NB(p->persist, MPI_Ineighbor_alltoallw,
                           Neighbor_alltoallw, rq, sb, w->cnt,
                           w->disp, w->type, rb, rc_, rd, rt, comm)
                : MPI_Neighbor_alltoallw(sb, w->cnt, w->disp,
                                         w->type, rb, rc_, rd, rt,
                                         comm);
        /* MPICH 4.0.2 fails requests whose types went (rows.c's
         * span_free): a work or plan keeps them. */
        if (p->w && rc == MPI_SUCCESS)
            p->w->nbw = w;
        else
            dcoll_mpi_nbw_free(w);
        return rc;
    }
    if (all_gather && !gaps(n)) {
        *call = rq ? "MPI_Ineighbor_allgather" : "MPI_Neighbor_allgather";
        return rq ? DCOLL_NB(p->persist, MPI_Ineighbor_allgather,
                             Neighbor_allgather, rq, sb,
                             (int)c->count, t, rb, (int)c->count, t,
                             comm)
                  : MPI_Neighbor_allgather(sb, (int)c->count, t,
                                           rb, (int)c->count, t,
                                           comm);
    }
    /* MPI reads the counts until the call completes: a blocking call is
     * done with them, a work or a plan keeps them. */
    size_t len = dcoll_mpi_nbh_ints_len(c);
    int small[64], *v = !rq && len <= 64 ? small
                                         : malloc(sizeof(int) * (len ? len
                                                                     : 1));
    if (!v) {
        *call = "dcoll MPI layer (no memory for the counts)";
        return MPI_ERR_NO_MEM;
    }
    dcoll_mpi_nbh_ints(c, v);
    int *sc = v, *sd = v + n->nout, *rcn = v + 2 * n->nout,
        *rd = rcn + n->nin;
    if (all_gather) {
        *call = rq ? "MPI_Ineighbor_allgatherv" : "MPI_Neighbor_allgatherv";
        rc = rq ? DCOLL_NB(p->persist, MPI_Ineighbor_allgatherv,
                           Neighbor_allgatherv, rq, sb,
                           (int)c->count, t, rb, rcn, rd, t, comm)
                : MPI_Neighbor_allgatherv(sb, (int)c->count, t,
                                          rb, rcn, rd, t, comm);
    } else {
        *call = rq ? "MPI_Ineighbor_alltoallv" : "MPI_Neighbor_alltoallv";
        rc = rq ? DCOLL_NB(p->persist, MPI_Ineighbor_alltoallv,
                           Neighbor_alltoallv, rq, sb, sc, sd, t,
                           rb, rcn, rd, t, comm)
                : MPI_Neighbor_alltoallv(sb, sc, sd, t, rb,
                                         rcn, rd, t, comm);
    }
    if (v != small) {
        if (p->w && rc == MPI_SUCCESS)
            p->w->vec = v;
        else
            free(v);
    }
    return rc;
}
