/* The IPC transport: a group whose ranks all share one GPU (one team,
 * team.h) moves its data on that GPU, through CUDA IPC, instead of
 * through host memory and MPI. NCCL refuses such groups; this runs every
 * kind it has a row for, every type and op.
 *
 * Each rank owns a scratch buffer on the GPU, exported once to the
 * others, and two interprocess events; a control segment (seg.h) holds
 * each rank's sequence numbers. A call goes in chunks, each numbered n
 * alike on every rank:
 *   put   copy this rank's part of the chunk into its scratch, record
 *         its ready event, then post READY = n (the record exists before
 *         any peer looks for it);
 *   read  once every rank posted READY >= n and every peer's ready event
 *         is done (asked from the host: no stream ever waits on another
 *         process, so a rank that stays away wedges nothing), copy or
 *         reduce (the plugin's kernel, inputs in rank order) what this
 *         rank needs from the scratches into its output; record done,
 *         post DONE = n;
 *   free  once every rank posted DONE >= n and every peer's done event
 *         is done, no one reads this rank's scratch any more: the next
 *         chunk may be put there.
 * Every look is bounded by the call's deadline, which ends in the
 * group's timeout report, as an NCCL call's does. Async calls and plans
 * queue their steps on the group's record: each test, wait or new call
 * moves the queue on, in order. Groups of several teams, and groups
 * without the plugin's IPC calls, are declined alike on every rank. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu.h"
#include "kinds.h"
#include "plugin_abi.h"
#include "seg.h"
#include "team.h"

enum { IPC_UNTRIED, IPC_READY, IPC_NONE };
enum step { PUT, READ, FREE, FINISH, DONE };

struct op;

struct ipc_group {
    int state;
    int k, me, device;
    bool reduce;               /* every rank's plugin has kernels */
    bool skip_ready;           /* test only: read without the handshake */
    struct dcoll_seg seg;
    size_t scratch_bytes;      /* this rank's */
    size_t chunk_bytes;        /* what a chunk may use: the least of all */
    void **peer;               /* [k]: each rank's scratch, mapped here */
    void **ready, **done;      /* [k]: their events; this rank's own */
    const void **srcs;         /* [k]: a reduction's inputs */
    uint64_t seq;              /* chunks so far */
    struct op *head, *tail;    /* queued calls, the oldest first */
    char failed[200];          /* why the transport gave up ("": not) */
    bool late;                 /* it was a deadline */
};

struct ipc_work {
    struct dcoll_work base;
    struct op *op;
};

struct op {
    struct op *next;
    enum dcoll_coll_kind kind;
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root;
    const char *src;           /* this rank's input, NULL: none */
    char *dst;                 /* its output, NULL: none */
    size_t b;                  /* bytes per rank's piece */
    int pieces;                /* pieces of b this rank puts: 1 or k */
    size_t chunk;              /* bytes of a piece per chunk */
    size_t at, len;            /* the chunk under way */
    uint64_t n;                /* its number */
    int polled;                /* peers whose event was seen done */
    enum step step;
    double deadline;
    void *stream;
    const char *fn;
    struct ipc_work *work;     /* NULL: blocking, or released */
    bool orphan;               /* its work was released: free when done */
};

static const bool rows[DCOLL_COLL_KIND_COUNT_] = {
    [DCOLL_COLL_BROADCAST] = true,
    [DCOLL_COLL_ALL_REDUCE] = true,
    [DCOLL_COLL_REDUCE] = true,
    [DCOLL_COLL_ALL_GATHER] = true,
    [DCOLL_COLL_GATHER] = true,
    [DCOLL_COLL_SCATTER] = true,
    [DCOLL_COLL_REDUCE_SCATTER] = true,
    [DCOLL_COLL_ALL_TO_ALL] = true,
};

static bool ipc_runs(enum dcoll_coll_kind kind)
{
    return (unsigned)kind < DCOLL_COLL_KIND_COUNT_ && rows[kind];
}

size_t dcoll_ipc_scratch = (size_t)32 << 20;
bool dcoll_ipc_on = true;

/* A rank's scratch: DCOLL_IPC_SCRATCH, but 4 KiB a piece at least. */
static size_t scratch_size(int k)
{
    size_t least = (size_t)4096 * (size_t)k;
    return dcoll_ipc_scratch < least ? least : dcoll_ipc_scratch;
}

static void release(struct ipc_group *ig)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
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
    ig->peer = ig->ready = ig->done = NULL;
    ig->srcs = NULL;
}

/* What a rank says of itself before the team is made. */
struct ident {
    int32_t ok, wanted, reduce;
    unsigned char uuid[16];
    uint64_t scratch;
};

/* What it shares once the team is: its scratch and events. */
struct handles {
    int32_t ok;
    unsigned char mem[DCOLL_IPC_HANDLE_BYTES];
    unsigned char ready[DCOLL_IPC_HANDLE_BYTES];
    unsigned char done[DCOLL_IPC_HANDLE_BYTES];
};

/* The leader's segment name, broadcast. */
struct segname {
    int32_t ok;
    char name[64];
};

/* Why the team could not be made, said once a process: its calls then
 * stage through host memory. */
static void say_declined(const struct dcoll_group *g, const char *why)
{
    static bool said;
    if (!said && g->rank == 0) {
        said = true;
        fprintf(stderr, "dcoll: group %d: its ranks share a GPU, but the "
                "IPC transport could not be set up (%s), so its GPU calls "
                "go through host memory\n", g->id, why);
    }
}

/* Scratch, events and the segment, once every rank is known to share
 * the GPU. Collective; 0 where every rank made and opened all of it. */
static int make_team(struct dcoll_group *g, struct ipc_group *ig,
                     char *why, size_t len)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int k = ig->k, me = ig->me, dev = ig->device;
    struct segname sn = {0};
    struct handles mine = {0}, *all = calloc((size_t)k, sizeof(*all));
    ig->peer = calloc((size_t)k, sizeof(void *));
    ig->ready = calloc((size_t)k, sizeof(void *));
    ig->done = calloc((size_t)k, sizeof(void *));
    ig->srcs = calloc((size_t)k, sizeof(void *));
    int ok = all && ig->peer && ig->ready && ig->done && ig->srcs;
    if (!ok)
        snprintf(why, len, "no memory");
    /* The leader's segment, named for this process and group. */
    if (me == 0) {
        static unsigned made;
        snprintf(sn.name, sizeof(sn.name), "/dcoll-ipc-%d-%d-%u",
                 (int)getpid(), g->id, made++);
        sn.ok = ok && dcoll_seg_create(sn.name, k, &ig->seg) == 0;
        if (ok && !sn.ok)
            snprintf(why, len, "shm_open of the team's control segment "
                     "%s failed", sn.name);
    }
    if (g->svc->bcast_bytes(g, &sn, sizeof(sn), 0))
        sn.ok = 0;
    if (ok && !sn.ok && me != 0)
        snprintf(why, len, "the leader could not make the control segment");
    ok &= sn.ok;
    if (ok && me != 0 && dcoll_seg_attach(sn.name, k, &ig->seg)) {
        snprintf(why, len, "mapping the team's control segment %s failed",
                 sn.name);
        ok = 0;
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
    for (int j = 0; ok && j < k; j++) {
        if (!all[j].ok) {
            snprintf(why, len, "rank %d could not make its part", j);
            ok = 0;
        } else if (j != me &&
                   (p->ipc_open(all[j].mem, dev, &ig->peer[j]) ||
                    p->ipc_event_open(all[j].ready, dev, &ig->ready[j]) ||
                    p->ipc_event_open(all[j].done, dev, &ig->done[j]))) {
            snprintf(why, len, "opening rank %d's scratch and events "
                     "(cudaIpcOpen*: IPC needs the same user and no "
                     "container boundary): %s", j, p->last_error());
            ok = 0;
        }
    }
    free(all);
    if (g->svc->agree(g, &ok))
        ok = 0;
    /* Every rank has mapped it, or none will: the name goes. */
    if (me == 0 && sn.ok)
        dcoll_seg_unlink(sn.name);
    if (!ok && !*why)
        snprintf(why, len, "another rank could not set it up");
    return ok ? 0 : -1;
}

/* The first call on g: whether its ranks are one team on one GPU, over
 * the group's control twin within the call's deadline, then the team.
 * Every rank ends in the same state. */
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
    me.scratch = scratch_size(g->size);
    ids[g->size] = me;
    dcoll_status_t st = g->svc->exchange(g, &ids[g->size], ids, sizeof(me),
                                         c, out);
    if (st) {
        if (!out->timed_out)
            free(ids);   /* else MPI may still write it: kept */
        return st;
    }
    int ok = 1, wanted = 1, reduce = 1;
    uint64_t least = me.scratch;
    unsigned char *uu = malloc(16 * (size_t)g->size);
    for (int r = 0; r < g->size; r++) {
        ok &= ids[r].ok;
        wanted &= ids[r].wanted;
        reduce &= ids[r].reduce;
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
    bool one_team = t.n == 1 && g->size > 1;
    dcoll_teams_free(&t);
    if (!ok || !wanted || !one_team)
        return DCOLL_SUCCESS;
    ig->k = g->size;
    ig->me = g->rank;
    ig->device = c->device;
    ig->reduce = reduce;
    ig->scratch_bytes = me.scratch;
    ig->chunk_bytes = least;
    const char *skip = getenv("DCOLL_IPC_TEST_SKIP");
    ig->skip_ready = skip && !strcmp(skip, "ready");
    char why[256] = "";
    if (make_team(g, ig, why, sizeof(why))) {
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
    if (!ig)
        ig = g->tl[DCOLL_TL_IPC] = calloc(1, sizeof(*ig));
    return ig;
}

/* The reduction's view of a type: bool and logical as the integers of
 * their size (their ops are the logical ones, alike on both), complex
 * types as their parts where the op works part by part. */
static void reduce_view(dcoll_dtype_t *dt, dcoll_op_t op, int64_t *count)
{
    if (*dt == DCOLL_BOOL) {
        *dt = DCOLL_UINT8;
    } else if (*dt == DCOLL_LOGICAL) {
        size_t s = dcoll_dtype_sizes[DCOLL_LOGICAL];
        *dt = s == 8 ? DCOLL_INT64 : s == 4 ? DCOLL_INT32 : DCOLL_INT8;
    } else if (dcoll_dtype_is_complex(*dt) && op != DCOLL_PRODUCT) {
        *count *= 2;
        *dt = dcoll_dtype_real(*dt);
    }
}

static int fail(struct ipc_group *ig, bool late, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct ipc_group *ig, bool late, const char *fmt, ...)
{
    if (!*ig->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ig->failed, sizeof(ig->failed), fmt, ap);
        va_end(ap);
        ig->late = late;
        if (ig->seg.rank)
            dcoll_seg_fail(&ig->seg, ig->me);
    }
    return -1;
}

/* The read half of h's chunk: copies or a reduction from the scratches
 * into this rank's output, on its stream. */
static int emit(struct ipc_group *ig, struct op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int k = ig->k, me = ig->me, dev = ig->device;
    size_t L = h->len, o = h->at, slot = (size_t)me * L;
    const void **srcs = ig->srcs;
    int rc = 0;
    switch (h->kind) {
    case DCOLL_COLL_BROADCAST:
        if (me != h->root)
            rc = p->copy(h->dst + o, ig->peer[h->root], L, dev, h->stream);
        break;
    case DCOLL_COLL_SCATTER:
        if (h->dst)
            rc = p->copy(h->dst + o, (char *)ig->peer[h->root] + slot, L,
                         dev, h->stream);
        break;
    case DCOLL_COLL_ALL_GATHER:
    case DCOLL_COLL_GATHER:
        for (int j = 0; j < k && !rc && h->dst; j++)
            rc = p->copy(h->dst + (size_t)j * h->b + o, ig->peer[j], L, dev,
                         h->stream);
        break;
    case DCOLL_COLL_ALL_TO_ALL:
        for (int j = 0; j < k && !rc; j++)
            rc = p->copy(h->dst + (size_t)j * h->b + o,
                         (char *)ig->peer[j] + slot, L, dev, h->stream);
        break;
    default: {   /* the reductions */
        if (!h->dst)
            break;
        bool scattered = h->kind == DCOLL_COLL_REDUCE_SCATTER;
        for (int j = 0; j < k; j++)
            srcs[j] = (char *)ig->peer[j] + (scattered ? slot : 0);
        dcoll_dtype_t dt = h->dtype;
        int64_t n = (int64_t)(L / dcoll_dtype_sizes[dt]);
        reduce_view(&dt, h->op, &n);
        rc = p->reduce(h->dst + o, srcs, k, n, (int)dt, (int)h->op, k,
                       h->stream, dev);
        if (rc == 1)
            return fail(ig, false, "the plugin's kernels lack %s %s",
                        dcoll_dtype_name(h->dtype), dcoll_op_name(h->op));
        break;
    }
    }
    return rc ? fail(ig, false, "on GPU %d: %s", dev, p->last_error()) : 0;
}

/* Peers' event ev[j], each asked until done (h->polled counts those
 * seen): 1 all done, 0 not yet, -1 failed. */
static int peers_done(struct ipc_group *ig, struct op *h, void **ev)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    for (; h->polled < ig->k; h->polled++) {
        if (h->polled == ig->me)
            continue;
        int rc = p->ipc_query(ev[h->polled], ig->device);
        if (rc < 0)
            return fail(ig, false, "rank %d's event on GPU %d: %s",
                        h->polled, ig->device, p->last_error());
        if (rc == 0)
            return 0;
    }
    return 1;
}

/* The ranks' posts of field f for h's chunk: 1 all there, 0 not yet,
 * -1 a rank failed. */
static int posted(struct ipc_group *ig, struct op *h, enum dcoll_seg_field f)
{
    int late, rc = dcoll_seg_check(&ig->seg, f, h->n, &late);
    /* A rank that gave up did so at its deadline, or failed: either way
     * the call cannot end here, and the group's roll call says where
     * each rank is. */
    if (rc < 0)
        return fail(ig, true, "rank %d of the group gave up on the call",
                    late);
    return rc == 0;
}

static void next_chunk(struct ipc_group *ig, struct op *h)
{
    h->len = h->b - h->at < h->chunk ? h->b - h->at : h->chunk;
    h->n = ++ig->seq;
    h->polled = 0;
    h->step = PUT;
}

/* Move h on as far as it goes without waiting: 0, or -1 (ig->failed). */
static int advance(struct ipc_group *ig, struct op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int dev = ig->device, rc;
    for (;;) {
        switch (h->step) {
        case PUT: {
            char *mine = ig->peer[ig->me];
            rc = 0;
            /* After this rank's own earlier reads of its scratch, on
             * whichever stream they were. */
            if (h->at == 0)
                rc = p->ipc_wait(h->stream, ig->done[ig->me], dev);
            for (int q = 0; q < h->pieces && h->src && !rc; q++)
                rc = p->copy(mine + (size_t)q * h->len,
                             h->src + (size_t)q * h->b + h->at, h->len, dev,
                             h->stream);
            if (!rc)
                rc = p->ipc_record(ig->ready[ig->me], h->stream, dev);
            if (rc)
                return fail(ig, false, "copying into the scratch on GPU "
                            "%d: %s", dev, p->last_error());
            dcoll_seg_post(&ig->seg, ig->me, DCOLL_SEG_READY, h->n);
            h->step = READ;
            break;
        }
        case READ:
            if (!ig->skip_ready) {
                if ((rc = posted(ig, h, DCOLL_SEG_READY)) <= 0 ||
                    (rc = peers_done(ig, h, ig->ready)) <= 0)
                    return rc;
            }
            if (emit(ig, h) ||
                p->ipc_record(ig->done[ig->me], h->stream, dev))
                return fail(ig, false, "on GPU %d: %s", dev,
                            p->last_error());
            dcoll_seg_post(&ig->seg, ig->me, DCOLL_SEG_DONE, h->n);
            h->polled = 0;
            h->step = FREE;
            break;
        case FREE:
            if ((rc = posted(ig, h, DCOLL_SEG_DONE)) <= 0 ||
                (rc = peers_done(ig, h, ig->done)) <= 0)
                return rc;
            h->at += h->len;
            if (h->at < h->b)
                next_chunk(ig, h);
            else
                h->step = FINISH;
            break;
        case FINISH:
            /* This rank's own last writes: blocking calls wait on the
             * stream itself; works ask their event. */
            if (h->work || h->orphan) {
                rc = p->ipc_query(ig->done[ig->me], dev);
                if (rc < 0)
                    return fail(ig, false, "on GPU %d: %s", dev,
                                p->last_error());
                if (rc == 0)
                    return 0;
            }
            h->step = DONE;
            return 0;
        case DONE:
            return 0;
        }
    }
}

/* The queue moved on as far as it goes now; finished calls leave it
 * (orphans are freed). -1 once the transport failed. */
static int progress(struct ipc_group *ig)
{
    while (ig->head && !*ig->failed) {
        struct op *h = ig->head;
        if (advance(ig, h))
            break;
        if (h->step != DONE) {
            if (dcoll_now() > h->deadline)
                fail(ig, true, "a rank of the group did not reach the "
                     "same %s within the group's timeout",
                     dcoll_kind_name(h->kind));
            break;
        }
        ig->head = h->next;
        if (!ig->head)
            ig->tail = NULL;
        h->next = NULL;
        if (h->orphan)
            free(h);
        else if (!h->work)
            break;   /* a blocking call's: its caller goes on */
    }
    return *ig->failed ? -1 : 0;
}

/* Until h is done, or the transport failed. */
static int drive(struct ipc_group *ig, struct op *h)
{
    double start = dcoll_now();
    for (;;) {
        if (progress(ig))
            return -1;
        if (h->step == DONE)
            return 0;
        dcoll_seg_pause(dcoll_now() - start);
    }
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
        out->roll = (struct dcoll_roll){0};
        if (seq && g->svc->roll_call)
            g->svc->roll_call(g, seq, &out->roll);
    }
    return dcoll_error(ig->late ? DCOLL_ERR_TIMEOUT : DCOLL_ERR_INTERNAL,
                       "%s: the IPC transport among the ranks sharing GPU "
                       "%d: %s", fn, ig->device, ig->failed);
}

/* A call's plan: what this rank puts, reads and writes. */
static struct op *op_new(struct ipc_group *ig, const struct dcoll_group *g,
                         const struct dcoll_coll *c)
{
    struct op *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    int k = ig->k, me = ig->me;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    bool root = me == c->root;
    h->kind = c->kind;
    h->dtype = c->dtype;
    h->op = c->op;
    h->root = c->root;
    h->b = (size_t)c->count * esz;
    h->pieces = 1;
    h->src = c->sendbuf;
    h->dst = c->recvbuf;
    /* MPI's in-place form (sendbuf == recvbuf): a gather's input is this
     * rank's block of recvbuf already, a scatter's root keeps its block
     * where it is. */
    bool aliased = c->in_place && c->sendbuf == c->recvbuf;
    if (aliased && (c->kind == DCOLL_COLL_ALL_GATHER ||
                    (c->kind == DCOLL_COLL_GATHER && root)))
        h->src = (const char *)c->recvbuf + (size_t)me * h->b;
    switch (c->kind) {
    case DCOLL_COLL_BROADCAST:
        h->src = root ? c->recvbuf : NULL;
        break;
    case DCOLL_COLL_SCATTER:
        h->pieces = k;
        if (!root)
            h->src = NULL;
        else if (aliased)
            h->dst = NULL;
        break;
    case DCOLL_COLL_REDUCE_SCATTER:
    case DCOLL_COLL_ALL_TO_ALL:
        h->pieces = k;
        break;
    case DCOLL_COLL_REDUCE:
    case DCOLL_COLL_GATHER:
        if (!root)
            h->dst = NULL;
        break;
    default:
        break;
    }
    /* A piece's chunk: what fits k to a scratch where k pieces are put,
     * in whole elements, 256-byte aligned past the first. */
    size_t room = ig->chunk_bytes / (size_t)h->pieces;
    room -= room % 256;
    h->chunk = room - room % esz;
    h->stream = dcoll_opts_stream(c->opts);
    h->fn = c->fn;
    h->deadline = c->start > 0 ? c->start + dcoll_gpu_timeout(g)
                               : dcoll_now() + dcoll_gpu_timeout(g);
    h->step = DONE;
    if (h->b)
        next_chunk(ig, h);
    return h;
}

static void enqueue(struct ipc_group *ig, struct op *h)
{
    if (ig->tail)
        ig->tail->next = h;
    else
        ig->head = h;
    ig->tail = h;
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
    if (progress(ig)) {
        *done = 1;
        return failure(ig, bw->group, bw->seq, "dcoll_work_test",
                       &bw->report);
    }
    *done = w->op->step == DONE;
    return DCOLL_SUCCESS;
}

static dcoll_status_t work_wait(struct dcoll_work *bw)
{
    struct ipc_work *w = (struct ipc_work *)bw;
    struct ipc_group *ig = bw->group->tl[DCOLL_TL_IPC];
    if (!ig || !w->op)
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_work_wait: the "
                           "group's IPC record is gone");
    return drive(ig, w->op) ? failure(ig, bw->group, bw->seq,
                                     "dcoll_work_wait", &bw->report)
                            : DCOLL_SUCCESS;
}

/* A released work's call stays queued until it is through (its peers
 * count on it), then goes. */
static void work_release(struct dcoll_work *bw)
{
    struct ipc_work *w = (struct ipc_work *)bw;
    struct op *h = w->op;
    bool queued = false;
    struct ipc_group *ig = bw->group->tl[DCOLL_TL_IPC];
    for (struct op *q = ig ? ig->head : NULL; q; q = q->next)
        queued |= q == h;
    if (queued) {
        h->work = NULL;
        h->orphan = true;
    } else {
        free(h);
    }
    free(w);
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
        (dcoll_kind_has(c->kind, DCOLL_KF_OP) && !ig->reduce))
        return DCOLL_DECLINED;
    if (*ig->failed)
        return failure(ig, g, c->seq, fn, out);
    if (c->device != ig->device) {
        out->refused = true;   /* this rank alone: it did not run */
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the buffers "
                           "are on GPU %d, but this group's GPU is %d", fn,
                           c->device, ig->device);
    }
    struct op *h = op_new(ig, g, c);
    struct ipc_work *w = work ? calloc(1, sizeof(*w)) : NULL;
    if (!h || (work && !w)) {
        free(h);
        out->refused = true;
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "call", fn);
    }
    atomic_store_explicit(&dcoll_gpu_latest,
                          dcoll_gpu_latest_pack(g->id, c->seq, c->kind),
                          memory_order_relaxed);
    if (h->step != DONE)
        enqueue(ig, h);
    if (w) {
        w->op = h;
        h->work = w;
        dcoll_work_init(&w->base, g, &dcoll_ipc_backend);
        *work = &w->base;
        if (progress(ig))
            return failure(ig, g, c->seq, fn, out);
        return DCOLL_SUCCESS;
    }
    int rc = drive(ig, h);
    free(h);
    if (rc)
        return failure(ig, g, c->seq, fn, out);
    if (!dcoll_opts_ordered(c->opts) &&
        p->sync(ig->device, dcoll_opts_stream(c->opts)))
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
    while (ig->head && !*ig->failed) {
        progress(ig);
        if (ig->head)
            dcoll_seg_pause(1);
    }
    for (struct op *h = ig->head, *n; h; h = n) {
        n = h->next;
        if (h->work)
            h->work->op = NULL;
        free(h);
    }
    release(ig);
    free(ig);
    g->tl[DCOLL_TL_IPC] = NULL;
}

const char *dcoll_ipc_state(const struct dcoll_group *g)
{
    const struct ipc_group *ig = g->tl[DCOLL_TL_IPC];
    if (!ig || ig->state == IPC_UNTRIED)
        return "not yet tried (at the group's first GPU call)";
    if (ig->state == IPC_NONE)
        return "not used: its ranks are not all on one GPU";
    return *ig->failed ? "failed" : "in use: every rank on one GPU";
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
};
