/* The records and tables between the core and the layers it drives: the
 * call descriptor, groups and works, a backend's collectives, and the
 * communicator services the core asks of the MPI layer. The core decides
 * what an outcome means; a backend only reports it. */
#ifndef DCOLL_TABLES_H
#define DCOLL_TABLES_H

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "base.h"

/* One descriptor for every call. */
struct dcoll_coll {
    enum dcoll_coll_kind kind;
    const void *sendbuf;    /* NULL where the kind has none */
    void *recvbuf;
    int64_t count;          /* elements per rank, as in the public call */
    dcoll_dtype_t dtype;
    dcoll_op_t op;
    int root;               /* GROUP rank of root/src/dst, or ANY_SOURCE */
    int tag;
    /* Vector kinds, an entry per group rank (where the rank has them):
     * counts and displs are the receive side (scatterv: the root's send
     * side; all_to_allv: the send side, with counts2 and displs2 the
     * receive side). displs NULL: packed in rank order. count is this
     * rank's own part: what it sends, or receives for scatterv and
     * reduce_scatterv, or in all for all_to_allv. */
    const int64_t *counts, *displs, *counts2, *displs2;
    bool in_place;          /* the public call's in-place pattern was used */
    bool async;             /* posted with a work handle */
    bool planned;           /* a plan's: its buffers outlive the call */
    const dcoll_coll_opts_t *opts;
    const char *fn;         /* public name for messages; NULL: by kind */
    double start;           /* dcoll_now() when it began, 0 if unread */
    uint64_t seq;           /* its number among the group's collectives;
                               0 for send and recv, which are not counted */
    uint64_t fid;           /* its flight recorder entry, 0: none */
    /* A multi-buffer call on NCCL (lib/gpu/multi.c): the whole call; the
     * fields above describe it as the host path's one collective would,
     * for numbering and debug checks. NULL for every other call. */
    const struct dcoll_multi_call *multi;
    /* The GPU its buffers are on: set by the route for the GPU transports
     * only (host buffers leave it unread). */
    int device;
    /* A neighbourhood kind's neighbourhood; the arrays above then have an
     * entry per listed neighbour: counts, displs the send side (its
     * outdegree), counts2, displs2 the receive side (its indegree). */
    const struct dcoll_nbh *nbh;
    /* A strided call's layouts (API 1.11): a send or receive's one, or a
     * neighbourhood w form's, an entry per listed neighbour (layout the
     * send side, layout2 the receive side). count is then the elements
     * the layouts pick out (a send or receive) or the send side's. */
    const dcoll_layout_t *layout, *layout2;
};

/* A neighbourhood (core/neighbor.c): this rank's lists on its group and
 * the MPI layer's communicator over them. Plans hold a reference, so it
 * lives while they do. */
struct dcoll_nbh {
    uint32_t magic;
    struct dcoll_group *group;  /* NULL once the group is gone */
    int id;                     /* numbered per group as made, alike on
                                   every rank */
    int indeg, outdeg;          /* as given, DCOLL_PROC_NULL counted */
    int *in, *out;              /* group ranks, or DCOLL_PROC_NULL */
    int nin, nout;              /* entries that are not DCOLL_PROC_NULL */
    void *comm;                 /* the MPI layer's, over the real entries
                                   in list order; NULL: none (non-member,
                                   or the group gone) */
    int refs;                   /* the user's handle, and each plan */
    bool member;
    struct dcoll_nbh *next, *prev;  /* the group's live neighbourhoods */
};

/* The form a counted call took on a rank (roll calls, debug checks):
 * MPI never matches a blocking collective with a nonblocking one. */
enum dcoll_form { DCOLL_FORM_NONE, DCOLL_FORM_BLOCKING, DCOLL_FORM_ASYNC,
                  DCOLL_FORM_PLAN,       /* a plan's blocking start */
                  DCOLL_FORM_PLAN_ASYNC, /* its start with a work (not
                                            in a recorder entry's two
                                            bits, which say PLAN) */
                  DCOLL_FORMS_ };

/* How the ranks of a group stood when a call ran out of time. */
enum dcoll_roll_state {
    DCOLL_ROLL_SILENT,   /* no answer */
    DCOLL_ROLL_SAME,     /* in the same call */
    DCOLL_ROLL_OTHER,    /* at another call on the group: seq, kind */
    DCOLL_ROLL_LEFT,     /* left the group at or before the call (refused
                            it, or an earlier one failed there): why */
};
struct dcoll_roll {
    int n;               /* 0: no roll call was made */
    unsigned char *state;
    uint64_t *seq;       /* each rank's latest call on the group */
    int *kind;
    unsigned char *form; /* enum dcoll_form of that call */
    unsigned char *busy; /* waiting inside a blocking call on the group */
    char **why;          /* why a rank left; NULL: none known */
    /* A send or receive's timeout: only its peer (group rank; -1: any
     * source, asked of nobody) was asked, and its tag is said. */
    bool p2p;
    int peer, tag;
};

/* The latest GPU call this process put on a GPU, for roll calls on other
 * groups (NCCL runs one order of calls per GPU: a rank that started a
 * call of group A first waits there, and group B's call behind it on the
 * GPU never starts): group id << 44 | seq << 8 | kind, 0 none. Written
 * by the GPU transports, read by the roll call's answer. */
extern _Atomic uint64_t dcoll_gpu_latest;
static inline uint64_t dcoll_gpu_latest_pack(int group, uint64_t seq,
                                             int kind)
{
    return (uint64_t)(group & 0xfffff) << 44 | (seq & 0xfffffffffull) << 8 |
           (uint64_t)(kind & 0xff);
}

/* Deaths a launcher reported (launch/deaths.c, set by dcoll_init where
 * one reports them; NULL elsewhere): the lowest group rank of g known
 * dead, with the launcher's words in text (cap bytes; text may be NULL),
 * or -1. Asks the launcher's store at most every 0.2 s; any thread. */
extern int (*dcoll_death_of)(const struct dcoll_group *g, char *text,
                             size_t cap);

static inline void dcoll_roll_free(struct dcoll_roll *r)
{
    free(r->state);
    free(r->seq);
    free(r->kind);
    free(r->form);
    free(r->busy);
    for (int i = 0; r->why && i < r->n; i++)
        free(r->why[i]);
    free(r->why);
    *r = (struct dcoll_roll){0};
}

/* Call #seq was declared hung by rank from (a group rank), with what its
 * roll call found: sent to the other ranks before the job ends, so that
 * each prints the same report beside its own recorder. */
struct dcoll_verdict {
    int from;
    int64_t pid;              /* from's process, on from's host */
    uint64_t seq;
    int kind;
    struct dcoll_roll roll;   /* the receiver frees it */
};

/* What a backend reports beside its status: for a call, in the outcome
 * its caller passes; for a work, in the work's own report. The caller
 * clears timed_out; a backend that sets it (status DCOLL_ERR_TIMEOUT)
 * also fills roll with what the ranks answered, and the core frees it. */
struct dcoll_outcome {
    int source;          /* a blocking receive's sender, group rank */
    bool timed_out;
    bool refused;        /* the route refused the call on this rank alone
                            (buffers where its transport cannot take
                            them): it did not run here */
    const char *way;     /* the way a tuning table gave the call instead
                            of MPI's own, by name (static), or NULL */
    bool broken;         /* the transport's own state for the group is
                            past use (its ranks' steps differ): the
                            failure leaves the group unusable, as an MPI
                            error does */
    int died;            /* with timed_out: a member died, group rank + 1
                            (dcoll_death_of), instead of a timeout; set
                            by whoever sets timed_out */
    struct dcoll_roll roll;
};

/* The transports. Each is a struct dcoll_backend and owns one slot of a
 * group's per-transport state (g->tl), opaque to every other file; the
 * core's lib/core/route.c alone decides which one runs a call. The order
 * is the order of everything done with them: groups make their records
 * in it (a transport may read those of the ones before it) and free
 * them in reverse, and for GPU buffers each transport in it that takes
 * them is tried in turn, the next running what one declines. */
enum dcoll_tl {
    DCOLL_TL_MPI,        /* host buffers: MPI's own calls (mpi_layer/) */
    DCOLL_TL_NCCL,       /* GPU buffers: NCCL (lib/gpu/, cuda_layer/) */
    DCOLL_TL_IPC,        /* GPU buffers of ranks that share one GPU: CUDA
                            IPC on that GPU (lib/gpu/ipc/) */
    DCOLL_TL_STAGED,     /* GPU buffers over MPI through pinned memory:
                            the last in line, it runs every kind the
                            host transport runs on one layout */
    DCOLL_TL_USER,       /* a program's own (dcoll_register_backend) */
    DCOLL_TL_COUNT_
};

/* The buffers a transport takes (struct dcoll_backend's memory). */
enum { DCOLL_TL_HOST = 1, DCOLL_TL_GPU = 2 };

/* The group's backend as a program chose it by name; route.c turns it and
 * where a call's buffers live into a transport. */
enum dcoll_choice {
    DCOLL_CHOICE_AUTO,   /* host buffers to MPI, GPU ones to NCCL where
                            the group can use it, else staged */
    DCOLL_CHOICE_MPI,    /* "mpi": GPU buffers staged, never NCCL */
    DCOLL_CHOICE_NCCL,   /* "nccl": GPU buffers only (a barrier: MPI) */
    DCOLL_CHOICE_USER,   /* a program's backend takes every buffer */
};

/* A backend's answer for a call it cannot serve, the same on every rank
 * of the group (NCCL for ranks sharing a GPU, an op it lacks): the route
 * hands the call to the next transport in line. Never leaves the core. */
#define DCOLL_DECLINED ((dcoll_status_t)0x100)

struct dcoll_group;
struct dcoll_work;

/* What a transport's plan state begins with where a blocking start needs
 * nothing but one call (no polling, nothing after it): the function that
 * makes it, given the state. It returns 0 or a code the backend's
 * plan_failed turns into a status with its message; the transport may
 * change it between starts (a trial of two calls settles on one). */
struct dcoll_plan_run {
    int (*run)(struct dcoll_plan_run *state);
};

/* How a group is being made, for each transport's part in it
 * (group_make): collective over parent, as the communicator split is. */
struct dcoll_tl_make {
    struct dcoll_group *parent;  /* the world, for dcoll_new_group */
    int color;                   /* < 0: this rank joins no group */
    int key;                     /* its place among those of its color */
    enum dcoll_choice choice;    /* the new group's backend */
    /* dcoll_group_shrink: the group is these parent ranks (ascending),
     * made among them alone (the others are dead), and color and key
     * say nothing; NULL: a split of the whole parent. */
    const int *keep;
    int nkeep;
};

/* A transport: its table is the whole contract between it and the core
 * (HACKING.md, "Adding a transport"). Backends never call the public
 * API. Fields that may be NULL say so. */
struct dcoll_backend {
    const char *name;       /* as dcoll_backend_status, the recorder and
                               dcoll-trace name it */
    enum dcoll_tl tl;       /* its slot in g->tl, and its place in line */
    unsigned char memory;   /* DCOLL_TL_HOST, DCOLL_TL_GPU: where the
                               buffers it takes live (0: a program's
                               backend, chosen by the group alone) */
    bool over_mpi;          /* GPU: a group whose backend is "mpi" may use
                               it (it moves the data with MPI) */
    /* Whether it has a row for kind: a call of a kind without one is
     * declined (DCOLL_DECLINED), for the route to hand on or refuse, and
     * never runs as another kind. The transport-table test walks it. */
    bool (*runs)(enum dcoll_coll_kind kind);
    /* Whether it can run here, and in words (dcoll_backend_status,
     * dcoll-info); NULL: not a backend a program names by itself. Where
     * set, the registry has its name built in, making choice. */
    bool (*status)(const char **text);
    enum dcoll_choice choice;
    /* Its part in making a group (dcoll_new_group, dcoll_split_group),
     * collective over m->parent: g is the new group on a member, NULL on
     * a rank that joins none (which still takes part). It fills
     * g->tl[tl], and may read the records of the transports before it in
     * enum dcoll_tl, which the core makes first. NULL: it keeps nothing
     * for a group, or makes its record on first use. */
    dcoll_status_t (*group_make)(struct dcoll_group *g,
                                 const struct dcoll_tl_make *m);
    /* Free what it keeps for g in g->tl[tl] and clear the slot (group
     * destroy, finalize, a group whose making failed after its part);
     * called in the reverse of enum dcoll_tl. NULL: it keeps nothing. */
    void (*group_free)(struct dcoll_group *g);
    /* Run c on g. work NULL: block; else store a new work in *work. May
     * return DCOLL_DECLINED (above) having done nothing. */
    dcoll_status_t (*coll)(struct dcoll_group *g, const struct dcoll_coll *c,
                           struct dcoll_work **work,
                           struct dcoll_outcome *out);
    /* For the works it makes (each work names its table in w->backend;
     * NULL where the backend's works are another's, as the staged path's
     * are MPI's). A timeout goes in w->report. */
    dcoll_status_t (*work_test)(struct dcoll_work *w, int *done);
    dcoll_status_t (*work_wait)(struct dcoll_work *w);
    void (*work_release)(struct dcoll_work *w);
    /* Plans (lib/core/plan.c), where the transport keeps something for
     * one; NULL: each start runs coll on the plan's descriptor.
     * plan_make is collective over g as c's blocking call is, and may
     * leave *state NULL for the same; plan_start runs c as coll does,
     * from state; plan_free frees it (not while started). */
    dcoll_status_t (*plan_make)(struct dcoll_group *g,
                                const struct dcoll_coll *c, void **state);
    dcoll_status_t (*plan_start)(struct dcoll_group *g,
                                 const struct dcoll_coll *c, void *state,
                                 struct dcoll_work **work,
                                 struct dcoll_outcome *out);
    void (*plan_free)(void *state);
    /* Whether a plan's blocking starts need only state's run function
     * (struct dcoll_plan_run): state as that, or NULL where plan_start
     * must run. Asked once, at plan time. */
    struct dcoll_plan_run *(*plan_quick)(void *state);
    dcoll_status_t (*plan_failed)(const void *state, int code);
    /* A plan of g on GPU buffers (one without a state: each start takes
     * the GPU route) was freed on this rank: the transport drops what it
     * keeps of buffers it read in place (the others' mappings), whose
     * owners may free them once their plans are gone. NULL: none. */
    void (*plan_released)(struct dcoll_group *g);
    /* Work it left running without a wait (stream-ordered calls),
     * sampled by the watchdog's thread about every tenth of a second:
     * true, with why and the kind of the call that failed, where it found
     * an asynchronous error or a call past g's timeout (it has then
     * stopped that work, and g's next call says why). NULL: it leaves
     * nothing running. */
    bool (*watch)(struct dcoll_group *g, char *why, size_t len, int *kind);
};

/* Communicator services: what the core, diagnostics, launch and GPU
 * layers ask of the MPI layer, through one table as UCC's core asks its
 * team layer for service collectives. Every call returns a status and
 * leaves a message on failure. */
struct dcoll_comm_ops {
    /* Whether an MPI launcher started this process (or MPI is running). */
    bool (*launched)(void);
    /* Start MPI if needed and make the world from MPI_COMM_WORLD or the
     * Fortran handle fcomm (have_comm): fills world->rank, size and the
     * MPI transport's record, world->tl[DCOLL_TL_MPI], which stop frees.
     * thread_level: what the program asked for, refused if MPI provides
     * less; -1: none asked, serialized where dcoll starts MPI. Every
     * rank must come within timeout seconds (from start's copy of the
     * communicator on), else DCOLL_ERR_TIMEOUT. */
    dcoll_status_t (*start)(bool have_comm, int fcomm, int thread_level,
                            double timeout, struct dcoll_group *world);
    /* After start, under a launcher: refuse an MPI world of one where the
     * launcher's variables say it started more processes (each would run
     * the job alone), saying why and what to do. */
    dcoll_status_t (*launcher_check)(void);
    /* Check every process's rank and world size against MPI's
     * (collective) and renumber the world to them; strict: they must be
     * MPI's already. */
    dcoll_status_t (*order_world)(struct dcoll_group *world,
                                  const char *scheme, bool strict, int rank,
                                  int world_size);
    /* Fill world->local_rank and local_size (collective): from MPI's
     * shared-memory split, or, for a joined world, from the host names
     * dcoll_init gathered first (dcoll_host_of). */
    dcoll_status_t (*local)(struct dcoll_group *world, bool joined);
    /* Free what start made; with finalize, end MPI if dcoll started it. */
    dcoll_status_t (*stop)(struct dcoll_group *world, bool finalize);
    /* Have fn run first thing in MPI_Finalize, while MPI may still be
     * called (the standard's delete callback of an attribute on
     * MPI_COMM_SELF), so that a program ending MPI before dcoll ends
     * dcoll too; NULL: nothing. Set once MPI runs; MPI is then no longer
     * dcoll's to end. */
    void (*at_mpi_end)(void (*fn)(void));
    /* The Fortran handle of a member's communicator. */
    int (*comm_fint)(const struct dcoll_group *g);
    /* Whether MPI takes device pointers (a CUDA-aware MPI: Open MPI's
     * MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support), or what
     * DCOLL_MPI_CUDA says (1 or 0), which overrides it. After start. */
    bool (*cuda_aware)(void);
    /* *ok = the minimum over the group of every rank's *ok. */
    dcoll_status_t (*agree)(struct dcoll_group *g, int *ok);
    /* agree as the counted call c (group creation), bounded by its
     * deadline; a timeout is reported in out. *spread: seconds between
     * the first rank's arrival and the last's. */
    dcoll_status_t (*agree_call)(struct dcoll_group *g, int *ok,
                                 double *spread,
                                 const struct dcoll_coll *c,
                                 struct dcoll_outcome *out);
    dcoll_status_t (*bcast_bytes)(struct dcoll_group *g, void *buf,
                                  size_t len, int root);
    dcoll_status_t (*allgather_bytes)(struct dcoll_group *g, const void *in,
                                      void *out, size_t len);
    /* Allgather len bytes over g's control twin, bounded by the deadline
     * of the call c it checks; a timeout is reported in out. */
    dcoll_status_t (*exchange)(struct dcoll_group *g, const void *mine,
                               void *all, size_t len,
                               const struct dcoll_coll *c,
                               struct dcoll_outcome *out);
    /* A communicator of the ranks of g that pass member, ordered by key
     * (collective over g; NULL on the others), for the GPU layer's
     * leaders; sub_free frees it. sub_post starts, in place on host
     * memory buf, an all_reduce (op) or a broadcast from root over it;
     * sub_test: 1 once that ended (*req then freed), 0 not yet, -1
     * failed (message set). */
    dcoll_status_t (*sub_make)(struct dcoll_group *g, bool member, int key,
                               void **comm);
    void (*sub_free)(void *comm);
    dcoll_status_t (*sub_post)(void *comm, enum dcoll_coll_kind kind,
                               void *buf, int64_t count, dcoll_dtype_t dtype,
                               dcoll_op_t op, int root, void **req);
    int (*sub_test)(void **req);
    /* A neighbourhood's communicator over g (collective over g): this
     * rank receives from the nin group ranks in, sends to the nout in
     * out, in list order (MPI_Dist_graph_create_adjacent, no
     * reordering), and what the layer keeps with it; nbh_free frees
     * both. */
    dcoll_status_t (*nbh_make)(struct dcoll_group *g, int nin,
                               const int *in, int nout, const int *out,
                               void **comm);
    void (*nbh_free)(void *comm);

    /* Joining processes no launcher started (launch/join.c drives it).
     * join_server: rank 0 starts what this MPI needs for singletons to
     * meet (hosts: each rank's host name) and writes its address in uri
     * ("" if nothing is needed); join_use: every process uses that
     * address, as rank of size (before MPI starts). */
    dcoll_status_t (*join_server)(double timeout, int size,
                                  const char *const *hosts, char *uri,
                                  size_t cap);
    dcoll_status_t (*join_use)(const char *uri, int rank, int size);
    /* Start MPI; *self is a communicator of this process alone, or of
     * all size processes at once (*whole) where the server made them
     * one world. */
    dcoll_status_t (*join_begin)(int thread_level, int size, void **self,
                                 bool *whole);
    /* Rank 0: open a port to accept at, its name in port. */
    dcoll_status_t (*join_open)(char *port, size_t cap);
    /* Connect *comm to port (the newcomer), or accept a newcomer into
     * *comm; either way *comm becomes the merged communicator. */
    dcoll_status_t (*join_connect)(const char *port, void **comm);
    dcoll_status_t (*join_accept)(const char *port, void **comm);
    /* Close the port (rank 0), check the joined communicator is rank of
     * size and give its Fortran handle; *comm is then the caller's to
     * free with join_free after start has duplicated it. */
    dcoll_status_t (*join_end)(const char *port, void *comm, int rank,
                               int size, int *fcomm);
    void (*join_free)(void *comm);
    /* Stop what join_server started; after stop. */
    void (*join_stop)(void);

    /* The watchdog's side (diag/watchdog.c). threaded: whether MPI lets
     * a second thread call it (MPI_THREAD_MULTIPLE); the calls below are
     * made from the watchdog thread only where it does. */
    bool (*threaded)(void);
    /* Answer g's pending roll-call asks; true with *v filled when another
     * rank has declared one of g's calls hung (then answer with ack). */
    bool (*serve)(struct dcoll_group *g, struct dcoll_verdict *v);
    void (*ack)(struct dcoll_group *g, int to);
    /* Which group rank reports a hang of call #seq: the lowest waiting
     * in it (this one where no lower rank does); where another, *wait
     * is how long to wait for its verdict before reporting anyway. */
    int (*lead)(struct dcoll_group *g, uint64_t seq, double *wait);
    /* Ask g's ranks where they stand about call #seq (a second of grace
     * for answers); fills roll. */
    dcoll_status_t (*roll_call)(struct dcoll_group *g, uint64_t seq,
                                struct dcoll_roll *roll);
    /* The same for a send or receive with peer (group rank; -1: any
     * source) and tag: only the peer is asked. */
    dcoll_status_t (*ask_peer)(struct dcoll_group *g, int peer, int tag,
                               struct dcoll_roll *roll);
    /* Tell the ranks that answered roll that call #seq hung (whole: with
     * what roll found of every rank, for DCOLL_REPORT=all), and wait a
     * little for each to say it has printed its side; true if a lower
     * rank found the same hang meanwhile (it ends the job; the lowest
     * such in *lower, its group rank and process). */
    bool (*tell)(struct dcoll_group *g, uint64_t seq, int kind,
                 const struct dcoll_roll *roll, bool whole,
                 struct dcoll_verdict *lower);
    /* End the whole job with code (MPI_Abort). */
    void (*abort_job)(struct dcoll_group *world, int code);
    /* MPI_Reduce of n doubles to the group's rank 0 (op 0: sum, 1: max,
     * 2: min); out is read on rank 0 only. */
    dcoll_status_t (*reduce_f64)(struct dcoll_group *g, const double *in,
                                 double *out, size_t n, int op);
    /* Read the tuning table that file names (given: dcoll_init's
     * parameter, else DCOLL_TUNING), if any: collective over the world,
     * the same table, or the same refusal, on every rank; rank 0's file
     * decides. */
    dcoll_status_t (*tuning)(struct dcoll_group *world, bool given,
                             const char *file);
    /* dcoll_mem_alloc's part, collective over g after the core's
     * agreement (every rank passes the same bytes): this rank's part of
     * a heap every member maps where g is on one node (its shared
     * segment's calls then read buffers there in place), else memory of
     * its own; fails alike on every rank. mem_owns: whether ptr is what
     * mem_alloc gave on g; mem_free frees it (after the agreement). */
    dcoll_status_t (*mem_alloc)(struct dcoll_group *g, size_t bytes,
                                void **ptr, const char *fn);
    bool (*mem_owns)(struct dcoll_group *g, const void *ptr);
    void (*mem_free)(struct dcoll_group *g, void *ptr);
};

/* The MPI layer's tables: the only names the core knows it by. */
extern const struct dcoll_backend dcoll_mpi_backend;
extern const struct dcoll_comm_ops dcoll_mpi_services;
/* Which MPI calls a plan's starts make here, in words (dcoll-info). */
const char *dcoll_mpi_plan_rule(void);
/* The tuning table in force, in words: its file and rows (dcoll-info). */
const char *dcoll_mpi_tuning_text(void);

/* DCOLL_PLAN_CALLS (lib/diag/config.c): what a plan's starts call on the
 * MPI path. auto: the faster for this MPI (mpi_layer/plan.c);
 * persistent: MPI's persistent requests wherever it has them; plain: the
 * blocking and nonblocking calls. The same on every rank. */
enum dcoll_plan_calls { DCOLL_PLAN_CALLS_AUTO, DCOLL_PLAN_CALLS_PERSISTENT,
                        DCOLL_PLAN_CALLS_PLAIN };
extern int dcoll_plan_calls;

struct dcoll_backend_entry;
struct dcoll_diag_group;
struct dcoll_multi_call;

struct dcoll_group {
    uint32_t magic;
    int rank;              /* DCOLL_NON_MEMBER for the non-member handle */
    int size;
    int *ranks;            /* group rank -> world rank; NULL: the world */
    int *order;            /* group ranks by world rank; NULL: ranks is
                              ascending (every new_group) */
    const char *backend_name;
    enum dcoll_choice choice;  /* what the route reads (core/route.c) */
    const struct dcoll_backend *host;    /* where staged GPU calls run */
    const struct dcoll_comm_ops *svc;    /* services for comm */
    const struct dcoll_backend_entry *bentry;  /* its registry entry */
    /* Each transport's own record for the group, made by it (at group
     * creation, or on first use) and freed by its group_free; opaque to
     * every other file. MPI's holds the group's communicator, which the
     * services use too. */
    void *tl[DCOLL_TL_COUNT_];
    int inflight;          /* work handles not yet finished */
    int local_rank, local_size; /* the world only: this node's share */
    struct dcoll_kept stage;   /* coalesced packing, from malloc */
    struct dcoll_group *next, *prev; /* live user groups, for finalize */
    struct dcoll_plan *plans;  /* its live plans (lib/core/plan.c) */
    struct dcoll_nbh *nbhs;    /* its neighbourhoods (core/neighbor.c) */
    int nbhs_made;
    int id;                /* 0: the world; then 1, 2, ... as made */
    /* Timeouts, read by the backends too. */
    double timeout;        /* seconds a call may wait; 0: forever */
    bool recoverable;      /* DCOLL_ON_TIMEOUT_RETURN: blocking calls are
                              polled and a timeout returns; else MPI's
                              blocking calls under the watchdog */
    /* Where the group stands, written by the calling thread, read by
     * diag's watchdog and the MPI layer's roll call (atomics): call
     * #seq's kind and form, and, while a watched blocking call runs, its
     * number (0: a send or receive), kind, public name and when it began
     * (busy_start 0: none). */
    uint64_t seq;          /* calls started on the group */
    int cur_kind;
    int cur_form;
    uint64_t busy_seq;
    int busy_kind;
    const char *cur_fn;
    int busy_peer, busy_tag;  /* a watched send or receive's */
    double busy_start;
    /* Why this rank left the group: it refused call #left_seq by its own
     * checks, or MPI failed it here ("refused all_reduce #7: count -1 is
     * negative"); NULL while it has not. Diag writes it once and frees
     * it; the MPI layer answers roll calls with it. */
    const char *left;
    uint64_t left_seq;
    /* The public name of the call a thread is in on the group (NULL:
     * none), taken by compare-and-swap at each call's start: a second
     * thread's call meanwhile is refused (core/call.h). */
    _Atomic(const char *) in_call;
    uint64_t plans_made;   /* its collective plans, numbered as made */
    int shrinks;           /* dcoll_group_shrink calls on it here */
    /* Diagnostics' own record (lib/diag/diag.h): failure state, debug
     * checks, the flight recorder. */
    struct dcoll_diag_group *diag;
};

/* The world rank of g's rank r (the world keeps no table). */
static inline int dcoll_world_of(const struct dcoll_group *g, int r)
{
    return g->ranks ? g->ranks[r] : r;
}

/* groupname.c: a group's world ranks ("ranks {0,2,5}", shortened past 8)
 * and its name in reports ("the world (4 ranks)", "group 3 (world ranks
 * {0,2,5})"), into buf. */
const char *dcoll_group_ranks_text(const struct dcoll_group *g, char *buf,
                                   size_t len);
const char *dcoll_group_name(const struct dcoll_group *g, char *buf,
                             size_t len);

/* Runs exactly once when the backend has finished, with its status, before
 * wait reports done; returns the operation's final status. */
typedef dcoll_status_t (*dcoll_work_finish_fn)(struct dcoll_work *w,
                                               dcoll_status_t st);

struct dcoll_work {
    uint32_t magic;
    bool done;
    bool is_recv;
    dcoll_status_t status;
    int source;                       /* receive's sender: group rank while
                                         running, world rank once done */
    struct dcoll_group *group;
    const struct dcoll_backend *backend;
    dcoll_work_finish_fn finish;      /* the core's own post-processing */
    void *finish_data;
    char *errmsg;                     /* the failure's detail, for wait */
    /* Set by dcoll_coll_run once the backend has made the work. */
    double deadline;                  /* dcoll_now() limit; INFINITY: none */
    uint64_t seq;                     /* the call's number in its group,
                                         0: a send or receive */
    uint64_t fid;                     /* its flight recorder entry */
    int kind;                         /* enum dcoll_coll_kind */
    int peer, tag;                    /* a send or receive's: group rank
                                         (or any source) and tag */
    const char *fn;                   /* the public name, for messages */
    struct dcoll_outcome report;      /* a timeout seen by test or wait */
    struct dcoll_plan *plan;          /* the plan whose start made it, which
                                         owns it; NULL: the caller's */
    double prof_t0;                   /* DCOLL_PROFILE: when it was posted;
                                         0: not timed */
};

/* Release stores and acquire loads of the fields the watchdog thread
 * reads: plain moves on x86, so the hot path pays nothing for them. */
#define DCOLL_PUBLISH(field, v)                                             \
    do {                                                                    \
        __typeof__(field) pub_ = (v);                                       \
        __atomic_store(&(field), &pub_, __ATOMIC_RELEASE);                  \
    } while (0)
#define DCOLL_PEEK(field)                                                   \
    __extension__({                                                         \
        __typeof__(field) peek_;                                            \
        __atomic_load(&(field), &peek_, __ATOMIC_ACQUIRE);                  \
        peek_;                                                              \
    })

/* Call #seq of kind, made in form, is now g's latest (the roll call
 * reads it, from the watchdog's thread). */
static inline void dcoll_group_number(struct dcoll_group *g, uint64_t seq,
                                      int kind, int form)
{
    DCOLL_PUBLISH(g->seq, seq);
    DCOLL_PUBLISH(g->cur_kind, kind);
    DCOLL_PUBLISH(g->cur_form, form);
}

/* A watched blocking call, #seq of kind, public name fn, runs since
 * start (the watchdog reads it); dcoll_group_idle when it returns. */
static inline void dcoll_group_busy(struct dcoll_group *g, uint64_t seq,
                                    int kind, const char *fn, double start)
{
    DCOLL_PUBLISH(g->busy_seq, seq);
    DCOLL_PUBLISH(g->busy_kind, kind);
    DCOLL_PUBLISH(g->cur_fn, fn);
    DCOLL_PUBLISH(g->busy_start, start);
}
static inline void dcoll_group_idle(struct dcoll_group *g)
{
    DCOLL_PUBLISH(g->busy_start, 0.0);
}

/* A new work takes the call's deadline, number and names, wherever it
 * was posted from (the public path, a staged chunk). */
static inline void dcoll_work_stamp(struct dcoll_work *w,
                                    const struct dcoll_group *g,
                                    const struct dcoll_coll *c)
{
    w->deadline = g->timeout > 0 ? c->start + g->timeout : INFINITY;
    w->seq = c->seq;
    w->fid = c->fid;
    w->kind = c->kind;
    w->peer = c->root;
    w->tag = c->tag;
    w->fn = c->fn;
}

/* A backend fills a new work's common part; the core counts it in flight
 * once the call has been posted. */
static inline void dcoll_work_init(struct dcoll_work *w, struct dcoll_group *g,
                                   const struct dcoll_backend *be)
{
    /* Field by field: the report's roll is read only once timed_out is
     * set, so it needs no clearing on this path. */
    w->magic = DCOLL_WORK_MAGIC;
    w->done = false;
    w->is_recv = false;
    w->status = DCOLL_SUCCESS;
    w->source = -1;
    w->group = g;
    w->backend = be;
    w->finish = NULL;
    w->finish_data = NULL;
    w->errmsg = NULL;
    w->deadline = INFINITY;
    w->prof_t0 = 0;
    w->seq = 0;
    w->fid = 0;
    w->kind = 0;
    w->fn = NULL;
    w->report.timed_out = false;
    w->plan = NULL;
}

#endif
