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
 * (agree below): each says it has come, each waits until every member
 * has come or is dead, and the first to see that writes the list by
 * compare-and-set; every one takes the list that was written. */
#include <limits.h>
#include <pthread.h>
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

/* A connection to the store the launcher serves, as the rendezvous made
 * the world's (its address, token and attempt prefix). */
static dcoll_status_t connect_store(dcoll_store_t **out)
{
    const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    const char *attempt = getenv("TORCHELASTIC_RESTART_COUNT");
    char *end;
    long p = port ? strtol(port, &end, 10) : 0;
    if (!addr || !port || *end || p < 1 || p > 65535 || !attempt)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "DCOLL_ON_FAILURE="
                           "continue, but MASTER_ADDR, MASTER_PORT and "
                           "TORCHELASTIC_RESTART_COUNT do not all name the "
                           "launcher's store");
    dcoll_store_params_t sp = DCOLL_STORE_PARAMS_INIT;
    sp.mask = DCOLL_STORE_PARAM_TIMEOUT;
    sp.timeout = STORE_WAIT;
    dcoll_store_t *s = NULL;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "/worker/attempt_%s", attempt);
    dcoll_status_t st = dcoll_store_tcp_create(&s, addr, (int)p, &sp);
    if (!st && (st = dcoll_store_prefix_over(out, prefix, s)))
        dcoll_store_destroy(&s);
    return st;
}

bool dcoll_deaths_reported(void)
{
    const char *e = getenv("DCOLL_ON_FAILURE");
    const char *agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    return e && !strcmp(e, "continue") && agent && !strcmp(agent, "True");
}

dcoll_status_t dcoll_deaths_open(int world_size)
{
    if (!dcoll_deaths_reported())
        return DCOLL_SUCCESS;
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

dcoll_status_t dcoll_deaths_agree(const char *fn, const char *name,
                                  const char *where, int me, int n,
                                  const int *ranks, int made, double timeout,
                                  int *alive, int *nalive, int *id)
{
    dcoll_store_t *s = NULL;
    dcoll_status_t st = connect_store(&s);
    if (st)
        return dcoll_error(st, "%s: %s", fn, dcoll_last_error());
    char key[128], v[32], ckey[128];
    int64_t came = 0;
    snprintf(key, sizeof(key), "dcoll/shrink/%s/alive/%d", name, me);
    snprintf(ckey, sizeof(ckey), "dcoll/shrink/%s/came", name);
    snprintf(v, sizeof(v), "%d", made);
    if ((st = dcoll_store_set(s, key, v, strlen(v))) ||
        (st = dcoll_store_add(s, ckey, 1, &came))) {
        dcoll_store_destroy(&s);
        return dcoll_error(st, "%s: %s", fn, dcoll_last_error());
    }
    /* Who has come: come[i] 1, dead 2, not yet 0. The count of those
     * that came is read until it and the dead could cover every member;
     * only then is each member's key looked at. */
    unsigned char *come = calloc((size_t)n, 1);
    if (!come) {
        dcoll_store_destroy(&s);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", fn);
    }
    come[me] = 1;
    double deadline = dcoll_now() + timeout;
    char list[DCOLL_ERROR_MAX];
    int waiting = n;
    for (;;) {
        dcoll_deaths_poll(false);
        int dead = 0;
        for (int i = 0; i < n; i++)
            dead += come[i] != 1 && is_dead(ranks[i]);
        if (!(st = dcoll_store_add(s, ckey, 0, &came)) && came + dead >= n) {
            waiting = 0;
            for (int i = 0; i < n && !st; i++) {
                if (come[i] == 1)
                    continue;
                const char *k1[1] = {key};
                int exist = 0;
                snprintf(key, sizeof(key), "dcoll/shrink/%s/alive/%d", name,
                         i);
                st = dcoll_store_check(s, k1, 1, &exist);
                if (!st && exist)
                    come[i] = 1;
                else if (is_dead(ranks[i]))
                    come[i] = 2;
                else
                    waiting++;
            }
        }
        if (st || !waiting)
            break;
        if (dcoll_now() >= deadline) {
            size_t at = 0;
            int shown = 0, missing = 0;
            list[0] = '\0';
            for (int i = 0; i < n; i++) {
                if (come[i] == 1 || is_dead(ranks[i]))
                    continue;
                const char *k1[1] = {key};
                int exist = 0;
                snprintf(key, sizeof(key), "dcoll/shrink/%s/alive/%d", name,
                         i);
                if (!dcoll_store_check(s, k1, 1, &exist) && exist)
                    continue;
                missing++;
                if (shown++ < 16 && at < sizeof(list) - 64)
                    at += (size_t)snprintf(list + at, sizeof(list) - at,
                                           "%s%d (world %d)", at ? ", " : "",
                                           i, ranks[i]);
            }
            st = dcoll_error(DCOLL_ERR_TIMEOUT, "%s on %s timed out after "
                             "%g s: rank%s %s%s did not come, and no launcher "
                             "said %s died (a slow rank is waited for, "
                             "never left out)", fn, where, timeout,
                             missing > 1 ? "s" : "", list,
                             shown > 16 ? ", ..." : "",
                             missing > 1 ? "they" : "it");
            break;
        }
        usleep(5000);
    }
    if (st) {
        free(come);
        dcoll_store_destroy(&s);
        return st;
    }
    /* The list: "ID r r r" (group ranks of the old group), whoever wrote
     * it first; ID is one past the most groups any survivor has made. */
    int most = made;
    size_t at = 0;
    char mine[16384], got[16384];
    for (int i = 0; i < n && !st; i++) {
        if (come[i] != 1 || i == me)
            continue;
        snprintf(key, sizeof(key), "dcoll/shrink/%s/alive/%d", name, i);
        size_t len = 0;
        if (!(st = dcoll_store_get(s, key, v, sizeof(v) - 1, &len))) {
            v[len] = '\0';
            int m = atoi(v);
            most = m > most ? m : most;
        }
    }
    at = (size_t)snprintf(mine, sizeof(mine), "%d", most + 1);
    for (int i = 0; i < n && at < sizeof(mine) - 16; i++)
        if (come[i] == 1)
            at += (size_t)snprintf(mine + at, sizeof(mine) - at, " %d", i);
    free(come);
    size_t len = 0;
    snprintf(key, sizeof(key), "dcoll/shrink/%s/list", name);
    if (!st)
        st = dcoll_store_compare_set(s, key, "", 0, mine, strlen(mine), got,
                                     sizeof(got) - 1, &len);
    dcoll_store_destroy(&s);
    if (st)
        return dcoll_error(st, "%s: %s", fn, dcoll_last_error());
    got[len] = '\0';
    /* Parse what was written. */
    char *p = got, *end;
    *id = (int)strtol(p, &end, 10);
    *nalive = 0;
    bool in = false;
    for (p = end; *p;) {
        long r = strtol(p, &end, 10);
        if (end == p || r < 0 || r >= n)
            return dcoll_error(DCOLL_ERR_INTERNAL, "%s: the survivors' list "
                               "in the store is garbled: '%.64s'", fn, got);
        alive[(*nalive)++] = (int)r;
        in |= r == me;
        p = end;
    }
    if (!in)
        return dcoll_error(DCOLL_ERR_INVALID_STATE, "%s on %s: the other "
                           "ranks agreed on the survivors without this one "
                           "(rank %d): it came too late", fn, where, me);
    return DCOLL_SUCCESS;
}
