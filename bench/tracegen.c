/* dcoll-trace-bench: one rank's recorder file of CALLS calls, for timing
 * dcoll-trace on a job's worth of them (bench/trace-read.sh copies it to
 * every rank). Alone (1 rank): CALLS calls cycling through all_reduce
 * (1 to 4096 floats), broadcast, all_gather and barrier, on the world and
 * on a group, then dcoll_dump into DCOLL_FLIGHT_DIR.
 *   DCOLL_FLIGHT_DIR=DIR dcoll-trace-bench CALLS */
#include <stdio.h>
#include <stdlib.h>
#include "dcoll/dcoll.h"

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 100000;
    char keep[32];
    snprintf(keep, sizeof(keep), "%ld", calls / 2 + 1);
    setenv("DCOLL_FLIGHT_RECORDER", keep, 1);
    if (calls < 1 || calls > 2000000 || dcoll_init(NULL)) {
        fprintf(stderr, "dcoll-trace-bench: %s\n",
                calls < 1 || calls > 2000000 ? "CALLS: 1 to 2000000"
                                             : dcoll_last_error());
        return 1;
    }
    dcoll_group_t *g = NULL;
    if (dcoll_new_group(&g, NULL, 0, NULL))
        return 1;
    static float x[4096], y[4096];
    for (long i = 0; i < calls; i++) {
        dcoll_group_t *on = i % 2 ? g : NULL;
        int64_t n = (int64_t)1 << (i / 2 % 13);
        switch (i / 2 % 4) {
        case 0:
            dcoll_all_reduce(on, x, y, n, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                             NULL);
            break;
        case 1:
            dcoll_broadcast(on, x, n, DCOLL_FLOAT32, 0, NULL, NULL);
            break;
        case 2:
            dcoll_all_gather(on, x, y, n, DCOLL_FLOAT32, NULL, NULL);
            break;
        default:
            dcoll_barrier(on, NULL, NULL);
        }
    }
    if (dcoll_dump()) {
        fprintf(stderr, "dcoll-trace-bench: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_destroy(&g);
    return dcoll_finalize() ? 1 : 0;
}
