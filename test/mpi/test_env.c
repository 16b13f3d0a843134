/* env:// under an MPI launcher: rank and world size from torch's variables,
 * from SLURM's, or from the URL's query, the world renumbered to match;
 * and every case the seed's checks reject, each with its message.
 *   test_env          under mpirun (sets the variables itself)
 *   test_env slurm    under srun (reads what SLURM set) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dcoll/dcoll.h"
#include "check.h"

static int me, n;
int t_rank, t_failures;

static dcoll_status_t init(const char *url)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = url ? DCOLL_INIT_PARAM_URL : 0;
    p.url = url;
    return dcoll_init(&p);
}

/* init must fail with st and a message holding text. */
static void refused(const char *url, dcoll_status_t st, const char *text,
                    int line)
{
    dcoll_status_t got = init(url);
    if (got == DCOLL_SUCCESS)
        dcoll_finalize();
    if (got != st || !strstr(dcoll_last_error(), text)) {
        t_failures++;
        fprintf(stderr, "[rank %d] line %d: %s -> %s '%s', want %s '%s'\n",
                me, line, url, dcoll_status_string(got), dcoll_last_error(),
                dcoll_status_string(st), text);
    }
}
#define REFUSED(url, st, text) refused(url, st, text, __LINE__)

static void set(const char *name, int value)
{
    char buf[16];
    snprintf(buf, sizeof(buf), "%d", value);
    setenv(name, buf, 1);
}

static void clear(void)
{
    static const char *const vars[] = {
        "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
        "SLURM_STEP_NUM_TASKS", "MASTER_ADDR", "MASTER_PORT",
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

/* After a successful env:// init: the world has the given rank, and
 * dcoll's rank k is the MPI process want_mpi(k). */
static void check_world(int rank, int (*want_mpi)(int), const char *what)
{
    int r = -1, s = -1;
    dcoll_group_rank(NULL, &r);
    dcoll_group_size(NULL, &s);
    CHECK(r == rank && s == n, "%s: rank %d size %d, want %d %d", what, r, s,
          rank, n);
    /* Every rank of these tests shares one node: local is world order. */
    int lr = -1, ls = -1;
    CHECK(dcoll_local_rank(&lr, &ls) == DCOLL_SUCCESS && lr == rank &&
          ls == n, "%s: local rank %d of %d, want %d of %d", what, lr, ls,
          rank, n);
    int *who = malloc(sizeof(int) * (size_t)n);
    dcoll_status_t st = dcoll_all_gather(NULL, &me, who, 1, DCOLL_INT32,
                                         NULL, NULL);
    CHECK(st == DCOLL_SUCCESS, "%s: all_gather: %s", what,
          dcoll_last_error());
    for (int k = 0; k < n && st == DCOLL_SUCCESS; k++)
        CHECK(who[k] == want_mpi(k), "%s: dcoll rank %d is MPI process %d, "
              "want %d", what, k, who[k], want_mpi(k));
    free(who);
    CHECK(dcoll_finalize() == DCOLL_SUCCESS, "%s: finalize", what);
}

static int reversed(int k) { return n - 1 - k; }
static int shifted(int k) { return (k + n - 1) % n; }
static int same(int k) { return k; }

static int under_slurm(void)
{
    /* What srun set: SLURM_PROCID and the step's task count. */
    const char *id = getenv("SLURM_PROCID");
    if (!id || getenv("RANK") || getenv("WORLD_SIZE")) {
        fprintf(stderr, "env-slurm: run me under srun, without RANK and "
                "WORLD_SIZE\n");
        return 1;
    }
    CHECK(init("env://") == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    check_world(atoi(id), same, "SLURM_PROCID under srun");
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    t_rank = me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc > 1 && strcmp(argv[1], "slurm") == 0) {
        int bad = under_slurm();
        MPI_Allreduce(MPI_IN_PLACE, &t_failures, 1, MPI_INT, MPI_SUM,
                      MPI_COMM_WORLD);
        if (me == 0)
            printf("env-slurm: %d rank(s), %d failure(s)%s\n", n, t_failures,
                   t_failures || bad ? "" : ": ok");
        MPI_Finalize();
        return t_failures || bad;
    }

    /* torch's variables, ranks reversed. */
    clear();
    set("RANK", n - 1 - me);
    set("WORLD_SIZE", n);
    CHECK(init("env://") == DCOLL_SUCCESS, "RANK: %s", dcoll_last_error());
    check_world(n - 1 - me, reversed, "RANK/WORLD_SIZE");

    /* SLURM's, when RANK and WORLD_SIZE are unset: the step's task count
     * wins over the job's. */
    clear();
    set("SLURM_PROCID", (me + 1) % n);
    set("SLURM_NTASKS", n + 5);
    set("SLURM_STEP_NUM_TASKS", n);
    CHECK(init("env://") == DCOLL_SUCCESS, "SLURM: %s", dcoll_last_error());
    check_world((me + 1) % n, shifted, "SLURM_PROCID/SLURM_STEP_NUM_TASKS");
    unsetenv("SLURM_STEP_NUM_TASKS");
    set("SLURM_NTASKS", n);
    CHECK(init("env://") == DCOLL_SUCCESS, "SLURM_NTASKS: %s",
          dcoll_last_error());
    check_world((me + 1) % n, shifted, "SLURM_NTASKS");

    /* The query wins over the environment, even a broken one. */
    clear();
    setenv("RANK", "bogus", 1);
    char url[96];
    snprintf(url, sizeof(url), "env://?world_size=%d&rank=%d", n, me);
    CHECK(init(url) == DCOLL_SUCCESS, "query: %s", dcoll_last_error());
    check_world(me, same, "query");

    /* Local checks, before MPI is touched. */
    const dcoll_status_t BAD = DCOLL_ERR_INVALID_ARGUMENT;
    clear();
    /* None of the variables under mpirun, as a program written for
     * torchrun is often run: MPI's ranks, as mpi://. */
    CHECK(init("env://") == DCOLL_SUCCESS, "env:// with no variables under "
          "mpirun: %s", dcoll_last_error());
    check_world(me, same, "env:// with none of the variables");
    /* Some but not all of them: refused, naming the missing one. */
    set("WORLD_SIZE", n);
    REFUSED("env://", BAD, "environment variable RANK expected, but not "
            "set (nor SLURM_PROCID)");
    unsetenv("WORLD_SIZE");
    set("RANK", 0);
    REFUSED("env://", BAD, "environment variable WORLD_SIZE expected, but "
            "not set (nor SLURM_STEP_NUM_TASKS)");
    setenv("RANK", "abc", 1);
    set("WORLD_SIZE", n);
    REFUSED("env://", BAD, "RANK='abc' is not a number");
    setenv("RANK", "", 1); /* empty is unset, as torch reads it */
    REFUSED("env://", BAD, "RANK expected, but not set");
    REFUSED("env://?rank=0&rank=0", BAD, "rank is given twice");
    REFUSED("env://?world_size=1&world_size=1", BAD,
            "world_size is given twice");
    REFUSED("env://?rnak=0", BAD, "unknown query parameter 'rnak=0'");
    REFUSED("env://?rank=x&world_size=1", BAD, "'rank=x' is not a valid rank");
    REFUSED("env://?rank=0&world_size=0", BAD, "'world_size=0' is not a "
            "valid world size");
    REFUSED("env://?rank=5&world_size=2", BAD, "rank 5 (from the URL) is "
            "not below the world size 2 (from the URL)");
    REFUSED("env://host:29500", BAD, "env:// takes no address");
    set("RANK", me);
    setenv("MASTER_PORT", "99999", 1);
    REFUSED("env://", BAD, "MASTER_PORT='99999' is not a port number");
    unsetenv("MASTER_PORT");

    /* Checks across processes: every rank gets the same verdict. */
    clear();
    set("RANK", me);
    set("WORLD_SIZE", n + 1);
    if (n > 1) {
        char want[96];
        snprintf(want, sizeof(want), "has world size %d, but the launcher "
                 "started %d processes", n + 1, n);
        REFUSED("env://", BAD, want);
        set("RANK", 0);
        set("WORLD_SIZE", n);
        REFUSED("env://", BAD, "rank 0 is claimed by MPI processes 0 and 1");
    } else {
        /* One process claiming a bigger world, alone in MPI's world:
         * the program started MPI itself (finding 1 of issue 30). */
        REFUSED("env://", DCOLL_ERR_INVALID_STATE, "WORLD_SIZE=2 says this "
                "is one of 2 processes, but the program started MPI itself");
        REFUSED(NULL, DCOLL_ERR_INVALID_STATE, "call dcoll_init before any "
                "MPI call");
        /* A batch script's own process is one, whatever SLURM_NTASKS
         * says; inside an srun step it is not. mpirun's own count (the
         * innermost launcher's) would say 1 first: set aside. */
        clear();
        char *ompi = getenv("OMPI_COMM_WORLD_SIZE"), *pmi = getenv("PMI_SIZE");
        ompi = ompi ? strdup(ompi) : NULL;
        pmi = pmi ? strdup(pmi) : NULL;
        unsetenv("OMPI_COMM_WORLD_SIZE");
        unsetenv("PMI_SIZE");
        setenv("SLURM_NTASKS", "4", 1);
        CHECK(init(NULL) == DCOLL_SUCCESS, "batch step: %s",
              dcoll_last_error());
        dcoll_finalize();
        setenv("SLURM_STEP_ID", "0", 1);
        REFUSED(NULL, DCOLL_ERR_INVALID_STATE, "SLURM_NTASKS=4 says this is "
                "one of 4 processes");
        unsetenv("SLURM_STEP_ID");
        unsetenv("SLURM_NTASKS");
        if (ompi)
            setenv("OMPI_COMM_WORLD_SIZE", ompi, 1);
        if (pmi)
            setenv("PMI_SIZE", pmi, 1);
        free(ompi);
        free(pmi);
    }

    /* local_rank: one output may be NULL, not both. */
    clear();
    CHECK(init("mpi://") == DCOLL_SUCCESS, "mpi://: %s", dcoll_last_error());
    int lr = -1;
    CHECK(dcoll_local_rank(&lr, NULL) == DCOLL_SUCCESS && lr == me,
          "local_rank alone: %d", lr);
    CHECK(dcoll_local_rank(NULL, NULL) == BAD &&
          strstr(dcoll_last_error(), "both NULL"), "local_rank(NULL, NULL)");
    dcoll_finalize();

    /* Still usable after all that. */
    clear();
    set("RANK", me);
    set("WORLD_SIZE", n);
    CHECK(init("env://") == DCOLL_SUCCESS, "final: %s", dcoll_last_error());
    check_world(me, same, "final");

    MPI_Allreduce(MPI_IN_PLACE, &t_failures, 1, MPI_INT, MPI_SUM,
                  MPI_COMM_WORLD);
    if (me == 0)
        printf("env: %d rank(s), %d failure(s)\n", n, t_failures);
    MPI_Finalize();
    return t_failures != 0;
}
