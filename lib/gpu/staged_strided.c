/* The staged path for buffers that are not one range: a strided send or
 * receive (c->layout), and the neighbourhood calls. What the call reads
 * is packed off the GPU into one host block, shape by shape on the
 * caller's stream; the host transport runs the call on the block as
 * contiguous pieces (a neighbourhood call as neighbor_all_to_allv, a
 * strided send or receive as a plain one); what it wrote goes back into
 * the shapes. Only the bytes the call names move, in both directions: a
 * ghost face, not the array around it. */
#include <stdlib.h>
#include "shape.h"

/* The copy-back half, run when the host call is done. */
struct shaped {
    const dcoll_cuda_plugin_t *cu;
    char *block;                  /* the host block, from the pool */
    bool pinned;
    int device;
    void *stream;
    dcoll_plugin_xfer_t *x;       /* the transfers; receives go back */
    int nx;
    size_t *at;                   /* each transfer's place in the block */
    int64_t *counts;              /* the host call's arrays, which MPI
                                     reads until it is done */
};

static void shaped_free(struct shaped *s)
{
    if (s->block)
        dcoll_stage_give(s->block, s->pinned);
    free(s->x);
    free(s->at);
    free(s->counts);
    free(s);
}

/* The sends' shapes into the host block (send), or the block into the
 * receives' shapes, on the stream, then waited for: 0 or the failure. */
static int copies(const struct shaped *s, bool send)
{
    int rc = 0;
    for (int i = 0; !rc && i < s->nx; i++)
        if (s->x[i].send == send)
            rc = dcoll_shape_copy(&s->x[i].shape, s->block + s->at[i], send,
                                  s->device, s->stream);
    return rc ? rc : s->cu->sync(s->device, s->stream);
}

static dcoll_status_t copy_back(struct shaped *s, dcoll_status_t st)
{
    if (!st && copies(s, false))
        st = dcoll_error(DCOLL_ERR_INTERNAL, "copying the result back to "
                         "GPU %d: %s", s->device, s->cu->last_error());
    shaped_free(s);
    return st;
}

static dcoll_status_t finish_shaped(struct dcoll_work *w, dcoll_status_t st)
{
    return copy_back(w->finish_data, st);
}

/* A strided send or receive as one transfer (its peer unused here). */
static dcoll_status_t one_xfer(const struct dcoll_coll *c,
                               dcoll_plugin_xfer_t **x)
{
    *x = calloc(1, sizeof(**x));
    if (!*x)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", c->fn);
    (*x)->send = c->kind == DCOLL_COLL_SEND;
    dcoll_shape_of(c->layout, (*x)->send ? c->sendbuf : c->recvbuf,
                   dcoll_dtype_sizes[c->dtype], &(*x)->shape);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_staged_shaped(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_work **work,
                                   struct dcoll_outcome *oc)
{
    const dcoll_cuda_plugin_t *cu = dcoll_gpu_plugin;
    const char *fn = c->fn;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    bool nbh = dcoll_kind_has(c->kind, DCOLL_KF_NEIGHBOR);
    struct shaped *s = calloc(1, sizeof(*s));
    dcoll_status_t st = s ? DCOLL_SUCCESS
                          : dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory",
                                        fn);
    if (!st)
        st = nbh ? dcoll_nbh_xfers(c, &s->x) : one_xfer(c, &s->x);
    if (st) {
        if (s)
            shaped_free(s);
        oc->refused = true;   /* before the host call: this rank alone */
        return st;
    }
    *s = (struct shaped){.cu = cu, .device = c->device,
                         .stream = dcoll_opts_stream(c->opts), .x = s->x,
                         .nx = nbh ? c->nbh->outdeg + c->nbh->indeg : 1};
    /* Sends first in the block, then receives, each where the host call's
     * displacement puts it. */
    size_t total = 0;
    s->at = malloc(sizeof(size_t) * (size_t)s->nx);
    s->counts = nbh ? malloc(sizeof(int64_t) * 2 * (size_t)s->nx) : NULL;
    if (s->at && (s->counts || !nbh)) {
        for (int i = 0; i < s->nx; i++) {
            size_t b = dcoll_shape_bytes(&s->x[i].shape);
            s->at[i] = total;
            total += b;
            if (nbh) {
                s->counts[i] = (int64_t)(b / esz);
                s->counts[s->nx + i] = (int64_t)(s->at[i] / esz);
            }
        }
        s->block = dcoll_stage_take(total ? total : 1, &s->pinned);
    }
    if (!s->block) {
        shaped_free(s);
        oc->refused = true;
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no host memory for "
                           "%zu bytes of staging", fn, total);
    }
    if (copies(s, true)) {
        st = dcoll_error(DCOLL_ERR_INTERNAL, "%s: copying the input off GPU "
                         "%d: %s", fn, s->device, cu->last_error());
        shaped_free(s);
        oc->refused = true;
        return st;
    }
    struct dcoll_coll h = *c;
    h.layout = h.layout2 = NULL;
    if (nbh) {
        /* Receives' displacements count from recvbuf, the first
         * receive's place in the block. */
        int out = c->nbh->outdeg;
        size_t rbase = out < s->nx ? s->at[out] : total;
        for (int i = out; i < s->nx; i++)
            s->counts[s->nx + i] -= (int64_t)(rbase / esz);
        h.kind = DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV;
        h.sendbuf = s->block;
        h.recvbuf = s->block + rbase;
        h.counts = s->counts;
        h.displs = s->counts + s->nx;
        h.counts2 = s->counts + out;
        h.displs2 = s->counts + s->nx + out;
        h.count = (int64_t)(rbase / esz);
    } else if (c->kind == DCOLL_COLL_SEND) {
        h.sendbuf = s->block;
    } else {
        h.recvbuf = s->block;
    }
    st = g->host->coll(g, &h, work, oc);
    if (st || !work)
        return copy_back(s, st);
    (*work)->finish = finish_shaped;
    (*work)->finish_data = s;
    return DCOLL_SUCCESS;
}
