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
    bool isolate;        /* --isolate: every node in a process of its own */
    size_t max_instances;
    zf_runtime *rt;
    pthread_mutex_t mu; /* the instance table */
    entry *list;
    size_t count;
    uint64_t started_ns;  /* zf_clock_ns at start */
    const char *socket;   /* for `workers` */
    atomic_bool stopping; /* SIGTERM or SIGINT received */
} zfd_daemon;

/* The request handler (zf_server_handler). */
char *zfd_handle(void *arg, const zf_request *req, const zf_peer *peer);

/* Destroy every instance gracefully, logging each stop report. */
void zfd_destroy_all(zfd_daemon *d);

/* Log a line of the daemon's own (stderr, with level and timestamp), at
 * most zfd_log_level (log.c). */
extern zf_log_level zfd_log_level;
void zfd_log(zf_log_level level, const char *fmt, ...) ZF_PRINTF(2, 3);

/* A folder allowed for node code: its real path, or NULL (and why). */
char *zfd_real_dir(const char *dir);

#endif
