/* Inside the IPC transport (lib/gpu/ipc/): a rank's record of its team
 * (the ranks of its group on its GPU), the calls queued on it, and the
 * steps that move them (steps.c). ipc.c makes the team and runs calls. */
#ifndef DCOLL_GPU_IPC_H
#define DCOLL_GPU_IPC_H

#include <pthread.h>
#include "gpu.h"
#include "plugin_abi.h"
#include "ipc_cache.h"
#include "seg.h"

enum { IPC_UNTRIED, IPC_READY, IPC_NONE };

/* Plans' inputs from this size (a rank's, in bytes) are read where they
 * are (zero copy); below it, copying them into scratch costs less than
 * exporting the buffer each start. */
#define IPC_IN_PLACE_LEAST ((size_t)64 << 10)

/* A rank's box in the team's segment (seg.h), written with the first
 * READY of each call: where the others read its input from. */
struct ipc_box {
    uint32_t user;            /* 1: in its own buffer, else its scratch */
    uint32_t pad;
    uint64_t base, off;       /* the buffer's allocation there, and where
                                 in it the input begins */
    unsigned char handle[DCOLL_IPC_HANDLE_BYTES];   /* the allocation's */
};
_Static_assert(sizeof(struct ipc_box) <= DCOLL_SEG_BOX, "a box fits");

/* Where this rank reads a team member's input during a call. */
struct ipc_from {
    const char *p;            /* its scratch, or its buffer mapped here */
    bool user;                /* the latter: pieces b apart, not chunks */
    void *held;               /* the cache's mapping, put when done */
};
enum ipc_step { IPC_PUT, IPC_READ, IPC_FREE, IPC_FINISH, IPC_DONE };

struct ipc_op;

struct ipc_group {
    int state;
    int k, me, device;         /* the team's size, this rank's place */
    int *members;              /* [k]: their group ranks */
    bool reduce;               /* every rank's plugin has kernels */
    bool skip_ready;           /* test only: read without the handshake */
    struct dcoll_seg seg;
    size_t scratch_bytes;      /* this rank's */
    size_t chunk_bytes;        /* what a chunk may use: the least of all */
    void **peer;               /* [k]: each one's scratch, mapped here */
    void **ready, **done;      /* [k]: their events; this rank's own */
    struct ipc_from *from;     /* [k]: the call under way's inputs */
    struct dcoll_ipc_cache *cache;   /* peers' buffers mapped here */
    const void **srcs;         /* [k]: a reduction's inputs */
    uint64_t seq;              /* chunks so far */
    /* Queued steps, the oldest first, under lock: works may be tested
     * and waited on from several threads. */
    pthread_mutex_t lock;
    struct ipc_op *head, *tail;
    /* Several teams (hier): NCCL among their leaders, one a GPU. */
    bool hier;
    int nteams, team;          /* teams, and this rank's */
    int *team_of, *index_of;   /* [group size]: each rank's team, place */
    void *lcomm;               /* the leaders' communicator (leaders) */
    void *mcomm;               /* or, without NCCL, their MPI one, over
                                  which they stage */
    bool mpi_leaders;          /* the latter */
    const struct dcoll_comm_ops *svc;   /* the group's MPI services */
    double timeout;            /* the group's, for its finalize */
    char failed[200];          /* why the transport gave up ("": not) */
    bool late;                 /* it was a deadline, or a death */
    /* Return mode where deaths are reported: the group whose members'
     * deaths end a wait (NULL: none do), when to look next, and the
     * group rank found dead (-1: none). */
    const struct dcoll_group *watch;
    double look_at;
    int dead;
};

struct ipc_work {
    struct dcoll_work base;
    struct ipc_op *op;
};

/* One step of a call on the team: a collective among its ranks (kind,
 * root a place in the team), or the leaders' call (nccl: over NCCL, or
 * staged through host memory and MPI where NCCL is missing). */
struct ipc_op {
    struct ipc_op *next;
    enum dcoll_coll_kind kind;
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root;
    int avg_n;                 /* AVG's n: the group's size */
    const char *src;           /* this rank's input, NULL: none */
    char *dst;                 /* its output, NULL: none */
    size_t b;                  /* bytes per rank's piece */
    int pieces;                /* pieces of b this rank puts: 1 or k */
    size_t chunk;              /* bytes of a piece per chunk */
    size_t at, len;            /* the chunk under way */
    bool in_place;             /* its buffers outlive the call (a plan's
                                  start): each rank's input may be read
                                  where it is, its own choice */
    bool exported;             /* this rank's is, this call */
    uint64_t n;                /* its number */
    int polled;                /* peers whose event was seen done */
    enum ipc_step step;
    bool nccl;
    dcoll_plugin_call_t call;  /* the leaders' call */
    char *host;                /* staged: its host copy, from the pool */
    bool pinned;
    void *req;                 /* staged: its MPI request, while it runs */
    double deadline;
    double timeout;
    void *stream;
    struct ipc_work *work;     /* NULL: blocking, or released */
    bool orphan;               /* no caller waits: freed when done */
    bool chained;              /* a step before a call's last */
};

/* The kinds the steps below have a case for, in both of their per-kind
 * switches (steps.c), which decline any other; the transport runs these
 * and no other (transport-table checks the two agree). */
extern const enum dcoll_coll_kind dcoll_ipc_coded[];
extern const int dcoll_ipc_ncoded;
bool dcoll_ipc_codes(enum dcoll_coll_kind kind);

/* A step of kind on the team (root and buffers as this rank sees them:
 * a broadcast's buffer in dst); NULL without memory, or for a kind not
 * coded (never asked: the transport declines it first). Done at once
 * where there are no bytes. */
struct ipc_op *dcoll_ipc_op(struct ipc_group *ig, enum dcoll_coll_kind kind,
                            const void *src, void *dst, int64_t count,
                            dcoll_dtype_t dtype, dcoll_op_t op, int root,
                            int avg_n, void *stream, double deadline);
void dcoll_ipc_enqueue(struct ipc_group *ig, struct ipc_op *h);
/* The queue moved on as far as it goes now, finished steps leaving it
 * (orphans freed); *done (where h is given): whether h is. -1 once the
 * transport failed (ig->failed). */
int dcoll_ipc_progress(struct ipc_group *ig, const struct ipc_op *h,
                       bool *done);
/* Until h is done: 0, or -1 as progress. */
int dcoll_ipc_drive(struct ipc_group *ig, const struct ipc_op *h);
/* h is no caller's any more: where still queued it runs on and is freed
 * when done (true); else the caller frees it (false). */
bool dcoll_ipc_disown(struct ipc_group *ig, struct ipc_op *h);
/* The transport gives up (the first reason stays): -1. */
int dcoll_ipc_fail(struct ipc_group *ig, bool late, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
