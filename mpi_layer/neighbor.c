/* The neighbourhood collectives over MPI: MPI_Neighbor_allgather(v) and
 * MPI_Neighbor_alltoallv on the neighbourhood's graph communicator,
 * blocking, nonblocking or persistent (rows.c's rows). The graph holds
 * the lists' real entries only: a DCOLL_PROC_NULL entry's block is left
 * out of the int arrays MPI reads, so it is neither sent nor written. */
#include <stdlib.h>
#include "calls.h"

MPI_Comm dcoll_mpi_nbh_comm(const struct dcoll_coll *c)
{
    return *(MPI_Comm *)c->nbh->comm;
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

int dcoll_mpi_post_nbh(struct dcoll_mpi_post *p, const struct dcoll_group *g,
                       const struct dcoll_coll *c, MPI_Comm comm,
                       MPI_Status *status, const char **call)
{
    (void)g, (void)status;
    const struct dcoll_nbh *n = c->nbh;
    MPI_Request *rq = dcoll_mpi_slot(p);
    MPI_Datatype t = dcoll_mpi_type(c);
    bool all_gather = c->kind == DCOLL_COLL_NEIGHBOR_ALL_GATHER;
    int rc;
    if (all_gather && !gaps(n)) {
        *call = rq ? "MPI_Ineighbor_allgather" : "MPI_Neighbor_allgather";
        return rq ? DCOLL_NB(p->persist, MPI_Ineighbor_allgather,
                             Neighbor_allgather, rq, c->sendbuf,
                             (int)c->count, t, c->recvbuf, (int)c->count, t,
                             comm)
                  : MPI_Neighbor_allgather(c->sendbuf, (int)c->count, t,
                                           c->recvbuf, (int)c->count, t,
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
                           Neighbor_allgatherv, rq, c->sendbuf,
                           (int)c->count, t, c->recvbuf, rcn, rd, t, comm)
                : MPI_Neighbor_allgatherv(c->sendbuf, (int)c->count, t,
                                          c->recvbuf, rcn, rd, t, comm);
    } else {
        *call = rq ? "MPI_Ineighbor_alltoallv" : "MPI_Neighbor_alltoallv";
        rc = rq ? DCOLL_NB(p->persist, MPI_Ineighbor_alltoallv,
                           Neighbor_alltoallv, rq, c->sendbuf, sc, sd, t,
                           c->recvbuf, rcn, rd, t, comm)
                : MPI_Neighbor_alltoallv(c->sendbuf, sc, sd, t, c->recvbuf,
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
