/* The nodes of a spawn across machines (dcoll_spawn with nnodes > 1), as
 * torchrun's agents meet: node 0 serves the job's store at the master
 * address, every node says it has come and how many processes it starts,
 * node 0 waits for all of them (saying now and then who has not) and
 * says go. While the processes run, a failure on one node is written to
 * the store, and every other node stops its own on seeing it; node 0
 * keeps the store until every node is done. The processes use the same
 * store, under torch's agent prefix (rendezvous.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "launch.h"

#define GO_KEY "dcoll/spawn/go"
#define FAILED_KEY "dcoll/spawn/failed"
#define ATTEMPT_KEY "dcoll/spawn/attempt"
/* How often a node asks whether another failed. */
#define POLL_EVERY 0.25

static dcoll_status_t get_str(dcoll_store_t *s, const char *key, char *buf,
                              size_t cap)
{
    size_t len = 0;
    dcoll_status_t st = dcoll_store_get(s, key, buf, cap - 1, &len);
    buf[st ? 0 : len] = '\0';
    return st;
}

/* Node 0: every node has come; they must all start as many processes. */
static dcoll_status_t same_counts(struct dcoll_nodes *n, int nprocs)
{
    for (int k = 1; k < n->nnodes; k++) {
        char key[64], v[320];
        int theirs = -1;
        snprintf(key, sizeof(key), "dcoll/spawn/node/%d", k);
        dcoll_status_t st = get_str(n->store, key, v, sizeof(v));
        if (st)
            return st;
        char *sp = strrchr(v, ' ');
        if (sp)
            theirs = atoi(sp + 1);
        if (theirs != nprocs)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "dcoll_spawn: node "
                               "%d (%.*s) starts %d processes and node 0 "
                               "%d: every node must start as many", k,
                               sp ? (int)(sp - v) : 0, v, theirs, nprocs);
    }
    return DCOLL_SUCCESS;
}

/* A node other than 0: connect to node 0's store of this attempt (a
 * restarting launcher's; dcollrun --max-restarts). After a failure a
 * node may come back before node 0 has closed the last attempt's store:
 * such a store says another attempt, and is left until node 0 serves
 * this one, or until deadline. */
static dcoll_status_t meet_attempt(struct dcoll_nodes *n, const char *addr,
                                   int port, const dcoll_store_params_t *p,
                                   const char *attempt, double deadline)
{
    dcoll_store_params_t cp = *p;
    for (;;) {
        cp.timeout = deadline - dcoll_now();
        if (cp.timeout <= 0)
            return dcoll_error(DCOLL_ERR_TIMEOUT, "node 0 did not serve "
                               "attempt %s's store in time", attempt);
        dcoll_status_t st = dcoll_store_tcp_create(&n->store, addr, port,
                                                   &cp);
        if (st)
            return st;
        /* Node 0 sets the key right after serving: wait a moment. */
        for (int i = 0; i < 40 && !st; i++) {
            const char *keys[1] = {ATTEMPT_KEY};
            int exist = 0;
            char v[32];
            if ((st = dcoll_store_check(n->store, keys, 1, &exist)))
                break;
            if (!exist) {
                usleep(25000);
                continue;
            }
            if ((st = get_str(n->store, ATTEMPT_KEY, v, sizeof(v))))
                break;
            if (!strcmp(v, attempt))
                return DCOLL_SUCCESS;
            break;   /* another attempt's store */
        }
        dcoll_store_destroy(&n->store);
        usleep(100000);
    }
}

dcoll_status_t dcoll_nodes_meet(struct dcoll_nodes *n, const char *addr,
                                int port, int nnodes, int node, int nprocs,
                                double timeout)
{
    memset(n, 0, sizeof(*n));
    n->nnodes = nnodes;
    n->node = node;
    n->nprocs = nprocs;
    snprintf(n->where, sizeof(n->where), "%s:%d", addr, port);
    dcoll_store_params_t p = DCOLL_STORE_PARAMS_INIT;
    p.mask = DCOLL_STORE_PARAM_TIMEOUT | DCOLL_STORE_PARAM_SERVE;
    p.timeout = timeout;
    p.serve = node == 0;
    const char *attempt = dcoll_attempt();
    dcoll_status_t st = node == 0
        ? dcoll_store_tcp_create(&n->store, addr, port, &p)
        : meet_attempt(n, addr, port, &p, attempt, dcoll_now() + timeout);
    if (!st && node == 0)
        st = dcoll_store_set(n->store, ATTEMPT_KEY, attempt, strlen(attempt));
    if (st) {
        char msg[DCOLL_ERROR_MAX];
        snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
        dcoll_store_destroy(&n->store);
        return dcoll_error(st, "dcoll_spawn: node %d: the job's store at "
                           "%s: %s", node, n->where, msg);
    }
    char key[64], host[256] = "", mine[320], go[512];
    dcoll_host_name(host, sizeof(host));
    if (node == 0) {
        static const struct dcoll_wait_all nodes_of = {
            "dcoll_spawn", "dcoll[node 0]", "dcoll/spawn/node/%d", "nodes",
            "node(s)"};
        st = dcoll_launch_wait_all(n->store, &nodes_of, nnodes, timeout,
                                   n->where);
        if (!st)
            st = same_counts(n, nprocs);
        /* The others wait on this key: tell them either way. */
        snprintf(go, sizeof(go), "%s%s", st ? "!" : "",
                 st ? dcoll_last_error() : "");
        if (dcoll_store_set(n->store, GO_KEY, go, strlen(go)) && !st)
            st = dcoll_error(DCOLL_ERR_IO, "dcoll_spawn: node 0 could not "
                             "tell the nodes to start: %s",
                             dcoll_last_error());
    } else {
        snprintf(key, sizeof(key), "dcoll/spawn/node/%d", node);
        snprintf(mine, sizeof(mine), "%s %d", host, nprocs);
        if (!(st = dcoll_store_set(n->store, key, mine, strlen(mine))) &&
            !(st = get_str(n->store, GO_KEY, go, sizeof(go))) && go[0])
            st = dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_spawn: node %d: node "
                             "0 called the job off: %s", node, go + 1);
        else if (st)
            st = dcoll_error(st, "dcoll_spawn: node %d: no word from node 0 "
                             "at %s: %s", node, n->where, dcoll_last_error());
    }
    if (st) {
        char msg[DCOLL_ERROR_MAX];
        snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
        dcoll_nodes_close(n);
        return dcoll_error(st, "%s", msg);
    }
    n->next_poll = dcoll_now() + POLL_EVERY;
    return DCOLL_SUCCESS;
}

/* A failure as the store keeps it: "RANK CODE SIGNAL text". */
static dcoll_status_t failed_from(const char *v, dcoll_spawn_failure_t *f)
{
    int used = 0;
    dcoll_spawn_failure_t got = {-1, 0, 0};
    if (sscanf(v, "%d %d %d %n", &got.rank, &got.exit_code, &got.signal,
               &used) < 3)
        used = 0;
    if (f)
        *f = got;
    return dcoll_error(DCOLL_ERR_CHILD_FAILED, "dcoll_spawn: %s; every "
                       "node's processes were stopped", v + used);
}

dcoll_status_t dcoll_nodes_poll(struct dcoll_nodes *n,
                                dcoll_spawn_failure_t *failure)
{
    double t = dcoll_now();
    if (t < n->next_poll)
        return DCOLL_SUCCESS;
    n->next_poll = t + POLL_EVERY;
    const char *keys[1] = {FAILED_KEY};
    int exist = 0;
    char v[DCOLL_ERROR_MAX];
    dcoll_status_t st = dcoll_store_check(n->store, keys, 1, &exist);
    if (!st && !exist)
        return DCOLL_SUCCESS;
    if (!st && !(st = get_str(n->store, FAILED_KEY, v, sizeof(v))))
        return failed_from(v, failure);
    if (failure)
        *failure = (dcoll_spawn_failure_t){-1, 0, 0};
    return dcoll_error(DCOLL_ERR_IO, "dcoll_spawn: node %d lost the job's "
                       "store at %s (node 0 gone?): %s; its processes were "
                       "stopped", n->node, n->where, dcoll_last_error());
}

void dcoll_nodes_fail(struct dcoll_nodes *n, const dcoll_spawn_failure_t *f,
                      const char *why)
{
    char v[DCOLL_ERROR_MAX], now[DCOLL_ERROR_MAX], msg[DCOLL_ERROR_MAX];
    size_t len = 0;
    snprintf(msg, sizeof(msg), "%s", dcoll_last_error());
    snprintf(v, sizeof(v), "%d %d %d %s", f->rank, f->exit_code, f->signal,
             why);
    /* The first failure stays: the others are its consequences. Telling
     * them is the best this node can do; its own error stays the one
     * set. */
    dcoll_status_t st = dcoll_store_compare_set(n->store, FAILED_KEY, "", 0,
                                                v, strlen(v), now,
                                                sizeof(now), &len);
    if (st)
        fprintf(stderr, "dcoll[node %d]: could not tell the other nodes: "
                "%s\n", n->node, dcoll_last_error());
    dcoll_error(DCOLL_ERR_CHILD_FAILED, "%s", msg);
}

dcoll_status_t dcoll_nodes_done(struct dcoll_nodes *n, double deadline,
                                dcoll_spawn_failure_t *failure)
{
    char key[64];
    snprintf(key, sizeof(key), "dcoll/spawn/done/%d", n->node);
    dcoll_status_t st = dcoll_store_set(n->store, key, "1", 1);
    /* Node 0 serves the store: it stays until every node is done. */
    for (int k = 1; n->node == 0 && k < n->nnodes && !st; k++) {
        snprintf(key, sizeof(key), "dcoll/spawn/done/%d", k);
        const char *keys[1] = {key};
        int exist = 0;
        while (!(st = dcoll_store_check(n->store, keys, 1, &exist)) &&
               !exist) {
            n->next_poll = 0;
            if ((st = dcoll_nodes_poll(n, failure)))
                return st;
            if (deadline && dcoll_now() > deadline)
                return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_spawn: node %d "
                                   "was not done by the timeout", k);
            nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        }
    }
    return st;
}

void dcoll_nodes_beat(struct dcoll_nodes *n)
{
    double t = dcoll_now();
    if (n->node == 0 || t < n->next_beat)
        return;
    n->next_beat = t + 1.0;
    char key[64];
    int64_t v = 0;
    snprintf(key, sizeof(key), "dcoll/spawn/beat/%d", n->node);
    dcoll_store_add(n->store, key, 1, &v);   /* node 0 gone: nothing to do */
}

dcoll_status_t dcoll_nodes_ended(struct dcoll_nodes *n, double fence,
                                 double deadline)
{
    char key[64];
    snprintf(key, sizeof(key), "dcoll/spawn/ended/%d", n->node);
    dcoll_status_t st = dcoll_store_set(n->store, key, "1", 1);
    /* Node 0 serves the store: it stays until every node has ended or
     * gone silent. */
    char lost[256] = "";
    size_t at = 0;
    for (int k = 1; n->node == 0 && k < n->nnodes && !st; k++) {
        snprintf(key, sizeof(key), "dcoll/spawn/ended/%d", k);
        const char *keys[1] = {key};
        char beat[64];
        snprintf(beat, sizeof(beat), "dcoll/spawn/beat/%d", k);
        int64_t last = -1, v = 0;
        double heard = dcoll_now();
        int exist = 0;
        while (!(st = dcoll_store_check(n->store, keys, 1, &exist)) &&
               !exist) {
            double t = dcoll_now();
            if (!(st = dcoll_store_add(n->store, beat, 0, &v)) && v != last) {
                last = v;
                heard = t;
            }
            if (st)
                break;
            if (t - heard > fence || (deadline && t > deadline)) {
                if (at < sizeof(lost) - 16)
                    at += (size_t)snprintf(lost + at, sizeof(lost) - at,
                                           "%s%d", at ? ", " : "", k);
                break;
            }
            nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        }
    }
    if (!st && lost[0])
        st = dcoll_error(DCOLL_ERR_CHILD_FAILED, "dcoll_spawn: node%s %s "
                         "went silent (no word for %g s) before %s "
                         "processes ended: its host is lost or cut off",
                         strchr(lost, ',') ? "s" : "", lost, fence,
                         strchr(lost, ',') ? "their" : "its");
    return st;
}

void dcoll_nodes_close(struct dcoll_nodes *n)
{
    dcoll_store_destroy(&n->store);
}
