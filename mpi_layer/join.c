/* The MPI half of joining processes that no launcher started (the store
 * half, which orders the turns, is lib/launch/join.c).
 *
 * OpenMPI: each starts MPI alone (a singleton); they then connect one at
 * a time to a port rank 0 opens, merging into one communicator. OpenMPI 4
 * singletons can connect only through an ompi-server, which rank 0 runs
 * for the job's lifetime and whose address every process sets in
 * OMPI_MCA_pmix_server_uri before MPI_Init.
 *
 * MPICH: rank 0 serves PMI-1 (pmi_server.c) as hydra would, and every
 * process starts MPI as rank of size through it: MPI_COMM_WORLD is the
 * joined world. */
#include <errno.h>
#include <limits.h>
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "mpi_internal.h"

static pid_t server_pid = -1;
static char uri_path[256];

bool dcoll_mpi_launched(void)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited)
        return true;
    /* OpenMPI's mpirun, PMIx (also srun --mpi=pmix), and MPICH's hydra. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                       "PMI_RANK", "PMI_SIZE", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

/* How many processes the launcher that started this one says it started,
 * and which variable says so; 0 where none does. srun's counts hold only
 * inside a step (SLURM_STEP_ID): a batch script's own process is one. */
static long launcher_count(const char **var)
{
    static const struct { const char *name; bool step; } vars[] = {
        {"WORLD_SIZE", false},          /* dcollrun, torchrun */
        {"OMPI_COMM_WORLD_SIZE", false},/* Open MPI's mpirun */
        {"PMI_SIZE", false},            /* MPICH's hydra, PMI launchers */
        {"SLURM_STEP_NUM_TASKS", true},
        {"SLURM_NTASKS", true},
        {"SLURM_NPROCS", true},
    };
    const char *step = getenv("SLURM_STEP_ID");
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i].name);
        char *end;
        if (!v || !*v || (vars[i].step && (!step || !*step)))
            continue;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < 1)
            continue;
        *var = vars[i].name;
        return n;
    }
    return 0;
}

dcoll_status_t dcoll_mpi_launcher_check(void)
{
    int n = 0;
    const char *var = NULL;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long want = n == 1 ? launcher_count(&var) : 0;
    if (want <= 1)
        return DCOLL_SUCCESS;
    if (!dcoll_mpi_started_here())
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "dcoll_init: %s=%ld says "
                           "this is one of %ld processes, but the program "
                           "started MPI itself before dcoll_init and MPI's "
                           "world is this process alone: each process would "
                           "run the job by itself. MPI cannot join processes "
                           "into MPI_COMM_WORLD after MPI_Init. Start the job "
                           "with mpirun -n %ld (or srun), or, under dcollrun "
                           "or torchrun, call dcoll_init before any MPI call "
                           "so that it starts MPI and joins the %ld", var,
                           want, want, want, want);
    const char *plugin = getenv("SLURM_MPI_TYPE");
    if (!strncmp(var, "SLURM_", 6))
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "dcoll_init: srun started "
                           "%ld tasks (%s=%ld), but MPI made this one a world "
                           "of its own: this MPI did not understand srun's "
                           "--mpi plugin (%s). Use one it speaks (srun "
                           "--mpi=list; Open MPI: --mpi=pmix; MPICH: "
                           "--mpi=pmi2), or run dcollrun as one task per node",
                           want, var, want, plugin ? plugin : "none given");
    return dcoll_error(DCOLL_ERR_INVALID_STATE, "dcoll_init: %s=%ld says this "
                       "is one of %ld processes, but MPI made it a world of "
                       "its own: the launcher and this MPI library do not "
                       "match (a program built with one MPI, started by "
                       "another's mpirun?). Start it with the mpirun of the "
                       "MPI dcoll was built with (dcoll-info names it)",
                       var, want, want);
}

void dcoll_mpi_join_release(void)
{
#ifdef OPEN_MPI
    dcoll_mpi_join_stop();
#else
    /* The PMI server leaves once every process has hung up, this one
     * at its exit: the others may still be finalizing through it. */
    server_pid = -1;
#endif
}

void dcoll_mpi_join_stop(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGTERM);
        waitpid(server_pid, NULL, 0);
        server_pid = -1;
    }
    if (uri_path[0]) {
        unlink(uri_path);
        uri_path[0] = '\0';
    }
}

#ifdef OPEN_MPI
/* Start ompi-server and read the address it writes. */
static dcoll_status_t server_start(double timeout, char *uri, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(uri_path, sizeof(uri_path), "%s/dcoll-ompi-server-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(uri_path);
    if (fd < 0) {
        uri_path[0] = '\0';
        return dcoll_error(DCOLL_ERR_IO, "dcoll_init: cannot make a file for "
                           "ompi-server's address: %s", strerror(errno));
    }
    close(fd);
    pid_t parent = getpid();
    server_pid = fork();
    if (server_pid < 0)
        return dcoll_error(DCOLL_ERR_IO, "dcoll_init: fork for ompi-server: "
                           "%s", strerror(errno));
    if (server_pid == 0) {
        /* It goes when rank 0 goes, however rank 0 ends. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            dcoll_exit_now(1);
        execlp("ompi-server", "ompi-server", "--no-daemonize", "-r",
               uri_path, (char *)NULL);
        dcoll_exit_now(127);
    }
    double deadline = dcoll_now() + timeout;
    for (;;) {
        int status;
        if (waitpid(server_pid, &status, WNOHANG) == server_pid) {
            server_pid = -1;
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_init: processes "
                               "without an MPI launcher need OpenMPI's "
                               "ompi-server, which %s (exit status %d; as "
                               "root it needs OMPI_ALLOW_RUN_AS_ROOT=1 and "
                               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)",
                               code == 127 ? "is not in PATH" : "failed",
                               code);
        }
        FILE *f = fopen(uri_path, "r");
        if (f) {
            bool whole = fgets(uri, (int)cap, f) && strchr(uri, '\n');
            fclose(f);
            if (whole) {
                uri[strcspn(uri, "\n")] = '\0';
                return DCOLL_SUCCESS;
            }
        }
        if (dcoll_now() > deadline)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_init: ompi-server "
                               "gave no address within %g s", timeout);
        usleep(10000);
    }
}

#endif

#ifndef OPEN_MPI
/* PMI_process_mapping as hydra writes it: "(vector,(node,1,run),...)", a
 * run of consecutive ranks per block, nodes numbered as first seen. NULL
 * (MPICH then asks each process) when it would pass PMI's value size. */
static char *process_mapping(int size, const char *const *hosts)
{
    size_t cap = 1000, len;
    char *m = malloc(cap);
    int *node = malloc((size_t)size * sizeof(*node)), nodes = 0;
    if (!m || !node) {
        free(m);
        free(node);
        return NULL;
    }
    for (int r = 0; r < size; r++) {
        int q = 0;
        while (q < r && strcmp(hosts[q], hosts[r]))
            q++;
        node[r] = q < r ? node[q] : nodes++;
    }
    len = (size_t)snprintf(m, cap, "(vector");
    for (int r = 0, run; r < size; r += run) {
        for (run = 1; r + run < size && node[r + run] == node[r]; run++)
            ;
        len += (size_t)snprintf(m + len, len < cap ? cap - len : 0,
                                ",(%d,1,%d)", node[r], run);
    }
    len += (size_t)snprintf(m + len, len < cap ? cap - len : 0, ")");
    free(node);
    if (len >= cap) {
        free(m);
        return NULL;
    }
    return m;
}

/* The IPv4 address the others reach rank 0 at: loopback when all share
 * its host, else MASTER_ADDR (torch's name for rank 0's address), else
 * the first address of an interface that is up and not loopback. */
static dcoll_status_t pmi_addr(int size, const char *const *hosts,
                               char *out, size_t cap)
{
    bool alone = true;
    for (int r = 1; r < size; r++)
        alone = alone && !strcmp(hosts[r], hosts[0]);
    if (alone) {
        snprintf(out, cap, "127.0.0.1");
        return DCOLL_SUCCESS;
    }
    const char *m = getenv("MASTER_ADDR");
    struct addrinfo hint = {.ai_family = AF_INET}, *res = NULL;
    if (m && *m && !getaddrinfo(m, NULL, &hint, &res) && res) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr,
                  out, (socklen_t)cap);
        freeaddrinfo(res);
        return DCOLL_SUCCESS;
    }
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) == 0)
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
                (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK)) {
                inet_ntop(AF_INET,
                          &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
                          out, (socklen_t)cap);
                freeifaddrs(ifs);
                return DCOLL_SUCCESS;
            }
    if (ifs)
        freeifaddrs(ifs);
    return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_init: the processes "
                       "are on %s and other hosts, but rank 0 has no "
                       "network address for them to reach (set "
                       "MASTER_ADDR)", hosts[0]);
}
#endif

dcoll_status_t dcoll_mpi_join_server(double timeout, int size,
                                     const char *const *hosts, char *uri,
                                     size_t cap)
{
#ifdef OPEN_MPI
    /* OpenMPI 4 singletons reach each other only through ompi-server. */
    (void)size, (void)hosts;
    dcoll_status_t st = server_start(timeout, uri, cap);
    if (st)
        dcoll_mpi_join_stop();
    return st;
#else
    char addr[64], hostport[128];
    int base = 0;
    dcoll_status_t st = pmi_addr(size, hosts, addr, sizeof(addr));
    if (st)
        return st;
    /* The forked server has its own copy. */
    char *mapping = process_mapping(size, hosts);
    st = dcoll_pmi_serve(addr, size, mapping, timeout, &server_pid, hostport,
                         sizeof(hostport), &base);
    free(mapping);
    if (st)
        return st;
    /* The IDs' base goes where the address goes: into the join's store,
     * which its token guards where it has one. */
    if ((size_t)snprintf(uri, cap, "pmi:%s/%d", hostport, base) >= cap) {
        dcoll_mpi_join_stop();
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: PMI address "
                           "'%s' too long", hostport);
    }
    return DCOLL_SUCCESS;
#endif
}

static dcoll_status_t set_var(const char *name, const char *v)
{
    if (setenv(name, v, 1))
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: cannot set "
                           "%s: %s", name, strerror(errno));
    return DCOLL_SUCCESS;
}

static const char *const pmi_vars[] = {"PMI_PORT", "PMI_RANK", "PMI_SIZE",
                                       "PMI_ID", NULL};

#ifdef OPEN_MPI
/* OpenMPI 4 singletons that start at the same instant on one host race to
 * make their session directory, <tmp>/ompi.<host>.<uid>, and the loser's
 * MPI_Init fails ("mkdir ... File exists"): make it before either does.
 * The name is OpenMPI's (orte/util/session_dir.c): the host name up to
 * its first dot, under orte_tmpdir_base or TMPDIR, TEMP, TMP, /tmp. */
static void session_dir(void)
{
    static const char *const vars[] = {"OMPI_MCA_orte_tmpdir_base",
                                       "TMPDIR", "TEMP", "TMP", NULL};
    const char *base = "/tmp";
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            base = v;
            break;
        }
    }
    char host[256] = "", path[1024];
    if (gethostname(host, sizeof(host) - 1))
        return;
    if (strspn(host, "0123456789.") != strlen(host))
        host[strcspn(host, ".")] = '\0';
    snprintf(path, sizeof(path), "%s/ompi.%s.%lu", base, host,
             (unsigned long)getuid());
    mkdir(path, 0700);
}
#endif

dcoll_status_t dcoll_mpi_join_use(const char *uri, int rank, int size)
{
    if (!strncmp(uri, "pmi:", 4)) {
        /* "pmi:host:port/base": this process's ID is base + rank. */
        char port[128], r[16], n[16], id[16];
        const char *slash = strrchr(uri, '/');
        long base = slash ? strtol(slash + 1, NULL, 10) : -1;
        if (!slash || base < 0 || base > INT_MAX - size ||
            (size_t)(slash - uri - 4) >= sizeof(port))
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                               "the join's PMI server address '%s' is not "
                               "host:port/id", uri + 4);
        snprintf(port, sizeof(port), "%.*s", (int)(slash - uri - 4),
                 uri + 4);
        snprintf(r, sizeof(r), "%d", rank);
        snprintf(n, sizeof(n), "%d", size);
        snprintf(id, sizeof(id), "%ld", base + rank);
        dcoll_status_t st;
        if ((st = set_var(pmi_vars[0], port)) ||
            (st = set_var(pmi_vars[1], r)) ||
            (st = set_var(pmi_vars[2], n)) || (st = set_var(pmi_vars[3], id)))
            return st;
        unsetenv("PMI_FD");
        return DCOLL_SUCCESS;
    }
#ifdef OPEN_MPI
    session_dir();
#endif
    return uri[0] ? set_var("OMPI_MCA_pmix_server_uri", uri)
                  : DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_join_begin(int thread_level, int size,
                                    void **self, bool *whole)
{
    dcoll_status_t st = DCOLL_SUCCESS;
    int inited = 0;
    MPI_Initialized(&inited);
#ifdef OPEN_MPI
    /* Inside an srun step (srun --mpi=none, or dcollrun under srun), Open
     * MPI 4 takes a singleton with SLURM_NODELIST for a task srun started
     * without PMI, and refuses to start. This process is no task of
     * srun's MPI: hide the variable while MPI starts, then put it back. */
    char *nodelist = getenv("SLURM_NODELIST");
    if (nodelist && getenv("SLURM_STEP_ID")) {
        nodelist = strdup(nodelist);
        unsetenv("SLURM_NODELIST");
    } else {
        nodelist = NULL;
    }
#endif
    if (!inited)
        st = dcoll_mpi_init(thread_level);
#ifdef OPEN_MPI
    if (nodelist)
        setenv("SLURM_NODELIST", nodelist, 1);
    free(nodelist);
#endif
    /* Read at MPI_Init only; the processes this one starts must not think
     * a launcher started them. */
    for (int i = 0; pmi_vars[i]; i++)
        unsetenv(pmi_vars[i]);
    if (st)
        return st;
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    *whole = n == size && n > 1;
    if (n != 1 && !*whole)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "dcoll_init: MPI started "
                           "%d processes, but no launcher was seen", n);
    MPI_Comm *c = malloc(sizeof(*c));
    if (!c)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory");
    int rc = MPI_Comm_dup(*whole ? MPI_COMM_WORLD : MPI_COMM_SELF, c);
    if (rc != MPI_SUCCESS) {
        free(c);
        return dcoll_mpi_error(rc, "MPI_Comm_dup (join)");
    }
    MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
    *self = c;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_join_open(char *port, size_t cap)
{
    char name[MPI_MAX_PORT_NAME + 1];
    int rc = MPI_Open_port(MPI_INFO_NULL, name);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Open_port");
    if (strlen(name) >= cap) {
        MPI_Close_port(name);
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: MPI's port name "
                           "is longer than %zu bytes", cap - 1);
    }
    strcpy(port, name);
    return DCOLL_SUCCESS;
}

/* Replace *comm by the merge of inter, which then goes. */
static dcoll_status_t merge(MPI_Comm inter, bool high, void **comm)
{
    MPI_Comm merged, *c = *comm;
    int rc = MPI_Intercomm_merge(inter, high, &merged);
    MPI_Comm_free(&inter);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Intercomm_merge");
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    MPI_Comm_free(c);
    *c = merged;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_join_connect(const char *port, void **comm)
{
    MPI_Comm inter;
    int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_connect");
    return merge(inter, true, comm);
}

dcoll_status_t dcoll_mpi_join_accept(const char *port, void **comm)
{
    MPI_Comm inter;
    int rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, *(MPI_Comm *)*comm,
                             &inter);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_accept");
    return merge(inter, false, comm);
}

dcoll_status_t dcoll_mpi_join_end(const char *port, void *comm, int rank,
                                  int size, int *fcomm)
{
    if (port && port[0])
        MPI_Close_port(port);
    if (!comm)
        return DCOLL_SUCCESS;
    MPI_Comm c = *(MPI_Comm *)comm;
    int r = -1, n = 0;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    if (r != rank || n != size)
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: joined as rank "
                           "%d of %d, expected %d of %d", r, n, rank, size);
    *fcomm = (int)MPI_Comm_c2f(c);
    return DCOLL_SUCCESS;
}

void dcoll_mpi_join_free(void *comm)
{
    MPI_Comm *c = comm;
    if (!c)
        return;
    MPI_Comm_free(c);
    free(c);
}
