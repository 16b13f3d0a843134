/* Host collectives through a segment of shared memory, for a group
 * whose ranks are all on one node: all_reduce, reduce, broadcast,
 * all_gather, reduce_scatter and barrier, blocking. Raw MPI on one node
 * moves a few percent of what the memory can (bench/README.md); here a
 * rank copies its input into its slot of the segment once, the ranks
 * reduce with dcoll's own kernels (lib/base/kernels.c) from the slots,
 * and each copies the result out.
 *
 * The segment is made on the group's first call that takes this way
 * (collective, as that call is): rank 0 creates a POSIX shared-memory
 * object, the others map it by name over the control communicator, and
 * it is unlinked once all have it, so nothing stays behind in /dev/shm
 * however the job ends. It is not MPI_Win_allocate_shared's: MPI_Win_free
 * synchronises the window's ranks in both MPIs, which would make
 * dcoll_group_destroy collective and hang survivors of a dead rank;
 * munmap is this rank's alone. MPI_Comm_split_type's node is what the
 * host names say (one host for every member), found without a call.
 *
 * Layout: a flag per rank (its own two cache lines), then two halves of
 * a slot per rank. A chunk takes the half of its number's parity, so a
 * rank writes a half only after a sync that every rank entered once its
 * reads of that half's last chunk were done (each chunk writes before
 * its first sync and reads after it). A sync: a rank stores its count
 * of syncs in its flag and waits until every flag holds at least as
 * much.
 *
 * Every value is reduced once, by one rank, in one order fixed by the
 * count and the group's size (its own slot's value, then the others' in
 * rank order), and copied to the others as it is: every rank gets the
 * same bits, on every run. Which way a call takes, this or MPI's own, is
 * chosen per kind and size: by a tuning table's row, or by a trial of
 * both on the group's first calls of that kind and size (DCOLL_SHM). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bytes.h"
#include "calls.h"

#define FLAG_BYTES 128      /* a flag's own pair of cache lines */
#define HEAD_BYTES 4096     /* the segment's head, a page */
#define SMALL_BYTES 4096    /* up to this, every rank reduces the whole
                               call (one sync) rather than a slice (two) */
#define SLOT_LEAST 4096
#define PIPE_BYTES 32768    /* a rooted call's chunk: the root's part of
                               one overlaps the others' of the next */
#define WHOLE_RANKS 4       /* a reduce on at most this many ranks: the
                               root folds every chunk whole */

int dcoll_mpi_shm_mode = DCOLL_SHM_AUTO;
static size_t slot_bytes = (size_t)4 << 20;   /* a half of a rank's slot */
static bool slot_given;                       /* DCOLL_SHM_SEGMENT set */

struct dcoll_mpi_shm {
    char *base;
    size_t bytes;        /* mapped */
    size_t slot;         /* bytes of a half of a rank's slot */
    int k, me;
    uint64_t syncs;      /* steps this rank has taken: the flag's value
                            at each, alike on every rank */
    uint64_t passed;     /* every flag is known to hold this much */
    uint64_t done[2];    /* each half is free once every flag holds
                            this: every rank has read its last chunk */
    uint64_t chunks;     /* chunks moved: the next one's half */
    uint64_t seq, sig;   /* the call in hand: its number and signature */
    char name[56];       /* rank 0's: unlinked again when freed, if the
                            last rank never came */
    void *sent;          /* rank 0's: the name's message to the others */
    bool yield;          /* more ranks on the node than cores */
};

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
    slot_bytes = (size_t)v[2] * 1024;
    slot_given = z && *z;
    return DCOLL_SUCCESS;
}

/* ---- the segment ---- */

/* A rank's line: its step (the flag), the call it is in (number and
 * signature: kind, count, type, op, root), and the number of a call it
 * gave up (0: none). */
enum { L_FLAG, L_SEQ, L_SIG, L_LEFT };
static inline _Atomic uint64_t *line(const struct dcoll_mpi_shm *s, int r,
                                     int what)
{
    return (_Atomic uint64_t *)(s->base + HEAD_BYTES +
                                (size_t)r * FLAG_BYTES) + what;
}

/* The segment's head: how many ranks have it mapped, and a rank that
 * could not map it whole (plus one; 0: none). */
enum { H_ATTACHED, H_BAD };
static inline _Atomic uint64_t *head(char *base, int what)
{
    return (_Atomic uint64_t *)base + what * 16;
}

static inline _Atomic uint64_t *flag(const struct dcoll_mpi_shm *s, int r)
{
    return line(s, r, L_FLAG);
}

static inline char *slot(const struct dcoll_mpi_shm *s, uint64_t chunk,
                         int r)
{
    return s->base + HEAD_BYTES + (size_t)s->k * FLAG_BYTES +
           ((size_t)(chunk & 1) * (size_t)s->k + (size_t)r) * s->slot;
}

void dcoll_mpi_nodes_free(struct dcoll_mpi_nodes *nd);

void dcoll_mpi_shm_free(struct dcoll_mpi_comm *mc)
{
    struct dcoll_mpi_shm *s = mc->shm;
    if (s) {
        munmap(s->base, s->bytes);
        if (s->name[0])
            shm_unlink(s->name);
        free(s->sent);
    }
    free(s);
    free(mc->trial);
    dcoll_mpi_nodes_free(mc->nodes);
    mc->shm = NULL;
    mc->trial = NULL;
    mc->nodes = NULL;
}

/* Whether every member of g is on this rank's host (by the names
 * dcoll_init gathered, alike on every rank), with two or more members. */
static bool one_node(const struct dcoll_group *g)
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
static bool crowded(const struct dcoll_group *g)
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
static struct dcoll_watch watch_of(const struct dcoll_group *g,
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
static dcoll_status_t swap(struct dcoll_group *g, MPI_Comm comm,
                           const void *mine, void *all, size_t len,
                           const struct dcoll_coll *c,
                           struct dcoll_outcome *out)
{
    int me = 0, k = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &k);
    struct dcoll_watch wt = watch_of(g, c, "MPI_Isend/MPI_Irecv (the "
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
static dcoll_status_t make_on(struct dcoll_group *g, MPI_Comm comm, int me,
                              int k, bool yield, const struct dcoll_coll *c,
                              struct dcoll_outcome *out,
                              struct dcoll_mpi_shm **sp)
{
    static unsigned made_here;
    static bool said;
    *sp = NULL;
    size_t half = slot_bytes;
    /* By default a segment stays within 64 MiB however many ranks share
     * the node (DCOLL_SHM_SEGMENT, given, is taken as is). */
    if (!slot_given && half > ((size_t)32 << 20) / (size_t)k)
        half = ((size_t)32 << 20) / (size_t)k / 64 * 64;
    if (half < (size_t)k * 256)
        half = (size_t)k * 256;   /* reduce_scatter's chunk: a line a rank */
    size_t bytes = HEAD_BYTES + (size_t)k * FLAG_BYTES +
                   2 * (size_t)k * half;
    struct made m = {.err = 0};
    struct dcoll_watch wt = watch_of(g, c, "MPI_Irecv (the shared "
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

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void post(struct dcoll_mpi_shm *s, uint64_t v)
{
    atomic_store_explicit(flag(s, s->me), v, memory_order_release);
}

/* Until rank r's flag holds v: in return mode within the call's
 * deadline, with deaths and the others' asks looked at as MPI's polled
 * waits do (watch.c); in abort mode the watchdog watches, as it does
 * MPI's blocking calls. A core shared with other ranks is given up
 * between looks. */
/* Rank r gave up a call at or before this one: this one cannot end. */
static dcoll_status_t left_before(struct dcoll_group *g,
                                  const struct dcoll_mpi_shm *s, int r,
                                  uint64_t left, const struct dcoll_watch *wt)
{
    (void)s;
    return dcoll_error(DCOLL_ERR_TIMEOUT, "%s on group %d failed "
                       "(collective #%llu): its rank %d on this node gave "
                       "up collective #%llu (it timed out or failed there) "
                       "before this rank came to it. The group is unusable "
                       "from now on; other groups still work", wt->fn,
                       g->id, (unsigned long long)wt->seq, r,
                       (unsigned long long)left);
}

/* Until rank r's flag holds v in this call (a rank whose flag got there
 * in an earlier call, or in another call of this number, has taken other
 * steps: it is waited for as one that has not come, and the call hangs
 * as MPI's would, to its deadline or the watchdog's report): in return
 * mode within the call's deadline, with deaths and the others' asks
 * looked at as MPI's polled waits do (watch.c); in abort mode the
 * watchdog watches, as it does MPI's blocking calls. A core shared with
 * other ranks is given up between looks. */
static dcoll_status_t wait_for(struct dcoll_group *g,
                               struct dcoll_mpi_shm *s, int r, uint64_t v,
                               const struct dcoll_watch *wt)
{
    _Atomic uint64_t *f = flag(s, r);
    double quiet = 0;
    for (unsigned spin = 0;; spin++) {
        if (atomic_load_explicit(f, memory_order_acquire) >= v) {
            uint64_t q = atomic_load_explicit(line(s, r, L_SEQ),
                                              memory_order_relaxed);
            if (q > s->seq ||
                (q == s->seq && atomic_load_explicit(line(s, r, L_SIG),
                                                     memory_order_relaxed) ==
                                    s->sig))
                return DCOLL_SUCCESS;
        }
        uint64_t left = atomic_load_explicit(line(s, r, L_LEFT),
                                             memory_order_relaxed);
        if (DCOLL_UNLIKELY(left && left <= s->seq))
            return left_before(g, s, r, left, wt);
        if (s->yield || spin >= 4096)
            sched_yield();
        else
            relax();
        dcoll_status_t st;
        if (isfinite(wt->deadline) && spin % 64 == 63 &&
            (st = dcoll_mpi_wait_look(g, wt, &quiet)))
            return st;
    }
}

/* Until every flag holds v; then this rank knows it (s->passed). */
static dcoll_status_t wait_all(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                               uint64_t v, const struct dcoll_watch *wt)
{
    for (int r = 0; r < s->k; r++) {
        dcoll_status_t st = r == s->me ? DCOLL_SUCCESS
                                       : wait_for(g, s, r, v, wt);
        if (st)
            return st;
    }
    if (v > s->passed)
        s->passed = v;
    return DCOLL_SUCCESS;
}

/* Every rank here. */
static dcoll_status_t sync_all(struct dcoll_group *g,
                               struct dcoll_mpi_shm *s,
                               const struct dcoll_watch *wt)
{
    uint64_t e = ++s->syncs;
    post(s, e);
    return wait_all(g, s, e, wt);
}

/* The next chunk, and its half of every slot free to write: each rank
 * has said it is done reading that half's last chunk (s->done). */
static dcoll_status_t claim(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                            const struct dcoll_watch *wt, uint64_t *ch)
{
    *ch = s->chunks++;
    uint64_t need = s->done[*ch & 1];
    return need <= s->passed ? DCOLL_SUCCESS : wait_all(g, s, need, wt);
}

/* A chunk whose reads end before this rank's next post: that post says
 * so. */
static inline void read_by_next(struct dcoll_mpi_shm *s, uint64_t ch)
{
    s->done[ch & 1] = s->syncs + 1;
}

/* ---- the kinds ---- */

/* Elements of slice j of n over k ranks, each a whole number of cache
 * lines but the last (q elements a line, or as many as make one). */
static void slice(int64_t n, int k, size_t esz, int j, int64_t *lo,
                  int64_t *len)
{
    int64_t q = 64 % esz == 0 ? 64 / (int64_t)esz : 64;
    int64_t per = (n + k - 1) / k;
    per = (per + q - 1) / q * q;
    int64_t a = (int64_t)j * per < n ? (int64_t)j * per : n;
    int64_t b = a + per < n ? a + per : n;
    *lo = a;
    *len = b - a;
}

/* io (rank own's value) folded with the others' at the same place, in
 * rank order. */
static void fold_all(const struct dcoll_mpi_shm *s, uint64_t ch, char *io,
                     size_t at, int own, int64_t n,
                     const struct dcoll_coll *c)
{
    for (int r = 0; r < s->k; r++)
        if (r != own)
            dcoll_fold(io, slot(s, ch, r) + at, n, c->dtype, c->op);
}

/* Elements of a pipelined chunk: PIPE_BYTES, or the slot where less. */
static int64_t pipe_elems(const struct dcoll_mpi_shm *s, size_t esz)
{
    size_t b = s->slot < PIPE_BYTES ? s->slot : PIPE_BYTES;
    return (int64_t)(b / esz);
}

#define BLOCK_BYTES 4096    /* a fold's step: its operand stays in L1 */

/* The whole call reduced by each rank that wants the result (root < 0:
 * every rank), chunk by chunk of m elements: every rank copies its
 * input into its slot and says so; a rank that wants it then takes
 * rank 0's value with the others' folded in, in rank order, block by
 * block, and says it is done. A root waits for the others, they never
 * wait for the root but to reuse a half, so its folds of one chunk
 * overlap their copies of the next. */
static dcoll_status_t whole(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                            const struct dcoll_coll *c,
                            const struct dcoll_watch *wt, int root,
                            int64_t m)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    bool mine = root < 0 || s->me == root;
    const char *in = c->in_place && mine ? c->recvbuf : c->sendbuf;
    char *out = mine ? c->recvbuf : NULL;
    int64_t blk = BLOCK_BYTES / (int64_t)esz > 0 ? BLOCK_BYTES / (int64_t)esz
                                                 : 1;
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        uint64_t ch;
        dcoll_status_t st = claim(g, s, wt, &ch);
        if (st)
            return st;
        memcpy(slot(s, ch, s->me), in + (size_t)off * esz, (size_t)n * esz);
        uint64_t e = ++s->syncs;
        if (root >= 0) {
            /* The root's post after its reads frees the half. */
            if (!mine) {
                post(s, e);
                s->done[ch & 1] = e;
                continue;
            }
        } else {
            post(s, e);
        }
        if ((st = wait_all(g, s, e, wt)))
            return st;
        for (int64_t b = 0; b < n; b += blk) {
            int64_t bn = n - b < blk ? n - b : blk;
            char *io = out + (size_t)(off + b) * esz;
            memcpy(io, slot(s, ch, 0) + (size_t)b * esz, (size_t)bn * esz);
            fold_all(s, ch, io, (size_t)b * esz, 0, bn, c);
            if (c->op == DCOLL_AVG)
                dcoll_divide(io, bn, c->dtype, s->k);
        }
        if (root >= 0) {
            post(s, e);
            s->done[ch & 1] = e;
        } else {
            read_by_next(s, ch);
        }
    }
    return DCOLL_SUCCESS;
}

/* all_reduce (root < 0) and reduce. */
static dcoll_status_t reduce(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                             const struct dcoll_coll *c,
                             const struct dcoll_watch *wt, int root)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    bool mine = root < 0 || s->me == root;
    const char *in = c->in_place && mine ? c->recvbuf : c->sendbuf;
    char *out = mine ? c->recvbuf : NULL;
    int avg = c->op == DCOLL_AVG ? s->k : 0;
    int64_t m = (int64_t)(s->slot / esz);
    dcoll_status_t st;
    /* Small calls, and a reduce on a few ranks, whole: one step a chunk
     * rather than two, and a root's folds overlap the others' copies. */
    if ((size_t)c->count * esz <= SMALL_BYTES)
        return whole(g, s, c, wt, root, c->count);
    if (root >= 0 && s->k <= WHOLE_RANKS)
        return whole(g, s, c, wt, root, pipe_elems(s, esz));
    /* Each chunk: the slices the others reduce into this rank's slot;
     * then this rank's own slice, block by block while it is in L1: its
     * input, the others' folded in, the result into the slot for the
     * others and into the output; then the others' slices out. */
    int64_t blk = BLOCK_BYTES / (int64_t)esz > 0 ? BLOCK_BYTES / (int64_t)esz
                                                 : 1;
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        uint64_t ch;
        if ((st = claim(g, s, wt, &ch)))
            return st;
        int64_t lo, len;
        slice(n, s->k, esz, s->me, &lo, &len);
        const char *src = in + (size_t)off * esz;
        char *mys = slot(s, ch, s->me);
        size_t end = (size_t)(lo + len) * esz;
        memcpy(mys, src, (size_t)lo * esz);
        memcpy(mys + end, src + end, (size_t)n * esz - end);
        if ((st = sync_all(g, s, wt)))
            return st;
        for (int64_t b = lo; b < lo + len; b += blk) {
            int64_t bn = lo + len - b < blk ? lo + len - b : blk;
            char *io = mys + (size_t)b * esz;
            memcpy(io, src + (size_t)b * esz, (size_t)bn * esz);
            fold_all(s, ch, io, (size_t)b * esz, s->me, bn, c);
            if (avg)
                dcoll_divide(io, bn, c->dtype, avg);
            if (mine)
                memcpy(out + (size_t)(off + b) * esz, io, (size_t)bn * esz);
        }
        if ((st = sync_all(g, s, wt)))
            return st;
        for (int j = 0; mine && j < s->k; j++) {
            slice(n, s->k, esz, j, &lo, &len);
            if (j != s->me)
                memcpy(out + (size_t)(off + lo) * esz,
                       slot(s, ch, j) + (size_t)lo * esz, (size_t)len * esz);
        }
        read_by_next(s, ch);
    }
    return DCOLL_SUCCESS;
}

/* The root copies a chunk in and says so; the others copy it out and
 * say they are done with it. Only the root's reuse of a half waits for
 * them, so its copy of one chunk overlaps theirs of the last. */
static dcoll_status_t broadcast(struct dcoll_group *g,
                                struct dcoll_mpi_shm *s,
                                const struct dcoll_coll *c,
                                const struct dcoll_watch *wt)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t m = pipe_elems(s, esz);
    char *buf = c->recvbuf;
    bool root = s->me == c->root;
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        /* Only the root writes. */
        uint64_t ch = s->chunks;
        dcoll_status_t st = root ? claim(g, s, wt, &ch) : DCOLL_SUCCESS;
        if (st)
            return st;
        if (!root)
            s->chunks++;
        size_t at = (size_t)off * esz, b = (size_t)n * esz;
        uint64_t e = ++s->syncs;
        if (root) {
            memcpy(slot(s, ch, c->root), buf + at, b);
        } else {
            if ((st = wait_for(g, s, c->root, e, wt)))
                return st;
            memcpy(buf + at, slot(s, ch, c->root), b);
        }
        post(s, e);
        s->done[ch & 1] = e;
    }
    return DCOLL_SUCCESS;
}

static dcoll_status_t all_gather(struct dcoll_group *g,
                                 struct dcoll_mpi_shm *s,
                                 const struct dcoll_coll *c,
                                 const struct dcoll_watch *wt)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t m = (int64_t)(s->slot / esz);
    size_t block = (size_t)c->count * esz;
    char *out = c->recvbuf;
    const char *in = c->in_place ? out + block * (size_t)s->me
                                 : c->sendbuf;
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        uint64_t ch;
        dcoll_status_t st = claim(g, s, wt, &ch);
        if (st)
            return st;
        size_t at = (size_t)off * esz, b = (size_t)n * esz;
        memcpy(slot(s, ch, s->me), in + at, b);
        /* This rank's own block while the others copy theirs. */
        if (!c->in_place)
            memcpy(out + block * (size_t)s->me + at, in + at, b);
        if ((st = sync_all(g, s, wt)))
            return st;
        for (int r = 0; r < s->k; r++)
            if (r != s->me)
                memcpy(out + block * (size_t)r + at, slot(s, ch, r), b);
        read_by_next(s, ch);
    }
    return DCOLL_SUCCESS;
}

static dcoll_status_t reduce_scatter(struct dcoll_group *g,
                                     struct dcoll_mpi_shm *s,
                                     const struct dcoll_coll *c,
                                     const struct dcoll_watch *wt)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t m = (int64_t)(s->slot / esz / (size_t)s->k);
    const char *in = c->sendbuf;
    char *out = c->recvbuf;
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        uint64_t ch;
        dcoll_status_t st = claim(g, s, wt, &ch);
        if (st)
            return st;
        size_t b = (size_t)n * esz;
        for (int j = 0; j < s->k; j++)
            memcpy(slot(s, ch, s->me) + b * (size_t)j,
                   in + ((size_t)j * (size_t)c->count + (size_t)off) * esz,
                   b);
        if ((st = sync_all(g, s, wt)))
            return st;
        /* In place, this chunk of the result lies where this chunk of
         * an input block was, already in the slot. */
        char *io = out + (size_t)off * esz;
        size_t mine = b * (size_t)s->me;
        memcpy(io, slot(s, ch, 0) + mine, b);
        fold_all(s, ch, io, mine, 0, n, c);
        if (c->op == DCOLL_AVG)
            dcoll_divide(io, n, c->dtype, s->k);
        read_by_next(s, ch);
    }
    return DCOLL_SUCCESS;
}

/* ---- across nodes: each node's segment, MPI's call among leaders ---- */

#define NODE_KINDS                                                          \
    ((1u << DCOLL_COLL_ALL_REDUCE) | (1u << DCOLL_COLL_BROADCAST) |         \
     (1u << DCOLL_COLL_BARRIER))

/* Whether g's members are on several hosts, some holding two or more
 * (by the host names, alike on every rank). */
static bool nodes_shared(const struct dcoll_group *g)
{
    bool two = false, apart = false;
    const char *first = dcoll_host_of(dcoll_world_of(g, 0));
    for (int r = 0; r < g->size; r++) {
        const char *h = dcoll_host_of(dcoll_world_of(g, r));
        if (!h)
            return false;
        apart |= strcmp(h, first) != 0;
        for (int q = 0; q < r && !two; q++)
            two = !strcmp(h, dcoll_host_of(dcoll_world_of(g, q)));
    }
    return two && apart;
}

struct dcoll_mpi_nodes {
    MPI_Comm node;        /* this rank's node's members, by group rank */
    MPI_Comm leaders;     /* each node's first member; NULL elsewhere */
    int *node_of;         /* by group rank: its node (by first member) */
    int *local_of;        /*   and its place there */
    int lrank, lsize;
    struct dcoll_mpi_shm *seg;   /* the node's; NULL where it has one rank */
};

void dcoll_mpi_nodes_free(struct dcoll_mpi_nodes *nd)
{
    if (!nd)
        return;
    if (nd->seg) {
        munmap(nd->seg->base, nd->seg->bytes);
        if (nd->seg->name[0])
            shm_unlink(nd->seg->name);
        free(nd->seg->sent);
    }
    free(nd->seg);
    if (nd->node != MPI_COMM_NULL)
        MPI_Comm_free(&nd->node);
    if (nd->leaders != MPI_COMM_NULL)
        MPI_Comm_free(&nd->leaders);
    free(nd->node_of);
    free(nd);
}

/* g's nodes, their communicators and segments (collective over g,
 * within call c's wait). *ok false where a node could not make its
 * segment: then no node uses one, alike on every rank. */
static dcoll_status_t nodes_make(struct dcoll_group *g,
                                 struct dcoll_mpi_comm *mc,
                                 const struct dcoll_coll *c,
                                 struct dcoll_outcome *out, bool *ok)
{
    int k = g->size;
    *ok = false;
    struct dcoll_mpi_nodes *nd = calloc(1, sizeof(*nd));
    int *v = malloc(sizeof(int) * 2 * (size_t)k);
    char *here = malloc((size_t)k);
    if (!nd || !v || !here) {
        free(nd);
        free(v);
        free(here);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "group's nodes", c->fn);
    }
    nd->node = nd->leaders = MPI_COMM_NULL;
    nd->node_of = v;
    nd->local_of = v + k;
    for (int r = 0; r < k; r++) {
        const char *h = dcoll_host_of(dcoll_world_of(g, r));
        int q = 0;
        while (q < r && strcmp(h, dcoll_host_of(dcoll_world_of(g, q))))
            q++;
        v[r] = q == r ? r : v[q];
        nd->local_of[r] = 0;
        for (int p = 0; p < r; p++)
            nd->local_of[r] += v[p] == v[r];
    }
    nd->lrank = nd->local_of[g->rank];
    /* Every member here within the deadline first: the splits that
     * follow have none. */
    char one = 1;
    dcoll_status_t st = swap(g, mc->ctl, &one, here, 1, c, out);
    /* Past a failed swap a late rank's part may still land in here:
     * left to it. */
    bool lost = st != DCOLL_SUCCESS;
    int rc = MPI_SUCCESS;
    if (!st)
        rc = MPI_Comm_split(mc->ctl, v[g->rank], g->rank, &nd->node);
    if (!st && rc == MPI_SUCCESS)
        rc = MPI_Comm_split(mc->ctl, nd->lrank == 0 ? 0 : MPI_UNDEFINED,
                            g->rank, &nd->leaders);
    if (!st && rc != MPI_SUCCESS)
        st = dcoll_mpi_error(rc, "MPI_Comm_split (the group's nodes)");
    if (!st)
        MPI_Comm_size(nd->node, &nd->lsize);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    bool busy = dcoll_hosts_sharing(dcoll_world_of(g, g->rank)) >
                (cores > 0 ? cores : 1);
    if (!st && nd->lsize > 1)
        st = make_on(g, nd->node, nd->lrank, nd->lsize, busy, c, out,
                     &nd->seg);
    /* Every node has its segment, or none takes the way. */
    here[0] = 0;
    char mine = (char)(nd->lsize == 1 || nd->seg);
    if (!st && (st = swap(g, mc->ctl, &mine, here, 1, c, out)))
        lost = true;
    bool all = !st;
    for (int r = 0; all && r < k; r++)
        all = here[r];
    if (!lost)
        free(here);
    if (st || !all) {
        dcoll_mpi_nodes_free(nd);
        return st;
    }
    mc->nodes = nd;
    *ok = true;
    return DCOLL_SUCCESS;
}

/* MPI's nonblocking call among the leaders, waited for as c's. */
static dcoll_status_t leaders_wait(struct dcoll_group *g, int rc,
                                   MPI_Request *rq, const char *call,
                                   const struct dcoll_watch *wt)
{
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, call);
    struct dcoll_watch w = *wt;
    w.call = call;
    return dcoll_mpi_poll(g, &w, 1, rq, NULL);
}

/* c across the nodes: all_reduce reduces on each node to its first
 * member, the leaders all_reduce by MPI's call, and each node's leader
 * broadcasts to its node; broadcast goes through the root's node, the
 * leaders, then the others'; a barrier is each node's, the leaders',
 * and each node's again. Every rank gets the same bits: a value is
 * reduced once on its node, once among the leaders (MPI's own order),
 * and copied from there. */
static dcoll_status_t nodes_run(struct dcoll_group *g,
                                struct dcoll_mpi_nodes *nd,
                                const struct dcoll_coll *c,
                                const struct dcoll_watch *wt)
{
    struct dcoll_mpi_shm *s = nd->seg;
    struct dcoll_coll lc = *c;
    MPI_Request rq;
    dcoll_status_t st = DCOLL_SUCCESS;
    bool lead = nd->lrank == 0;
    int n = (int)c->count;
    if (c->kind == DCOLL_COLL_BARRIER) {
        if (s && (st = sync_all(g, s, wt)))
            return st;
        if (lead && (st = leaders_wait(g, MPI_Ibarrier(nd->leaders, &rq),
                                       &rq, "MPI_Ibarrier (the nodes' "
                                       "leaders)", wt)))
            return st;
        return s ? sync_all(g, s, wt) : DCOLL_SUCCESS;
    }
    MPI_Datatype t = dcoll_mpi_type(c);
    if (c->kind == DCOLL_COLL_BROADCAST) {
        int rn = nd->node_of[c->root];
        bool rooted = nd->node_of[g->rank] == rn;
        lc.root = nd->local_of[c->root];
        if (rooted && s && (st = broadcast(g, s, &lc, wt)))
            return st;
        /* The leaders' ranks follow their nodes' first members. */
        int at = 0;
        for (int r = 0; r < rn; r++)
            at += nd->node_of[r] == r;
        if (lead && (st = leaders_wait(g, MPI_Ibcast(c->recvbuf, n, t, at,
                                                     nd->leaders, &rq),
                                       &rq, "MPI_Ibcast (the nodes' "
                                       "leaders)", wt)))
            return st;
        lc.root = 0;
        return !rooted && s ? broadcast(g, s, &lc, wt) : DCOLL_SUCCESS;
    }
    /* all_reduce; AVG sums, and the leaders divide once. */
    size_t esz = dcoll_dtype_sizes[c->dtype];
    dcoll_op_t op = c->op == DCOLL_AVG ? DCOLL_SUM : c->op;
    lc.kind = DCOLL_COLL_REDUCE;
    lc.op = op;
    lc.root = 0;
    if (s)
        st = reduce(g, s, &lc, wt, 0);
    else if (!c->in_place)
        memcpy(c->recvbuf, c->sendbuf, (size_t)n * esz);
    if (!st && lead) {
        st = leaders_wait(g, MPI_Iallreduce(MPI_IN_PLACE, c->recvbuf, n, t,
                                            dcoll_mpi_op(c->dtype, op),
                                            nd->leaders, &rq),
                          &rq, "MPI_Iallreduce (the nodes' leaders)", wt);
        if (!st && c->op == DCOLL_AVG)
            dcoll_divide(c->recvbuf, n, c->dtype, g->size);
    }
    if (st || !s)
        return st;
    lc.kind = DCOLL_COLL_BROADCAST;
    return broadcast(g, s, &lc, wt);
}

/* Call c begins on segment s: its number and signature on this rank's
 * line, seen by the others with its first step. */
static void begin(struct dcoll_mpi_shm *s, const struct dcoll_coll *c)
{
    if (!s)
        return;
    s->seq = c->seq;
    s->sig = ((uint64_t)c->count * UINT64_C(0x9E3779B97F4A7C15)) ^
             ((uint64_t)c->kind | (uint64_t)c->dtype << 8 |
              (uint64_t)c->op << 16 | (uint64_t)(uint32_t)c->root << 32);
    atomic_store_explicit(line(s, s->me, L_SEQ), s->seq,
                          memory_order_relaxed);
    atomic_store_explicit(line(s, s->me, L_SIG), s->sig,
                          memory_order_relaxed);
}

/* A call that failed here: the others' waits in it, and a late rank's,
 * end at once rather than at their deadlines. */
static dcoll_status_t ended(struct dcoll_mpi_shm *s, dcoll_status_t st)
{
    if (st && s)
        atomic_store_explicit(line(s, s->me, L_LEFT), s->seq,
                              memory_order_release);
    return st;
}

/* Run c (its root a rank of s) through segment s. */
static dcoll_status_t run_on(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                             const struct dcoll_coll *c,
                             const struct dcoll_watch *wt)
{
    switch (c->kind) {
    case DCOLL_COLL_ALL_REDUCE: return reduce(g, s, c, wt, -1);
    case DCOLL_COLL_REDUCE: return reduce(g, s, c, wt, c->root);
    case DCOLL_COLL_BROADCAST: return broadcast(g, s, c, wt);
    case DCOLL_COLL_ALL_GATHER: return all_gather(g, s, c, wt);
    case DCOLL_COLL_REDUCE_SCATTER: return reduce_scatter(g, s, c, wt);
    default: return sync_all(g, s, wt);
    }
}

dcoll_status_t dcoll_mpi_shm_run(struct dcoll_group *g,
                                 const struct dcoll_coll *c,
                                 struct dcoll_outcome *out)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    dcoll_status_t st;
    if (mc->shm_on == 3) {
        bool ok = true;
        if (!mc->nodes && (st = nodes_make(g, mc, c, out, &ok)))
            return st;
        if (!ok) {
            mc->shm_on = -1;   /* alike on every rank */
            return DCOLL_DECLINED;
        }
        struct dcoll_watch wt = watch_of(
            g, c, "a wait on the node's shared segment (dcoll's own "
            "algorithm)", out);
        begin(mc->nodes->seg, c);
        return ended(mc->nodes->seg, nodes_run(g, mc->nodes, c, &wt));
    }
    if (!mc->shm) {
        if ((st = make_on(g, mc->ctl, g->rank, g->size, mc->shm_on == 2, c,
                          out, &mc->shm)))
            return st;
        if (!mc->shm) {
            mc->shm_on = -1;   /* alike on every rank */
            return DCOLL_DECLINED;
        }
    }
    struct dcoll_watch wt = watch_of(
        g, c, "a wait on the shared segment (dcoll's own algorithm)", out);
    begin(mc->shm, c);
    return ended(mc->shm, run_on(g, mc->shm, c, &wt));
}

/* ---- the choice: a table's row, the rules, or a trial ---- */

/* Across nodes (all_reduce, broadcast, barrier): where it was measured
 * faster than MPI's own call over the network (bench/README.md). */
static bool ruled_across(const struct dcoll_coll *c, int64_t bytes)
{
    (void)bytes;
    return c->kind == DCOLL_COLL_ALL_REDUCE ||
           c->kind == DCOLL_COLL_BARRIER ||
           c->kind == DCOLL_COLL_BROADCAST;
}

/* Where the segment is faster than MPI's own call, by kind and bytes a
 * rank (from, to; to -1: no end), measured on 2 ranks (one a core) and
 * 4 (two a core, the waits yielding) with dcoll-perf -S against each
 * MPI's call as Debian ships it (bench/README.md, "Host collectives
 * through shared memory"). Elsewhere MPI's call stays: its broadcast,
 * gather and reduce copy once from the root's buffer (CMA), which two
 * copies through the segment do not beat at middle sizes. The rule is
 * a function of the kind, the size and the node alone, so every rank
 * and every run takes the same way and gets the same bits. */
struct rule {
    enum dcoll_coll_kind kind;
    int64_t from, to;
};
#define ANY(k) {k, 0, -1}
#ifdef MPICH
static const struct rule one_a_core[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), ANY(DCOLL_COLL_REDUCE),
    {DCOLL_COLL_BROADCAST, 0, 2048}, {DCOLL_COLL_ALL_GATHER, 0, 131072},
};
static const struct rule shared_cores[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), ANY(DCOLL_COLL_REDUCE),
    ANY(DCOLL_COLL_ALL_GATHER), {DCOLL_COLL_BROADCAST, 32768, -1},
};
#else
static const struct rule one_a_core[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), {DCOLL_COLL_BROADCAST, 0, 4096},
    {DCOLL_COLL_REDUCE, 0, 4096}, {DCOLL_COLL_ALL_GATHER, 0, 16384},
};
static const struct rule shared_cores[] = {
    ANY(DCOLL_COLL_ALL_REDUCE), ANY(DCOLL_COLL_REDUCE_SCATTER),
    ANY(DCOLL_COLL_BARRIER), ANY(DCOLL_COLL_ALL_GATHER),
    {DCOLL_COLL_BROADCAST, 512, -1}, {DCOLL_COLL_REDUCE, 512, -1},
};
#endif

static bool ruled(const struct dcoll_mpi_comm *mc, const struct dcoll_coll *c,
                  int64_t bytes)
{
    bool busy = mc->shm_on == 2;
    const struct rule *r = busy ? shared_cores : one_a_core;
    size_t n = busy ? sizeof(shared_cores) / sizeof(*r)
                    : sizeof(one_a_core) / sizeof(*r);
    for (size_t i = 0; i < n; i++)
        if (r[i].kind == c->kind && bytes >= r[i].from &&
            (r[i].to < 0 || bytes <= r[i].to))
            return true;
    return false;
}

#define TRIAL 5               /* timed calls of each way */
#define BUCKETS 48            /* by log2 of a rank's bytes */

struct dcoll_mpi_shm_trial {
    signed char way;          /* -1: trying; 0: MPI's; 1: this */
    unsigned char tries;
    float t[2][TRIAL];
};

static int kind_slot(enum dcoll_coll_kind k)
{
    switch (k) {
    case DCOLL_COLL_ALL_REDUCE: return 0;
    case DCOLL_COLL_REDUCE: return 1;
    case DCOLL_COLL_BROADCAST: return 2;
    case DCOLL_COLL_ALL_GATHER: return 3;
    case DCOLL_COLL_REDUCE_SCATTER: return 4;
    default: return 5;
    }
}

static int bucket(int64_t bytes)
{
    int b = 0;
    while (b < BUCKETS - 1 && bytes > 1)
        bytes >>= 1, b++;
    return b;
}

int dcoll_mpi_shm_pick(struct dcoll_group *g, const struct dcoll_coll *c,
                       struct dcoll_mpi_shm_trial **timed)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    *timed = NULL;
    if (!mc->shm_on)
        mc->shm_on = dcoll_mpi_shm_mode == DCOLL_SHM_NEVER ? -1
                     : one_node(g) ? (crowded(g) ? 2 : 1)
                     : nodes_shared(g) ? 3 : -1;
    if (mc->shm_on < 0 || c->layout || c->nbh ||
        (c->count == 0 && c->kind != DCOLL_COLL_BARRIER))
        return 0;
    /* Across nodes: all_reduce, broadcast and barrier of MPI's counts. */
    bool across = mc->shm_on == 3;
    if (across && (c->count > INT_MAX ||
                   !((NODE_KINDS >> c->kind) & 1)))
        return 0;
    if (dcoll_mpi_shm_mode == DCOLL_SHM_ALWAYS)
        return 1;
    bool found = false;
    enum dcoll_way w = DCOLL_WAY_MPI;
    if (dcoll_mpi_tuning && c->kind != DCOLL_COLL_BARRIER)
        w = dcoll_mpi_tuned(g, c, &found);
    if (found)
        return w == DCOLL_WAY_SHM ? 2 : 0;
    int64_t bytes = c->count * (int64_t)dcoll_dtype_sizes[c->dtype];
    if (dcoll_mpi_shm_mode == DCOLL_SHM_AUTO || across)
        return across ? ruled_across(c, bytes) : ruled(mc, c, bytes);
    if (!mc->trial) {
        mc->trial = calloc(6 * BUCKETS, sizeof(*mc->trial));
        if (!mc->trial)
            return 0;   /* alike nowhere: a rank without room waits on */
        for (int i = 0; i < 6 * BUCKETS; i++)
            mc->trial[i].way = -1;
    }
    struct dcoll_mpi_shm_trial *t =
        &mc->trial[kind_slot(c->kind) * BUCKETS + bucket(bytes)];
    if (t->way >= 0)
        return t->way;
    /* Tries 0 and 1 warm each way up (the segment is made on the
     * first); then TRIAL calls of MPI's, then TRIAL of this, in runs,
     * so that neither is charged with what the other left behind. */
    int n = t->tries;
    *timed = t;
    return n == 1 || n >= 2 + TRIAL;
}

bool dcoll_mpi_shm_takes(struct dcoll_group *g, const struct dcoll_coll *c)
{
    if (!((DCOLL_MPI_SHM_KINDS >> c->kind) & 1))
        return false;
    struct dcoll_mpi_shm_trial *t;
    int way = dcoll_mpi_shm_pick(g, c, &t);
    /* A trial's starts take part in it. */
    return way != 0 || t != NULL;
}

static float median(float *v)
{
    for (int i = 1; i < TRIAL; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            float x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[TRIAL / 2];
}

dcoll_status_t dcoll_mpi_shm_timed(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_outcome *out,
                                   struct dcoll_mpi_shm_trial *t, double t0,
                                   dcoll_status_t st)
{
    if (st)
        return st;
    int n = t->tries++ - 2;
    if (n < 0)
        return DCOLL_SUCCESS;
    t->t[n / TRIAL][n % TRIAL] = (float)(dcoll_now() - t0);
    if (n + 1 < 2 * TRIAL)
        return DCOLL_SUCCESS;
    /* The slowest rank's medians decide, alike on every rank; this way
     * must be 5% faster to be kept. A group whose segment could not be
     * made took MPI's calls in both runs. */
    float mine[2] = {median(t->t[0]), median(t->t[1])};
    float *all = malloc(sizeof(mine) * (size_t)g->size);
    if (!all)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for the "
                           "trial's times", c->fn);
    if ((st = dcoll_mpi_exchange(g, mine, all, sizeof(mine), c, out)))
        return st;   /* all is left to a late rank's part */
    float most[2] = {0, 0};
    for (int r = 0; r < g->size; r++)
        for (int w = 0; w < 2; w++)
            most[w] = all[2 * r + w] > most[w] ? all[2 * r + w] : most[w];
    free(all);
    t->way = dcoll_mpi_of(g)->shm && most[1] < 0.95f * most[0];
    return DCOLL_SUCCESS;
}

const char *dcoll_mpi_shm_rule(void)
{
    static const char *const says[] = {
        "host calls of a group on one node take the shared segment by a "
        "tuning table's row, else by the kinds and sizes where it was "
        "measured faster (DCOLL_SHM=auto)",
        "no shared segment (DCOLL_SHM=never)",
        "host calls of a group on one node take the shared segment "
        "(DCOLL_SHM=always)",
        "host calls of a group on one node take the shared segment by a "
        "tuning table's row, else where a trial on the group's first calls "
        "of each kind and size finds it faster (DCOLL_SHM=trial)"};
    return says[dcoll_mpi_shm_mode];
}
