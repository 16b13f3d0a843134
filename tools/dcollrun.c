/* dcollrun -n N [options] prog [args...]: run N copies of a program on this
 * machine, each with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * MASTER_ADDR and MASTER_PORT set, as torchrun does; the program calls
 * dcoll_init with "env://". The first copy to fail stops the others, and
 * dcollrun exits with its status (128 + the signal if one killed it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dcoll/dcoll.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dcollrun -n N [--master-addr A] [--master-port P] "
            "[--timeout S] prog [args...]\n"
            "  -n N            processes to start (1 to 4096)\n"
            "  --master-addr A address rank 0 serves the store on "
            "(default 127.0.0.1)\n"
            "  --master-port P its port (default: a free one)\n"
            "  --timeout S     stop everything after S seconds\n");
}

static int run(int rank, void *arg)
{
    char **argv = arg;
    (void)rank;
    execvp(argv[0], argv);
    fprintf(stderr, "dcollrun: cannot run %s: %s\n", argv[0],
            strerror(errno));
    return 127;
}

/* A whole number in [lo, hi], or exit 2 naming the option. */
static long number(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "dcollrun: %s '%s' is not a number from %ld to "
                "%ld\n", opt, s ? s : "", lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    dcoll_spawn_params_t p = DCOLL_SPAWN_PARAMS_INIT;
    long n = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--")) {
            i++;
            break;
        } else if (!strcmp(o, "-n") || !strcmp(o, "--nprocs")) {
            n = number(o, v, 1, 4096);
        } else if (!strcmp(o, "--master-addr")) {
            if (!v) {
                fprintf(stderr, "dcollrun: %s needs a value\n", o);
                return 2;
            }
            p.mask |= DCOLL_SPAWN_PARAM_MASTER_ADDR;
            p.master_addr = v;
        } else if (!strcmp(o, "--master-port")) {
            p.mask |= DCOLL_SPAWN_PARAM_MASTER_PORT;
            p.master_port = (int)number(o, v, 1, 65535);
        } else if (!strcmp(o, "--timeout")) {
            p.mask |= DCOLL_SPAWN_PARAM_TIMEOUT;
            p.timeout = (double)number(o, v, 1, 1000000000);
        } else {
            fprintf(stderr, "dcollrun: unknown option '%s'\n", o);
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (!n || i >= argc) {
        fprintf(stderr, "dcollrun: %s\n", !n ? "-n N is required"
                                             : "no program to run");
        usage(stderr);
        return 2;
    }
    dcoll_spawn_failure_t f;
    dcoll_status_t st = dcoll_spawn(run, argv + i, (int)n, &p, &f);
    if (st == DCOLL_SUCCESS)
        return 0;
    fprintf(stderr, "dcollrun: %s\n", dcoll_last_error());
    if (st != DCOLL_ERR_CHILD_FAILED)
        return 1;
    return f.signal ? 128 + f.signal : f.exit_code;
}
