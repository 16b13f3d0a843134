/* Rendezvous URLs: scheme://host:port/path?rank=R&world_size=N&token=T.
 * A strict parser with no side effects (it is fuzzed). Not installed. */
#ifndef DCOLL_LIB_URL_H
#define DCOLL_LIB_URL_H

#include <stdbool.h>
#include <stddef.h>

#define URL_MAX_SCHEME 32
#define URL_MAX_HOST 256
#define URL_MAX_PATH 1024
#define URL_MAX_TOKEN 4096

struct dcoll_url {
    char scheme[URL_MAX_SCHEME];   /* lower case */
    char host[URL_MAX_HOST];       /* "" when absent; IPv6 without [] */
    int port;                      /* -1 when absent */
    char path[URL_MAX_PATH];       /* "" when absent; starts with '/' */
    bool has_query;
    long rank, world_size;         /* -1 when absent */
    char token[URL_MAX_TOKEN + 1];
    bool has_token;
};

/* Split off and check the scheme alone ("" on error). The scheme is the
 * part before "://": a letter, then letters, digits, '+', '-' or '.'. */
bool url_scheme(const char *url, char out[URL_MAX_SCHEME]);

/* Parse a whole URL. Returns true, or false with a message in err (which
 * says what is wrong and quotes the offending part). */
bool url_parse(const char *url, struct dcoll_url *u, char *err, size_t cap);

/* A whole decimal integer in [lo, hi] of len bytes, or -1. */
long url_int(const char *s, size_t len, long lo, long hi);

#endif
