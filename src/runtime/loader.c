/* The node loader: dlopen a node library, read its declaration, and check
 * it against the descriptor (ABI version, kind, ports, types). */
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
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

/* The Python host library: $ZF_PYTHON_HOST, else libzflow-python.so next to
 * this libzflow, else where the build put it. */
static void *open_python_host(char *why, size_t whylen)
{
    const char *env = getenv("ZF_PYTHON_HOST");
    char path[4096];
    const char *tried[3];
    size_t n = 0;
    if (env && *env)
        tried[n++] = env;
    Dl_info info;
    if (dladdr((void *)(uintptr_t)open_python_host, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            snprintf(path, sizeof path, "%.*s/libzflow-python.so", (int)(slash - info.dli_fname),
                     info.dli_fname);
            tried[n++] = path;
        }
    }
#ifdef ZF_PYTHON_HOST_PATH
    tried[n++] = ZF_PYTHON_HOST_PATH;
#endif
    why[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        /* RTLD_GLOBAL: extension modules (numpy...) need libpython's symbols. */
        void *dl = dlopen(tried[i], RTLD_NOW | RTLD_GLOBAL);
        if (dl)
            return dl;
        snprintf(why + strlen(why), whylen - strlen(why), "%s%s", why[0] ? "; " : "", dlerror());
    }
    if (!n)
        snprintf(why, whylen, "no Python host library found");
    return NULL;
}

static bool inside(const char *real, char *const *dirs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strncmp(real, dirs[i], strlen(dirs[i])))
            return true;
    return false;
}

static zf_err outside(zf_diag *diag, const zfi_node *nd, const char *f, const char *field,
                      const char *real)
{
    return zfi_diag_add(diag, ZF_EPERM, f, nd->line, nd->col, field,
                        "node '%s': %s is outside the folders node code may load from", nd->id,
                        real);
}

static zf_err load_python(const zfi_node *nd, const char *f, char *const *dirs, size_t n_dirs,
                          zfi_loaded *out, zf_diag *diag)
{
    if (n_dirs) {
        char *real = realpath(nd->python, NULL);
        bool ok = real && inside(real, dirs, n_dirs);
        zf_err e = ok ? ZF_OK : outside(diag, nd, f, "python", real ? real : nd->python);
        free(real);
        if (e != ZF_OK)
            return e;
    }
    if (access(nd->python, R_OK) != 0)
        return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, "python",
                            "node '%s': Python file %s does not exist or is not readable", nd->id,
                            nd->python);
    char why[1024];
    void *dl = open_python_host(why, sizeof why);
    if (!dl)
        return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, "python",
                            "node '%s': Python nodes need the Python host "
                            "(libzflow-python.so, built when python3-dev is installed): %s",
                            nd->id, why);
    zf_host_declare_fn declare = (zf_host_declare_fn)(uintptr_t)dlsym(dl, ZF_HOST_SYMBOL);
    zf_host_free_fn host_free = (zf_host_free_fn)(uintptr_t)dlsym(dl, ZF_HOST_FREE_SYMBOL);
    zf_err err = ZF_OK;
    zf_port_decl *in = zfi_calloc(nd->n_inputs, sizeof *in);
    zf_port_decl *outp = zfi_calloc(nd->n_outputs, sizeof *outp);
    out->in_map = zfi_calloc(nd->n_inputs, sizeof *out->in_map);
    out->out_map = zfi_calloc(nd->n_outputs, sizeof *out->out_map);
    if (!declare || !host_free || !in || !outp || !out->in_map || !out->out_map) {
        err = zfi_diag_add(diag, ZF_EABI, f, nd->line, nd->col, "python",
                           "node '%s': the Python host library is incomplete or memory ran out",
                           nd->id);
        goto done;
    }
    for (size_t i = 0; i < nd->n_inputs; i++) {
        in[i] = (zf_port_decl){nd->inputs[i].name, nd->inputs[i].type};
        out->in_map[i] = i;
    }
    for (size_t i = 0; i < nd->n_outputs; i++) {
        outp[i] = (zf_port_decl){nd->outputs[i].name, nd->outputs[i].type};
        out->out_map[i] = i;
    }
    char msg[512] = "";
    const zf_node_decl *decl = NULL;
    zf_err e = declare(nd->python, nd->kind, in, nd->n_inputs, outp, nd->n_outputs, &decl, msg,
                       sizeof msg);
    if (e != ZF_OK || !decl) {
        err = zfi_diag_add(diag, e != ZF_OK ? e : ZF_EABI, f, nd->line, nd->col, "python",
                           "node '%s': %s", nd->id, msg[0] ? msg : "the Python host refused it");
        goto done;
    }
    out->dl = dl;
    out->decl = decl;
    out->host_free = host_free;
done:
    free(in);
    free(outp);
    if (err != ZF_OK) {
        free(out->in_map);
        free(out->out_map);
        out->in_map = out->out_map = NULL;
        dlclose(dl);
    }
    return err;
}

zf_err zfi_load_node(const zfi_node *nd, const char *file, char *const *code_dirs,
                     size_t n_code_dirs, zfi_loaded *out, zf_diag *diag)
{
    memset(out, 0, sizeof *out);
    const char *f = nd->file ? nd->file : file;
    if (nd->python)
        return load_python(nd, f, code_dirs, n_code_dirs, out, diag);
    if (!nd->library)
        return zfi_diag_add(diag, ZF_EINVAL, f, nd->line, nd->col, "library",
                            "node '%s' has no library", nd->id);
    if (access(nd->library, R_OK) != 0)
        return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, "library",
                            "node '%s': library %s does not exist or is not readable", nd->id,
                            nd->library);
    dlerror();
    void *dl;
    if (n_code_dirs) {
        /* Resolve the path through the file opened, check the real path, and
         * load by that real path (inside the allowed folders, which clients
         * cannot write): a symlink swapped after the check changes nothing.
         * (Not dlopen("/proc/self/fd/N"): the loader would take every such
         * name for the library first loaded under it.) */
        int fd = open(nd->library, O_RDONLY | O_CLOEXEC);
        char proc[64], real[4096];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        ssize_t k = fd >= 0 ? readlink(proc, real, sizeof real - 1) : -1;
        if (k <= 0) {
            if (fd >= 0)
                close(fd);
            return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, "library",
                                "node '%s': cannot open %s", nd->id, nd->library);
        }
        real[k] = '\0';
        if (!inside(real, code_dirs, n_code_dirs)) {
            close(fd);
            return outside(diag, nd, f, "library", real);
        }
        dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
        close(fd);
    } else {
        dl = dlopen(nd->library, RTLD_NOW | RTLD_LOCAL);
    }
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
    if (l->host_free && l->decl)
        l->host_free(l->decl);
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
        zf_err e = zfi_load_node(&f->nodes[i], f->file, NULL, 0, &l, diag);
        if (e == ZF_OK)
            zfi_unload_node(&l, false);
        else if (first == ZF_OK)
            first = e;
    }
    return first;
}
