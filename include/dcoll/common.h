/* dcoll: version, export macro and status codes. */
#ifndef DCOLL_COMMON_H
#define DCOLL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The major version is the soname: it changes only when the ABI breaks. */
#define DCOLL_API_VERSION_MAJOR 1
#define DCOLL_API_VERSION_MINOR 12
#define DCOLL_API_VERSION_PATCH 0

#if defined(_WIN32)
#define DCOLL_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#define DCOLL_API __attribute__((visibility("default")))
#else
#define DCOLL_API
#endif

/* Status of every call. Numbers never change and are never reused. */
typedef enum dcoll_status {
    DCOLL_SUCCESS = 0,
    DCOLL_ERR_INVALID_ARGUMENT = 1,   /* a bad pointer, count, enum or rank */
    DCOLL_ERR_NOT_INITIALIZED = 2,    /* called before dcoll_init */
    DCOLL_ERR_ALREADY_INITIALIZED = 3,/* dcoll_init called twice */
    DCOLL_ERR_FINALIZED = 4,          /* called after dcoll_finalize */
    DCOLL_ERR_UNSUPPORTED = 5,        /* valid request this build cannot serve */
    DCOLL_ERR_NO_MEMORY = 6,
    DCOLL_ERR_MPI = 7,                /* MPI returned an error */
    DCOLL_ERR_TIMEOUT = 8,
    DCOLL_ERR_INVALID_STATE = 9,      /* e.g. finalize with work in flight */
    DCOLL_ERR_INTERNAL = 10,
    DCOLL_ERR_REFUSED = 11,           /* a peer refused: wrong token, bad request */
    DCOLL_ERR_IO = 12,                /* a connection or file failed */
    DCOLL_ERR_CHILD_FAILED = 13,      /* a process dcoll_spawn started failed */
    DCOLL_ERR_GROUP_FAILED = 14,      /* the group timed out before: unusable */
    DCOLL_ERR_MISMATCH = 15,          /* ranks called different collectives
                                         (found in debug mode) */
    DCOLL_ERR_RANK_DIED = 16,         /* a member of the group died (its
                                         launcher said so): shrink it */
    DCOLL_STATUS_COUNT_ = 17         /* not a status: one past the last */
} dcoll_status_t;

/** A static, never NULL, English name for @p status. */
DCOLL_API const char *dcoll_status_string(dcoll_status_t status);

/** The detail of the last failed call on this thread: which argument was
 *  wrong and with which value. Never NULL; "no error" until a call fails.
 *  Valid until the next dcoll call on this thread. */
DCOLL_API const char *dcoll_last_error(void);

/** The version of the library actually loaded (which may be newer than
 *  the header a program was built with). Any output may be NULL. */
DCOLL_API dcoll_status_t dcoll_version(int *major, int *minor, int *patch);

#ifdef __cplusplus
}
#endif
#endif
