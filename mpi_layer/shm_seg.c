/* The shared-memory way's settings, its segments' making and freeing,
 * and the waits on their lines (mpi_layer/shm.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bytes.h"
#include "shm.h"

int dcoll_mpi_shm_mode = DCOLL_SHM_AUTO;
size_t dcoll_shm_slot_bytes = (size_t)4 << 20;   /* a half of a rank's slot */
bool dcoll_shm_slot_given;                       /* DCOLL_SHM_SEGMENT set */


/* ---- settings: DCOLL_SHM, DCOLL_SHM_SEGMENT, alike on every rank ---- */

dcoll_status_t dcoll_mpi_shm_setup(struct dcoll_group *world)
{
    static const char *const modes[] = {"auto", "never", "always", "trial"};
    int v[3] = {0, DCOLL_SHM_AUTO, 0};  /* bad, mode, KiB a half */
    const char *m = getenv("DCOLL_SHM"), *z = getenv("DCOLL_SHM_SEGMENT");
    char why[200] = "";
    size_t seg = (size_t)8 << 20;
    if (m && *m) {
        v[1] = -1;
        for (int i = 0; i < 4; i++)
            if (!strcmp(m, modes[i]))
                v[1] = i;
        if (v[1] < 0) {
            v[0] = 1;
            v[1] = 0;
            snprintf(why, sizeof(why), "DCOLL_SHM='%.64s' is not auto, "
                     "never, always or trial", m);
        }
    }
    if (z && *z && (!dcoll_parse_bytes(z, &seg) || seg < 2 * SLOT_LEAST ||
                    seg > ((size_t)1 << 30))) {
        v[0] = 1;
        seg = (size_t)8 << 20;
        snprintf(why, sizeof(why), "DCOLL_SHM_SEGMENT='%.64s' is not a "
                 "size from 8K to 1G (bytes, or with K, M or G)", z);
    }
    v[2] = (int)(seg / 2 / 1024);
    /* One maximum of each and of its negation: bad anywhere, or
     * different somewhere, and every rank refuses alike. */
    int x[6] = {v[0], v[1], v[2], -v[0], -v[1], -v[2]};
    int rc = MPI_Allreduce(MPI_IN_PLACE, x, 6, MPI_INT, MPI_MAX,
                           dcoll_mpi_ctl_of(world));
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Allreduce (DCOLL_SHM's agreement)");
    if (v[0])
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: %s",
                           why);
    if (x[0])
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: "
                           "another rank's DCOLL_SHM or DCOLL_SHM_SEGMENT is "
                           "not a value it takes (that rank says which)");
    if (x[1] != -x[4] || x[2] != -x[5])
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: the "
                           "ranks disagree on %s (this one: %s); set it "
                           "alike on every rank", x[1] != -x[4]
                           ? "DCOLL_SHM" : "DCOLL_SHM_SEGMENT",
                           x[1] != -x[4] ? modes[v[1]] : z ? z : "unset");
    dcoll_mpi_shm_mode = v[1];
    dcoll_shm_slot_bytes = (size_t)v[2] * 1024;
    dcoll_shm_slot_given = z && *z;
    return DCOLL_SUCCESS;
}

/* ---- the segment ---- */


void dcoll_mpi_shm_free(struct dcoll_mpi_comm *mc)
{
    struct dcoll_mpi_shm *s = mc->shm;
    if (s) {
        munmap(s->base, s->bytes);
        if (s->name[0])
            shm_unlink(s->name);
        free(s->sent);
        free(s->from);
    }
    free(s);
    free(mc->trial);
    dcoll_mpi_nodes_free(mc->nodes);
    dcoll_mpi_heaps_free(mc);
    mc->shm = NULL;
    mc->trial = NULL;
    mc->nodes = NULL;
}

/* Whether every member of g is on this rank's host (by the names
 * dcoll_init gathered, alike on every rank), with two or more members. */
bool dcoll_shm_one_node(const struct dcoll_group *g)
{
    const char *mine = dcoll_host_of(dcoll_world_of(g, g->rank));
    if (g->size < 2 || !mine)
        return false;
    for (int r = 0; r < g->size; r++) {
        const char *h = dcoll_host_of(dcoll_world_of(g, r));
        if (!h || strcmp(h, mine))
            return false;
    }
    return true;
}

/* More ranks on this node than it has cores: waits give the core up. */
bool dcoll_shm_crowded(const struct dcoll_group *g)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return dcoll_hosts_sharing(dcoll_world_of(g, g->rank)) >
           (cores > 0 ? cores : 1);
}

struct made {
    char name[56];
    int err;            /* errno where this rank could not; 0: it has it */
    int step;           /* what failed: 1 open, 2 size, 3 map */
};

static int map_it(struct made *m, int fd, size_t bytes, char **base)
{
    void *p = MAP_FAILED;
    if (fd < 0)
        m->step = 1;
    else if (m->step == 0 && (p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                       MAP_SHARED, fd, 0)) == MAP_FAILED)
        m->step = 3;
    if (m->step)
        m->err = errno ? errno : EINVAL;
    *base = p == MAP_FAILED ? NULL : p;
    return m->step;
}

/* The wait a call c of g keeps: its deadline in return mode, none in
 * abort mode (the watchdog watches). */
struct dcoll_watch dcoll_shm_watch(const struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   const char *call,
                                   struct dcoll_outcome *out)
{
    struct dcoll_watch wt = dcoll_mpi_watch_of(g, c, call, out);
    if (!(g->timeout > 0 && g->recoverable))
        wt.deadline = INFINITY;
    return wt;
}

/* len bytes from each of comm's ranks into all, within call c's wait:
 * to rank 0 and back out, point to point with a tag of its own, so that
 * a rank whose call took another way (a collective on the same
 * communicator) is never matched with it. On failure the requests stay
 * posted: all is left to them. */
dcoll_status_t dcoll_shm_swap(struct dcoll_group *g, MPI_Comm comm,
                           const void *mine, void *all, size_t len,
                           const struct dcoll_coll *c,
                           struct dcoll_outcome *out)
{
    int me = 0, k = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &k);
    struct dcoll_watch wt = dcoll_shm_watch(g, c, "MPI_Isend/MPI_Irecv (the "
                                     "nodes' records)", out);
    memcpy((char *)all + (size_t)me * len, mine, len);
    if (k == 1)
        return DCOLL_SUCCESS;
    MPI_Request one[2], *rq = me == 0 ? malloc(sizeof(*rq) * (size_t)k)
                                      : one;
    if (!rq)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for %d "
                           "requests", c->fn, k);
    int rc = MPI_SUCCESS, n = 0;
    if (me == 0) {
        for (int r = 1; r < k && rc == MPI_SUCCESS; r++, n++)
            rc = MPI_Irecv((char *)all + (size_t)r * len, (int)len, MPI_BYTE,
                           r, DCOLL_MPI_SHM_TAG, comm, &rq[n]);
    } else {
        rc = MPI_Isend(mine, (int)len, MPI_BYTE, 0, DCOLL_MPI_SHM_TAG, comm,
                       &rq[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Irecv(all, (int)(len * (size_t)k), MPI_BYTE, 0,
                           DCOLL_MPI_SHM_TAG, comm, &rq[1]);
        n = 2;
    }
    dcoll_status_t st = rc == MPI_SUCCESS
                            ? dcoll_mpi_poll(g, &wt, n, rq, NULL)
                            : dcoll_mpi_error(rc, wt.call);
    for (int r = 1; !st && me == 0 && r < k && rc == MPI_SUCCESS; r++)
        rc = MPI_Isend(all, (int)(len * (size_t)k), MPI_BYTE, r,
                       DCOLL_MPI_SHM_TAG, comm, &rq[r - 1]);
    if (!st && me == 0)
        st = rc == MPI_SUCCESS ? dcoll_mpi_poll(g, &wt, k - 1, rq, NULL)
                               : dcoll_mpi_error(rc, wt.call);
    if (rq != one && !st)
        free(rq);
    return st;
}

/* Make a segment among comm's k ranks (this one me), within call c of
 * g's wait. A late rank must find the others' waits in it ended, not
 * wait for them to answer: so rank 0 creates and maps the object and
 * sends its name to each rank without waiting (point to point, a tag of
 * its own, never matched with a collective that a rank whose call took
 * another way makes on the same communicator); each maps it by that
 * name and counts itself in the head, the last unlinking it; then all
 * wait there until every rank has it, as any step is waited for (the
 * deadline, a rank that gave up). *sp NULL where it cannot be had:
 * rank 0 could not make it (all hear so), or a rank could not map it
 * (its mark in the head, seen by all); the calls are then MPI's, said
 * once a process. */
dcoll_status_t dcoll_shm_make(struct dcoll_group *g, MPI_Comm comm, int me,
                              int k, bool yield, const struct dcoll_coll *c,
                              struct dcoll_outcome *out,
                              struct dcoll_mpi_shm **sp)
{
    static unsigned made_here;
    static bool said;
    *sp = NULL;
    size_t half = dcoll_shm_slot_bytes;
    /* By default a segment stays within 64 MiB however many ranks share
     * the node (DCOLL_SHM_SEGMENT, given, is taken as is). */
    if (!dcoll_shm_slot_given && half > ((size_t)32 << 20) / (size_t)k)
        half = ((size_t)32 << 20) / (size_t)k / 64 * 64;
    if (half < (size_t)k * 256)
        half = (size_t)k * 256;   /* reduce_scatter's chunk: a line a rank */
    size_t bytes = HEAD_BYTES + (size_t)k * FLAG_BYTES +
                   2 * (size_t)k * half;
    struct made m = {.err = 0};
    struct dcoll_watch wt = dcoll_shm_watch(g, c, "MPI_Irecv (the shared "
                                     "segment's name)", out);
    char *base = NULL;
    int fd = -1;
    struct made *sent = NULL;
    dcoll_status_t st = DCOLL_SUCCESS;
    if (me == 0) {
        snprintf(m.name, sizeof(m.name), "/dcoll-%ld-%d-%u", (long)getpid(),
                 g->id, ++made_here);
        errno = 0;
        fd = shm_open(m.name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        /* Reserved, not only sized: a full /dev/shm is ENOSPC here rather
         * than SIGBUS at the first touch. */
        if (fd >= 0 && (errno = posix_fallocate(fd, 0, (off_t)bytes)))
            m.step = 2;
        map_it(&m, fd, bytes, &base);
        if (base)
            atomic_store(head(base, H_ATTACHED), 1);
        else if (fd >= 0)
            shm_unlink(m.name);
        /* Sent and let go, from a copy that lives as long as the
         * segment (left where there is none): whoever is late finds it
         * waiting. */
        if ((sent = malloc(sizeof(*sent))))
            *sent = m;
        for (int r = 1; sent && r < k; r++) {
            MPI_Request rq;
            if (MPI_Isend(sent, (int)sizeof(*sent), MPI_BYTE, r,
                          DCOLL_MPI_SHM_TAG, comm, &rq) == MPI_SUCCESS)
                MPI_Request_free(&rq);
        }
    } else {
        /* On the heap: past the deadline the receive stays posted. */
        struct made *got = malloc(sizeof(*got));
        MPI_Request rq;
        int rc = got ? MPI_Irecv(got, (int)sizeof(*got), MPI_BYTE, 0,
                                 DCOLL_MPI_SHM_TAG, comm, &rq)
                     : MPI_ERR_NO_MEM;
        st = rc == MPI_SUCCESS ? dcoll_mpi_poll(g, &wt, 1, &rq, NULL)
                               : dcoll_mpi_error(rc, wt.call);
        if (st)
            return st;
        m = *got;
        free(got);
        m.name[sizeof(m.name) - 1] = '\0';
        if (!m.err) {
            errno = 0;
            fd = shm_open(m.name, O_RDWR | O_CLOEXEC, 0);
            map_it(&m, fd, bytes, &base);
            /* Mapped whole or not, the head says so to the others. */
            char *h = NULL;
            if (!base && fd >= 0 &&
                (h = mmap(NULL, HEAD_BYTES, PROT_READ | PROT_WRITE,
                          MAP_SHARED, fd, 0)) != MAP_FAILED) {
                atomic_store(head(h, H_BAD), (uint64_t)me + 1);
                munmap(h, HEAD_BYTES);
            }
            if (base && atomic_fetch_add(head(base, H_ATTACHED), 1) + 1 ==
                            (uint64_t)k)
                shm_unlink(m.name);
        }
    }
    if (fd >= 0)
        close(fd);
    struct dcoll_mpi_shm *s = base ? calloc(1, sizeof(*s)) : NULL;
    if (s) {
        s->base = base;
        s->bytes = bytes;
        s->slot = half;
        s->k = k;
        s->me = me;
        s->yield = yield;
        s->seq = c->seq;
        s->sent = sent;
        snprintf(s->name, sizeof(s->name), "%s", me == 0 ? m.name : "");
        /* Every rank has it (or one never will). */
        double quiet = 0;
        for (unsigned spin = 0; !st; spin++) {
            if (atomic_load(head(base, H_BAD)) ||
                atomic_load(head(base, H_ATTACHED)) >= (uint64_t)k)
                break;
            sched_yield();
            if (isfinite(wt.deadline) && spin % 64 == 63)
                st = dcoll_mpi_wait_look(g, &wt, &quiet);
        }
        if (st) {
            /* Its late ranks find this one gone at once. */
            atomic_store(line(s, me, L_LEFT), c->seq);
            *sp = s;
            return st;
        }
    }
    uint64_t bad = base ? atomic_load(head(base, H_BAD)) : 0;
    if (!s || bad) {
        if (!said && (said = true))
            fprintf(stderr, "dcoll: no shared segment for group %d: %s "
                    "(%s); its calls are MPI's own\n", g->id,
                    bad ? "a rank could not map it" : m.step == 1
                    ? "it could not be opened" : m.step == 2
                    ? "it could not be sized" : "it could not be mapped",
                    bad ? "" : strerror(m.err ? m.err : ENOMEM));
        if (base)
            munmap(base, bytes);
        free(s);
        return s || bad || m.err ? DCOLL_SUCCESS
                                 : dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no "
                                               "memory for the shared "
                                               "segment's record", c->fn);
    }
    *sp = s;
    return DCOLL_SUCCESS;
}

/* ---- waits ---- */

/* Before a wait says the others' calls differ or left: a rank the
 * launcher's keeper has fenced (stopped past the lease, then let go)
 * ends itself there, as its timer would in a moment, rather than
 * report the steps the survivors took since (dcoll_death_of polls the
 * notices and checks this rank's own lease). */
static void fenced_first(const struct dcoll_group *g)
{
    if (dcoll_death_of)
        (void)dcoll_death_of(g, NULL, 0);
}

/* Rank r gave up a call at or before this one: this one cannot end,
 * and the segment's steps went apart (out->broken). */
static dcoll_status_t left_before(struct dcoll_group *g,
                                  const struct dcoll_mpi_shm *s, int r,
                                  uint64_t left, const struct dcoll_watch *wt)
{
    fenced_first(g);
    int u = s->members ? s->members[r] : r;
    if (wt->out)
        wt->out->broken = true;
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s: rank %d (world %d) gave up "
                       "collective #%llu on the shared segment (it timed "
                       "out or failed there) before this rank came to it",
                       wt->fn, u, dcoll_world_of(g, u),
                       (unsigned long long)left);
}

/* What of a rank's call (wa, ca) differs from this rank's (wb, cb),
 * for a message: "count 8 (this rank: 4), type ...". */
static void put_differ(char *t, size_t n, uint64_t wa, uint64_t ca,
                       uint64_t wb, uint64_t cb)
{
    size_t at = 0;
    t[0] = 0;
#define PUT(...)                                                            \
    do {                                                                    \
        int w_ = snprintf(t + at, n - at, __VA_ARGS__);                     \
        at += w_ > 0 && (size_t)w_ < n - at ? (size_t)w_ : 0;               \
    } while (0)
#define SEP (at ? ", " : "")
    if ((wa & 0xff) != (wb & 0xff))
        PUT("%s (this rank: %s)", dcoll_kind_name((int)(wa & 0xff)),
            dcoll_kind_name((int)(wb & 0xff)));
    if (ca != cb)
        PUT("%scount %lld (this rank: %lld)", SEP, (long long)ca,
            (long long)cb);
    if ((wa >> 8 & 0xff) != (wb >> 8 & 0xff))
        PUT("%stype %s (this rank: %s)", SEP,
            dcoll_dtype_name((dcoll_dtype_t)(wa >> 8 & 0xff)),
            dcoll_dtype_name((dcoll_dtype_t)(wb >> 8 & 0xff)));
    if ((wa >> 16 & 0xff) != (wb >> 16 & 0xff))
        PUT("%sop %s (this rank: %s)", SEP,
            dcoll_op_name((dcoll_op_t)(wa >> 16 & 0xff)),
            dcoll_op_name((dcoll_op_t)(wb >> 16 & 0xff)));
    if (wa >> 32 != wb >> 32)
        PUT("%sroot %d (this rank: %d)", SEP, (int)(uint32_t)(wa >> 32),
            (int)(uint32_t)(wb >> 32));
#undef SEP
#undef PUT
}

/* Rank r has taken this call's step in another call: the ranks' calls
 * differ, where MPI's would hang or take each other's data. Nothing
 * more of this one moves; it fails on every rank that meets it (each
 * sees the other's step), and the group with it (out->broken). */
static dcoll_status_t differs(struct dcoll_group *g,
                              const struct dcoll_mpi_shm *s, int r,
                              const struct dcoll_watch *wt)
{
    fenced_first(g);
    uint64_t seq = atomic_load_explicit(line(s, r, L_SEQ),
                                        memory_order_relaxed);
    uint64_t what = atomic_load_explicit(line(s, r, L_WHAT),
                                         memory_order_relaxed);
    uint64_t count = atomic_load_explicit(line(s, r, L_COUNT),
                                          memory_order_relaxed);
    int u = s->members ? s->members[r] : r;
    if (wt->out)
        wt->out->broken = true;
    if (seq != s->seq)
        return dcoll_error(DCOLL_ERR_MISMATCH, "%s: rank %d (world %d) "
            "took this call's step of the shared segment in its "
            "collective #%llu (%s), this rank in #%llu (%s): the ranks' "
            "calls differ (one skipped a call, or made another), and "
            "nothing more of it moved", wt->fn, u, dcoll_world_of(g, u),
            (unsigned long long)seq, dcoll_kind_name((int)(what & 0xff)),
            (unsigned long long)s->seq,
            dcoll_kind_name((int)(s->what & 0xff)));
    char how[256];
    put_differ(how, sizeof(how), what, count, s->what, (uint64_t)s->count);
    return dcoll_error(DCOLL_ERR_MISMATCH, "%s: rank %d (world %d) made "
        "it with %s; the ranks' calls must agree, and nothing more of it "
        "moved", wt->fn, u, dcoll_world_of(g, u),
        how[0] ? how : "other arguments");
}

/* Until rank r has taken step v: in this call (a rank whose step got
 * there in another call, which another kind, count, type, op or root
 * makes: the calls differ, and this one fails), or in any (any: a
 * half's reuse, which only counts steps). In return mode within the
 * call's deadline,
 * with deaths and the others' asks looked at as MPI's polled waits do
 * (watch.c); in abort mode the watchdog watches, as it does MPI's
 * blocking calls. A core shared with other ranks is given up between
 * looks. */
static dcoll_status_t step_wait(struct dcoll_group *g,
                                struct dcoll_mpi_shm *s, int r, uint64_t v,
                                bool any, const struct dcoll_watch *wt)
{
    _Atomic uint64_t *f = flag(s, r);
    double quiet = 0;
    for (unsigned spin = 0;; spin++) {
        uint64_t x = atomic_load_explicit(f, memory_order_acquire);
        uint64_t at = x >> SIG_BITS;
        if (at > v || (at == v && (any ||
                                   (x & ((1u << SIG_BITS) - 1)) == s->sig)))
            return DCOLL_SUCCESS;
        if (DCOLL_UNLIKELY(at == v))
            return differs(g, s, r, wt);
        /* Now and then, off the line the step is on. A rank that left
         * after taking this step in another call: the calls differ. */
        if (spin % 64 == 63) {
            uint64_t left = atomic_load_explicit(line(s, r, L_LEFT),
                                                 memory_order_acquire);
            if (DCOLL_UNLIKELY(left && left <= s->seq)) {
                x = atomic_load_explicit(f, memory_order_acquire);
                if (x >> SIG_BITS == v && !any &&
                    (x & ((1u << SIG_BITS) - 1)) != s->sig)
                    return differs(g, s, r, wt);
                return left_before(g, s, r, left, wt);
            }
        }
        if (s->yield || spin >= SPIN_ALONE)
            sched_yield();
        else
            relax();
        dcoll_status_t st;
        if (isfinite(wt->deadline) && spin % 64 == 63 &&
            (st = dcoll_mpi_wait_look(g, wt, &quiet)))
            return st;
    }
}

dcoll_status_t dcoll_shm_wait_for(struct dcoll_group *g,
                                  struct dcoll_mpi_shm *s, int r, uint64_t v,
                                  const struct dcoll_watch *wt)
{
    return step_wait(g, s, r, v, false, wt);
}

/* Until every flag holds v; then this rank knows it (s->passed). */
dcoll_status_t dcoll_shm_wait_all(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                               uint64_t v, const struct dcoll_watch *wt)
{
    for (int r = 0; r < s->k; r++) {
        dcoll_status_t st = r == s->me ? DCOLL_SUCCESS
                                       : step_wait(g, s, r, v, false, wt);
        if (st)
            return st;
    }
    if (v > s->passed)
        s->passed = v;
    return DCOLL_SUCCESS;
}

/* Every rank here. */
dcoll_status_t dcoll_shm_sync(struct dcoll_group *g,
                               struct dcoll_mpi_shm *s,
                               const struct dcoll_watch *wt)
{
    uint64_t e = ++s->syncs;
    post(s, e);
    return dcoll_shm_wait_all(g, s, e, wt);
}

/* Until every flag holds at least v, in whatever call; then this rank
 * knows it (s->passed). */
static dcoll_status_t wait_any(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                               uint64_t v, const struct dcoll_watch *wt)
{
    if (v <= s->passed)
        return DCOLL_SUCCESS;
    for (int r = 0; r < s->k; r++) {
        dcoll_status_t st = r == s->me ? DCOLL_SUCCESS
                                       : step_wait(g, s, r, v, true, wt);
        if (st)
            return st;
    }
    s->passed = v;
    return DCOLL_SUCCESS;
}

/* The next chunk, and its half of every slot free to write: each rank
 * has said it is done reading that half's last chunk (s->done). */
dcoll_status_t dcoll_shm_claim(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                            const struct dcoll_watch *wt, uint64_t *ch)
{
    *ch = s->chunks++;
    return wait_any(g, s, s->done[*ch & 1], wt);
}

dcoll_status_t dcoll_shm_fence(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                               const struct dcoll_watch *wt)
{
    dcoll_status_t st = wait_any(g, s, s->fence, wt);
    if (st)
        return st;
    s->fence = s->fence_next ? s->syncs + 1 : 0;
    s->fence_next = false;
    return DCOLL_SUCCESS;
}
