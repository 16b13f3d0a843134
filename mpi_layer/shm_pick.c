/* Which way a host call of a group takes, the segment's or MPI's own:
 * a tuning table's row, the rules measured for each MPI, or a trial
 * (mpi_layer/shm.h). */
#include <stdlib.h>
#include <string.h>
#include "shm.h"

/* ---- the choice: a table's row, the rules, or a trial ---- */

/* Across nodes (all_reduce, broadcast, barrier): where it was measured
 * faster than MPI's own call, on two namespace nodes of 2 ranks sharing
 * this machine's 2 cores (bench/README.md): a barrier, and a broadcast
 * of 1 to 16 KiB. Its all_reduce there was as often slower as faster
 * (the node's waiting ranks share the cores the leaders' TCP progress
 * needs), and so were other broadcasts (three stages one after
 * another): DCOLL_SHM=always or a tuning table's row takes them. */
static bool ruled_across(const struct dcoll_coll *c, int64_t bytes)
{
    return c->kind == DCOLL_COLL_BARRIER ||
           (c->kind == DCOLL_COLL_BROADCAST && bytes >= 1024 &&
            bytes <= 16 << 10);
}

/* Where the segment is faster than MPI's own call, by kind and bytes a
 * rank (from, to; to -1: no end), measured on 2 ranks (one a core) and
 * 4 (two a core, the waits yielding) with dcoll-perf -S against each
 * MPI's call as Debian ships it (bench/README.md, "Host collectives
 * through shared memory"). Elsewhere MPI's call stays: its broadcast,
 * gather and reduce copy once from the root's buffer (CMA), which two
 * copies through the segment do not beat at middle sizes. The rule is
 * a function of the kind, the size and the node alone, so every rank
 * and every run takes the same way and gets the same bits. */
struct rule {
    enum dcoll_coll_kind kind;
    int64_t from, to;
};
#define ANY(k) {k, 0, -1}
#define MIB (INT64_C(1) << 20)
#ifdef MPICH
static const struct rule one_a_core[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_BARRIER),
    ANY(DCOLL_COLL_REDUCE),
    {DCOLL_COLL_REDUCE_SCATTER, 0, 256 << 10},
    {DCOLL_COLL_REDUCE_SCATTER, 4 * MIB, -1},
    {DCOLL_COLL_BROADCAST, 0, 16 << 10},
    {DCOLL_COLL_BROADCAST, 4 * MIB, -1},
    {DCOLL_COLL_ALL_GATHER, 0, 128 << 10},
};
static const struct rule shared_cores[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), ANY(DCOLL_COLL_REDUCE),
    {DCOLL_COLL_ALL_GATHER, 0, MIB},
    {DCOLL_COLL_BROADCAST, 16 << 10, 64 << 10},
    {DCOLL_COLL_BROADCAST, 16 * MIB, -1},
};
#else
static const struct rule one_a_core[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), {DCOLL_COLL_BROADCAST, 0, 4096},
    {DCOLL_COLL_REDUCE, 0, 4096}, {DCOLL_COLL_ALL_GATHER, 0, 16 << 10},
};
static const struct rule shared_cores[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), ANY(DCOLL_COLL_ALL_GATHER),
    {DCOLL_COLL_BROADCAST, 1024, 16 << 10},
    {DCOLL_COLL_BROADCAST, MIB, -1}, {DCOLL_COLL_REDUCE, 1024, 64 << 10},
    {DCOLL_COLL_REDUCE, MIB, -1},
};
#endif

static bool ruled(const struct dcoll_mpi_comm *mc, const struct dcoll_coll *c,
                  int64_t bytes)
{
    bool busy = mc->shm_on == 2;
    const struct rule *r = busy ? shared_cores : one_a_core;
    size_t n = busy ? sizeof(shared_cores) / sizeof(*r)
                    : sizeof(one_a_core) / sizeof(*r);
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == c->kind && bytes >= r[i].from &&
            (r[i].to < 0 || bytes <= r[i].to))
            return true;
    return false;
}

#define TRIAL 5               /* timed calls of each way */
#define BUCKETS 48            /* by log2 of a rank's bytes */

struct dcoll_mpi_shm_trial {
    signed char way;          /* -1: trying; 0: MPI's; 1: this */
    unsigned char tries;
    float t[2][TRIAL];
};

static int kind_slot(enum dcoll_coll_kind k)
{
    switch (k) {
    case DCOLL_COLL_ALL_REDUCE: return 0;
    case DCOLL_COLL_REDUCE: return 1;
    case DCOLL_COLL_BROADCAST: return 2;
    case DCOLL_COLL_ALL_GATHER: return 3;
    case DCOLL_COLL_REDUCE_SCATTER: return 4;
    default: return 5;
    }
}

static int bucket(int64_t bytes)
{
    int b = 0;
    while (b < BUCKETS - 1 && bytes > 1)
        bytes >>= 1, b++;
    return b;
}

int dcoll_mpi_shm_pick(struct dcoll_group *g, const struct dcoll_coll *c,
                       struct dcoll_mpi_shm_trial **timed)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    *timed = NULL;
    if (!mc->shm_on)
        mc->shm_on = dcoll_mpi_shm_mode == DCOLL_SHM_NEVER ? -1
                     : dcoll_shm_one_node(g) ? (dcoll_shm_crowded(g) ? 2 : 1)
                     : dcoll_shm_nodes_shared(g) ? 3 : -1;
    if (mc->shm_on < 0 || c->layout || c->nbh ||
        (c->count == 0 && c->kind != DCOLL_COLL_BARRIER))
        return 0;
    /* Across nodes: all_reduce, broadcast and barrier of MPI's counts. */
    bool across = mc->shm_on == 3;
    if (across && (c->count > INT_MAX ||
                   !((NODE_KINDS >> c->kind) & 1)))
        return 0;
    if (dcoll_mpi_shm_mode == DCOLL_SHM_ALWAYS)
        return 1;
    bool found = false;
    enum dcoll_way w = DCOLL_WAY_MPI;
    if (dcoll_mpi_tuning && c->kind != DCOLL_COLL_BARRIER)
        w = dcoll_mpi_tuned(g, c, &found);
    if (found)
        return w == DCOLL_WAY_SHM ? 2 : 0;
    int64_t bytes = c->count * (int64_t)dcoll_dtype_sizes[c->dtype];
    if (across)
        return ruled_across(c, bytes);
    /* Where the rules keep MPI's call, a group with a shared heap asks
     * whether every rank's buffer lies there: read in place, the
     * segment beats MPI's call at every size measured above 4 KiB
     * (bench/README.md, "Buffers from dcoll_mem_alloc"). */
    if (dcoll_mpi_shm_mode == DCOLL_SHM_AUTO)
        return ruled(mc, c, bytes) ? 1
               : bytes > SMALL_BYTES && c->kind != DCOLL_COLL_BARRIER &&
                         dcoll_mpi_heap_shared(mc) ? 3 : 0;
    if (!mc->trial) {
        mc->trial = calloc(6 * BUCKETS, sizeof(*mc->trial));
        if (!mc->trial)
            return 0;   /* alike nowhere: a rank without room waits on */
        for (int i = 0; i < 6 * BUCKETS; i++)
            mc->trial[i].way = -1;
    }
    struct dcoll_mpi_shm_trial *t =
        &mc->trial[kind_slot(c->kind) * BUCKETS + bucket(bytes)];
    if (t->way >= 0)
        return t->way;
    /* Tries 0 and 1 warm each way up (the segment is made on the
     * first); then TRIAL calls of MPI's, then TRIAL of this, in runs,
     * so that neither is charged with what the other left behind. */
    int n = t->tries;
    *timed = t;
    return n == 1 || n >= 2 + TRIAL;
}

bool dcoll_mpi_shm_takes(struct dcoll_group *g, const struct dcoll_coll *c)
{
    if (!((DCOLL_MPI_SHM_KINDS >> c->kind) & 1))
        return false;
    struct dcoll_mpi_shm_trial *t;
    int way = dcoll_mpi_shm_pick(g, c, &t);
    /* A trial's starts take part in it. */
    return way != 0 || t != NULL;
}

static float median(float *v)
{
    for (int i = 1; i < TRIAL; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            float x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[TRIAL / 2];
}

dcoll_status_t dcoll_mpi_shm_timed(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_outcome *out,
                                   struct dcoll_mpi_shm_trial *t, double t0,
                                   dcoll_status_t st)
{
    if (st)
        return st;
    int n = t->tries++ - 2;
    if (n < 0)
        return DCOLL_SUCCESS;
    t->t[n / TRIAL][n % TRIAL] = (float)(dcoll_now() - t0);
    if (n + 1 < 2 * TRIAL)
        return DCOLL_SUCCESS;
    /* The slowest rank's medians decide, alike on every rank; this way
     * must be 5% faster to be kept. A group whose segment could not be
     * made took MPI's calls in both runs. */
    float mine[2] = {median(t->t[0]), median(t->t[1])};
    float *all = malloc(sizeof(mine) * (size_t)g->size);
    if (!all)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "trial's times", c->fn);
    if ((st = dcoll_mpi_exchange(g, mine, all, sizeof(mine), c, out)))
        return st;   /* all is left to a late rank's part */
    float most[2] = {0, 0};
    for (int r = 0; r < g->size; r++)
        for (int w = 0; w < 2; w++)
            most[w] = all[2 * r + w] > most[w] ? all[2 * r + w] : most[w];
    free(all);
    t->way = dcoll_mpi_of(g)->shm && most[1] < 0.95f * most[0];
    return DCOLL_SUCCESS;
}

const char *dcoll_mpi_shm_rule(void)
{
    static const char *const says[] = {
        "host calls of a group on one node take the shared segment by a "
        "tuning table's row, else by the kinds and sizes where it was "
        "measured faster (DCOLL_SHM=auto)",
        "no shared segment (DCOLL_SHM=never)",
        "host calls of a group on one node take the shared segment "
        "(DCOLL_SHM=always)",
        "host calls of a group on one node take the shared segment by a "
        "tuning table's row, else where a trial on the group's first calls "
        "of each kind and size finds it faster (DCOLL_SHM=trial)"};
    return says[dcoll_mpi_shm_mode];
}
