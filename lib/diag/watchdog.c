/* The watchdog: one thread per process, from dcoll_init to
 * dcoll_finalize. Blocking calls run as MPI's own blocking calls, so the
 * calling thread cannot notice that one has hung; this thread does. Every
 * tenth of a second it looks at each group with a timeout:
 *  - it answers other ranks' roll-call asks (where MPI allows a second
 *    thread), so a rank busy elsewhere still says where it is;
 *  - a verdict from another rank (a call on the group hung) makes it write
 *    this rank's recorder file, say where it stands, and acknowledge;
 *  - a blocking call past its deadline on a group in abort mode is a hang:
 *    it asks the ranks where they are, tells the others, prints the report
 *    (the lowest rank that found it) and ends the job;
 *  - a blocking call on a group in abort mode one of whose ranks died,
 *    as its launcher said, ends the job with the report at once;
 *  - DCOLL_DUMP_SIGNAL, once caught, makes it write the recorder file.
 * Without MPI_THREAD_MULTIPLE it makes no MPI call, and a hang is reported
 * from the stuck rank alone. It sleeps between looks: a rank waiting for a
 * slow peer spends its CPU in MPI's wait, not here. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "diag.h"

#define PERIOD 0.1    /* seconds between looks */
#define LINGER 3.0    /* seconds a told rank waits for the job to end:
                         MPI_Abort takes a second or more to reach 64
                         oversubscribed ranks */
#define ALONE 0.5     /* seconds a rank that cannot tell the others waits
                         before its exit ends the job */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static bool running, stopping;
static bool threaded;                  /* MPI_THREAD_MULTIPLE */
static struct dcoll_group *world;
/* The groups it looks at, under lock. */
static struct dcoll_group **watched;
static int nwatched, capwatched;
static atomic_bool ending;
/* The hang another rank reported here, which this rank leaves to it. */
static struct dcoll_group *told_g;
static uint64_t told_seq;
static int told_world = -1;            /* the rank that reported it */
static int64_t told_pid;
static bool told_first;                /* the lowest rank it told */
/* The lowest rank whose verdict this thread took, and its group: a
 * calling thread that ends the job for a hang of its own (an async
 * call's wait) defers to it as to a verdict its own tell took. */
static _Atomic(struct dcoll_group *) heard_g;
static atomic_int heard_from = -1;
static _Atomic int64_t heard_pid;
static atomic_bool hearing;            /* between its serve and the store */
bool (*dcoll_watch_hook)(struct dcoll_group *g, char *why, size_t len,
                         int *kind);
bool (*dcoll_gpu_hook)(const struct dcoll_coll *c);

/* What g's transports left running failed (an asynchronous error, or a
 * stream-ordered call past the timeout): they have stopped it, and g's
 * next call says why; in abort mode the job ends here, since the program
 * may never call again. */
static void transports_failed(struct dcoll_group *g, const char *why,
                              int kind)
{
    if (g->recoverable)
        return;
    char msg[600], name[200];
    snprintf(msg, sizeof(msg), "%s on %s", why,
             dcoll_group_name(g, name, sizeof(name)));
    dcoll_watchdog_end(g, msg, 0, kind, NULL, true);
}

dcoll_status_t dcoll_watchdog_add(struct dcoll_group *g)
{
    /* Every group's recorder goes in the files, watched or not. */
    dcoll_status_t st = dcoll_trace_track(g);
    if (st || g->timeout <= 0)
        return st;   /* nothing to watch, no roll calls */
    pthread_mutex_lock(&lock);
    if (nwatched == capwatched) {
        int cap = capwatched ? 2 * capwatched : 16;
        struct dcoll_group **p = realloc(watched, sizeof(*p) * (size_t)cap);
        if (!p) {
            pthread_mutex_unlock(&lock);
            dcoll_trace_untrack(g);
            return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for the "
                               "watchdog's list of %d groups", cap);
        }
        watched = p;
        capwatched = cap;
    }
    watched[nwatched++] = g;
    pthread_mutex_unlock(&lock);
    return DCOLL_SUCCESS;
}

void dcoll_watchdog_remove(struct dcoll_group *g)
{
    dcoll_trace_untrack(g);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nwatched; i++)
        if (watched[i] == g) {
            watched[i] = watched[--nwatched];
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* Whether world rank r's process pid, which ends the job, is known to
 * have ended: on this host, its pid gone or a zombie. Its abort is then
 * with the launcher. Elsewhere nobody here can tell. */
static bool ender_ended(int r, int64_t pid)
{
    const char *there = dcoll_host_of(r), *here = dcoll_host_of(world->rank);
    if (pid <= 0 || !there || !here || strcmp(there, here))
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Past the linger with the job still up. Where the rank that ends it
 * has ended, its abort is with the launcher, and a second would only add
 * to the launcher's work (Open MPI 4.1's mpirun at times fails to
 * unpack an abort's help message, "Data unpack would read past end of
 * buffer", and ends a loaded job seconds later): this rank leaves alone,
 * and the launcher ends the rest. Else the caller aborts. */
static void leave_if_ended(int r, int64_t pid)
{
    if (!ender_ended(r, pid))
        return;
    if (dcoll_report_mode == DCOLL_REPORT_LINES ||
        dcoll_report_mode == DCOLL_REPORT_ALL)
        fprintf(stderr, "dcoll[%d]: world rank %d, which ends the job, has "
                "ended, and the job still runs; this rank ends itself (exit "
                "code %d) rather than abort the job a second time\n",
                world->rank, r, DCOLL_HANG_EXIT_CODE);
    dcoll_exit_now(DCOLL_HANG_EXIT_CODE);
}

_Noreturn void dcoll_watchdog_end(struct dcoll_group *g, const char *why,
                                  uint64_t seq, int kind,
                                  const struct dcoll_roll *roll, bool mpi)
{
    /* One ending per process: a second thread that finds a hang waits
     * for the first to finish the job. */
    if (atomic_exchange(&ending, true))
        for (;;)
            pause();
    /* The file first: once the others are told, a lower rank may end
     * the job at any moment. Then tell them: a lower rank that found the
     * same hang meanwhile prints the report, and this one only its
     * line. */
    dcoll_status_t kept = dcoll_fault_keep(why);
    char name[200], where[400];
    snprintf(where, sizeof(where), "%s #%llu on %s timed out here too; a "
             "lower rank that found it at the same time reports it",
             dcoll_kind_name(kind), (unsigned long long)seq,
             dcoll_group_name(g, name, sizeof(name)));
    /* A send or receive's hang is told too (number 0), so that every
     * rank writes its file and says where it stands. Rank 0 reports
     * before it waits for the others' acknowledgements: no lower rank
     * can take the report over, and a told rank busy in a roll call of
     * its own would hold the report back by the whole grace. */
    bool tells = mpi && roll && (seq || roll->p2p);
    bool first = !tells || g->rank == 0;   /* no one it could defer to */
    if (first)
        dcoll_fault_say(g, why, true, where, false, &kept);
    struct dcoll_verdict lower = {.from = -1};
    bool defer = tells && g->svc->tell(g, seq, kind, roll,
                                       dcoll_report_mode == DCOLL_REPORT_ALL,
                                       &lower);
    /* A verdict the watchdog took as this thread began is noted by now
     * (it takes no more once ending is set). */
    for (int i = 0; i < 1000 && atomic_load(&hearing); i++)
        usleep(1000);
    int heard = atomic_load(&heard_from);
    if (tells && heard >= 0 && heard < g->rank &&
        atomic_load(&heard_g) == g && (!defer || heard < lower.from)) {
        lower.from = heard;
        lower.pid = atomic_load(&heard_pid);
        defer = true;
    }
    if (!first)
        dcoll_fault_say(g, why, !defer, where, false, &kept);
    /* A lower rank that found the same hang ends the job: wait for it a
     * while, so that the launcher sees one abort, answering the other
     * ranks' messages meanwhile. */
    if (defer) {
        double end = dcoll_now() + LINGER;
        while (dcoll_now() < end) {
            struct dcoll_verdict v;
            if (g->svc->serve(g, &v)) {
                dcoll_roll_free(&v.roll);
                g->svc->ack(g, v.from);
            }
            usleep(10000);
        }
    }
    if (defer)
        leave_if_ended(g->ranks ? g->ranks[lower.from] : lower.from,
                       lower.pid);
    dcoll_counters_flush();   /* the abort may end us */
    if (mpi)
        g->svc->abort_job(world, DCOLL_HANG_EXIT_CODE);
    /* Alone, this exit is what ends the job, and a launcher may stop the
     * rest at once (hydra does): ranks stuck on about the same deadline
     * get a moment to print their own reports first. */
    usleep((useconds_t)(ALONE * 1e6));
    dcoll_exit_now(DCOLL_HANG_EXIT_CODE);
}

/* A watched blocking call on g began at start and is past its deadline. */
static void declare(struct dcoll_group *g, double start)
{
    uint64_t seq = DCOLL_PEEK(g->busy_seq);
    int kind = DCOLL_PEEK(g->busy_kind);
    const char *fn = DCOLL_PEEK(g->cur_fn);
    if (DCOLL_PEEK(g->busy_start) != start)
        return;   /* it ended while we looked */
    struct dcoll_diag_group *d = g->diag;
    if (threaded && seq && d->lead_seq != seq) {
        /* The lowest rank waiting in the call reports it; the others
         * wait for its verdict, so one roll call is made, not one per
         * rank. */
        double wait = 0;
        int lead = g->svc->lead(g, seq, &wait);
        d->lead_seq = seq;
        d->lead_until = dcoll_now() + wait;
        if (lead != g->rank)
            return;
    } else if (threaded && seq && dcoll_now() < d->lead_until) {
        return;   /* the lead's verdict may still come */
    }
    struct dcoll_roll roll = {0};
    if (threaded && seq)
        g->svc->roll_call(g, seq, &roll);
    else if (threaded)   /* a send or receive: its peer alone */
        g->svc->ask_peer(g, DCOLL_PEEK(g->busy_peer),
                         DCOLL_PEEK(g->busy_tag), &roll);
    dcoll_fault_hung(g, fn ? fn : dcoll_kind_name(kind), seq, kind,
                     DCOLL_PEEK(g->cur_form) == DCOLL_FORM_PLAN
                         ? DCOLL_FORM_PLAN : DCOLL_FORM_BLOCKING,
                     roll.n || roll.p2p ? &roll : NULL, threaded,
                     dcoll_now() - start);
}

static void *run(void *arg)
{
    (void)arg;
    double linger = 0;   /* when a told rank ends the job itself */
    pthread_mutex_lock(&lock);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)(PERIOD * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&wake, &lock, &until);
        if (stopping)
            break;
        dcoll_trace_poll();
        double now = dcoll_now();
        for (int i = 0; i < nwatched; i++) {
            struct dcoll_group *g = watched[i];
            struct dcoll_verdict v;
            /* Once a thread ends the job, verdicts are its to take. */
            for (;;) {
                atomic_store(&hearing, true);
                if (!threaded || atomic_load(&ending) ||
                    !g->svc->serve(g, &v))
                    break;
                int was = atomic_load(&heard_from);
                if (was < 0 || v.from < was) {
                    atomic_store(&heard_g, g);
                    atomic_store(&heard_pid, v.pid);
                    atomic_store(&heard_from, v.from);
                }
                atomic_store(&hearing, false);
                /* Print the report once; later ones only get an ack. */
                if (!linger) {
                    dcoll_fault_told(g, &v);
                    linger = now + LINGER;
                    told_g = g;
                    told_seq = v.seq;
                    told_world = g->ranks ? g->ranks[v.from] : v.from;
                    told_pid = v.pid;
                    told_first = g->rank == (v.from == 0 ? 1 : 0);
                }
                dcoll_roll_free(&v.roll);
                g->svc->ack(g, v.from);
            }
            atomic_store(&hearing, false);
            char why[300];
            int kind = 0;
            if (dcoll_watch_hook &&
                dcoll_watch_hook(g, why, sizeof(why), &kind))
                transports_failed(g, why, kind);
            double start = DCOLL_PEEK(g->busy_start);
            /* A hang another rank reported is being ended by it. */
            if (start > 0 && !g->recoverable && now >= start + g->timeout &&
                !(g == told_g && DCOLL_PEEK(g->busy_seq) == told_seq))
                declare(g, start);
            /* A member died, as its launcher said: the blocking call
             * cannot end, and the job ends now rather than at the
             * deadline (return mode's calls see it themselves). */
            int dead;
            if (start > 0 && !g->recoverable && dcoll_death_of &&
                (dead = dcoll_death_of(g, NULL, 0)) >= 0 &&
                DCOLL_PEEK(g->busy_start) == start) {
                const char *fn = DCOLL_PEEK(g->cur_fn);
                int kind = DCOLL_PEEK(g->busy_kind);
                dcoll_fault_died(g, fn ? fn : dcoll_kind_name(kind),
                                 DCOLL_PEEK(g->busy_seq), kind, dead);
            }
        }
        /* Told of a hang, and the job still runs (the rank that found it
         * could not end it): end it from here. The lowest told rank
         * aborts first and the rest a linger later, only if its abort
         * did not end the job either: one abort is enough, and each is
         * a help message more for the launcher to gather. */
        if (linger && now >= linger)
            leave_if_ended(told_world, told_pid);
        if (linger && now >= linger + (told_first ? 0 : LINGER) &&
            !atomic_exchange(&ending, true)) {
            /* Every told rank may come here: one line each only where
             * the report asks for them. */
            if (dcoll_report_mode == DCOLL_REPORT_LINES ||
                dcoll_report_mode == DCOLL_REPORT_ALL)
                fprintf(stderr, "dcoll[%d]: the job did not end after a "
                        "hang was reported; ending it from here\n",
                        world->rank);
            dcoll_counters_flush();   /* the abort may end us */
            world->svc->abort_job(world, DCOLL_HANG_EXIT_CODE);
        }
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

dcoll_status_t dcoll_watchdog_start(struct dcoll_group *w)
{
    world = w;
    threaded = w->svc->threaded();
    /* Said once per job, where a hang would be reported half-blind and
     * the program chose a timeout of its own (every program that starts
     * MPI with MPI_Init would hear it at the built-in 30 minutes; the
     * hang's report says it anyway). */
    if (!threaded && w->size > 1 && w->timeout > 0 &&
        w->timeout != DCOLL_BUILTIN_TIMEOUT && w->rank == 0)
        fprintf(stderr, "dcoll[0]: MPI runs below MPI_THREAD_MULTIPLE, so "
                "dcoll's watchdog cannot ask the other ranks where they are: "
                "a hang will be reported by the stuck ranks alone, without "
                "naming the missing ones (start MPI with "
                "MPI_THREAD_MULTIPLE, or let dcoll_init start it)\n");
    dcoll_status_t st = dcoll_trace_signal_start();
    if (st)
        return st;
    dcoll_crash_start();
    stopping = false;
    told_g = NULL;
    atomic_store(&heard_from, -1);
    atomic_store(&heard_g, NULL);
    atomic_store(&ending, false);
    int rc = pthread_create(&thread, NULL, run, NULL);
    if (rc) {
        dcoll_crash_stop();
        dcoll_trace_signal_stop();
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: cannot start "
                           "the watchdog thread: %s", strerror(rc));
    }
    /* Named for top -H, gdb and the tests. */
    pthread_setname_np(thread, "dcoll-watchdog");
    running = true;
    return DCOLL_SUCCESS;
}

void dcoll_watchdog_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&lock);
    stopping = true;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    dcoll_crash_stop();
    dcoll_trace_signal_stop();
    running = false;
    free(watched);
    watched = NULL;
    nwatched = capwatched = 0;
    dcoll_trace_untrack_all();
}
