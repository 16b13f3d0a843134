/* libFuzzer target: rendezvous URL parsing. Any bytes, as a C string: the
 * parser must return (true, or false with a message) without reading or
 * writing out of bounds, and what it returns must hold together. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct dcoll_url u;
    char err[256], scheme[URL_MAX_SCHEME];
    bool has_scheme = url_scheme(s, scheme);
    if (url_parse(s, &u, err, sizeof(err))) {
        if (!has_scheme || strcmp(scheme, u.scheme))
            abort();
        if (u.port < -1 || u.port > 65535 || u.rank < -1 ||
            u.world_size == 0 || u.world_size < -1)
            abort();
        if (strlen(u.host) >= URL_MAX_HOST || strlen(u.path) >= URL_MAX_PATH)
            abort();
    } else if (!memchr(err, '\0', sizeof(err)) || !err[0]) {
        abort();
    }
    free(s);
    return 0;
}
