/* libFuzzer target: the TCP store server driven by scripts of frames from
 * four clients at once. Each input is a script: build a frame for a
 * client, send what a client has queued in one write (pipelined) or in
 * pieces, hang a client up (parked or not), read replies, pause so that
 * waits and idle deadlines expire. The server runs with a token and small
 * limits, so the caps, the idle deadline and the memory bound are in play.
 *
 * What must hold, besides no crash or sanitizer report: every reply is a
 * well-formed frame; a client gets at most one answer per request it sent
 * (a waiter answered twice breaks this); nothing follows a refusal; and a
 * proper client is still served after every script. */
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "dcoll/store.h"
#include "store_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCLI 4
#define TOKEN "fz"

struct cli {
    int fd;
    bool auth;              /* shows the token on connecting */
    bool raw;               /* sent bytes that are not whole frames */
    bool refused;           /* got a refusal: nothing may follow */
    unsigned sent, answers; /* whole requests sent, answers read */
    uint8_t out[16384];
    size_t nout;
    uint8_t in[1 << 16];
    size_t nin;
};

static dcoll_store_t *server;
static int port;
static struct cli cli[NCLI];

static void start(void)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_TIMEOUT |
             DCOLL_STORE_PARAM_TOKEN | DCOLL_STORE_PARAM_MAX_CLIENTS |
             DCOLL_STORE_PARAM_MAX_UNAUTHED |
             DCOLL_STORE_PARAM_UNAUTHED_FRAME |
             DCOLL_STORE_PARAM_IDLE_TIMEOUT | DCOLL_STORE_PARAM_MAX_MEMORY;
    p.serve = 1;
    p.timeout = 10;
    p.token = TOKEN;
    p.max_clients = NCLI;        /* its own handle takes one */
    p.max_unauthed = 2;
    p.unauthed_frame = 128;
    p.idle_timeout = 0.05;
    p.max_memory = 16384;
    if (dcoll_store_tcp_create(&server, "127.0.0.1", 0, &p) ||
        dcoll_store_port(server, &port)) {
        fprintf(stderr, "fuzz_store_seq: no server: %s\n",
                dcoll_last_error());
        abort();
    }
    for (int i = 0; i < NCLI; i++)
        cli[i].fd = -1;
}

/* Take the replies read so far, checking each. */
static void take(struct cli *c)
{
    while (c->nin >= 4) {
        uint32_t n = wire_get32(c->in);
        if (n > sizeof(c->in) - 4)
            abort();   /* values here are small: no reply is this big */
        if (c->nin - 4 < n)
            return;
        static struct wire_msg m;
        if (wire_parse(c->in + 4, n, &m))
            abort();
        if (c->refused) {
            fprintf(stderr, "fuzz_store_seq: a reply after a refusal\n");
            abort();
        }
        switch (m.code) {
        case WIRE_OK: case WIRE_TIMEOUT: case WIRE_NOT_NUMBER: case WIRE_FULL:
            if (++c->answers > c->sent && !c->raw) {
                fprintf(stderr, "fuzz_store_seq: %u answers to %u "
                        "requests\n", c->answers, c->sent);
                abort();
            }
            break;
        case WIRE_BAD_REQUEST: case WIRE_UNAUTHORIZED: case WIRE_BUSY:
            c->refused = true;
            break;
        default:
            abort();
        }
        memmove(c->in, c->in + 4 + n, c->nin - 4 - n);
        c->nin -= 4 + n;
    }
}

/* Read what has come within ms milliseconds; false once it hung up. */
static bool pull(struct cli *c, int ms)
{
    struct pollfd p = {c->fd, POLLIN, 0};
    while (poll(&p, 1, ms) > 0) {
        ssize_t k = recv(c->fd, c->in + c->nin, sizeof(c->in) - c->nin,
                         MSG_DONTWAIT);
        if (k <= 0)
            return false;
        c->nin += (size_t)k;
        take(c);
        if (c->nin == sizeof(c->in))
            abort();
    }
    return true;
}

static void hang_up(struct cli *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

static void queue(struct cli *c, uint8_t op, int64_t num, int nstr,
                  const struct wire_str *s)
{
    size_t n = wire_frame_size(nstr, s);
    if (c->nout + n > sizeof(c->out))
        return;
    wire_encode(c->out + c->nout, op, num, nstr, s);
    c->nout += n;
    c->sent++;
}

static void dial(struct cli *c)
{
    struct cli fresh = {0};
    fresh.auth = c->auth;
    *c = fresh;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof(a))) {
        hang_up(c);
        return;
    }
    if (c->auth) {
        struct wire_str t = {(const uint8_t *)TOKEN, 2};
        queue(c, WIRE_AUTH, 0, 1, &t);
    }
}

static void flush(struct cli *c, size_t piece)
{
    for (size_t at = 0; at < c->nout && c->fd >= 0;) {
        size_t n = c->nout - at < piece ? c->nout - at : piece;
        ssize_t k = send(c->fd, c->out + at, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k <= 0)
            break;   /* cut off, or its buffer is full: the rest is lost */
        at += (size_t)k;
    }
    c->nout = 0;
}

/* The script's bytes, read one at a time; zeros past its end. */
struct script {
    const uint8_t *p;
    size_t n, at;
};

static uint8_t next(struct script *s)
{
    return s->at < s->n ? s->p[s->at++] : 0;
}

static const char *const keys[] = {"k0", "k1", "k2", "k3", "k4", "n"};

/* Build one request from the script: mostly well-formed, on a few keys,
 * so that waits and sets meet; now and then raw bytes. */
static void build(struct cli *c, struct script *s)
{
    static uint8_t val[4096];
    uint8_t op = next(s) % 12, b = next(s);
    struct wire_str str[4];
    int nstr = 0;
    int64_t num = (int8_t)next(s);
    if (op == 0 || op == 11) {
        /* raw bytes, framed (op 0) or not (op 11) */
        size_t n = next(s) % 64;
        uint8_t raw[4 + 64];
        raw[0] = (uint8_t)n;
        raw[1] = raw[2] = raw[3] = 0;
        for (size_t i = 0; i < n; i++)
            raw[4 + i] = next(s);
        const uint8_t *from = op ? raw + 4 : raw;
        size_t len = op ? n : n + 4;
        if (c->nout + len <= sizeof(c->out)) {
            memcpy(c->out + c->nout, from, len);
            c->nout += len;
        }
        c->raw = true;
        return;
    }
    int want = op == WIRE_SET ? 2 : op == WIRE_CAS ? 3 : op == WIRE_NUMKEYS
               ? 0 : (op == WIRE_WAIT || op == WIRE_CHECK) ? 1 + b % 3 : 1;
    if (b & 0x80)
        want = b % 5;   /* the wrong shape, now and then */
    for (; nstr < want; nstr++) {
        uint8_t k = next(s);
        bool key = nstr == 0 || op == WIRE_WAIT || op == WIRE_CHECK;
        if (op == WIRE_AUTH) {
            str[nstr] = (struct wire_str){(const uint8_t *)(k & 1 ? TOKEN
                                                            : "no"), 2};
        } else if (key) {
            const char *name = keys[k % 6];
            str[nstr] = (struct wire_str){(const uint8_t *)name,
                                          (uint32_t)strlen(name)};
        } else {
            uint32_t n = k & 0x80 ? (uint32_t)(k % 16) * 256 : k % 8;
            memset(val, '0' + k % 10, n);
            str[nstr] = (struct wire_str){val, n};
        }
    }
    if (op == WIRE_GET || op == WIRE_WAIT)
        num = num < 0 ? -num % 20 : num % 20;   /* timeouts of 0..19 ms */
    queue(c, op, num, nstr, str);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server)
        start();
    struct script s = {data, size, 0};
    uint8_t policy = next(&s);
    for (int i = 0; i < NCLI; i++)
        cli[i].auth = (policy >> i) & 1;
    int dials = 0, slept = 0;
    while (s.at < s.n) {
        uint8_t b = next(&s);
        struct cli *c = &cli[(b >> 3) & 3];
        int arg = b >> 5;
        if (c->fd < 0) {
            if (++dials > 16)
                break;
            dial(c);
            if (c->fd < 0)
                break;
        }
        switch (b & 7) {
        case 0: case 1: case 2:
            build(c, &s);
            break;
        case 3:
            flush(c, sizeof(c->out));   /* pipelined, one write */
            break;
        case 4:
            flush(c, (size_t)arg + 1);  /* in pieces */
            break;
        case 5:
            flush(c, sizeof(c->out));
            hang_up(c);                 /* perhaps while parked */
            break;
        case 6:
            if (!pull(c, arg))
                hang_up(c);
            break;
        case 7: {
            int ms = arg == 7 ? 60 : arg;   /* 60: past the idle deadline */
            if (slept + ms <= 70) {
                usleep((useconds_t)ms * 1000);
                slept += ms;
            }
            break;
        }
        }
    }
    /* Send what is queued, then read to the end (waits here are short). */
    for (int i = 0; i < NCLI; i++) {
        struct cli *c = &cli[i];
        if (c->fd < 0)
            continue;
        flush(c, sizeof(c->out));
        shutdown(c->fd, SHUT_WR);
        while (pull(c, 30) && c->fd >= 0) {
            struct pollfd p = {c->fd, POLLIN, 0};
            if (poll(&p, 1, 30) <= 0)
                break;
        }
        hang_up(c);
    }
    /* A full store is still a serving one. */
    int64_t v;
    dcoll_status_t st = dcoll_store_add(server, "fuzz/alive", 1, &v);
    if (st && st != DCOLL_ERR_NO_MEMORY) {
        fprintf(stderr, "fuzz_store_seq: server stopped answering: %s\n",
                dcoll_last_error());
        abort();
    }
    return 0;
}
