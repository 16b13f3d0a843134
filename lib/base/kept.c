/* Buffers a group keeps between calls (struct dcoll_kept). */
#include "base.h"

char *dcoll_kept_take(struct dcoll_kept *k, size_t bytes, bool *own,
                      void *(*alloc)(size_t), void (*release)(void *))
{
    *own = k->busy;
    if (*own)
        return alloc(bytes);
    if (k->bytes < bytes) {
        release(k->buf);
        k->buf = alloc(bytes);
        k->bytes = k->buf ? bytes : 0;
        if (!k->buf)
            return NULL;
    }
    k->busy = true;
    return k->buf;
}

void dcoll_kept_give(struct dcoll_kept *k, char *buf, bool own,
                     void (*release)(void *))
{
    if (own)
        release(buf);
    else if (buf)
        k->busy = false;
}

void dcoll_kept_free(struct dcoll_kept *k, void (*release)(void *))
{
    if (k->buf)
        release(k->buf);
    *k = (struct dcoll_kept){NULL, 0, false};
}
