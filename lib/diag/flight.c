/* The flight recorder: a ring of each group's last calls, printed when a
 * call times out or the ranks disagree, so that the report shows what led
 * up to it on every rank. Writing an entry is a few stores; no locks, as
 * one thread at a time issues calls on a group. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"

struct dcoll_flight *dcoll_flight_new(unsigned n)
{
    if (!n)
        return NULL;
    uint64_t ring = 1;
    while (ring < n)
        ring <<= 1;
    struct dcoll_flight *f = calloc(1, sizeof(*f) +
                                           ring * sizeof(struct dcoll_flight_entry));
    if (f) {
        f->cap = n;
        f->mask = ring - 1;
    }
    return f;
}

void dcoll_flight_free(struct dcoll_flight *f)
{
    free(f);
}

static const char *duration(double s, char *buf, size_t len)
{
    /* Starts and ends come from the coarse clock. */
    if (s < DCOLL_COARSE_S)
        snprintf(buf, len, "under %.0f ms", DCOLL_COARSE_S * 1e3);
    else if (s < 1e-3)
        snprintf(buf, len, "%.0f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.1f ms", s * 1e3);
    else
        snprintf(buf, len, "%.2f s", s);
    return buf;
}

void dcoll_flight_print(const struct dcoll_group *g, const char *why)
{
    const struct dcoll_flight *f = g->diag->flight;
    char name[200];
    int world = g->ranks ? g->ranks[g->rank] : g->rank;
    dcoll_group_name(g, name, sizeof(name));
    if (!f) {
        fprintf(stderr, "dcoll[%d]: %s; no flight recorder "
                "(DCOLL_FLIGHT_RECORDER=0)\n", world, why);
        return;
    }
    uint64_t shown = f->n < f->cap ? f->n : f->cap;
    double now = dcoll_now();
    /* One buffer, one write: ranks printing at once do not interleave. */
    size_t cap = strlen(why) + 512 + shown * 200, off = 0;
    char *out = malloc(cap);
    if (!out)
        return;
    off += (size_t)snprintf(out, cap, "dcoll[%d]: %s\ndcoll[%d]: flight "
                            "recorder of %s, last %llu of %llu call(s):\n",
                            world, why, world, name,
                            (unsigned long long)shown,
                            (unsigned long long)f->n);
    for (uint64_t i = f->n - shown; i < f->n && off < cap; i++) {
        const struct dcoll_flight_entry *e = &f->e[i & f->mask];
        char a[32], b[32], num[32], what[128];
        int kind = dcoll_flight_kind(e);
        int w = snprintf(what, sizeof(what), "%s%s%s", dcoll_kind_name(kind),
                         dcoll_kind_moves_data(kind) ? " " : "",
                         dcoll_kind_moves_data(kind)
                             ? dcoll_dtype_name((dcoll_dtype_t)e->dtype)
                             : "");
        bool has_op = dcoll_kind_has(kind, DCOLL_KF_OP);
        bool has_root = dcoll_kind_has(kind, DCOLL_KF_ROOT | DCOLL_KF_PEER);
        if (has_op && w > 0 && (size_t)w < sizeof(what))
            w += snprintf(what + w, sizeof(what) - (size_t)w, " %s",
                          dcoll_op_name((dcoll_op_t)e->op));
        if (has_root && e->root >= 0 && w > 0 && (size_t)w < sizeof(what))
            w += snprintf(what + w, sizeof(what) - (size_t)w, " %s %d",
                          e->seq ? "root" : "peer", e->root);
        if (e->way && w > 0 && (size_t)w < sizeof(what))
            snprintf(what + w, sizeof(what) - (size_t)w, " (by %s)", e->way);
        if (e->seq)
            snprintf(num, sizeof(num), "#%llu", (unsigned long long)e->seq);
        else
            snprintf(num, sizeof(num), "p2p");
        off += (size_t)snprintf(
            out + off, cap - off,
            "dcoll[%d]:   %s %s count %lld: started %s ago, %s%s%s\n",
            world, num, what, (long long)e->count,
            duration(now - e->start, a, sizeof(a)),
            e->end > 0 ? "took " : "unfinished",
            e->end > 0 ? duration(e->end - e->start, b, sizeof(b)) : "",
            e->end > 0 && e->status ? ", failed" : "");
    }
    fputs(out, stderr);
    fflush(stderr);
    free(out);
}
