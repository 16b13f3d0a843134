/* The vector collectives over MPI: MPI_Allgatherv, MPI_Gatherv,
 * MPI_Scatterv, MPI_Alltoallv and MPI_Reduce_scatter, blocking or not.
 * MPI takes int counts and displacements: the core has checked that each
 * fits, and they are copied here into arrays that live as long as the
 * operation (MPI reads them until it completes). */
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

/* n counts and their displacements (packed where displs is NULL) as
 * ints, into out[0..n) and out[n..2n). */
static void to_int(const int64_t *counts, const int64_t *displs, int n,
                   int *out)
{
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        out[i] = (int)counts[i];
        out[n + i] = (int)(displs ? displs[i] : at);
        at += counts[i];
    }
}

int dcoll_mpi_post_vec(const struct dcoll_coll *c,
                       const struct dcoll_group *g, MPI_Comm comm,
                       MPI_Request *rq, bool persist, int **keep,
                       const char **call)
{
    int n = g->size;
    /* Room for two layouts (all_to_allv's send and receive sides): on the
     * stack for a blocking call on a small group, else kept with it. */
    int small[4 * 64];
    int *v = !rq && n <= 64 ? small : malloc(sizeof(int) * 4 * (size_t)n);
    *keep = v == small ? NULL : v;
    if (!v) {
        *call = "dcoll MPI layer (no memory for the counts)";
        return MPI_ERR_NO_MEM;
    }
    MPI_Datatype t = dcoll_mpi_dtype[c->dtype];
    const void *s = c->in_place ? MPI_IN_PLACE : c->sendbuf;
    void *r = c->recvbuf;
    int own = (int)c->count;
    int *cnt = v, *dsp = v + n, *cnt2 = v + 2 * n, *dsp2 = v + 3 * n;
    if (c->counts)
        to_int(c->counts, c->displs, n, v);
    switch (c->kind) {
    case DCOLL_COLL_ALL_GATHERV:
#ifdef MPICH
        /* MPICH 4.0 (seen with 4.0.2, 1 and 2 ranks) puts this rank's own
         * block at the front of recvbuf, not at its displacement: put it
         * there here and let MPI work in place, which it gets right. */
        if (!c->in_place && c->displs && own > 0) {
            size_t esz = dcoll_dtype_sizes[c->dtype];
            memmove((char *)r + (size_t)dsp[g->rank] * esz, s,
                    (size_t)own * esz);
            s = MPI_IN_PLACE;
        }
#endif
        *call = rq ? "MPI_Iallgatherv" : "MPI_Allgatherv";
        return rq ? DCOLL_NB(persist, MPI_Iallgatherv, Allgatherv, rq, s,
                             own, t, r, cnt, dsp, t, comm)
                  : MPI_Allgatherv(s, own, t, r, cnt, dsp, t, comm);
    case DCOLL_COLL_GATHERV:
        *call = rq ? "MPI_Igatherv" : "MPI_Gatherv";
        if (g->rank != c->root)
            cnt = dsp = NULL;
        return rq ? DCOLL_NB(persist, MPI_Igatherv, Gatherv, rq, s, own, t,
                             r, cnt, dsp, t, c->root, comm)
                  : MPI_Gatherv(s, own, t, r, cnt, dsp, t, c->root, comm);
    case DCOLL_COLL_SCATTERV:
        /* MPI's in-place scatterv marks the receive side. */
        s = c->sendbuf;
        if (c->in_place)
            r = MPI_IN_PLACE;
        if (g->rank != c->root)
            cnt = dsp = NULL;
        *call = rq ? "MPI_Iscatterv" : "MPI_Scatterv";
        return rq ? DCOLL_NB(persist, MPI_Iscatterv, Scatterv, rq, s, cnt,
                             dsp, t, r, own, t, c->root, comm)
                  : MPI_Scatterv(s, cnt, dsp, t, r, own, t, c->root, comm);
    case DCOLL_COLL_ALL_TO_ALLV:
        to_int(c->counts2, c->displs2, n, cnt2);
        if (c->in_place)
            cnt = dsp = cnt2;   /* ignored by MPI, but must be valid */
        *call = rq ? "MPI_Ialltoallv" : "MPI_Alltoallv";
        return rq ? DCOLL_NB(persist, MPI_Ialltoallv, Alltoallv, rq, s, cnt,
                             dsp, t, r, cnt2, dsp2, t, comm)
                  : MPI_Alltoallv(s, cnt, dsp, t, r, cnt2, dsp2, t, comm);
    default: { /* DCOLL_COLL_REDUCE_SCATTERV */
        MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
        /* In place, MPI reads the whole buffer and leaves this rank's
         * block at its front; the core's after-step moves it. */
        if (c->in_place)
            r = (void *)c->sendbuf;
        *call = rq ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter";
        return rq ? DCOLL_NB(persist, MPI_Ireduce_scatter, Reduce_scatter,
                             rq, s, r, cnt, t, op, comm)
                  : MPI_Reduce_scatter(s, r, cnt, t, op, comm);
    }
    }
}
