/* stderr into a temporary file, for tests that read what dcoll prints
 * there (the flight recorder after a failure). */
#ifndef DCOLL_TEST_CAPTURE_H
#define DCOLL_TEST_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

struct capture {
    int saved;
    FILE *f;
};

static inline void capture_begin(struct capture *c)
{
    fflush(stderr);
    c->f = tmpfile();
    c->saved = dup(2);
    if (c->f)
        dup2(fileno(c->f), 2);
}

/* What was printed since capture_begin (at most 16 KiB), in a buffer that
 * the next capture_end reuses. */
static inline char *capture_end(struct capture *c)
{
    static char text[16384];
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    text[0] = '\0';
    if (c->f) {
        rewind(c->f);
        size_t n = fread(text, 1, sizeof(text) - 1, c->f);
        text[n] = '\0';
        fclose(c->f);
    }
    return text;
}

#endif
