/* Library life cycle: dcoll_init, dcoll_finalize and the world group. */
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core.h"
#include "diag.h"
#include "route.h"
#include "launch.h"
#include "store.h"

enum dcoll_state dcoll_state = DCOLL_STATE_NEW;
struct dcoll_group dcoll_world;
/* Its calls end before the route; its works read no recorder. */
static struct dcoll_diag_group non_member_diag;
struct dcoll_group dcoll_non_member = {
    .magic = DCOLL_GROUP_MAGIC,
    .rank = DCOLL_NON_MEMBER,
    .size = DCOLL_NON_MEMBER,
    .backend_name = "auto",
    .host = &dcoll_mpi_backend,
    .svc = &dcoll_mpi_services,
    .diag = &non_member_diag,
};

#define INIT_KNOWN_MASK                                                     \
    (DCOLL_INIT_PARAM_URL | DCOLL_INIT_PARAM_COMM |                        \
     DCOLL_INIT_PARAM_THREAD_LEVEL | DCOLL_INIT_PARAM_BACKEND |             \
     DCOLL_INIT_PARAM_TIMEOUT | DCOLL_INIT_PARAM_COLL_TIMEOUT |           \
     DCOLL_INIT_PARAM_ON_TIMEOUT | DCOLL_INIT_PARAM_TUNING)

/* The store the world's rendezvous made, if any; it outlives MPI. */
static dcoll_store_t *world_store;
static dcoll_store_t *user_store;   /* dcoll_world_store's view of it */
static char world_scheme[32];       /* how the world met */
/* The program's MPI_Finalize ended dcoll (mpi_ending), and no
 * dcoll_finalize has come since. */
static bool ended_by_mpi;

/* The world rank a child was forked from (fork_child). */
static int forked_from = -1;

/* In a child of a ready process, at fork: its parent's communicators,
 * threads and GPU state are not its own (MPI forbids a child to use
 * them), so dcoll refuses every call there rather than hang in one (a
 * finalize joining a watchdog thread the child lacks). Only assignments:
 * a fork handler runs as a signal handler would. */
static void fork_child(void)
{
    if (dcoll_state == DCOLL_STATE_READY) {
        forked_from = dcoll_world.rank;
        dcoll_state = DCOLL_STATE_FORKED;
    }
}

dcoll_status_t dcoll_check_ready_slow(void)
{
    if (dcoll_state == DCOLL_STATE_FORKED)
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "this process is a child that fork() made of "
                           "world rank %d after dcoll_init: it shares none "
                           "of its parent's groups, MPI state or threads, "
                           "so no dcoll call works here (dcoll_finalize "
                           "included: the parent finalizes; a child that "
                           "needs dcoll execs a program that initialises "
                           "it, or is started by dcoll_spawn)", forked_from);
    if (dcoll_state == DCOLL_STATE_NEW)
        return dcoll_error(DCOLL_ERR_NOT_INITIALIZED,
                           "dcoll is not initialised: call dcoll_init first");
    if (ended_by_mpi)
        return dcoll_error(DCOLL_ERR_FINALIZED,
                           "dcoll ended with MPI: the program called "
                           "MPI_Finalize before dcoll_finalize, so no dcoll "
                           "call may follow (dcoll_finalize is accepted)");
    return dcoll_error(DCOLL_ERR_FINALIZED,
                       "dcoll has been finalized: no call may follow "
                       "dcoll_finalize but dcoll_init");
}

dcoll_status_t dcoll_world_store(dcoll_store_t **out)
{
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_world_store: store is NULL");
    *out = NULL;
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!world_store && !strcmp(world_scheme, "env"))
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_world_store: the "
                           "world was made by env:// under an MPI launcher "
                           "without MASTER_ADDR and MASTER_PORT, so it took "
                           "MPI's ranks and meets through no store; export "
                           "both to every rank (mpirun -x MASTER_ADDR -x "
                           "MASTER_PORT) for one, or make one with "
                           "dcoll_store_tcp_create");
    if (!world_store)
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_world_store: the "
                           "world was made by %s://, which meets through no "
                           "store; initialise with env:// (MASTER_ADDR and "
                           "MASTER_PORT set) or tcp:// for one, or make one "
                           "with dcoll_store_tcp_create", world_scheme);
    if (!user_store) {
        if ((st = dcoll_store_prefix_create(&user_store, "user",
                                            world_store)))
            return st;
        dcoll_store_keep(user_store);
    }
    *out = user_store;
    return DCOLL_SUCCESS;
}

/* Free the world and what it holds, ending MPI if dcoll started it. */
/* Where a launcher said ranks died: the lowest group rank of g dead. */
static int death_of(const struct dcoll_group *g, char *text, size_t cap)
{
    dcoll_deaths_poll(false);
    dcoll_keeper_check_self();
    return dcoll_deaths_first(g->ranks, g->size, text, cap);
}

/* Whether a rank of the world is known dead: then nothing may wait on
 * the world (MPI_Finalize would wait on the dead forever). */
static bool world_lost(void)
{
    if (!dcoll_death_of)
        return false;
    dcoll_deaths_poll(true);
    return dcoll_deaths_first(NULL, dcoll_world.size, NULL, 0) >= 0;
}

static dcoll_status_t world_end(bool lost)
{
    dcoll_death_of = NULL;
    dcoll_keeper_close(true);
    dcoll_deaths_close();
    dcoll_route_group_free(&dcoll_world);
    dcoll_group_stage_free(&dcoll_world);
    dcoll_fault_group_free(&dcoll_world);
    dcoll_plugins_unload();
    dcoll_status_t st = dcoll_world.svc->stop(&dcoll_world, !lost);
    dcoll_store_release(&user_store);
    dcoll_store_destroy(&world_store);
    dcoll_hosts_set(NULL, 0);
    dcoll_world.magic = DCOLL_DEAD_MAGIC;
    return st;
}

/* The program ends MPI with dcoll still up: first thing in its
 * MPI_Finalize, while MPI may still be called, dcoll ends too, as
 * dcoll_finalize would (works still in flight end with it), and makes no
 * MPI call afterwards. */
static void mpi_ending(void)
{
    if (dcoll_state != DCOLL_STATE_READY)
        return;
    bool lost = world_lost();
    dcoll_watchdog_stop();
    dcoll_groups_free_all();
    if (!lost)
        dcoll_profile_report(&dcoll_world);
    world_end(lost);
    dcoll_state = DCOLL_STATE_DONE;
    ended_by_mpi = true;
}

/* Every world rank's host name (collective), for reports of missing ranks
 * by node and a joined world's local ranks; with them each rank's pid,
 * so that rank 0's names the job's recorder files where no launcher
 * gives a job id (diag/job.c). */
struct host_rec {
    char host[DCOLL_HOST_LEN];
    int64_t pid;
};
static dcoll_status_t gather_hosts(struct dcoll_group *w, int64_t **pids)
{
    struct host_rec mine;
    memset(&mine, 0, sizeof(mine));
    dcoll_host_name(mine.host, sizeof(mine.host));
    mine.pid = (int64_t)getpid();
    char (*names)[DCOLL_HOST_LEN] = calloc((size_t)w->size, sizeof(*names));
    struct host_rec *all = calloc((size_t)w->size, sizeof(*all));
    /* A rank without the memory must not leave the rest in the gather. */
    int ok = all && names;
    dcoll_status_t st = w->svc->agree(w, &ok);
    if (!st && !ok)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory for %d "
                         "host names (here or on another rank)", w->size);
    if (!st)
        st = w->svc->allgather_bytes(w, &mine, all, sizeof(mine));
    if (st) {
        free(all);
        free(names);
        return st;
    }
    for (int r = 0; r < w->size; r++)
        memcpy(names[r], all[r].host, DCOLL_HOST_LEN - 1);
    dcoll_job_set(w->rank, w->size, names[0], (long)all[0].pid);
    /* The keeper's (DCOLL_ON_FAILURE=continue under mpirun or srun). */
    *pids = malloc(sizeof(int64_t) * (size_t)w->size);
    for (int r = 0; *pids && r < w->size; r++)
        (*pids)[r] = all[r].pid;
    free(all);
    dcoll_hosts_set(names, w->size);
    return DCOLL_SUCCESS;
}

/* Deaths said by the launcher (dcollrun's continue) or, under another
 * launcher with DCOLL_ON_FAILURE=continue, by dcoll's keeper. */
static dcoll_status_t open_deaths(struct dcoll_group *w, const int64_t *pids)
{
    if (dcoll_continue_wanted())
        dcoll_pipes_survive();   /* survivors outlive the dead's sockets */
    if (!dcoll_keeper_wanted())
        return dcoll_deaths_open(w->size, NULL);
    /* Every rank reaches here: agree that each has the pids first. */
    int ok = pids != NULL;
    dcoll_status_t st = w->svc->agree(w, &ok);
    if (!st && !ok)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory for "
                         "%d ranks' pids (here or on another rank)", w->size);
    return st ? st : dcoll_keeper_open(w, pids);
}

/* A variable that is 0 or 1 where set (its reader, elsewhere, takes
 * only 1 and would pass anything else over as unset). */
static dcoll_status_t flag_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "1"))
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: %s='%.64s' "
                       "is not 0 or 1", name, v);
}

/* After the ranks agreed on it: a DCOLL_ON_FAILURE dcoll does not know,
 * refused alike on every rank. */
static dcoll_status_t on_failure_known(void)
{
    if (dcoll_on_failure_setting() != 2)
        return DCOLL_SUCCESS;
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                       "DCOLL_ON_FAILURE = '%.64s' is neither 'continue' nor "
                       "'stop' (docs/environment.md)",
                       getenv("DCOLL_ON_FAILURE"));
}

/* Where a rendezvous meets, for reports: its URL without the query
 * (which may hold a token), or env://'s MASTER_ADDR and MASTER_PORT. */
static void rdzv_where(const char *url, const char *scheme, char *out,
                       size_t cap)
{
    if (!strcmp(scheme, "env")) {
        const char *a = getenv("MASTER_ADDR"), *pt = getenv("MASTER_PORT");
        snprintf(out, cap, "env:// (%.100s:%.16s)", a ? a : "?",
                 pt ? pt : "?");
        return;
    }
    size_t n = url ? strcspn(url, "?") : 0;
    snprintf(out, cap, "%.*s", (int)(n < 256 ? n : 256), url ? url : "");
}

/* DCOLL_INIT_TIMES=1: when each step of dcoll_init began, and rank 0
 * says how long each took, to see where init grows with the ranks. */
struct step {
    const char *name;
    double at;
};
static struct step steps[16];
static int nsteps;

static void step(const char *name)
{
    if (nsteps < (int)(sizeof(steps) / sizeof(steps[0])))
        steps[nsteps++] = (struct step){name, dcoll_now()};
}

static void say_steps(const struct dcoll_group *w)
{
    if (w->rank != 0 || nsteps < 2)
        return;
    char line[1024];
    size_t at = (size_t)snprintf(line, sizeof(line), "dcoll[0]: dcoll_init "
                                 "took %.3f ms on %d rank(s):",
                                 (steps[nsteps - 1].at - steps[0].at) * 1e3,
                                 w->size);
    for (int i = 0; i + 1 < nsteps && at < sizeof(line); i++)
        at += (size_t)snprintf(line + at, sizeof(line) - at, "%s %s %.3f",
                               i ? "," : "", steps[i].name,
                               (steps[i + 1].at - steps[i].at) * 1e3);
    fprintf(stderr, "%s\n", line);
}

/* start's timeout (a rank that never came) in abort mode, the default,
 * ends the job as a hang in a collective would: the ranks that came
 * would otherwise return to a program that cannot go on without it.
 * Every rank that came times out at once and none can tell the others,
 * so each waits ABORT_STAGGER seconds a rank below it (eight at most)
 * before it ends the job: the lowest that came does, alone. Open MPI's
 * mpirun took 7 s more to end a job whose ranks all called MPI_Abort at
 * once (its show_help "Data unpack would read past end of buffer"). */
#define ABORT_STAGGER 0.25

static dcoll_status_t absent_at_start(struct dcoll_group *w,
                                      dcoll_status_t st)
{
    if (st != DCOLL_ERR_TIMEOUT || dcoll_default_recoverable)
        return st;
    fprintf(stderr, "dcoll: %s. dcoll ends the job (DCOLL_ON_TIMEOUT=abort) "
            "with exit code %d\n", dcoll_last_error(), DCOLL_HANG_EXIT_CODE);
    fflush(stderr);
    int below = w->rank < 8 ? w->rank : 8;
    if (below > 0)
        usleep((useconds_t)(below * ABORT_STAGGER * 1e6));
    dcoll_counters_flush();   /* the abort may end us */
    w->svc->abort_job(w, DCOLL_HANG_EXIT_CODE);
    dcoll_exit_now(DCOLL_HANG_EXIT_CODE);
}

dcoll_status_t dcoll_init(const dcoll_init_params_t *params)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    if (dcoll_state == DCOLL_STATE_FORKED)
        return dcoll_check_ready_slow();
    if (dcoll_state == DCOLL_STATE_READY)
        return dcoll_error(DCOLL_ERR_ALREADY_INITIALIZED,
                           "dcoll_init: dcoll is already initialised; call "
                           "dcoll_finalize before initialising again");
    /* Before MPI's sockets and the store's (lib/base/stdfds.c). */
    dcoll_stdfds_open();
    if (params) {
        if (params->mask & ~INIT_KNOWN_MASK)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "dcoll_init: params->mask 0x%llx has bits "
                               "this library does not know (0x%llx)",
                               (unsigned long long)params->mask,
                               (unsigned long long)(params->mask &
                                                    ~INIT_KNOWN_MASK));
        p.mask = params->mask;
        if (p.mask & DCOLL_INIT_PARAM_URL)
            p.url = params->url;
        if (p.mask & DCOLL_INIT_PARAM_COMM)
            p.comm = params->comm;
        if (p.mask & DCOLL_INIT_PARAM_THREAD_LEVEL)
            p.thread_level = params->thread_level;
        if (p.mask & DCOLL_INIT_PARAM_BACKEND)
            p.backend = params->backend;
        if (p.mask & DCOLL_INIT_PARAM_TIMEOUT)
            p.timeout = params->timeout;
        if (p.mask & DCOLL_INIT_PARAM_COLL_TIMEOUT)
            p.coll_timeout = params->coll_timeout;
        if (p.mask & DCOLL_INIT_PARAM_ON_TIMEOUT)
            p.on_timeout = params->on_timeout;
        if (p.mask & DCOLL_INIT_PARAM_TUNING)
            p.tuning = params->tuning;
    }
    dcoll_status_t st = dcoll_fault_env();
    if (st || (st = dcoll_stage_env()) || (st = dcoll_ipc_env()) ||
        (st = flag_env("DCOLL_MPI_CUDA")) ||
        (st = flag_env("DCOLL_NCCL_EAGER")))
        return st;
    const char *most = getenv("DCOLL_MAX_WORKS");
    dcoll_works_most = DCOLL_WORKS_DEFAULT;
    if (most && *most) {
        char *end = NULL;
        errno = 0;
        long v = strtol(most, &end, 10);
        if (errno || *end || v < 1 || v > (1L << 30))
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                               "DCOLL_MAX_WORKS='%.64s' is not a number of "
                               "works from 1 to 1073741824", most);
        dcoll_works_most = (int)v;
    }
    const char *times = getenv("DCOLL_INIT_TIMES");
    if (times && strcmp(times, "0") && strcmp(times, "1") && times[0])
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_INIT_TIMES='%s' is not 0 or 1", times);
    nsteps = 0;
    step("checks");
    if (p.mask & DCOLL_INIT_PARAM_COLL_TIMEOUT) {
        if ((st = dcoll_fault_timeout_ok("dcoll_init", "coll_timeout",
                                         p.coll_timeout)))
            return st;
        dcoll_default_timeout = p.coll_timeout;
    }
    if (p.mask & DCOLL_INIT_PARAM_ON_TIMEOUT) {
        if ((st = dcoll_fault_mode_ok("dcoll_init", "on_timeout",
                                      p.on_timeout)))
            return st;
        dcoll_default_recoverable = p.on_timeout == DCOLL_ON_TIMEOUT_RETURN;
    }
    if (!(p.mask & DCOLL_INIT_PARAM_TIMEOUT)) {
        /* The parameter, else DCOLL_INIT_TIMEOUT, else 300 s. */
        if ((st = dcoll_env_seconds("dcoll_init", "DCOLL_INIT_TIMEOUT",
                                    300.0, &p.timeout)))
            return st;
    }
    if (!(p.timeout > 0) || p.timeout > 1e9)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_init: timeout %g s is not a positive "
                           "number of seconds", p.timeout);
    /* -1: none asked for; MPI gets multiple if dcoll starts it. */
    if (!(p.mask & DCOLL_INIT_PARAM_THREAD_LEVEL))
        p.thread_level = -1;
    else if (p.thread_level < DCOLL_THREAD_SINGLE ||
             p.thread_level > DCOLL_THREAD_MULTIPLE)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_init: thread_level %d is not a "
                           "dcoll_thread_level_t (0..3)", p.thread_level);
    if ((p.mask & DCOLL_INIT_PARAM_URL) && !p.url)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_init: url is NULL but its mask bit is set");
    const struct dcoll_comm_ops *svc = &dcoll_mpi_services;
    bool launched = svc->launched();
    const struct dcoll_backend_entry *be;
    st = dcoll_backend_lookup(
        (p.mask & DCOLL_INIT_PARAM_BACKEND) ? p.backend : "auto", &be);
    if (st)
        return st;
    struct dcoll_group w = {.magic = DCOLL_GROUP_MAGIC, .svc = svc};
    struct dcoll_rdzv rdzv = {0};
    bool join = false;
    if (launched) {
        /* MPI first, so that a rendezvous failing on some processes fails
         * on all of them instead of leaving the rest in a collective. */
        step("MPI start");
        if ((st = svc->start(p.mask & DCOLL_INIT_PARAM_COMM, p.comm,
                             p.thread_level, p.timeout, &w)))
            return absent_at_start(&w, st);
        /* Alone in MPI's world: every process fails alike, no agreement
         * needed (nor possible). */
        if ((st = svc->launcher_check())) {
            char msg[DCOLL_ERROR_MAX];
            snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
            svc->stop(&w, false);
            return dcoll_error(st, "%s", msg);
        }
        step("rendezvous");
        st = dcoll_rdzv_run(p.url, p.timeout, true, w.rank, w.size, &rdzv);
        int ok = st == DCOLL_SUCCESS;
        step("agreement");
        dcoll_status_t ast = svc->agree(&w, &ok);
        if (!st && (ast || !ok))
            st = ast ? ast : dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                                         "dcoll_init: the rendezvous failed "
                                         "on another process");
        /* The rendezvous must agree with MPI. */
        if (!st && !rdzv.mpi)
            st = svc->order_world(&w, rdzv.scheme, !rdzv.renumber,
                                  rdzv.rank, rdzv.world_size);
    } else {
        step("rendezvous");
        if ((st = dcoll_rdzv_run(p.url, p.timeout, false, -1, 0, &rdzv)))
            return st;
        join = !rdzv.mpi && rdzv.world_size > 1;
        int fcomm = 0;
        void *joined = NULL;
        char where[320];
        rdzv_where(p.url, rdzv.scheme, where, sizeof(where));
        step("join");
        if (join)
            st = dcoll_launch_join(svc, rdzv.store, rdzv.rank,
                                   rdzv.world_size, p.thread_level,
                                   p.timeout, where, &joined, &fcomm);
        step("MPI start");
        if (!st)
            st = svc->start(join, fcomm, p.thread_level, p.timeout, &w);
        /* start works on a duplicate, made or not. */
        svc->join_free(joined);
    }
    int64_t *pids = NULL;
    if (!st && (step("host names"), !(st = gather_hosts(&w, &pids))) &&
        (step("local ranks"), !(st = svc->local(&w, join))) &&
        !(st = dcoll_fault_group_init(&w, dcoll_default_timeout,
                                      dcoll_default_recoverable)) &&
        (step("settings agreed"), !(st = dcoll_fault_agree(&w, "dcoll_init",
                                                 dcoll_stage_chunk,
                                                 dcoll_on_failure_setting())))
        && !(st = on_failure_known()) &&
        (step("tuning table"),
            !(st = svc->tuning(&w, p.mask & DCOLL_INIT_PARAM_TUNING,
                               p.tuning))) &&
        (step("deaths"), !(st = open_deaths(&w, pids)))) {
        w.id = 0;
        dcoll_groups_made = 0;
        step("CUDA plugin");
        dcoll_plugins_load(&w);
        if (dcoll_debug && dcoll_gpu_choice()[0])
            fprintf(stderr, "dcoll: rank %d (%s): %s\n", w.rank,
                    dcoll_host_of(w.rank), dcoll_gpu_choice());
        /* The backend last: "nccl" needs the plugin, a program's backend
         * the world's communicator. */
        step("backend");
        if ((st = dcoll_backend_attach(&w, be, "dcoll_init")))
            dcoll_plugins_unload();
        /* Then, where every rank asks for it, the world's NCCL
         * communicator, for groups to split from. */
        else if ((step("NCCL (DCOLL_NCCL_EAGER)"),
                  st = dcoll_nccl_eager(&w))) {
            dcoll_nccl_backend.group_free(&w);
            dcoll_plugins_unload();
        }
    }
    free(pids);
    if (st) {
        /* Undo everything, keeping the first failure's message. */
        char msg[DCOLL_ERROR_MAX];
        snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
        dcoll_keeper_close(true);
        dcoll_deaths_close();
        dcoll_fault_group_free(&w);
        dcoll_hosts_set(NULL, 0);
        svc->stop(&w, false);
        if (join)
            svc->join_stop();
        dcoll_store_destroy(&rdzv.store);
        return dcoll_error(st, "%s", msg);
    }
    world_store = rdzv.store;
    snprintf(world_scheme, sizeof(world_scheme), "%s",
             rdzv.scheme[0] ? rdzv.scheme : "mpi");
    dcoll_world = w;
    if (dcoll_deaths_poll(true))
        dcoll_death_of = death_of;
    step("watchdog");
    dcoll_watch_hook = dcoll_route_watch;
    dcoll_gpu_hook = dcoll_route_on_gpu;
    if ((st = dcoll_watchdog_start(&dcoll_world)) ||
        (st = dcoll_watchdog_add(&dcoll_world))) {
        char msg[DCOLL_ERROR_MAX];
        snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
        dcoll_watchdog_stop();
        world_end(false);
        return dcoll_error(st, "%s", msg);
    }
    dcoll_state = DCOLL_STATE_READY;
    ended_by_mpi = false;
    static bool fork_watched;
    if (!fork_watched)
        fork_watched = pthread_atfork(NULL, NULL, fork_child) == 0;
    dcoll_profile_start();
    dcoll_world.svc->at_mpi_end(mpi_ending);
    step("end");
    if (times && !strcmp(times, "1"))
        say_steps(&dcoll_world);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_finalize(void)
{
    if (dcoll_state == DCOLL_STATE_DONE && ended_by_mpi) {
        ended_by_mpi = false;   /* MPI_Finalize did it already */
        return DCOLL_SUCCESS;
    }
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    int inflight = atomic_load(&dcoll_work_inflight);
    if (inflight > 0)
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "dcoll_finalize: %d operation(s) still in flight; "
                           "wait for their work handles first", inflight);
    /* dcoll's own MPI_Finalize (in world_end) must not end it twice. */
    dcoll_world.svc->at_mpi_end(NULL);
    bool lost = world_lost();
    dcoll_watchdog_stop();
    dcoll_groups_free_all();
    /* Collective over the world, as finalize is; a failure is said but
     * does not keep dcoll from ending. With a rank dead, neither the
     * profile's reduction nor MPI_Finalize: both would wait for it. */
    if (!lost && dcoll_profile_report(&dcoll_world))
        fprintf(stderr, "dcoll[%d]: the profile: %s\n", dcoll_world.rank,
                dcoll_last_error());
    st = world_end(lost);
    dcoll_state = DCOLL_STATE_DONE;
    return st;
}

dcoll_status_t dcoll_local_rank(int *local_rank, int *local_size)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!local_rank && !local_size)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_local_rank: local_rank and local_size "
                           "are both NULL");
    if (local_rank)
        *local_rank = dcoll_world.local_rank;
    if (local_size)
        *local_size = dcoll_world.local_size;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_initialized(int *flag)
{
    if (!flag)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_initialized: flag is NULL");
    *flag = dcoll_state == DCOLL_STATE_READY;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_abort(int code, const char *reason)
{
    bool ready = dcoll_state == DCOLL_STATE_READY;
    if (reason)
        fprintf(stderr, "dcoll: rank %d ends the job with code %d: %s\n",
                ready ? dcoll_world.rank : -1, code, reason);
    fflush(NULL);
    dcoll_counters_flush();   /* the abort may end us */
    if (ready)
        dcoll_world.svc->abort_job(&dcoll_world, code);
    /* Not started, finished, or MPI did not end us: this process alone. */
    dcoll_exit_now(code & 255);
}

dcoll_status_t dcoll_dump(void)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if ((st = dcoll_trace_dump("dcoll_dump")))
        return dcoll_error(st, "dcoll_dump: %s", dcoll_last_error());
    return DCOLL_SUCCESS;
}

double dcoll_wtime(void)
{
    return dcoll_now();
}

/* The launch layer reaches MPI only through the table given here. */
dcoll_status_t dcoll_spawn(dcoll_spawn_fn fn, void *arg, int nprocs,
                           const dcoll_spawn_params_t *params,
                           dcoll_spawn_failure_t *failure)
{
    /* Before its pipes and store: what the launcher's children inherit
     * on fds 0-2 then is open too. */
    dcoll_stdfds_open();
    return dcoll_launch_spawn(&dcoll_mpi_services, fn, arg, nprocs, params,
                              failure);
}
