/* A communicator of some ranks of a group, and nonblocking host
 * collectives on it: the GPU layer's leaders (lib/gpu/ipc/), which stage
 * their step of a hierarchical call through host memory where NCCL is
 * missing. And a neighbourhood's graph communicator. */
#include <limits.h>
#include <stdlib.h>
#include "mpi_internal.h"

dcoll_status_t dcoll_mpi_sub_make(struct dcoll_group *g, bool member,
                                  int key, void **comm)
{
    MPI_Comm c = MPI_COMM_NULL;
    *comm = NULL;
    int rc = MPI_Comm_split(dcoll_mpi_comm_of(g),
                            member ? 0 : MPI_UNDEFINED, key, &c);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_split");
    if (c == MPI_COMM_NULL)
        return DCOLL_SUCCESS;
    MPI_Comm *h = malloc(sizeof(*h));
    if (!h) {
        MPI_Comm_free(&c);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a "
                           "communicator's handle");
    }
    *h = c;
    *comm = h;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_nbh_make(struct dcoll_group *g, int nin,
                                  const int *in, int nout, const int *out,
                                  void **comm)
{
    MPI_Comm c = MPI_COMM_NULL;
    *comm = NULL;
    /* The communicator first, so that the handle is an MPI_Comm *. */
    struct dcoll_mpi_nbh *h = calloc(1, sizeof(*h));
    if (!h)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a "
                           "communicator's handle");
    /* MPI reads no list entry of a zero degree, but takes no NULL. */
    static const int none[1] = {0};
    /* GCC takes MPI_UNWEIGHTED, a sentinel address, for an empty array
     * of weights that MPI would read. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
    int rc = MPI_Dist_graph_create_adjacent(
        dcoll_mpi_comm_of(g), nin, nin ? in : none, MPI_UNWEIGHTED, nout,
        nout ? out : none, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
#pragma GCC diagnostic pop
    if (rc != MPI_SUCCESS) {
        free(h);
        return dcoll_mpi_error(rc, "MPI_Dist_graph_create_adjacent");
    }
    h->comm = c;
    *comm = h;
    return DCOLL_SUCCESS;
}

void dcoll_mpi_sub_free(void *comm)
{
    if (!comm)
        return;
    MPI_Comm_free(comm);
    free(comm);
}

dcoll_status_t dcoll_mpi_sub_post(void *comm, enum dcoll_coll_kind kind,
                                  void *buf, int64_t count,
                                  dcoll_dtype_t dtype, dcoll_op_t op,
                                  int root, void **req)
{
    MPI_Request *r = malloc(sizeof(*r));
    *req = NULL;
    if (!r)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a request");
    if (count > INT_MAX) {
        free(r);
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%lld elements: more "
                           "than one MPI call takes", (long long)count);
    }
    MPI_Comm c = *(MPI_Comm *)comm;
    MPI_Datatype t = kind == DCOLL_COLL_ALL_REDUCE
                         ? dcoll_mpi_dtype[dtype]
                         : dcoll_mpi_move_dtype[dtype];
    int rc = kind == DCOLL_COLL_ALL_REDUCE
                 ? MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, t,
                                  dcoll_mpi_op(dtype, op), c, r)
                 : MPI_Ibcast(buf, (int)count, t, root, c, r);
    if (rc != MPI_SUCCESS) {
        free(r);
        return dcoll_mpi_error(rc, kind == DCOLL_COLL_ALL_REDUCE
                                       ? "MPI_Iallreduce"
                                       : "MPI_Ibcast");
    }
    *req = r;
    return DCOLL_SUCCESS;
}

int dcoll_mpi_sub_test(void **req)
{
    int done = 0;
    int rc = MPI_Test(*req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        dcoll_mpi_error(rc, "MPI_Test");
        return -1;
    }
    if (done) {
        free(*req);
        *req = NULL;
    }
    return done;
}
