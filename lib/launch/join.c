/* Joining processes that no MPI launcher started, through the store the
 * rendezvous made: every process names its host, rank 0 publishes what
 * the MPI layer needs (a server's address, a port), then, unless that
 * server made them one world already, admits the others one at a time,
 * each accepted by all who joined before it. Every MPI step goes through
 * the communicator services table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "launch.h"

#define PORT_MAX 1024

static dcoll_status_t get_str(dcoll_store_t *s, const char *key, char *buf,
                              size_t cap)
{
    size_t len = 0;
    dcoll_status_t st = dcoll_store_get(s, key, buf, cap - 1, &len);
    if (!st)
        buf[len] = '\0';
    return st;
}

static dcoll_status_t set_str(dcoll_store_t *s, const char *key,
                              const char *v)
{
    return dcoll_store_set(s, key, v, strlen(v));
}

/* Every step after MPI has started; on failure the caller frees *comm. */
static dcoll_status_t admit(const struct dcoll_comm_ops *svc,
                            dcoll_store_t *store, int rank, int size,
                            char *port, void **comm)
{
    dcoll_status_t st;
    char key[64];
    if (rank == 0) {
        st = svc->join_open(port, PORT_MAX);
        /* The others wait on this key: tell them either way. */
        set_str(store, "dcoll/join/port", st ? "" : port);
        if (st)
            return st;
    } else if ((st = get_str(store, "dcoll/join/port", port, PORT_MAX))) {
        return st;
    } else if (!port[0]) {
        return dcoll_error(DCOLL_ERR_MPI, "dcoll_init: rank 0 could not "
                           "open an MPI port to join at");
    }
    int have = 1;
    if (rank > 0) {
        snprintf(key, sizeof(key), "dcoll/join/turn/%d", rank);
        char ignored[8];
        if ((st = get_str(store, key, ignored, sizeof(ignored))) ||
            (st = svc->join_connect(port, comm)))
            return st;
        have = rank + 1;
    }
    for (; have < size; have++) {
        if (rank == 0) {
            snprintf(key, sizeof(key), "dcoll/join/turn/%d", have);
            if ((st = set_str(store, key, "1")))
                return st;
        }
        if ((st = svc->join_accept(port, comm)))
            return st;
    }
    return DCOLL_SUCCESS;
}

/* "1,3,7" of the ranks not yet come (bounded; "..." past the room). */
static void missing_list(const bool *came, int size, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int r = 0; r < size; r++) {
        if (came[r])
            continue;
        int w = snprintf(out + n, cap - n, "%s%d", n ? "," : "", r);
        if (w < 0 || (size_t)w >= cap - n) {
            snprintf(out + (n < cap - 4 ? n : cap - 4), 4, "...");
            return;
        }
        n += (size_t)w;
    }
}

/* Rank 0, having told the others why the job cannot start: its store goes
 * when it returns, so wait (a little) for the readers it expects to say
 * they have read it. Else one that reads late sees the store's connection
 * reset, and its launcher may stop rank 0 on that before rank 0 has said
 * its reason. */
static void linger(dcoll_store_t *store, int readers, double most)
{
    double end = dcoll_now() + most;
    int64_t have = 0;
    while (!dcoll_store_add(store, "dcoll/join/read", 0, &have) &&
           have < readers && dcoll_now() < end)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
}

/* Rank r ended (how: its launcher's words) before the job's rendezvous
 * at where was over. */
static dcoll_status_t dead_before(const char *fn, const char *where, int r,
                                  const char *how)
{
    return dcoll_error(DCOLL_ERR_RANK_DIED, "%s: rank %d %s, before the "
                       "rendezvous at %s was over, so the job cannot start "
                       "(on_failure continue goes on past a rank that dies "
                       "after dcoll_init)", fn, r, how, where);
}

/* The server key rank 0 sets when every process has come (or why not),
 * waited for a little past rank 0's own deadline, so that its verdict
 * comes first; and in slices, so that a death the launcher tells ends
 * the wait at once. */
static dcoll_status_t wait_server(dcoll_store_t *store, double timeout,
                                  const char *where, char *uri, size_t cap)
{
    static const char *const key[1] = {"dcoll/join/server"};
    double end = dcoll_now() + timeout + 5;
    bool told = dcoll_deaths_reported();
    for (;;) {
        double left = end - dcoll_now();
        double slice = told && left > 0.5 ? 0.5 : left > 0.05 ? left : 0.05;
        dcoll_status_t st = dcoll_store_wait(store, key, 1, slice);
        if (!st)
            return get_str(store, key[0], uri, cap);
        if (st != DCOLL_ERR_TIMEOUT)
            return st;
        if (left <= slice)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_init: rank 0 did "
                               "not say within %g s whether every process "
                               "came to the rendezvous at %s (it may have "
                               "ended before: its launcher's or its own "
                               "message says)", timeout + 5, where);
        char how[DCOLL_ERROR_MAX];
        int r = told ? dcoll_deaths_before_init(how, sizeof(how)) : -1;
        if (r >= 0)
            return dead_before("dcoll_init", where, r, how);
    }
}

/* How often the waiting side says who has come: DCOLL_INIT_REPORT
 * seconds (10 by default; 0: never). */
static double report_every(void)
{
    const char *v = getenv("DCOLL_INIT_REPORT");
    if (!v || !*v)
        return 10;
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    return errno || *end || !(t >= 0) ? 10 : t;
}

dcoll_status_t dcoll_launch_wait_all(dcoll_store_t *store,
                                     const struct dcoll_wait_all *w,
                                     int size, double timeout,
                                     const char *where)
{
    bool *came = calloc((size_t)size, sizeof(bool));
    if (!came)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory", w->fn);
    came[0] = true;
    int have = 1;
    double start = dcoll_now(), every = report_every(), said = start;
    double asked = start;
    bool told = dcoll_deaths_reported();
    dcoll_status_t st = DCOLL_SUCCESS;
    while (have < size && !st) {
        for (int r = 1; r < size && !st; r++) {
            char key[64];
            int exist = 0;
            if (came[r])
                continue;
            snprintf(key, sizeof(key), w->key_fmt, r);
            const char *keys[1] = {key};
            st = dcoll_store_check(store, keys, 1, &exist);
            if (!st && exist) {
                came[r] = true;
                have++;
            }
        }
        double t = dcoll_now();
        /* A process its launcher saw end (on_failure continue) never
         * comes: said at once, not at the timeout. */
        if (!st && told && t - asked >= 0.5) {
            char how[DCOLL_ERROR_MAX];
            int r = dcoll_deaths_before_init(how, sizeof(how));
            asked = t;
            if (r >= 0)
                st = dead_before(w->fn, where, r, how);
        }
        if (st)
            break;
        bool late = t - start > timeout;
        bool say = every > 0 && t - said >= every;
        char list[256];
        if (st || have == size)
            break;
        if (late || say)   /* the list only when it is said */
            missing_list(came, size, list, sizeof(list));
        if (late) {
            st = dcoll_error(DCOLL_ERR_TIMEOUT, "%s: the rendezvous at %s: "
                             "%d of %d %s came within %g s; %s %s never "
                             "did", w->fn, where, have, size, w->noun,
                             timeout, w->who, list);
        } else if (say) {
            fprintf(stderr, "%s: %s: waiting at %s: %d of %d %s have come "
                    "(not yet: %s %s; %.1f s of %g)\n", w->tag, w->fn,
                    where, have, size, w->noun, w->who, list, t - start,
                    timeout);
            said = t;
        }
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    free(came);
    return st;
}

/* Rank 0: every rank's host name, in rank order, for the MPI layer. */
static dcoll_status_t gather_hosts(dcoll_store_t *store, int size,
                                   const char *mine, char ***out)
{
    char **hosts = calloc((size_t)size, sizeof(*hosts));
    if (!hosts)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory");
    dcoll_status_t st = DCOLL_SUCCESS;
    for (int r = 0; r < size && !st; r++) {
        char key[64], name[256];
        snprintf(key, sizeof(key), "dcoll/join/host/%d", r);
        if (r == 0)
            snprintf(name, sizeof(name), "%s", mine);
        else
            st = get_str(store, key, name, sizeof(name));
        if (!st && !(hosts[r] = strdup(name)))
            st = dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory");
    }
    *out = hosts;
    return st;
}

static void free_hosts(char **hosts, int size)
{
    for (int r = 0; hosts && r < size; r++)
        free(hosts[r]);
    free(hosts);
}

dcoll_status_t dcoll_launch_join(const struct dcoll_comm_ops *svc,
                                 dcoll_store_t *store, int rank, int size,
                                 int thread_level, double timeout,
                                 const char *where, void **joined,
                                 int *fcomm)
{
    char uri[1024], port[PORT_MAX] = "", host[256] = "";
    dcoll_status_t st;
    *joined = NULL;
    dcoll_host_name(host, sizeof(host));
    if (rank == 0) {
        char **hosts = NULL;
        static const struct dcoll_wait_all hosts_of = {
            "dcoll_init", "dcoll[0]", "dcoll/join/host/%d", "processes",
            "rank(s)"};
        st = dcoll_launch_wait_all(store, &hosts_of, size, timeout, where);
        if (st) {
            /* The others wait on the server key: they learn why (a
             * death, in rank 0's words). */
            char why[900] = "!", keep[DCOLL_ERROR_MAX];
            const char *e = dcoll_last_error();
            if (st == DCOLL_ERR_RANK_DIED)
                snprintf(why, sizeof(why), "!%s",
                         !strncmp(e, "dcoll_init: ", 12) ? e + 12 : e);
            snprintf(keep, sizeof(keep), "%s", e);
            set_str(store, "dcoll/join/server", why);
            linger(store, size - 1, 1);
            return dcoll_error(st, "%s", keep);
        }
        st = gather_hosts(store, size, host, &hosts);
        if (!st)
            st = svc->join_server(timeout, size, (const char *const *)hosts,
                                  uri, sizeof(uri));
        free_hosts(hosts, size);
        /* The others wait on this key: tell them either way ("-" and why:
         * rank 0 failed; "": this MPI needs no server). Why goes with it,
         * since a launcher may stop rank 0 once another rank has failed,
         * before rank 0's program prints its own message. */
        if (st) {
            char why[900], keep[DCOLL_ERROR_MAX];
            const char *e = dcoll_last_error();
            snprintf(keep, sizeof(keep), "%s", e);
            if (!strncmp(e, "dcoll_init: ", 12))
                e += 12;
            snprintf(why, sizeof(why), "-%s", e);
            set_str(store, "dcoll/join/server", why);
            linger(store, size - 1, 5);
            return dcoll_error(st, "%s", keep);
        }
        set_str(store, "dcoll/join/server", uri);
    } else {
        char key[64];
        snprintf(key, sizeof(key), "dcoll/join/host/%d", rank);
        if ((st = set_str(store, key, host)) ||
            (st = wait_server(store, timeout, where, uri, sizeof(uri))))
            return st;
        if (uri[0] == '!' || uri[0] == '-')
            dcoll_store_add(store, "dcoll/join/read", 1, NULL);
        if (!strcmp(uri, "!"))
            return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_init: not every "
                               "process came to the rendezvous at %s in "
                               "time; rank 0's message names those that "
                               "did not", where);
        if (uri[0] == '!')   /* rank 0's reason */
            return dcoll_error(DCOLL_ERR_RANK_DIED, "dcoll_init: %s",
                               uri + 1);
        if (uri[0] == '-')
            return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_init: rank 0 "
                               "could not start the server that "
                               "processes without an MPI launcher need: "
                               "%s", uri[1] ? uri + 1 : "(its message is "
                               "on rank 0)");
    }
    bool whole = false;
    if (!(st = svc->join_use(uri, rank, size)) &&
        !(st = svc->join_begin(thread_level, size, joined, &whole)) &&
        !whole)
        st = admit(svc, store, rank, size, port, joined);
    /* Rank 0's port closes either way; a joined world is checked. */
    dcoll_status_t est = svc->join_end(rank == 0 ? port : NULL,
                                       st ? NULL : *joined, rank, size,
                                       fcomm);
    if (!st)
        st = est;
    if (st) {
        svc->join_free(*joined);
        *joined = NULL;
        svc->join_stop();
    }
    return st;
}
