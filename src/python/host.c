/* The Python node host: libzflow-python.so, loaded by the runtime for
 * `python:` nodes (src/runtime/loader.c). It embeds CPython in the runtime's
 * process and exports the language-host entry points of zflow.h:
 *
 *   zf_host_declare  run the script's text the runtime read and checked, as
 *                    a module (the real file's folder on sys.path, never a
 *                    link's), find its node class, and declare a node with
 *                    the descriptor's kind and ports whose callbacks run
 *                    that class
 *   zf_host_free     forget the declaration
 *
 * The interpreter starts once per process (pthread_once), without signal
 * handlers, and gives the GIL up at once: the GIL is held only while Python
 * code runs (a callback, a release of pinned Python memory). Each runtime
 * worker gets a Python thread state the first time it runs Python, kept
 * until the thread exits. The interpreter is never finalized (extension
 * modules cannot be unloaded safely), and this library is linked with
 * -z nodelete, so a capsule pinning Python memory can be released at any
 * time, even after the node that sent it was unloaded.
 *
 * Node callbacks:
 *   init      Class(context, configuration) (configuration: a dict)
 *   on_input  obj.on_input(port_name, data): data is a read-only memoryview
 *             over the capsule, released when the call returns
 *   produce   obj.produce()
 *   fini      obj.close() if it exists; then every reference is dropped
 *             and a garbage collection runs, inside fini, so capsules the
 *             node kept are released before the stop report counts them
 * A Python exception becomes ZF_ENODE (or a zflow.Error's own code) with a
 * one-line description (type, message, innermost frames) given to
 * zf_node_set_error; the full traceback is logged (the node's first error
 * at warn level, later ones at debug level). */
#include "pyhost.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PYHOST_EXPORT __attribute__((visibility("default")))

PYHOST_EXPORT zf_err zf_host_declare(const char *script, const char *origin, const char *code,
                                     size_t code_len, zf_node_kind kind, const zf_port_decl *inputs,
                                     size_t n_inputs, const zf_port_decl *outputs, size_t n_outputs,
                                     const zf_node_decl **out, char *err, size_t errlen);
PYHOST_EXPORT void zf_host_free(const zf_node_decl *decl);

/* ------------------------------------------------------------------ */
/* interpreter and GIL                                                 */
/* ------------------------------------------------------------------ */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char init_error[512];
static pthread_key_t tstate_key;
static _Thread_local bool tls_warm;
static _Thread_local zf_node *tls_cb_node;

zf_node *pyz_callback_node(void)
{
    return tls_cb_node;
}

/* A runtime thread exits: delete the thread state it was given. */
static void tstate_exit(void *arg)
{
    PyThreadState *ts = arg;
    if (!ts || !Py_IsInitialized())
        return;
    PyEval_RestoreThread(ts);
    PyThreadState_Clear(ts);
    PyThreadState_DeleteCurrent();
}

PyGILState_STATE pyz_gil_enter(void)
{
    if (!tls_warm) {
        tls_warm = true;
        if (!PyGILState_GetThisThreadState()) {
            /* A thread Python does not know: give it a thread state for
             * good (PyGILState_Ensure with nothing to match it), so the
             * Ensure/Release pairs below never create and destroy one. */
            PyGILState_Ensure();
            pthread_setspecific(tstate_key, PyThreadState_Get());
            PyEval_SaveThread();
        }
    }
    return PyGILState_Ensure();
}

void pyz_gil_leave(PyGILState_STATE s)
{
    PyGILState_Release(s);
}

/* "ValueError: boom [at x.py:3 in f]" for the pending exception (cleared),
 * and its full traceback in *full (malloc'd, or NULL). */
static char *describe_pending(char **full)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
        PyException_SetTraceback(value, tb);
    char *line = NULL;
    if (full)
        *full = NULL;
    PyObject *describe = pyz_helper("_describe");
    PyObject *r = value && describe ? PyObject_CallOneArg(describe, value) : NULL;
    if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2) {
        const char *l = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 0));
        const char *f = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 1));
        line = l ? strdup(l) : NULL;
        if (full && f)
            *full = strdup(f);
    }
    if (!line) {
        PyErr_Clear();
        PyObject *s = value ? PyObject_Str(value) : NULL;
        const char *t = s ? PyUnicode_AsUTF8(s) : NULL;
        char buf[512];
        snprintf(buf, sizeof buf, "%s: %s",
                 type && PyType_Check(type) ? ((PyTypeObject *)type)->tp_name : "exception",
                 t ? t : "(no message)");
        line = strdup(buf);
        Py_XDECREF(s);
    }
    Py_XDECREF(r);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return line;
}

static void init_python(void)
{
    if (pthread_key_create(&tstate_key, tstate_exit) != 0) {
        snprintf(init_error, sizeof init_error, "cannot create a thread key");
        return;
    }
    bool ours = !Py_IsInitialized();
    if (ours) {
#if defined(ZF_SANITIZE_ADDRESS)
        /* Under AddressSanitizer every Python allocation goes through
         * malloc (as PYTHONMALLOC=malloc does): pymalloc's arenas are
         * mmap'd, so LeakSanitizer would not see the pointers they hold. */
        if (!getenv("PYTHONMALLOC")) {
            PyPreConfig pre;
            PyPreConfig_InitPythonConfig(&pre);
            pre.allocator = PYMEM_ALLOCATOR_MALLOC;
            PyStatus ps = Py_PreInitialize(&pre);
            if (PyStatus_Exception(ps)) {
                snprintf(init_error, sizeof init_error, "cannot start the Python interpreter: %s",
                         ps.err_msg ? ps.err_msg : "pre-initialization failed");
                return;
            }
        }
#endif
        PyConfig cfg;
        PyConfig_InitPythonConfig(&cfg);
        cfg.install_signal_handlers = 0; /* the application owns its signals */
        cfg.parse_argv = 0;
        PyStatus st = PyStatus_Ok();
#ifdef ZF_PYTHON_EXECUTABLE
        /* Find the standard library of the Python this host was built
         * against, not of whatever `python3` comes first on PATH. */
        if (!getenv("PYTHONHOME"))
            st = PyConfig_SetBytesString(&cfg, &cfg.program_name, ZF_PYTHON_EXECUTABLE);
#endif
        if (!PyStatus_Exception(st))
            st = Py_InitializeFromConfig(&cfg);
        PyConfig_Clear(&cfg);
        if (PyStatus_Exception(st)) {
            snprintf(init_error, sizeof init_error, "cannot start the Python interpreter: %s%s%s",
                     st.func ? st.func : "", st.func ? ": " : "",
                     st.err_msg ? st.err_msg : "unknown error");
            return;
        }
    }
    PyGILState_STATE g = ours ? PyGILState_LOCKED : PyGILState_Ensure();
    if (!pyz_module_create()) {
        char *line = describe_pending(NULL);
        snprintf(init_error, sizeof init_error, "cannot create the zflow module: %s",
                 line ? line : "?");
        free(line);
    }
    if (ours)
        PyEval_SaveThread(); /* the GIL is free from now on */
    else
        PyGILState_Release(g);
}

/* ------------------------------------------------------------------ */
/* declarations                                                        */
/* ------------------------------------------------------------------ */

typedef struct pyz_decl {
    zf_node_decl decl; /* first: zf_host_free gets &decl back */
    char *script;
    char *modname;
    zf_port_decl *inputs, *outputs;
    size_t n_in, n_out;
    PyObject *module, *factory;
    atomic_uint refs;      /* the runtime's + one per init running with it */
    unsigned claims;       /* nodes initialized with it (under reg_mu) */
    struct pyz_decl *next; /* the registry (under reg_mu) */
} pyz_decl;

/* The runtime gives init only the node: the declaration is found again by
 * script and ports in this registry (declarations of one script with the
 * same ports are interchangeable: each node gets the least used). */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pyz_decl *registry;
static atomic_uint module_seq;

static void free_ports(zf_port_decl *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        free((char *)p[i].name);
        free((char *)p[i].type);
    }
    free(p);
}

static zf_port_decl *copy_ports(const zf_port_decl *p, size_t n, bool *ok)
{
    zf_port_decl *c = calloc(n ? n : 1, sizeof *c);
    if (!c) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        c[i].name = strdup(p[i].name ? p[i].name : "");
        c[i].type = p[i].type ? strdup(p[i].type) : NULL;
        if (!c[i].name || (p[i].type && !c[i].type))
            *ok = false;
    }
    return c;
}

/* Free a declaration's memory; the GIL is held. */
static void decl_destroy(pyz_decl *pd)
{
    if (pd->modname && (pd->module || pd->factory)) {
        PyObject *modules = PyImport_GetModuleDict();
        PyObject *m = modules ? PyDict_GetItemString(modules, pd->modname) : NULL;
        if (m && m == pd->module && PyDict_DelItemString(modules, pd->modname) < 0)
            PyErr_Clear();
    }
    Py_CLEAR(pd->factory);
    Py_CLEAR(pd->module);
    free_ports(pd->inputs, pd->n_in);
    free_ports(pd->outputs, pd->n_out);
    free(pd->script);
    free(pd->modname);
    free(pd);
}

/* Drop one reference; the GIL is held. */
static void decl_unref(pyz_decl *pd)
{
    if (atomic_fetch_sub(&pd->refs, 1) == 1)
        decl_destroy(pd);
}

static zf_err py_init(zf_node *n, void **state);
static void py_fini(void *state);
static zf_err py_produce(void *state, zf_node *n);
static zf_err py_on_input(void *state, zf_node *n, unsigned port, zf_data **d);

/* "zflow_node_<stem>_<n>": a fresh module name per declaration, so two
 * nodes running one script do not share module-level state. */
static char *module_name(const char *script)
{
    const char *base = strrchr(script, '/');
    base = base ? base + 1 : script;
    char stem[64];
    size_t k = 0;
    for (const char *p = base; *p && *p != '.' && k < sizeof stem - 1; p++)
        stem[k++] =
            (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
                       ? *p
                       : '_');
    stem[k] = '\0';
    char buf[128];
    snprintf(buf, sizeof buf, "zflow_node_%s_%u", stem, atomic_fetch_add(&module_seq, 1) + 1);
    return strdup(buf);
}

zf_err zf_host_declare(const char *script, const char *origin, const char *code, size_t code_len,
                       zf_node_kind kind, const zf_port_decl *inputs, size_t n_inputs,
                       const zf_port_decl *outputs, size_t n_outputs, const zf_node_decl **out,
                       char *err, size_t errlen)
{
    if (!script || !origin || (!code && code_len) || !out || (n_inputs && !inputs) ||
        (n_outputs && !outputs)) {
        snprintf(err, errlen, "zf_host_declare: invalid arguments");
        return ZF_EINVAL;
    }
    *out = NULL;
    pthread_once(&init_once, init_python);
    if (init_error[0]) {
        snprintf(err, errlen, "%s", init_error);
        return ZF_ESYS;
    }
    pyz_decl *pd = calloc(1, sizeof *pd);
    bool ok = pd != NULL;
    if (pd) {
        pd->script = strdup(script);
        pd->modname = module_name(script);
        pd->inputs = copy_ports(inputs, n_inputs, &ok);
        pd->outputs = copy_ports(outputs, n_outputs, &ok);
        pd->n_in = n_inputs;
        pd->n_out = n_outputs;
        atomic_init(&pd->refs, 1);
        ok = ok && pd->script && pd->modname;
    }
    PyGILState_STATE g = pyz_gil_enter();
    zf_err e = ZF_OK;
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        e = ZF_ENOMEM;
        goto done;
    }
    PyObject *load = pyz_helper("_load");
    PyObject *r =
        load ? PyObject_CallFunction(load, "sssy#", origin, pd->modname, zf_node_kind_name(kind),
                                     code ? code : "", (Py_ssize_t)code_len)
             : NULL;
    if (!r || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3) {
        bool syntax = PyErr_ExceptionMatches(PyExc_SyntaxError);
        bool type = PyErr_ExceptionMatches(PyExc_TypeError);
        char *line = PyErr_Occurred() ? describe_pending(NULL) : NULL;
        snprintf(err, errlen, "cannot load %s: %s", script, line ? line : "unexpected result");
        free(line);
        Py_XDECREF(r);
        e = syntax ? ZF_EPARSE : type ? ZF_ETYPE : ZF_EINVAL;
        goto done;
    }
    pd->module = Py_NewRef(PyTuple_GET_ITEM(r, 0));
    pd->factory = Py_NewRef(PyTuple_GET_ITEM(r, 1));
    bool has_produce = PyObject_IsTrue(PyTuple_GET_ITEM(r, 2)) == 1;
    Py_DECREF(r);
    const char *base = strrchr(pd->script, '/');
    pd->decl.abi = ZF_ABI_VERSION;
    pd->decl.kind = kind;
    pd->decl.name = base ? base + 1 : pd->script;
    pd->decl.inputs = pd->inputs;
    pd->decl.n_inputs = n_inputs;
    pd->decl.outputs = pd->outputs;
    pd->decl.n_outputs = n_outputs;
    pd->decl.init = py_init;
    pd->decl.fini = py_fini;
    pd->decl.produce = kind == ZF_SOURCE && has_produce ? py_produce : NULL;
    pd->decl.on_input = kind == ZF_SOURCE ? NULL : py_on_input;
    pthread_mutex_lock(&reg_mu);
    pd->next = registry;
    registry = pd;
    pthread_mutex_unlock(&reg_mu);
    *out = &pd->decl;
done:
    if (e != ZF_OK && pd)
        decl_destroy(pd);
    pyz_gil_leave(g);
    return e;
}

void zf_host_free(const zf_node_decl *decl)
{
    if (!decl)
        return;
    pyz_decl *pd = (pyz_decl *)(uintptr_t)decl;
    pthread_mutex_lock(&reg_mu);
    for (pyz_decl **p = &registry; *p; p = &(*p)->next)
        if (*p == pd) {
            *p = pd->next;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    PyGILState_STATE g = pyz_gil_enter();
    decl_unref(pd);
    pyz_gil_leave(g);
}

/* The declaration node `n` was loaded with (one reference for the caller),
 * or NULL. No Python runs under reg_mu. */
static pyz_decl *claim_decl(zf_node *n)
{
    const char *src = zf_node_source(n);
    pyz_decl *best = NULL;
    pthread_mutex_lock(&reg_mu);
    for (pyz_decl *p = registry; src && p; p = p->next) {
        if (strcmp(p->script, src) != 0)
            continue;
        bool same = true;
        for (size_t i = 0; same && i < p->n_in; i++)
            same = zf_node_input(n, p->inputs[i].name) == (int)i;
        for (size_t i = 0; same && i < p->n_out; i++)
            same = zf_node_output(n, p->outputs[i].name) == (int)i;
        if (same && (!best || p->claims < best->claims))
            best = p;
    }
    if (best) {
        best->claims++;
        atomic_fetch_add(&best->refs, 1);
    }
    pthread_mutex_unlock(&reg_mu);
    return best;
}

/* ------------------------------------------------------------------ */
/* node callbacks                                                      */
/* ------------------------------------------------------------------ */

typedef struct pyz_state {
    zf_node *node;
    PyObject *module, *obj, *ctx;
    PyObject *on_input, *produce, *close;
    PyObject *in_names; /* borrowed from ctx: port name per input index */
    uint64_t errors;
} pyz_state;

/* The pending exception -> the node's error (one line) and the log (the
 * traceback); returns the code for the runtime. The GIL is held. */
static zf_err node_error(pyz_state *st, zf_node *n, const char *where)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    zf_err code = value ? pyz_error_code(value) : ZF_ENODE;
    PyErr_Restore(type, value, tb);
    char *full = NULL;
    char *line = describe_pending(&full);
    zf_node_set_error(n, "%s: %s", where, line ? line : "Python exception");
    bool quiet = code == ZF_ECLOSED && zf_node_stopping(n);
    if (!quiet && full) {
        zf_log_level level = st && st->errors++ ? ZF_LOG_DEBUG : ZF_LOG_WARN;
        zf_node_log(n, level, "Python exception in %s:", where);
        for (char *save = NULL, *l = strtok_r(full, "\n", &save); l;
             l = strtok_r(NULL, "\n", &save))
            zf_node_log(n, level, "%s", l);
    }
    free(line);
    free(full);
    return code == ZF_OK ? ZF_ENODE : code;
}

static PyObject *method_of(PyObject *obj, const char *name)
{
    PyObject *m = PyObject_GetAttrString(obj, name);
    if (!m) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyCallable_Check(m))
        Py_CLEAR(m);
    return m;
}

static void state_clear(pyz_state *st)
{
    pyz_context_close(st->ctx);
    Py_CLEAR(st->on_input);
    Py_CLEAR(st->produce);
    Py_CLEAR(st->close);
    Py_CLEAR(st->obj);
    Py_CLEAR(st->ctx);
    Py_CLEAR(st->module);
}

static zf_err py_init(zf_node *n, void **state)
{
    pyz_decl *pd = claim_decl(n);
    if (!pd) {
        zf_node_set_error(n, "the Python host has no declaration matching %s",
                          zf_node_source(n) ? zf_node_source(n) : "(no script)");
        return ZF_EINVAL;
    }
    pyz_state *st = calloc(1, sizeof *st);
    if (!st) {
        PyGILState_STATE g = pyz_gil_enter();
        decl_unref(pd);
        pyz_gil_leave(g);
        return ZF_ENOMEM;
    }
    st->node = n;
    /* init is not a runtime callback: a send from __init__ may wait, so it
     * releases the GIL meanwhile (tls_cb_node stays unset). */
    PyGILState_STATE g = pyz_gil_enter();
    zf_err e = ZF_OK;
    st->module = Py_NewRef(pd->module);
    PyObject *factory = Py_NewRef(pd->factory);
    zf_node_kind kind = pd->decl.kind;
    bool wants_produce = pd->decl.produce != NULL;
    PyObject *config = pyz_config_to_py(zf_node_config(n));
    if (config && !PyDict_Check(config)) {
        Py_SETREF(config, PyDict_New()); /* a scalar configuration: none */
    }
    st->ctx = config
                  ? pyz_context_new(n, kind, pd->inputs, pd->n_in, pd->outputs, pd->n_out, config)
                  : NULL;
    decl_unref(pd); /* everything needed is copied: the decl may go */
    if (st->ctx)
        st->obj = PyObject_CallFunctionObjArgs(factory, st->ctx, config, NULL);
    Py_XDECREF(config);
    Py_DECREF(factory);
    if (!st->obj) {
        e = node_error(st, n, "__init__");
        goto done;
    }
    st->in_names = ((pyz_context *)st->ctx)->inputs;
    st->on_input = method_of(st->obj, "on_input");
    st->produce = method_of(st->obj, "produce");
    st->close = method_of(st->obj, "close");
    if (kind != ZF_SOURCE && !st->on_input) {
        zf_node_set_error(n, "%s: the node object (%.80s) has no on_input(self, port, data)",
                          zf_node_source(n), Py_TYPE(st->obj)->tp_name);
        e = ZF_ETYPE;
    } else if (kind == ZF_SOURCE && wants_produce && !st->produce) {
        zf_node_set_error(n, "%s: the node object (%.80s) has no produce(self)", zf_node_source(n),
                          Py_TYPE(st->obj)->tp_name);
        e = ZF_ETYPE;
    }
done:
    if (e != ZF_OK) {
        state_clear(st);
        PyGC_Collect();
        free(st);
        st = NULL;
    }
    pyz_gil_leave(g);
    *state = st;
    return e;
}

static void py_fini(void *state)
{
    pyz_state *st = state;
    if (!st)
        return;
    PyGILState_STATE g = pyz_gil_enter();
    if (st->close) {
        PyObject *r = PyObject_CallNoArgs(st->close);
        if (r)
            Py_DECREF(r);
        else
            node_error(st, st->node, "close");
    }
    state_clear(st);
    /* Capsules the node kept in reference cycles go now, inside fini. */
    PyGC_Collect();
    pyz_gil_leave(g);
    free(st);
}

static zf_err py_produce(void *state, zf_node *n)
{
    pyz_state *st = state;
    if (!st->produce)
        return ZF_OK;
    PyGILState_STATE g = pyz_gil_enter();
    zf_node *prev = tls_cb_node;
    tls_cb_node = n;
    zf_err e = ZF_OK;
    PyObject *r = PyObject_CallNoArgs(st->produce);
    if (r)
        Py_DECREF(r);
    else
        e = node_error(st, n, "produce");
    tls_cb_node = prev;
    pyz_gil_leave(g);
    return e;
}

static zf_err py_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    pyz_state *st = state;
    PyGILState_STATE g = pyz_gil_enter();
    zf_node *prev = tls_cb_node;
    tls_cb_node = n;
    zf_err e = ZF_OK;
    /* The capsule moves into a Capsule object (the runtime's *d is ours). */
    PyObject *view = pyz_view_of(*d, false, NULL);
    *d = NULL;
    if (!view) {
        e = node_error(st, n, "on_input");
    } else {
        PyObject *args[2] = {(Py_ssize_t)port < PyTuple_GET_SIZE(st->in_names)
                                 ? PyTuple_GET_ITEM(st->in_names, port)
                                 : Py_None,
                             view};
        PyObject *r = PyObject_Vectorcall(st->on_input, args, 2, NULL);
        if (r)
            Py_DECREF(r);
        else
            e = node_error(st, n, "on_input");
        /* `data` is valid during the call only: release the view (a kept
         * one raises from now on; views made from it keep the bytes). */
        pyz_view_release(view);
        Py_DECREF(view);
    }
    tls_cb_node = prev;
    pyz_gil_leave(g);
    return e;
}
