/* A loopback port nobody listens on now: bind to 0 and read back what the
 * kernel gave. A fixed or computed port may be in the ephemeral range and
 * taken by any connection of a test running beside this one. */
#ifndef DCOLL_TEST_FREEPORT_H
#define DCOLL_TEST_FREEPORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int t_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
        !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

#endif
