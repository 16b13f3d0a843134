/* Rendezvous without MPI: every refusal of the URL handlers, the scheme
 * registry, tcp:// and file:// rendezvous of one process, and the backend
 * registry's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "dcoll/dcoll.h"
#include "freeport.h"

#define OK(call) assert_int_equal((call), DCOLL_SUCCESS)

static void refused(const char *url, dcoll_status_t want, const char *text)
{
    dcoll_store_t *s = NULL;
    int rank = 7, size = 7;
    dcoll_status_t st = dcoll_rendezvous(url, 2, &s, &rank, &size);
    if (st != want || !strstr(dcoll_last_error(), text))
        fail_msg("%s -> %s '%s', want %s '%s'", url, dcoll_status_string(st),
                 dcoll_last_error(), dcoll_status_string(want), text);
    assert_null(s);
}

#define BAD DCOLL_ERR_INVALID_ARGUMENT

static void clear_env(void)
{
    static const char *const vars[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR",
                                       "MASTER_PORT", "SLURM_PROCID",
                                       "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS",
                                       "DCOLL_STORE_TOKEN",
                                       "TORCHELASTIC_USE_AGENT_STORE",
                                       "TORCHELASTIC_RESTART_COUNT"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

static void url_refusals(void **state)
{
    (void)state;
    clear_env();
    refused("nourl", BAD, "'nourl' has no scheme");
    refused("://x", BAD, "has no scheme");
    refused("1tcp://x", BAD, "has no scheme");
    refused("gloo://x", BAD, "no rendezvous handler for gloo://");
    refused("mpi://", BAD, "mpi:// meets through MPI");
    /* tcp:// */
    refused("tcp://?rank=0&world_size=1", BAD, "tcp:// rendezvous: host "
            "missing");
    refused("tcp://127.0.0.1?rank=0&world_size=1", BAD, "tcp:// rendezvous: "
            "port number missing");
    refused("tcp://127.0.0.1:0?rank=0&world_size=1", BAD, "port number "
            "missing");
    refused("tcp://127.0.0.1:99999?rank=0", BAD, "port '99999' is not a "
            "number from 0 to 65535");
    refused("tcp://127.0.0.1:29500", BAD, "rank parameter missing");
    refused("tcp://127.0.0.1:29500?world_size=2", BAD, "rank parameter "
            "missing");
    refused("tcp://127.0.0.1:29500?rank=0", BAD, "world size parameter "
            "missing");
    refused("tcp://127.0.0.1:29500?rank=0&rank=1&world_size=2", BAD,
            "rank is given twice");
    refused("tcp://127.0.0.1:29500?rank=0&world_size=2&world_size=2", BAD,
            "world_size is given twice");
    refused("tcp://127.0.0.1:29500?rank=2&world_size=2", BAD, "rank 2 (from "
            "the URL) is not below the world size 2");
    refused("tcp://127.0.0.1:29500?rank=-1&world_size=2", BAD, "'rank=-1' "
            "is not a valid rank");
    refused("tcp://127.0.0.1:29500?rank=0&world_size=0", BAD,
            "'world_size=0' is not a valid world size");
    refused("tcp://127.0.0.1:29500?rank=0&world_size=1&use_libuv=1", BAD,
            "unknown query parameter 'use_libuv=1'");
    refused("tcp://127.0.0.1:29500?rank=0&world_size=1&token=", BAD,
            "the token must have");
    refused("tcp://[::1:29500?rank=0&world_size=1", BAD, "lacks its ']'");
    /* file:// */
    refused("file://?rank=0&world_size=1", BAD, "file:// rendezvous: path "
            "missing");
    refused("file:///?rank=0&world_size=1", BAD, "path missing");
    refused("file:///tmp/x", BAD, "rank parameter missing");
    refused("file:///tmp/x?rank=0", BAD, "world size parameter missing");
    refused("file://host/tmp/x?rank=0&world_size=1", BAD, "names a host");
    refused("file:///tmp/x?rank=0&world_size=1&token=t", BAD, "takes no "
            "token");
    refused("file:///nonexistent/dir/x?rank=0&world_size=1", DCOLL_ERR_IO,
            "/nonexistent/dir/x");
    /* env:// */
    refused("env://", BAD, "env:// rendezvous: environment variable RANK "
            "expected, but not set");
    setenv("RANK", "0", 1);
    refused("env://", BAD, "environment variable WORLD_SIZE expected, but "
            "not set");
    setenv("WORLD_SIZE", "2", 1);
    refused("env://", BAD, "environment variable MASTER_ADDR expected, but "
            "not set");
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    refused("env://", BAD, "environment variable MASTER_PORT expected, but "
            "not set");
    setenv("MASTER_PORT", "port", 1);
    refused("env://", BAD, "MASTER_PORT='port' is not a port number");
    setenv("RANK", "x", 1);
    refused("env://", BAD, "RANK='x' is not a number");
    setenv("RANK", "3", 1);
    refused("env://", BAD, "rank 3 (from RANK) is not below the world size "
            "2 (from WORLD_SIZE)");
    refused("env://host:1", BAD, "env:// takes no address");
    clear_env();
    /* Arguments. */
    dcoll_store_t *s;
    int r, n;
    assert_int_equal(dcoll_rendezvous(NULL, 1, &s, &r, &n), BAD);
    assert_int_equal(dcoll_rendezvous("env://", 1, NULL, &r, &n), BAD);
    assert_int_equal(dcoll_rendezvous("env://", 1, &s, &r, NULL), BAD);
}

/* One process meets itself: a store comes back and works. */
static void one_process(void **state)
{
    (void)state;
    clear_env();
    dcoll_store_t *s = NULL;
    int rank = -1, size = -1;
    /* Port 0 would give every rank its own server: refused. */
    assert_int_equal(dcoll_rendezvous("tcp://127.0.0.1:0?rank=0&world_size=1",
                                      5, &s, &rank, &size), BAD);
    char path[] = "/tmp/dcoll-rdzv-XXXXXX", url[128];
    close(mkstemp(path));
    unlink(path);
    snprintf(url, sizeof(url), "file://%s?world_size=1&rank=0", path);
    OK(dcoll_rendezvous(url, 5, &s, &rank, &size));
    assert_int_equal(rank, 0);
    assert_int_equal(size, 1);
    OK(dcoll_store_set(s, "k", "v", 1));
    OK(dcoll_store_destroy(&s));
    assert_int_equal(access(path, F_OK), -1);
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    char free[16];
    int want = t_free_port();
    snprintf(free, sizeof(free), "%d", want);
    setenv("MASTER_PORT", free, 1);
    OK(dcoll_rendezvous("env://", 5, &s, &rank, &size));
    int port = 0;
    OK(dcoll_store_port(s, &port));
    assert_int_equal(port, want);
    OK(dcoll_store_destroy(&s));
    /* The query wins over the environment. */
    setenv("RANK", "junk", 1);
    OK(dcoll_rendezvous("env://?rank=0", 5, &s, &rank, &size));
    OK(dcoll_store_destroy(&s));
    clear_env();
}

static char *seen_url;

static dcoll_status_t my_handler(void *arg, const char *url, double timeout,
                                 dcoll_store_t **store, int *rank,
                                 int *world_size, const char **why)
{
    (void)timeout;
    free(seen_url);
    seen_url = strdup(url);
    if (strstr(url, "fail")) {
        *why = "the handler was told to fail";
        return DCOLL_ERR_TIMEOUT;
    }
    if (strstr(url, "lie")) {
        *rank = 3;
        *world_size = 2;
        return dcoll_store_file_create(store, (const char *)arg, NULL);
    }
    *rank = 0;
    *world_size = 1;
    return dcoll_store_file_create(store, (const char *)arg, NULL);
}

static void registry(void **state)
{
    (void)state;
    char path[] = "/tmp/dcoll-reg-XXXXXX";
    close(mkstemp(path));
    unlink(path);
    OK(dcoll_register_rendezvous("mine+v1", my_handler, path));
    assert_int_equal(dcoll_register_rendezvous("MINE+V1", my_handler, NULL),
                     BAD);
    assert_non_null(strstr(dcoll_last_error(), "mine+v1:// is registered "
                                                "already"));
    static const char *const builtin[] = {"env", "tcp", "file", "mpi"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dcoll_register_rendezvous(builtin[i], my_handler,
                                                   NULL), BAD);
        assert_non_null(strstr(dcoll_last_error(), "registered already"));
    }
    assert_int_equal(dcoll_register_rendezvous("a b", my_handler, NULL), BAD);
    assert_int_equal(dcoll_register_rendezvous("9x", my_handler, NULL), BAD);
    assert_int_equal(dcoll_register_rendezvous(NULL, my_handler, NULL), BAD);
    assert_int_equal(dcoll_register_rendezvous("x", NULL, NULL), BAD);
    dcoll_store_t *s;
    int r, n;
    OK(dcoll_rendezvous("Mine+v1://anything?at=all", 1, &s, &r, &n));
    assert_string_equal(seen_url, "Mine+v1://anything?at=all");
    OK(dcoll_store_destroy(&s));
    refused("mine+v1://fail", DCOLL_ERR_TIMEOUT, "mine+v1:// rendezvous: the "
            "handler was told to fail");
    refused("mine+v1://lie", DCOLL_ERR_INTERNAL, "yielded rank 3, world "
            "size 2");
    free(seen_url);
}

static dcoll_status_t b_create(void *arg, int rank, int size, int comm,
                               void **st)
{
    (void)arg, (void)rank, (void)size, (void)comm, (void)st;
    return DCOLL_SUCCESS;
}

static dcoll_status_t b_run(void *st, const dcoll_backend_call_t *c, int *s)
{
    (void)st, (void)c, (void)s;
    return DCOLL_SUCCESS;
}

static void backend_registry(void **state)
{
    (void)state;
    dcoll_backend_ops_t ops = {DCOLL_BACKEND_OPS_VERSION, b_create, b_run,
                               NULL};
    OK(dcoll_register_backend("gloo_like", &ops, NULL));
    assert_int_equal(dcoll_register_backend("GLOO_LIKE", &ops, NULL), BAD);
    assert_non_null(strstr(dcoll_last_error(), "registered already"));
    assert_int_equal(dcoll_register_backend("MPI", &ops, NULL), BAD);
    assert_int_equal(dcoll_register_backend("Nccl", &ops, NULL), BAD);
    assert_int_equal(dcoll_register_backend("auto", &ops, NULL), BAD);
    assert_int_equal(dcoll_register_backend("has space", &ops, NULL), BAD);
    assert_non_null(strstr(dcoll_last_error(), "'has space' is not a "
                                                "backend name"));
    assert_int_equal(dcoll_register_backend(NULL, &ops, NULL), BAD);
    assert_int_equal(dcoll_register_backend("x", NULL, NULL), BAD);
    ops.version = 99;
    assert_int_equal(dcoll_register_backend("v99", &ops, NULL), BAD);
    assert_non_null(strstr(dcoll_last_error(), "ops->version 99"));
    ops.version = DCOLL_BACKEND_OPS_VERSION;
    ops.run = NULL;
    assert_int_equal(dcoll_register_backend("norun", &ops, NULL), BAD);
    assert_non_null(strstr(dcoll_last_error(), "ops->run is NULL"));
}

static int spawn_fn(int rank, void *arg)
{
    (void)arg;
    const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
    if (!r || atoi(r) != rank || !w || atoi(w) != 1 || !getenv("MASTER_PORT"))
        return 9;
    return 5;
}

static void spawn_inline(void **state)
{
    (void)state;
    dcoll_spawn_failure_t f;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 1, NULL, &f),
                     DCOLL_ERR_CHILD_FAILED);
    assert_int_equal(f.rank, 0);
    assert_int_equal(f.exit_code, 5);
    assert_int_equal(f.signal, 0);
    assert_non_null(strstr(dcoll_last_error(), "process 0 exited with code "
                                                "5"));
    assert_int_equal(dcoll_spawn(NULL, NULL, 2, NULL, &f), BAD);
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 0, NULL, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "nprocs 0"));
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    p.mask = DCOLL_SPAWN_PARAM_MASTER_PORT;
    p.master_port = 0;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    p.mask = DCOLL_SPAWN_PARAM_TIMEOUT;
    p.timeout = 0;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    p.mask = 1u << 30;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    clear_env();
}

/* A spawned process writes to a socket and to a pipe whose readers are
 * gone: each write fails with EPIPE and the process goes on (a survivor
 * must not die of a peer on a lost node, or of a launcher gone). With a
 * SIGPIPE handler of the program's own (arg), the handler is kept. */
static volatile sig_atomic_t pipe_signals;

static void on_pipe(int sig)
{
    (void)sig;
    pipe_signals++;
}

static int pipe_fn(int rank, void *arg)
{
    (void)rank;
    int sv[2], pp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(pp))
        return 3;
    close(sv[1]);
    close(pp[0]);
    if (write(sv[0], "x", 1) != -1 || errno != EPIPE)
        return 4;
    if (write(pp[1], "x", 1) != -1 || errno != EPIPE)
        return 5;
    return pipe_signals == (arg ? 2 : 0) ? 0 : 6;
}

static void spawn_epipe(void **state)
{
    (void)state;
    dcoll_spawn_failure_t f;
    assert_int_equal(dcoll_spawn(pipe_fn, NULL, 2, NULL, &f), DCOLL_SUCCESS);
    struct sigaction sa = {0}, was;
    sa.sa_handler = on_pipe;
    sigaction(SIGPIPE, &sa, &was);
    assert_int_equal(dcoll_spawn(pipe_fn, &sa, 2, NULL, &f), DCOLL_SUCCESS);
    sigaction(SIGPIPE, &was, NULL);
    clear_env();
}

/* A process of node k of a two-node spawn: torchrun's variables, and the
 * agent's store for the rendezvous; rank 3 fails where arg says. */
static int node_fn(int rank, void *arg)
{
    const char *want[][2] = {
        {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"},
        {"GROUP_WORLD_SIZE", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
        {"TORCHELASTIC_RESTART_COUNT", "0"}, {"MASTER_ADDR", "127.0.0.1"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *v = getenv(want[i][0]);
        if (!v || strcmp(v, want[i][1]))
            return 20 + (int)i;
    }
    const char *r = getenv("RANK"), *l = getenv("LOCAL_RANK"),
               *g = getenv("GROUP_RANK");
    if (!r || atoi(r) != rank || !l || atoi(l) != rank % 2 || !g ||
        atoi(g) != rank / 2)
        return 30;
    /* The processes meet through node 0's store, under the agent's
     * prefix: a key one sets, every other gets. */
    dcoll_store_t *s = NULL;
    int me = -1, n = -1;
    if (dcoll_rendezvous("env://", 20, &s, &me, &n) || me != rank || n != 4)
        return 31;
    char key[16], v[16];
    size_t len = 0;
    snprintf(key, sizeof(key), "k%d", rank);
    if (dcoll_store_set(s, key, "x", 1))
        return 32;
    for (int q = 0; q < 4; q++) {
        snprintf(key, sizeof(key), "k%d", q);
        if (dcoll_store_get(s, key, v, sizeof(v), &len))
            return 33;
    }
    dcoll_store_destroy(&s);
    if (rank == 3 && arg)
        return *(int *)arg;
    if (arg)
        sleep(30);   /* until the failure on the other node stops this */
    return 0;
}

/* Both nodes of a spawn on this machine: node 1 in a child process. */
static dcoll_status_t two_nodes(int port, int nprocs1, int *code,
                                dcoll_spawn_failure_t *f, int *child_rc)
{
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    p.mask = DCOLL_SPAWN_PARAM_NODES | DCOLL_SPAWN_PARAM_MASTER_ADDR |
             DCOLL_SPAWN_PARAM_MASTER_PORT;
    p.nnodes = 2;
    p.master_addr = "127.0.0.1";
    p.master_port = port;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        p.node_rank = 1;
        dcoll_status_t st = dcoll_spawn(node_fn, code, nprocs1, &p, NULL);
        _exit(st == DCOLL_SUCCESS ? 0 : 10 + (int)st);
    }
    dcoll_status_t st = dcoll_spawn(node_fn, code, 2, &p, f);
    int status = 0;
    waitpid(pid, &status, 0);
    *child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
    return st;
}

static void spawn_nodes(void **state)
{
    (void)state;
    clear_env();
    dcoll_spawn_failure_t f;
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    p.mask = DCOLL_SPAWN_PARAM_NODES;
    p.nnodes = 0;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "nnodes 0 (must be 1 to "
                                                "4096)"));
    p.nnodes = 2;
    p.node_rank = 2;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "node_rank 2 is not a node "
                                                "of 2"));
    p.node_rank = 1;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "2 nodes need the "
                                                "master_addr and master_port"));
    p.nnodes = 4096;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 4096, &p, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "over 1048576 processes"));
    p.nnodes = 2;
    p.mask |= DCOLL_SPAWN_PARAM_MASTER_ADDR | DCOLL_SPAWN_PARAM_MASTER_PORT;
    p.master_addr = "127.0.0.1";
    p.master_port = 29999;
    setenv("DCOLL_INIT_TIMEOUT", "soon", 1);
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "DCOLL_INIT_TIMEOUT='soon'"));
    unsetenv("DCOLL_INIT_TIMEOUT");
    /* on_failure: a value of neither kind. */
    p.mask |= DCOLL_SPAWN_PARAM_ON_FAILURE;
    p.on_failure = 7;
    assert_int_equal(dcoll_spawn(spawn_fn, NULL, 2, &p, &f), BAD);
    assert_non_null(strstr(dcoll_last_error(), "on_failure 7 (must be "));
    p.mask &= ~DCOLL_SPAWN_PARAM_ON_FAILURE;

    /* An agent's store without the attempt's number is refused. */
    setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29999", 1);
    refused("env://?rank=0&world_size=1", BAD, "TORCHELASTIC_RESTART_COUNT "
            "is not set");
    setenv("TORCHELASTIC_RESTART_COUNT", "x", 1);
    refused("env://?rank=0&world_size=1", BAD, "TORCHELASTIC_RESTART_COUNT "
            "is 'x', not a count");
    clear_env();

    /* Two nodes of two: every process sees its place and the others'
     * keys; nothing fails. */
    int child = -1;
    /* A node whose partner is gone gives up in 20 s, not 300. */
    setenv("DCOLL_INIT_TIMEOUT", "20", 1);
    assert_int_equal(two_nodes(t_free_port(), 2, NULL, &f, &child),
                     DCOLL_SUCCESS);
    assert_int_equal(child, 0);
    /* Rank 3 (node 1) exits 7: node 0's processes are stopped, and node 0
     * names it. */
    int code = 7;
    assert_int_equal(two_nodes(t_free_port(), 2, &code, &f, &child),
                     DCOLL_ERR_CHILD_FAILED);
    assert_int_equal(f.rank, 3);
    assert_int_equal(f.exit_code, 7);
    assert_non_null(strstr(dcoll_last_error(), "process 3 (node 1, "));
    assert_non_null(strstr(dcoll_last_error(), "exited with code 7; every "
                                                "node's processes were "
                                                "stopped"));
    assert_int_equal(child, 10 + DCOLL_ERR_CHILD_FAILED);
    /* Nodes that start different numbers of processes: refused on both. */
    assert_int_equal(two_nodes(t_free_port(), 1, NULL, &f, &child), BAD);
    assert_non_null(strstr(dcoll_last_error(), "node 1 ("));
    assert_non_null(strstr(dcoll_last_error(), "starts 1 processes and node "
                                                "0 2: every node must start "
                                                "as many"));
    assert_int_equal(child, 10 + DCOLL_ERR_TIMEOUT);
    unsetenv("DCOLL_INIT_TIMEOUT");
    clear_env();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(url_refusals),
        cmocka_unit_test(one_process),
        cmocka_unit_test(registry),
        cmocka_unit_test(backend_registry),
        cmocka_unit_test(spawn_inline),
        cmocka_unit_test(spawn_epipe),
        cmocka_unit_test(spawn_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
