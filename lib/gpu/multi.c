/* The multi-buffer forms with GPU buffers (lib/core/multi.c chooses).
 * Buffers each on a GPU of its own go to NCCL as torch's NCCL backend
 * sends them: one clique of size x k ranks, one communicator per GPU,
 * buffer i of group rank r being NCCL rank r * k + i, the k calls
 * launched in one ncclGroupStart/End. Whether a placement can use NCCL
 * is agreed by every rank of the group the first time it is seen, so
 * all take the same path. Anything else (host buffers among them, one
 * GPU twice, GPUs shared between processes, a plugin without NCCL) is
 * mirrored in host memory and takes the host path. */
#include <stdlib.h>
#include <string.h>
#include "gpu.h"
#include "plugin_abi.h"

/* One placement seen on the group: kept until the group is freed, as
 * torch keeps one set of communicators per device list. */
struct dcoll_clique {
    struct dcoll_clique *next;
    int k;
    int *devices;          /* the placement: buffer i's GPU */
    void **comms;          /* k; NULL: this placement is staged */
};

struct multi_work {
    struct dcoll_work base;
    int k;
    void **comms;
    void *events[];
};

static dcoll_status_t work_test(struct dcoll_work *bw, int *done)
{
    struct multi_work *w = (struct multi_work *)bw;
    *done = 1;
    for (int i = 0; i < w->k; i++) {
        int one = 0;
        int rc = dcoll_gpu_plugin->event_poll(w->comms[i], w->events[i],
                                              &one);
        if (rc)
            return dcoll_gpu_error("dcoll_work_test", rc);
        if (!one)
            *done = 0;
    }
    return DCOLL_SUCCESS;
}

static dcoll_status_t work_wait(struct dcoll_work *bw)
{
    struct multi_work *w = (struct multi_work *)bw;
    for (int i = 0; i < w->k; i++) {
        int rc = dcoll_gpu_plugin->event_wait(w->comms[i], w->events[i],
                                              dcoll_gpu_timeout(bw->group));
        if (rc)
            return dcoll_gpu_fail("dcoll_work_wait", rc, &bw->report);
    }
    return DCOLL_SUCCESS;
}

static void work_release(struct dcoll_work *bw)
{
    struct multi_work *w = (struct multi_work *)bw;
    for (int i = 0; dcoll_gpu_plugin && i < w->k; i++)
        if (w->events[i])
            dcoll_gpu_plugin->event_free(w->events[i]);
    free(w);
}

/* The work handling of the NCCL transport's multi-buffer calls. */
static const struct dcoll_backend multi_backend = {
    .name = "nccl",
    .tl = DCOLL_TL_NCCL,
    .work_test = work_test,
    .work_wait = work_wait,
    .work_release = work_release,
};

int dcoll_multi_devices(const struct dcoll_multi_call *mc, int *devices)
{
    int on = 0;
    for (int i = 0; i < mc->n; i++) {
        int r = dcoll_device_of(mc->recv[i]);
        int s = mc->send ? dcoll_device_of(mc->send[i]) : r;
        devices[i] = r == s ? r : -2;   /* -2: a mix within buffer i */
        on += r >= 0 || s >= 0;
    }
    return on;
}

/* Whether this process alone could hand the placement to NCCL. */
static bool nccl_here(const int *devices, int k)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    if (!p->nccl_bytes || !p->nccl_comms || !p->group_start ||
        !p->group_end || !p->nccl_takes)
        return false;
    for (int i = 0; i < k; i++) {
        if (devices[i] < 0)
            return false;
        for (int j = 0; j < i; j++)
            if (devices[j] == devices[i])
                return false;
    }
    return true;
}

/* Every rank says whether it can and shows its GPUs; NCCL only if all
 * can (nccl: the route allows it), with the same number of buffers, and
 * no GPU appears twice. The clique is kept in ng (NULL: no memory for
 * it, which this rank still takes through the exchange). */
static dcoll_status_t clique_make(struct dcoll_group *g,
                                  struct dcoll_nccl_group *ng,
                                  const int *devices, int k, bool nccl_ok,
                                  const char *fn, struct dcoll_clique **out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct dcoll_clique *q = calloc(1, sizeof(*q));
    int mine[2] = {k, nccl_ok && nccl_here(devices, k)};
    int *all = malloc(sizeof(mine) * (size_t)g->size);
    unsigned char *ids = NULL, *uu = NULL;
    char *id = NULL;
    dcoll_status_t st = DCOLL_SUCCESS;
    if (!ng || !q || !all ||
        !(q->devices = malloc(sizeof(int) * (size_t)k))) {
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
        mine[1] = 0;
    }
    for (int i = 0; mine[1] && i < k; i++)
        q->devices[i] = devices[i];
    /* Not an early return: the others are already in this exchange. */
    dcoll_status_t ex = g->svc->allgather_bytes(g, mine, all, sizeof(mine));
    if (!st)
        st = ex;
    bool nccl = !st;
    for (int r = 0; nccl && r < g->size; r++)
        nccl = all[2 * r] == k && all[2 * r + 1];
    if (nccl) {
        uu = malloc(16 * (size_t)k);
        ids = malloc(16 * (size_t)k * (size_t)g->size);
        int ok = uu && ids;
        for (int i = 0; ok && i < k; i++)
            ok = p->device_uuid(devices[i], uu + 16 * i) == 0;
        if ((st = g->svc->agree(g, &ok)) == 0 && !ok)
            st = dcoll_error(DCOLL_ERR_INTERNAL, "%s: a rank of the group "
                             "could not read its GPUs' identities (%s)", fn,
                             p->last_error());
        if (!st)
            st = g->svc->allgather_bytes(g, uu, ids, 16 * (size_t)k);
        /* NCCL refuses a GPU twice in one clique: shared GPUs stage. */
        int n = k * g->size;
        for (int a = 0; !st && nccl && a < n; a++)
            for (int b = a + 1; b < n && nccl; b++)
                nccl = memcmp(ids + 16 * a, ids + 16 * b, 16) != 0;
    }
    if (!st && nccl) {
        int made = 1;
        if (!(id = malloc(p->nccl_bytes)) ||
            !(q->comms = calloc((size_t)k, sizeof(void *))))
            made = 0;
        if (made && g->rank == 0)
            made = p->nccl_id(id) == 0;
        if ((st = g->svc->agree(g, &made)) == 0 && !made)
            st = dcoll_error(DCOLL_ERR_INTERNAL, "%s: a rank could not "
                             "prepare the NCCL clique (%s)", fn,
                             p->last_error());
        if (!st)
            st = g->svc->bcast_bytes(g, id, p->nccl_bytes, 0);
        int rc = st ? 0 : p->nccl_comms(id, g->size * k, g->rank * k, k,
                                        q->devices, dcoll_gpu_timeout(g),
                                        q->comms);
        if (rc)
            st = dcoll_gpu_error(fn, rc);
    }
    free(all);
    free(uu);
    free(ids);
    free(id);
    if (st) {
        if (q) {
            free(q->comms);
            free(q->devices);
        }
        free(q);
        return st;
    }
    if (!nccl) {
        free(q->comms);
        q->comms = NULL;
    }
    q->k = k;
    q->next = ng->cliques;
    ng->cliques = q;
    *out = q;
    return DCOLL_SUCCESS;
}

void dcoll_cliques_free(struct dcoll_nccl_group *ng)
{
    struct dcoll_clique *q = ng->cliques;
    while (q) {
        struct dcoll_clique *next = q->next;
        for (int i = 0; q->comms && i < q->k; i++)
            if (dcoll_gpu_plugin)
                dcoll_gpu_plugin->nccl_free(q->comms[i]);
        free(q->comms);
        free(q->devices);
        free(q);
        q = next;
    }
    ng->cliques = NULL;
}

dcoll_status_t dcoll_gpu_multi_choose(struct dcoll_group *g,
                                      struct dcoll_multi_call *mc,
                                      const int *devices, bool nccl)
{
    int k = mc->n;
    struct dcoll_nccl_group *ng = dcoll_nccl_group(g, mc->fn);
    struct dcoll_clique *q = ng ? ng->cliques : NULL;
    dcoll_status_t st;
    mc->clique = NULL;
    while (q && (q->k != k || memcmp(q->devices, devices,
                                     sizeof(int) * (size_t)k)))
        q = q->next;
    if (!q && (st = clique_make(g, ng, devices, k, nccl, mc->fn, &q)))
        return st;
    if (!q->comms)
        return DCOLL_SUCCESS;               /* staged, on every rank */
    /* Ops and types NCCL lacks: the same answer on every rank. */
    dcoll_plugin_call_t call = {.kind = mc->kind, .count = mc->count,
                                     .dtype = mc->dtype, .op = mc->op};
    dcoll_nccl_view(&call.count, &call.dtype);
    if (!dcoll_nccl_knows(mc->dtype, mc->op) ||
        dcoll_gpu_plugin->nccl_takes(&call))
        return DCOLL_SUCCESS;
    if (k > 1 && dcoll_opts_stream(mc->opts))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: opts.stream is "
                           "a stream of one GPU, and the buffers are on %d; "
                           "leave it unset to use each GPU's default "
                           "stream", mc->fn, k);
    mc->clique = q;
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_gpu_multi_run(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_work **work,
                                   struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    const struct dcoll_multi_call *mc = c->multi;
    struct dcoll_clique *q = mc->clique;
    int k = mc->n;
    void *stream = dcoll_opts_stream(mc->opts);
    int rc = p->group_start(), i = 0;
    if (rc)
        return dcoll_gpu_error(mc->fn, rc);
    size_t bytes = (size_t)mc->count * dcoll_dtype_sizes[mc->dtype];
    for (; i < k && !rc; i++) {
        /* In place: one buffer, or (the core checked) NCCL's form, the
         * small buffer at this NCCL rank's block of the big one. */
        const char *sb = mc->send ? mc->send[i] : mc->recv[i];
        const char *rb = mc->recv[i];
        size_t at = bytes * (size_t)(g->rank * k + i);
        bool in_place = sb == rb;
        if (mc->kind == DCOLL_COLL_ALL_GATHER)
            in_place = sb == rb + at;
        else if (mc->kind == DCOLL_COLL_REDUCE_SCATTER)
            in_place = rb == sb + at;
        dcoll_plugin_call_t call = {
            .kind = mc->kind, .sendbuf = sb, .recvbuf = (void *)rb,
            .count = mc->count, .dtype = mc->dtype, .op = mc->op,
            .root = mc->root * k + mc->root_buf, .in_place = in_place,
        };
        dcoll_nccl_view(&call.count, &call.dtype);
        rc = p->nccl_coll(q->comms[i], &call, g->rank * k + i, g->size * k,
                          stream, dcoll_gpu_timeout(g));
    }
    /* The group closes with what it holds. The choice asked nccl_takes,
     * so a declined call (1) is a failure like any other here. */
    int end = p->group_end(q->comms, i - (rc != 0), dcoll_gpu_timeout(g));
    if (rc || (rc = end))
        return dcoll_gpu_fail(mc->fn, rc, out);
    if (!work) {
        for (i = 0; i < k && !rc; i++)
            rc = p->nccl_wait(q->comms[i], stream, dcoll_gpu_timeout(g));
        return rc ? dcoll_gpu_fail(mc->fn, rc, out) : DCOLL_SUCCESS;
    }
    struct multi_work *w = calloc(1, sizeof(*w) + sizeof(void *) * (size_t)k);
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a work "
                           "handle", mc->fn);
    dcoll_work_init(&w->base, g, &multi_backend);
    w->k = k;
    w->comms = q->comms;
    for (i = 0; i < k && !rc; i++)
        rc = p->event_record(q->comms[i], stream, &w->events[i]);
    if (rc) {
        work_release(&w->base);
        return dcoll_gpu_error(mc->fn, rc);
    }
    *work = &w->base;
    return DCOLL_SUCCESS;
}

/* Host mirrors for the staged path. */
struct dcoll_mirror {
    int n;
    size_t bytes;
    void **dev;            /* the caller's buffers (a copy of the list) */
    void **host;           /* what the host path uses */
    int *device;           /* -1: host[i] is the caller's own */
    bool *pinned;          /* host[i] is from the pinned pool */
    void *stream;          /* the call's (opts), or NULL: legacy */
};

dcoll_status_t dcoll_mirror_make(const char *fn, const void *const *list,
                                 int n, size_t bytes, bool copy_in,
                                 const dcoll_coll_opts_t *opts,
                                 struct dcoll_mirror **out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct dcoll_mirror *m = calloc(1, sizeof(*m));
    if (m) {
        m->dev = calloc((size_t)n, sizeof(void *));
        m->host = calloc((size_t)n, sizeof(void *));
        m->device = malloc(sizeof(int) * (size_t)n);
        m->pinned = calloc((size_t)n, sizeof(bool));
    }
    *out = m;
    if (!m || !m->dev || !m->host || !m->device || !m->pinned) {
        dcoll_mirror_free(m);
        *out = NULL;
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    m->n = n;
    m->bytes = bytes;
    /* The copies go in the call's stream order, as the NCCL path's
     * collectives do, not on the legacy stream. */
    m->stream = dcoll_opts_stream(opts);
    int first = -1;
    for (int i = 0; i < n; i++)
        m->device[i] = -1;      /* nothing of ours yet */
    for (int i = 0; i < n; i++) {
        m->dev[i] = (void *)list[i];
        int dev = dcoll_device_of(list[i]);
        if (dev < 0) {
            m->host[i] = (void *)list[i];
            continue;
        }
        if (first < 0)
            first = dev;
        if (m->stream && dev != first) {
            dcoll_mirror_free(m);
            *out = NULL;
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: opts.stream "
                               "is a stream of one GPU, and the buffers are "
                               "on GPUs %d and %d; leave it out to use each "
                               "GPU's default stream", fn, first, dev);
        }
        if (!(m->host[i] = dcoll_stage_take(bytes, &m->pinned[i]))) {
            dcoll_mirror_free(m);
            *out = NULL;
            return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no host memory for "
                               "%zu bytes of buffer %d", fn, bytes, i);
        }
        m->device[i] = dev;
        if (copy_in && bytes &&
            (p->copy(m->host[i], list[i], bytes, m->device[i], m->stream) ||
             p->sync(m->device[i], m->stream))) {
            dcoll_mirror_free(m);
            *out = NULL;
            return dcoll_error(DCOLL_ERR_INTERNAL, "%s: copying buffer %d "
                               "off GPU %d: %s", fn, i, m->device[i],
                               p->last_error());
        }
    }
    return DCOLL_SUCCESS;
}

void *const *dcoll_mirror_host(const struct dcoll_mirror *m)
{
    return m->host;
}

dcoll_status_t dcoll_mirror_back(const struct dcoll_mirror *m, int which)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    for (int i = 0; i < m->n; i++) {
        if (m->device[i] < 0 || (which >= 0 && i != which) || !m->bytes)
            continue;
        if (p->copy(m->dev[i], m->host[i], m->bytes, m->device[i],
                    m->stream) ||
            p->sync(m->device[i], m->stream))
            return dcoll_error(DCOLL_ERR_INTERNAL, "copying the result "
                               "back to buffer %d on GPU %d: %s", i,
                               m->device[i], p->last_error());
    }
    return DCOLL_SUCCESS;
}

void dcoll_mirror_free(struct dcoll_mirror *m)
{
    if (!m)
        return;
    for (int i = 0; m->host && m->device && m->pinned && i < m->n; i++)
        if (m->device[i] >= 0 && m->host[i])
            dcoll_stage_give(m->host[i], m->pinned[i]);
    free(m->pinned);
    free(m->dev);
    free(m->host);
    free(m->device);
    free(m);
}
