/* A process started with stdin, stdout or stderr closed (`prog <&-`,
 * `>&-`, a daemon's parent) hands its next open()/socket() one of those
 * numbers: a socket on fd 1 takes whatever the program prints, and
 * libuv refuses to close such a handle (an assertion, the process
 * aborted). As daemons do, each closed one is opened on /dev/null
 * before dcoll makes a descriptor of its own. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "base.h"

void dcoll_stdfds_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* The lowest free number: this one, as the lower ones are open. */
        int got = open("/dev/null", fd ? O_WRONLY : O_RDONLY);
        if (got >= 0 && got != fd) {
            dup2(got, fd);
            close(got);
        }
    }
}
