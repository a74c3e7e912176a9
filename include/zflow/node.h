/*
 * zflow/node.h — for node authors: the node ABI (what a node library
 * declares and exports), the calls a node makes on itself from its
 * callbacks, and the interface of language hosts (the Python host). A node
 * reads capsules (zflow/data.h) and its configuration (zflow/config.h).
 */
#ifndef ZFLOW_NODE_H
#define ZFLOW_NODE_H

#include <zflow/base.h>
#include <zflow/config.h>
#include <zflow/data.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The node ABI version. A node library built against another version is
 *  refused by the loader with ZF_EABI. */
#define ZF_ABI_VERSION 1u

#define ZF_NODE_KIND_MAP(X)                                                                        \
    X(ZF_SOURCE, 1, "source")                                                                      \
    X(ZF_OPERATOR, 2, "operator")                                                                  \
    X(ZF_SINK, 3, "sink")

typedef enum zf_node_kind { ZF_NODE_KIND_MAP(ZF_ENUM_VALUE_) } zf_node_kind;

/** "source", "operator", "sink" (ZF_UNKNOWN_NAME otherwise). */
ZF_EXPORT const char *zf_node_kind_name(zf_node_kind k);

typedef struct zf_port_decl {
    const char *name; /**< port id, as in the descriptor */
    const char *type; /**< "image/bgr8", ...; NULL or "any" accepts all */
} zf_port_decl;

/** What a node library declares. Exported through ZF_NODE_EXPORT. */
typedef struct zf_node_decl {
    uint32_t abi;               /**< ZF_ABI_VERSION */
    zf_node_kind kind;          /**< ZF_SOURCE, ZF_OPERATOR or ZF_SINK */
    const char *name;           /**< for messages; may be NULL */
    const zf_port_decl *inputs; /**< n_inputs input ports, in index order */
    size_t n_inputs;
    const zf_port_decl *outputs; /**< n_outputs output ports */
    size_t n_outputs;
    /** Read the configuration, allocate state. Non-OK fails the load; a
     *  message given with zf_node_set_error is reported. May be NULL. */
    zf_err (*init)(zf_node *n, void **state);
    /** Free the state. Called once, after the last callback. May be NULL. */
    void (*fini)(void *state);
    /** Sources: produce and send. Called every `period`, or free-running
     *  while the outputs have room. NULL for a source that sends from a
     *  thread of its own (started in init, joined in fini). The waits of a
     *  free-running produce, in process and isolated (the one statement of
     *  them: the docs point here):
     *  - it returned ZF_OK having sent nothing: called again after a
     *    backoff, 100 us doubling to 10 ms;
     *  - it returned ZF_EAGAIN (not an error): nothing to send until an
     *    event; called again at zf_node_wake, or at the latest after the
     *    safety net of 10 ms (in process up to 20: the timer's tick);
     *  - zf_node_wake ends either wait at once;
     *  - it passed on the ZF_EAGAIN of a zf_try_send refused for room: it is
     *    parked as a blocked send parks it, called again once that output
     *    has room (a wake does not end this wait).
     *  A stop ends every wait; no produce is called after it. */
    zf_err (*produce)(void *state, zf_node *n);
    /** Operators and sinks: one capsule arrived on in_port. The callback
     *  owns *d: it may keep it, forward it (zf_send NULLs it) or leave it;
     *  whatever is left in *d is released by the runtime. */
    zf_err (*on_input)(void *state, zf_node *n, unsigned in_port, zf_data **d);
} zf_node_decl;

/** The symbol a node library exports. */
#define ZF_NODE_SYMBOL "zf_node_declare"
typedef const zf_node_decl *(*zf_node_declare_fn)(void);

/** Export `decl` (a zf_node_decl object) from a node library. */
#define ZF_NODE_EXPORT(decl)                                                                       \
    __attribute__((visibility("default"))) const zf_node_decl *zf_node_declare(void);              \
    const zf_node_decl *zf_node_declare(void)                                                      \
    {                                                                                              \
        return &(decl);                                                                            \
    }

/* ---- calls a node makes on itself ---- */

/** Send *d on output port `out_port`, consuming it (*d is NULL afterwards,
 *  on success and on error alike). Fan-out adds a reference per extra link.
 *  Inside a runtime callback it never sleeps: a full `block` link accepts
 *  the capsule and parks the node after the callback. From a thread the
 *  runtime does not own, it waits for room up to the node's send timeout
 *  (default 1 s). Errors: ZF_EINVAL (bad port), ZF_ETIMEDOUT, ZF_ECLOSED
 *  (the instance is stopping). */
ZF_EXPORT ZF_NODISCARD zf_err zf_send(zf_node *n, unsigned out_port, zf_data **d);

/** As zf_send with an explicit timeout for threads the runtime does not own
 *  (<0: forever). Inside a callback the timeout is ignored. Consumes *d. */
ZF_EXPORT ZF_NODISCARD zf_err zf_send_timeout(zf_node *n, unsigned out_port, zf_data **d,
                                              int64_t timeout_ns);

/** Never waits: ZF_EAGAIN when a `block` link of the port is full, and the
 *  caller keeps *d; otherwise as zf_send. In a free-running source's
 *  produce, the refusal parks the source on that room (see
 *  zf_node_decl.produce). */
ZF_EXPORT ZF_NODISCARD zf_err zf_try_send(zf_node *n, unsigned out_port, zf_data **d);

/** Index of the input / output port named `name`, or -1 (none, or n or
 *  name NULL). */
ZF_EXPORT int zf_node_input(const zf_node *n, const char *name);
ZF_EXPORT int zf_node_output(const zf_node *n, const char *name);

/** The node's (flattened) id, e.g. "detect" or "outer>inner"; owned by the
 *  runtime, valid until fini returns. The getters below return NULL for a
 *  NULL node. */
ZF_EXPORT const char *zf_node_id(const zf_node *n);

/** Where the node's code comes from: the library's path, or the Python
 *  script's for a `python:` node. Owned by the runtime. */
ZF_EXPORT const char *zf_node_source(const zf_node *n);

/** The UUID of the node's instance, and the name of its flow (the
 *  descriptor's `name`). Owned by the instance, valid while it lives. */
ZF_EXPORT const char *zf_node_instance_uuid(const zf_node *n);
ZF_EXPORT const char *zf_node_flow_name(const zf_node *n);

/** The node's merged configuration (an empty map when none). Owned by the
 *  runtime, valid until fini returns. */
ZF_EXPORT const zf_config *zf_node_config(const zf_node *n);

/** True once the instance is stopping (or the node was abandoned, or n is
 *  NULL): sources with their own thread should stop sending and return. */
ZF_EXPORT bool zf_node_stopping(const zf_node *n);

/** Call source n's produce again now: ends its ZF_EAGAIN wait or its
 *  backoff (zf_node_decl.produce says which waits). From any thread:
 *  another node's callback (the produce then runs next on that worker, no
 *  system call), a driver's thread. No-op for a NULL n, a node that is not
 *  a source, or before the instance started (start calls every source). */
ZF_EXPORT void zf_node_wake(zf_node *n);

/** Log through the process logger, scoped "node <id>"; nothing when no
 *  logger takes `level`. */
ZF_EXPORT void zf_node_log(const zf_node *n, zf_log_level level, const char *fmt, ...)
    ZF_PRINTF(3, 4);

/** Attach a message to the error the current callback is about to return
 *  (reported with the failure, e.g. init's, and as the node's state reason).
 *  The text is copied. NULL n is a no-op. */
ZF_EXPORT void zf_node_set_error(zf_node *n, const char *fmt, ...) ZF_PRINTF(2, 3);

/* ---- language hosts ---- */

/** A language host (e.g. the Python host, libzflow-python.so) exports
 *  ZF_HOST_SYMBOL: given a script and the ports and kind the descriptor
 *  gives, it declares a node whose callbacks run that script. `script` is
 *  the descriptor's name for it (the node's zf_node_source); `origin` the
 *  real path of the file the runtime opened and checked, and `code` (len
 *  code_len, not NUL-terminated) its text: the host runs exactly that text
 *  and makes importable only origin's folder, never the folder of a link
 *  named by `script`. The strings are borrowed for the call. The runtime
 *  calls ZF_HOST_FREE_SYMBOL with the declaration when it unloads the node.
 *  On error the host writes a message into err (errlen bytes). */
#define ZF_HOST_SYMBOL      "zf_host_declare"
#define ZF_HOST_FREE_SYMBOL "zf_host_free"
typedef zf_err (*zf_host_declare_fn)(const char *script, const char *origin, const char *code,
                                     size_t code_len, zf_node_kind kind, const zf_port_decl *inputs,
                                     size_t n_inputs, const zf_port_decl *outputs, size_t n_outputs,
                                     const zf_node_decl **out, char *err, size_t errlen);
typedef void (*zf_host_free_fn)(const zf_node_decl *decl);

#ifdef __cplusplus
}
#endif

#endif
