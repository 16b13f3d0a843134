/* The IPC transport: the ranks of a group that share a GPU (a team,
 * team.h) move their data on that GPU through CUDA IPC (steps.c),
 * instead of through host memory and MPI. NCCL refuses such groups.
 *   one team      every rank on one GPU: every kind of a row, every type
 *                 and op, among the team;
 *   several       some GPUs shared: all_reduce and broadcast in three
 *                 steps (hier): within each team over IPC to its leader
 *                 (its lowest rank), NCCL among the leaders (one rank a
 *                 GPU, which NCCL accepts; without NCCL on every rank,
 *                 MPI on host copies), and within each team over IPC
 *                 from its leader again; the other kinds, and ops the
 *                 leaders' call lacks, are declined;
 *   else          declined.
 * Each rank owns a scratch buffer on the GPU, exported once to its team,
 * and two interprocess events; a control segment (seg.h) per team holds
 * each rank's progress. Declines are alike on every rank, and so is
 * DCOLL_IPC=0. Async calls and plans queue their steps on the group's
 * record: each test, wait or new call moves the queue on, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bytes.h"
#include "gpu_kinds.h"
#include "ipc.h"
#include "kinds.h"
#include "team.h"

static size_t scratch_wanted = (size_t)32 << 20;
bool dcoll_ipc_on = true;

dcoll_status_t dcoll_ipc_env(void)
{
    const char *v = getenv("DCOLL_IPC_SCRATCH");
    scratch_wanted = (size_t)32 << 20;
    if (v && *v && (!dcoll_parse_bytes(v, &scratch_wanted) ||
                    scratch_wanted > ((size_t)1 << 40)))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_IPC_SCRATCH='%s' is not a size (bytes, or "
                           "with K, M or G)", v);
    if (v && *v && !scratch_wanted)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_IPC_SCRATCH='%s' is no scratch, and the "
                           "IPC transport needs some (a value below 4K a "
                           "rank is raised to that; DCOLL_IPC=0 turns the "
                           "transport off)", v);
    v = getenv("DCOLL_IPC");
    if (v && *v && strcmp(v, "0") && strcmp(v, "1"))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "DCOLL_IPC='%s' is not 0 or 1", v);
    dcoll_ipc_on = !v || strcmp(v, "0") != 0;
    return DCOLL_SUCCESS;
}

/* The kinds its steps have code for (steps.c), of those NCCL runs: a
 * group that may use NCCL takes either alike. */
static bool ipc_runs(enum dcoll_coll_kind kind)
{
    return dcoll_gpu_coll_kind(kind) && dcoll_ipc_codes(kind);
}

/* A rank's scratch: DCOLL_IPC_SCRATCH, but 4 KiB a piece at least. */
static size_t scratch_size(int k)
{
    size_t least = (size_t)4096 * (size_t)k;
    return scratch_wanted < least ? least : scratch_wanted;
}

static void release(struct ipc_group *ig)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    if (p && ig->lcomm) {
        /* Aborted where a call failed: its finalize would wait for
         * leaders that may never come. */
        if (p->nccl_release)
            p->nccl_release(ig->lcomm, ig->timeout, *ig->failed != '\0');
        else
            p->nccl_free(ig->lcomm);
    }
    ig->lcomm = NULL;
    /* Not where a staged call failed: MPI may still use it. */
    if (ig->mcomm && !*ig->failed)
        ig->svc->sub_free(ig->mcomm);
    ig->mcomm = NULL;
    /* The peers' buffers first: mapped from their allocations. */
    dcoll_ipc_cache_free(ig->cache);
    ig->cache = NULL;
    if (p && ig->peer) {
        for (int j = 0; j < ig->k; j++) {
            if (j != ig->me && ig->peer[j])
                p->ipc_close(ig->peer[j], ig->device);
            if (j != ig->me && ig->ready[j])
                p->ipc_event_free(ig->ready[j], ig->device);
            if (j != ig->me && ig->done[j])
                p->ipc_event_free(ig->done[j], ig->device);
        }
        /* The others close theirs before this rank's memory goes (CUDA:
         * an exporter frees only after its importers closed), for at most
         * a second; past that, it is left allocated, not freed under a
         * peer that may still map it. */
        bool closed = !ig->seg.rank;
        if (ig->seg.rank) {
            int late;
            dcoll_seg_post(&ig->seg, ig->me, DCOLL_SEG_CLOSED, 1);
            closed = dcoll_seg_wait(&ig->seg, DCOLL_SEG_CLOSED, 1,
                                    dcoll_now() + 1, dcoll_now, &late) == 0;
        }
        if (ig->ready[ig->me])
            p->ipc_event_free(ig->ready[ig->me], ig->device);
        if (ig->done[ig->me])
            p->ipc_event_free(ig->done[ig->me], ig->device);
        if (closed && ig->peer[ig->me])
            p->dev_free(ig->peer[ig->me], ig->device);
    }
    dcoll_seg_close(&ig->seg);
    free(ig->peer);
    free(ig->ready);
    free(ig->done);
    free(ig->srcs);
    free(ig->from);
    free(ig->members);
    free(ig->team_of);
    free(ig->index_of);
    ig->peer = ig->ready = ig->done = NULL;
    ig->srcs = NULL;
    ig->from = NULL;
    ig->members = ig->team_of = ig->index_of = NULL;
}

/* What a rank says of itself before the teams are made. */
struct ident {
    int32_t ok, wanted, reduce, nccl;
    unsigned char uuid[16];
    uint64_t scratch;
};

/* What it shares once they are: its team's segment name (a leader's),
 * its scratch and events. */
struct handles {
    int32_t ok, named;
    char name[64];
    unsigned char mem[DCOLL_IPC_HANDLE_BYTES];
    unsigned char ready[DCOLL_IPC_HANDLE_BYTES];
    unsigned char done[DCOLL_IPC_HANDLE_BYTES];
};

/* Why the teams could not be made, said once a process: the group's
 * calls then stage through host memory. */
static void say_declined(const struct dcoll_group *g, const char *why)
{
    static bool said;
    if (!said && g->rank == 0) {
        said = true;
        fprintf(stderr, "dcoll: group %d: ranks of it share a GPU, but the "
                "IPC transport could not be set up (%s), so its GPU calls "
                "go through host memory\n", g->id, why);
    }
}

/* This rank's part of its team: the segment (its leader makes it), the
 * scratch and events, exported to the team and the team's opened. */
static int make_team(struct dcoll_group *g, struct ipc_group *ig,
                     char *why, size_t len)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int k = ig->k, me = ig->me, dev = ig->device;
    struct handles mine = {0};
    struct handles *all = calloc((size_t)g->size, sizeof(*all));
    ig->peer = calloc((size_t)k, sizeof(void *));
    ig->ready = calloc((size_t)k, sizeof(void *));
    ig->done = calloc((size_t)k, sizeof(void *));
    ig->srcs = calloc((size_t)k, sizeof(void *));
    ig->from = calloc((size_t)k, sizeof(*ig->from));
    /* Zero copy where the plugin can find an allocation: a few of each
     * peer's buffers kept mapped between a plan's starts. */
    if (p->mem_range)
        ig->cache = dcoll_ipc_cache_new(p, dev, 8 * k);
    int ok = all && ig->peer && ig->ready && ig->done && ig->srcs &&
             ig->from && (ig->cache || !p->mem_range);
    if (!ok)
        snprintf(why, len, "no memory");
    if (ok && me == 0) {
        static unsigned made;
        snprintf(mine.name, sizeof(mine.name), "/dcoll-ipc-%d-%d-%u",
                 (int)getpid(), g->id, made++);
        mine.named = dcoll_seg_create(mine.name, k, &ig->seg) == 0;
        if (!mine.named) {
            snprintf(why, len, "shm_open of the team's control segment "
                     "%s failed", mine.name);
            ok = 0;
        }
    }
    if (ok && !(ig->peer[me] = p->dev_alloc(ig->scratch_bytes, dev))) {
        snprintf(why, len, "cudaMalloc of %zu bytes of scratch: %s",
                 ig->scratch_bytes, p->last_error());
        ok = 0;
    }
    if (ok && (p->ipc_export(ig->peer[me], dev, mine.mem) ||
               p->ipc_event(dev, &ig->ready[me], mine.ready) ||
               p->ipc_event(dev, &ig->done[me], mine.done))) {
        snprintf(why, len, "exporting scratch and events: %s",
                 p->last_error());
        ok = 0;
    }
    mine.ok = ok;
    if (g->svc->allgather_bytes(g, &mine, all, sizeof(mine)))
        ok = 0;
    const struct handles *lead = ok ? &all[ig->members[0]] : NULL;
    if (ok && me != 0 &&
        (!lead->named || dcoll_seg_attach(lead->name, k, &ig->seg))) {
        snprintf(why, len, "mapping the team's control segment failed");
        ok = 0;
    }
    for (int j = 0; ok && j < k; j++) {
        const struct handles *h = &all[ig->members[j]];
        if (!h->ok) {
            snprintf(why, len, "rank %d could not make its part",
                     ig->members[j]);
            ok = 0;
        } else if (j != me &&
                   (p->ipc_open(h->mem, dev, &ig->peer[j]) ||
                    p->ipc_event_open(h->ready, dev, &ig->ready[j]) ||
                    p->ipc_event_open(h->done, dev, &ig->done[j]))) {
            snprintf(why, len, "opening rank %d's scratch and events "
                     "(cudaIpcOpen*: IPC needs the same user and no "
                     "container boundary): %s", ig->members[j],
                     p->last_error());
            ok = 0;
        }
    }
    free(all);
    if (g->svc->agree(g, &ok))
        ok = 0;
    /* Every rank has mapped it, or none will: the name goes. */
    if (me == 0 && mine.named)
        dcoll_seg_unlink(mine.name);
    if (!ok && !*why)
        snprintf(why, len, "another rank could not set it up");
    return ok ? 0 : -1;
}

/* The leaders' communicator (hier): NCCL's, one rank a GPU, or without
 * NCCL an MPI one, ordered by team. Collective over g; the others make
 * none. */
static int make_leaders(struct dcoll_group *g, struct ipc_group *ig,
                        char *why, size_t len)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    const char *what = ig->mpi_leaders ? "MPI" : "NCCL";
    int ok = 1;
    if (ig->mpi_leaders) {
        ok = g->svc->sub_make(g, ig->me == 0, ig->team, &ig->mcomm) ==
             DCOLL_SUCCESS;
        if (!ok)
            snprintf(why, len, "the leaders' MPI communicator: %s",
                     dcoll_last_error());
    } else {
        char *id = calloc(1, p->nccl_bytes);
        ok = id && (g->rank != 0 || p->nccl_id(id) == 0);
        if (g->svc->agree(g, &ok) || !ok ||
            g->svc->bcast_bytes(g, id, p->nccl_bytes, 0)) {
            free(id);
            snprintf(why, len, "rank 0 could not make an NCCL id");
            return -1;
        }
        if (ig->me == 0 &&
            p->nccl_comm(id, ig->nteams, ig->team, ig->device,
                         dcoll_gpu_timeout(g), &ig->lcomm)) {
            snprintf(why, len, "the leaders' NCCL communicator: %s",
                     p->last_error());
            ok = 0;
        }
        free(id);
    }
    if (g->svc->agree(g, &ok))
        ok = 0;
    if (!ok && !*why)
        snprintf(why, len, "another leader could not make the %s "
                 "communicator", what);
    return ok ? 0 : -1;
}

/* This rank's team from the teams of g, into ig; -1 without memory. */
static int place(struct dcoll_group *g, struct ipc_group *ig,
                 const struct dcoll_teams *t)
{
    ig->team = t->of[g->rank];
    ig->nteams = t->n;
    ig->k = t->size[ig->team];
    ig->me = t->index[g->rank];
    ig->members = calloc((size_t)ig->k, sizeof(int));
    ig->team_of = calloc((size_t)g->size, sizeof(int));
    ig->index_of = calloc((size_t)g->size, sizeof(int));
    if (!ig->members || !ig->team_of || !ig->index_of)
        return -1;
    dcoll_teams_members(t, ig->team, ig->members);
    memcpy(ig->team_of, t->of, sizeof(int) * (size_t)g->size);
    memcpy(ig->index_of, t->index, sizeof(int) * (size_t)g->size);
    return 0;
}

/* The first call on g: the ranks' GPUs, over the group's control twin
 * within the call's deadline, then the teams. Every rank ends in the
 * same state. */
static dcoll_status_t setup(struct dcoll_group *g, struct ipc_group *ig,
                            const struct dcoll_coll *c,
                            struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct ident me = {0};
    struct ident *ids = calloc((size_t)g->size + 1, sizeof(*ids));
    if (!ids)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's IPC setup", c->fn);
    me.ok = p->dev_alloc && p->ipc_open && p->device_uuid &&
            p->device_uuid(c->device, me.uuid) == 0;
    me.wanted = dcoll_ipc_on;
    me.reduce = p->reduce != NULL;
    me.nccl = dcoll_gpu_has_nccl();
    me.scratch = scratch_wanted;
    ids[g->size] = me;
    dcoll_status_t st = g->svc->exchange(g, &ids[g->size], ids, sizeof(me),
                                         c, out);
    if (st) {
        if (!out->timed_out)
            free(ids);   /* else MPI may still write it: kept */
        return st;
    }
    int ok = 1, wanted = 1, reduce = 1, nccl = 1;
    uint64_t least = me.scratch;
    unsigned char *uu = malloc(16 * (size_t)g->size);
    for (int r = 0; r < g->size; r++) {
        ok &= ids[r].ok;
        wanted &= ids[r].wanted;
        reduce &= ids[r].reduce;
        nccl &= ids[r].nccl;
        if (ids[r].scratch < least)
            least = ids[r].scratch;
        if (uu)
            memcpy(uu + 16 * r, ids[r].uuid, 16);
    }
    free(ids);
    struct dcoll_teams t = {0};
    ig->state = IPC_NONE;
    if (!uu || dcoll_teams_make(uu, 16, g->size, &t)) {
        free(uu);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's teams", c->fn);
    }
    free(uu);
    int biggest = 0;
    for (int j = 0; j < t.n; j++)
        biggest = t.size[j] > biggest ? t.size[j] : biggest;
    /* One team of several, or several teams (some of several), with NCCL
     * for their leaders or else MPI. */
    bool takes = ok && wanted && biggest > 1;
    if (takes && place(g, ig, &t)) {
        dcoll_teams_free(&t);
        release(ig);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's team", c->fn);
    }
    dcoll_teams_free(&t);
    if (!takes)
        return DCOLL_SUCCESS;
    ig->hier = ig->nteams > 1;
    const char *lead = getenv("DCOLL_IPC_TEST_LEADERS");
    ig->mpi_leaders = ig->hier && (!nccl || (lead && !strcmp(lead, "mpi")));
    ig->svc = g->svc;
    ig->watch = dcoll_death_of && g->recoverable ? g : NULL;
    ig->device = c->device;
    ig->timeout = dcoll_gpu_timeout(g);
    ig->reduce = reduce;
    ig->scratch_bytes = scratch_size(ig->k);
    ig->chunk_bytes = least < (uint64_t)ig->scratch_bytes ? least
                                                          : ig->scratch_bytes;
    if (ig->chunk_bytes < (size_t)4096 * (size_t)ig->k)
        ig->chunk_bytes = (size_t)4096 * (size_t)ig->k;
    const char *skip = getenv("DCOLL_IPC_TEST_SKIP");
    ig->skip_ready = skip && !strcmp(skip, "ready");
    char why[256] = "";
    if (make_team(g, ig, why, sizeof(why)) ||
        (ig->hier && make_leaders(g, ig, why, sizeof(why)))) {
        release(ig);
        say_declined(g, why);
        return DCOLL_SUCCESS;
    }
    ig->state = IPC_READY;
    return DCOLL_SUCCESS;
}

static struct ipc_group *ipc_group(struct dcoll_group *g)
{
    struct ipc_group *ig = g->tl[DCOLL_TL_IPC];
    if (ig)
        return ig;
    if (!(ig = calloc(1, sizeof(*ig))))
        return NULL;
    ig->dead = -1;
    if (pthread_mutex_init(&ig->lock, NULL)) {
        free(ig);
        return NULL;
    }
    return g->tl[DCOLL_TL_IPC] = ig;
}

/* The failure as fn's status: a deadline as the group's timeout, with
 * the roll call of call seq (where each rank stands, for the report),
 * anything else as an internal error. */
static dcoll_status_t failure(struct ipc_group *ig, struct dcoll_group *g,
                              uint64_t seq, const char *fn,
                              struct dcoll_outcome *out)
{
    if (ig->late && out) {
        out->timed_out = true;
        out->died = ig->dead + 1;   /* the core reports a death */
        out->roll = (struct dcoll_roll){0};
        if (seq && g->svc->roll_call && ig->dead < 0)
            g->svc->roll_call(g, seq, &out->roll);
    }
    if (ig->dead >= 0)
        return dcoll_error(DCOLL_ERR_RANK_DIED, "%s: rank %d died", fn,
                           ig->dead);
    return dcoll_error(ig->late ? DCOLL_ERR_TIMEOUT : DCOLL_ERR_INTERNAL,
                       "%s: the IPC transport among the ranks sharing GPU "
                       "%d: %s", fn, ig->device, ig->failed);
}

static dcoll_status_t work_test(struct dcoll_work *bw, int *done)
{
    struct ipc_work *w = (struct ipc_work *)bw;
    struct ipc_group *ig = bw->group->tl[DCOLL_TL_IPC];
    *done = 0;
    if (!ig || !w->op) {
        *done = 1;
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_work_test: the "
                           "group's IPC record is gone");
    }
    bool ended;
    if (dcoll_ipc_progress(ig, w->op, &ended)) {
        *done = 1;
        return failure(ig, bw->group, bw->seq, "dcoll_work_test",
                       &bw->report);
    }
    *done = ended;
    return DCOLL_SUCCESS;
}

static dcoll_status_t work_wait(struct dcoll_work *bw)
{
    struct ipc_work *w = (struct ipc_work *)bw;
    struct ipc_group *ig = bw->group->tl[DCOLL_TL_IPC];
    if (!ig || !w->op)
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_work_wait: the "
                           "group's IPC record is gone");
    return dcoll_ipc_drive(ig, w->op)
               ? failure(ig, bw->group, bw->seq, "dcoll_work_wait",
                         &bw->report)
               : DCOLL_SUCCESS;
}

/* A released work's call stays queued until it is through (its peers
 * count on it), then goes. */
static void work_release(struct dcoll_work *bw)
{
    struct ipc_work *w = (struct ipc_work *)bw;
    struct ipc_op *h = w->op;
    struct ipc_group *ig = bw->group->tl[DCOLL_TL_IPC];
    if (!h || !ig || !dcoll_ipc_disown(ig, h))
        free(h);
    free(w);
}

/* c as one team's step (every rank on one GPU); MPI's in-place forms
 * (sendbuf == recvbuf) as the step sees them: a gather's input is this
 * rank's block of recvbuf already, a scatter's root keeps its block. */
static struct ipc_op *flat(struct ipc_group *ig, const struct dcoll_coll *c,
                           double deadline)
{
    const void *src = c->sendbuf;
    void *dst = c->recvbuf;
    bool root = ig->me == c->root;
    bool aliased = c->in_place && c->sendbuf == c->recvbuf;
    size_t b = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    if (aliased && (c->kind == DCOLL_COLL_ALL_GATHER ||
                    (c->kind == DCOLL_COLL_GATHER && root)))
        src = (const char *)c->recvbuf + (size_t)ig->me * b;
    if (aliased && c->kind == DCOLL_COLL_SCATTER && root)
        dst = NULL;
    struct ipc_op *h = dcoll_ipc_op(ig, c->kind, src, dst, c->count,
                                    c->dtype, c->op, c->root, ig->k,
                                    dcoll_opts_stream(c->opts), deadline);
    if (h)
        h->in_place = c->planned;
    return h;
}

/* The leaders' call of c, in place on recvbuf (root: the root's team,
 * which is its rank among the leaders); AVG as a SUM of inputs the first
 * step premultiplied; NCCL's view of the type where NCCL runs it. */
static dcoll_plugin_call_t leaders_call(const struct ipc_group *ig,
                                        const struct dcoll_coll *c)
{
    bool reduces = c->kind == DCOLL_COLL_ALL_REDUCE;
    dcoll_plugin_call_t k = {
        .kind = c->kind, .sendbuf = c->recvbuf, .recvbuf = c->recvbuf,
        .count = c->count, .dtype = c->dtype,
        .op = c->op == DCOLL_AVG ? DCOLL_SUM : c->op,
        .root = reduces ? 0 : ig->team_of[c->root], .in_place = true};
    if (!ig->mpi_leaders)
        dcoll_nccl_view(&k.count, &k.dtype);
    return k;
}

/* Whether the staged leaders' MPI call takes c: the arithmetic ops
 * (which the call's checks let through on numbers only: integers,
 * floating and complex types), in one MPI call. */
static bool mpi_takes(const struct dcoll_coll *c)
{
    if (c->count > INT32_MAX)
        return false;
    return c->kind == DCOLL_COLL_BROADCAST || c->op == DCOLL_SUM ||
           c->op == DCOLL_PRODUCT || c->op == DCOLL_MIN ||
           c->op == DCOLL_MAX || c->op == DCOLL_AVG;
}

/* Whether the hierarchy runs c: all_reduce and broadcast, of what the
 * leaders' NCCL or MPI call takes (an integer AVG divides the whole sum,
 * which no step sees). Alike on every rank. */
static bool hier_runs(const struct ipc_group *ig, const struct dcoll_coll *c)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    if ((c->kind != DCOLL_COLL_ALL_REDUCE &&
         c->kind != DCOLL_COLL_BROADCAST) || c->count == 0)
        return false;
    if (c->op == DCOLL_AVG && !dcoll_dtype_is_float(c->dtype) &&
        !dcoll_dtype_is_complex(c->dtype))
        return false;
    if (ig->mpi_leaders)
        return mpi_takes(c);
    if (!dcoll_nccl_knows(c->dtype, c->op))
        return false;
    dcoll_plugin_call_t k = leaders_call(ig, c);
    return !p->nccl_takes || p->nccl_takes(&k) == 0;
}

/* c's three steps on g's teams, queued: the last one returned, w's
 * where w is given. */
static struct ipc_op *hier(struct dcoll_group *g, struct ipc_group *ig,
                           const struct dcoll_coll *c, double deadline,
                           struct ipc_work *w)
{
    void *stream = dcoll_opts_stream(c->opts);
    struct ipc_op *s[3] = {NULL, NULL, NULL};
    dcoll_op_t op = c->op;
    bool reduces = c->kind == DCOLL_COLL_ALL_REDUCE;
    int rteam = reduces ? -1 : ig->team_of[c->root];
    /* 1: to each leader (all_reduce), or from the root to its team. */
    if (reduces)
        s[0] = dcoll_ipc_op(ig, DCOLL_COLL_REDUCE, c->sendbuf, c->recvbuf,
                            c->count, c->dtype, op, 0, g->size, stream,
                            deadline);
    else
        s[0] = dcoll_ipc_op(ig, DCOLL_COLL_BROADCAST, NULL,
                            ig->team == rteam ? c->recvbuf : NULL,
                            ig->team == rteam ? c->count : 0, c->dtype, op,
                            ig->team == rteam ? ig->index_of[c->root] : 0,
                            g->size, stream, deadline);
    /* 2: the leaders, in place on the leader's buffer. */
    s[1] = calloc(1, sizeof(*s[1]));
    if (s[1]) {
        *s[1] = (struct ipc_op){.kind = c->kind, .dtype = c->dtype,
                                .op = c->op, .nccl = true,
                                .step = IPC_PUT, .stream = stream,
                                .deadline = deadline,
                                .timeout = dcoll_gpu_timeout(g)};
        s[1]->call = leaders_call(ig, c);
    }
    /* 3: from each leader to its team (the root's team again: its last
     * step then follows the leaders' call, which a work waits for). */
    s[2] = dcoll_ipc_op(ig, DCOLL_COLL_BROADCAST, NULL, c->recvbuf,
                        c->count, c->dtype, op, 0, g->size, stream,
                        deadline);
    if (!s[0] || !s[1] || !s[2]) {
        for (int i = 0; i < 3; i++)
            free(s[i]);
        return NULL;
    }
    s[0]->in_place = s[2]->in_place = c->planned;
    s[0]->orphan = s[1]->orphan = true;
    s[0]->chained = s[1]->chained = true;
    s[2]->work = w;
    dcoll_ipc_enqueue(ig, s[0]);
    dcoll_ipc_enqueue(ig, s[1]);
    dcoll_ipc_enqueue(ig, s[2]);
    return s[2];
}

static dcoll_status_t ipc_run(struct dcoll_group *g,
                              const struct dcoll_coll *c,
                              struct dcoll_work **work,
                              struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    const char *fn = c->fn;
    if (!p || !p->ipc_open)
        return DCOLL_DECLINED;
    struct ipc_group *ig = ipc_group(g);
    if (!ig)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's IPC record", fn);
    dcoll_status_t st;
    if (ig->state == IPC_UNTRIED && (st = setup(g, ig, c, out)))
        return st;
    if (ig->state != IPC_READY ||
        (dcoll_kind_has(c->kind, DCOLL_KF_OP) && !ig->reduce) ||
        (ig->hier && !hier_runs(ig, c)))
        return DCOLL_DECLINED;
    if (*ig->failed)
        return failure(ig, g, c->seq, fn, out);
    if (c->device != ig->device) {
        out->refused = true;   /* this rank alone: it did not run */
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the buffers "
                           "are on GPU %d, but this group's GPU is %d", fn,
                           c->device, ig->device);
    }
    double deadline = (c->start > 0 ? c->start : dcoll_now()) +
                      dcoll_gpu_timeout(g);
    /* A work's step knows it before it is queued: another thread's test
     * may move the queue on at once. */
    struct ipc_work *w = work ? calloc(1, sizeof(*w)) : NULL;
    struct ipc_op *h = NULL;
    if (!work || w)
        h = ig->hier ? hier(g, ig, c, deadline, w) : flat(ig, c, deadline);
    if (!h) {
        free(w);
        out->refused = true;   /* nothing was queued */
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "call", fn);
    }
    atomic_store_explicit(&dcoll_gpu_latest,
                          dcoll_gpu_latest_pack(g->id, c->seq, c->kind),
                          memory_order_relaxed);
    if (w) {
        w->op = h;
        h->work = w;
        dcoll_work_init(&w->base, g, &dcoll_ipc_backend);
        *work = &w->base;
    }
    if (!ig->hier)
        dcoll_ipc_enqueue(ig, h);
    if (w) {
        bool ended;
        if (!dcoll_ipc_progress(ig, NULL, &ended))
            return DCOLL_SUCCESS;
        /* Failed as it was posted: no work goes back. */
        *work = NULL;
        work_release(&w->base);
        return failure(ig, g, c->seq, fn, out);
    }
    int rc = dcoll_ipc_drive(ig, h);
    /* A failed call's steps stay queued, for the group's free. */
    if (!rc || !dcoll_ipc_disown(ig, h))
        free(h);
    if (rc)
        return failure(ig, g, c->seq, fn, out);
    if (dcoll_opts_ordered(c->opts))
        return DCOLL_SUCCESS;
    /* A leader's stream holds the leaders' NCCL call: waited so that a
     * leader that stays away ends in a timeout, not a hang. */
    void *stream = dcoll_opts_stream(c->opts);
    rc = ig->lcomm ? p->nccl_wait(ig->lcomm, stream, dcoll_gpu_timeout(g))
                   : p->sync(ig->device, stream);
    if (rc == -2) {
        dcoll_ipc_fail(ig, true, "the leaders' NCCL call was not done "
                       "within the group's timeout");
        return failure(ig, g, c->seq, fn, out);
    }
    if (rc)
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: waiting for the stream "
                           "on GPU %d: %s", fn, ig->device, p->last_error());
    return DCOLL_SUCCESS;
}

/* Calls still queued are moved on to their deadlines (their peers count
 * on them), then the team's memory is closed and freed. */
static void ipc_group_free(struct dcoll_group *g)
{
    struct ipc_group *ig = g->tl[DCOLL_TL_IPC];
    if (!ig)
        return;
    bool ended;
    while (ig->head && !*ig->failed) {
        dcoll_ipc_progress(ig, NULL, &ended);
        if (ig->head)
            dcoll_seg_pause(1);
    }
    for (struct ipc_op *h = ig->head, *n; h; h = n) {
        n = h->next;
        if (h->work)
            h->work->op = NULL;
        free(h);
    }
    release(ig);
    pthread_mutex_destroy(&ig->lock);
    free(ig);
    g->tl[DCOLL_TL_IPC] = NULL;
}

/* Mappings of the others' buffers close as a plan goes (their owners
 * may free them once every rank's plan is gone); a later plan's first
 * start maps its own again. */
static void ipc_plan_released(struct dcoll_group *g)
{
    struct ipc_group *ig = g->tl[DCOLL_TL_IPC];
    if (!ig || !ig->cache)
        return;
    pthread_mutex_lock(&ig->lock);
    dcoll_ipc_cache_trim(ig->cache);
    pthread_mutex_unlock(&ig->lock);
}

const struct dcoll_backend dcoll_ipc_backend = {
    .name = "ipc",
    .tl = DCOLL_TL_IPC,
    .memory = DCOLL_TL_GPU,
    .runs = ipc_runs,
    .group_free = ipc_group_free,
    .coll = ipc_run,
    .work_test = work_test,
    .work_wait = work_wait,
    .work_release = work_release,
    .plan_released = ipc_plan_released,
};
