/* dcoll-store-bench: round trips to the TCP store on loopback, one client
 * and many at once (bench/README.md); or a rendezvous of N clients, each a
 * thread with its own connection: each sets its address, adds itself to a
 * count, the last one sets "go", and every one waits for "go".
 *   dcoll-store-bench [OPS] [CLIENTS]   defaults 20000 and 8
 *   dcoll-store-bench rdzv N            N up to 8192 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
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

static int nrdzv;

static void *rdzv_client(void *arg)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT;
    p.timeout = 300;
    dcoll_store_t *c = NULL;
    char key[32], addr[32], buf[8];
    size_t len;
    int64_t arrived;
    int r = (int)(intptr_t)arg;
    if (dcoll_store_tcp_create(&c, "127.0.0.1", port, &p))
        die("connect");
    snprintf(key, sizeof(key), "addr/%d", r);
    snprintf(addr, sizeof(addr), "10.0.%d.%d:29500", r / 256, r % 256);
    if (dcoll_store_set(c, key, addr, strlen(addr)) ||
        dcoll_store_add(c, "arrived", 1, &arrived) ||
        (arrived == nrdzv && dcoll_store_set(c, "go", "1", 1)) ||
        dcoll_store_get(c, "go", buf, sizeof(buf), &len))
        die("rendezvous");
    dcoll_store_destroy(&c);
    return NULL;
}

/* n clients meet; returns seconds from the first connect to the last
 * client's "go". */
static double rendezvous(int n)
{
    /* Two descriptors a client in this one process: its own and the
     * server's end. */
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)(2 * n + 64)) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)(2 * n + 64) ? rl.rlim_max
                                                         : (rlim_t)(2 * n + 64);
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    nrdzv = n;
    double t = now();
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], &attr, rdzv_client, (void *)(intptr_t)i)) {
            fprintf(stderr, "dcoll-store-bench: thread %d of %d\n", i, n);
            exit(1);
        }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    t = now() - t;
    free(th);
    return t;
}

/* The server, in this process, on a free loopback port. */
static dcoll_store_t *serve(void)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_SERVE;
    p.serve = 1;
    dcoll_store_t *s = NULL;
    if (dcoll_store_tcp_create(&s, "127.0.0.1", 0, &p) ||
        dcoll_store_port(s, &port))
        die("serve");
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "rdzv")) {
        int n = atoi(argv[2]);
        if (n < 1 || n > 8192) {
            fprintf(stderr, "usage: dcoll-store-bench rdzv N (1..8192)\n");
            return 2;
        }
        dcoll_store_t *s = serve();
        double t = rendezvous(n);
        int64_t count = 0;
        if (dcoll_store_num_keys(s, &count))
            die("num_keys");
        printf("rendezvous of %d clients: %.3f s (%lld keys)\n", n, t,
               (long long)count);
        dcoll_store_destroy(&s);
        return count == n + 2 ? 0 : 1;
    }
    ops = argc > 1 ? atoi(argv[1]) : 20000;
    int n = argc > 2 ? atoi(argv[2]) : 8;
    if (ops < 2 || n < 1 || n > 256) {
        fprintf(stderr, "usage: dcoll-store-bench [OPS>=2] [CLIENTS 1..256]\n");
        return 2;
    }
    dcoll_store_t *s = serve();
    double one = run(1);
    printf("1 client:   %d round trips in %.3f s: %.1f us each\n", ops, one,
           one / ops * 1e6);
    double many = run(n);
    printf("%d clients: %d round trips each in %.3f s: %.0f per second in "
           "all\n", n, ops, many, (double)n * ops / many);
    dcoll_store_destroy(&s);
    return 0;
}
