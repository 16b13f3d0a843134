/* The TCP store's client: one blocking connection, every read and write
 * bounded by a deadline with poll(), so a dead server is a timeout. A
 * server lets go of a client idle past its idle_close: the next request
 * finds the connection closed and makes a new one, token and all. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "store.h"
#include "store_wire.h"

struct tcp_store {
    struct dcoll_store base;
    int fd;
    char *host;
    char *token;                  /* what it shows on connecting, or NULL */
    struct store_server *server;  /* when this process serves */
};

/* Time the server may take beyond a wait's own timeout to answer. */
#define SLACK 5.0

static dcoll_status_t io_error(struct tcp_store *t, const char *what)
{
    /* The connection is out of step now: drop it. */
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    return dcoll_error(DCOLL_ERR_IO, "TCP store %s:%d: %s", t->host,
                       t->base.port, what);
}

static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        double left = deadline - dcoll_now();
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, ev, 0};
        int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return 1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

static dcoll_status_t send_all(struct tcp_store *t, const uint8_t *p,
                               size_t n, double deadline)
{
    while (n) {
        int w = wait_fd(t->fd, POLLOUT, deadline);
        if (w == 0)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "TCP store %s:%d: sending "
                               "timed out", t->host, t->base.port);
        ssize_t k = w < 0 ? -1 : send(t->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0)
            return io_error(t, strerror(errno));
        p += k;
        n -= (size_t)k;
    }
    return DCOLL_SUCCESS;
}

/* Whether the server has closed the connection while it was idle: an
 * end of stream is waiting, and nothing before it. */
static bool closed_idle(const struct tcp_store *t)
{
    struct pollfd p = {t->fd, POLLIN, 0};
    uint8_t b;
    return poll(&p, 1, 0) == 1 &&
           recv(t->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static dcoll_status_t join(struct tcp_store *t, double deadline);

static dcoll_status_t recv_all(struct tcp_store *t, uint8_t *p, size_t n,
                               double deadline)
{
    while (n) {
        int w = wait_fd(t->fd, POLLIN, deadline);
        if (w == 0)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "TCP store %s:%d: no answer "
                               "in time", t->host, t->base.port);
        ssize_t k = w < 0 ? -1 : recv(t->fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k == 0)
            return io_error(t, "the server closed the connection");
        if (k < 0)
            return io_error(t, strerror(errno));
        p += k;
        n -= (size_t)k;
    }
    return DCOLL_SUCCESS;
}

/* One request and its reply. *body holds the reply (free it); rm's
 * strings point into it. */
static dcoll_status_t call(struct tcp_store *t, enum wire_op op, int64_t num,
                           int nstr, const struct wire_str *str,
                           double deadline, struct wire_msg *rm,
                           uint8_t **body)
{
    *body = NULL;
    if (t->fd >= 0 && op != WIRE_AUTH && closed_idle(t)) {
        close(t->fd);
        t->fd = -1;
        dcoll_status_t st = join(t, deadline);
        if (st)
            return st;
    }
    if (t->fd < 0)
        return dcoll_error(DCOLL_ERR_IO, "TCP store %s:%d: the connection "
                           "was lost earlier", t->host, t->base.port);
    size_t n = wire_frame_size(nstr, str);
    uint8_t *req = malloc(n);
    if (!req)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    wire_encode(req, (uint8_t)op, num, nstr, str);
    dcoll_status_t st = send_all(t, req, n, deadline);
    free(req);
    uint8_t hdr[4];
    if (st || (st = recv_all(t, hdr, 4, deadline)))
        return st;
    uint32_t len = wire_get32(hdr);
    if (len > WIRE_MAX_BODY)
        return io_error(t, "the server sent an oversized reply");
    if (!(*body = malloc(len ? len : 1)))
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    if ((st = recv_all(t, *body, len, deadline)))
        return st;
    if (wire_parse(*body, len, rm))
        return io_error(t, "the server sent a malformed reply");
    switch (rm->code) {
    case WIRE_OK:
        return DCOLL_SUCCESS;
    case WIRE_TIMEOUT:
        return dcoll_error(DCOLL_ERR_TIMEOUT, "TCP store %s:%d: the keys did "
                           "not appear in time", t->host, t->base.port);
    case WIRE_NOT_NUMBER:
        if (rm->nstr)   /* an overflow, as the server says it */
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "TCP store: %.*s",
                               (int)rm->str[0].len,
                               (const char *)rm->str[0].p);
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "TCP store: the value "
                           "under the key is not an integer");
    default: {
        char msg[256] = "no reason given";
        if (rm->nstr)
            snprintf(msg, sizeof(msg), "%.*s", (int)rm->str[0].len,
                     (const char *)rm->str[0].p);
        if (rm->code == WIRE_FULL)   /* the connection is still good */
            return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store %s:%d: %s",
                               t->host, t->base.port, msg);
        io_error(t, "");
        return dcoll_error(rm->code == WIRE_BUSY ? DCOLL_ERR_IO
                                                 : DCOLL_ERR_REFUSED,
                           "TCP store %s:%d refused the %s: %s", t->host,
                           t->base.port, rm->code == WIRE_BUSY
                           ? "connection" : "request", msg);
    }
    }
}

static struct wire_str S(const void *p, size_t n)
{
    return (struct wire_str){p, (uint32_t)n};
}

static struct wire_str K(const char *key)
{
    return S(key, strlen(key));
}

static double deadline_of(struct tcp_store *t)
{
    return dcoll_now() + t->base.timeout;
}

static int64_t ms_of(double s)
{
    return s > 1e9 ? (int64_t)1e12 : (int64_t)(s * 1000);
}

static dcoll_status_t take_value(struct wire_msg *m, uint8_t *body,
                                 struct store_val *out)
{
    out->len = m->nstr ? m->str[0].len : 0;
    out->p = malloc(out->len ? out->len : 1);
    if (!out->p) {
        free(body);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    }
    if (out->len)
        memcpy(out->p, m->str[0].p, out->len);
    free(body);
    return DCOLL_SUCCESS;
}

/* Replies are small; the message is kept off the stack. */
#define CALL(t, op, num, n, strs, dl)                                      \
    struct wire_msg *m = malloc(sizeof(*m));                               \
    uint8_t *body = NULL;                                                  \
    dcoll_status_t st = m ? call(t, op, num, n, strs, dl, m, &body)        \
                          : dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory")

static dcoll_status_t t_set(dcoll_store_t *s, const char *key, const void *v,
                            size_t n)
{
    struct tcp_store *t = (struct tcp_store *)s;
    struct wire_str a[2] = {K(key), S(v, n)};
    CALL(t, WIRE_SET, 0, 2, a, deadline_of(t));
    free(body);
    free(m);
    return st;
}

static dcoll_status_t t_get(dcoll_store_t *s, const char *key, double tmo,
                            struct store_val *out)
{
    struct tcp_store *t = (struct tcp_store *)s;
    struct wire_str a[1] = {K(key)};
    CALL(t, WIRE_GET, ms_of(tmo), 1, a, dcoll_now() + tmo + SLACK);
    if (!st)
        st = take_value(m, body, out);
    else
        free(body);
    free(m);
    return st;
}

static dcoll_status_t t_add(dcoll_store_t *s, const char *key, int64_t d,
                            int64_t *sum)
{
    struct tcp_store *t = (struct tcp_store *)s;
    struct wire_str a[1] = {K(key)};
    CALL(t, WIRE_ADD, d, 1, a, deadline_of(t));
    if (!st)
        *sum = m->num;
    free(body);
    free(m);
    return st;
}

static dcoll_status_t t_cas(dcoll_store_t *s, const char *key, const void *e,
                            size_t el, const void *d, size_t dl,
                            struct store_val *now)
{
    struct tcp_store *t = (struct tcp_store *)s;
    struct wire_str a[3] = {K(key), S(e, el), S(d, dl)};
    CALL(t, WIRE_CAS, 0, 3, a, deadline_of(t));
    if (!st)
        st = take_value(m, body, now);
    else
        free(body);
    free(m);
    return st;
}

static dcoll_status_t t_keys(dcoll_store_t *s, enum wire_op op,
                             const char *const *keys, int n, double tmo,
                             int *exist)
{
    struct tcp_store *t = (struct tcp_store *)s;
    struct wire_str a[255];
    for (int i = 0; i < n; i++)
        a[i] = K(keys[i]);
    CALL(t, op, ms_of(tmo), n, a,
         op == WIRE_WAIT ? dcoll_now() + tmo + SLACK : deadline_of(t));
    if (!st && exist)
        *exist = m->num != 0;
    free(body);
    free(m);
    return st;
}

static dcoll_status_t t_wait(dcoll_store_t *s, const char *const *keys, int n,
                             double tmo)
{
    return t_keys(s, WIRE_WAIT, keys, n, tmo, NULL);
}

static dcoll_status_t t_check(dcoll_store_t *s, const char *const *keys,
                              int n, int *exist)
{
    return t_keys(s, WIRE_CHECK, keys, n, 0, exist);
}

static dcoll_status_t t_del(dcoll_store_t *s, const char *key, int *deleted)
{
    struct tcp_store *t = (struct tcp_store *)s;
    struct wire_str a[1] = {K(key)};
    CALL(t, WIRE_DELETE, 0, 1, a, deadline_of(t));
    if (!st)
        *deleted = m->num != 0;
    free(body);
    free(m);
    return st;
}

static dcoll_status_t t_num_keys(dcoll_store_t *s, int64_t *count)
{
    struct tcp_store *t = (struct tcp_store *)s;
    CALL(t, WIRE_NUMKEYS, 0, 0, NULL, deadline_of(t));
    if (!st)
        *count = m->num;
    free(body);
    free(m);
    return st;
}

static void t_destroy(dcoll_store_t *s)
{
    struct tcp_store *t = (struct tcp_store *)s;
    if (t->fd >= 0)
        close(t->fd);
    if (t->server)
        dcoll_store_server_stop(t->server);
    free(t->host);
    free(t->token);
    free(t);
}

static const struct store_ops tcp_ops = {
    "tcp", t_set, t_get, t_add, t_cas, t_wait, t_check, t_del, t_num_keys,
    t_destroy,
};

/* Present the token (empty if none) before anything else: a server that
 * wants one answers nothing until it has it, and one that is full says so
 * here. *busy: it was full, or hung up. */
static dcoll_status_t t_auth(struct tcp_store *t, const char *token,
                             double deadline, bool *busy)
{
    struct wire_str a[1] = {K(token ? token : "")};
    struct wire_msg *m = malloc(sizeof(*m));
    uint8_t *body = NULL;
    if (!m)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    m->code = WIRE_OK;   /* stays so unless a reply came */
    dcoll_status_t st = call(t, WIRE_AUTH, 0, 1, a, deadline, m, &body);
    /* Full, or so full it hung up without a word: try again. */
    *busy = st && (m->code == WIRE_BUSY || st == DCOLL_ERR_IO);
    free(body);
    free(m);
    return st;
}

/* Connect, retrying while the server is not up yet, until the deadline. */
static dcoll_status_t dial(struct tcp_store *t, double deadline)
{
    char port[8];
    snprintf(port, sizeof(port), "%d", t->base.port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(t->host, port, &hints, &res);
    if (rc)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "TCP store: host '%s' "
                           "does not resolve: %s", t->host, gai_strerror(rc));
    double pause = 0.01;
    int last = 0;
    for (;;) {
        for (struct addrinfo *a = res; a; a = a->ai_next) {
            int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                            a->ai_protocol);
            if (fd < 0)
                continue;
            if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                t->fd = fd;
                freeaddrinfo(res);
                return DCOLL_SUCCESS;
            }
            last = errno;
            close(fd);
        }
        if (dcoll_now() + pause > deadline)
            break;
        usleep((useconds_t)(pause * 1e6));
        if (pause < 0.5)
            pause *= 2;
    }
    freeaddrinfo(res);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "TCP store: no server answered at "
                       "%s:%d within %g s (last error: %s)", t->host,
                       t->base.port, t->base.timeout, strerror(last));
}

/* Connect and show the token. A server with all its connections taken
 * says so at once: try again until the deadline, as for one that is not
 * up yet. */
static dcoll_status_t join(struct tcp_store *t, double deadline)
{
    double pause = 0.01;
    bool busy = false;
    dcoll_status_t st;
    for (;;) {
        if (!(st = dial(t, deadline)) &&
            !(st = t_auth(t, t->token, deadline, &busy)))
            return DCOLL_SUCCESS;
        double left = deadline - dcoll_now();
        if (!busy || left <= 0)
            return st;
        usleep((useconds_t)((pause < left ? pause : left) * 1e6));
        if (dcoll_now() >= deadline)
            return st;   /* with the server's refusal as the error */
        if (pause < 0.5)
            pause *= 2;
    }
}

dcoll_status_t dcoll_store_tcp_open(dcoll_store_t **out, const char *host,
                                    int port, const dcoll_store_params_t *p)
{
    struct tcp_store *t = calloc(1, sizeof(*t));
    if (!t || !(t->host = strdup(host))) {
        free(t);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    }
    t->base = (struct dcoll_store){DCOLL_STORE_MAGIC, &tcp_ops, p->timeout,
                                   port, false};
    t->fd = -1;
    dcoll_status_t st = DCOLL_SUCCESS;
    if (p->token && !(t->token = strdup(p->token)))
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    if (!st && p->serve)
        st = dcoll_store_server_start(host, port, p, &t->server,
                                      &t->base.port);
    if (!st)
        st = join(t, deadline_of(t));
    if (st) {
        t_destroy(&t->base);
        return st;
    }
    *out = &t->base;
    return DCOLL_SUCCESS;
}
