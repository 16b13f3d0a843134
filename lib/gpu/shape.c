/* Shapes: what a strided layout or a neighbourhood call picks out of
 * its buffers, in the plugin's terms, and the copies between a shape and
 * contiguous bytes. */
#include <stdlib.h>
#include "shape.h"

void dcoll_shape_of(const dcoll_layout_t *l, const void *base, size_t esz,
                    dcoll_plugin_shape_t *s)
{
    size_t planes = l->count2 > 1 ? (size_t)l->count2 : 1;
    *s = (dcoll_plugin_shape_t){
        .buf = (char *)base + (size_t)l->offset * esz,
        .width = (size_t)l->blocklen * esz,
        .rows = (size_t)l->count,
        .pitch = (size_t)l->stride * esz,
        .planes = planes,
        .plane_pitch = planes > 1 ? (size_t)l->stride2 * esz : 0,
    };
    /* Rows that touch are one row: one copy, or one NCCL transfer in
     * place, where the plugin packs nothing. */
    if (s->rows > 1 && s->pitch == s->width) {
        s->width *= s->rows;
        s->rows = 1;
    }
    if (s->rows <= 1)
        s->pitch = s->width;
    if (s->planes > 1 && s->rows == 1 && s->plane_pitch == s->width) {
        s->width *= s->planes;
        s->planes = 1;
    }
    if (s->planes <= 1)
        s->plane_pitch = s->width * s->rows;
    if (!s->width || !s->rows)
        *s = (dcoll_plugin_shape_t){.buf = s->buf, .planes = 1, .rows = 1};
}

int dcoll_shape_copy(const dcoll_plugin_shape_t *shape, char *flat,
                     bool pack, int device, void *stream)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    if (!dcoll_shape_bytes(shape))
        return 0;
    dcoll_plugin_shape_t f = dcoll_shape_flat(flat, shape);
    if (p->copy_shape)
        return pack ? p->copy_shape(&f, shape, device, stream)
                    : p->copy_shape(shape, &f, device, stream);
    /* A plugin without copy_shape: a copy a row, all on the stream. */
    for (size_t k = 0; k < shape->planes; k++)
        for (size_t i = 0; i < shape->rows; i++) {
            char *s = shape->buf + k * shape->plane_pitch + i * shape->pitch;
            char *d = f.buf + k * f.plane_pitch + i * f.pitch;
            int rc = pack ? p->copy(d, s, shape->width, device, stream)
                          : p->copy(s, d, shape->width, device, stream);
            if (rc)
                return rc;
        }
    return 0;
}

static void flat_at(dcoll_plugin_shape_t *s, const void *buf, size_t bytes)
{
    *s = (dcoll_plugin_shape_t){(char *)buf, bytes, 1, bytes, 1, bytes};
}

dcoll_status_t dcoll_nbh_xfers(const struct dcoll_coll *c,
                               dcoll_plugin_xfer_t **xp)
{
    const struct dcoll_nbh *n = c->nbh;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int nx = n->outdeg + n->indeg;
    dcoll_plugin_xfer_t *x = calloc(nx ? (size_t)nx : 1, sizeof(*x));
    *xp = x;
    if (!x)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for %d "
                           "transfers", c->fn, nx);
    for (int i = 0; i < nx; i++) {
        bool send = i < n->outdeg;
        int j = send ? i : i - n->outdeg;   /* its place in its list */
        x[i].send = send;
        x[i].peer = send ? n->out[j] : n->in[j];
        if (x[i].peer == DCOLL_PROC_NULL) {
            flat_at(&x[i].shape, send ? c->sendbuf : c->recvbuf, 0);
            continue;
        }
        switch (c->kind) {
        case DCOLL_COLL_NEIGHBOR_ALL_GATHER: {
            size_t b = (size_t)c->count * esz;
            flat_at(&x[i].shape, send ? (const char *)c->sendbuf
                                      : (char *)c->recvbuf + (size_t)j * b,
                    b);
            break;
        }
        case DCOLL_COLL_NEIGHBOR_ALL_TO_ALLV: {
            const int64_t *cnt = send ? c->counts : c->counts2;
            const int64_t *dsp = send ? c->displs : c->displs2;
            const char *base = send ? c->sendbuf : c->recvbuf;
            flat_at(&x[i].shape, base + (size_t)dsp[j] * esz,
                    (size_t)cnt[j] * esz);
            break;
        }
        default:   /* DCOLL_COLL_NEIGHBOR_ALL_TO_ALLW */
            dcoll_shape_of(send ? &c->layout[j] : &c->layout2[j],
                           send ? c->sendbuf : c->recvbuf, esz, &x[i].shape);
            break;
        }
    }
    return DCOLL_SUCCESS;
}
