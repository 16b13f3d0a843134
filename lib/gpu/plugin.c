/* Finding and loading the CUDA plugin. It is looked for, in order, at
 * $DCOLL_CUDA_PLUGIN, beside libdcoll in dcoll/libdcoll_cuda.so, and in
 * the install directory; the first that loads is used. Anything missing
 * (the plugin, CUDA, a GPU) leaves the host path as it is, and
 * dcoll_backend_status says why. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "gpu.h"
#include "plugin_abi.h"
#include "plugin_build.h"
#include "select.h"

static void *handle;
static const dcoll_cuda_plugin_t *plugin;
static int ngpus;
static char detail[2048];
static int device = -1;
static char choice[256];   /* which GPU, and why */
static char failure[128];  /* why the choice failed, where not CUDA */

static int choice_failed(const char *why)
{
    snprintf(failure, sizeof(failure), "%s", why);
    return -1;
}
const dcoll_cuda_plugin_t *dcoll_gpu_plugin;

static const char *self_dir(char *buf, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)&self_dir, &info) || !info.dli_fname)
        return NULL;
    snprintf(buf, len, "%s", info.dli_fname);
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return buf;
}

/* The entry points of the plugins of dcoll 1.11 and older, each with
 * its own table layout: known only to say what such a file is. */
static const char *const older[] = {
    "dcoll_cuda_plugin_v13", "dcoll_cuda_plugin_v12", "dcoll_cuda_plugin_v11",
    "dcoll_cuda_plugin_v10", "dcoll_cuda_plugin_v9", "dcoll_cuda_plugin_v8",
    "dcoll_cuda_plugin_v7", "dcoll_cuda_plugin_v6", "dcoll_cuda_plugin_v5",
    "dcoll_cuda_plugin_v1",
};

/* The object h at path: this build's plugin (0, its table in *p), a
 * plugin of another build (2) or something else (1), why in why. */
static int identify(void *h, const char *path, const dcoll_cuda_plugin_t **p,
                    char *why, size_t len)
{
    dcoll_cuda_plugin_fn entry;
    *(void **)&entry = dlsym(h, DCOLL_CUDA_PLUGIN_ENTRY);
    const struct dcoll_plugin_identity *id = entry ? entry() : NULL;
    bool named = id && id->magic == DCOLL_PLUGIN_MAGIC && id->version &&
                 id->build;
    if (named && !strcmp(id->build, DCOLL_BUILD_ID) &&
        !strcmp(id->version, DCOLL_BUILD_VERSION) &&
        id->table_bytes == sizeof(dcoll_cuda_plugin_t)) {
        *p = (const dcoll_cuda_plugin_t *)id;
        return 0;
    }
    const char *old = NULL;
    for (size_t i = 0; !entry && !old && i < sizeof(older) / sizeof(older[0]);
         i++)
        if (dlsym(h, older[i]))
            old = older[i];
    char theirs[96];
    if (named)
        snprintf(theirs, sizeof(theirs), "dcoll %.32s, build %.32s",
                 id->version, id->build);
    else if (old)
        snprintf(theirs, sizeof(theirs), "dcoll 1.11 or older, entry point "
                 "%s", old);
    else if (entry)
        snprintf(theirs, sizeof(theirs), "a table of no identity");
    else {
        snprintf(why, len, "%s: not a dcoll CUDA plugin (no %s)", path,
                 DCOLL_CUDA_PLUGIN_ENTRY);
        return 1;
    }
    snprintf(why, len, "%s is the CUDA plugin of another build (%s), not "
             "this library's (dcoll %s, build %s): install libdcoll and its "
             "plugin from one build", path, theirs, DCOLL_BUILD_VERSION,
             DCOLL_BUILD_ID);
    return 2;
}

/* Try one path; on failure append why to tried. A plugin of another
 * build is said on stderr as well, once a node (by its first local
 * rank): it is a broken install, not a machine without CUDA. */
static bool try_load(const struct dcoll_group *world, const char *path,
                     char *tried, size_t len)
{
    size_t used = strlen(tried);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(tried + used, len - used, "%s%s", used ? "; " : "",
                 dlerror());
        return false;
    }
    char why[512];
    const dcoll_cuda_plugin_t *p = NULL;
    int rc = identify(h, path, &p, why, sizeof(why));
    if (rc) {
        snprintf(tried + used, len - used, "%s%s", used ? "; " : "", why);
        if (rc == 2 && world->local_rank == 0)
            fprintf(stderr, "dcoll: %s\n", why);
        dlclose(h);
        return false;
    }
    handle = h;
    plugin = p;
    return true;
}

/* This rank's GPU from the node's picture: every rank's view gathered
 * over the world and those of its host kept, in local rank order, so
 * that each rank computes the same assignment (select.c). Collective:
 * every rank comes, with or without a plugin or a GPU (an empty view).
 * -1 where this rank cannot have one (how says why). */
static int pick(struct dcoll_group *world, const dcoll_gpu_view_t *mine,
                char *how, size_t len);

static int choose(struct dcoll_group *world, bool looks, char *how,
                  size_t len)
{
    dcoll_gpu_view_t mine = {.numa = -1, .current = -1};
    int failed = looks && plugin->gpu_view &&
                 plugin->gpu_view(world->local_rank, &mine);
    int rc = pick(world, &mine, how, len);
    if (!looks)
        return 0;
    if (failed || rc)
        return -1;
    /* A plugin without gpu_view (the test double) chooses alone. */
    if (!plugin->gpu_view)
        return plugin->select_device(world->local_rank, &device, how, len);
    return 0;
}

static int pick(struct dcoll_group *world, const dcoll_gpu_view_t *mine,
                char *how, size_t len)
{
    int n = world->size, me = 0, k = 0;
    dcoll_gpu_view_t *all = malloc(sizeof(*all) * (size_t)n);
    if (!all)
        return choice_failed("no memory for the node's GPUs");
    all[0] = *mine;
    /* A job where no rank sees a GPU gathers nothing more: at thousands
     * of ranks the views are a megabyte each rank would receive. */
    int none = mine->ngpus == 0;
    if (n > 1 && world->svc->agree(world, &none)) {
        free(all);
        return choice_failed("the ranks' agreement on GPUs failed");
    }
    if (n > 1 && !none &&
        world->svc->allgather_bytes(world, mine, all, sizeof(*mine))) {
        free(all);
        return choice_failed("the gather of the node's GPUs failed");
    }
    if (none)
        n = 1;   /* no GPU anywhere: this rank's own (empty) view */
    const char *host = n > 1 ? dcoll_host_of(world->rank) : NULL;
    for (int i = 0; i < n; i++)
        if (i == world->rank || !host || !strcmp(dcoll_host_of(i), host)) {
            if (i == world->rank)
                me = k;
            all[k++] = all[i];
        }
    struct dcoll_gpu_pick *picks = malloc(sizeof(*picks) * (size_t)k);
    if (!picks || dcoll_assign_gpus(k, all, picks)) {
        free(all);
        free(picks);
        return choice_failed("no memory to match the node's GPUs");
    }
    struct dcoll_gpu_pick my = picks[me];
    free(all);
    free(picks);
    if (!plugin || !plugin->gpu_view || mine->ngpus == 0)
        return 0;   /* it only took part */
    device = my.device;
    char bus[32] = "?";
    plugin->pci_bus_id(device, bus, sizeof(bus));
    int w = snprintf(how, len, "GPU %d (%s) for local rank %d of %d: %s",
                     device, bus, me, k, dcoll_gpu_why_text(my.why));
    if (my.sharers > 1 && w > 0 && (size_t)w < len)
        w += snprintf(how + w, len - (size_t)w, ", with %d other rank(s)",
                      my.sharers - 1);
    if (my.why != DCOLL_GPU_CURRENT && w > 0 && (size_t)w < len)
        snprintf(how + w, len - (size_t)w, "; not made current");
    return 0;
}

void dcoll_plugins_load(struct dcoll_group *world)
{
    char dir[4096], path[4200], tried[1536] = "";
    const char *env = getenv("DCOLL_CUDA_PLUGIN");
    bool ok = false;
    if (env && *env) {
        ok = try_load(world, env, tried, sizeof(tried));
    } else {
        if (self_dir(dir, sizeof(dir))) {
            snprintf(path, sizeof(path), "%s/dcoll/libdcoll_cuda.so", dir);
            ok = try_load(world, path, tried, sizeof(tried));
            /* In a meson build tree (build.ninja above lib/), the plugin
             * built beside it, so that dcoll-info, the examples and
             * dcoll-perf there use the GPU as installed ones do. */
            snprintf(path, sizeof(path), "%s/../build.ninja", dir);
            if (!ok && access(path, F_OK) == 0) {
                snprintf(path, sizeof(path),
                         "%s/../cuda_layer/libdcoll_cuda.so", dir);
                ok = try_load(world, path, tried, sizeof(tried));
            }
        }
#ifdef DCOLL_PLUGIN_DIR
        if (!ok)
            ok = try_load(world, DCOLL_PLUGIN_DIR "/libdcoll_cuda.so", tried,
                          sizeof(tried));
#endif
    }
    ngpus = 0;
    device = -1;
    dcoll_gpu_plugin = NULL;
    choice[0] = failure[0] = '\0';
    if (!ok) {
        snprintf(detail, sizeof(detail), "no CUDA plugin loaded (%s)",
                 tried[0] ? tried : "none found");
        choose(world, false, choice, sizeof(choice));
        return;
    }
    char why[256] = "";
    int rt = 0, drv = 0, nccl = 0;
    plugin->probe(&ngpus, why, sizeof(why));
    plugin->versions(&rt, &drv, &nccl);
    Dl_info info;
    const char *where = dladdr((void *)plugin, &info) && info.dli_fname
                            ? info.dli_fname : "?";
    int n = snprintf(detail, sizeof(detail), "plugin %s: CUDA runtime %d.%d, "
                     "driver %d.%d, NCCL %d.%d.%d; ", where, rt / 1000,
                     rt % 1000 / 10, drv / 1000, drv % 1000 / 10,
                     nccl / 10000, nccl / 100 % 100, nccl % 100);
    if (ngpus > 0) {
        char how[sizeof(choice)] = "";
        if (choose(world, true, how, sizeof(how))) {
            snprintf(how, sizeof(how), "choosing a GPU failed: %s",
                     failure[0] ? failure : plugin->last_error());
            device = -1;
            ngpus = 0; /* nothing may route to a GPU we could not set */
        }
        snprintf(choice, sizeof(choice), "%s", how);
        n += snprintf(detail + n, sizeof(detail) - (size_t)n, "%s; ", how);
        n += snprintf(detail + n, sizeof(detail) - (size_t)n, "%d GPU(s):",
                      ngpus);
        for (int i = 0; i < ngpus && (size_t)n < sizeof(detail); i++) {
            char bus[32] = "?";
            plugin->pci_bus_id(i, bus, sizeof(bus));
            n += snprintf(detail + n, sizeof(detail) - (size_t)n, " %d=%s",
                          i, bus);
        }
        /* What ranks sharing one GPU get (docs/gpu.md). */
        if ((size_t)n < sizeof(detail))
            snprintf(detail + n, sizeof(detail) - (size_t)n, "; a group "
                     "whose ranks all share one GPU: %s",
                     !plugin->ipc_open ? "staged (the plugin has no CUDA IPC)"
                     : !dcoll_ipc_on ? "staged (DCOLL_IPC=0)"
                     : plugin->reduce ? "IPC on that GPU"
                                      : "IPC on that GPU, but reductions "
                                        "staged (the plugin has no kernels)");
        if (ngpus > 0)
            dcoll_gpu_plugin = plugin;
    } else {
        snprintf(detail + n, sizeof(detail) - (size_t)n, "no GPU: %s", why);
        choose(world, false, choice, sizeof(choice));
    }
}

void dcoll_plugins_unload(void)
{
    /* The CUDA runtime registers exit handlers; unloading it under them
     * is not safe, so the object stays mapped until the process ends. */
    dcoll_stage_release();
    plugin = NULL;
    dcoll_gpu_plugin = NULL;
    handle = NULL;
    ngpus = 0;
}

int dcoll_gpu_device(void)
{
    return device;
}

int dcoll_gpu_count(void)
{
    return dcoll_gpu_plugin ? ngpus : 0;
}

const char *dcoll_gpu_choice(void)
{
    return choice;
}

const char *dcoll_gpu_detail(void)
{
    return detail;
}

bool dcoll_gpu_has_nccl(void)
{
    return dcoll_gpu_plugin && dcoll_gpu_plugin->nccl_bytes > 0;
}
