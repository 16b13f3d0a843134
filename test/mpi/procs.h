/* Test helper: processes a spawned job left behind. */
#ifndef DCOLL_TEST_PROCS_H
#define DCOLL_TEST_PROCS_H

/* Write this process's pid to $TMPDIR/pid.RANK. */
void procs_note_pid(int rank);
/* How many of the n ranks noted in dir, or processes in their process
 * groups (orted, ompi-server), are still alive; each is printed. */
int procs_left(const char *dir, int n);

#endif
