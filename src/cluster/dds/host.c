/* The module's entry (ZFI_CLUSTER_MODULE_SYMBOL) and libzflow's internals
 * as the module sees them: each is a call through the host table libzflow
 * gave (../module.h), so the module links only libzflow's public API. */
#include "cluster/dds/impl.h"

#include <stdio.h>
#include <stdlib.h>

static const zfi_cluster_host *host;

zf_err zfi_verror(zf_err code, const char *fmt, va_list ap)
{
    return host->verror(code, fmt, ap);
}

zf_err zfi_error(zf_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zf_err e = host->verror(code, fmt, ap);
    va_end(ap);
    return e;
}

void zfi_vlog(zf_log_level level, const char *scope, const char *fmt, va_list ap)
{
    host->vlog(level, scope, fmt, ap);
}

void zfi_log(zf_log_level level, const char *scope, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host->vlog(level, scope, fmt, ap);
    va_end(ap);
}

void *zfi_calloc(size_t n, size_t size)
{
    return host->calloc(n, size);
}

char *zfi_strdup(const char *s)
{
    return host->strdup(s);
}

char *zfi_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

bool zfi_grow(void **items, size_t *cap, size_t need, size_t size)
{
    return host->grow(items, cap, need, size);
}

void zfi_topic_name(char *s)
{
    host->topic_name(s);
}

zf_link *zfi_node_input(zf_node *n, size_t i)
{
    return host->node_input(n, i);
}

void zfi_node_finish(zf_node *n)
{
    host->node_finish(n);
}

void zfi_node_end_outputs(zf_node *n, bool done)
{
    host->node_close_outputs(n, done);
}

void zfi_link_on_data(zf_link *l, void (*on_data)(void *arg), void *arg)
{
    host->link_on_data(l, on_data, arg);
}

static const zfi_cluster_module module = {
    .version = ZFI_CLUSTER_ABI,
    .size = sizeof(zfi_cluster_module),
    .create = zfi_cluster_create,
    .destroy = zfi_cluster_destroy,
    .name = zfi_cluster_name,
    .announce = zfi_cluster_announce,
    .workers = zfi_cluster_workers,
    .alive = zfi_cluster_alive,
    .call = zfi_cluster_call,
    .stats_get = zfi_cluster_stats_get,
    .entities = zfi_cluster_entities,
    .bridge_out = &zfi_bridge_out_decl,
    .bridge_in = &zfi_bridge_in_decl,
    .zenoh_make = zfi_zenoh_make,
    .free_decl = zfi_zenoh_free_decl,
};

__attribute__((visibility("default"))) const zfi_cluster_module *
zfi_cluster_module_open_v1(const zfi_cluster_host *h);

const zfi_cluster_module *zfi_cluster_module_open_v1(const zfi_cluster_host *h)
{
    if (!h || h->version != ZFI_CLUSTER_ABI || h->size < sizeof *h)
        return NULL;
    host = h;
    return &module;
}
