/* The tuning table (DCOLL_TUNING=FILE): which way a blocking collective
 * takes (compose.c's candidates, or MPI's own call) by kind, group size,
 * ranks per node and size. Rank 0 reads the file and sends its bytes to
 * every rank, and each rank reads the same bytes the same way, so that no
 * two ranks ever choose differently (a composition on some ranks against
 * MPI's call on others would never match). The text:
 *
 *   dcoll-tuning 1
 *   mpi <the first line of MPI_Get_library_version>
 *   <kind> <ranks> <ranks per node> <from bytes> <to bytes, or -> <way>
 *   ...
 *   end
 *
 * with # comments and blank lines anywhere; the "end" line shows that the
 * file is whole. A table made with another MPI is left out with a note:
 * its figures say nothing of this one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mpi_internal.h"

struct row {
    enum dcoll_coll_kind kind;
    int ranks, ppn;
    int64_t from, to;          /* bytes a rank, both in the range */
    enum dcoll_way way;
};

struct dcoll_mpi_tuning {
    char file[300];             /* where it came from, and the path */
    int n;
    struct row rows[];
};

struct dcoll_mpi_tuning *dcoll_mpi_tuning;

static int kind_index(enum dcoll_coll_kind kind)
{
    int i = 0;
    while (i < DCOLL_WAY_KINDS - 1 && dcoll_way_kinds[i].kind != kind)
        i++;
    return i;
}

static bool way_of_kind(enum dcoll_way w, enum dcoll_coll_kind kind)
{
    const struct dcoll_way_kind *k = &dcoll_way_kinds[kind_index(kind)];
    for (int i = 0; i < k->nways; i++)
        if (w == k->ways[i])
            return true;
    return false;
}

static bool number(const char *s, int64_t lo, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo)
        return false;
    *out = v;
    return true;
}

#define BAD(...) dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, __VA_ARGS__)

/* One row of line no, split into its fields. */
static dcoll_status_t row_of(const char *file, int no, char **f, int nf,
                             struct row *r)
{
    if (nf != 6)
        return BAD("%s: line %d has %d field(s), want 6: kind, "
                   "ranks, ranks per node, from bytes, to bytes (or -), way",
                   file, no, nf);
    int k = 0;
    while (k < DCOLL_WAY_KINDS && strcmp(f[0], dcoll_way_kinds[k].name))
        k++;
    if (k == DCOLL_WAY_KINDS)
        return BAD("%s: line %d: '%s' is not a kind with ways to choose "
                   "(all_reduce, reduce_scatter, broadcast, reduce, "
                   "all_gather)", file, no, f[0]);
    r->kind = dcoll_way_kinds[k].kind;
    int64_t v[4];
    static const char *const what[4] = {"ranks", "ranks per node",
                                        "from bytes", "to bytes"};
    for (int i = 0; i < 4; i++) {
        if (i == 3 && !strcmp(f[4], "-")) {
            v[3] = INT64_MAX;
            continue;
        }
        if (!number(f[i + 1], i < 2 ? 1 : 0, &v[i]) ||
            (i < 2 && v[i] > 1 << 24))
            return BAD("%s: line %d: %s '%s' is not a whole "
                       "number%s", file, no, what[i], f[i + 1],
                       i < 2 ? " from 1 to 16777216" : " from 0");
    }
    if (v[1] > v[0])
        return BAD("%s: line %d: %lld ranks per node is more "
                   "than the %lld ranks", file, no, (long long)v[1],
                   (long long)v[0]);
    if (v[2] > v[3])
        return BAD("%s: line %d: from %lld bytes is above to "
                   "%lld", file, no, (long long)v[2], (long long)v[3]);
    r->ranks = (int)v[0];
    r->ppn = (int)v[1];
    r->from = v[2];
    r->to = v[3];
    for (int w = 0; w < DCOLL_WAY_COUNT; w++)
        if (!strcmp(f[5], dcoll_way_names[w]) &&
            way_of_kind((enum dcoll_way)w, r->kind)) {
            r->way = (enum dcoll_way)w;
            return DCOLL_SUCCESS;
        }
    char ways[160] = "";
    const struct dcoll_way_kind *wk = &dcoll_way_kinds[k];
    for (int i = 0, at = 0; i < wk->nways && at < (int)sizeof(ways); i++)
        at += snprintf(ways + at, sizeof(ways) - (size_t)at, "%s%s",
                       i ? ", " : "", dcoll_way_names[wk->ways[i]]);
    return BAD("%s: line %d: '%s' is not a way of %s (%s)", file, no, f[5],
               f[0], ways);
}

/* Read text (the file's bytes, NUL-ended) into *out, or say what is
 * wrong with it, naming the line; *mpi gets the MPI it was made with. */
static dcoll_status_t parse(const char *file, char *text,
                            struct dcoll_mpi_tuning **out, char *mpi,
                            size_t cap)
{
    *out = NULL;
    int lines = 1;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    struct dcoll_mpi_tuning *t =
        calloc(1, sizeof(*t) + sizeof(struct row) * (size_t)lines);
    if (!t)
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory "
                           "for the table", file);
    snprintf(t->file, sizeof(t->file), "%s", file);
    int no = 0, stage = 0;   /* 0: header, 1: mpi, 2: rows, 3: ended */
    dcoll_status_t st = DCOLL_SUCCESS;
    for (char *line = text, *next; !st && line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        no++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *rest = line + strspn(line, " \t\r");
        if (stage == 1 && !strncmp(rest, "mpi", 3) &&
            (rest[3] == ' ' || rest[3] == '\t')) {
            snprintf(mpi, cap, "%s", rest + 4);
            stage = 2;
            continue;
        }
        char *f[8], *save = NULL;
        int nf = 0;
        for (char *s = strtok_r(line, " \t\r", &save); s;
             s = strtok_r(NULL, " \t\r", &save))
            if (nf < 8)
                f[nf++] = s;
            else
                nf++;
        if (nf == 0)
            continue;
        if (stage == 3) {
            st = BAD("%s: line %d follows the 'end' line", file,
                     no);
        } else if (stage == 0) {
            if (nf != 2 || strcmp(f[0], "dcoll-tuning") || strcmp(f[1], "1"))
                st = BAD("%s is not a dcoll tuning table: its "
                         "first line is '%s', want 'dcoll-tuning 1'", file,
                         f[0]);
            stage = 1;
        } else if (stage == 1) {
            st = BAD("%s: line %d: want 'mpi' and the MPI "
                     "library the table was made with", file, no);
        } else if (nf == 1 && !strcmp(f[0], "end")) {
            stage = 3;
        } else {
            st = row_of(file, no, f, nf, &t->rows[t->n]);
            t->n += !st;
        }
    }
    if (!st && stage < 3)
        st = BAD("%s ends at line %d without its 'end' line: "
                 "is it whole?", file, no);
    if (st) {
        free(t);
        return st;
    }
    *out = t;
    return DCOLL_SUCCESS;
}

/* Rank 0's read of the table at path: its length, the bytes in *text;
 * -1 with why. Only a regular file is opened for reading (a FIFO would
 * block the open, a device the reads, while the other ranks wait). */
static int64_t read_table(const char *path, char **text, char *why,
                          size_t len)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    int64_t n = -1;
    if (fd < 0 || fstat(fd, &sb))
        snprintf(why, len, "%s", strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        snprintf(why, len, "it is not a regular file but %s",
                 S_ISDIR(sb.st_mode)    ? "a directory"
                 : S_ISFIFO(sb.st_mode) ? "a FIFO"
                                        : "a device or socket");
    else if (sb.st_size > 1 << 24)
        snprintf(why, len, "it is over 16 MiB (%lld bytes)",
                 (long long)sb.st_size);
    else if (!(*text = malloc((size_t)sb.st_size + 1)))
        snprintf(why, len, "no memory for its %lld bytes",
                 (long long)sb.st_size);
    else
        n = 0;
    while (n >= 0 && n < sb.st_size) {
        ssize_t got = read(fd, *text + n, (size_t)(sb.st_size - n));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            snprintf(why, len, "it could not be read: %s",
                     got ? strerror(errno) : "shorter than it said");
            n = -1;
        } else {
            n += got;
        }
    }
    if (fd >= 0)
        close(fd);
    return n;
}

dcoll_status_t dcoll_mpi_tuning_load(struct dcoll_group *world, bool given,
                                     const char *name)
{
    /* Rank 0's choice decides (dcoll_init's parameter, else DCOLL_TUNING):
     * it reads the file, and its name, the size (-1 and why: unreadable;
     * -3: no table) and the bytes go to all, so that ranks whose
     * environments differ still agree. */
    dcoll_status_t st = dcoll_mpi_shm_setup(world);
    if (st)
        return st;
    char file[256] = "";
    const char *env = given ? name : getenv("DCOLL_TUNING");
    if (world->rank == 0 && env)
        snprintf(file, sizeof(file), "%s", env);
    /* Messages name where the file came from. */
    char shown[300] = "";
    snprintf(shown, sizeof(shown), "%s=%s", given ? "dcoll_init's tuning"
                                                  : "DCOLL_TUNING", file);
    int64_t len = file[0] ? -1 : -3;
    char why[200] = "";
    char *text = NULL;
    if (world->rank == 0 && file[0])
        len = read_table(file, &text, why, sizeof(why));
    MPI_Comm comm = dcoll_mpi_ctl_of(world);
    int rc = MPI_Bcast(&len, 1, MPI_INT64_T, 0, comm);
    if (rc == MPI_SUCCESS && len == -3)
        return DCOLL_SUCCESS;
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(shown, sizeof(shown), MPI_CHAR, 0, comm);
    if (rc == MPI_SUCCESS && len < 0)
        rc = MPI_Bcast(why, sizeof(why), MPI_CHAR, 0, comm);
    bool room = true;
    if (rc == MPI_SUCCESS && len >= 0 && world->rank != 0)
        room = (text = malloc((size_t)len + 1)) != NULL;
    /* In pieces, so that a rank with no room still takes its part. */
    char spare[4096];
    for (int64_t at = 0; rc == MPI_SUCCESS && at < len; at += 4096) {
        int n = len - at < 4096 ? (int)(len - at) : 4096;
        rc = MPI_Bcast(room ? text + at : spare, n, MPI_CHAR, 0, comm);
    }
    if (!room)
        len = -2;
    if (rc != MPI_SUCCESS) {
        free(text);
        return dcoll_mpi_error(rc, "MPI_Bcast (DCOLL_TUNING's bytes)");
    }
    if (len < 0) {
        free(text);
        return len == -2 ? dcoll_error(DCOLL_ERR_NO_MEMORY, "%s"
                                       ": no memory for its bytes", shown)
                         : BAD("%s: rank 0 cannot read it: %s",
                               shown, why);
    }
    text[len] = '\0';
    char made[256], here[256];
    struct dcoll_mpi_tuning *t;
    st = parse(shown, text, &t, made, sizeof(made));
    free(text);
    if (st)
        return st;
    dcoll_mpi_squeeze(made);
    dcoll_mpi_library(here, sizeof(here));
    dcoll_mpi_squeeze(here);
    if (strcmp(made, here)) {
        if (world->rank == 0)
            fprintf(stderr, "dcoll: %s was made with '%s', "
                    "this job runs '%s': the table is left out\n", shown,
                    made, here);
        free(t);
        return DCOLL_SUCCESS;
    }
    bool any = false;
    for (int i = 0; i < t->n; i++)
        any |= t->rows[i].ranks == world->size;
    if (!any && world->rank == 0)
        fprintf(stderr, "dcoll: %s has no rows for %d ranks: "
                "the world's calls are MPI's own\n", shown, world->size);
    free(dcoll_mpi_tuning);
    dcoll_mpi_tuning = t;
    return DCOLL_SUCCESS;
}

const char *dcoll_mpi_tuning_text(void)
{
    static char text[2000];
    const struct dcoll_mpi_tuning *t = dcoll_mpi_tuning;
    if (!t)
        return "no tuning table: every call is MPI's own (DCOLL_TUNING, "
               "docs/performance.md)";
    size_t at = (size_t)snprintf(text, sizeof(text), "tuning table from %s, "
                                 "%d row(s):", t->file, t->n);
    for (int i = 0; i < t->n && at < sizeof(text); i++) {
        const struct row *r = &t->rows[i];
        char range[64];
        if (r->to == INT64_MAX)
            snprintf(range, sizeof(range), "%lld B and up",
                     (long long)r->from);
        else
            snprintf(range, sizeof(range), "%lld-%lld B", (long long)r->from,
                     (long long)r->to);
        at += (size_t)snprintf(text + at, sizeof(text) - at, "%s %s on %d "
                               "ranks, %d a node, %s: %s", i ? ";" : "",
                               dcoll_way_kinds[kind_index(r->kind)].name,
                               r->ranks, r->ppn, range,
                               dcoll_way_names[r->way]);
    }
    return text;
}

void dcoll_mpi_tuning_free(void)
{
    free(dcoll_mpi_tuning);
    dcoll_mpi_tuning = NULL;
}

static int host_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* By the host names dcoll_init gathered (every rank holds the same), so
 * that a world joined under dcollrun, whose processes MPI's shared-memory
 * split sees as nodes of their own, counts as mpirun's does; 0 where a
 * name is missing. */
static int by_hosts(const struct dcoll_group *g)
{
    const char **h = malloc(sizeof(*h) * (size_t)g->size);
    int most = 0;
    for (int i = 0; h && i < g->size; i++)
        if (!(h[i] = dcoll_host_of(g->ranks ? g->ranks[i] : i))) {
            free(h);
            return 0;
        }
    if (!h)
        return 0;
    qsort(h, (size_t)g->size, sizeof(*h), host_cmp);
    for (int i = 0, run = 0; i < g->size; i++) {
        run = i && !strcmp(h[i], h[i - 1]) ? run + 1 : 1;
        most = run > most ? run : most;
    }
    free(h);
    return most;
}

/* The group's ranks per node: its largest share of one node, found on
 * its first tuned call (collective, as that call is, where the host names
 * are missing). */
static int ranks_per_node(const struct dcoll_group *g)
{
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    if (mc->ppn)
        return mc->ppn;
    if ((mc->ppn = by_hosts(g)) > 0)
        return mc->ppn;
    MPI_Comm node;
    int mine = 1, most = 0;
    if (MPI_Comm_split_type(mc->ctl, MPI_COMM_TYPE_SHARED, 0,
                            MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &mine);
        MPI_Comm_free(&node);
    }
    if (MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, mc->ctl) !=
        MPI_SUCCESS)
        most = -1;   /* no row matches: MPI's own calls */
    mc->ppn = most;
    return most;
}

enum dcoll_way dcoll_mpi_tuned(const struct dcoll_group *g,
                               const struct dcoll_coll *c, bool *found)
{
    const struct dcoll_mpi_tuning *t = dcoll_mpi_tuning;
    *found = false;
    /* The kinds with rows for this group's size, found once: a kind or
     * a group the table does not name costs a test, not the rows. */
    struct dcoll_mpi_comm *mc = dcoll_mpi_of(g);
    if (DCOLL_UNLIKELY(!mc->tuned_kinds)) {
        uint32_t kinds = 1u << 31;
        for (int i = 0; i < t->n; i++)
            if (t->rows[i].ranks == g->size)
                kinds |= 1u << t->rows[i].kind;
        mc->tuned_kinds = kinds;
    }
    if (!(mc->tuned_kinds & (1u << c->kind)))
        return DCOLL_WAY_MPI;
    int64_t bytes = c->count * (int64_t)dcoll_dtype_sizes[c->dtype];
    int ppn = 0;
    for (int i = 0; i < t->n; i++) {
        const struct row *r = &t->rows[i];
        if (r->kind != (enum dcoll_coll_kind)c->kind || r->ranks != g->size ||
            bytes < r->from || bytes > r->to)
            continue;
        if (!ppn)
            ppn = ranks_per_node(g);
        if (r->ppn == ppn) {
            *found = true;
            return r->way;
        }
    }
    return DCOLL_WAY_MPI;
}
