/* MPI start and stop, and the communicators behind groups. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>   /* MPIX_Query_cuda_support */
#endif

/* Kept across a failed dcoll_init so that the MPI we started is still
 * finalized by a later, successful one. */
static bool started_mpi;

dcoll_status_t dcoll_mpi_error(int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        len = snprintf(text, sizeof(text), "error code %d", rc);
    /* A truncation is the ranks disagreeing on a count: say how to find
     * where. */
    int cls = 0;
    const char *hint = "";
    if (MPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE)
        hint = " (a rank sent more than this one's count could take; "
               "DCOLL_DEBUG=detail compares every rank's collective calls "
               "before any data moves and names the ranks whose counts "
               "differ)";
    return dcoll_error(DCOLL_ERR_MPI, "%s failed: %.*s%s", call, len, text,
                       hint);
}

static dcoll_status_t comm_wrap(MPI_Comm comm, void **out)
{
    struct dcoll_mpi_comm *c = malloc(sizeof(*c));
    if (!c) {
        MPI_Comm_free(&comm);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "no memory for a communicator");
    }
    /* Errors must come back as codes: the default handler aborts the job. */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_dup(comm, &c->ctl);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&comm);
        free(c);
        return dcoll_mpi_error(rc, "MPI_Comm_dup (control twin)");
    }
    MPI_Comm_set_errhandler(c->ctl, MPI_ERRORS_RETURN);
    c->comm = comm;
    c->scratch = NULL;
    c->ppn = 0;
    c->tuned_kinds = 0;
    c->shm_on = 0;
    c->shm = NULL;
    c->trial = NULL;
    c->nodes = NULL;
    c->heaps = NULL;
    c->heaps_made = 0;
    *out = c;
    return DCOLL_SUCCESS;
}

void dcoll_mpi_comm_free(void *comm)
{
    struct dcoll_mpi_comm *c = comm;
    if (!c)
        return;
    dcoll_mpi_shm_free(c);
    MPI_Comm_free(&c->ctl);
    MPI_Comm_free(&c->comm);
    free(c->scratch);
    free(c);
}

static const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED,
                             MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
static const char *const level_names[] = {"single", "funneled",
                                          "serialized", "multiple"};

/* The level MPI gives must cover the one asked for: a program that calls
 * dcoll from several threads under a lower one corrupts MPI's state. */
static dcoll_status_t check_level(int thread_level, int provided,
                                  const char *who)
{
    if (provided >= levels[thread_level])
        return DCOLL_SUCCESS;
    int have = 0;
    while (have < 3 && levels[have + 1] <= provided)
        have++;
    return dcoll_error(DCOLL_ERR_UNSUPPORTED, "dcoll_init: thread_level %s "
                       "was asked for, but %s provides only %s", level_names
                       [thread_level], who, level_names[have]);
}

bool dcoll_mpi_started_here(void)
{
    return started_mpi;
}

dcoll_status_t dcoll_mpi_init(int thread_level)
{
    int provided;
    /* None asked: multiple, so that the watchdog may ask other ranks
     * where they are (it costs OpenMPI 4 nothing measurable). */
    int want = thread_level < 0 ? DCOLL_THREAD_MULTIPLE : thread_level;
    int rc = MPI_Init_thread(NULL, NULL, levels[want], &provided);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Init_thread");
    started_mpi = true;
    /* MPICH reports a failed request (MPI_Test, MPI_Wait: a truncated
     * message) on MPI_COMM_WORLD's handler, or MPI_COMM_SELF's, not on
     * the request's communicator; their default aborts. dcoll started
     * MPI, so the program has no other use for them: return codes. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    return thread_level < 0 ? DCOLL_SUCCESS
                            : check_level(thread_level, provided,
                                          "MPI_Init_thread");
}

/* Test rq until it ends or the clock passes end: 1 ended, 0 not by
 * then, -1 an MPI error (message set). */
static int test_until(MPI_Request *rq, double end, const char *call)
{
    int done = 0, rc;
    for (unsigned spin = 0; !done; spin++) {
        if ((rc = MPI_Test(rq, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
            dcoll_mpi_error(rc, call);
            return -1;
        }
        if (!done && spin % 64 == 63 && dcoll_now() >= end)
            return 0;
    }
    return 1;
}

/* The copy is the first step every rank of base must take: bounded by
 * timeout, so that a rank that never calls dcoll_init leaves the others
 * a status instead of a wait without end. Which rank that is cannot be
 * known here: there is no communicator of dcoll's own to ask on yet.
 * A rank that comes after the others gave up still completes the copy
 * (their requests stay posted), so the ranks then agree on the copy how
 * far apart they came, and fail alike where the first may have given
 * up. A copy with a request left on it is never freed. */
static dcoll_status_t dup_within(MPI_Comm base, double timeout,
                                 MPI_Comm *dup)
{
    static const char call[] = "MPI_Comm_idup";
    MPI_Request rq;
    int rank = 0, size = 0;
    MPI_Comm_rank(base, &rank);
    MPI_Comm_size(base, &size);
    double t0 = dcoll_now(), at = dcoll_wall_now();
    int rc = MPI_Comm_idup(base, dup, &rq);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, call);
    int done = test_until(&rq, t0 + timeout, call);
    if (done < 0)
        return DCOLL_ERR_MPI;
    if (!done)
        return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_init: rank %d of the "
                           "%d-rank communicator waited %g s (the init "
                           "timeout: DCOLL_INIT_TIMEOUT or the init params) "
                           "for every rank to call dcoll_init, and some did "
                           "not. MPI cannot say which before dcoll has a "
                           "communicator to ask on: look for a rank that "
                           "never calls dcoll_init or is still busy before "
                           "it (docs/troubleshooting.md)", rank, size,
                           timeout);
    double *v = malloc(2 * sizeof(double));
    if (!v) {
        MPI_Comm_free(dup);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory");
    }
    v[0] = at;
    v[1] = -at;
    if ((rc = MPI_Iallreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, *dup,
                             &rq)) != MPI_SUCCESS) {
        free(v);
        MPI_Comm_free(dup);
        return dcoll_mpi_error(rc, "MPI_Iallreduce (arrivals)");
    }
    /* A rank that came in time waits to its own deadline at least. */
    double end = dcoll_now() + timeout;
    if (end < t0 + timeout)
        end = t0 + timeout;
    if ((done = test_until(&rq, end, "MPI_Iallreduce (arrivals)")) < 0)
        return DCOLL_ERR_MPI;
    double spread = done ? v[0] + v[1] : 0;
    double margin = timeout / 4 < 1.0 ? timeout / 4 : 1.0;
    if (done && spread <= timeout - margin) {
        free(v);
        return DCOLL_SUCCESS;
    }
    /* v and the copy stay: the request may still write there. */
    if (!done)
        return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_init: rank %d of the "
                           "%d-rank communicator: its ranks came to "
                           "dcoll_init too far apart, and some gave up "
                           "waiting after the init timeout (%g s) before "
                           "the last came", rank, size, timeout);
    return dcoll_error(DCOLL_ERR_TIMEOUT, "dcoll_init: rank %d of the "
                       "%d-rank communicator: its ranks came to dcoll_init "
                       "%.2f s apart, past the init timeout of %g s less a "
                       "margin of %g s, so the first to come have given up "
                       "waiting or may have (DCOLL_INIT_TIMEOUT sets it)",
                       rank, size, spread, timeout, margin);
}

dcoll_status_t dcoll_mpi_start(bool have_comm, int fcomm, int thread_level,
                               double timeout, struct dcoll_group *world)
{
    int inited = 0, finalized = 0, rc;
    dcoll_status_t st;
    MPI_Finalized(&finalized);
    if (finalized)
        return dcoll_error(DCOLL_ERR_INVALID_STATE,
                           "dcoll_init: MPI has been finalized and cannot be "
                           "started again");
    MPI_Initialized(&inited);
    if (!inited && (st = dcoll_mpi_init(thread_level)))
        return st;
    if (inited && thread_level >= 0) {
        int provided = MPI_THREAD_SINGLE;
        MPI_Query_thread(&provided);
        if ((st = check_level(thread_level, provided,
                              "the MPI the program started")))
            return st;
    }
    MPI_Comm base = MPI_COMM_WORLD;
    if (have_comm) {
        /* A bad handle is reported on MPI_COMM_WORLD, whose handler
         * aborts by default: return codes instead while we look. */
        MPI_Errhandler prev;
        int inter = 0;
        MPI_Comm_get_errhandler(MPI_COMM_WORLD, &prev);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        base = MPI_Comm_f2c((MPI_Fint)fcomm);
        rc = base == MPI_COMM_NULL ? MPI_ERR_COMM
                                   : MPI_Comm_test_inter(base, &inter);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, prev);
        MPI_Errhandler_free(&prev);
        if (rc != MPI_SUCCESS)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "dcoll_init: comm %d is not a valid MPI "
                               "communicator handle", fcomm);
        if (inter)
            return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                               "dcoll_init: comm %d is an intercommunicator; "
                               "dcoll needs an intracommunicator", fcomm);
    }
    MPI_Comm dup;
    /* The world's place and size (the copy's are the same), known before
     * the copy: a timeout there ends the job, from the lowest rank first
     * (absent_at_start). */
    MPI_Comm_rank(base, &world->rank);
    MPI_Comm_size(base, &world->size);
    /* A private copy keeps dcoll's messages apart from the program's. */
    if ((st = dup_within(base, timeout, &dup)))
        return st;
    st = dcoll_mpi_types_create();
    if (st) {
        MPI_Comm_free(&dup);
        return st;
    }
    world->ranks = NULL;
    if ((st = comm_wrap(dup, &world->tl[DCOLL_TL_MPI])))
        dcoll_mpi_types_free();
    return st;
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes before anything else
 * (MPI 3.1, 8.7.1): this one's callback is how dcoll learns that the
 * program ends MPI. Set once per process; the hook may change. */
static void (*end_hook)(void);
static int end_keyval = MPI_KEYVAL_INVALID;

static int on_self_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr, (void)extra;
    void (*fn)(void) = end_hook;
    end_hook = NULL;
    started_mpi = false;   /* the program's MPI_Finalize is ending it */
    if (fn)
        fn();
    return MPI_SUCCESS;
}

void dcoll_mpi_at_end(void (*fn)(void))
{
    end_hook = fn;
    if (end_keyval != MPI_KEYVAL_INVALID || !fn)
        return;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_self_delete,
                               &end_keyval, NULL) != MPI_SUCCESS ||
        MPI_Comm_set_attr(MPI_COMM_SELF, end_keyval, NULL) != MPI_SUCCESS)
        end_keyval = MPI_KEYVAL_INVALID;
}

dcoll_status_t dcoll_mpi_stop(struct dcoll_group *world, bool finalize)
{
    dcoll_mpi_work_cache_free();
    dcoll_mpi_tuning_free();
    /* No communicator: start failed (or never ran), and made no types. */
    if (world->tl[DCOLL_TL_MPI]) {
        dcoll_mpi_comm_free(world->tl[DCOLL_TL_MPI]);
        world->tl[DCOLL_TL_MPI] = NULL;
        dcoll_mpi_types_free();
    }
    if (started_mpi && finalize) {
        started_mpi = false;
        int rc = MPI_Finalize();
        /* Only now may a helper the join started go: MPI_Finalize is
         * collective over every process connected to this one. */
        dcoll_mpi_join_release();
        if (rc != MPI_SUCCESS)
            return dcoll_mpi_error(rc, "MPI_Finalize");
    }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_split(struct dcoll_group *parent, int color,
                               int key, void **comm)
{
    MPI_Comm out = MPI_COMM_NULL;
    int rc = MPI_Comm_split(dcoll_mpi_comm_of(parent),
                            color < 0 ? MPI_UNDEFINED : color, key, &out);
    *comm = NULL;
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_split");
    if (out == MPI_COMM_NULL)
        return DCOLL_SUCCESS;
    return comm_wrap(out, comm);
}

/* Among the parent ranks keep alone (ascending): the others may be dead,
 * so the parent's MPI_Comm_split, collective over all, cannot serve. On
 * the control twin, whose messages the program's receives never match. */
dcoll_status_t dcoll_mpi_create(struct dcoll_group *parent, const int *keep,
                                int nkeep, void **comm)
{
    MPI_Comm ctl = dcoll_mpi_ctl_of(parent), out = MPI_COMM_NULL;
    MPI_Group all, some;
    *comm = NULL;
    int rc = MPI_Comm_group(ctl, &all);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_group");
    rc = MPI_Group_incl(all, nkeep, keep, &some);
    MPI_Group_free(&all);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Group_incl");
    rc = MPI_Comm_create_group(ctl, some, DCOLL_MPI_SHRINK_TAG, &out);
    MPI_Group_free(&some);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_create_group");
    return out == MPI_COMM_NULL ? DCOLL_SUCCESS : comm_wrap(out, comm);
}

int dcoll_mpi_comm_fint(const struct dcoll_group *g)
{
    return (int)MPI_Comm_c2f(dcoll_mpi_comm_of(g));
}

dcoll_status_t dcoll_mpi_order_world(struct dcoll_group *world,
                                     const char *scheme, bool strict,
                                     int rank, int world_size)
{
    MPI_Comm comm = dcoll_mpi_comm_of(world);
    int n = world->size, mine[2] = {rank, world_size}, rc;
    int *all = malloc(sizeof(int) * 2 * (size_t)n);
    int *owner = malloc(sizeof(int) * (size_t)n);
    dcoll_status_t st = DCOLL_SUCCESS;
    int have = all && owner;
    /* Agree first, so that no process is left in the exchange alone. */
    MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, comm);
    if (!have) {
        free(all);
        free(owner);
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_init: no memory on "
                           "some process for the table of %d ranks", n);
    }
    if ((rc = MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm)))
        st = dcoll_mpi_error(rc, "MPI_Allgather (env:// ranks)");
    /* Every process sees the same table, so all reach the same verdict. */
    for (int i = 0; i < n; i++)
        owner[i] = -1;
    for (int i = 0; i < n && !st; i++) {
        int r = all[2 * i], s = all[2 * i + 1];
        if (s != n)
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                             "dcoll_init: %s:// rendezvous: MPI process %d "
                             "has world size %d, but the launcher started "
                             "%d processes", scheme, i, s, n);
        else if (strict && r != i)
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                             "dcoll_init: %s:// rendezvous: MPI process %d "
                             "has rank %d from the rendezvous, but MPI's "
                             "rank %d", scheme, i, r, i);
        else if (owner[r] >= 0)
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                             "dcoll_init: %s:// rendezvous: rank %d is "
                             "claimed by MPI processes %d and %d", scheme, r,
                             owner[r], i);
        else
            owner[r] = i;
    }
    free(all);
    free(owner);
    if (st)
        return st;
    /* Renumber so that the world rank is the one the environment gave. */
    MPI_Comm ordered;
    if ((rc = MPI_Comm_split(comm, 0, rank, &ordered)))
        return dcoll_mpi_error(rc, "MPI_Comm_split (env:// order)");
    void *wrapped = NULL;
    if ((st = comm_wrap(ordered, &wrapped)))
        return st;
    dcoll_mpi_comm_free(world->tl[DCOLL_TL_MPI]);
    world->tl[DCOLL_TL_MPI] = wrapped;
    world->rank = rank;
    return DCOLL_SUCCESS;
}

/* Joined singletons are separate MPI jobs that share no memory segment,
 * so MPI puts each alone on its "node": count by host name instead, from
 * the names dcoll_init gathered before this. */
static dcoll_status_t local_by_host(struct dcoll_group *world)
{
    const char *me = dcoll_host_of(world->rank);
    if (!me)
        return dcoll_error(DCOLL_ERR_INTERNAL, "dcoll_init: host names not "
                           "gathered before the local ranks");
    world->local_rank = world->local_size = 0;
    for (int i = 0; i < world->size; i++)
        if (!strcmp(dcoll_host_of(i), me)) {
            world->local_size++;
            if (i < world->rank)
                world->local_rank++;
        }
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_local(struct dcoll_group *world, bool joined)
{
    if (joined)
        return local_by_host(world);
    MPI_Comm node;
    int rc = MPI_Comm_split_type(dcoll_mpi_comm_of(world),
                                 MPI_COMM_TYPE_SHARED, world->rank,
                                 MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return dcoll_mpi_error(rc, "MPI_Comm_split_type (local rank)");
    MPI_Comm_rank(node, &world->local_rank);
    MPI_Comm_size(node, &world->local_size);
    MPI_Comm_free(&node);
    return DCOLL_SUCCESS;
}

dcoll_status_t dcoll_mpi_reduce_f64(struct dcoll_group *g, const double *in,
                                    double *out, size_t n, int op)
{
    static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN};
    if (n > INT_MAX || op < 0 || op > 2)
        return dcoll_error(DCOLL_ERR_INTERNAL, "a reduction of %zu doubles "
                           "(op %d)", n, op);
    int rc = MPI_Reduce(in, out, (int)n, MPI_DOUBLE, ops[op], 0,
                        dcoll_mpi_comm_of(g));
    return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                             : dcoll_mpi_error(rc, "MPI_Reduce (profile)");
}

/* The service collectives below go over the group's control twin: a
 * rank whose call took another route (one rank's buffers on the host,
 * another's on the GPU) must not have its agreement matched by a
 * program's MPI_Allreduce on the data communicator. */
dcoll_status_t dcoll_mpi_bcast_bytes(struct dcoll_group *g, void *buf,
                                     size_t len, int root)
{
    int rc = MPI_Bcast(buf, (int)len, MPI_BYTE, root, dcoll_mpi_ctl_of(g));
    return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                             : dcoll_mpi_error(rc, "MPI_Bcast (NCCL id)");
}

dcoll_status_t dcoll_mpi_allgather_bytes(struct dcoll_group *g,
                                         const void *in, void *out,
                                         size_t len)
{
    int rc = MPI_Allgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE,
                           dcoll_mpi_ctl_of(g));
    return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                             : dcoll_mpi_error(rc, "MPI_Allgather (bytes)");
}

dcoll_status_t dcoll_mpi_agree(struct dcoll_group *g, int *ok)
{
    int rc = MPI_Allreduce(MPI_IN_PLACE, ok, 1, MPI_INT, MPI_MIN,
                           dcoll_mpi_ctl_of(g));
    return rc == MPI_SUCCESS ? DCOLL_SUCCESS
                             : dcoll_mpi_error(rc, "MPI_Allreduce (agree)");
}

/* Asked once: MPI's answer does not change while it runs. */
bool dcoll_mpi_cuda_aware(void)
{
    static int aware = -1;
    if (aware >= 0)
        return aware;
    const char *e = getenv("DCOLL_MPI_CUDA");
    if (e && (!strcmp(e, "0") || !strcmp(e, "1"))) {
        aware = *e == '1';
    } else {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
        aware = MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
        int is = 0;
        aware = MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &is) ==
                    MPI_SUCCESS && is;
#else
        aware = 0;
#endif
    }
    return aware;
}
