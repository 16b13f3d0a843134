/* Rendezvous by URL: the registry of schemes and the built-in handlers.
 * env:// reads torch's variables (or SLURM's), tcp:// and file:// their
 * query; env:// and tcp:// meet at a TCP store that rank 0 serves, file://
 * at a file store. The checks follow torch's handlers, in dcoll's words. */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "rendezvous.h"
#include "dcoll/store.h"
#include "store.h"
#include "url.h"

#define MAX_SCHEMES 32
#define DEFAULT_TIMEOUT 300.0

static struct {
    char scheme[URL_MAX_SCHEME];
    dcoll_rendezvous_fn fn;
    void *arg;
} reg[MAX_SCHEMES];
static int nreg;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

/* What a built-in handler says went wrong, for the caller to prefix. */
static _Thread_local char why_buf[512];

static dcoll_status_t say(const char **why, dcoll_status_t st,
                          const char *fmt, ...) DCOLL_PRINTF(3, 4);

static dcoll_status_t say(const char **why, dcoll_status_t st,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
    va_end(ap);
    *why = why_buf;
    return st;
}

/* Pass on a failure that already set the last error (a store's). */
static dcoll_status_t pass(const char **why, dcoll_status_t st)
{
    return say(why, st, "%s", dcoll_last_error());
}

/* A variable's value, or NULL when unset or empty (as torch reads it). */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* One integer from the first of names that is set; *from names it. */
static dcoll_status_t from_env(const char *const *names, long lo, long *out,
                               const char **from, const char **why)
{
    for (int i = 0; names[i]; i++) {
        const char *v = env(names[i]);
        if (!v)
            continue;
        *from = names[i];
        *out = url_int(v, strlen(v), lo, 1L << 30);
        if (*out < 0)
            return say(why, DCOLL_ERR_INVALID_ARGUMENT, "environment "
                       "variable %s='%s' is not a number in range",
                       names[i], v);
        return DCOLL_SUCCESS;
    }
    return say(why, DCOLL_ERR_INVALID_ARGUMENT, "environment variable %s "
               "expected, but not set (nor %s)", names[0], names[1]);
}

static dcoll_status_t parse(const char *url, struct dcoll_url *u,
                            const char **why)
{
    char err[256];
    if (!url_parse(url, u, err, sizeof(err)))
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "%s", err);
    return DCOLL_SUCCESS;
}

static dcoll_status_t check_rank(long rank, const char *rf, long size,
                                 const char *sf, const char **why)
{
    if (rank >= size)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "rank %ld (from %s) is "
                   "not below the world size %ld (from %s)", rank, rf, size,
                   sf);
    return DCOLL_SUCCESS;
}

/* An env:// URL parsed: a query at most, no address or path. */
static dcoll_status_t env_url(const char *url, struct dcoll_url *u,
                              const char **why)
{
    dcoll_status_t st = parse(url, u, why);
    if (!st && (u->host[0] || u->port >= 0 || u->path[0]))
        st = say(why, DCOLL_ERR_INVALID_ARGUMENT, "'%.64s' has an address "
                 "or path, but env:// takes no address (it reads "
                 "MASTER_ADDR and MASTER_PORT)", url);
    return st;
}

/* env://'s rank and size: the query, else RANK/WORLD_SIZE, else SLURM's. */
static dcoll_status_t env_rank_size(const char *url, struct dcoll_url *u,
                                    struct dcoll_rdzv *r, const char **why)
{
    dcoll_status_t st = env_url(url, u, why);
    if (st)
        return st;
    static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"WORLD_SIZE",
                                            "SLURM_STEP_NUM_TASKS",
                                            "SLURM_NTASKS", NULL};
    long rank = u->rank, size = u->world_size;
    r->rank_from = r->size_from = "the URL";
    if (rank < 0 && (st = from_env(rank_vars, 0, &rank, &r->rank_from, why)))
        return st;
    if (size < 0 && (st = from_env(size_vars, 1, &size, &r->size_from, why)))
        return st;
    if ((st = check_rank(rank, r->rank_from, size, r->size_from, why)))
        return st;
    r->rank = (int)rank;
    r->world_size = (int)size;
    return DCOLL_SUCCESS;
}

/* Rank 0 serves; everyone connects. Under an agent that serves the store
 * itself (dcollrun across nodes, torchrun: TORCHELASTIC_USE_AGENT_STORE
 * is "True"), every rank connects, and sees the store under
 * /worker/attempt_<TORCHELASTIC_RESTART_COUNT>, as torch's ranks do. */
static dcoll_status_t tcp_store(const char *host, int port, int rank,
                                const struct dcoll_url *u, double timeout,
                                dcoll_store_t **store, const char **why)
{
    const char *agent = env("TORCHELASTIC_USE_AGENT_STORE");
    bool by_agent = agent && !strcmp(agent, "True");
    char prefix[64];
    if (by_agent) {
        const char *n = env("TORCHELASTIC_RESTART_COUNT");
        if (!n || url_int(n, strlen(n), 0, INT_MAX) < 0)
            return say(why, DCOLL_ERR_INVALID_ARGUMENT, "the agent serves "
                       "the store (TORCHELASTIC_USE_AGENT_STORE=True), but "
                       "TORCHELASTIC_RESTART_COUNT is %s%s%s: the attempt's "
                       "keys cannot be found", n ? "'" : "not set",
                       n ? n : "", n ? "', not a count" : "");
        snprintf(prefix, sizeof(prefix), DCOLL_ATTEMPT_PREFIX, n);
    }
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_SERVE;
    p.timeout = timeout;
    p.serve = rank == 0 && !by_agent;
    if (u->has_token) {
        p.mask |= DCOLL_STORE_PARAM_TOKEN;
        p.token = u->token;
    }
    dcoll_store_t *s = NULL;
    dcoll_status_t st = dcoll_store_tcp_create(&s, host, port, &p);
    if (!st && by_agent && (st = dcoll_store_prefix_over(store, prefix, s)))
        dcoll_store_destroy(&s);
    else if (!st && !by_agent)
        *store = s;
    return st ? pass(why, st) : DCOLL_SUCCESS;
}

static dcoll_status_t env_handler(void *arg, const char *url, double timeout,
                                  dcoll_store_t **store, int *rank,
                                  int *world_size, const char **why)
{
    (void)arg;
    struct dcoll_url u;
    struct dcoll_rdzv r;
    dcoll_status_t st = env_rank_size(url, &u, &r, why);
    if (st)
        return st;
    const char *addr = env("MASTER_ADDR"), *port = env("MASTER_PORT");
    if (!addr)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "environment variable "
                   "MASTER_ADDR expected, but not set");
    if (!port)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "environment variable "
                   "MASTER_PORT expected, but not set");
    long p = url_int(port, strlen(port), 1, 65535);
    if (p < 0)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "MASTER_PORT='%s' is not "
                   "a port number (1 to 65535)", port);
    *rank = r.rank;
    *world_size = r.world_size;
    return tcp_store(addr, (int)p, r.rank, &u, timeout, store, why);
}

/* tcp:// and file:// carry rank and world size in the query. */
static dcoll_status_t query_rank_size(const struct dcoll_url *u, int *rank,
                                      int *world_size, const char **why)
{
    if (u->rank < 0)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "rank parameter missing "
                   "(add ?rank=R)");
    if (u->world_size < 0)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "world size parameter "
                   "missing (add &world_size=N)");
    dcoll_status_t st = check_rank(u->rank, "the URL", u->world_size,
                                   "the URL", why);
    *rank = (int)u->rank;
    *world_size = (int)u->world_size;
    return st;
}

static dcoll_status_t tcp_handler(void *arg, const char *url, double timeout,
                                  dcoll_store_t **store, int *rank,
                                  int *world_size, const char **why)
{
    (void)arg;
    struct dcoll_url u;
    dcoll_status_t st = parse(url, &u, why);
    if (st)
        return st;
    if (!u.host[0])
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "host missing in "
                   "'%.64s'", url);
    if (u.port <= 0)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "port number missing "
                   "in '%.64s' (tcp://host:port)", url);
    if ((st = query_rank_size(&u, rank, world_size, why)))
        return st;
    return tcp_store(u.host, u.port, *rank, &u, timeout, store, why);
}

static dcoll_status_t file_handler(void *arg, const char *url,
                                   double timeout, dcoll_store_t **store,
                                   int *rank, int *world_size,
                                   const char **why)
{
    (void)arg;
    struct dcoll_url u;
    dcoll_status_t st = parse(url, &u, why);
    if (st)
        return st;
    if (u.host[0] || u.port >= 0)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "'%.64s' names a host; "
                   "a file store takes a path: file:///path", url);
    if (!u.path[0] || !strcmp(u.path, "/"))
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "path missing");
    if (u.has_token)
        return say(why, DCOLL_ERR_INVALID_ARGUMENT, "a file store takes no "
                   "token: the file's permissions guard it");
    if ((st = query_rank_size(&u, rank, world_size, why)))
        return st;
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT;
    p.timeout = timeout;
    st = dcoll_store_file_create(store, u.path, &p);
    return st ? pass(why, st) : DCOLL_SUCCESS;
}

static dcoll_status_t mpi_handler(void *arg, const char *url, double timeout,
                                  dcoll_store_t **store, int *rank,
                                  int *world_size, const char **why)
{
    (void)arg, (void)url, (void)timeout, (void)store, (void)rank;
    (void)world_size;
    return say(why, DCOLL_ERR_INVALID_ARGUMENT, "mpi:// meets through MPI "
               "and has no store; pass it to dcoll_init");
}

static dcoll_status_t reg_add(const char *scheme, dcoll_rendezvous_fn fn,
                              void *arg)
{
    char s[URL_MAX_SCHEME], url[URL_MAX_SCHEME + 4];
    snprintf(url, sizeof(url), "%.*s://", URL_MAX_SCHEME - 1, scheme);
    if (strlen(scheme) >= URL_MAX_SCHEME || !url_scheme(url, s))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_register_rendezvous: '%.64s' is not a "
                           "scheme (a letter, then letters, digits, '+', "
                           "'-' or '.'; at most %d)", scheme,
                           URL_MAX_SCHEME - 1);
    dcoll_status_t st = DCOLL_SUCCESS;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nreg && !st; i++)
        if (!strcmp(reg[i].scheme, s))
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                             "dcoll_register_rendezvous: a handler for %s:// "
                             "is registered already", s);
    if (!st && nreg == MAX_SCHEMES)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_register_rendezvous: "
                         "all %d scheme slots are taken", MAX_SCHEMES);
    if (!st) {
        strcpy(reg[nreg].scheme, s);
        reg[nreg].fn = fn;
        reg[nreg].arg = arg;
        nreg++;
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

static void builtins(void)
{
    reg_add("mpi", mpi_handler, NULL);
    reg_add("env", env_handler, NULL);
    reg_add("tcp", tcp_handler, NULL);
    reg_add("file", file_handler, NULL);
}

dcoll_status_t dcoll_register_rendezvous(const char *scheme,
                                         dcoll_rendezvous_fn handler,
                                         void *arg)
{
    pthread_once(&builtins_once, builtins);
    if (!scheme || !handler)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_register_rendezvous: %s is NULL",
                           scheme ? "handler" : "scheme");
    return reg_add(scheme, handler, arg);
}

/* Run url's handler and check what it yields. */
static dcoll_status_t run(const char *fn, const char *url, double timeout,
                          dcoll_store_t **store, int *rank, int *world_size,
                          char scheme[URL_MAX_SCHEME])
{
    pthread_once(&builtins_once, builtins);
    if (!url_scheme(url, scheme))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: url '%.64s' has "
                           "no scheme (expected scheme://...)", fn, url);
    dcoll_rendezvous_fn h = NULL;
    void *arg = NULL;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nreg; i++)
        if (!strcmp(reg[i].scheme, scheme)) {
            h = reg[i].fn;
            arg = reg[i].arg;
        }
    pthread_mutex_unlock(&reg_lock);
    if (!h)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: no rendezvous "
                           "handler for %s://", fn, scheme);
    const char *why = NULL;
    *store = NULL;
    *rank = *world_size = -1;
    dcoll_status_t st = h(arg, url, timeout > 0 ? timeout : DEFAULT_TIMEOUT,
                          store, rank, world_size, &why);
    if (st) {
        if (*store)
            dcoll_store_destroy(store);
        if ((unsigned)st >= DCOLL_STATUS_COUNT_)
            st = DCOLL_ERR_INTERNAL;
        return dcoll_error(st, "%s: %s:// rendezvous: %s", fn, scheme,
                           why ? why : dcoll_status_string(st));
    }
    if (!*store || *world_size < 1 || *rank < 0 || *rank >= *world_size) {
        dcoll_store_destroy(store);
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: the %s:// handler "
                           "yielded rank %d, world size %d and %s store", fn,
                           scheme, *rank, *world_size,
                           *store ? "a" : "no");
    }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_rendezvous(const char *url, double timeout,
                                dcoll_store_t **store, int *rank,
                                int *world_size)
{
    static const char fn[] = "dcoll_rendezvous";
    if (!url || !store || !rank || !world_size)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           !url ? "url" : !store ? "store"
                                      : !rank ? "rank" : "world_size");
    if (timeout != timeout || timeout > 1e9)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: timeout %g is not "
                           "a number of seconds", fn, timeout);
    char scheme[URL_MAX_SCHEME];
    return run(fn, url, timeout, store, rank, world_size, scheme);
}

dcoll_status_t dcoll_rdzv_run(const char *url, double timeout, bool launched,
                              int mpi_rank, int mpi_size,
                              struct dcoll_rdzv *r)
{
    char mine[64];
    static const char fn[] = "dcoll_init";
    memset(r, 0, sizeof(*r));
    r->rank = r->world_size = -1;
    /* Started as one of N (dcollrun, torchrun: RANK and WORLD_SIZE set)
     * but not by an MPI launcher, MPI would be a world of one: N copies
     * of the same job. The default takes the variables' rendezvous; an
     * explicit mpi:// is refused. */
    const char *wsize = env("WORLD_SIZE");
    bool one_of_n = !launched && env("RANK") && wsize &&
                    url_int(wsize, strlen(wsize), 2, INT_MAX) > 0;
    if (!url && one_of_n)
        url = "env://";
    if (!url || !strncasecmp(url, "mpi://", 6)) {
        if (url && url[6])
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: mpi:// takes "
                               "no address or query, got '%.64s'", fn, url);
        if (one_of_n)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: mpi:// with "
                               "RANK=%s and WORLD_SIZE=%s set but no MPI "
                               "launcher: MPI would make each process a "
                               "world of its own. Start the job with "
                               "mpirun, or use env:// (the default does)",
                               fn, env("RANK"), wsize);
        r->mpi = true;
        strcpy(r->scheme, "mpi");
        return DCOLL_SUCCESS;
    }
    if (!strncasecmp(url, "env://", 6)) {
        /* Under a launcher, env:// needs no store: MPI already joined the
         * processes, and the world only takes the ranks it names. */
        const char *why = NULL;
        struct dcoll_url u;
        strcpy(r->scheme, "env");
        /* Under mpirun with none of the variables, as a program written
         * for env:// (torchrun) is often run: MPI's ranks, as mpi://. */
        static const char *const any[] = {"RANK", "SLURM_PROCID",
                                          "WORLD_SIZE", NULL};
        bool none = true;
        for (int i = 0; any[i]; i++)
            none = none && !env(any[i]);
        if (launched && none && !strchr(url, '?')) {
            dcoll_status_t st = env_url(url, &u, &why);
            if (st)
                return dcoll_error(st, "%s: env:// rendezvous: %s", fn, why);
            if (!env("MASTER_ADDR") || !env("MASTER_PORT") || mpi_size < 1) {
                r->mpi = true;
                return DCOLL_SUCCESS;
            }
            /* MASTER_ADDR and MASTER_PORT set (exported to every rank, as
             * for torch's env://): MPI's ranks meet there too, so that
             * the world has the store a program asks for. */
            snprintf(mine, sizeof(mine), "env://?rank=%d&world_size=%d",
                     mpi_rank, mpi_size);
            url = mine;
        }
        r->renumber = true;
        dcoll_status_t st = env_rank_size(url, &u, r, &why);
        if (st)
            return dcoll_error(st, "%s: env:// rendezvous: %s", fn, why);
        const char *port = env("MASTER_PORT");
        if (port && url_int(port, strlen(port), 1, 65535) < 0)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: env:// "
                               "rendezvous: MASTER_PORT='%s' is not a port "
                               "number (1 to 65535)", fn, port);
        if (launched && (!env("MASTER_ADDR") || !port))
            return DCOLL_SUCCESS;
    }
    r->rank_from = r->size_from = "the rendezvous";
    return run(fn, url, timeout, &r->store, &r->rank, &r->world_size,
               r->scheme);
}
