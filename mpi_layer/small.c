/* Small blocking all_reduce, reduce, broadcast and barrier for groups
 * with a deadline, over point-to-point messages on the group's twin
 * communicator. OpenMPI's nonblocking collectives build a schedule on
 * every call, which doubles a small all_reduce on 4 ranks; the same
 * algorithms its blocking calls use for small messages (recursive
 * doubling, a binomial tree, dissemination), posted as Isend/Irecv and
 * polled against the deadline, cost what the blocking calls cost. Every
 * rank of a group makes the same calls in the same order, so messages
 * between two ranks match in order, as in MPI's own collectives. */
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

/* The largest calls served here: above them OpenMPI's own algorithms win
 * (bench/README.md, "Every collective, by default and where timeouts
 * return"). */
#define SMALL_BYTES 32768  /* all_reduce, reduce */
#define SMALL_BCAST 4096   /* broadcast */
/* Tags carry the call's number: a message a failed or mismatched call
 * left behind can never complete a later one (watch.c's tags are below
 * TAG_BASE). */
#define TAG_BASE 16

static int tag_of(const struct dcoll_watch *wt)
{
    return TAG_BASE + (int)(wt->seq % (uint64_t)(dcoll_mpi_tag_ub - TAG_BASE));
}

bool dcoll_mpi_small_fits(const struct dcoll_group *g,
                          const struct dcoll_coll *c)
{
    size_t bytes = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    (void)g; /* the limits do not depend on the group yet */
    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE:
    case DCOLL_COLL_REDUCE:
        return bytes <= SMALL_BYTES;
    case DCOLL_COLL_BROADCAST:
        return bytes <= SMALL_BCAST;
    case DCOLL_COLL_BARRIER:
        return true;
    default:
        return false;
    }
}

/* Receive from src (or not, src < 0) and send to dst (or not), then poll
 * both against the deadline. */
static dcoll_status_t swap(struct dcoll_group *g, const struct dcoll_watch *wt,
                           const void *out, void *in, int n,
                           MPI_Datatype t, int dst, int src, int tag)
{
    MPI_Comm ctl = dcoll_mpi_ctl_of(g);
    MPI_Request rq[2];
    int k = 0, rc = MPI_SUCCESS;
    if (src >= 0)
        rc = MPI_Irecv(in, n, t, src, tag, ctl, &rq[k++]);
    if (rc == MPI_SUCCESS && dst >= 0)
        rc = MPI_Isend(out, n, t, dst, tag, ctl, &rq[k++]);
    if (rc != MPI_SUCCESS) {
        if (k)
            MPI_Cancel(&rq[0]), MPI_Request_free(&rq[0]);
        return dcoll_mpi_error(rc, "MPI_Isend/MPI_Irecv");
    }
    return dcoll_mpi_poll(g, wt, k, rq, NULL);
}

static dcoll_status_t fold(const void *in, void *inout, int n,
                           MPI_Datatype t, MPI_Op op)
{
    int rc = MPI_Reduce_local(in, inout, n, t, op);
    return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                             : dcoll_mpi_error(rc, "MPI_Reduce_local");
}

/* Two scratch blocks of SMALL_BYTES, kept with the group's communicator
 * rather than on the stack: threads may have small ones. */
static char *scratch(struct dcoll_group *g, const char *fn)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    if (!mc->scratch && !(mc->scratch = malloc(2 * SMALL_BYTES)))
        dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for %d bytes of "
                    "scratch", fn, 2 * SMALL_BYTES);
    return mc->scratch;
}

/* Recursive doubling on buf (n elements), tmp for what arrives; a group
 * that is not a power of two first folds its extra ranks into their
 * neighbours and gives them the result at the end. The ops are
 * commutative, so both partners of a step hold the same bits after it,
 * and every rank ends with the same result. */
static dcoll_status_t doubling(struct dcoll_group *g,
                               const struct dcoll_watch *wt, char *buf,
                               char *tmp, int n, MPI_Datatype t, MPI_Op op)
{
    int r = g->rank, p = g->size;
    dcoll_status_t st = DCOLL_SUCCESS;
    int pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    int extra = p - pof2, me;
    if (r < 2 * extra) {
        if (r % 2 == 0) {
            st = swap(g, wt, buf, NULL, n, t, r + 1, -1, tag_of(wt));
            me = -1;
        } else {
            st = swap(g, wt, NULL, tmp, n, t, -1, r - 1, tag_of(wt));
            if (!st)
                st = fold(tmp, buf, n, t, op);
            me = r / 2;
        }
    } else {
        me = r - extra;
    }
    for (int mask = 1; !st && me >= 0 && mask < pof2; mask <<= 1) {
        int peer = me ^ mask;
        int real = peer < extra ? peer * 2 + 1 : peer + extra;
        st = swap(g, wt, buf, tmp, n, t, real, real, tag_of(wt));
        if (!st)
            st = fold(tmp, buf, n, t, op);
    }
    if (!st && r < 2 * extra)
        st = r % 2 ? swap(g, wt, buf, NULL, n, t, r - 1, -1, tag_of(wt))
                   : swap(g, wt, NULL, buf, n, t, -1, r + 1, tag_of(wt));
    return st;
}

static dcoll_status_t all_reduce(struct dcoll_group *g,
                                 const struct dcoll_coll *c,
                                 const struct dcoll_watch *wt)
{
    size_t bytes = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    char *tmp = scratch(g, c->fn);
    if (!tmp)
        return DCOLL_ERR_NO_MEMORY;
    if (!c->in_place && bytes)
        memcpy(c->recvbuf, c->sendbuf, bytes);
    return doubling(g, wt, c->recvbuf, tmp, (int)c->count,
                    dcoll_mpi_type(c),
                    dcoll_mpi_op(c->dtype, c->op));
}

/* A binomial tree towards c->root: each rank folds in its children's
 * partial results, then sends its own to its parent. */
static dcoll_status_t reduce(struct dcoll_group *g,
                             const struct dcoll_coll *c,
                             const struct dcoll_watch *wt)
{
    size_t bytes = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    int p = g->size, root = c->root, vr = (g->rank - root + p) % p;
    int n = (int)c->count;
    MPI_Datatype t = dcoll_mpi_type(c);
    MPI_Op op = dcoll_mpi_op(c->dtype, c->op);
    char *sc = scratch(g, c->fn);
    if (!sc)
        return DCOLL_ERR_NO_MEMORY;
    /* The root adds into its result; a leaf sends its input as it is. */
    bool leaf = vr & 1 || p == 1;
    char *acc = vr == 0 ? c->recvbuf : leaf ? (char *)c->sendbuf : sc;
    if (acc != c->sendbuf && !(vr == 0 && c->in_place) && bytes)
        memcpy(acc, c->sendbuf, bytes);
    dcoll_status_t st = DCOLL_SUCCESS;
    for (int mask = 1; !st && mask < p; mask <<= 1) {
        if (vr & mask)
            return swap(g, wt, acc, NULL, n, t, (vr - mask + root) % p, -1,
                        tag_of(wt));
        if (vr + mask < p) {
            st = swap(g, wt, NULL, sc + SMALL_BYTES, n, t, -1,
                      (vr + mask + root) % p, tag_of(wt));
            if (!st)
                st = fold(sc + SMALL_BYTES, acc, n, t, op);
        }
    }
    return st;
}

/* A binomial tree rooted at c->root. */
static dcoll_status_t broadcast(struct dcoll_group *g,
                                const struct dcoll_coll *c,
                                const struct dcoll_watch *wt)
{
    int p = g->size, root = c->root, vr = (g->rank - root + p) % p;
    int n = (int)c->count, mask = 1;
    MPI_Datatype t = dcoll_mpi_type(c);
    dcoll_status_t st = DCOLL_SUCCESS;
    while (mask < p) {
        if (vr & mask) {
            st = swap(g, wt, NULL, c->recvbuf, n, t, -1,
                      (vr - mask + root) % p, tag_of(wt));
            break;
        }
        mask <<= 1;
    }
    MPI_Request rq[32];
    int k = 0, rc = MPI_SUCCESS;
    for (mask >>= 1; !st && mask > 0; mask >>= 1) {
        if (vr + mask >= p)
            continue;
        rc = MPI_Isend(c->recvbuf, n, t, (vr + mask + root) % p, tag_of(wt),
                       dcoll_mpi_ctl_of(g), &rq[k]);
        if (rc != MPI_SUCCESS)
            break;
        k++;
    }
    if (rc != MPI_SUCCESS) {
        /* The sends already posted read the buffer the caller gets back:
         * they must end first. */
        st = dcoll_mpi_error(rc, "MPI_Isend (small broadcast)");
        dcoll_mpi_settle(g, wt, k, rq);
        return st;
    }
    return st || !k ? st : dcoll_mpi_poll(g, wt, k, rq, NULL);
}

/* Dissemination: round k hears from the rank 2^k below. */
static dcoll_status_t barrier(struct dcoll_group *g,
                              const struct dcoll_watch *wt)
{
    int p = g->size, r = g->rank;
    dcoll_status_t st = DCOLL_SUCCESS;
    for (int k = 1; !st && k < p; k <<= 1)
        st = swap(g, wt, NULL, NULL, 0, MPI_BYTE, (r + k) % p,
                  (r - k + p) % p, tag_of(wt));
    return st;
}

dcoll_status_t dcoll_mpi_small(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               const struct dcoll_watch *wt)
{
    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE:
        return all_reduce(g, c, wt);
    case DCOLL_COLL_REDUCE:
        return reduce(g, c, wt);
    case DCOLL_COLL_BROADCAST:
        return broadcast(g, c, wt);
    default:
        return barrier(g, wt);
    }
}
