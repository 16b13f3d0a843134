/* transport-table: every kind against every transport's table, the MPI
 * transport's own per-kind rows, and dcoll-perf's kinds. A gap fails,
 * naming the kind and the table: a new kind, or a row taken out, shows
 * here before any job runs. The expected coverage below is the route's
 * rules (HACKING.md): a transport of last resort runs every kind its
 * buffers can carry, so a row missing there is a kind no call can run. */
#include <stdbool.h>
#include "calls.h"
#include "check.h"
#include "gpu_kinds.h"
#include "ipc/ipc.h"
#include "kind_calls.h"
#include "kinds.h"
#include "perf.h"
#include "route.h"

int t_rank, t_failures;

enum {
    MPI_ = 1u << DCOLL_TL_MPI,
    NCCL_ = 1u << DCOLL_TL_NCCL,
    IPC_ = 1u << DCOLL_TL_IPC,
    STAGED_ = 1u << DCOLL_TL_STAGED,
    USER_ = 1u << DCOLL_TL_USER,
};
/* Every transport: the kinds of DCOLL_GPU_COLL_KINDS (plugin_abi.h),
 * which NCCL and IPC have code for. A kind added to the table runs on
 * neither until it is listed there and given its cases, so its line here
 * says MPI_ | STAGED_ (| USER_ where it has a public number) until then. */
#define EVERY_TL (MPI_ | STAGED_ | NCCL_ | IPC_ | USER_)

/* Which transports run each kind. */
static const unsigned expect[DCOLL_COLL_KIND_COUNT_] = {
    [DCOLL_COLL_BROADCAST] = EVERY_TL,
    [DCOLL_COLL_ALL_REDUCE] = EVERY_TL,
    [DCOLL_COLL_REDUCE] = EVERY_TL,
    [DCOLL_COLL_ALL_GATHER] = EVERY_TL,
    [DCOLL_COLL_GATHER] = EVERY_TL,
    [DCOLL_COLL_SCATTER] = EVERY_TL,
    [DCOLL_COLL_REDUCE_SCATTER] = EVERY_TL,
    [DCOLL_COLL_ALL_TO_ALL] = EVERY_TL,
    /* NCCL and IPC: no buffers (a barrier is MPI's), and no
     * communicator or team made by a peer call. */
    [DCOLL_COLL_BARRIER] = MPI_ | STAGED_ | USER_,
    [DCOLL_COLL_SEND] = MPI_ | STAGED_ | USER_,
    [DCOLL_COLL_RECV] = MPI_ | STAGED_ | USER_,
    /* Counts per rank: host buffers on MPI only. */
    [DCOLL_COLL_ALL_GATHERV] = MPI_,
    [DCOLL_COLL_GATHERV] = MPI_,
    [DCOLL_COLL_SCATTERV] = MPI_,
    [DCOLL_COLL_ALL_TO_ALLV] = MPI_,
    [DCOLL_COLL_REDUCE_SCATTERV] = MPI_,
    /* Prefix reductions: NCCL has none (IPC follows it), and a user
     * backend's call kinds have no number for them. */
    [DCOLL_COLL_SCAN] = MPI_ | STAGED_,
    [DCOLL_COLL_EXSCAN] = MPI_ | STAGED_,
    /* Neighbourhoods: NCCL's grouped sends and receives, or staged; not
     * IPC (no rows for lists per rank), nor a user backend's kinds. */
    [DCOLL_COLL_NEIGHBOR_ALL_GATHER] = MPI_ | NCCL_ | STAGED_,
    [DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV] = MPI_ | NCCL_ | STAGED_,
    [DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW] = MPI_ | NCCL_ | STAGED_,
};

/* Each transport's table: its slot, its name, and what every table
 * must have. */
static void tables(void)
{
    static const char *const names[DCOLL_TL_COUNT_] = {
        [DCOLL_TL_MPI] = "mpi", [DCOLL_TL_STAGED] = "staged",
        [DCOLL_TL_NCCL] = "nccl", [DCOLL_TL_IPC] = "ipc",
        [DCOLL_TL_USER] = "user"};
    int n = 0;
    for (const struct dcoll_backend *be; (be = dcoll_route_transport(n));
         n++) {
        CHECK(be->tl == (enum dcoll_tl)n, "transport %d (%s) says its slot "
              "is %d", n, be->name, (int)be->tl);
        if (!names[n]) {
            CHECK(0, "transport %d (%s) has no column in this test: add "
                  "its name and the kinds it runs", n,
                  be->name ? be->name : "(null)");
            continue;
        }
        CHECK(be->name && !strcmp(be->name, names[n]), "transport %d is "
              "named '%s', want '%s'", n, be->name ? be->name : "(null)",
              names[n]);
        CHECK(be->runs && be->coll, "transport %s lacks runs or coll",
              be->name);
        /* Works: all three, or none (another's table owns them). */
        bool w = be->work_test, x = be->work_wait, y = be->work_release;
        CHECK(w == x && x == y, "transport %s has some work functions, "
              "not all", be->name);
        bool p = be->plan_make, q = be->plan_start, r = be->plan_free;
        CHECK(p == q && q == r, "transport %s has some plan functions, "
              "not all", be->name);
        CHECK(!be->plan_quick || be->plan_failed, "transport %s's quick "
              "plan starts have no plan_failed", be->name);
        CHECK(!be->over_mpi || (be->memory & DCOLL_TL_GPU), "transport %s "
              "is over MPI but takes no GPU buffers", be->name);
    }
    /* Host buffers: MPI. GPU buffers: a line whose last runs over MPI,
     * so that an "mpi" group has one. */
    CHECK(dcoll_mpi_backend.memory == DCOLL_TL_HOST, "MPI's table does "
          "not take host buffers alone");
    const struct dcoll_backend *last = NULL;
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        if (dcoll_route_transport(i)->memory & DCOLL_TL_GPU)
            last = dcoll_route_transport(i);
    CHECK(last && last->over_mpi, "the last transport in line for GPU "
          "buffers (%s) does not run over MPI", last ? last->name : "none");
    CHECK(n == DCOLL_TL_COUNT_, "the route has %d transports, enum "
          "dcoll_tl %d", n, DCOLL_TL_COUNT_);
    /* The ones a program names, by name. */
    CHECK(dcoll_route_named("MPI") == &dcoll_mpi_backend,
          "dcoll_route_named(\"MPI\") is not the MPI table");
    CHECK(dcoll_route_named("nccl") == &dcoll_nccl_backend,
          "dcoll_route_named(\"nccl\") is not the NCCL table");
    CHECK(dcoll_route_named("staged") == NULL, "staged is named");
}

static void kinds(void)
{
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const char *kn = dcoll_kind_name(k);
        CHECK(expect[k], "kind %d (%s) has no line in this test's table", k,
              kn);
        for (int i = 0; i < DCOLL_TL_COUNT_; i++) {
            const struct dcoll_backend *be = dcoll_route_transport(i);
            bool want = expect[k] & (1u << i);
            bool has = be->runs((enum dcoll_coll_kind)k);
            CHECK(has == want, "%s: transport %s %s", kn, be->name,
                  has ? "has a row for it, which this test does not expect"
                      : "has no row for it");
        }
    }
    /* NCCL's and IPC's runs against the kinds their code names: the
     * list the plugin's switch is written from, IPC's steps' own list,
     * and the neighbourhood kinds, which NCCL runs by its exchange. */
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const char *kn = dcoll_kind_name(k);
        bool listed = dcoll_gpu_coll_kind((enum dcoll_coll_kind)k);
        bool nbh = dcoll_kind_has(k, DCOLL_KF_NEIGHBOR);
        CHECK(dcoll_nccl_backend.runs((enum dcoll_coll_kind)k) ==
                  (listed || nbh),
              "%s: NCCL's runs says %s, but the kind is %s "
              "DCOLL_GPU_COLL_KINDS (plugin_abi.h)", kn,
              listed || nbh ? "no" : "yes", listed ? "in" : "not in");
        bool coded = dcoll_ipc_codes((enum dcoll_coll_kind)k);
        CHECK(dcoll_ipc_backend.runs((enum dcoll_coll_kind)k) ==
                  (coded && listed),
              "%s: IPC's runs disagrees with the kinds its steps have "
              "cases for (dcoll_ipc_coded, lib/gpu/ipc/steps.c)", kn);
        CHECK(coded == listed, "%s: %s DCOLL_GPU_COLL_KINDS but %s IPC's "
              "steps (dcoll_ipc_coded): NCCL and IPC must take the same "
              "kinds, a group takes either alike", kn,
              listed ? "in" : "not in", coded ? "in" : "not in");
    }
    for (int i = 0; i < dcoll_ipc_ncoded; i++)
        CHECK((unsigned)dcoll_ipc_coded[i] < DCOLL_COLL_KIND_COUNT_,
              "IPC's steps name kind %d, past the last",
              (int)dcoll_ipc_coded[i]);

    /* Past the last kind: nobody's. */
    for (int i = 0; i < DCOLL_TL_COUNT_; i++)
        CHECK(!dcoll_route_transport(i)->runs(DCOLL_COLL_KIND_COUNT_),
              "transport %s runs kind %d, past the last",
              dcoll_route_transport(i)->name, DCOLL_COLL_KIND_COUNT_);
}

/* The MPI transport's rows: each has its post and a plan's blocking
 * call; a kind with one buffer layout and no peer has its blocking call
 * straight to MPI. */
static void mpi_rows(void)
{
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const struct dcoll_mpi_row *r = &dcoll_mpi_rows[k];
        const char *kn = dcoll_kind_name(k);
        CHECK(r->post, "%s: the MPI row has no post", kn);
        CHECK(r->plan_call, "%s: the MPI row has no plan call", kn);
        bool plain = !dcoll_kind_has(k, DCOLL_KF_VEC | DCOLL_KF_PEER |
                                            DCOLL_KF_NEIGHBOR);
        CHECK(!plain || r->direct, "%s: the MPI row has no direct "
              "blocking call", kn);
        CHECK(!r->avg || dcoll_kind_has(k, DCOLL_KF_OP), "%s: the MPI row "
              "divides for AVG, but the kind takes no op", kn);
        CHECK(!r->tuned || !dcoll_kind_has(k, DCOLL_KF_VEC | DCOLL_KF_PEER |
                                                  DCOLL_KF_NEIGHBOR),
              "%s: a tuned way for a vector, peer or neighbourhood kind", kn);
    }
}

/* dcoll-perf times every kind (send and recv as one, send_recv), and
 * with -P every kind's plan. */
static void perf(void)
{
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const char *want = k == DCOLL_COLL_SEND || k == DCOLL_COLL_RECV
                               ? "send_recv" : dcoll_kind_name(k);
        bool found = false;
        for (int i = 0; i < perf_ncolls && !found; i++)
            found = !strcmp(perf_colls[i].name, want);
        CHECK(found, "%s: dcoll-perf has no '%s' (bench/colls.c)",
              dcoll_kind_name(k), want);
        found = false;
        for (int i = 0; i < perf_nplan_rows && !found; i++)
            found = !strcmp(perf_plan_rows[i].name, want);
        CHECK(found, "%s: dcoll-perf -P has no plan of '%s' "
              "(bench/plans.c)", dcoll_kind_name(k), want);
    }
}

/* The tests' table of calls (test/mpi/kind_calls.c) has every kind,
 * under its name: the route and plan tests iterate it. */
static void test_calls(void)
{
    for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
        const struct kind_call *e = &kind_calls[k];
        const char *kn = dcoll_kind_name(k);
        CHECK(e->name && e->run && e->check && e->mpi, "%s: the tests' "
              "table of calls has no entry for it (test/mpi/kind_calls.c)",
              kn);
        CHECK(!e->name || !strcmp(e->name, kn), "%s: the tests' table of "
              "calls names it '%s' (test/mpi/kind_calls.c)", kn, e->name);
        bool pair = k == DCOLL_COLL_SEND || k == DCOLL_COLL_RECV;
        CHECK(pair || e->plan, "%s: the tests' table of calls has no plan "
              "for it (test/mpi/kind_calls.c)", kn);
    }
}

int main(void)
{
    tables();
    kinds();
    mpi_rows();
    perf();
    test_calls();
    if (!t_failures)
        printf("transport-table: %d kinds, %d transports: no gap\n",
               DCOLL_COLL_KIND_COUNT_, DCOLL_TL_COUNT_);
    return T_EXIT;
}
