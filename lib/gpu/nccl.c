/* The NCCL transport: one communicator per group, made on the group's
 * first GPU collective (the id goes over the group's MPI communicator)
 * and freed with the group, in the transport's own record of the group.
 * Groups whose ranks share a GPU cannot use NCCL ("Duplicate GPU
 * detected"): the device UUIDs are compared first, and such groups, like
 * ops NCCL lacks, are declined, on every rank alike, for the route to
 * stage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpu.h"
#include "gpu_kinds.h"
#include "plugin_abi.h"
#include "shape.h"

enum { NCCL_UNTRIED, NCCL_READY, NCCL_SHARED };

struct nccl_work {
    struct dcoll_work base;
    void *comm;
    void *event;
};

dcoll_status_t dcoll_gpu_error(const char *fn, int rc)
{
    return dcoll_error(rc == -2 ? DCOLL_ERR_TIMEOUT : DCOLL_ERR_INTERNAL,
                       "%s: %s", fn, dcoll_gpu_plugin->last_error());
}

dcoll_status_t dcoll_gpu_fail(const char *fn, int rc,
                              struct dcoll_outcome *out)
{
    if (rc == -2 && out) {
        out->timed_out = true;
        out->died = 0;
        out->roll = (struct dcoll_roll){0};
    }
    return dcoll_gpu_error(fn, rc);
}

/* A wait for the work before event ev on comm, where a launcher reports
 * deaths and g returns its failures (return mode): polled here, not in
 * the plugin, so that a member's death ends it at the launcher's word
 * rather than at the group's timeout (NCCL's kernels wait for a dead
 * peer without end). The communicator is left as it is: the survivors'
 * shrink ends its work (NCCL_SHRINK_ABORT), or aborts it, and the
 * group's free aborts it. -3 with *dead (a group rank): a member died. */
static int watched(struct dcoll_group *g, void *comm, void *ev,
                   double timeout, int *dead)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    double end = dcoll_now() + timeout;
    for (unsigned turn = 1;; turn++) {
        int done = 0, rc = p->event_poll(comm, ev, &done);
        if (rc || done)
            return rc;
        if (turn < 64)
            continue;
        if ((*dead = dcoll_death_of(g, NULL, 0)) >= 0)
            return -3;
        if (dcoll_now() >= end)   /* the plugin's timeout: it aborts */
            return p->event_wait(comm, ev, 0);
        nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

static bool watches(const struct dcoll_group *g)
{
    return dcoll_death_of && g->recoverable;
}

/* A member's death as the call's outcome: the core reports it. */
static dcoll_status_t died(const char *fn, int dead,
                           struct dcoll_outcome *out)
{
    out->timed_out = true;
    out->died = dead + 1;
    out->roll = (struct dcoll_roll){0};
    return dcoll_error(DCOLL_ERR_RANK_DIED, "%s: rank %d died", fn, dead);
}

static dcoll_status_t work_test(struct dcoll_work *bw, int *done)
{
    struct nccl_work *w = (struct nccl_work *)bw;
    int rc = dcoll_gpu_plugin->event_poll(w->comm, w->event, done);
    if (rc) {
        *done = 1;
        return dcoll_gpu_error("dcoll_work_test", rc);
    }
    return DCOLL_SUCCESS;
}

static dcoll_status_t work_wait(struct dcoll_work *bw)
{
    struct nccl_work *w = (struct nccl_work *)bw;
    /* Polled, so that a failed peer ends in NCCL's error or a timeout. */
    double timeout = dcoll_gpu_timeout(bw->group);
    int dead = -1;
    int rc = watches(bw->group) && w->event
                 ? watched(bw->group, w->comm, w->event, timeout, &dead)
                 : dcoll_gpu_plugin->event_wait(w->comm, w->event, timeout);
    if (rc == -3)
        return died("dcoll_work_wait", dead, &bw->report);
    return rc ? dcoll_gpu_fail("dcoll_work_wait", rc, &bw->report)
              : DCOLL_SUCCESS;
}

static void work_release(struct dcoll_work *bw)
{
    struct nccl_work *w = (struct nccl_work *)bw;
    if (dcoll_gpu_plugin && w->event)
        dcoll_gpu_plugin->event_free(w->event);
    free(w);
}

struct dcoll_nccl_group *dcoll_nccl_group(struct dcoll_group *g,
                                          const char *fn)
{
    struct dcoll_nccl_group *ng = g->tl[DCOLL_TL_NCCL];
    if (!ng && !(ng = g->tl[DCOLL_TL_NCCL] = calloc(1, sizeof(*ng))))
        dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the group's "
                    "NCCL record", fn);
    else if (!ng->lock_made)
        ng->lock_made = pthread_mutex_init(&ng->lock, NULL) == 0;
    return ng;
}

/* For tests on one GPU only (DCOLL_NCCL_ONE_GPU=1): ranks that share a
 * GPU use NCCL all the same. Each process then names itself a host of
 * its own (NCCL_HOSTID, read by NCCL's first communicator), so that
 * NCCL's "Duplicate GPU detected" check passes and the ranks talk through
 * its network transport, and one GPU can run NCCL groups of several
 * ranks. Slower than one rank per GPU; never for production. */
static bool one_gpu(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("DCOLL_NCCL_ONE_GPU");
        on = e && !strcmp(e, "1");
        if (on) {
            char host[64] = "", id[128];
            const char *was = getenv("NCCL_HOSTID");
            if (!was || !*was) {
                gethostname(host, sizeof(host) - 1);
                was = host;
            }
            snprintf(id, sizeof(id), "%s-dcoll-%d", was, (int)getpid());
            setenv("NCCL_HOSTID", id, 1);
        }
    }
    return on;
}

/* NCCL 2.30's experimental mode for several ranks on one GPU
 * (NCCL_MULTI_RANK_GPU_ENABLE=1, env.rst): where the program set it and
 * the NCCL loaded has it, ranks sharing a GPU use NCCL, which then
 * allows them, instead of staging. Every rank of a job sees the same
 * variable and library, as NCCL itself requires. */
static bool multi_rank(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
        int rt = 0, drv = 0, nccl = 0;
        dcoll_gpu_plugin->versions(&rt, &drv, &nccl);
        on = e && !strcmp(e, "1") && nccl >= 23000;
    }
    return on;
}

/* The group's NCCL communicator on device, made on first use. An init
 * that outlasts the group's timeout fails the group as a call's timeout
 * does (out): a later call would otherwise start another init, whose
 * first step, the ranks' agreement over MPI, waits for a rank that
 * stays away without bound. */
struct identity {
    int32_t ok;
    unsigned char uuid[16];
};

static dcoll_status_t setup(struct dcoll_group *g,
                            struct dcoll_nccl_group *ng, int device,
                            const struct dcoll_coll *c, const char *fn,
                            struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct identity me = {0};
    /* Every rank's, then this rank's own, sent from there: a timed-out
     * exchange is left to MPI to finish, which may still read and write
     * both, so they are kept then. */
    struct identity *ids = malloc(sizeof(*ids) * ((size_t)g->size + 1));
    char *id = malloc(p->nccl_bytes);
    if (!ids || !id) {
        free(ids);
        free(id);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's NCCL setup", fn);
    }
    me.ok = p->device_uuid(device, me.uuid) == 0;
    ids[g->size] = me;
    /* Every rank learns whether every rank can go on, and which GPU each
     * is on, before any of them depends on the others' buffers: within
     * the call's deadline (a rank whose call took another route, its
     * buffers on the host, never comes here), over the control twin. */
    dcoll_status_t st =
        c ? g->svc->exchange(g, &ids[g->size], ids, sizeof(me), c, out)
          : g->svc->allgather_bytes(g, &ids[g->size], ids, sizeof(me));
    if (st && c && out->timed_out) {
        free(id);
        return st;   /* ids kept: see above */
    }
    int ok = 1;
    for (int r = 0; !st && r < g->size; r++)
        ok &= ids[r].ok;
    if (!st && !ok)
        st = dcoll_error(DCOLL_ERR_INTERNAL, "%s: a rank of the group "
                         "could not read its GPU's identity (%s)", fn,
                         me.ok ? "another rank's" : p->last_error());
    int pair[2] = {-1, -1};
    for (int a = 0; !st && !one_gpu() && !multi_rank() && a < g->size &&
                    pair[0] < 0; a++)
        for (int b = a + 1; b < g->size && pair[0] < 0; b++)
            if (memcmp(ids[a].uuid, ids[b].uuid, 16) == 0) {
                pair[0] = a;
                pair[1] = b;
            }
    if (!st && pair[0] >= 0) {
        ng->state = NCCL_SHARED;
        ng->device = device;   /* staged, on this GPU */
        /* Said once, by the first of the pair, where this process sees
         * GPUs enough that sharing was not forced on it. */
        static bool said;
        if (g->rank == pair[0] && dcoll_gpu_count() > 1 && !said) {
            said = true;
            fprintf(stderr, "dcoll: %s: ranks %d and %d of group %d share "
                    "GPU %d although %d GPUs are visible, so its GPU calls "
                    "go through host memory; did the program call "
                    "cudaSetDevice(dcoll_device())? (this rank: %s)\n", fn,
                    pair[0], pair[1], g->id, device, dcoll_gpu_count(),
                    dcoll_gpu_choice());
        }
    } else if (!st) {
        int made = g->rank != 0 || p->nccl_id(id) == 0;
        if ((st = g->svc->bcast_bytes(g, &made, sizeof(made), 0)) == 0 &&
            !made)
            st = dcoll_error(DCOLL_ERR_INTERNAL, "%s: rank 0 could not "
                             "make an NCCL id", fn);
        if (!st)
            st = g->svc->bcast_bytes(g, id, p->nccl_bytes, 0);
        int rc = st ? 0 : p->nccl_comm(id, g->size, g->rank, device,
                                       dcoll_gpu_timeout(g), &ng->comm);
        if (rc)
            st = dcoll_gpu_fail(fn, rc, out);
        if (!st) {
            ng->state = NCCL_READY;
            ng->device = device;
        }
    }
    free(ids);
    free(id);
    return st;
}

/* A child group's communicator split from its parent's (ncclCommSplit:
 * it shares the parent's resources, and costs no new bootstrap), where
 * the parent has one and the child may use NCCL (wants); NULL: the child
 * makes its own on first use. Every rank of parent calls it, with the
 * child's color (negative outside it) and key. A split that failed
 * anywhere is dropped everywhere. */
static void *split_from(struct dcoll_group *parent, int color, int key,
                        bool wants)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct dcoll_nccl_group *pg = parent->tl[DCOLL_TL_NCCL];
    /* The parent's state was reached by all its ranks together: all
     * decide alike here. Which backend the child takes may differ between
     * the children of one split: a split only if every child may use
     * NCCL. */
    if (!p || !p->nccl_split || !pg || pg->state != NCCL_READY || !pg->comm)
        return NULL;
    /* A rank whose communicator failed would leave the others in the
     * split: it says so here. */
    int all = wants && !pg->broken;
    if (parent->svc->agree(parent, &all) || !all)
        return NULL;
    void *comm = NULL;
    int ok = p->nccl_split(pg->comm, color, key, dcoll_gpu_timeout(parent),
                           &comm) == 0;
    if (parent->svc->agree(parent, &ok) || !ok) {
        if (comm)
            p->nccl_free(comm);
        return NULL;
    }
    return comm;
}

/* A communicator freed: finalized within timeout seconds, or at once
 * aborted where failed (nccl_release); a plugin without it only frees. */
static void release(void *comm, double timeout, bool failed)
{
    if (dcoll_gpu_plugin->nccl_release)
        dcoll_gpu_plugin->nccl_release(comm, timeout, failed);
    else
        dcoll_gpu_plugin->nccl_free(comm);
}

/* The parent's communicator aborted now, its work with it: kernels that
 * wait for a dead rank on the caller's stream would hold everything
 * queued after them. Under the record's lock, which the watchdog takes
 * to look at it. */
static void abort_parent(struct dcoll_nccl_group *pg)
{
    if (!pg || !pg->comm)
        return;
    if (pg->lock_made)
        pthread_mutex_lock(&pg->lock);
    void *comm = pg->comm;
    pg->comm = NULL;
    pg->broken = true;
    if (pg->lock_made)
        pthread_mutex_unlock(&pg->lock);
    release(comm, 0, true);
}

/* dcoll_group_shrink's group g, of the parent's living ranks (m->keep):
 * its communicator shrunk from the parent's (ncclCommShrink: no new
 * bootstrap, the parent's work ended first), where every survivor's is
 * live and the plugin has the call. Otherwise the parent's is aborted
 * and g makes its own at its first GPU call. Collective over the
 * survivors alone (g's agreement): a split would wait for the dead. */
static dcoll_status_t shrink_from(struct dcoll_group *g,
                                  const struct dcoll_tl_make *m, bool wants)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct dcoll_group *parent = m->parent;
    struct dcoll_nccl_group *pg = parent->tl[DCOLL_TL_NCCL];
    if (!p || !pg)
        return DCOLL_SUCCESS;
    int all = wants && p->nccl_shrink && pg->state == NCCL_READY &&
              pg->comm && !atomic_load(&pg->tripped) &&
              (!p->nccl_check || p->nccl_check(pg->comm) == 0);
    dcoll_status_t st = g->svc->agree(g, &all);
    void *comm = NULL;
    int nex = parent->size - m->nkeep;
    int *ex = !st && all ? malloc(sizeof(int) * (size_t)(nex + 1)) : NULL;
    if (ex) {
        for (int r = 0, k = 0, n = 0; r < parent->size; r++) {
            if (k < m->nkeep && m->keep[k] == r)
                k++;
            else
                ex[n++] = r;
        }
        int ok = p->nccl_shrink(pg->comm, ex, nex, dcoll_gpu_timeout(parent),
                                &comm) == 0;
        free(ex);
        if ((st = g->svc->agree(g, &ok)) || !ok) {
            if (comm)
                release(comm, 0, true);
            comm = NULL;
        }
    }
    struct dcoll_nccl_group *ng = comm ? dcoll_nccl_group(g, "shrink")
                                       : NULL;
    if (ng) {
        ng->comm = comm;
        ng->state = NCCL_READY;
        ng->device = pg->device;
    } else {
        if (comm)   /* no memory for g's record */
            release(comm, 0, true);
        abort_parent(pg);
    }
    return st;
}

/* Its part in making a group: a split of the parent's communicator,
 * whichever group the parent is, for a group that may use NCCL. A split
 * shares nothing with its parent (splitShare 0, the plugin's), so either
 * may be freed or aborted first. A failure here is no failure of the
 * group: it makes its own on first use. */
static dcoll_status_t nccl_group_make(struct dcoll_group *g,
                                      const struct dcoll_tl_make *m)
{
    bool wants = m->choice == DCOLL_CHOICE_AUTO ||
                 m->choice == DCOLL_CHOICE_NCCL;
    if (m->keep)
        return g ? shrink_from(g, m, wants) : DCOLL_SUCCESS;
    void *comm = split_from(m->parent, m->color, m->key, wants);
    struct dcoll_nccl_group *pg = m->parent->tl[DCOLL_TL_NCCL];
    struct dcoll_nccl_group *ng = g && comm ? dcoll_nccl_group(g, "split")
                                            : NULL;
    if (!ng) {
        if (comm)
            dcoll_gpu_plugin->nccl_free(comm);
        return DCOLL_SUCCESS;
    }
    ng->comm = comm;
    ng->state = NCCL_READY;
    ng->device = pg->device;
    return DCOLL_SUCCESS;
}

/* DCOLL_NCCL_EAGER=1 on every rank: the world's communicator is made at
 * dcoll_init, on the rank's GPU (dcoll_device), so that every group made
 * later is split from it (one bootstrap for the job) instead of making
 * its own at its first call. Ranks that differ make none. Collective. */
dcoll_status_t dcoll_nccl_eager(struct dcoll_group *world)
{
    const char *e = getenv("DCOLL_NCCL_EAGER");
    int eager = e && !strcmp(e, "1") && dcoll_gpu_has_nccl() &&
                dcoll_gpu_device() >= 0;
    dcoll_status_t st = world->svc->agree(world, &eager);
    if (st || !eager)
        return st;
    struct dcoll_nccl_group *ng = dcoll_nccl_group(world, "dcoll_init");
    if (!ng)
        return DCOLL_ERR_NO_MEMORY;
    struct dcoll_outcome out = {0};
    return setup(world, ng, dcoll_gpu_device(), NULL,
                 "dcoll_init (DCOLL_NCCL_EAGER)", &out);
}

int dcoll_nccl_device(const struct dcoll_group *g)
{
    const struct dcoll_nccl_group *ng = g->tl[DCOLL_TL_NCCL];
    return ng && ng->state != NCCL_UNTRIED ? ng->device : -1;
}

static void nccl_group_free(struct dcoll_group *g)
{
    struct dcoll_nccl_group *ng = g->tl[DCOLL_TL_NCCL];
    if (!ng)
        return;
    for (int i = 0; i < ng->nsample; i++)
        dcoll_gpu_plugin->event_free(ng->sample[i]);
    if (ng->lock_made)
        pthread_mutex_destroy(&ng->lock);
    /* A communicator a call failed on is aborted: its finalize would
     * wait for peers that may never come. */
    bool failed = ng->broken || atomic_load(&ng->tripped);
    if (ng->comm && dcoll_gpu_plugin)
        release(ng->comm, dcoll_gpu_timeout(g), failed);
    dcoll_cliques_free(ng);
    free(ng);
    g->tl[DCOLL_TL_NCCL] = NULL;
}

/* A stream-ordered call returns once enqueued: at most one event a
 * millisecond marks how far the stream should have got, two kept, the
 * oldest frozen for the watchdog to time (watch below), the newer
 * re-recorded while calls keep coming. A clock read a call otherwise. */
static dcoll_status_t sample(struct dcoll_nccl_group *ng, void *stream,
                             const struct dcoll_coll *c)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    double t = dcoll_now();
    int rc = 0;
    pthread_mutex_lock(&ng->lock);
    int n = ng->nsample;
    if (n == 0 || t - ng->sample_at[n - 1] >= 1e-3) {
        int at = n < 2 ? n : 1;
        void *ev = NULL;
        rc = p->event_record(ng->comm, stream, &ev);
        if (!rc && ev) {   /* NULL: captured, nothing to time */
            if (at < n)
                p->event_free(ng->sample[at]);
            ng->sample[at] = ev;
            ng->sample_at[at] = t;
            ng->sample_kind[at] = c->kind;
            ng->nsample = at + 1;
        }
    }
    pthread_mutex_unlock(&ng->lock);
    return rc ? dcoll_gpu_error(c->fn, rc) : DCOLL_SUCCESS;
}

/* The watchdog's look at g's stream-ordered calls (its thread): samples
 * done are dropped; the oldest past g's timeout, or an asynchronous
 * error, aborts the communicator, and the group's next call says so. */
static bool nccl_watch(struct dcoll_group *g, char *why, size_t len,
                       int *kind)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    struct dcoll_nccl_group *ng = g->tl[DCOLL_TL_NCCL];
    if (!p || !p->nccl_check || !ng || !ng->lock_made ||
        ng->state != NCCL_READY || !ng->comm)
        return false;
    bool failed = false;
    pthread_mutex_lock(&ng->lock);
    bool was = atomic_load(&ng->tripped);
    while (ng->nsample > 0 && !was && !ng->broken) {
        int done = 0, rc = p->event_poll(ng->comm, ng->sample[0], &done);
        double late = dcoll_now() - ng->sample_at[0];
        if (!rc && !done && late > dcoll_gpu_timeout(g))
            rc = p->event_wait(ng->comm, ng->sample[0], 0);
        if (rc) {
            *kind = ng->sample_kind[0];
            ng->failed_late = rc == -2;
            snprintf(ng->failed, sizeof(ng->failed), "a stream-ordered "
                     "%s %s: %s", dcoll_kind_name(*kind),
                     rc == -2 ? "was not done within the group's timeout"
                              : "failed on the GPU",
                     p->last_error());
            failed = true;
            break;
        }
        if (!done)
            break;
        p->event_free(ng->sample[0]);
        ng->sample[0] = ng->sample[1];
        ng->sample_at[0] = ng->sample_at[1];
        ng->sample_kind[0] = ng->sample_kind[1];
        ng->nsample--;
    }
    if (!failed && !was && !ng->broken && p->nccl_check(ng->comm)) {
        *kind = ng->nsample ? ng->sample_kind[0] : DCOLL_COLL_ALL_REDUCE;
        snprintf(ng->failed, sizeof(ng->failed), "NCCL reported an error "
                 "between calls: %s", p->last_error());
        failed = true;
    }
    if (failed) {
        snprintf(why, len, "%s", ng->failed);
        atomic_store(&ng->tripped, true);
    }
    pthread_mutex_unlock(&ng->lock);
    return failed;
}

/* A blocking call's wait in return mode where deaths are reported: for
 * an event recorded after it (none where the stream is being captured:
 * the plugin's own wait then). */
static dcoll_status_t wait_watched(struct dcoll_group *g,
                                   struct dcoll_nccl_group *ng, void *stream,
                                   const char *fn, struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    double timeout = dcoll_gpu_timeout(g);
    void *ev = NULL;
    int dead = -1, rc = p->event_record(ng->comm, stream, &ev);
    if (!rc)
        rc = ev ? watched(g, ng->comm, ev, timeout, &dead)
                : p->nccl_wait(ng->comm, stream, timeout);
    if (ev)
        p->event_free(ev);
    ng->broken |= rc != 0;
    if (rc == -3)
        return died(fn, dead, out);
    return rc ? dcoll_gpu_fail(fn, rc, out) : DCOLL_SUCCESS;
}

static dcoll_status_t enqueued(struct dcoll_group *g,
                               struct dcoll_nccl_group *ng,
                               const struct dcoll_coll *c, int rc,
                               void *stream, struct dcoll_work **work,
                               struct dcoll_outcome *out);

/* A neighbourhood call: its sends and receives in one NCCL group (the
 * plugin's exchange), walls and empty blocks left out on both sides. */
static dcoll_status_t nbh_run(struct dcoll_group *g,
                              struct dcoll_nccl_group *ng,
                              const struct dcoll_coll *c, void *stream,
                              struct dcoll_work **work,
                              struct dcoll_outcome *out)
{
    dcoll_plugin_xfer_t *x = NULL;
    dcoll_status_t st = dcoll_nbh_xfers(c, &x);
    if (st) {
        free(x);
        out->refused = true;   /* nothing enqueued: this rank alone */
        return st;
    }
    int n = 0;
    for (int i = 0; i < c->nbh->outdeg + c->nbh->indeg; i++)
        if (x[i].peer != DCOLL_PROC_NULL && dcoll_shape_bytes(&x[i].shape))
            x[n++] = x[i];
    int rc = dcoll_gpu_plugin->nccl_exchange(ng->comm, x, n, stream,
                                             dcoll_gpu_timeout(g));
    free(x);
    atomic_store_explicit(&dcoll_gpu_latest,
                          dcoll_gpu_latest_pack(g->id, c->seq, c->kind),
                          memory_order_relaxed);
    return enqueued(g, ng, c, rc, stream, work, out);
}

/* c's buffers are on GPU c->device; point-to-point never comes here (the
 * route stages it): the communicator is collective to make. */
static dcoll_status_t nccl_run(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               struct dcoll_work **work,
                               struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    const char *fn = c->fn;
    int device = c->device;
    dcoll_status_t st;
    if (c->multi)
        return dcoll_gpu_multi_run(g, c, work, out);
    /* No plugin with NCCL, or no GPU for it: the next in line. */
    if (!dcoll_gpu_has_nccl())
        return DCOLL_DECLINED;
    /* Types and ops NCCL lacks (bool, logical, the logical ops, a
     * complex PRODUCT): staged, on every rank alike. A neighbourhood
     * call moves bytes of any type, where the plugin has the exchange. */
    bool nbh = dcoll_kind_has(c->kind, DCOLL_KF_NEIGHBOR);
    if (nbh ? !p->nccl_exchange : !dcoll_nccl_knows(c->dtype, c->op))
        return DCOLL_DECLINED;
    struct dcoll_nccl_group *ng = dcoll_nccl_group(g, fn);
    if (!ng)
        return DCOLL_ERR_NO_MEMORY;
    if (ng->state == NCCL_UNTRIED &&
        (st = setup(g, ng, device, c, fn, out)))
        return st;
    if (ng->state == NCCL_SHARED)
        return DCOLL_DECLINED;
    if (atomic_load_explicit(&ng->tripped, memory_order_acquire)) {
        /* The watchdog's finding, as this call's failure. */
        ng->broken = true;
        out->timed_out = ng->failed_late;
        out->died = 0;
        if (out->timed_out)
            out->roll = (struct dcoll_roll){0};
        return dcoll_error(ng->failed_late ? DCOLL_ERR_TIMEOUT
                                           : DCOLL_ERR_INTERNAL,
                           "%s: %s; the group's NCCL communicator was "
                           "aborted", fn, ng->failed);
    }
    if (DCOLL_UNLIKELY(!ng->comm))   /* aborted by a shrink of g */
        return dcoll_error(DCOLL_ERR_GROUP_FAILED, "%s: the group's NCCL "
                           "communicator was aborted when its living ranks "
                           "shrank it", fn);
    if (device != ng->device) {
        out->refused = true;   /* this rank alone: it did not run */
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: the buffers are on GPU %d, but this "
                           "group's GPU is %d", fn, device, ng->device);
    }
    void *stream = dcoll_opts_stream(c->opts);
    if (nbh)
        return nbh_run(g, ng, c, stream, work, out);
    dcoll_plugin_call_t call = {
        .kind = c->kind, .sendbuf = c->sendbuf, .recvbuf = c->recvbuf,
        .count = c->count, .dtype = c->dtype, .op = c->op, .root = c->root,
        .in_place = c->in_place,
    };
    dcoll_nccl_view(&call.count, &call.dtype);
    /* sendbuf == recvbuf is MPI's in-place form (the core's check_layout);
     * NCCL knows only the offset pattern: give it that, and move a
     * reduce_scatter's result to the front after, on the same stream. */
    size_t bytes = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    char *front = NULL;
    if (c->in_place && c->sendbuf == c->recvbuf && g->rank > 0) {
        if (c->kind == DCOLL_COLL_ALL_GATHER)
            call.sendbuf = (char *)c->recvbuf + bytes * (size_t)g->rank;
        else if (c->kind == DCOLL_COLL_REDUCE_SCATTER)
            front = c->recvbuf;
        if (front)
            call.recvbuf = front + bytes * (size_t)g->rank;
    }
    int rc = p->nccl_coll(ng->comm, &call, g->rank, g->size, stream,
                          dcoll_gpu_timeout(g));
    atomic_store_explicit(&dcoll_gpu_latest,
                          dcoll_gpu_latest_pack(g->id, c->seq, c->kind),
                          memory_order_relaxed);
    if (!rc && front && bytes &&
        p->copy(front, call.recvbuf, bytes, device, stream))
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: moving this rank's "
                           "result to the front of recvbuf on GPU %d: %s", fn,
                           device, p->last_error());
    if (rc == 1) /* an op NCCL lacks: the same on every rank */
        return DCOLL_DECLINED;
    if (rc == 2)
        return dcoll_error(DCOLL_ERR_UNSUPPORTED,
                           "%s: an all_to_all in place on GPU buffers goes "
                           "through NCCL, which cannot do it; give separate "
                           "send and receive buffers", fn);
    return enqueued(g, ng, c, rc, stream, work, out);
}

/* After a call was enqueued on stream (rc, the plugin's answer): its
 * failure, or how it ends: sampled (stream-ordered), waited for, or a
 * work. */
static dcoll_status_t enqueued(struct dcoll_group *g,
                               struct dcoll_nccl_group *ng,
                               const struct dcoll_coll *c, int rc,
                               void *stream, struct dcoll_work **work,
                               struct dcoll_outcome *out)
{
    const dcoll_cuda_plugin_t *p = dcoll_gpu_plugin;
    const char *fn = c->fn;
    if (rc) {
        ng->broken = true;
        return dcoll_gpu_fail(fn, rc, out);
    }
    if (!work && dcoll_opts_ordered(c->opts) && p->nccl_check)
        return sample(ng, stream, c);
    if (!work && watches(g))
        return wait_watched(g, ng, stream, fn, out);
    if (!work) {
        rc = p->nccl_wait(ng->comm, stream, dcoll_gpu_timeout(g));
        ng->broken |= rc != 0;
        return rc ? dcoll_gpu_fail(fn, rc, out) : DCOLL_SUCCESS;
    }
    struct nccl_work *w = calloc(1, sizeof(*w));
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a work "
                           "handle", fn);
    w->comm = ng->comm;
    if ((rc = p->event_record(ng->comm, stream, &w->event))) {
        free(w);
        return dcoll_gpu_error(fn, rc);
    }
    dcoll_work_init(&w->base, g, &dcoll_nccl_backend);
    *work = &w->base;
    return DCOLL_SUCCESS;
}

/* The kinds NCCL has a call for (the plugin's nccl_coll), and the
 * neighbourhood kinds (its exchange). */
static bool nccl_runs(enum dcoll_coll_kind kind)
{
    return dcoll_gpu_coll_kind(kind) ||
           dcoll_kind_has(kind, DCOLL_KF_NEIGHBOR);
}

/* A plugin built with NCCL, and a GPU to run it on. */
static bool nccl_status(const char **text)
{
    *text = dcoll_gpu_detail();
    return dcoll_gpu_has_nccl();
}

const struct dcoll_backend dcoll_nccl_backend = {
    .name = "nccl",
    .tl = DCOLL_TL_NCCL,
    .memory = DCOLL_TL_GPU,
    .runs = nccl_runs,
    .choice = DCOLL_CHOICE_NCCL,
    .status = nccl_status,
    .group_make = nccl_group_make,
    .group_free = nccl_group_free,
    .coll = nccl_run,
    .work_test = work_test,
    .work_wait = work_wait,
    .work_release = work_release,
    .watch = nccl_watch,
};
