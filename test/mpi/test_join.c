/* Processes that no launcher started meet by URL and work as one MPI
 * world; the same body also runs under mpirun.
 *   test_join spawn env|tcp|file N   dcoll_spawn N processes that meet
 *   test_join child env              one process of dcollrun's job
 *   test_join mpirun                 under mpirun: mpi://, env://, tcp://
 *   test_join fail | signal          a process fails: spawn reports it,
 *                                    and nothing is left running
 *   test_join refused                the join succeeds, then dcoll_init
 *                                    fails: nothing it started is left */
#include <dirent.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include "dcoll/dcoll.h"
#include "capture.h"
#include "freeport.h"
#include "procs.h"
#include "check.h"

int t_rank, t_failures;

static char file_path[256];

/* The URL each scheme is reached by, for process rank. */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void url_of(const char *scheme, int rank, int n, char *url, size_t cap)
{
    if (!strcmp(scheme, "tcp"))
        snprintf(url, cap, "tcp://127.0.0.1:%s?rank=%d&world_size=%d",
                 getenv("MASTER_PORT"), rank, n);
    else if (!strcmp(scheme, "file"))
        snprintf(url, cap, "file://%s?rank=%d&world_size=%d", file_path,
                 rank, n);
    else
        snprintf(url, cap, "%s://", scheme);
}

/* The world's store after init: the rendezvous's, keys apart from
 * dcoll's, shared by the ranks, dcoll's to free; none for mpi://, nor for
 * env:// without MASTER_ADDR (under a launcher). */
static int world_store(const char *url, int r, int n)
{
    dcoll_store_t *ws = NULL, *again = NULL;
    dcoll_status_t st = dcoll_world_store(&ws);
    bool none = !strncmp(url, "mpi", 3) ||
                (!strncmp(url, "env", 3) && !getenv("MASTER_ADDR"));
    if (none) {
        REQUIRE(st == DCOLL_ERR_UNSUPPORTED && !ws &&
                  strstr(dcoll_last_error(), "meets through no store"),
              "%s: world store: %s (%s)", url, dcoll_status_string(st),
              dcoll_last_error());
        return 0;
    }
    REQUIRE(st == DCOLL_SUCCESS && ws, "%s: world store: %s", url,
          dcoll_last_error());
    REQUIRE(dcoll_world_store(&again) == DCOLL_SUCCESS && again == ws,
          "%s: a second call gave another handle", url);
    char key[32], want[32], got[32];
    size_t len = 0;
    snprintf(key, sizeof(key), "from/%d", r);
    snprintf(want, sizeof(want), "%d", r);
    REQUIRE(dcoll_store_set(ws, key, want, strlen(want)) == DCOLL_SUCCESS,
          "%s: set %s", url, key);
    int next = (r + 1) % n;
    snprintf(key, sizeof(key), "from/%d", next);
    snprintf(want, sizeof(want), "%d", next);
    REQUIRE(dcoll_store_get(ws, key, got, sizeof(got) - 1, &len) ==
                  DCOLL_SUCCESS &&
              len == strlen(want) && !memcmp(got, want, len),
          "%s: rank %d's key from rank %d", url, r, next);
    /* dcoll's own keys are out of its sight. */
    const char *mine[1] = {"dcoll/join/server"};
    int exist = 1;
    REQUIRE(dcoll_store_check(ws, mine, 1, &exist) == DCOLL_SUCCESS && !exist,
          "%s: dcoll's key seen through the world store", url);
    REQUIRE(dcoll_store_destroy(&again) == DCOLL_ERR_INVALID_ARGUMENT &&
              again == ws && strstr(dcoll_last_error(), "world's store"),
          "%s: destroying the world store: %s", url, dcoll_last_error());
    return 0;
}

/* all_reduce, broadcast and new_group on the world the URL made. */
static int body(const char *url, int want_rank, int want_size)
{
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_URL | DCOLL_INIT_PARAM_TIMEOUT;
    p.url = url;
    p.timeout = 60;
    REQUIRE(dcoll_init(&p) == DCOLL_SUCCESS, "init %s", url);
    dcoll_group_t *w;
    int r, n;
    dcoll_group_world(&w);
    dcoll_group_rank(w, &r);
    dcoll_group_size(w, &n);
    REQUIRE(r == want_rank && n == want_size, "%s: rank %d of %d, want %d of "
          "%d", url, r, n, want_rank, want_size);
    /* One machine: the node's ranks are the world's, joined or not. */
    int lr = -1, ln = -1;
    REQUIRE(dcoll_local_rank(&lr, &ln) == DCOLL_SUCCESS && lr == r && ln == n,
          "%s: local rank %d of %d", url, lr, ln);
    enum { COUNT = 1000 };
    static int x[COUNT];
    for (int i = 0; i < COUNT; i++)
        x[i] = (r + 1) * (i + 1);
    REQUIRE(dcoll_all_reduce(w, x, x, COUNT, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "all_reduce");
    for (int i = 0; i < COUNT; i++)
        REQUIRE(x[i] == n * (n + 1) / 2 * (i + 1), "all_reduce[%d] = %d", i,
              x[i]);
    double b[64];
    for (int i = 0; i < 64; i++)
        b[i] = r == n - 1 ? i * 0.5 : -1;
    REQUIRE(dcoll_broadcast(w, b, 64, DCOLL_FLOAT64, n - 1, NULL, NULL) ==
              DCOLL_SUCCESS, "broadcast");
    for (int i = 0; i < 64; i++)
        REQUIRE(b[i] == i * 0.5, "broadcast[%d] = %g", i, b[i]);
    /* The even ranks. */
    int ranks[64], k = 0;
    for (int i = 0; i < n; i += 2)
        ranks[k++] = i;
    dcoll_group_t *g = NULL;
    REQUIRE(dcoll_new_group(&g, ranks, k, NULL) == DCOLL_SUCCESS, "new_group");
    int gr = -9, v = r, sum = 0;
    dcoll_group_rank(g, &gr);
    REQUIRE(gr == (r % 2 ? DCOLL_NON_MEMBER : r / 2), "group rank %d", gr);
    REQUIRE(dcoll_all_reduce(g, &v, &sum, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "group all_reduce");
    if (gr >= 0)
        REQUIRE(sum == (k - 1) * k, "group sum %d, want %d", sum, (k - 1) * k);
    REQUIRE(dcoll_group_destroy(&g) == DCOLL_SUCCESS, "group_destroy");
    if (world_store(url, r, n))
        return 1;
    REQUIRE(dcoll_barrier(w, NULL, NULL) == DCOLL_SUCCESS, "barrier");
    REQUIRE(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    return 0;
}

static int spawned(int rank, void *arg)
{
    char url[512];
    int n = atoi(getenv("WORLD_SIZE"));
    url_of(arg, rank, n, url, sizeof(url));
    return body(url, rank, n);
}

/* A job whose process 2 fails (or 1 is killed) while the others wait. */
static int failing(int rank, void *arg)
{
    const char *how = arg;
    procs_note_pid(rank);
    if (!strcmp(how, "fail") && rank == 2) {
        usleep(300000);
        return 7;
    }
    if (!strcmp(how, "signal") && rank == 1) {
        usleep(300000);
        raise(SIGKILL);
    }
    /* The others wait in dcoll_init for the process that never comes. */
    char url[64];
    snprintf(url, sizeof(url), "env://");
    return body(url, rank, 4);
}

/* Processes named comm whose parent is this one. */
static int children(const char *comm)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ppid = -1;
        char state = 0;
        /* pid (comm) state ppid: comm may hold spaces, so after ')'. */
        if (fgets(buf, sizeof(buf), f)) {
            const char *close = strrchr(buf, ')');
            if (close)
                sscanf(close + 1, " %c %d", &state, &ppid);
        }
        fclose(f);
        char name[64];
        snprintf(name, sizeof(name), "(%s)", comm);
        if (ppid == getpid() && state != 'Z' && strstr(buf, name)) {
            fprintf(stderr, "[%d] child left: %s", getpid(), buf);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* A joined world refused after the join (the ranks disagree on the debug
 * mode): dcoll_init fails on each, leaving no server running. */
static int refused(int rank, void *arg)
{
    (void)arg;
    if (rank == 1)
        setenv("DCOLL_DEBUG", "detail", 1);
    dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
    p.mask = DCOLL_INIT_PARAM_URL | DCOLL_INIT_PARAM_TIMEOUT;
    p.url = "env://";
    p.timeout = 60;
    dcoll_status_t st = dcoll_init(&p);
    REQUIRE(st == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "disagree on DCOLL_DEBUG"),
          "rank %d: init status %d", rank, st);
    /* OpenMPI's own orted stays, as for any singleton; dcoll's server
     * must not. */
    REQUIRE(children("ompi-server") == 0, "rank %d: dcoll_init failed but "
          "left its ompi-server running", rank);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "spawn") && argc == 4) {
        int n = atoi(argv[3]);
        snprintf(file_path, sizeof(file_path), "%s/dcoll-join-%d",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", getpid());
        dcoll_spawn_failure_t f;
        dcoll_status_t st = dcoll_spawn(spawned, argv[2], n, NULL, &f);
        printf("join %s, %d processes: %s\n", argv[2], n,
               st ? dcoll_last_error() : "ok");
        return st != DCOLL_SUCCESS;
    }
    if (!strcmp(mode, "init-timeout")) {
        /* DCOLL_INIT_TIMEOUT bounds a rendezvous that a rank never comes
         * to (the second of a tcp:// world of two), with no launcher. */
        char url[128];
        int port = t_free_port();
        snprintf(url, sizeof(url), "tcp://127.0.0.1:%d?rank=0&world_size=2",
                 port);
        setenv("DCOLL_INIT_TIMEOUT", "1.5", 1);
        setenv("DCOLL_INIT_REPORT", "0.5", 1);
        dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
        p.mask = DCOLL_INIT_PARAM_URL;
        p.url = url;
        struct capture cap;
        capture_begin(&cap);
        double t0 = now();
        dcoll_status_t st = dcoll_init(&p);
        double took = now() - t0;
        const char *err = capture_end(&cap);
        char where[64], told[160];
        snprintf(where, sizeof(where), "tcp://127.0.0.1:%d", port);
        snprintf(told, sizeof(told), "waiting at %s: 1 of 2 processes have "
                 "come (not yet: rank(s) 1", where);
        int bad = port <= 0 || st != DCOLL_ERR_TIMEOUT || took < 1.0 ||
                  took > 10 || !strstr(dcoll_last_error(), where) ||
                  !strstr(dcoll_last_error(), "rank(s) 1 never did") ||
                  !strstr(err, told) || strstr(err, "rank=");
        printf("DCOLL_INIT_TIMEOUT=1.5, a rank absent: %s after %.1f s "
               "(%s); said:\n%s", dcoll_status_string(st), took,
               dcoll_last_error(), err);
        return bad;
    }
    if (!strcmp(mode, "child") && argc == 3) {
        /* One process of a job dcollrun started. */
        int rank = atoi(getenv("RANK")), n = atoi(getenv("WORLD_SIZE"));
        const char *fail = getenv("JOIN_FAIL_RANK");
        if (fail && atoi(fail) == rank)
            return 5;
        /* JOIN_CLOSE=FDS: the program closes those of 0, 1 and 2 before
         * dcoll_init (its exit code alone says how it went). */
        const char *shut = getenv("JOIN_CLOSE");
        for (int fd = 0; shut && fd <= 2; fd++)
            if (strchr(shut, '0' + fd))
                close(fd);
        char url[512];
        url_of(argv[2], rank, n, url, sizeof(url));
        int rc = body(url, rank, n);
        if (!rc && rank == 0)
            printf("dcollrun job of %d: ok\n", n);
        return rc;
    }
    if (!strcmp(mode, "mpirun")) {
        /* The same body under a launcher. */
        MPI_Init(NULL, NULL);
        int r, n, rc = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        /* Rank 0 asks the kernel for a free port and tells the others
         * (a port made from a pid once met an ephemeral one in use). */
        char port[16] = "", url[256];
        if (r == 0)
            snprintf(port, sizeof(port), "%d", t_free_port());
        MPI_Bcast(port, sizeof(port), MPI_CHAR, 0, MPI_COMM_WORLD);
        setenv("MASTER_PORT", port, 1);
        setenv("RANK", "x", 1);  /* the query wins */
        const char *schemes[] = {"mpi", "tcp"};
        for (int i = 0; i < 2 && !rc; i++) {
            url_of(schemes[i], r, n, url, sizeof(url));
            rc = body(url, r, n);
        }
        snprintf(url, sizeof(url), "env://?rank=%d&world_size=%d", r, n);
        if (!rc)
            rc = body(url, r, n);
        /* torch's way under mpirun: plain env://, no RANK, MASTER_ADDR
         * and MASTER_PORT exported: MPI's ranks, and the world's store
         * there (world_store checks it is shared). */
        unsetenv("RANK");
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        if (!rc)
            rc = body("env://", r, n);
        unsetenv("MASTER_ADDR");
        setenv("RANK", "x", 1);
        /* A rank that disagrees with MPI's: refused on every rank. */
        snprintf(url, sizeof(url), "tcp://127.0.0.1:%s?rank=%d&world_size=%d",
                 port, (r + 1) % n, n);
        dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
        p.mask = DCOLL_INIT_PARAM_URL | DCOLL_INIT_PARAM_TIMEOUT;
        p.url = url;
        p.timeout = 30;
        dcoll_status_t st = dcoll_init(&p);
        if (n > 1 && (st != DCOLL_ERR_INVALID_ARGUMENT ||
                      !strstr(dcoll_last_error(), "but MPI's rank"))) {
            fprintf(stderr, "[%d] disagreeing rank: %s\n", r,
                    dcoll_last_error());
            rc = 1;
        }
        if (st == DCOLL_SUCCESS)
            dcoll_finalize();
        MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (r == 0)
            printf("join under mpirun, %d ranks: %s\n", n,
                   rc ? "FAILED" : "ok");
        MPI_Finalize();
        return rc;
    }
    if (!strcmp(mode, "refused")) {
        dcoll_spawn_failure_t f;
        dcoll_status_t st = dcoll_spawn(refused, NULL, 2, NULL, &f);
        printf("refused after the join: %s\n",
               st ? dcoll_last_error() : "ok");
        return st != DCOLL_SUCCESS;
    }
    if (!strcmp(mode, "fail") || !strcmp(mode, "signal")) {
        char dir[] = "/tmp/dcoll-fail-XXXXXX";
        if (!mkdtemp(dir))
            return 1;
        setenv("TMPDIR", dir, 1);
        dcoll_spawn_failure_t f;
        time_t t0 = time(NULL);
        dcoll_status_t st = dcoll_spawn(failing, (void *)mode, 4, NULL, &f);
        double took = difftime(time(NULL), t0);
        int bad = st != DCOLL_ERR_CHILD_FAILED;
        if (!strcmp(mode, "fail"))
            bad |= f.rank != 2 || f.exit_code != 7 || f.signal != 0 ||
                   !strstr(dcoll_last_error(), "process 2 exited with code 7");
        else
            bad |= f.rank != 1 || f.signal != SIGKILL || f.exit_code != 0 ||
                   !strstr(dcoll_last_error(), "process 1 was killed by "
                                               "signal 9");
        int left = procs_left(dir, 4);
        printf("%s: %s, after %.1f s; %d process(es) left\n", mode,
               dcoll_last_error(), took, left);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd)) {
        }
        return bad || left;
    }
    fprintf(stderr, "usage: test_join spawn env|tcp|file N | child SCHEME | "
            "mpirun | fail | signal\n");
    return 2;
}
