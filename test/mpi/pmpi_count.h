/* The MPI calls a test's process makes, counted by name through MPI's
 * profiling interface (pmpi_count.c defines MPI_Allreduce and the rest,
 * each calling its PMPI_ form): every collective dcoll's kinds may
 * reach, blocking and nonblocking, point-to-point, and persistent
 * requests (MPI_Startall counts as its n MPI_Starts). Counting happens
 * while pc_counting is set. */
#ifndef DCOLL_TEST_PMPI_COUNT_H
#define DCOLL_TEST_PMPI_COUNT_H

#include <stdbool.h>

/* pc_names[0 .. PC_NBLOCKING-1] are the blocking calls. */
enum { PC_NBLOCKING = 21, PC_NNAMES = 45 };
extern const char *const pc_names[PC_NNAMES];
extern int pc_counts[PC_NNAMES];
extern bool pc_counting;

void pc_reset(void);
int pc_index(const char *name);     /* -1: not counted */
int pc_count(const char *name);
/* What was counted, blocking calls apart from all of them. */
void pc_totals(int *blocking, int *all);
/* What was counted, in words ("MPI_Bcast x1, ..."; "no MPI call"). */
const char *pc_made(void);

#endif
