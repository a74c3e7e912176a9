/* The cluster module's interface (docs/cluster.md, "The module").
 *
 * Everything that needs Cyclone DDS and libsodium (src/cluster/dds/) is
 * built as libzflow-cluster.so, which libzflow dlopens the first time the
 * cluster is used (zf_cluster_create, a bridge endpoint, a Zenoh built-in
 * node: src/cluster/module.c), so a process that never joins a domain maps
 * neither. The two sides meet through two versioned tables of functions,
 * exchanged by the module's one exported symbol: the module uses the public
 * API (it links libzflow) and, of libzflow's internals, only what the host
 * table gives it.
 *
 * Versioning: `version` is ZFI_CLUSTER_ABI; a change of a table's meaning
 * or layout raises it (both sides refuse another), `size` lets a table
 * grow at its end within one version. */
#ifndef ZFI_CLUSTER_MODULE_H
#define ZFI_CLUSTER_MODULE_H

#include "zflow/zflow.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZFI_CLUSTER_ABI 1
/* The module's one exported symbol, a zfi_cluster_module_open_fn. */
#define ZFI_CLUSTER_MODULE_SYMBOL "zfi_cluster_module_open_v1"
#define ZFI_CLUSTER_MODULE_FILE   "libzflow-cluster.so"

/* What libzflow gives the module: its error, log and memory helpers, and
 * the few runtime operations a bridge endpoint needs on its node. */
typedef struct zfi_cluster_host {
    uint32_t version; /* ZFI_CLUSTER_ABI */
    uint32_t size;    /* sizeof(zfi_cluster_host) */
    zf_err (*verror)(zf_err code, const char *fmt, va_list ap);
    void (*vlog)(zf_log_level level, const char *scope, const char *fmt, va_list ap);
    void *(*calloc)(size_t n, size_t size);
    char *(*strdup)(const char *s);
    bool (*grow)(void **items, size_t *cap, size_t need, size_t size);
    /* A DDS topic name in place (src/cluster/place.c, zfi_topic_name). */
    void (*topic_name)(char *s);
    /* Node n's input link i (a bridge-out reads its one input). */
    zf_link *(*node_input)(zf_node *n, size_t i);
    /* A sink without on_input that drained its input: the node is done. */
    void (*node_finish)(zf_node *n);
    /* Close n's output links; `done`: n is done (a source whose stream
     * ended), else only wake a send blocked in a full link. */
    void (*node_close_outputs)(zf_node *n, bool done);
    /* Have on_data(arg) called on the producer's thread after every push
     * into link l (and on its close); set before the producer runs (a
     * node's init). l must be the input of a sink without on_input. */
    void (*link_on_data)(zf_link *l, void (*on_data)(void *arg), void *arg);
} zfi_cluster_host;

/* What the module gives libzflow: the public zf_cluster_* functions
 * (include/zflow/cluster.h, same contracts) and its built-in nodes. */
typedef struct zfi_cluster_module {
    uint32_t version; /* ZFI_CLUSTER_ABI */
    uint32_t size;    /* sizeof(zfi_cluster_module) */
    zf_err (*create)(const zf_cluster_options *opt, zf_cluster **out);
    void (*destroy)(zf_cluster *c);
    const char *(*name)(const zf_cluster *c);
    void (*announce)(zf_cluster *c, unsigned instances);
    zf_err (*workers)(zf_cluster *c, zf_worker_info **out, size_t *n);
    bool (*alive)(zf_cluster *c, const char *name);
    zf_err (*call)(zf_cluster *c, size_t n, const char *const *workers, const char *const *bodies,
                   int timeout_ms, char **replies, char **errors);
    void (*stats_get)(zf_cluster *c, zf_cluster_stats *out);
    size_t (*entities)(zf_cluster *c, const char *uuid);
    /* The bridge endpoints (zf_flow_part's "zflow-bridge-out" and
     * "zflow-bridge-in" nodes). */
    const zf_node_decl *bridge_out, *bridge_in;
    /* Zenoh-Flow's built-ins over DDS: the declaration of a
     * zenoh-subscribers (sub) or zenoh-publishers node with these ports
     * (copied; their strings must outlive the node), NULL when out of
     * memory; freed with free_decl. */
    const zf_node_decl *(*zenoh_make)(bool sub, const zf_port_decl *ports, size_t n);
    void (*free_decl)(const zf_node_decl *d);
} zfi_cluster_module;

/* The module's entry: given libzflow's table (which outlives the module's
 * use), its own, or NULL when the host's version is not the module's. */
typedef const zfi_cluster_module *(*zfi_cluster_module_open_fn)(const zfi_cluster_host *host);

/* A DDS topic name in place (libzflow, place.c): Cyclone 0.10 accepts
 * letters, digits, '_' and '/' only; any other byte becomes '_' (the UUID's
 * dashes, a composite's '>'). */
void zfi_topic_name(char *s);

/* Names of the bridge endpoints' built-in nodes (place.c sets them). */
#define ZFI_BRIDGE_OUT_NODE "zflow-bridge-out"
#define ZFI_BRIDGE_IN_NODE  "zflow-bridge-in"

#endif
