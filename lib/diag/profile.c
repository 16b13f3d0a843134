/* The profile at finalize (DCOLL_PROFILE), as mpiP and IPM give one for
 * MPI: per group and call kind, the calls, bytes, time in them, the
 * longest call, and the time spent waiting for the last rank to arrive,
 * summed over the job's ranks; world rank 0 prints it (text) or writes it
 * (JSON, next to the recorder files).
 *
 * A call's time is taken on the precise clock around the blocking call
 * or plan start; an async call's runs from its post to the wait or test
 * that saw it done. Waiting for the last rank is estimated per group and
 * kind as each rank's time less the least any member spent: the last to
 * arrive waits least, so what the others spent beyond it was waiting. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"

bool dcoll_profiling;
int dcoll_profile_mode;

/* What one group's calls of one kind cost on this rank. */
struct prof_cell {
    double calls, bytes, seconds, longest;
};

/* The groups' figures, kept past their destruction until finalize: a
 * row per group id, as ids are the same on every rank. */
struct prof_row {
    int id;
    char name[160];
    struct prof_cell cell[DCOLL_COLL_KIND_COUNT_];
};
static struct prof_row *rows;
static int nrows, caprows;
static double began;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct prof_row *row_of(const struct dcoll_group *g)
{
    for (int i = 0; i < nrows; i++)
        if (rows[i].id == g->id)
            return &rows[i];
    if (nrows == caprows) {
        int cap = caprows ? 2 * caprows : 16;
        struct prof_row *r = realloc(rows, sizeof(*r) * (size_t)cap);
        if (!r)
            return NULL;
        rows = r;
        caprows = cap;
    }
    struct prof_row *r = &rows[nrows++];
    memset(r, 0, sizeof(*r));
    r->id = g->id;
    dcoll_group_name(g, r->name, sizeof(r->name));
    return r;
}

void dcoll_profile_start(void)
{
    free(rows);
    rows = NULL;
    nrows = caprows = 0;
    began = dcoll_now();
    dcoll_profiling = dcoll_profile_mode != DCOLL_PROFILE_OFF;
}

void dcoll_profile_call(struct dcoll_group *g, int kind, int64_t bytes,
                        double seconds, bool counted)
{
    if (kind < 0 || kind >= DCOLL_COLL_KIND_COUNT_ || g->rank < 0)
        return;
    /* One thread a group issues calls, but async ends may come from
     * another thread's wait on another group: one lock. */
    pthread_mutex_lock(&lock);
    struct prof_row *r = row_of(g);
    if (r) {
        struct prof_cell *c = &r->cell[kind];
        if (counted) {
            c->calls += 1;
            c->bytes += (double)bytes;
        }
        c->seconds += seconds;
        if (seconds > c->longest)
            c->longest = seconds;
    }
    pthread_mutex_unlock(&lock);
}

/* name's characters that JSON must escape, replaced: names are ours. */
static void plain(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            *s = '_';
}

static const char *fmt_bytes(double b, char *buf, size_t cap)
{
    if (b >= 1 << 30)
        snprintf(buf, cap, "%.2f GiB", b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, cap, "%.2f MiB", b / (1 << 20));
    else if (b >= 1 << 10)
        snprintf(buf, cap, "%.2f KiB", b / (1 << 10));
    else
        snprintf(buf, cap, "%.0f B", b);
    return buf;
}

/* Figures per (group id, kind): 0 calls, 1 bytes, 2 seconds (summed);
 * 3 seconds, 4 longest (max); 5 seconds (min over members); 6 members. */
enum { F_CALLS, F_BYTES, F_SUM, F_MAX, F_LONG, F_MIN, F_MEMBERS, F_N };

dcoll_status_t dcoll_profile_report(struct dcoll_group *world)
{
    if (!dcoll_profiling)
        return DCOLL_SUCCESS;
    dcoll_profiling = false;
    /* Every rank's ids up to the largest any has: a dense table. */
    int top = -1;
    for (int i = 0; i < nrows; i++)
        top = rows[i].id > top ? rows[i].id : top;
    int neg = -top;
    dcoll_status_t st = world->svc->agree(world, &neg);
    if (st)
        return st;
    top = -neg;
    int ids = top + 1, cells = ids * DCOLL_COLL_KIND_COUNT_;
    size_t n = (size_t)cells * F_N;
    double *mine = calloc(n + 1, sizeof(double));
    double *sum = calloc(n + 1, sizeof(double));
    double *max = calloc(n + 1, sizeof(double));
    double *min = calloc(n + 1, sizeof(double));
    int ok = mine && sum && max && min;
    if (!(st = world->svc->agree(world, &ok)) && !ok)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_finalize: no memory "
                         "for the profile of %d groups", ids);
    if (st) {
        free(mine), free(sum), free(max), free(min);
        return st;
    }
    for (int c = 0; c < cells; c++)
        mine[(size_t)c * F_N + F_MIN] = INFINITY;
    for (int i = 0; i < nrows; i++)
        for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
            double *f = mine + ((size_t)rows[i].id * DCOLL_COLL_KIND_COUNT_ +
                                (size_t)k) * F_N;
            const struct prof_cell *c = &rows[i].cell[k];
            f[F_CALLS] = c->calls;
            f[F_BYTES] = c->bytes;
            f[F_SUM] = f[F_MAX] = f[F_MIN] = c->seconds;
            f[F_LONG] = c->longest;
            f[F_MEMBERS] = 1;
        }
    double run = dcoll_now() - began;
    mine[n] = run;
    if (!(st = world->svc->reduce_f64(world, mine, sum, n + 1, 0)) &&
        !(st = world->svc->reduce_f64(world, mine, max, n + 1, 1)))
        st = world->svc->reduce_f64(world, mine, min, n + 1, 2);
    if (!st && world->rank == 0) {
        const struct dcoll_job *j = dcoll_job();
        FILE *json = NULL;
        char path[DCOLL_FLIGHT_DIR_MAX + 160];
        if (dcoll_profile_mode != DCOLL_PROFILE_TEXT) {
            snprintf(path, sizeof(path), "%s/dcoll-%s-profile.json",
                     dcoll_flight_stderr ? "." : dcoll_flight_dir,
                     j->id[0] ? j->id : "unknown");
            if (!(json = fopen(path, "w")))
                fprintf(stderr, "dcoll[0]: cannot write the profile to "
                        "%s\n", path);
        }
        bool text = dcoll_profile_mode != DCOLL_PROFILE_JSON;
        if (text)
            fprintf(stderr, "dcoll[0]: profile of job %s, %d rank(s), "
                    "%.3f s from dcoll_init to dcoll_finalize (slowest "
                    "rank)\n"
                    "dcoll[0]: %5s %6s %-18s %12s %12s %12s %12s %14s "
                    "%7s\n", j->id, world->size, max[n], "group", "ranks",
                    "kind", "calls/rank", "bytes/rank", "s/rank",
                    "longest s", "waiting s/rank", "% run");
        if (json)
            fprintf(json, "{\"schema\":\"dcoll-profile\",\"version\":1,"
                    "\"job\":\"%s\",\"ranks\":%d,\"run_seconds\":%.6f,"
                    "\"groups\":[", j->id, world->size, max[n]);
        int shown_groups = 0;
        for (int id = 0; id < ids; id++) {
            int shown = 0;
            for (int k = 0; k < DCOLL_COLL_KIND_COUNT_; k++) {
                size_t at = ((size_t)id * DCOLL_COLL_KIND_COUNT_ +
                             (size_t)k) * F_N;
                double members = sum[at + F_MEMBERS];
                if (!members || !sum[at + F_CALLS])
                    continue;
                double waiting = sum[at + F_SUM] - members * min[at + F_MIN];
                if (waiting < 0)
                    waiting = 0;
                char b[32], name[160] = "";
                for (int i = 0; i < nrows; i++)
                    if (rows[i].id == id)
                        snprintf(name, sizeof(name), "%s", rows[i].name);
                plain(name);
                if (text)
                    fprintf(stderr, "dcoll[0]: %5d %6.0f %-18s %12.0f %12s "
                            "%12.6f %12.6f %14.6f %7.1f\n", id, members,
                            dcoll_kind_name(k), sum[at + F_CALLS] / members,
                            fmt_bytes(sum[at + F_BYTES] / members, b,
                                      sizeof(b)),
                            sum[at + F_SUM] / members, max[at + F_LONG],
                            waiting / members,
                            max[n] > 0 ? 100 * sum[at + F_SUM] / members /
                                             max[n] : 0);
                if (!json)
                    continue;
                if (!shown)
                    fprintf(json, "%s{\"group\":%d,\"name\":\"%s\","
                            "\"ranks\":%.0f,\"kinds\":[", shown_groups++ ?
                            "," : "", id, name, members);
                fprintf(json, "%s{\"kind\":\"%s\",\"calls\":%.0f,"
                        "\"bytes\":%.0f,\"seconds\":%.9f,"
                        "\"seconds_max_rank\":%.9f,\"seconds_min_rank\":"
                        "%.9f,\"longest_call\":%.9f,\"waiting\":%.9f}",
                        shown ? "," : "", dcoll_kind_name(k),
                        sum[at + F_CALLS], sum[at + F_BYTES], sum[at + F_SUM],
                        max[at + F_MAX], min[at + F_MIN], max[at + F_LONG],
                        waiting);
                shown++;
            }
            if (json && shown)
                fprintf(json, "]}");
        }
        if (json) {
            fprintf(json, "]}\n");
            if (fclose(json))
                fprintf(stderr, "dcoll[0]: cannot write the profile to "
                        "%s\n", path);
            else if (text)
                fprintf(stderr, "dcoll[0]: the profile is also in %s\n",
                        path);
        }
    }
    free(mine), free(sum), free(max), free(min);
    free(rows);
    rows = NULL;
    nrows = caprows = 0;
    return st;
}
