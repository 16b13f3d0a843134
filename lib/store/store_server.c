/* The TCP store's server: a libuv loop on its own thread, many clients at
 * once. Requests are parsed strictly (store_wire.c); a malformed or
 * oversized one gets an error and the connection is closed. GET and WAIT
 * on missing keys park the client, without blocking anyone else, until the
 * keys appear or its timeout fires.
 *
 * Whoever can reach the port can connect, so the server holds limits
 * (dcoll_store_params_t): connections in all and before the token,
 * the size of a request before the token, the time a client may take
 * to finish a request or read its replies, and the bytes the store
 * holds. A client over a limit is told why and cut off; the others go on
 * being served.
 *
 * Memory is bounded as a whole: max_memory covers the keys and values,
 * and also what clients make the server hold for them past a first
 * allowance each (BASE bytes of request buffer and BASE of replies not
 * yet read, which max_clients bounds): the rest of a large request is
 * reserved when its header comes, and a large reply waits its turn. A
 * parked GET or WAIT counts whole (its copies of the keys, their places
 * in the index of waiters): one that does not fit is refused as a SET
 * would be. What a client held goes back when it does, and past
 * TRIM_AFTER bytes freed the allocator is asked to return its free
 * pages to the system. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <uv.h>
#include "store.h"
#include "store_table.h"

struct waiter;

struct client {
    uv_tcp_t tcp;
    uv_timer_t idle;        /* runs while the client owes us something */
    int handles;            /* open handles; freed when none is left */
    struct store_server *srv;
    struct client *prev, *next;
    uint8_t *buf;
    size_t len, cap;
    struct waiter *waiter;
    bool authed, closing, close_after_write;
    bool rejected;          /* over a connection cap: told, then dropped */
    bool blocked;           /* its replies pile up unread: not served */
    bool paused;            /* not read from */
    bool quiet;             /* its timer runs for idle_close */
    size_t queued;          /* bytes of replies not yet written */
    size_t counted;         /* of cap and queued, what counts in held */
};

/* A waiter's place in the list of those waiting on one of its keys. */
struct wnode {
    struct waiter *w;
    struct wnode *prev, *next;
};

struct waiter {
    uv_timer_t timer;
    struct client *c;
    struct store_server *srv; /* its client may be freed first */
    size_t cost;             /* what it holds, counted in its client's */
    struct waiter *prev, *next;
    enum wire_op op;
    int n;
    struct wnode *node;      /* n of them, one per key */
    struct wire_str keys[];  /* copies, freed with the waiter */
};

struct store_server {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t stop;
    pthread_t thread;
    char *token;
    struct kv_table kv;
    struct client *clients;
    struct waiter *waiters;
    /* key -> the first wnode waiting on it (the value is the pointer), so
     * that a SET looks only at the waiters on its key */
    struct kv_table waiting;
    /* Keys changed while wake runs, for it to look at next (see wake). */
    struct wire_str *pending;
    size_t npending, cappending;
    bool waking;
    /* limits, and what counts against them */
    int max_clients, max_unauthed, nclients, nunauthed, nrejected;
    uint32_t unauthed_frame;
    uint64_t idle_ms;
    uint64_t idle_close_ms;  /* an authenticated client idle this long is
                                let go; 0: never */
    size_t max_memory;       /* keys, values and held, together */
    size_t held;             /* request buffers and unread replies past
                                each client's allowance, and waiters */
    size_t freed;            /* bytes given back since the last trim */
};

/* Each client's allowance of request buffer, and of unread replies,
 * that does not count against max_memory. */
#define BASE (64u << 10)

/* Replies queued for a client past this stop its requests being served
 * until it reads them: a client that never reads cannot make the server
 * buffer without end. */
#define WRITE_HIGH (16u << 20)
/* How long a client refused at connection may take to read why. */
#define REJECT_LINGER_MS 2000
/* Bytes given back (waiters, buffers) after which free pages go back to
 * the system: many small frees would otherwise stay in the heap. */
#define TRIM_AFTER (1u << 20)

#define LINK(head, x)                                                      \
    do {                                                                   \
        (x)->prev = NULL;                                                  \
        (x)->next = (head);                                                \
        if (head)                                                          \
            (head)->prev = (x);                                            \
        (head) = (x);                                                      \
    } while (0)
#define UNLINK(head, x)                                                    \
    do {                                                                   \
        if ((x)->prev)                                                     \
            (x)->prev->next = (x)->next;                                   \
        else                                                               \
            (head) = (x)->next;                                            \
        if ((x)->next)                                                     \
            (x)->next->prev = (x)->prev;                                   \
    } while (0)

/* ---- memory ---- */

/* What c makes the server hold past its allowance: buffers past it, and
 * its parked request whole. */
static size_t excess(const struct client *c)
{
    return (c->cap > BASE ? c->cap - BASE : 0) +
           (c->queued > BASE ? c->queued - BASE : 0) +
           (c->waiter ? c->waiter->cost : 0);
}

/* n bytes went back to the heap: past TRIM_AFTER since the last time,
 * its free pages go back to the system. */
static void gave_back(struct store_server *s, size_t n)
{
    s->freed += n;
    if (s->freed < TRIM_AFTER)
        return;
    s->freed = 0;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* What the key table may hold: what the clients' held bytes leave (at
 * least 1, as 0 would mean no limit). */
static void kv_room(struct store_server *s, size_t held)
{
    s->kv.limit = s->max_memory > held ? s->max_memory - held : 1;
}

/* Bring s->held up to date with c's buffers. */
static void recount(struct client *c)
{
    struct store_server *s = c->srv;
    size_t now = c->closing ? 0 : excess(c);
    s->held = s->held - c->counted + now;
    c->counted = now;
    kv_room(s, s->held);
}

/* Whether more bytes than c holds now fit under max_memory. */
static bool room(const struct client *c, size_t more)
{
    const struct store_server *s = c->srv;
    return s->kv.bytes + s->held + more <= s->max_memory;
}

/* "the server holds ... of its max_memory ..." for a refusal. */
static void memory_said(const struct client *c, char *msg, size_t cap,
                        const char *what, size_t n)
{
    const struct store_server *s = c->srv;
    snprintf(msg, cap, "%s of %zu bytes does not fit: the server holds %zu "
             "bytes of keys and values and %zu of unfinished requests and "
             "unread replies, and its limit (max_memory) is %zu", what, n,
             s->kv.bytes, s->held, s->max_memory);
}

/* ---- replies ---- */

/* A write and the size it adds to its client's queue. */
struct wreq {
    uv_write_t req;
    size_t n;
};

static void on_closed(uv_handle_t *h)
{
    struct client *c = h->data;
    if (--c->handles)
        return;
    struct store_server *s = c->srv;
    size_t cap = c->cap;
    free(c->buf);
    free(c);
    gave_back(s, cap);
}

static void close_client(struct client *c);
static void process(struct client *c);
static void watch(struct client *c, bool progressed);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b);
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b);

static void reading(struct client *c, bool on)
{
    if (c->paused != on)
        return;
    c->paused = !on;
    if (on)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    else
        uv_read_stop((uv_stream_t *)&c->tcp);
}

static void on_written(uv_write_t *req, int status)
{
    struct client *c = req->data;
    c->queued -= ((struct wreq *)req)->n;
    free(req);
    if (status == UV_ECANCELED || c->closing)
        return;
    recount(c);
    if (c->close_after_write || status < 0) {
        close_client(c);
        return;
    }
    if (c->blocked && c->tcp.write_queue_size <= WRITE_HIGH / 2) {
        c->blocked = false;
        process(c);
        return;
    }
    watch(c, true);   /* it reads, if slowly */
}

static void reply(struct client *c, enum wire_status code, int64_t num,
                  int nstr, const struct wire_str *str)
{
    if (c->closing)
        return;
    size_t n = wire_frame_size(nstr, str);
    struct wreq *w = malloc(sizeof(*w) + n);
    if (!w) {
        close_client(c);
        return;
    }
    uint8_t *frame = (uint8_t *)(w + 1);
    wire_encode(frame, (uint8_t)code, num, nstr, str);
    w->req.data = c;
    w->n = n;
    c->queued += n;
    uv_buf_t b = uv_buf_init((char *)frame, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_written)) {
        c->queued -= n;
        free(w);
        close_client(c);
        return;
    }
    recount(c);
    if (c->tcp.write_queue_size > WRITE_HIGH)
        c->blocked = true;
}


static void say(struct client *c, enum wire_status code, const char *msg)
{
    struct wire_str m = {(const uint8_t *)msg, (uint32_t)strlen(msg)};
    reply(c, code, 0, 1, &m);
}

/* A value for c (a GET's answer), unless holding it would pass
 * max_memory: then c is told so, and may ask again. */
static void reply_value(struct client *c, struct wire_str v)
{
    size_t n = wire_frame_size(1, &v), before = excess(c);
    c->queued += n;
    size_t after = excess(c);
    c->queued -= n;
    if (after > before && !room(c, after - before)) {
        char msg[300];
        memory_said(c, msg, sizeof(msg), "a reply", n);
        say(c, WIRE_FULL, msg);
        return;
    }
    reply(c, WIRE_OK, 0, 1, &v);
}

static void waiter_end(struct waiter *w);

/* Refuse and hang up: the stream cannot be trusted past a bad frame. A
 * request it waits in is dropped, so that nothing follows the refusal. */
static void refuse(struct client *c, enum wire_status code, const char *msg)
{
    if (c->waiter)
        waiter_end(c->waiter);
    c->close_after_write = true;
    say(c, code, msg);
    reading(c, false);
    watch(c, true);
}

/* ---- deadlines ---- */

/* A client owes us its token, the rest of a request it started, or the
 * reading of its replies; a parked client waits under its own timeout. */
static bool owes(const struct client *c)
{
    return c->rejected || c->close_after_write || c->tcp.write_queue_size ||
           (!c->waiter && (!c->authed || c->len > 0));
}

static void on_idle(uv_timer_t *t)
{
    struct client *c = t->data;
    struct store_server *s = c->srv;
    if (!owes(c)) {
        /* Authenticated, owing nothing, not waiting, quiet past
         * idle_close: its place goes back to the pool. A dcoll client
         * connects again when it next has a request. */
        if (!c->waiter)
            close_client(c);
        return;
    }
    if (c->rejected || c->close_after_write || c->tcp.write_queue_size) {
        close_client(c);   /* it does not read what we send */
        return;
    }
    char msg[128];
    snprintf(msg, sizeof(msg), c->authed
             ? "no complete request within %g s: disconnected"
             : "no token shown within %g s of connecting: disconnected",
             (double)s->idle_ms / 1000);
    refuse(c, WIRE_BAD_REQUEST, msg);
}

/* Start the client's deadline when it comes to owe something, again on
 * progress; stop it when it owes nothing. */
static void watch(struct client *c, bool progressed)
{
    if (c->closing)
        return;
    if (!owes(c)) {
        bool quiet = c->authed && !c->waiter && c->srv->idle_close_ms;
        if (quiet && (!c->quiet || progressed ||
                      !uv_is_active((uv_handle_t *)&c->idle)))
            uv_timer_start(&c->idle, on_idle, c->srv->idle_close_ms, 0);
        else if (!quiet)
            uv_timer_stop(&c->idle);
        c->quiet = quiet;
        return;
    }
    bool was_quiet = c->quiet;
    c->quiet = false;
    if (progressed || was_quiet || !uv_is_active((uv_handle_t *)&c->idle))
        uv_timer_start(&c->idle, on_idle,
                       c->rejected ? REJECT_LINGER_MS : c->srv->idle_ms, 0);
}

/* ---- waiters ---- */

static void on_waiter_closed(uv_handle_t *h)
{
    struct waiter *w = h->data;
    struct store_server *s = w->srv;
    size_t cost = w->cost;
    for (int i = 0; i < w->n; i++)
        free((void *)w->keys[i].p);
    free(w->node);
    free(w);
    gave_back(s, cost);
}

static struct wnode *head_of(struct kv *e)
{
    struct wnode *h;
    memcpy(&h, e->val, sizeof(h));
    return h;
}

static void set_head(struct kv *e, struct wnode *h)
{
    memcpy(e->val, &h, sizeof(h));
}

/* Take w off the list of each of its keys; a list left empty goes. */
static void unindex(struct store_server *s, struct waiter *w)
{
    for (int i = 0; w->node && i < w->n; i++) {
        struct wnode *x = &w->node[i];
        struct kv *e = kv_find(&s->waiting, w->keys[i]);
        if (!e)
            continue;
        if (x->next)
            x->next->prev = x->prev;
        if (x->prev)
            x->prev->next = x->next;
        else if (x->next)
            set_head(e, x->next);
        else
            kv_erase(&s->waiting, w->keys[i]);
    }
}

/* Put w on the list of each of its keys. */
static bool index_waiter(struct store_server *s, struct waiter *w)
{
    w->node = calloc((size_t)w->n, sizeof(*w->node));
    if (!w->node)
        return false;
    for (int i = 0; i < w->n; i++) {
        struct wnode *x = &w->node[i];
        x->w = w;
        struct kv *e = kv_find(&s->waiting, w->keys[i]);
        if (e) {
            x->next = head_of(e);
            x->next->prev = x;
            set_head(e, x);
            continue;
        }
        struct wire_str v = {(const uint8_t *)&x, sizeof(x)};
        if (kv_put(&s->waiting, w->keys[i], v) != KV_OK) {
            /* Undo the keys already listed: node i is on no list. */
            int n = w->n;
            w->n = i;
            unindex(s, w);
            w->n = n;
            return false;
        }
    }
    return true;
}

static void waiter_end(struct waiter *w)
{
    struct store_server *s = w->c->srv;
    unindex(s, w);
    UNLINK(s->waiters, w);
    w->c->waiter = NULL;
    recount(w->c);
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, on_waiter_closed);
}

/* The waiter's reply, from the keys as they are now; its client's
 * buffered requests are served after (the caller's, where it answers
 * several). */
static void waiter_reply(struct waiter *w)
{
    struct client *c = w->c;
    if (w->op == WIRE_GET) {
        struct kv *e = kv_find(&c->srv->kv, w->keys[0]);
        reply_value(c, (struct wire_str){e->val, e->vlen});
    } else {
        reply(c, WIRE_OK, 0, 0, NULL);
    }
    waiter_end(w);
}

static void on_timeout(uv_timer_t *t)
{
    struct waiter *w = t->data;
    struct client *c = w->c;
    reply(c, WIRE_TIMEOUT, 0, 0, NULL);
    waiter_end(w);
    process(c);
}

/* Answer the waiters on key k whose keys are all there. Answering one
 * serves its client's buffered frames, whose SET calls wake again: that
 * nested call only queues its key for the loop here, so no waiter is
 * answered twice and no list is walked while it changes. */
static void wake(struct store_server *s, struct wire_str k)
{
    if (s->npending == s->cappending) {
        size_t cap = s->cappending ? 2 * s->cappending : 8;
        struct wire_str *p = realloc(s->pending, cap * sizeof(*p));
        if (!p)
            return;   /* those waiters time out instead */
        s->pending = p;
        s->cappending = cap;
    }
    uint8_t *copy = malloc(k.len ? k.len : 1);
    if (!copy)
        return;
    memcpy(copy, k.p, k.len);
    s->pending[s->npending++] = (struct wire_str){copy, k.len};
    if (s->waking)
        return;
    s->waking = true;
    for (size_t at = 0; at < s->npending; at++) {
        struct wire_str key = s->pending[at];
        struct kv *e = kv_find(&s->waiting, key);
        /* The ready waiters first, then answered: answering changes the
         * lists. A waiter on the same key twice is taken once. */
        size_t nready = 0, cap = 0;
        struct waiter **ready = NULL;
        for (struct wnode *x = e ? head_of(e) : NULL; x; x = x->next) {
            if (!kv_all(&s->kv, x->w->n, x->w->keys))
                continue;
            bool seen = false;
            for (size_t i = 0; i < nready && !seen; i++)
                seen = ready[i] == x->w;
            if (seen)
                continue;
            if (nready == cap) {
                cap = cap ? 2 * cap : 16;
                struct waiter **r = realloc(ready, cap * sizeof(*r));
                if (!r)
                    break;
                ready = r;
            }
            ready[nready++] = x->w;
        }
        /* Every waiter ready at the SET is answered before any client's
         * pipelined requests run (torch's store answers every waiter of
         * the key at the SET): one's DELETE behind its GET must not
         * leave another parked on a key that was set while it waited.
         * Then each answered client's buffered requests are served; a
         * waiter they end or park again is its client's own. A client's
         * memory lasts until its close callback, after this loop. */
        struct client **served = malloc(sizeof(*served) * (nready + 1));
        size_t answered = 0;
        for (size_t i = 0; i < nready; i++) {
            struct waiter *w = ready[i];
            if (w->c->waiter != w || !kv_all(&s->kv, w->n, w->keys))
                continue;
            struct client *c = w->c;
            waiter_reply(w);
            if (served)
                served[answered++] = c;
            else
                process(c);   /* no memory: one at a time, as before */
        }
        for (size_t i = 0; i < answered; i++)
            process(served[i]);
        free(served);
        free(ready);
    }
    for (size_t at = 0; at < s->npending; at++)
        free((void *)s->pending[at].p);
    s->npending = 0;
    s->waking = false;
}

/* What parking m holds: the waiter, its copy of each key, a place on
 * each key's list, and an entry in the index of waiters for each (the
 * most it may add). */
static size_t park_cost(const struct wire_msg *m)
{
    size_t n = sizeof(struct waiter);
    for (int i = 0; i < m->nstr; i++)
        n += sizeof(struct wire_str) + sizeof(struct wnode) +
             m->str[i].len + KV_COST(m->str[i].len, sizeof(void *));
    return n;
}

enum park_result { PARKED, PARK_NO_MEMORY, PARK_FULL };

static enum park_result park(struct client *c, const struct wire_msg *m)
{
    size_t cost = park_cost(m);
    if (!room(c, cost))
        return PARK_FULL;
    struct waiter *w = calloc(1, sizeof(*w) + m->nstr * sizeof(w->keys[0]));
    if (!w)
        return PARK_NO_MEMORY;
    w->c = c;
    w->srv = c->srv;
    w->cost = cost;
    w->op = (enum wire_op)m->code;
    for (; w->n < m->nstr; w->n++) {
        uint8_t *k = malloc(m->str[w->n].len);
        if (!k) {
            for (int i = 0; i < w->n; i++)
                free((void *)w->keys[i].p);
            free(w);
            return PARK_NO_MEMORY;
        }
        memcpy(k, m->str[w->n].p, m->str[w->n].len);
        w->keys[w->n] = (struct wire_str){k, m->str[w->n].len};
    }
    if (!index_waiter(c->srv, w)) {
        for (int i = 0; i < w->n; i++)
            free((void *)w->keys[i].p);
        free(w->node);
        free(w);
        return PARK_NO_MEMORY;
    }
    uv_timer_init(&c->srv->loop, &w->timer);
    w->timer.data = w;
    int64_t ms = m->num < 0 ? 0 : m->num;
    uv_timer_start(&w->timer, on_timeout, (uint64_t)ms, 0);
    LINK(c->srv->waiters, w);
    c->waiter = w;
    recount(c);
    return PARKED;
}

/* ---- requests ---- */

static bool key_ok(struct wire_str k)
{
    return k.len >= 1 && k.len <= DCOLL_STORE_MAX_KEY;
}

/* The shape each op must have: string count (-1: 1..255 keys). */
static const int op_nstr[WIRE_OP_END_] = {
    [WIRE_AUTH] = 1, [WIRE_SET] = 2, [WIRE_GET] = 1, [WIRE_ADD] = 1,
    [WIRE_CAS] = 3, [WIRE_WAIT] = -1, [WIRE_CHECK] = -1, [WIRE_DELETE] = 1,
    [WIRE_NUMKEYS] = 0,
};

static const char *check_shape(const struct wire_msg *m)
{
    if (m->code < WIRE_AUTH || m->code >= WIRE_OP_END_)
        return "unknown operation";
    int want = op_nstr[m->code];
    if (want >= 0 ? m->nstr != want : m->nstr < 1)
        return "wrong number of strings for the operation";
    if (m->code == WIRE_AUTH || m->code == WIRE_NUMKEYS)
        return NULL;
    int nkeys = want < 0 ? m->nstr : 1;
    for (int i = 0; i < nkeys; i++)
        if (!key_ok(m->str[i]))
            return "key length out of range";
    for (int i = nkeys; i < m->nstr; i++)
        if (m->str[i].len > DCOLL_STORE_MAX_VALUE)
            return "value over the size limit";
    return NULL;
}

/* Constant time in the token's length, so timing does not leak it. */
static bool token_ok(const char *token, struct wire_str got)
{
    size_t n = strlen(token);
    unsigned diff = got.len != n;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)(token[i] ^ (i < got.len ? got.p[i] : 0));
    return diff == 0;
}

static void handle(struct client *c, const struct wire_msg *m)
{
    struct store_server *s = c->srv;
    const char *bad = check_shape(m);
    if (bad) {
        refuse(c, WIRE_BAD_REQUEST, bad);
        return;
    }
    if (m->code == WIRE_AUTH) {
        if (s->token && !m->str[0].len) {
            refuse(c, WIRE_UNAUTHORIZED, "this store needs a token and "
                   "none was shown");
            return;
        }
        if (s->token && !token_ok(s->token, m->str[0])) {
            refuse(c, WIRE_UNAUTHORIZED, "wrong token");
            return;
        }
        if (!c->authed)
            s->nunauthed--;
        c->authed = true;
        reply(c, WIRE_OK, 0, 0, NULL);
        return;
    }
    if (!c->authed) {
        refuse(c, WIRE_UNAUTHORIZED, "this store needs a token first");
        return;
    }
    struct kv *e;
    int64_t v;
    enum kv_result r;
    enum park_result pr;
    switch ((enum wire_op)m->code) {
    case WIRE_SET:
        if ((r = kv_put(&s->kv, m->str[0], m->str[1])) != KV_OK)
            goto failed;
        reply(c, WIRE_OK, 0, 0, NULL);
        wake(s, m->str[0]);
        return;
    case WIRE_GET:
    case WIRE_WAIT:
        if (kv_all(&s->kv, m->nstr, m->str)) {
            if (m->code == WIRE_GET) {
                e = kv_find(&s->kv, m->str[0]);
                reply_value(c, (struct wire_str){e->val, e->vlen});
            } else {
                reply(c, WIRE_OK, 0, 0, NULL);
            }
        } else if ((pr = park(c, m)) == PARK_NO_MEMORY) {
            goto nomem;
        } else if (pr == PARK_FULL) {
            char msg[300];
            snprintf(msg, sizeof(msg), "the store is full: waiting on %d "
                     "key(s) would hold %zu bytes more, and it holds %zu "
                     "bytes of keys and values and %zu of clients' "
                     "requests, replies and waits, of its limit of %zu",
                     m->nstr, park_cost(m), s->kv.bytes, s->held,
                     s->max_memory);
            say(c, WIRE_FULL, msg);
        }
        return;
    case WIRE_ADD:
        if ((r = kv_add(&s->kv, m->str[0], m->num, &v)) == KV_NOT_NUMBER) {
            reply(c, WIRE_NOT_NUMBER, 0, 0, NULL);
            return;
        }
        if (r == KV_OVERFLOW) {   /* said, for clients that show it */
            static const char why[] = "the sum would overflow a 64-bit "
                                      "integer; the value is unchanged";
            struct wire_str w = {(const uint8_t *)why, sizeof(why) - 1};
            reply(c, WIRE_NOT_NUMBER, 0, 1, &w);
            return;
        }
        if (r != KV_OK)
            goto failed;
        reply(c, WIRE_OK, v, 0, NULL);
        wake(s, m->str[0]);
        return;
    case WIRE_CAS: {
        if ((r = kv_cas(&s->kv, m->str[0], m->str[1], m->str[2], &e)))
            goto failed;
        struct wire_str now = {e ? e->val : NULL, e ? e->vlen : 0};
        reply(c, WIRE_OK, 0, 1, &now);
        if (e)
            wake(s, m->str[0]);
        return;
    }
    case WIRE_CHECK:
        reply(c, WIRE_OK, kv_all(&s->kv, m->nstr, m->str), 0, NULL);
        return;
    case WIRE_DELETE:
        reply(c, WIRE_OK, kv_erase(&s->kv, m->str[0]), 0, NULL);
        return;
    case WIRE_NUMKEYS:
        reply(c, WIRE_OK, (int64_t)s->kv.n, 0, NULL);
        return;
    default:   /* check_shape lets no other code through */
        refuse(c, WIRE_BAD_REQUEST, "unknown request");
        return;
    }
nomem:
    refuse(c, WIRE_BAD_REQUEST, "the server is out of memory");
    return;
failed:
    if (r != KV_FULL)
        goto nomem;
    /* Over the store's limit: this request fails, the client stays. */
    char msg[300];
    if (s->held)
        snprintf(msg, sizeof(msg), "the store is full: it holds %zu bytes "
                 "of keys and values and %zu of unfinished requests and "
                 "unread replies, of its limit of %zu, and this request "
                 "would pass it", s->kv.bytes, s->held, s->max_memory);
    else
        snprintf(msg, sizeof(msg), "the store is full: it holds %zu bytes "
                 "of its limit of %zu, and this request would pass it",
                 s->kv.bytes, s->max_memory);
    say(c, WIRE_FULL, msg);
}

/* Make c's request buffer hold need bytes, if max_memory allows. */
static bool grow(struct client *c, size_t need)
{
    size_t old = c->cap, before = excess(c);
    c->cap = need;
    size_t after = excess(c);
    c->cap = old;
    if (after > before && !room(c, after - before))
        return false;
    uint8_t *p = realloc(c->buf, need);
    if (!p)
        return false;
    c->buf = p;
    c->cap = need;
    recount(c);
    return true;
}

/* Room in c's buffer for the whole of a frame of n bytes (its header at
 * the front), reserved against max_memory; a frame that does not fit is
 * refused before it is read (false). */
static bool reserve(struct client *c, uint32_t n)
{
    if ((size_t)n + 4 <= c->cap || grow(c, (size_t)n + 4))
        return true;
    char msg[300];
    memory_said(c, msg, sizeof(msg), "a request", (size_t)n);
    refuse(c, WIRE_FULL, msg);
    return false;
}

/* Serve every whole frame buffered, until the client is parked. */
static void process(struct client *c)
{
    if (c->rejected) {
        c->len = 0;   /* what it sends is not read */
        return;
    }
    struct store_server *s = c->srv;
    size_t at = 0;
    struct wire_msg *m = NULL;
    while (!c->waiter && !c->closing && !c->close_after_write &&
           !c->blocked && c->len - at >= 4) {
        uint32_t n = wire_get32(c->buf + at);
        if (n > WIRE_MAX_BODY || (!c->authed && n > s->unauthed_frame)) {
            char msg[128];
            snprintf(msg, sizeof(msg), "request of %u bytes is over the "
                     "limit of %u%s", n,
                     c->authed ? WIRE_MAX_BODY : s->unauthed_frame,
                     c->authed ? "" : " before the token is shown");
            refuse(c, WIRE_BAD_REQUEST, msg);
            break;
        }
        if (c->len - at - 4 < n) {
            /* Not at the front yet: the pass below reserves it. */
            if (at == 0)
                reserve(c, n);
            break;
        }
        if (!m && !(m = malloc(sizeof(*m)))) {
            refuse(c, WIRE_BAD_REQUEST, "the server is out of memory");
            break;
        }
        const char *bad = wire_parse(c->buf + at + 4, n, m);
        if (bad) {
            refuse(c, WIRE_BAD_REQUEST, bad);
            break;
        }
        /* The request's own buffer goes once it is served: a value it
         * stores may use that room. */
        kv_room(s, s->held - (c->cap > BASE ? c->cap - BASE : 0));
        handle(c, m);   /* a parked request copies what it keeps */
        recount(c);
        at += 4 + n;
    }
    free(m);
    if (c->closing)
        return;
    memmove(c->buf, c->buf + at, c->len - at);
    c->len -= at;
    /* A large request served: its buffer goes back, unless the next one
     * (its header here) needs it. */
    if (c->cap > BASE && c->len <= BASE / 2 &&
        (c->len < 4 || (size_t)wire_get32(c->buf) + 4 <= BASE)) {
        uint8_t *p = realloc(c->buf, BASE);
        if (p) {
            c->buf = p;
            c->cap = BASE;
            recount(c);
        }
    }
    /* The next frame, when its header is here, may need room: this
     * pass reserves it (at is 0 now). */
    if (at && c->len >= 4 && !c->closing && !c->close_after_write &&
        !c->waiter && !c->blocked) {
        uint32_t n = wire_get32(c->buf);
        if (n <= WIRE_MAX_BODY && (c->authed || n <= s->unauthed_frame) &&
            !reserve(c, n))
            return;
    }
    /* A blocked client is read again once its replies drain. */
    reading(c, !c->blocked && !c->close_after_write);
    watch(c, at > 0);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct client *c = h->data;
    (void)hint;
    /* Before its token a client gets room for one small request; after,
     * for BASE bytes. A larger frame is reserved by process() when its
     * header comes, against max_memory. */
    size_t chunk = c->authed ? 65536 : 512;
    size_t most = c->rejected ? 512
                  : c->authed ? BASE
                              : c->srv->unauthed_frame + 4;
    if (most > BASE)
        most = BASE;
    if (c->cap - c->len < chunk && c->cap < most) {
        size_t cap = c->cap ? 2 * c->cap : chunk;
        if (cap < c->len + chunk)
            cap = c->len + chunk;
        if (cap > most)
            cap = most;
        uint8_t *p = realloc(c->buf, cap);
        if (p) {
            c->buf = p;
            c->cap = cap;
            recount(c);
        }
    }
    *b = uv_buf_init((char *)c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct client *c = st->data;
    (void)b;
    if (n == UV_ENOBUFS) {
        /* Its buffer is full, and no whole frame in it: only a parked
         * client that goes on sending gets here. */
        refuse(c, WIRE_BAD_REQUEST, "too much sent while waiting for a key");
        return;
    }
    if (n < 0) {
        close_client(c);
        return;
    }
    c->len += (size_t)n;
    process(c);
}

static void close_client(struct client *c)
{
    if (c->closing)
        return;
    struct store_server *s = c->srv;
    c->closing = true;
    recount(c);   /* nothing of it counts any more */
    if (c->waiter)
        waiter_end(c->waiter);
    if (c->rejected) {
        s->nrejected--;
    } else {
        s->nclients--;
        s->nunauthed -= !c->authed;
    }
    UNLINK(s->clients, c);
    uv_close((uv_handle_t *)&c->idle, on_closed);
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_connection(uv_stream_t *l, int status)
{
    struct store_server *s = l->data;
    if (status < 0)
        return;
    struct client *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    c->srv = s;
    c->handles = 2;
    c->authed = !s->token;
    uv_tcp_init(&s->loop, &c->tcp);
    uv_timer_init(&s->loop, &c->idle);
    c->tcp.data = c->idle.data = c;
    if (uv_accept(l, (uv_stream_t *)&c->tcp)) {
        uv_close((uv_handle_t *)&c->idle, on_closed);
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    char msg[160] = "";
    if (s->nclients >= s->max_clients)
        snprintf(msg, sizeof(msg), "the store serves at most %d connections "
                 "(max_clients) and has them all", s->max_clients);
    else if (!c->authed && s->nunauthed >= s->max_unauthed)
        snprintf(msg, sizeof(msg), "the store has %d connections that have "
                 "not shown the token yet, its limit (max_unauthed)",
                 s->max_unauthed);
    if (*msg && s->nrejected >= s->max_unauthed) {
        /* Refused ones waiting to read why are capped too. */
        uv_close((uv_handle_t *)&c->idle, on_closed);
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    LINK(s->clients, c);
    if (*msg) {
        /* Told at once, then read and dropped until it hangs up, so what
         * it sent meanwhile does not reset the connection under the
         * message. */
        c->rejected = true;
        s->nrejected++;
        say(c, WIRE_BUSY, msg);
    } else {
        s->nclients++;
        s->nunauthed += !c->authed;
    }
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    watch(c, true);
}

static void on_stop(uv_async_t *a)
{
    struct store_server *s = a->data;
    while (s->clients)
        close_client(s->clients);
    uv_close((uv_handle_t *)&s->listener, NULL);
    uv_close((uv_handle_t *)&s->stop, NULL);
}

static void *run(void *arg)
{
    struct store_server *s = arg;
    uv_run(&s->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* Room for the connections the limits allow, within the hard limit: a
 * soft limit of 1024 files would cut a large job off first. */
static void raise_files(const struct store_server *s)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)s->max_clients + (rlim_t)s->max_unauthed + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static void server_free(struct store_server *s)
{
    kv_free(&s->kv);
    kv_free(&s->waiting);
    free(s->pending);
    free(s->token);
    free(s);
}

dcoll_status_t dcoll_store_server_start(const char *host, int port,
                                        const dcoll_store_params_t *p,
                                        struct store_server **out, int *bound)
{
    struct store_server *s = calloc(1, sizeof(*s));
    if (!s || (p->token && !(s->token = strdup(p->token)))) {
        free(s);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: no memory");
    }
    s->max_clients = p->max_clients;
    s->max_unauthed = p->max_unauthed;
    s->unauthed_frame = (uint32_t)p->unauthed_frame;
    s->idle_ms = (uint64_t)(p->idle_timeout * 1000 + 0.5);
    if (!s->idle_ms)
        s->idle_ms = 1;
    s->max_memory = (size_t)p->max_memory;
    s->kv.limit = s->max_memory;
    s->idle_close_ms = (uint64_t)(p->idle_close * 1000 + 0.5);
    raise_files(s);
    dcoll_stdfds_open();
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) {
        server_free(s);
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "TCP store: host '%s' "
                           "does not resolve: %s", host, gai_strerror(rc));
    }
    uv_loop_init(&s->loop);
    uv_tcp_init(&s->loop, &s->listener);
    s->listener.data = s;
    rc = uv_tcp_bind(&s->listener, res->ai_addr, 0);
    freeaddrinfo(res);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&s->listener, 1024, on_connection);
    if (!rc) {
        struct sockaddr_storage sa;
        int len = sizeof(sa);
        rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&sa, &len);
        if (!rc)
            *bound = ntohs(sa.ss_family == AF_INET6
                               ? ((struct sockaddr_in6 *)&sa)->sin6_port
                               : ((struct sockaddr_in *)&sa)->sin_port);
    }
    if (!rc)
        rc = uv_async_init(&s->loop, &s->stop, on_stop);
    if (rc) {
        uv_close((uv_handle_t *)&s->listener, NULL);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        server_free(s);
        return dcoll_error(DCOLL_ERR_IO, "TCP store: cannot serve on %s:%d: "
                           "%s", host, port, uv_strerror(rc));
    }
    s->stop.data = s;
    /* The thread starts with every signal blocked: the program's signals
     * go to its own threads, and a write to a client that hung up returns
     * EPIPE instead of raising SIGPIPE, which would end the process. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&s->thread, NULL, run, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        on_stop(&s->stop);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        server_free(s);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "TCP store: cannot start the "
                           "server thread");
    }
    *out = s;
    return DCOLL_SUCCESS;
}

void dcoll_store_server_stop(struct store_server *s)
{
    uv_async_send(&s->stop);
    pthread_join(s->thread, NULL);
    uv_loop_close(&s->loop);
    server_free(s);
}
