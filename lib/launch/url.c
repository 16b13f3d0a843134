/* Rendezvous URL parsing: what the tcp://, file:// and env:// handlers
 * read. Every failure names the part of the URL at fault. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "url.h"

long url_int(const char *s, size_t len, long lo, long hi)
{
    char buf[24], *end;
    if (len == 0 || len >= sizeof(buf) || !isdigit((unsigned char)s[0]))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    return v;
}

bool url_scheme(const char *url, char out[URL_MAX_SCHEME])
{
    out[0] = '\0';
    const char *sep = strstr(url, "://");
    size_t n = sep ? (size_t)(sep - url) : 0;
    if (!n || n >= URL_MAX_SCHEME || !isalpha((unsigned char)url[0]))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)url[i];
        if (!isalnum(c) && c != '+' && c != '-' && c != '.')
            return false;
        out[i] = (char)tolower(c);
    }
    out[n] = '\0';
    return true;
}

static bool fail(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return false;
}

static bool parse_query(const char *q, struct dcoll_url *u, char *err,
                        size_t cap)
{
    while (*q) {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        size_t klen = eq ? (size_t)(eq - q) : len;
        const char *val = eq ? eq + 1 : q + len;
        size_t vlen = eq ? len - klen - 1 : 0;
        int item = len > 64 ? 64 : (int)len;
        if (klen == 4 && !strncmp(q, "rank", 4)) {
            if (u->rank != -1)
                return fail(err, cap, "'%.*s': rank is given twice", item, q);
            if ((u->rank = url_int(val, vlen, 0, 1L << 30)) < 0)
                return fail(err, cap, "'%.*s' is not a valid rank", item, q);
        } else if (klen == 10 && !strncmp(q, "world_size", 10)) {
            if (u->world_size != -1)
                return fail(err, cap, "'%.*s': world_size is given twice",
                            item, q);
            if ((u->world_size = url_int(val, vlen, 1, 1L << 30)) < 0)
                return fail(err, cap, "'%.*s' is not a valid world size",
                            item, q);
        } else if (klen == 5 && !strncmp(q, "token", 5)) {
            if (u->has_token)
                return fail(err, cap, "token is given twice");
            if (!eq || vlen == 0 || vlen > URL_MAX_TOKEN)
                return fail(err, cap, "the token must have 1 to %d bytes",
                            URL_MAX_TOKEN);
            memcpy(u->token, val, vlen);
            u->token[vlen] = '\0';
            u->has_token = true;
        } else if (len) {
            return fail(err, cap, "unknown query parameter '%.*s' (expected "
                        "rank, world_size or token)", item, q);
        }
        q += len + (q[len] == '&');
    }
    return true;
}

bool url_parse(const char *url, struct dcoll_url *u, char *err, size_t cap)
{
    memset(u, 0, sizeof(*u));
    u->port = -1;
    u->rank = u->world_size = -1;
    if (!url_scheme(url, u->scheme))
        return fail(err, cap, "'%.64s' does not start with a scheme (like "
                    "tcp://)", url);
    const char *p = url + strlen(u->scheme) + 3;
    /* Authority: host, [v6 host], optional :port. */
    size_t alen = strcspn(p, "/?");
    const char *a = p, *aend = p + alen;
    const char *hend = aend, *colon = NULL;
    if (*a == '[') {
        const char *close = memchr(a, ']', alen);
        if (!close)
            return fail(err, cap, "'%.*s': an IPv6 host lacks its ']'",
                        (int)(alen > 64 ? 64 : alen), a);
        if (close + 1 < aend && close[1] != ':')
            return fail(err, cap, "'%.*s': junk after the IPv6 host",
                        (int)(alen > 64 ? 64 : alen), a);
        colon = close + 1 < aend ? close + 1 : NULL;
        a++;
        hend = close;
    } else {
        colon = memchr(a, ':', alen);
        if (colon)
            hend = colon;
    }
    size_t hlen = (size_t)(hend - a);
    if (hlen >= URL_MAX_HOST)
        return fail(err, cap, "the host has %zu bytes, more than %d", hlen,
                    URL_MAX_HOST - 1);
    memcpy(u->host, a, hlen);
    u->host[hlen] = '\0';
    if (colon) {
        size_t plen = (size_t)(aend - colon - 1);
        u->port = (int)url_int(colon + 1, plen, 0, 65535);
        if (u->port < 0)
            return fail(err, cap, "port '%.*s' is not a number from 0 to "
                        "65535", (int)(plen > 16 ? 16 : plen), colon + 1);
    }
    p = aend;
    size_t plen = strcspn(p, "?");
    if (plen >= URL_MAX_PATH)
        return fail(err, cap, "the path has %zu bytes, more than %d", plen,
                    URL_MAX_PATH - 1);
    memcpy(u->path, p, plen);
    u->path[plen] = '\0';
    p += plen;
    if (*p == '?') {
        u->has_query = true;
        return parse_query(p + 1, u, err, cap);
    }
    return true;
}
