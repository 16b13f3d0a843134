/* Launch: rendezvous URLs, the join of processes no launcher started, and
 * spawn. Uses the store's public API, and MPI only through the
 * communicator services table the core passes in. */
#ifndef DCOLL_LAUNCH_H
#define DCOLL_LAUNCH_H

#include "rendezvous.h"

/* Join size processes, ordered by rank, into one MPI communicator through
 * store: its Fortran handle goes to *fcomm, and *joined must go to
 * svc->join_free once svc->start has duplicated it. On failure nothing is
 * left behind: no communicator, port or server. Rank 0 says on stderr,
 * every DCOLL_INIT_REPORT seconds (10; 0: never), how many have come to
 * where (the rendezvous's address, no token), and at the timeout which
 * ranks never did. */
dcoll_status_t dcoll_launch_join(const struct dcoll_comm_ops *svc,
                                 dcoll_store_t *store, int rank, int size,
                                 int thread_level, double timeout,
                                 const char *where, void **joined,
                                 int *fcomm);

/* What dcoll_launch_wait_all waits for: keys key_fmt % 1..size-1, each
 * a rank or node (who) come; fn and tag name the caller in messages. */
struct dcoll_wait_all {
    const char *fn;        /* "dcoll_init" */
    const char *tag;       /* "dcoll[0]": what starts a progress line */
    const char *key_fmt;   /* "dcoll/join/host/%d" */
    const char *noun;      /* "processes" */
    const char *who;       /* "rank(s)" */
};

/* Wait until every key of w is in store, saying on stderr every
 * DCOLL_INIT_REPORT seconds (10; 0: never) how many have come to where
 * and which not yet; at the timeout, DCOLL_ERR_TIMEOUT naming them. */
dcoll_status_t dcoll_launch_wait_all(dcoll_store_t *store,
                                     const struct dcoll_wait_all *w,
                                     int size, double timeout,
                                     const char *where);

/* The nodes of a spawn across machines (nodes.c). */
struct dcoll_nodes {
    dcoll_store_t *store;      /* the job's: node 0 serves it */
    int nnodes, node, nprocs;
    char where[300];           /* "addr:port" */
    double next_poll;
    double next_beat;          /* on_failure continue: nodes_beat */
};

/* Open (node 0: serve) the job's store at addr:port and meet every node
 * there within timeout; node 0 names at the timeout the nodes that never
 * came, and refuses nodes starting another number of processes. */
dcoll_status_t dcoll_nodes_meet(struct dcoll_nodes *n, const char *addr,
                                int port, int nnodes, int node, int nprocs,
                                double timeout);
/* While the processes run (asks the store at most every 0.25 s): a
 * failure on another node, with *failure its rank and status, or the
 * store lost. */
dcoll_status_t dcoll_nodes_poll(struct dcoll_nodes *n,
                                dcoll_spawn_failure_t *failure);
/* Tell every node that this one's process f failed (why: the message,
 * which names the node). */
void dcoll_nodes_fail(struct dcoll_nodes *n, const dcoll_spawn_failure_t *f,
                      const char *why);
/* This node's processes all succeeded; node 0 then waits for every node
 * to say so, or for one to fail, or deadline (0: none). */
dcoll_status_t dcoll_nodes_done(struct dcoll_nodes *n, double deadline,
                                dcoll_spawn_failure_t *failure);
/* With on_failure continue, where no node stops another: every node but
 * 0 says it is alive (at most every second) while its processes run, and
 * says when they have all ended, failed or not (nodes_ended); node 0
 * waits for every node to end, giving up on one silent for fence
 * seconds (its host lost), which it names in the error. */
void dcoll_nodes_beat(struct dcoll_nodes *n);
dcoll_status_t dcoll_nodes_ended(struct dcoll_nodes *n, double fence,
                                 double deadline);
void dcoll_nodes_close(struct dcoll_nodes *n);

/* dcoll_spawn, with the services that say whether MPI or a launcher is
 * already there (spawn must come first). */
dcoll_status_t dcoll_launch_spawn(const struct dcoll_comm_ops *svc,
                                  dcoll_spawn_fn fn, void *arg, int nprocs,
                                  const dcoll_spawn_params_t *params,
                                  dcoll_spawn_failure_t *failure);

/* deaths.c: deaths a launcher that lets survivors go on reports
 * (DCOLL_ON_FAILURE=continue in the processes' environment, set by
 * dcoll_spawn with on_failure continue), read through the job's store.
 * The launcher's side: its (*count + 1)-th notice, rank died for text. */
dcoll_status_t dcoll_deaths_tell(dcoll_store_t *s, int64_t *count, int rank,
                                 const char *text);
/* Whether this process's launcher reports deaths. */
bool dcoll_deaths_reported(void);
/* During dcoll_init's rendezvous, before the world exists: the first
 * death the launcher told, its rank (the launcher's words in text), or
 * -1 (none, or no launcher reports deaths). One connection a call. */
int dcoll_deaths_before_init(char *text, size_t cap);
/* Where the notices are kept: a TCP store and the prefix they are under
 * there. */
struct dcoll_deaths_at {
    char addr[256];
    int port;
    char token[72];     /* "": the environment's, if any */
    char prefix[64];
};
/* A rank's side, from dcoll_init to dcoll_finalize: the notices at
 * where, or (where NULL) the launcher's, if it reports deaths; nothing
 * otherwise. */
dcoll_status_t dcoll_deaths_open(int world_size,
                                 const struct dcoll_deaths_at *where);
void dcoll_deaths_close(void);
/* Read new notices, at most every 0.2 s (now: at once); any thread.
 * False where no launcher reports deaths. */
bool dcoll_deaths_poll(bool now);
/* The first of n world ranks (ranks NULL: 0..n-1) known dead: its index,
 * and the launcher's words in text; -1 if none. */
int dcoll_deaths_first(const int *ranks, int n, char *text, size_t cap);
/* spawn.c: a process of a job whose peers may vanish takes a write to a
 * socket or pipe nobody reads any more as EPIPE, not as a SIGPIPE that
 * ends it: SIGPIPE is ignored where it was at its default (a handler the
 * program set stays). dcoll_spawn's processes, dcollrun, and under
 * DCOLL_ON_FAILURE=continue every rank at dcoll_init. */
void dcoll_pipes_survive(void);
/* keeper.c: deaths under a launcher dcoll does not run (mpirun, srun),
 * said by a keeper process rank 0 forks. Whether this process wants one
 * (DCOLL_ON_FAILURE=continue, and no launcher reports deaths). */
bool dcoll_keeper_wanted(void);
/* DCOLL_ON_FAILURE=continue: survivors go on, by whichever launcher. */
bool dcoll_continue_wanted(void);
/* DCOLL_ON_FAILURE as the ranks compare it at init: 0 unset or stop,
 * 1 continue, 2 anything else (refused). */
int dcoll_on_failure_setting(void);
/* Collective on the world w, whose ranks' pids are pids: rank 0 starts
 * the keeper, and every rank opens the notices there and starts its beat
 * thread. */
dcoll_status_t dcoll_keeper_open(struct dcoll_group *w, const int64_t *pids);
/* Where the keeper took this rank as dead, end it now (a stopped rank
 * that came back): waits in calls ask this. */
void dcoll_keeper_check_self(void);
/* Stop the beat (bye: this rank finalizes, and says so). */
void dcoll_keeper_close(bool bye);
/* The survivors of a group of n (world ranks ranks, NULL: 0..n-1; this
 * one me) agree,
 * under the store keys of name, within timeout, on which of them are
 * alive: each that came, waiting for every member not known dead.
 * alive gets their group ranks in order (*nalive of them) and *id one
 * past the most groups any has made (made: this one's count). */
dcoll_status_t dcoll_deaths_agree(const char *fn, const char *name,
                                  const char *where, int me, int n,
                                  const int *ranks, int made, double timeout,
                                  int *alive, int *nalive, int *id);

#endif
