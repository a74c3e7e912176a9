/* The node loader: dlopen a node library, read its declaration, and check
 * it against the descriptor (ABI version, kind, ports, types). */
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZFI_MAX_CODE_BYTES (16u << 20) /* a Python file */

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

/* Open node code once: a regular file (a FIFO or a device would block or
 * never end), resolved through the descriptor opened to its real path; with
 * code_dirs, that real path must lie in one of them and, unless
 * allow_writable, the file and every folder above it must be changeable only
 * by root or this user. On success *fd is the open file and real its path;
 * what the check approved is exactly what gets used. */
static zf_err open_code(const zfi_node *nd, const char *f, const char *field, const char *path,
                        char *const *dirs, size_t n_dirs, bool allow_writable, int *fd,
                        char real[4096], zf_diag *diag)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0)
        return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, field,
                            "node '%s': %s %s does not exist or is not readable (%s)", nd->id,
                            field[0] == 'p' ? "Python file" : "library", path, strerror(errno));
    struct stat st;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", *fd);
    ssize_t k = readlink(proc, real, 4095);
    zf_err e = ZF_OK;
    if (fstat(*fd, &st) != 0 || k <= 0) {
        e = zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, field,
                         "node '%s': cannot open %s", nd->id, path);
        goto fail;
    }
    real[k] = '\0';
    if (!S_ISREG(st.st_mode)) {
        e = zfi_diag_add(diag, ZF_EINVAL, f, nd->line, nd->col, field,
                         "node '%s': %s is not a regular file (%s); expected a %s", nd->id, path,
                         S_ISDIR(st.st_mode)    ? "a folder"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "a device",
                         field[0] == 'p' ? "Python file" : "shared library");
        goto fail;
    }
    fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
    if (!n_dirs)
        return ZF_OK;
    if (!inside(real, dirs, n_dirs)) {
        e = outside(diag, nd, f, field, real);
        goto fail;
    }
    if (!allow_writable && zfi_trust_check(real, &st) != ZF_OK) {
        e = zfi_diag_add(diag, ZF_EPERM, f, nd->line, nd->col, field, "node '%s': %s", nd->id,
                         zf_last_error());
        goto fail;
    }
    return ZF_OK;
fail:
    close(*fd);
    *fd = -1;
    return e;
}

/* The whole of a Python file (read from the descriptor the check approved:
 * exactly what runs). */
static char *read_code(int fd, size_t *len)
{
    zfi_buf b;
    zfi_buf_init(&b);
    char chunk[65536];
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 || (k > 0 && b.len + (size_t)k > ZFI_MAX_CODE_BYTES)) {
            zfi_buf_free(&b);
            return NULL;
        }
        if (k == 0)
            break;
        zfi_buf_append(&b, chunk, (size_t)k);
    }
    *len = b.len;
    return b.s ? b.s : zfi_strdup("");
}

static zf_err load_python(const zfi_node *nd, const char *f, char *const *dirs, size_t n_dirs,
                          bool allow_writable, zfi_loaded *out, zf_diag *diag)
{
    int fd;
    char real[4096];
    zf_err oe =
        open_code(nd, f, "python", nd->python, dirs, n_dirs, allow_writable, &fd, real, diag);
    if (oe != ZF_OK)
        return oe;
    size_t code_len = 0;
    char *code = read_code(fd, &code_len);
    close(fd);
    if (!code)
        return zfi_diag_add(diag, ZF_EINVAL, f, nd->line, nd->col, "python",
                            "node '%s': cannot read %s (or it is larger than %u bytes)", nd->id,
                            real, (unsigned)ZFI_MAX_CODE_BYTES);
    char why[1024];
    void *dl = open_python_host(why, sizeof why);
    if (!dl) {
        free(code);
        return zfi_diag_add(diag, ZF_ENOTFOUND, f, nd->line, nd->col, "python",
                            "node '%s': Python nodes need the Python host "
                            "(libzflow-python.so, built when python3-dev is installed): %s",
                            nd->id, why);
    }
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
    zf_err e = declare(nd->python, real, code, code_len, nd->kind, in, nd->n_inputs, outp,
                       nd->n_outputs, &decl, msg, sizeof msg);
    if (e != ZF_OK || !decl) {
        err = zfi_diag_add(diag, e != ZF_OK ? e : ZF_EABI, f, nd->line, nd->col, "python",
                           "node '%s': %s", nd->id, msg[0] ? msg : "the Python host refused it");
        goto done;
    }
    out->dl = dl;
    out->decl = decl;
    out->host_free = host_free;
done:
    free(code);
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
                     size_t n_code_dirs, bool allow_writable, zfi_loaded *out, zf_diag *diag)
{
    memset(out, 0, sizeof *out);
    const char *f = nd->file ? nd->file : file;
    if (nd->python)
        return load_python(nd, f, code_dirs, n_code_dirs, allow_writable, out, diag);
    if (!nd->library)
        return zfi_diag_add(diag, ZF_EINVAL, f, nd->line, nd->col, "library",
                            "node '%s' has no library", nd->id);
    int fd;
    char real[4096];
    zf_err oe = open_code(nd, f, "library", nd->library, code_dirs, n_code_dirs, allow_writable,
                          &fd, real, diag);
    if (oe != ZF_OK)
        return oe;
    /* With code_dirs, load by the real path the check approved (inside the
     * allowed folders, which no one else can write): a symlink swapped
     * after the check changes nothing. (Not dlopen("/proc/self/fd/N"): the
     * loader would take every such name for the library first loaded under
     * it.) */
    dlerror();
    void *dl = dlopen(n_code_dirs ? real : nd->library, RTLD_NOW | RTLD_LOCAL);
    close(fd);
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
        zf_err e = f->nodes[i].builtin || f->nodes[i].builtin_name
                       ? zfi_builtin_node(&f->nodes[i], &l, diag)
                       : zfi_load_node(&f->nodes[i], f->file, NULL, 0, false, &l, diag);
        if (e == ZF_OK)
            zfi_unload_node(&l, false);
        else if (first == ZF_OK)
            first = e;
    }
    return first;
}

/* Built-in nodes found by name (registered by the layers that implement
 * them, at load time: src/cluster/dds_io.c). */
static struct {
    const char *name;
    zfi_builtin_make make;
    zf_host_free_fn free;
} named[8];
static _Atomic size_t n_named;
static pthread_mutex_t named_mu = PTHREAD_MUTEX_INITIALIZER;

void zfi_builtin_register(const char *name, zfi_builtin_make make, zf_host_free_fn free_decl)
{
    pthread_mutex_lock(&named_mu);
    size_t n = atomic_load(&n_named);
    if (n < ZFI_ARRAY_LEN(named)) {
        named[n].name = name;
        named[n].make = make;
        named[n].free = free_decl;
        atomic_store(&n_named, n + 1);
    }
    pthread_mutex_unlock(&named_mu);
}

zf_err zfi_builtin_node(const zfi_node *nd, zfi_loaded *out, zf_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->decl = nd->builtin;
    size_t n = atomic_load(&n_named);
    bool known = false;
    for (size_t i = 0; !out->decl && nd->builtin_name && i < n; i++)
        if (!strcmp(named[i].name, nd->builtin_name) && (known = true) &&
            (out->decl = named[i].make(nd)))
            out->host_free = named[i].free;
    if (!out->decl && known) /* make failed: zf_last_error says why (a module missing...) */
        return zfi_diag_add(diag, ZF_ENOTFOUND, nd->file, nd->line, nd->col, "",
                            "node '%s': the built-in node '%s' is not available: %s", nd->id,
                            nd->builtin_name, zf_last_error());
    if (!out->decl)
        return zfi_diag_add(diag, ZF_ENOTFOUND, nd->file, nd->line, nd->col, "",
                            "node '%s': the built-in node '%s' is not in this build", nd->id,
                            nd->builtin_name ? nd->builtin_name : "?");
    out->in_map = zfi_calloc(nd->n_inputs + 1, sizeof *out->in_map);
    out->out_map = zfi_calloc(nd->n_outputs + 1, sizeof *out->out_map);
    if (!out->in_map || !out->out_map) {
        zfi_unload_node(out, false);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nd->n_inputs; i++)
        out->in_map[i] = i;
    for (size_t i = 0; i < nd->n_outputs; i++)
        out->out_map[i] = i;
    return ZF_OK;
}
