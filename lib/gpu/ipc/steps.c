/* The IPC transport's steps (ipc.h): a collective among the ranks of a
 * team, in chunks numbered alike on every rank of it:
 *   put   copy this rank's part of the chunk into its scratch, record
 *         its ready event, then post READY = n (the record exists before
 *         any peer looks for it);
 *   read  once every rank posted READY >= n and every peer's ready event
 *         is done (asked from the host: no stream ever waits on another
 *         process, so a rank that stays away wedges nothing), copy or
 *         reduce (the plugin's kernel, inputs in team order) what this
 *         rank needs from the scratches into its output; record done,
 *         post DONE = n;
 *   free  once every rank posted DONE >= n and every peer's done event
 *         is done, no one reads this rank's scratch any more: the next
 *         chunk may be put there.
 * Queued steps move on in order at each look; every look is bounded by
 * the step's deadline. A plan's start may skip the copy: a rank whose
 * input lies in an allocation of its own that its output does not
 * overlap exports that allocation and says so in its box; the others
 * map it (the import cache keeps it open between starts) and read the
 * input there. Since every rank waits for the others' DONE before its
 * call ends, no input changes while a peer still reads it. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "ipc.h"
#include "kinds.h"

const enum dcoll_coll_kind dcoll_ipc_coded[] = {
    DCOLL_COLL_BROADCAST, DCOLL_COLL_ALL_REDUCE, DCOLL_COLL_REDUCE,
    DCOLL_COLL_ALL_GATHER, DCOLL_COLL_GATHER, DCOLL_COLL_SCATTER,
    DCOLL_COLL_REDUCE_SCATTER, DCOLL_COLL_ALL_TO_ALL,
};
const int dcoll_ipc_ncoded =
    (int)(sizeof(dcoll_ipc_coded) / sizeof(dcoll_ipc_coded[0]));

bool dcoll_ipc_codes(enum dcoll_coll_kind kind)
{
    for (int i = 0; i < dcoll_ipc_ncoded; i++)
        if (dcoll_ipc_coded[i] == kind)
            return true;
    return false;
}

int dcoll_ipc_fail(struct ipc_group *ig, bool late, const char *fmt, ...)
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

/* Piece q of rank j's input, for h's chunk: in its scratch (pieces a
 * chunk apart) or in its own buffer (pieces b apart). */
static const char *piece(const struct ipc_group *ig, const struct ipc_op *h,
                         int j, int q)
{
    const struct ipc_from *f = &ig->from[j];
    return f->user ? f->p + (size_t)q * h->b + h->at
                   : f->p + (size_t)q * h->len;
}

/* The read half of h's chunk: copies or a reduction from the ranks'
 * inputs into this rank's output, on its stream. */
static int emit(struct ipc_group *ig, struct ipc_op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int k = ig->k, me = ig->me, dev = ig->device;
    size_t L = h->len, o = h->at;
    int rc = 0;
    switch (h->kind) {
    case DCOLL_COLL_BROADCAST:
        if (me != h->root)
            rc = p->copy(h->dst + o, piece(ig, h, h->root, 0), L, dev,
                         h->stream);
        break;
    case DCOLL_COLL_SCATTER:
        if (h->dst)
            rc = p->copy(h->dst + o, piece(ig, h, h->root, me), L, dev,
                         h->stream);
        break;
    case DCOLL_COLL_ALL_GATHER:
    case DCOLL_COLL_GATHER:
        for (int j = 0; j < k && !rc && h->dst; j++)
            rc = p->copy(h->dst + (size_t)j * h->b + o, piece(ig, h, j, 0),
                         L, dev, h->stream);
        break;
    case DCOLL_COLL_ALL_TO_ALL:
        for (int j = 0; j < k && !rc; j++)
            rc = p->copy(h->dst + (size_t)j * h->b + o, piece(ig, h, j, me),
                         L, dev, h->stream);
        break;
    case DCOLL_COLL_ALL_REDUCE:
    case DCOLL_COLL_REDUCE:
    case DCOLL_COLL_REDUCE_SCATTER: {
        if (!h->dst)
            break;
        bool scattered = h->kind == DCOLL_COLL_REDUCE_SCATTER;
        for (int j = 0; j < k; j++)
            ig->srcs[j] = piece(ig, h, j, scattered ? me : 0);
        dcoll_dtype_t dt = h->dtype;
        int64_t n = (int64_t)(L / dcoll_dtype_sizes[dt]);
        reduce_view(&dt, h->op, &n);
        rc = p->reduce(h->dst + o, ig->srcs, k, n, (int)dt, (int)h->op,
                       h->avg_n, h->stream, dev);
        if (rc == 1)
            return dcoll_ipc_fail(ig, false, "the plugin's kernels lack %s "
                                  "%s", dcoll_dtype_name(h->dtype),
                                  dcoll_op_name(h->op));
        break;
    }
    default:   /* not in dcoll_ipc_coded: never queued */
        return dcoll_ipc_fail(ig, false, "IPC has no step for %s",
                              dcoll_kind_name(h->kind));
    }
    return rc ? dcoll_ipc_fail(ig, false, "on GPU %d: %s", dev,
                               p->last_error())
              : 0;
}

/* Peers' event ev[j], each asked until done (h->polled counts those
 * seen): 1 all done, 0 not yet, -1 failed. */
static int peers_done(struct ipc_group *ig, struct ipc_op *h, void **ev)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    for (; h->polled < ig->k; h->polled++) {
        if (h->polled == ig->me)
            continue;
        int rc = p->ipc_query(ev[h->polled], ig->device);
        if (rc < 0)
            return dcoll_ipc_fail(ig, false, "rank %d's event on GPU %d: %s",
                                  ig->members[h->polled], ig->device,
                                  p->last_error());
        if (rc == 0)
            return 0;
    }
    return 1;
}

/* The ranks' posts of field f for h's chunk: 1 all there, 0 not yet,
 * -1 a rank failed. */
static int posted(struct ipc_group *ig, struct ipc_op *h,
                  enum dcoll_seg_field f)
{
    int late, rc = dcoll_seg_check(&ig->seg, f, h->n, &late);
    /* A rank that gave up did so at its deadline, or failed: either way
     * the call cannot end here, and the group's roll call says where
     * each rank is. */
    if (rc < 0)
        return dcoll_ipc_fail(ig, true, "rank %d of the group gave up on "
                              "the call", ig->members[late]);
    return rc == 0;
}

/* The next chunk of h; numbered when it is put, so that numbers follow
 * the order the queue runs chunks in (a peer's post of n stands for
 * every chunk before n). */
static void next_chunk(struct ipc_op *h)
{
    h->len = h->b - h->at < h->chunk ? h->b - h->at : h->chunk;
    h->n = 0;
    h->polled = 0;
    h->step = IPC_PUT;
}

/* The leaders' call staged (no NCCL): the leader's buffer copied to
 * host memory once the team's steps before it are done, MPI's call
 * posted (put), then, once it ended (read), copied back. A call that
 * fails keeps its host block: MPI may still write it. */
static int staged_leaders(struct ipc_group *ig, struct ipc_op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    const dcoll_plugin_call_t *k = &h->call;
    size_t bytes = (size_t)k->count * dcoll_dtype_sizes[k->dtype];
    int dev = ig->device, rc;
    if (h->step == IPC_PUT) {
        if (!(h->host = dcoll_stage_take(bytes, &h->pinned)))
            return dcoll_ipc_fail(ig, false, "no memory to stage the "
                                  "leaders' %zu bytes", bytes);
        if (p->copy(h->host, k->recvbuf, bytes, dev, h->stream) ||
            p->sync(dev, h->stream))
            return dcoll_ipc_fail(ig, false, "staging the leaders' call on "
                                  "GPU %d: %s", dev, p->last_error());
        if (ig->svc->sub_post(ig->mcomm, k->kind, h->host, k->count,
                              k->dtype, k->op, k->root, &h->req))
            return dcoll_ipc_fail(ig, false, "the leaders' MPI call: %s",
                                  dcoll_last_error());
        h->step = IPC_READ;
    }
    if ((rc = ig->svc->sub_test(&h->req)) <= 0)
        return rc ? dcoll_ipc_fail(ig, false, "the leaders' MPI call: %s",
                                   dcoll_last_error())
                  : 0;
    if (p->copy(k->recvbuf, h->host, bytes, dev, h->stream) ||
        p->sync(dev, h->stream))
        return dcoll_ipc_fail(ig, false, "copying the leaders' result to "
                              "GPU %d: %s", dev, p->last_error());
    dcoll_stage_give(h->host, h->pinned);
    h->host = NULL;
    h->step = IPC_DONE;
    return 0;
}

/* The leaders' NCCL call, enqueued on the stream behind the team's
 * steps before it, or their staged one; the others have nothing to
 * do. */
static int leaders(struct ipc_group *ig, struct ipc_op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    if (ig->mcomm)
        return staged_leaders(ig, h);
    h->step = IPC_DONE;
    if (!ig->lcomm)
        return 0;
    int rc = p->nccl_coll(ig->lcomm, &h->call, ig->team, ig->nteams,
                          h->stream, h->timeout);
    if (rc == 1)
        return dcoll_ipc_fail(ig, false, "NCCL takes no %s of %s %s",
                              dcoll_kind_name(h->kind),
                              dcoll_dtype_name(h->dtype),
                              dcoll_op_name(h->op));
    return rc ? dcoll_ipc_fail(ig, rc == -2, "the leaders' NCCL call on GPU "
                               "%d: %s", ig->device, p->last_error())
              : 0;
}

/* Whether this rank's input for h can be read where it is: a plan's,
 * large enough, in one allocation (exported into box) that h's output
 * does not overlap (this rank writes it while the others read). */
static bool export_input(struct ipc_group *ig, const struct ipc_op *h,
                         struct ipc_box *box)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    size_t in = (size_t)h->pieces * h->b;
    if (!h->in_place || !h->src || in < IPC_IN_PLACE_LEAST ||
        !p->mem_range || !ig->cache)
        return false;
    /* What this rank writes, as the kinds' table spans it (a broadcast's
     * root writes nothing). */
    int role = dcoll_kind_has(h->kind, DCOLL_KF_ROOT) && ig->me == h->root;
    size_t out = h->dst ? dcoll_span_bytes(dcoll_kinds[h->kind].out[role],
                                           h->b, ig->k)
                        : 0;
    if (dcoll_overlap(h->src, in, h->dst, out))
        return false;
    void *base;
    size_t size;
    if (p->mem_range(h->src, ig->device, &base, &size) ||
        h->src + in > (const char *)base + size ||
        p->ipc_export(base, ig->device, box->handle))
        return false;   /* pool or VMM memory: through scratch */
    box->base = (uint64_t)(uintptr_t)base;
    box->off = (uint64_t)(h->src - (const char *)base);
    return true;
}

/* Whether this rank reads rank j's input for h. */
static bool reads(const struct ipc_group *ig, const struct ipc_op *h, int j)
{
    if (!h->dst)
        return false;
    if (h->kind == DCOLL_COLL_BROADCAST)
        return j == h->root && ig->me != h->root;
    return h->kind != DCOLL_COLL_SCATTER || j == h->root;
}

/* Where this rank reads each input of h from, as the boxes say (read
 * after every READY of h's first chunk): 0, or -1 where a buffer a
 * rank exported cannot be mapped here. */
static int resolve(struct ipc_group *ig, struct ipc_op *h)
{
    for (int j = 0; j < ig->k; j++) {
        struct ipc_from *f = &ig->from[j];
        const struct ipc_box *box = (const void *)ig->seg.rank[j].box;
        *f = (struct ipc_from){.p = ig->peer[j]};
        if (j == ig->me) {
            if (h->exported)
                *f = (struct ipc_from){.p = h->src, .user = true};
            continue;
        }
        if (!box->user || !reads(ig, h, j))
            continue;
        void *m;
        if (dcoll_ipc_cache_get(ig->cache, j, box->base, box->handle, &m))
            return dcoll_ipc_fail(ig, false, "mapping rank %d's buffer on "
                                  "GPU %d: %s", ig->members[j], ig->device,
                                  dcoll_ipc_cache_why(ig->cache));
        *f = (struct ipc_from){.p = (char *)m + box->off, .user = true,
                               .held = m};
    }
    return 0;
}

/* h's reads are over: the mappings go back to the cache. */
static void unresolve(struct ipc_group *ig)
{
    for (int j = 0; j < ig->k; j++)
        if (ig->from[j].held) {
            dcoll_ipc_cache_put(ig->cache, ig->from[j].held);
            ig->from[j].held = NULL;
        }
}

/* Move h on as far as it goes without waiting: 0, or -1 (ig->failed). */
static int advance(struct ipc_group *ig, struct ipc_op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int dev = ig->device, rc;
    if (h->nccl && h->step != IPC_DONE)
        return leaders(ig, h);
    for (;;) {
        switch (h->step) {
        case IPC_PUT: {
            char *mine = ig->peer[ig->me];
            rc = 0;
            h->n = ++ig->seq;
            /* After this rank's own earlier reads of its scratch, on
             * whichever stream they were; the box says where its input
             * is, for the whole call. */
            if (h->at == 0) {
                struct ipc_box *box = (void *)ig->seg.rank[ig->me].box;
                h->exported = export_input(ig, h, box);
                box->user = h->exported;
                rc = p->ipc_wait(h->stream, ig->done[ig->me], dev);
            }
            for (int q = 0; q < h->pieces && h->src && !h->exported && !rc;
                 q++)
                rc = p->copy(mine + (size_t)q * h->len,
                             h->src + (size_t)q * h->b + h->at, h->len, dev,
                             h->stream);
            if (rc)
                return dcoll_ipc_fail(ig, false, "copying into the scratch "
                                      "on GPU %d: %s", dev, p->last_error());
            /* Not on a stream being captured into a graph: the
             * handshakes are the host's. */
            if (p->ipc_record(ig->ready[ig->me], h->stream, dev))
                return dcoll_ipc_fail(ig, false, "marking this rank's input "
                                      "ready on GPU %d (a stream being "
                                      "captured into a graph cannot carry "
                                      "IPC calls): %s", dev,
                                      p->last_error());
            dcoll_seg_post(&ig->seg, ig->me, DCOLL_SEG_READY, h->n);
            h->step = IPC_READ;
            break;
        }
        case IPC_READ:
            if (!ig->skip_ready &&
                ((rc = posted(ig, h, DCOLL_SEG_READY)) <= 0 ||
                 (rc = peers_done(ig, h, ig->ready)) <= 0))
                return rc;
            if (h->at == 0 && resolve(ig, h))
                return -1;
            if (emit(ig, h) ||
                p->ipc_record(ig->done[ig->me], h->stream, dev))
                return dcoll_ipc_fail(ig, false, "on GPU %d: %s", dev,
                                      p->last_error());
            dcoll_seg_post(&ig->seg, ig->me, DCOLL_SEG_DONE, h->n);
            h->polled = 0;
            h->step = IPC_FREE;
            break;
        case IPC_FREE:
            if ((rc = posted(ig, h, DCOLL_SEG_DONE)) <= 0 ||
                (rc = peers_done(ig, h, ig->done)) <= 0)
                return rc;
            h->at += h->len;
            if (h->at < h->b) {
                next_chunk(h);
            } else {
                unresolve(ig);
                h->step = IPC_FINISH;
            }
            break;
        case IPC_FINISH:
            /* This rank's own last writes: blocking calls wait on the
             * stream itself, works ask their event; a call's earlier
             * steps leave them to its last. */
            if ((h->work || h->orphan) && !h->chained) {
                rc = p->ipc_query(ig->done[ig->me], dev);
                if (rc < 0)
                    return dcoll_ipc_fail(ig, false, "on GPU %d: %s", dev,
                                          p->last_error());
                if (rc == 0)
                    return 0;
            }
            h->step = IPC_DONE;
            return 0;
        case IPC_DONE:
            return 0;
        }
    }
}

/* A member's death, as its launcher or the keeper said, ends the wait
 * for it at once (return mode: ig->watch), not at the deadline; looked
 * for every 50 ms (dcoll_death_of asks the store at most every 0.2 s). */
static void watch(struct ipc_group *ig, const struct ipc_op *h, double now)
{
    ig->look_at = now + 0.05;
    int dead = dcoll_death_of(ig->watch, NULL, 0);
    if (dead >= 0) {
        ig->dead = dead;
        dcoll_ipc_fail(ig, true, "rank %d of the group died during a %s",
                       dead, dcoll_kind_name(h->kind));
    }
}

static int progress(struct ipc_group *ig)
{
    while (ig->head && !*ig->failed) {
        struct ipc_op *h = ig->head;
        if (advance(ig, h))
            break;
        if (h->step != IPC_DONE) {
            double now = dcoll_now();
            if (now > h->deadline)
                dcoll_ipc_fail(ig, true, "a rank of the group did not reach "
                               "the same %s within the group's timeout",
                               dcoll_kind_name(h->kind));
            else if (ig->watch && now >= ig->look_at)
                watch(ig, h, now);
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

int dcoll_ipc_progress(struct ipc_group *ig, const struct ipc_op *h,
                       bool *done)
{
    pthread_mutex_lock(&ig->lock);
    int rc = progress(ig);
    if (h)
        *done = h->step == IPC_DONE;
    pthread_mutex_unlock(&ig->lock);
    return rc;
}

int dcoll_ipc_drive(struct ipc_group *ig, const struct ipc_op *h)
{
    double start = dcoll_now();
    for (;;) {
        bool done;
        if (dcoll_ipc_progress(ig, h, &done))
            return -1;
        if (done)
            return 0;
        dcoll_seg_pause(dcoll_now() - start);
    }
}

void dcoll_ipc_enqueue(struct ipc_group *ig, struct ipc_op *h)
{
    if (h->step == IPC_DONE) {
        if (h->orphan)
            free(h);
        return;
    }
    pthread_mutex_lock(&ig->lock);
    if (ig->tail)
        ig->tail->next = h;
    else
        ig->head = h;
    ig->tail = h;
    pthread_mutex_unlock(&ig->lock);
}

bool dcoll_ipc_disown(struct ipc_group *ig, struct ipc_op *h)
{
    bool queued = false;
    pthread_mutex_lock(&ig->lock);
    for (const struct ipc_op *q = ig->head; q && !queued; q = q->next)
        queued = q == h;
    if (queued) {
        h->work = NULL;
        h->orphan = true;
    }
    pthread_mutex_unlock(&ig->lock);
    return queued;
}

struct ipc_op *dcoll_ipc_op(struct ipc_group *ig, enum dcoll_coll_kind kind,
                            const void *src, void *dst, int64_t count,
                            dcoll_dtype_t dtype, dcoll_op_t op, int root,
                            int avg_n, void *stream, double deadline)
{
    struct ipc_op *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    size_t esz = dcoll_dtype_sizes[dtype];
    bool is_root = ig->me == root;
    *h = (struct ipc_op){.kind = kind, .dtype = dtype, .op = op,
                         .root = root, .avg_n = avg_n, .src = src,
                         .dst = dst, .b = (size_t)count * esz, .pieces = 1,
                         .stream = stream, .deadline = deadline,
                         .step = IPC_DONE};
    switch (kind) {
    case DCOLL_COLL_BROADCAST:
        h->src = is_root ? dst : NULL;
        break;
    case DCOLL_COLL_SCATTER:
        h->pieces = ig->k;
        if (!is_root)
            h->src = NULL;
        break;
    case DCOLL_COLL_REDUCE_SCATTER:
    case DCOLL_COLL_ALL_TO_ALL:
        h->pieces = ig->k;
        break;
    case DCOLL_COLL_REDUCE:
    case DCOLL_COLL_GATHER:
        if (!is_root)
            h->dst = NULL;
        break;
    case DCOLL_COLL_ALL_REDUCE:
    case DCOLL_COLL_ALL_GATHER:
        break;
    default:   /* not in dcoll_ipc_coded */
        free(h);
        return NULL;
    }
    /* A piece's chunk: what fits where k pieces are put, in whole
     * elements, 256-byte aligned past the first. */
    size_t room = ig->chunk_bytes / (size_t)h->pieces;
    room -= room % 256;
    h->chunk = room - room % esz;
    if (h->b)
        next_chunk(h);
    return h;
}
