/* DCOLL_TUNING: a table's ways run (seen through MPI's profiling
 * interface) and give the right result on every rank; a table made with
 * another MPI, or with rows for other group sizes only, is left out and
 * every call is MPI's own; a malformed table is refused by dcoll_init on
 * every rank, naming the line. Only rank 0's DCOLL_TUNING counts. Run
 * under mpirun with 1 to 4 ranks on one node. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "capture.h"
#include "dcoll/dcoll.h"
#include "testutil.h"

int t_rank, t_failures;
static int n;


enum { ALLREDUCE, REDUCE, BCAST, RS, ALLGATHERV, RSB, SCATTER, SCATTERV,
       GATHER, GATHERV, ALLGATHER, NCOUNT };
static int counts[NCOUNT];

int MPI_Allreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o,
                  MPI_Comm m)
{
    counts[ALLREDUCE]++;
    return PMPI_Allreduce(s, r, c, t, o, m);
}
int MPI_Reduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o,
               int root, MPI_Comm m)
{
    counts[REDUCE]++;
    return PMPI_Reduce(s, r, c, t, o, root, m);
}
int MPI_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm m)
{
    counts[BCAST]++;
    return PMPI_Bcast(b, c, t, root, m);
}
int MPI_Reduce_scatter(const void *s, void *r, const int *c, MPI_Datatype t,
                       MPI_Op o, MPI_Comm m)
{
    counts[RS]++;
    return PMPI_Reduce_scatter(s, r, c, t, o, m);
}
int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r,
                   const int *rc, const int *d, MPI_Datatype rt, MPI_Comm m)
{
    counts[ALLGATHERV]++;
    return PMPI_Allgatherv(s, sc, st, r, rc, d, rt, m);
}
int MPI_Reduce_scatter_block(const void *s, void *r, int c, MPI_Datatype t,
                             MPI_Op o, MPI_Comm m)
{
    counts[RSB]++;
    return PMPI_Reduce_scatter_block(s, r, c, t, o, m);
}
int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc,
                MPI_Datatype rt, int root, MPI_Comm m)
{
    counts[SCATTER]++;
    return PMPI_Scatter(s, sc, st, r, rc, rt, root, m);
}

int MPI_Scatterv(const void *s, const int *sc, const int *d, MPI_Datatype st,
                 void *r, int rc, MPI_Datatype rt, int root, MPI_Comm m)
{
    counts[SCATTERV]++;
    return PMPI_Scatterv(s, sc, d, st, r, rc, rt, root, m);
}
int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *r, int rc,
               MPI_Datatype rt, int root, MPI_Comm m)
{
    counts[GATHER]++;
    return PMPI_Gather(s, sc, st, r, rc, rt, root, m);
}
int MPI_Gatherv(const void *s, int sc, MPI_Datatype st, void *r,
                const int *rc, const int *d, MPI_Datatype rt, int root,
                MPI_Comm m)
{
    counts[GATHERV]++;
    return PMPI_Gatherv(s, sc, st, r, rc, d, rt, root, m);
}
int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc,
                  MPI_Datatype rt, MPI_Comm m)
{
    counts[ALLGATHER]++;
    return PMPI_Allgather(s, sc, st, r, rc, rt, m);
}

static char dir[64];

/* The table text, as rank 0's file; every rank's DCOLL_TUNING names it
 * (only rank 0's is read). */
static void table(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (t_rank == 0 && text) {   /* NULL: no file there */
        FILE *f = fopen(path, "w");
        fputs(text, f);
        fclose(f);
    }
    setenv("DCOLL_TUNING", path, 1);
    PMPI_Barrier(MPI_COMM_WORLD);
}

/* dcoll_init refuses the table, with a message holding want. */
static void refused(const char *name, const char *text, const char *want)
{
    table(name, text);
    dcoll_status_t st = dcoll_init(NULL);
    CHECK(st == DCOLL_ERR_INVALID_ARGUMENT, "%s: dcoll_init gave %d", name,
          (int)st);
    CHECK(strstr(dcoll_last_error(), want), "%s: message '%s' lacks '%s'",
          name, dcoll_last_error(), want);
    if (!st)
        dcoll_finalize();
}

/* One all_reduce and one reduce_scatter of m floats a rank: right, and
 * the MPI calls they made. */
static void calls(int m, int *ar, int *rs)
{
    float *in = malloc(sizeof(float) * (size_t)m * (size_t)n);
    float *out = malloc(sizeof(float) * (size_t)m * (size_t)n);
    for (int i = 0; i < m * n; i++)
        in[i] = (float)(t_rank + i % 5);
    /* The group's first tuned call also learns its ranks per node (an
     * MPI_Allreduce of its own): not counted. */
    dcoll_all_reduce(NULL, in, out, m, DCOLL_FLOAT32, DCOLL_SUM, NULL, NULL);
    memset(counts, 0, sizeof(counts));
    CHECK(dcoll_all_reduce(NULL, in, out, m, DCOLL_FLOAT32, DCOLL_SUM, NULL,
                           NULL) == DCOLL_SUCCESS, "all_reduce: %s",
          dcoll_last_error());
    for (int i = 0; i < m; i++)
        CHECK(out[i] == (float)(n * (n - 1) / 2 + n * (i % 5)),
              "all_reduce[%d] = %g", i, out[i]);
    memcpy(ar, counts, sizeof(counts));
    memset(counts, 0, sizeof(counts));
    CHECK(dcoll_reduce_scatter(NULL, in, out, m, DCOLL_FLOAT32, DCOLL_SUM,
                               NULL, NULL) == DCOLL_SUCCESS,
          "reduce_scatter: %s", dcoll_last_error());
    for (int i = 0; i < m; i++)
        CHECK(out[i] == (float)(n * (n - 1) / 2 + n * ((t_rank * m + i) % 5)),
              "reduce_scatter[%d] = %g", i, out[i]);
    memcpy(rs, counts, sizeof(counts));
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    int provided;
    /* The mismatch below shows the recorder on stderr, as text. The
     * shared segment's trial is off: every call this test counts must be
     * the table's or MPI's own (test_shm checks a table's shm rows). */
    setenv("DCOLL_FLIGHT_DIR", "stderr", 1);
    setenv("DCOLL_SHM", "never", 1);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (t_rank == 0) {
        snprintf(dir, sizeof(dir), "/tmp/dcoll-tuning-XXXXXX");
        if (!mkdtemp(dir))
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    PMPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING], head[600], text[1200];
    int len;
    MPI_Get_library_version(mpi, &len);
    mpi[strcspn(mpi, "\n")] = '\0';
    snprintf(head, sizeof(head), "dcoll-tuning 1\n# made by hand\nmpi "
             "%.250s\n", mpi);

    /* The ways, on this many ranks on one node, every size. */
    snprintf(text, sizeof(text), "%sall_reduce %d %d 0 - reduce+broadcast\n"
             "reduce_scatter %d %d 0 - reduce+scatter\nend\n", head, n, n, n,
             n);
    table("ways1", text);
    int ar[NCOUNT], rs[NCOUNT], avail = 0;
    const char *said = "";
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    /* dcoll-info's words for the table in force. */
    dcoll_backend_status("mpi", &avail, &said);
    CHECK(strstr(said, "2 row(s)") && strstr(said, "reduce+broadcast") &&
          strstr(said, "0 B and up: reduce+scatter"), "the MPI backend's "
          "status: %s", said);
    calls(37, ar, rs);
    CHECK(ar[REDUCE] == 1 && ar[BCAST] == 1 && ar[ALLREDUCE] == 0,
          "reduce+broadcast: %d reduce(s), %d bcast(s), %d allreduce(s)",
          ar[REDUCE], ar[BCAST], ar[ALLREDUCE]);
    CHECK(rs[REDUCE] == 1 && rs[SCATTER] == 1 && rs[RSB] == 0,
          "reduce+scatter: %d reduce(s), %d scatter(s)", rs[REDUCE],
          rs[SCATTER]);
    dcoll_finalize();

    /* The flight recorder names the way: under DCOLL_DEBUG=detail a
     * mismatch prints it, after a tuned call. */
    if (n > 1) {
        setenv("DCOLL_DEBUG", "detail", 1);
        CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s",
              dcoll_last_error());
        /* Rank 0 says which way each kind takes, once while it holds. */
        struct capture cap;
        capture_begin(&cap);
        calls(37, ar, rs);
        calls(37, ar, rs);
        const char *told = capture_end(&cap);
        const char *line = "group 0: all_reduce of 148 B a rank by "
                           "reduce+broadcast, as the tuning table says";
        const char *at = strstr(told, line);
        if (t_rank == 0)
            CHECK(at && !strstr(at + 1, line) &&
                  strstr(told, "reduce_scatter of 148 B a rank by "
                         "reduce+scatter"), "DCOLL_DEBUG told: %s", told);
        else
            CHECK(!strstr(told, "tuning table says"), "rank %d told: %s",
                  t_rank, told);
        float x[8] = {0};
        capture_begin(&cap);
        dcoll_status_t st = dcoll_all_reduce(NULL, x, x, t_rank ? 6 : 5,
                                             DCOLL_FLOAT32, DCOLL_SUM, NULL,
                                             NULL);
        const char *printed = capture_end(&cap);
        CHECK(st == DCOLL_ERR_MISMATCH, "a mismatch gave %d", (int)st);
        CHECK(strstr(printed, "all_reduce float32 SUM (by reduce+broadcast) "
                     "count 37"), "the flight recorder does not name the "
              "way: %s", printed);
        dcoll_finalize();
        unsetenv("DCOLL_DEBUG");
    }

    /* The others, from 64 bytes a rank: below, MPI's own. */
    snprintf(text, sizeof(text), "%sall_reduce %d %d 64 - "
             "reduce_scatter+all_gather\nreduce_scatter %d %d 64 - "
             "all_reduce+copy   # a comment\n\nend\n", head, n, n, n, n);
    table("ways2", text);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    calls(37, ar, rs);
    CHECK(ar[RS] == 1 && ar[ALLGATHERV] == 1 && ar[ALLREDUCE] == 0,
          "reduce_scatter+all_gather: %d reduce_scatter(s), %d "
          "allgatherv(s)", ar[RS], ar[ALLGATHERV]);
    CHECK(rs[ALLREDUCE] == 1 && rs[RSB] == 0, "all_reduce+copy: %d "
          "allreduce(s)", rs[ALLREDUCE]);
    calls(3, ar, rs);
    CHECK(ar[ALLREDUCE] == 1 && rs[RSB] == 1, "12 bytes: %d allreduce(s), "
          "%d reduce_scatter_block(s)", ar[ALLREDUCE], rs[RSB]);
    {
        /* AVG, torch's op, takes the table's way too: the sum by
         * reduce_scatter+all_gather, then the division. */
        float in[37], out[37];
        for (int i = 0; i < 37; i++)
            in[i] = (float)(t_rank + i % 5);
        memset(counts, 0, sizeof(counts));
        CHECK(dcoll_all_reduce(NULL, in, out, 37, DCOLL_FLOAT32, DCOLL_AVG,
                               NULL, NULL) == DCOLL_SUCCESS, "AVG: %s",
              dcoll_last_error());
        CHECK(counts[RS] == 1 && counts[ALLGATHERV] == 1 &&
                  counts[ALLREDUCE] == 0, "AVG: %d reduce_scatter(s), %d "
              "allgatherv(s), %d allreduce(s): not the table's way",
              counts[RS], counts[ALLGATHERV], counts[ALLREDUCE]);
        for (int i = 0; i < 37; i++) {
            float want = (float)(n * (n - 1) / 2 + n * (i % 5)) / (float)n;
            CHECK(fabsf(out[i] - want) <= 1e-6f * (want > 1 ? want : 1),
                  "AVG[%d] = %g, want %g", i, out[i], want);
        }
    }
    dcoll_finalize();

    /* The rooted kinds and all_gather, rooted off rank 0; in place too. */
    snprintf(text, sizeof(text), "%sbroadcast %d %d 0 - scatter+all_gather\n"
             "reduce %d %d 0 - reduce_scatter+gather\nall_gather %d %d 0 - "
             "gather+broadcast\nend\n", head, n, n, n, n, n, n);
    table("rooted", text);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    {
        int m = 37, root = n - 1;
        float *buf = malloc(sizeof(float) * (size_t)m * (size_t)n);
        float *all = malloc(sizeof(float) * (size_t)m * (size_t)n);
        for (int i = 0; i < m; i++)
            buf[i] = t_rank == root ? (float)(i % 7) : -1.0f;
        /* The first call learns the group's ranks per node. */
        dcoll_broadcast(NULL, buf, m, DCOLL_FLOAT32, root, NULL, NULL);
        memset(counts, 0, sizeof(counts));
        CHECK(dcoll_broadcast(NULL, buf, m, DCOLL_FLOAT32, root, NULL, NULL)
              == DCOLL_SUCCESS, "broadcast: %s", dcoll_last_error());
        for (int i = 0; i < m; i++)
            CHECK(buf[i] == (float)(i % 7), "broadcast[%d] = %g", i, buf[i]);
        CHECK(counts[SCATTERV] == 1 && counts[ALLGATHERV] == 1 &&
              counts[BCAST] == 0, "scatter+all_gather: %d scatterv(s), %d "
              "allgatherv(s), %d bcast(s)", counts[SCATTERV],
              counts[ALLGATHERV], counts[BCAST]);
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < m; i++)
                all[i] = buf[i] = (float)(t_rank + i % 3);
            memset(counts, 0, sizeof(counts));
            CHECK(dcoll_reduce(NULL, buf, ip ? buf : all, m, DCOLL_FLOAT32,
                               DCOLL_SUM, root, NULL, NULL) == DCOLL_SUCCESS,
                  "reduce: %s", dcoll_last_error());
            float *r = ip ? buf : all;
            for (int i = 0; i < m && t_rank == root; i++)
                CHECK(r[i] == (float)(n * (n - 1) / 2 + n * (i % 3)),
                      "reduce%s[%d] = %g", ip ? " in place" : "", i, r[i]);
            CHECK(counts[RS] == 1 && counts[GATHERV] == 1 &&
                  counts[REDUCE] == 0, "reduce_scatter+gather: %d "
                  "reduce_scatter(s), %d gatherv(s), %d reduce(s)",
                  counts[RS], counts[GATHERV], counts[REDUCE]);
            for (int i = 0; i < m; i++)
                buf[i] = (float)(t_rank * 100 + i);
            float *in = ip ? all + (size_t)t_rank * (size_t)m : buf;
            memcpy(in, buf, sizeof(float) * (size_t)m);
            memset(counts, 0, sizeof(counts));
            CHECK(dcoll_all_gather(NULL, in, all, m, DCOLL_FLOAT32, NULL,
                                   NULL) == DCOLL_SUCCESS, "all_gather: %s",
                  dcoll_last_error());
            for (int i = 0; i < m * n; i++)
                CHECK(all[i] == (float)(i / m * 100 + i % m),
                      "all_gather%s[%d] = %g", ip ? " in place" : "", i,
                      all[i]);
            CHECK(counts[GATHER] == 1 && counts[BCAST] == 1 &&
                  counts[ALLGATHER] == 0, "gather+broadcast: %d gather(s), "
                  "%d bcast(s), %d allgather(s)", counts[GATHER],
                  counts[BCAST], counts[ALLGATHER]);
        }
        free(buf);
        free(all);
    }
    dcoll_finalize();

    /* Another MPI's table, and one for other group sizes: left out. */
    snprintf(text, sizeof(text), "dcoll-tuning 1\nmpi Another MPI 9.9\n"
             "all_reduce %d %d 0 - reduce+broadcast\nend\n", n, n);
    table("other-mpi", text);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    dcoll_backend_status("mpi", &avail, &said);
    CHECK(strstr(said, "no tuning table"), "another MPI's table: the MPI "
          "backend's status: %s", said);
    calls(37, ar, rs);
    CHECK(ar[ALLREDUCE] == 1 && ar[REDUCE] == 0, "another MPI's table was "
          "applied");
    dcoll_finalize();
    snprintf(text, sizeof(text), "%sall_reduce %d %d 0 - reduce+broadcast\n"
             "end\n", head, n + 1, n + 1);
    table("other-size", text);
    CHECK(dcoll_init(NULL) == DCOLL_SUCCESS, "init: %s", dcoll_last_error());
    calls(37, ar, rs);
    CHECK(ar[ALLREDUCE] == 1 && ar[REDUCE] == 0, "a table for %d ranks was "
          "applied", n + 1);
    dcoll_finalize();

    /* dcoll_init's parameter: in place of DCOLL_TUNING (which names a
     * table for other sizes here), and NULL for none. */
    {
        snprintf(text, sizeof(text), "%sall_reduce %d %d 0 - "
                 "reduce+broadcast\nend\n", head, n, n);
        table("by-param", text);
        char path[128];
        snprintf(path, sizeof(path), "%s/by-param", dir);
        table("other-size", NULL);
        dcoll_init_params_t p = DCOLL_INIT_PARAMS_INIT;
        p.mask = DCOLL_INIT_PARAM_TUNING;
        p.tuning = path;
        CHECK(dcoll_init(&p) == DCOLL_SUCCESS, "init: %s",
              dcoll_last_error());
        dcoll_backend_status("mpi", &avail, &said);
        CHECK(strstr(said, "from dcoll_init's tuning="), "status: %s", said);
        calls(37, ar, rs);
        CHECK(ar[REDUCE] == 1 && ar[ALLREDUCE] == 0, "the parameter's "
              "table was not applied: %d allreduce(s)", ar[ALLREDUCE]);
        dcoll_finalize();
        setenv("DCOLL_TUNING", path, 1);
        p.tuning = NULL;
        CHECK(dcoll_init(&p) == DCOLL_SUCCESS, "init: %s",
              dcoll_last_error());
        calls(37, ar, rs);
        CHECK(ar[ALLREDUCE] == 1 && ar[REDUCE] == 0, "a NULL tuning "
              "parameter left DCOLL_TUNING's table in force");
        dcoll_finalize();
        snprintf(path, sizeof(path), "%s/nowhere", dir);
        p.tuning = path;
        dcoll_status_t st_param = dcoll_init(&p);
        CHECK(st_param == DCOLL_ERR_INVALID_ARGUMENT &&
              strstr(dcoll_last_error(), "dcoll_init's tuning=") &&
              strstr(dcoll_last_error(), "cannot read it"), "a missing "
              "file by parameter: %d, %s", (int)st_param,
              dcoll_last_error());
        if (!st_param)
            dcoll_finalize();
    }

    /* Refusals, naming the line. */
    refused("not-a-table", "hello\n", "is not a dcoll tuning table");
    snprintf(text, sizeof(text), "%sall_reduce %d %d 0 - reduce+bcast\nend\n",
             head, n, n);
    refused("wrong-way", text, "line 4: 'reduce+bcast' is not a way of "
            "all_reduce");
    snprintf(text, sizeof(text), "%sall_reduce %d %d 0 - reduce+broadcast\n",
             head, n, n);
    refused("truncated", text, "without its 'end' line");
    snprintf(text, sizeof(text), "%sall_reduce %d %d 0\nend\n", head, n, n);
    refused("short-row", text, "line 4 has 4 field(s), want 6");
    snprintf(text, sizeof(text), "%sall_to_all %d %d 0 - mpi\nend\n", head,
             n, n);
    refused("wrong-kind", text, "line 4: 'all_to_all' is not a kind");
    snprintf(text, sizeof(text), "%sbroadcast %d %d 0 - reduce+broadcast\n"
             "end\n", head, n, n);
    refused("wrong-way", text, "line 4: 'reduce+broadcast' is not a way of "
            "broadcast (mpi, scatter+all_gather, shm)");
    snprintf(text, sizeof(text), "%sall_reduce %d %d 9 1 mpi\nend\n", head,
             n, n);
    refused("backwards", text, "line 4: from 9 bytes is above to 1");
    snprintf(text, sizeof(text), "%sall_reduce 0 1 0 - mpi\nend\n", head);
    refused("no-ranks", text, "line 4: ranks '0' is not a whole number from "
            "1 to 16777216");
    refused("missing", NULL, "rank 0 cannot read it");
    /* Not regular files: refused on every rank, never opened to read (a
     * FIFO's open would block rank 0 while the others wait). */
    char odd[160];
    snprintf(odd, sizeof(odd), "%s/a-directory", dir);
    if (t_rank == 0)
        CHECK(mkdir(odd, 0700) == 0, "mkdir %s", odd);
    refused("a-directory", NULL, "not a regular file but a directory");
    snprintf(odd, sizeof(odd), "%s/a-fifo", dir);
    if (t_rank == 0)
        CHECK(mkfifo(odd, 0600) == 0, "mkfifo %s", odd);
    refused("a-fifo", NULL, "not a regular file but a FIFO");

    if (t_rank == 0) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd)) {
        }
    }
    int bad = 0;
    PMPI_Allreduce(&t_failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (t_rank == 0)
        printf("tuning on %d rank(s): %s\n", n, bad ? "FAIL" : "ok");
    MPI_Finalize();
    return bad ? 1 : 0;
}
