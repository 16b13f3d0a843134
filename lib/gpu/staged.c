/* The staged transport, which serves device buffers through pinned host
 * memory: copy in on the caller's stream, run the MPI collective on the
 * host copies, copy out. It works for any placement of ranks on GPUs, shared
 * ones included, and for every type and op. Host memory comes from the
 * process's pool (pinned.c). */
#include <stdio.h>
#include <stdlib.h>
#include "gpu.h"
#include "gpu_kinds.h"
#include "plugin_abi.h"
#include "shape.h"

dcoll_status_t dcoll_gpu_ready(const struct dcoll_coll *c)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    if (cu->sync(c->device, dcoll_opts_stream(c->opts)))
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: waiting for the stream "
                           "before MPI reads GPU %d's buffers: %s", c->fn,
                           c->device, cu->last_error());
    return DCOLL_SUCCESS;
}

/* What this rank sends and receives, in bytes, for a kind. */
static void extents(const struct dcoll_group *g, const struct dcoll_coll *c,
                    size_t *in, size_t *out)
{
    const struct dcoll_kind_info *k = &dcoll_kinds[c->kind];
    size_t b = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    int role = (k->flags & DCOLL_KF_ROOT) && g->rank == c->root;
    *in = dcoll_span_bytes(k->in[role], b, g->size);
    *out = dcoll_span_bytes(k->out[role], b, g->size);
}

/* The copy-out half, run when the host collective is done. */
struct staged {
    const dcoll_cuda_plugin_t *cu;
    char *block;            /* from the pool */
    bool pinned;
    char *dev_out;          /* device destination, NULL: nothing to copy */
    const char *host_out;
    size_t out_bytes;
    int device;
    void *stream;
};

static void staged_release(struct staged *s)
{
    dcoll_stage_give(s->block, s->pinned);
    free(s);
}

static dcoll_status_t copy_out(struct staged *s, dcoll_status_t st)
{
    if (!st && s->out_bytes &&
        (s->cu->copy(s->dev_out, s->host_out, s->out_bytes, s->device,
                     s->stream) ||
         s->cu->sync(s->device, s->stream)))
        st = dcoll_error(DCOLL_ERR_INTERNAL, "copying the result back to "
                         "GPU %d: %s", s->device, s->cu->last_error());
    staged_release(s);
    return st;
}

static dcoll_status_t finish_staged(struct dcoll_work *w, dcoll_status_t st)
{
    return copy_out(w->finish_data, st);
}

/* Elementwise calls big enough to split: in chunks (DCOLL_STAGE_CHUNK),
 * so that copying one chunk on the GPU overlaps the MPI transfer of the
 * one before. */
/* AVG of a floating type on GPU buffers, of a kind NCCL runs: NCCL's way
 * on this path too (a sum of inputs times 1/n, dcoll_premul), so that a
 * group's answer does not hang on whether its ranks share a GPU. (Not a
 * scan's: each rank divides by its own count of inputs.) */
static bool premultiplies(const struct dcoll_coll *c)
{
    return c->op == DCOLL_AVG && dcoll_kind_has(c->kind, DCOLL_KF_OP) &&
           dcoll_gpu_coll_kind(c->kind) &&
           (dcoll_dtype_is_float(c->dtype) ||
            dcoll_dtype_is_complex(c->dtype));
}

static bool pipelined(const struct dcoll_coll *c, size_t bytes, bool async)
{
    return !async && bytes >= 2 * dcoll_stage_chunk &&
           dcoll_kind_has(c->kind, DCOLL_KF_ELEMENTWISE);
}

/* After the chunks, every rank learns whether every rank's copies
 * worked. A rank whose copy failed still took part in every chunk, with
 * what its host block held, so that no peer waits for a chunk that never
 * comes; this says which result is spoiled, on every rank. */
static dcoll_status_t copies_agree(struct dcoll_group *g, const char *fn,
                                   const char *why)
{
    int mine = *why ? 1 : 0;
    int *all = malloc(sizeof(int) * (size_t)g->size);
    if (!all)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    dcoll_status_t st = g->svc->allgather_bytes(g, &mine, all, sizeof(int));
    int first = -1;
    for (int r = 0; !st && r < g->size && first < 0; r++)
        if (all[r])
            first = r;
    free(all);
    if (st || first < 0)
        return st;
    if (*why)
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: %s; the result is not "
                           "valid on any rank (each was told)", fn, why);
    return dcoll_error(DCOLL_ERR_INTERNAL, "%s: rank %d of the group could "
                       "not copy between its GPU and host memory, so the "
                       "result is not valid on any rank", fn, first);
}

/* Blocking only. h holds the host copies (hsend, hrecv), dsend/drecv the
 * device ranges (NULL where this rank has no input or output). */
static dcoll_status_t run_chunks(struct dcoll_group *g, const struct dcoll_coll *h,
                                 const char *dsend, char *dhost_in,
                                 char *drecv, const char *hrecv_out,
                                 struct staged *s, bool premul,
                                 const char *fn, struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *cu = s->cu;
    size_t esz = dcoll_dtype_sizes[h->dtype];
    int64_t per = (int64_t)(dcoll_stage_chunk / esz), n = h->count;
    int64_t k = (n + per - 1) / per;
    dcoll_status_t st = DCOLL_SUCCESS;
    const struct dcoll_backend *be = g->host;
    struct dcoll_work *w = NULL;
    char why[DCOLL_ERROR_MAX / 2] = "";   /* this rank's first copy failure */
#define SPAN(i) ((size_t)(i) * (size_t)per * esz)
#define LEN(i) ((size_t)((i) + 1 < k ? per : n - (i) * per) * esz)
#define FAILED(what)                                                         \
    snprintf(why, sizeof(why), "%s GPU %d: %s", what, s->device,            \
             cu->last_error())
    if (dsend && (cu->copy(dhost_in, dsend, LEN(0), s->device, s->stream) ||
                  cu->sync(s->device, s->stream)))
        FAILED("copying the input off");
    for (int64_t i = 0; i < k && !st; i++) {
        struct dcoll_coll part = *h;
        part.count = (int64_t)(LEN(i) / esz);
        if (part.sendbuf)
            part.sendbuf = (const char *)h->sendbuf + SPAN(i);
        if (part.recvbuf)
            part.recvbuf = (char *)h->recvbuf + SPAN(i);
        if (premul)
            dcoll_premul(part.sendbuf ? (void *)part.sendbuf : part.recvbuf,
                         part.count, part.dtype, g->size);
        if ((st = be->coll(g, &part, &w, out)))
            break;
        /* Each chunk keeps the whole call's deadline. */
        dcoll_work_stamp(w, g, h);
        /* While MPI moves chunk i, the GPU copies chunk i+1 out. */
        int bad = !*why && dsend && i + 1 < k &&
                  cu->copy(dhost_in + SPAN(i + 1), dsend + SPAN(i + 1),
                           LEN(i + 1), s->device, s->stream);
        st = be->work_wait(w);
        if (w->report.timed_out)
            *out = w->report; /* the roll goes with it */
        be->work_release(w);
        w = NULL;
        if (!st && !*why && (bad || cu->sync(s->device, s->stream)))
            FAILED("copying to or from");
        /* Chunk i's result goes back while the next chunk is reduced. */
        if (!st && !*why && drecv &&
            cu->copy(drecv + SPAN(i), hrecv_out + SPAN(i), LEN(i), s->device,
                     s->stream))
            FAILED("copying the result back to");
    }
#undef SPAN
#undef LEN
    if (!st && !*why && cu->sync(s->device, s->stream))
        FAILED("copying the result back to");
#undef FAILED
    staged_release(s);
    return st ? st : copies_agree(g, fn, why);
}

static dcoll_status_t staged_run(struct dcoll_group *g,
                                 const struct dcoll_coll *c,
                                 struct dcoll_work **work,
                                 struct dcoll_outcome *oc)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    const char *fn = c->fn;
    int device = c->device;
    void *stream = dcoll_opts_stream(c->opts);
    if (c->layout || dcoll_kind_has(c->kind, DCOLL_KF_NEIGHBOR))
        return dcoll_staged_shaped(g, c, work, oc);
    size_t in, out;
    extents(g, c, &in, &out);
    /* The device ranges; in place, one holds the other, and the host
     * copy keeps the same layout. */
    const char *dsend = in ? c->sendbuf : NULL;
    char *drecv = out ? c->recvbuf : NULL;
    if (c->kind == DCOLL_COLL_BROADCAST)
        dsend = in ? c->recvbuf : NULL;
    const char *lo = dsend, *hi_end = dsend ? dsend + in : NULL;
    if (drecv && (!lo || drecv < lo))
        lo = drecv;
    if (drecv && (!hi_end || drecv + out > hi_end))
        hi_end = drecv + out;
    bool overlap = dsend && drecv && dsend < drecv + out && drecv < dsend + in;
    size_t bytes = overlap ? (size_t)(hi_end - lo) : in + out;

    struct staged *s = calloc(1, sizeof(*s));
    bool pinned = false;
    char *block = s ? dcoll_stage_take(bytes, &pinned) : NULL;
    /* Failing before the host call, this rank did not run it: refused
     * here alone (the core leaves the group, and the others learn why). */
    if (!block) {
        free(s);
        oc->refused = true;
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no host memory for "
                           "%zu bytes of staging", fn, bytes);
    }
    *s = (struct staged){cu, block, pinned, NULL, NULL, 0, device, stream};
    char *hsend = dsend ? (overlap ? block + (dsend - lo) : block) : NULL;
    char *hrecv = drecv ? (overlap ? block + (drecv - lo) : block + in)
                        : NULL;
    /* The same call on the host copies. */
    struct dcoll_coll h = *c;
    if (c->kind == DCOLL_COLL_BROADCAST) {
        h.recvbuf = in ? hsend : hrecv;
    } else {
        h.sendbuf = c->sendbuf ? (hsend ? hsend : block) : NULL;
        h.recvbuf = c->recvbuf ? (hrecv ? hrecv : block) : NULL;
    }
    const char *host_out = c->kind == DCOLL_COLL_BROADCAST ? h.recvbuf : hrecv;
    bool premul = premultiplies(c);
    if (premul)
        h.op = DCOLL_SUM;
    /* An exscan's rank 0 gets nothing: its buffer stays as it was, not
     * overwritten by the host block MPI never wrote (which stays apart
     * from the input, as MPI wants them). */
    bool keep = c->kind == DCOLL_COLL_EXSCAN && g->rank == 0;
    if (pipelined(c, in > out ? in : out, work != NULL))
        return run_chunks(g, &h, dsend, hsend, keep ? NULL : drecv,
                          host_out, s, premul, fn, oc);
    /* Copy in: everything the collective reads, ordered after the
     * caller's earlier work on the stream. */
    const char *from = overlap ? lo : dsend;
    size_t in_bytes = overlap ? bytes : in;
    if (from && in_bytes &&
        (cu->copy(overlap ? block : hsend, from, in_bytes, device, stream) ||
         cu->sync(device, stream))) {
        staged_release(s);
        oc->refused = true;
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: copying the input off "
                           "GPU %d: %s", fn, device, cu->last_error());
    }
    if (premul && hsend)
        dcoll_premul(hsend, (int64_t)(in / dcoll_dtype_sizes[c->dtype]),
                     c->dtype, g->size);
    s->dev_out = drecv;
    s->host_out = host_out;
    s->out_bytes = keep ? 0 : out;
    dcoll_status_t st = g->host->coll(g, &h, work, oc);
    if (st || !work)
        return copy_out(s, st);
    (*work)->finish = finish_staged;
    (*work)->finish_data = s;
    return DCOLL_SUCCESS;
}

/* What it stages runs on the host transport: the kinds with one buffer
 * layout per rank, strided or not, and the neighbourhood kinds
 * (staged_strided.c); not the vector kinds (their counts per rank are
 * not staged yet). */
static bool staged_runs(enum dcoll_coll_kind kind)
{
    return dcoll_kind_one_layout(kind) ||
           dcoll_kind_has(kind, DCOLL_KF_NEIGHBOR);
}

/* Its works are the host table's, which calls finish_staged at the end;
 * it keeps nothing for a group (the pool of pinned memory is the
 * process's). */
const struct dcoll_backend dcoll_staged_backend = {
    .name = "staged",
    .tl = DCOLL_TL_STAGED,
    .memory = DCOLL_TL_GPU,
    .over_mpi = true,
    .runs = staged_runs,
    .coll = staged_run,
};
