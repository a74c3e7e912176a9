/* The configuration tree (zf_config): the one tree every document becomes
 * -- a descriptor's YAML (src/graph/tree.c), the daemon's YAML
 * configuration, a control request's JSON (src/core/json_read.c) -- and the
 * configuration a node reads. Construction, YAML 1.2 core-schema scalars,
 * clone, merge and the public read-only accessors are in src/core/config.c;
 * writing a tree as JSON is src/core/json_write.c's. Internal. */
#ifndef ZFI_CORE_CONFIG_H
#define ZFI_CORE_CONFIG_H

#include "zflow/zflow.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* YAML 1.2 core schema resolution of a plain scalar. */
zf_config_kind zfi_config_resolve(const char *text, bool *b, int64_t *i, double *f);
/* Map: append without looking for an existing key (the parser checked). */
bool zfi_config_map_add(zf_config *map, const char *key, zf_config *v);
/* Nodes in a tree and its depth (1 for a scalar). */
size_t zfi_config_count(const zf_config *c, size_t *depth);

#endif
