/* dcoll_spawn: local processes with a rendezvous environment, joined; the
 * first failure stops the rest. Each child leads its own process group, so
 * stopping it also stops what it started (MPI's orted, ompi-server). */
#include <errno.h>
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

#define KNOWN                                                               \
    (DCOLL_SPAWN_PARAM_MASTER_ADDR | DCOLL_SPAWN_PARAM_MASTER_PORT |        \
     DCOLL_SPAWN_PARAM_TIMEOUT)
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

static void set_env(int rank, int n, const char *addr, int port)
{
    set_int("RANK", rank);
    set_int("WORLD_SIZE", n);
    set_int("LOCAL_RANK", rank);
    set_int("LOCAL_WORLD_SIZE", n);
    setenv("MASTER_ADDR", addr, 1);
    set_int("MASTER_PORT", port);
}

static dcoll_status_t failed(dcoll_spawn_failure_t *out, int rank, int status)
{
    dcoll_spawn_failure_t f = {rank, 0, 0};
    if (WIFSIGNALED(status))
        f.signal = WTERMSIG(status);
    else
        f.exit_code = WEXITSTATUS(status);
    if (out)
        *out = f;
    if (f.signal)
        return dcoll_error(DCOLL_ERR_CHILD_FAILED, "dcoll_spawn: process %d "
                           "was killed by signal %d (%s)", rank, f.signal,
                           strsignal(f.signal));
    return dcoll_error(DCOLL_ERR_CHILD_FAILED, "dcoll_spawn: process %d "
                       "exited with code %d", rank, f.exit_code);
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

dcoll_status_t dcoll_launch_spawn(const struct dcoll_comm_ops *svc,
                                  dcoll_spawn_fn fn, void *arg, int nprocs,
                                  const dcoll_spawn_params_t *params,
                                  dcoll_spawn_failure_t *failure)
{
    static const char name[] = "dcoll_spawn";
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    if (failure)
        *failure = (dcoll_spawn_failure_t){-1, 0, 0};
    if (!fn)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: fn is NULL", name);
    if (nprocs < 1 || nprocs > 4096)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: nprocs %d (must be 1 to 4096)", name, nprocs);
    if (params) {
        if (params->mask & ~KNOWN)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: params->mask 0x%llx has unknown bits",
                               name, (unsigned long long)params->mask);
        p = *params;
    }
    if (!(p.mask & DCOLL_SPAWN_PARAM_MASTER_ADDR))
        p.master_addr = "127.0.0.1";
    if (!p.master_addr || !*p.master_addr)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: master_addr is %s", name,
                           p.master_addr ? "empty" : "NULL");
    if ((p.mask & DCOLL_SPAWN_PARAM_MASTER_PORT) &&
        (p.master_port < 1 || p.master_port > 65535))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: master_port %d is not a port (1 to 65535)",
                           name, p.master_port);
    if ((p.mask & DCOLL_SPAWN_PARAM_TIMEOUT) &&
        (!(p.timeout > 0) || p.timeout > 1e9))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: timeout %g s is not a positive number of "
                           "seconds", name, p.timeout);
    if (svc->launched())
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "%s: MPI is running or an MPI launcher started "
                           "this process; spawn before dcoll_init, from a "
                           "process started without mpirun or srun", name);
    if (!(p.mask & DCOLL_SPAWN_PARAM_MASTER_PORT) &&
        !(p.master_port = free_port(p.master_addr)))
        return dcoll_error(DCOLL_ERR_IO, "%s: found no free port on %s",
                           name, p.master_addr);

    if (nprocs == 1) {
        set_env(0, 1, p.master_addr, p.master_port);
        int code = fn(0, arg);
        return code ? failed(failure, 0, (code & 0xff) << 8)
                    : DCOLL_SUCCESS;
    }

    pid_t *pids = calloc((size_t)nprocs, sizeof(*pids));
    if (!pids)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", name);
    pid_t parent = getpid();
    fflush(NULL);   /* or children would print the parent's buffers too */
    dcoll_status_t st = DCOLL_SUCCESS;
    int running = 0;
    for (int r = 0; r < nprocs; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            st = dcoll_error(DCOLL_ERR_IO, "%s: fork for process %d: %s",
                             name, r, strerror(errno));
            break;
        }
        if (pid == 0) {
            setpgid(0, 0);
            /* If the spawning process dies, so do its children. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(1);
            set_env(r, nprocs, p.master_addr, p.master_port);
            exit(fn(r, arg) & 0xff);
        }
        setpgid(pid, pid);  /* both sides, so no kill can miss it */
        pids[r] = pid;
        running++;
    }
    double deadline = (p.mask & DCOLL_SPAWN_PARAM_TIMEOUT)
                          ? dcoll_now() + p.timeout : 0;
    while (!st && running) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            if (deadline && dcoll_now() > deadline)
                st = dcoll_error(DCOLL_ERR_TIMEOUT, "%s: the processes ran "
                                 "past the timeout of %g s and were stopped",
                                 name, p.timeout);
            else
                usleep(5000);
            continue;
        }
        for (int r = 0; r < nprocs; r++) {
            if (pids[r] != pid)
                continue;
            pids[r] = -pid;
            running--;
            if (!WIFEXITED(status) || WEXITSTATUS(status))
                st = failed(failure, r, status);
            else
                kill(-pid, SIGKILL);  /* anything it left behind */
        }
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
    return st;
}
