/* The flattened dataflow graph: what the descriptor loader (src/graph/)
 * produces and the runtime (src/runtime/) consumes. Internal. */
#ifndef ZFI_FLOW_H
#define ZFI_FLOW_H

#include "core/config.h"
#include "zflow/zflow.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- diagnostics ---- */

/* Add an entry; `file` may be NULL. Copies every string. Returns `code`
 * (so `return zfi_diag_add(...)` reads well); d may be NULL. */
zf_err zfi_diag_add(zf_diag *d, zf_err code, const char *file, unsigned line, unsigned col,
                    const char *field, const char *fmt, ...) ZF_PRINTF(7, 8);
/* Same, at the place of a tree node. */
zf_err zfi_diag_at(zf_diag *d, zf_err code, const zf_config *at, const char *field, const char *fmt,
                   ...) ZF_PRINTF(5, 6);

/* ---- the flattened graph ---- */

typedef struct zfi_port {
    char *name;
    char *type; /* "any" when not given */
    unsigned line, col;
} zfi_port;

/* A node's `isolation` and `restart`: the tables (as ZF_POLICY_MAP) the
 * descriptor's parser and the flow's JSON read their names from. */
#define ZFI_ISOLATION_MAP(X)                                                                       \
    X(ZFI_ISOLATION_THREAD, 0, "thread")                                                           \
    X(ZFI_ISOLATION_PROCESS, 1, "process")
typedef enum zfi_isolation { ZFI_ISOLATION_MAP(ZF_ENUM_VALUE_) } zfi_isolation;

#define ZFI_RESTART_MAP(X)                                                                         \
    X(ZFI_RESTART_NEVER, 0, "never")                                                               \
    X(ZFI_RESTART_ON_FAILURE, 1, "on-failure")                                                     \
    X(ZFI_RESTART_ALWAYS, 2, "always")
typedef enum zfi_restart { ZFI_RESTART_MAP(ZF_ENUM_VALUE_) } zfi_restart;

/* "thread", "process" / "never", "on-failure", "always" (ZF_UNKNOWN_NAME
 * otherwise); in descriptor.c. */
const char *zfi_isolation_name(zfi_isolation i);
const char *zfi_restart_name(zfi_restart r);

typedef struct zfi_node {
    char *id;          /* flattened id ("outer>inner") */
    char *description; /* may be NULL */
    zf_node_kind kind;
    char *library; /* absolute path, file:// stripped; NULL for python nodes */
    char *python;  /* absolute path of a `python:` node, else NULL */
    zfi_port *inputs;
    size_t n_inputs;
    zfi_port *outputs;
    size_t n_outputs;
    zf_config *config;       /* merged configuration; always a map (owned) */
    int64_t period_ns;       /* sources: 0 = free-running */
    int64_t hang_timeout_ns; /* 0 = runtime default (1 s) */
    int64_t send_timeout_ns; /* 0 = default (1 s) */
    uint32_t max_errors;     /* errors in error_window that make it DEGRADED; 0 = default */
    int64_t error_window_ns; /* 0 = default */
    zfi_isolation isolation;
    zfi_restart restart;
    uint32_t max_restarts;     /* restarts allowed within restart_window (default 5) */
    int64_t restart_window_ns; /* default 60 s */
    bool hang_restart;         /* hang_action: restart (isolated nodes) */
    char *worker;              /* from `mapping`, else NULL */
    /* A system node the runtime runs without loading code (the cluster's
     * bridge endpoints, src/cluster/place.c), else NULL. `bridge`: it joins
     * a link cut by the mapping; the stop does not close a bridge source's
     * outputs (end of stream arrives from the remote producer), only past
     * the drain deadline. */
    const zf_node_decl *builtin;
    bool bridge;
    /* A built-in node the runtime finds by this name (a string literal):
     * "zenoh-subscribers" / "zenoh-publishers" (src/cluster/dds_io.c), or
     * NULL. */
    const char *builtin_name;
    const char *file; /* where declared (interned) */
    unsigned line, col;
} zfi_node;

typedef struct zfi_link {
    size_t from, from_port; /* node index, output index */
    size_t to, to_port;     /* node index, input index */
    zf_link_config queue;
    const char *record; /* `record: FILE`: record this link's output there (interned), or NULL */
    const char *file;
    unsigned line, col;
} zfi_link;

typedef struct zfi_strings zfi_strings; /* interned file names */

struct zf_flow {
    atomic_uint refs; /* zf_flow_free drops one; instances hold one */
    char *name;
    char *file; /* absolute path of the main descriptor, or the name */
    char *dir;  /* its folder */
    zfi_node *nodes;
    size_t n_nodes;
    zfi_link *links;
    size_t n_links;
    uint64_t max_memory;      /* instance pool cap; 0 = none */
    int64_t drain_timeout_ns; /* 0 = default (2 s) */
    char instance_id[37];     /* `id` / `uuid`: the instance's UUID, or "" (a new one) */
    bool node_file;           /* loaded from a node file (zf_flow_options.node_file) */
    zfi_strings *strings;
    zf_flow *parent; /* a worker's part of a flow keeps the whole one (strings) */
};

/* Take one more reference (the instance keeps the flow alive). */
zf_flow *zfi_flow_ref(const zf_flow *f);
/* Index of the node with this id, or -1. */
long zfi_flow_find(const zf_flow *f, const char *id);

/* Intern a string for the lifetime of the table. */
zfi_strings *zfi_strings_new(void);
const char *zfi_strings_intern(zfi_strings *t, const char *s);
void zfi_strings_free(zfi_strings *t);

/* ---- additions by the descriptor loader (src/graph/) ---- */

/* Code of diagnostic entry i (ZF_OK when out of range). */
zf_err zfi_diag_code(const zf_diag *d, size_t i);
/* Append copies of every entry of src to dst. */
void zfi_diag_append(zf_diag *dst, const zf_diag *src);
/* One entry as "file:line:col: field: message"; free() it. */
char *zfi_diag_entry_format(const zf_diag_entry *e);

/* Where things point in a loaded flow:
 * - zfi_node.file/line/col: where the node's implementation is declared: the
 *   node's entry for an inline node, the `library`/`python` value of its
 *   node file otherwise. zfi_port.line/col are in that same file.
 * - zfi_link.file/line/col: the link's entry under `links`.
 * - zf_config.file of node configurations: the file each value came from. */

#endif
