/* dcoll_spawn: local processes with a rendezvous environment, joined; the
 * first failure stops the rest. Each child leads its own process group, so
 * stopping it also stops what it started (MPI's orted, ompi-server). Over
 * several machines, the nodes meet and watch each other through the
 * job's store (nodes.c). */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "launch.h"
#include "store.h"

#define KNOWN                                                               \
    (DCOLL_SPAWN_PARAM_MASTER_ADDR | DCOLL_SPAWN_PARAM_MASTER_PORT |        \
     DCOLL_SPAWN_PARAM_TIMEOUT | DCOLL_SPAWN_PARAM_NODES |                 \
     DCOLL_SPAWN_PARAM_ON_FAILURE)
/* SIGUSR1 and SIGUSR2 that reach the spawning process while it waits go
 * on to every process it started, as mpirun, hydra and srun pass them
 * (DCOLL_DUMP_SIGNAL's dump), unless the program catches them itself. */
static const int forwarded[] = {SIGUSR1, SIGUSR2};
static volatile sig_atomic_t pending[2];
static void on_forwarded(int sig)
{
    pending[sig == SIGUSR2] = 1;
}

void dcoll_pipes_survive(void)
{
    struct sigaction now;
    if (sigaction(SIGPIPE, NULL, &now) == 0 &&
        !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
}

/* Catch the forwarded signals the program leaves at their default;
 * which were caught, into caught, with what was there into before. */
static void forward_begin(bool caught[2], struct sigaction before[2])
{
    for (int i = 0; i < 2; i++) {
        pending[i] = 0;
        caught[i] = false;
        if (sigaction(forwarded[i], NULL, &before[i]) ||
            before[i].sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_forwarded;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        caught[i] = sigaction(forwarded[i], &sa, NULL) == 0;
    }
}

static void forward_pass(const pid_t *pids, int n)
{
    for (int i = 0; i < 2; i++) {
        if (!pending[i])
            continue;
        pending[i] = 0;
        for (int r = 0; r < n; r++)
            if (pids[r] > 0)
                kill(pids[r], forwarded[i]);
    }
}

static void forward_end(const bool caught[2],
                        const struct sigaction before[2])
{
    for (int i = 0; i < 2; i++)
        if (caught[i])
            sigaction(forwarded[i], &before[i], NULL);
}

/* How long stopped processes get between SIGTERM and SIGKILL. */
#define GRACE 3.0

/* A port nobody listens on now, for the rank-0 store to take. */
static int free_port(const char *addr)
{
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    socklen_t len = sizeof(a);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static void set_int(const char *name, int v)
{
    char buf[16];
    snprintf(buf, sizeof(buf), "%d", v);
    setenv(name, buf, 1);
}

const char *dcoll_attempt(void)
{
    const char *n = getenv("TORCHELASTIC_RESTART_COUNT");
    return n && *n ? n : "0";
}

/* Process local of nlocal on node of nnodes: torchrun's variables, and
 * across nodes or where survivors go on (agent), the agent's store for
 * the rendezvous. With cont, survivors go on: told by this launcher
 * (one node: DCOLL_DEATHS=launcher) or, across nodes, by dcoll's keeper,
 * which rank 0 forks (a node's launcher sees only its own). */
static void set_env(int node, int nnodes, int local, int nlocal,
                    const char *addr, int port, bool agent, bool cont)
{
    if (cont && nnodes == 1)
        setenv("DCOLL_DEATHS", "launcher", 1);
    else
        unsetenv("DCOLL_DEATHS");
    set_int("RANK", node * nlocal + local);
    set_int("WORLD_SIZE", nnodes * nlocal);
    set_int("LOCAL_RANK", local);
    set_int("LOCAL_WORLD_SIZE", nlocal);
    setenv("MASTER_ADDR", addr, 1);
    set_int("MASTER_PORT", port);
    if (nnodes > 1) {
        set_int("GROUP_RANK", node);
        set_int("GROUP_WORLD_SIZE", nnodes);
    }
    if (agent) {
        setenv("TORCHELASTIC_RESTART_COUNT", dcoll_attempt(), 1);
        setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
    }
    /* More processes here than CPUs this launcher may run on: Open MPI's
     * ranks yield while they wait, as its mpirun has them do when it sees
     * oversubscription (ranks started by hand cannot tell), unless the
     * user chose. */
    cpu_set_t cpus;
    if (!getenv("OMPI_MCA_mpi_yield_when_idle") &&
        sched_getaffinity(0, sizeof(cpus), &cpus) == 0 &&
        nlocal > CPU_COUNT(&cpus))
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
    if (cont) {
        setenv("DCOLL_ON_FAILURE", "continue", 1);
        /* UCX's single-copy transport (cma) reads a peer's memory and
         * aborts the reader where the peer died mid-transfer (MPICH over
         * UCX): survivors go without it, unless the user chose. */
        if (!getenv("UCX_TLS"))
            setenv("UCX_TLS", "^cma", 1);
    }
}

/* How process rank ended, in words, for the notice the others read. */
static void ended_how(int status, char *buf, size_t cap)
{
    if (WIFSIGNALED(status))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, cap, "exited with code %d", WEXITSTATUS(status));
}

/* Process rank ended with status: *f says how, and the error why. */
static dcoll_status_t failed(dcoll_spawn_failure_t *f, int rank, int status,
                             const char *where)
{
    *f = (dcoll_spawn_failure_t){rank, 0, 0};
    if (WIFSIGNALED(status))
        f->signal = WTERMSIG(status);
    else
        f->exit_code = WEXITSTATUS(status);
    char how[160];
    ended_how(status, how, sizeof(how));
    return dcoll_error(DCOLL_ERR_CHILD_FAILED, "dcoll_spawn: process %d%s "
                       "%s%s", rank, where, f->signal ? "was " : "", how);
}

/* Stop every child's process group, politely first; reap the children. */
static void stop_all(pid_t *pids, int n)
{
    for (int i = 0; i < n; i++)
        if (pids[i] > 0)
            kill(-pids[i], SIGTERM);
    double deadline = dcoll_now() + GRACE;
    int left = 0;
    for (int i = 0; i < n; i++)
        left += pids[i] > 0;
    while (left && dcoll_now() < deadline) {
        for (int i = 0; i < n; i++)
            if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
                kill(-pids[i], SIGKILL);  /* what it started, if still up */
                pids[i] = -pids[i];
                left--;
            }
        usleep(10000);
    }
    for (int i = 0; i < n; i++)
        if (pids[i] > 0) {
            kill(-pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = -pids[i];
        }
}

/* Return only once every child's process group is empty: what they
 * started was killed, but may take a moment to go. */
static void groups_gone(const pid_t *pids, int n)
{
    double deadline = dcoll_now() + GRACE;
    for (int i = 0; i < n; i++) {
        pid_t g = pids[i] < 0 ? pids[i] : -pids[i];
        while (g && kill(g, 0) == 0 && dcoll_now() < deadline)
            usleep(5000);
    }
}

/* Every check of params, before anything starts. */
static dcoll_status_t check_params(const char *name, int nprocs,
                                   dcoll_spawn_params_t *p)
{
    if (p->mask & ~KNOWN)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: params->mask 0x%llx has unknown bits",
                           name, (unsigned long long)p->mask);
    if (!(p->mask & DCOLL_SPAWN_PARAM_ON_FAILURE))
        p->on_failure = DCOLL_ON_FAILURE_STOP;
    else if (p->on_failure != DCOLL_ON_FAILURE_STOP &&
             p->on_failure != DCOLL_ON_FAILURE_CONTINUE)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: on_failure %d "
                           "(must be DCOLL_ON_FAILURE_STOP, 0, or "
                           "DCOLL_ON_FAILURE_CONTINUE, 1)", name,
                           p->on_failure);
    if (!(p->mask & DCOLL_SPAWN_PARAM_NODES)) {
        p->nnodes = 1;
        p->node_rank = 0;
    } else if (p->nnodes < 1 || p->nnodes > 4096) {
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: nnodes %d (must "
                           "be 1 to 4096)", name, p->nnodes);
    } else if (p->node_rank < 0 || p->node_rank >= p->nnodes) {
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: node_rank %d is "
                           "not a node of %d (0 to %d)", name, p->node_rank,
                           p->nnodes, p->nnodes - 1);
    } else if ((long)p->nnodes * nprocs > (1L << 20)) {
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %d nodes of %d "
                           "processes is over 1048576 processes", name,
                           p->nnodes, nprocs);
    } else if (p->nnodes > 1 &&
               (~p->mask & (DCOLL_SPAWN_PARAM_MASTER_ADDR |
                            DCOLL_SPAWN_PARAM_MASTER_PORT))) {
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %d nodes need "
                           "the master_addr and master_port every node "
                           "meets at (node 0's address)", name, p->nnodes);
    }
    if (!(p->mask & DCOLL_SPAWN_PARAM_MASTER_ADDR))
        p->master_addr = "127.0.0.1";
    if (!p->master_addr || !*p->master_addr)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: master_addr is %s", name,
                           p->master_addr ? "empty" : "NULL");
    if ((p->mask & DCOLL_SPAWN_PARAM_MASTER_PORT) &&
        (p->master_port < 1 || p->master_port > 65535))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: master_port %d is not a port (1 to 65535)",
                           name, p->master_port);
    if ((p->mask & DCOLL_SPAWN_PARAM_TIMEOUT) &&
        (!(p->timeout > 0) || p->timeout > 1e9))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: timeout %g s is not a positive number of "
                           "seconds", name, p->timeout);
    return DCOLL_SUCCESS;
}

/* Serve the job's store at the master address (its token:
 * $DCOLL_STORE_TOKEN), seen under the attempt's prefix. */
static dcoll_status_t serve_notices(const char *name,
                                    const dcoll_spawn_params_t *p,
                                    dcoll_store_t **out)
{
    dcoll_store_params_t sp = DCOLL_STORE_PARAMS_INIT;
    sp.mask = DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_TIMEOUT;
    sp.serve = 1;
    sp.timeout = 5;
    dcoll_store_t *s = NULL;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), DCOLL_ATTEMPT_PREFIX, dcoll_attempt());
    dcoll_status_t st = dcoll_store_tcp_create(&s, p->master_addr,
                                               p->master_port, &sp);
    if (!st && (st = dcoll_store_prefix_over(out, prefix, s)))
        dcoll_store_destroy(&s);
    if (st)
        return dcoll_error(st, "%s: the job's store at %s:%d: %s", name,
                           p->master_addr, p->master_port,
                           dcoll_last_error());
    return DCOLL_SUCCESS;
}

/* How long a node may go silent before node 0 gives up on it: the
 * keeper's fence (DCOLL_FENCE, 10 s), past which its ranks are taken as
 * dead too. */
static double cont_fence(void)
{
    const char *e = getenv("DCOLL_FENCE");
    char *end;
    double v = e ? strtod(e, &end) : 0;
    return e && *e && !*end && v >= 2 && v <= 3600 ? v : 10.0;
}

/* on_failure continue: process rank ended with status; the others go
 * on, told through the store. The first failure's rank and status are
 * kept, for failed() at the end. */
static void went_on(const char *name, dcoll_store_t *notices,
                    int64_t *deaths, int rank, int status, int *first_rank,
                    int *first_status)
{
    char how[160];
    ended_how(status, how, sizeof(how));
    if (*first_rank < 0) {
        *first_rank = rank;
        *first_status = status;
    }
    /* The notice names its witness: the ranks' reports quote it. */
    char said[200];
    snprintf(said, sizeof(said), "%s, said its launcher", how);
    if (!notices)   /* across nodes: the keeper tells them */
        fprintf(stderr, "%s: process %d %s; the others go on "
                "(on_failure continue)\n", name, rank, how);
    else if (dcoll_deaths_tell(notices, deaths, rank, said))
        fprintf(stderr, "%s: process %d %s; the others go on, but could "
                "not be told: %s\n", name, rank, how, dcoll_last_error());
    else
        fprintf(stderr, "%s: process %d %s; the others go on "
                "(on_failure continue)\n", name, rank, how);
}

dcoll_status_t dcoll_launch_spawn(const struct dcoll_comm_ops *svc,
                                  dcoll_spawn_fn fn, void *arg, int nprocs,
                                  const dcoll_spawn_params_t *params,
                                  dcoll_spawn_failure_t *failure)
{
    static const char name[] = "dcoll_spawn";
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    dcoll_spawn_failure_t f = {-1, 0, 0};
    if (failure)
        *failure = f;
    if (!fn)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: fn is NULL", name);
    if (nprocs < 1 || nprocs > 4096)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: nprocs %d (must be 1 to 4096)", name, nprocs);
    /* A program built before on_failure passes a shorter struct: its
     * field is read only where the mask says it is there. */
    if (params) {
        memcpy(&p, params, offsetof(dcoll_spawn_params_t, on_failure));
        if (params->mask & DCOLL_SPAWN_PARAM_ON_FAILURE)
            p.on_failure = params->on_failure;
    }
    dcoll_status_t st = check_params(name, nprocs, &p);
    if (st)
        return st;
    if (svc->launched())
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "%s: MPI is running or an MPI launcher started "
                           "this process; spawn before dcoll_init, from a "
                           "process started without mpirun or srun", name);
    if (!(p.mask & DCOLL_SPAWN_PARAM_MASTER_PORT) &&
        !(p.master_port = free_port(p.master_addr)))
        return dcoll_error(DCOLL_ERR_IO, "%s: found no free port on %s",
                           name, p.master_addr);
    int node = p.node_rank, nnodes = p.nnodes, base = node * nprocs;
    struct dcoll_nodes nodes = {0};
    char where[300] = "";
    if (nnodes > 1) {
        double meet;
        if ((st = dcoll_env_seconds(name, "DCOLL_INIT_TIMEOUT", 300.0,
                                    &meet)) ||
            (st = dcoll_nodes_meet(&nodes, p.master_addr, p.master_port,
                                   nnodes, node, nprocs, meet)))
            return st;
        char host[256] = "";
        dcoll_host_name(host, sizeof(host));
        snprintf(where, sizeof(where), " (node %d, %s)", node, host);
    } else if (nprocs == 1) {
        set_env(0, 1, 0, 1, p.master_addr, p.master_port, false, false);
        int code = fn(0, arg);
        st = code ? failed(&f, 0, (code & 0xff) << 8, "") : DCOLL_SUCCESS;
        if (failure)
            *failure = f;
        return st;
    }

    /* Survivors go on: on one node this process serves the job's store,
     * which outlives any of them, and says there who died; across nodes
     * dcoll's keeper does (keeper.c), and no node stops another. */
    bool cont = p.on_failure == DCOLL_ON_FAILURE_CONTINUE;
    dcoll_store_t *notices = NULL;
    int64_t deaths = 0;
    if (cont && nnodes == 1 && (st = serve_notices(name, &p, &notices)))
        return st;
    pid_t *pids = calloc((size_t)nprocs, sizeof(*pids));
    if (!pids) {
        dcoll_nodes_close(&nodes);
        dcoll_store_destroy(&notices);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", name);
    }
    pid_t parent = getpid();
    fflush(NULL);   /* or children would print the parent's buffers too */
    int running = 0;
    for (int r = 0; r < nprocs; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            st = dcoll_error(DCOLL_ERR_IO, "%s: fork for process %d: %s",
                             name, base + r, strerror(errno));
            break;
        }
        if (pid == 0) {
            setpgid(0, 0);
            /* If the spawning process dies, so do its children. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                dcoll_exit_now(1);
            /* A peer on a lost node or a launcher gone must not end the
             * survivors by a write (inherited across exec). */
            dcoll_pipes_survive();
            set_env(node, nnodes, r, nprocs, p.master_addr, p.master_port,
                    nnodes > 1 || cont, cont);
            exit(fn(base + r, arg) & 0xff);
        }
        setpgid(pid, pid);  /* both sides, so no kill can miss it */
        pids[r] = pid;
        running++;
    }
    double deadline = (p.mask & DCOLL_SPAWN_PARAM_TIMEOUT)
                          ? dcoll_now() + p.timeout : 0;
    bool mine = true;   /* the failure is this node's (not another's) */
    int first_rank = -1, first_status = 0;   /* continue: the first failure */
    bool caught[2];
    struct sigaction before[2];
    forward_begin(caught, before);
    while (!st && running) {
        int status = 0;
        pid_t pid = 0;
        forward_pass(pids, nprocs);
        /* Only ours: children the program started otherwise stay its to
         * reap. */
        for (int r = 0; r < nprocs && pid <= 0; r++)
            if (pids[r] > 0)
                pid = waitpid(pids[r], &status, WNOHANG);
        if (pid <= 0) {
            if (deadline && dcoll_now() > deadline)
                st = dcoll_error(DCOLL_ERR_TIMEOUT, "%s: the processes%s "
                                 "ran past the timeout of %g s and were "
                                 "stopped", name, where, p.timeout);
            else if (nnodes > 1 && cont)
                dcoll_nodes_beat(&nodes);
            else if (nnodes > 1 && (st = dcoll_nodes_poll(&nodes, &f)))
                mine = false;
            if (!st)
                usleep(5000);
            continue;
        }
        for (int r = 0; r < nprocs; r++) {
            if (pids[r] != pid)
                continue;
            pids[r] = -pid;
            running--;
            if (WIFEXITED(status) && !WEXITSTATUS(status))
                kill(-pid, SIGKILL);  /* anything it left behind */
            else if (!cont)
                st = failed(&f, base + r, status, where);
            else
                went_on(name, notices, &deaths, base + r, status,
                        &first_rank, &first_status);
        }
    }
    forward_end(caught, before);
    /* Across nodes, every node's processes have ended here, failed or
     * not: node 0 waits for the others' (its store is theirs). */
    dcoll_status_t lost = DCOLL_SUCCESS;
    char lost_why[DCOLL_ERROR_MAX] = "";
    if (!st && cont && nnodes > 1 &&
        (lost = dcoll_nodes_ended(&nodes, cont_fence(), deadline)))
        snprintf(lost_why, sizeof(lost_why), "%s", dcoll_last_error());
    if (!st && first_rank >= 0)
        st = failed(&f, first_rank, first_status, where);
    if (!st && lost) {
        f = (dcoll_spawn_failure_t){-1, 0, 0};
        st = dcoll_error(lost, "%s", lost_why);
    }
    if (st && nnodes > 1 && mine && !cont) {
        /* The others stop on this; the message loses its "dcoll_spawn: ". */
        const char *why = dcoll_last_error();
        dcoll_nodes_fail(&nodes, &f, why + (strncmp(why, name, 11) ? 0 : 13));
    }
    if (st) {
        /* Stopping sets no error: the failure's message stays whole. */
        stop_all(pids, nprocs);
        for (int r = 0; r < nprocs; r++)
            if (pids[r] < 0)
                kill(pids[r], SIGKILL);   /* groups of those done earlier */
    }
    groups_gone(pids, nprocs);
    free(pids);
    if (notices) {
        char msg[DCOLL_ERROR_MAX];
        snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
        dcoll_store_destroy(&notices);
        if (st)
            dcoll_error(st, "%s", msg);
    }
    if (!st && nnodes > 1 && !cont)
        st = dcoll_nodes_done(&nodes, deadline, &f);
    if (nnodes > 1) {
        char msg[DCOLL_ERROR_MAX];
        snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
        dcoll_nodes_close(&nodes);
        if (st)
            dcoll_error(st, "%s", msg);
    }
    if (failure)
        *failure = f;
    return st;
}
