/* The recorder files and reports that scale (issue 34): under mpirun,
 *   test_trace dump DIR    dcoll_dump writes each rank's file in DIR: the
 *                          job's identity, every group's state, each call
 *                          with its kind, type, count, op, root, form and
 *                          transport; a second dump replaces it whole;
 *                          refused before init and after finalize
 *   test_trace report DIR  a mismatch (DCOLL_DEBUG=detail) under each
 *                          DCOLL_REPORT: rank 0 prints the report, the
 *                          others a line (lines), nothing (brief, quiet)
 *                          or the whole report (all); files in DIR
 *   test_trace env DIR     bad DCOLL_REPORT, DCOLL_FLIGHT_DIR and
 *                          DCOLL_DUMP_SIGNAL refused, naming the value
 *   test_trace signal DIR  ranks keep calling until their file comes;
 *                          trace.sh sends DCOLL_DUMP_SIGNAL to mpirun or
 *                          dcollrun
 *   test_trace raise DIR   each rank sends DCOLL_DUMP_SIGNAL to itself
 *   test_trace slow DIR    the last rank comes late to 40 calls, then a
 *                          dump (trace-tool.sh reads it)
 *   test_trace profile DIR DCOLL_PROFILE=all: rank 0's summary at
 *                          finalize and its JSON file, after known calls */
#include <mpi.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include "capture.h"
#include "testutil.h"

int t_rank, t_failures;
static int n;
static const char *dir;

/* This rank's file, whole, in a buffer the next call reuses; "" if none. */
static const char *file_text(void)
{
    static char text[65536];
    char pattern[512];
    text[0] = '\0';
    snprintf(pattern, sizeof(pattern), "ls %s/dcoll-*-%d.jsonl 2>/dev/null",
             dir, t_rank);
    FILE *p = popen(pattern, "r");
    char path[600] = "";
    if (!p)
        return text;
    if (!fgets(path, sizeof(path), p))
        path[0] = '\0';
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    if (f) {
        size_t got = fread(text, 1, sizeof(text) - 1, f);
        text[got] = '\0';
        fclose(f);
    }
    return text;
}

static void clear_files(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -f %s/dcoll-*-%d.jsonl", dir, t_rank);
    if (system(cmd) != 0)
        fprintf(stderr, "could not clear %s\n", dir);
}

static int dump(void)
{
    CHECK_REFUSED(dcoll_dump(), DCOLL_ERR_NOT_INITIALIZED, "dcoll_init");
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
    int x[37], y[37];
    for (int i = 0; i < 37; i++)
        x[i] = t_rank + i;
    CHECK_OK(dcoll_all_reduce(g, x, y, 37, DCOLL_INT32, DCOLL_MAX, NULL,
                              NULL));
    dcoll_work_t *w = NULL;
    CHECK_OK(dcoll_all_reduce(g, x, y, 5, DCOLL_INT32, DCOLL_SUM, NULL, &w));
    CHECK_OK(dcoll_work_wait(w));
    dcoll_work_free(&w);
    CHECK_OK(dcoll_broadcast(g, x, 3, DCOLL_INT32, n - 1, NULL, NULL));
    dcoll_plan_t *p = NULL;
    CHECK_OK(dcoll_barrier_plan(g, NULL, &p));
    CHECK_OK(dcoll_plan_start(p, NULL));
    CHECK_OK(dcoll_plan_free(&p));
    CHECK_OK(dcoll_barrier(NULL, NULL, NULL));
    clear_files();
    CHECK_OK(dcoll_dump());
    char *t = (char *)file_text();
    /* Each call line carries its signature after the group, 16 hex
     * digits, the same on every rank for the same call: checked here
     * apart, then taken out of the text the checks below read. */
    int sigs = 0;
    for (char *at = t; (at = strstr(at, ",\"sig\":\"")) != NULL; sigs++) {
        size_t hex = strspn(at + 8, "0123456789abcdef");
        CHECK(hex == 16 && at[24] == '"', "signature: %.40s", at);
        memmove(at, at + 25, strlen(at + 25) + 1);
    }
    /* The world's two: new_group #1 (numbered among its calls since
     * issue 52) and the barrier #2. */
    CHECK(sigs == 6, "%d signatures for 6 calls:\n%s", sigs, t);
    char want[200];
    snprintf(want, sizeof(want), "{\"schema\":\"dcoll-trace\",\"version\":1,"
             "\"job\":\"");
    CHECK(!strncmp(t, want, strlen(want)), "header: %.300s", t);
    snprintf(want, sizeof(want), ",\"rank\":%d,\"size\":%d,\"host\":\"",
             t_rank, n);
    CHECK(strstr(t, want), "rank and size: %.300s", t);
    snprintf(want, sizeof(want), "\"pid\":%ld,\"reason\":\"dcoll_dump\"",
             (long)getpid());
    CHECK(strstr(t, want), "pid and reason: %.300s", t);
    CHECK(strstr(t, "\"wall\":") && strstr(t, "\"clock\":"), "clocks: %s",
          t);
    const char *lines[] = {
        "{\"group\":0,\"name\":\"the world (",
        "{\"group\":1,\"name\":\"group 1 (world ranks {",
        "\"calls\":4,\"latest\":{\"call\":4,\"kind\":\"barrier\","
        "\"form\":\"plan\"},\"state\":\"idle\"",
        "{\"call\":1,\"entry\":1,\"group\":1,\"kind\":\"all_reduce\","
        "\"dtype\":\"int32\",\"count\":37,\"bytes\":148,\"op\":\"MAX\","
        "\"form\":"
        "\"blocking\",\"start\":",
        "{\"call\":2,\"entry\":2,\"group\":1,\"kind\":\"all_reduce\","
        "\"dtype\":\"int32\",\"count\":5,\"bytes\":20,\"op\":\"SUM\","
        "\"form\":\"async\"",
        "\"form\":\"plan\"",
        "\"status\":0,\"by\":\"mpi\"}",
        "{\"call\":1,\"entry\":1,\"group\":0,\"kind\":\"new_group\"",
        "{\"call\":2,\"entry\":2,\"group\":0,\"kind\":\"barrier\"",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        CHECK(strstr(t, lines[i]), "file lacks %s:\n%s", lines[i], t);
    snprintf(want, sizeof(want), "\"kind\":\"broadcast\",\"dtype\":\"int32\","
             "\"count\":3,\"bytes\":12,\"root\":%d,", n - 1);
    CHECK(strstr(t, want), "file lacks %s:\n%s", want, t);
    /* Every line is one object. */
    int objects = 0;
    for (const char *l = t; *l; objects++) {
        const char *end = strchr(l, '\n');
        CHECK(*l == '{' && end && end[-1] == '}', "line %d: %.80s",
              objects + 1, l);
        if (!end)
            break;
        l = end + 1;
    }
    CHECK(objects == 9, "%d lines, want 9:\n%s", objects, t);
    /* A second dump replaces the first, whole. */
    CHECK_OK(dcoll_all_reduce(g, x, y, 37, DCOLL_INT32, DCOLL_MAX, NULL,
                              NULL));
    CHECK_OK(dcoll_dump());
    t = (char *)file_text();
    CHECK(strstr(t, "\"calls\":5") && !strstr(t, "\"calls\":4"),
          "second dump: %s", t);
    /* A dump that cannot be written (a directory where the file goes):
     * refused, the file's error wrapped once (the message used to be
     * formatted into itself: "dcoll_dump: dcoll_dump: ...", cut). */
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "f=$(ls %s/dcoll-*-%d.jsonl) && rm -f $f && "
             "mkdir $f", dir, t_rank);
    CHECK(system(cmd) == 0, "%s", cmd);
    dcoll_status_t st = dcoll_dump();
    const char *e = dcoll_last_error();
    CHECK(st == DCOLL_ERR_IO &&
              !strncmp(e, "dcoll_dump: cannot write the flight recorder "
                          "file ", 45) &&
              !strstr(e + 1, "dcoll_dump") && strstr(e, "Is a directory"),
          "a dump into a directory: %d, %s", (int)st, e);
    snprintf(cmd, sizeof(cmd), "rmdir %s/dcoll-*-%d.jsonl", dir, t_rank);
    CHECK(system(cmd) == 0, "%s", cmd);
    dcoll_group_destroy(&g);
    CHECK_OK(dcoll_finalize());
    CHECK_REFUSED(dcoll_dump(), DCOLL_ERR_FINALIZED, "finalized");
    return 0;
}

/* A mismatch under each DCOLL_REPORT. */
static int report(void)
{
    static const char *const modes[] = {"brief", "lines", "quiet", "all"};
    setenv("DCOLL_DEBUG", "detail", 1);
    for (int m = 0; m < 4; m++) {
        setenv("DCOLL_REPORT", modes[m], 1);
        clear_files();
        CHECK_OK(dcoll_init(NULL));
        float v[8] = {0};
        struct capture cap;
        capture_begin(&cap);
        dcoll_status_t st = dcoll_all_reduce(NULL, v, v, t_rank ? 6 : 5,
                                             DCOLL_FLOAT32, DCOLL_SUM, NULL,
                                             NULL);
        const char *err = capture_end(&cap);
        CHECK(st == DCOLL_ERR_MISMATCH, "%s: status %d", modes[m], st);
        bool whole = strstr(err, "called different collectives") != NULL;
        bool line = strstr(err, "the ranks disagree on all_reduce #1 on the "
                           "world (") != NULL;
        char mine[64];
        snprintf(mine, sizeof(mine), "dcoll[%d]: ", t_rank);
        if (t_rank == 0 || m == 3) {
            CHECK(whole && strstr(err, mine) && strstr(err, "; each rank's "
                  "flight recorder is in ") && strstr(err, "Job "),
                  "%s: rank %d printed: %s", modes[m], t_rank, err);
        } else if (m == 1) {
            CHECK(!whole && line && strstr(err, "its flight recorder is in ")
                  && strstr(err, " pid "), "%s: rank %d printed: %s",
                  modes[m], t_rank, err);
        } else {
            CHECK(!err[0], "%s: rank %d printed: %s", modes[m], t_rank,
                  err);
        }
        const char *t = file_text();
        CHECK(strstr(t, "\"reason\":\"dcoll_all_reduce on the world (") &&
              strstr(t, "called different collectives"),
              "%s: rank %d's file: %.400s", modes[m], t_rank, t);
        CHECK_OK(dcoll_finalize());
    }
    unsetenv("DCOLL_DEBUG");
    unsetenv("DCOLL_REPORT");
    return 0;
}

static void refused_env(const char *name, const char *value,
                        const char *text)
{
    setenv(name, value, 1);
    CHECK_REFUSED(dcoll_init(NULL), DCOLL_ERR_INVALID_ARGUMENT, text);
    unsetenv(name);
}

static int env(void)
{
    refused_env("DCOLL_REPORT", "everyone", "DCOLL_REPORT='everyone' is not "
                "'brief', 'lines', 'quiet' or 'all'");
    refused_env("DCOLL_FLIGHT_DIR", "/nonexistent/traces",
                "DCOLL_FLIGHT_DIR='/nonexistent/traces' is not a directory "
                "this process may write in (No such file or directory)");
    refused_env("DCOLL_FLIGHT_DIR", "/dev/null", "not a directory");
    refused_env("DCOLL_DUMP_SIGNAL", "KILL", "DCOLL_DUMP_SIGNAL='KILL' is "
                "not a signal a program may take");
    refused_env("DCOLL_DUMP_SIGNAL", "SIGSEGV", "DCOLL_DUMP_SIGNAL='SIGSEGV'");
    refused_env("DCOLL_DUMP_SIGNAL", "9", "DCOLL_DUMP_SIGNAL='9'");
    refused_env("DCOLL_PROFILE", "yes", "DCOLL_PROFILE='yes' is not 'text', "
                "'json', 'all' or 'off'");
    /* Each refusal leaves init possible, with the signal's handler gone
     * after finalize. */
    setenv("DCOLL_DUMP_SIGNAL", "SIGUSR2", 1);
    CHECK_OK(dcoll_init(NULL));
    struct sigaction sa;
    sigaction(SIGUSR2, NULL, &sa);
    CHECK(sa.sa_handler != SIG_DFL, "no handler for SIGUSR2 after init");
    CHECK_OK(dcoll_finalize());
    sigaction(SIGUSR2, NULL, &sa);
    CHECK(sa.sa_handler == SIG_DFL, "a handler for SIGUSR2 after finalize");
    unsetenv("DCOLL_DUMP_SIGNAL");
    return 0;
}

/* 40 all_reduces where the last rank comes 30 ms late to each, then a
 * dump: dcoll-trace -s names it as the rank that waited least. */
static int slow(void)
{
    clear_files();
    setenv("DCOLL_FLIGHT_RECORDER", "100", 1);
    CHECK_OK(dcoll_init(NULL));
    int x = 1, y = 0;
    for (int i = 0; i < 40; i++) {
        if (t_rank == n - 1)
            usleep(30000);
        CHECK_OK(dcoll_all_reduce(NULL, &x, &y, 1, DCOLL_INT32, DCOLL_SUM,
                                  NULL, NULL));
    }
    CHECK_OK(dcoll_dump());
    CHECK_OK(dcoll_finalize());
    return 0;
}

/* DCOLL_PROFILE=all: known calls, then rank 0's summary at finalize and
 * its JSON file. */
static int profile(void)
{
    setenv("DCOLL_PROFILE", "all", 1);
    CHECK_OK(dcoll_init(NULL));
    dcoll_group_t *g = NULL;
    CHECK_OK(dcoll_new_group(&g, NULL, 0, NULL));
    int x[100] = {0}, y[100];
    for (int i = 0; i < 10; i++)
        CHECK_OK(dcoll_all_reduce(NULL, x, y, 100, DCOLL_INT32, DCOLL_SUM,
                                  NULL, NULL));
    for (int i = 0; i < 4; i++) {
        dcoll_work_t *w = NULL;
        CHECK_OK(dcoll_all_reduce(NULL, x, y, 100, DCOLL_INT32, DCOLL_SUM,
                                  NULL, &w));
        CHECK_OK(dcoll_work_wait(w));
        dcoll_work_free(&w);
    }
    for (int i = 0; i < 5; i++)
        CHECK_OK(dcoll_broadcast(g, x, 8, DCOLL_FLOAT64, 0, NULL, NULL));
    dcoll_plan_t *p = NULL;
    CHECK_OK(dcoll_barrier_plan(g, NULL, &p));
    for (int i = 0; i < 3; i++)
        CHECK_OK(dcoll_plan_start(p, NULL));
    CHECK_OK(dcoll_plan_free(&p));
    dcoll_group_destroy(&g);   /* its figures outlive it */
    clear_files();
    struct capture cap;
    capture_begin(&cap);
    CHECK_OK(dcoll_finalize());
    const char *err = capture_end(&cap);
    if (t_rank != 0) {
        CHECK(!err[0], "rank %d printed: %s", t_rank, err);
        return 0;
    }
    char want[200];
    snprintf(want, sizeof(want), "dcoll[0]: profile of job ");
    CHECK(strstr(err, want) && strstr(err, " from dcoll_init to "
                                      "dcoll_finalize"), "head: %s", err);
    const char *rows[] = {"all_reduce", "broadcast", "barrier"};
    const char *counts[] = {"14", "5", "3"};
    const char *bytes[] = {"5.47 KiB", "320 B", "0 B"};
    const char *groups[] = {"0", "1", "1"};
    for (int i = 0; i < 3; i++) {
        snprintf(want, sizeof(want), "dcoll[0]: %5s %6d %-18s %12s %12s ",
                 groups[i], n, rows[i], counts[i], bytes[i]);
        CHECK(strstr(err, want), "no row '%s' in: %s", want, err);
    }
    CHECK(strstr(err, "the profile is also in "), "no file named: %s", err);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "cat %s/dcoll-*-profile.json", dir);
    FILE *f = popen(cmd, "r");
    char json[8192] = "";
    size_t got = f ? fread(json, 1, sizeof(json) - 1, f) : 0;
    json[got] = '\0';
    if (f)
        pclose(f);
    snprintf(want, sizeof(want), "\"kind\":\"all_reduce\",\"calls\":%d,"
             "\"bytes\":%d,", 14 * n, 14 * 400 * n);
    const char *head = "{\"schema\":\"dcoll-profile\",\"version\":1,";
    CHECK(!strncmp(json, head, strlen(head)) && strstr(json, want),
          "json lacks %s: %s", want, json);
    unsetenv("DCOLL_PROFILE");
    return 0;
}

/* Keep calling until this rank's file comes (20 s at most). */
static int signalled(bool self)
{
    setenv("DCOLL_DUMP_SIGNAL", "USR1", 1);
    clear_files();
    CHECK_OK(dcoll_init(NULL));
    if (self)
        raise(SIGUSR1);
    else if (t_rank == 0)
        printf("ready\n");   /* trace.sh sends the signal from here on */
    int x = 1, y = 0, loops = 0;
    const char *t = "";
    for (double t0 = dcoll_wtime(); dcoll_wtime() - t0 < 20; loops++) {
        CHECK_OK(dcoll_all_reduce(NULL, &x, &y, 1, DCOLL_INT32, DCOLL_SUM,
                                  NULL, NULL));
        t = file_text();
        int have = strstr(t, "\"reason\":\"dump asked by signal") != NULL;
        CHECK_OK(dcoll_all_reduce(NULL, &have, &y, 1, DCOLL_INT32,
                                  DCOLL_MIN, NULL, NULL));
        if (y)
            break;
        usleep(20000);
    }
    CHECK(strstr(t, "\"reason\":\"dump asked by signal 10 (User defined "
                 "signal 1)\""), "rank %d's file after %d loops: %.300s",
          t_rank, loops, t);
    /* The job goes on. */
    CHECK_OK(dcoll_all_reduce(NULL, &x, &y, 1, DCOLL_INT32, DCOLL_SUM, NULL,
                              NULL));
    CHECK(y == n, "sum %d after the dump", y);
    CHECK_OK(dcoll_finalize());
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 2 ? argv[1] : "";
    dir = argc > 2 ? argv[2] : ".";
    setvbuf(stdout, NULL, _IOLBF, 0);
    mkdir(dir, 0755);   /* made by the first rank; EEXIST for the rest */
    setenv("DCOLL_FLIGHT_DIR", dir, 1);
    /* Open MPI's, hydra's or dcollrun's. */
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r)
        r = getenv("PMI_RANK");
    if (!r)
        r = getenv("RANK");
    t_rank = r ? atoi(r) : 0;
    const char *s = getenv("OMPI_COMM_WORLD_SIZE");
    if (!s)
        s = getenv("PMI_SIZE");
    if (!s)
        s = getenv("WORLD_SIZE");
    n = s ? atoi(s) : 1;
    int rc;
    if (!strcmp(mode, "dump"))
        rc = dump();
    else if (!strcmp(mode, "report")) {
        /* MPI outlives each dcoll_init and dcoll_finalize of the loop. */
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        rc = report();
        MPI_Finalize();
    }
    else if (!strcmp(mode, "slow"))
        rc = slow();
    else if (!strcmp(mode, "profile"))
        rc = profile();
    else if (!strcmp(mode, "env"))
        rc = env();
    else if (!strcmp(mode, "signal") || !strcmp(mode, "raise"))
        rc = signalled(!strcmp(mode, "raise"));
    else {
        fprintf(stderr, "usage: test_trace dump|report|env|signal|raise|"
                "slow|profile DIR\n");
        return 2;
    }
    if (t_failures)
        fprintf(stderr, "test_trace %s: rank %d: %d failure(s)\n", mode,
                t_rank, t_failures);
    return rc || t_failures ? 1 : 0;
}
