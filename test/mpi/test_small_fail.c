/* A small broadcast whose second send fails on the root: the send already
 * posted must be waited for (or freed at the deadline), never abandoned
 * while it still reads the caller's buffer. MPI_Isend and the calls that
 * end requests are wrapped here through MPI's profiling interface, so the
 * test sees every request dcoll posts and whether it was ended.
 *   mpirun -n 3|4 test_small_fail */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"

static int me;
int t_rank, t_failures;

/* Armed: the fail_at-th MPI_Isend from now fails; the others are kept
 * in live until something ends them. */
static int fail_at, isends, nlive;
static MPI_Request live[64];

static void ended(MPI_Request r)
{
    for (int i = 0; i < nlive; i++)
        if (live[i] == r) {
            live[i] = live[--nlive];
            return;
        }
}

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    if (fail_at && ++isends == fail_at) {
        *req = MPI_REQUEST_NULL;
        return MPI_ERR_OTHER;
    }
    int rc = PMPI_Isend(buf, count, t, dest, tag, comm, req);
    if (rc == MPI_SUCCESS && fail_at && nlive < 64)
        live[nlive++] = *req;
    return rc;
}

/* n requests before and after a call that may end some of them. */
static void after(int n, const MPI_Request *before, const MPI_Request *now)
{
    for (int i = 0; i < n; i++)
        if (before[i] != MPI_REQUEST_NULL && now[i] == MPI_REQUEST_NULL)
            ended(before[i]);
}

int MPI_Wait(MPI_Request *r, MPI_Status *s)
{
    MPI_Request in = *r;
    int rc = PMPI_Wait(r, s);
    after(1, &in, r);
    return rc;
}

int MPI_Test(MPI_Request *r, int *flag, MPI_Status *s)
{
    MPI_Request in = *r;
    int rc = PMPI_Test(r, flag, s);
    after(1, &in, r);
    return rc;
}

int MPI_Waitall(int n, MPI_Request *r, MPI_Status *s)
{
    MPI_Request in[64];
    int k = n < 64 ? n : 64;
    memcpy(in, r, sizeof(MPI_Request) * (size_t)k);
    int rc = PMPI_Waitall(n, r, s);
    after(k, in, r);
    return rc;
}

int MPI_Testall(int n, MPI_Request *r, int *flag, MPI_Status *s)
{
    MPI_Request in[64];
    int k = n < 64 ? n : 64;
    memcpy(in, r, sizeof(MPI_Request) * (size_t)k);
    int rc = PMPI_Testall(n, r, flag, s);
    after(k, in, r);
    return rc;
}

int MPI_Request_free(MPI_Request *r)
{
    MPI_Request in = *r;
    int rc = PMPI_Request_free(r);
    after(1, &in, r);
    return rc;
}

int main(int argc, char **argv)
{
    int n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init");
    dcoll_group_t *g = NULL;
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    /* small.c's algorithms run where timeouts return. */
    gp.mask = DCOLL_GROUP_PARAM_TIMEOUT | DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.timeout = 1;
    gp.on_timeout = DCOLL_ON_TIMEOUT_RETURN;
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_SUCCESS, "new_group");
    int buf[16];
    for (int i = 0; i < 16; i++)
        buf[i] = me == 0 ? 100 + i : -1;
    /* The root sends to rank 2 first, then to rank 1: that send fails. */
    if (me == 0) {
        fail_at = 2;
        isends = nlive = 0;
    }
    dcoll_status_t st = dcoll_broadcast(g, buf, 16, DCOLL_INT32, 0, NULL,
                                        NULL);
    if (me == 0) {
        fail_at = 0;
        CHECK(st == DCOLL_ERR_MPI && strstr(dcoll_last_error(), "MPI_Isend"),
              "root: status %d", st);
        CHECK(nlive == 0, "root: %d send(s) left posted after the failure",
              nlive);
    } else if (me == 1) {
        CHECK(st == DCOLL_ERR_TIMEOUT, "rank 1, never sent to: status %d",
              st);
    } else {
        CHECK(st == DCOLL_SUCCESS && buf[15] == 115, "rank %d: status %d, "
              "buf[15] %d", me, st, buf[15]);
    }
    CHECK(dcoll_barrier(NULL, NULL, NULL) == DCOLL_SUCCESS, "barrier");
    CHECK(dcoll_group_destroy(&g) == DCOLL_SUCCESS, "destroy");
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    MPI_Allreduce(MPI_IN_PLACE, &t_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("small broadcast with a failing send: %s\n",
               t_failures ? "FAIL" : "ok");
    MPI_Finalize();
    return t_failures != 0;
}
