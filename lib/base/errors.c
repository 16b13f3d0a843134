/* Status strings and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base.h"

static const char *const status_names[DCOLL_STATUS_COUNT_] = {
    [DCOLL_SUCCESS] = "success",
    [DCOLL_ERR_INVALID_ARGUMENT] = "invalid argument",
    [DCOLL_ERR_NOT_INITIALIZED] = "dcoll is not initialised",
    [DCOLL_ERR_ALREADY_INITIALIZED] = "dcoll is already initialised",
    [DCOLL_ERR_FINALIZED] = "dcoll has been finalized",
    [DCOLL_ERR_UNSUPPORTED] = "not supported by this build",
    [DCOLL_ERR_NO_MEMORY] = "out of memory",
    [DCOLL_ERR_MPI] = "MPI error",
    [DCOLL_ERR_TIMEOUT] = "timed out",
    [DCOLL_ERR_INVALID_STATE] = "invalid state",
    [DCOLL_ERR_INTERNAL] = "internal error",
    [DCOLL_ERR_REFUSED] = "refused by the peer",
    [DCOLL_ERR_IO] = "connection or file error",
    [DCOLL_ERR_CHILD_FAILED] = "a spawned process failed",
    [DCOLL_ERR_GROUP_FAILED] = "the group failed earlier and is unusable",
    [DCOLL_ERR_MISMATCH] = "ranks called different collectives",
    [DCOLL_ERR_RANK_DIED] = "a rank of the group died",
};

const char *dcoll_status_string(dcoll_status_t status)
{
    if ((unsigned)status >= DCOLL_STATUS_COUNT_ || !status_names[status])
        return "unknown status";
    return status_names[status];
}

/* One buffer per thread, so concurrent failures never mix messages. */
static _Thread_local char last_error[DCOLL_ERROR_MAX];
static _Thread_local int have_error;

const char *dcoll_last_error(void)
{
    return have_error ? last_error : "no error";
}

dcoll_status_t dcoll_error(dcoll_status_t st, const char *fmt, ...)
{
    /* Formatted aside first: callers wrap the last message in a new one
     * (dcoll_error(st, "...: %s", dcoll_last_error())), and formatting
     * into the buffer an argument reads garbled it (twice, and cut). */
    char msg[DCOLL_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, strlen(msg) + 1);
    have_error = 1;
    return st;
}

dcoll_status_t dcoll_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = DCOLL_API_VERSION_MAJOR;
    if (minor)
        *minor = DCOLL_API_VERSION_MINOR;
    if (patch)
        *patch = DCOLL_API_VERSION_PATCH;
    return DCOLL_SUCCESS;
}
