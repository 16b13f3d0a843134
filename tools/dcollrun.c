/* dcollrun [options] prog [args...]: start a job's processes on this node,
 * as torchrun does, each with RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set; the program calls
 * dcoll_init (its default, env://, meets them). Across nodes, run it on
 * each with the same --nnodes and master address and its own --node-rank
 * (under srun, one task per node, SLURM's variables give all three). The
 * first process to fail anywhere stops every node's, and dcollrun exits
 * with its status (128 + the signal if one killed it); with --on-failure
 * continue the others go on, told who died, and with --max-restarts the
 * job starts again. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "dcoll/dcoll.h"

extern char **environ;

struct job {
    char **argv;
    const char *log_dir;   /* one file per rank, or NULL */
    int tag;               /* "[rank] " before every line */
};

static void usage(FILE *f)
{
    fprintf(f,
"usage: dcollrun [options] prog [args...]\n"
"  -n, --nproc-per-node N  processes to start on this node (1 to 4096)\n"
"  --standalone            one node on a free local port (the default)\n"
"  --nnodes M              nodes in the job (default 1; under srun, the\n"
"                          step's nodes)\n"
"  --node-rank K           this node's place, 0 to M-1 (default 0; under\n"
"                          srun, SLURM_NODEID)\n"
"  --master-addr A         node 0's address, where the job's store is\n"
"                          served (default 127.0.0.1; under srun, the\n"
"                          step's first node)\n"
"  --master-port P         its port (default: a free one on one node; under\n"
"                          srun, 20000 + the job id modulo 20000)\n"
"  --rdzv-endpoint A:P     both at once\n"
"  --tag-output            start every line of output with [rank]\n"
"  --log-dir D             each rank's output (stdout and stderr) in\n"
"                          D/rank-R.log instead of the terminal\n"
"  --timeout S             stop everything after S seconds\n"
"  --on-failure WHAT       when a process fails: stop the others (stop,\n"
"                          the default), let them go on and tell them\n"
"                          (continue: dcoll_group_shrink), or\n"
"                          stop them and start the job again (restart)\n"
"  --max-restarts N        restarts at most (default 3 with --on-failure\n"
"                          restart; N > 0 alone means restart); each\n"
"                          attempt sees its number in DCOLL_RESTART_COUNT\n"
"                          and TORCHELASTIC_RESTART_COUNT\n"
"  --version               dcoll's version\n"
"torchrun's spellings work too: --opt=VALUE, '_' for '-' (--nproc_per_node),\n"
"--rdzv-backend c10d, --rdzv-id ID (ignored).\n"
"Each process gets, as torchrun's workers do: RANK, WORLD_SIZE, LOCAL_RANK,\n"
"LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; with --nnodes, GROUP_RANK,\n"
"GROUP_WORLD_SIZE and TORCHELASTIC_USE_AGENT_STORE=True; with restarts,\n"
"TORCHELASTIC_RESTART_COUNT and DCOLL_RESTART_COUNT; with --on-failure\n"
"continue, DCOLL_ON_FAILURE=continue. dcoll_init(NULL) in them meets by\n"
"env:// (docs/launching.md).\n"
"Across nodes the store takes DCOLL_STORE_TOKEN as its token; the nodes\n"
"wait DCOLL_INIT_TIMEOUT seconds (300) for each other.\n");
}

/* torchrun's options that dcollrun has no form of, and what to do
 * instead: said in one line, not the whole usage. */
static const struct {
    const char *opt, *instead;
} torchrun_only[] = {
    {"--module", "dcollrun runs a program, not a Python module: dcollrun "
                 "-n N python -m MODULE ..."},
    {"-m", "dcollrun runs a program, not a Python module: dcollrun -n N "
           "python -m MODULE ..."},
    {"--no-python", "dcollrun always runs the program as given"},
    {"--run-path", "dcollrun runs a program: dcollrun -n N python PATH"},
    {"--tee", "use --tag-output (every line tagged with its rank) or "
              "--log-dir D (a file a rank)"},
    {"--redirects", "use --log-dir D (each rank's output in D/rank-R.log)"},
    {"--log-specs", "use --log-dir D"},
    {"--local-ranks-filter", "use --log-dir D, and read the ranks' files "
                             "you want"},
    {"--monitor-interval", "dcollrun watches its processes itself; drop "
                           "it"},
    {"--start-method", "dcollrun starts its processes with fork and exec; "
                       "drop it"},
    {"--role", "dcollrun has one role; drop it"},
    {"--local-addr", "use --master-addr on node 0's address"},
    {"--rdzv-conf", "use --timeout S and DCOLL_INIT_TIMEOUT"},
    {"--max-restarts-per-node", "use --max-restarts N"},
};

/* A torchrun option's name as dcollrun spells it: '_' as '-' (torchrun
 * takes both), in buf. */
static const char *dashed(const char *o, size_t len, char *buf, size_t cap)
{
    if (len >= cap)
        len = cap - 1;
    for (size_t k = 0; k < len; k++)
        buf[k] = o[k] == '_' && k >= 2 ? '-' : o[k];
    buf[len] = '\0';
    return buf;
}

/* A whole number in [lo, hi], or exit 2 naming the option. */
static long number(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "dcollrun: %s '%s' is not a number from %ld to "
                "%ld\n", opt, s ? s : "", lo, hi);
        exit(2);
    }
    return v;
}

/* Copy lines from fd to out, each after tag; a last line without its
 * newline gets one. Lines of up to 4 KiB go in one write. */
struct relay {
    int fd, out;
    char buf[4096];
    size_t len;
};

static void emit(struct relay *r, const char *tag, size_t upto)
{
    char line[4096 + 32];
    size_t t = strlen(tag);
    memcpy(line, tag, t);
    memcpy(line + t, r->buf, upto);
    if (upto == 0 || r->buf[upto - 1] != '\n')
        line[t + upto++] = '\n';
    ssize_t w = write(r->out, line, t + upto);
    (void)w;
}

static bool pump(struct relay *r, const char *tag)
{
    ssize_t n = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
    if (n <= 0) {
        if (n < 0 && errno == EINTR)
            return true;
        if (r->len)
            emit(r, tag, r->len);
        r->len = 0;
        return false;
    }
    r->len += (size_t)n;
    char *nl;
    while ((nl = memchr(r->buf, '\n', r->len))) {
        size_t upto = (size_t)(nl - r->buf) + 1;
        emit(r, tag, upto);
        memmove(r->buf, r->buf + upto, r->len - upto);
        r->len -= upto;
    }
    if (r->len == sizeof(r->buf)) {   /* a line longer than the buffer */
        emit(r, tag, r->len);
        r->len = 0;
    }
    return true;
}

/* The program as a child whose stdout and stderr come back through pipes,
 * tagged; this process ends as it did. */
static int tagged(int rank, char **argv)
{
    int po[2], pe[2];
    if (pipe(po) || pipe(pe)) {
        fprintf(stderr, "dcollrun: rank %d: pipe: %s\n", rank,
                strerror(errno));
        return 127;
    }
    pid_t relay = getpid(), pid = fork();
    if (pid < 0) {
        fprintf(stderr, "dcollrun: rank %d: fork: %s\n", rank,
                strerror(errno));
        return 127;
    }
    if (pid == 0) {
        /* The relay has dcoll_spawn's parent-death signal; the program
         * needs its own, or it outlives a dcollrun killed with its
         * relay. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != relay)
            _exit(127);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "dcollrun: cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    char tag[32];
    snprintf(tag, sizeof(tag), "[%d] ", rank);
    struct relay rel[2] = {{po[0], 1, "", 0}, {pe[0], 2, "", 0}};
    int open_fds = 2;
    while (open_fds) {
        struct pollfd pf[2];
        int k = 0;
        for (int i = 0; i < 2; i++)
            if (rel[i].fd >= 0)
                pf[k++] = (struct pollfd){rel[i].fd, POLLIN, 0};
        if (poll(pf, (nfds_t)k, -1) < 0 && errno != EINTR)
            break;
        for (int j = 0; j < k; j++) {
            if (!pf[j].revents)
                continue;
            struct relay *r = pf[j].fd == rel[0].fd ? &rel[0] : &rel[1];
            if (!pump(r, tag)) {
                close(r->fd);
                r->fd = -1;
                open_fds--;
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int run(int rank, void *arg)
{
    struct job *job = arg;
    if (job->log_dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/rank-%d.log", job->log_dir, rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            fprintf(stderr, "dcollrun: rank %d: cannot write %s: %s\n", rank,
                    path, strerror(errno));
            return 127;
        }
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (job->tag)
        return tagged(rank, job->argv);
    execvp(job->argv[0], job->argv);
    fprintf(stderr, "dcollrun: cannot run %s: %s\n", job->argv[0],
            strerror(errno));
    return 127;
}

/* The first host of a SLURM host list: "node[07-09,12],gpu3" -> "node07". */
static bool first_host(const char *list, char *out, size_t cap)
{
    size_t n = strcspn(list, ",[");
    if (!n || n >= cap)
        return false;
    memcpy(out, list, n);
    out[n] = '\0';
    if (list[n] == '[') {
        size_t d = strspn(list + n + 1, "0123456789");
        if (!d || n + d >= cap)
            return false;
        memcpy(out + n, list + n + 1, d);
        out[n + d] = '\0';
    }
    return true;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* srun's task of a step, one per node: the job's shape from SLURM. */
static void from_slurm(dcoll_spawn_params_t *p, char *addr, size_t cap)
{
    const char *nodes = env("SLURM_STEP_NUM_NODES"), *tasks =
        env("SLURM_STEP_NUM_TASKS"), *list = env("SLURM_STEP_NODELIST"),
        *id = env("SLURM_NODEID"), *job = env("SLURM_JOB_ID");
    if (!env("SLURM_STEP_ID") || !nodes || !tasks)
        return;
    if (strcmp(nodes, tasks)) {
        fprintf(stderr, "dcollrun: srun started %s tasks on %s nodes: run "
                "dcollrun as one task per node (srun --ntasks-per-node=1) "
                "and give it --nproc-per-node\n", tasks, nodes);
        exit(2);
    }
    p->mask |= DCOLL_SPAWN_PARAM_NODES;
    p->nnodes = (int)number("SLURM_STEP_NUM_NODES", nodes, 1, 4096);
    p->node_rank = id ? (int)number("SLURM_NODEID", id, 0, 4095) : 0;
    if (list && first_host(list, addr, cap)) {
        p->mask |= DCOLL_SPAWN_PARAM_MASTER_ADDR;
        p->master_addr = addr;
    }
    if (job) {
        p->mask |= DCOLL_SPAWN_PARAM_MASTER_PORT;
        p->master_port = 20000 + (int)(number("SLURM_JOB_ID", job, 0,
                                              1L << 40) % 20000);
    }
}

/* dcollrun is its processes' launcher: what an MPI launcher (srun's PMI,
 * an mpirun above) set for dcollrun itself must not reach them. */
static void forget_launcher(void)
{
    static const char *const prefixes[] = {"PMIX_", "PMI_",
                                           "OMPI_COMM_WORLD_",
                                           "OMPI_UNIVERSE_SIZE", NULL};
    for (char **e = environ; *e;) {
        bool drop = false;
        for (int i = 0; prefixes[i] && !drop; i++)
            drop = !strncmp(*e, prefixes[i], strlen(prefixes[i]));
        if (!drop) {
            e++;
            continue;
        }
        char name[256];
        size_t n = strcspn(*e, "=");
        snprintf(name, sizeof(name), "%.*s", (int)n, *e);
        unsetenv(name);   /* environ shifts down: look at *e again */
    }
}

/* What a rank starts in a session of its own (Open MPI's singleton
 * orted, --set-sid) is out of reach of the process group dcoll_spawn
 * ends, and outlives the rank for a moment: it would be left running
 * after dcollrun had said the job was over. dcollrun adopts such orphans
 * (a subreaper), and an attempt ends only once they have: each is given
 * ORPHAN_GRACE seconds to go by itself (an orted goes once its rank has),
 * then killed. */
#define ORPHAN_GRACE 10.0

/* Signal every child of this process (adopted ones, here). */
static void signal_children(int sig)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    pid_t me = getpid();
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[got] = '\0';
        /* pid (comm) state ppid: comm may hold spaces, so from its ')'. */
        char *close = strrchr(buf, ')');
        int ppid = 0;
        char state = 0;
        if (close && sscanf(close + 1, " %c %d", &state, &ppid) == 2 &&
            ppid == me && state != 'Z')
            kill((pid_t)atoi(e->d_name), sig);
    }
    closedir(d);
}

static void reap_orphans(void)
{
    double end = dcoll_wtime() + ORPHAN_GRACE;
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0 && errno != EINTR)
            return;   /* ECHILD: none left */
        if (pid > 0)
            continue;
        if (dcoll_wtime() > end)
            break;
        usleep(10000);
    }
    signal_children(SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    struct job job = {0};
    char slurm_addr[256], endpoint[256];
    long n = 0;
    int i = 1, restarts = -1;
    const char *on_failure = NULL;
    /* Its output's reader gone (a pipe closed, a terminal lost) must not
     * end the launcher and with it every rank: writes fail instead. */
    signal(SIGPIPE, SIG_IGN);
    from_slurm(&p, slurm_addr, sizeof(slurm_addr));
    bool standalone = false;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        /* torchrun's spellings: --opt=value, and '_' for '-'. */
        char name[64];
        const char *eq = !strncmp(o, "--", 2) ? strchr(o, '=') : NULL;
        o = dashed(argv[i], eq ? (size_t)(eq - argv[i]) : strlen(argv[i]),
                   name, sizeof(name));
        if (eq) {
            v = eq + 1;
            takes = false;
        }
        for (size_t k = 0;
             k < sizeof(torchrun_only) / sizeof(torchrun_only[0]); k++)
            if (!strcmp(o, torchrun_only[k].opt)) {
                fprintf(stderr, "dcollrun: %s is torchrun's, which dcollrun "
                        "has no form of: %s\n", o, torchrun_only[k].instead);
                return 2;
            }
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--version")) {
            int maj, min, pat;
            dcoll_version(&maj, &min, &pat);
            printf("dcollrun (dcoll) %d.%d.%d\n", maj, min, pat);
            return 0;
        } else if (!strcmp(o, "--")) {
            i++;
            break;
        } else if (!strcmp(o, "--tag-output")) {
            job.tag = 1;
            takes = false;
        } else if (!strcmp(o, "--standalone")) {
            /* torchrun's one-node job on a free local port: dcollrun's
             * own default. */
            standalone = true;
            takes = false;
        } else if (!v) {
            fprintf(stderr, "dcollrun: %s needs a value\n", o);
            usage(stderr);
            return 2;
        } else if (!strcmp(o, "-n") || !strcmp(o, "--nproc-per-node") ||
                   !strcmp(o, "--nprocs")) {
            n = number(o, v, 1, 4096);
        } else if (!strcmp(o, "--nnodes")) {
            if (strchr(v, ':')) {
                fprintf(stderr, "dcollrun: --nnodes %s is an elastic range; "
                        "dcollrun runs a fixed number of nodes: --nnodes "
                        "M\n", v);
                return 2;
            }
            p.mask |= DCOLL_SPAWN_PARAM_NODES;
            p.nnodes = (int)number(o, v, 1, 4096);
        } else if (!strcmp(o, "--rdzv-backend")) {
            /* dcollrun's store is c10d's kind: a TCP store on node 0. */
            if (strcmp(v, "c10d") && strcmp(v, "static")) {
                fprintf(stderr, "dcollrun: --rdzv-backend %s: dcollrun's "
                        "rendezvous is a store on node 0 (c10d's kind); "
                        "give --rdzv-endpoint HOST:PORT or --master-addr "
                        "and --master-port\n", v);
                return 2;
            }
        } else if (!strcmp(o, "--rdzv-id")) {
            /* One job per store: nothing to tell apart. */
        } else if (!strcmp(o, "--node-rank")) {
            p.mask |= DCOLL_SPAWN_PARAM_NODES;
            p.node_rank = (int)number(o, v, 0, 4095);
        } else if (!strcmp(o, "--master-addr")) {
            p.mask |= DCOLL_SPAWN_PARAM_MASTER_ADDR;
            p.master_addr = v;
        } else if (!strcmp(o, "--master-port")) {
            p.mask |= DCOLL_SPAWN_PARAM_MASTER_PORT;
            p.master_port = (int)number(o, v, 1, 65535);
        } else if (!strcmp(o, "--rdzv-endpoint")) {
            const char *colon = strrchr(v, ':');
            if (!colon || colon == v || (size_t)(colon - v) >= sizeof(endpoint)) {
                fprintf(stderr, "dcollrun: --rdzv-endpoint '%s' is not "
                        "HOST:PORT\n", v);
                return 2;
            }
            snprintf(endpoint, sizeof(endpoint), "%.*s", (int)(colon - v), v);
            p.mask |= DCOLL_SPAWN_PARAM_MASTER_ADDR |
                      DCOLL_SPAWN_PARAM_MASTER_PORT;
            p.master_addr = endpoint;
            p.master_port = (int)number(o, colon + 1, 1, 65535);
        } else if (!strcmp(o, "--log-dir")) {
            job.log_dir = v;
        } else if (!strcmp(o, "--timeout")) {
            p.mask |= DCOLL_SPAWN_PARAM_TIMEOUT;
            p.timeout = (double)number(o, v, 1, 1000000000);
        } else if (!strcmp(o, "--on-failure")) {
            if (strcmp(v, "stop") && strcmp(v, "continue") &&
                strcmp(v, "restart")) {
                fprintf(stderr, "dcollrun: --on-failure '%s' is not stop, "
                        "continue or restart\n", v);
                return 2;
            }
            on_failure = v;
        } else if (!strcmp(o, "--max-restarts")) {
            restarts = (int)number(o, v, 0, 1000000);
        } else {
            fprintf(stderr, "dcollrun: unknown option '%s' (dcollrun --help "
                    "lists them)\n", argv[i]);
            return 2;
        }
        i += takes;
    }
    if (standalone && (p.mask & DCOLL_SPAWN_PARAM_NODES) && p.nnodes > 1) {
        fprintf(stderr, "dcollrun: --standalone is a job of one node, but "
                "--nnodes says %d\n", p.nnodes);
        return 2;
    }
    if (!n || i >= argc) {
        fprintf(stderr, "dcollrun: %s\n", !n ? "-n N (--nproc-per-node) is "
                "required" : "no program to run");
        usage(stderr);
        return 2;
    }
    if (job.log_dir && mkdir(job.log_dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "dcollrun: cannot make --log-dir %s: %s\n",
                job.log_dir, strerror(errno));
        return 2;
    }
    /* --max-restarts N alone restarts, as torchrun's does. */
    bool restart = on_failure ? !strcmp(on_failure, "restart")
                              : restarts > 0;
    if (on_failure && !restart && restarts > 0) {
        fprintf(stderr, "dcollrun: --max-restarts %d restarts the job, but "
                "--on-failure is %s\n", restarts, on_failure);
        return 2;
    }
    if (restart && restarts < 0)
        restarts = 3;
    if (!restart)
        restarts = 0;
    if (on_failure && !strcmp(on_failure, "continue")) {
        p.mask |= DCOLL_SPAWN_PARAM_ON_FAILURE;
        p.on_failure = DCOLL_ON_FAILURE_CONTINUE;
    }
    forget_launcher();
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    job.argv = argv + i;
    dcoll_spawn_failure_t f;
    dcoll_status_t st = DCOLL_SUCCESS;
    for (int attempt = 0; attempt <= restarts; attempt++) {
        char a[16];
        snprintf(a, sizeof(a), "%d", attempt);
        setenv("DCOLL_RESTART_COUNT", a, 1);
        setenv("TORCHELASTIC_RESTART_COUNT", a, 1);
        setenv("TORCHELASTIC_MAX_RESTARTS", (snprintf(a, sizeof(a), "%d",
                                                      restarts), a), 1);
        st = dcoll_spawn(run, &job, (int)n, &p, &f);
        reap_orphans();
        if (!st)
            return 0;
        if (attempt < restarts && (st == DCOLL_ERR_CHILD_FAILED ||
                                   st == DCOLL_ERR_IO))
            fprintf(stderr, "dcollrun: attempt %d failed: %s; starting "
                    "the job again (restart %d of %d)\n", attempt,
                    dcoll_last_error(), attempt + 1, restarts);
        else
            break;
    }
    fprintf(stderr, "dcollrun: %s\n", dcoll_last_error());
    if (job.log_dir && f.rank >= 0)
        fprintf(stderr, "dcollrun: rank %d's output: %s/rank-%d.log\n",
                f.rank, job.log_dir, f.rank);
    if (st != DCOLL_ERR_CHILD_FAILED || f.rank < 0)
        return 1;
    return f.signal ? 128 + f.signal : f.exit_code ? f.exit_code : 1;
}
