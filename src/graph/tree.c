/* YAML -> zf_config with the source line and column of every node, built
 * from libyaml's events with an explicit stack (no recursion on input): the
 * descriptor loader's parser (zfi_yaml_parse) and the public zf_yaml_parse. */
#include "graph/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define TAG_PREFIX "tag:yaml.org,2002:"

typedef struct frame {
    zf_config *node; /* the map or sequence being filled */
    bool have_key;   /* maps: a key was read, its value comes next */
    char *key;       /* that key (NULL: drop the value) */
    unsigned key_line, key_col;
    size_t path_len; /* length of this collection's path */
    char *anchor;
    uint32_t *hash; /* big maps: key index + 1 by hash, for duplicate checks */
    size_t hcap;
} frame;

typedef struct anchor {
    char *name;
    const zf_config *node;
    size_t count, depth;
} anchor;

typedef struct builder {
    const zfi_src *src;
    zf_diag *diag; /* NULL: quiet */
    zfi_probe *probes;
    size_t n_probes;
    frame st[ZFI_MAX_DEPTH + 1];
    size_t depth;
    zfi_buf path;
    anchor *anchors;
    size_t n_anchors, cap_anchors;
    zf_config **orphans; /* dropped values, freed at the end (anchors may point there) */
    size_t n_orphans, cap_orphans;
    size_t nodes, skip, docs;
    size_t aliases; /* alias uses seen */
    zf_config *root;
    bool fatal;
    zf_err err;
} builder;

static void position(const builder *b, yaml_mark_t m, unsigned *line, unsigned *col)
{
    zfi_src_pos(b->src, zfi_src_offset(b->src, m.line, m.column), line, col);
}

static const char *path_str(const builder *b)
{
    return b->path.s ? b->path.s : "";
}

static void problem(builder *b, zf_err code, bool fatal, unsigned line, unsigned col,
                    const char *field, const char *fmt, ...) ZF_PRINTF(7, 8);

static void problem(builder *b, zf_err code, bool fatal, unsigned line, unsigned col,
                    const char *field, const char *fmt, ...)
{
    if (!b->diag && !fatal)
        return; /* quiet mode tolerates what is not a syntax error */
    if (b->diag) {
        size_t len = strlen(field);
        char shortened[ZFI_FIELD_MAX];
        if (len >= ZFI_FIELD_MAX) { /* keep the end of a very deep path */
            snprintf(shortened, sizeof shortened, "...%s", field + len - (ZFI_FIELD_MAX - 8));
            field = shortened;
        }
        va_list ap;
        va_start(ap, fmt);
        zfi_diag_vadd(b->diag, code, b->src->file, line, col, field, fmt, ap);
        va_end(ap);
    }
    if (!b->err)
        b->err = code;
    if (fatal)
        b->fatal = true;
}

static void oom(builder *b)
{
    problem(b, ZF_ENOMEM, true, 0, 0, "", "out of memory while reading the descriptor");
}

static void orphan(builder *b, zf_config *c)
{
    if (!c)
        return;
    if (!zfi_grow((void **)&b->orphans, &b->cap_orphans, b->n_orphans + 1, sizeof *b->orphans)) {
        zfi_config_free(c); /* no anchor can point into it yet */
        oom(b);
        return;
    }
    b->orphans[b->n_orphans++] = c;
}

/* An alias's copy is placed where the alias is used: an error found in it
 * points at the use, not at the anchor. */
static void at_use(zf_config *c, unsigned line, unsigned col)
{
    c->line = line;
    c->col = col;
    for (size_t k = 0; (c->kind == ZF_CFG_MAP || c->kind == ZF_CFG_SEQ) && k < c->n; k++) {
        if (c->key_marks)
            c->key_marks[k] = (zfi_mark){line, col};
        at_use(c->items[k], line, col);
    }
}

static bool budget(builder *b, size_t more, unsigned line, unsigned col)
{
    if (b->nodes + more > ZFI_MAX_YAML_NODES) {
        problem(b, ZF_EINVAL, true, line, col, path_str(b),
                "the document has more than %d nodes%s: refusing it", ZFI_MAX_YAML_NODES,
                b->aliases ? " (aliases expanded)" : "");
        return false;
    }
    b->nodes += more;
    return true;
}

/* The path of the next value of the top frame into b->path (returns the
 * length to truncate back to). */
static size_t path_push(builder *b, const char *key)
{
    size_t old = b->path.len;
    if (!b->depth)
        return old;
    const frame *f = &b->st[b->depth - 1];
    if (f->node->kind == ZF_CFG_SEQ)
        zfi_buf_printf(&b->path, "[%zu]", f->node->n);
    else
        zfi_buf_printf(&b->path, "%s%s", old ? "." : "", key ? key : "");
    return old;
}

static void path_pop(builder *b, size_t len)
{
    if (b->path.s && len <= b->path.len) {
        b->path.len = len;
        b->path.s[len] = '\0';
    }
}

static void probe(builder *b, const yaml_event_t *e)
{
    if (!b->n_probes)
        return;
    size_t from = zfi_src_offset(b->src, e->start_mark.line, e->start_mark.column);
    size_t to = zfi_src_offset(b->src, e->end_mark.line, e->end_mark.column);
    for (size_t i = 0; i < b->n_probes; i++) {
        zfi_probe *p = &b->probes[i];
        if (!p->field && p->roff >= from && p->roff <= to)
            p->field = zfi_strdup(path_str(b));
    }
}

/* ---- duplicate keys: linear for small maps, hashed for big ones ---- */

static size_t key_hash(const char *k)
{
    uint64_t h = 1469598103934665603ull;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return (size_t)h;
}

static void hash_put(uint32_t *h, size_t cap, const char *key, size_t i)
{
    size_t j = key_hash(key) & (cap - 1);
    while (h[j])
        j = (j + 1) & (cap - 1);
    h[j] = (uint32_t)(i + 1);
}

static bool hash_build(frame *f)
{
    size_t cap = 64;
    while (cap < f->node->n * 4)
        cap *= 2;
    uint32_t *h = zfi_calloc(cap, sizeof *h);
    if (!h)
        return false;
    for (size_t i = 0; i < f->node->n; i++)
        hash_put(h, cap, f->node->keys[i], i);
    free(f->hash);
    f->hash = h;
    f->hcap = cap;
    return true;
}

/* Index of key in the frame's map, or -1. */
static long find_key(builder *b, frame *f, const char *key)
{
    const zf_config *m = f->node;
    if (m->n < 16) {
        for (size_t k = 0; k < m->n; k++)
            if (!strcmp(m->keys[k], key))
                return (long)k;
        return -1;
    }
    if ((!f->hash || m->n * 2 >= f->hcap) && !hash_build(f)) {
        oom(b);
        return -1;
    }
    for (size_t j = key_hash(key) & (f->hcap - 1); f->hash[j]; j = (j + 1) & (f->hcap - 1))
        if (!strcmp(m->keys[f->hash[j] - 1], key))
            return (long)f->hash[j] - 1;
    return -1;
}

/* A key was added to the frame's map: keep the hash up to date. */
static void key_added(frame *f)
{
    if (f->hash && f->node->n * 2 < f->hcap)
        hash_put(f->hash, f->hcap, f->node->keys[f->node->n - 1], f->node->n - 1);
    else if (f->hash) { /* rebuilt bigger on the next lookup */
        free(f->hash);
        f->hash = NULL;
    }
}

/* Attach a finished or new value to the top frame (or make it the root).
 * Returns false when it was dropped (it then went to the orphans). */
static bool attach(builder *b, zf_config *v)
{
    if (!b->depth) {
        b->root = v;
        return true;
    }
    frame *f = &b->st[b->depth - 1];
    bool ok;
    if (f->node->kind == ZF_CFG_SEQ) {
        ok = zfi_config_seq_push(f->node, v);
    } else {
        ok = f->key && zfi_config_map_add_at(f->node, f->key, v, f->key_line, f->key_col);
        if (f->key && !ok)
            oom(b);
        if (ok)
            key_added(f);
        free(f->key);
        f->key = NULL;
        f->have_key = false;
    }
    if (!ok)
        orphan(b, v);
    return ok;
}

/* A key of the top frame (a map waiting for a key). */
static void take_key(builder *b, const char *key, unsigned line, unsigned col)
{
    frame *f = &b->st[b->depth - 1];
    f->have_key = true;
    long k = find_key(b, f, key);
    if (k >= 0) {
        size_t old = path_push(b, key);
        const zf_config *m = f->node;
        unsigned first_line = m->key_marks ? m->key_marks[k].line : m->items[k]->line;
        problem(b, ZF_EPARSE, false, line, col, path_str(b),
                "duplicate key '%s' (first at line %u): a key may appear only once in a map", key,
                first_line);
        path_pop(b, old);
        return; /* its value is dropped */
    }
    f->key = zfi_strdup(key);
    f->key_line = line;
    f->key_col = col;
    if (!f->key)
        oom(b);
}

static bool expecting_key(const builder *b)
{
    return b->depth && b->st[b->depth - 1].node->kind == ZF_CFG_MAP &&
           !b->st[b->depth - 1].have_key;
}

static const char *tag_name(const char *tag)
{
    return strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0 ? tag + strlen(TAG_PREFIX) : tag;
}

/* A "\0" in a double-quoted string would cut it short ("a\0x" and "a\0y"
 * were both 'a'): refused, key or value. */
static void refuse_nul(builder *b, const yaml_event_t *e, unsigned line, unsigned col)
{
    if (memchr(e->data.scalar.value, 0, e->data.scalar.length))
        problem(b, ZF_EPARSE, false, line, col, path_str(b),
                "the string contains a NUL character (\\0), which a descriptor may not hold");
}

static zf_config *make_scalar(builder *b, const yaml_event_t *e, unsigned line, unsigned col)
{
    refuse_nul(b, e, line, col);
    const char *tag = (const char *)e->data.scalar.tag;
    char *text = zfi_strndup((const char *)e->data.scalar.value, e->data.scalar.length);
    if (!text)
        return NULL;
    bool quoted = e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    const char *want = NULL;
    if (tag && (!strcmp(tag, "!") || !strcmp(tag, TAG_PREFIX "str")))
        quoted = true;
    else if (tag && (!strcmp(tag, TAG_PREFIX "int") || !strcmp(tag, TAG_PREFIX "float") ||
                     !strcmp(tag, TAG_PREFIX "bool") || !strcmp(tag, TAG_PREFIX "null")))
        quoted = false, want = tag_name(tag);
    else if (tag)
        problem(b, ZF_EPARSE, false, line, col, path_str(b),
                "unsupported YAML tag '%s': expected no tag, or !!str, !!int, !!float, !!bool, "
                "!!null",
                tag);
    zf_config *c = zfi_config_scalar(text, quoted, b->src->file, line, col);
    free(text);
    if (!c || !want)
        return c;
    bool ok = (!strcmp(want, "int") && c->kind == ZF_CFG_INT) ||
              (!strcmp(want, "bool") && c->kind == ZF_CFG_BOOL) ||
              (!strcmp(want, "null") && c->kind == ZF_CFG_NULL) ||
              (!strcmp(want, "float") && (c->kind == ZF_CFG_FLOAT || c->kind == ZF_CFG_INT));
    if (!ok)
        problem(b, ZF_EPARSE, false, line, col, path_str(b), "'%s' is not a valid !!%s", c->text,
                want);
    else if (!strcmp(want, "float"))
        c->kind = ZF_CFG_FLOAT;
    return c;
}

static void add_anchor(builder *b, const char *name, const zf_config *node)
{
    if (!name || !node)
        return;
    size_t depth = 0, count = zfi_config_count(node, &depth);
    char *copy = zfi_strdup(name);
    if (!copy ||
        !zfi_grow((void **)&b->anchors, &b->cap_anchors, b->n_anchors + 1, sizeof *b->anchors)) {
        free(copy);
        oom(b);
        return;
    }
    b->anchors[b->n_anchors++] = (anchor){copy, node, count, depth};
}

static const anchor *find_anchor(const builder *b, const char *name)
{
    for (size_t i = b->n_anchors; i-- > 0;)
        if (strcmp(b->anchors[i].name, name) == 0)
            return &b->anchors[i];
    return NULL;
}

static void on_scalar(builder *b, const yaml_event_t *e)
{
    unsigned line, col;
    position(b, e->start_mark, &line, &col);

    if (expecting_key(b)) {
        char *key = zfi_strndup((const char *)e->data.scalar.value, e->data.scalar.length);
        if (!key) {
            oom(b);
            return;
        }
        size_t old = path_push(b, key);
        refuse_nul(b, e, line, col);
        probe(b, e);
        path_pop(b, old);
        take_key(b, key, line, col);
        free(key);
        if (e->data.scalar.anchor) /* an anchored key: keep it as a scalar */
            problem(b, ZF_EPARSE, false, line, col, path_str(b),
                    "anchors on keys are not supported");
        return;
    }
    if (!budget(b, 1, line, col))
        return;
    frame *f = b->depth ? &b->st[b->depth - 1] : NULL;
    size_t old = path_push(b, f && f->node->kind == ZF_CFG_MAP ? f->key : NULL);
    probe(b, e);
    zf_config *c = make_scalar(b, e, line, col);
    path_pop(b, old);
    if (!c) {
        oom(b);
        return;
    }
    attach(b, c);
    add_anchor(b, (const char *)e->data.scalar.anchor, c);
}

static void on_start(builder *b, const yaml_event_t *e, zf_config_kind kind)
{
    unsigned line, col;
    position(b, e->start_mark, &line, &col);
    if (expecting_key(b)) {
        problem(b, ZF_EPARSE, false, line, col, path_str(b), "a map key must be a scalar, found %s",
                kind == ZF_CFG_MAP ? "a map" : "a sequence");
        b->skip = 1;
        return;
    }
    const char *tag =
        (const char *)(kind == ZF_CFG_MAP ? e->data.mapping_start.tag : e->data.sequence_start.tag);
    if (tag && strcmp(tag, "!") &&
        strcmp(tag, kind == ZF_CFG_MAP ? TAG_PREFIX "map" : TAG_PREFIX "seq"))
        problem(b, ZF_EPARSE, false, line, col, path_str(b), "unsupported YAML tag '%s' on %s", tag,
                kind == ZF_CFG_MAP ? "a map" : "a sequence");
    if (b->depth >= ZFI_MAX_DEPTH) {
        problem(b, ZF_EINVAL, true, line, col, path_str(b),
                "the document nests deeper than %d levels: refusing it", ZFI_MAX_DEPTH);
        return;
    }
    if (!budget(b, 1, line, col))
        return;
    zf_config *c = zfi_config_new(kind, b->src->file, line, col);
    if (!c) {
        oom(b);
        return;
    }
    frame *parent = b->depth ? &b->st[b->depth - 1] : NULL;
    path_push(b, parent && parent->node->kind == ZF_CFG_MAP ? parent->key : NULL);
    attach(b, c);
    const char *anchor_name = (const char *)(kind == ZF_CFG_MAP ? e->data.mapping_start.anchor
                                                                : e->data.sequence_start.anchor);
    frame *f = &b->st[b->depth++];
    memset(f, 0, sizeof *f);
    f->node = c;
    f->path_len = b->path.len;
    if (anchor_name && !(f->anchor = zfi_strdup(anchor_name)))
        oom(b);
}

static void on_end(builder *b)
{
    if (!b->depth)
        return;
    frame *f = &b->st[--b->depth];
    free(f->key);
    f->key = NULL;
    free(f->hash);
    f->hash = NULL;
    add_anchor(b, f->anchor, f->node);
    free(f->anchor);
    f->anchor = NULL;
    path_pop(b, b->depth ? b->st[b->depth - 1].path_len : 0);
}

static void on_alias(builder *b, const yaml_event_t *e)
{
    unsigned line, col;
    position(b, e->start_mark, &line, &col);
    const char *name = (const char *)e->data.alias.anchor;
    const anchor *a = find_anchor(b, name);
    if (!a) {
        problem(b, ZF_EPARSE, true, line, col, path_str(b),
                "alias '*%s' refers to no anchor defined before it", name);
        return;
    }
    if (expecting_key(b)) {
        if (a->node->kind == ZF_CFG_MAP || a->node->kind == ZF_CFG_SEQ) {
            problem(b, ZF_EPARSE, false, line, col, path_str(b),
                    "a map key must be a scalar, alias '*%s' is not", name);
            b->st[b->depth - 1].have_key = true;
            return;
        }
        take_key(b, a->node->text ? a->node->text : "", line, col);
        return;
    }
    if (b->depth + a->depth > ZFI_MAX_DEPTH) {
        problem(b, ZF_EINVAL, true, line, col, path_str(b),
                "alias '*%s' nests the document deeper than %d levels: refusing it", name,
                ZFI_MAX_DEPTH);
        return;
    }
    b->aliases++;
    if (!budget(b, a->count, line, col))
        return;
    zf_config *c = zfi_config_clone(a->node);
    if (!c) {
        oom(b);
        return;
    }
    at_use(c, line, col);
    attach(b, c);
}

static void syntax_error(builder *b, const yaml_parser_t *p)
{
    unsigned line = 0, col = 0;
    if (p->error == YAML_MEMORY_ERROR) {
        oom(b);
        return;
    }
    if (p->error == YAML_READER_ERROR) {
        zfi_src_pos(b->src, p->problem_offset, &line, &col);
        problem(b, ZF_EPARSE, true, line, col, "", "invalid text: %s (expected UTF-8 YAML)",
                p->problem ? p->problem : "unreadable input");
        return;
    }
    position(b, p->problem_mark, &line, &col);
    if (p->context) {
        unsigned cl, cc;
        position(b, p->context_mark, &cl, &cc);
        problem(b, ZF_EPARSE, true, line, col, path_str(b),
                "invalid YAML: %s (%s at line %u, column %u)", p->problem ? p->problem : "error",
                p->context, cl, cc);
    } else {
        problem(b, ZF_EPARSE, true, line, col, path_str(b), "invalid YAML: %s",
                p->problem ? p->problem : "error");
    }
}

static void handle(builder *b, const yaml_event_t *e)
{
    if (b->skip) { /* inside a complex key */
        if (e->type == YAML_MAPPING_START_EVENT || e->type == YAML_SEQUENCE_START_EVENT)
            b->skip++;
        else if (e->type == YAML_MAPPING_END_EVENT || e->type == YAML_SEQUENCE_END_EVENT)
            b->skip--;
        if (!b->skip)
            b->st[b->depth - 1].have_key = true; /* drop its value */
        return;
    }
    switch (e->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->docs > 1) {
            unsigned line, col;
            position(b, e->start_mark, &line, &col);
            problem(b, ZF_EPARSE, true, line, col, "",
                    "a second YAML document starts here: a descriptor is one document");
        }
        break;
    case YAML_SCALAR_EVENT:
        on_scalar(b, e);
        break;
    case YAML_SEQUENCE_START_EVENT:
        on_start(b, e, ZF_CFG_SEQ);
        break;
    case YAML_MAPPING_START_EVENT:
        on_start(b, e, ZF_CFG_MAP);
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        on_end(b);
        break;
    case YAML_ALIAS_EVENT:
        on_alias(b, e);
        break;
    default:
        break;
    }
}

static void builder_free(builder *b)
{
    while (b->depth) {
        frame *f = &b->st[--b->depth];
        free(f->key);
        free(f->anchor);
        free(f->hash);
    }
    for (size_t i = 0; i < b->n_anchors; i++)
        free(b->anchors[i].name);
    free(b->anchors);
    for (size_t i = 0; i < b->n_orphans; i++)
        zfi_config_free(b->orphans[i]);
    free(b->orphans);
    zfi_buf_free(&b->path);
}

zf_err zfi_yaml_parse(const zfi_src *s, zf_diag *diag, zfi_probe *probes, size_t n_probes,
                      zf_config **out)
{
    *out = NULL;
    builder *b = zfi_calloc(1, sizeof *b);
    if (!b)
        return ZF_ENOMEM;
    b->src = s;
    b->diag = diag;
    b->probes = probes;
    b->n_probes = n_probes;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        free(b);
        return ZF_ENOMEM;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)s->text, s->len);
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    for (;;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            syntax_error(b, &p);
            break;
        }
        handle(b, &e);
        yaml_event_type_t type = e.type;
        yaml_event_delete(&e);
        if (type == YAML_STREAM_END_EVENT || b->fatal)
            break;
    }
    yaml_parser_delete(&p);
    zf_err rc = b->err;
    if (b->fatal) {
        /* The root owns what was attached; frames only point into it. */
        zfi_config_free(b->root);
        b->root = NULL;
    } else if (!b->root) {
        b->root = zfi_config_new(ZF_CFG_NULL, s->file, 1, 1);
        if (!b->root)
            rc = ZF_ENOMEM;
    }
    *out = b->root;
    builder_free(b);
    free(b);
    return rc;
}

/* ---- zf_yaml_parse: any YAML document as a tree (the daemon's
 * configuration file, for one): this parser without variables ---- */

static void forget_file(zf_config *c)
{
    if (!c)
        return;
    c->file = NULL;
    for (size_t i = 0; i < c->n; i++)
        forget_file(c->items[i]);
}

zf_err zf_yaml_parse(const char *text, size_t len, const char *name, zf_config **out, zf_diag *diag)
{
    if (!text || !out)
        return zfi_error(ZF_EINVAL, "zf_yaml_parse: NULL argument");
    *out = NULL;
    zfi_strings *names = zfi_strings_new();
    if (!names)
        return zfi_error(ZF_ENOMEM, "out of memory");
    zfi_src src;
    zf_err err = ZF_ENOMEM;
    if (zfi_src_identity(&src, zfi_strings_intern(names, name ? name : "<yaml>"), text, len)) {
        err = zfi_yaml_parse(&src, diag, NULL, 0, out);
        zfi_src_free(&src);
    }
    forget_file(*out); /* `file` points into `names`, freed below */
    zfi_strings_free(names);
    return err;
}
