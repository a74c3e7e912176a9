/*
 * zflow/flow.h — for embedders (zfctl run, zfd, a program of one's own):
 * load a descriptor into a flattened, checked zf_flow (its problems in a
 * zf_diag), run it as an instance on a runtime, watch it, stop it and read
 * its stop report.
 */
#ifndef ZFLOW_FLOW_H
#define ZFLOW_FLOW_H

#include <zflow/base.h>
#include <zflow/data.h>
#include <zflow/node.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- descriptors ---- */

typedef struct zf_diag_entry {
    const char *file;    /**< descriptor file (may be "" for a string) */
    unsigned line;       /**< 1-based; 0 when unknown */
    unsigned col;        /**< 1-based; 0 when unknown */
    const char *field;   /**< the field concerned ("links[2].to.node"), or "" */
    const char *message; /**< what is wrong and what was expected */
} zf_diag_entry;

/** Create an empty diagnostics list; the caller owns it (zf_diag_free).
 *  NULL when out of memory (every call below takes a NULL list: a NULL
 *  diag passed to a loader just drops the entries). */
ZF_EXPORT zf_diag *zf_diag_new(void);
/** Free the list and its entries. NULL is a no-op. */
ZF_EXPORT void zf_diag_free(zf_diag *d);
/** Number of entries (0 for NULL). */
ZF_EXPORT size_t zf_diag_count(const zf_diag *d);
/** Entry i (owned by d, valid until zf_diag_free), or NULL. */
ZF_EXPORT const zf_diag_entry *zf_diag_get(const zf_diag *d, size_t i);
/** All entries as "file:line:col: field: message" lines; the caller owns
 *  the text (zf_free). "" for none or NULL; NULL when out of memory. */
ZF_EXPORT char *zf_diag_format(const zf_diag *d);

typedef struct zf_flow_options {
    const char *const *vars; /**< "KEY=VALUE" strings overriding `vars` */
    size_t n_vars;           /**< entries of vars */
    /** When set, node files (`descriptor:`) are read only from these folders
     *  (absolute real paths, each ending with '/'); others are refused
     *  without being read. A daemon passes its --lib-path folders. */
    const char *const *include_dirs;
    size_t n_include_dirs; /**< entries of include_dirs; 0: no restriction */
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
 *  to `diag` (may be NULL). On ZF_OK the caller owns *out (zf_flow_free);
 *  else *out is NULL. Errors: ZF_ENOTFOUND (file), ZF_EPARSE (YAML),
 *  ZF_EINVAL (content), ZF_EPERM (a node file outside include_dirs),
 *  ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_flow_load(const char *path, const zf_flow_options *opt,
                                           zf_diag *diag, zf_flow **out);

/** As zf_flow_load on text; relative paths resolve against `base_dir`
 *  (NULL: the current directory) and messages name `name`. */
ZF_EXPORT ZF_NODISCARD zf_err zf_flow_load_string(const char *text, size_t len, const char *name,
                                                  const char *base_dir, const zf_flow_options *opt,
                                                  zf_diag *diag, zf_flow **out);

/** Drop the caller's flow. Instances made from it keep their own
 *  reference, so it may be freed while they run. NULL is a no-op. */
ZF_EXPORT void zf_flow_free(zf_flow *f);

/** The flow's `name` (`flow` in Zenoh-Flow 0.5 files; a node file's `id`
 *  or file name). Owned by f; NULL for a NULL flow (as every getter below). */
ZF_EXPORT const char *zf_flow_name(const zf_flow *f);

/** Whether f was loaded from a node file (zf_flow_options.node_file). */
ZF_EXPORT bool zf_flow_is_node_file(const zf_flow *f);

/** The instance id the descriptor gives (`id`, Zenoh-Flow 0.6, or `uuid`):
 *  a lower-case UUID owned by f, or NULL (each instance gets a new one). */
ZF_EXPORT const char *zf_flow_instance_id(const zf_flow *f);

/** Open every node library (and Python file) and check it declares the kind,
 *  ports and types the descriptor says; each library is closed again. Every
 *  problem goes to diag (may be NULL). Errors (the first problem's code):
 *  ZF_EINVAL (NULL flow), ZF_ENOTFOUND, ZF_EABI, ZF_ETYPE. */
ZF_EXPORT ZF_NODISCARD zf_err zf_flow_check_libraries(const zf_flow *f, zf_diag *diag);

/** Number of (flattened) nodes, and node i's id, code (library path or
 *  Python script), and worker from `mapping` (NULL when unmapped). The
 *  strings are owned by f. */
ZF_EXPORT size_t zf_flow_node_count(const zf_flow *f);
ZF_EXPORT const char *zf_flow_node_id(const zf_flow *f, size_t i);
/** Node i's kind (ZF_SOURCE, ZF_OPERATOR, ZF_SINK; 0 when out of range). */
ZF_EXPORT zf_node_kind zf_flow_node_kind(const zf_flow *f, size_t i);
ZF_EXPORT const char *zf_flow_node_source(const zf_flow *f, size_t i);
ZF_EXPORT const char *zf_flow_node_worker(const zf_flow *f, size_t i);

/** The flattened graph as JSON (nodes, links, mapping); the caller owns it
 *  (zf_free). NULL for a NULL flow or when out of memory. */
ZF_EXPORT char *zf_flow_to_json(const zf_flow *f);

/** The graph as Graphviz DOT; the caller owns it (zf_free). NULL for a
 *  NULL flow or when out of memory. */
ZF_EXPORT char *zf_flow_to_dot(const zf_flow *f);

/* ---- runtime: workers, instances ---- */

typedef struct zf_runtime_options {
    unsigned workers;   /**< worker threads; 0 = one per CPU the process may use (affinity) */
    const char *worker; /**< this worker's name (for `mapping`); may be NULL */
} zf_runtime_options;

/** Start worker threads, the timer and the watchdog. `opt` may be NULL.
 *  On ZF_OK the caller owns *out (zf_runtime_destroy); else *out is NULL and
 *  no thread is left. Errors: ZF_EINVAL, ZF_ENOMEM, ZF_ESYS. */
ZF_EXPORT ZF_NODISCARD zf_err zf_runtime_create(const zf_runtime_options *opt, zf_runtime **out);

/** Stop the workers and free the runtime. Every instance must have been
 *  destroyed first. NULL is a no-op. */
ZF_EXPORT void zf_runtime_destroy(zf_runtime *rt);

/** A thread the runtime left behind inside node code: a callback whose
 *  worker the watchdog replaced (past its hang_timeout; listed while it
 *  stays stuck, no longer once it returns), a callback stuck at stop, or an
 *  init or fini that outlived its bound (ten times the node's hang_timeout).
 *  It may spin forever; it is never killed (it runs in this process), only
 *  shown. */
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

/** Every thread abandoned so far and still away, oldest first: *out is one
 *  array the caller owns (zf_free; its strings are in the same allocation,
 *  valid until then), *n its length (0 and NULL when none). Errors:
 *  ZF_EINVAL (NULL argument), ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_runtime_abandoned(zf_runtime *rt, zf_abandoned_thread **out,
                                                   size_t *n);

/** The node whose code runs on the calling thread, as "node 'ID' of
 *  instance UUID (NAME)", into buf (len bytes, NUL-terminated); returns its
 *  length, 0 (and buf "") when none does or buf is NULL.
 *  Async-signal-safe: for a crash handler. */
ZF_EXPORT size_t zf_crash_context(char *buf, size_t len);

#define ZF_INSTANCE_STATE_MAP(X)                                                                   \
    X(ZF_INSTANCE_CREATED, 0, "CREATED")                                                           \
    X(ZF_INSTANCE_RUNNING, 1, "RUNNING")                                                           \
    X(ZF_INSTANCE_SUSPENDED, 2, "SUSPENDED")                                                       \
    X(ZF_INSTANCE_DRAINING, 3, "DRAINING")                                                         \
    X(ZF_INSTANCE_DESTROYED, 4, "DESTROYED")                                                       \
    X(ZF_INSTANCE_FAILED, 5, "FAILED")

typedef enum zf_instance_state { ZF_INSTANCE_STATE_MAP(ZF_ENUM_VALUE_) } zf_instance_state;

/** "CREATED", "RUNNING", ... (ZF_UNKNOWN_NAME otherwise). */
ZF_EXPORT const char *zf_instance_state_name(zf_instance_state s);

#define ZF_NODE_STATE_MAP(X)                                                                       \
    X(ZF_NODE_RUNNING, 0, "RUNNING")                                                               \
    X(ZF_NODE_DEGRADED, 1, "DEGRADED")   /* hung or failing; its inputs shed load */               \
    X(ZF_NODE_FAILED, 2, "FAILED")       /* gave up (init failed, or abandoned at stop) */         \
    X(ZF_NODE_DONE, 3, "DONE")           /* saw end of stream on every input */                    \
    X(ZF_NODE_SUSPENDED, 4, "SUSPENDED") /* its instance is SUSPENDED (statistics only) */

typedef enum zf_node_state { ZF_NODE_STATE_MAP(ZF_ENUM_VALUE_) } zf_node_state;

/** "RUNNING", "DEGRADED", "FAILED", "DONE", "SUSPENDED" (ZF_UNKNOWN_NAME otherwise). */
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
    size_t n_code_dirs; /**< entries of code_dirs; 0: no restriction */
    /** With code_dirs: also accept code that users other than root and this
     *  process's user could change (zf_code_path_check refuses it by
     *  default). */
    bool allow_writable_code;
    /** Run every node in a process of its own (as `isolation: process`;
     *  see docs/isolation.md). */
    bool isolate_all;
    /** Replay this recording (zflow/ops.h, zf_recording_open): the sources
     *  that produced its links are replaced by replay sources. NULL: none.
     *  Not owned: it must outlive the instance. */
    struct zf_recording *replay;
    /** Where `record:` links write (only plain file names are accepted
     *  then: a daemon passes its own folder); NULL: a file relative to the
     *  descriptor's folder, or absolute. */
    const char *record_dir;
} zf_instance_options;

/** Whether `path` (absolute, a file or a folder) and every folder above it
 *  can be changed only by root or this process's user: each belongs to one
 *  of them, `path` is writable by no one else (group-writable only for this
 *  process's group), and a folder above it writable by others is sticky
 *  (like /tmp). ZF_OK, or ZF_EPERM naming the component and why
 *  (zf_last_error); ZF_ENOTFOUND if a component is missing. Nothing is
 *  kept. */
ZF_EXPORT ZF_NODISCARD zf_err zf_code_path_check(const char *path);

/** Load every node library, create links and the pool, `init` every node.
 *  The instance is CREATED. The instance takes its own reference to `f`;
 *  the caller keeps its own. `opt` may be NULL. Problems go to diag (may be
 *  NULL). On ZF_OK the caller owns *out (zf_instance_destroy); on error *out
 *  is NULL and everything made so far is undone (nodes already initialised
 *  get their fini). Errors: ZF_EINVAL, ZF_ENOTFOUND, ZF_EABI, ZF_ETYPE,
 *  ZF_EPERM (code outside code_dirs), ZF_ENODE (an init failed), ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_instance_create(zf_runtime *rt, const zf_flow *f,
                                                 const zf_instance_options *opt, zf_diag *diag,
                                                 zf_instance **out);

/** The instance's UUID v4 ("xxxxxxxx-xxxx-4xxx-...") and name; owned by
 *  the instance; NULL for NULL. */
ZF_EXPORT const char *zf_instance_uuid(const zf_instance *inst);
ZF_EXPORT const char *zf_instance_name(const zf_instance *inst);
/** The instance's state now (inst must not be NULL). */
ZF_EXPORT zf_instance_state zf_instance_state_get(const zf_instance *inst);

/** CREATED or SUSPENDED -> RUNNING. ZF_ESTATE in another state (nothing
 *  changes), ZF_EINVAL for NULL. */
ZF_EXPORT ZF_NODISCARD zf_err zf_instance_start(zf_instance *inst);

/** RUNNING -> SUSPENDED: sources stop producing; queues and memory are kept
 *  and operators keep draining what is queued. ZF_ESTATE in another state
 *  (nothing changes), ZF_EINVAL for NULL. */
ZF_EXPORT ZF_NODISCARD zf_err zf_instance_suspend(zf_instance *inst);

/** The report of a graceful stop. */
typedef struct zf_stop_report {
    uint64_t in_flight_at_stop;    /**< capsules queued when the sources stopped */
    uint64_t delivered_in_drain;   /**< capsules consumed during the drain */
    uint64_t dropped;              /**< total dropped on every link */
    uint64_t dropped_in_drain;     /**< dropped while draining */
    uint64_t releases;             /**< release callbacks invoked by this instance */
    uint64_t pool_bytes_before;    /**< pool bytes in use when the stop began */
    uint64_t pool_bytes_after;     /**< after every node's fini */
    uint64_t bytes_abandoned;      /**< of those, held by abandoned nodes (released
                                        if they ever return) */
    uint64_t bytes_leaked;         /**< after - abandoned: held by nobody; must be 0 */
    uint64_t pool_high_water;      /**< most pool bytes in use at once */
    uint64_t nodes_abandoned;      /**< hung nodes left behind */
    uint64_t shared_writes;        /**< with ZF_CHECK_SHARED=1 in the environment: capsules
                                        whose bytes changed while several nodes held them
                                        (a node wrote through zf_data_ptr); else 0 */
    int64_t drain_ns;              /**< how long the drain took */
    bool drain_timed_out;          /**< the drain timeout ended the drain */
    uint64_t child_deaths;         /**< isolated nodes' processes that died (not counting the
                                        normal exit at stop) */
    uint64_t refs_reclaimed;       /**< references their ledgers released on their behalf */
    uint64_t bytes_reclaimed;      /**< the payload bytes of those capsules */
    uint64_t inputs_lost;          /**< inputs isolated processes never processed (the sum of
                                        zf_node_stats.lost) */
    uint64_t nodes_killed_at_stop; /**< isolated nodes whose process the stop killed (a
                                        callback hung, fini past its bound, its control
                                        socket closed): what nodes_abandoned is in
                                        process, with what they held reclaimed */
    char holders[512];             /**< who holds leaked bytes, or abandoned nodes */
} zf_stop_report;

/** Graceful stop: stop sources, let end-of-stream flow through every link
 *  until every sink has seen it (bounded by the drain timeout), fini every
 *  node in reverse topological order, release every capsule. Then the
 *  instance is DESTROYED (its memory is freed by zf_instance_destroy).
 *  `report` (may be NULL) gets what happened. Idempotent: a second stop
 *  reports the first. ZF_EINVAL for NULL, else ZF_OK (a drain that timed out
 *  or a node left behind is in the report, not an error). */
ZF_EXPORT ZF_NODISCARD zf_err zf_instance_stop(zf_instance *inst, zf_stop_report *report);

/** Stop (if not yet) and free the instance. NULL is a no-op. */
ZF_EXPORT void zf_instance_destroy(zf_instance *inst);

/** Statistics of a node. */
typedef struct zf_node_stats {
    const char *id;            /**< owned by the instance */
    zf_node_kind kind;         /**< source, operator, sink */
    zf_node_state state;       /**< now */
    const char *reason;        /**< why DEGRADED/FAILED ("" otherwise) */
    uint64_t since_ns;         /**< zf_clock_ns when the state began */
    uint64_t callbacks;        /**< produce / on_input calls completed (isolated: in its
                                    processes, as each counted them) */
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
    uint64_t lost;         /**< inputs handed to its process and never processed: in its
                                input rings or its callback when the process ended, or
                                taken from its links while it was down (its links count
                                them dequeued, not dropped) */
} zf_node_stats;

/** Statistics of a link between two ports. */
typedef struct zf_link_info {
    const char *from; /**< "node.port", owned by the instance */
    const char *to;   /**< "node.port", owned by the instance */
    zf_link_stats stats;
} zf_link_info;

typedef struct zf_instance_stats {
    zf_instance_state state; /**< now */
    uint64_t state_since_ns; /**< zf_clock_ns when the state began */
    zf_pool_stats pool;      /**< the instance's pool */
    zf_wrap_stats wraps;     /**< this instance's pinned capsules */
    size_t n_nodes;          /**< entries of nodes */
    zf_node_stats *nodes;    /**< every node, in the flow's order */
    size_t n_links;          /**< entries of links */
    zf_link_info *links;     /**< every link */
} zf_instance_stats;

/** Snapshot of every counter. On ZF_OK the caller owns *out
 *  (zf_instance_stats_free; its strings stay owned by the instance).
 *  Errors: ZF_EINVAL (NULL argument), ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_instance_stats_get(zf_instance *inst, zf_instance_stats **out);
/** Free a snapshot. NULL is a no-op. */
ZF_EXPORT void zf_instance_stats_free(zf_instance_stats *s);

#ifdef __cplusplus
}
#endif

#endif
