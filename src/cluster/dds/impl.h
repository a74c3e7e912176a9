/* The cluster module's internals (libzflow-cluster.so, ../module.h):
 * control types (types.c), the capsule sertype (sertype.c), membership and
 * control (cluster.c), bridge endpoints (bridge.c), Zenoh-Flow's built-ins
 * (dds_io.c), signing (sign.c), libzflow's table (host.c). Of libzflow's
 * internals the module uses only the host table's functions, which host.c
 * defines under their libzflow names (zfi_error, zfi_log...). */
#ifndef ZFI_CLUSTER_IMPL_H
#define ZFI_CLUSTER_IMPL_H

#include "cluster/module.h"
#include "core/common.h"
#include "zflow/zflow.h"

#include <dds/dds.h>
#include <pthread.h>
#include <stdatomic.h>

/* ---- control types (hand-written topic descriptors, types.c) ---- */

/* zf/workers: keyed by name, transient-local, with liveliness. */
typedef struct zfi_msg_worker {
    char *name; /* key */
    char *info; /* JSON: host, os, cpus, memory, version, pid, instances */
} zfi_msg_worker;
extern const dds_topic_descriptor_t zfi_msg_worker_desc;

/* zf/ctl: requests and replies between workers (reliable, keep-all). */
enum { ZFI_CTL_REQUEST = 1, ZFI_CTL_REPLY = 2 };
typedef struct zfi_msg_ctl {
    char *to, *from;
    uint64_t id;   /* a request's number (from the sender); a reply repeats it */
    uint32_t kind; /* ZFI_CTL_* */
    uint64_t time; /* sender's wall clock, ns (replay window of signed messages) */
    char *body;    /* JSON */
    char *sig;     /* hex MAC over the other fields, or "" */
} zfi_msg_ctl;
extern const dds_topic_descriptor_t zfi_msg_ctl_desc;

/* zf/<uuid>/<node>/<port>/credit: how many capsules a reader worker's
 * consumers have taken (keyed by that worker, transient-local, last one). */
typedef struct zfi_msg_credit {
    char *reader; /* key: the reading worker */
    uint64_t taken;
} zfi_msg_credit;
extern const dds_topic_descriptor_t zfi_msg_credit_desc;

/* ---- the capsule sertype (sertype.c) ---- */

/* What travels with a capsule's bytes. */
enum { ZFI_WIRE_EOS = 1 };

/* A sertype for one data topic. Received samples are copied once into
 * capsules of `recv_pool` (set by the reader endpoint before its reader
 * exists; NULL on the writer's side). */
struct ddsi_sertype *zfi_capsule_sertype_new(const char *type_name, zf_node *recv_node);
/* A serdata holding a reference to capsule d (consumed), or an end-of-stream
 * marker (d NULL, ZFI_WIRE_EOS). NULL on allocation failure (d released). */
struct ddsi_serdata *zfi_capsule_serdata(struct ddsi_sertype *st, zf_data *d, uint32_t flags);
/* A received sample: its capsule (a reference the caller owns; NULL for end
 * of stream or a sample refused as malformed), its flags. */
zf_data *zfi_capsule_take(struct ddsi_serdata *sd, uint32_t *flags);
/* Samples refused as malformed by this process's sertypes. */
uint64_t zfi_capsule_malformed(void);

/* ---- signing (sign.c) ---- */

typedef struct zfi_key {
    bool set;
    unsigned char k[32];
} zfi_key;
/* Read a key file: 32 raw bytes or 64 hex digits (whitespace around). */
zf_err zfi_key_load(const char *path, zfi_key *out);
/* The MAC of m's fields but sig, as 64 hex digits into sig (65 bytes). */
void zfi_ctl_sign(const zfi_key *k, const zfi_msg_ctl *m, char sig[65]);
bool zfi_ctl_verify(const zfi_key *k, const zfi_msg_ctl *m);

/* ---- the cluster object (cluster.c) ---- */

typedef struct zfi_peer {
    zf_worker_info info;
    dds_instance_handle_t ih;
} zfi_peer;

typedef struct zfi_pending zfi_pending;
typedef struct zfi_bridge zfi_bridge;

struct zf_cluster {
    char *name;
    int domain;
    int64_t lease_ns;
    zfi_key key;
    zf_cluster_handler handler;
    void *handler_arg;
    zf_cluster_lost_fn on_lost;
    void *lost_arg;
    zf_cluster_joined_fn on_joined;
    void *joined_arg;

    dds_entity_t pp, t_workers, t_ctl, w_workers, r_workers, w_ctl, r_ctl;
    dds_entity_t ws, guard, rc_workers, rc_ctl;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;

    pthread_mutex_t mu; /* peers, pending, bridges, counters */
    pthread_cond_t cv;  /* a reply arrived, a request thread ended */
    zfi_peer *peers;
    size_t n_peers, cap_peers;
    zfi_pending *pending;
    uint64_t next_id;
    unsigned requests_running;
    zfi_bridge *bridges; /* live bridge endpoints (bridge.c) */
    char info[1024];     /* this worker's announcement (JSON) */
    uint64_t sent, received, refused;
};

/* The process's cluster (bridge endpoints find it here), or NULL. */
zf_cluster *zfi_cluster_get(void);

/* The module's side of the public zf_cluster_* functions (same contracts). */
zf_err zfi_cluster_create(const zf_cluster_options *opt, zf_cluster **out);
void zfi_cluster_destroy(zf_cluster *c);
const char *zfi_cluster_name(const zf_cluster *c);
void zfi_cluster_announce(zf_cluster *c, unsigned instances);
zf_err zfi_cluster_workers(zf_cluster *c, zf_worker_info **out, size_t *n);
bool zfi_cluster_alive(zf_cluster *c, const char *name);
zf_err zfi_cluster_call(zf_cluster *c, size_t n, const char *const *workers,
                        const char *const *bodies, int timeout_ms, char **replies, char **errors);
void zfi_cluster_stats_get(zf_cluster *c, zf_cluster_stats *out);
size_t zfi_cluster_entities(zf_cluster *c, const char *uuid);

/* The DDS configuration to use (cluster.c): cfg if given, else
 * $ZF_DDS_CONFIG, else NULL when $CYCLONEDDS_URI is set (Cyclone reads it),
 * else the loopback default with this lease (0: 1 s). free() it. */
char *zfi_dds_config_text(const char *cfg, int64_t lease_ns);

/* ---- bridge endpoints (bridge.c) ---- */

/* The declarations of the two bridge nodes. Their configuration (made by
 * zf_flow_part): topic, type, capacity, readers (out) / writer (in). */
extern const zf_node_decl zfi_bridge_out_decl;
extern const zf_node_decl zfi_bridge_in_decl;
/* Zenoh-Flow's built-ins (dds_io.c): see zfi_cluster_module.zenoh_make. */
const zf_node_decl *zfi_zenoh_make(bool sub, const zf_port_decl *ports, size_t n);
void zfi_zenoh_free_decl(const zf_node_decl *d);

/* Libzflow's runtime, through the host table (host.c). */
zf_link *zfi_node_input(zf_node *n, size_t i);
void zfi_node_finish(zf_node *n);
void zfi_node_end_outputs(zf_node *n, bool done);
void zfi_link_on_data(zf_link *l, void (*on_data)(void *arg), void *arg);

/* A worker was lost: bridges towards it shed load, bridges from it end
 * their stream (c->mu not held). */
void zfi_bridges_worker_lost(zf_cluster *c, const char *worker);

#endif
