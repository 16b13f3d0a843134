/* The stores without MPI: every operation on the TCP, file and prefix
 * stores, timeouts, many clients at once, a client that dies mid-request,
 * malformed and oversized requests, and tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "dcoll/dcoll.h"
#include "store_wire.h"
#include "store_table.h"
#include "store_raw.h"

#define OK(call) assert_int_equal((call), DCOLL_SUCCESS)
#define HAS(text) assert_non_null(strstr(dcoll_last_error(), (text)))

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static dcoll_store_t *serve(const char *token, double timeout)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_TIMEOUT |
             DCOLL_STORE_PARAM_TOKEN;
    p.serve = 1;
    p.timeout = timeout;
    p.token = token;
    dcoll_store_t *s = NULL;
    OK(dcoll_store_tcp_create(&s, "127.0.0.1", 0, &p));
    return s;
}

static dcoll_store_t *client(int port, const char *token, double timeout,
                             dcoll_status_t want)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_TOKEN;
    p.timeout = timeout;
    p.token = token;
    dcoll_store_t *s = NULL;
    assert_int_equal(dcoll_store_tcp_create(&s, "127.0.0.1", port, &p), want);
    return s;
}

static int port_of(dcoll_store_t *s)
{
    int port = 0;
    OK(dcoll_store_port(s, &port));
    assert_true(port > 0);
    return port;
}

/* Every operation, against any store. */
static void every_op(dcoll_store_t *s)
{
    char buf[64];
    size_t len = 0;
    int64_t v = 0, n0 = 0, n1 = 0;
    int flag = -1;
    OK(dcoll_store_num_keys(s, &n0));
    OK(dcoll_store_set(s, "a", "hello", 5));
    OK(dcoll_store_get(s, "a", buf, sizeof(buf), &len));
    assert_int_equal(len, 5);
    assert_memory_equal(buf, "hello", 5);
    /* Too small a buffer: refused, and told the length. */
    assert_int_equal(dcoll_store_get(s, "a", buf, 2, &len),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(len, 5);
    HAS("5 bytes");
    OK(dcoll_store_set(s, "empty", NULL, 0));
    OK(dcoll_store_get(s, "empty", buf, sizeof(buf), &len));
    assert_int_equal(len, 0);
    OK(dcoll_store_add(s, "n", 5, &v));
    assert_int_equal(v, 5);
    OK(dcoll_store_add(s, "n", -7, &v));
    assert_int_equal(v, -2);
    OK(dcoll_store_get(s, "n", buf, sizeof(buf), &len));
    assert_memory_equal(buf, "-2", 2);
    assert_int_equal(dcoll_store_add(s, "a", 1, &v),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("not an integer");
    /* A sum past int64 is refused as such (it was "not an integer"),
     * and the value stays. */
    OK(dcoll_store_add(s, "big", INT64_MAX, &v));
    assert_int_equal(dcoll_store_add(s, "big", 1, &v),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("overflow a 64-bit integer");
    OK(dcoll_store_add(s, "big", 0, &v));
    assert_true(v == INT64_MAX);
    int gone = 0;
    OK(dcoll_store_delete_key(s, "big", &gone));
    assert_int_equal(gone, 1);
    /* compare-and-set: missing + empty expected sets; a match swaps; a
     * mismatch leaves the value and returns it. */
    OK(dcoll_store_compare_set(s, "c", NULL, 0, "one", 3, buf, sizeof(buf),
                               &len));
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "one", 3);
    OK(dcoll_store_compare_set(s, "c", "one", 3, "two", 3, buf, sizeof(buf),
                               &len));
    assert_memory_equal(buf, "two", 3);
    OK(dcoll_store_compare_set(s, "c", "one", 3, "three", 5, buf,
                               sizeof(buf), &len));
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "two", 3);
    OK(dcoll_store_compare_set(s, "missing", "x", 1, "y", 1, buf,
                               sizeof(buf), &len));
    assert_int_equal(len, 0);
    const char *keys[] = {"a", "n", "c"};
    OK(dcoll_store_check(s, keys, 3, &flag));
    assert_int_equal(flag, 1);
    OK(dcoll_store_wait(s, keys, 3, 1.0));
    const char *missing[] = {"a", "nope"};
    OK(dcoll_store_check(s, missing, 2, &flag));
    assert_int_equal(flag, 0);
    double t = now();
    assert_int_equal(dcoll_store_wait(s, missing, 2, 0.2), DCOLL_ERR_TIMEOUT);
    assert_true(now() - t >= 0.19 && now() - t < 3);
    OK(dcoll_store_num_keys(s, &n1));
    assert_int_equal(n1, n0 + 4);
    OK(dcoll_store_delete_key(s, "a", &flag));
    assert_int_equal(flag, 1);
    OK(dcoll_store_delete_key(s, "a", &flag));
    assert_int_equal(flag, 0);
    OK(dcoll_store_num_keys(s, &n1));
    assert_int_equal(n1, n0 + 3);
}

static void tcp_every_op(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5);
    every_op(s);
    dcoll_store_t *c = client(port_of(s), NULL, 5, DCOLL_SUCCESS);
    char buf[8];
    size_t len;
    OK(dcoll_store_get(c, "c", buf, sizeof(buf), &len));  /* shared */
    assert_memory_equal(buf, "two", 3);
    OK(dcoll_store_destroy(&c));
    assert_null(c);
    OK(dcoll_store_destroy(&s));
    OK(dcoll_store_destroy(&s));  /* NULL is fine */
}

struct setter {
    int port;
    double delay;
};

static void *set_later(void *arg)
{
    struct setter *w = arg;
    dcoll_store_t *c = client(w->port, NULL, 5, DCOLL_SUCCESS);
    usleep((useconds_t)(w->delay * 1e6));
    OK(dcoll_store_set(c, "late", "x", 1));
    OK(dcoll_store_destroy(&c));
    return NULL;
}

/* get and wait block until another client sets the key. */
static void tcp_get_waits(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5);
    struct setter w = {port_of(s), 0.2};
    pthread_t th;
    pthread_create(&th, NULL, set_later, &w);
    char buf[4];
    size_t len;
    double t = now();
    OK(dcoll_store_get(s, "late", buf, sizeof(buf), &len));
    assert_true(now() - t >= 0.15);
    pthread_join(th, NULL);
    dcoll_store_destroy(&s);
}

/* A get on a key nobody sets ends in a timeout, and the client and
 * server both go on working. */
static void tcp_get_timeout(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 0.3);
    char buf[4];
    size_t len;
    double t = now();
    assert_int_equal(dcoll_store_get(s, "never", buf, 4, &len),
                     DCOLL_ERR_TIMEOUT);
    assert_true(now() - t >= 0.29 && now() - t < 3);
    OK(dcoll_store_set(s, "after", "1", 1));
    dcoll_store_destroy(&s);
}

/* A client with no server: a timeout, not a hang. */
static void tcp_no_server(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 1);
    int port = port_of(s);
    dcoll_store_destroy(&s);
    double t = now();
    client(port, NULL, 0.3, DCOLL_ERR_TIMEOUT);
    HAS("no server answered");
    assert_true(now() - t < 3);
}

#define NCLIENTS 32
#define NADDS 50

static int many_port;

static void *many_body(void *arg)
{
    int id = (int)(intptr_t)arg;
    dcoll_store_t *c = client(many_port, NULL, 20, DCOLL_SUCCESS);
    char key[32];
    for (int i = 0; i < NADDS; i++)
        OK(dcoll_store_add(c, "counter", 1, NULL));
    snprintf(key, sizeof(key), "done/%d", id);
    OK(dcoll_store_set(c, key, "1", 1));
    /* Everyone waits for everyone. */
    char names[NCLIENTS][32];
    const char *keys[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        snprintf(names[i], sizeof(names[i]), "done/%d", i);
        keys[i] = names[i];
    }
    OK(dcoll_store_wait(c, keys, NCLIENTS, -1));
    OK(dcoll_store_destroy(&c));
    return NULL;
}

static void tcp_many_clients(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 20);
    many_port = port_of(s);
    pthread_t th[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++)
        pthread_create(&th[i], NULL, many_body, (void *)(intptr_t)i);
    for (int i = 0; i < NCLIENTS; i++)
        pthread_join(th[i], NULL);
    int64_t v;
    OK(dcoll_store_add(s, "counter", 0, &v));
    assert_int_equal(v, NCLIENTS * NADDS);
    dcoll_store_destroy(&s);
}

/* ---- raw connections, speaking (or not) the wire format ---- */

/* A waiter woken while another is being answered: client A parks on GET
 * x; client B sends GET y and SET x in one write (B parks, its SET still
 * buffered); a third client sets y. Answering B runs its SET, which wakes
 * A from inside the first wake; each must be answered exactly once, and
 * the server must go on (it aborted in libuv before). */
static void tcp_pipelined_wake(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5);
    int port = port_of(s);
    char msg[128];
    struct wire_str x = {(const uint8_t *)"x", 1},
                    y = {(const uint8_t *)"y", 1};
    struct wire_str set_x[2] = {x, {(const uint8_t *)"vx", 2}};
    uint8_t frame[256];
    int a = raw_connect(port), b = raw_connect(port);
    wire_encode(frame, WIRE_GET, 5000, 1, &x);
    raw_send(a, frame, wire_frame_size(1, &x));
    size_t n1 = wire_frame_size(1, &y);
    wire_encode(frame, WIRE_GET, 5000, 1, &y);
    wire_encode(frame + n1, WIRE_SET, 0, 2, set_x);
    raw_send(b, frame, n1 + wire_frame_size(2, set_x));
    usleep(100000);   /* both parked */
    dcoll_store_t *c = client(port, NULL, 5, DCOLL_SUCCESS);
    OK(dcoll_store_set(c, "y", "vy", 2));
    /* B: its GET, then its SET. */
    assert_int_equal(raw_reply(b, msg, sizeof(msg)), WIRE_OK);
    assert_string_equal(msg, "vy");
    assert_int_equal(raw_reply(b, msg, sizeof(msg)), WIRE_OK);
    /* A: once, with x's value, and nothing more. */
    assert_int_equal(raw_reply(a, msg, sizeof(msg)), WIRE_OK);
    assert_string_equal(msg, "vx");
    struct timeval tv = {0, 200000};
    setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char extra;
    assert_int_equal(recv(a, &extra, 1, 0), -1);
    /* Everyone is still served. */
    raw_request(a, WIRE_NUMKEYS, 0, NULL);
    assert_int_equal(raw_reply(a, msg, sizeof(msg)), WIRE_OK);
    char buf[4];
    size_t len;
    OK(dcoll_store_get(c, "x", buf, sizeof(buf), &len));
    assert_int_equal(len, 2);
    close(a);
    close(b);
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

/* A wake whose answers change the lists it walks (issue 27, finding 4;
 * issue 52, finding 6): A and B park on GET x, B with a DELETE of x
 * pipelined behind its GET. A SET of x answers both, as torch's store
 * answers every waiter of the key at the SET, before B's DELETE runs
 * (A stayed parked until its deadline: the SET was lost to it), and the
 * server goes on serving (it once read a key the DELETE had freed). */
static void tcp_wake_after_delete(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5);
    int port = port_of(s);
    char msg[128];
    struct wire_str x = {(const uint8_t *)"x", 1};
    uint8_t frame[256];
    int a = raw_connect(port), b = raw_connect(port);
    wire_encode(frame, WIRE_GET, 5000, 1, &x);
    raw_send(a, frame, wire_frame_size(1, &x));
    usleep(50000);    /* A parks first */
    size_t n1 = wire_frame_size(1, &x);
    wire_encode(frame, WIRE_GET, 5000, 1, &x);
    wire_encode(frame + n1, WIRE_DELETE, 0, 1, &x);
    raw_send(b, frame, 2 * n1);
    usleep(100000);   /* both parked, B's DELETE buffered */
    dcoll_store_t *c = client(port, NULL, 5, DCOLL_SUCCESS);
    OK(dcoll_store_set(c, "x", "v1", 2));
    /* B: its GET, then its DELETE; A: the value set while it waited. */
    assert_int_equal(raw_reply(b, msg, sizeof(msg)), WIRE_OK);
    assert_string_equal(msg, "v1");
    assert_int_equal(raw_reply(b, msg, sizeof(msg)), WIRE_OK);
    assert_int_equal(raw_reply(a, msg, sizeof(msg)), WIRE_OK);
    assert_string_equal(msg, "v1");
    /* The server still serves. */
    OK(dcoll_store_set(c, "x", "v2", 2));
    int64_t keys = -1;
    OK(dcoll_store_num_keys(c, &keys));
    assert_int_equal(keys, 1);
    close(a);
    close(b);
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

/* Waiters on many keys: a SET answers exactly the waiters on its key, a
 * WAIT on a key listed twice is answered once, and a waiter on two keys
 * only when both are there. */
static void tcp_many_waiters(void **state)
{
    (void)state;
    enum { W = 64 };
    dcoll_store_t *s = serve(NULL, 5);
    int port = port_of(s), fd[W];
    char msg[128], key[16];
    uint8_t frame[256];
    for (int i = 0; i < W; i++) {
        fd[i] = raw_connect(port);
        int kl = snprintf(key, sizeof(key), "k%d", i);
        struct wire_str k = {(const uint8_t *)key, (uint32_t)kl};
        wire_encode(frame, WIRE_GET, 60000, 1, &k);
        raw_send(fd[i], frame, wire_frame_size(1, &k));
    }
    struct wire_str ab[3] = {{(const uint8_t *)"a", 1},
                             {(const uint8_t *)"a", 1},
                             {(const uint8_t *)"b", 1}};
    int two = raw_connect(port);
    wire_encode(frame, WIRE_WAIT, 60000, 3, ab);
    raw_send(two, frame, wire_frame_size(3, ab));
    usleep(100000);
    dcoll_store_t *c = client(port, NULL, 5, DCOLL_SUCCESS);
    struct timeval brief = {0, 30000};
    char extra;
    for (int i = W - 1; i >= 0; i--) {
        snprintf(key, sizeof(key), "k%d", i);
        char val[16];
        int vl = snprintf(val, sizeof(val), "v%d", i);
        OK(dcoll_store_set(c, key, val, (size_t)vl));
        assert_int_equal(raw_reply(fd[i], msg, sizeof(msg)), WIRE_OK);
        assert_string_equal(msg, val);
        /* The next one down is still parked. */
        if (i > 0) {
            setsockopt(fd[i - 1], SOL_SOCKET, SO_RCVTIMEO, &brief,
                       sizeof(brief));
            assert_int_equal(recv(fd[i - 1], &extra, 1, 0), -1);
            struct timeval back = {5, 0};
            setsockopt(fd[i - 1], SOL_SOCKET, SO_RCVTIMEO, &back,
                       sizeof(back));
        }
        close(fd[i]);
    }
    OK(dcoll_store_set(c, "a", "1", 1));
    setsockopt(two, SOL_SOCKET, SO_RCVTIMEO, &brief, sizeof(brief));
    assert_int_equal(recv(two, &extra, 1, 0), -1);   /* b is missing */
    OK(dcoll_store_set(c, "b", "1", 1));
    struct timeval back = {5, 0};
    setsockopt(two, SOL_SOCKET, SO_RCVTIMEO, &back, sizeof(back));
    assert_int_equal(raw_reply(two, msg, sizeof(msg)), WIRE_OK);
    setsockopt(two, SOL_SOCKET, SO_RCVTIMEO, &brief, sizeof(brief));
    assert_int_equal(recv(two, &extra, 1, 0), -1);   /* once */
    close(two);
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

/* The table's index: 20,000 keys, half erased in a scattered order
 * (each erase shifts its probe run and moves the last entry), every
 * other one still found with its value, and the erased ones gone. */
static void table_index(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct kv_table t = {0};
    char key[32], val[32];
    for (int i = 0; i < N; i++) {
        int kl = snprintf(key, sizeof(key), "rank/%d/addr", i);
        int vl = snprintf(val, sizeof(val), "v%d", i);
        assert_int_equal(kv_put(&t, (struct wire_str){(uint8_t *)key,
                                                       (uint32_t)kl},
                                (struct wire_str){(uint8_t *)val,
                                                  (uint32_t)vl}),
                         KV_OK);
    }
    assert_int_equal(t.n, N);
    for (int i = 0; i < N; i++) {
        int j = (int)(((int64_t)i * 7919) % N);
        if (j % 2)
            continue;
        int kl = snprintf(key, sizeof(key), "rank/%d/addr", j);
        assert_true(kv_erase(&t, (struct wire_str){(uint8_t *)key,
                                                   (uint32_t)kl}));
    }
    assert_int_equal(t.n, N / 2);
    for (int i = 0; i < N; i++) {
        int kl = snprintf(key, sizeof(key), "rank/%d/addr", i);
        struct kv *e = kv_find(&t, (struct wire_str){(uint8_t *)key,
                                                     (uint32_t)kl});
        if (i % 2 == 0) {
            assert_null(e);
            continue;
        }
        assert_non_null(e);
        int vl = snprintf(val, sizeof(val), "v%d", i);
        assert_int_equal(e->vlen, vl);
        assert_memory_equal(e->val, val, (size_t)vl);
    }
    kv_free(&t);
}

static void tcp_bad_requests(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5);
    int port = port_of(s);
    char msg[128];
    struct wire_str k = {(const uint8_t *)"k", 1};

    /* An unknown operation. */
    int fd = raw_connect(port);
    raw_request(fd, 77, 1, &k);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_string_equal(msg, "unknown operation");
    raw_closed(fd);

    /* The wrong shape: SET with one string. */
    fd = raw_connect(port);
    raw_request(fd, WIRE_SET, 1, &k);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    raw_closed(fd);

    /* A string that runs past its frame. */
    fd = raw_connect(port);
    uint8_t bad[] = {15, 0, 0, 0, WIRE_GET, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                     200, 0, 0, 0, 'k'};
    raw_send(fd, bad, sizeof(bad));
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_string_equal(msg, "string runs past the body");
    raw_closed(fd);

    /* A frame claiming more than the limit: refused before it is read. */
    fd = raw_connect(port);
    uint8_t big[4] = {0xff, 0xff, 0xff, 0x7f};
    raw_send(fd, big, 4);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_non_null(strstr(msg, "over the limit"));
    raw_closed(fd);

    /* A key longer than the limit. */
    fd = raw_connect(port);
    static uint8_t longkey[DCOLL_STORE_MAX_KEY + 1];
    struct wire_str lk = {longkey, sizeof(longkey)};
    uint8_t *frame = malloc(wire_frame_size(1, &lk));
    wire_encode(frame, WIRE_GET, 0, 1, &lk);
    raw_send(fd, frame, wire_frame_size(1, &lk));
    free(frame);
    assert_int_equal(raw_reply(fd, msg, sizeof(msg)), WIRE_BAD_REQUEST);
    assert_string_equal(msg, "key length out of range");
    raw_closed(fd);

    /* The server still serves. */
    OK(dcoll_store_set(s, "still", "up", 2));
    dcoll_store_destroy(&s);
}

/* Clients that die: half a frame, and a parked GET. */
static void tcp_client_dies(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5);
    int port = port_of(s);
    int fd = raw_connect(port);
    uint8_t half[] = {40, 0, 0, 0, WIRE_SET, 2, 0};
    raw_send(fd, half, sizeof(half));
    close(fd);
    fd = raw_connect(port);
    struct wire_str k = {(const uint8_t *)"nobody-sets-this", 16};
    raw_request(fd, WIRE_GET, 1, &k);
    usleep(50000);
    close(fd);
    /* Replies the client never reads: 40 MB of them queue in the server,
     * then a bad frame stops its reading, and the client resets the
     * connection with the replies still queued. The server drops it and
     * goes on. (The fuzz target is what catches a SIGPIPE from a write to
     * a dead client: see lib/store_server.c.) */
    {
        size_t big = DCOLL_STORE_MAX_VALUE;
        char *v = calloc(1, big);
        OK(dcoll_store_set(s, "big", v, big));
        free(v);
        fd = raw_connect(port);
        struct wire_str bk = {(const uint8_t *)"big", 3};
        for (int i = 0; i < 10; i++)
            raw_request(fd, WIRE_GET, 1, &bk);
        raw_request(fd, 99, 0, NULL);
        usleep(200000);
        struct linger hard = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
        close(fd);
        usleep(200000);
    }
    /* A forked child killed in the middle of a wait. */
    pid_t pid = fork();
    if (pid == 0) {
        dcoll_store_t *c = NULL;
        dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
        dcoll_store_tcp_create(&c, "127.0.0.1", port, &p);
        const char *keys[] = {"never"};
        dcoll_store_wait(c, keys, 1, 60);
        _exit(0);
    }
    usleep(200000);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    usleep(50000);
    char buf[4];
    size_t len;
    OK(dcoll_store_set(s, "nobody-sets-this", "ok", 2));
    OK(dcoll_store_get(s, "nobody-sets-this", buf, 4, &len));
    assert_memory_equal(buf, "ok", 2);
    dcoll_store_destroy(&s);
}

static void tcp_token(void **state)
{
    (void)state;
    dcoll_store_t *s = serve("s3cret", 5);
    int port = port_of(s);
    /* The wrong token: refused at connect. */
    client(port, "guess", 5, DCOLL_ERR_REFUSED);
    HAS("wrong token");
    /* No token: refused at connect too. */
    unsetenv("DCOLL_STORE_TOKEN");
    client(port, NULL, 5, DCOLL_ERR_REFUSED);
    HAS("needs a token and none was shown");
    dcoll_store_t *c = NULL;
    /* The right one, from the environment. */
    setenv("DCOLL_STORE_TOKEN", "s3cret", 1);
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    OK(dcoll_store_tcp_create(&c, "127.0.0.1", port, &p));
    unsetenv("DCOLL_STORE_TOKEN");
    OK(dcoll_store_set(c, "k", "v", 1));
    dcoll_store_destroy(&c);
    dcoll_store_destroy(&s);
}

static void file_store(void **state)
{
    (void)state;
    char path[] = "/tmp/dcoll-store-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT;
    p.timeout = 5;
    dcoll_store_t *a = NULL, *b = NULL;
    OK(dcoll_store_file_create(&a, path, &p));
    every_op(a);
    /* Another process adds and sets through its own handle. */
    pid_t pid = fork();
    if (pid == 0) {
        dcoll_store_t *c = NULL;
        if (dcoll_store_file_create(&c, path, &p))
            _exit(1);
        usleep(100000);
        for (int i = 0; i < 100; i++)
            if (dcoll_store_add(c, "count", 1, NULL))
                _exit(2);
        if (dcoll_store_set(c, "child", "done", 4))
            _exit(3);
        dcoll_store_destroy(&c);
        _exit(0);
    }
    OK(dcoll_store_file_create(&b, path, &p));
    for (int i = 0; i < 100; i++)
        OK(dcoll_store_add(b, "count", 1, NULL));
    char buf[8];
    size_t len;
    OK(dcoll_store_get(a, "child", buf, sizeof(buf), &len));
    int status;
    waitpid(pid, &status, 0);
    assert_int_equal(WEXITSTATUS(status), 0);
    int64_t v;
    OK(dcoll_store_add(a, "count", 0, &v));
    assert_int_equal(v, 200);
    OK(dcoll_store_destroy(&a));
    assert_int_equal(access(path, F_OK), 0);  /* b still has it */
    OK(dcoll_store_destroy(&b));
    assert_int_equal(access(path, F_OK), -1); /* the last one removed it */
    /* Refusals of its own. */
    assert_int_equal(dcoll_store_file_create(&a, "/nonexistent/dir/f", &p),
                     DCOLL_ERR_IO);
    HAS("/nonexistent/dir/f");
    p.mask |= DCOLL_STORE_PARAM_SERVE;
    p.serve = 1;
    assert_int_equal(dcoll_store_file_create(&a, path, &p),
                     DCOLL_ERR_INVALID_ARGUMENT);
}

static void prefix_store(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5), *p = NULL, *q = NULL;
    OK(dcoll_store_prefix_create(&p, "job1", s));
    OK(dcoll_store_prefix_create(&q, "job2", p));
    every_op(q);
    char buf[8];
    size_t len;
    OK(dcoll_store_get(s, "job1/job2/c", buf, sizeof(buf), &len));
    assert_memory_equal(buf, "two", 3);
    int flag;
    const char *k[] = {"c"};
    OK(dcoll_store_check(p, k, 1, &flag));
    assert_int_equal(flag, 0);   /* job1/c is not job1/job2/c */
    assert_int_equal(dcoll_store_port(q, &flag), DCOLL_SUCCESS);
    OK(dcoll_store_destroy(&q));
    OK(dcoll_store_destroy(&p));
    OK(dcoll_store_destroy(&s));
}

static void bad_arguments(void **state)
{
    (void)state;
    dcoll_store_t *s = serve(NULL, 5), *x = NULL;
    char buf[4];
    size_t len;
    int flag;
    int64_t n;
    assert_int_equal(dcoll_store_set(NULL, "k", "v", 1),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("store is NULL");
    assert_int_equal(dcoll_store_set(s, "", "v", 1),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("key of 0 bytes");
    assert_int_equal(dcoll_store_set(s, "\001x", "v", 1),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_set(s, "k", NULL, 3),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("value is NULL with length 3");
    assert_int_equal(dcoll_store_set(s, "k", buf,
                                     (size_t)DCOLL_STORE_MAX_VALUE + 1),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("over the limit");
    assert_int_equal(dcoll_store_get(s, "k", NULL, 4, &len),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_get(s, "k", buf, 4, NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_wait(s, NULL, 1, 1),
                     DCOLL_ERR_INVALID_ARGUMENT);
    const char *keys[] = {"a"};
    assert_int_equal(dcoll_store_wait(s, keys, 0, 1),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("nkeys 0");
    assert_int_equal(dcoll_store_check(s, keys, 1, NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_num_keys(s, NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_port(NULL, &flag),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_tcp_create(&x, "127.0.0.1", 70000, NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("port 70000");
    assert_int_equal(dcoll_store_tcp_create(&x, "127.0.0.1", 0, NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_tcp_create(&x, NULL, 1, NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    assert_int_equal(dcoll_store_tcp_create(&x, "no.such.host.invalid", 1,
                                            NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("does not resolve");
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT;
    p.timeout = -1;
    assert_int_equal(dcoll_store_tcp_create(&x, "127.0.0.1", 1, &p),
                     DCOLL_ERR_INVALID_ARGUMENT);
    HAS("timeout -1");
    p.mask = 1u << 20;
    assert_int_equal(dcoll_store_tcp_create(&x, "127.0.0.1", 1, &p),
                     DCOLL_ERR_INVALID_ARGUMENT);
    /* A port another server holds cannot be served twice. */
    p.mask = DCOLL_STORE_PARAM_SERVE;
    p.serve = 1;
    assert_int_equal(dcoll_store_tcp_create(&x, "127.0.0.1", port_of(s), &p),
                     DCOLL_ERR_IO);
    HAS("cannot serve");
    assert_int_equal(dcoll_store_prefix_create(&x, "p", NULL),
                     DCOLL_ERR_INVALID_ARGUMENT);
    dcoll_store_t *dead = s;
    OK(dcoll_store_destroy(&s));
    (void)dead;
    (void)n;
}

/* A key of n bytes, refused by every keyed operation of s, each message
 * naming n (a report of 8,199 bytes as 4,097 was once suspected). */
static void refuse_key(dcoll_store_t *s, size_t n, const char *says)
{
    char *k = malloc(n + 1);
    assert_non_null(k);
    memset(k, 'k', n);
    k[n] = 0;
    const char *keys[] = {"ok", k};
    char buf[8];
    size_t len;
    int64_t v;
    int flag;
#define REFUSED(call)                                                      \
    do {                                                                   \
        assert_int_equal((call), DCOLL_ERR_INVALID_ARGUMENT);              \
        HAS(says);                                                         \
    } while (0)
    REFUSED(dcoll_store_set(s, k, "v", 1));
    REFUSED(dcoll_store_get(s, k, buf, sizeof(buf), &len));
    REFUSED(dcoll_store_add(s, k, 1, &v));
    REFUSED(dcoll_store_compare_set(s, k, "", 0, "v", 1, buf, sizeof(buf),
                                    &len));
    REFUSED(dcoll_store_wait(s, keys, 2, 1));
    REFUSED(dcoll_store_check(s, keys, 2, &flag));
    REFUSED(dcoll_store_delete_key(s, k, &flag));
#undef REFUSED
    free(k);
}

static void long_keys(void **state)
{
    (void)state;
    char path[] = "/tmp/dcoll-store-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    dcoll_store_t *t = serve(NULL, 5), *f = NULL, *p = NULL;
    OK(dcoll_store_file_create(&f, path, NULL));
    OK(dcoll_store_prefix_create(&p, "job1", t));
    dcoll_store_t *all[] = {t, f, p};
    for (int i = 0; i < 3; i++) {
        refuse_key(all[i], 8199, "key of 8199 bytes (must be 1 to 4096)");
        refuse_key(all[i], DCOLL_STORE_MAX_KEY + 1,
                   "key of 4097 bytes (must be 1 to 4096)");
    }
    /* Within the limit alone, over it with the prefix. */
    refuse_key(p, 4092, "key of 4092 bytes ('kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
               "...') is 4097 bytes with its prefix 'job1/', over 4096");
    OK(dcoll_store_destroy(&p));
    OK(dcoll_store_destroy(&f));
    OK(dcoll_store_destroy(&t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tcp_every_op),
        cmocka_unit_test(tcp_get_waits),
        cmocka_unit_test(tcp_get_timeout),
        cmocka_unit_test(tcp_no_server),
        cmocka_unit_test(tcp_many_clients),
        cmocka_unit_test(tcp_bad_requests),
        cmocka_unit_test(tcp_pipelined_wake),
        cmocka_unit_test(tcp_wake_after_delete),
        cmocka_unit_test(table_index),
        cmocka_unit_test(tcp_many_waiters),
        cmocka_unit_test(tcp_client_dies),
        cmocka_unit_test(tcp_token),
        cmocka_unit_test(file_store),
        cmocka_unit_test(prefix_store),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(long_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
