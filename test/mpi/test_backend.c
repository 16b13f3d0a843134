/* A program's own backend, registered and selected by name for the world
 * and for a group: its calls reach it with group ranks, async works come
 * back complete, and what it refuses comes back as its status. Built-in
 * names: "mpi" works, "nccl" needs a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "dcoll/dcoll.h"
#include "check.h"

static int me;
int t_rank, t_failures;

/* The backend: int32 SUM all_reduce, broadcast and barrier over the MPI
 * communicator dcoll hands it; it counts what it ran. */
struct state {
    MPI_Comm comm;
    int rank, size, calls;
    int *destroyed;
};

static int destroyed;

static dcoll_status_t b_create(void *arg, int rank, int size, int comm,
                               void **out)
{
    struct state *s = calloc(1, sizeof(*s));
    if (!s)
        return DCOLL_ERR_NO_MEMORY;
    s->comm = MPI_Comm_f2c(comm);
    s->rank = rank;
    s->size = size;
    s->destroyed = arg;
    *out = s;
    return DCOLL_SUCCESS;
}

static dcoll_status_t b_run(void *st, const dcoll_backend_call_t *c,
                            int *source)
{
    struct state *s = st;
    (void)source;
    s->calls++;
    switch (c->kind) {
    case DCOLL_KIND_ALL_REDUCE:
        if (c->dtype != DCOLL_INT32 || c->op != DCOLL_SUM)
            return DCOLL_ERR_UNSUPPORTED;
        return MPI_Allreduce(c->sendbuf == c->recvbuf ? MPI_IN_PLACE
                                                       : c->sendbuf,
                             c->recvbuf, (int)c->count, MPI_INT, MPI_SUM,
                             s->comm) ? DCOLL_ERR_MPI : DCOLL_SUCCESS;
    case DCOLL_KIND_BROADCAST:
        return MPI_Bcast(c->recvbuf, (int)c->count * 4, MPI_BYTE, c->root,
                         s->comm) ? DCOLL_ERR_MPI : DCOLL_SUCCESS;
    case DCOLL_KIND_BARRIER:
        return MPI_Barrier(s->comm) ? DCOLL_ERR_MPI : DCOLL_SUCCESS;
    default:
        return DCOLL_ERR_UNSUPPORTED;
    }
}

static void b_destroy(void *st)
{
    struct state *s = st;
    (*s->destroyed)++;
    free(s);
}

static dcoll_status_t bad_create(void *arg, int rank, int size, int comm,
                                 void **out)
{
    (void)arg, (void)size, (void)comm, (void)out;
    /* Fails on the last rank only: every rank must hear of it. */
    return rank == size - 1 ? DCOLL_ERR_NO_MEMORY : DCOLL_SUCCESS;
}

int main(void)
{
    int n;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    dcoll_backend_ops_t ops = {DCOLL_BACKEND_OPS_VERSION, b_create, b_run,
                               b_destroy};
    CHECK(dcoll_register_backend("Counting", &ops, &destroyed) ==
              DCOLL_SUCCESS, "register");
    dcoll_backend_ops_t bad = {DCOLL_BACKEND_OPS_VERSION, bad_create, b_run,
                               NULL};
    CHECK(dcoll_register_backend("half-broken", &bad, NULL) == DCOLL_SUCCESS,
          "register half-broken");
    /* Tables of a version the library does not know are refused; a
     * version-1 table, the oldest, is read by its own size (its end here
     * is the end of a struct that has nothing after group_destroy). */
    for (unsigned v = 0; v <= DCOLL_BACKEND_OPS_VERSION + 1;
         v += DCOLL_BACKEND_OPS_VERSION + 1) {
        dcoll_backend_ops_t other = ops;
        other.version = v;
        CHECK(dcoll_register_backend("versioned", &other, NULL) ==
                      DCOLL_ERR_INVALID_ARGUMENT &&
                  strstr(dcoll_last_error(), "is not one this library knows"),
              "version %u refused (%s)", v, dcoll_last_error());
    }
    struct {
        uint32_t version;
        dcoll_status_t (*group_create)(void *, int, int, int, void **);
        dcoll_status_t (*run)(void *, const dcoll_backend_call_t *, int *);
        void (*group_destroy)(void *);
    } *v1 = malloc(sizeof(*v1));
    v1->version = 1;
    v1->group_create = b_create;
    v1->run = b_run;
    v1->group_destroy = b_destroy;
    CHECK(dcoll_register_backend("version-one", (dcoll_backend_ops_t *)v1,
                                 &destroyed) == DCOLL_SUCCESS,
          "version 1 accepted (%s)", dcoll_last_error());
    free(v1);

    /* The world on it, chosen in another case. */
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_BACKEND;
    p.backend = "COUNTING";
    CHECK(dcoll_init(&p) == DCOLL_SUCCESS, "init with backend");
    const char *name = NULL;
    dcoll_group_backend(NULL, &name);
    CHECK(name && !strcmp(name, "Counting"), "world backend %s", name);
    int x[3] = {me, me, me}, y[3];
    CHECK(dcoll_all_reduce(NULL, x, y, 3, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "all_reduce");
    CHECK(y[0] == n * (n - 1) / 2 && y[2] == y[0], "sum %d", y[0]);
    dcoll_work_t *w = NULL;
    int v = me == 0 ? 42 : 0;
    CHECK(dcoll_broadcast(NULL, &v, 1, DCOLL_INT32, 0, NULL, &w) ==
              DCOLL_SUCCESS, "async broadcast");
    int done = 0;
    CHECK(dcoll_work_test(w, &done) == DCOLL_SUCCESS && done,
          "work complete at once");
    CHECK(dcoll_work_wait(w) == DCOLL_SUCCESS && v == 42, "bcast %d", v);
    dcoll_work_free(&w);
    /* What it does not do comes back as its status. */
    float f = 1;
    CHECK(dcoll_all_reduce(NULL, &f, &f, 1, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_ERR_UNSUPPORTED &&
              strstr(dcoll_last_error(),
                     "backend 'Counting' does not support all_reduce"),
          "unsupported passes through (%s)", dcoll_last_error());
    /* dcoll's checks still come first; a refused call leaves its group
     * unusable here, so on a spare group. */
    dcoll_group_t *spare = NULL;
    CHECK(dcoll_new_group(&spare, NULL, 0, NULL) == DCOLL_SUCCESS, "spare");
    CHECK(dcoll_all_reduce(spare, x, y, -1, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_ERR_INVALID_ARGUMENT, "count -1");
    CHECK(dcoll_barrier(spare, NULL, NULL) ==
              (t_kept(spare) ? DCOLL_SUCCESS : DCOLL_ERR_GROUP_FAILED),
          "the spare group after a refusal: %s", dcoll_last_error());
    dcoll_group_destroy(&spare);

    /* A group on the built-in mpi backend, another on ours. */
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_BACKEND;
    gp.backend = "MPI";
    dcoll_group_t *g = NULL, *h = NULL;
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_SUCCESS, "mpi group");
    dcoll_group_backend(g, &name);
    CHECK(!strcmp(name, "mpi"), "group backend %s", name);
    f = (float)me;
    float fs = 0;
    CHECK(dcoll_all_reduce(g, &f, &fs, 1, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS &&
              fs == (float)(n * (n - 1) / 2), "float sum on mpi");
    dcoll_group_destroy(&g);
    int last = n - 1;
    gp.backend = "counting";
    CHECK(dcoll_new_group(&h, &last, 1, &gp) == DCOLL_SUCCESS, "group");
    if (me == last) {
        v = 5;
        CHECK(dcoll_all_reduce(h, &v, &v, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                               NULL) == DCOLL_SUCCESS && v == 5, "alone");
    }
    int before = destroyed;
    dcoll_group_destroy(&h);
    CHECK(destroyed == before + (me == last), "group state freed");

    /* A backend that fails on one rank fails the group on all. */
    gp.backend = "half-broken";
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_ERR_NO_MEMORY ||
              (n > 1 && me != n - 1),
          "half-broken on the last rank");
    if (me != n - 1)
        CHECK(n == 1 || strstr(dcoll_last_error(), "another rank"),
              "others hear of it");
    CHECK(g == NULL, "no group made");
    /* nccl needs a GPU; unknown names are refused. */
    gp.backend = "nccl";
    dcoll_status_t st = dcoll_new_group(&g, NULL, 0, &gp);
    CHECK(st == DCOLL_ERR_UNSUPPORTED || st == DCOLL_SUCCESS, "nccl: %d", st);
    if (st == DCOLL_SUCCESS) {
        CHECK(dcoll_all_reduce(g, x, y, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                               NULL) == DCOLL_ERR_INVALID_ARGUMENT,
              "nccl refuses host buffers");
        dcoll_group_destroy(&g);
    }
    gp.backend = "gloo";
    CHECK(dcoll_new_group(&g, NULL, 0, &gp) == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "invalid backend 'gloo'"), "gloo");
    before = destroyed;
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    /* The world's, and the spare group's: left by a refusal, it was kept
     * (for the others' roll calls) until finalize, on more than 1 rank. */
    CHECK(destroyed == before + 1 + (n > 1), "world state freed");

    MPI_Allreduce(MPI_IN_PLACE, &t_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("backend registry on %d rank(s): %s\n", n,
               t_failures ? "FAILED" : "ok");
    MPI_Finalize();
    return t_failures != 0;
}
