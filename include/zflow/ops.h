/*
 * zflow — operating a running dataflow: log entries that say which
 * instance and node they are about, and live figures (rates over sliding
 * windows, CPU time, held capsules). Included by zflow.h; see
 * docs/operations.md.
 */
#ifndef ZFLOW_OPS_H
#define ZFLOW_OPS_H

#include <zflow/base.h>
#include <zflow/data.h>
#include <zflow/flow.h>

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
ZF_EXPORT ZF_NODISCARD zf_err zf_instance_live_get(zf_instance *inst, zf_instance_live **out);
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
ZF_EXPORT ZF_NODISCARD zf_err zf_tap_open(zf_instance *inst, const char *output,
                                          const zf_tap_options *opt, zf_tap **out);
/** The next item, waiting up to timeout_ns (<0: forever). Errors:
 *  ZF_ETIMEDOUT, ZF_ECLOSED (end of stream: the link closed, all taken). */
ZF_EXPORT ZF_NODISCARD zf_err zf_tap_next(zf_tap *t, zf_tap_item *out, int64_t timeout_ns);
/** Items the tap dropped because its reader fell behind. */
ZF_EXPORT uint64_t zf_tap_dropped(const zf_tap *t);
/** The port type of the tapped output ("any" when untyped); owned by the
 *  instance. */
ZF_EXPORT const char *zf_tap_type(const zf_tap *t);
/** Detach and free (capsules still queued are released). NULL: no-op. */
ZF_EXPORT void zf_tap_close(zf_tap *t);

/* ------------------------------------------------------------------ */
/* Record and replay (the file format: docs/operations.md)             */
/* ------------------------------------------------------------------ */

/** Writes the capsules leaving some output ports to a file, streaming. */
typedef struct zf_recorder zf_recorder;

typedef struct zf_recorder_options {
    const char *const *outputs; /**< "node.port" outputs; NULL: every linked output */
    size_t n_outputs;
    uint64_t max_bytes;    /**< the file's size limit (the recording then ends); 0: none */
    uint64_t buffer_bytes; /**< payload held while the writer catches up; 0: 256 MiB */
} zf_recorder_options;

typedef struct zf_recorder_stats {
    uint64_t records;    /**< capsules written */
    uint64_t bytes;      /**< the file's size */
    uint64_t dropped;    /**< capsules the writer could not keep up with (not recorded) */
    bool limit_reached;  /**< max_bytes ended the recording */
    zf_err error;        /**< a write error (ZF_ESYS), else ZF_OK */
    uint64_t cpu_ns;     /**< CPU time of the recorder's writer thread: what recording costs
                              beyond the taps (mostly the kernel's copy into the file) */
    uint64_t elapsed_ns; /**< from the start to the stop */
} zf_recorder_stats;

/** Start recording `inst` into `path` (created or truncated). The
 *  producers are never slowed: a capsule the writer cannot keep up with is
 *  dropped from the recording and counted. On ZF_OK the caller owns *out
 *  and ends it with zf_recorder_stop before destroying the instance.
 *  Errors: ZF_ENOTFOUND (an output), ZF_EBUSY (already tapped), ZF_ESYS
 *  (the file), ZF_EINVAL, ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_recorder_start(zf_instance *inst, const char *path,
                                                const zf_recorder_options *opt, zf_recorder **out);
/** Stop: write what is queued and the end record, close the file, free r.
 *  `st` may be NULL. Returns st->error. */
ZF_EXPORT ZF_NODISCARD zf_err zf_recorder_stop(zf_recorder *r, zf_recorder_stats *st);

/** A recording opened for reading (and replaying). */
typedef struct zf_recording zf_recording;

typedef struct zf_recording_link {
    const char *output; /**< "node.port" */
    const char *type;   /**< its port type */
    uint64_t records, bytes;
} zf_recording_link;

/** One record's metadata; `offset` is where its payload is in the file. */
typedef struct zf_record {
    uint32_t link; /**< index in the recording's links */
    uint64_t seq, timestamp_ns, len, offset;
} zf_record;

/** Open and check a whole recording. On ZF_OK the caller owns *out
 *  (zf_recording_close). A foreign, newer, damaged or truncated file is
 *  refused: ZF_EPARSE, and zf_last_error names the file and the offset
 *  ("rec.zfrec: offset 1048624: truncated: ..."); ZF_ENOTFOUND. */
ZF_EXPORT ZF_NODISCARD zf_err zf_recording_open(const char *path, zf_recording **out);
ZF_EXPORT void zf_recording_close(zf_recording *r);
/** The recorded flow's name; the links (entry owned by r, valid until the
 *  next call); the number of records and the time they span. */
ZF_EXPORT const char *zf_recording_flow(const zf_recording *r);
ZF_EXPORT size_t zf_recording_link_count(const zf_recording *r);
ZF_EXPORT const zf_recording_link *zf_recording_link_get(zf_recording *r, size_t i);
ZF_EXPORT uint64_t zf_recording_count(const zf_recording *r);
ZF_EXPORT uint64_t zf_recording_duration_ns(const zf_recording *r);
/** Records in file order: ZF_ECLOSED after the last. Read a payload (len
 *  bytes into dst) with zf_recording_read. */
ZF_EXPORT ZF_NODISCARD zf_err zf_recording_next(zf_recording *r, zf_record *rec);
ZF_EXPORT ZF_NODISCARD zf_err zf_recording_read(zf_recording *r, const zf_record *rec, void *dst);

/** Replay: give the recording as zf_instance_options.replay; every source
 *  that produced a recorded link is replaced by a replay source with its
 *  ports, which sends the recorded capsules (payload and sequence number;
 *  the timestamp is the time of sending) at the recorded pace times
 *  `speed`, or as fast as the links take them. Before zf_instance_create.
 *  ZF_EINVAL for a speed outside (0, 1000]. */
ZF_EXPORT ZF_NODISCARD zf_err zf_recording_set_speed(zf_recording *r, double speed,
                                                     bool as_fast_as_possible);
/** Wait until every replay source has sent its last capsule (true) or
 *  timeout_ns passes (<0: forever). */
ZF_EXPORT bool zf_recording_wait(zf_recording *r, int64_t timeout_ns);
/** Capsules replayed so far, and how many were sent more than 5 ms late. */
ZF_EXPORT void zf_recording_replayed(const zf_recording *r, uint64_t *sent, uint64_t *late);

#ifdef __cplusplus
}
#endif

#endif /* ZFLOW_OPS_H */
