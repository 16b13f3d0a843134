/* Finding and loading the CUDA plugin. It is looked for, in order, at
 * $DCOLL_CUDA_PLUGIN, beside libdcoll in dcoll/libdcoll_cuda.so, and in
 * the install directory; the first that loads is used. Anything missing
 * (the plugin, CUDA, a GPU) leaves the host path as it is, and
 * dcoll_backend_status says why. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "internal.h"
#include "plugin.h"

static void *handle;
static const struct dcoll_cuda_plugin *plugin;
static int ngpus;
static char detail[640];
static int device = -1;
const struct dcoll_cuda_plugin *dcoll_gpu_plugin;

static const char *self_dir(char *buf, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)&dcoll_init, &info) || !info.dli_fname)
        return NULL;
    snprintf(buf, len, "%s", info.dli_fname);
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return buf;
}

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
    dcoll_cuda_plugin_fn entry;
    *(void **)&entry = dlsym(h, DCOLL_CUDA_PLUGIN_ENTRY);
    const struct dcoll_cuda_plugin *p = entry ? entry() : NULL;
    if (!p || p->abi != DCOLL_PLUGIN_ABI) {
        snprintf(tried + used, len - used, "%s%s: %s", used ? "; " : "",
                 path, !p ? "not a dcoll CUDA plugin"
                          : "built for another plugin ABI");
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

dcoll_status_t dcoll_device(int *out)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!out)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_device: device is NULL");
    *out = device;
    return DCOLL_SUCCESS;
}


dcoll_status_t dcoll_backend_status(const char *name, int *available,
                                    const char **text)
{
    dcoll_status_t st = dcoll_check_ready();
    if (st)
        return st;
    if (!name || !available)
        return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                           "dcoll_backend_status: %s is NULL",
                           !name ? "name" : "available");
    if (strcasecmp(name, "mpi") == 0) {
        *available = 1;
        if (text)
            *text = "MPI: host buffers";
        return DCOLL_SUCCESS;
    }
    if (strcasecmp(name, "nccl") == 0) {
        /* A plugin built with NCCL, and a GPU to run it on. */
        *available = dcoll_gpu_plugin && dcoll_gpu_plugin->nccl_bytes > 0;
        if (text)
            *text = detail;
        return DCOLL_SUCCESS;
    }
    return dcoll_error(DCOLL_ERR_INVALID_ARGUMENT,
                       "dcoll_backend_status: unknown backend '%s' (known: "
                       "mpi, nccl)", name);
}
