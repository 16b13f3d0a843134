/* The vector collectives over MPI: MPI_Allgatherv, MPI_Gatherv,
 * MPI_Scatterv, MPI_Alltoallv and MPI_Reduce_scatter, blocking,
 * nonblocking or persistent, one post each for the per-kind table
 * (rows.c). MPI takes int counts and displacements: the core has checked
 * that each fits, and they are copied here into arrays that live as long
 * as the operation (MPI reads them until it completes). */
#include <stdlib.h>
#include <string.h>
#include "calls.h"

void dcoll_mpi_ints(const int64_t *counts, const int64_t *displs, int n,
                    int *cnt, int *dsp)
{
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        cnt[i] = (int)counts[i];
        dsp[i] = (int)(displs ? displs[i] : at);
        at += counts[i];
    }
}

/* What every vector post starts from: room for two layouts (all_to_allv's
 * send and receive sides), on the stack for a blocking call on a small
 * group, else kept with the work; the receive side's counts (scatterv:
 * the root's send side) in cnt and dsp. */
struct vec {
    int small[4 * 64];
    int *v, *cnt, *dsp, *cnt2, *dsp2;
    MPI_Request *rq;
    MPI_Datatype t;
    const void *s;
    void *r;
    int own;
};

static int vec_begin(struct vec *x, struct dcoll_mpi_post *p,
                     const struct dcoll_group *g, const struct dcoll_coll *c,
                     const char **call)
{
    int n = g->size;
    x->rq = dcoll_mpi_slot(p);
    x->v = !x->rq && n <= 64 ? x->small
                             : malloc(sizeof(int) * 4 * (size_t)n);
    if (!x->v) {
        *call = "dcoll MPI layer (no memory for the counts)";
        return MPI_ERR_NO_MEM;
    }
    x->cnt = x->v;
    x->dsp = x->v + n;
    x->cnt2 = x->v + 2 * n;
    x->dsp2 = x->v + 3 * n;
    x->t = dcoll_mpi_type(c);
    x->s = c->in_place ? MPI_IN_PLACE : c->sendbuf;
    x->r = c->recvbuf;
    x->own = (int)c->count;
    if (c->counts)
        dcoll_mpi_ints(c->counts, c->displs, n, x->cnt, x->dsp);
    return MPI_SUCCESS;
}

/* The counts MPI reads until the call completes: a blocking call is done
 * with them; a work or a plan keeps them. */
static int vec_end(struct vec *x, struct dcoll_mpi_post *p, int rc)
{
    if (x->v == x->small)
        return rc;
    if (p->w && rc == MPI_SUCCESS)
        p->w->vec = x->v;
    else
        free(x->v);
    return rc;
}

DCOLL_MPI_VEC_POST(allgatherv)
{
    struct vec x;
    (void)status;
    int rc = vec_begin(&x, p, g, c, call);
    if (rc != MPI_SUCCESS)
        return rc;
#ifdef MPICH
    /* MPICH 4.0 (seen with 4.0.2, 1 and 2 ranks) puts this rank's own
     * block at the front of recvbuf, not at its displacement: put it
     * there here and let MPI work in place, which it gets right. */
    if (!c->in_place && c->displs && x.own > 0) {
        size_t esz = dcoll_dtype_sizes[c->dtype];
        memmove((char *)x.r + (size_t)x.dsp[g->rank] * esz, x.s,
                (size_t)x.own * esz);
        x.s = MPI_IN_PLACE;
    }
#endif
    *call = x.rq ? "MPI_Iallgatherv" : "MPI_Allgatherv";
    rc = x.rq ? DCOLL_NB(p->persist, MPI_Iallgatherv, Allgatherv, x.rq, x.s,
                         x.own, x.t, x.r, x.cnt, x.dsp, x.t, comm)
              : MPI_Allgatherv(x.s, x.own, x.t, x.r, x.cnt, x.dsp, x.t, comm);
    return vec_end(&x, p, rc);
}

DCOLL_MPI_VEC_POST(gatherv)
{
    struct vec x;
    (void)status;
    int rc = vec_begin(&x, p, g, c, call);
    if (rc != MPI_SUCCESS)
        return rc;
    *call = x.rq ? "MPI_Igatherv" : "MPI_Gatherv";
    int *cnt = g->rank == c->root ? x.cnt : NULL;
    int *dsp = g->rank == c->root ? x.dsp : NULL;
    rc = x.rq ? DCOLL_NB(p->persist, MPI_Igatherv, Gatherv, x.rq, x.s, x.own,
                         x.t, x.r, cnt, dsp, x.t, c->root, comm)
              : MPI_Gatherv(x.s, x.own, x.t, x.r, cnt, dsp, x.t, c->root,
                            comm);
    return vec_end(&x, p, rc);
}

DCOLL_MPI_VEC_POST(scatterv)
{
    struct vec x;
    (void)status;
    int rc = vec_begin(&x, p, g, c, call);
    if (rc != MPI_SUCCESS)
        return rc;
    /* MPI's in-place scatterv marks the receive side. */
    const void *s = c->sendbuf;
    void *r = c->in_place ? MPI_IN_PLACE : x.r;
    int *cnt = g->rank == c->root ? x.cnt : NULL;
    int *dsp = g->rank == c->root ? x.dsp : NULL;
    *call = x.rq ? "MPI_Iscatterv" : "MPI_Scatterv";
    rc = x.rq ? DCOLL_NB(p->persist, MPI_Iscatterv, Scatterv, x.rq, s, cnt,
                         dsp, x.t, r, x.own, x.t, c->root, comm)
              : MPI_Scatterv(s, cnt, dsp, x.t, r, x.own, x.t, c->root, comm);
    return vec_end(&x, p, rc);
}

DCOLL_MPI_VEC_POST(alltoallv)
{
    struct vec x;
    (void)status;
    int rc = vec_begin(&x, p, g, c, call);
    if (rc != MPI_SUCCESS)
        return rc;
    dcoll_mpi_ints(c->counts2, c->displs2, g->size, x.cnt2, x.dsp2);
    int *cnt = x.cnt, *dsp = x.dsp;
    if (c->in_place)
        cnt = dsp = x.cnt2;   /* ignored by MPI, but must be valid */
    *call = x.rq ? "MPI_Ialltoallv" : "MPI_Alltoallv";
    rc = x.rq ? DCOLL_NB(p->persist, MPI_Ialltoallv, Alltoallv, x.rq, x.s,
                         cnt, dsp, x.t, x.r, x.cnt2, x.dsp2, x.t, comm)
              : MPI_Alltoallv(x.s, cnt, dsp, x.t, x.r, x.cnt2, x.dsp2, x.t,
                              comm);
    return vec_end(&x, p, rc);
}

DCOLL_MPI_VEC_POST(reduce_scatterv)
{
    struct vec x;
    (void)status;
    int rc = vec_begin(&x, p, g, c, call);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    /* In place, MPI reads the whole buffer and leaves this rank's block
     * at its front; the after-step moves it. */
    void *r = c->in_place ? (void *)c->sendbuf : x.r;
    *call = x.rq ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter";
    rc = x.rq ? DCOLL_NB(p->persist, MPI_Ireduce_scatter, Reduce_scatter,
                         x.rq, x.s, r, x.cnt, x.t, op, comm)
              : MPI_Reduce_scatter(x.s, r, x.cnt, x.t, op, comm);
    return vec_end(&x, p, rc);
}
