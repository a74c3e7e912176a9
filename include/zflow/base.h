/*
 * zflow/base.h — what every zflow header needs: the export and attribute
 * macros, the opaque types, errors and their detail, zf_free, logging and
 * the clock. Included by every other zflow header; include <zflow/zflow.h>.
 *
 * Conventions (every header)
 * - A function that can fail returns a zf_err (ZF_OK is 0), and its result
 *   must be looked at (ZF_NODISCARD: a warning otherwise; ZF_IGNORE(call)
 *   where ignoring it is right, with a comment saying why).
 * - "Owns" means "must eventually release": a zf_data handle with
 *   zf_data_unref, a string with zf_free, other objects with their own
 *   *_free / *_destroy / *_close. Each comment says who owns what after the
 *   call, and what the call does on failure.
 * - Freeing, destroying, closing and unref'ing NULL is a no-op.
 * - The library never prints; it logs through the logger set with
 *   zf_log_set().
 *
 * Error detail: one channel per kind of call
 * - Every call: the zf_err it returns says what kind of failure, and
 *   zf_last_error() says, in words, what went wrong and what was expected
 *   (per thread, like dlerror). This is the only channel for every call
 *   but the next two.
 * - Calls that read documents a person wrote -- zf_flow_load*,
 *   zf_flow_check_libraries, zf_instance_create, zf_yaml_parse -- report
 *   every problem they find, each with its file, line, column and field, in
 *   the zf_diag given to them (it may be NULL); zf_last_error() sums up the
 *   failure (the loaders: the first problem).
 * - A node callback's failure: the callback returns a zf_err and gives its
 *   message with zf_node_set_error (reported with the node's state).
 */
#ifndef ZFLOW_BASE_H
#define ZFLOW_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zflow/version.h> /* ZF_VERSION_MAJOR, _MINOR, _PATCH, ZF_VERSION_STRING */

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
/** On a function returning zf_err: a caller that drops the result is
 *  warned (an error with -Werror). */
#define ZF_NODISCARD __attribute__((warn_unused_result))
#else
#define ZF_PRINTF(f, a)
#define ZF_NODISCARD
#endif

/** Call `expr` (a zf_err) and ignore its result on purpose; write why next
 *  to it. (A cast to void does not silence GCC's warn_unused_result.) */
#define ZF_IGNORE(expr)                                                                            \
    do {                                                                                           \
        zf_err zf_ignored_ = (expr);                                                               \
        (void)zf_ignored_;                                                                         \
    } while (0)

/* The opaque types, declared here once so that every header can name them. */

/** A capsule: a reference-counted byte buffer plus metadata (zflow/data.h).
 *  A capsule with one reference is unique and writable; once shared it is
 *  read-only. */
typedef struct zf_data zf_data;
/** A shared-memory pool (memfd-backed) capsules are allocated from. */
typedef struct zf_pool zf_pool;
/** A bounded queue of capsules. */
typedef struct zf_link zf_link;
/** A node, as seen by its own callbacks (zflow/node.h). */
typedef struct zf_node zf_node;
/** A read-only, JSON-like tree: a node's configuration, a parsed document
 *  (zflow/config.h). */
typedef struct zf_config zf_config;
/** Diagnostics: every problem found in a document, each with its place. */
typedef struct zf_diag zf_diag;
/** A loaded, flattened, structurally valid dataflow descriptor (zflow/flow.h). */
typedef struct zf_flow zf_flow;
/** Worker threads, timers and the watchdog, shared by instances. */
typedef struct zf_runtime zf_runtime;
/** A running dataflow. */
typedef struct zf_instance zf_instance;

/* ---- errors ---- */

/* Enums and their names. Each enum is made from one table, an X-macro
 * ZF_<ENUM>_MAP(X) calling X(SYMBOL, value, "string") once per value (as
 * libuv's UV_ERRNO_MAP): the enum, its name function and the parsers that
 * read the names (descriptors, requests, --log) all expand it, so a value
 * and its name are written once. Every name function returns a static
 * string, and "unknown" for a value outside its enum (never NULL). */
#define ZF_UNKNOWN_NAME "unknown"

/* The error codes: the string is the English description (zf_strerror),
 * the symbol's spelling its name (zf_errname). */
#define ZF_ERR_MAP(X)                                                                              \
    X(ZF_OK, 0, "success")                                                                         \
    X(ZF_EINVAL, 1, "invalid argument") /* or invalid input */                                     \
    X(ZF_ENOMEM, 2, "out of memory")    /* or a pool's max_bytes reached */                        \
    X(ZF_EAGAIN, 3, "would block")      /* link full (try_send), empty (try_pop) */                \
    X(ZF_ETIMEDOUT, 4, "timed out")     /* a blocking call's timeout expired */                    \
    X(ZF_ECLOSED, 5, "closed")          /* link, node or instance closed / stopping */             \
    X(ZF_ETYPE, 6, "type mismatch")     /* ports, configuration value */                           \
    X(ZF_ENOTFOUND, 7, "not found")     /* file, node, port, instance or key */                    \
    X(ZF_EABI, 8, "not a zflow node or incompatible ABI")                                          \
    X(ZF_ESYS, 9, "system call failed") /* errno in zf_last_error */                               \
    X(ZF_EPARSE, 10, "parse error")     /* a descriptor or request */                              \
    X(ZF_ESTATE, 11, "invalid state for this operation")                                           \
    X(ZF_EBUSY, 12, "resource busy")                                                               \
    X(ZF_EPERM, 13, "not permitted")                                                               \
    X(ZF_EPROTO, 14, "protocol error")      /* control-protocol violation */                       \
    X(ZF_ENODE, 15, "node callback failed") /* a node callback reported failure */                 \
    X(ZF_EEXIST, 16, "already exists")

#define ZF_ENUM_VALUE_(symbol, value, string) symbol = value,

typedef enum zf_err { ZF_ERR_MAP(ZF_ENUM_VALUE_) ZF_ERR_COUNT } zf_err;

/** A static, English description of an error code ("invalid argument"). */
ZF_EXPORT const char *zf_strerror(zf_err err);

/** The symbolic name of an error code ("ZF_EINVAL"). */
ZF_EXPORT const char *zf_errname(zf_err err);

/** Detail of the last failed zflow call on this thread (never NULL; "" when
 *  none yet): what went wrong and what was expected. Owned by the library,
 *  valid until the next zflow call on this thread. */
ZF_EXPORT const char *zf_last_error(void);

/** Free memory the library returned for the caller to own: the strings of
 *  zf_json_writer_finish, zf_config_to_json, zf_flow_to_json,
 *  zf_flow_to_dot, zf_diag_format, zf_request_encode, zf_response_ok and
 *  zf_response_error, and the array of zf_runtime_abandoned. NULL is a
 *  no-op. */
ZF_EXPORT void zf_free(void *p);

/* ---- logging and clock ---- */

#define ZF_LOG_LEVEL_MAP(X)                                                                        \
    X(ZF_LOG_ERROR, 0, "error")                                                                    \
    X(ZF_LOG_WARN, 1, "warn")                                                                      \
    X(ZF_LOG_INFO, 2, "info")                                                                      \
    X(ZF_LOG_DEBUG, 3, "debug")                                                                    \
    X(ZF_LOG_TRACE, 4, "trace")

typedef enum zf_log_level { ZF_LOG_LEVEL_MAP(ZF_ENUM_VALUE_) } zf_log_level;

/** "error", "warn", "info", "debug", "trace" (what zf_log_level_parse reads). */
ZF_EXPORT const char *zf_log_level_name(zf_log_level level);

/** A logger: `scope` names the component or node ("pool", "node camera"),
 *  `msg` is one line without a newline. Called from any thread; both strings
 *  are valid only during the call. */
typedef void (*zf_log_fn)(void *arg, zf_log_level level, const char *scope, const char *msg);

/** Install the process-wide logger (fn NULL: discard everything) and the
 *  most verbose level it receives; replaces the previous one. Not owned:
 *  `arg` must outlive its use. Until a logger is set nothing is logged. */
ZF_EXPORT void zf_log_set(zf_log_fn fn, void *arg, zf_log_level max_level);

/** A ready-made logger for applications: one line to stderr with a UTC
 *  timestamp and the level; control characters in scope and msg are
 *  escaped, so a message cannot forge a line. `arg` is unused. The library
 *  never installs it by itself. */
ZF_EXPORT void zf_log_stderr(void *arg, zf_log_level level, const char *scope, const char *msg);

/** Parse "error", "warn", "info", "debug", "trace" into *out. ZF_EINVAL
 *  otherwise (s NULL included; *out unchanged). */
ZF_EXPORT ZF_NODISCARD zf_err zf_log_level_parse(const char *s, zf_log_level *out);

/** Monotonic clock in nanoseconds (CLOCK_MONOTONIC): the clock of every
 *  timestamp and `*_ns` time point zflow reports. */
ZF_EXPORT uint64_t zf_clock_ns(void);

/** Parse a duration ("16ms", "1.5s", "250us", "2m", "100ns") into *out_ns.
 *  A bare number is refused (units are required). ZF_EINVAL (detail in
 *  zf_last_error, *out_ns unchanged) on error. */
ZF_EXPORT ZF_NODISCARD zf_err zf_parse_duration(const char *s, int64_t *out_ns);

/** Parse a size ("512MiB", "10MB", "4096", "64KiB") into *out_bytes.
 *  KiB/MiB/GiB are powers of 1024, kB/MB/GB of 1000. ZF_EINVAL (detail in
 *  zf_last_error, *out_bytes unchanged) on error. */
ZF_EXPORT ZF_NODISCARD zf_err zf_parse_size(const char *s, uint64_t *out_bytes);

#ifdef __cplusplus
}
#endif

#endif
