/* Test helpers that talk to a TCP store server in raw frames, below the
 * client: what an attacker or a broken client would send. Shared by the
 * store's unit tests. */
#ifndef DCOLL_TEST_STORE_RAW_H
#define DCOLL_TEST_STORE_RAW_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "store_wire.h"

static inline int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static inline void raw_send(int fd, const void *p, size_t n)
{
    assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Read one reply; returns its code, and the message in msg. */
static inline int raw_reply(int fd, char *msg, size_t cap)
{
    uint8_t hdr[4];
    assert_int_equal(recv(fd, hdr, 4, MSG_WAITALL), 4);
    uint32_t n = wire_get32(hdr);
    assert_true(n < 4096);
    uint8_t body[4096];
    assert_int_equal(recv(fd, body, n, MSG_WAITALL), (ssize_t)n);
    static struct wire_msg m;
    assert_null(wire_parse(body, n, &m));
    msg[0] = '\0';
    if (m.nstr)
        snprintf(msg, cap, "%.*s", (int)m.str[0].len, (char *)m.str[0].p);
    return m.code;
}

/* The server has closed: end of stream, or a reset where bytes we sent
 * reached it after it closed or were left unread (a client sending a byte
 * at a time races the cut-off). Either way nothing more comes. */
static inline void raw_closed(int fd)
{
    char c;
    ssize_t got = recv(fd, &c, 1, 0);
    if (got < 0)
        assert_int_equal(errno, ECONNRESET);
    else
        assert_int_equal(got, 0);
    close(fd);
}

static inline void raw_request(int fd, uint8_t op, int nstr,
                        const struct wire_str *str)
{
    uint8_t frame[256];
    assert_true(wire_frame_size(nstr, str) <= sizeof(frame));
    wire_encode(frame, op, 0, nstr, str);
    raw_send(fd, frame, wire_frame_size(nstr, str));
}

/* Bytes sent to the server on port that it has not read yet: the receive
 * queues of its end of every connection (accepted or still queued for
 * accept), from /proc/net/tcp; -1 where that cannot be read. */
static inline long raw_unread(int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return -1;
    char line[512];
    long unread = 0;
    unsigned lport, st;
    unsigned long rx;
    if (!fgets(line, sizeof(line), f)) {   /* the column heads */
        fclose(f);
        return -1;
    }
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, " %*u: %*8x:%x %*8x:%*x %x %*x:%lx", &lport, &st,
                   &rx) == 3 && (int)lport == port && st == 1)
            unread += (long)rx;
    fclose(f);
    return unread;
}

/* Wait, up to secs, until the server on port has read everything its
 * peers sent, so what a test counts next is what the server decided, not
 * how far a busy machine let it get. A request through a client of its
 * own after this is served after those reads. */
static inline void raw_settled(int port, double secs)
{
    long left = raw_unread(port);
    for (int i = 0; left > 0 && i < (int)(secs * 100); i++) {
        usleep(10000);
        left = raw_unread(port);
    }
    if (left < 0)
        fail_msg("cannot read /proc/net/tcp to see what the server on port "
                 "%d has read", port);
    if (left > 0)
        fail_msg("the server on port %d has not read %ld bytes its peers "
                 "sent after %.0f s", port, left, secs);
}

#endif
