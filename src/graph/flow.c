/* Loading a flow: the entry points, and the zf_flow object's lifetime. */
#include "graph/loader.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void nodes_free(zfi_node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        zfi_node *x = &nodes[i];
        free(x->id);
        free(x->description);
        free(x->library);
        free(x->python);
        zfi_ports_free(x->inputs, x->n_inputs);
        zfi_ports_free(x->outputs, x->n_outputs);
        zfi_config_free(x->config);
        free(x->worker);
    }
    free(nodes);
}

bool zfi_loader_keep(zfi_loader *ld, zfi_doc *doc)
{
    if (!zfi_grow((void **)&ld->docs, &ld->cap_docs, ld->n_docs + 1, sizeof *ld->docs)) {
        zfi_doc_free(doc);
        zfi_err(ld, ZF_ENOMEM, NULL, "", "out of memory while loading the descriptor");
        return false;
    }
    ld->docs[ld->n_docs++] = doc;
    return true;
}

static void loader_free(zfi_loader *ld)
{
    for (size_t i = 0; i < ld->n_docs; i++)
        zfi_doc_free(ld->docs[i]);
    free(ld->docs);
    for (size_t i = 0; i < ld->depth; i++)
        free(ld->stack[i]);
    free(ld->stack);
    for (size_t i = 0; i < ld->n_nodes; i++) {
        free(ld->aux[i].field);
        free(ld->aux[i].in_n);
        free(ld->aux[i].out_n);
        free(ld->aux[i].in_first);
    }
    free(ld->aux);
    nodes_free(ld->nodes, ld->n_nodes);
    free(ld->links);
    free(ld->name);
    zfi_vars_free(&ld->opt_vars);
    zfi_vars_free(&ld->flow_vars);
    zfi_strings_free(ld->strings);
    zf_diag_free(ld->diag);
}

static void option_vars(zfi_loader *ld, const zf_flow_options *opt)
{
    if (!opt)
        return;
    if (opt->n_vars && !opt->vars) {
        zfi_diag_add(ld->diag, ZF_EINVAL, NULL, 0, 0, "vars",
                     "zf_flow_options: n_vars is %zu but vars is NULL", opt->n_vars);
        return;
    }
    for (size_t i = 0; i < opt->n_vars; i++) {
        const char *kv = opt->vars[i], *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv) {
            zfi_diag_add(ld->diag, ZF_EINVAL, NULL, 0, 0, "vars",
                         "option '%s' is not a variable: expected KEY=VALUE", kv ? kv : "(null)");
            continue;
        }
        char *key = zfi_strndup(kv, (size_t)(eq - kv));
        if (!key || !zfi_vars_set(&ld->opt_vars, key, eq + 1))
            ld->oom = true;
        free(key);
    }
}

/* Move the result into a zf_flow, or report. Consumes ld. */
static zf_err finish(zfi_loader *ld, const char *file, const char *dir, zf_diag *diag,
                     zf_flow **out)
{
    size_t n = zf_diag_count(ld->diag);
    zf_err rc = n ? zfi_diag_code(ld->diag, 0) : ld->oom ? ZF_ENOMEM : ZF_OK;
    zf_flow *f = NULL;
    if (!rc) {
        f = zfi_calloc(1, sizeof *f);
        if (f) {
            f->file = zfi_strdup(file);
            f->dir = zfi_strdup(dir);
        }
        if (!f || !f->file || !f->dir) {
            if (f) {
                free(f->file);
                free(f->dir);
            }
            free(f);
            f = NULL;
            rc = zfi_diag_add(ld->diag, ZF_ENOMEM, file, 0, 0, "", "out of memory");
        }
    }
    if (f) {
        atomic_init(&f->refs, 1);
        f->name = ld->name;
        f->nodes = ld->nodes;
        f->n_nodes = ld->n_nodes;
        f->links = ld->links;
        f->n_links = ld->n_links;
        f->max_memory = ld->max_memory;
        f->drain_timeout_ns = ld->drain_ns;
        memcpy(f->instance_id, ld->instance_id, sizeof f->instance_id);
        f->node_file = ld->node_file;
        f->strings = ld->strings;
        ld->name = NULL;
        ld->nodes = NULL;
        ld->links = NULL;
        ld->strings = NULL;
        /* aux entries still need freeing; their nodes moved */
        for (size_t i = 0; i < ld->n_nodes; i++) {
            free(ld->aux[i].field);
            free(ld->aux[i].in_n);
            free(ld->aux[i].out_n);
            free(ld->aux[i].in_first);
        }
        ld->n_nodes = 0;
        zfi_error_clear();
    } else {
        const zf_diag_entry *e = zf_diag_get(ld->diag, 0);
        char *msg = e ? zfi_diag_entry_format(e) : NULL;
        zfi_error(rc, "%s%s", msg ? msg : "cannot load the descriptor",
                  n > 1 ? " (and more problems)" : "");
        free(msg);
    }
    zfi_diag_append(diag, ld->diag);
    loader_free(ld);
    *out = f;
    return rc;
}

static zf_err load(const char *file, const char *dir, const char *canon, const char *text,
                   size_t len, const zf_flow_options *opt, zf_diag *diag, zf_flow **out)
{
    zfi_loader ld = {0};
    ld.diag = zf_diag_new();
    ld.strings = zfi_strings_new();
    if (!ld.diag || !ld.strings) {
        zf_diag_free(ld.diag);
        zfi_strings_free(ld.strings);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    const char *ifile = zfi_strings_intern(ld.strings, file);
    option_vars(&ld, opt);
    if (opt && opt->n_include_dirs && opt->include_dirs) {
        ld.include_dirs = opt->include_dirs;
        ld.n_include_dirs = opt->n_include_dirs;
    }
    if (canon) {
        ld.stack = zfi_calloc(1, sizeof *ld.stack);
        if (ld.stack && (ld.stack[0] = zfi_strdup(canon)))
            ld.depth = ld.cap_stack = 1;
    }
    zfi_doc *doc = NULL;
    zf_err rc = ifile ? ZF_OK : ZF_ENOMEM;
    if (ifile && !zf_diag_count(ld.diag))
        rc = zfi_doc_load(&ld, ifile, dir, text, len, NULL, &ld.opt_vars, &ld.flow_vars, &doc);
    if (doc && zfi_loader_keep(&ld, doc)) {
        if (opt && opt->node_file && zfi_is_node_file(doc->root)) {
            ld.node_file = true;
            zfi_flatten_node_file(&ld, doc);
        } else {
            zfi_flatten(&ld, doc);
            zfi_validate_ports(&ld);
        }
    } else if (!zf_diag_count(ld.diag)) { /* never succeed without a document */
        zfi_diag_add(ld.diag, rc ? rc : ZF_ENOMEM, file, 0, 0, "", "cannot load the descriptor: %s",
                     zf_strerror(rc ? rc : ZF_ENOMEM));
    }
    if (ld.oom && !zf_diag_count(ld.diag))
        zfi_diag_add(ld.diag, ZF_ENOMEM, file, 0, 0, "", "out of memory");
    return finish(&ld, file, dir, diag, out);
}

zf_err zf_flow_load(const char *path, const zf_flow_options *opt, zf_diag *diag, zf_flow **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return zfi_error(ZF_EINVAL, "zf_flow_load: path and out are required");
    char *abs = zfi_path_abs(path);
    char *dir = abs ? zfi_path_dirname(abs) : NULL;
    if (!abs || !dir) {
        free(abs);
        free(dir);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    size_t len = 0;
    int err = 0;
    char *text = zfi_read_file(abs, &len, &err);
    if (!text) {
        zf_err code = err == ENOENT || err == ENOTDIR ? ZF_ENOTFOUND
                      : err == EACCES || err == EPERM ? ZF_EPERM
                      : err == ENOMEM                 ? ZF_ENOMEM
                                                      : ZF_EINVAL;
        const char *why = err == EINVAL  ? "not a regular file"
                          : err == EFBIG ? "larger than 16 MiB"
                                         : strerror(err);
        zfi_diag_add(diag, code, path, 0, 0, "", "cannot read the descriptor: %s", why);
        free(abs);
        free(dir);
        return zfi_error(code, "%s: cannot read the descriptor: %s", path, why);
    }
    char *canon = realpath(abs, NULL);
    zf_err rc = load(abs, dir, canon ? canon : abs, text, len, opt, diag, out);
    free(canon);
    free(text);
    free(abs);
    free(dir);
    return rc;
}

zf_err zf_flow_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                           const zf_flow_options *opt, zf_diag *diag, zf_flow **out)
{
    if (out)
        *out = NULL;
    if ((!text && len) || !out)
        return zfi_error(ZF_EINVAL, "zf_flow_load_string: text and out are required");
    char *dir = zfi_path_abs(base_dir && *base_dir ? base_dir : ".");
    if (!dir)
        return zfi_error(ZF_ENOMEM, "out of memory");
    zf_err rc =
        load(name && *name ? name : "<string>", dir, NULL, text ? text : "", len, opt, diag, out);
    free(dir);
    return rc;
}

void zf_flow_free(zf_flow *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    nodes_free(f->nodes, f->n_nodes);
    free(f->links);
    free(f->name);
    free(f->file);
    free(f->dir);
    zfi_strings_free(f->strings);
    zf_flow_free(f->parent);
    free(f);
}

zf_flow *zfi_flow_ref(const zf_flow *f)
{
    zf_flow *m = (zf_flow *)f;
    if (m)
        atomic_fetch_add(&m->refs, 1);
    return m;
}

const char *zf_flow_name(const zf_flow *f)
{
    return f ? f->name : NULL;
}

bool zf_flow_is_node_file(const zf_flow *f)
{
    return f && f->node_file;
}

const char *zf_flow_instance_id(const zf_flow *f)
{
    return f && f->instance_id[0] ? f->instance_id : NULL;
}

long zfi_flow_find(const zf_flow *f, const char *id)
{
    for (size_t i = 0; f && id && i < f->n_nodes; i++)
        if (!strcmp(f->nodes[i].id, id))
            return (long)i;
    return -1;
}
