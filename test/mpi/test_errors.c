/* Bad input to every public function: the right status, a message that
 * names the bad value, and a run that goes on (a collective after each
 * batch proves the ranks still agree; a refused collective leaves its
 * group unusable on the refusing rank, which bad_collectives checks).
 * Run under mpirun, 1 to 4 ranks. */
#include "testutil.h"
#include "kind_calls.h"

int t_rank, t_failures;

/* The checker every test shares (testutil.h), by its old name here. */
#define EXPECT CHECK_REFUSED

#define BAD DCOLL_ERR_INVALID_ARGUMENT

static void still_works(const char *after)
{
    int one = 1, sum = 0, size = 0;
    dcoll_group_size(NULL, &size);
    dcoll_status_t st = dcoll_all_reduce(NULL, &one, &sum, 1, DCOLL_INT32,
                                         DCOLL_SUM, NULL, NULL);
    CHECK(st == DCOLL_SUCCESS && sum == size, "after %s: all_reduce gave %d "
          "(%s)", after, sum, dcoll_last_error());
}

static void before_init(void)
{
    dcoll_group_t *g = NULL;
    dcoll_work_t *w = NULL;
    int x, flag = -1;
    char b[8];
    EXPECT(dcoll_group_world(&g), DCOLL_ERR_NOT_INITIALIZED, "dcoll_init");
    EXPECT(dcoll_new_group(&g, NULL, 0, NULL), DCOLL_ERR_NOT_INITIALIZED,
           "not initialised");
    EXPECT(dcoll_group_rank(NULL, &x), DCOLL_ERR_NOT_INITIALIZED, "dcoll_init");
    EXPECT(dcoll_all_reduce(NULL, b, b, 1, DCOLL_INT8, DCOLL_SUM, NULL, NULL),
           DCOLL_ERR_NOT_INITIALIZED, "dcoll_init");
    EXPECT(dcoll_barrier(NULL, NULL, &w), DCOLL_ERR_NOT_INITIALIZED,
           "dcoll_init");
    EXPECT(dcoll_work_wait(w), DCOLL_ERR_NOT_INITIALIZED, "dcoll_init");
    EXPECT(dcoll_finalize(), DCOLL_ERR_NOT_INITIALIZED, "dcoll_init");
    CHECK_OK(dcoll_initialized(&flag));
    CHECK(flag == 0, "initialized says %d before init", flag);
    EXPECT(dcoll_initialized(NULL), BAD, "flag is NULL");
    /* Not the library's state: these work at any time. */
    size_t sz = 0;
    CHECK_OK(dcoll_dtype_size(DCOLL_BFLOAT16, &sz));
    CHECK(sz == 2, "bfloat16 size %zu", sz);
    EXPECT(dcoll_dtype_size((dcoll_dtype_t)42, &sz), BAD, "dtype 42");
    EXPECT(dcoll_dtype_size(DCOLL_INT8, NULL), BAD, "size is NULL");
    CHECK(strcmp(dcoll_status_string((dcoll_status_t)1000), "unknown status")
          == 0, "status string of 1000");
}

static void bad_init(void)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = UINT64_C(1) << 40;
    EXPECT(dcoll_init(&p), BAD, "0x10000000000");
    p.mask = DCOLL_INIT_PARAM_URL;
    p.url = "gloo://x";
    EXPECT(dcoll_init(&p), BAD, "no rendezvous handler for gloo://");
    p.url = "nourl";
    EXPECT(dcoll_init(&p), BAD, "'nourl' has no scheme");
    p.url = "mpi://host:1";
    EXPECT(dcoll_init(&p), BAD, "mpi://host:1");
    p.url = "tcp://127.0.0.1?rank=0&world_size=1";
    EXPECT(dcoll_init(&p), BAD, "tcp:// rendezvous: port number missing");
    p.url = "file://?rank=0&world_size=1";
    EXPECT(dcoll_init(&p), BAD, "file:// rendezvous: path missing");
    p.mask = DCOLL_INIT_PARAM_TIMEOUT;
    p.timeout = -1;
    EXPECT(dcoll_init(&p), BAD, "timeout -1");
    p.mask = DCOLL_INIT_PARAM_URL;
    p.url = "env://somehost:1";
    EXPECT(dcoll_init(&p), BAD, "env:// takes no address");
    p.url = NULL;
    EXPECT(dcoll_init(&p), BAD, "url is NULL");
    p.mask = DCOLL_INIT_PARAM_THREAD_LEVEL;
    p.thread_level = 9;
    EXPECT(dcoll_init(&p), BAD, "thread_level 9");
    p.mask = DCOLL_INIT_PARAM_BACKEND;
    p.backend = "Gloo";
    EXPECT(dcoll_init(&p), BAD, "'Gloo'");
    p.backend = "NCCL";
    EXPECT(dcoll_init(&p), DCOLL_ERR_UNSUPPORTED, "nccl");
    p.mask = DCOLL_INIT_PARAM_COMM;
    p.comm = 123456;
    EXPECT(dcoll_init(&p), BAD, "comm 123456");
}

static void bad_groups(int size)
{
    dcoll_group_t *g = (dcoll_group_t *)0x1;
    int ranks[3] = {0, size, 0}, x;
    EXPECT(dcoll_new_group(NULL, ranks, 1, NULL), BAD, "out is NULL");
    EXPECT(dcoll_new_group(&g, ranks, -1, NULL), BAD, "nranks -1");
    CHECK(g == NULL, "new_group left *out set on error");
    EXPECT(dcoll_new_group(&g, NULL, 2, NULL), BAD, "ranks is NULL");
    EXPECT(dcoll_new_group(&g, ranks, size + 1, NULL), BAD,
           "more than the world");
    char want[64];
    snprintf(want, sizeof(want), "ranks[0] = %d", size);
    EXPECT(dcoll_new_group(&g, ranks + 1, 1, NULL), BAD, want);
    ranks[1] = -3;
    EXPECT(dcoll_new_group(&g, ranks + 1, 1, NULL), BAD, "ranks[0] = -3");
    ranks[1] = 0;
    if (size >= 2)
        EXPECT(dcoll_new_group(&g, ranks, 2, NULL), BAD,
               "rank 0 is listed twice");
    dcoll_group_params_t gp = DCOLL_GROUP_PARAMS_INIT;
    gp.mask = DCOLL_GROUP_PARAM_BACKEND;
    gp.backend = "tcp";
    EXPECT(dcoll_new_group(&g, ranks, 1, &gp), BAD, "'tcp'");
    gp.mask = 10;
    EXPECT(dcoll_new_group(&g, ranks, 1, &gp), BAD, "0xa");
    gp.mask = DCOLL_GROUP_PARAM_ON_TIMEOUT;
    gp.on_timeout = 2;
    EXPECT(dcoll_new_group(&g, ranks, 1, &gp), BAD, "on_timeout 2 is not");
    gp.on_timeout = -1;
    EXPECT(dcoll_new_group(&g, ranks, 1, &gp), BAD, "on_timeout -1 is not");
    gp.mask = DCOLL_GROUP_PARAM_BACKEND;
    gp.backend = "MpI"; /* names are case-insensitive */
    CHECK_OK(dcoll_new_group(&g, ranks, 1, &gp));
    const char *bn = NULL;
    if (t_rank == 0) {
        CHECK_OK(dcoll_group_backend(g, &bn));
        CHECK(bn && strcmp(bn, "mpi") == 0, "backend %s", bn ? bn : "NULL");
    }
    /* Queries on the group {0}. */
    EXPECT(dcoll_group_rank(g, NULL), BAD, "output is NULL");
    if (t_rank == 0) {
        EXPECT(dcoll_group_global_rank(g, 1, &x), BAD, "group rank 1");
        EXPECT(dcoll_group_global_rank(g, -1, &x), BAD, "group rank -1");
        if (size > 1)
            EXPECT(dcoll_group_group_rank(g, 1, &x), BAD, "world rank 1 is "
                   "not a rank of the group (ranks {0})");
    } else {
        EXPECT(dcoll_group_global_rank(g, 0, &x), BAD, "NON-MEMBER");
        EXPECT(dcoll_group_group_rank(g, 0, &x), BAD, "NON-MEMBER");
        EXPECT(dcoll_group_comm(g, &x), BAD, "no communicator");
    }
    EXPECT(dcoll_group_comm(g, NULL), BAD, "output is NULL");
    EXPECT(dcoll_group_comm((dcoll_group_t *)&x, &x), BAD,
           "not a live dcoll group");
    CHECK_OK(dcoll_group_destroy(&g));
    /* The variable is DCOLL_GROUP_NULL now, never the world (NULL): a
     * call on it is refused on every rank, member or not. */
    CHECK(g == DCOLL_GROUP_NULL, "destroy left %p", (void *)g);
    int one = 1, sum = 0;
    dcoll_group_t *spare_out = NULL;
    EXPECT(dcoll_all_reduce(g, &one, &sum, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                            NULL), BAD, "DCOLL_GROUP_NULL, which "
           "dcoll_group_destroy left");
    CHECK(sum == 0, "a call on a destroyed group's variable ran: %d", sum);
    EXPECT(dcoll_group_size(g, &x), BAD, "DCOLL_GROUP_NULL");
    EXPECT(dcoll_split_group(&spare_out, g, 0, 0, NULL), BAD,
           "DCOLL_GROUP_NULL");
    EXPECT(dcoll_barrier(g, NULL, NULL), BAD, "DCOLL_GROUP_NULL");
    CHECK_OK(dcoll_group_destroy(&g)); /* again: nothing to free */
    CHECK(g == DCOLL_GROUP_NULL, "second destroy left %p", (void *)g);
    g = NULL;
    CHECK_OK(dcoll_group_destroy(&g)); /* NULL *group: fine */
    EXPECT(dcoll_group_destroy(NULL), BAD, "group is NULL");
    dcoll_group_t *world;
    CHECK_OK(dcoll_group_world(&world));
    EXPECT(dcoll_group_destroy(&world), BAD, "world group belongs to dcoll");
    EXPECT(dcoll_group_world(NULL), BAD, "out is NULL");
    /* A handle that is not a group (here: garbage memory). */
    uint64_t junk[16] = {0};
    EXPECT(dcoll_group_size((dcoll_group_t *)junk, &x), BAD,
           "not a live dcoll group");
    EXPECT(dcoll_barrier((dcoll_group_t *)junk, NULL, NULL), BAD,
           "not a live dcoll group");
}

/* The group the bad collectives go to (testutil.h's CHECK_DEAD). Send
 * and receive are not numbered: EXPECT leaves the group as it was. */
static dcoll_group_t *G;

#define DEAD(call, want, text) CHECK_DEAD(G, call, want, text)

static void bad_collectives(int size)
{
    G = t_spare();
    float a[64] = {0}, b[64] = {0};
    dcoll_work_t *w = (dcoll_work_t *)0x1;
    int me = t_rank;
    const int64_t huge = INT64_MAX / 2;
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = 1u << 7;

    DEAD(dcoll_all_reduce(G, a, b, -5, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                          &w), BAD, "count -5 is negative");
    CHECK(w == NULL, "failed call left *work set");
    DEAD(dcoll_all_reduce(G, a, b, huge, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                          NULL), BAD, "count 4611686018427387903");
    DEAD(dcoll_all_reduce(G, NULL, b, 4, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                          NULL), BAD, "sendbuf is NULL with count 4");
    DEAD(dcoll_all_reduce(G, a, NULL, 4, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                          NULL), BAD, "recvbuf is NULL with count 4");
    char past[32];
    snprintf(past, sizeof(past), "dtype %d", DCOLL_DTYPE_COUNT_);
    DEAD(dcoll_all_reduce(G, a, b, 4, (dcoll_dtype_t)DCOLL_DTYPE_COUNT_,
                          DCOLL_SUM, NULL, NULL), BAD, past);
    DEAD(dcoll_all_reduce(G, a, b, 4, (dcoll_dtype_t)-1, DCOLL_SUM, NULL,
                          NULL), BAD, "dtype -1");
    snprintf(past, sizeof(past), "op %d", DCOLL_OP_COUNT_);
    DEAD(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32,
                          (dcoll_op_t)DCOLL_OP_COUNT_, NULL, NULL), BAD,
         past);
    DEAD(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32, DCOLL_BXOR, NULL,
                          NULL), BAD, "BXOR is bitwise");
    DEAD(dcoll_reduce_scatter(G, a, b, 1, DCOLL_BFLOAT16, DCOLL_BAND,
                              NULL, NULL), BAD, "not bfloat16");
    DEAD(dcoll_all_reduce(G, a, a + 1, 4, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                          NULL), BAD, "overlap");
    DEAD(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32, DCOLL_SUM, &o,
                          NULL), BAD, "0x80");
    /* A binding's own refusal and bounds (DCOLL_COLL_OPT_REFUSAL and
     * _BOUNDS, API 1.11): refused as C's own, naming both sizes. */
    dcoll_coll_opts_t r = DCOLL_COLL_OPTS_INIT;
    r.mask = DCOLL_COLL_OPT_REFUSAL;
    r.refusal = "sendbuf is a strided section";
    DEAD(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32, DCOLL_SUM, &r, NULL),
         BAD, "dcoll_all_reduce: sendbuf is a strided section");
    /* Nothing else is read: not even counts of too few entries. */
    DEAD(dcoll_all_gatherv(G, a, 1, b, (const int64_t *)&r, NULL,
                           DCOLL_FLOAT32, &r, NULL),
         BAD, "dcoll_all_gatherv: sendbuf is a strided section");
    r.refusal = NULL;
    DEAD(dcoll_barrier(G, &r, NULL), BAD, "no opts->refusal to say why");
    dcoll_coll_opts_t bo = DCOLL_COLL_OPTS_INIT;
    bo.mask = DCOLL_COLL_OPT_BOUNDS;
    bo.sendbytes = 8;
    bo.recvbytes = 16;
    DEAD(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32, DCOLL_SUM, &bo, NULL),
         BAD, "sendbuf holds 8 bytes (2 float32 elements), and the call "
         "reads 4 elements (16 bytes) there");
    bo.sendbytes = 4;
    CHECK_OK(dcoll_all_gather(G, a, b, 1, DCOLL_FLOAT32, &bo, NULL));
    bo.recvbytes = 4 * size - 1;
    DEAD(dcoll_all_gather(G, a, b, 1, DCOLL_FLOAT32, &bo, NULL), BAD,
         "and the call writes");
    bo.sendbytes = 16;
    bo.recvbytes = 16;
    DEAD(dcoll_broadcast(G, a, 5, DCOLL_FLOAT32, 0, &bo, NULL), BAD,
         "buf holds 16 bytes (4 float32 elements), and the call uses 5");
    bo.recvbytes = -1;
    DEAD(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32, DCOLL_SUM, &bo, NULL),
         BAD, "opts->recvbytes -1 is negative");
    bo.recvbytes = 16;
    CHECK_OK(dcoll_all_reduce(G, a, b, 4, DCOLL_FLOAT32, DCOLL_SUM, &bo,
                              NULL));
    int64_t cnt[4] = {1, 1, 1, 1};
    bo.sendbytes = 4;
    bo.recvbytes = 4 * size - 4;
    DEAD(dcoll_all_gatherv(G, a, 1, b, cnt, NULL, DCOLL_FLOAT32, &bo, NULL),
         BAD, "recvbuf holds");
    DEAD(dcoll_broadcast(G, a, 4, DCOLL_FLOAT32, size, NULL, NULL), BAD,
         "root");
    DEAD(dcoll_broadcast(G, a, 4, DCOLL_FLOAT32, -1, NULL, NULL), BAD,
         "root -1 is not a rank of the group");
    DEAD(dcoll_broadcast(G, NULL, 4, DCOLL_FLOAT32, 0, NULL, NULL), BAD,
         "buf is NULL");
    DEAD(dcoll_reduce(G, a, b, 4, DCOLL_INT32, DCOLL_MAX, 99, NULL,
                      NULL), BAD, "root 99");
    DEAD(dcoll_reduce(G, a, NULL, 4, DCOLL_INT32, DCOLL_MAX, me, NULL,
                      NULL), BAD, "recvbuf (on the root) is NULL");
    DEAD(dcoll_gather(G, a, NULL, 1, DCOLL_INT32, me, NULL, NULL), BAD,
         "recvbuf must be given on the root");
    DEAD(dcoll_scatter(G, NULL, b, 1, DCOLL_INT32, me, NULL, NULL), BAD,
         "sendbuf must be given on the root");
    /* The root's own buffer on other ranks is ignored, as in MPI
     * (test_mistakes runs it). */
    /* One byte off: never the in-place position, always overlapping. */
    DEAD(dcoll_all_gather(G, (char *)b + 1, b, 1, DCOLL_FLOAT32, NULL,
                          NULL), BAD, "overlap");
    /* recvbuf == sendbuf is MPI's in-place form on every rank now
     * (test_aliased); one byte off overlaps on every rank. */
    DEAD(dcoll_reduce_scatter(G, a, (char *)a + 1, 1, DCOLL_FLOAT32,
                              DCOLL_SUM, NULL, NULL), BAD, "overlap");
    DEAD(dcoll_all_to_all(G, a, (char *)a + 1, 1, DCOLL_FLOAT32, NULL,
                          NULL), BAD, "overlap");
    DEAD(dcoll_barrier(G, &o, NULL), BAD, "0x80");
    EXPECT(dcoll_send(G, a, 1, DCOLL_FLOAT32, me, 0, NULL, NULL), BAD,
           "blocking self-send");
    EXPECT(dcoll_recv(G, a, 1, DCOLL_FLOAT32, me, 0, NULL, NULL, NULL),
           BAD, "blocking self-recv");
    EXPECT(dcoll_send(G, a, 1, DCOLL_FLOAT32, 0, -4, NULL, NULL), BAD,
           "tag -4");
    EXPECT(dcoll_send(G, a, 1, DCOLL_FLOAT32, size + 3, 0, NULL, NULL),
           BAD, "dst");
    EXPECT(dcoll_recv(G, a, 1, DCOLL_FLOAT32, -9, 0, NULL, NULL, NULL),
           BAD, "src -9");
    EXPECT(dcoll_isend(G, a, 1, DCOLL_FLOAT32, 0, 0, NULL, NULL), BAD,
           "work is NULL");
    EXPECT(dcoll_irecv(G, a, 1, DCOLL_FLOAT32, 0, 0, NULL, NULL), BAD,
           "work is NULL");
    /* Named for the call made, not the blocking form underneath. */
    dcoll_work_t *wk = NULL;
    EXPECT(dcoll_isend(G, a, 1, DCOLL_FLOAT32, size + 3, 0, NULL, &wk),
           BAD, "dcoll_isend: dst");
    EXPECT(dcoll_irecv(G, a, 1, DCOLL_FLOAT32, -9, 0, NULL, &wk), BAD,
           "dcoll_irecv: src -9");

    /* Coalesced lists. */
    void *bufs[2] = {a, NULL};
    const void *cbufs[2] = {a, b};
    void *outs[2] = {b, NULL};
    int64_t counts[2] = {2, 3};
    DEAD(dcoll_all_reduce_coalesced(G, bufs, counts, -1, DCOLL_FLOAT32,
                                    DCOLL_SUM, NULL, NULL), BAD, "n -1");
    DEAD(dcoll_all_reduce_coalesced(G, NULL, counts, 2, DCOLL_FLOAT32,
                                    DCOLL_SUM, NULL, NULL), BAD,
         "bufs is NULL");
    DEAD(dcoll_all_reduce_coalesced(G, bufs, NULL, 2, DCOLL_FLOAT32,
                                    DCOLL_SUM, NULL, NULL), BAD,
         "counts is NULL");
    DEAD(dcoll_all_reduce_coalesced(G, bufs, counts, 2, DCOLL_FLOAT32,
                                    DCOLL_SUM, NULL, NULL), BAD,
         "bufs[1] is NULL with count 3");
    counts[1] = -2;
    DEAD(dcoll_all_reduce_coalesced(G, bufs, counts, 2, DCOLL_FLOAT32,
                                    DCOLL_SUM, NULL, NULL), BAD,
         "counts[1] = -2");
    counts[1] = INT64_MAX;
    DEAD(dcoll_all_gather_coalesced(G, cbufs, outs, counts, 2,
                                    DCOLL_FLOAT32, NULL, NULL), BAD,
         "counts[1] = 9223372036854775807");
    counts[1] = 3;
    DEAD(dcoll_all_gather_coalesced(G, cbufs, outs, counts, 2,
                                    DCOLL_FLOAT32, NULL, NULL), BAD,
         "recvbufs[1] is NULL");
    bufs[1] = b;
    DEAD(dcoll_all_reduce_coalesced(G, bufs, counts, 2, DCOLL_FLOAT64,
                                    DCOLL_BOR, NULL, NULL), BAD,
         "BOR is bitwise");
    CHECK_OK(dcoll_barrier(G, NULL, NULL));
    CHECK_OK(dcoll_group_destroy(&G));
    still_works("refused collectives");
}

static void bad_work(void)
{
    int x, done;
    dcoll_work_t *w = NULL;
    EXPECT(dcoll_work_wait(NULL), BAD, "work is NULL");
    EXPECT(dcoll_work_test(NULL, &done), BAD, "work is NULL");
    EXPECT(dcoll_work_source(NULL, &x), BAD, "work is NULL");
    EXPECT(dcoll_work_free(NULL), BAD, "work is NULL");
    CHECK_OK(dcoll_work_free(&w)); /* NULL *work: fine */
    CHECK_OK(dcoll_barrier(NULL, NULL, &w));
    EXPECT(dcoll_work_test(w, NULL), BAD, "done is NULL");
    EXPECT(dcoll_work_source(w, NULL), BAD, "source is NULL");
    EXPECT(dcoll_work_source(w, &x), BAD, "not a receive");
    /* finalize refuses while the barrier is in flight, and changes nothing */
    EXPECT(dcoll_finalize(), DCOLL_ERR_INVALID_STATE, "still in flight");
    CHECK_OK(dcoll_work_wait(w));
    CHECK_OK(dcoll_work_wait(w)); /* again: same status */
    CHECK_OK(dcoll_work_free(&w));
    uint64_t junk[16] = {0};
    EXPECT(dcoll_work_wait((dcoll_work_t *)junk), BAD, "not a live work");
    /* An unfinished receive has no source yet. */
    float f = 0;
    dcoll_work_t *ws0 = NULL;
    int size;
    dcoll_group_size(NULL, &size);
    CHECK_OK(dcoll_irecv(NULL, &f, 1, DCOLL_FLOAT32, t_rank, 3, NULL, &w));
    EXPECT(dcoll_work_source(w, &x), DCOLL_ERR_INVALID_STATE, "not finished");
    /* From another buffer: a pending send's buffer must not be written,
     * and MPICH asserts on the overlap. */
    float f_out = 1;
    CHECK_OK(dcoll_isend(NULL, &f_out, 1, DCOLL_FLOAT32, t_rank, 3, NULL,
                         &ws0));
    CHECK_OK(dcoll_work_wait(w));
    CHECK_OK(dcoll_work_source(w, &x));
    CHECK(x == t_rank, "self receive source %d", x);
    CHECK_OK(dcoll_work_free(&w));
    CHECK_OK(dcoll_work_free(&ws0));
    /* A message longer than the receive: the error comes out of wait.
     * (OpenMPI checks truncation between ranks, not on its self path.) */
    if (size >= 2 && t_rank < 2) {
        float two[2] = {1, 2};
        if (t_rank == 0) {
            CHECK_OK(dcoll_irecv(NULL, &f, 1, DCOLL_FLOAT32, 1, 3, NULL, &w));
            EXPECT(dcoll_work_wait(w), DCOLL_ERR_MPI, "MPI_Test failed");
            EXPECT(dcoll_work_wait(w), DCOLL_ERR_MPI, "truncated");
            EXPECT(dcoll_work_wait(w), DCOLL_ERR_MPI, "DCOLL_DEBUG=detail");
            EXPECT(dcoll_work_source(w, &x), DCOLL_ERR_MPI, "MPI_Test");
            CHECK_OK(dcoll_work_free(&w));
        } else {
            CHECK_OK(dcoll_send(NULL, two, 2, DCOLL_FLOAT32, 0, 3, NULL,
                                NULL));
        }
    }
    /* destroy refuses a group with work in flight */
    dcoll_group_t *g;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
    CHECK_OK(dcoll_barrier(g, NULL, &w));
    EXPECT(dcoll_group_destroy(&g), DCOLL_ERR_INVALID_STATE,
           "still in flight");
    CHECK_OK(dcoll_work_free(&w));
    CHECK_OK(dcoll_group_destroy(&g));
    still_works("bad work handles");
}

/* Every kind of the tests' table (kind_calls.h), blocking and as a plan,
 * given an option bit that does not exist: refused on every rank, naming
 * the bit and the call, and the group spent as a refused call leaves it
 * (a send or receive, which is not numbered, leaves it as it was). */
static void table_refusals(void)
{
    dcoll_coll_opts_t o = DCOLL_COLL_OPTS_INIT;
    o.mask = 1u << 7;
    G = t_spare();
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const struct kind_call *e = &kind_calls[k];
        bool p2p = k == DCOLL_COLL_SEND || k == DCOLL_COLL_RECV;
        char fn[64];
        snprintf(fn, sizeof(fn), "dcoll_%s", k == DCOLL_COLL_SEND &&
                 t_rank % 2 ? "recv" : k == DCOLL_COLL_RECV &&
                 t_rank % 2 == 0 ? "send" : e->name);
        for (int plan = 0; plan < 2; plan++) {
            if (plan && !e->plan)
                continue;
            struct kc_ctx c;
            CHECK_OK(kc_begin(&c, G));
            c.opts = &o;
            struct kc_ctx was = c;
            dcoll_plan_t *p = NULL;
            EXPECT(plan ? e->plan(&c, &p) : e->run(&c), BAD, "0x80");
            CHECK(strstr(dcoll_last_error(), fn) != NULL, "%s%s: the "
                  "refusal does not name %s: %s", e->name,
                  plan ? " plan" : "", fn, dcoll_last_error());
            CHECK(p == NULL, "%s plan: a refused plan was made", e->name);
            CHECK(!memcmp(was.in, c.in, sizeof(c.in)) &&
                  !memcmp(was.out, c.out, sizeof(c.out)), "%s%s: the "
                  "refused call wrote to its buffers", e->name,
                  plan ? " plan" : "");
            kc_done(&c);
            if (!p2p && !plan)
                t_spent(&G, e->name);
        }
    }
    CHECK_OK(dcoll_barrier(G, NULL, NULL));
    CHECK_OK(dcoll_group_destroy(&G));
    still_works("refused kinds");
}

static void after_finalize(void)
{
    int x;
    dcoll_work_t *w = NULL;
    char b[4];
    EXPECT(dcoll_group_rank(NULL, &x), DCOLL_ERR_FINALIZED, "finalized");
    EXPECT(dcoll_all_reduce(NULL, b, b, 1, DCOLL_INT8, DCOLL_SUM, NULL, NULL),
           DCOLL_ERR_FINALIZED, "finalized");
    EXPECT(dcoll_barrier(NULL, NULL, &w), DCOLL_ERR_FINALIZED, "finalized");
    EXPECT(dcoll_finalize(), DCOLL_ERR_FINALIZED, "finalized");
    CHECK_OK(dcoll_work_free(&w)); /* NULL *work */
    /* dcoll started MPI and finalized it: it cannot start again. */
    EXPECT(dcoll_init(NULL), DCOLL_ERR_INVALID_STATE, "MPI has been finalized");
}

/* A group rank passed where a world rank belongs: the refusal says that
 * roots are world ranks, and which world rank that group rank is. */
static void group_rank_as_root(int size)
{
    if (size < 2)
        return;
    int ranks[4], n = 0;
    for (int r = 1; r < size && n < 4; r++)
        ranks[n++] = r;
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, ranks, n, NULL));
    int me;
    CHECK_OK(dcoll_group_rank(g, &me));
    if (me >= 0) {
        float a[4] = {0};
        CHECK_REFUSED(dcoll_reduce(g, a, a, 4, DCOLL_FLOAT32, DCOLL_SUM, 0,
                                   NULL, NULL), BAD,
                      "root 0 is not a rank of the group (ranks {1");
        CHECK(strstr(dcoll_last_error(), "roots and peers are world ranks, "
                     "and group rank 0 is world rank 1") != NULL,
              "the refusal does not say what root 0 would be: %s",
              dcoll_last_error());
        /* A group of one rank is kept: nothing waits for the call. */
        CHECK(dcoll_barrier(g, NULL, NULL) ==
                  (t_kept(g) ? DCOLL_SUCCESS : DCOLL_ERR_GROUP_FAILED),
              "after a refused call the group %s", t_kept(g) ? "is not "
              "kept" : "still runs");
    }
    CHECK_OK(dcoll_group_destroy(&g));
}

int main(void)
{
    before_init();
    bad_init();
    CHECK_OK(dcoll_init(NULL));
    EXPECT(dcoll_init(NULL), DCOLL_ERR_ALREADY_INITIALIZED,
           "already initialised");
    int size;
    dcoll_group_rank(NULL, &t_rank);
    dcoll_group_size(NULL, &size);
    bad_groups(size);
    still_works("bad groups");
    bad_collectives(size);
    table_refusals();
    group_rank_as_root(size);
    bad_work();
    int rc = t_finish("test_errors");
    CHECK_OK(dcoll_finalize());
    after_finalize();
    if (t_failures)
        fprintf(stderr, "[rank %d] %d failure(s) after finalize\n", t_rank,
                t_failures);
    return rc || t_failures;
}
