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
#include "gpu.h"
#include "plugin_abi.h"

static void *handle;
static const struct dcoll_cuda_plugin *plugin;
static int ngpus;
static char detail[640];
static int device = -1;
const struct dcoll_cuda_plugin *dcoll_gpu_plugin;

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

/* Tables of older versions, copied into one of the current layout. Only
 * their own prefix is read: the fields version 6 appended stay NULL, so
 * the multi-buffer forms stage (see lib/gpu/multi.c). */
static struct dcoll_cuda_plugin old_table;
#define V5_BYTES offsetof(struct dcoll_cuda_plugin, nccl_comms)

static const struct dcoll_cuda_plugin *adapt_v5(
    const struct dcoll_cuda_plugin *p)
{
    memset(&old_table, 0, sizeof(old_table));
    memcpy(&old_table, p, V5_BYTES);
    old_table.abi = DCOLL_PLUGIN_ABI;
    return &old_table;
}

/* Version 4, whose entry point was dcoll_cuda_plugin_v1: version 5's
 * table, but nccl_coll took the core's own call descriptor (struct
 * dcoll_coll, whose layout tables.h keeps). The shim rebuilds it. */
typedef int (*nccl_coll_v4_fn)(void *comm, const struct dcoll_coll *c,
                               int rank, int size, void *stream,
                               double timeout);
static nccl_coll_v4_fn nccl_coll_v4;

static int nccl_coll_v4_shim(void *comm, const struct dcoll_plugin_call *pc,
                             int rank, int size, void *stream, double timeout)
{
    struct dcoll_coll c = {
        .kind = (enum dcoll_coll_kind)pc->kind, .sendbuf = pc->sendbuf,
        .recvbuf = pc->recvbuf, .count = pc->count,
        .dtype = (dcoll_dtype_t)pc->dtype, .op = (dcoll_op_t)pc->op,
        .root = pc->root, .in_place = pc->in_place,
    };
    return nccl_coll_v4(comm, &c, rank, size, stream, timeout);
}

static const struct dcoll_cuda_plugin *adapt_v4(
    const struct dcoll_cuda_plugin *p)
{
    adapt_v5(p);
    if (p->nccl_coll) {
        nccl_coll_v4 = (nccl_coll_v4_fn)p->nccl_coll;
        old_table.nccl_coll = nccl_coll_v4_shim;
    }
    return &old_table;
}

/* Every plugin version this loader knows, newest first. */
static const struct {
    const char *entry;
    uint32_t abi;
    const struct dcoll_cuda_plugin *(*adapt)(const struct dcoll_cuda_plugin *);
} versions[] = {
    {DCOLL_CUDA_PLUGIN_ENTRY, DCOLL_PLUGIN_ABI, NULL},
    {"dcoll_cuda_plugin_v5", 5, adapt_v5},
    {"dcoll_cuda_plugin_v1", 4, adapt_v4},
};

/* Try one path; on failure append why to tried. */
static bool try_load(const char *path, char *tried, size_t len)
{
    size_t used = strlen(tried);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(tried + used, len - used, "%s%s", used ? "; " : "",
                 dlerror());
        return false;
    }
    const struct dcoll_cuda_plugin *p = NULL;
    bool seen = false;
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !p;
         i++) {
        dcoll_cuda_plugin_fn entry;
        *(void **)&entry = dlsym(h, versions[i].entry);
        if (!entry)
            continue;
        seen = true;
        p = entry();
        if (p && p->abi != versions[i].abi)
            p = NULL;
        else if (p && versions[i].adapt)
            p = versions[i].adapt(p);
    }
    if (!p) {
        snprintf(tried + used, len - used, "%s%s: %s", used ? "; " : "",
                 path, !seen ? "not a dcoll CUDA plugin"
                             : "built for a plugin ABI this library does "
                               "not know");
        dlclose(h);
        return false;
    }
    handle = h;
    plugin = p;
    return true;
}

void dcoll_plugins_load(int local_rank)
{
    char dir[4096], path[4200], tried[1024] = "";
    const char *env = getenv("DCOLL_CUDA_PLUGIN");
    bool ok = false;
    if (env && *env) {
        ok = try_load(env, tried, sizeof(tried));
    } else {
        if (self_dir(dir, sizeof(dir))) {
            snprintf(path, sizeof(path), "%s/dcoll/libdcoll_cuda.so", dir);
            ok = try_load(path, tried, sizeof(tried));
        }
#ifdef DCOLL_PLUGIN_DIR
        if (!ok)
            ok = try_load(DCOLL_PLUGIN_DIR "/libdcoll_cuda.so", tried,
                          sizeof(tried));
#endif
    }
    ngpus = 0;
    device = -1;
    dcoll_gpu_plugin = NULL;
    if (!ok) {
        snprintf(detail, sizeof(detail), "no CUDA plugin loaded (%s)",
                 tried[0] ? tried : "none found");
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
        char how[128] = "";
        if (plugin->select_device(local_rank, &device, how, sizeof(how))) {
            snprintf(how, sizeof(how), "choosing a GPU failed: %s",
                     plugin->last_error());
            device = -1;
            ngpus = 0; /* nothing may route to a GPU we could not set */
        }
        n += snprintf(detail + n, sizeof(detail) - (size_t)n, "%s; ", how);
        n += snprintf(detail + n, sizeof(detail) - (size_t)n, "%d GPU(s):",
                      ngpus);
        for (int i = 0; i < ngpus && (size_t)n < sizeof(detail); i++) {
            char bus[32] = "?";
            plugin->pci_bus_id(i, bus, sizeof(bus));
            n += snprintf(detail + n, sizeof(detail) - (size_t)n, " %d=%s",
                          i, bus);
        }
        if (ngpus > 0)
            dcoll_gpu_plugin = plugin;
    } else
        snprintf(detail + n, sizeof(detail) - (size_t)n, "no GPU: %s", why);
}

void dcoll_plugins_unload(void)
{
    /* The CUDA runtime registers exit handlers; unloading it under them
     * is not safe, so the object stays mapped until the process ends. */
    plugin = NULL;
    dcoll_gpu_plugin = NULL;
    handle = NULL;
    ngpus = 0;
}

int dcoll_gpu_device(void)
{
    return device;
}

const char *dcoll_gpu_detail(void)
{
    return detail;
}

bool dcoll_gpu_has_nccl(void)
{
    return dcoll_gpu_plugin && dcoll_gpu_plugin->nccl_bytes > 0;
}
