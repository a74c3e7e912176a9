/*
 * zflow — a zero-copy dataflow runtime.
 *
 * This is the one public C API: errors, logging, capsules (zf_data), the
 * shared-memory pool, bounded links, the node ABI, node configuration, and
 * the embedding API (load a descriptor, run an instance).
 *
 * Conventions
 * - Every function that can fail returns a zf_err; ZF_OK is 0.
 * - "Owns" means "must eventually release": a zf_data handle with
 *   zf_data_unref, other objects with their *_free / *_destroy function.
 * - Each function's comment states who owns what after the call.
 * - A failing call leaves a human-readable detail for the calling thread in
 *   zf_last_error() (like dlerror): what went wrong and what was expected.
 * - The library never prints; it logs through the logger set with
 *   zf_log_set().
 */
#ifndef ZFLOW_H
#define ZFLOW_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ZF_STATIC_DEFINE)
#define ZF_EXPORT
#elif defined(ZF_BUILDING_LIBRARY)
#define ZF_EXPORT __attribute__((visibility("default")))
#else
#define ZF_EXPORT
#endif

#if defined(__GNUC__)
#define ZF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ZF_PRINTF(f, a)
#endif

#define ZF_VERSION_MAJOR  0
#define ZF_VERSION_MINOR  1
#define ZF_VERSION_PATCH  0
#define ZF_VERSION_STRING "0.1.0"

/** The node ABI version. A node library built against another version is
 *  refused by the loader with ZF_EABI. */
#define ZF_ABI_VERSION 1u

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

typedef enum zf_err {
    ZF_OK = 0,
    ZF_EINVAL,    /**< invalid argument or invalid input */
    ZF_ENOMEM,    /**< out of memory, or a pool's max_bytes reached */
    ZF_EAGAIN,    /**< would block: link full (try_send) or empty (try_pop) */
    ZF_ETIMEDOUT, /**< a blocking call's timeout expired */
    ZF_ECLOSED,   /**< the link, node or instance is closed / stopping */
    ZF_ETYPE,     /**< type mismatch (ports, configuration value) */
    ZF_ENOTFOUND, /**< no such file, node, port, instance or key */
    ZF_EABI,      /**< not a zflow node library, or another ABI version */
    ZF_ESYS,      /**< a system call failed (errno in zf_last_error) */
    ZF_EPARSE,    /**< a descriptor or request could not be parsed */
    ZF_ESTATE,    /**< the operation is not valid in the current state */
    ZF_EBUSY,     /**< resource in use */
    ZF_EPERM,     /**< not permitted */
    ZF_EPROTO,    /**< control-protocol violation */
    ZF_ENODE,     /**< a node callback reported failure */
    ZF_EEXIST,    /**< already exists */
    ZF_ERR_COUNT
} zf_err;

/** A static, English description of an error code ("invalid argument"). */
ZF_EXPORT const char *zf_strerror(zf_err err);

/** The symbolic name of an error code ("ZF_EINVAL"). */
ZF_EXPORT const char *zf_errname(zf_err err);

/** Detail of the last failed zflow call on this thread (never NULL; "" when
 *  none). The string is owned by the library and valid until the next zflow
 *  call on this thread. */
ZF_EXPORT const char *zf_last_error(void);

/* ------------------------------------------------------------------ */
/* Logging and clock                                                   */
/* ------------------------------------------------------------------ */

typedef enum zf_log_level {
    ZF_LOG_ERROR = 0,
    ZF_LOG_WARN,
    ZF_LOG_INFO,
    ZF_LOG_DEBUG,
    ZF_LOG_TRACE
} zf_log_level;

/** A logger: `scope` names the component or node ("pool", "node camera"),
 *  `msg` is one line without a newline. Called from any thread; both strings
 *  are valid only during the call. */
typedef void (*zf_log_fn)(void *arg, zf_log_level level, const char *scope, const char *msg);

/** Install the process-wide logger (NULL: discard everything) and the most
 *  verbose level it receives. Not owned: `arg` must outlive its use. */
ZF_EXPORT void zf_log_set(zf_log_fn fn, void *arg, zf_log_level max_level);

/** A ready-made logger for applications: one line to stderr with a UTC
 *  timestamp and the level. The library never installs it by itself. */
ZF_EXPORT void zf_log_stderr(void *arg, zf_log_level level, const char *scope, const char *msg);

/** Parse "error", "warn", "info", "debug", "trace". ZF_EINVAL otherwise. */
ZF_EXPORT zf_err zf_log_level_parse(const char *s, zf_log_level *out);

/** Monotonic clock in nanoseconds (CLOCK_MONOTONIC). */
ZF_EXPORT uint64_t zf_clock_ns(void);

/** Parse a duration ("16ms", "1.5s", "250us", "2m", "100ns") into ns.
 *  A bare number is refused (units are required). ZF_EINVAL on error. */
ZF_EXPORT zf_err zf_parse_duration(const char *s, int64_t *out_ns);

/** Parse a size ("512MiB", "10MB", "4096", "64KiB") into bytes.
 *  KiB/MiB/GiB are powers of 1024, kB/MB/GB of 1000. ZF_EINVAL on error. */
ZF_EXPORT zf_err zf_parse_size(const char *s, uint64_t *out_bytes);

/* ------------------------------------------------------------------ */
/* Capsules and the pool                                               */
/* ------------------------------------------------------------------ */

/** A capsule: a reference-counted byte buffer plus metadata. A capsule with
 *  one reference is unique and writable; once shared it is read-only. */
typedef struct zf_data zf_data;

/** A shared-memory pool (memfd-backed) that capsules are allocated from. */
typedef struct zf_pool zf_pool;

/** A node, as seen by its own callbacks. */
typedef struct zf_node zf_node;

typedef struct zf_pool_config {
    uint64_t max_bytes;     /**< cap on bytes in use; 0 = unlimited */
    uint64_t segment_bytes; /**< the first small-block segment (each next one twice as
                                 large, up to 64 MiB); 0 = 256 KiB */
    const char *name;       /**< for logs and memfd names; may be NULL */
} zf_pool_config;

typedef struct zf_pool_stats {
    uint64_t bytes_in_use;     /**< bytes of blocks handed out, headers included */
    uint64_t bytes_high_water; /**< maximum of bytes_in_use */
    uint64_t blocks_in_use;    /**< capsules alive in this pool */
    uint64_t allocs;           /**< successful allocations */
    uint64_t frees;            /**< blocks returned */
    uint64_t alloc_failures;   /**< allocations refused (cap reached or no memory) */
    uint64_t bytes_mapped;     /**< shared memory mapped (in use + cached free) */
    uint64_t segments;         /**< memfd segments mapped */
} zf_pool_stats;

/** Create a pool. `cfg` may be NULL (defaults). On ZF_OK the caller owns
 *  *out and releases it with zf_pool_destroy. Errors: ZF_EINVAL, ZF_ENOMEM,
 *  ZF_ESYS (memfd_create or mmap failed). */
ZF_EXPORT zf_err zf_pool_create(const zf_pool_config *cfg, zf_pool **out);

/** Give up the caller's ownership of the pool. Memory is unmapped at once if
 *  no capsule of the pool is alive, otherwise when the last one is released.
 *  NULL is a no-op. */
ZF_EXPORT void zf_pool_destroy(zf_pool *pool);

/** Snapshot of the pool's accounting (lock-free, approximate under
 *  concurrent use). */
ZF_EXPORT void zf_pool_stats_get(const zf_pool *pool, zf_pool_stats *out);

/** Allocate a unique, writable capsule of `len` bytes from `pool`. The bytes
 *  are not zeroed. On ZF_OK the caller owns *out (one reference).
 *  Errors: ZF_EINVAL (NULL argument), ZF_ENOMEM (cap reached or the system
 *  refused more memory; never an OOM kill), ZF_ESYS. */
ZF_EXPORT zf_err zf_pool_alloc(zf_pool *pool, size_t len, zf_data **out);

/** Pre-fault memory for `count` capsules of `len` bytes, so that the first
 *  frames of a pipeline do not pay for fresh pages (about 10 us per 4 KiB
 *  page on small VMs): allocates them and releases them to the pool's free
 *  lists. Counts against max_bytes while it runs. Errors: as zf_pool_alloc. */
ZF_EXPORT zf_err zf_pool_reserve(zf_pool *pool, size_t len, size_t count);

/** Pre-fault the node's instance pool for `count` capsules of `len` bytes
 *  (see zf_pool_reserve); call it from init. */
ZF_EXPORT zf_err zf_data_reserve(zf_node *node, size_t len, size_t count);

/** Allocate from the pool of the node's instance; as zf_pool_alloc. */
ZF_EXPORT zf_err zf_data_alloc(zf_node *node, size_t len, zf_data **out);

/** A release callback for pinned memory. */
typedef void (*zf_release_fn)(void *arg);

/** Pin memory the caller owns into a capsule, without copying it. The
 *  runtime calls release(arg) exactly once, on whatever thread drops the
 *  last reference anywhere. `release` may be NULL (nothing to release).
 *  The memory must stay valid and unchanged until then. On ZF_OK the caller
 *  owns *out (one reference) and the capsule owns the memory; on error
 *  nothing was taken and release is not called. Errors: ZF_EINVAL, ZF_ENOMEM. */
ZF_EXPORT zf_err zf_data_wrap(void *ptr, size_t len, zf_release_fn release, void *arg,
                              zf_data **out);

/** Make a capsule over memory that lives as long as the process (string
 *  literals, globals). An address on the calling thread's stack is refused
 *  with ZF_EINVAL (use zf_data_alloc or zf_data_wrap instead). On ZF_OK the
 *  caller owns *out. */
ZF_EXPORT zf_err zf_data_static(const void *ptr, size_t len, zf_data **out);

/** The bytes of a capsule (read-only once shared). */
ZF_EXPORT const void *zf_data_ptr(const zf_data *d);
/** The length in bytes. */
ZF_EXPORT size_t zf_data_len(const zf_data *d);
/** Bytes the buffer can hold (>= len; pool capsules may have slack). */
ZF_EXPORT size_t zf_data_capacity(const zf_data *d);

/** Writable access. A unique capsule returns its own buffer. A shared one is
 *  first copied into a new unique pool capsule (copy on write): *d is
 *  replaced by the copy and the caller's reference to the original is
 *  dropped; other holders keep the untouched original. Returns NULL (and *d
 *  is unchanged) when the copy cannot be allocated. */
ZF_EXPORT void *zf_data_mut(zf_data **d);

/** Shrink or grow the length of a unique capsule within its capacity.
 *  Errors: ZF_EINVAL (len > capacity), ZF_ESTATE (shared capsule). */
ZF_EXPORT zf_err zf_data_set_len(zf_data *d, size_t len);

/** Take one more reference; returns d. The caller owns the new reference. */
ZF_EXPORT zf_data *zf_data_ref(zf_data *d);

/** Drop one reference; the last one frees the buffer (back to the pool, or
 *  the release callback). NULL is a no-op. */
ZF_EXPORT void zf_data_unref(zf_data *d);

/** Number of references (a snapshot; for tests and diagnostics). */
ZF_EXPORT unsigned zf_data_refcount(const zf_data *d);
/** True when the caller holds the only reference. */
ZF_EXPORT bool zf_data_is_unique(const zf_data *d);

/** Capsules found written while shared, in this process: with
 *  ZF_CHECK_SHARED=1 in the environment (a debug mode: a shared capsule's
 *  payload is summed when it becomes shared and checked whenever one of its
 *  references is released; each finding is logged at ERROR), else 0. */
ZF_EXPORT uint64_t zf_debug_shared_writes(void);

/** Metadata: timestamp (zf_clock_ns when first sent, unless set; 0 before) and
 *  a sequence number (set by zf_send per output port unless set). */
ZF_EXPORT uint64_t zf_data_timestamp(const zf_data *d);
ZF_EXPORT uint64_t zf_data_seq(const zf_data *d);
/** Setters require a unique capsule (ZF_ESTATE otherwise). */
ZF_EXPORT zf_err zf_data_set_timestamp(zf_data *d, uint64_t ns);
ZF_EXPORT zf_err zf_data_set_seq(zf_data *d, uint64_t seq);

/** Process-wide counters of pinned memory: capsules made by zf_data_wrap and
 *  release callbacks invoked so far. */
typedef struct zf_wrap_stats {
    uint64_t wrapped;
    uint64_t released;
} zf_wrap_stats;
ZF_EXPORT void zf_wrap_stats_get(zf_wrap_stats *out);

/* ------------------------------------------------------------------ */
/* Links: bounded queues of capsules                                   */
/* ------------------------------------------------------------------ */

typedef enum zf_policy {
    ZF_POLICY_BLOCK = 0,   /**< a full link makes the producer wait */
    ZF_POLICY_DROP_OLDEST, /**< a full link drops its oldest capsule */
    ZF_POLICY_DROP_NEWEST  /**< a full link drops the capsule being sent */
} zf_policy;

/** "block", "drop_oldest", "drop_newest", or NULL for an unknown value. */
ZF_EXPORT const char *zf_policy_name(zf_policy p);

typedef struct zf_link_config {
    uint32_t capacity;  /**< messages; 0 = default (16) */
    uint64_t max_bytes; /**< bytes queued; 0 = no byte limit */
    zf_policy policy;
} zf_link_config;

typedef struct zf_link_stats {
    uint64_t depth;      /**< messages queued now */
    uint64_t bytes;      /**< bytes queued now */
    uint64_t high_water; /**< maximum depth seen */
    uint64_t enqueued;
    uint64_t dequeued;
    uint64_t dropped;    /**< by the policy, the breaker or closing */
    uint64_t blocked_ns; /**< time producers spent waiting for room */
    uint32_t capacity;
    zf_policy policy;
} zf_link_stats;

typedef struct zf_link zf_link;

/** Create a link (multi-producer, multi-consumer safe). `cfg` may be NULL.
 *  On ZF_OK the caller owns *out. Errors: ZF_EINVAL, ZF_ENOMEM. */
ZF_EXPORT zf_err zf_link_create(const zf_link_config *cfg, zf_link **out);

/** Destroy a link; capsules still queued are released. NULL is a no-op.
 *  No thread may be using the link. */
ZF_EXPORT void zf_link_destroy(zf_link *link);

/** Enqueue *d, consuming it: *d is NULL afterwards whatever the result.
 *  A full `block` link waits up to timeout_ns (<0: forever) for room;
 *  `drop_oldest` drops the oldest queued capsule; `drop_newest` drops *d
 *  (counted in `dropped`, result ZF_OK). Errors: ZF_ETIMEDOUT (dropped),
 *  ZF_ECLOSED (link closed; dropped), ZF_EINVAL. */
ZF_EXPORT zf_err zf_link_push(zf_link *link, zf_data **d, int64_t timeout_ns);

/** As zf_link_push, but a full `block` link returns ZF_EAGAIN at once and
 *  the caller keeps *d. */
ZF_EXPORT zf_err zf_link_try_push(zf_link *link, zf_data **d);

/** Fan-out: enqueue one capsule on n links, adding a reference per extra
 *  link. Consumes *d. Returns the first error met (each link still gets its
 *  copy of the pointer when it has room). */
ZF_EXPORT zf_err zf_link_push_all(zf_link *const *links, size_t n, zf_data **d, int64_t timeout_ns);

/** Dequeue into *out (the caller owns it). Waits up to timeout_ns (<0:
 *  forever): it spins briefly, then sleeps on a futex. Errors: ZF_ETIMEDOUT,
 *  ZF_ECLOSED (closed and empty: end of stream). */
ZF_EXPORT zf_err zf_link_pop(zf_link *link, zf_data **out, int64_t timeout_ns);

/** As zf_link_pop without waiting: ZF_EAGAIN when empty. */
ZF_EXPORT zf_err zf_link_try_pop(zf_link *link, zf_data **out);

/** End of stream: later pushes fail with ZF_ECLOSED; consumers drain what
 *  is queued, then get ZF_ECLOSED. Wakes every waiter. Idempotent. */
ZF_EXPORT void zf_link_close(zf_link *link);

ZF_EXPORT void zf_link_stats_get(const zf_link *link, zf_link_stats *out);

/* ------------------------------------------------------------------ */
/* Node configuration: a read-only, JSON-like tree                     */
/* ------------------------------------------------------------------ */

typedef struct zf_config zf_config;
typedef struct zf_diag zf_diag; /* diagnostics (see Descriptors) */

typedef enum zf_config_kind {
    ZF_CFG_NULL = 0,
    ZF_CFG_BOOL,
    ZF_CFG_INT,
    ZF_CFG_FLOAT,
    ZF_CFG_STRING,
    ZF_CFG_SEQ,
    ZF_CFG_MAP
} zf_config_kind;

/** Kind of a value; ZF_CFG_NULL for a NULL pointer. */
ZF_EXPORT zf_config_kind zf_config_kind_of(const zf_config *c);
/** Member `key` of a map (a dotted path "a.b.c" descends maps), or NULL. */
ZF_EXPORT const zf_config *zf_config_get(const zf_config *c, const char *key);
/** Number of entries of a map or sequence, 0 otherwise. */
ZF_EXPORT size_t zf_config_len(const zf_config *c);
/** Entry i of a sequence or map (value), or NULL. */
ZF_EXPORT const zf_config *zf_config_at(const zf_config *c, size_t i);
/** Key of entry i of a map, or NULL. */
ZF_EXPORT const char *zf_config_key_at(const zf_config *c, size_t i);
/** Scalar as text (the source text of any scalar), or NULL if not a scalar. */
ZF_EXPORT const char *zf_config_text(const zf_config *c);

/** Typed lookups of `key` (dotted path) with a default when absent. A value
 *  of the wrong kind returns ZF_ETYPE and leaves *out at the default. The
 *  string stays owned by the tree. */
ZF_EXPORT zf_err zf_config_string(const zf_config *c, const char *key, const char *def,
                                  const char **out);
ZF_EXPORT zf_err zf_config_int(const zf_config *c, const char *key, int64_t def, int64_t *out);
ZF_EXPORT zf_err zf_config_float(const zf_config *c, const char *key, double def, double *out);
ZF_EXPORT zf_err zf_config_bool(const zf_config *c, const char *key, bool def, bool *out);

/** Parse JSON text into a tree (objects are maps, arrays sequences). On
 *  ZF_OK the caller owns *out (zf_config_free). On ZF_EPARSE err says where
 *  and what (errlen bytes; err may be NULL). Depth is limited to 64. */
ZF_EXPORT zf_err zf_json_parse(const char *text, size_t len, zf_config **out, char *err,
                               size_t errlen);

/** Parse YAML text (one document) into a tree; problems go to diag (may be
 *  NULL), named `name`. On ZF_OK the caller owns *out (zf_config_free). */
ZF_EXPORT zf_err zf_yaml_parse(const char *text, size_t len, const char *name, zf_config **out,
                               zf_diag *diag);

/** The tree as JSON text; the caller frees it. NULL on allocation failure. */
ZF_EXPORT char *zf_config_to_json(const zf_config *c);

/** Free a tree returned by zf_json_parse / zf_yaml_parse. NULL is a no-op. */
ZF_EXPORT void zf_config_free(zf_config *c);

/* ------------------------------------------------------------------ */
/* The node ABI                                                        */
/* ------------------------------------------------------------------ */

typedef enum zf_node_kind { ZF_SOURCE = 1, ZF_OPERATOR = 2, ZF_SINK = 3 } zf_node_kind;

/** "source", "operator", "sink". */
ZF_EXPORT const char *zf_node_kind_name(zf_node_kind k);

typedef struct zf_port_decl {
    const char *name; /**< port id, as in the descriptor */
    const char *type; /**< "image/bgr8", ...; NULL or "any" accepts all */
} zf_port_decl;

/** What a node library declares. Exported through ZF_NODE_EXPORT. */
typedef struct zf_node_decl {
    uint32_t abi;      /**< ZF_ABI_VERSION */
    zf_node_kind kind; /**< ZF_SOURCE, ZF_OPERATOR or ZF_SINK */
    const char *name;  /**< for messages; may be NULL */
    const zf_port_decl *inputs;
    size_t n_inputs;
    const zf_port_decl *outputs;
    size_t n_outputs;
    /** Read the configuration, allocate state. Non-OK fails the load; a
     *  message given with zf_node_set_error is reported. May be NULL. */
    zf_err (*init)(zf_node *n, void **state);
    /** Free the state. Called once, after the last callback. May be NULL. */
    void (*fini)(void *state);
    /** Sources: produce and send. Called every `period`, or free-running
     *  while the outputs have room. NULL for a source that sends from a
     *  thread of its own (started in init, joined in fini). */
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
ZF_EXPORT zf_err zf_send(zf_node *n, unsigned out_port, zf_data **d);

/** As zf_send with an explicit timeout for threads the runtime does not own
 *  (<0: forever). Inside a callback the timeout is ignored. */
ZF_EXPORT zf_err zf_send_timeout(zf_node *n, unsigned out_port, zf_data **d, int64_t timeout_ns);

/** Never waits: ZF_EAGAIN when a `block` link of the port is full, and the
 *  caller keeps *d; otherwise as zf_send. */
ZF_EXPORT zf_err zf_try_send(zf_node *n, unsigned out_port, zf_data **d);

/** Index of the input / output port named `name`, or -1. */
ZF_EXPORT int zf_node_input(const zf_node *n, const char *name);
ZF_EXPORT int zf_node_output(const zf_node *n, const char *name);

/** The node's (flattened) id, e.g. "detect" or "outer>inner". */
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

/** True once the instance is stopping: sources with their own thread
 *  should stop sending and return. */
ZF_EXPORT bool zf_node_stopping(const zf_node *n);

/** Log through the process logger, scoped "node <id>". */
ZF_EXPORT void zf_node_log(const zf_node *n, zf_log_level level, const char *fmt, ...)
    ZF_PRINTF(3, 4);

/** Attach a message to the error the current callback is about to return
 *  (reported with the failure, e.g. init's). */
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

/* ------------------------------------------------------------------ */
/* Descriptors                                                         */
/* ------------------------------------------------------------------ */

/** A loaded, flattened, structurally valid dataflow descriptor. */
typedef struct zf_flow zf_flow;

/* zf_diag (declared above): every problem found, each with its place. */

typedef struct zf_diag_entry {
    const char *file;    /**< descriptor file (may be "" for a string) */
    unsigned line;       /**< 1-based; 0 when unknown */
    unsigned col;        /**< 1-based; 0 when unknown */
    const char *field;   /**< the field concerned ("links[2].to.node"), or "" */
    const char *message; /**< what is wrong and what was expected */
} zf_diag_entry;

/** Create an empty diagnostics list; the caller owns it. */
ZF_EXPORT zf_diag *zf_diag_new(void);
ZF_EXPORT void zf_diag_free(zf_diag *d);
ZF_EXPORT size_t zf_diag_count(const zf_diag *d);
/** Entry i (owned by d), or NULL. */
ZF_EXPORT const zf_diag_entry *zf_diag_get(const zf_diag *d, size_t i);
/** All entries as "file:line:col: field: message" lines; free() it. */
ZF_EXPORT char *zf_diag_format(const zf_diag *d);

typedef struct zf_flow_options {
    const char *const *vars; /**< "KEY=VALUE" strings overriding `vars` */
    size_t n_vars;
    /** When set, node files (`descriptor:`) are read only from these folders
     *  (absolute real paths, each ending with '/'); others are refused
     *  without being read. A daemon passes its --lib-path folders. */
    const char *const *include_dirs;
    size_t n_include_dirs;
    /** true: a node file (what `descriptor:` names: ports and `library`,
     *  `uri` or `python`, or a composite's `operators`; no `sources`,
     *  `sinks`, `name` or `flow`) is loaded as a flow of that one node (a
     *  composite: its nodes), its kind told by its ports, its outer ports
     *  left unlinked; zf_flow_is_node_file() says so. false: such a file is
     *  refused with one error saying what it is. */
    bool node_file;
} zf_flow_options;

/** Load and flatten a descriptor file and check its structure (ids, ports,
 *  links, types, sizes, durations). Node libraries are not opened (see
 *  zf_flow_check_libraries). `opt` may be NULL. Every problem found is added
 *  to `diag` (may be NULL). On ZF_OK the caller owns *out (zf_flow_free).
 *  Errors: ZF_ENOTFOUND (file), ZF_EPARSE (YAML), ZF_EINVAL (content). */
ZF_EXPORT zf_err zf_flow_load(const char *path, const zf_flow_options *opt, zf_diag *diag,
                              zf_flow **out);

/** As zf_flow_load on text; relative paths resolve against `base_dir`
 *  (NULL: the current directory) and messages name `name`. */
ZF_EXPORT zf_err zf_flow_load_string(const char *text, size_t len, const char *name,
                                     const char *base_dir, const zf_flow_options *opt,
                                     zf_diag *diag, zf_flow **out);

ZF_EXPORT void zf_flow_free(zf_flow *f);

/** The flow's `name` (`flow` in Zenoh-Flow 0.5 files; a node file's `id`
 *  or file name). Owned by f. */
ZF_EXPORT const char *zf_flow_name(const zf_flow *f);

/** Whether f was loaded from a node file (zf_flow_options.node_file). */
ZF_EXPORT bool zf_flow_is_node_file(const zf_flow *f);

/** The instance id the descriptor gives (`id`, Zenoh-Flow 0.6, or `uuid`):
 *  a lower-case UUID owned by f, or NULL (each instance gets a new one). */
ZF_EXPORT const char *zf_flow_instance_id(const zf_flow *f);

/** Open every node library (and Python file) and check it declares the kind,
 *  ports and types the descriptor says. Problems go to diag. Errors:
 *  ZF_ENOTFOUND, ZF_EABI, ZF_ETYPE (first problem's code). */
ZF_EXPORT zf_err zf_flow_check_libraries(const zf_flow *f, zf_diag *diag);

/** Number of (flattened) nodes, and node i's id, code (library path or
 *  Python script), and worker from `mapping` (NULL when unmapped). The
 *  strings are owned by f. */
ZF_EXPORT size_t zf_flow_node_count(const zf_flow *f);
ZF_EXPORT const char *zf_flow_node_id(const zf_flow *f, size_t i);
/** Node i's kind (ZF_SOURCE, ZF_OPERATOR, ZF_SINK; 0 when out of range). */
ZF_EXPORT zf_node_kind zf_flow_node_kind(const zf_flow *f, size_t i);
ZF_EXPORT const char *zf_flow_node_source(const zf_flow *f, size_t i);
ZF_EXPORT const char *zf_flow_node_worker(const zf_flow *f, size_t i);

/** The flattened graph as JSON (nodes, links, mapping). free() it. */
ZF_EXPORT char *zf_flow_to_json(const zf_flow *f);

/** The graph as Graphviz DOT. free() it. */
ZF_EXPORT char *zf_flow_to_dot(const zf_flow *f);

/* ------------------------------------------------------------------ */
/* Runtime: workers, instances                                         */
/* ------------------------------------------------------------------ */

/** Worker threads, timers and the watchdog, shared by instances. */
typedef struct zf_runtime zf_runtime;

/** A running dataflow. */
typedef struct zf_instance zf_instance;

typedef struct zf_runtime_options {
    unsigned workers;   /**< worker threads; 0 = one per online CPU */
    const char *worker; /**< this worker's name (for `mapping`); may be NULL */
} zf_runtime_options;

/** Start worker threads. `opt` may be NULL. Caller owns *out
 *  (zf_runtime_destroy). Errors: ZF_ENOMEM, ZF_ESYS. */
ZF_EXPORT zf_err zf_runtime_create(const zf_runtime_options *opt, zf_runtime **out);

/** Stop the workers. Every instance must have been destroyed first. */
ZF_EXPORT void zf_runtime_destroy(zf_runtime *rt);

/** A thread the runtime left behind inside node code: a callback stuck at
 *  stop, or an init or fini that outlived its bound (ten times the node's
 *  hang_timeout). It may spin forever; it is never killed (it runs in this
 *  process), only shown. */
typedef struct zf_abandoned_thread {
    const char *node;          /**< the node's id */
    const char *instance;      /**< its instance's UUID */
    const char *instance_name; /**< its instance's name */
    const char *in;            /**< "callback", "init" or "fini" */
    int tid;                   /**< the thread's kernel id (0: unknown) */
    bool alive;                /**< the thread still exists */
    uint64_t cpu_ns;           /**< CPU time the thread has used (if alive) */
    uint64_t since_ns;         /**< zf_clock_ns when it was abandoned */
} zf_abandoned_thread;

/** Every thread abandoned so far, oldest first: *out is one array the
 *  caller frees with free() (the strings live in the runtime, valid until
 *  zf_runtime_destroy), *n its length (0 and NULL when none). ZF_ENOMEM. */
ZF_EXPORT zf_err zf_runtime_abandoned(zf_runtime *rt, zf_abandoned_thread **out, size_t *n);

/** The node whose code runs on the calling thread, as "node 'ID' of
 *  instance UUID (NAME)", into buf (len bytes, NUL-terminated); 0 (and buf
 *  "") when none does. Async-signal-safe: for a crash handler. */
ZF_EXPORT size_t zf_crash_context(char *buf, size_t len);

typedef enum zf_instance_state {
    ZF_INSTANCE_CREATED = 0,
    ZF_INSTANCE_RUNNING,
    ZF_INSTANCE_SUSPENDED,
    ZF_INSTANCE_DRAINING,
    ZF_INSTANCE_DESTROYED,
    ZF_INSTANCE_FAILED
} zf_instance_state;

ZF_EXPORT const char *zf_instance_state_name(zf_instance_state s);

typedef enum zf_node_state {
    ZF_NODE_RUNNING = 0,
    ZF_NODE_DEGRADED, /**< hung or failing; its inputs shed load */
    ZF_NODE_FAILED,   /**< gave up (init failed, or abandoned at stop) */
    ZF_NODE_DONE      /**< saw end of stream on every input */
} zf_node_state;

ZF_EXPORT const char *zf_node_state_name(zf_node_state s);

typedef struct zf_instance_options {
    const char *name;         /**< instance name; NULL: the flow's name */
    uint64_t max_memory;      /**< pool cap; 0: the descriptor's, else none */
    int64_t drain_timeout_ns; /**< 0: the descriptor's, else 2 s */
    /** When set, node code (libraries, Python files) loads only from these
     *  folders (absolute real paths, each ending with '/'). A library is
     *  checked on the file actually opened and loaded from that descriptor,
     *  so a path swapped after the check cannot escape. A Python file is
     *  read once from the descriptor checked, and that text runs. Node code
     *  must be a regular file. */
    const char *const *code_dirs;
    size_t n_code_dirs;
    /** With code_dirs: also accept code that users other than root and this
     *  process's user could change (zf_code_path_check refuses it by
     *  default). */
    bool allow_writable_code;
    /** Run every node in a process of its own (as `isolation: process`;
     *  see docs/isolation.md). */
    bool isolate_all;
} zf_instance_options;

/** Whether `path` (absolute, a file or a folder) and every folder above it
 *  can be changed only by root or this process's user: each belongs to one
 *  of them, `path` is writable by no one else (group-writable only for this
 *  process's group), and a folder above it writable by others is sticky
 *  (like /tmp). ZF_OK, or ZF_EPERM naming the component and why
 *  (zf_last_error); ZF_ENOTFOUND if a component is missing. Nothing is
 *  kept. */
ZF_EXPORT zf_err zf_code_path_check(const char *path);

/** Load every node library, create links and the pool, `init` every node.
 *  The instance is CREATED. `f` is copied; the caller keeps it. Problems go
 *  to diag (may be NULL). Caller owns *out (zf_instance_destroy).
 *  Errors: ZF_ENOTFOUND, ZF_EABI, ZF_ETYPE, ZF_ENODE (an init failed). */
ZF_EXPORT zf_err zf_instance_create(zf_runtime *rt, const zf_flow *f,
                                    const zf_instance_options *opt, zf_diag *diag,
                                    zf_instance **out);

/** The instance's UUID v4 ("xxxxxxxx-xxxx-4xxx-..."). Owned by the instance. */
ZF_EXPORT const char *zf_instance_uuid(const zf_instance *inst);
ZF_EXPORT const char *zf_instance_name(const zf_instance *inst);
ZF_EXPORT zf_instance_state zf_instance_state_get(const zf_instance *inst);

/** CREATED or SUSPENDED -> RUNNING. ZF_ESTATE otherwise. */
ZF_EXPORT zf_err zf_instance_start(zf_instance *inst);

/** RUNNING -> SUSPENDED: sources stop producing; queues and memory are kept
 *  and operators keep draining what is queued. ZF_ESTATE otherwise. */
ZF_EXPORT zf_err zf_instance_suspend(zf_instance *inst);

/** The report of a graceful stop. */
typedef struct zf_stop_report {
    uint64_t in_flight_at_stop;  /**< capsules queued when the sources stopped */
    uint64_t delivered_in_drain; /**< capsules consumed during the drain */
    uint64_t dropped;            /**< total dropped on every link */
    uint64_t dropped_in_drain;   /**< dropped while draining */
    uint64_t releases;           /**< release callbacks invoked by this instance */
    uint64_t pool_bytes_before;  /**< pool bytes in use when the stop began */
    uint64_t pool_bytes_after;   /**< after every node's fini */
    uint64_t bytes_abandoned;    /**< of those, held by abandoned nodes (released
                                      if they ever return) */
    uint64_t bytes_leaked;       /**< after - abandoned: held by nobody; must be 0 */
    uint64_t pool_high_water;
    uint64_t nodes_abandoned; /**< hung nodes left behind */
    uint64_t shared_writes;   /**< with ZF_CHECK_SHARED=1 in the environment: capsules
                                   whose bytes changed while several nodes held them
                                   (a node wrote through zf_data_ptr); else 0 */
    int64_t drain_ns;         /**< how long the drain took */
    bool drain_timed_out;
    uint64_t child_deaths;    /**< isolated nodes' processes that died (not counting the
                                   normal exit at stop) */
    uint64_t refs_reclaimed;  /**< references their ledgers released on their behalf */
    uint64_t bytes_reclaimed; /**< the payload bytes of those capsules */
    char holders[512];        /**< who holds leaked bytes, or abandoned nodes */
} zf_stop_report;

/** Graceful stop: stop sources, let end-of-stream flow through every link
 *  until every sink has seen it (bounded by the drain timeout), fini every
 *  node in reverse topological order, release every capsule. Then the
 *  instance is DESTROYED. `report` may be NULL. Idempotent. */
ZF_EXPORT zf_err zf_instance_stop(zf_instance *inst, zf_stop_report *report);

/** Stop (if not yet) and free the instance. NULL is a no-op. */
ZF_EXPORT void zf_instance_destroy(zf_instance *inst);

/** Statistics of a node. */
typedef struct zf_node_stats {
    const char *id; /**< owned by the instance */
    zf_node_kind kind;
    zf_node_state state;
    const char *reason;        /**< why DEGRADED/FAILED ("" otherwise) */
    uint64_t since_ns;         /**< zf_clock_ns when the state began */
    uint64_t callbacks;        /**< produce / on_input calls completed */
    uint64_t errors;           /**< callbacks that returned non-OK */
    uint64_t alloc_failures;   /**< ZF_ENOMEM seen by zf_data_alloc */
    uint64_t sent;             /**< capsules sent */
    uint64_t last_progress_ns; /**< zf_clock_ns of the last completed callback */
    uint64_t busy_ns;          /**< time spent in callbacks */
    uint64_t degraded_count;   /**< times it became DEGRADED */
    /* isolation: process (0 / NULL otherwise) */
    int pid;               /**< its process now; 0: none (down, or not isolated) */
    uint64_t restarts;     /**< times its process was restarted */
    uint64_t deaths;       /**< times its process ended (the last at stop included) */
    uint64_t copies;       /**< payloads copied crossing the boundary (wrapped or static
                                memory, copied into the pool once); pool capsules: 0 */
    const char *last_exit; /**< how its process last ended ("killed by signal 11
                                (SIGSEGV)", ...), "" if it has not; owned by the stats */
} zf_node_stats;

/** Statistics of a link between two ports. */
typedef struct zf_link_info {
    const char *from; /**< "node.port", owned by the instance */
    const char *to;
    zf_link_stats stats;
} zf_link_info;

typedef struct zf_instance_stats {
    zf_instance_state state;
    uint64_t state_since_ns;
    zf_pool_stats pool;
    zf_wrap_stats wraps; /**< this instance's pinned capsules */
    size_t n_nodes;
    zf_node_stats *nodes;
    size_t n_links;
    zf_link_info *links;
} zf_instance_stats;

/** Snapshot of every counter. Caller owns *out (zf_instance_stats_free). */
ZF_EXPORT zf_err zf_instance_stats_get(zf_instance *inst, zf_instance_stats **out);
ZF_EXPORT void zf_instance_stats_free(zf_instance_stats *s);

/* ------------------------------------------------------------------ */
/* Control protocol: zfctl <-> zfd (docs/protocol.md)                  */
/* ------------------------------------------------------------------ */

/** Version spoken by this library; requests carry it as "v". */
#define ZF_PROTOCOL_VERSION 1
/** Largest frame (request or response) accepted. */
#define ZF_FRAME_MAX (16u << 20)

typedef enum zf_op {
    ZF_OP_HELLO = 0, /**< who are you: version, worker name, pid */
    ZF_OP_DEPLOY,    /**< descriptor text -> a new instance's UUID */
    ZF_OP_LIST,      /**< every instance: uuid, name, status, workers */
    ZF_OP_STATUS,    /**< one instance in detail */
    ZF_OP_START,
    ZF_OP_SUSPEND,
    ZF_OP_RESUME,
    ZF_OP_DESTROY, /**< graceful stop; the stop report */
    ZF_OP_WORKERS, /**< the daemons reachable */
    ZF_OP_COUNT
} zf_op;

/** "hello", "deploy", ... or NULL. */
ZF_EXPORT const char *zf_op_name(zf_op op);

/** A decoded request. Strings are owned by the request. */
typedef struct zf_request {
    uint32_t version; /**< protocol version of the sender */
    zf_op op;
    const char *id;          /**< start/suspend/resume/status/destroy: UUID,
                                  unique UUID prefix or instance name */
    const char *descriptor;  /**< deploy: the descriptor's text */
    const char *path;        /**< deploy: the descriptor's absolute path */
    const char *name;        /**< deploy: instance name (may be NULL) */
    const char *const *vars; /**< deploy: "KEY=VALUE" */
    size_t n_vars;
    bool start; /**< deploy: start at once (default true) */
} zf_request;

/** Decode a request (JSON text). Every field is checked for presence, kind
 *  and size; on error err says which and what was expected. On ZF_OK the
 *  caller owns *out (zf_request_free). Errors: ZF_EPARSE (not JSON),
 *  ZF_EPROTO (not a valid request), ZF_ENOMEM. */
ZF_EXPORT zf_err zf_request_decode(const char *text, size_t len, zf_request **out, char *err,
                                   size_t errlen);
/** Encode a request as JSON (version set to ZF_PROTOCOL_VERSION); free() it. */
ZF_EXPORT char *zf_request_encode(const zf_request *r);
ZF_EXPORT void zf_request_free(zf_request *r);

/** A success response carrying `result_json` (a JSON value; NULL: null), or
 *  an error response. The caller frees the text. */
ZF_EXPORT char *zf_response_ok(const char *result_json);
ZF_EXPORT char *zf_response_error(zf_err code, const char *fmt, ...) ZF_PRINTF(2, 3);

/** The default control socket: $ZF_SOCKET, else $XDG_RUNTIME_DIR/zflow/zfd.sock,
 *  else /run/zflow/zfd.sock for root, else /tmp/zflow-<uid>/zfd.sock. */
ZF_EXPORT void zf_control_default_socket(char *buf, size_t len);

/** A connection to a daemon. */
typedef struct zf_client zf_client;

/** Connect to the daemon at `path` (NULL: the default). On ZF_OK the caller
 *  owns *out (zf_client_close). Errors: ZF_ENOTFOUND (no daemon listens
 *  there), ZF_EPERM (not allowed), ZF_ESYS. */
ZF_EXPORT zf_err zf_client_connect(const char *path, zf_client **out);

/** Send a request and wait up to timeout_ms (<0: forever) for the response.
 *  On ZF_OK the caller owns *response (zf_config_free): {"ok":true,
 *  "result":...} or {"ok":false,"error":{"code":"ZF_E...","message":...}}.
 *  Errors (transport only): ZF_ETIMEDOUT, ZF_ECLOSED, ZF_EPROTO, ZF_ESYS. */
ZF_EXPORT zf_err zf_client_call(zf_client *c, const zf_request *req, zf_config **response,
                                int timeout_ms);

ZF_EXPORT void zf_client_close(zf_client *c);

/** The credentials of a connected client. */
typedef struct zf_peer {
    int pid;
    unsigned uid, gid;
} zf_peer;

/** A request handler: returns the response text (zf_response_ok/_error),
 *  which the server frees. Called from one thread per connection: it must
 *  be thread-safe. */
typedef char *(*zf_server_handler)(void *arg, const zf_request *req, const zf_peer *peer);

typedef struct zf_server_options {
    const char *path;       /**< socket path (NULL: the default) */
    unsigned mode;          /**< socket file mode; 0: 0660 */
    unsigned max_clients;   /**< connections at once; 0: 64 */
    int idle_timeout_ms;    /**< close a connection idle this long; 0: 60 s */
    int request_timeout_ms; /**< a started frame must complete within; 0: 5 s */
    /** a new connection's first request must begin within; 0: 5 s */
    int first_request_timeout_ms;
    /** connections one uid may hold; 0: half of max_clients. When full (or
     *  a uid holds its share), the connection idle the longest (of that
     *  uid) is closed to make room; a request being served never is. */
    unsigned max_per_uid;
} zf_server_options;

/** How long a client waits for a daemon's answer to hello before taking the
 *  socket for a stale one (its daemon died, a process it forked holds the
 *  socket open): zf_server_start then replaces the socket, zfctl gives up. */
#define ZF_CONTROL_PROBE_MS 2000

typedef struct zf_server zf_server;

/** Listen on a Unix socket (mode 0660, its folder created if missing) and
 *  serve requests on their own threads. Only the daemon's user, root and
 *  members of the socket's group are served. A malformed, truncated or
 *  oversized request gets an error response and is logged; the server keeps
 *  serving. On ZF_OK the caller owns *out (zf_server_stop). Errors:
 *  ZF_EBUSY (a daemon already listens there), ZF_ESYS. */
ZF_EXPORT zf_err zf_server_start(const zf_server_options *opt, zf_server_handler handler, void *arg,
                                 zf_server **out);

/** The socket path the server listens on (owned by the server). */
ZF_EXPORT const char *zf_server_path(const zf_server *s);

/** Stop accepting, finish the requests in progress (waiting up to 30 s; each
 *  still gets its answer), close every connection, remove the socket file,
 *  free the server. Returns
 *  false when a request was still running after 30 s: its handler may still
 *  use what it was given, so the caller must not free that. */
ZF_EXPORT bool zf_server_stop(zf_server *s);

#ifdef __cplusplus
}
#endif

#include "zflow/isolation.h" /* process-isolated nodes */

#endif /* ZFLOW_H */
