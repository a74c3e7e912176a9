/* Zenoh-Flow's built-in Zenoh nodes, carried by DDS (docs/cluster.md).
 *
 * `zenoh-subscribers: {port: key/expr}` is a source with one output per key
 * expression, `zenoh-publishers: {port: key/expr}` a sink with one input per
 * key expression (and Zenoh-Flow 0.5's `descriptor: builtin://zenoh` with
 * `configuration.key-expressions`). Each key expression is a DDS topic of
 * that name (Cyclone's rule applied: bytes other than letters, digits, '_'
 * and '/' become '_'), of type zflow::Bytes { sequence<octet> data }, so a
 * Zenoh network joins through Zenoh's DDS bridge (zenoh-bridge-dds), which
 * routes DDS topics as key expressions. The subscriber takes samples on a
 * thread of its own and copies each into a capsule (the receive buffers are
 * Cyclone's); the publisher writes each capsule it is given (serialized by
 * Cyclone: one copy) with keep-last(16) reliable history, waiting at most
 * 100 ms for a slow reader, after which the capsule is dropped and counted.
 *
 * They use the process's cluster participant (zfd --domain), or one of
 * their own on $ZF_DOMAIN (default 0) with the cluster's configuration
 * rules ($ZF_DDS_CONFIG, else $CYCLONEDDS_URI, else loopback). */
#include "cluster/dds/impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PORTS 32

typedef struct octets {
    uint32_t _maximum, _length;
    uint8_t *_buffer;
    bool _release;
} octets;

typedef struct bytes_msg {
    octets data;
} bytes_msg;

/* clang-format off */
static const uint32_t bytes_ops[] = {
    DDS_OP_ADR | DDS_OP_TYPE_SEQ | DDS_OP_SUBTYPE_1BY, offsetof(bytes_msg, data),
    DDS_OP_RTS,
};
/* clang-format on */

static const dds_topic_descriptor_t bytes_desc = {
    .m_size = sizeof(bytes_msg),
    .m_align = _Alignof(bytes_msg),
    .m_typename = "zflow::Bytes",
    .m_nops = 2,
    .m_ops = bytes_ops,
    .m_meta = "",
};

/* ---- the participant: the cluster's, or a shared one of their own ---- */

static pthread_mutex_t pp_mu = PTHREAD_MUTEX_INITIALIZER;
static dds_entity_t own_pp;
static unsigned own_refs;

static dds_entity_t participant(zf_node *n)
{
    zf_cluster *c = zfi_cluster_get();
    if (c)
        return c->pp;
    pthread_mutex_lock(&pp_mu);
    if (!own_refs) {
        const char *e = getenv("ZF_DOMAIN");
        int domain = e && *e ? atoi(e) : 0;
        char *cfg = zfi_dds_config_text(NULL, 0);
        if (cfg) {
            dds_entity_t dom = dds_create_domain((dds_domainid_t)domain, cfg);
            free(cfg);
            (void)dom; /* an existing domain keeps its configuration */
        }
        own_pp = dds_create_participant((dds_domainid_t)domain, NULL, NULL);
    }
    dds_entity_t pp = own_pp;
    if (pp > 0)
        own_refs++;
    else
        zf_node_set_error(n, "Cyclone DDS: participant: %s", dds_strretcode(pp));
    pthread_mutex_unlock(&pp_mu);
    return pp;
}

static void participant_release(void)
{
    if (zfi_cluster_get())
        return;
    pthread_mutex_lock(&pp_mu);
    if (own_refs && --own_refs == 0) {
        dds_delete(own_pp);
        own_pp = 0;
    }
    pthread_mutex_unlock(&pp_mu);
}

/* ---- the nodes ---- */

typedef struct dds_io {
    zf_node *n;
    bool sub;
    bool own_pp; /* holds a reference on the shared participant */
    size_t n_ports;
    dds_entity_t tp[MAX_PORTS], ep[MAX_PORTS], rc[MAX_PORTS], ws, guard;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
    atomic_uint_fast64_t dropped;
} dds_io;

static void io_free(dds_io *s)
{
    if (s->thread_started) {
        atomic_store(&s->stop, true);
        dds_set_guardcondition(s->guard, true);
        zfi_node_end_outputs(s->n, false); /* wakes a send into a full link */
        pthread_join(s->thread, NULL);
    }
    for (size_t i = 0; i < s->n_ports; i++) {
        if (s->rc[i] > 0)
            dds_delete(s->rc[i]);
        if (s->ep[i] > 0)
            dds_delete(s->ep[i]);
        if (s->tp[i] > 0)
            dds_delete(s->tp[i]);
    }
    if (s->guard > 0)
        dds_delete(s->guard);
    if (s->ws > 0)
        dds_delete(s->ws);
    if (s->own_pp)
        participant_release();
    free(s);
}

static void *sub_main(void *arg)
{
    dds_io *s = arg;
    zfi_thread_name("zf-dds-sub");
    while (!atomic_load(&s->stop)) {
        bool any = false;
        for (size_t p = 0; p < s->n_ports && !atomic_load(&s->stop); p++) {
            void *buf[16] = {NULL};
            dds_sample_info_t si[16];
            int k = dds_take(s->ep[p], buf, si, 16, 16);
            for (int i = 0; i < k; i++) {
                const bytes_msg *m = buf[i];
                zf_data *d = NULL;
                if (!si[i].valid_data)
                    continue;
                any = true;
                if (zf_data_alloc(s->n, m->data._length, &d) != ZF_OK) {
                    atomic_fetch_add(&s->dropped, 1);
                    continue;
                }
                memcpy(zf_data_mut(&d), m->data._buffer, m->data._length);
                if (zf_send_timeout(s->n, (unsigned)p, &d, -1) == ZF_ECLOSED)
                    atomic_store(&s->stop, true);
            }
            if (k > 0)
                dds_return_loan(s->ep[p], buf, k);
        }
        if (!any && !atomic_load(&s->stop))
            dds_waitset_wait(s->ws, NULL, 0, DDS_INFINITY);
    }
    return NULL;
}

static dds_qos_t *io_qos(void)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_MSECS(100));
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 16);
    return q;
}

static zf_err io_init(zf_node *n, void **state, bool sub)
{
    const zf_config *keys = zf_config_get(zf_node_config(n), "key-expressions");
    size_t np = zf_config_len(keys);
    if (!np || np > MAX_PORTS) {
        zf_node_set_error(n, "expected 1 to %d key expressions, found %zu", MAX_PORTS, np);
        return ZF_EINVAL;
    }
    dds_io *s = zfi_calloc(1, sizeof *s);
    if (!s)
        return ZF_ENOMEM;
    s->n = n;
    s->sub = sub;
    dds_entity_t pp = participant(n);
    if (pp <= 0) {
        free(s);
        return ZF_ESYS;
    }
    s->own_pp = !zfi_cluster_get();
    dds_qos_t *q = io_qos();
    const char *what = NULL;
    for (size_t i = 0; i < np && !what; i++) {
        /* port i of the node is key i (the loader made them in this order) */
        char topic[512];
        const char *ke = zf_config_text(zf_config_at(keys, i));
        snprintf(topic, sizeof topic, "%s", ke ? ke : "");
        zfi_topic_name(topic);
        s->tp[i] = dds_create_topic(pp, &bytes_desc, topic, q, NULL);
        s->ep[i] = s->tp[i] <= 0 ? s->tp[i]
                   : sub         ? dds_create_reader(pp, s->tp[i], q, NULL)
                                 : dds_create_writer(pp, s->tp[i], q, NULL);
        s->n_ports = i + 1;
        if (s->tp[i] <= 0 || s->ep[i] <= 0)
            what = ke ? ke : "?";
    }
    dds_delete_qos(q);
    if (!what && sub) {
        s->ws = dds_create_waitset(pp);
        s->guard = dds_create_guardcondition(pp);
        if (s->ws <= 0 || s->guard <= 0 || dds_waitset_attach(s->ws, s->guard, 0) < 0)
            what = "(waitset)";
        for (size_t i = 0; i < np && !what; i++) {
            s->rc[i] = dds_create_readcondition(s->ep[i], DDS_ANY_STATE);
            if (s->rc[i] <= 0 || dds_waitset_attach(s->ws, s->rc[i], 0) < 0)
                what = "(read condition)";
        }
        if (!what && pthread_create(&s->thread, NULL, sub_main, s) != 0)
            what = "(thread)";
        s->thread_started = !what;
    }
    if (what) {
        zf_node_set_error(n, "Cyclone DDS refused the topic of key expression %s", what);
        io_free(s);
        return ZF_ESYS;
    }
    zf_node_log(n, ZF_LOG_INFO, "%s %zu key expression(s) over DDS",
                sub ? "subscribing to" : "publishing", np);
    *state = s;
    return ZF_OK;
}

static zf_err sub_init(zf_node *n, void **state)
{
    return io_init(n, state, true);
}

static zf_err pub_init(zf_node *n, void **state)
{
    return io_init(n, state, false);
}

static zf_err pub_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    dds_io *s = state;
    (void)n;
    size_t len = zf_data_len(*d);
    if (port >= s->n_ports || len > UINT32_MAX)
        return ZF_EINVAL;
    bytes_msg m = {.data = {._maximum = (uint32_t)len,
                            ._length = (uint32_t)len,
                            ._buffer = (uint8_t *)zf_data_ptr(*d)}};
    if (dds_write(s->ep[port], &m) != DDS_RETCODE_OK)
        atomic_fetch_add(&s->dropped, 1);
    return ZF_OK;
}

static void io_fini(void *state)
{
    dds_io *s = state;
    if (atomic_load(&s->dropped))
        zf_node_log(s->n, ZF_LOG_WARN,
                    "%llu sample(s) dropped (no pool memory, or a reader "
                    "slower than 100 ms)",
                    (unsigned long long)atomic_load(&s->dropped));
    io_free(s);
}

/* A declaration with the node's own ports (one per key expression, from
 * the descriptor), as a language host makes one. The port strings are the
 * flow's, which the instance keeps alive. */
typedef struct io_decl {
    zf_node_decl decl;
    zf_port_decl ports[];
} io_decl;

const zf_node_decl *zfi_zenoh_make(bool sub, const zf_port_decl *ports, size_t np)
{
    io_decl *x = zfi_calloc(1, sizeof *x + (np + 1) * sizeof x->ports[0]);
    if (!x)
        return NULL;
    memcpy(x->ports, ports, np * sizeof ports[0]);
    x->decl =
        (zf_node_decl){.abi = ZF_ABI_VERSION,
                       .kind = sub ? ZF_SOURCE : ZF_SINK,
                       .name = sub ? "zenoh-subscribers (over DDS)" : "zenoh-publishers (over DDS)",
                       .inputs = sub ? NULL : x->ports,
                       .n_inputs = sub ? 0 : np,
                       .outputs = sub ? x->ports : NULL,
                       .n_outputs = sub ? np : 0,
                       .init = sub ? sub_init : pub_init,
                       .fini = io_fini,
                       .on_input = sub ? NULL : pub_on_input};
    return &x->decl;
}

void zfi_zenoh_free_decl(const zf_node_decl *d)
{
    free((void *)d); /* the io_decl it begins */
}
