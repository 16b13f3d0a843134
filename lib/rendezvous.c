/* Rendezvous URLs: which scheme, and for env:// this process's rank and
 * the world size, from the URL's query, torch's variables or SLURM's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rendezvous.h"

static dcoll_status_t env_error(const char *fmt, ...) DCOLL_PRINTF(1, 2);

static dcoll_status_t env_error(const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_init: env:// "
                       "rendezvous: %s", msg);
}

/* A whole decimal integer in [lo, hi], or -1. */
static long parse_int(const char *s, size_t len, long lo, long hi)
{
    char buf[24], *end;
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || end == buf || v < lo || v > hi)
        return -1;
    return v;
}

/* A variable's value, or NULL when unset or empty (as torch reads it). */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* One integer from the first of names that is set; *from names it. */
static dcoll_status_t from_env(const char *const *names, long lo,
                               long *out, const char **from)
{
    for (int i = 0; names[i]; i++) {
        const char *v = env(names[i]);
        if (!v)
            continue;
        *from = names[i];
        *out = parse_int(v, strlen(v), lo, 1L << 30);
        if (*out < 0)
            return env_error("environment variable %s='%s' is not a "
                             "number in range", names[i], v);
        return DCOLL_SUCCESS;
    }
    return env_error("environment variable %s expected, but not set (nor "
                     "%s)", names[0], names[1]);
}

/* env://[?rank=R&world_size=N]: the query wins over the environment. */
static dcoll_status_t parse_env(const char *rest, struct dcoll_rdzv *r)
{
    long rank = -1, size = -1;
    if (*rest && *rest != '?')
        return env_error("'%s' is not a query: env:// takes no address",
                         rest);
    const char *q = *rest ? rest + 1 : rest;
    while (*q) {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        size_t klen = eq ? (size_t)(eq - q) : len;
        long *slot = NULL;
        if (klen == 4 && strncmp(q, "rank", 4) == 0)
            slot = &rank;
        else if (klen == 10 && strncmp(q, "world_size", 10) == 0)
            slot = &size;
        char item[128];
        snprintf(item, sizeof(item), "%.*s", (int)len, q);
        if (!slot)
            return env_error("unknown query parameter '%s' (expected rank "
                             "or world_size)", item);
        if (*slot != -1)
            return env_error("'%s': %s is given twice", item,
                             slot == &rank ? "rank" : "world_size");
        *slot = eq ? parse_int(eq + 1, len - klen - 1, slot == &rank ? 0 : 1,
                               1L << 30)
                   : -1;
        if (*slot < 0)
            return env_error("'%s' is not a valid %s", item,
                             slot == &rank ? "rank" : "world size");
        q += len + (q[len] == '&');
    }
    static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"WORLD_SIZE",
                                            "SLURM_STEP_NUM_TASKS",
                                            "SLURM_NTASKS", NULL};
    dcoll_status_t st;
    r->rank_from = r->size_from = "the URL";
    if (rank < 0 && (st = from_env(rank_vars, 0, &rank, &r->rank_from)))
        return st;
    if (size < 0 && (st = from_env(size_vars, 1, &size, &r->size_from)))
        return st;
    if (rank >= size)
        return env_error("rank %ld (from %s) is not below the world size "
                         "%ld (from %s)", rank, r->rank_from, size,
                         r->size_from);
    r->rank = (int)rank;
    r->world_size = (int)size;
    r->master_addr = env("MASTER_ADDR");
    const char *port = env("MASTER_PORT");
    r->master_port = port ? (int)parse_int(port, strlen(port), 1, 65535) : 0;
    if (port && r->master_port < 0)
        return env_error("MASTER_PORT='%s' is not a port number", port);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_rdzv_parse(const char *url, struct dcoll_rdzv *r)
{
    memset(r, 0, sizeof(*r));
    r->scheme = DCOLL_RDZV_MPI;
    if (!url)
        return DCOLL_SUCCESS;
    const char *sep = strstr(url, "://");
    if (!sep || sep == url)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_init: url '%s' has no scheme (expected "
                           "scheme://...)", url);
    size_t n = (size_t)(sep - url);
    if (n == 3 && strncmp(url, "mpi", 3) == 0) {
        if (sep[3] != '\0')
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "dcoll_init: mpi:// takes no address or "
                               "query, got '%s'", url);
        return DCOLL_SUCCESS;
    }
    if (n == 3 && strncmp(url, "env", 3) == 0) {
        r->scheme = DCOLL_RDZV_ENV;
        return parse_env(sep + 3, r);
    }
    static const char *const later[] = {"tcp", "file"};
    for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++)
        if (strlen(later[i]) == n && strncmp(url, later[i], n) == 0)
            return dcoll_error(DCOLL_ERR_UNSUPPORTED,
                               "dcoll_init: rendezvous %.*s:// is not "
                               "available in this build; use mpi:// or "
                               "env:// under an MPI launcher", (int)n, url);
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "dcoll_init: no rendezvous handler for %.*s://",
                       (int)n, url);
}

dcoll_status_t dcoll_rdzv_no_launcher(const struct dcoll_rdzv *r)
{
    /* Processes that no launcher started meet through the TCP store at
     * MASTER_ADDR:MASTER_PORT, as in torch; without it they cannot. */
    const char *missing = !r->master_addr ? "MASTER_ADDR"
                          : !r->master_port ? "MASTER_PORT" : NULL;
    if (missing)
        return env_error("environment variable %s expected, but not set "
                         "(world size %d, and no MPI launcher started the "
                         "processes)", missing, r->world_size);
    return dcoll_error(DCOLL_ERR_UNSUPPORTED,
                       "dcoll_init: env:// rendezvous: %d processes without "
                       "an MPI launcher would meet through the store at "
                       "%s:%d, which this build does not have yet; start "
                       "them with mpirun or srun", r->world_size,
                       r->master_addr, r->master_port);
}
