/* A PMI-1 server, so that MPICH processes no launcher started form one
 * MPI_COMM_WORLD, as under hydra. Rank 0 forks it before MPI starts; each
 * process then finds it through PMI_PORT, with PMI_RANK and PMI_SIZE, and
 * MPI_Init exchanges addresses through its key/value space. MPICH's UCX
 * netmod has no MPI_Open_port, so the connect/accept join cannot serve it.
 *
 * The wire is PMI-1's: one line per message, "cmd=NAME key=value ...".
 * Each process is started with PMI_ID, so that MPICH's client opens with
 * "cmd=initack pmiid=ID" and learns its rank and size from the answer, as
 * from hydra. The IDs are base + rank, base a random number rank 0 draws
 * and publishes only in the join's store (behind its token, where it has
 * one): a connection whose first line is not an initack with an ID of
 * this join, or of a rank already here, is a stranger and is dropped.
 * One that stays silent for SILENT_S is dropped too, and neither takes a
 * place, so a stranger cannot lock a process out. Once size have come the
 * listener closes. Every wait has the timeout as its deadline: not all
 * came, or a barrier that not all entered, and the server lets those who
 * did go (their MPI_Init fails) and leaves, naming on stderr the ranks
 * that did not come. It also leaves when every process has hung up. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <limits.h>
#include <time.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "mpi_internal.h"

#define LINE_MAX_BYTES 65536
#define KVS_MAX_BYTES (64u << 20)
#define SEND_TIMEOUT_S 10
/* How long a connection may stay silent before it is dropped, and how
 * many silent ones are held at once (more are closed at accept). */
#define SILENT_S 3.0
#define MAX_SILENT 16

struct client {
    int fd;
    char *in;
    size_t len;
    bool gone, waiting;   /* hung up or broken (its fd closed by the
                             loop); in a barrier */
    bool spoke;           /* has shown its ID: holds a place */
    int rank;             /* the place, once it spoke */
    double since;         /* when it connected */
};

struct kv {
    char *key, *val;
};

struct server {
    int size, joined;     /* places taken: connections that spoke */
    int base;             /* process r's ID is base + r */
    int n;                /* connections in c, silent ones included */
    struct client *c;
    double barrier_since; /* when the open barrier's first came; 0: none */
    double timeout;
    struct kv *kv;
    size_t nkv, kv_cap, kv_bytes;
    const char *mapping;  /* PMI_process_mapping, or NULL */
};

static void reply(struct client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void reply(struct client *c, const char *fmt, ...)
{
    /* A value takes at most a request line; room for the words around. */
    char buf[LINE_MAX_BYTES + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf) - 1 || c->gone)
        return;
    buf[n++] = '\n';
    for (int off = 0; off < n;) {
        ssize_t k = send(c->fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            c->gone = true;
            return;
        }
        off += (int)k;
    }
}

/* The value of attribute name in a parsed line, or NULL. */
static const char *attr(char **words, int n, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < n; i++)
        if (!strncmp(words[i], name, len) && words[i][len] == '=')
            return words[i] + len + 1;
    return NULL;
}

static const char *kv_find(struct server *s, const char *key)
{
    for (size_t i = 0; i < s->nkv; i++)
        if (!strcmp(s->kv[i].key, key))
            return s->kv[i].val;
    return NULL;
}

/* 0 stored, -1 no room, -2 the key is there with another value. */
static int kv_put(struct server *s, const char *key, const char *val)
{
    const char *have = kv_find(s, key);
    if (have)
        return strcmp(have, val) ? -2 : 0;
    size_t bytes = strlen(key) + strlen(val) + 2;
    if (s->kv_bytes + bytes > KVS_MAX_BYTES)
        return -1;
    if (s->nkv == s->kv_cap) {
        size_t cap = s->kv_cap ? 2 * s->kv_cap : 64;
        struct kv *kv = realloc(s->kv, cap * sizeof(*kv));
        if (!kv)
            return -1;
        s->kv = kv;
        s->kv_cap = cap;
    }
    struct kv e = {strdup(key), strdup(val)};
    if (!e.key || !e.val) {
        free(e.key);
        free(e.val);
        return -1;
    }
    s->kv[s->nkv++] = e;
    s->kv_bytes += bytes;
    return 0;
}

/* Release a barrier once all size processes came and every one still
 * here is in it: one that died counts out, so the rest learn of it from
 * MPI, not from a barrier that never ends. */
static void barrier_check(struct server *s)
{
    if (s->joined < s->size)
        return;
    int in = 0;
    for (int i = 0; i < s->n; i++) {
        if (!s->c[i].spoke)
            continue;
        if (!s->c[i].gone && !s->c[i].waiting)
            return;
        in += s->c[i].waiting;
    }
    if (!in)
        return;
    s->barrier_since = 0;
    for (int i = 0; i < s->n; i++)
        if (s->c[i].waiting) {
            s->c[i].waiting = false;
            reply(&s->c[i], "cmd=barrier_out rc=0");
        }
}

static void serve_line(struct server *s, struct client *c, char *line)
{
    char *words[16];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w && n < 16;
         w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    const char *cmd = attr(words, n, "cmd");
    if (!c->spoke) {
        /* Its first line must show an ID of this join, of a rank not
         * here yet; anything else is a stranger's. */
        const char *id = cmd && !strcmp(cmd, "initack")
                             ? attr(words, n, "pmiid") : NULL;
        char *end = NULL;
        long r = id ? strtol(id, &end, 10) - s->base : -1;
        bool taken = false;
        for (int i = 0; i < s->n && r >= 0 && r < s->size; i++)
            taken |= s->c[i].spoke && s->c[i].rank == r;
        if (!id || !*id || *end || r < 0 || r >= s->size || taken) {
            c->gone = true;
            return;
        }
        c->spoke = true;
        c->rank = (int)r;
        s->joined++;
        reply(c, "cmd=initack\ncmd=set size=%d\ncmd=set rank=%d\n"
              "cmd=set debug=0", s->size, c->rank);
        return;
    }
    if (!cmd) {
        reply(c, "cmd=error rc=-1 msg=no_cmd");
        return;
    }
    if (!strcmp(cmd, "init")) {
        reply(c, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0");
    } else if (!strcmp(cmd, "get_maxes")) {
        reply(c, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 "
              "rc=0");
    } else if (!strcmp(cmd, "get_appnum")) {
        reply(c, "cmd=appnum appnum=0 rc=0");
    } else if (!strcmp(cmd, "get_universe_size")) {
        reply(c, "cmd=universe_size size=%d rc=0", s->size);
    } else if (!strcmp(cmd, "get_my_kvsname")) {
        reply(c, "cmd=my_kvsname kvsname=dcoll_kvs rc=0");
    } else if (!strcmp(cmd, "put")) {
        const char *key = attr(words, n, "key");
        const char *val = attr(words, n, "value");
        int rc = key && val ? kv_put(s, key, val) : -3;
        if (rc)
            reply(c, "cmd=put_result rc=-1 msg=%s", rc == -1 ? "no_room"
                  : rc == -2 ? "duplicate_key" : "no_key_or_value");
        else
            reply(c, "cmd=put_result rc=0");
    } else if (!strcmp(cmd, "get")) {
        const char *key = attr(words, n, "key");
        const char *val = !key ? NULL
                          : !strcmp(key, "PMI_process_mapping") ? s->mapping
                          : kv_find(s, key);
        if (val)
            reply(c, "cmd=get_result rc=0 found=TRUE value=%s", val);
        else
            reply(c, "cmd=get_result rc=-1 found=FALSE msg=key_not_found");
    } else if (!strcmp(cmd, "barrier_in")) {
        c->waiting = true;
        if (!s->barrier_since)
            s->barrier_since = dcoll_now();
        barrier_check(s);
    } else if (!strcmp(cmd, "finalize")) {
        reply(c, "cmd=finalize_ack rc=0");
    } else if (!strcmp(cmd, "abort")) {
        /* The process ends itself; its peers learn of it from MPI. */
    } else {
        reply(c, "cmd=%.64s_result rc=-1 msg=not_served_by_dcoll", cmd);
    }
}

/* Read what c sent and serve each whole line; false once it is gone. */
static bool serve_client(struct server *s, struct client *c)
{
    char buf[8192];
    ssize_t k = recv(c->fd, buf, sizeof(buf), 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (k <= 0 || c->len + (size_t)k > LINE_MAX_BYTES)
        return false;
    char *in = realloc(c->in, c->len + (size_t)k + 1);
    if (!in)
        return false;
    c->in = in;
    memcpy(c->in + c->len, buf, (size_t)k);
    c->len += (size_t)k;
    c->in[c->len] = '\0';
    char *nl;
    size_t done = 0;
    while (!c->gone && (nl = memchr(c->in + done, '\n', c->len - done))) {
        *nl = '\0';
        serve_line(s, c, c->in + done);
        done = (size_t)(nl - c->in) + 1;
    }
    memmove(c->in, c->in + done, c->len - done);
    c->len -= done;
    return !c->gone;
}

static void drop(struct server *s, struct client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->gone = true;
    c->waiting = false;
    barrier_check(s);
}

/* Let everyone go (their MPI_Init fails, none waits on) and say why,
 * naming the ranks that are missing: absent ones, and for a barrier also
 * those here but not in it. */
static void give_up(struct server *s, const char *what, bool barrier)
{
    char names[512];
    size_t off = 0;
    int missing = 0;
    for (int r = 0; r < s->size; r++) {
        bool here = false;
        for (int i = 0; i < s->n; i++) {
            const struct client *c = &s->c[i];
            here |= c->spoke && c->rank == r &&
                    (!barrier || (c->waiting && !c->gone));
        }
        if (here)
            continue;
        if (missing++ < 32 && off < sizeof(names))
            off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%d",
                                    missing > 1 ? "," : "", r);
    }
    if (missing > 32 && off < sizeof(names))
        snprintf(names + off, sizeof(names) - off, ",...");
    fprintf(stderr, "dcoll PMI server: %s: %d of the %d processes did not "
            "come within %g s (rank%s %s); ending the join\n", what, missing,
            s->size, s->timeout, missing == 1 ? "" : "s",
            missing ? names : "none");
    for (int i = 0; i < s->n; i++)
        drop(s, &s->c[i]);
}

static void serve(int lfd, int size, int base, const char *mapping,
                  double timeout)
{
    struct server s = {.size = size, .base = base, .mapping = mapping,
                       .timeout = timeout};
    int cap = size + MAX_SILENT;
    s.c = calloc((size_t)cap, sizeof(*s.c));
    struct pollfd *p = calloc((size_t)cap + 1, sizeof(*p));
    int *who = calloc((size_t)cap + 1, sizeof(*who));  /* p[j]'s client */
    if (!s.c || !p || !who)
        dcoll_exit_now(1);
    double deadline = dcoll_now() + timeout;
    for (;;) {
        double now = dcoll_now();
        int silent = 0;
        /* A reply that could not be sent broke its client, and a
         * connection silent too long holds nothing: close them. */
        for (int i = 0; i < s.n; i++) {
            struct client *c = &s.c[i];
            if (c->fd >= 0 && !c->spoke &&
                (lfd < 0 || now - c->since > SILENT_S))
                c->gone = true;
            if (c->gone && c->fd >= 0)
                drop(&s, c);
            silent += c->fd >= 0 && !c->spoke;
        }
        if (s.joined == size && lfd >= 0) {
            close(lfd);
            lfd = -1;
            continue;   /* and drop the silent ones */
        }
        int n = 0;
        if (lfd >= 0) {
            who[n] = -1;
            p[n++] = (struct pollfd){.fd = lfd, .events = POLLIN};
        }
        for (int i = 0; i < s.n; i++)
            if (!s.c[i].gone) {
                who[n] = i;
                p[n++] = (struct pollfd){.fd = s.c[i].fd, .events = POLLIN};
            }
        if (n == 0)
            break;   /* all came, and all have gone */
        if (lfd >= 0 && now > deadline) {
            give_up(&s, "the join", false);
            break;
        }
        if (s.barrier_since && now > s.barrier_since + timeout) {
            give_up(&s, "a barrier", true);
            break;
        }
        if (poll(p, (nfds_t)n, 200) < 0 && errno != EINTR)
            break;
        for (int j = 0; j < n; j++) {
            short ev = p[j].revents;
            if (who[j] < 0) {
                if (!(ev & POLLIN))
                    continue;
                int fd = accept(lfd, NULL, NULL);
                if (fd < 0)
                    continue;
                /* A place for it, reusing one a dropped silent one left;
                 * past MAX_SILENT waiting to speak, it is not held. */
                int at = -1;
                for (int i = 0; i < s.n && at < 0; i++)
                    if (s.c[i].fd < 0 && !s.c[i].spoke)
                        at = i;
                if (at < 0 && s.n < cap)
                    at = s.n++;
                if (at < 0 || silent >= MAX_SILENT) {
                    close(fd);
                    continue;
                }
                silent++;
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                /* A client that stops reading its replies is dropped, not
                 * waited for: the others' replies come from this loop. */
                struct timeval tv = {SEND_TIMEOUT_S, 0};
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
                free(s.c[at].in);
                s.c[at] = (struct client){.fd = fd, .since = dcoll_now()};
            } else {
                struct client *c = &s.c[who[j]];
                if (!c->gone && (ev & (POLLIN | POLLHUP | POLLERR)) &&
                    !serve_client(&s, c))
                    drop(&s, c);
            }
        }
    }
    dcoll_exit_now(0);
}

dcoll_status_t dcoll_pmi_serve(const char *addr, int size,
                               const char *mapping, double timeout,
                               pid_t *pid, char *hostport, size_t cap,
                               int *base)
{
    /* The IDs: base + rank, below INT_MAX, base not guessable. */
    uint32_t draw = 0;
    if (getrandom(&draw, sizeof(draw), 0) != sizeof(draw))
        draw = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
    *base = (int)(draw % (uint32_t)(INT_MAX - size));
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: '%s' "
                           "is no IPv4 address to serve PMI at", addr);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
        listen(lfd, size < 128 ? size : 128) ||
        getsockname(lfd, (struct sockaddr *)&a, &len)) {
        int e = errno;
        if (lfd >= 0)
            close(lfd);
        return dcoll_error(DCOLL_ERR_IO, "dcoll_init: cannot serve PMI at "
                           "%s: %s", addr, strerror(e));
    }
    snprintf(hostport, cap, "%s:%d", addr, ntohs(a.sin_port));
    *pid = fork();
    if (*pid < 0) {
        close(lfd);
        return dcoll_error(DCOLL_ERR_IO, "dcoll_init: fork for the PMI "
                           "server: %s", strerror(errno));
    }
    if (*pid == 0) {
        /* Keep nothing of the parent's open but the listener: a store's
         * socket held here would outlive the store. */
        if (lfd != 3 && dup2(lfd, 3) < 0)
            dcoll_exit_now(1);
        lfd = 3;
        close_range(4, ~0u, 0);
        signal(SIGPIPE, SIG_IGN);
        serve(lfd, size, *base, mapping, timeout);
    }
    close(lfd);
    return DCOLL_SUCCESS;
}
