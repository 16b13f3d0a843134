/* Deaths, as a launcher that lets survivors go on says them (dcoll_spawn
 * and dcollrun with on_failure continue). The launcher saw the process
 * end (waitpid), so a death it reports is certain, never a slow rank.
 *
 * In the job's store, under the attempt's prefix, the launcher alone
 * writes: dcoll/dead/K = "RANK text" for its K-th death (1, 2, ...), then
 * dcoll/dead/count = K. A rank reads the count now and then and each new
 * notice, on a connection of its own (the world's store handle belongs
 * to the program's thread), from whichever thread asks first.
 *
 * The survivors of a group agree on who is alive through the same store
 * (agree below): each says it has come; the lowest member not known
 * dead waits until every member has come or is dead and writes the list
 * by compare-and-set, while the others wait for the list (and take over
 * if that member dies); every one takes the list that was written. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "launch.h"
#include "store.h"

#define COUNT_KEY "dcoll/dead/count"
#define POLL_EVERY 0.2   /* seconds between asks of the store */
#define STORE_WAIT 2.0   /* seconds one ask may take */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dcoll_store_t *store;     /* this process's own connection */
static char **why;               /* by world rank; NULL: alive */
static int size;
static int64_t known;            /* notices read */
static _Atomic int ndead;        /* ranks known dead: 0 skips the lock */
static double next_ask;

dcoll_status_t dcoll_deaths_tell(dcoll_store_t *s, int64_t *count, int rank,
                                 const char *text)
{
    char key[64], v[DCOLL_ERROR_MAX + 16];
    snprintf(key, sizeof(key), "dcoll/dead/%lld", (long long)(*count + 1));
    int n = snprintf(v, sizeof(v), "%d %s", rank, text);
    dcoll_status_t st = dcoll_store_set(s, key, v, (size_t)n);
    if (!st) {
        snprintf(v, sizeof(v), "%lld", (long long)(*count + 1));
        st = dcoll_store_set(s, COUNT_KEY, v, strlen(v));
    }
    if (!st)
        ++*count;
    return st;
}

/* Where the notices are: the launcher's store (its address, token and
 * attempt prefix, from the environment dcollrun gave) or the keeper's
 * (keeper.c, given at open). */
static struct dcoll_deaths_at at;

/* A connection of this process's own to the store of the notices at a. */
static dcoll_status_t connect_at(const struct dcoll_deaths_at *a,
                                 dcoll_store_t **out)
{
    dcoll_store_params_t sp = DCOLL_STORE_PARAMS_INIT;
    sp.mask = DCOLL_STORE_PARAM_TIMEOUT;
    sp.timeout = STORE_WAIT;
    if (a->token[0]) {
        sp.mask |= DCOLL_STORE_PARAM_TOKEN;
        sp.token = a->token;
    }
    dcoll_store_t *s = NULL;
    dcoll_status_t st = dcoll_store_tcp_create(&s, a->addr, a->port, &sp);
    if (!st && (st = dcoll_store_prefix_over(out, a->prefix, s)))
        dcoll_store_destroy(&s);
    return st;
}

static dcoll_status_t connect_store(dcoll_store_t **out)
{
    return connect_at(&at, out);
}

/* The launcher's store, as dcollrun names it to its processes. */
static dcoll_status_t launcher_at(struct dcoll_deaths_at *a)
{
    const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    const char *attempt = getenv("TORCHELASTIC_RESTART_COUNT");
    char *end;
    long p = port ? strtol(port, &end, 10) : 0;
    if (!addr || !port || *end || p < 1 || p > 65535 || !attempt ||
        strlen(addr) >= sizeof(a->addr))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "DCOLL_ON_FAILURE="
                           "continue, but MASTER_ADDR, MASTER_PORT and "
                           "TORCHELASTIC_RESTART_COUNT do not all name the "
                           "launcher's store");
    memset(a, 0, sizeof(*a));
    snprintf(a->addr, sizeof(a->addr), "%s", addr);
    a->port = (int)p;
    snprintf(a->prefix, sizeof(a->prefix), DCOLL_ATTEMPT_PREFIX, attempt);
    return DCOLL_SUCCESS;
}

bool dcoll_deaths_reported(void)
{
    const char *by = getenv("DCOLL_DEATHS");
    return dcoll_continue_wanted() && by && !strcmp(by, "launcher");
}

int dcoll_deaths_before_init(char *text, size_t cap)
{
    struct dcoll_deaths_at a;
    dcoll_store_t *s = NULL;
    if (!dcoll_deaths_reported() || launcher_at(&a) || connect_at(&a, &s))
        return -1;
    int64_t count = 0;
    char v[DCOLL_ERROR_MAX + 16];
    size_t len = 0;
    long r = -1;
    if (!dcoll_store_add(s, COUNT_KEY, 0, &count) && count > 0 &&
        !dcoll_store_get(s, "dcoll/dead/1", v, sizeof(v) - 1, &len)) {
        v[len] = '\0';
        char *end;
        r = strtol(v, &end, 10);
        if (end == v || r < 0)
            r = -1;
        else
            snprintf(text, cap, "%s", *end == ' ' ? end + 1 : end);
    }
    dcoll_store_destroy(&s);
    return (int)r;
}

dcoll_status_t dcoll_deaths_open(int world_size,
                                 const struct dcoll_deaths_at *where)
{
    struct dcoll_deaths_at a;
    if (where)
        a = *where;
    else if (!dcoll_deaths_reported())
        return DCOLL_SUCCESS;
    else if (launcher_at(&a))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: %s",
                           dcoll_last_error());
    pthread_mutex_lock(&lock);
    at = a;
    pthread_mutex_unlock(&lock);
    char **w = calloc((size_t)world_size, sizeof(*w));
    if (!w)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory for "
                           "the deaths of %d ranks", world_size);
    dcoll_store_t *s = NULL;
    dcoll_status_t st = connect_store(&s);
    if (st) {
        free(w);
        return dcoll_error(st, "dcoll_init: %s", dcoll_last_error());
    }
    pthread_mutex_lock(&lock);
    store = s;
    why = w;
    size = world_size;
    known = 0;
    next_ask = 0;
    pthread_mutex_unlock(&lock);
    return DCOLL_SUCCESS;
}

void dcoll_deaths_close(void)
{
    pthread_mutex_lock(&lock);
    if (store)
        dcoll_store_destroy(&store);
    for (int i = 0; why && i < size; i++)
        free(why[i]);
    free(why);
    why = NULL;
    size = 0;
    atomic_store(&ndead, 0);
    memset(&at, 0, sizeof(at));
    pthread_mutex_unlock(&lock);
}

/* Read the notices not read yet. Under lock. */
static void refresh(void)
{
    int64_t count = 0;
    if (!store || dcoll_store_add(store, COUNT_KEY, 0, &count))
        return;   /* the launcher's store is gone: nothing new is known */
    while (known < count) {
        char key[64], v[DCOLL_ERROR_MAX + 16];
        size_t len = 0;
        snprintf(key, sizeof(key), "dcoll/dead/%lld", (long long)known + 1);
        if (dcoll_store_get(store, key, v, sizeof(v) - 1, &len))
            return;
        v[len] = '\0';
        char *end;
        long r = strtol(v, &end, 10);
        known++;
        if (end == v || r < 0 || r >= size || why[r])
            continue;
        why[r] = strdup(*end == ' ' ? end + 1 : end);
        atomic_fetch_add(&ndead, 1);
    }
}

/* The count key is set after the notice, so it may be missing (no death
 * yet): the store's add then makes it 0, which is what it means. */
bool dcoll_deaths_poll(bool now)
{
    if (pthread_mutex_trylock(&lock))
        return false;   /* another thread asks: its answer will do */
    bool on = store != NULL;
    double t = dcoll_now();
    if (on && (now || t >= next_ask)) {
        refresh();
        next_ask = t + POLL_EVERY;
    }
    pthread_mutex_unlock(&lock);
    return on;
}

int dcoll_deaths_first(const int *ranks, int n, char *text, size_t cap)
{
    int found = -1;
    if (!atomic_load_explicit(&ndead, memory_order_acquire))
        return -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; why && i < n && found < 0; i++) {
        int w = ranks ? ranks[i] : i;
        if (w >= 0 && w < size && why[w]) {
            found = i;
            if (text)
                snprintf(text, cap, "%s", why[w]);
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

/* ---- the survivors' agreement ---- */

static bool is_dead(int w)
{
    pthread_mutex_lock(&lock);
    bool d = why && w >= 0 && w < size && why[w];
    pthread_mutex_unlock(&lock);
    return d;
}

struct agree {
    const char *fn, *name, *where;
    dcoll_store_t *s;
    int me, n;
    const int *ranks;   /* world ranks; NULL: 0..n-1 */
    double deadline, timeout;
};

static int world(const struct agree *a, int i)
{
    return a->ranks ? a->ranks[i] : i;
}

/* Member i's key: there once it came, holding its count of groups. */
static void alive_key(char key[128], const char *name, int i)
{
    snprintf(key, 128, "dcoll/shrink/%s/alive/%d", name, i);
}

/* The lowest member not known dead. */
static int lowest_living(const struct agree *a)
{
    for (int i = 0; i < a->n; i++)
        if (!is_dead(world(a, i)))
            return i;
    return -1;
}

static bool came(struct agree *a, int i, dcoll_status_t *st)
{
    char key[128];
    const char *k1[1] = {key};
    int exist = 0;
    alive_key(key, a->name, i);
    *st = dcoll_store_check(a->s, k1, 1, &exist);
    return !*st && exist;
}

/* The decider: wait until every member has come or is dead (polling the
 * count of those that came, then each member's key once), then write
 * the list "ID r r r" (ID: one past the most groups any survivor made)
 * unless another decider has. *list gets the list that stands. */
static dcoll_status_t decide(struct agree *a, int made, char *list,
                             size_t cap)
{
    char ckey[128], key[128], v[32];
    snprintf(ckey, sizeof(ckey), "dcoll/shrink/%s/came", a->name);
    unsigned char *come = calloc((size_t)a->n, 1);
    if (!come)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", a->fn);
    come[a->me] = 1;
    dcoll_status_t st = DCOLL_SUCCESS;
    int waiting = a->n;
    double pause = 0.001;
    while (!st) {
        dcoll_deaths_poll(false);
        int dead = 0;
        for (int i = 0; i < a->n; i++)
            dead += come[i] != 1 && is_dead(world(a, i));
        int64_t count = 0;
        if ((st = dcoll_store_add(a->s, ckey, 0, &count)))
            break;
        if (count + dead >= a->n) {
            waiting = 0;
            for (int i = 0; i < a->n && !st; i++)
                if (come[i] != 1 && (come[i] = came(a, i, &st) ? 1 : 0) != 1)
                    waiting += !is_dead(world(a, i));
        }
        if (st || !waiting)
            break;
        if (dcoll_now() >= a->deadline) {
            size_t at = 0;
            int shown = 0, missing = 0;
            list[0] = '\0';
            for (int i = 0; i < a->n; i++) {
                if (come[i] == 1 || is_dead(world(a, i)) || came(a, i, &st))
                    continue;
                missing++;
                if (shown++ < 16 && at < cap - 64)
                    at += (size_t)snprintf(list + at, cap - at,
                                           "%s%d (world %d)", at ? ", " : "",
                                           i, world(a, i));
            }
            st = dcoll_error(DCOLL_ERR_TIMEOUT, "%s on %s timed out after "
                             "%g s: rank%s %s%s did not come, and no launcher "
                             "said %s died (a slow rank is waited for, "
                             "never left out)", a->fn, a->where, a->timeout,
                             missing > 1 ? "s" : "", list,
                             shown > 16 ? ", ..." : "",
                             missing > 1 ? "they" : "it");
            break;
        }
        usleep((useconds_t)(pause * 1e6));
        pause = pause < 0.02 ? pause * 2 : 0.02;
    }
    /* One that came and died since is not in the group. */
    dcoll_deaths_poll(true);
    for (int i = 0; i < a->n; i++)
        if (come[i] == 1 && i != a->me && is_dead(world(a, i)))
            come[i] = 2;
    int most = made;
    for (int i = 0; i < a->n && !st; i++) {
        if (come[i] != 1 || i == a->me)
            continue;
        size_t len = 0;
        alive_key(key, a->name, i);
        if (!(st = dcoll_store_get(a->s, key, v, sizeof(v) - 1, &len))) {
            v[len] = '\0';
            int m = atoi(v);
            most = m > most ? m : most;
        }
    }
    char *mine = st ? NULL : malloc(cap);
    if (!st && !mine)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", a->fn);
    if (!st) {
        size_t at = (size_t)snprintf(mine, cap, "%d", most + 1);
        for (int i = 0; i < a->n && at < cap - 16; i++)
            if (come[i] == 1)
                at += (size_t)snprintf(mine + at, cap - at, " %d", i);
        size_t len = 0;
        snprintf(key, sizeof(key), "dcoll/shrink/%s/list", a->name);
        if (!(st = dcoll_store_compare_set(a->s, key, "", 0, mine,
                                           strlen(mine), list, cap - 1,
                                           &len)))
            list[len] = '\0';
        free(mine);
    }
    free(come);
    return st;
}

/* The others: wait for the list; where the decider died meanwhile, the
 * lowest living member (perhaps this one) decides instead. */
static dcoll_status_t await(struct agree *a, int made, char *list, size_t cap)
{
    char key[128];
    snprintf(key, sizeof(key), "dcoll/shrink/%s/list", a->name);
    const char *k1[1] = {key};
    for (;;) {
        dcoll_deaths_poll(false);
        int lead = lowest_living(a);
        if (lead == a->me)
            return decide(a, made, list, cap);
        double left = a->deadline + 1 - dcoll_now();
        if (left <= 0)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "%s on %s timed out after "
                               "%g s: rank %d (world %d), which gathers the "
                               "survivors, did not say who they are", a->fn,
                               a->where, a->timeout, lead, world(a, lead));
        dcoll_status_t st = dcoll_store_wait(a->s, k1, 1,
                                             left < 0.25 ? left : 0.25);
        if (st == DCOLL_ERR_TIMEOUT)
            continue;
        size_t len = 0;
        if (!st && !(st = dcoll_store_get(a->s, key, list, cap - 1, &len)))
            list[len] = '\0';
        return st;
    }
}

dcoll_status_t dcoll_deaths_agree(const char *fn, const char *name,
                                  const char *where, int me, int n,
                                  const int *ranks, int made, double timeout,
                                  int *alive, int *nalive, int *id)
{
    struct agree a = {fn, name, where, NULL, me, n, ranks,
                      dcoll_now() + timeout, timeout};
    dcoll_status_t st = connect_store(&a.s);
    if (st)
        return dcoll_error(st, "%s: %s", fn, dcoll_last_error());
    char key[128], v[32];
    int64_t count = 0;
    alive_key(key, name, me);
    snprintf(v, sizeof(v), "%d", made);
    if (!(st = dcoll_store_set(a.s, key, v, strlen(v)))) {
        snprintf(key, sizeof(key), "dcoll/shrink/%s/came", name);
        st = dcoll_store_add(a.s, key, 1, &count);
    }
    size_t cap = (size_t)n * 12 + 32;
    char *list = st ? NULL : malloc(cap);
    if (!st && !list)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    if (!st)
        st = await(&a, made, list, cap);
    dcoll_store_destroy(&a.s);
    if (st) {
        free(list);
        return st == DCOLL_ERR_TIMEOUT || !strncmp(dcoll_last_error(), fn,
                                                   strlen(fn))
                   ? st
                   : dcoll_error(st, "%s: %s", fn, dcoll_last_error());
    }
    /* The list that stands, whoever wrote it. */
    char *p = list, *end;
    *id = (int)strtol(p, &end, 10);
    *nalive = 0;
    bool in = false;
    for (p = end; *p;) {
        long r = strtol(p, &end, 10);
        if (end == p || r < 0 || r >= n || *nalive >= n) {
            dcoll_error(DCOLL_ERR_INTERNAL, "%s: the survivors' list in the "
                        "store is garbled: '%.64s'", fn, list);
            free(list);
            return DCOLL_ERR_INTERNAL;
        }
        alive[(*nalive)++] = (int)r;
        in |= r == me;
        p = end;
    }
    free(list);
    if (!in)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s on %s: the other "
                           "ranks agreed on the survivors without this one "
                           "(rank %d): it came too late", fn, where, me);
    return DCOLL_SUCCESS;
}
