/* Flattening: the flow and every composite operator it includes become one
 * list of nodes with "outer>inner" ids. Each level (the flow, a composite)
 * reads its node entries here, then resolves its links (links.c).
 *
 * Configuration priority (highest first), as Zenoh-Flow documents it: the
 * node's entry in the flow, the flow's `configuration`, the node's entry in a
 * composite, the composite's `configuration`, the node's own file. zflow's
 * runtime settings (hang_timeout, isolation, ...) follow the same order. */
#include "graph/level.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETTINGS_FIELDS                                                                            \
    "period", "hang_timeout", "send_timeout", "max_errors", "error_window", "isolation",           \
        "restart", "max_restarts", "restart_window", "hang_action"

static const char *const flow_fields[] = {
    "name",  "flow",    "vars", "configuration", "sources",    "operators",    "sinks",
    "links", "mapping", "id",   "uuid",          "max_memory", "drain_timeout"};
static const char *const entry_fields[] = {"id",
                                           "description",
                                           "configuration",
                                           "descriptor",
                                           "library",
                                           "uri",
                                           "python",
                                           "inputs",
                                           "outputs",
                                           SETTINGS_FIELDS,
                                           "tags",
                                           "zenoh-subscribers",
                                           "zenoh-publishers"};
static const char *const file_fields[] = {"description",     "vars",    "configuration",
                                          "library",         "uri",     "python",
                                          "inputs",          "outputs", "id",
                                          SETTINGS_FIELDS,   "tags",    "zenoh-subscribers",
                                          "zenoh-publishers"};
static const char *const composite_fields[] = {
    "description", "vars", "configuration", "inputs", "outputs", "operators",
    "links",       "id",   SETTINGS_FIELDS, "tags"};

static void entry(zfi_loader *ld, zfi_level *lv, const zf_config *item, const char *field,
                  zf_node_kind kind);

/* Zenoh-Flow 0.5's `tags`: words describing a node, for people (zflow places
 * nodes by `mapping`). A list of strings, or an error. */
static void tags(zfi_loader *ld, const zf_config *map, const char *prefix)
{
    char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
    const zf_config *t = zfi_config_member(map, "tags");
    if (!t || !zfi_want_seq(ld, t, zfi_field(f, prefix, "tags"), false))
        return;
    for (size_t i = 0; i < t->n; i++)
        zfi_want_text(ld, t->items[i], zfi_field_at(g, f, i));
}

static zf_config *merged(zfi_loader *ld, const zf_config *high, const zf_config *low)
{
    zf_config *m = zfi_config_merge(high, low);
    if (!m && (high || low))
        zfi_oom(ld);
    return m;
}

/* ---- leaves ---- */

static bool push_node(zfi_loader *ld, zfi_node *n, zfi_aux *a)
{
    size_t cap = ld->cap_nodes;
    if (!zfi_grow((void **)&ld->nodes, &cap, ld->n_nodes + 1, sizeof *ld->nodes))
        return false;
    ld->cap_nodes = cap;
    if (!zfi_grow((void **)&ld->aux, &ld->cap_aux, ld->n_nodes + 1, sizeof *ld->aux))
        return false;
    ld->nodes[ld->n_nodes] = *n;
    ld->aux[ld->n_nodes++] = *a;
    return true;
}

/* The node of kid ki, complete: its per-port link counts allocated, pushed
 * to the loader's nodes. False when out of memory (n and a still the
 * caller's). */

static void node_clear(zfi_node *n, zfi_aux *a)
{
    free(n->id);
    free(n->description);
    free(n->library);
    free(n->python);
    zfi_ports_free(n->inputs, n->n_inputs);
    zfi_ports_free(n->outputs, n->n_outputs);
    zfi_config_free(n->config);
    free(n->worker);
    free(a->field);
    free(a->in_n);
    free(a->out_n);
    free(a->in_first);
}

static char *impl_path(zfi_loader *ld, const zf_config *c, const char *field, const char *dir)
{
    const char *ref = zfi_want_text(ld, c, field);
    if (!ref)
        return NULL;
    const char *why;
    char *p = zfi_path_resolve(dir, ref, &why);
    if (!p)
        zfi_err(ld, ZF_EINVAL, c, field, "'%s' is not a usable path: %s", ref, why);
    return p;
}

/* A `library` / `uri` naming a Python file: Zenoh-Flow hands those to its
 * Python wrapper, zflow to its Python host. */
static bool is_python(const char *path)
{
    size_t n = strlen(path);
    return n > 3 && !strcmp(path + n - 3, ".py");
}

static void ports(zfi_loader *ld, zfi_node *n, const zf_config *m, const char *mf)
{
    static const char *const kinds[] = {"", "a source", "an operator", "a sink"};
    const zf_config *in = zfi_config_member(m, "inputs"), *out = zfi_config_member(m, "outputs");
    const char *id = n->id, *kind = kinds[n->kind];
    char f[ZFI_FIELD_MAX];
    if (n->kind == ZF_SOURCE && in) {
        zfi_key_err(ld, m, "inputs", mf, "'%s' is %s: a source has no inputs", id, kind);
        in = NULL;
    }
    if (n->kind == ZF_SINK && out) {
        zfi_key_err(ld, m, "outputs", mf, "'%s' is %s: a sink has no outputs", id, kind);
        out = NULL;
    }
    if (n->kind != ZF_SOURCE && zfi_port_list_empty(in) && (!in || in->kind != ZF_CFG_NULL))
        zfi_err(ld, ZF_EINVAL, in ? in : m, zfi_field(f, mf, "inputs"),
                "'%s' is %s and declares no input: expected at least one under 'inputs'", id, kind);
    if (n->kind != ZF_SINK && zfi_port_list_empty(out) && (!out || out->kind != ZF_CFG_NULL))
        zfi_err(ld, ZF_EINVAL, out ? out : m, zfi_field(f, mf, "outputs"),
                "'%s' is %s and declares no output: expected at least one under 'outputs'", id,
                kind);
    if (!zfi_parse_ports(ld, in, zfi_field(f, mf, "inputs"), "input", &n->inputs, &n->n_inputs) ||
        !zfi_parse_ports(ld, out, zfi_field(f, mf, "outputs"), "output", &n->outputs,
                         &n->n_outputs))
        zfi_oom(ld);
}

/* What an entry of a level (under `sources`, `operators` or `sinks`, or a
 * node file loaded on its own) brings to the node it declares. */
typedef struct entry_ctx {
    zfi_level *lv;
    size_t ki;               /* its kid in lv */
    const zf_config *item;   /* the entry */
    const char *field;       /* the entry's field ("operators[1]", "") */
    zf_node_kind kind;       /* the section's */
    zfi_settings settings;   /* the entry's runtime settings */
    const zf_config *config; /* configuration of the entry and the enclosing levels */
} entry_ctx;

static zfi_kid *kid(const entry_ctx *e)
{
    return &e->lv->kids[e->ki];
}

/* Add a leaf node to the flow; kid(e) names it. False when out of memory. */
static bool add_leaf(zfi_loader *ld, const entry_ctx *e, zfi_node *n, zfi_aux *a)
{
    a->in_n = zfi_calloc(n->n_inputs, sizeof *a->in_n);
    a->in_first = zfi_calloc(n->n_inputs, sizeof *a->in_first);
    a->out_n = zfi_calloc(n->n_outputs, sizeof *a->out_n);
    if (!a->in_n || !a->in_first || !a->out_n || !push_node(ld, n, a))
        return false;
    kid(e)->leaf = (long)(ld->n_nodes - 1);
    kid(e)->first = ld->n_nodes - 1;
    kid(e)->count = 1;
    return true;
}

/* The node's description: the entry's wins over the node file's. */
static bool description(zfi_loader *ld, const entry_ctx *e, const zfi_doc *doc, zfi_node *n)
{
    char f[ZFI_FIELD_MAX];
    const zf_config *d = zfi_config_member(e->item, "description");
    const char *dfield = e->field;
    if ((!d || d->kind == ZF_CFG_NULL) && doc)
        d = zfi_config_member(doc->root, "description"), dfield = "";
    if (!d || d->kind == ZF_CFG_NULL)
        return true;
    const char *t = zfi_want_text(ld, d, zfi_field(f, dfield, "description"));
    return !t || (n->description = zfi_strdup(t)) != NULL;
}

/* `library` (or Zenoh-Flow 0.5's `uri`) or `python` of map m (fields under
 * mf, paths relative to dir) into n; the place the node is declared. */
static const zf_config *implementation(zfi_loader *ld, const entry_ctx *e, const zf_config *m,
                                       const char *mf, const char *dir, bool in_file, zfi_node *n)
{
    char f[ZFI_FIELD_MAX];
    const char *id = kid(e)->id;
    const zf_config *lib = zfi_config_member(m, "library"), *uri = zfi_config_member(m, "uri");
    const zf_config *py = zfi_config_member(m, "python");
    if (lib && uri)
        zfi_key_err(ld, m, "uri", mf,
                    "'uri' is the old name of 'library' (node '%s'): give only one", id);
    if (uri && !lib) {
        zfi_log(ZF_LOG_DEBUG, "descriptor", "%s:%u: 'uri' (Zenoh-Flow 0.5) read as 'library'",
                m->file ? m->file : "", uri->line);
        lib = uri;
    }
    if (lib && py)
        zfi_key_err(ld, m, "python", mf,
                    "'%s' has both 'library' and 'python': a node is implemented by one shared "
                    "library or by one Python file",
                    id);
    else if (lib) {
        n->library = impl_path(ld, lib, zfi_field(f, mf, lib == uri ? "uri" : "library"), dir);
        if (n->library && is_python(n->library)) /* Zenoh-Flow's Python wrapper runs those */
            n->python = n->library, n->library = NULL;
    } else if (py)
        n->python = impl_path(ld, py, zfi_field(f, mf, "python"), dir);
    else
        zfi_err(ld, ZF_EINVAL, m, mf,
                "'%s' has no implementation: expected 'library' (a shared library), 'python' (a "
                "Python file)%s",
                id, in_file ? "" : " or 'descriptor' (a node file)");
    return lib ? lib : py ? py : e->item;
}

/* A node implemented by a library or a Python file, declared inline (doc
 * NULL: the entry holds everything) or in its own file. */
static void leaf(zfi_loader *ld, const entry_ctx *e, const zfi_doc *doc)
{
    const zf_config *m = doc ? doc->root : e->item;
    const char *mf = doc ? "" : e->field, *dir = doc ? doc->dir : e->lv->doc->dir;
    const char *id = kid(e)->id;
    zfi_settings fs = ZFI_SETTINGS_INIT;
    if (doc) {
        zfi_known(ld, m, "", "a node file", file_fields, ZFI_ARRAY_LEN(file_fields));
        tags(ld, m, "");
        if (zfi_refuse_zenoh(ld, m, "", id)) {
            kid(e)->broken = true;
            return;
        }
        zfi_parse_settings(ld, m, "", id, e->kind, false, &fs);
    }
    if (ld->n_nodes >= ZFI_MAX_FLOW_NODES) {
        zfi_err(ld, ZF_EINVAL, e->item, e->field, "the flow has more than %d nodes once flattened",
                ZFI_MAX_FLOW_NODES);
        kid(e)->broken = true;
        return;
    }
    zfi_node n = {0};
    zfi_aux a = {0};
    n.kind = e->kind;
    n.id = zfi_asprintf("%s%s", e->lv->prefix, id);
    a.ports_file = m->file;
    a.field = zfi_strdup(mf);
    if (!n.id || !a.field || !description(ld, e, doc, &n))
        goto oom;
    const zf_config *at = implementation(ld, e, m, mf, dir, doc != NULL, &n);
    ports(ld, &n, m, mf);

    const zf_config *fc = doc ? zfi_config_member(m, "configuration") : NULL;
    if (fc && !zfi_want_map(ld, fc, "configuration", false))
        fc = NULL;
    n.config = merged(ld, e->config, fc);
    if (!n.config)
        n.config = zfi_config_new(ZF_CFG_MAP, m->file, m->line, m->col);
    if (!n.config)
        goto oom;

    zfi_settings s = e->lv->inherit;
    zfi_settings_under(&s, &e->settings);
    zfi_settings_under(&s, &fs);
    zfi_settings_apply(&n, &s);
    if ((n.restart != ZFI_RESTART_NEVER || n.hang_restart) && n.isolation != ZFI_ISOLATION_PROCESS)
        zfi_err(ld, ZF_EINVAL, s.restart_at, s.restart_at && s.restart_at->text ? "restart" : "",
                "node '%s': %s needs isolation: process (a node is restarted by starting its "
                "process again; add isolation: process, or remove it)",
                n.id, n.restart != ZFI_RESTART_NEVER ? "restart" : "hang_action: restart");
    const zf_config *place = doc ? at : e->item;
    n.file = place->file;
    n.line = place->line;
    n.col = place->col;

    if (!add_leaf(ld, e, &n, &a))
        goto oom;
    return;
oom:
    node_clear(&n, &a);
    kid(e)->broken = true;
    zfi_oom(ld);
}

/* ---- composites ---- */

static void composite(zfi_loader *ld, const entry_ctx *e, const zfi_doc *doc)
{
    const zf_config *m = doc->root;
    zfi_level *lv = e->lv;
    zfi_kid *k = kid(e);
    zfi_known(ld, m, "", "a composite operator", composite_fields, ZFI_ARRAY_LEN(composite_fields));
    tags(ld, m, "");
    zfi_settings fs;
    zfi_parse_settings(ld, m, "", k->id, ZF_OPERATOR, true, &fs);
    zfi_level in = {.doc = doc, .over = e->config, .inherit = lv->inherit};
    zfi_settings_under(&in.inherit, &e->settings);
    zfi_settings_under(&in.inherit, &fs);
    const zf_config *top = zfi_config_member(m, "configuration");
    in.top = zfi_want_map(ld, top, "configuration", false) ? top : NULL;
    in.prefix = zfi_asprintf("%s%s>", lv->prefix, k->id);
    char *what = zfi_asprintf("composite operator '%s'", k->id);
    if (!in.prefix || !what) {
        free(what);
        zfi_level_free(&in);
        k->broken = true;
        zfi_oom(ld);
        return;
    }
    in.what = what;
    size_t first = ld->n_nodes;
    const zf_config *ops = zfi_config_member(m, "operators");
    if (zfi_want_seq(ld, ops, "operators", true)) {
        if (!ops->n)
            zfi_err(ld, ZF_EINVAL, ops, "operators",
                    "a composite operator needs at least one operator");
        for (size_t i = 0; i < ops->n; i++) {
            char f[ZFI_FIELD_MAX];
            entry(ld, &in, ops->items[i], zfi_field_at(f, "operators", i), ZF_OPERATOR);
        }
    }
    zfi_links(ld, &in, zfi_config_member(m, "links"));
    k = kid(e); /* the entries may have moved lv->kids */
    k->composite = true;
    zfi_boundary(ld, &in, m, false, k);
    zfi_boundary(ld, &in, m, true, k);
    k->first = first;
    k->count = ld->n_nodes - first;
    zfi_level_free(&in);
    free(what);
}

/* Zenoh-Flow's built-in Zenoh nodes: a source subscribing to key
 * expressions (`zenoh-subscribers: {port: keyexpr}`, 0.6, or `descriptor:
 * builtin://zenoh` with `configuration.key-expressions`, 0.5), a sink
 * publishing its inputs. zflow carries them over DDS topics named after the
 * key expressions (src/cluster/dds_io.c); one port per key expression, of
 * type `any`; the node's configuration gets `key-expressions`. */
static void zenoh_node(zfi_loader *ld, const entry_ctx *e, const zf_config *keys,
                       const char *kfield)
{
    const char *id = kid(e)->id;
    const zf_config *item = e->item;
    char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
    zfi_field(f, e->field, kfield);
    kid(e)->broken = true;
    if (e->kind == ZF_OPERATOR) {
        zfi_err(ld, ZF_EINVAL, keys ? keys : item, f,
                "node '%s': Zenoh's built-in nodes are a source (zenoh-subscribers) or a sink "
                "(zenoh-publishers), not an operator",
                id);
        return;
    }
    if (!keys || keys->kind != ZF_CFG_MAP || keys->n == 0) {
        zfi_err(ld, ZF_EINVAL, keys ? keys : item, f,
                "node '%s': expected a map of %s to key expressions ({port: \"a/key\"})", id,
                e->kind == ZF_SOURCE ? "outputs" : "inputs");
        return;
    }
    if (ld->n_nodes >= ZFI_MAX_FLOW_NODES) {
        zfi_err(ld, ZF_EINVAL, item, e->field, "the flow has more than %d nodes once flattened",
                ZFI_MAX_FLOW_NODES);
        return;
    }
    zfi_node n = {0};
    zfi_aux a = {0};
    n.kind = e->kind;
    n.builtin_name = e->kind == ZF_SOURCE ? "zenoh-subscribers" : "zenoh-publishers";
    n.id = zfi_asprintf("%s%s", e->lv->prefix, id);
    a.ports_file = item->file;
    a.field = zfi_strdup(e->field);
    zfi_port *ports = zfi_calloc(keys->n, sizeof *ports);
    if (!n.id || !a.field || !ports) {
        free(ports);
        goto oom;
    }
    for (size_t k = 0; k < keys->n; k++) {
        zfi_mark m = keys->key_marks ? keys->key_marks[k] : (zfi_mark){keys->line, keys->col};
        ports[k] = (zfi_port){zfi_strdup(keys->keys[k]), zfi_strdup("any"), m.line, m.col};
        zfi_want_text(ld, keys->items[k], zfi_field(g, f, keys->keys[k]));
    }
    if (e->kind == ZF_SOURCE)
        n.outputs = ports, n.n_outputs = keys->n;
    else
        n.inputs = ports, n.n_inputs = keys->n;
    const zf_config *d = zfi_config_member(item, "description");
    if (d && d->kind != ZF_CFG_NULL) {
        const char *t = zfi_want_text(ld, d, zfi_field(g, e->field, "description"));
        if (t && !(n.description = zfi_strdup(t)))
            goto oom;
    }
    n.config =
        e->config ? zfi_config_clone(e->config) : zfi_config_new(ZF_CFG_MAP, item->file, 0, 0);
    zf_config *kc = zfi_config_clone(keys);
    if (!n.config || !kc || !zfi_config_map_set(n.config, "key-expressions", kc))
        goto oom;
    zfi_settings s = e->lv->inherit;
    zfi_settings_under(&s, &e->settings);
    zfi_settings_apply(&n, &s);
    n.file = item->file;
    n.line = item->line;
    n.col = item->col;
    if (!add_leaf(ld, e, &n, &a))
        goto oom;
    kid(e)->broken = false;
    return;
oom:
    node_clear(&n, &a);
    zfi_oom(ld);
}

/* ---- includes: `descriptor: <node file>` ---- */

/* A node file named under `descriptor` (desc, at field f): its path, or
 * NULL after an error (a built-in node is refused here). */
static char *node_file_path(zfi_loader *ld, const entry_ctx *e, const zf_config *desc,
                            const char *f)
{
    const char *ref = zfi_want_text(ld, desc, f), *why;
    if (!ref)
        return NULL;
    if (!strncmp(ref, "builtin://", 10)) {
        if (!strcmp(ref + 10, "zenoh") && e->kind != ZF_OPERATOR)
            zenoh_node(ld, e, zfi_config_member(e->config, "key-expressions"),
                       "configuration.key-expressions");
        else
            zfi_refuse_builtin(ld, e->item, desc, f, kid(e)->id, e->kind, ref + 10);
        return NULL;
    }
    char *path = zfi_path_resolve(e->lv->doc->dir, ref, &why);
    if (!path)
        zfi_err(ld, ZF_EINVAL, desc, f, "'%s' is not a usable node file path: %s", ref, why);
    return path;
}

/* The daemon's rule: node files only from its --lib-path folders. */
static bool may_read(zfi_loader *ld, const zf_config *desc, const char *f, const char *canon)
{
    for (size_t i = 0; i < ld->n_include_dirs; i++)
        if (!strncmp(canon, ld->include_dirs[i], strlen(ld->include_dirs[i])))
            return true;
    if (!ld->n_include_dirs)
        return true;
    zfi_err(ld, ZF_EPERM, desc, f,
            "node file '%s' is outside the folders node files may be read from "
            "(here: the daemon's --lib-path folders)",
            canon);
    return false;
}

/* The file's text (caller frees), or NULL after an error. */
static char *read_node_file(zfi_loader *ld, const zf_config *desc, const char *f, const char *path,
                            const char *canon, size_t *len)
{
    int err = canon ? 0 : errno;
    char *text = canon ? zfi_read_file(canon, len, &err) : NULL;
    if (!text)
        zfi_err(ld, err == ENOENT || err == ENOTDIR ? ZF_ENOTFOUND : ZF_EINVAL, desc, f,
                "cannot read node file '%s': %s", path,
                err == EINVAL ? "not a regular file" : strerror(err));
    return text;
}

/* A composite that includes itself, through the files being expanded. */
static bool recursion(zfi_loader *ld, const zf_config *desc, const char *f, const char *path,
                      const char *canon)
{
    for (size_t i = 0; i < ld->depth; i++) {
        if (strcmp(ld->stack[i], canon))
            continue;
        zfi_buf chain;
        zfi_buf_init(&chain);
        for (size_t j = i; j < ld->depth; j++) {
            const char *base = strrchr(ld->stack[j], '/');
            zfi_buf_printf(&chain, "%s -> ", base ? base + 1 : ld->stack[j]);
        }
        const char *base = strrchr(canon, '/');
        zfi_buf_puts(&chain, base ? base + 1 : canon);
        zfi_err(ld, ZF_EINVAL, desc, f,
                "recursion: '%s' includes itself (%s); a composite operator cannot contain "
                "itself",
                path, chain.s ? chain.s : "");
        zfi_buf_free(&chain);
        return true;
    }
    return false;
}

/* The flow's files stay within the loader's limits (len more bytes). */
static bool within_limits(zfi_loader *ld, const zf_config *desc, const char *f, size_t len)
{
    ld->total_bytes += len;
    if (++ld->includes <= ZFI_MAX_INCLUDES && ld->total_bytes <= ZFI_MAX_TOTAL_BYTES &&
        ld->total_nodes <= ZFI_MAX_TOTAL_NODES)
        return true;
    zfi_err(ld, ZF_EINVAL, desc, f,
            "the flow's files are too big: more than %d node files, %u bytes or %d YAML "
            "nodes in all",
            ZFI_MAX_INCLUDES, ZFI_MAX_TOTAL_BYTES, ZFI_MAX_TOTAL_NODES);
    return false;
}

/* The node file parsed (kept by the loader) and a map, or NULL. */
static const zfi_doc *parse_node_file(zfi_loader *ld, const char *path, const char *text,
                                      size_t len)
{
    const char *file = zfi_strings_intern(ld->strings, path);
    char *dir = zfi_path_dirname(path);
    zfi_doc *doc = NULL;
    /* Zenoh-Flow 0.6 renders a node file with the flow's vars over its own;
     * 0.5 rendered each file with its own (its examples' flow and node files
     * give BASE_DIR different values): a 0.5 flow's node file keeps its own,
     * the flow's fill in the rest, and --var beats both. */
    bool v05 = ld->own_vars_first;
    if (file && dir)
        zfi_doc_load(ld, file, dir, text, len, v05 ? &ld->flow_vars : NULL,
                     v05 ? &ld->opt_vars : &ld->flow_vars, NULL, &doc);
    else
        zfi_oom(ld);
    free(dir);
    if (!doc || !zfi_loader_keep(ld, doc))
        return NULL;
    ld->total_nodes += zfi_config_count(doc->root, NULL);
    if (doc->root->kind != ZF_CFG_MAP) {
        zfi_err(ld, ZF_EINVAL, doc->root, "",
                "a node file is a map (description, library, inputs, outputs, ...), found %s",
                zfi_kind_name(doc->root));
        return NULL;
    }
    return doc;
}

/* A node file with `operators`: expanded as a composite, its canonical path
 * on the stack of files being expanded meanwhile (*canon is taken). */
static void include_composite(zfi_loader *ld, const entry_ctx *e, const zf_config *desc,
                              const char *f, const char *path, char **canon, const zfi_doc *doc)
{
    if (e->kind != ZF_OPERATOR) {
        zfi_err(ld, ZF_EINVAL, desc, f,
                "'%s' is a composite operator (it has 'operators'): it can only be used "
                "under 'operators'",
                path);
        return;
    }
    if (ld->depth > ZFI_MAX_NESTING) {
        zfi_err(ld, ZF_EINVAL, desc, f,
                "composite operators nest deeper than %d levels here: refusing '%s'",
                ZFI_MAX_NESTING, path);
        return;
    }
    if (!zfi_grow((void **)&ld->stack, &ld->cap_stack, ld->depth + 1, sizeof *ld->stack)) {
        zfi_oom(ld);
        return;
    }
    ld->stack[ld->depth++] = *canon;
    *canon = NULL;
    kid(e)->broken = false;
    composite(ld, e, doc);
    free(ld->stack[--ld->depth]);
}

/* A node given by `descriptor` (desc): a node file or a composite operator. */
static void include(zfi_loader *ld, const entry_ctx *e, const zf_config *desc)
{
    char f[ZFI_FIELD_MAX];
    zfi_field(f, e->field, "descriptor");
    kid(e)->broken = true; /* until it loads */
    char *path = node_file_path(ld, e, desc, f);
    if (!path)
        return;
    char *canon = realpath(path, NULL);
    char *text = NULL;
    size_t len = 0;
    const zfi_doc *doc = NULL;
    if ((!canon || may_read(ld, desc, f, canon)) &&
        (text = read_node_file(ld, desc, f, path, canon, &len)) &&
        !recursion(ld, desc, f, path, canon) && within_limits(ld, desc, f, len))
        doc = parse_node_file(ld, path, text, len);
    if (doc && zfi_config_member(doc->root, "operators")) {
        include_composite(ld, e, desc, f, path, &canon, doc);
    } else if (doc) {
        kid(e)->broken = false;
        leaf(ld, e, doc);
    }
    free(text);
    free(canon);
    free(path);
}

/* One entry under `sources`, `operators` or `sinks` of a level. */
static void entry(zfi_loader *ld, zfi_level *lv, const zf_config *item, const char *field,
                  zf_node_kind kind)
{
    char f[ZFI_FIELD_MAX];
    const char *id;
    if (!zfi_want_map(ld, item, field, true))
        return;
    zfi_known(ld, item, field, "a node", entry_fields, ZFI_ARRAY_LEN(entry_fields));
    tags(ld, item, field);
    const zf_config *idc = zfi_config_member(item, "id");
    if (!idc) {
        zfi_err(ld, ZF_EINVAL, item, field, "missing 'id': every node needs an id");
        return;
    }
    if (!zfi_want_id(ld, idc, zfi_field(f, field, "id"), "node id", &id))
        return;
    const zfi_kid *dup = zfi_kid_find(lv, id);
    if (dup) {
        zfi_err(ld, ZF_EINVAL, idc, f,
                "duplicate node id '%s' (first declared at line %u): node ids are unique", id,
                dup->at->line);
        return;
    }
    if (!zfi_grow((void **)&lv->kids, &lv->cap, lv->n + 1, sizeof *lv->kids)) {
        zfi_oom(ld);
        return;
    }
    size_t ki = lv->n;
    zfi_kid *k = &lv->kids[ki];
    memset(k, 0, sizeof *k);
    k->at = item;
    k->kind = kind;
    k->leaf = -1;
    if (!(k->id = zfi_strdup(id))) {
        zfi_oom(ld);
        return;
    }
    lv->n++;
    const zf_config *zsub = zfi_config_member(item, "zenoh-subscribers");
    const zf_config *zpub = zfi_config_member(item, "zenoh-publishers");
    if ((zsub && kind != ZF_SOURCE) || (zpub && kind != ZF_SINK) || (zsub && zpub)) {
        zfi_err(ld, ZF_EINVAL, zsub ? zsub : zpub, field,
                "node '%s': zenoh-subscribers make a source (under `sources`) and "
                "zenoh-publishers a sink (under `sinks`), one of them per node",
                id);
        k->broken = true;
        return;
    }
    entry_ctx e = {.lv = lv, .ki = ki, .item = item, .field = field, .kind = kind};
    zfi_parse_settings(ld, item, field, id, kind, false, &e.settings);
    const zf_config *cfg = zfi_config_member(item, "configuration");
    if (cfg && !zfi_want_map(ld, cfg, zfi_field(f, field, "configuration"), false))
        cfg = NULL;
    zf_config *et = merged(ld, cfg, lv->top);
    zf_config *lvcfg = merged(ld, lv->over, et);
    zfi_config_free(et);
    e.config = lvcfg;
    if (zsub || zpub) {
        zenoh_node(ld, &e, zsub ? zsub : zpub, zsub ? "zenoh-subscribers" : "zenoh-publishers");
        zfi_config_free(lvcfg);
        return;
    }
    const zf_config *desc = zfi_config_member(item, "descriptor");
    if (desc) {
        static const char *const excl[] = {"library", "uri", "python", "inputs", "outputs"};
        for (size_t i = 0; i < ZFI_ARRAY_LEN(excl); i++)
            if (zfi_config_member(item, excl[i]))
                zfi_key_err(ld, item, excl[i], field,
                            "'%s' cannot be combined with 'descriptor' in node '%s': the node file "
                            "declares it",
                            excl[i], id);
        include(ld, &e, desc);
    } else {
        leaf(ld, &e, NULL);
    }
    zfi_config_free(lvcfg);
}

/* ---- the flow ---- */

static void section(zfi_loader *ld, zfi_level *lv, const zf_config *root, const char *key,
                    zf_node_kind kind)
{
    const zf_config *list = zfi_config_member(root, key);
    if (!zfi_want_seq(ld, list, key, false))
        return;
    for (size_t i = 0; i < list->n; i++) {
        char f[ZFI_FIELD_MAX];
        entry(ld, lv, list->items[i], zfi_field_at(f, key, i), kind);
    }
}

/* Zenoh-Flow 0.6's instance id: a UUID, hyphenated (any case; kept lower). */
static bool uuid_text(const char *t, char out[37])
{
    if (strlen(t) != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        char c = t[i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-'
                 : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
        out[i] = c >= 'A' && c <= 'F' ? (char)(c - 'A' + 'a') : c;
    }
    out[36] = '\0';
    return true;
}

/* One of two spellings of a field (Zenoh-Flow 0.5 and 0.6, or zflow's):
 * the one given, NULL when neither is; both is an error. */
static const zf_config *either(zfi_loader *ld, const zf_config *root, const char *a, const char *b,
                               const char **key)
{
    const zf_config *ca = zfi_config_member(root, a), *cb = zfi_config_member(root, b);
    if (ca && cb)
        zfi_key_err(ld, root, b, "",
                    "'%s' and '%s' are two spellings of one field (Zenoh-Flow's and zflow's): "
                    "give only one",
                    a, b);
    *key = ca ? a : b;
    return ca ? ca : cb;
}

static void top_fields(zfi_loader *ld, const zf_config *root)
{
    const char *key;
    const zf_config *c = either(ld, root, "name", "flow", &key);
    const char *name = NULL;
    ld->own_vars_first = c && !strcmp(key, "flow");
    if (!c)
        zfi_err(ld, ZF_EINVAL, root, "name",
                "missing 'name': a flow needs a name ('flow' in Zenoh-Flow 0.5 files)");
    else if ((name = zfi_want_text(ld, c, key)) && !*name)
        zfi_err(ld, ZF_EINVAL, c, key, "the flow's name is empty");
    if (name && *name && !(ld->name = zfi_strdup(name)))
        zfi_oom(ld);
    /* `id` (Zenoh-Flow 0.6) or `uuid`: the instance's UUID */
    if ((c = either(ld, root, "id", "uuid", &key))) {
        const char *t = zfi_want_text(ld, c, key);
        if (t && !uuid_text(t, ld->instance_id))
            zfi_err(ld, ZF_EINVAL, c, key,
                    "'%s' is not an instance id: expected a UUID such as "
                    "'f3a2c1d0-5b6e-4c7d-8e9f-0a1b2c3d4e5f' (or no '%s': each instance gets "
                    "a new one)",
                    t, key);
    }
    if ((c = zfi_config_member(root, "max_memory")))
        zfi_want_size(ld, c, "max_memory", &ld->max_memory);
    if ((c = zfi_config_member(root, "drain_timeout")))
        zfi_want_duration(ld, c, "drain_timeout", &ld->drain_ns);
}

static void need(zfi_loader *ld, const zfi_level *lv, const zf_config *root, zf_node_kind kind,
                 const char *key)
{
    const zf_config *list = zfi_config_member(root, key);
    if (list && list->kind == ZF_CFG_SEQ && list->n)
        return; /* entries that failed were reported as such */
    for (size_t i = 0; i < lv->n; i++)
        if (lv->kids[i].kind == kind)
            return;
    zfi_err(ld, ZF_EINVAL, list ? list : root, key,
            "the flow has no %s: expected at least one entry under '%s'",
            kind == ZF_SOURCE ? "source" : "sink", key);
}

/* ---- a node file on its own ---- */

bool zfi_is_node_file(const zf_config *root)
{
    static const char *const flow_only[] = {"name", "flow", "sources", "sinks", "mapping"};
    static const char *const node_marks[] = {"inputs", "outputs", "library",
                                             "uri",    "python",  "operators"};
    if (!root || root->kind != ZF_CFG_MAP)
        return false;
    for (size_t i = 0; i < ZFI_ARRAY_LEN(flow_only); i++)
        if (zfi_config_member(root, flow_only[i]))
            return false;
    for (size_t i = 0; i < ZFI_ARRAY_LEN(node_marks); i++)
        if (zfi_config_member(root, node_marks[i]))
            return true;
    return false;
}

/* Its id: the file's `id` (Zenoh-Flow 0.5) or its name without extension. */
static char *node_file_id(zfi_loader *ld, const zfi_doc *doc)
{
    const zf_config *idc = zfi_config_member(doc->root, "id");
    const char *id;
    if (idc)
        return zfi_want_id(ld, idc, "id", "node id", &id) ? zfi_strdup(id) : NULL;
    const char *base = strrchr(doc->file, '/');
    base = base ? base + 1 : doc->file;
    const char *dot = strrchr(base, '.');
    return zfi_strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
}

void zfi_flatten_node_file(zfi_loader *ld, const zfi_doc *doc)
{
    const zf_config *root = doc->root;
    bool comp = zfi_config_member(root, "operators") != NULL;
    bool in = !zfi_port_list_empty(zfi_config_member(root, "inputs"));
    bool out = !zfi_port_list_empty(zfi_config_member(root, "outputs"));
    /* A node file does not say its kind: its ports do. */
    zf_node_kind kind = comp || (in && out) ? ZF_OPERATOR : in ? ZF_SINK : ZF_SOURCE;
    zfi_level lv = {.doc = doc, .inherit = ZFI_SETTINGS_INIT, .what = "node file"};
    lv.prefix = zfi_strdup("");
    lv.kids = zfi_calloc(1, sizeof *lv.kids);
    char *id = node_file_id(ld, doc);
    if (!lv.prefix || !lv.kids || !id) {
        free(id);
        zfi_level_free(&lv);
        if (!zf_diag_count(ld->diag))
            zfi_oom(ld);
        return;
    }
    lv.cap = lv.n = 1;
    lv.kids[0] = (zfi_kid){.id = id, .at = root, .kind = kind, .leaf = -1};
    if (!(ld->name = zfi_strdup(id)))
        zfi_oom(ld);
    entry_ctx e = {
        .lv = &lv, .ki = 0, .item = root, .field = "", .kind = kind, .settings = ZFI_SETTINGS_INIT};
    if (comp)
        composite(ld, &e, doc);
    else
        leaf(ld, &e, doc);
    zfi_level_free(&lv);
}

void zfi_flatten(zfi_loader *ld, const zfi_doc *doc)
{
    const zf_config *root = doc->root;
    if (zfi_is_node_file(root)) {
        zfi_err(ld, ZF_EINVAL, root, "",
                "this is a node file (it has %s and no 'sources' or 'sinks'), not a flow: a flow "
                "includes it with 'descriptor:' ('zfctl validate' checks a node file on its own)",
                zfi_config_member(root, "inputs")    ? "'inputs'"
                : zfi_config_member(root, "outputs") ? "'outputs'"
                                                     : "an implementation");
        return;
    }
    if (root->kind != ZF_CFG_MAP) {
        zfi_err(ld, ZF_EINVAL, root, "",
                "a flow descriptor is a map (name, sources, operators, sinks, links), found %s",
                zfi_kind_name(root));
        return;
    }
    zfi_known(ld, root, "", "a flow", flow_fields, ZFI_ARRAY_LEN(flow_fields));
    top_fields(ld, root);
    zfi_level lv = {.doc = doc, .inherit = ZFI_SETTINGS_INIT, .what = "flow"};
    const zf_config *top = zfi_config_member(root, "configuration");
    lv.top = zfi_want_map(ld, top, "configuration", false) ? top : NULL;
    if (!(lv.prefix = zfi_strdup(""))) {
        zfi_oom(ld);
        return;
    }
    section(ld, &lv, root, "sources", ZF_SOURCE);
    section(ld, &lv, root, "operators", ZF_OPERATOR);
    section(ld, &lv, root, "sinks", ZF_SINK);
    need(ld, &lv, root, ZF_SOURCE, "sources");
    need(ld, &lv, root, ZF_SINK, "sinks");
    zfi_links(ld, &lv, zfi_config_member(root, "links"));
    zfi_mapping(ld, &lv, zfi_config_member(root, "mapping"));
    zfi_level_free(&lv);
}
