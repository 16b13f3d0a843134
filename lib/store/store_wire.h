/* The TCP store's wire format, shared by its client and server. Not
 * installed.
 *
 * Every message, either way, is a frame: a 4-byte little-endian body
 * length, then the body: u8 code (the op, or the reply's status), u8
 * string count, an 8-byte little-endian signed number, then each string
 * as a 4-byte length and its bytes. Nothing in a frame is ever executed
 * or deserialized into anything but these fields. */
#ifndef DCOLL_LIB_STORE_WIRE_H
#define DCOLL_LIB_STORE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_MAX_STRS 255
/* The largest body a peer may send: a key and two values of the largest
 * sizes, with room for the headers. */
#define WIRE_MAX_BODY (2u * (4u << 20) + 8192u)

enum wire_op {
    WIRE_AUTH = 1,   /* [token]: a client's first request, the token
                        empty if it has none */
    WIRE_SET,        /* [key, value] */
    WIRE_GET,        /* [key], num = timeout ms: waits for the key */
    WIRE_ADD,        /* [key], num = delta -> num = sum */
    WIRE_CAS,        /* [key, expected, desired] -> [value now] */
    WIRE_WAIT,       /* [keys...], num = timeout ms */
    WIRE_CHECK,      /* [keys...] -> num = 1 if all exist */
    WIRE_DELETE,     /* [key] -> num = 1 if it was there */
    WIRE_NUMKEYS,    /* [] -> num */
    WIRE_OP_END_
};

enum wire_status {
    WIRE_OK = 0,
    WIRE_TIMEOUT = 1,
    WIRE_BAD_REQUEST = 2,   /* [message]; the server then hangs up */
    WIRE_UNAUTHORIZED = 3,  /* [message]; the server then hangs up */
    WIRE_NOT_NUMBER = 4,    /* ADD on a value that is not an integer */
    WIRE_FULL = 5,          /* [message]: the store's memory limit; the
                               connection stays open */
    WIRE_BUSY = 6,          /* [message]: too many connections; sent at
                               once on connecting, then the server hangs
                               up: try again later */
};

struct wire_str {
    const uint8_t *p;
    uint32_t len;
};

struct wire_msg {
    uint8_t code;
    uint8_t nstr;
    int64_t num;
    struct wire_str str[WIRE_MAX_STRS];
};

/* Parse one body of @p len bytes. The strings point into @p body. Returns
 * NULL, or a static message saying what is malformed. */
const char *wire_parse(const uint8_t *body, size_t len, struct wire_msg *m);

/* Bytes a frame with these strings takes, header included. */
size_t wire_frame_size(int nstr, const struct wire_str *str);

/* Write a frame into @p out (wire_frame_size bytes). */
void wire_encode(uint8_t *out, uint8_t code, int64_t num, int nstr,
                 const struct wire_str *str);

static inline uint32_t wire_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

#endif
