/* The backend registry: "auto", "mpi" and "nccl" are registered through
 * the same table as a program's own backends (dcoll_register_backend).
 * Names match case-insensitively; a second registration of a name, and an
 * unknown name, are errors. */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core.h"
#include "gpu.h"
#include "route.h"

#define MAX_BACKENDS 32
#define NAME_MAX_LEN 31

struct dcoll_backend_entry {
    char name[NAME_MAX_LEN + 1];
    enum dcoll_choice choice;
    dcoll_backend_ops_t ops;     /* a program's backend */
    void *arg;
};

static struct dcoll_backend_entry reg[MAX_BACKENDS];
static int nreg;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ---- works finished when made: a NON-MEMBER's, a program backend's ---- */

static dcoll_status_t done_test(struct dcoll_work *w, int *done)
{
    (void)w;
    *done = 1;
    return DCOLL_SUCCESS;
}

static dcoll_status_t done_wait(struct dcoll_work *w)
{
    (void)w;
    return DCOLL_SUCCESS;
}

static void done_release(struct dcoll_work *w)
{
    free(w);
}

/* The works of calls that had nothing to do (a non-member's): no
 * transport's, so no rows. */
const struct dcoll_backend dcoll_done_backend = {
    .name = "done",
    .tl = DCOLL_TL_USER,
    .work_test = done_test,
    .work_wait = done_wait,
    .work_release = done_release,
};

/* ---- a program's backend ---- */

_Static_assert((int)DCOLL_COLL_RECV == (int)DCOLL_KIND_RECV &&
                   (int)DCOLL_COLL_BROADCAST == (int)DCOLL_KIND_BROADCAST &&
                   (int)DCOLL_COLL_BARRIER == (int)DCOLL_KIND_BARRIER,
               "the public kinds mirror the internal ones");

/* Every kind a call record can carry: those with a public number
 * (dcoll_call_kind_t, DCOLL_KIND_BROADCAST to DCOLL_KIND_RECV), no
 * other. A kind added later has none, and a program's backend, built
 * against the header it was, never sees it. */
static bool user_runs(enum dcoll_coll_kind kind)
{
    return (unsigned)kind <= (unsigned)DCOLL_KIND_RECV;
}

static dcoll_status_t user_coll(struct dcoll_group *g,
                                const struct dcoll_coll *c,
                                struct dcoll_work **work,
                                struct dcoll_outcome *out)
{
    const struct dcoll_backend_entry *e = g->bentry;
    const char *fn = c->fn;
    dcoll_backend_call_t call = {
        .kind = (dcoll_call_kind_t)c->kind, .sendbuf = c->sendbuf,
        .recvbuf = c->recvbuf, .count = c->count, .dtype = c->dtype,
        .op = c->op, .root = c->root, .tag = c->tag,
        .stream = dcoll_opts_stream(c->opts),
    };
    /* Its call record carries one count, not one per rank, and no
     * layout. */
    if (c->layout)
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: backend '%s' does not "
                           "support strided layouts (a program's backend "
                           "gets contiguous buffers)", fn, e->name);
    if (!user_runs(c->kind))
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: backend '%s' does not "
                           "support %s (a program's backend gets one count "
                           "per call, not one per rank)", fn, e->name,
                           dcoll_kind_name(c->kind));
    struct dcoll_work *w = NULL;
    if (work && !(w = malloc(sizeof(*w))))
        return dcoll_error(DCOLL_ERR_NO_MEMORY, "%s: no memory for a work "
                           "handle", fn);
    int src = -1;
    dcoll_status_t st = e->ops.run(g->tl[DCOLL_TL_USER], &call, &src);
    if (st) {
        free(w);
        if ((unsigned)st >= DCOLL_STATUS_COUNT_)
            st = DCOLL_ERR_INTERNAL;
        if (st == DCOLL_ERR_UNSUPPORTED)
            return dcoll_error(st, "%s: backend '%s' does not support %s",
                               fn, e->name, dcoll_kind_name(c->kind));
        return dcoll_error(st, "%s: backend '%s' failed (%s)", fn, e->name,
                           dcoll_status_string(st));
    }
    if (c->kind == DCOLL_COLL_RECV && (src < 0 || src >= g->size)) {
        free(w);
        return dcoll_error(DCOLL_ERR_INTERNAL, "%s: backend '%s' gave source "
                           "%d for a receive in a group of %d", fn, e->name,
                           src, g->size);
    }
    if (w) {
        dcoll_work_init(w, g, &dcoll_done_backend);
        w->is_recv = c->kind == DCOLL_COLL_RECV;
        w->source = src;
        *work = w;
    }
    out->source = src;
    return DCOLL_SUCCESS;
}

/* Its group_create ran at attach, so its destroy runs whatever state it
 * gave (NULL included). */
static void user_group_free(struct dcoll_group *g)
{
    const struct dcoll_backend_entry *e = g->bentry;
    if (e && e->choice == DCOLL_CHOICE_USER && e->ops.group_destroy)
        e->ops.group_destroy(g->tl[DCOLL_TL_USER]);
    g->tl[DCOLL_TL_USER] = NULL;
}

/* Its record is made at attach (dcoll_backend_attach), after the group's
 * communicator: group_create takes its Fortran handle. */
const struct dcoll_backend dcoll_user_backend = {
    .name = "user",
    .tl = DCOLL_TL_USER,
    .runs = user_runs,
    .group_free = user_group_free,
    .coll = user_coll,
    .work_test = done_test,
    .work_wait = done_wait,
    .work_release = done_release,
};

/* ---- the registry ---- */

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' &&
            name[i] != '-')
            return false;
    return true;
}

static dcoll_status_t add(const char *name, enum dcoll_choice choice,
                          const dcoll_backend_ops_t *ops, void *arg)
{
    dcoll_status_t st = DCOLL_SUCCESS;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nreg && !st; i++)
        if (!strcasecmp(reg[i].name, name))
            st = dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                             "dcoll_register_backend: backend '%s' is "
                             "registered already (as '%s')", name,
                             reg[i].name);
    if (!st && nreg == MAX_BACKENDS)
        st = dcoll_error(DCOLL_ERR_NO_MEMORY, "dcoll_register_backend: all "
                         "%d backend slots are taken", MAX_BACKENDS);
    if (!st) {
        struct dcoll_backend_entry *e = &reg[nreg++];
        strcpy(e->name, name);
        e->choice = choice;
        if (ops)
            e->ops = *ops;
        e->arg = arg;
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

/* The size of each version of dcoll_backend_ops_t, to copy an older
 * program's table without reading past its end. */
struct ops_v1 {
    uint32_t version;
    dcoll_status_t (*group_create)(void *, int, int, int, void **);
    dcoll_status_t (*run)(void *, const dcoll_backend_call_t *, int *);
    void (*group_destroy)(void *);
};
static const size_t ops_size[DCOLL_BACKEND_OPS_VERSION + 1] = {
    [1] = sizeof(struct ops_v1),
};
_Static_assert(sizeof(struct ops_v1) <= sizeof(dcoll_backend_ops_t),
               "a newer table only grows");

/* "auto", then each transport a program names, from its table. */
static void builtins(void)
{
    add("auto", DCOLL_CHOICE_AUTO, NULL, NULL);
    const struct dcoll_backend *be;
    for (int i = 0; (be = dcoll_route_transport(i)); i++)
        if (be->status)
            add(be->name, be->choice, NULL, NULL);
}

dcoll_status_t dcoll_register_backend(const char *name,
                                      const dcoll_backend_ops_t *ops,
                                      void *arg)
{
    static const char fn[] = "dcoll_register_backend";
    pthread_once(&once, builtins);
    if (!name || !ops)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                           name ? "ops" : "name");
    if (!name_ok(name))
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: '%.64s' is not a backend name (1 to %d "
                           "letters, digits, '_' or '-')", fn, name,
                           NAME_MAX_LEN);
    if (ops->version < 1 || ops->version > DCOLL_BACKEND_OPS_VERSION)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: ops->version %u is not one this library "
                           "knows (1 to %d)", fn, ops->version,
                           DCOLL_BACKEND_OPS_VERSION);
    /* An older table is copied by its own size; the fields it lacks stay
     * zero, which every later version must take as "not given". */
    dcoll_backend_ops_t mine;
    memset(&mine, 0, sizeof(mine));
    memcpy(&mine, ops, ops_size[ops->version]);
    if (!mine.group_create || !mine.run)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "%s: ops->%s is NULL", fn,
                           mine.group_create ? "run" : "group_create");
    return add(name, DCOLL_CHOICE_USER, &mine, arg);
}

dcoll_status_t dcoll_backend_lookup(const char *name,
                                    const struct dcoll_backend_entry **out)
{
    pthread_once(&once, builtins);
    if (!name)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "backend name is NULL but its mask bit is set");
    const struct dcoll_backend_entry *e = NULL;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nreg && !e; i++)
        if (!strcasecmp(reg[i].name, name))
            e = &reg[i];
    pthread_mutex_unlock(&reg_lock);
    if (!e) {
        char known[128];
        dcoll_route_names(known, sizeof(known));
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "invalid backend '%.64s' (built in: auto, %s; "
                           "others must be registered first)", name, known);
    }
    *out = e;
    return DCOLL_SUCCESS;
}

enum dcoll_choice dcoll_opts_choice(const struct dcoll_group_opts *o)
{
    return o->be ? o->be->choice : DCOLL_CHOICE_MPI;
}

dcoll_status_t dcoll_backend_attach(struct dcoll_group *g,
                                    const struct dcoll_backend_entry *e,
                                    const char *fn)
{
    g->bentry = e;
    g->choice = e->choice;
    g->backend_name = e->name;
    g->tl[DCOLL_TL_USER] = NULL;
    g->host = &dcoll_mpi_backend;
    if (e->choice == DCOLL_CHOICE_NCCL && !dcoll_gpu_has_nccl()) {
        int avail = 0;
        const char *text = "";
        dcoll_backend_status("nccl", &avail, &text);
        return dcoll_error(DCOLL_ERR_UNSUPPORTED, "%s: backend 'nccl' is not "
                           "available here: %s", fn, text);
    }
    if (e->choice != DCOLL_CHOICE_USER)
        return DCOLL_SUCCESS;
    dcoll_status_t st = e->ops.group_create(e->arg, g->rank, g->size,
                                            g->svc->comm_fint(g),
                                            &g->tl[DCOLL_TL_USER]);
    if ((unsigned)st >= DCOLL_STATUS_COUNT_)
        st = DCOLL_ERR_INTERNAL;
    /* Every member learns whether every member's backend came up. */
    int mine = st == DCOLL_SUCCESS, ok = mine;
    dcoll_status_t ast = g->svc->agree(g, &ok);
    if (!st && (ast || !ok))
        st = ast ? ast : DCOLL_ERR_INVALID_STATE;
    if (st) {
        if (mine)
            user_group_free(g);
        g->bentry = NULL;
        return dcoll_error(st, "%s: backend '%s' could not set up the group "
                           "on %s", fn, e->name,
                           mine ? "another rank" : "this rank");
    }
    return DCOLL_SUCCESS;
}
