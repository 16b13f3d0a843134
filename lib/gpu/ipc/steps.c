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
 * the step's deadline. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "ipc.h"
#include "kinds.h"

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

/* The read half of h's chunk: copies or a reduction from the scratches
 * into this rank's output, on its stream. */
static int emit(struct ipc_group *ig, struct ipc_op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    int k = ig->k, me = ig->me, dev = ig->device;
    size_t L = h->len, o = h->at, slot = (size_t)me * L;
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
            ig->srcs[j] = (char *)ig->peer[j] + (scattered ? slot : 0);
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

/* The leaders' NCCL call, enqueued on the stream behind the team's
 * steps before it; the others have nothing to do. */
static int leaders(struct ipc_group *ig, struct ipc_op *h)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
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
             * whichever stream they were. */
            if (h->at == 0)
                rc = p->ipc_wait(h->stream, ig->done[ig->me], dev);
            for (int q = 0; q < h->pieces && h->src && !rc; q++)
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
            if (h->at < h->b)
                next_chunk(h);
            else
                h->step = IPC_FINISH;
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

static int progress(struct ipc_group *ig)
{
    while (ig->head && !*ig->failed) {
        struct ipc_op *h = ig->head;
        if (advance(ig, h))
            break;
        if (h->step != IPC_DONE) {
            if (dcoll_now() > h->deadline)
                dcoll_ipc_fail(ig, true, "a rank of the group did not reach "
                               "the same %s within the group's timeout",
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
    default:
        break;
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
