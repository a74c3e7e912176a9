/* The node loader: dlopen a node library, read its declaration, and check
 * it against the descriptor (ABI version, kind, ports, types). */
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool type_any(const char *t)
{
    return !t || !*t || strcmp(t, "any") == 0;
}

static bool types_agree(const char *a, const char *b)
{
    return type_any(a) || type_any(b) || strcmp(a, b) == 0;
}

static void list_ports(zfi_buf *b, const zf_port_decl *p, size_t n)
{
    if (!n)
        zfi_buf_puts(b, "none");
    for (size_t i = 0; i < n; i++)
        zfi_buf_printf(b, "%s%s", i ? ", " : "", p[i].name ? p[i].name : "(null)");
}

/* Map descriptor ports to library ports by name; report every mismatch. */
static zf_err map_ports(const zfi_node *nd, const char *what, const zfi_port *dp, size_t dn,
                        const zf_port_decl *lp, size_t ln, size_t **map_out, zf_diag *diag)
{
    zf_err err = ZF_OK;
    size_t *map = zfi_calloc(dn, sizeof *map);
    if (!map)
        return zfi_error(ZF_ENOMEM, "out of memory");
    for (size_t i = 0; i < dn; i++) {
        size_t j;
        for (j = 0; j < ln; j++)
            if (lp[j].name && strcmp(lp[j].name, dp[i].name) == 0)
                break;
        if (j == ln) {
            zfi_buf b;
            zfi_buf_init(&b);
            list_ports(&b, lp, ln);
            err = zfi_diag_add(diag, ZF_ETYPE, nd->file, dp[i].line ? dp[i].line : nd->line,
                               dp[i].line ? dp[i].col : nd->col, what,
                               "node '%s': library %s has no %s port '%s' (it declares: %s)",
                               nd->id, nd->library, what, dp[i].name, b.s ? b.s : "");
            zfi_buf_free(&b);
            continue;
        }
        if (!types_agree(dp[i].type, lp[j].type))
            err = zfi_diag_add(diag, ZF_ETYPE, nd->file, dp[i].line ? dp[i].line : nd->line,
                               dp[i].line ? dp[i].col : nd->col, what,
                               "node '%s': %s port '%s' has type '%s' in the descriptor but "
                               "'%s' in library %s",
                               nd->id, what, dp[i].name, dp[i].type, lp[j].type, nd->library);
        map[i] = j;
    }
    for (size_t j = 0; j < ln; j++) {
        bool found = false;
        for (size_t i = 0; i < dn && !found; i++)
            found = lp[j].name && strcmp(lp[j].name, dp[i].name) == 0;
        if (!found)
            err = zfi_diag_add(diag, ZF_ETYPE, nd->file, nd->line, nd->col, what,
                               "node '%s': library %s declares %s port '%s', which the "
                               "descriptor does not list",
                               nd->id, nd->library, what, lp[j].name ? lp[j].name : "(null)");
    }
    if (err != ZF_OK) {
        free(map);
        return err;
    }
    *map_out = map;
    return ZF_OK;
}

zf_err zfi_load_node(const zfi_node *nd, const char *file, zfi_loaded *out, zf_diag *diag)
{
    memset(out, 0, sizeof *out);
    const char *f = nd->file ? nd->file : file;
    if (nd->python)
        return zfi_diag_add(diag, ZF_EINVAL, f, nd->line, nd->col, "python",
                            "node '%s': Python nodes are not available in this build", nd->id);
    if (!nd->library)
        return zfi_diag_add(diag, ZF_EINVAL, f, nd->line, nd->col, "library",
                            "node '%s' has no library", nd->id);
    if (access(nd->library, R_OK) != 0)
        return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, "library",
                            "node '%s': library %s does not exist or is not readable", nd->id,
                            nd->library);
    dlerror();
    void *dl = dlopen(nd->library, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return zfi_diag_add(diag, ZF_EABI, f, nd->line, nd->col, "library",
                            "node '%s': cannot load %s: %s", nd->id, nd->library, dlerror());
    zf_err err;
    zf_node_declare_fn fn = (zf_node_declare_fn)(uintptr_t)dlsym(dl, ZF_NODE_SYMBOL);
    if (!fn) {
        err = zfi_diag_add(diag, ZF_EABI, f, nd->line, nd->col, "library",
                           "node '%s': %s is not a zflow node: it does not export %s() (use "
                           "ZF_NODE_EXPORT)",
                           nd->id, nd->library, ZF_NODE_SYMBOL);
        goto fail;
    }
    const zf_node_decl *decl = fn();
    if (!decl) {
        err = zfi_diag_add(diag, ZF_EABI, f, nd->line, nd->col, "library",
                           "node '%s': %s() in %s returned NULL", nd->id, ZF_NODE_SYMBOL,
                           nd->library);
        goto fail;
    }
    if (decl->abi != ZF_ABI_VERSION) {
        err = zfi_diag_add(diag, ZF_EABI, f, nd->line, nd->col, "library",
                           "node '%s': %s was built for zflow node ABI %u, this runtime "
                           "speaks ABI %u; rebuild the node against this zflow",
                           nd->id, nd->library, decl->abi, ZF_ABI_VERSION);
        goto fail;
    }
    if (decl->kind != nd->kind) {
        err = zfi_diag_add(diag, ZF_ETYPE, f, nd->line, nd->col, "library",
                           "node '%s' is declared as a %s in the descriptor, but %s declares "
                           "a node of kind %s",
                           nd->id, zf_node_kind_name(nd->kind), nd->library,
                           zf_node_kind_name(decl->kind));
        goto fail;
    }
    if ((decl->kind != ZF_SOURCE && !decl->on_input) || (decl->n_inputs && !decl->inputs) ||
        (decl->n_outputs && !decl->outputs)) {
        err =
            zfi_diag_add(diag, ZF_EABI, f, nd->line, nd->col, "library",
                         "node '%s': the declaration in %s is incomplete (%s)", nd->id, nd->library,
                         decl->kind != ZF_SOURCE && !decl->on_input ? "no on_input callback"
                                                                    : "port array missing");
        goto fail;
    }
    zf_err e1 = map_ports(nd, "input", nd->inputs, nd->n_inputs, decl->inputs, decl->n_inputs,
                          &out->in_map, diag);
    zf_err e2 = map_ports(nd, "output", nd->outputs, nd->n_outputs, decl->outputs, decl->n_outputs,
                          &out->out_map, diag);
    if (e1 != ZF_OK || e2 != ZF_OK) {
        err = e1 != ZF_OK ? e1 : e2;
        free(out->in_map);
        free(out->out_map);
        out->in_map = out->out_map = NULL;
        goto fail;
    }
    out->dl = dl;
    out->decl = decl;
    return ZF_OK;
fail:
    dlclose(dl);
    return err;
}

void zfi_unload_node(zfi_loaded *l, bool keep_mapped)
{
    free(l->in_map);
    free(l->out_map);
    if (l->dl && !keep_mapped)
        dlclose(l->dl);
    memset(l, 0, sizeof *l);
}

zf_err zf_flow_check_libraries(const zf_flow *f, zf_diag *diag)
{
    if (!f)
        return zfi_error(ZF_EINVAL, "zf_flow_check_libraries: NULL flow");
    zf_err first = ZF_OK;
    for (size_t i = 0; i < f->n_nodes; i++) {
        zfi_loaded l;
        zf_err e = zfi_load_node(&f->nodes[i], f->file, &l, diag);
        if (e == ZF_OK)
            zfi_unload_node(&l, false);
        else if (first == ZF_OK)
            first = e;
    }
    return first;
}
