/* Internals of the descriptor loader (src/graph/), shared by its modules.
 *
 *   strings.c, diag.c  interned file names; the zf_diag list
 *   vars.c      mustache rendering with a rendered-offset -> source-position map
 *   tree.c      YAML (libyaml events) -> zf_config tree, positions, probes
 *   doc.c       one descriptor file: read its vars, render, parse
 *   fields.c    typed field access that reports to the diagnostics
 *   path.c      file:// URLs and relative paths; reading files
 *   descriptor.c  ports, queues, runtime settings, refused Zenoh built-ins
 *   flatten.c   levels (flow, composites), node entries, includes
 *   level.c     what the levels share (level.h): lookups, error helpers
 *   links.c     link ends through composites, one link per input, types
 *   mapping.c   worker -> node ids
 *   validate.c  unconnected ports
 *   flow.c      zf_flow_load*, zf_flow lifetime;  json.c, dot.c  output
 * The configuration tree itself is src/core/config.{h,c}.
 */
#ifndef ZFI_GRAPH_LOADER_H
#define ZFI_GRAPH_LOADER_H

#include "core/common.h"
#include "graph/flow.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZFI_MAX_DEPTH        128         /* YAML nesting, aliases included */
#define ZFI_MAX_YAML_NODES   200000      /* nodes of one document, aliases expanded */
#define ZFI_MAX_FILE_BYTES   (16u << 20) /* a descriptor file */
#define ZFI_MAX_RENDERED     (32u << 20) /* a file after variable substitution */
#define ZFI_MAX_FLOW_NODES   100000      /* flattened nodes */
#define ZFI_MAX_INCLUDES     10000       /* node files read for one flow */
#define ZFI_MAX_TOTAL_BYTES  (64u << 20) /* text of all the files of one flow */
#define ZFI_MAX_TOTAL_NODES  2000000     /* YAML nodes of all the files of one flow */
#define ZFI_MAX_NESTING      64          /* composites inside composites */
#define ZFI_MAX_PORTS        4096        /* ports of one node */
#define ZFI_MAX_CAPACITY     1000000     /* queue capacity */
#define ZFI_DEFAULT_CAPACITY 16
#define ZFI_FIELD_MAX        256

/* ---- diagnostics (diag.c) ---- */

zf_err zfi_diag_vadd(zf_diag *d, zf_err code, const char *file, unsigned line, unsigned col,
                     const char *field, const char *fmt, va_list ap) ZF_PRINTF(7, 0);

/* ---- text and positions (vars.c) ---- */

/* A piece of rendered text: `copy` pieces map byte for byte onto the source,
 * substituted ones all map to the tag they replaced. */
typedef struct zfi_seg {
    size_t out, in, len;
    bool copy;
} zfi_seg;

/* One descriptor text before and after substitution. */
typedef struct zfi_src {
    const char *file; /* interned */
    const char *orig; /* source text (not owned) */
    size_t orig_len;
    char *owned;      /* rendered text when it differs from orig */
    const char *text; /* rendered text (orig or owned) */
    size_t len;
    zfi_seg *segs; /* none: identity */
    size_t n_segs, cap_segs;
    size_t *olines, n_olines; /* line starts of orig */
    size_t *rlines, n_rlines; /* line starts of text */
    /* The last position looked up each way: the parser asks in increasing
     * order, so a line of any length costs linear time, not quadratic. */
    bool off_ok, pos_ok;
    size_t off_line, off_col, off_at;   /* zfi_src_offset */
    size_t pos_line, pos_at, pos_chars; /* zfi_src_pos (in orig) */
} zfi_src;

bool zfi_src_identity(zfi_src *s, const char *file, const char *text, size_t len);
void zfi_src_free(zfi_src *s);
/* libyaml mark (0-based line, column in characters) -> byte offset in text. */
size_t zfi_src_offset(const zfi_src *s, size_t line, size_t col);
/* Byte offset in text -> 1-based line and column (characters) in orig. */
void zfi_src_pos(const zfi_src *s, size_t off, unsigned *line, unsigned *col);

/* Variables: ordered name -> value. */
typedef struct zfi_vars {
    char **keys, **vals;
    size_t n, cap;
} zfi_vars;

void zfi_vars_free(zfi_vars *v);
bool zfi_vars_set(zfi_vars *v, const char *key, const char *val);
const char *zfi_vars_get(const zfi_vars *v, const char *key);
/* Set every variable of `high` in v (overriding). */
bool zfi_vars_overlay(zfi_vars *v, const zfi_vars *high);

/* A variable used but not defined. */
typedef struct zfi_unbound {
    size_t roff;        /* where its (empty) value sits in the rendered text */
    unsigned line, col; /* of the tag in the source */
    char *name;
} zfi_unbound;

/* Render `text` with `vars` into s (s->file set by the caller). Tag problems
 * go to diag; undefined variables render as "" and are listed in *unb. */
zf_err zfi_render(zfi_src *s, const char *text, size_t len, const zfi_vars *vars, zf_diag *diag,
                  zfi_unbound **unb, size_t *n_unb);
void zfi_unbound_free(zfi_unbound *u, size_t n);
/* The text with every mustache tag blanked to 'x' (same length and lines),
 * for reading `vars` from files that are not YAML until rendered. */
char *zfi_placeholder_text(const char *text, size_t len);

/* ---- YAML (tree.c) ---- */

/* Ask the parser which field holds a rendered offset. */
typedef struct zfi_probe {
    size_t roff;
    char *field; /* set (owned) when a scalar spans roff */
} zfi_probe;

/* Parse one YAML document. diag NULL: quiet (only syntax errors fail,
 * duplicate keys and tags are tolerated). *out is NULL on error. */
zf_err zfi_yaml_parse(const zfi_src *s, zf_diag *diag, zfi_probe *probes, size_t n_probes,
                      zf_config **out);

/* ---- paths (path.c) ---- */

/* A `library`, `python` or `descriptor` reference -> absolute normalized
 * path: `file://` stripped (and %XX decoded), relative paths joined to dir.
 * NULL with *why set when the reference is not a local path. */
char *zfi_path_resolve(const char *dir, const char *ref, const char **why);
char *zfi_path_dirname(const char *path);
/* Absolute form of a path relative to the current directory. */
char *zfi_path_abs(const char *path);
/* Read a regular file (at most ZFI_MAX_FILE_BYTES). errno-like code in *err. */
char *zfi_read_file(const char *path, size_t *len, int *err);

/* ---- one descriptor file (doc.c) ---- */

typedef struct zfi_doc {
    const char *file; /* interned path (or name) */
    char *dir;        /* folder for relative references */
    zf_config *root;  /* the rendered document */
} zfi_doc;

typedef struct zfi_loader zfi_loader;

/* Render with `under`, then the file's own `vars` over them, then
 * `inherited` over those (either may be NULL), then parse. The effective
 * variables go to *eff when not NULL. Problems go to the loader's
 * diagnostics. */
zf_err zfi_doc_load(zfi_loader *ld, const char *file, const char *dir, const char *text, size_t len,
                    const zfi_vars *under, const zfi_vars *inherited, zfi_vars *eff, zfi_doc **out);
void zfi_doc_free(zfi_doc *d);

/* ---- field access (fields.c) ---- */

const char *zfi_kind_name(const zf_config *c);
/* prefix.key (or key), prefix[i] into buf. */
const char *zfi_field(char *buf, const char *prefix, const char *key);
const char *zfi_field_at(char *buf, const char *prefix, size_t i);

/* An error at a node (or at `fallback` when it is NULL). */
zf_err zfi_err(zfi_loader *ld, zf_err code, const zf_config *at, const char *field, const char *fmt,
               ...) ZF_PRINTF(5, 6);
/* c is a map (true), or null and !required (false, no error), else error. */
bool zfi_want_map(zfi_loader *ld, const zf_config *c, const char *field, bool required);
bool zfi_want_seq(zfi_loader *ld, const zf_config *c, const char *field, bool required);
/* Every key of map is in known[]; others are errors with a suggestion. */
void zfi_known(zfi_loader *ld, const zf_config *map, const char *prefix, const char *what,
               const char *const *known, size_t n);
/* A non-null scalar's text, else an error and NULL. */
const char *zfi_want_text(zfi_loader *ld, const zf_config *c, const char *field);
bool zfi_want_duration(zfi_loader *ld, const zf_config *c, const char *field, int64_t *out);
bool zfi_want_size(zfi_loader *ld, const zf_config *c, const char *field, uint64_t *out);
/* One of names[]; its index in *out. */
bool zfi_want_enum(zfi_loader *ld, const zf_config *c, const char *field, const char *const *names,
                   size_t n, int *out);
/* An id: non-empty, none of > / * $ ? # or blanks. */
bool zfi_want_id(zfi_loader *ld, const zf_config *c, const char *field, const char *what,
                 const char **out);
/* "a, b, c" of up to 8 names into buf. */
const char *zfi_list(char *buf, size_t size, const char *const *names, size_t n);

/* ---- node fields (descriptor.c) ---- */

/* zflow's per-node runtime settings; 0 / -1 = not set. */
typedef struct zfi_settings {
    int64_t period_ns, hang_ns, send_ns, window_ns;
    uint32_t max_errors;
    int isolation, restart;
    int64_t max_restarts; /* -1: not set */
    int64_t restart_window_ns;
    int hang_action;             /* -1: not set; 0 degrade, 1 restart */
    const zf_config *restart_at; /* where restart (or hang_action: restart) was set */
} zfi_settings;

#define ZFI_SETTINGS_INIT                                                                          \
    {                                                                                              \
        0, 0, 0, 0, 0, -1, -1, -1, 0, -1, NULL                                                     \
    }

/* The settings fields of map; `kind` is the node's (0 for a composite). */
void zfi_parse_settings(zfi_loader *ld, const zf_config *map, const char *prefix, const char *id,
                        zf_node_kind kind, bool composite, zfi_settings *out);
/* Fill every unset field of `into` from `low`. */
void zfi_settings_under(zfi_settings *into, const zfi_settings *low);
void zfi_settings_apply(zfi_node *n, const zfi_settings *s);

/* A port list (names or {id, type}). */
bool zfi_parse_ports(zfi_loader *ld, const zf_config *list, const char *field, const char *what,
                     zfi_port **out, size_t *n);
void zfi_ports_free(zfi_port *p, size_t n);
/* A link's `queue`. */
void zfi_parse_queue(zfi_loader *ld, const zf_config *q, const char *field, zf_link_config *out);
/* Zenoh-Flow's built-in Zenoh nodes: refused with a clear error (true). */
bool zfi_refuse_zenoh(zfi_loader *ld, const zf_config *map, const char *prefix, const char *id);
/* `descriptor: builtin://<name>` on node `id` (field: the descriptor's):
 * Zenoh-Flow's built-in nodes, refused with one clear error naming the node
 * and its key expressions. */
void zfi_refuse_builtin(zfi_loader *ld, const zf_config *entry, const zf_config *desc,
                        const char *field, const char *id, zf_node_kind kind, const char *name);

/* ---- the loader (flatten.c, validate.c) ---- */

/* Per flattened node: where its ports are declared and who links them. */
typedef struct zfi_aux {
    const char *ports_file;
    char *field;                /* prefix of its fields in ports_file ("operators[1]", "") */
    unsigned *in_n, *out_n;     /* links per port */
    const zf_config **in_first; /* first link of each input */
} zfi_aux;

struct zfi_loader {
    zf_diag *diag;
    char *name;           /* the flow's `name` */
    uint64_t max_memory;  /* flow-level `max_memory` */
    char instance_id[37]; /* flow-level `id` / `uuid` (lower case), or "" */
    bool node_file;       /* the document is a node file, loaded as a node */
    int64_t drain_ns;     /* flow-level `drain_timeout` */
    zfi_strings *strings;
    zfi_vars opt_vars;               /* zf_flow_options.vars */
    const char *const *include_dirs; /* zf_flow_options.include_dirs (not owned) */
    size_t n_include_dirs;
    zfi_vars flow_vars;  /* the flow's effective vars: inherited by every node file */
    bool own_vars_first; /* a 0.5 flow (`flow:`): a node file's own vars beat the flow's */
    zfi_node *nodes;
    zfi_aux *aux;
    size_t n_nodes, cap_nodes, cap_aux;
    zfi_link *links;
    size_t n_links, cap_links;
    char **stack; /* composite files being expanded (canonical paths) */
    size_t depth, cap_stack;
    size_t includes, total_bytes, total_nodes;
    zfi_doc **docs; /* kept until the end: errors point into them */
    size_t n_docs, cap_docs;
    bool oom;
};

/* Keep a doc alive until the loader ends (frees it on failure). */
bool zfi_loader_keep(zfi_loader *ld, zfi_doc *doc);

/* Flatten the flow document into ld->nodes / ld->links. */
void zfi_flatten(zfi_loader *ld, const zfi_doc *doc);
/* A node file (no `name`/`flow`/`sources`/`sinks`/`mapping`; ports, an
 * implementation or `operators`), which zfi_flatten refuses with one error. */
bool zfi_is_node_file(const zf_config *root);
/* Load it as a node of its own (its kind from its ports; a composite is an
 * operator): ld->nodes / ld->links, no check of its outer ports' links. */
void zfi_flatten_node_file(zfi_loader *ld, const zfi_doc *doc);

/* Whole-graph checks after flattening: unconnected ports. */
void zfi_validate_ports(zfi_loader *ld);

#endif
