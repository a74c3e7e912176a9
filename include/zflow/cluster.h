/*
 * zflow cluster: daemons (workers) that see each other through Eclipse
 * Cyclone DDS (docs/cluster.md). Included by zflow.h.
 *
 * A zf_cluster is this process's membership of a DDS domain: it announces
 * the worker (name, host, OS, CPUs, memory, version, instances) on a
 * transient-local topic with liveliness, keeps the table of the others,
 * carries control requests and replies between workers, and hosts the
 * bridge endpoints of links cut by a flow's `mapping` (created by the
 * runtime from zf_flow_part's bridge nodes). One cluster per process.
 */
#ifndef ZFLOW_CLUSTER_H
#define ZFLOW_CLUSTER_H

#include <zflow/base.h>
#include <zflow/config.h>
#include <zflow/flow.h>
#include <zflow/node.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zf_cluster zf_cluster;

/** A request from another worker (`from`), `body` its JSON text (both valid
 *  during the call). Returns the reply's JSON text (malloc'd; the cluster
 *  frees it), or NULL for an empty reply. Runs on a thread of its own per
 *  request: it may be slow, and must be thread-safe. */
typedef char *(*zf_cluster_handler)(void *arg, const char *from, const char *body);

/** A worker was lost (its lease expired without it leaving) or left. Called
 *  on the cluster's thread; must not block. */
typedef void (*zf_cluster_lost_fn)(void *arg, const char *worker, bool left);

/** A worker joined: seen for the first time, or back after it was lost or
 *  left (a lease that expired under load, a network that healed, a
 *  restart). Called on the cluster's thread; must not block. */
typedef void (*zf_cluster_joined_fn)(void *arg, const char *worker);

typedef struct zf_cluster_options {
    const char *name; /**< this worker's name (required) */
    int domain;       /**< DDS domain id 0..230; <0: $ZF_DOMAIN, else 0 */
    /** Cyclone DDS configuration: XML text or a file:// URI; NULL: the
     *  environment's $CYCLONEDDS_URI if set, else zflow's default (loopback,
     *  unicast, 10 MiB samples: docs/cluster.md). */
    const char *config;
    int64_t lease_ns; /**< liveliness lease; 0: 1 s */
    /** The cluster key file (32 bytes, or 64 hex digits): every control
     *  message is signed with it and unsigned or wrongly signed ones are
     *  refused and logged. NULL: messages are neither signed nor checked. */
    const char *key_file;
    zf_cluster_handler handler;
    void *handler_arg;
    zf_cluster_lost_fn on_lost;
    void *lost_arg;
    zf_cluster_joined_fn on_joined;
    void *joined_arg;
} zf_cluster_options;

/** Join the domain and announce this worker. On ZF_OK the caller owns *out
 *  (zf_cluster_destroy). Names are not checked for uniqueness across the
 *  domain (two live workers of one name would share its requests): give
 *  each worker its own. The first call loads the cluster module
 *  (libzflow-cluster.so, docs/cluster.md). Errors: ZF_EINVAL (no name, bad
 *  domain, unreadable key file), ZF_EBUSY (a cluster exists in this process
 *  already), ZF_ESYS (DDS refused: the message says why), ZF_ENOTFOUND (the
 *  module cannot be loaded: the message names each path tried and why, or
 *  says that this program links libzflow statically, which the module
 *  cannot share). */
ZF_EXPORT ZF_NODISCARD zf_err zf_cluster_create(const zf_cluster_options *opt, zf_cluster **out);

/** Leave the domain (the others see this worker leave, not lost) and free
 *  the cluster. Every instance with bridge endpoints must be destroyed
 *  first. NULL is a no-op. */
ZF_EXPORT void zf_cluster_destroy(zf_cluster *c);

/** This worker's name (owned by the cluster). */
ZF_EXPORT const char *zf_cluster_name(const zf_cluster *c);

/** Publish this worker's announcement again with `instances` hosted. */
ZF_EXPORT void zf_cluster_announce(zf_cluster *c, unsigned instances);

/** What a worker announced, and whether it is alive. */
typedef struct zf_worker_info {
    char name[128], host[256], os[128], version[32];
    int pid;
    unsigned cpus;
    uint64_t memory; /**< bytes of RAM */
    unsigned instances;
    bool alive;        /**< false: lost (lease expired) or left */
    bool left;         /**< it left in order */
    uint64_t since_ns; /**< zf_clock_ns of its last change of state */
} zf_worker_info;

/** Every worker seen (this one first), alive or not: *out is an array the
 *  caller frees with free(), *n its length. ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_cluster_workers(zf_cluster *c, zf_worker_info **out, size_t *n);

/** Whether worker `name` is alive (this worker is). */
ZF_EXPORT bool zf_cluster_alive(zf_cluster *c, const char *name);

/** Send bodies[i] (JSON text) to workers[i], all at once, and wait up to
 *  timeout_ms for every reply. replies[i] (malloc'd, the caller frees) is
 *  the reply's JSON text, or NULL when that worker did not answer in time,
 *  is not alive, or refused the message (errors[i], if errors is not NULL,
 *  then holds why, malloc'd). A request to this worker itself runs its
 *  handler directly. Returns ZF_OK when every worker replied, else
 *  ZF_ETIMEDOUT (or ZF_ENOMEM, ZF_EINVAL). */
ZF_EXPORT ZF_NODISCARD zf_err zf_cluster_call(zf_cluster *c, size_t n, const char *const *workers,
                                              const char *const *bodies, int timeout_ms,
                                              char **replies, char **errors);

/** Control messages sent and received so far, and refused ones (bad or
 *  missing signature). */
typedef struct zf_cluster_stats {
    uint64_t sent, received, refused;
} zf_cluster_stats;
ZF_EXPORT void zf_cluster_stats_get(zf_cluster *c, zf_cluster_stats *out);

/** DDS entities this process still has for instance `uuid` (topics
 *  zf/<uuid>/..., their readers and writers): 0 after its destroy. */
ZF_EXPORT size_t zf_cluster_entities(zf_cluster *c, const char *uuid);

/* ---- placement ---- */

/** The workers flow f runs on: those of its `mapping`, and default_worker
 *  when a node is unmapped. *out is an array of strings owned by f (free()
 *  the array), *n its length, in order of first appearance. ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_flow_workers(const zf_flow *f, const char *default_worker,
                                              const char ***out, size_t *n);

/** The part of f that `worker` creates for instance `uuid`: the nodes
 *  mapped to it (unmapped ones when it is default_worker), and for every
 *  link the mapping cuts a bridge endpoint joined to the local end by an
 *  ordinary link with the cut link's queue: a writer for a local output
 *  read on other workers, a reader for a remote output read here. Topics
 *  are zf/<uuid>/<node>/<port>. The part carries the instance's UUID.
 *  On ZF_OK the caller owns *out (zf_flow_free). Errors: ZF_ENOTFOUND (no
 *  node goes to `worker`), ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_flow_part(const zf_flow *f, const char *worker,
                                           const char *default_worker, const char *uuid,
                                           zf_flow **out);

#ifdef __cplusplus
}
#endif

#endif /* ZFLOW_CLUSTER_H */
