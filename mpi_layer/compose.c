/* Other ways to make a collective out of MPI's own calls: the candidates
 * a tuning table may pick where MPI's call is slower than a composition
 * of its others (Open MPI 4.1's all_reduce of 256 KiB on 2 ranks takes 3
 * times its reduce + broadcast). Each takes MPI's arguments and gives
 * MPI's result, and every rank gets the same bits: a value is reduced
 * once, on one rank, and sent to the others as it is. Blocking calls of
 * at most INT_MAX elements, as MPI's own. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

const char *const dcoll_way_names[DCOLL_WAY_COUNT] = {
    [DCOLL_WAY_MPI] = "mpi",
    [DCOLL_WAY_REDUCE_BCAST] = "reduce+broadcast",
    [DCOLL_WAY_RS_AG] = "reduce_scatter+all_gather",
    [DCOLL_WAY_REDUCE_SCATTER] = "reduce+scatter",
    [DCOLL_WAY_ALLREDUCE_COPY] = "all_reduce+copy",
    [DCOLL_WAY_SCATTER_AG] = "scatter+all_gather",
    [DCOLL_WAY_RS_GATHER] = "reduce_scatter+gather",
    [DCOLL_WAY_GATHER_BCAST] = "gather+broadcast",
    [DCOLL_WAY_SHM] = "shm",
};

#ifdef MPICH
/* MPICH 4.0.2's blocking MPI_Reduce with MPI_IN_PLACE at a root other
 * than 0 reads through the MPI_IN_PLACE marker past 2 KiB (its ch4
 * composed reduce) and crashes; a 20-line program calling MPICH shows it.
 * The root reduces from a copy instead, so the other ranks' calls stay
 * as they are (MPI_Ireduce is right, but would not match MPI_Reduce). */
int dcoll_mpi_reduce(const void *in, void *out, int n, MPI_Datatype t,
                     MPI_Op op, int root, MPI_Comm comm)
{
    if (in != MPI_IN_PLACE || root == 0)
        return MPI_Reduce(in, out, n, t, op, root, comm);
    int esz = 0;
    MPI_Type_size(t, &esz);
    void *copy = malloc((size_t)n * (size_t)esz + 1);
    if (!copy)
        return MPI_ERR_NO_MEM;
    memcpy(copy, out, (size_t)n * (size_t)esz);
    int rc = MPI_Reduce(copy, out, n, t, op, root, comm);
    free(copy);
    return rc;
}
#endif

const struct dcoll_way_kind dcoll_way_kinds[DCOLL_WAY_KINDS] = {
    {"all_reduce", DCOLL_COLL_ALL_REDUCE, 4,
     {DCOLL_WAY_MPI, DCOLL_WAY_REDUCE_BCAST, DCOLL_WAY_RS_AG, DCOLL_WAY_SHM}},
    {"reduce_scatter", DCOLL_COLL_REDUCE_SCATTER, 4,
     {DCOLL_WAY_MPI, DCOLL_WAY_REDUCE_SCATTER, DCOLL_WAY_ALLREDUCE_COPY,
      DCOLL_WAY_SHM}},
    {"broadcast", DCOLL_COLL_BROADCAST, 3,
     {DCOLL_WAY_MPI, DCOLL_WAY_SCATTER_AG, DCOLL_WAY_SHM}},
    {"reduce", DCOLL_COLL_REDUCE, 3,
     {DCOLL_WAY_MPI, DCOLL_WAY_RS_GATHER, DCOLL_WAY_SHM}},
    {"all_gather", DCOLL_COLL_ALL_GATHER, 3,
     {DCOLL_WAY_MPI, DCOLL_WAY_GATHER_BCAST, DCOLL_WAY_SHM}},
};

/* n elements over size ranks, as even as they go: rank r's count at
 * [r] and where its block starts at [size + r], in one allocation for
 * the caller to free (NULL: no memory). */
static int *blocks(int n, int size)
{
    int *v = malloc(sizeof(int) * 2 * (size_t)size);
    for (int r = 0, at = 0; v && r < size; r++) {
        v[r] = n / size + (r < n % size);
        v[size + r] = at;
        at += v[r];
    }
    return v;
}

int dcoll_compose_all_reduce(enum dcoll_way way, const void *in, void *out,
                             int n, MPI_Datatype t, size_t esz, MPI_Op op,
                             MPI_Comm comm, int me, int size)
{
    int rc;
    switch (way) {
    case DCOLL_WAY_REDUCE_BCAST:
        /* Rank 0 reduces, then sends what it got to all. In place, the
         * others' input is in out. */
        if (me == 0)
            rc = MPI_Reduce(in, out, n, t, op, 0, comm);
        else
            rc = MPI_Reduce(in == MPI_IN_PLACE ? out : in, NULL, n, t, op, 0,
                            comm);
        return rc == MPI_SUCCESS ? MPI_Bcast(out, n, t, 0, comm) : rc;
    case DCOLL_WAY_RS_AG: {
        /* Each rank reduces its block, then every block goes to all. */
        int *v = blocks(n, size);
        if (!v)
            return MPI_ERR_NO_MEM;
        int *cnt = v, *dsp = v + size;
        char *mine = (char *)out + (size_t)dsp[me] * esz;
        if (in == MPI_IN_PLACE) {
            /* MPI's in-place form leaves the block at the front. */
            rc = MPI_Reduce_scatter(MPI_IN_PLACE, out, cnt, t, op, comm);
            if (rc == MPI_SUCCESS && dsp[me])
                memmove(mine, out, (size_t)cnt[me] * esz);
        } else {
            rc = MPI_Reduce_scatter(in, mine, cnt, t, op, comm);
        }
        if (rc == MPI_SUCCESS)
            rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, cnt,
                                dsp, t, comm);
        free(v);
        return rc;
    }
    default:
        return MPI_Allreduce(in, out, n, t, op, comm);
    }
}

int dcoll_compose_reduce_scatter(enum dcoll_way way, const void *in,
                                 void *out, int n, MPI_Datatype t,
                                 size_t esz, MPI_Op op, MPI_Comm comm,
                                 int me, int size)
{
    int rc;
    if ((int64_t)n * size > INT_MAX)
        return MPI_Reduce_scatter_block(in, out, n, t, op, comm);
    int whole = n * size;
    size_t block = (size_t)n * esz;
    /* In place (MPI's form) the input is all of out, the result goes to
     * its front; else the whole result needs room of its own. */
    char *tmp = NULL;
    if (in != MPI_IN_PLACE &&
        (way == DCOLL_WAY_ALLREDUCE_COPY ||
         (way == DCOLL_WAY_REDUCE_SCATTER && me == 0))) {
        tmp = malloc(block * (size_t)size + 1);
        if (!tmp)
            return MPI_ERR_NO_MEM;
    }
    switch (way) {
    case DCOLL_WAY_REDUCE_SCATTER:
        /* Rank 0 reduces the whole, then hands each rank its block. */
        if (in == MPI_IN_PLACE) {
            rc = me == 0 ? MPI_Reduce(MPI_IN_PLACE, out, whole, t, op, 0,
                                      comm)
                         : MPI_Reduce(out, NULL, whole, t, op, 0, comm);
            if (rc == MPI_SUCCESS)
                rc = me == 0 ? MPI_Scatter(out, n, t, MPI_IN_PLACE, n, t, 0,
                                           comm)
                             : MPI_Scatter(NULL, n, t, out, n, t, 0, comm);
        } else {
            rc = MPI_Reduce(in, tmp, whole, t, op, 0, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Scatter(tmp, n, t, out, n, t, 0, comm);
        }
        break;
    case DCOLL_WAY_ALLREDUCE_COPY:
        /* Every rank reduces the whole alike and keeps its block. */
        if (in == MPI_IN_PLACE) {
            rc = MPI_Allreduce(MPI_IN_PLACE, out, whole, t, op, comm);
            if (rc == MPI_SUCCESS && me)
                memmove(out, (char *)out + block * (size_t)me, block);
        } else {
            rc = MPI_Allreduce(in, tmp, whole, t, op, comm);
            if (rc == MPI_SUCCESS)
                memcpy(out, tmp + block * (size_t)me, block);
        }
        break;
    default:
        rc = MPI_Reduce_scatter_block(in, out, n, t, op, comm);
        break;
    }
    free(tmp);
    return rc;
}

int dcoll_compose_broadcast(enum dcoll_way way, void *buf, int n,
                            MPI_Datatype t, size_t esz, int root,
                            MPI_Comm comm, int me, int size)
{
    if (way != DCOLL_WAY_SCATTER_AG)
        return MPI_Bcast(buf, n, t, root, comm);
    /* The root hands each rank a block, then every block goes to all
     * (van de Geijn's broadcast): each rank sends about n elements once,
     * where a tree's inner ranks send n several times. */
    int *v = blocks(n, size);
    if (!v)
        return MPI_ERR_NO_MEM;
    int *cnt = v, *dsp = v + size;
    char *mine = (char *)buf + (size_t)dsp[me] * esz;
    int rc = me == root
                 ? MPI_Scatterv(buf, cnt, dsp, t, MPI_IN_PLACE, cnt[me], t,
                                root, comm)
                 : MPI_Scatterv(NULL, cnt, dsp, t, mine, cnt[me], t, root,
                                comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, dsp,
                            t, comm);
    free(v);
    return rc;
}

int dcoll_compose_reduce(enum dcoll_way way, const void *in, void *out,
                         int n, MPI_Datatype t, size_t esz, MPI_Op op,
                         int root, MPI_Comm comm, int me, int size)
{
    if (way != DCOLL_WAY_RS_GATHER)
        return dcoll_mpi_reduce(in, me == root ? out : NULL, n, t, op, root,
                                comm);
    /* Each rank reduces its block, then the root gathers the blocks
     * (Rabenseifner's reduce): no rank reduces more than its share. */
    int *v = blocks(n, size);
    if (!v)
        return MPI_ERR_NO_MEM;
    int *cnt = v, *dsp = v + size;
    char *mine = malloc((size_t)cnt[me] * esz + 1);
    if (!mine) {
        free(v);
        return MPI_ERR_NO_MEM;
    }
    const void *src = in == MPI_IN_PLACE ? out : in;
    int rc = MPI_Reduce_scatter(src, mine, cnt, t, op, comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Gatherv(mine, cnt[me], t, me == root ? out : NULL, cnt, dsp,
                         t, root, comm);
    free(mine);
    free(v);
    return rc;
}

int dcoll_compose_all_gather(enum dcoll_way way, const void *in, void *out,
                             int n, MPI_Datatype t, size_t esz,
                             MPI_Comm comm, int me, int size)
{
    if (way != DCOLL_WAY_GATHER_BCAST || (int64_t)n * size > INT_MAX)
        return MPI_Allgather(in, n, t, out, n, t, comm);
    /* Rank 0 gathers every block, then sends the whole to all. */
    int rc;
    if (me == 0)
        rc = MPI_Gather(in, n, t, out, n, t, 0, comm);
    else
        rc = MPI_Gather(in == MPI_IN_PLACE ? (char *)out + (size_t)me * n *
                                                 esz
                                           : in,
                        n, t, NULL, n, t, 0, comm);
    return rc == MPI_SUCCESS ? MPI_Bcast(out, n * size, t, 0, comm) : rc;
}
