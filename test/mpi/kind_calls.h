/* Every kind of call, as the tests make it: one table keyed by enum
 * dcoll_coll_kind, saying how to call the kind blocking and as a plan on
 * a group, how to check what it left, and which MPI call it reaches by
 * default. The route tests and the plan tests iterate it; transport-table
 * fails, naming the kind, where a kind has no entry, so a new kind lands
 * with its tests. Data: int32, KC_COUNT elements a block, rank r's input
 * element k is r * 100 + k (r a group rank); the root is the group's last
 * rank, passed to the calls as its world rank. */
#ifndef DCOLL_TEST_KIND_CALLS_H
#define DCOLL_TEST_KIND_CALLS_H

#include <stdbool.h>
#include <stdint.h>
#include "dcoll/dcoll.h"
#include "base.h"

enum { KC_COUNT = 4, KC_MAX_RANKS = 8 };

/* One call on group g (me of n): its buffers and arrays. */
struct kc_ctx {
    dcoll_group_t *g;
    int me, n, root;
    int world_me;                 /* me's world rank */
    int world_root;               /* root's, which the calls take */
    int next, prev;               /* world ranks of the ring's neighbours */
    dcoll_neighborhood_t *nbh;    /* the ring: prev in, next out */
    const dcoll_coll_opts_t *opts;   /* every call's (NULL: none) */
    int32_t in[KC_COUNT * KC_MAX_RANKS], out[KC_COUNT * KC_MAX_RANKS];
    int64_t counts[KC_MAX_RANKS], displs[KC_MAX_RANKS];
    int64_t ncounts[2], ndispls[2];
    dcoll_layout_t slay[2], rlay[2];
    char what[256];               /* a failed check's words */
};

struct kind_call {
    const char *name;      /* dcoll_kind_name(kind)'s */
    /* The MPI call the blocking form reaches at default settings,
     * exactly once and nothing else (send's entry is the pair: its
     * MPI_Send and recv's MPI_Recv). */
    const char *mpi;
    dcoll_status_t (*run)(struct kc_ctx *c);
    dcoll_status_t (*plan)(struct kc_ctx *c, dcoll_plan_t **p);
    /* After the call: true where out (or in, for in-place kinds) holds
     * what the kind promises; else c->what says what is wrong. */
    bool (*check)(struct kc_ctx *c);
};

extern const struct kind_call kind_calls[DCOLL_COLL_KIND_COUNT_];

/* Ready c for a call on g: buffers filled, the ring's neighbourhood
 * made (collective on g); kc_done frees it. */
dcoll_status_t kc_begin(struct kc_ctx *c, dcoll_group_t *g);
void kc_fill(struct kc_ctx *c);
void kc_done(struct kc_ctx *c);
/* One start of plan p with the inputs filled again: blocking, or (async)
 * with a work waited for; the start's or the wait's status. */
dcoll_status_t kc_start(struct kc_ctx *c, dcoll_plan_t *p, bool async);

#endif
