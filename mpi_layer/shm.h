/* Inside the shared-memory way (mpi_layer/shm_*.c), host collectives
 * through a segment of shared memory for a group whose ranks are all on
 * one node (all_reduce, reduce, broadcast, all_gather, reduce_scatter,
 * barrier; blocking), and across nodes through each node's. MPI on one
 * node copies through its fragments or once through the kernel and
 * reduces as messages come; here a rank copies its input into its slot
 * of the segment once, the ranks reduce with dcoll's own kernels
 * (lib/base/kernels.c) from the slots, and each copies the result out.
 *
 * shm_seg.c: the settings, the segment's making (rank 0 creates a POSIX
 * shared-memory object and sends its name without waiting; each maps it
 * and counts itself in its head, the last unlinking it) and freeing
 * (munmap, this rank's alone: MPI_Win_free would make a group's destroy
 * collective), and the waits. shm_kinds.c: each kind's steps.
 * shm_nodes.c: the node-aware way. shm_pick.c: which way a call takes
 * (a tuning table's row, the rules measured for each MPI, or a trial).
 *
 * Layout: a head, a line per rank (its step, the call it is in, a call
 * it gave up), then two halves of a slot per rank. A chunk takes the
 * half of its number's parity, and only once every rank has said it is
 * done reading that half's last chunk. A rank's step says "my part of
 * this chunk is there" or "I am done with it"; symmetric kinds wait for
 * every rank's (a sync), rooted ones only where they must, so that a
 * root's part of one chunk overlaps the others' of the next.
 *
 * Every value is reduced once, by one rank, in one order fixed by the
 * count and the group's size (the slice owner's or rank 0's value, then
 * the others' in rank order), and copied to the others as it is: every
 * rank gets the same bits, on every run. */
#ifndef DCOLL_MPI_SHM_H
#define DCOLL_MPI_SHM_H

#include <stdatomic.h>
#include "calls.h"

#define FLAG_BYTES 128      /* a flag's own pair of cache lines */
#define HEAD_BYTES 4096     /* the segment's head, a page */
#define SPIN_ALONE 256      /* pauses before a wait gives its core up
                               (at once where the node's ranks outnumber
                               its cores): a few microseconds, so that a
                               rank the host names cannot show sharing
                               its core (a container, a namespace node)
                               costs that, not a time slice */
#define SMALL_BYTES 4096    /* up to this, every rank reduces the whole
                               call (one sync) rather than a slice (two) */
#define SLOT_LEAST 4096
#define PIPE_BYTES 32768    /* a rooted call's chunk: the root's part of
                               one overlaps the others' of the next */
#define WHOLE_RANKS 4       /* a reduce on at most this many ranks: the
                               root folds every chunk whole */


struct dcoll_mpi_shm {
    char *base;
    size_t bytes;        /* mapped */
    size_t slot;         /* bytes of a half of a rank's slot */
    int k, me;
    uint64_t syncs;      /* steps this rank has taken: the flag's value
                            at each, alike on every rank */
    uint64_t passed;     /* every flag is known to hold this much */
    uint64_t done[2];    /* each half is free once every flag holds
                            this: every rank has read its last chunk */
    uint64_t chunks;     /* chunks moved: the next one's half */
    uint64_t seq, sig;   /* the call in hand: its number, and its kind,
                            count, type, op and root hashed to SIG_BITS */
    uint64_t what;       /*   its kind, type, op and root (call_what) */
    int64_t count;
    int *members;        /* the group rank of each of its ranks; NULL:
                            the group's own (one node) */
    uint64_t calls;      /* calls begun here, alike on every rank */
    uint64_t in_at;      /* the call's input here in a shared heap, as
                            L_IN holds it (0: copied into the slot) */
    const char **from;   /* each rank's input in place (NULL: in its
                            slot), read after the call's first sync,
                            then each rank's output in a shared heap */
    bool placed;         /*   some rank's is: the call ends in a sync,
                            for none to change it while another reads */
    bool direct;         /*   every rank's input and output are */
    uint64_t fence;      /* before this call writes its words: every flag
                            holds this (0: none; dcoll_shm_fence) */
    bool fence_next;     /*   the next call's first step becomes one */
    char name[56];       /* rank 0's: unlinked again when freed, if the
                            last rank never came */
    void *sent;          /* rank 0's: the name's message to the others */
    bool yield;          /* more ranks on the node than cores */
};


struct dcoll_mpi_nodes {
    MPI_Comm node;        /* this rank's node's members, by group rank */
    MPI_Comm leaders;     /* each node's first member; NULL elsewhere */
    int *node_of;         /* by group rank: its node (by first member) */
    int *local_of;        /*   and its place there */
    int lrank, lsize;
    struct dcoll_mpi_shm *seg;   /* the node's; NULL where it has one rank */
};

/* A rank's line: its step (the flag) in the call it is in, the number
 * of a call it gave up (0: none), the call it is in, and where its
 * input lies (a shared heap, or its slot). The step alone on the first
 * cache line, which the others spin on (its count above the low 16
 * bits, the call's signature in them); the rest on the second: the
 * call is read only where a step's signature differs from the
 * reader's (the ranks' calls differ, and the message says how), the
 * input's place (and an all_reduce's output's) after the call's first
 * sync. */
enum { L_FLAG = 0, L_LEFT = 8, L_SEQ, L_WHAT, L_COUNT, L_IN /* two */,
       L_OUT = L_IN + 2 /* two */ };
#define SIG_BITS 16
static inline _Atomic uint64_t *line(const struct dcoll_mpi_shm *s, int r,
                                     int what)
{
    return (_Atomic uint64_t *)(s->base + HEAD_BYTES +
                                (size_t)r * FLAG_BYTES) + what;
}

/* The segment's head: how many ranks have it mapped, and a rank that
 * could not map it whole (plus one; 0: none). */
enum { H_ATTACHED, H_BAD };
static inline _Atomic uint64_t *head(char *base, int what)
{
    return (_Atomic uint64_t *)base + what * 16;
}

static inline _Atomic uint64_t *flag(const struct dcoll_mpi_shm *s, int r)
{
    return line(s, r, L_FLAG);
}

static inline char *slot(const struct dcoll_mpi_shm *s, uint64_t chunk,
                         int r)
{
    return s->base + HEAD_BYTES + (size_t)s->k * FLAG_BYTES +
           ((size_t)(chunk & 1) * (size_t)s->k + (size_t)r) * s->slot;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A call's kind, type, op and root in one word, as lines hold it. */
static inline uint64_t call_what(const struct dcoll_coll *c)
{
    return (uint64_t)c->kind | (uint64_t)c->dtype << 8 |
           (uint64_t)c->op << 16 | (uint64_t)(uint32_t)c->root << 32;
}

/* This rank's step v of the call in hand. */
static inline void post(struct dcoll_mpi_shm *s, uint64_t v)
{
    atomic_store_explicit(flag(s, s->me), v << SIG_BITS | s->sig,
                          memory_order_release);
}

/* A chunk whose reads end before this rank's next post: that post says
 * so. */
static inline void read_by_next(struct dcoll_mpi_shm *s, uint64_t ch)
{
    s->done[ch & 1] = s->syncs + 1;
}


/* A shared heap (shm_heap.c): a part of stride bytes a rank, of which
 * bytes are the program's; every member maps it where shared, else it
 * is this process's own memory. */
struct dcoll_mpi_heap {
    struct dcoll_mpi_heap *next;
    char *base;
    size_t bytes, stride, mapped;
    uint32_t id;
    bool shared;
};
#define HEAP_OFF_BITS 40    /* a line's L_IN: the heap's id above, the
                               offset in the rank's part below */
#define HEAP_MOST (UINT64_C(1) << HEAP_OFF_BITS)
static inline char *dcoll_heap_part(const struct dcoll_mpi_heap *h, int r)
{
    return h->base + (h->shared ? (size_t)r * h->stride : 0);
}

#define NODE_KINDS                                                          \
    ((1u << DCOLL_COLL_ALL_REDUCE) | (1u << DCOLL_COLL_BROADCAST) |         \
     (1u << DCOLL_COLL_BARRIER))

/* shm_seg.c */
extern size_t dcoll_shm_slot_bytes;   /* a half of a rank's slot */
extern bool dcoll_shm_slot_given;     /* DCOLL_SHM_SEGMENT was set */
/* Whether g's members are all on this rank's host, two or more; whether
 * its node has more ranks than cores (by the host names: no call). */
bool dcoll_shm_one_node(const struct dcoll_group *g);
bool dcoll_shm_crowded(const struct dcoll_group *g);
/* The wait call c of g keeps: its deadline in return mode, none in
 * abort mode (the watchdog watches). */
struct dcoll_watch dcoll_shm_watch(const struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   const char *call,
                                   struct dcoll_outcome *out);
/* len bytes from each of comm's ranks into all, point to point through
 * rank 0 with a tag of its own, within c's wait. */
dcoll_status_t dcoll_shm_swap(struct dcoll_group *g, MPI_Comm comm,
                              const void *mine, void *all, size_t len,
                              const struct dcoll_coll *c,
                              struct dcoll_outcome *out);
/* A segment among comm's k ranks (this one me); *sp NULL where it
 * cannot be had, alike on every one of them. */
dcoll_status_t dcoll_shm_make(struct dcoll_group *g, MPI_Comm comm, int me,
                              int k, bool yield, const struct dcoll_coll *c,
                              struct dcoll_outcome *out,
                              struct dcoll_mpi_shm **sp);
/* Until rank r's step is v in this call; every rank's; this rank's own
 * step and then every rank's (a sync); the next chunk and its half. */
dcoll_status_t dcoll_shm_wait_for(struct dcoll_group *g,
                                  struct dcoll_mpi_shm *s, int r,
                                  uint64_t v, const struct dcoll_watch *wt);
dcoll_status_t dcoll_shm_wait_all(struct dcoll_group *g,
                                  struct dcoll_mpi_shm *s, uint64_t v,
                                  const struct dcoll_watch *wt);
dcoll_status_t dcoll_shm_sync(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                              const struct dcoll_watch *wt);
dcoll_status_t dcoll_shm_claim(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                               const struct dcoll_watch *wt, uint64_t *ch);
/* Before a call writes its words (its line's L_IN, by the parity of its
 * number): a call that ended with no step after the others read its
 * words (one that the segment declined, for MPI's call) leaves no bound
 * on how far ahead a rank may run, so the call after next waits until
 * every rank has taken the next one's first step. */
dcoll_status_t dcoll_shm_fence(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                               const struct dcoll_watch *wt);

/* shm_heap.c: where len bytes at p of this rank (me) lie in one of
 * mc's shared heaps, as a line's L_IN says it (0: in none); where L_IN
 * value at says rank r's bytes lie (NULL: in no heap here); every heap
 * freed (the group's record goes). */
uint64_t dcoll_mpi_heap_at(const struct dcoll_mpi_comm *mc, int me,
                           const void *p, size_t len);
const char *dcoll_mpi_heap_of(const struct dcoll_mpi_comm *mc, int r,
                              uint64_t at);
void dcoll_mpi_heaps_free(struct dcoll_mpi_comm *mc);
/* Whether mc has a heap its members share (alike on every rank). */
bool dcoll_mpi_heap_shared(const struct dcoll_mpi_comm *mc);

/* shm_kinds.c: all_reduce (root < 0) and reduce (root a rank of s), and
 * broadcast, through s. */
dcoll_status_t dcoll_shm_reduce(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                                const struct dcoll_coll *c,
                                const struct dcoll_watch *wt, int root);
dcoll_status_t dcoll_shm_broadcast(struct dcoll_group *g,
                                   struct dcoll_mpi_shm *s,
                                   const struct dcoll_coll *c,
                                   const struct dcoll_watch *wt);

/* shm_nodes.c: whether g is on several hosts, some holding two of its
 * ranks or more; its nodes made (*ok false: the way is off, alike on
 * every rank); c run across them. */
bool dcoll_shm_nodes_shared(const struct dcoll_group *g);
dcoll_status_t dcoll_shm_nodes_make(struct dcoll_group *g,
                                    struct dcoll_mpi_comm *mc,
                                    const struct dcoll_coll *c,
                                    struct dcoll_outcome *out, bool *ok);
dcoll_status_t dcoll_shm_nodes_run(struct dcoll_group *g,
                                   struct dcoll_mpi_nodes *nd,
                                   const struct dcoll_coll *c,
                                   const struct dcoll_watch *wt);
void dcoll_mpi_nodes_free(struct dcoll_mpi_nodes *nd);

#endif
