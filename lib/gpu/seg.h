/* A team's control segment: shared memory that the ranks of a team (the
 * processes sharing one GPU) map, holding each rank's sequence numbers,
 * so that a rank sees how far the others are without MPI (issue 49's
 * handshakes: "ready" once its input is in place, "done" once it has
 * read the others'). The leader makes it under a name unique to the job
 * and group, the others map it, and the name is unlinked once all have:
 * the memory then goes with the last process, one that dies included. */
#ifndef DCOLL_GPU_SEG_H
#define DCOLL_GPU_SEG_H

#include <stdatomic.h>
#include <stdint.h>

/* READY: its input is in place; DONE: it has read the others'; CLOSED:
 * it no longer maps the others' memory (set once, as the group goes). */
enum dcoll_seg_field { DCOLL_SEG_READY, DCOLL_SEG_DONE, DCOLL_SEG_CLOSED,
                       DCOLL_SEG_FIELDS };

/* What a rank tells the others with its READY post, in its writer's own
 * format (the IPC transport's: where its input is). */
#define DCOLL_SEG_BOX 128

/* One rank's lines: its numbers, a cache line of their own, then its
 * box, written before a READY post and read by the others after it; it
 * may change only once every rank posted DONE as far. */
struct dcoll_seg_rank {
    _Atomic uint64_t seq[DCOLL_SEG_FIELDS];
    _Atomic uint32_t failed;   /* set once: the rank gave up on the team */
    char pad[64 - DCOLL_SEG_FIELDS * 8 - 4];
    unsigned char box[DCOLL_SEG_BOX];
};

struct dcoll_seg {
    struct dcoll_seg_rank *rank;   /* [k] */
    int k;
};

/* The leader: make and map the segment of k ranks (zeroed), the others:
 * map it. 0, or -1 with errno. */
int dcoll_seg_create(const char *name, int k, struct dcoll_seg *s);
int dcoll_seg_attach(const char *name, int k, struct dcoll_seg *s);
/* Once every rank has attached (a name that is gone is no failure). */
void dcoll_seg_unlink(const char *name);
void dcoll_seg_close(struct dcoll_seg *s);

/* Rank me has reached n in field f (release: what it wrote before is
 * seen by a rank that sees n). */
void dcoll_seg_post(struct dcoll_seg *s, int me, enum dcoll_seg_field f,
                    uint64_t n);
/* Rank me gives up on the team: the others' waits end at once. */
void dcoll_seg_fail(struct dcoll_seg *s, int me);
/* Whether every rank's field f has reached n, without waiting: 0; 1
 * not yet, *late the first rank behind; -3 where a rank behind failed
 * (*late that rank): one that failed after reaching n does not count. */
int dcoll_seg_check(const struct dcoll_seg *s, enum dcoll_seg_field f,
                    uint64_t n, int *late);
/* The pause between two looks of a wait that began waited seconds ago:
 * none at first, then a yield past 50 us, then a 20-us sleep past 5 ms
 * (the GPU waits' pacing). */
void dcoll_seg_pause(double waited);
/* Until every rank's field f reaches n: 0; -2 once now() passes
 * deadline, -3 where a rank behind failed; *late gets the first rank
 * not there (-1 when none). Spins, then yields, then sleeps, as the GPU
 * waits do. */
int dcoll_seg_wait(const struct dcoll_seg *s, enum dcoll_seg_field f,
                   uint64_t n, double deadline, double (*now)(void),
                   int *late);

#endif
