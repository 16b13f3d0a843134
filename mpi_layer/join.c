/* Joining processes that no MPI launcher started. Each starts MPI alone
 * (a singleton); they then connect one at a time to a port rank 0 opens,
 * merging into one communicator. OpenMPI 4 singletons can connect only
 * through an ompi-server, which rank 0 runs for the job's lifetime and
 * whose address every process sets in OMPI_MCA_pmix_server_uri before
 * MPI_Init. The store carries the address, the port and the turns. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "mpi_internal.h"
#include "dcoll/store.h"

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

void dcoll_mpi_join_end(void)
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
            _exit(1);
        execlp("ompi-server", "ompi-server", "--no-daemonize", "-r",
               uri_path, (char *)NULL);
        _exit(127);
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

static dcoll_status_t get_str(dcoll_store_t *s, const char *key, char *buf,
                              size_t cap)
{
    size_t len = 0;
    dcoll_status_t st = dcoll_store_get(s, key, buf, cap - 1, &len);
    if (!st)
        buf[len] = '\0';
    return st;
}

static dcoll_status_t set_str(dcoll_store_t *s, const char *key,
                              const char *v)
{
    return dcoll_store_set(s, key, v, strlen(v));
}

dcoll_status_t dcoll_mpi_join(dcoll_store_t *store, int rank, int size,
                              int thread_level, double timeout, int *fcomm)
{
    char uri[1024], port[MPI_MAX_PORT_NAME + 1], key[64];
    dcoll_status_t st;
#ifdef OPEN_MPI
    /* OpenMPI 4 singletons reach each other only through ompi-server;
     * MPICH's need nothing. */
    if (rank == 0) {
        st = server_start(timeout, uri, sizeof(uri));
        /* The others wait on this key: tell them either way. */
        set_str(store, "dcoll/join/server", st ? "" : uri);
        if (st)
            return st;
    } else {
        if ((st = get_str(store, "dcoll/join/server", uri, sizeof(uri))))
            return st;
        if (!uri[0])
            return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_init: rank 0 "
                               "could not start ompi-server, which "
                               "processes without an MPI launcher need");
    }
    setenv("OMPI_MCA_pmix_server_uri", uri, 1);
#endif
    if ((st = dcoll_mpi_init(thread_level)))
        return st;
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 1)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "dcoll_init: MPI started "
                           "%d processes, but no launcher was seen", n);
    MPI_Comm world, inter, merged;
    MPI_Comm_dup(MPI_COMM_SELF, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    int rc = MPI_SUCCESS;
    if (rank == 0) {
        rc = MPI_Open_port(MPI_INFO_NULL, port);
        set_str(store, "dcoll/join/port", rc ? "" : port);
        if (rc)
            return dcoll_mpi_error(rc, "MPI_Open_port");
    } else if ((st = get_str(store, "dcoll/join/port", port, sizeof(port)))) {
        return st;
    } else if (!port[0]) {
        return dcoll_error(DCOLL_ERR_MPI, "dcoll_init: rank 0 could not "
                           "open an MPI port to join at");
    }
    /* Ranks join in order, each accepted by all who joined before it. */
    int have = rank == 0 ? 1 : 0;
    if (rank > 0) {
        snprintf(key, sizeof(key), "dcoll/join/turn/%d", rank);
        char ignored[8];
        if ((st = get_str(store, key, ignored, sizeof(ignored))))
            return st;
        rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
        if (rc)
            return dcoll_mpi_error(rc, "MPI_Comm_connect");
        MPI_Intercomm_merge(inter, 1, &merged);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&world);
        world = merged;
        have = rank + 1;
    }
    for (; have < size; have++) {
        if (rank == 0) {
            snprintf(key, sizeof(key), "dcoll/join/turn/%d", have);
            if ((st = set_str(store, key, "1")))
                return st;
        }
        rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, world, &inter);
        if (rc)
            return dcoll_mpi_error(rc, "MPI_Comm_accept");
        MPI_Intercomm_merge(inter, 0, &merged);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&world);
        world = merged;
    }
    if (rank == 0)
        MPI_Close_port(port);
    int r = -1;
    MPI_Comm_rank(world, &r);
    MPI_Comm_size(world, &n);
    if (r != rank || n != size)
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: joined as rank "
                           "%d of %d, expected %d of %d", r, n, rank, size);
    *fcomm = (int)MPI_Comm_c2f(world);
    return DCOLL_SUCCESS;
}

void dcoll_mpi_join_free(int fcomm)
{
    MPI_Comm c = MPI_Comm_f2c((MPI_Fint)fcomm);
    MPI_Comm_free(&c);
}
