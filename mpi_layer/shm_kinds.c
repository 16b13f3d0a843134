/* Each kind's steps through a segment (mpi_layer/shm.h), and a call's
 * run there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "shm.h"

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

/* Rank r's part of the call at byte at of chunk ch's slot, or at byte
 * in of its input where that lies in place (s->from). */
static inline const char *src_of(const struct dcoll_mpi_shm *s, uint64_t ch,
                                 int r, size_t at, size_t in)
{
    return s->placed && s->from[r] ? s->from[r] + in : slot(s, ch, r) + at;
}

/* io (rank own's value) folded with the others' at the same place (at
 * in the slot, in in the input), in rank order. */
static void fold_all(const struct dcoll_mpi_shm *s, uint64_t ch, char *io,
                     size_t at, size_t in, int own, int64_t n,
                     const struct dcoll_coll *c)
{
    for (int r = 0; r < s->k; r++)
        if (r != own)
            dcoll_fold(io, src_of(s, ch, r, at, in), n, c->dtype, c->op);
}

/* Where rank r's input (word L_IN) or output (L_OUT) of this call lies
 * in a shared heap here (NULL: in none), once r's first step of it is
 * seen (its line's words of this call are written before). */
static dcoll_status_t placed_of(struct dcoll_group *g,
                                const struct dcoll_mpi_shm *s, int r,
                                int word, const struct dcoll_watch *wt,
                                const char **from)
{
    uint64_t at = atomic_load_explicit(line(s, r, word + (s->calls & 1)),
                                       memory_order_relaxed);
    *from = at ? dcoll_mpi_heap_of(dcoll_mpi_of(g), r, at) : NULL;
    if (!at || *from)
        return DCOLL_SUCCESS;
    if (wt->out)
        wt->out->broken = true;
    return dcoll_error(DCOLL_ERR_INTERNAL, "%s: rank %d's %s lies in "
                       "shared heap #%llu, which this rank does not have",
                       wt->fn, r, word == L_IN ? "input" : "output",
                       (unsigned long long)(at >> HEAP_OFF_BITS));
}

/* After the call's first sync: where each rank's input and output lie. */
static dcoll_status_t look(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                           const struct dcoll_watch *wt)
{
    s->placed = s->direct = false;
    if (!s->from) {
        if (!dcoll_mpi_of(g)->heaps)
            return DCOLL_SUCCESS;   /* none here, so none anywhere */
        if (!(s->from = calloc(2 * (size_t)s->k, sizeof(*s->from)))) {
            if (wt->out)
                wt->out->broken = true;
            return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for "
                               "where the ranks' inputs lie", wt->fn);
        }
    }
    bool all = true;
    for (int r = 0; r < s->k; r++) {
        dcoll_status_t st = placed_of(g, s, r, L_IN, wt, &s->from[r]);
        if (!st)
            st = placed_of(g, s, r, L_OUT, wt, &s->from[s->k + r]);
        if (st)
            return st;
        s->placed |= s->from[r] != NULL;
        all = all && s->from[r] && s->from[s->k + r];
    }
    s->direct = all;
    return DCOLL_SUCCESS;
}

/* A call that read inputs in place ends when every rank has: none
 * changes its own before. */
static dcoll_status_t end_placed(struct dcoll_group *g,
                                 struct dcoll_mpi_shm *s,
                                 const struct dcoll_watch *wt)
{
    return s->placed ? dcoll_shm_sync(g, s, wt) : DCOLL_SUCCESS;
}

/* Elements of a pipelined chunk: PIPE_BYTES, or the slot where less. */
static int64_t pipe_elems(const struct dcoll_mpi_shm *s, size_t esz)
{
    size_t b = s->slot < PIPE_BYTES ? s->slot : PIPE_BYTES;
    return (int64_t)(b / esz);
}

#define BLOCK_BYTES 4096    /* a fold's step: its operand stays in L1 */
static int64_t block_elems(size_t esz)
{
    return BLOCK_BYTES / (int64_t)esz > 0 ? BLOCK_BYTES / (int64_t)esz : 1;
}

/* The whole call reduced by each rank that wants the result (root < 0:
 * every rank), chunk by chunk of m elements: every rank copies its
 * input into its slot and says so; a rank that wants it then takes
 * rank 0's value with the others' folded in, in rank order, block by
 * block, and says it is done. A root waits for the others, they never
 * wait for the root but to reuse a half, so its folds of one chunk
 * overlap their copies of the next. A reduce's input in a shared heap
 * is not copied: the root reads it there, and its rank waits for the
 * root's last step before it returns (its program may change it). */
static dcoll_status_t whole(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                            const struct dcoll_coll *c,
                            const struct dcoll_watch *wt, int root,
                            int64_t m)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    bool mine = root < 0 || s->me == root;
    const char *in = c->in_place && mine ? c->recvbuf : c->sendbuf;
    char *out = mine ? c->recvbuf : NULL;
    int64_t blk = block_elems(esz);
    uint64_t e = 0;
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        uint64_t ch;
        dcoll_status_t st = dcoll_shm_claim(g, s, wt, &ch);
        if (st)
            return st;
        if (!s->in_at)
            memcpy(slot(s, ch, s->me), in + (size_t)off * esz,
                   (size_t)n * esz);
        e = ++s->syncs;
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
        if ((st = dcoll_shm_wait_all(g, s, e, wt)))
            return st;
        if (off == 0 && root >= 0 && (st = look(g, s, wt)))
            return st;
        for (int64_t b = 0; b < n; b += blk) {
            int64_t bn = n - b < blk ? n - b : blk;
            char *io = out + (size_t)(off + b) * esz;
            size_t at = (size_t)b * esz, from = (size_t)(off + b) * esz;
            memcpy(io, src_of(s, ch, 0, at, from), (size_t)bn * esz);
            fold_all(s, ch, io, at, from, 0, bn, c);
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
    if (!mine && s->in_at)
        return dcoll_shm_wait_for(g, s, root, e, wt);
    return DCOLL_SUCCESS;
}

/* all_reduce with every rank's input and output in a shared heap, after
 * the call's first sync: each rank reduces its slice of the whole count
 * from the inputs where they lie, block by block into its own output,
 * and writes each block into the others' outputs while it is in L1 (the
 * same order, so the same bits, as through the slots); a sync ends it.
 * In place, the others' writes land where only their own folds read. */
static dcoll_status_t direct(struct dcoll_group *g, struct dcoll_mpi_shm *s,
                             const struct dcoll_coll *c,
                             const struct dcoll_watch *wt)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t lo, len;
    slice(c->count, s->k, esz, s->me, &lo, &len);
    const char *in = c->in_place ? c->recvbuf : c->sendbuf;
    char *out = c->recvbuf;
    int64_t blk = block_elems(esz);
    for (int64_t b = lo; b < lo + len; b += blk) {
        int64_t bn = lo + len - b < blk ? lo + len - b : blk;
        size_t at = (size_t)b * esz, nb = (size_t)bn * esz;
        char *io = out + at;
        if (io != in + at)
            memcpy(io, in + at, nb);
        fold_all(s, 0, io, 0, at, s->me, bn, c);
        if (c->op == DCOLL_AVG)
            dcoll_divide(io, bn, c->dtype, s->k);
        for (int r = 0; r < s->k; r++)
            if (r != s->me)
                memcpy((char *)s->from[s->k + r] + at, io, nb);
    }
    return dcoll_shm_sync(g, s, wt);
}

/* all_reduce (root < 0) and reduce. */
dcoll_status_t dcoll_shm_reduce(struct dcoll_group *g, struct dcoll_mpi_shm *s,
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
    int64_t blk = block_elems(esz);
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        uint64_t ch;
        if ((st = dcoll_shm_claim(g, s, wt, &ch)))
            return st;
        int64_t lo, len;
        slice(n, s->k, esz, s->me, &lo, &len);
        const char *src = in + (size_t)off * esz;
        char *mys = slot(s, ch, s->me);
        size_t end = (size_t)(lo + len) * esz;
        /* An input in a shared heap is read there by the others. */
        if (!s->in_at) {
            memcpy(mys, src, (size_t)lo * esz);
            memcpy(mys + end, src + end, (size_t)n * esz - end);
        }
        if ((st = dcoll_shm_sync(g, s, wt)))
            return st;
        if (off == 0 && (st = look(g, s, wt)))
            return st;
        /* Nothing was copied in (every input lies in place), and the
         * half claimed stays unwritten. */
        if (off == 0 && root < 0 && s->direct)
            return direct(g, s, c, wt);
        for (int64_t b = lo; b < lo + len; b += blk) {
            int64_t bn = lo + len - b < blk ? lo + len - b : blk;
            char *io = mys + (size_t)b * esz;
            memcpy(io, src + (size_t)b * esz, (size_t)bn * esz);
            fold_all(s, ch, io, (size_t)b * esz, (size_t)(off + b) * esz,
                     s->me, bn, c);
            if (avg)
                dcoll_divide(io, bn, c->dtype, avg);
            if (mine)
                memcpy(out + (size_t)(off + b) * esz, io, (size_t)bn * esz);
        }
        if ((st = dcoll_shm_sync(g, s, wt)))
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
 * them, so its copy of one chunk overlaps theirs of the last. A root's
 * buffer in a shared heap is not copied: its first step says so, the
 * others copy the whole from there, and the root waits for them. */
dcoll_status_t dcoll_shm_broadcast(struct dcoll_group *g,
                                struct dcoll_mpi_shm *s,
                                const struct dcoll_coll *c,
                                const struct dcoll_watch *wt)
{
    size_t esz = dcoll_dtype_sizes[c->dtype];
    int64_t m = pipe_elems(s, esz);
    char *buf = c->recvbuf;
    bool root = s->me == c->root;
    /* placed_at's test: alike on every rank. */
    bool may = dcoll_mpi_of(g)->heaps &&
               (size_t)c->count * esz > SMALL_BYTES;
    dcoll_status_t st;
    if (root && s->in_at) {
        uint64_t e = ++s->syncs;
        post(s, e);
        return dcoll_shm_wait_all(g, s, e, wt);
    }
    for (int64_t off = 0; off < c->count; off += m) {
        int64_t n = c->count - off < m ? c->count - off : m;
        size_t at = (size_t)off * esz, b = (size_t)n * esz;
        uint64_t e = ++s->syncs, ch;
        /* Only the root writes. */
        if (root) {
            if ((st = dcoll_shm_claim(g, s, wt, &ch)))
                return st;
            memcpy(slot(s, ch, c->root), buf + at, b);
        } else {
            if ((st = dcoll_shm_wait_for(g, s, c->root, e, wt)))
                return st;
            const char *from = NULL;
            if (off == 0 && may &&
                (st = placed_of(g, s, c->root, L_IN, wt, &from)))
                return st;
            if (from) {
                memcpy(buf, from, (size_t)c->count * esz);
                post(s, e);
                return DCOLL_SUCCESS;
            }
            ch = s->chunks++;
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
        dcoll_status_t st = dcoll_shm_claim(g, s, wt, &ch);
        if (st)
            return st;
        size_t at = (size_t)off * esz, b = (size_t)n * esz;
        if (!s->in_at)
            memcpy(slot(s, ch, s->me), in + at, b);
        /* This rank's own block while the others copy theirs. */
        if (!c->in_place)
            memcpy(out + block * (size_t)s->me + at, in + at, b);
        if ((st = dcoll_shm_sync(g, s, wt)))
            return st;
        if (off == 0 && (st = look(g, s, wt)))
            return st;
        for (int r = 0; r < s->k; r++)
            if (r != s->me)
                memcpy(out + block * (size_t)r + at, src_of(s, ch, r, 0, at),
                       b);
        read_by_next(s, ch);
    }
    return end_placed(g, s, wt);
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
        dcoll_status_t st = dcoll_shm_claim(g, s, wt, &ch);
        if (st)
            return st;
        size_t b = (size_t)n * esz;
        for (int j = 0; !s->in_at && j < s->k; j++)
            memcpy(slot(s, ch, s->me) + b * (size_t)j,
                   in + ((size_t)j * (size_t)c->count + (size_t)off) * esz,
                   b);
        if ((st = dcoll_shm_sync(g, s, wt)))
            return st;
        if (off == 0 && (st = look(g, s, wt)))
            return st;
        /* In place, this chunk of the result lies where this chunk of
         * an input block was, already in the slot (such an input is
         * never read in place: the first copy below would cover it). */
        char *io = out + (size_t)off * esz;
        size_t mine = b * (size_t)s->me;
        size_t at = ((size_t)s->me * (size_t)c->count + (size_t)off) * esz;
        memcpy(io, src_of(s, ch, 0, mine, at), b);
        fold_all(s, ch, io, mine, at, 0, n, c);
        if (c->op == DCOLL_AVG)
            dcoll_divide(io, n, c->dtype, s->k);
        read_by_next(s, ch);
    }
    return end_placed(g, s, wt);
}

/* Call c begins on segment s: its number, and its signature, which
 * each of its steps carries; the call itself on this rank's line, which
 * its first step publishes. */
static void begin(struct dcoll_mpi_shm *s, const struct dcoll_coll *c,
                  uint64_t in_at, uint64_t out_at)
{
    if (!s)
        return;
    /* Of a call's two words, by parity: a rank one call ahead (never
     * more: each call's first sync waits for all) writes the other. */
    s->in_at = in_at;
    s->placed = false;
    s->calls++;
    atomic_store_explicit(line(s, s->me, L_IN + (s->calls & 1)), in_at,
                          memory_order_relaxed);
    atomic_store_explicit(line(s, s->me, L_OUT + (s->calls & 1)), out_at,
                          memory_order_relaxed);
    uint64_t what = call_what(c);
    uint64_t h = ((uint64_t)c->count * UINT64_C(0x9E3779B97F4A7C15)) ^ what;
    h ^= h >> 29;
    h *= UINT64_C(0xBF58476D1CE4E5B9);
    h ^= h >> 32;
    s->seq = c->seq;
    s->sig = h & ((1u << SIG_BITS) - 1);
    s->what = what;
    s->count = c->count;
    atomic_store_explicit(line(s, s->me, L_SEQ), c->seq, memory_order_relaxed);
    atomic_store_explicit(line(s, s->me, L_WHAT), what, memory_order_relaxed);
    atomic_store_explicit(line(s, s->me, L_COUNT), (uint64_t)c->count,
                          memory_order_relaxed);
}

/* Where c's input on this rank lies in one of g's shared heaps, for the
 * kinds and sizes that read it in place there (0: it is copied in). A
 * small call copies (one sync, none to spare at the end); so does a
 * reduce_scatter in place, which overwrites the input the others read,
 * and the root of a reduce of few ranks in place, whose folds write
 * its input (rank 0's value first) before they read it. */
static uint64_t placed_at(const struct dcoll_mpi_comm *mc,
                          const struct dcoll_mpi_shm *s,
                          const struct dcoll_coll *c)
{
    if (!mc->heaps)
        return 0;
    size_t esz = dcoll_dtype_sizes[c->dtype];
    size_t bytes = (size_t)c->count * esz;
    const void *in = c->sendbuf;
    switch (c->kind) {
    case DCOLL_COLL_BROADCAST:
        if (bytes <= SMALL_BYTES || s->me != c->root)
            return 0;
        in = c->recvbuf;
        break;
    case DCOLL_COLL_REDUCE:
        if (s->k <= WHOLE_RANKS && c->in_place && s->me == c->root)
            return 0;
        /* fall through */
    case DCOLL_COLL_ALL_REDUCE:
        if (bytes <= SMALL_BYTES)
            return 0;
        if (c->in_place && (c->kind == DCOLL_COLL_ALL_REDUCE ||
                            s->me == c->root))
            in = c->recvbuf;
        break;
    case DCOLL_COLL_ALL_GATHER:
        if (c->in_place)
            in = (const char *)c->recvbuf + bytes * (size_t)s->me;
        break;
    case DCOLL_COLL_REDUCE_SCATTER:
        if (c->in_place)
            return 0;
        bytes *= (size_t)s->k;
        break;
    default:
        return 0;
    }
    return dcoll_mpi_heap_at(mc, s->me, in, bytes);
}

/* Where an all_reduce's output lies in one of g's shared heaps, where
 * its input is read in place (0: elsewhere, or another kind). */
static uint64_t out_at(const struct dcoll_mpi_comm *mc,
                       const struct dcoll_mpi_shm *s,
                       const struct dcoll_coll *c)
{
    size_t bytes = (size_t)c->count * dcoll_dtype_sizes[c->dtype];
    if (!mc->heaps || c->kind != DCOLL_COLL_ALL_REDUCE || bytes <= SMALL_BYTES)
        return 0;
    return dcoll_mpi_heap_at(mc, s->me, c->recvbuf, bytes);
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
    case DCOLL_COLL_ALL_REDUCE: return dcoll_shm_reduce(g, s, c, wt, -1);
    case DCOLL_COLL_REDUCE: return dcoll_shm_reduce(g, s, c, wt, c->root);
    case DCOLL_COLL_BROADCAST: return dcoll_shm_broadcast(g, s, c, wt);
    case DCOLL_COLL_ALL_GATHER: return all_gather(g, s, c, wt);
    case DCOLL_COLL_REDUCE_SCATTER: return reduce_scatter(g, s, c, wt);
    default: return dcoll_shm_sync(g, s, wt);
    }
}

/* Call c begins on g's segment, made on its first call that takes it
 * (collective; DECLINED where not every rank could make it, alike on
 * every rank): its wait, the fence, and its words. */
static dcoll_status_t opening(struct dcoll_group *g, struct dcoll_mpi_comm *mc,
                              const struct dcoll_coll *c,
                              struct dcoll_outcome *out,
                              struct dcoll_watch *wt)
{
    dcoll_status_t st;
    if (!mc->shm) {
        if ((st = dcoll_shm_make(g, mc->ctl, g->rank, g->size,
                                 mc->shm_on == 2, c, out, &mc->shm)))
            return st;
        if (!mc->shm) {
            mc->shm_on = -1;   /* alike on every rank */
            return DCOLL_DECLINED;
        }
    }
    *wt = dcoll_shm_watch(g, c, "a wait on the shared segment (dcoll's "
                          "own algorithm)", out);
    if ((st = dcoll_shm_fence(g, mc->shm, wt)))
        return ended(mc->shm, st);
    begin(mc->shm, c, placed_at(mc, mc->shm, c), out_at(mc, mc->shm, c));
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_shm_run(struct dcoll_group *g,
                                 const struct dcoll_coll *c,
                                 struct dcoll_outcome *out)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    dcoll_status_t st;
    if (mc->shm_on == 3) {
        bool ok = true;
        if (!mc->nodes && (st = dcoll_shm_nodes_make(g, mc, c, out, &ok)))
            return st;
        if (!ok) {
            mc->shm_on = -1;   /* alike on every rank */
            return DCOLL_DECLINED;
        }
        struct dcoll_watch wt = dcoll_shm_watch(
            g, c, "a wait on the node's shared segment (dcoll's own "
            "algorithm)", out);
        begin(mc->nodes->seg, c, 0, 0);
        return ended(mc->nodes->seg, dcoll_shm_nodes_run(g, mc->nodes, c, &wt));
    }
    struct dcoll_watch wt;
    if ((st = opening(g, mc, c, out, &wt)))
        return st;
    return ended(mc->shm, run_on(g, mc->shm, c, &wt));
}

dcoll_status_t dcoll_mpi_shm_run_placed(struct dcoll_group *g,
                                        const struct dcoll_coll *c,
                                        struct dcoll_outcome *out)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    struct dcoll_watch wt;
    dcoll_status_t st = opening(g, mc, c, out, &wt);
    if (st)
        return st;
    struct dcoll_mpi_shm *s = mc->shm;
    /* The call's first step, a sync, says where each rank's buffer
     * lies: every rank reads the same words and decides alike. A sync
     * even for a broadcast, which needs the root's word alone: a rank
     * at most one call ahead keeps the words (L_IN, by parity) whole
     * until the others have read them. Declined, the call has no later
     * step that bounds it (MPI's call may let a rank run on): the
     * fence does. */
    if ((st = dcoll_shm_sync(g, s, &wt)) || (st = look(g, s, &wt)))
        return ended(s, st);
    bool all = s->placed;
    if (c->kind == DCOLL_COLL_BROADCAST)
        all = all && s->from[c->root];
    else
        for (int r = 0; all && r < s->k; r++)
            all = s->from[r] != NULL;
    if (!all) {
        s->fence_next = true;
        return DCOLL_DECLINED;
    }
    return ended(s, run_on(g, s, c, &wt));
}
