/* One job over several nodes (test/nodes/nodes.sh): the world adds up,
 * a broadcast crosses the nodes whole, and each rank's local rank and
 * local size are those of its node (ranks with its host name, in rank
 * order).
 *   test_nodes [URL [HOLD_FILE]]   init by URL (none: dcoll_init(NULL));
 *                                  rank 0 waits for HOLD_FILE before it
 *                                  ends, keeping the store up meanwhile
 *   test_nodes outsider HOST PORT  a process of no job, without the token,
 *                                  asks the job's store: it must be refused
 *   test_nodes loop                all_reduce of 4 MiB until the job ends
 *                                  (the watchdog ends it when a node goes);
 *                                  "looping" once under way
 *   test_nodes exit R C            rank R exits with code C after init, the
 *                                  others wait in a barrier it never joins
 *                                  (dcollrun must stop them, every node's)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dcoll/dcoll.h"
#include "check.h"

int t_rank, t_failures;

#define HOST_LEN 64
static char host[HOST_LEN];

static int outsider(const char *addr, int port)
{
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT;
    p.timeout = 5;
    dcoll_store_t *s = NULL;
    dcoll_status_t st = dcoll_store_tcp_create(&s, addr, port, &p);
    if (!st) {
        int64_t n = 0;
        st = dcoll_store_num_keys(s, &n);
        dcoll_store_destroy(&s);
    }
    REQUIRE(st != DCOLL_SUCCESS, "an outsider without the token was served");
    printf("outsider on %s: refused: %s\n", host, dcoll_last_error());
    return 0;
}

/* Until a fault ends the job: nothing here returns. */
static int loop(void)
{
    REQUIRE(dcoll_init(NULL) == DCOLL_SUCCESS, "init");
    int r;
    dcoll_group_rank(NULL, &r);
    enum { BIG = 1 << 20 };
    float *x = calloc(BIG, sizeof(float));
    REQUIRE(x != NULL, "no memory");
    for (long i = 0;; i++) {
        REQUIRE(dcoll_all_reduce(NULL, x, x, BIG, DCOLL_FLOAT32, DCOLL_SUM,
                               NULL, NULL) == DCOLL_SUCCESS, "all_reduce");
        if (i == 20 && r == 0) {
            printf("looping\n");
            fflush(stdout);
        }
    }
}

static int leave(int who, int code)
{
    REQUIRE(dcoll_init(NULL) == DCOLL_SUCCESS, "init");
    int r;
    dcoll_group_rank(NULL, &r);
    printf("rank %d on %s: %s\n", r, host, r == who ? "leaving" : "waiting");
    fflush(stdout);
    if (r == who)
        _exit(code);
    dcoll_barrier(NULL, NULL, NULL);
    fprintf(stderr, "[%s] rank %d left a barrier rank %d never came to\n",
            host, r, who);
    return 1;
}

int main(int argc, char **argv)
{
    gethostname(host, sizeof(host) - 1);
    if (argc == 4 && !strcmp(argv[1], "exit"))
        return leave(atoi(argv[2]), atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "outsider"))
        return outsider(argv[2], atoi(argv[3]));
    if (argc == 2 && !strcmp(argv[1], "loop"))
        return loop();
    dcoll_init_params_t ip = DCOLL_INIT_PARAMS_INIT;
    if (argc > 1) {
        ip.mask = DCOLL_INIT_PARAM_URL;
        ip.url = argv[1];
    }
    REQUIRE(dcoll_init(argc > 1 ? &ip : NULL) == DCOLL_SUCCESS, "init");
    int r, n, lr, ln;
    dcoll_group_rank(NULL, &r);
    dcoll_group_size(NULL, &n);
    REQUIRE(dcoll_local_rank(&lr, &ln) == DCOLL_SUCCESS, "local rank");

    /* Every rank's host name, to say what its local rank must be. */
    char *hosts = calloc((size_t)n, HOST_LEN);
    REQUIRE(hosts != NULL, "no memory");
    REQUIRE(dcoll_all_gather(NULL, host, hosts, HOST_LEN, DCOLL_UINT8, NULL,
                           NULL) == DCOLL_SUCCESS, "all_gather");
    int want_lr = 0, want_ln = 0, nodes = 0;
    for (int q = 0; q < n; q++) {
        const char *hq = hosts + (size_t)q * HOST_LEN;
        if (!strcmp(hq, host)) {
            want_ln++;
            want_lr += q < r;
        }
        int first = 1;
        for (int t = 0; t < q; t++)
            first &= strcmp(hosts + (size_t)t * HOST_LEN, hq) != 0;
        nodes += first;
    }
    REQUIRE(lr == want_lr && ln == want_ln, "local rank %d of %d, want %d of %d",
          lr, ln, want_lr, want_ln);

    int64_t sum = r;
    REQUIRE(dcoll_all_reduce(NULL, &sum, &sum, 1, DCOLL_INT64, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "all_reduce");
    REQUIRE(sum == (int64_t)n * (n - 1) / 2, "sum %lld", (long long)sum);
    enum { BIG = 1 << 20 };
    int *b = malloc(BIG * sizeof(int));
    REQUIRE(b != NULL, "no memory");
    for (int i = 0; i < BIG; i++)
        b[i] = r == n - 1 ? i ^ 0x5a5a : -1;
    REQUIRE(dcoll_broadcast(NULL, b, BIG, DCOLL_INT32, n - 1, NULL, NULL) ==
              DCOLL_SUCCESS, "broadcast");
    for (int i = 0; i < BIG; i++)
        REQUIRE(b[i] == (i ^ 0x5a5a), "broadcast: [%d] = %d", i, b[i]);
    printf("rank %d of %d on %s: local rank %d of %d, %d nodes: ok\n", r, n,
           host, lr, ln, nodes);
    fflush(stdout);
    if (argc > 2 && r == 0)
        for (int i = 0; i < 300 && access(argv[2], F_OK); i++)
            usleep(100000);
    REQUIRE(dcoll_barrier(NULL, NULL, NULL) == DCOLL_SUCCESS, "barrier");
    free(b);
    free(hosts);
    REQUIRE(dcoll_finalize() == DCOLL_SUCCESS, "finalize");
    return 0;
}
