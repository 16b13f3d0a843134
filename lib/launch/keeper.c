/* The keeper: survivors under a launcher dcoll does not run (mpirun,
 * srun). With DCOLL_ON_FAILURE=continue there, rank 0 forks a keeper at
 * dcoll_init. It serves the job's store of death notices, as dcollrun
 * does under its own launch, and is their one writer (deaths.c reads
 * them). Forked, it outlives any rank, rank 0 included.
 *
 * A death is known for certain, never guessed from a slow rank:
 *  - on one host, by the process's end: the keeper and every rank watch
 *    the ranks on their own host through pidfds, which turn readable
 *    when the process ends; a rank that sees one tells the keeper;
 *  - across hosts, by a lease: each rank's beat thread adds to its beat
 *    key every beat_of(fence) seconds (half a second, or an eighth of
 *    the fence if that is less). A rank that has not reached the keeper for
 *    half the fence ends itself (it may be cut off), and the keeper
 *    takes a rank as dead only once its beats stopped for the whole
 *    fence: by then it has ended itself. A rank busy computing or
 *    waiting still beats, from its own thread.
 * The keeper's host is the one whose loss ends the job: every rank then
 * loses the keeper and ends itself after half the fence.
 *
 * Keys, under /keeper: dcoll/beat/R (R's beats), dcoll/exit/K = "R text"
 * and dcoll/exits = K (ends a rank saw), dcoll/bye/R and dcoll/byes (R
 * finalized), and the notices (deaths.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "launch.h"
#include "store.h"

#define PREFIX "/keeper"
#define BEAT 0.5          /* seconds between a rank's beats, at most */
#define TICK 0.25         /* seconds between the keeper's looks */
#define FENCE_DEFAULT 10.0
#define LOST_KEY 2.0      /* seconds a reported end may lack its text */
#define START_WAIT 10.0   /* seconds rank 0 waits for the keeper's port */

/* What rank 0 tells every rank (a broadcast of bytes). */
struct keeper_info {
    int32_t port;         /* < 0: the keeper did not start; why says why */
    int32_t pad;
    double fence;
    char token[72];
    char addr[256];
    char why[512];
};

/* Seconds between beats: several to each half fence, so that one slow
 * store call does not end a rank that is alive. */
static double beat_of(double fence)
{
    return fence / 8 < BEAT ? fence / 8 : BEAT;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

/* ---- the keeper process ---- */

struct keeper {
    dcoll_store_t *s;
    int n, ndone;
    double fence;
    int64_t deaths, exits, byes;   /* notices written; reports, byes read */
    int64_t *beat;
    double *beat_at, lost_since;
    unsigned char *state;          /* 0 running, 1 dead, 2 finalized */
    struct pollfd *pfd;            /* this host's ranks */
    int *pfd_rank, npfd;
};

static void declare(struct keeper *k, int r, const char *text)
{
    if (k->state[r])
        return;
    k->state[r] = 1;
    k->ndone++;
    if (dcoll_deaths_tell(k->s, &k->deaths, r, text))
        fprintf(stderr, "dcoll keeper: rank %d died (%s); the others could "
                "not be told: %s\n", r, text, dcoll_last_error());
    else
        fprintf(stderr, "dcoll keeper: rank %d died (%s); the others go "
                "on\n", r, text);
}

/* The ends ranks saw on their hosts. A report's text may come after its
 * number (the reporter adds, then sets): wait LOST_KEY for it, then pass
 * it (the reporter died between; the lease still holds). */
static void read_exits(struct keeper *k, double now)
{
    int64_t count = 0;
    if (dcoll_store_add(k->s, "dcoll/exits", 0, &count))
        return;
    while (k->exits < count) {
        char key[64], v[400];
        snprintf(key, sizeof(key), "dcoll/exit/%lld", (long long)k->exits + 1);
        const char *k1[1] = {key};
        int there = 0;
        size_t len = 0;
        if (dcoll_store_check(k->s, k1, 1, &there) || !there) {
            if (!k->lost_since)
                k->lost_since = now;
            if (now - k->lost_since < LOST_KEY)
                return;
        } else if (!dcoll_store_get(k->s, key, v, sizeof(v) - 1, &len)) {
            v[len] = '\0';
            char *end;
            long r = strtol(v, &end, 10);
            if (end != v && r >= 0 && r < k->n && *end == ' ')
                declare(k, (int)r, end + 1);
        }
        k->lost_since = 0;
        k->exits++;
    }
}

/* Rank r finalized, if its bye is there: done, not dead. */
static void take_bye(struct keeper *k, int r)
{
    char key[64];
    snprintf(key, sizeof(key), "dcoll/bye/%d", r);
    const char *k1[1] = {key};
    int there = 0;
    if (!k->state[r] && !dcoll_store_check(k->s, k1, 1, &there) && there) {
        k->state[r] = 2;
        k->ndone++;
    }
}

static void read_byes(struct keeper *k)
{
    int64_t count = 0;
    if (dcoll_store_add(k->s, "dcoll/byes", 0, &count) || count == k->byes)
        return;
    k->byes = count;
    for (int r = 0; r < k->n; r++)
        take_bye(k, r);
}

static void read_beats(struct keeper *k, double now)
{
    for (int r = 0; r < k->n; r++) {
        if (k->state[r])
            continue;
        char key[64];
        int64_t v = 0;
        snprintf(key, sizeof(key), "dcoll/beat/%d", r);
        if (dcoll_store_add(k->s, key, 0, &v))
            continue;
        if (v != k->beat[r]) {
            k->beat[r] = v;
            k->beat_at[r] = now;
        } else if (now - k->beat_at[r] >= k->fence) {
            char text[300];
            snprintf(text, sizeof(text), "it sent dcoll's keeper no heartbeat "
                     "for %.0f s: its host is cut off or the process "
                     "stopped, and a rank that cannot reach the keeper for "
                     "%g s ends itself", now - k->beat_at[r],
                     k->fence / 2);
            declare(k, r, text);
        }
    }
}

/* This host's ranks ended: readable pidfds. One that said bye first
 * finalized (its bye is read at once, not at the next change of the
 * count). */
static void read_pids(struct keeper *k, const int64_t *pids)
{
    for (int i = 0; i < k->npfd; i++) {
        if (k->pfd[i].fd < 0 || !k->pfd[i].revents)
            continue;
        int r = k->pfd_rank[i];
        take_bye(k, r);
        char text[300];
        snprintf(text, sizeof(text), "its process, pid %lld on %s, ended, "
                 "as dcoll's keeper on that host saw", (long long)pids[r],
                 dcoll_host_of(r));
        declare(k, r, text);
        close(k->pfd[i].fd);
        k->pfd[i].fd = -1;
    }
}

static _Noreturn void keeper_main(int tell, int n, const int64_t *pids,
                                  const struct keeper_info *info)
{
    struct keeper_info said = *info;
    dcoll_store_params_t sp = DCOLL_STORE_PARAMS_INIT;
    sp.mask = DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_TIMEOUT |
              DCOLL_STORE_PARAM_TOKEN;
    sp.serve = 1;
    sp.timeout = 5;
    sp.token = info->token;
    dcoll_store_t *base = NULL;
    struct keeper k = {.n = n, .fence = info->fence};
    dcoll_status_t st = dcoll_store_tcp_create(&base, info->addr, 0, &sp);
    int port = 0;
    if (!st && !(st = dcoll_store_port(base, &port)) &&
        !(st = dcoll_store_prefix_over(&k.s, PREFIX, base)))
        said.port = port;
    else
        said.port = -1;
    if (st) {
        snprintf(said.why, sizeof(said.why), "%s", dcoll_last_error());
        if (base && !k.s)
            dcoll_store_destroy(&base);
    }
    ssize_t w = write(tell, &said, sizeof(said));
    close(tell);
    if (st || w != (ssize_t)sizeof(said))
        dcoll_exit_now(1);
    k.beat = calloc((size_t)n, sizeof(*k.beat));
    k.beat_at = calloc((size_t)n, sizeof(*k.beat_at));
    k.state = calloc((size_t)n, 1);
    k.pfd = calloc((size_t)n, sizeof(*k.pfd));
    k.pfd_rank = calloc((size_t)n, sizeof(int));
    if (!k.beat || !k.beat_at || !k.state || !k.pfd || !k.pfd_rank)
        dcoll_exit_now(1);
    double now = dcoll_now();
    for (int r = 0; r < n; r++) {
        k.beat_at[r] = now;
        if (strcmp(dcoll_host_of(r), dcoll_host_of(0)))
            continue;
        int fd = pidfd_of((pid_t)pids[r]);
        if (fd >= 0) {
            k.pfd[k.npfd] = (struct pollfd){.fd = fd, .events = POLLIN};
            k.pfd_rank[k.npfd++] = r;
        }
    }
    double beat = beat_of(k.fence), next_beats = now + beat;
    while (k.ndone < n) {
        poll(k.pfd, (nfds_t)k.npfd, (int)(TICK * 1000));
        now = dcoll_now();
        read_byes(&k);
        read_pids(&k, pids);
        read_exits(&k, now);
        if (now >= next_beats) {
            read_beats(&k, now);
            next_beats = now + beat;
        }
    }
    /* The last ranks' reads of the notices, then the end. */
    usleep(500000);
    dcoll_exit_now(0);
}

/* Rank 0: fork the keeper, which serves at info->addr; info gets its
 * port (or why not). */
static pid_t keeper_start(int n, const int64_t *pids,
                          struct keeper_info *info)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC)) {
        info->port = -1;
        snprintf(info->why, sizeof(info->why), "no pipe for the keeper: %s",
                 strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* Nothing of the rank's but the standard streams: its MPI
         * sockets kept open here would hide its end from its peers. */
        int tell = dup2(p[1], 3) == 3 ? 3 : -1;
        if (tell == 3)
            fcntl(3, F_SETFD, 0);
        close_range(4, ~0U, 0);
        /* stderr stays, for its lines on deaths. */
        int null = open("/dev/null", O_RDWR);
        if (null >= 0 && null > 1) {
            dup2(null, 0);
            dup2(null, 1);
            close(null);
        }
        signal(SIGPIPE, SIG_IGN);
        signal(SIGINT, SIG_IGN);   /* a ^C to mpirun is for the ranks */
        /* A group of its own: a launcher that ends rank 0's group when
         * rank 0 is done (dcollrun does) must not end the keeper with
         * it while the others run. */
        setpgid(0, 0);
        if (tell < 0)
            dcoll_exit_now(1);
        keeper_main(tell, n, pids, info);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        info->port = -1;
        snprintf(info->why, sizeof(info->why), "cannot fork the keeper: %s",
                 strerror(errno));
        return -1;
    }
    struct pollfd f = {.fd = p[0], .events = POLLIN};
    struct keeper_info got;
    ssize_t r = poll(&f, 1, (int)(START_WAIT * 1000)) == 1
                    ? read(p[0], &got, sizeof(got))
                    : -1;
    close(p[0]);
    if (r == (ssize_t)sizeof(got)) {
        *info = got;
        if (info->port > 0)
            return pid;
    } else {
        info->port = -1;
        snprintf(info->why, sizeof(info->why), "the keeper did not say "
                 "its port within %g s", START_WAIT);
        kill(pid, SIGKILL);
    }
    waitpid(pid, NULL, 0);
    return -1;
}

/* ---- a rank's side ---- */

static struct {
    pthread_t thread, timer;
    _Atomic bool running;
    _Atomic double lease_until;  /* past it, this rank ends itself */
    int wake;                   /* eventfd: stop */
    dcoll_store_t *s;           /* the beat thread's own connection */
    int me;
    double fence;
    char where[300];            /* the keeper's address, for messages */
    struct pollfd *pfd;         /* [0]: wake; then this host's others */
    int *pfd_rank, npfd;
    const int64_t *pids;        /* NULL once the thread has them */
    pid_t child;                /* rank 0: the keeper */
} kr = {.wake = -1, .child = -1};

static _Noreturn void fence(const char *why)
{
    fprintf(stderr, "dcoll[%d]: %s; this rank ends itself (exit code %d) "
            "so that the others can go on without it\n", kr.me, why,
            DCOLL_FENCED_EXIT_CODE);
    dcoll_exit_now(DCOLL_FENCED_EXIT_CODE);
}

/* A rank on this host ended: tell the keeper (its number, then its
 * text; the keeper waits for the text a while). */
static void report_end(int r, int64_t pid)
{
    int64_t k = 0;
    if (dcoll_store_add(kr.s, "dcoll/exits", 1, &k))
        return;
    char key[64], v[400];
    snprintf(key, sizeof(key), "dcoll/exit/%lld", (long long)k);
    int len = snprintf(v, sizeof(v), "%d its process, pid %lld on %s, "
                       "ended, as rank %d on that host saw", r,
                       (long long)pid, dcoll_host_of(r), kr.me);
    dcoll_store_set(kr.s, key, v, (size_t)len);
}

/* Past the lease: cut off from the keeper (or stopped past it), so taken
 * as dead by now or soon. */
static void lease_over(double now)
{
    char why[700];
    double since = now - (atomic_load(&kr.lease_until) - kr.fence / 2);
    snprintf(why, sizeof(why), "dcoll's keeper at %s last heard from this "
             "rank %.1f s ago (DCOLL_FENCE is %g s): this rank was stopped, "
             "or the keeper or the way to it is gone, and the others take "
             "this rank as dead", kr.where, since, kr.fence);
    fence(why);
}

/* The lease's own clock: the beat's store calls may block (a link down
 * holds one until its timeout), so the end of the lease is kept by a
 * thread that does nothing else. */
static void *timer_main(void *arg)
{
    (void)arg;
    struct pollfd wake = {.fd = kr.wake, .events = POLLIN};
    while (poll(&wake, 1, 100) <= 0) {
        double now = dcoll_now();
        if (now >= atomic_load(&kr.lease_until))
            lease_over(now);
    }
    return NULL;
}

static void *beat_main(void *arg)
{
    const int64_t *pids = arg;
    char key[64];
    snprintf(key, sizeof(key), "dcoll/beat/%d", kr.me);
    for (;;) {
        poll(kr.pfd, (nfds_t)kr.npfd, (int)(beat_of(kr.fence) * 1000));
        if (kr.pfd[0].revents)
            return NULL;
        for (int i = 1; i < kr.npfd; i++) {
            if (kr.pfd[i].fd < 0 || !kr.pfd[i].revents)
                continue;
            report_end(kr.pfd_rank[i], pids[kr.pfd_rank[i]]);
            close(kr.pfd[i].fd);
            kr.pfd[i].fd = -1;
        }
        /* The keeper counts the beat no earlier than it was sent, and
         * takes the rank as dead a whole fence after it counted one:
         * half a fence from the send, the lease is over here first. */
        int64_t v = 0;
        double sent = dcoll_now();
        if (!dcoll_store_add(kr.s, key, 1, &v))
            atomic_store(&kr.lease_until, sent + kr.fence / 2);
        /* Taken as dead (stopped past the fence, say): not one step more. */
        dcoll_deaths_poll(false);
        dcoll_keeper_check_self();
    }
}

void dcoll_keeper_check_self(void)
{
    if (!kr.running)
        return;
    double now = dcoll_now();
    if (now >= atomic_load(&kr.lease_until))
        lease_over(now);
    int me = kr.me;
    char said[300];
    if (dcoll_deaths_first(&me, 1, said, sizeof(said)) == 0) {
        char why[400];
        snprintf(why, sizeof(why), "the keeper took this rank as dead (%s)",
                 said);
        fence(why);
    }
}

bool dcoll_continue_wanted(void)
{
    return dcoll_on_failure_setting() == 1;
}

int dcoll_on_failure_setting(void)
{
    const char *e = getenv("DCOLL_ON_FAILURE");
    if (!e || !*e || !strcmp(e, "stop"))
        return 0;
    return strcmp(e, "continue") ? 2 : 1;
}

bool dcoll_keeper_wanted(void)
{
    return dcoll_continue_wanted() && !dcoll_deaths_reported();
}

/* The fence, from DCOLL_FENCE (rank 0's holds for all). */
static dcoll_status_t fence_of(double *out)
{
    const char *e = getenv("DCOLL_FENCE");
    *out = FENCE_DEFAULT;
    if (!e || !*e)
        return DCOLL_SUCCESS;
    char *end;
    double v = strtod(e, &end);
    if (*end || !(v >= 2 && v <= 3600))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_FENCE='%s' is not a number of seconds "
                           "from 2 to 3600", e);
    *out = v;
    return DCOLL_SUCCESS;
}

static void random_token(char *out, size_t cap)
{
    unsigned char b[24];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, b, sizeof(b)) : -1;
    if (fd >= 0)
        close(fd);
    if (r != (ssize_t)sizeof(b))
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (unsigned char)(rand() ^ (int)getpid() ^ (int)(i * 131));
    for (size_t i = 0; i < sizeof(b) && 2 * i + 2 < cap; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void keeper_info_of(struct keeper_info *info)
{
    const char *a = getenv("DCOLL_KEEPER_ADDR");
    if (!a || !*a)
        a = dcoll_host_of(0);
    snprintf(info->addr, sizeof(info->addr), "%s", a);
    random_token(info->token, sizeof(info->token));
}

dcoll_status_t dcoll_keeper_open(struct dcoll_group *w, const int64_t *pids)
{
    struct keeper_info info;
    memset(&info, 0, sizeof(info));
    if (w->rank == 0) {
        dcoll_status_t st = fence_of(&info.fence);
        if (st) {
            info.port = -1;
            snprintf(info.why, sizeof(info.why), "%s", dcoll_last_error());
        } else {
            keeper_info_of(&info);
            kr.child = keeper_start(w->size, pids, &info);
        }
    }
    dcoll_status_t st = w->svc->bcast_bytes(w, &info, sizeof(info), 0);
    if (st)
        return st;
    info.why[sizeof(info.why) - 1] = '\0';
    info.addr[sizeof(info.addr) - 1] = '\0';
    info.token[sizeof(info.token) - 1] = '\0';
    if (info.port <= 0)
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: "
                           "DCOLL_ON_FAILURE=continue, but rank 0 could "
                           "not start dcoll's keeper, which says who died: "
                           "%s", info.why);
    struct dcoll_deaths_at at;
    memset(&at, 0, sizeof(at));
    snprintf(at.addr, sizeof(at.addr), "%s", info.addr);
    at.port = info.port;
    snprintf(at.token, sizeof(at.token), "%s", info.token);
    snprintf(at.prefix, sizeof(at.prefix), PREFIX);
    if ((st = dcoll_deaths_open(w->size, &at)))
        return st;
    kr.me = w->rank;
    kr.fence = info.fence;
    snprintf(kr.where, sizeof(kr.where), "%s:%d", info.addr, info.port);
    dcoll_store_params_t sp = DCOLL_STORE_PARAMS_INIT;
    sp.mask = DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_TOKEN;
    sp.timeout = 2;
    sp.token = info.token;
    dcoll_store_t *base = NULL;
    if ((st = dcoll_store_tcp_create(&base, info.addr, info.port, &sp)) ||
        (st = dcoll_store_prefix_over(&kr.s, PREFIX, base))) {
        dcoll_store_destroy(&base);
        dcoll_deaths_close();
        return dcoll_error(st, "dcoll_init: dcoll's keeper at %s: %s",
                           kr.where, dcoll_last_error());
    }
    /* This host's other ranks, watched for their end. */
    kr.pfd = calloc((size_t)w->size + 1, sizeof(*kr.pfd));
    kr.pfd_rank = calloc((size_t)w->size + 1, sizeof(int));
    kr.wake = eventfd(0, EFD_CLOEXEC);
    if (!kr.pfd || !kr.pfd_rank || kr.wake < 0) {
        dcoll_keeper_close(false);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory or "
                           "eventfd for the keeper's beat");
    }
    kr.pfd[0] = (struct pollfd){.fd = kr.wake, .events = POLLIN};
    kr.npfd = 1;
    const char *here = dcoll_host_of(w->rank);
    for (int r = 0; r < w->size; r++) {
        if (r == w->rank || strcmp(dcoll_host_of(r), here))
            continue;
        int fd = pidfd_of((pid_t)pids[r]);
        if (fd < 0)
            continue;   /* another pid namespace, say: the lease holds */
        kr.pfd[kr.npfd] = (struct pollfd){.fd = fd, .events = POLLIN};
        kr.pfd_rank[kr.npfd++] = r;
    }
    /* The thread reads pids while it runs: its own copy. */
    int64_t *mine = malloc(sizeof(int64_t) * (size_t)w->size);
    if (mine)
        memcpy(mine, pids, sizeof(int64_t) * (size_t)w->size);
    /* The first lease: from now, as the keeper's clock starts at its
     * own start, which came before. */
    atomic_store(&kr.lease_until, dcoll_now() + kr.fence / 2);
    int rc = mine ? pthread_create(&kr.thread, NULL, beat_main, mine) : -1;
    if (!rc && (rc = pthread_create(&kr.timer, NULL, timer_main, NULL))) {
        uint64_t one = 1;
        if (write(kr.wake, &one, sizeof(one)) == (ssize_t)sizeof(one))
            pthread_join(kr.thread, NULL);
    }
    if (rc) {
        free(mine);
        dcoll_keeper_close(false);
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: cannot start "
                           "the keeper's beat thread");
    }
    kr.pids = mine;
    kr.running = true;
    pthread_setname_np(kr.thread, "dcoll-beat");
    pthread_setname_np(kr.timer, "dcoll-lease");
    return DCOLL_SUCCESS;
}

void dcoll_keeper_close(bool bye)
{
    if (kr.running) {
        uint64_t one = 1;
        if (write(kr.wake, &one, sizeof(one)) == (ssize_t)sizeof(one)) {
            pthread_join(kr.thread, NULL);
            pthread_join(kr.timer, NULL);
        }
        kr.running = false;
    }
    if (bye && kr.s) {
        char key[64];
        int64_t n = 0;
        snprintf(key, sizeof(key), "dcoll/bye/%d", kr.me);
        if (!dcoll_store_set(kr.s, key, "1", 1))
            dcoll_store_add(kr.s, "dcoll/byes", 1, &n);
    }
    for (int i = 1; kr.pfd && i < kr.npfd; i++)
        if (kr.pfd[i].fd >= 0)
            close(kr.pfd[i].fd);
    if (kr.wake >= 0)
        close(kr.wake);
    dcoll_store_destroy(&kr.s);
    free(kr.pfd);
    free(kr.pfd_rank);
    free((void *)kr.pids);
    /* Rank 0 reaps the keeper if it has ended; else the keeper ends by
     * itself after the last rank's bye, and init reaps it. */
    if (kr.child > 0)
        waitpid(kr.child, NULL, WNOHANG);
    kr.pfd = NULL;
    kr.pfd_rank = NULL;
    kr.pids = NULL;
    kr.npfd = 0;
    kr.wake = -1;
    kr.child = -1;
}
