/* Inside the MPI layer: MPI types are allowed here and nowhere above.
 * Seen from above, the layer is two tables, dcoll_mpi_backend and
 * dcoll_mpi_services (declared in lib/base/tables.h); everything here is
 * its own. */
#ifndef DCOLL_MPI_INTERNAL_H
#define DCOLL_MPI_INTERNAL_H

#include <mpi.h>
#include "tables.h"

/* Start MPI if needed and make the world from MPI_COMM_WORLD or from the
 * Fortran handle fcomm (have_comm): fills world->rank, size and comm. */
dcoll_status_t dcoll_mpi_start(bool have_comm, int fcomm, int thread_level,
                               double timeout,
                               struct dcoll_group *world);
/* Rendezvous under an MPI launcher: check every process's rank and world
 * size (collective, so all reach the same verdict) and renumber the world
 * so that its ranks are the ones given; @p strict: the ranks must be MPI's
 * already. */
dcoll_status_t dcoll_mpi_order_world(struct dcoll_group *world,
                                     const char *scheme, bool strict,
                                     int rank, int world_size);
/* MPI_Init_thread, remembered so that dcoll_mpi_stop finalizes. */
dcoll_status_t dcoll_mpi_init(int thread_level);
/* Whether an MPI launcher started this process (or MPI is running). */
bool dcoll_mpi_launched(void);
/* Refuse an MPI world of one where the launcher says it started more. */
dcoll_status_t dcoll_mpi_launcher_check(void);
/* Whether dcoll_init started MPI (not the program). */
bool dcoll_mpi_started_here(void);
/* Fill world->local_rank and local_size (collective over the world):
 * from MPI's shared-memory split, or by host name for a @p joined world. */
dcoll_status_t dcoll_mpi_local(struct dcoll_group *world, bool joined);
/* Byte exchanges over a group's communicator, for bootstrapping NCCL. */
dcoll_status_t dcoll_mpi_bcast_bytes(struct dcoll_group *g, void *buf,
                                     size_t len, int root);
/* *ok = the minimum of every rank's *ok. */
dcoll_status_t dcoll_mpi_agree(struct dcoll_group *g, int *ok);
dcoll_status_t dcoll_mpi_allgather_bytes(struct dcoll_group *g,
                                         const void *in, void *out,
                                         size_t len);
/* dcoll_mpi_agree bounded by g's timeout from the start of the call c
 * it belongs to; a timeout is reported in out, and *spread is how far
 * apart the ranks arrived. */
dcoll_status_t dcoll_mpi_agree_call(struct dcoll_group *g, int *ok,
                                    double *spread,
                                    const struct dcoll_coll *c,
                                    struct dcoll_outcome *out);
/* Allgather len bytes from every rank of g over its control
 * communicator, bounded by g's timeout like the call c it checks. */
dcoll_status_t dcoll_mpi_exchange(struct dcoll_group *g, const void *mine,
                                  void *all, size_t len,
                                  const struct dcoll_coll *c,
                                  struct dcoll_outcome *out);
/* Free what start made; with @p finalize, finalize MPI if dcoll started
 * it. A failed dcoll_init does not: MPI cannot start twice, and a later
 * dcoll_init may use it (its dcoll_finalize ends it). */
dcoll_status_t dcoll_mpi_stop(struct dcoll_group *world, bool finalize);
void dcoll_mpi_at_end(void (*fn)(void));
/* Collective over parent: members get a new communicator record in
 * *comm, ordered by key; those of color < 0 get NULL (the MPI
 * transport's group_make). */
dcoll_status_t dcoll_mpi_split(struct dcoll_group *parent, int color,
                               int key, void **comm);
/* The communicator of parent's ranks keep (nkeep, ascending), made among
 * them alone (dcoll_group_shrink); its tag on the control twin. */
#define DCOLL_MPI_SHRINK_TAG 77
/* shm.c's messages while a group's segment is made, on the same twin. */
#define DCOLL_MPI_SHM_TAG 78
dcoll_status_t dcoll_mpi_create(struct dcoll_group *parent, const int *keep,
                                int nkeep, void **comm);
void dcoll_mpi_comm_free(void *comm);
/* The Fortran handle of a member's communicator. */
int dcoll_mpi_comm_fint(const struct dcoll_group *g);

/* join.c: the MPI steps of joining singletons (see struct
 * dcoll_comm_ops). */
dcoll_status_t dcoll_mpi_join_server(double timeout, int size,
                                     const char *const *hosts, char *uri,
                                     size_t cap);
dcoll_status_t dcoll_mpi_join_use(const char *uri, int rank, int size);
dcoll_status_t dcoll_mpi_join_begin(int thread_level, int size,
                                    void **self, bool *whole);
dcoll_status_t dcoll_mpi_join_open(char *port, size_t cap);
dcoll_status_t dcoll_mpi_join_connect(const char *port, void **comm);
dcoll_status_t dcoll_mpi_join_accept(const char *port, void **comm);
dcoll_status_t dcoll_mpi_join_end(const char *port, void *comm, int rank,
                                  int size, int *fcomm);
void dcoll_mpi_join_free(void *comm);
void dcoll_mpi_join_stop(void);
/* After MPI_Finalize: what the join started may go. */
void dcoll_mpi_join_release(void);

/* pmi_server.c: fork a PMI-1 server for size processes at addr (IPv4)
 * that leaves when all of them have; "host:port" in hostport. mapping:
 * PMI_process_mapping's value, or NULL. Process r must be started with
 * PMI_ID base + r; *base is drawn at random. */
dcoll_status_t dcoll_pmi_serve(const char *addr, int size,
                               const char *mapping, double timeout,
                               pid_t *pid, char *hostport, size_t cap,
                               int *base);


struct dcoll_mpi_comm {
    MPI_Comm comm;
    MPI_Comm ctl;   /* its twin for roll calls, debug checks and small
                       collectives, so that they never match the
                       program's own calls */
    char *scratch;  /* small.c's receive buffer, made on first use */
    int ppn;        /* tuning.c: the group's ranks per node; 0: not yet
                       known */
    uint32_t tuned_kinds;  /* tuning.c: the kinds the table has rows for
                              at this group's size (bit 31: found) */
    signed char shm_on;    /* shm.c: 0 not yet asked; 1 a group of one
                              node, 2 one with more ranks than cores,
                              3 several nodes sharing some (the
                              node-aware way), -1 none (or no segment) */
    struct dcoll_mpi_shm *shm;          /* its segment, made on first use */
    struct dcoll_mpi_nodes *nodes;      /* across nodes: each node's */
    struct dcoll_mpi_shm_trial *trial;  /* its trials, by kind and size */
    struct dcoll_mpi_heap *heaps;       /* dcoll_mem_alloc's (shm_heap.c) */
    uint32_t heaps_made;                /* alike on every rank: their ids */
};

/* The MPI transport's record of a group (g->tl[DCOLL_TL_MPI]). */
static inline struct dcoll_mpi_comm *dcoll_mpi_of(const struct dcoll_group *g)
{
    return g->tl[DCOLL_TL_MPI];
}

static inline MPI_Comm dcoll_mpi_comm_of(const struct dcoll_group *g)
{
    return dcoll_mpi_of(g)->comm;
}

static inline MPI_Comm dcoll_mpi_ctl_of(const struct dcoll_group *g)
{
    return dcoll_mpi_of(g)->ctl;
}

/* watch.c: wait for n requests until deadline (a dcoll_now() time;
 * INFINITY: plain MPI_Wait). On time out, ask the group's ranks where they
 * are about the group's collective #seq (seq 0: a send or receive: no one
 * is asked), report it in *out and return DCOLL_ERR_TIMEOUT; the core
 * decides what that does to the group. */
struct dcoll_watch {
    double deadline;
    uint64_t seq;
    int kind;
    const char *fn;
    const char *call;  /* the MPI call, for MPI errors */
    struct dcoll_outcome *out;  /* where a timeout and its roll go */
    int peer, tag;     /* seq 0 (a send or receive): its peer and tag */
};
dcoll_status_t dcoll_mpi_poll(struct dcoll_group *g,
                              const struct dcoll_watch *wt, int n,
                              MPI_Request *reqs, MPI_Status *status);
/* One look of a wait that is not MPI's (shm.c's flags), as
 * dcoll_mpi_poll takes every 64 tests: past wt's deadline the timeout
 * and its roll call, a member's death, and, once the wait has been
 * quiet a while, the others' asks served. *quiet: 0 at the wait's
 * start. */
dcoll_status_t dcoll_mpi_wait_look(struct dcoll_group *g,
                                   const struct dcoll_watch *wt,
                                   double *quiet);
/* small.c: whether c is a small all_reduce, reduce, broadcast or barrier
 * that dcoll_mpi_small runs over point-to-point messages, under wt. */
bool dcoll_mpi_small_fits(const struct dcoll_group *g,
                          const struct dcoll_coll *c);
dcoll_status_t dcoll_mpi_small(struct dcoll_group *g,
                               const struct dcoll_coll *c,
                               const struct dcoll_watch *wt);
/* The same, once the deadline has passed without the requests ending:
 * ask the ranks where they are and report it in wt->out. */
dcoll_status_t dcoll_mpi_timed_out(struct dcoll_group *g,
                                   const struct dcoll_watch *wt);
/* Where a launcher said a member of g died: the call's failure, as a
 * timeout's in wt->out (died set); else DCOLL_SUCCESS. */
dcoll_status_t dcoll_mpi_died(struct dcoll_group *g,
                              const struct dcoll_watch *wt);
/* The watchdog's services (struct dcoll_comm_ops). */
bool dcoll_mpi_threaded(void);
bool dcoll_mpi_cuda_aware(void);
bool dcoll_mpi_serve(struct dcoll_group *g, struct dcoll_verdict *v);
void dcoll_mpi_ack(struct dcoll_group *g, int to);
int dcoll_mpi_lead(struct dcoll_group *g, uint64_t seq, double *wait);
dcoll_status_t dcoll_mpi_reduce_f64(struct dcoll_group *g, const double *in,
                                    double *out, size_t n, int op);
dcoll_status_t dcoll_mpi_roll_call(struct dcoll_group *g, uint64_t seq,
                                   struct dcoll_roll *roll);
dcoll_status_t dcoll_mpi_ask_peer(struct dcoll_group *g, int peer, int tag,
                                  struct dcoll_roll *roll);
bool dcoll_mpi_tell(struct dcoll_group *g, uint64_t seq, int kind,
                    const struct dcoll_roll *roll, bool whole,
                    struct dcoll_verdict *lower);
void dcoll_mpi_abort_job(struct dcoll_group *world, int code);
/* After a failed post: let the n requests already posted end (until the
 * deadline, then free them), keeping the failure's message. */
void dcoll_mpi_settle(struct dcoll_group *g, const struct dcoll_watch *wt,
                      int n, MPI_Request *reqs);

/* dtypes.c: filled by dcoll_mpi_types_create at start. */
extern MPI_Datatype dcoll_mpi_dtype[DCOLL_DTYPE_COUNT_];
extern MPI_Op dcoll_mpi_native_op[DCOLL_OP_COUNT_];
extern MPI_Op dcoll_mpi_half_op[DCOLL_OP_COUNT_];
extern int dcoll_mpi_tag_ub;

dcoll_status_t dcoll_mpi_types_create(void);
void dcoll_mpi_types_free(void);

/* The type that moves a call's elements: the pair types as contiguous
 * bytes of their size where nothing is reduced, since MPICH 4.0's
 * binomial scatter truncates a padded one (MPI_DOUBLE_INT, 12 bytes in
 * 16) past a few hundred elements; the extent, and so every
 * displacement, is the same. */
extern MPI_Datatype dcoll_mpi_move_dtype[DCOLL_DTYPE_COUNT_];
static inline MPI_Datatype dcoll_mpi_type(const struct dcoll_coll *c)
{
    return dcoll_kind_has(c->kind, DCOLL_KF_OP) ? dcoll_mpi_dtype[c->dtype]
                                                : dcoll_mpi_move_dtype[c->dtype];
}

static inline MPI_Op dcoll_mpi_op(dcoll_dtype_t dt, dcoll_op_t op)
{
    bool half = dt == DCOLL_FLOAT16 || dt == DCOLL_BFLOAT16;
    return half ? dcoll_mpi_half_op[op] : dcoll_mpi_native_op[op];
}

/* Describe n > INT_MAX elements of base as one derived type whose extent
 * is exactly n elements, so block i of a gather still starts at i * n. */
int dcoll_mpi_big_type(int64_t n, MPI_Datatype base, MPI_Datatype *out);
/* Layout l's elements of base as one committed type (MPI_Type_vector);
 * its offset is the caller's to add to the buffer. */
int dcoll_mpi_layout_type(const dcoll_layout_t *l, MPI_Datatype base,
                          MPI_Datatype *out);


/* collectives.c: free the cached work handle (at stop). */
void dcoll_mpi_work_cache_free(void);

/* sub.c: the services' communicators of some ranks of a group. */
dcoll_status_t dcoll_mpi_sub_make(struct dcoll_group *g, bool member,
                                  int key, void **comm);
void dcoll_mpi_sub_free(void *comm);
dcoll_status_t dcoll_mpi_nbh_make(struct dcoll_group *g, int nin,
                                  const int *in, int nout, const int *out,
                                  void **comm);
/* A neighbourhood's record in this layer: its graph communicator (first:
 * the core's handle reads as an MPI_Comm *), and the w form's last
 * arrays and types, reused while its calls pass the same layouts. */
struct dcoll_mpi_nbw;
struct dcoll_mpi_nbh {
    MPI_Comm comm;
    struct dcoll_mpi_nbw *cache;
};
/* neighbor.c: a neighbourhood's communicator and its cached types. */
void dcoll_mpi_nbh_free(void *comm);
/* A neighbourhood call's buffer as MPI is given it: a rank with nothing
 * to send or receive may pass NULL, which MPICH refuses whatever the
 * degree, so NULL becomes an address MPI never reads. */
extern char dcoll_mpi_no_buffer;
static inline void *dcoll_mpi_nbh_buf(const void *p)
{
    return p ? (void *)p : &dcoll_mpi_no_buffer;
}
dcoll_status_t dcoll_mpi_sub_post(void *comm, enum dcoll_coll_kind kind,
                                  void *buf, int64_t count,
                                  dcoll_dtype_t dtype, dcoll_op_t op,
                                  int root, void **req);
int dcoll_mpi_sub_test(void **req);

/* Turn an MPI error code into a dcoll status and message. */
dcoll_status_t dcoll_mpi_error(int rc, const char *call);

/* compose.c: a kind made of MPI's other calls (a tuning table's
 * candidates), blocking, with MPI's arguments and result; every rank
 * gets the same bits; me and size are this rank's and comm's size.
 * DCOLL_WAY_MPI, or a way not of the kind, is MPI's own call. reduce_scatter's ways need n * size <= INT_MAX (else MPI's
 * call) and, not in place, room for the whole result on the ranks that
 * reduce it. MPI's error code. */
enum dcoll_way {
    DCOLL_WAY_MPI,
    DCOLL_WAY_REDUCE_BCAST,     /* all_reduce: MPI_Reduce to 0, MPI_Bcast */
    DCOLL_WAY_RS_AG,            /* all_reduce: MPI_Reduce_scatter,
                                   MPI_Allgatherv */
    DCOLL_WAY_REDUCE_SCATTER,   /* reduce_scatter: MPI_Reduce, MPI_Scatter */
    DCOLL_WAY_ALLREDUCE_COPY,   /* reduce_scatter: MPI_Allreduce, a copy */
    DCOLL_WAY_SCATTER_AG,       /* broadcast: MPI_Scatterv from the root,
                                   MPI_Allgatherv */
    DCOLL_WAY_RS_GATHER,        /* reduce: MPI_Reduce_scatter, MPI_Gatherv
                                   to the root */
    DCOLL_WAY_GATHER_BCAST,     /* all_gather: MPI_Gather to 0, MPI_Bcast */
    DCOLL_WAY_SHM,              /* any of them: the shared segment (shm.c),
                                   on a group of one node */
    DCOLL_WAY_COUNT
};
extern const char *const dcoll_way_names[DCOLL_WAY_COUNT];
/* MPI_Reduce, where MPICH's needs its in-place root off 0 mended. */
#ifdef MPICH
int dcoll_mpi_reduce(const void *in, void *out, int n, MPI_Datatype t,
                     MPI_Op op, int root, MPI_Comm comm);
#else
#define dcoll_mpi_reduce MPI_Reduce
#endif
int dcoll_compose_all_reduce(enum dcoll_way way, const void *in, void *out,
                             int n, MPI_Datatype t, size_t esz, MPI_Op op,
                             MPI_Comm comm, int me, int size);
int dcoll_compose_reduce_scatter(enum dcoll_way way, const void *in,
                                 void *out, int n, MPI_Datatype t,
                                 size_t esz, MPI_Op op, MPI_Comm comm,
                                 int me, int size);
/* broadcast: buf on every rank; reduce: out only on the root (in
 * MPI_IN_PLACE on the root: its input is in out); all_gather: in
 * MPI_IN_PLACE: this rank's block is in out already. */
int dcoll_compose_broadcast(enum dcoll_way way, void *buf, int n,
                            MPI_Datatype t, size_t esz, int root,
                            MPI_Comm comm, int me, int size);
int dcoll_compose_reduce(enum dcoll_way way, const void *in, void *out,
                         int n, MPI_Datatype t, size_t esz, MPI_Op op,
                         int root, MPI_Comm comm, int me, int size);
int dcoll_compose_all_gather(enum dcoll_way way, const void *in, void *out,
                             int n, MPI_Datatype t, size_t esz,
                             MPI_Comm comm, int me, int size);

/* mpiname.c: this MPI as tables name it, MPI_Get_library_version's
 * first line, trimmed; squeeze: spaces and commas as one space, none at
 * the ends, as tables' MPIs are compared. */
void dcoll_mpi_library(char *out, size_t cap);
void dcoll_mpi_squeeze(char *s);

/* The kinds a tuning table may name, and their ways: MPI's own first. */
struct dcoll_way_kind {
    const char *name;
    enum dcoll_coll_kind kind;
    int nways;
    enum dcoll_way ways[4];
};
#define DCOLL_WAY_KINDS 5
extern const struct dcoll_way_kind dcoll_way_kinds[DCOLL_WAY_KINDS];

/* tuning.c: the table DCOLL_TUNING names, read at dcoll_init (collective
 * over the world; NULL: none, every call MPI's own), and the way it gives
 * a blocking call of g (collective the first time: it learns the group's
 * ranks per node). */
extern struct dcoll_mpi_tuning *dcoll_mpi_tuning;
dcoll_status_t dcoll_mpi_tuning_load(struct dcoll_group *world, bool given,
                                     const char *file);
void dcoll_mpi_tuning_free(void);
enum dcoll_way dcoll_mpi_tuned(const struct dcoll_group *g,
                               const struct dcoll_coll *c, bool *found);

/* shm.c: the shared-memory way for a group on one node. DCOLL_SHM:
 * auto (a table's row, else the measured rules), never, always, trial
 * (a table's row, else a trial per kind and size);
 * read at dcoll_init, alike on every rank (collective over the world). */
enum { DCOLL_SHM_AUTO, DCOLL_SHM_NEVER, DCOLL_SHM_ALWAYS, DCOLL_SHM_TRIAL };
extern int dcoll_mpi_shm_mode;
dcoll_status_t dcoll_mpi_shm_setup(struct dcoll_group *world);
/* The kinds it runs. */
#define DCOLL_MPI_SHM_KINDS                                                 \
    ((1u << DCOLL_COLL_ALL_REDUCE) | (1u << DCOLL_COLL_REDUCE) |            \
     (1u << DCOLL_COLL_BROADCAST) | (1u << DCOLL_COLL_ALL_GATHER) |         \
     (1u << DCOLL_COLL_REDUCE_SCATTER) | (1u << DCOLL_COLL_BARRIER))
struct dcoll_mpi_shm_trial;
/* Whether blocking call c of g (a kind it runs) takes it: 0 MPI's own
 * call, 1 yes, 2 yes by a tuning table's row, 3 where every rank's
 * buffer lies in one of g's shared heaps (the rules keep MPI's call for
 * other memory: dcoll_mpi_shm_run_placed); alike on every rank, and
 * this rank's look alone (no call).
 * *timed: the trial this call is part of, for dcoll_mpi_shm_timed, or
 * NULL. */
int dcoll_mpi_shm_pick(struct dcoll_group *g, const struct dcoll_coll *c,
                       struct dcoll_mpi_shm_trial **timed);
/* Whether g's blocking calls like c (a plan's) take the segment, or a
 * trial that may pick it (this rank's own look: the host names and the
 * rules, alike on every rank). */
bool dcoll_mpi_shm_takes(struct dcoll_group *g, const struct dcoll_coll *c);
/* Run c through g's segment, made on first use (collective); DECLINED
 * where not every rank could make it, on every rank alike. */
dcoll_status_t dcoll_mpi_shm_run(struct dcoll_group *g,
                                 const struct dcoll_coll *c,
                                 struct dcoll_outcome *out);
/* Run c through g's segment if every rank's input (a broadcast's: the
 * root's buffer) lies in a shared heap, read in place there, after a
 * step in which each says where; else DECLINED, alike on every rank,
 * for MPI's call. */
dcoll_status_t dcoll_mpi_shm_run_placed(struct dcoll_group *g,
                                        const struct dcoll_coll *c,
                                        struct dcoll_outcome *out);
/* A trial's call ended with st, begun at t0: counted, and at the last
 * one the ranks settle on the faster way. */
dcoll_status_t dcoll_mpi_shm_timed(struct dcoll_group *g,
                                   const struct dcoll_coll *c,
                                   struct dcoll_outcome *out,
                                   struct dcoll_mpi_shm_trial *t, double t0,
                                   dcoll_status_t st);
struct dcoll_mpi_comm;
void dcoll_mpi_shm_free(struct dcoll_mpi_comm *mc);
/* shm_heap.c, the services' mem_* (lib/base/tables.h). */
dcoll_status_t dcoll_mpi_mem_alloc(struct dcoll_group *g, size_t bytes,
                                   void **ptr, const char *fn);
bool dcoll_mpi_mem_owns(struct dcoll_group *g, const void *ptr);
void dcoll_mpi_mem_free(struct dcoll_group *g, void *ptr);
/* What the MPI transport's status says of it. */
const char *dcoll_mpi_shm_rule(void);

/* vector.c: post a vector kind's MPI call (rq NULL: blocking). *keep
 * holds the int counts MPI reads until the call completes: free it then
 * (also when it fails). */
int dcoll_mpi_post_vec(const struct dcoll_coll *c,
                       const struct dcoll_group *g, MPI_Comm comm,
                       MPI_Request *rq, bool persist, int **keep,
                       const char **call);

/* Persistent collectives (plans): MPI 4's MPI_<Name>_init, or Open MPI
 * 4.1's MPIX_<Name>_init (its pcollreq extension). DCOLL_MPI_PCOLL is
 * what this build has: 0 none, 1 MPI 4's, 2 the extension. */
#if MPI_VERSION >= 4
#define DCOLL_MPI_PCOLL 1
#define DCOLL_PINIT(name) MPI_##name##_init
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#endif
#ifndef DCOLL_MPI_PCOLL
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define DCOLL_MPI_PCOLL 2
#define DCOLL_PINIT(name) MPIX_##name##_init
#else
#define DCOLL_MPI_PCOLL 0
#endif
#endif
/* A call's nonblocking form ib, or with persist its persistent form:
 * the same arguments, then an info, then the request rq. */
#if DCOLL_MPI_PCOLL
#define DCOLL_NB(persist, ib, pname, rq, ...)                               \
    ((persist) ? DCOLL_PINIT(pname)(__VA_ARGS__, MPI_INFO_NULL, rq)         \
               : ib(__VA_ARGS__, rq))
#else
#define DCOLL_NB(persist, ib, pname, rq, ...) ib(__VA_ARGS__, rq)
#endif

#endif
