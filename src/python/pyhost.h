/* The Python node host (libzflow-python.so): internal interface between
 * host.c (the zf_host_declare / zf_host_free entry points, the node
 * callbacks, the interpreter and the GIL) and module.c (the `zflow` Python
 * module: Capsule, Context, Node, Error).
 *
 * Python.h comes first, before any system header (as CPython requires). */
#ifndef ZF_PYHOST_H
#define ZF_PYHOST_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <zflow/zflow.h>

#include <stdbool.h>
#include <stdint.h>

/* ---- the GIL (host.c) ---- */

/* Take the GIL on any thread (runtime workers, a thread dropping the last
 * reference to a pinned Python object, Python's own threads). A thread
 * Python does not know gets a thread state once, kept until it exits, so
 * that each later call costs one GIL hand-over, not a thread-state
 * allocation. Reentrant. */
PyGILState_STATE pyz_gil_enter(void);
void pyz_gil_leave(PyGILState_STATE s);

/* The node whose Python callback runs on this thread, or NULL: a send from
 * inside a callback never waits (it keeps the GIL); from another thread it
 * may wait for room, so it releases the GIL meanwhile. */
zf_node *pyz_callback_node(void);

/* ---- the zflow module (module.c) ---- */

/* A capsule seen from Python: owns one zf_data reference and exports its
 * bytes through the buffer protocol (memoryview(capsule) is zero-copy). */
typedef struct pyz_capsule {
    PyObject_HEAD zf_data *d; /* the reference this object owns; NULL once released */
    Py_ssize_t exports;       /* buffer views alive */
    bool writable;            /* a unique capsule from alloc(): views may write */
    bool released;            /* release() / sent: no new views; d dropped at 0 views */
} pyz_capsule;

/* The object given to a node's constructor: the node's id, ports, and the
 * calls it makes (send, try_send, alloc, log). */
typedef struct pyz_context {
    PyObject_HEAD zf_node *node; /* NULL after fini: calls raise zflow.Error(ZF_ECLOSED) */
    PyObject *id, *kind, *source, *config;
    PyObject *instance, *flow;  /* the instance's UUID, the flow's name */
    PyObject *inputs, *outputs; /* tuples of port names */
    PyObject *in_idx, *out_idx; /* dict: name -> index */
    /* writable objects copied into the pool at send (not zero copy: a
     * bytearray, a writable NumPy array...), and their bytes; under the GIL */
    unsigned long long copies, copied_bytes;
} pyz_context;

/* Create the `zflow` module and register it in sys.modules (GIL held).
 * NULL with a Python exception on failure. */
PyObject *pyz_module_create(void);

/* A new Capsule owning `d` (the reference moves in). */
PyObject *pyz_capsule_new(zf_data *d, bool writable);
/* A read-only memoryview over a new Capsule owning `d`; *cap_out (borrowed,
 * alive while the view is) may be NULL. */
PyObject *pyz_view_of(zf_data *d, bool writable, pyz_capsule **cap_out);

/* memoryview.release(), errors cleared (a view with views of its own stays
 * valid: they keep the capsule alive). */
void pyz_view_release(PyObject *view);

/* A new Context for `node` with the descriptor's ports (GIL held). */
PyObject *pyz_context_new(zf_node *node, zf_node_kind kind, const zf_port_decl *in, size_t n_in,
                          const zf_port_decl *out, size_t n_out, PyObject *config);
/* The node finished: later calls through the context raise. Logs (info)
 * how many writable objects its sends copied, if any. */
void pyz_context_close(PyObject *ctx);

/* The configuration tree as Python values (dict, list, int, float, bool,
 * str, None). */
PyObject *pyz_config_to_py(const zf_config *c);

/* Helpers written in Python (module.c's embedded source), borrowed from
 * the module: _load(path, modname, kind, code) -> (module, factory, has_produce)
 * and _describe(exc) -> (one_line, full_text). */
PyObject *pyz_helper(const char *name);

/* The zf_err code of the exception object exc if it is a zflow.Error (its
 * `code` attribute, a name such as "ZF_ECLOSED"), else ZF_ENODE (also for
 * exc NULL). It clears the error indicator -- any pending exception and any
 * raised while reading exc.code -- so fetch the exception first (PyErr_Fetch)
 * and restore it afterwards if it is still wanted, as host.c does. */
zf_err pyz_error_code(PyObject *exc);

#endif
