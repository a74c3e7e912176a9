/*
 * zflow/control.h — the daemon's control protocol (zfctl <-> zfd,
 * docs/protocol.md): requests and responses as JSON over a Unix socket, a
 * client and a server. Responses are read as zf_config trees
 * (zflow/config.h) and written with the JSON writer (zflow/json.h).
 */
#ifndef ZFLOW_CONTROL_H
#define ZFLOW_CONTROL_H

#include <zflow/base.h>
#include <zflow/config.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version spoken by this library; requests carry it as "v". */
#define ZF_PROTOCOL_VERSION 1
/** Largest frame (request or response) accepted. */
#define ZF_FRAME_MAX (16u << 20)

/* The requests; the names are the protocol's `op` (docs/protocol.md). */
#define ZF_OP_MAP(X)                                                                               \
    X(ZF_OP_HELLO, 0, "hello")   /* who are you: version, worker name, pid */                      \
    X(ZF_OP_DEPLOY, 1, "deploy") /* descriptor text -> a new instance's UUID */                    \
    X(ZF_OP_LIST, 2, "list")     /* every instance: uuid, name, status, workers */                 \
    X(ZF_OP_STATUS, 3, "status") /* one instance in detail */                                      \
    X(ZF_OP_START, 4, "start")                                                                     \
    X(ZF_OP_SUSPEND, 5, "suspend")                                                                 \
    X(ZF_OP_RESUME, 6, "resume")                                                                   \
    X(ZF_OP_DESTROY, 7, "destroy") /* graceful stop; the stop report */                            \
    X(ZF_OP_WORKERS, 8, "workers") /* the daemons reachable */                                     \
    X(ZF_OP_LOGS, 9, "logs")       /* an instance's log lines (docs/operations.md) */              \
    X(ZF_OP_ECHO, 10, "echo")      /* capsules passing a link: metadata and first bytes */         \
    X(ZF_OP_HZ, 11, "hz")          /* the rate of a link, measured over a window */                \
    X(ZF_OP_RECORD, 12, "record")  /* start (start: true) or stop recording an instance's outputs  \
                                    */

typedef enum zf_op { ZF_OP_MAP(ZF_ENUM_VALUE_) ZF_OP_COUNT } zf_op;

/** "hello", "deploy", ... (ZF_UNKNOWN_NAME otherwise). */
ZF_EXPORT const char *zf_op_name(zf_op op);

/** A decoded request. Strings are owned by the request. */
typedef struct zf_request {
    uint32_t version;        /**< protocol version of the sender */
    zf_op op;                /**< what is asked */
    const char *id;          /**< start/suspend/resume/status/destroy: UUID,
                                  unique UUID prefix or instance name */
    const char *descriptor;  /**< deploy: the descriptor's text */
    const char *path;        /**< deploy: the descriptor's absolute path */
    const char *name;        /**< deploy: instance name (may be NULL) */
    const char *const *vars; /**< deploy: "KEY=VALUE" */
    size_t n_vars;           /**< entries of vars */
    bool start;              /**< deploy: start at once (default true) */
    /* logs (docs/operations.md): filters, and a cursor to follow */
    const char *node;   /**< only this node's lines (NULL: every line) */
    const char *level;  /**< at most this verbose ("error" ... "trace") */
    const char *grep;   /**< an extended regular expression the line must match */
    const char *since;  /**< a duration: lines of the last D only */
    uint64_t after;     /**< follow: lines after this cursor (0: the history) */
    int wait_ms;        /**< logs, echo, hz: wait up to this long (0..30000) */
    const char *link;   /**< echo, hz: the output tapped, "node.port" */
    int count;          /**< echo: capsules to show at most (0: 10; up to 1000) */
    const char *file;   /**< record: the recording's file name (in the daemon's folder) */
    uint64_t max_bytes; /**< record: the file's size limit (0: none) */
} zf_request;

/** Decode a request (JSON text). Every field is checked for presence, kind
 *  and size; on error zf_last_error says which and what was expected. On
 *  ZF_OK the caller owns *out (zf_request_free); else *out is NULL. Errors:
 *  ZF_EINVAL (NULL argument), ZF_EPARSE (not JSON), ZF_EPROTO (not a valid
 *  request), ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_request_decode(const char *text, size_t len, zf_request **out);
/** Encode a request as JSON (version set to ZF_PROTOCOL_VERSION); the
 *  caller owns the text (zf_free). NULL for a NULL request, an unknown op,
 *  or out of memory. */
ZF_EXPORT char *zf_request_encode(const zf_request *r);
/** Free a request zf_request_decode made. NULL is a no-op. */
ZF_EXPORT void zf_request_free(zf_request *r);

/** A success response carrying `result_json` (a JSON value, not checked;
 *  NULL: null), or an error response with code and message. The caller owns
 *  the text (zf_free); NULL when out of memory. */
ZF_EXPORT char *zf_response_ok(const char *result_json);
ZF_EXPORT char *zf_response_error(zf_err code, const char *fmt, ...) ZF_PRINTF(2, 3);

/** The default control socket, into buf (len bytes, NUL-terminated,
 *  truncated if need be): $ZF_SOCKET, else $XDG_RUNTIME_DIR/zflow/zfd.sock,
 *  else /run/zflow/zfd.sock for root, else /tmp/zflow-<uid>/zfd.sock. */
ZF_EXPORT void zf_control_default_socket(char *buf, size_t len);

/** A connection to a daemon. */
typedef struct zf_client zf_client;

/** Connect to the daemon at `path` (NULL: the default). On ZF_OK the caller
 *  owns *out (zf_client_close); else *out is NULL. Errors: ZF_EINVAL,
 *  ZF_ENOTFOUND (no daemon listens there), ZF_EPERM (not allowed), ZF_ESYS. */
ZF_EXPORT ZF_NODISCARD zf_err zf_client_connect(const char *path, zf_client **out);

/** Send a request and wait up to timeout_ms (<0: forever) for the response.
 *  On ZF_OK the caller owns *response (zf_config_free): {"ok":true,
 *  "result":...} or {"ok":false,"error":{"code":"ZF_E...","message":...}}.
 *  Errors (transport only): ZF_ETIMEDOUT, ZF_ECLOSED, ZF_EPROTO, ZF_ESYS. */
ZF_EXPORT ZF_NODISCARD zf_err zf_client_call(zf_client *c, const zf_request *req,
                                             zf_config **response, int timeout_ms);

/** Close the connection and free the client. NULL is a no-op. */
ZF_EXPORT void zf_client_close(zf_client *c);

/** The credentials of a connected client. */
typedef struct zf_peer {
    int pid;           /**< from SO_PEERCRED */
    unsigned uid, gid; /**< from SO_PEERCRED */
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
ZF_EXPORT ZF_NODISCARD zf_err zf_server_start(const zf_server_options *opt,
                                              zf_server_handler handler, void *arg,
                                              zf_server **out);

/** The socket path the server listens on (owned by the server); NULL for
 *  NULL. */
ZF_EXPORT const char *zf_server_path(const zf_server *s);

/** Stop accepting, finish the requests in progress (waiting up to 30 s; each
 *  still gets its answer), close every connection, remove the socket file,
 *  free the server. Returns false when a request was still running after
 *  30 s: its handler may still use what it was given, so the caller must not
 *  free that. NULL is a no-op (true). */
ZF_EXPORT bool zf_server_stop(zf_server *s);

#ifdef __cplusplus
}
#endif

#endif
