/* The sizes a family runs at inside one job (issue 66): its checks run
 * once per "world", a group of the job's ranks with its own MPI
 * communicator, instead of once per launch. Given --sizes (the
 * registry's lines do), a job of n ranks runs the family on
 *
 *     n      the job's world itself (NULL, MPI_COMM_WORLD)
 *     nr     every rank, group ranks reversed (n-1 is rank 0)
 *     Kg     K ranks with a gap: the first K of 0, 2, 3, ..., n-1
 *     K      the top K ranks, n-K .. n-1 (group rank 0 is not job rank 0)
 *
 * "--sizes" alone is n, nr, (n-1)g, 2 and 1 (those the job has room
 * for); "--sizes=4,3g,1" names them. Without it, the world alone, as a
 * program run by hand expects. Include after testutil.h and <mpi.h>.
 *
 * A family's body sees its world through testutil.h's t_w (T_WORLD,
 * t_new_group) and T_COMM, where it used NULL, dcoll_new_group and
 * MPI_COMM_WORLD. Ranks outside a world wait at a barrier of MPI's own
 * while the others run it. */
#ifndef DCOLL_TEST_SIZES_H
#define DCOLL_TEST_SIZES_H

#include <mpi.h>
#include "dcoll/dcoll_mpi.h"

/* The world's MPI communicator: MPI_COMM_WORLD for the job's. */
static MPI_Comm t_wcomm;
#define T_COMM (t_wcomm)

/* The world a name gives in a job of n ranks, as members in rank
 * order; 0 for a name that is none or needs more ranks than the job's. */
static inline int t_world_members(const char *s, int n, int *m, int *whole)
{
    char *end = NULL;
    long k = strtol(s, &end, 10);
    if (end == s || k < 1 || k > n || k > T_MAXW ||
        (*end && strcmp(end, "r") && strcmp(end, "g")) ||
        (*end == 'g' && (k < 2 || k >= n)))
        return 0;
    *whole = k == n && !*end;
    for (int i = 0; i < k; i++)
        m[i] = *end == 'r' ? n - 1 - i
               : *end == 'g' ? (i == 0 ? 0 : i + 1) : (int)(n - k + i);
    return (int)k;
}

/* Run body on each world --sizes names; return its failures' verdict
 * through t_failures as before. A name that makes no world here is a
 * failure of its own, said once. */
static inline void t_sizes(int argc, char **argv, void (*body)(void))
{
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char list[128] = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes")) {
            snprintf(list, sizeof(list), "%d,%dr", n, n);
            if (n >= 3)
                snprintf(list + strlen(list), sizeof(list) - strlen(list),
                         ",%dg,2", n - 1);
            if (n >= 2)
                strcat(list, ",1");
        } else if (!strncmp(argv[i], "--sizes=", 8)) {
            snprintf(list, sizeof(list), "%s", argv[i] + 8);
        }
    }
    if (!*list)
        snprintf(list, sizeof(list), "%d", n);
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s;
         s = strtok_r(NULL, ",", &save)) {
        struct t_world w = {.me = -1};
        MPI_Comm comm = MPI_COMM_NULL;
        w.n = t_world_members(s, n, w.r, &w.whole);
        if (w.n == 0) {
            CHECK(0, "--sizes: \"%s\" is no world of a %d-rank job", s, n);
            continue;
        }
        for (int i = 0; i < w.n; i++)
            if (w.r[i] == t_rank)
                w.me = i;
        if (w.whole) {
            comm = MPI_COMM_WORLD;
        } else {
            CHECK_OK(dcoll_split_group(&w.g, NULL,
                                       w.me >= 0 ? 0 : DCOLL_SPLIT_NONE,
                                       w.me, NULL));
            if (w.me >= 0)
                CHECK_OK(dcoll_group_mpi_comm(w.g, &comm));
        }
        if (w.me >= 0) {
            int before = t_failures, at = -1;
            MPI_Comm_rank(comm, &at);
            CHECK(at == w.me, "world %s: MPI rank %d, want %d", s, at, w.me);
            t_w = w;
            t_wcomm = comm;
            body();
            if (t_failures > before)
                fprintf(stderr, "[rank %d] the failures above were on world "
                        "%s (%d ranks)\n", t_rank, s, w.n);
        }
        if (!w.whole)
            CHECK_OK(dcoll_group_destroy(&w.g));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* The job's world again, for what the program does after. */
    t_w = (struct t_world){.n = n, .me = t_rank, .whole = 1};
    for (int i = 0; i < n && i < T_MAXW; i++)
        t_w.r[i] = i;
    t_wcomm = MPI_COMM_WORLD;
}

#endif
