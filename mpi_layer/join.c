/* The MPI half of joining processes that no launcher started (the store
 * half, which orders the turns, is lib/launch/join.c). Each starts MPI
 * alone (a singleton); they then connect one at a time to a port rank 0
 * opens, merging into one communicator. OpenMPI 4 singletons can connect
 * only through an ompi-server, which rank 0 runs for the job's lifetime
 * and whose address every process sets in OMPI_MCA_pmix_server_uri before
 * MPI_Init. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
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

dcoll_status_t dcoll_mpi_join_server(double timeout, char *uri, size_t cap)
{
#ifdef OPEN_MPI
    /* OpenMPI 4 singletons reach each other only through ompi-server. */
    dcoll_status_t st = server_start(timeout, uri, cap);
    if (st)
        dcoll_mpi_join_stop();
    return st;
#else
    /* MPICH's singletons need nothing. */
    (void)timeout;
    if (cap)
        uri[0] = '\0';
    return DCOLL_SUCCESS;
#endif
}

dcoll_status_t dcoll_mpi_join_use(const char *uri)
{
    if (uri[0] && setenv("OMPI_MCA_pmix_server_uri", uri, 1))
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: cannot set "
                           "OMPI_MCA_pmix_server_uri: %s", strerror(errno));
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_join_begin(int thread_level, void **self)
{
    dcoll_status_t st;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && (st = dcoll_mpi_init(thread_level)))
        return st;
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 1)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "dcoll_init: MPI started "
                           "%d processes, but no launcher was seen", n);
    MPI_Comm *c = malloc(sizeof(*c));
    if (!c)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory");
    int rc = MPI_Comm_dup(MPI_COMM_SELF, c);
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
