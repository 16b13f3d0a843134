/* dcoll-store-bench: round trips to the TCP store on loopback, one client
 * and many at once (bench/README.md).
 *   dcoll-store-bench [OPS] [CLIENTS]   defaults 20000 and 8 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "dcoll/dcoll.h"

static int port, ops;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "dcoll-store-bench: %s: %s\n", what, dcoll_last_error());
    exit(1);
}

static void *client(void *arg)
{
    dcoll_store_t *c = NULL;
    char key[32], buf[64];
    size_t len;
    if (dcoll_store_tcp_create(&c, "127.0.0.1", port, NULL))
        die("connect");
    snprintf(key, sizeof(key), "bench/%d", (int)(intptr_t)arg);
    for (int i = 0; i < ops / 2; i++)
        if (dcoll_store_set(c, key, "0123456789abcdef", 16) ||
            dcoll_store_get(c, key, buf, sizeof(buf), &len))
            die("set/get");
    dcoll_store_destroy(&c);
    return NULL;
}

/* ops round trips split over n clients; returns seconds. */
static double run(int n)
{
    pthread_t th[256];
    double t = now();
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, client, (void *)(intptr_t)i);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return now() - t;
}

int main(int argc, char **argv)
{
    ops = argc > 1 ? atoi(argv[1]) : 20000;
    int n = argc > 2 ? atoi(argv[2]) : 8;
    if (ops < 2 || n < 1 || n > 256) {
        fprintf(stderr, "usage: dcoll-store-bench [OPS>=2] [CLIENTS 1..256]\n");
        return 2;
    }
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_SERVE;
    p.serve = 1;
    dcoll_store_t *s = NULL;
    if (dcoll_store_tcp_create(&s, "127.0.0.1", 0, &p) ||
        dcoll_store_port(s, &port))
        die("serve");
    double one = run(1);
    printf("1 client:   %d round trips in %.3f s: %.1f us each\n", ops, one,
           one / ops * 1e6);
    double many = run(n);
    printf("%d clients: %d round trips each in %.3f s: %.0f per second in "
           "all\n", n, ops, many, (double)n * ops / many);
    dcoll_store_destroy(&s);
    return 0;
}
