/* A consumer of an installed dcoll: every rank adds its rank + 1, and
 * rank 0 prints the sum with the library's version. Built by CMake
 * (find_package), meson (dependency, or a wrap fallback) and by hand, and
 * run unchanged against libdcoll built with either MPI. */
#include <stdio.h>
#include "dcoll/dcoll.h"

int main(void)
{
    int rank = 0, size = 0;
    if (dcoll_init(NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_init: %s\n", dcoll_last_error());
        return 1;
    }
    dcoll_group_rank(NULL, &rank);
    dcoll_group_size(NULL, &size);
    double v = rank + 1;
    if (dcoll_all_reduce(NULL, &v, &v, 1, DCOLL_FLOAT64, DCOLL_SUM, NULL,
                         NULL) != DCOLL_SUCCESS) {
        fprintf(stderr, "dcoll_all_reduce: %s\n", dcoll_last_error());
        return 1;
    }
    int ok = v == size * (size + 1) / 2.0;
    if (rank == 0)
        printf("hello: %d ranks, sum %g (%s), dcoll %d.%d\n", size, v,
               ok ? "right" : "WRONG", DCOLL_API_VERSION_MAJOR,
               DCOLL_API_VERSION_MINOR);
    dcoll_finalize();
    return ok ? 0 : 1;
}
