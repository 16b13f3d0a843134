/* The stores' parameters: which mask bits this library knows, and the
 * TCP server's limits, each from its field, else its environment
 * variable, else its default, checked against its range. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "store.h"
#include "store_wire.h"

#define PARAMS_KNOWN                                                        \
    (DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_TOKEN |                  \
     DCOLL_STORE_PARAM_SERVE | DCOLL_STORE_PARAM_MAX_CLIENTS |              \
     DCOLL_STORE_PARAM_MAX_UNAUTHED | DCOLL_STORE_PARAM_UNAUTHED_FRAME |    \
     DCOLL_STORE_PARAM_IDLE_TIMEOUT | DCOLL_STORE_PARAM_MAX_MEMORY |        \
     DCOLL_STORE_PARAM_IDLE_CLOSE)

/* A limit not set in the params: its environment variable, else the
 * default. The variable is checked as the field would be. */
static dcoll_status_t limit_env(const char *fn, const char *var, double lo,
                                double hi, double *v)
{
    const char *e = getenv(var);
    if (!e || !*e)
        return DCOLL_SUCCESS;
    char *end;
    errno = 0;
    double x = strtod(e, &end);
    if (errno || *end || !(x >= lo && x <= hi))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s='%s' is not "
                           "a number from %g to %g", fn, var, e, lo, hi);
    *v = x;
    return DCOLL_SUCCESS;
}

/* A limit's field, found by offset and type. */
enum limit_type { LIMIT_INT, LIMIT_INT64, LIMIT_DOUBLE };

struct limit {
    uint64_t bit;
    const char *field, *var;
    size_t off;
    enum limit_type type;
    double def, lo, hi;
};

#define LIMIT(bit, f, var, type, def, lo, hi)                               \
    {bit, #f, var, offsetof(dcoll_store_params_t, f), type, def, lo, hi}

/* The server's limits: default and the range each may take. The token
 * must fit in the unauthenticated frame, so that one is at least 64 bytes
 * over the longest token. */
static const struct limit limits[] = {
    LIMIT(DCOLL_STORE_PARAM_MAX_CLIENTS, max_clients,
          "DCOLL_STORE_MAX_CLIENTS", LIMIT_INT,
          DCOLL_STORE_DEFAULT_MAX_CLIENTS, 1, 1 << 24),
    LIMIT(DCOLL_STORE_PARAM_MAX_UNAUTHED, max_unauthed,
          "DCOLL_STORE_MAX_UNAUTHED", LIMIT_INT,
          DCOLL_STORE_DEFAULT_MAX_UNAUTHED, 1, 1 << 24),
    LIMIT(DCOLL_STORE_PARAM_UNAUTHED_FRAME, unauthed_frame,
          "DCOLL_STORE_UNAUTHED_FRAME", LIMIT_INT,
          DCOLL_STORE_DEFAULT_UNAUTHED_FRAME, 64, WIRE_MAX_BODY),
    LIMIT(DCOLL_STORE_PARAM_IDLE_TIMEOUT, idle_timeout,
          "DCOLL_STORE_IDLE_TIMEOUT", LIMIT_DOUBLE,
          DCOLL_STORE_DEFAULT_IDLE_TIMEOUT, 0.001, 1e9),
    LIMIT(DCOLL_STORE_PARAM_MAX_MEMORY, max_memory, "DCOLL_STORE_MAX_MEMORY",
          LIMIT_INT64, (double)DCOLL_STORE_DEFAULT_MAX_MEMORY, 1, 9.0e18),
    LIMIT(DCOLL_STORE_PARAM_IDLE_CLOSE, idle_close, "DCOLL_STORE_IDLE_CLOSE",
          LIMIT_DOUBLE, DCOLL_STORE_DEFAULT_IDLE_CLOSE, 0, 1e9),
};

static double limit_get(const dcoll_store_params_t *p, const struct limit *l)
{
    const char *at = (const char *)p + l->off;
    switch (l->type) {
    case LIMIT_INT: return *(const int *)at;
    case LIMIT_INT64: return (double)*(const int64_t *)at;
    default: return *(const double *)at;
    }
}

static void limit_put(dcoll_store_params_t *p, const struct limit *l,
                      double v)
{
    char *at = (char *)p + l->off;
    switch (l->type) {
    case LIMIT_INT: *(int *)at = (int)v; break;
    case LIMIT_INT64: *(int64_t *)at = (int64_t)v; break;
    default: *(double *)at = v; break;
    }
}

static dcoll_status_t read_limits(const char *fn,
                                  const dcoll_store_params_t *params,
                                  dcoll_store_params_t *p)
{
    for (int i = 0; i < (int)(sizeof(limits) / sizeof(limits[0])); i++) {
        const struct limit *l = &limits[i];
        double v = l->def;
        if (params && (params->mask & l->bit)) {
            v = limit_get(params, l);
            if (!(v >= l->lo && v <= l->hi))
                return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %g is "
                                   "out of range (%g to %g)", fn, l->field,
                                   v, l->lo, l->hi);
        } else {
            dcoll_status_t st = limit_env(fn, l->var, l->lo, l->hi, &v);
            if (st)
                return st;
        }
        if (l->type != LIMIT_DOUBLE && v != (double)(int64_t)v)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s %g is not "
                               "a whole number", fn, l->field, v);
        limit_put(p, l, v);
    }
    if (p->token && strlen(p->token) + 64 > (size_t)p->unauthed_frame)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: the token (%zu "
                           "bytes) does not fit in unauthed_frame %d, the "
                           "largest request before the token is shown", fn,
                           strlen(p->token), p->unauthed_frame);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_store_params_read(const char *fn,
                                       const dcoll_store_params_t *params,
                                       dcoll_store_params_t *p)
{
    *p = (dcoll_store_params_t)DCOLL_STORE_PARAMS_INIT;
    p->timeout = DCOLL_STORE_DEFAULT_TIMEOUT;
    if (params) {
        if (params->mask & ~PARAMS_KNOWN)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "%s: params->mask 0x%llx has unknown bits",
                               fn, (unsigned long long)params->mask);
        p->mask = params->mask;
        if (p->mask & DCOLL_STORE_PARAM_TIMEOUT)
            p->timeout = params->timeout;
        if (p->mask & DCOLL_STORE_PARAM_TOKEN)
            p->token = params->token;
        if (p->mask & DCOLL_STORE_PARAM_SERVE)
            p->serve = params->serve;
    }
    if (!(p->timeout > 0) || p->timeout > 1e9)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: timeout %g s is not a positive number of "
                           "seconds", fn, p->timeout);
    if (p->serve != 0 && p->serve != 1)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: serve %d is neither 0 nor 1", fn, p->serve);
    if (!(p->mask & DCOLL_STORE_PARAM_TOKEN)) {
        const char *t = getenv("DCOLL_STORE_TOKEN");
        p->token = t && *t ? t : NULL;
    }
    if (p->token && strlen(p->token) > DCOLL_STORE_MAX_KEY)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: the token is longer than %d bytes", fn,
                           DCOLL_STORE_MAX_KEY);
    return read_limits(fn, params, p);
}
