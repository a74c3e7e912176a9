/* The `zflow` Python module, as node scripts see it (import zflow):
 *
 *   zflow.Capsule   a capsule reference; exports its bytes with the buffer
 *                   protocol (memoryview(capsule): no copy)
 *   zflow.Context   given to a node's constructor: id, ports, send,
 *                   try_send, alloc, log
 *   zflow.keep(view)      a Capsule holding one more reference to the
 *                         capsule behind an on_input view: keep data past
 *                         the callback
 *   zflow.writable(view)  a writable view (in place when the capsule is
 *                         unique, else a private copy: copy on write)
 *   zflow.address(obj)    the address of any buffer's bytes
 *   zflow.Node, zflow.Error, log levels: from zflow/_support.py (embedded)
 *
 * Ownership, in one place:
 * - on_input's `data` is a read-only memoryview over the runtime's capsule.
 *   It is released when the callback returns (using it later raises
 *   ValueError). Views derived from it (slices, NumPy arrays) keep the
 *   capsule alive as long as they live, so nothing ever dangles.
 * - send(port, x): a zflow.Capsule is handed over (released afterwards, as
 *   zf_send NULLs its argument); a view from alloc() too (it is released);
 *   a read-only view of a received capsule is shared (the same capsule goes
 *   on, `data` stays readable until the callback ends). Any other
 *   buffer-protocol object: zero copy only where nothing can write it --
 *   bytes, and buffers read-only all the way down (immutable_buffer) are
 *   pinned with zf_data_wrap (the capsule points at the object's own bytes
 *   and holds a reference to it, released under the GIL when the last
 *   capsule reference anywhere drops); anything writable (bytearray,
 *   array.array, a writable NumPy array, views of those) is copied once
 *   into the instance's pool at send, counted in Context.copies, so the
 *   object stays the sender's and no receiver sees its later writes. */
#include "pyhost.h"

#include <structmember.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zflow_support.inc" /* zflow_support_py[]: zflow/_support.py */

static PyObject *zmodule;    /* the module (owned, never freed) */
static PyObject *error_type; /* zflow.Error (borrowed from the module) */
static PyObject *str_release;
static PyObject *str_numpy;

static PyTypeObject capsule_type;
static PyTypeObject context_type;

/* ------------------------------------------------------------------ */
/* errors                                                              */
/* ------------------------------------------------------------------ */

/* Raise zflow.Error(code name, detail). Returns NULL. */
static PyObject *raise_zf(zf_err e, const char *detail)
{
    PyObject *exc = NULL;
    if (error_type)
        exc = PyObject_CallFunction(error_type, "ss", zf_errname(e), detail ? detail : "");
    if (exc) {
        PyErr_SetObject(error_type, exc);
        Py_DECREF(exc);
    } else if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s", zf_errname(e), detail ? detail : "");
    }
    return NULL;
}

zf_err pyz_error_code(PyObject *exc)
{
    if (!exc || !error_type || PyObject_IsInstance(exc, error_type) != 1) {
        PyErr_Clear();
        return ZF_ENODE;
    }
    zf_err code = ZF_ENODE;
    PyObject *name = PyObject_GetAttrString(exc, "code");
    const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int i = 1; s && i < ZF_ERR_COUNT; i++)
        if (strcmp(s, zf_errname((zf_err)i)) == 0)
            code = (zf_err)i;
    Py_XDECREF(name);
    PyErr_Clear();
    return code;
}

/* ------------------------------------------------------------------ */
/* Capsule                                                             */
/* ------------------------------------------------------------------ */

PyObject *pyz_capsule_new(zf_data *d, bool writable)
{
    pyz_capsule *c = PyObject_New(pyz_capsule, &capsule_type);
    if (!c) {
        zf_data_unref(d);
        return NULL;
    }
    c->d = d;
    c->exports = 0;
    c->writable = writable;
    c->released = false;
    return (PyObject *)c;
}

PyObject *pyz_view_of(zf_data *d, bool writable, pyz_capsule **cap_out)
{
    PyObject *cap = pyz_capsule_new(d, writable);
    if (!cap)
        return NULL;
    PyObject *view = PyMemoryView_FromObject(cap);
    if (cap_out)
        *cap_out = (pyz_capsule *)cap;
    Py_DECREF(cap); /* the view holds it */
    return view;
}

void pyz_view_release(PyObject *view)
{
    PyObject *r = PyObject_CallMethodNoArgs(view, str_release);
    if (r)
        Py_DECREF(r);
    else
        PyErr_Clear(); /* it has views of its own: they keep the bytes */
}

static void capsule_drop(pyz_capsule *c)
{
    zf_data *d = c->d;
    c->d = NULL;
    zf_data_unref(d); /* may run a release callback (GIL held: reentrant) */
}

static void capsule_dealloc(PyObject *self)
{
    capsule_drop((pyz_capsule *)self);
    PyObject_Free(self);
}

static int capsule_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    pyz_capsule *c = (pyz_capsule *)self;
    if (c->released || !c->d) {
        view->obj = NULL;
        PyErr_SetString(PyExc_ValueError,
                        "this zflow capsule was released (sent, or released by its holder): its "
                        "bytes are no longer accessible");
        return -1;
    }
    if ((flags & PyBUF_WRITABLE) && !c->writable) {
        view->obj = NULL;
        PyErr_SetString(PyExc_BufferError,
                        "zflow capsules are read-only once shared: zflow.writable(view) gives a "
                        "writable one (in place when unique, else a copy)");
        return -1;
    }
    if (PyBuffer_FillInfo(view, self, (void *)zf_data_ptr(c->d), (Py_ssize_t)zf_data_len(c->d),
                          !c->writable, flags) < 0)
        return -1;
    c->exports++;
    return 0;
}

static void capsule_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)view;
    pyz_capsule *c = (pyz_capsule *)self;
    if (--c->exports == 0 && c->released)
        capsule_drop(c);
}

static PyBufferProcs capsule_as_buffer = {capsule_getbuffer, capsule_releasebuffer};

static Py_ssize_t capsule_len(PyObject *self)
{
    pyz_capsule *c = (pyz_capsule *)self;
    return c->d && !c->released ? (Py_ssize_t)zf_data_len(c->d) : 0;
}

static PySequenceMethods capsule_as_sequence = {.sq_length = capsule_len};

static int capsule_live(pyz_capsule *c)
{
    if (c->released || !c->d) {
        PyErr_SetString(PyExc_ValueError, "this zflow capsule was released");
        return 0;
    }
    return 1;
}

/* A writable capsule (from alloc() or zflow.writable()) is given up only
 * when nothing else in Python can write it afterwards: `mv`, the view being
 * sent (NULL: the Capsule itself), must be its only view, with no slice,
 * memoryview or NumPy array made from it still alive. Otherwise raise
 * BufferError and change nothing (the send is refused, the view stays
 * usable). */
static int writable_alone(pyz_capsule *c, PyObject *mv)
{
    if (!c->writable)
        return 1;
    Py_ssize_t others = c->exports;
    if (mv) {
        PyMemoryViewObject *m = (PyMemoryViewObject *)mv;
        others += m->exports + (m->mbuf ? m->mbuf->exports : 1) - 2;
    }
    if (others <= 0)
        return 1;
    PyErr_Format(PyExc_BufferError,
                 "cannot send this capsule: %zd other view(s) of it (a slice, a memoryview, a "
                 "NumPy array...) can still write it, and a sent capsule must be read-only for "
                 "its sender; delete them (or call .release() on them) before send()",
                 others);
    return 0;
}

/* Capsule.release(): drop the reference now (when its views are gone). */
static PyObject *capsule_release(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyz_capsule *c = (pyz_capsule *)self;
    c->released = true;
    c->writable = false;
    if (c->exports == 0)
        capsule_drop(c);
    Py_RETURN_NONE;
}

/* Capsule.keep(): another Capsule on the same bytes (one more reference). */
static PyObject *capsule_keep(PyObject *self, PyObject *unused)
{
    (void)unused;
    pyz_capsule *c = (pyz_capsule *)self;
    if (!capsule_live(c))
        return NULL;
    if (c->writable) /* a second holder would read what its views still write */
        return PyErr_Format(PyExc_BufferError,
                            "keep() shares a capsule, and this one is writable (from alloc()): "
                            "it is yours already; keep the view itself, or send it");
    return pyz_capsule_new(zf_data_ref(c->d), false);
}

static PyObject *capsule_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *capsule_exit(PyObject *self, PyObject *args)
{
    (void)args;
    return capsule_release(self, NULL);
}

static PyObject *capsule_repr(PyObject *self)
{
    pyz_capsule *c = (pyz_capsule *)self;
    if (c->released || !c->d)
        return PyUnicode_FromString("<zflow.Capsule (released)>");
    return PyUnicode_FromFormat("<zflow.Capsule %zu bytes at %p, seq %llu, %u reference(s)%s>",
                                zf_data_len(c->d), zf_data_ptr(c->d),
                                (unsigned long long)zf_data_seq(c->d), zf_data_refcount(c->d),
                                c->writable ? ", writable" : "");
}

static PyObject *capsule_get_address(PyObject *self, void *closure)
{
    (void)closure;
    pyz_capsule *c = (pyz_capsule *)self;
    return capsule_live(c) ? PyLong_FromVoidPtr((void *)zf_data_ptr(c->d)) : NULL;
}

static PyObject *capsule_get_seq(PyObject *self, void *closure)
{
    (void)closure;
    pyz_capsule *c = (pyz_capsule *)self;
    return capsule_live(c) ? PyLong_FromUnsignedLongLong(zf_data_seq(c->d)) : NULL;
}

static PyObject *capsule_get_timestamp(PyObject *self, void *closure)
{
    (void)closure;
    pyz_capsule *c = (pyz_capsule *)self;
    return capsule_live(c) ? PyLong_FromUnsignedLongLong(zf_data_timestamp(c->d)) : NULL;
}

static PyObject *capsule_get_refcount(PyObject *self, void *closure)
{
    (void)closure;
    pyz_capsule *c = (pyz_capsule *)self;
    return PyLong_FromUnsignedLong(c->d ? zf_data_refcount(c->d) : 0);
}

static PyObject *capsule_get_released(PyObject *self, void *closure)
{
    (void)closure;
    pyz_capsule *c = (pyz_capsule *)self;
    return PyBool_FromLong(c->released || !c->d);
}

static PyObject *capsule_get_readonly(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(!((pyz_capsule *)self)->writable);
}

static PyMethodDef capsule_methods[] = {
    {"release", capsule_release, METH_NOARGS,
     "Drop this reference now (the bytes go when the views of it are gone too)."},
    {"keep", capsule_keep, METH_NOARGS, "Another Capsule holding one more reference."},
    {"__enter__", capsule_enter, METH_NOARGS, NULL},
    {"__exit__", capsule_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef capsule_getset[] = {
    {"address", capsule_get_address, NULL, "address of the bytes (int)", NULL},
    {"seq", capsule_get_seq, NULL, "sequence number (set by send per output port)", NULL},
    {"timestamp", capsule_get_timestamp, NULL, "creation time, zf_clock_ns nanoseconds", NULL},
    {"refcount", capsule_get_refcount, NULL, "references to the capsule anywhere (a snapshot)",
     NULL},
    {"released", capsule_get_released, NULL, "True once released or sent", NULL},
    {"readonly", capsule_get_readonly, NULL, "False only for a unique capsule from alloc()", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject capsule_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "zflow.Capsule",
    .tp_basicsize = sizeof(pyz_capsule),
    .tp_dealloc = capsule_dealloc,
    .tp_repr = capsule_repr,
    .tp_as_sequence = &capsule_as_sequence,
    .tp_as_buffer = &capsule_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A reference to a zflow capsule: memoryview(capsule) reads its bytes in place.\n"
              "Get one with zflow.keep(data) in on_input; release() or send() gives it up.",
    .tp_methods = capsule_methods,
    .tp_getset = capsule_getset,
};

/* ------------------------------------------------------------------ */
/* From Python objects to capsules                                     */
/* ------------------------------------------------------------------ */

/* Pinned Python memory: the buffer (and so a reference to its object)
 * lives in the capsule's release argument. */
typedef struct pin {
    Py_buffer view;
} pin;

static void pin_release(void *arg)
{
    pin *p = arg;
    if (Py_IsInitialized()) {
        PyGILState_STATE g = pyz_gil_enter();
        PyBuffer_Release(&p->view);
        pyz_gil_leave(g);
    }
    free(p);
}

/* A reference to the capsule behind Capsule `c` for the runtime. When
 * `consume`, the Python side gives it up: the view `mv` (if any) is
 * released, and the Capsule too; the reference moves when nothing else
 * views the bytes, else the Capsule's own goes with its last view. */
static zf_data *capsule_take(pyz_capsule *c, PyObject *mv, bool consume)
{
    if (!capsule_live(c))
        return NULL;
    if (!consume)
        return zf_data_ref(c->d);
    if (!writable_alone(c, mv))
        return NULL;
    if (mv)
        pyz_view_release(mv);
    c->released = true;
    c->writable = false;
    if (c->exports == 0) {
        zf_data *d = c->d;
        c->d = NULL;
        return d;
    }
    return zf_data_ref(c->d);
}

/* True when nothing in Python can write the bytes of `obj` (whose buffer
 * is read-only) while a capsule pins them: bytes; a read-only zflow
 * capsule; a read-only memoryview or a NumPy array whose WRITEABLE is
 * False, when what they view is such an owner too (memoryview(bytearray)
 * .toreadonly() is not: the bytearray writes). A NumPy array owning its
 * data is not: setflags(write=True) makes it writable again. Anything else
 * (mmap, ctypes, other exporters) is taken as writable. Never raises. */
static bool immutable_buffer(PyObject *obj, int depth)
{
    if (depth > 64 || !obj)
        return false;
    if (PyBytes_Check(obj)) /* a subclass exporting other bytes (__buffer__) is not */
        return Py_TYPE(obj)->tp_as_buffer &&
               Py_TYPE(obj)->tp_as_buffer->bf_getbuffer == PyBytes_Type.tp_as_buffer->bf_getbuffer;
    if (Py_IS_TYPE(obj, &capsule_type))
        return !((pyz_capsule *)obj)->writable;
    if (PyMemoryView_Check(obj))
        return PyMemoryView_GET_BUFFER(obj)->readonly &&
               immutable_buffer(PyMemoryView_GET_BASE(obj), depth + 1);
    PyObject *np = PyImport_GetModule(str_numpy); /* NULL: NumPy not imported */
    PyObject *nd = np ? PyObject_GetAttrString(np, "ndarray") : NULL;
    bool is_array = nd && PyType_Check(nd) && PyObject_TypeCheck(obj, (PyTypeObject *)nd);
    Py_XDECREF(nd);
    Py_XDECREF(np);
    bool ro = false;
    if (is_array) {
        PyObject *flags = PyObject_GetAttrString(obj, "flags");
        PyObject *w = flags ? PyObject_GetAttrString(flags, "writeable") : NULL;
        PyObject *base = w && PyObject_Not(w) == 1 ? PyObject_GetAttrString(obj, "base") : NULL;
        ro = base && base != Py_None && immutable_buffer(base, depth + 1);
        Py_XDECREF(base);
        Py_XDECREF(w);
        Py_XDECREF(flags);
    }
    PyErr_Clear();
    return ro;
}

/* A capsule from the node's pool holding a copy of `view`'s bytes (a
 * writable object sent), counted in the context; NULL with an exception. */
static zf_data *copy_to_pool(pyz_context *ctx, const Py_buffer *view)
{
    zf_data *d = NULL;
    zf_err e = ctx && ctx->node ? zf_data_alloc(ctx->node, (size_t)view->len, &d) : ZF_ECLOSED;
    if (e != ZF_OK) {
        raise_zf(e, ctx && ctx->node ? zf_last_error()
                                     : "a writable object is sent by copy, from a node's pool");
        return NULL;
    }
    void *dst = zf_data_mut(&d); /* unique: its own buffer */
    if (!dst) {
        zf_data_unref(d);
        PyErr_NoMemory();
        return NULL;
    }
    if (view->len)
        memcpy(dst, view->buf, (size_t)view->len);
    ctx->copies++;
    ctx->copied_bytes += (unsigned long long)view->len;
    return d;
}

/* One reference (owned by the caller) to a capsule holding obj's bytes,
 * or NULL with an exception. `consume_any`: a view of a received (read
 * only) capsule is given up too (zflow.writable), not just shared. `ctx`:
 * the sending node's context, whose pool a writable object is copied into
 * (NULL: zflow.writable, which only takes capsules' views). */
static zf_data *to_capsule(PyObject *obj, bool consume_any, pyz_context *ctx)
{
    if (Py_IS_TYPE(obj, &capsule_type))
        return capsule_take((pyz_capsule *)obj, NULL, true);
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "zflow sends bytes-like objects (bytes, bytearray, memoryview, "
                         "array.array, NumPy arrays, zflow.Capsule), not '%.100s'",
                         Py_TYPE(obj)->tp_name);
        } else if (PyErr_ExceptionMatches(PyExc_BufferError)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_Format(PyExc_BufferError,
                         "zflow sends C-contiguous buffers only (%S): make one, e.g. "
                         "bytes(x) or numpy.ascontiguousarray(x) (a copy, yours to decide)",
                         value ? value : Py_None);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        return NULL;
    }
    if (PyMemoryView_Check(obj)) {
        /* The view is alive (GetBuffer succeeded), so its base is too. */
        PyObject *base = PyMemoryView_GET_BASE(obj);
        if (base && Py_IS_TYPE(base, &capsule_type)) {
            pyz_capsule *c = (pyz_capsule *)base;
            if (c->d && view.buf == zf_data_ptr(c->d) &&
                view.len == (Py_ssize_t)zf_data_len(c->d)) {
                /* The whole capsule: hand it on, no pinning layer. */
                Py_INCREF(base);
                PyBuffer_Release(&view);
                zf_data *d = capsule_take(c, obj, consume_any || c->writable);
                Py_DECREF(base);
                return d;
            }
            if (c->writable) {
                PyBuffer_Release(&view);
                PyErr_SetString(PyExc_BufferError,
                                "cannot send a part of a writable capsule (from alloc()): the "
                                "rest would stay writable by its sender; alloc() the size you "
                                "send, or send the whole view");
                return NULL;
            }
        }
    }
    if (view.readonly == 0 || !immutable_buffer(obj, 0)) {
        /* Something can still write it: zero copy would let the sender
         * change what every receiver reads. One copy, and it stays ours. */
        zf_data *d = copy_to_pool(ctx, &view);
        PyBuffer_Release(&view);
        return d;
    }
    pin *p = malloc(sizeof *p);
    zf_data *d = NULL;
    zf_err e = p ? zf_data_wrap(view.buf, (size_t)view.len, pin_release, p, &d) : ZF_ENOMEM;
    if (e != ZF_OK) {
        PyBuffer_Release(&view);
        free(p);
        raise_zf(e, zf_last_error());
        return NULL;
    }
    p->view = view; /* the buffer (and its object) now belongs to the capsule */
    return d;
}

/* ------------------------------------------------------------------ */
/* Context                                                             */
/* ------------------------------------------------------------------ */

static PyObject *port_tuple(const zf_port_decl *p, size_t n, PyObject **idx_out)
{
    PyObject *t = PyTuple_New((Py_ssize_t)n), *idx = PyDict_New();
    if (!t || !idx)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        PyObject *name = PyUnicode_FromString(p[i].name ? p[i].name : "");
        if (!name)
            goto fail;
        PyUnicode_InternInPlace(&name);
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, name);
        PyObject *k = PyLong_FromSize_t(i);
        if (!k || PyDict_SetItem(idx, name, k) < 0) {
            Py_XDECREF(k);
            goto fail;
        }
        Py_DECREF(k);
    }
    *idx_out = idx;
    return t;
fail:
    Py_XDECREF(t);
    Py_XDECREF(idx);
    return NULL;
}

PyObject *pyz_context_new(zf_node *node, zf_node_kind kind, const zf_port_decl *in, size_t n_in,
                          const zf_port_decl *out, size_t n_out, PyObject *config)
{
    pyz_context *c = PyObject_GC_New(pyz_context, &context_type);
    if (!c)
        return NULL;
    c->node = node;
    c->id = PyUnicode_FromString(zf_node_id(node));
    c->kind = PyUnicode_FromString(zf_node_kind_name(kind));
    const char *src = zf_node_source(node);
    c->source = PyUnicode_FromString(src ? src : "");
    c->instance = PyUnicode_FromString(zf_node_instance_uuid(node));
    c->flow = PyUnicode_FromString(zf_node_flow_name(node));
    Py_INCREF(config);
    c->config = config;
    c->in_idx = c->out_idx = NULL;
    c->copies = c->copied_bytes = 0;
    c->inputs = port_tuple(in, n_in, &c->in_idx);
    c->outputs = port_tuple(out, n_out, &c->out_idx);
    PyObject_GC_Track(c);
    if (!c->id || !c->kind || !c->source || !c->instance || !c->flow || !c->inputs || !c->outputs) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

void pyz_context_close(PyObject *ctx)
{
    if (!ctx || !Py_IS_TYPE(ctx, &context_type))
        return;
    pyz_context *c = (pyz_context *)ctx;
    if (c->node && c->copies)
        zf_node_log(c->node, ZF_LOG_INFO,
                    "sent %llu writable object(s) by copy (%llu bytes copied into the pool): "
                    "alloc() views and bytes are sent without a copy (docs/python.md)",
                    c->copies, c->copied_bytes);
    c->node = NULL;
}

static int context_traverse(PyObject *self, visitproc visit, void *arg)
{
    pyz_context *c = (pyz_context *)self;
    Py_VISIT(c->config);
    return 0;
}

static int context_clear(PyObject *self)
{
    pyz_context *c = (pyz_context *)self;
    Py_CLEAR(c->config);
    return 0;
}

static void context_dealloc(PyObject *self)
{
    pyz_context *c = (pyz_context *)self;
    PyObject_GC_UnTrack(self);
    Py_CLEAR(c->id);
    Py_CLEAR(c->kind);
    Py_CLEAR(c->source);
    Py_CLEAR(c->instance);
    Py_CLEAR(c->flow);
    Py_CLEAR(c->config);
    Py_CLEAR(c->inputs);
    Py_CLEAR(c->outputs);
    Py_CLEAR(c->in_idx);
    Py_CLEAR(c->out_idx);
    PyObject_GC_Del(self);
}

static zf_node *context_node(pyz_context *c)
{
    if (!c->node)
        raise_zf(ZF_ECLOSED, "this node has finished (its close() ran): it can no longer send");
    return c->node;
}

/* An output port given by name or index -> index, or -1 with an exception. */
static int context_port(pyz_context *c, PyObject *port, PyObject *names, PyObject *idx,
                        const char *what)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (PyLong_Check(port)) {
        long i = PyLong_AsLong(port);
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i >= 0 && i < n)
            return (int)i;
        PyErr_Format(PyExc_ValueError, "node '%U' has no %s port %ld (it has %zd: %R)", c->id, what,
                     i, n, names);
        return -1;
    }
    if (PyUnicode_Check(port)) {
        PyObject *v = PyDict_GetItemWithError(idx, port);
        if (v)
            return (int)PyLong_AsLong(v);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "node '%U' has no %s port '%U' (it has: %R)", c->id,
                         what, port, names);
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "a port is a name (str) or an index (int), not '%.100s'",
                 Py_TYPE(port)->tp_name);
    return -1;
}

static zf_err do_send(zf_node *node, unsigned port, zf_data **d, bool try_only)
{
    if (try_only || pyz_callback_node() == node)
        return try_only ? zf_try_send(node, port, d) : zf_send(node, port, d);
    /* A thread of the node's own: the send may wait for room, so let the
     * other Python nodes run meanwhile. */
    zf_err e;
    Py_BEGIN_ALLOW_THREADS e = zf_send(node, port, d);
    Py_END_ALLOW_THREADS return e;
}

/* The arguments of Context.`name`(port, data): the node, and its output
 * port in *port; NULL with an exception set if they are not right. */
static zf_node *send_args(pyz_context *c, const char *name, PyObject *const *args, Py_ssize_t nargs,
                          int *port)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(port, data) takes 2 arguments (%zd given)", name, nargs);
        return NULL;
    }
    zf_node *node = context_node(c);
    if (!node)
        return NULL;
    *port = context_port(c, args[0], c->outputs, c->out_idx, "output");
    return *port < 0 ? NULL : node;
}

/* Context.send(port, data) */
static PyObject *context_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int port;
    zf_node *node = send_args((pyz_context *)self, "send", args, nargs, &port);
    if (!node)
        return NULL;
    zf_data *d = to_capsule(args[1], false, (pyz_context *)self);
    if (!d)
        return NULL;
    zf_err e = do_send(node, (unsigned)port, &d, false);
    if (e != ZF_OK)
        return raise_zf(e, zf_last_error());
    Py_RETURN_NONE;
}

/* Context.try_send(port, data) -> bool: False (data untouched) when full. */
static PyObject *context_try_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int port;
    zf_node *node = send_args((pyz_context *)self, "try_send", args, nargs, &port);
    if (!node)
        return NULL;
    /* Share first; give the Python side up only once the send is taken. */
    PyObject *obj = args[1];
    pyz_capsule *cap = NULL;
    PyObject *mv = NULL;
    zf_data *d = NULL;
    if (Py_IS_TYPE(obj, &capsule_type)) {
        cap = (pyz_capsule *)obj;
    } else if (PyMemoryView_Check(obj)) {
        Py_buffer v;
        if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0)
            return NULL;
        PyObject *base = PyMemoryView_GET_BASE(obj);
        if (base && Py_IS_TYPE(base, &capsule_type) && ((pyz_capsule *)base)->d &&
            v.buf == zf_data_ptr(((pyz_capsule *)base)->d) &&
            v.len == (Py_ssize_t)zf_data_len(((pyz_capsule *)base)->d)) {
            cap = (pyz_capsule *)base;
            mv = obj;
        }
        PyBuffer_Release(&v);
    }
    if (cap && !writable_alone(cap, mv))
        return NULL;
    if (cap) {
        Py_INCREF(cap);
        d = capsule_take(cap, NULL, false);
    } else {
        d = to_capsule(obj, false, (pyz_context *)self);
    }
    if (!d) {
        Py_XDECREF(cap);
        return NULL;
    }
    zf_err e = do_send(node, (unsigned)port, &d, true);
    if (e == ZF_EAGAIN) {
        zf_data_unref(d);
        Py_XDECREF(cap);
        Py_RETURN_FALSE;
    }
    if (cap && (!mv || cap->writable)) {
        zf_data *mine = capsule_take(cap, mv, true); /* as send: given up */
        zf_data_unref(mine);
    }
    Py_XDECREF(cap);
    if (e != ZF_OK)
        return raise_zf(e, zf_last_error());
    Py_RETURN_TRUE;
}

/* Context.alloc(size) -> writable memoryview over a new pool capsule. */
static PyObject *context_alloc(PyObject *self, PyObject *arg)
{
    pyz_context *c = (pyz_context *)self;
    zf_node *node = context_node(c);
    if (!node)
        return NULL;
    Py_ssize_t n = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "alloc(size): size must be >= 0, not %zd", n);
    zf_data *d = NULL;
    zf_err e = zf_data_alloc(node, (size_t)n, &d);
    if (e != ZF_OK)
        return raise_zf(e, zf_last_error());
    return pyz_view_of(d, true, NULL);
}

static int parse_level(PyObject *o, zf_log_level *out)
{
    if (!o) {
        *out = ZF_LOG_INFO;
        return 0;
    }
    if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v >= ZF_LOG_ERROR && v <= ZF_LOG_TRACE) {
            *out = (zf_log_level)v;
            return 0;
        }
    } else if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (s && strcmp(s, "warning") == 0)
            s = "warn";
        if (s && zf_log_level_parse(s, out) == ZF_OK)
            return 0;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError,
                 "log level: 'error', 'warn', 'info', 'debug', 'trace' or zflow.ERROR.."
                 "zflow.TRACE, not %R",
                 o);
    return -1;
}

/* Context.log(message, level="info") */
static PyObject *context_log(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"message", "level", NULL};
    pyz_context *c = (pyz_context *)self;
    PyObject *msg, *lv = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:log", kwlist, &msg, &lv))
        return NULL;
    zf_log_level level;
    if (parse_level(lv, &level) < 0)
        return NULL;
    PyObject *s = PyObject_Str(msg);
    const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
    if (!text) {
        Py_XDECREF(s);
        return NULL;
    }
    if (c->node) {
        zf_node_log(c->node, level, "%s", text);
    } else {
        /* after close(): still worth a line */
        const char *id = PyUnicode_AsUTF8(c->id);
        zf_node_log(NULL, level, "%s: %s", id ? id : "?", text);
    }
    Py_DECREF(s);
    Py_RETURN_NONE;
}

static PyObject *context_get_stopping(PyObject *self, void *closure)
{
    (void)closure;
    pyz_context *c = (pyz_context *)self;
    return PyBool_FromLong(!c->node || zf_node_stopping(c->node));
}

static PyObject *context_repr(PyObject *self)
{
    pyz_context *c = (pyz_context *)self;
    return PyUnicode_FromFormat("<zflow.Context %U (%U) inputs=%R outputs=%R>", c->id, c->kind,
                                c->inputs, c->outputs);
}

static PyMethodDef context_methods[] = {
    {"send", (PyCFunction)(void (*)(void))context_send, METH_FASTCALL,
     "send(port, data): send bytes-like `data` on output `port` (name or index): without a "
     "copy for alloc() views, received data and bytes; a writable object is copied once."},
    {"try_send", (PyCFunction)(void (*)(void))context_try_send, METH_FASTCALL,
     "try_send(port, data) -> bool: as send, but False (data untouched) when a link is full."},
    {"alloc", context_alloc, METH_O,
     "alloc(size) -> writable memoryview over a new capsule from the instance's pool."},
    {"log", (PyCFunction)(void (*)(void))context_log, METH_VARARGS | METH_KEYWORDS,
     "log(message, level='info'): one line through the runtime's logger."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef context_members[] = {
    {"id", T_OBJECT_EX, offsetof(pyz_context, id), READONLY, "the node's id"},
    {"kind", T_OBJECT_EX, offsetof(pyz_context, kind), READONLY, "source, operator or sink"},
    {"source", T_OBJECT_EX, offsetof(pyz_context, source), READONLY, "the script's path"},
    {"instance", T_OBJECT_EX, offsetof(pyz_context, instance), READONLY,
     "the UUID of the node's instance"},
    {"flow", T_OBJECT_EX, offsetof(pyz_context, flow), READONLY, "the name of the node's flow"},
    {"configuration", T_OBJECT_EX, offsetof(pyz_context, config), READONLY,
     "the node's configuration (a dict)"},
    {"inputs", T_OBJECT_EX, offsetof(pyz_context, inputs), READONLY, "input port names"},
    {"outputs", T_OBJECT_EX, offsetof(pyz_context, outputs), READONLY, "output port names"},
    {"copies", T_ULONGLONG, offsetof(pyz_context, copies), READONLY,
     "writable objects sent by copy (bytearray, writable NumPy arrays...): not zero copy"},
    {"copied_bytes", T_ULONGLONG, offsetof(pyz_context, copied_bytes), READONLY,
     "the bytes those copies moved"},
    {NULL, 0, 0, 0, NULL}};

static PyGetSetDef context_getset[] = {
    {"stopping", context_get_stopping, NULL,
     "True once the instance stops (threads of a source should return)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject context_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "zflow.Context",
    .tp_basicsize = sizeof(pyz_context),
    .tp_dealloc = context_dealloc,
    .tp_repr = context_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What a node can do: send, try_send, alloc, log; its id, ports and configuration.",
    .tp_traverse = context_traverse,
    .tp_clear = context_clear,
    .tp_methods = context_methods,
    .tp_members = context_members,
    .tp_getset = context_getset,
};

/* ------------------------------------------------------------------ */
/* module functions                                                    */
/* ------------------------------------------------------------------ */

/* zflow.keep(data) -> Capsule: one more reference to the capsule behind an
 * on_input view (or a Capsule), valid after the callback. */
static PyObject *mod_keep(PyObject *mod, PyObject *obj)
{
    (void)mod;
    if (Py_IS_TYPE(obj, &capsule_type))
        return capsule_keep(obj, NULL);
    if (PyMemoryView_Check(obj)) {
        Py_buffer v;
        if (PyObject_GetBuffer(obj, &v, PyBUF_FULL_RO) < 0)
            return NULL;
        PyObject *base = PyMemoryView_GET_BASE(obj);
        PyObject *r = NULL;
        if (base && Py_IS_TYPE(base, &capsule_type))
            r = capsule_keep(base, NULL);
        PyBuffer_Release(&v);
        if (r || PyErr_Occurred())
            return r;
    }
    return PyErr_Format(PyExc_TypeError,
                        "zflow.keep() takes the data given to on_input (or a zflow.Capsule), not "
                        "'%.100s'; other objects are kept by keeping a reference to them",
                        Py_TYPE(obj)->tp_name);
}

/* zflow.writable(data) -> writable memoryview: the capsule itself when it
 * is unique, else a private copy (copy on write). `data` is given up. */
static PyObject *mod_writable(PyObject *mod, PyObject *obj)
{
    (void)mod;
    bool ours = Py_IS_TYPE(obj, &capsule_type), part = false;
    if (!ours && PyMemoryView_Check(obj)) {
        PyObject *base = PyMemoryView_GET_BASE(obj);
        Py_buffer v;
        if (PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) < 0)
            return NULL;
        ours = base && Py_IS_TYPE(base, &capsule_type);
        zf_data *whole = ours ? ((pyz_capsule *)base)->d : NULL;
        part = whole && (v.buf != zf_data_ptr(whole) || v.len != (Py_ssize_t)zf_data_len(whole));
        PyBuffer_Release(&v);
    }
    if (!ours)
        return PyErr_Format(PyExc_TypeError,
                            "zflow.writable() takes a capsule's view (on_input's data, alloc()) "
                            "or a zflow.Capsule, not '%.100s'",
                            Py_TYPE(obj)->tp_name);
    zf_data *d = to_capsule(obj, true, NULL);
    if (!d)
        return NULL;
    /* A part of a capsule comes pinned: a capsule of its own, unique, over
     * bytes that every holder of the whole reads. Shared for the call, so
     * that zf_data_mut copies them. */
    zf_data *whole_ref = part ? zf_data_ref(d) : NULL;
    void *w = zf_data_mut(&d);
    zf_data_unref(whole_ref);
    if (!w) {
        zf_data_unref(d);
        return PyErr_NoMemory();
    }
    return pyz_view_of(d, true, NULL);
}

/* zflow.address(obj) -> int: where a buffer's bytes are (no copy made). */
static PyObject *mod_address(PyObject *mod, PyObject *obj)
{
    (void)mod;
    if (Py_IS_TYPE(obj, &capsule_type))
        return capsule_get_address(obj, NULL);
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_FULL_RO) < 0)
        return NULL;
    PyObject *r = PyLong_FromVoidPtr(v.buf);
    PyBuffer_Release(&v);
    return r;
}

static PyMethodDef module_methods[] = {
    {"keep", mod_keep, METH_O,
     "keep(data) -> Capsule: hold the capsule behind on_input's data past the callback."},
    {"writable", mod_writable, METH_O,
     "writable(data) -> writable memoryview: in place if the capsule is unique, else a copy. "
     "Gives `data` up."},
    {"address", mod_address, METH_O, "address(buffer) -> int: where its bytes are."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "zflow",
    .m_doc = "zflow nodes in Python: zero-copy capsules, contexts, the Node base class.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyObject *pyz_helper(const char *name)
{
    return zmodule ? PyDict_GetItemString(PyModule_GetDict(zmodule), name) : NULL;
}

/* Where the pure-Python packages are (zenoh_flow for Zenoh-Flow's nodes):
 * `python/` next to this library (a build tree) and the install folder
 * (ZF_PYTHON_PKG_DIR, absolute or relative to this library's folder),
 * appended to sys.path when they exist (the user's own path comes first). */
static int add_package_dirs(void)
{
    char build[PATH_MAX] = "", installed[PATH_MAX] = ZF_PYTHON_PKG_DIR;
    Dl_info info;
    if (dladdr((void *)add_package_dirs, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        int n = slash ? (int)(slash - info.dli_fname) : 0;
        if (slash) {
            snprintf(build, sizeof build, "%.*s/python", n, info.dli_fname);
            if (ZF_PYTHON_PKG_DIR[0] != '/')
                snprintf(installed, sizeof installed, "%.*s/%s", n, info.dli_fname,
                         ZF_PYTHON_PKG_DIR);
        }
    }
    const char *dirs[] = {build, installed};
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    for (size_t i = 0; path && PyList_Check(path) && i < 2; i++) {
        if (!dirs[i][0] || access(dirs[i], R_OK) != 0)
            continue;
        PyObject *d = PyUnicode_DecodeFSDefault(dirs[i]);
        int has = d ? PySequence_Contains(path, d) : -1;
        if (has < 0 || (has == 0 && PyList_Append(path, d) < 0)) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d);
    }
    return 0;
}

PyObject *pyz_module_create(void)
{
    if (zmodule)
        return zmodule;
    if (PyType_Ready(&capsule_type) < 0 || PyType_Ready(&context_type) < 0)
        return NULL;
    str_release = PyUnicode_InternFromString("release");
    str_numpy = PyUnicode_InternFromString("numpy");
    PyObject *m = PyModule_Create(&module_def);
    if (!m || !str_release || !str_numpy)
        return NULL;
    Py_INCREF(&capsule_type);
    Py_INCREF(&context_type);
    if (PyModule_AddObject(m, "Capsule", (PyObject *)&capsule_type) < 0 ||
        PyModule_AddObject(m, "Context", (PyObject *)&context_type) < 0 ||
        PyModule_AddStringConstant(m, "__version__", ZF_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *dict = PyModule_GetDict(m);
    if (PyDict_GetItemString(dict, "__builtins__") == NULL &&
        PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *code = Py_CompileString(zflow_support_py, "<zflow>", Py_file_input);
    PyObject *r = code ? PyEval_EvalCode(code, dict, dict) : NULL;
    Py_XDECREF(code);
    if (!r) {
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(r);
    error_type = PyDict_GetItemString(dict, "Error");
    PyObject *modules = PyImport_GetModuleDict();
    if (!error_type || PyDict_SetItemString(modules, "zflow", m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (add_package_dirs() < 0) {
        Py_DECREF(m);
        return NULL;
    }
    zmodule = m;
    return m;
}

/* ------------------------------------------------------------------ */
/* configuration                                                       */
/* ------------------------------------------------------------------ */

PyObject *pyz_config_to_py(const zf_config *c)
{
    switch (zf_config_kind_of(c)) {
    case ZF_CFG_NULL:
        if (!c)
            return PyDict_New(); /* no configuration at all: an empty map */
        Py_RETURN_NONE;
    case ZF_CFG_BOOL: {
        bool b = false;
        ZF_IGNORE(zf_config_bool(c, "", false, &b)); /* the kind is checked above */
        return PyBool_FromLong(b);
    }
    case ZF_CFG_INT: {
        int64_t v = 0;
        if (zf_config_int(c, "", 0, &v) != ZF_OK)
            return PyLong_FromString(zf_config_text(c), NULL, 0);
        return PyLong_FromLongLong(v);
    }
    case ZF_CFG_FLOAT: {
        double v = 0;
        ZF_IGNORE(zf_config_float(c, "", 0, &v)); /* the kind is checked above */
        return PyFloat_FromDouble(v);
    }
    case ZF_CFG_STRING: {
        const char *t = zf_config_text(c);
        return PyUnicode_DecodeUTF8(t ? t : "", t ? (Py_ssize_t)strlen(t) : 0, "surrogateescape");
    }
    case ZF_CFG_SEQ: {
        size_t n = zf_config_len(c);
        PyObject *l = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; l && i < n; i++) {
            PyObject *v = pyz_config_to_py(zf_config_at(c, i));
            if (!v) {
                Py_CLEAR(l);
                break;
            }
            PyList_SET_ITEM(l, (Py_ssize_t)i, v);
        }
        return l;
    }
    case ZF_CFG_MAP: {
        PyObject *dict = PyDict_New();
        for (size_t i = 0; dict && i < zf_config_len(c); i++) {
            const zf_config *item = zf_config_at(c, i);
            PyObject *v = item ? pyz_config_to_py(item) : (Py_INCREF(Py_None), Py_None);
            const char *k = zf_config_key_at(c, i);
            if (!v || PyDict_SetItemString(dict, k ? k : "", v) < 0) {
                Py_XDECREF(v);
                Py_CLEAR(dict);
                break;
            }
            Py_DECREF(v);
        }
        return dict;
    }
    }
    Py_RETURN_NONE;
}
