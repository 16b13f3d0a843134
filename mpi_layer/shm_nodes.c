/* Across nodes: each node's segment, MPI's call among one rank a node,
 * and the node's segment again (mpi_layer/shm.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "shm.h"

/* ---- across nodes: each node's segment, MPI's call among leaders ---- */

/* Whether g's members are on several hosts, some holding two or more
 * (by the host names, alike on every rank). */
bool dcoll_shm_nodes_shared(const struct dcoll_group *g)
{
    bool two = false, apart = false;
    const char *first = dcoll_host_of(dcoll_world_of(g, 0));
    for (int r = 0; r < g->size; r++) {
        const char *h = dcoll_host_of(dcoll_world_of(g, r));
        if (!h)
            return false;
        apart |= strcmp(h, first) != 0;
        for (int q = 0; q < r && !two; q++)
            two = !strcmp(h, dcoll_host_of(dcoll_world_of(g, q)));
    }
    return two && apart;
}


void dcoll_mpi_nodes_free(struct dcoll_mpi_nodes *nd)
{
    if (!nd)
        return;
    if (nd->seg) {
        munmap(nd->seg->base, nd->seg->bytes);
        if (nd->seg->name[0])
            shm_unlink(nd->seg->name);
        free(nd->seg->sent);
        free(nd->seg->members);
        free(nd->seg->from);
    }
    free(nd->seg);
    if (nd->node != MPI_COMM_NULL)
        MPI_Comm_free(&nd->node);
    if (nd->leaders != MPI_COMM_NULL)
        MPI_Comm_free(&nd->leaders);
    free(nd->node_of);
    free(nd);
}

/* g's nodes, their communicators and segments (collective over g,
 * within call c's wait). *ok false where a node could not make its
 * segment: then no node uses one, alike on every rank. */
dcoll_status_t dcoll_shm_nodes_make(struct dcoll_group *g,
                                 struct dcoll_mpi_comm *mc,
                                 const struct dcoll_coll *c,
                                 struct dcoll_outcome *out, bool *ok)
{
    int k = g->size;
    *ok = false;
    struct dcoll_mpi_nodes *nd = calloc(1, sizeof(*nd));
    int *v = malloc(sizeof(int) * 2 * (size_t)k);
    char *here = malloc((size_t)k);
    if (!nd || !v || !here) {
        free(nd);
        free(v);
        free(here);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's nodes", c->fn);
    }
    nd->node = nd->leaders = MPI_COMM_NULL;
    nd->node_of = v;
    nd->local_of = v + k;
    for (int r = 0; r < k; r++) {
        const char *h = dcoll_host_of(dcoll_world_of(g, r));
        int q = 0;
        while (q < r && strcmp(h, dcoll_host_of(dcoll_world_of(g, q))))
            q++;
        v[r] = q == r ? r : v[q];
        nd->local_of[r] = 0;
        for (int p = 0; p < r; p++)
            nd->local_of[r] += v[p] == v[r];
    }
    nd->lrank = nd->local_of[g->rank];
    /* Every member here within the deadline first: the splits that
     * follow have none. */
    char one = 1;
    dcoll_status_t st = dcoll_shm_swap(g, mc->ctl, &one, here, 1, c, out);
    /* Past a failed swap a late rank's part may still land in here:
     * left to it. */
    bool lost = st != DCOLL_SUCCESS;
    int rc = MPI_SUCCESS;
    if (!st)
        rc = MPI_Comm_split(mc->ctl, v[g->rank], g->rank, &nd->node);
    if (!st && rc == MPI_SUCCESS)
        rc = MPI_Comm_split(mc->ctl, nd->lrank == 0 ? 0 : MPI_UNDEFINED,
                            g->rank, &nd->leaders);
    if (!st && rc != MPI_SUCCESS)
        st = dcoll_mpi_error(rc, "MPI_Comm_split (the group's nodes)");
    if (!st)
        MPI_Comm_size(nd->node, &nd->lsize);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool busy = dcoll_hosts_sharing(dcoll_world_of(g, g->rank)) >
                (cores > 0 ? cores : 1);
    if (!st && nd->lsize > 1)
        st = dcoll_shm_make(g, nd->node, nd->lrank, nd->lsize, busy, c, out,
                     &nd->seg);
    /* Its ranks by group rank, for messages. */
    if (!st && nd->seg &&
        (nd->seg->members = malloc(sizeof(int) * (size_t)nd->lsize)))
        for (int r = 0; r < k; r++)
            if (v[r] == v[g->rank])
                nd->seg->members[nd->local_of[r]] = r;
    /* Every node has its segment, or none takes the way. */
    here[0] = 0;
    char mine = (char)(nd->lsize == 1 || nd->seg);
    if (!st && (st = dcoll_shm_swap(g, mc->ctl, &mine, here, 1, c, out)))
        lost = true;
    bool all = !st;
    for (int r = 0; all && r < k; r++)
        all = here[r];
    if (!lost)
        free(here);
    if (st || !all) {
        dcoll_mpi_nodes_free(nd);
        return st;
    }
    mc->nodes = nd;
    *ok = true;
    return DCOLL_SUCCESS;
}

/* MPI's call among the leaders (kind, on buf): its blocking call where
 * c has no deadline of its own (abort mode: the watchdog watches it, as
 * it does MPI's calls; Open MPI's nonblocking schedules take several
 * times as long here), else the nonblocking one, polled to the
 * deadline. */
static dcoll_status_t leaders(struct dcoll_group *g,
                              const struct dcoll_mpi_nodes *nd,
                              enum dcoll_coll_kind kind, void *buf, int n,
                              MPI_Datatype t, MPI_Op op, int root,
                              const struct dcoll_watch *wt)
{
    bool polled = isfinite(wt->deadline);
    MPI_Comm comm = nd->leaders;
    MPI_Request rq;
    int rc;
    struct dcoll_watch w = *wt;
    switch (kind) {
    case DCOLL_COLL_BARRIER:
        w.call = "MPI_Barrier (the nodes' leaders)";
        rc = polled ? MPI_Ibarrier(comm, &rq) : MPI_Barrier(comm);
        break;
    case DCOLL_COLL_BROADCAST:
        w.call = "MPI_Bcast (the nodes' leaders)";
        rc = polled ? MPI_Ibcast(buf, n, t, root, comm, &rq)
                    : MPI_Bcast(buf, n, t, root, comm);
        break;
    default:
        w.call = "MPI_Allreduce (the nodes' leaders)";
        rc = polled ? MPI_Iallreduce(MPI_IN_PLACE, buf, n, t, op, comm, &rq)
                    : MPI_Allreduce(MPI_IN_PLACE, buf, n, t, op, comm);
        break;
    }
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, w.call);
    return polled ? dcoll_mpi_poll(g, &w, 1, &rq, NULL) : DCOLL_SUCCESS;
}

/* c across the nodes: all_reduce reduces on each node to its first
 * member, the leaders all_reduce by MPI's call, and each node's leader
 * broadcasts to its node; broadcast goes through the root's node, the
 * leaders, then the others'; a barrier is each node's, the leaders',
 * and each node's again. Every rank gets the same bits: a value is
 * reduced once on its node, once among the leaders (MPI's own order),
 * and copied from there. */
dcoll_status_t dcoll_shm_nodes_run(struct dcoll_group *g,
                                struct dcoll_mpi_nodes *nd,
                                const struct dcoll_coll *c,
                                const struct dcoll_watch *wt)
{
    struct dcoll_mpi_shm *s = nd->seg;
    struct dcoll_coll lc = *c;
    dcoll_status_t st = DCOLL_SUCCESS;
    bool lead = nd->lrank == 0;
    int n = (int)c->count;
    if (c->kind == DCOLL_COLL_BARRIER) {
        if (s && (st = dcoll_shm_sync(g, s, wt)))
            return st;
        if (lead && (st = leaders(g, nd, c->kind, NULL, 0, MPI_DATATYPE_NULL,
                                  MPI_OP_NULL, 0, wt)))
            return st;
        return s ? dcoll_shm_sync(g, s, wt) : DCOLL_SUCCESS;
    }
    MPI_Datatype t = dcoll_mpi_type(c);
    if (c->kind == DCOLL_COLL_BROADCAST) {
        int rn = nd->node_of[c->root];
        bool rooted = nd->node_of[g->rank] == rn;
        lc.root = nd->local_of[c->root];
        if (rooted && s && (st = dcoll_shm_broadcast(g, s, &lc, wt)))
            return st;
        /* The leaders' ranks follow their nodes' first members. */
        int at = 0;
        for (int r = 0; r < rn; r++)
            at += nd->node_of[r] == r;
        if (lead && (st = leaders(g, nd, c->kind, c->recvbuf, n, t,
                                  MPI_OP_NULL, at, wt)))
            return st;
        lc.root = 0;
        return !rooted && s ? dcoll_shm_broadcast(g, s, &lc, wt) : DCOLL_SUCCESS;
    }
    /* all_reduce; AVG sums, and the leaders divide once. */
    size_t esz = dcoll_dtype_sizes[c->dtype];
    dcoll_op_t op = c->op == DCOLL_AVG ? DCOLL_SUM : c->op;
    lc.kind = DCOLL_COLL_REDUCE;
    lc.op = op;
    lc.root = 0;
    if (s)
        st = dcoll_shm_reduce(g, s, &lc, wt, 0);
    else if (!c->in_place)
        memcpy(c->recvbuf, c->sendbuf, (size_t)n * esz);
    if (!st && lead) {
        st = leaders(g, nd, c->kind, c->recvbuf, n, t,
                     dcoll_mpi_op(c->dtype, op), 0, wt);
        if (!st && c->op == DCOLL_AVG)
            dcoll_divide(c->recvbuf, n, c->dtype, g->size);
    }
    if (st || !s)
        return st;
    lc.kind = DCOLL_COLL_BROADCAST;
    return dcoll_shm_broadcast(g, s, &lc, wt);
}

