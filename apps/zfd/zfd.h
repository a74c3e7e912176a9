/* zfd: the daemon. One per machine (a worker); hosts any number of
 * instances, each with its own pool, on one shared runtime. */
#ifndef ZFD_H
#define ZFD_H

#include <zflow/zflow.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct entry entry;
typedef struct zfd_logs zfd_logs;

#define ZFD_MAX_LIB_PATHS 64

typedef struct zfd_daemon {
    char *name;       /* this worker's name */
    char **lib_paths; /* allowed folders, real paths */
    size_t n_lib_paths;
    bool allow_descriptor_dir;
    bool allow_writable; /* --allow-writable-lib-path: code others can change */
    bool isolate;        /* --isolate: every node in a process of its own */
    size_t max_instances;
    zf_runtime *rt;
    pthread_mutex_t mu; /* the instance table */
    entry *list;
    size_t count;
    uint64_t started_ns;   /* zf_clock_ns at start */
    const char *socket;    /* for `workers` */
    atomic_bool stopping;  /* SIGTERM or SIGINT received */
    zf_cluster *cluster;   /* with --domain (cluster.c), else NULL */
    zfd_logs *logs;        /* the instances' log files (logs.c) */
    const char *state_dir; /* --state-dir (logs, recordings) */
} zfd_daemon;

/* A cluster deploy's part on this worker (cluster.c): the instance's UUID,
 * the worker that orchestrates (unmapped nodes go there), every worker of
 * the instance as a JSON array. */
typedef struct zfd_part {
    const char *uuid, *orchestrator, *workers;
} zfd_part;

/* The request handler (zf_server_handler): cluster-wide where the request
 * is (cluster.c), else this daemon's own (zfd_handle_local). */
char *zfd_handle(void *arg, const zf_request *req, const zf_peer *peer);
char *zfd_handle_local(void *arg, const zf_request *req, const zf_peer *peer);
/* Create this worker's part of a cluster deploy (not started unless
 * req->start). A response. */
char *zfd_deploy_part(zfd_daemon *d, const zf_request *req, const zfd_part *part);
/* Whether id names a local part of a cluster instance: its UUID and its
 * workers (JSON array, free()). */
bool zfd_is_cluster_instance(zfd_daemon *d, const char *id, char uuid[37], char **workers);
/* A worker was lost (or left while instances ran on it): the parts of
 * instances on it show DEGRADED naming it. */
void zfd_mark_lost(zfd_daemon *d, const char *worker, bool left);

/* ---- the cluster (cluster.c) ---- */

/* Options: --domain, --dds-config, --lease, --cluster-key (and their
 * --config fields). True when argv[*i] was one (consumed). */
bool zfd_cluster_arg(int argc, char **argv, int *i);
/* --config fields domain, dds_config, lease, cluster_key. */
void zfd_cluster_config(const zf_config *c, const char *file);
/* Join the domain if asked to; false (and why on stderr) when that fails. */
bool zfd_cluster_start(zfd_daemon *d);
void zfd_cluster_stop(zfd_daemon *d);
/* ---- parts left on lost workers (returning.c) ----
 * After a cluster-wide destroy or rollback: for each of the n workers
 * without a reply (replies[i] NULL) that is lost, keep `body` (a "local"
 * destroy of uuid) to send when it rejoins. Copies what it keeps. */
void zfd_returning_keep(zfd_daemon *d, size_t n, const char *const *workers, char *const *replies,
                        const char *uuid, const char *body);
/* worker joined: what waits for it is sent on a thread of its own. */
void zfd_returning_joined(zfd_daemon *d, const char *worker);
/* Before the cluster is destroyed: waits for the sends under way (each
 * bounded by 10 s) and logs the parts still waiting. */
void zfd_returning_stop(void);
/* The cluster-wide answer to req, or NULL when it is this daemon's own. */
char *zfd_cluster_handle(zfd_daemon *d, const zf_request *req);
/* Whether flow f has nodes on other workers than this one. */
bool zfd_cluster_spans(zfd_daemon *d, const zf_flow *f);
/* Deploy f across the cluster (two phases). A response. */
char *zfd_cluster_deploy(zfd_daemon *d, const zf_request *req, const zf_flow *f);

/* Destroy every instance gracefully, logging each stop report. */
void zfd_destroy_all(zfd_daemon *d);

/* Log a line of the daemon's own (stderr, with level and timestamp), at
 * most zfd_log_level (log.c). */
extern zf_log_level zfd_log_level;
void zfd_log(zf_log_level level, const char *fmt, ...) ZF_PRINTF(2, 3);

/* Call fn for every instance in the table, in creation order, with the
 * table locked (fn must not call back into the table). */
typedef void (*zfd_instance_fn)(void *arg, zf_instance *inst, const char *uuid, const char *name,
                                double uptime_s);
void zfd_each_instance(zfd_daemon *d, zfd_instance_fn fn, void *arg);

/* ---- the HTTP side (http.c, page.c; docs/operations.md) ---- */
typedef struct zfd_http zfd_http;
/* Serve /metrics, / (the live page) and its /api/ on addr ("PORT",
 * "HOST:PORT", "[V6]:PORT"; a missing host is 127.0.0.1). NULL with why in
 * err. */
zfd_http *zfd_http_start(zfd_daemon *d, const char *addr, char *err, size_t errlen);
void zfd_http_stop(zfd_http *h);
/* The port it listens on (the one the system chose for port 0). */
unsigned zfd_http_port(const zfd_http *h);
/* The Prometheus text for the whole daemon; the caller frees it. */
char *zfd_metrics_text(zfd_daemon *d);
/* The live page (a NUL-terminated HTML document). */
extern const char zfd_page_html[];

/* `echo` and `hz` on inst (taps.c): the response text. */
char *zfd_echo(zf_instance *inst, const char *uuid, const zf_request *req);
char *zfd_hz(zf_instance *inst, const char *uuid, const zf_request *req);

/* `record` (record.c): start or stop recording inst into
 * STATE/recordings/FILE; the response text. zfd_record_end stops the
 * instance's recording, if any (its destroy, after the drain). */
char *zfd_record(zfd_daemon *d, zf_instance *inst, const char *uuid, const zf_request *req);
void zfd_record_end(const char *uuid);

/* ---- the log store (logs.c, docs/operations.md) ---- */

/* The state directory when --state-dir is not given: systemd's
 * $STATE_DIRECTORY, else /var/lib/zflow for root, else
 * $XDG_STATE_HOME/zflow, ~/.local/state/zflow, or /tmp/zflow-UID/state.
 * The caller frees it. */
char *zfd_default_state_dir(void);
/* Open (create) STATE/logs; files rotate past max_bytes each; the newest
 * ring_lines lines are also kept in memory for followers. Lines at most
 * stderr_level also go to stderr; lines about an instance at most
 * keep_level are kept. NULL with why in err. */
zfd_logs *zfd_logs_open(const char *state_dir, uint64_t max_bytes, size_t ring_lines,
                        zf_log_level stderr_level, zf_log_level keep_level, char *err,
                        size_t errlen);
void zfd_logs_close(zfd_logs *lg);
/* The library's entry logger (zf_log_set_entry), arg a zfd_logs. */
void zfd_logs_entry(void *arg, const zf_log_entry *e);
/* Close the files of a destroyed instance (they stay on disk). */
void zfd_logs_forget(zfd_logs *lg, const char *uuid);
/* Whether uuid (a whole UUID) has a log folder: a destroyed instance's
 * logs can still be read. */
bool zfd_logs_known(zfd_logs *lg, const char *uuid);
/* From the crash handler (async-signal-safe): msg (len bytes, one line)
 * into the log file of the node ctx names (zf_crash_context's text). */
void zfd_logs_crash(const char *ctx, const char *msg, size_t len);
/* The `logs` request's answer for instance uuid. */
char *zfd_logs_query(zfd_logs *lg, const char *uuid, const zf_request *req);

/* ---- live figures in answers (live.c), written into w ---- */
/* nodes, nodes_running, cpu_1s, cpu_10s, cpu_s, mem_bytes, held_bytes,
 * held_capsules of inst, as members of the open object. */
void zfd_live_summary(zf_json_writer *w, zf_instance *inst);
/* Node i's / link i's rates (l may be NULL: zeros), as members. */
void zfd_live_node(zf_json_writer *w, const zf_instance_live *l, size_t i);
void zfd_live_link(zf_json_writer *w, const zf_instance_live *l, size_t i);
/* window_1s, window_10s and the instance's CPU, as members. */
void zfd_live_windows(zf_json_writer *w, const zf_instance_live *l);

/* A folder allowed for node code: its real path, or NULL (and why). */
char *zfd_real_dir(const char *dir);

#endif
