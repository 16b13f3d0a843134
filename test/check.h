/* The one assertion header of dcoll's C tests: checks that count failures
 * instead of aborting, so that one run reports every wrong result. A
 * test defines t_rank (its rank, or 0) and t_failures once, and exits
 * non-zero where t_failures is (T_EXIT). Only the public header's
 * statuses and last error are used, so any suite may include it. */
#ifndef DCOLL_TEST_CHECK_H
#define DCOLL_TEST_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dcoll/dcoll.h"

extern int t_rank, t_failures;

/* A failure's line: where, what, and dcoll's last error where one is
 * set. */
#define T_SAY_(...)                                                          \
    do {                                                                     \
        const char *e_ = dcoll_last_error();                                 \
        fprintf(stderr, "[rank %d] %s:%d: ", t_rank, __FILE__, __LINE__);    \
        fprintf(stderr, __VA_ARGS__);                                        \
        if (strcmp(e_, "no error"))                                          \
            fprintf(stderr, " (last error: %s)", e_);                        \
        fprintf(stderr, "\n");                                               \
    } while (0)

/* cond must hold; the first 20 failures are told, every one counted. */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond) && t_failures++ < 20)                                    \
            T_SAY_(__VA_ARGS__);                                             \
    } while (0)

/* The same where nothing after it can run: return 1 from the caller. */
#define REQUIRE(cond, ...)                                                   \
    do {                                                                     \
        if (!(cond)) {                                                       \
            t_failures++;                                                    \
            T_SAY_(__VA_ARGS__);                                             \
            return 1;                                                        \
        }                                                                    \
    } while (0)

#define CHECK_OK(call)                                                       \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        CHECK(st_ == DCOLL_SUCCESS, "%s -> %s: %s", #call,                   \
              dcoll_status_string(st_), dcoll_last_error());                 \
    } while (0)

/* call must fail with status want and a message containing text. */
#define CHECK_REFUSED(call, want, text)                                      \
    do {                                                                     \
        dcoll_status_t st_ = (call);                                         \
        const char *m_ = dcoll_last_error();                                 \
        CHECK(st_ == (want), "%s -> %s (%s), want %s", #call,                \
              dcoll_status_string(st_), m_, dcoll_status_string(want));      \
        CHECK(strstr(m_, (text)) != NULL, "%s: message '%s' lacks '%s'",     \
              #call, m_, (text));                                            \
    } while (0)

/* The exit status of a test: 0 where every check held. */
#define T_EXIT (t_failures ? 1 : 0)

/* Whether the job runs in debug mode (DCOLL_DEBUG=detail). */
static inline bool t_debug(void)
{
    const char *d = getenv("DCOLL_DEBUG");
    return d && !strcmp(d, "detail");
}

/* Whether a call every rank of g refused leaves g usable: a group of
 * one rank, or debug mode, where every rank learns of it. */
static inline bool t_kept(dcoll_group_t *g)
{
    int n = 0;
    dcoll_group_size(g, &n);
    return n == 1 || t_debug();
}

#endif
