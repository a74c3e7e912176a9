/* Loading the cluster module (libzflow-cluster.so, src/cluster/module.h):
 * the public zf_cluster_* functions and the cluster's built-in nodes open
 * it the first time they are used, so a process that never joins a domain
 * maps no Cyclone DDS (nor its iceoryx, OpenSSL, libstdc++) and no
 * libsodium.
 *
 * Where: $ZF_CLUSTER_MODULE (a path) if set, else zflow/libzflow-cluster.so
 * beside the libzflow in use (<libdir>/zflow/ once installed; the build
 * tree puts it at the same place), else the installed path. */
#include "cluster/module.h"

#include "core/common.h"
#include "core/link.h"
#include "graph/flow.h"
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ZF_CLUSTER_MODULE_INSTALLED
#define ZF_CLUSTER_MODULE_INSTALLED "/usr/local/lib/zflow/" ZFI_CLUSTER_MODULE_FILE
#endif

static zf_link *node_input(zf_node *n, size_t i)
{
    return i < n->n_in ? n->in[i] : NULL;
}

static void node_close_outputs(zf_node *n, bool done)
{
    if (done)
        atomic_store(&n->done, true);
    zfi_node_close_outputs(n);
}

static const zfi_cluster_host host = {
    .version = ZFI_CLUSTER_ABI,
    .size = sizeof(zfi_cluster_host),
    .verror = zfi_verror,
    .vlog = zfi_vlog,
    .calloc = zfi_calloc,
    .strdup = zfi_strdup,
    .grow = zfi_grow,
    .topic_name = zfi_topic_name,
    .node_input = node_input,
    .node_finish = zfi_node_finish,
    .node_close_outputs = node_close_outputs,
    .link_on_data = zfi_link_set_on_data,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const zfi_cluster_module *_Atomic mod;

static const zfi_cluster_module *try_open(const char *path, char *err, size_t errlen)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(err, errlen, "%s", dlerror());
        return NULL;
    }
    zfi_cluster_module_open_fn open =
        (zfi_cluster_module_open_fn)(uintptr_t)dlsym(dl, ZFI_CLUSTER_MODULE_SYMBOL);
    const zfi_cluster_module *m = open ? open(&host) : NULL;
    if (!m || m->version != ZFI_CLUSTER_ABI || m->size < sizeof *m) {
        snprintf(err, errlen, "%s: %s", path,
                 open ? "a cluster module of another version than this libzflow's"
                      : "not a zflow cluster module (no " ZFI_CLUSTER_MODULE_SYMBOL ")");
        dlclose(dl);
        return NULL;
    }
    return m; /* never unloaded: its threads and DDS entities live on */
}

/* The module, opened once; NULL with zf_last_error naming what was tried. */
static const zfi_cluster_module *module(void)
{
    const zfi_cluster_module *m = atomic_load(&mod);
    if (m)
        return m;
    pthread_mutex_lock(&mu);
    m = atomic_load(&mod);
    if (!m) {
        const char *env = getenv("ZF_CLUSTER_MODULE");
        char beside[PATH_MAX + 64] = "";
        Dl_info info;
        bool found = dladdr((void *)(uintptr_t)module, &info) && info.dli_fname;
        const char *slash = found ? strrchr(info.dli_fname, '/') : NULL;
        if (found && !strstr(slash ? slash : info.dli_fname, "libzflow.so")) {
            /* the module links libzflow.so: with libzflow linked into the
             * program there would be two runtimes */
            zfi_error(ZF_ENOTFOUND,
                      "the cluster module needs libzflow as a shared library: %s links it "
                      "statically",
                      info.dli_fname);
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        if ((!env || !*env) && slash)
            snprintf(beside, sizeof beside, "%.*s/zflow/%s", (int)(slash - info.dli_fname),
                     info.dli_fname, ZFI_CLUSTER_MODULE_FILE);
        const char *cands[] = {env && *env ? env : beside,
                               env && *env ? "" : ZF_CLUSTER_MODULE_INSTALLED};
        char err[2][PATH_MAX + 256] = {"", ""};
        for (size_t i = 0; !m && i < ZFI_ARRAY_LEN(cands); i++)
            if (cands[i][0] && (i == 0 || strcmp(cands[i], cands[0])))
                m = try_open(cands[i], err[i], sizeof err[i]);
        if (m)
            atomic_store(&mod, m);
        else
            zfi_error(ZF_ENOTFOUND, "the cluster module %s cannot be loaded: %s%s%s (%s)",
                      ZFI_CLUSTER_MODULE_FILE, err[0], err[0][0] && err[1][0] ? "; " : "", err[1],
                      env && *env ? "from $ZF_CLUSTER_MODULE"
                                  : "set ZF_CLUSTER_MODULE to its path");
    }
    pthread_mutex_unlock(&mu);
    return m;
}

zf_err zf_cluster_create(const zf_cluster_options *opt, zf_cluster **out)
{
    const zfi_cluster_module *m = module();
    return m ? m->create(opt, out) : ZF_ENOTFOUND;
}

/* A cluster exists only if the module was loaded: its functions are the
 * module's. Without one (c NULL: a daemon of its own) they do what the
 * module's do for NULL. */
void zf_cluster_destroy(zf_cluster *c)
{
    if (c)
        atomic_load(&mod)->destroy(c);
}

const char *zf_cluster_name(const zf_cluster *c)
{
    return c ? atomic_load(&mod)->name(c) : NULL;
}

void zf_cluster_announce(zf_cluster *c, unsigned instances)
{
    if (c)
        atomic_load(&mod)->announce(c, instances);
}

zf_err zf_cluster_workers(zf_cluster *c, zf_worker_info **out, size_t *n)
{
    if (!c || !out || !n)
        return zfi_error(ZF_EINVAL, "zf_cluster_workers: NULL argument");
    return atomic_load(&mod)->workers(c, out, n);
}

bool zf_cluster_alive(zf_cluster *c, const char *name)
{
    return c && atomic_load(&mod)->alive(c, name);
}

zf_err zf_cluster_call(zf_cluster *c, size_t n, const char *const *workers,
                       const char *const *bodies, int timeout_ms, char **replies, char **errors)
{
    if (!c)
        return zfi_error(ZF_EINVAL, "zf_cluster_call: NULL cluster");
    return atomic_load(&mod)->call(c, n, workers, bodies, timeout_ms, replies, errors);
}

void zf_cluster_stats_get(zf_cluster *c, zf_cluster_stats *out)
{
    if (c)
        atomic_load(&mod)->stats_get(c, out);
    else if (out)
        memset(out, 0, sizeof *out);
}

size_t zf_cluster_entities(zf_cluster *c, const char *uuid)
{
    return c ? atomic_load(&mod)->entities(c, uuid) : 0;
}

/* ---- the built-in nodes, registered here, made by the module ---- */

static const zf_node_decl *make_bridge_out(const zfi_node *nd)
{
    const zfi_cluster_module *m = module();
    return m ? m->bridge_out : NULL;
}

static const zf_node_decl *make_bridge_in(const zfi_node *nd)
{
    const zfi_cluster_module *m = module();
    return m ? m->bridge_in : NULL;
}

static const zf_node_decl *make_zenoh(const zfi_node *nd, bool sub)
{
    const zfi_cluster_module *m = module();
    if (!m)
        return NULL;
    size_t np = sub ? nd->n_outputs : nd->n_inputs;
    const zfi_port *src = sub ? nd->outputs : nd->inputs;
    zf_port_decl *ports = zfi_calloc(np + 1, sizeof *ports);
    const zf_node_decl *d = NULL;
    for (size_t i = 0; ports && i < np; i++)
        ports[i] = (zf_port_decl){src[i].name, src[i].type};
    if (!ports || !(d = m->zenoh_make(sub, ports, np)))
        zfi_error(ZF_ENOMEM, "node '%s': out of memory", nd->id);
    free(ports);
    return d;
}

static const zf_node_decl *make_zenoh_sub(const zfi_node *nd)
{
    return make_zenoh(nd, true);
}

static const zf_node_decl *make_zenoh_pub(const zfi_node *nd)
{
    return make_zenoh(nd, false);
}

/* Only declarations the module made reach here (the bridges' are static). */
static void free_decl(const zf_node_decl *d)
{
    atomic_load(&mod)->free_decl(d);
}

__attribute__((constructor)) static void register_builtins(void)
{
    zfi_builtin_register(ZFI_BRIDGE_OUT_NODE, make_bridge_out, NULL);
    zfi_builtin_register(ZFI_BRIDGE_IN_NODE, make_bridge_in, NULL);
    zfi_builtin_register("zenoh-subscribers", make_zenoh_sub, free_decl);
    zfi_builtin_register("zenoh-publishers", make_zenoh_pub, free_decl);
}
