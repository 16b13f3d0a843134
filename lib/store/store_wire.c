/* The TCP store's frames: encode and a strict parse. */
#include <string.h>
#include "store_wire.h"

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

const char *wire_parse(const uint8_t *body, size_t len, struct wire_msg *m)
{
    if (len < 10)
        return "body shorter than its 10-byte header";
    m->code = body[0];
    m->nstr = body[1];
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u |= (uint64_t)body[2 + i] << (8 * i);
    m->num = (int64_t)u;
    size_t at = 10;
    for (int i = 0; i < m->nstr; i++) {
        if (len - at < 4)
            return "string length runs past the body";
        uint32_t n = wire_get32(body + at);
        at += 4;
        if (n > len - at)
            return "string runs past the body";
        m->str[i].p = body + at;
        m->str[i].len = n;
        at += n;
    }
    if (at != len)
        return "bytes left over after the last string";
    return NULL;
}

size_t wire_frame_size(int nstr, const struct wire_str *str)
{
    size_t n = 4 + 10;
    for (int i = 0; i < nstr; i++)
        n += 4 + str[i].len;
    return n;
}

void wire_encode(uint8_t *out, uint8_t code, int64_t num, int nstr,
                 const struct wire_str *str)
{
    size_t total = wire_frame_size(nstr, str);
    put32(out, (uint32_t)(total - 4));
    out[4] = code;
    out[5] = (uint8_t)nstr;
    for (int i = 0; i < 8; i++)
        out[6 + i] = (uint8_t)((uint64_t)num >> (8 * i));
    uint8_t *p = out + 14;
    for (int i = 0; i < nstr; i++) {
        put32(p, str[i].len);
        if (str[i].len)
            memcpy(p + 4, str[i].p, str[i].len);
        p += 4 + str[i].len;
    }
}
