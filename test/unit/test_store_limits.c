/* The TCP store server's limits, each tried the way an attacker or a
 * broken client would, with a proper client served meanwhile: the size of
 * a request before the token, the connection caps, the idle deadline, a
 * client that does not read its replies, and the memory bound. Also how
 * the limits are set and checked. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "dcoll/dcoll.h"
#include "store_wire.h"
#include "store_raw.h"

#define OK(call) assert_int_equal((call), DCOLL_SUCCESS)
#define HAS(text) assert_non_null(strstr(dcoll_last_error(), (text)))

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A served store with the limits in p (mask bits set by the caller). */
static dcoll_store_t *serve(dcoll_store_params_t p, const char *token)
{
    p.mask |= DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_TIMEOUT |
              DCOLL_STORE_PARAM_TOKEN;
    p.serve = 1;
    p.timeout = 5;
    p.token = token;
    dcoll_store_t *s = NULL;
    OK(dcoll_store_tcp_create(&s, "127.0.0.1", 0, &p));
    return s;
}

static dcoll_status_t connect_to(dcoll_store_t **c, int port,
                                 const char *token, double timeout)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_TOKEN;
    p.timeout = timeout;
    p.token = token;
    return dcoll_store_tcp_create(c, "127.0.0.1", port, &p);
}

static int port_of(dcoll_store_t *s)
{
    int port = 0;
    OK(dcoll_store_port(s, &port));
    return port;
}

/* The store still answers through handle s. */
static void still_served(dcoll_store_t *s)
{
    char buf[8];
    size_t len = 0;
    OK(dcoll_store_set(s, "alive", "yes", 3));
    OK(dcoll_store_get(s, "alive", buf, sizeof(buf), &len));
    assert_int_equal(len, 3);
}

static void bad_limit(uint64_t bit, dcoll_store_params_t p, const char *want)
{
    p.mask = bit;
    dcoll_store_t *s = NULL;
    assert_int_equal(dcoll_store_tcp_create(&s, "127.0.0.1", 0, &p),
                     DCOLL_ERR_INVALID_ARGUMENT);
    if (!strstr(dcoll_last_error(), want))
        fail_msg("wanted '%s' in: %s", want, dcoll_last_error());
    assert_null(s);
}

static void limits_checked(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.max_clients = 0;
    bad_limit(DCOLL_STORE_PARAM_MAX_CLIENTS, p, "max_clients 0 is out of range");
    p.max_unauthed = -3;
    bad_limit(DCOLL_STORE_PARAM_MAX_UNAUTHED, p, "max_unauthed -3");
    p.unauthed_frame = 10;
    bad_limit(DCOLL_STORE_PARAM_UNAUTHED_FRAME, p, "unauthed_frame 10");
    p.idle_timeout = -1;
    bad_limit(DCOLL_STORE_PARAM_IDLE_TIMEOUT, p, "idle_timeout -1");
    p.idle_timeout = 0.0 / 0.0;
    bad_limit(DCOLL_STORE_PARAM_IDLE_TIMEOUT, p, "idle_timeout");
    p.max_memory = 0;
    bad_limit(DCOLL_STORE_PARAM_MAX_MEMORY, p, "max_memory 0");
    p.idle_close = -2;
    bad_limit(DCOLL_STORE_PARAM_IDLE_CLOSE, p, "idle_close -2");
    bad_limit(UINT64_C(1) << 9, p, "unknown bits");

    /* The token must fit in a request made before it is shown. */
    char token[201];
    memset(token, 't', 200);
    token[200] = '\0';
    p = (dcoll_store_params_t)DCOLL_STORE_PARAMS_INIT;
    p.token = token;
    p.unauthed_frame = 128;
    bad_limit(DCOLL_STORE_PARAM_TOKEN | DCOLL_STORE_PARAM_UNAUTHED_FRAME, p,
              "does not fit in unauthed_frame 128");

    /* From the environment, checked as the fields are. */
    setenv("DCOLL_STORE_MAX_CLIENTS", "lots", 1);
    bad_limit(0, p, "DCOLL_STORE_MAX_CLIENTS='lots'");
    setenv("DCOLL_STORE_MAX_CLIENTS", "2.5", 1);
    bad_limit(0, p, "max_clients 2.5 is not a whole number");
    unsetenv("DCOLL_STORE_MAX_CLIENTS");
    setenv("DCOLL_STORE_IDLE_TIMEOUT", "0", 1);
    bad_limit(0, p, "DCOLL_STORE_IDLE_TIMEOUT='0'");
    unsetenv("DCOLL_STORE_IDLE_TIMEOUT");

    /* A set field wins over the environment. */
    setenv("DCOLL_STORE_MAX_CLIENTS", "junk", 1);
    p = (dcoll_store_params_t)DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_CLIENTS;
    p.max_clients = 8;
    dcoll_store_t *s = serve(p, NULL);
    unsetenv("DCOLL_STORE_MAX_CLIENTS");
    still_served(s);
    dcoll_store_destroy(&s);
}

/* Before its token a peer may send only a small request. */
static void unauthed_frame(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_UNAUTHED_FRAME;
    p.unauthed_frame = 128;
    dcoll_store_t *s = serve(p, "tok");
    int port = port_of(s);
    char msg[160];

    /* A header announcing 8 MiB: refused on the header alone. */
    int fd = raw_connect(port);
    uint8_t big[4] = {0x00, 0x00, 0x80, 0x00};
    raw_send(fd, big, 4);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_string_equal(msg, "request of 8388608 bytes is over the limit of "
                             "128 before the token is shown");
    raw_closed(fd);

    /* One byte over. */
    fd = raw_connect(port);
    uint8_t over[4] = {129, 0, 0, 0};
    raw_send(fd, over, 4);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_non_null(strstr(msg, "129 bytes is over the limit of 128"));
    raw_closed(fd);

    /* A small request that is not the token. */
    fd = raw_connect(port);
    struct wire_str kv[2] = {{(const uint8_t *)"k", 1},
                             {(const uint8_t *)"v", 1}};
    raw_request(fd, WIRE_SET, 2, kv);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_UNAUTHORIZED);
    assert_string_equal(msg, "this store needs a token first");
    raw_closed(fd);

    /* Once shown, large values pass. */
    size_t n = 1 << 20;
    char *v = calloc(1, n);
    OK(dcoll_store_set(s, "large", v, n));
    dcoll_store_t *c = NULL;
    OK(connect_to(&c, port, "tok", 5));
    size_t len = 0;
    OK(dcoll_store_get(c, "large", v, n, &len));
    assert_int_equal(len, n);
    free(v);
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

struct late {
    int port;
    const char *token;
    dcoll_status_t st;
};

static void *connect_late(void *arg)
{
    struct late *l = arg;
    dcoll_store_t *c = NULL;
    l->st = connect_to(&c, l->port, l->token, 10);
    if (!l->st)
        l->st = dcoll_store_set(c, "late", "in", 2);
    dcoll_store_destroy(&c);
    return NULL;
}

/* The server has its connection: a request on it gets an answer. */
static void served(int fd)
{
    char msg[64];
    raw_request(fd, WIRE_NUMKEYS, 0, NULL);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_OK);
}

static void connection_cap(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_CLIENTS;
    p.max_clients = 3;
    dcoll_store_t *s = serve(p, NULL);   /* its own connection: 1 */
    int port = port_of(s);
    int a = raw_connect(port), b = raw_connect(port);
    served(a);
    served(b);

    /* One more: told at once, before it sends anything. */
    char msg[160];
    double t0 = now();
    int fd = raw_connect(port);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BUSY);
    print_message("refused in %.1f ms: %s\n", (now() - t0) * 1e3, msg);
    assert_string_equal(msg, "the store serves at most 3 connections "
                             "(max_clients) and has them all");
    close(fd);
    /* A flood of them changes nothing for those served. */
    int flood[64];
    for (int i = 0; i < 64; i++)
        flood[i] = raw_connect(port);
    still_served(s);
    served(a);
    for (int i = 0; i < 64; i++)
        close(flood[i]);

    /* A client retries until its timeout, then says why. */
    dcoll_store_t *c = NULL;
    t0 = now();
    assert_int_equal(connect_to(&c, port, NULL, 0.5), DCOLL_ERR_IO);
    HAS("refused the connection: the store serves at most 3 connections");
    assert_true(now() - t0 >= 0.4 && now() - t0 < 3);

    /* One leaves: a client retrying gets in. */
    struct late l = {port, NULL, -1};
    pthread_t th;
    pthread_create(&th, NULL, connect_late, &l);
    usleep(300000);
    close(a);
    pthread_join(th, NULL);
    OK(l.st);
    close(b);
    dcoll_store_destroy(&s);
}

static void unauthed_cap(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_UNAUTHED;
    p.max_unauthed = 2;
    dcoll_store_t *s = serve(p, "tok");
    int port = port_of(s);
    dcoll_store_t *c = NULL;
    OK(connect_to(&c, port, "tok", 5));

    /* Two peers that never show a token fill the cap. */
    int a = raw_connect(port), b = raw_connect(port);
    char msg[160];
    int fd = raw_connect(port);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BUSY);
    assert_string_equal(msg, "the store has 2 connections that have not "
                             "shown the token yet, its limit (max_unauthed)");
    close(fd);
    /* Clients already in go on. */
    still_served(c);
    still_served(s);

    /* A peer that shows it leaves the cap; a new client then gets in. */
    struct wire_str tok = {(const uint8_t *)"tok", 3};
    raw_request(a, WIRE_AUTH, 1, &tok);
    assert_int_equal(raw_reply(a, msg, sizeof(msg)), WIRE_OK);
    dcoll_store_t *d = NULL;
    OK(connect_to(&d, port, "tok", 5));
    still_served(d);
    close(a);
    close(b);
    dcoll_store_destroy(&d);
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

/* Cut off after about the idle timeout, told why. */
static void cut_off(int fd, const char *want, double t0)
{
    char msg[160];
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_string_equal(msg, want);
    double took = now() - t0;
    print_message("cut off after %.3f s: %s\n", took, msg);
    assert_true(took >= 0.25 && took < 3);
    raw_closed(fd);
}

static void idle_deadline(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_IDLE_TIMEOUT;
    p.idle_timeout = 0.3;

    /* With a token: a peer that connects and says nothing. */
    dcoll_store_t *s = serve(p, "tok");
    double t0 = now();
    int fd = raw_connect(port_of(s));
    cut_off(fd, "no token shown within 0.3 s of connecting: disconnected",
            t0);
    dcoll_store_destroy(&s);

    s = serve(p, NULL);
    int port = port_of(s);
    /* Half a request, then nothing. */
    fd = raw_connect(port);
    uint8_t half[] = {40, 0, 0, 0, WIRE_SET, 2, 0};
    t0 = now();
    raw_send(fd, half, sizeof(half));
    cut_off(fd, "no complete request within 0.3 s: disconnected", t0);

    /* A byte at a time, each within the deadline: the request as a whole
     * must come within it. */
    fd = raw_connect(port);
    t0 = now();
    raw_send(fd, half, 1);
    for (int i = 1; i < 4; i++) {
        usleep(100000);
        send(fd, half + i, 1, MSG_NOSIGNAL);
    }
    cut_off(fd, "no complete request within 0.3 s: disconnected", t0);

    /* A client that is quiet between requests is not cut off, nor one
     * waiting for a key longer than the deadline. */
    dcoll_store_t *c = NULL;
    OK(connect_to(&c, port, NULL, 5));
    usleep(600000);
    still_served(c);
    char buf[8];
    size_t len;
    t0 = now();
    OK(dcoll_store_set(c, "a", "1", 1));
    assert_int_equal(dcoll_store_wait(c, (const char *[]){"never"}, 1, 0.8),
                     DCOLL_ERR_TIMEOUT);
    assert_true(now() - t0 >= 0.75);
    OK(dcoll_store_get(c, "a", buf, sizeof(buf), &len));
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* A client that asks for 64 MiB of replies and reads none. */
static void slow_reader(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_IDLE_TIMEOUT;
    p.idle_timeout = 0.5;
    dcoll_store_t *s = serve(p, NULL);
    int port = port_of(s);
    size_t n = 1 << 20;
    char *v = calloc(1, n);
    OK(dcoll_store_set(s, "big", v, n));
    free(v);
    long before = rss_kib();

    int fd = raw_connect(port);
    struct wire_str k = {(const uint8_t *)"big", 3};
    uint8_t frame[64];
    size_t fl = wire_frame_size(1, &k);
    wire_encode(frame, WIRE_GET, 0, 1, &k);
    double t0 = now();
    for (int i = 0; i < 64; i++)
        raw_send(fd, frame, fl);
    usleep(100000);
    still_served(s);
    long during = rss_kib();

    /* Cut off after the deadline: what it reads now ends well short of
     * the 64 replies. */
    usleep(900000);
    size_t got = 0;
    char buf[65536];
    ssize_t k2;
    while ((k2 = recv(fd, buf, sizeof(buf), 0)) > 0)
        got += (size_t)k2;
    close(fd);
    print_message("cut off; it got %.1f MiB of 64; the server grew by "
                  "%.1f MiB meanwhile\n", got / 1048576.0,
                  (during - before) / 1024.0);
    assert_true(got < 32 * n);
    assert_true(now() - t0 < 5);
    still_served(s);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* Its replies were held back, not queued: well under 64 MiB (the
     * sanitizers' own memory hides this). */
    assert_true(during - before < 40 * 1024);
#else
    (void)before;
    (void)during;
#endif
    dcoll_store_destroy(&s);
}

static void memory_bound(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_MEMORY;
    p.max_memory = 10000;
    dcoll_store_t *s = serve(p, NULL);
    char *v = calloc(1, 9990);   /* "a" with 9910 bytes counts 9959 */
    char buf[16];
    size_t len;
    int64_t sum, count;
    OK(dcoll_store_set(s, "a", v, 9910));

    /* Past the limit: each fails, says so, and changes nothing. */
    assert_int_equal(dcoll_store_set(s, "b", "xy", 2), DCOLL_ERR_NO_MEMORY);
    HAS("the store is full: it holds 9959 bytes of its limit of 10000");
    assert_int_equal(dcoll_store_add(s, "n", 1, &sum), DCOLL_ERR_NO_MEMORY);
    assert_int_equal(dcoll_store_compare_set(s, "c", "", 0, "x", 1, buf,
                                             sizeof(buf), &len),
                     DCOLL_ERR_NO_MEMORY);
    assert_int_equal(dcoll_store_set(s, "a", v, 9990), DCOLL_ERR_NO_MEMORY);
    OK(dcoll_store_num_keys(s, &count));
    assert_int_equal(count, 1);
    int found;
    OK(dcoll_store_check(s, (const char *[]){"b"}, 1, &found));
    assert_int_equal(found, 0);

    /* The connection is still good, and room made is usable. */
    OK(dcoll_store_set(s, "a", "small", 5));
    OK(dcoll_store_set(s, "b", v, 5000));
    OK(dcoll_store_add(s, "n", 1, &sum));
    OK(dcoll_store_delete_key(s, "b", &found));
    OK(dcoll_store_set(s, "c", v, 9000));
    free(v);
    dcoll_store_destroy(&s);
}

/* Requests held open unfinished count against max_memory as a whole:
 * 16 peers each send all but 100 bytes of a 1 MiB request under a 4 MiB
 * limit. Those that do not fit are refused at their header and their
 * bytes never read; the rest are held until the deadline cuts them off;
 * a proper client is served throughout. */
static void memory_total_frames(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_MEMORY | DCOLL_STORE_PARAM_IDLE_TIMEOUT;
    p.max_memory = 4 << 20;
    p.idle_timeout = 1;
    dcoll_store_t *s = serve(p, NULL);
    int port = port_of(s);
    long before = rss_kib();
    enum { PEERS = 16, BODY = 1 << 20 };
    int fd[PEERS], refused = 0;
    uint8_t *frame = calloc(1, 4 + BODY);
    frame[2] = 0x10;   /* 1 MiB, little-endian */
    frame[4] = WIRE_SET;
    for (int i = 0; i < PEERS; i++) {
        fd[i] = raw_connect(port);
        /* As much as the server takes: a refused peer's send fails. */
        size_t off = 0, n = 4 + BODY - 100;
        double t0 = now();
        while (off < n && now() - t0 < 2) {
            ssize_t k = send(fd[i], frame + off, n - off,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k > 0)
                off += (size_t)k;
            else if (k < 0 && errno != EAGAIN)
                break;
            else
                usleep(1000);
        }
    }
    free(frame);
    raw_settled(port, 60);
    still_served(s);
    long during = rss_kib();
    char msg[512];
    for (int i = 0; i < PEERS; i++) {
        struct pollfd q = {fd[i], POLLIN, 0};
        if (poll(&q, 1, 0) == 1 && raw_reply(fd[i], msg, sizeof(msg)) ==
                                       WIRE_FULL) {
            refused++;
            assert_non_null(strstr(msg, "a request of 1048576 bytes does "
                                        "not fit"));
            assert_non_null(strstr(msg, "max_memory) is 4194304"));
        }
    }
    print_message("%d of %d refused at their header (%s); the server grew "
                  "by %.1f MiB\n", refused, PEERS, msg,
                  (during - before) / 1024.0);
    assert_true(refused >= PEERS - 4);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    assert_true(during - before < 8 * 1024);
#endif
    for (int i = 0; i < PEERS; i++)
        close(fd[i]);
    /* Their memory is back: a value as large as the rest fits. */
    usleep(100000);
    char *v = calloc(1, 3 << 20);
    OK(dcoll_store_set(s, "big", v, 3 << 20));
    free(v);
    still_served(s);
    dcoll_store_destroy(&s);
}

/* 24 peers parked on GET of one key and never reading, then a 4 MiB value
 * set under it: the replies that would pass max_memory (16 MiB) are not
 * held; those peers are told so instead. */
static void memory_total_replies(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_MEMORY;
    p.max_memory = 16 << 20;
    dcoll_store_t *s = serve(p, NULL);
    int port = port_of(s);
    enum { PEERS = 24 };
    int fd[PEERS];
    struct wire_str k = {(const uint8_t *)"x", 1};
    uint8_t frame[64];
    size_t fl = wire_frame_size(1, &k);
    wire_encode(frame, WIRE_GET, 60000, 1, &k);
    for (int i = 0; i < PEERS; i++) {
        fd[i] = raw_connect(port);
        raw_send(fd[i], frame, fl);
    }
    raw_settled(port, 60);
    still_served(s);   /* served after the GETs: they are parked */
    long before = rss_kib();
    size_t n = 4 << 20;
    char *v = calloc(1, n);
    OK(dcoll_store_set(s, "x", v, n));
    free(v);
    usleep(200000);
    still_served(s);
    long during = rss_kib();
    int full = 0, got = 0;
    char msg[512] = "";
    for (int i = 0; i < PEERS; i++) {
        uint8_t hdr[4];
        assert_int_equal(recv(fd[i], hdr, 4, MSG_WAITALL), 4);
        uint32_t len = wire_get32(hdr);
        if (len < 4096) {
            uint8_t body[4096];
            assert_int_equal(recv(fd[i], body, len, MSG_WAITALL),
                             (ssize_t)len);
            struct wire_msg m;
            assert_null(wire_parse(body, len, &m));
            assert_int_equal(m.code, WIRE_FULL);
            snprintf(msg, sizeof(msg), "%.*s", (int)m.str[0].len,
                     (const char *)m.str[0].p);
            full++;
        } else {
            char *b = malloc(len);
            assert_int_equal(recv(fd[i], b, len, MSG_WAITALL), (ssize_t)len);
            free(b);
            got++;
        }
        close(fd[i]);
    }
    print_message("%d got the value, %d were told: %s; the server grew by "
                  "%.1f MiB\n", got, full, msg, (during - before) / 1024.0);
    assert_true(got >= 1 && full >= PEERS - 8);
    assert_non_null(strstr(msg, "a reply of"));
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    assert_true(during - before < 24 * 1024);
#endif
    still_served(s);
    dcoll_store_destroy(&s);
}

/* Parked waiters count against max_memory (issue 52, finding 7): 200
 * peers each WAIT on 16 keys of 4,000 bytes that never come, under a
 * 16 MiB limit. Those past the limit are told the store is full instead
 * of parked; meanwhile a 256 KiB SET does not fit either; once the peers
 * hang up their memory is back (12 MiB of values fit) and the server
 * gives its pages back. */
static void memory_waiters(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_MEMORY;
    p.max_memory = 16 << 20;
    dcoll_store_t *s = serve(p, NULL);
    int port = port_of(s);
    OK(dcoll_store_set(s, "pre", "yes", 3));
    long before = rss_kib();
    enum { PEERS = 200, KEYS = 16, KLEN = 4000 };
    int *fd = calloc(PEERS, sizeof(int));
    struct wire_str k[KEYS];
    uint8_t *names = malloc((size_t)KEYS * KLEN);
    size_t cap = 64 + (size_t)KEYS * (KLEN + 8);
    uint8_t *frame = malloc(cap);
    for (int i = 0; i < PEERS; i++) {
        for (int j = 0; j < KEYS; j++) {
            uint8_t *n = names + (size_t)j * KLEN;
            memset(n, 'k', KLEN);
            snprintf((char *)n, 32, "never-%d-%d-", i, j);
            k[j] = (struct wire_str){n, KLEN};
        }
        assert_true(wire_frame_size(KEYS, k) <= cap);
        wire_encode(frame, WIRE_WAIT, 60000, KEYS, k);
        fd[i] = raw_connect(port);
        raw_send(fd[i], frame, wire_frame_size(KEYS, k));
    }
    free(frame);
    free(names);
    raw_settled(port, 60);
    char buf[8];
    size_t len = 0;
    OK(dcoll_store_get(s, "pre", buf, sizeof(buf), &len));
    long during = rss_kib();
    int full = 0;
    char msg[512] = "";
    for (int i = 0; i < PEERS; i++) {
        struct pollfd q = {fd[i], POLLIN, 0};
        if (poll(&q, 1, 0) == 1) {
            assert_int_equal(raw_reply(fd[i], msg, sizeof(msg)), WIRE_FULL);
            assert_non_null(strstr(msg, "waiting on 16 key(s) would hold"));
            full++;
        }
    }
    print_message("%d of %d waits refused (%s); the server grew by %.1f "
                  "MiB\n", full, PEERS, msg, (during - before) / 1024.0);
    assert_true(full >= PEERS / 4 && full < PEERS);
    /* The limit is taken: a value larger than one waiter's share (the
     * most the last one parked can have left) does not fit. */
    char *v = calloc(1, 4 << 20);
    assert_int_equal(dcoll_store_set(s, "big", v, 256 << 10),
                     DCOLL_ERR_NO_MEMORY);
    HAS("does not fit");
    print_message("a 256 KiB SET meanwhile: %s\n", dcoll_last_error());
    for (int i = 0; i < PEERS; i++)
        close(fd[i]);
    usleep(300000);
    long after = rss_kib();
    print_message("after they hung up, the server is %.1f MiB above where "
                  "it began\n", (after - before) / 1024.0);
    /* A new connection: the refused request's was closed, its bytes
     * unread. */
    dcoll_store_t *c = NULL;
    OK(connect_to(&c, port, NULL, 5));
    const char *big[3] = {"big1", "big2", "big3"};
    for (int i = 0; i < 3; i++)
        OK(dcoll_store_set(c, big[i], v, 4 << 20));
    for (int i = 0; i < 3; i++)
        OK(dcoll_store_delete_key(c, big[i], NULL));
    dcoll_store_destroy(&c);
    free(v);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    assert_true(during - before < 48 * 1024);
    assert_true(after - before < 16 * 1024);
#endif
    free(fd);
    dcoll_store_destroy(&s);
}

/* An authenticated client with nothing to do is let go after idle_close,
 * so that max_clients idle connections do not lock others out; a dcoll
 * client connects again at its next request. */
static void idle_closed(void **state)
{
    (void)state;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_MAX_CLIENTS | DCOLL_STORE_PARAM_IDLE_CLOSE;
    p.max_clients = 3;
    p.idle_close = 0.3;
    dcoll_store_t *s = serve(p, "tok");
    int port = port_of(s);
    /* Two raw peers that show the token and then sit there. */
    int fd[2];
    struct wire_str t = {(const uint8_t *)"tok", 3};
    for (int i = 0; i < 2; i++) {
        fd[i] = raw_connect(port);
        raw_request(fd[i], WIRE_AUTH, 1, &t);
        char msg[256];
        assert_int_equal(raw_reply(fd[i], msg, sizeof(msg)), WIRE_OK);
    }
    /* Full now (the server's own client is the third). */
    dcoll_store_t *c = NULL;
    assert_int_not_equal(connect_to(&c, port, "tok", 0.2), DCOLL_SUCCESS);
    HAS("max_clients");
    /* Past idle_close the quiet ones are gone, and room is back. */
    usleep(600000);
    for (int i = 0; i < 2; i++)
        raw_closed(fd[i]);
    OK(connect_to(&c, port, "tok", 5));
    still_served(c);
    /* The serving handle itself was idle too: it connects again. */
    still_served(s);
    /* A client waiting for a key is not idle. */
    double t0 = now();
    assert_int_equal(dcoll_store_wait(c, (const char *[]){"never"}, 1, 0.8),
                     DCOLL_ERR_TIMEOUT);
    assert_true(now() - t0 >= 0.75);
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limits_checked),
        cmocka_unit_test(unauthed_frame),
        cmocka_unit_test(connection_cap),
        cmocka_unit_test(unauthed_cap),
        cmocka_unit_test(idle_deadline),
        cmocka_unit_test(slow_reader),
        cmocka_unit_test(memory_bound),
        cmocka_unit_test(memory_total_frames),
        cmocka_unit_test(memory_total_replies),
        cmocka_unit_test(memory_waiters),
        cmocka_unit_test(idle_closed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
