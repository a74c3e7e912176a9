/*
 * zflow — operating a running dataflow: log entries that say which
 * instance and node they are about, and live figures (rates over sliding
 * windows, CPU time, held capsules). Included by zflow.h; see
 * docs/operations.md.
 */
#ifndef ZFLOW_OPS_H
#define ZFLOW_OPS_H

#include <zflow/zflow.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Log entries                                                         */
/* ------------------------------------------------------------------ */

/** One log line with whom it is about. Every string is valid only during
 *  the call that receives the entry. */
typedef struct zf_log_entry {
    uint64_t realtime_ns; /**< CLOCK_REALTIME when it was logged */
    zf_log_level level;
    const char *scope;         /**< the component or node ("watchdog", "node camera") */
    const char *msg;           /**< one message (it may hold line breaks) */
    const char *instance;      /**< the instance's UUID, or NULL (not about one) */
    const char *instance_name; /**< its name, or NULL */
    const char *node;          /**< the node's id, or NULL (the instance itself) */
} zf_log_entry;

/** A logger receiving whole entries; called from any thread. */
typedef void (*zf_log_entry_fn)(void *arg, const zf_log_entry *e);

/** Install a process-wide logger receiving entries (it replaces the one of
 *  zf_log_set; NULL: discard everything). A line logged by node code, or by
 *  the runtime about a node (its DEGRADED transitions, a failed callback),
 *  names the node and its instance; lines about an instance name it. Not
 *  owned: `arg` must outlive its use. */
ZF_EXPORT void zf_log_set_entry(zf_log_entry_fn fn, void *arg, zf_log_level max_level);

/** An entry as one text line, as zf_log_stderr writes it but with
 *  microseconds ("2026-12-01T11:09:41.123456Z info  [node camera] msg\n";
 *  control characters escaped, a line break in msg continued by "  | ").
 *  The caller frees it; NULL on allocation failure. */
ZF_EXPORT char *zf_log_entry_format(const zf_log_entry *e);

/** Feed one line a node wrote to its standard output (fd 1, logged at
 *  INFO) or error (fd 2, at WARN) into its log, scoped "node ID stdout" /
 *  "node ID stderr". For hosts that capture a node's output (a node in its
 *  own process); `line` need not be NUL-terminated (len bytes; a trailing
 *  newline is dropped). Any thread; nothing is kept. */
ZF_EXPORT void zf_node_log_output(zf_node *n, int fd, const char *line, size_t len);

/* ------------------------------------------------------------------ */
/* Live figures                                                        */
/* ------------------------------------------------------------------ */

/** A rate over a window: messages and bytes per second. */
typedef struct zf_rate {
    double msgs;
    double bytes;
} zf_rate;

/** A node now. `in` is what its input links delivered to it, `out` what it
 *  sent (bytes: a fanned-out port counted once). CPU is the time spent in
 *  its callbacks (measured on one callback in 64 and extrapolated), as a
 *  fraction of one core over the window. */
typedef struct zf_node_live {
    zf_rate in_1s, in_10s, out_1s, out_10s;
    double cpu_1s, cpu_10s;
    uint64_t cpu_ns; /**< since it started */
    int64_t held;    /**< capsule references its code holds now */
} zf_node_live;

/** A link now: `in` is what its producer enqueued, `out` what its consumer
 *  took; drops per second by its policy, breaker or closing. */
typedef struct zf_link_live {
    zf_rate in_1s, in_10s, out_1s, out_10s;
    double drops_1s, drops_10s;
    uint64_t bytes_in, bytes_out; /**< bytes enqueued and taken so far */
} zf_link_live;

/** Live figures of an instance, in the order of zf_instance_stats's nodes
 *  and links. The windows are sampled every 100 ms by the runtime's timer
 *  (nothing is counted per message beyond the existing counters): a rate
 *  is up to 100 ms old, and window_1s / window_10s say how many seconds
 *  the windows really cover (less just after the start; 0: no rate yet). */
typedef struct zf_instance_live {
    double window_1s, window_10s;
    double cpu_1s, cpu_10s; /**< the nodes' sum, in cores */
    uint64_t cpu_ns;        /**< the nodes' sum */
    size_t n_nodes;
    zf_node_live *nodes;
    size_t n_links;
    zf_link_live *links;
} zf_instance_live;

/** Snapshot of the live figures. On ZF_OK the caller owns *out
 *  (zf_instance_live_free). Errors: ZF_EINVAL, ZF_ENOMEM. */
ZF_EXPORT zf_err zf_instance_live_get(zf_instance *inst, zf_instance_live **out);
ZF_EXPORT void zf_instance_live_free(zf_instance_live *l);

/* ------------------------------------------------------------------ */
/* Taps: watch what passes a link                                      */
/* ------------------------------------------------------------------ */

/** A read-only observer of one output port's link (zfctl echo, hz,
 *  record). While a tap is open its link's producer queues, for every
 *  capsule it sends, a copy of the metadata and first bytes (or, with
 *  `hold`, a reference to the capsule) in the tap's bounded queue; it never
 *  waits for the reader: a full queue drops the item and counts it. */
typedef struct zf_tap zf_tap;

typedef struct zf_tap_options {
    uint32_t capacity;  /**< items queued; 0: 256 */
    uint64_t max_bytes; /**< with hold: payload bytes held; 0: 64 MiB */
    /** Keep a reference to every capsule (to write its payload, as `zfctl
     *  record` does) instead of a copy of its first bytes. While the tap
     *  holds it a capsule is shared: a node downstream that asks to write
     *  it (zf_data_mut) gets a copy. */
    bool hold;
} zf_tap_options;

/** What passed the link. */
typedef struct zf_tap_item {
    uint64_t seq, timestamp_ns, len; /**< the capsule's metadata */
    uint8_t head[64];                /**< its first bytes (without hold) */
    size_t head_len;
    zf_data *data;           /**< with hold: the capsule; the caller owns this reference */
    uint64_t dropped_before; /**< the tap's drops before this item */
} zf_tap_item;

/** Tap the link out of `output` ("node.port", an output port; a fanned-out
 *  port's capsules are the same on every link). On ZF_OK the caller owns
 *  *out and closes it with zf_tap_close before the instance is destroyed.
 *  Errors: ZF_ENOTFOUND (no such output, or it has no link), ZF_EBUSY (the
 *  link is tapped already: one tap at a time), ZF_ENOMEM. */
ZF_EXPORT zf_err zf_tap_open(zf_instance *inst, const char *output, const zf_tap_options *opt,
                             zf_tap **out);
/** The next item, waiting up to timeout_ns (<0: forever). Errors:
 *  ZF_ETIMEDOUT, ZF_ECLOSED (end of stream: the link closed, all taken). */
ZF_EXPORT zf_err zf_tap_next(zf_tap *t, zf_tap_item *out, int64_t timeout_ns);
/** Items the tap dropped because its reader fell behind. */
ZF_EXPORT uint64_t zf_tap_dropped(const zf_tap *t);
/** The port type of the tapped output ("any" when untyped); owned by the
 *  instance. */
ZF_EXPORT const char *zf_tap_type(const zf_tap *t);
/** Detach and free (capsules still queued are released). NULL: no-op. */
ZF_EXPORT void zf_tap_close(zf_tap *t);

#ifdef __cplusplus
}
#endif

#endif /* ZFLOW_OPS_H */
