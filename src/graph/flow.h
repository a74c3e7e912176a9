/* The flattened dataflow graph: what the descriptor loader (src/graph/)
 * produces and the runtime (src/runtime/) consumes. Internal. */
#ifndef ZFI_FLOW_H
#define ZFI_FLOW_H

#include "zflow/zflow.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- configuration tree (also the YAML document tree) ---- */

/* Where a map key is (added by the loader: "unknown field" errors point at
 * the key rather than at its value). */
typedef struct zfi_mark {
    unsigned line, col; /* 1-based; 0 = unknown */
} zfi_mark;

/* A node of a YAML document or of a merged configuration. Scalars keep
 * their text; `kind` is resolved by the YAML 1.2 core schema (a quoted
 * scalar is always a string). Maps keep insertion order. */
struct zf_config {
    zf_config_kind kind;
    char *text;        /* scalars: the text (owned); NULL for maps and seqs */
    bool quoted;       /* scalar was quoted in the source */
    bool b;            /* ZF_CFG_BOOL */
    int64_t i;         /* ZF_CFG_INT */
    double f;          /* ZF_CFG_FLOAT (also set for INT) */
    char **keys;       /* ZF_CFG_MAP: n keys (owned) */
    zf_config **items; /* ZF_CFG_MAP values / ZF_CFG_SEQ items (owned) */
    size_t n, cap;
    const char *file;    /* not owned: interned in a zfi_strings table */
    unsigned line, col;  /* 1-based; 0 = unknown */
    zfi_mark *key_marks; /* ZF_CFG_MAP: position of each key (owned; may be NULL) */
};

zf_config *zfi_config_new(zf_config_kind kind, const char *file, unsigned line, unsigned col);
zf_config *zfi_config_scalar(const char *text, bool quoted, const char *file, unsigned line,
                             unsigned col); /* resolves the kind */
zf_config *zfi_config_clone(const zf_config *c);
void zfi_config_free(zf_config *c);
/* Map: set key (replacing an existing value); takes ownership of v. */
bool zfi_config_map_set(zf_config *map, const char *key, zf_config *v);
/* Map: append a key known to be new, with its position (0, 0: unknown). */
bool zfi_config_map_add_at(zf_config *map, const char *key, zf_config *v, unsigned line,
                           unsigned col);
/* Seq: append; takes ownership of v. */
bool zfi_config_seq_push(zf_config *seq, zf_config *v);
/* Map member (no dotted paths), or NULL. */
zf_config *zfi_config_member(const zf_config *map, const char *key);
/* Merge `low` under `high`: a top-level key of high replaces low's value
 * whole, as Zenoh-Flow merges configurations. Returns a new tree. */
zf_config *zfi_config_merge(const zf_config *high, const zf_config *low);
/* As JSON text into b. */
struct zfi_buf;
void zfi_config_to_json(const zf_config *c, struct zfi_buf *b);

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

typedef enum zfi_isolation { ZFI_ISOLATION_THREAD = 0, ZFI_ISOLATION_PROCESS } zfi_isolation;
typedef enum zfi_restart {
    ZFI_RESTART_NEVER = 0,
    ZFI_RESTART_ON_FAILURE,
    ZFI_RESTART_ALWAYS
} zfi_restart;

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
    const char *file;          /* where declared (interned) */
    unsigned line, col;
} zfi_node;

typedef struct zfi_link {
    size_t from, from_port; /* node index, output index */
    size_t to, to_port;     /* node index, input index */
    zf_link_config queue;
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
