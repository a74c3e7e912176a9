/* Levels of flattening (the flow, each composite) and what flatten.c,
 * links.c and mapping.c share, defined in level.c: the three call into
 * level.c and flatten.c calls links.c and mapping.c, never the other way
 * round. Internal to src/graph/. */
#ifndef ZFI_GRAPH_LEVEL_H
#define ZFI_GRAPH_LEVEL_H

#include "graph/loader.h"

/* A port of a composite operator, resolved to a flat node's port. */
typedef struct zfi_bport {
    char *id;
    long node, port; /* -1: broken (an error was reported, or the node is broken) */
} zfi_bport;

/* A node of one level: a leaf (one flat node) or a composite (several). */
typedef struct zfi_kid {
    char *id;
    const zf_config *at;
    zf_node_kind kind;
    long leaf; /* flat index, or -1 */
    bool composite, broken;
    zfi_bport *ins, *outs;
    size_t n_ins, n_outs;
    size_t first, count; /* its flat nodes */
} zfi_kid;

typedef struct zfi_level {
    const zfi_doc *doc;
    char *prefix;          /* "" or "outer>" */
    const zf_config *over; /* configuration of enclosing levels (higher priority) */
    const zf_config *top;  /* this level's `configuration` */
    zfi_settings inherit;  /* settings of enclosing composites */
    const char *what;      /* "flow" or "composite operator 'x'" */
    zfi_kid *kids;
    size_t n, cap;
} zfi_level;

typedef struct zfi_end {
    enum { END_OK, END_BROKEN, END_BAD } st;
    long node, port;
} zfi_end;

/* ---- level.c ---- */

void zfi_level_free(zfi_level *lv);
zfi_kid *zfi_kid_find(const zfi_level *lv, const char *id);
void zfi_oom(zfi_loader *ld);
/* An error at the key `key` of map (field prefix.key). */
void zfi_key_err(zfi_loader *ld, const zf_config *map, const char *key, const char *prefix,
                 const char *fmt, ...) ZF_PRINTF(5, 6);
/* ": did you mean 'x'?", " (its <noun>: 'a', 'b')" or " (it has no <noun>)". */
void zfi_hint(char *buf, size_t size, const char *word, const char *const *names, size_t n,
              const char *noun);
/* Absent, null or an empty sequence. */
bool zfi_port_list_empty(const zf_config *l);

/* links.c: a level's `links`, and a composite's `inputs` / `outputs`. */
void zfi_links(zfi_loader *ld, zfi_level *lv, const zf_config *list);
void zfi_boundary(zfi_loader *ld, zfi_level *in, const zf_config *m, bool output, zfi_kid *k);

/* mapping.c: the flow's `mapping`. */
void zfi_mapping(zfi_loader *ld, const zfi_level *lv, const zf_config *m);

#endif
