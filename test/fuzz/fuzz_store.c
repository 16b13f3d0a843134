/* libFuzzer target: the TCP store's wire protocol. Each input is parsed as
 * a frame body in process, then sent as raw bytes to a live store server
 * (its own thread, as in dcoll) on loopback; whatever comes back must be
 * well-formed frames, and the server must go on answering a proper client
 * afterwards. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "dcoll/store.h"
#include "store_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static dcoll_store_t *server;
static int port;
static unsigned long runs;

static void start(void)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_TIMEOUT;
    p.serve = 1;
    p.timeout = 10;
    if (dcoll_store_tcp_create(&server, "127.0.0.1", 0, &p) ||
        dcoll_store_port(server, &port)) {
        fprintf(stderr, "fuzz_store: no server: %s\n", dcoll_last_error());
        abort();
    }
}

/* Read replies until the server closes or goes quiet; each must parse. */
static void drain(int fd)
{
    static uint8_t buf[1 << 16];
    size_t have = 0;
    for (;;) {
        ssize_t k = recv(fd, buf + have, sizeof(buf) - have, 0);
        if (k <= 0)
            break;
        have += (size_t)k;
        while (have >= 4) {
            uint32_t n = wire_get32(buf);
            if (n > sizeof(buf) - 4)
                abort();    /* our requests never earn a reply this big */
            if (have - 4 < n)
                break;
            struct wire_msg m;
            if (wire_parse(buf + 4, n, &m))
                abort();
            memmove(buf, buf + 4 + n, have - 4 - n);
            have -= 4 + n;
        }
        if (have == sizeof(buf))
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server)
        start();
    static struct wire_msg m;
    wire_parse(data, size, &m);

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {0, 20000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        if (size)
            send(fd, data, size, MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        drain(fd);
    }
    close(fd);
    /* Now and then, a proper client still gets answers. */
    if (++runs % 256 == 0) {
        int64_t v;
        if (dcoll_store_add(server, "fuzz/alive", 1, &v)) {
            fprintf(stderr, "fuzz_store: server stopped answering: %s\n",
                    dcoll_last_error());
            abort();
        }
    }
    return 0;
}
