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

#define ZFD_MAX_LIB_PATHS 64

typedef struct zfd_daemon {
    char *name;       /* this worker's name */
    char **lib_paths; /* allowed folders, real paths */
    size_t n_lib_paths;
    bool allow_descriptor_dir;
    bool allow_writable; /* --allow-writable-lib-path: code others can change */
    size_t max_instances;
    zf_runtime *rt;
    pthread_mutex_t mu; /* the instance table */
    entry *list;
    size_t count;
    uint64_t started_ns;  /* zf_clock_ns at start */
    const char *socket;   /* for `workers` */
    atomic_bool stopping; /* SIGTERM or SIGINT received */
    zf_cluster *cluster;  /* with --domain (cluster.c), else NULL */
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

/* A folder allowed for node code: its real path, or NULL (and why). */
char *zfd_real_dir(const char *dir);

#endif
