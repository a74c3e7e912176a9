/* Bridge endpoints: the two ends of a link the mapping cuts.
 *
 * On the producer's worker a bridge-out node (a sink without on_input)
 * takes capsules from its ordinary input link on a thread of its own and
 * writes them to the port's topic zf/<uuid>/<node>/<port> with the capsule
 * sertype (no copy). On each consumer's worker a bridge-in node (a source
 * with a thread of its own) takes them and sends them on its ordinary
 * output links, which apply the link's policy there.
 *
 * Credits: each bridge-in publishes on zf/<uuid>/<node>/<port>/credit how
 * many capsules it has handed to its local links (taken); the bridge-out
 * writes only while sent - taken < capacity for every reader, else it stops
 * taking from its input link, which fills, so the producer parks exactly
 * as on a local `block` link (or drops, on a drop_* link). The first write
 * waits for every reader's first credit and for the DDS match, so nothing
 * is sent into the void. End of stream crosses as a sample of its own.
 *
 * A lost reader's worker no longer holds credit back: with no reader left
 * the bridge-out sheds (drops, counted). A lost producer's worker ends the
 * bridge-in's stream, so the consumer's drain completes.
 *
 * The fast paths (latency: one thread hand-off in all, as raw DDS has):
 * - Send: the input link calls out_on_data on the producer's thread after
 *   each push; while the last credit count allows (`budget`) and the capsule
 *   fits in one datagram (FAST_MAX), it takes the capsule and writes it
 *   there, without waking the endpoint thread. The thread does the rest:
 *   credit waits, large capsules (a write that may wait for acks must not
 *   hold a worker), shedding, end of stream. `wmu` makes the two one
 *   consumer of the link; the hook only tries it.
 * - Receive: Cyclone's listener (in_on_data, on the thread that received
 *   the sample) hands each capsule to the local links without waiting;
 *   when one is full it keeps the rest (`pend`) and the endpoint thread
 *   delivers them, waiting for room, until the reader is empty (`backlog`:
 *   meanwhile the listener leaves the reader to it). Cyclone's receive
 *   thread never waits for a consumer. */
#include "cluster/dds/impl.h"
#include "core/futex.h"

#include <dds/ddsi/ddsi_serdata.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_READERS  64
#define EOS_ACK_NS   DDS_SECS(2)
#define MAX_BLOCKING DDS_SECS(10)
#define FAST_MAX     60000u /* one datagram: written on the producer's thread */
#define FAST_WINDOW  64u    /* capsules the producer's thread may write unacknowledged */
#define BATCH        16

struct zfi_bridge {
    zf_cluster *c;
    zf_node *n;
    bool out; /* bridge-out (writer), else bridge-in (reader) */
    char topic[300], credit_topic[320], type[64];
    uint64_t capacity;
    struct ddsi_sertype *st;
    dds_entity_t tp, ep, t_credit, credit_ep, ws, guard, rc, sc;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
    /* bridge-out: the readers' workers and their credits (under wmu, but
     * `lost` under c->mu) */
    pthread_mutex_t wmu;
    size_t n_readers;
    char readers[MAX_READERS][128];
    uint64_t taken[MAX_READERS];
    bool known[MAX_READERS], lost[MAX_READERS];
    uint64_t sent, shed;
    uint64_t budget; /* capsules that may go before credits are read again */
    unsigned fast;   /* of which the producer's thread may write */
    zf_data *held;   /* taken by the hook, for the thread to write */
    unsigned hooks;  /* hooks running (under c->mu) */
    /* bridge-in: the writer's worker; delivery (under rmu) */
    char peer[128];
    bool peer_lost; /* under c->mu */
    pthread_mutex_t rmu;
    bool backlog;
    atomic_bool eos, ended;
    zf_data *pend[BATCH];
    size_t n_pend, i_pend;
    uint64_t handed, credited; /* taken; the count last published */
    zfi_bridge *next;          /* in c->bridges */
};

static void registry_add(zf_cluster *c, zfi_bridge *b)
{
    pthread_mutex_lock(&c->mu);
    b->next = c->bridges;
    c->bridges = b;
    pthread_mutex_unlock(&c->mu);
}

static void registry_remove(zf_cluster *c, zfi_bridge *b)
{
    pthread_mutex_lock(&c->mu);
    for (zfi_bridge **p = &c->bridges; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    pthread_mutex_unlock(&c->mu);
}

void zfi_bridges_worker_lost(zf_cluster *c, const char *worker)
{
    pthread_mutex_lock(&c->mu);
    for (zfi_bridge *b = c->bridges; b; b = b->next) {
        bool hit = false;
        if (b->out) {
            for (size_t i = 0; i < b->n_readers; i++)
                if (!strcmp(b->readers[i], worker))
                    hit = b->lost[i] = true;
        } else if (!strcmp(b->peer, worker)) {
            hit = b->peer_lost = true;
        }
        if (hit)
            dds_set_guardcondition(b->guard, true);
    }
    pthread_mutex_unlock(&c->mu);
}

static dds_qos_t *data_qos(uint64_t capacity, bool reader)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, MAX_BLOCKING);
    dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
    if (reader) /* the safety net: credits keep the reader under it */
        dds_qset_resource_limits(q, (int32_t)(capacity + 8), DDS_LENGTH_UNLIMITED,
                                 DDS_LENGTH_UNLIMITED);
    return q;
}

static dds_qos_t *credit_qos(void)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, MAX_BLOCKING);
    dds_qset_durability(q, DDS_DURABILITY_TRANSIENT_LOCAL);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
    return q;
}

/* ---- bridge-out ---- */

static void take_credits(zfi_bridge *b)
{
    for (;;) {
        void *buf[8] = {NULL};
        dds_sample_info_t si[8];
        int n = dds_take(b->credit_ep, buf, si, 8, 8);
        if (n <= 0)
            return;
        for (int i = 0; i < n; i++) {
            const zfi_msg_credit *m = buf[i];
            if (!si[i].valid_data)
                continue;
            for (size_t r = 0; r < b->n_readers; r++)
                if (!strcmp(b->readers[r], m->reader)) {
                    if (m->taken > b->taken[r] || !b->known[r])
                        b->taken[r] = m->taken;
                    b->known[r] = true;
                }
        }
        dds_return_loan(b->credit_ep, buf, n);
    }
}

typedef enum { CREDIT_WAIT, CREDIT_SEND, CREDIT_SHED } credit_state;

/* Whether the next capsule may go: every live reader known and matched, and
 * under its window (b->budget: how many more may go); no live reader left:
 * shed. Under wmu. */
static credit_state credit(zfi_bridge *b)
{
    b->budget = 0;
    /* Read (and so reset) the match status first: its condition stays
     * triggered until read, and the wait below would spin. */
    dds_publication_matched_status_t st;
    if (dds_get_publication_matched_status(b->ep, &st) != DDS_RETCODE_OK)
        st.current_count = 0;
    pthread_mutex_lock(&b->c->mu);
    bool lost[MAX_READERS];
    memcpy(lost, b->lost, sizeof lost);
    pthread_mutex_unlock(&b->c->mu);
    size_t live = 0;
    uint64_t window = UINT64_MAX;
    for (size_t r = 0; r < b->n_readers; r++) {
        if (lost[r])
            continue;
        live++;
        if (!b->known[r] || b->sent - b->taken[r] >= b->capacity) {
            zfi_log(ZF_LOG_TRACE, "cluster", "%s: waiting for %s of '%s'", b->topic,
                    b->known[r] ? "credit" : "the first credit", b->readers[r]);
            return CREDIT_WAIT;
        }
        if (b->capacity - (b->sent - b->taken[r]) < window)
            window = b->capacity - (b->sent - b->taken[r]);
    }
    if (!live)
        return CREDIT_SHED;
    if (st.current_count < live) {
        zfi_log(ZF_LOG_TRACE, "cluster", "%s: %u of %zu readers matched", b->topic,
                st.current_count, live);
        return CREDIT_WAIT;
    }
    b->budget = window;
    b->fast = window < FAST_WINDOW ? (unsigned)window : FAST_WINDOW;
    return CREDIT_SEND;
}

/* Write capsule d (consumed). Under wmu, with budget. */
static void out_write(zfi_bridge *b, zf_data *d)
{
    struct ddsi_serdata *sd = zfi_capsule_serdata(b->st, d, 0);
    dds_return_t r = sd ? dds_writecdr(b->ep, sd) : DDS_RETCODE_OUT_OF_RESOURCES;
    b->budget--;
    if (b->fast)
        b->fast--;
    if (r == DDS_RETCODE_OK)
        b->sent++;
    else
        zfi_log(ZF_LOG_WARN, "cluster", "%s: write: %s (capsule dropped)", b->topic,
                dds_strretcode(r));
}

/* The endpoint thread's turn: read the credits, then write (or shed) what
 * the hook left and the link holds while they allow. True when the stream
 * ended (end of stream written if it could be). Under wmu. */
static bool out_step(zfi_bridge *b, bool *warned_shed)
{
    take_credits(b);
    credit_state cs = credit(b);
    zf_link *in = zfi_node_input(b->n, 0);
    for (;;) {
        if (cs == CREDIT_WAIT || (cs == CREDIT_SEND && !b->budget))
            return false; /* a credit or a match wakes the thread */
        zf_data *d = b->held;
        b->held = NULL;
        zf_err e = d ? ZF_OK : zf_link_try_pop(in, &d);
        if (e == ZF_ECLOSED) {
            if (cs == CREDIT_SEND) {
                struct ddsi_serdata *sd = zfi_capsule_serdata(b->st, NULL, ZFI_WIRE_EOS);
                if (sd && dds_writecdr(b->ep, sd) == DDS_RETCODE_OK)
                    dds_wait_for_acks(b->ep, EOS_ACK_NS);
            }
            return true;
        }
        if (e != ZF_OK || !d)
            return false; /* empty: the hook wakes the thread for the next one it leaves */
        if (cs == CREDIT_SHED) {
            zf_data_unref(d);
            b->shed++;
            if (!*warned_shed) {
                zfi_log(ZF_LOG_WARN, "cluster",
                        "%s: every reader's worker is lost: dropping what the link carries",
                        b->topic);
                *warned_shed = true;
            }
            continue;
        }
        out_write(b, d);
    }
}

static void *out_main(void *arg)
{
    zfi_bridge *b = arg;
    bool warned_shed = false;
    while (!atomic_load(&b->stop)) {
        /* Reset before looking: a hook that leaves work after this sets it
         * again, and the wait returns at once. */
        dds_set_guardcondition(b->guard, false);
        pthread_mutex_lock(&b->wmu);
        bool ended = out_step(b, &warned_shed);
        pthread_mutex_unlock(&b->wmu);
        if (ended) {
            if (!atomic_load(&b->stop))
                zfi_node_finish(b->n);
            break;
        }
        dds_waitset_wait(b->ws, NULL, 0, DDS_INFINITY);
    }
    return NULL;
}

/* The producer's thread, after a push into the input link (or its close):
 * write the capsule here when the credits and its size allow, else leave
 * it to the endpoint thread and wake that. arg: the bridge's node, which
 * lives as long as the link; the bridge is looked up, so a late call after
 * its fini finds nothing. */
static void out_on_data(void *arg)
{
    zf_cluster *c = zfi_cluster_get();
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    zfi_bridge *b = c->bridges;
    while (b && !(b->out && b->n == arg))
        b = b->next;
    if (b)
        b->hooks++;
    pthread_mutex_unlock(&c->mu);
    if (!b)
        return;
    bool wake = true;
    if (!atomic_load(&b->stop) && pthread_mutex_trylock(&b->wmu) == 0) {
        zf_link *in = zfi_node_input(b->n, 0);
        while (!b->held && b->budget && b->fast) {
            zf_data *d = NULL;
            zf_err e = zf_link_try_pop(in, &d);
            if (e != ZF_OK || !d) {
                wake = e == ZF_ECLOSED; /* end of stream: the thread's */
                break;
            }
            if (zf_data_len(d) > FAST_MAX)
                b->held = d; /* may wait for acks: not on a worker */
            else
                out_write(b, d);
        }
        pthread_mutex_unlock(&b->wmu);
    }
    if (wake)
        dds_set_guardcondition(b->guard, true);
    pthread_mutex_lock(&c->mu);
    if (--b->hooks == 0 && atomic_load(&b->stop))
        pthread_cond_broadcast(&c->cv); /* bridge_free waits for it */
    pthread_mutex_unlock(&c->mu);
}

/* ---- bridge-in ---- */

static void publish_credit(zfi_bridge *b)
{
    zfi_msg_credit m = {.reader = (char *)zfi_cluster_name(b->c), .taken = b->handed};
    dds_write(b->credit_ep, &m);
    b->credited = b->handed;
}

/* The listener's credit: published once the count moved by a quarter of the
 * capacity (at least 1). A credit per capsule woke the producer's endpoint
 * thread (and Cyclone's receive threads on both sides) per capsule; the
 * producer's window is the whole capacity, so holding back less than a
 * quarter of it never makes it wait: at most capacity/4 - 1 capsules it
 * sent are taken here and not yet credited, and once they are the next
 * delivery publishes. */
static void credit_some(zfi_bridge *b)
{
    uint64_t step = b->capacity / 4 ? b->capacity / 4 : 1;
    if (b->handed - b->credited >= step)
        publish_credit(b);
}

/* Hand the kept capsules to the local links: waiting for room (the thread)
 * or not (the listener: false when a link is full, the rest kept). Under
 * rmu for the listener; the thread's while `backlog`. */
static bool in_deliver(zfi_bridge *b, bool wait)
{
    while (b->i_pend < b->n_pend) {
        zf_data **d = &b->pend[b->i_pend];
        zf_err e = wait ? zf_send_timeout(b->n, 0, d, -1) : zf_try_send(b->n, 0, d);
        if (e == ZF_EAGAIN)
            return false;
        if (e == ZF_ECLOSED)
            atomic_store(&b->stop, true);
        b->i_pend++;
        b->handed++; /* delivered, dropped by the policy or refused: taken */
    }
    b->n_pend = b->i_pend = 0;
    return true;
}

/* Take what the reader holds into pend, and deliver it. True when the
 * reader was empty. */
static bool in_take(zfi_bridge *b, dds_entity_t rd, bool wait, bool *delivered)
{
    struct ddsi_serdata *sds[BATCH];
    dds_sample_info_t si[BATCH];
    int n = dds_takecdr(rd, sds, BATCH, si, DDS_ANY_STATE);
    if (n <= 0)
        return true;
    for (int i = 0; i < n; i++) {
        uint32_t flags = 0;
        zf_data *d = si[i].valid_data ? zfi_capsule_take(sds[i], &flags) : NULL;
        ddsi_serdata_unref(sds[i]);
        if (flags & ZFI_WIRE_EOS)
            atomic_store(&b->eos, true);
        if (d && !(flags & ZFI_WIRE_EOS) && !atomic_load(&b->eos))
            b->pend[b->n_pend++] = d;
        else if (d)
            zf_data_unref(d);
        else if (si[i].valid_data && !(flags & ZFI_WIRE_EOS))
            b->handed++; /* refused as malformed (logged): taken all the same */
    }
    *delivered = in_deliver(b, wait);
    return false;
}

/* The end of the stream (end of stream from the producer, or its worker
 * lost): the node is done. Once. */
static void in_end(zfi_bridge *b)
{
    if (atomic_exchange(&b->ended, true))
        return;
    if (!atomic_load(&b->stop))
        zfi_node_end_outputs(b->n, true);
    dds_set_guardcondition(b->guard, true); /* the thread ends too */
}

/* Cyclone's listener, on the thread that received the samples. */
static void in_on_data(dds_entity_t rd, void *arg)
{
    zfi_bridge *b = arg;
    pthread_mutex_lock(&b->rmu);
    if (b->backlog || atomic_load(&b->eos) || atomic_load(&b->stop)) {
        dds_set_guardcondition(b->guard, true); /* the thread's, if anyone's */
        pthread_mutex_unlock(&b->rmu);
        return;
    }
    uint64_t before = b->handed;
    bool delivered = true;
    while (delivered && !atomic_load(&b->eos) && !in_take(b, rd, false, &delivered))
        ;
    if (!delivered) {
        b->backlog = true; /* a link is full: the thread waits for room */
        dds_set_guardcondition(b->guard, true);
    }
    if (b->handed != before)
        credit_some(b);
    bool ended = atomic_load(&b->eos) && delivered;
    pthread_mutex_unlock(&b->rmu);
    if (ended)
        in_end(b);
}

static void *in_main(void *arg)
{
    zfi_bridge *b = arg;
    while (!atomic_load(&b->stop) && !atomic_load(&b->ended)) {
        dds_waitset_wait(b->ws, NULL, 0, DDS_INFINITY);
        dds_set_guardcondition(b->guard, false);
        pthread_mutex_lock(&b->c->mu);
        bool lost = b->peer_lost;
        pthread_mutex_unlock(&b->c->mu);
        pthread_mutex_lock(&b->rmu);
        bool backlog = b->backlog;
        if (lost && !backlog && !atomic_exchange(&b->eos, true))
            zfi_log(ZF_LOG_WARN, "cluster",
                    "%s: the producer's worker '%s' is lost: end of stream here", b->topic,
                    b->peer);
        pthread_mutex_unlock(&b->rmu);
        if (backlog) {
            /* the listener leaves the reader alone meanwhile: this thread
             * delivers, waiting for room, until it is empty */
            bool delivered = in_deliver(b, true);
            while (!atomic_load(&b->stop) && !atomic_load(&b->eos) &&
                   !in_take(b, b->ep, true, &delivered))
                publish_credit(b);
            publish_credit(b);
            pthread_mutex_lock(&b->rmu);
            b->backlog = false;
            pthread_mutex_unlock(&b->rmu);
            /* what came since the last take: the listener was not called
             * for it, so take it as the listener would */
            in_on_data(b->ep, b);
        }
        pthread_mutex_lock(&b->rmu);
        bool ended = atomic_load(&b->eos) && !b->backlog;
        pthread_mutex_unlock(&b->rmu);
        if (ended)
            in_end(b);
    }
    return NULL;
}

/* ---- init, fini ---- */

static void bridge_free(zfi_bridge *b)
{
    atomic_store(&b->stop, true);
    if (!b->out && b->ep > 0)
        dds_set_listener(b->ep, NULL); /* returns once no callback runs */
    if (b->thread_started) {
        dds_set_guardcondition(b->guard, true);
        if (b->out)
            zf_link_close(zfi_node_input(b->n, 0)); /* ends its stream */
        else
            zfi_node_end_outputs(b->n, false); /* wakes a send into a full link */
        pthread_join(b->thread, NULL);
    }
    if (b->c) {
        registry_remove(b->c, b);
        pthread_mutex_lock(&b->c->mu); /* a hook still running finishes */
        while (b->hooks)
            pthread_cond_wait(&b->c->cv, &b->c->mu);
        pthread_mutex_unlock(&b->c->mu);
    }
    if (b->held)
        zf_data_unref(b->held);
    for (size_t i = b->i_pend; i < b->n_pend; i++)
        zf_data_unref(b->pend[i]);
    /* Every entity of the link: the endpoints first (a writer drops the
     * capsules its history holds), then the topics. */
    dds_entity_t es[] = {b->rc, b->sc, b->guard, b->ws, b->ep, b->credit_ep, b->tp, b->t_credit};
    for (size_t i = 0; i < sizeof es / sizeof es[0]; i++)
        if (es[i] > 0)
            dds_delete(es[i]);
    if (b->st && b->tp <= 0)
        ddsi_sertype_unref(b->st); /* never taken by a topic */
    pthread_mutex_destroy(&b->wmu);
    pthread_mutex_destroy(&b->rmu);
    free(b);
}

static zf_err bridge_init(zf_node *n, void **state, bool out)
{
    zf_cluster *c = zfi_cluster_get();
    if (!c) {
        zf_node_set_error(n, "this process is not in a cluster (zfd --domain)");
        return ZF_ESTATE;
    }
    zfi_bridge *b = zfi_calloc(1, sizeof *b);
    if (!b)
        return ZF_ENOMEM;
    b->n = n;
    b->out = out;
    pthread_mutex_init(&b->wmu, NULL);
    pthread_mutex_init(&b->rmu, NULL);
    const zf_config *cfg = zf_node_config(n);
    const char *topic = NULL, *type = NULL, *peer = NULL;
    int64_t cap = 0;
    if (zf_config_string(cfg, "topic", NULL, &topic) != ZF_OK ||
        zf_config_string(cfg, "type", "any", &type) != ZF_OK ||
        zf_config_string(cfg, "writer", "", &peer) != ZF_OK ||
        zf_config_int(cfg, "capacity", 16, &cap) != ZF_OK || !topic) {
        pthread_mutex_destroy(&b->wmu);
        pthread_mutex_destroy(&b->rmu);
        free(b);
        zf_node_set_error(n,
                          "a bridge needs its topic (a string), and strings for type and "
                          "writer, an integer capacity: %s",
                          zf_last_error());
        return ZF_EINVAL;
    }
    snprintf(b->topic, sizeof b->topic, "%s", topic);
    snprintf(b->credit_topic, sizeof b->credit_topic, "%s/credit", topic);
    snprintf(b->type, sizeof b->type, "%s", type);
    snprintf(b->peer, sizeof b->peer, "%s", peer);
    b->capacity = cap > 0 ? (uint64_t)cap : 16;
    const zf_config *rs = zf_config_get(cfg, "readers");
    for (size_t i = 0; out && i < zf_config_len(rs) && i < MAX_READERS; i++)
        snprintf(b->readers[b->n_readers++], sizeof b->readers[0], "%s",
                 zf_config_text(zf_config_at(rs, i)));
    b->st = zfi_capsule_sertype_new(type, out ? NULL : n);
    zf_err err = ZF_ESYS;
    const char *what = "sertype";
    if (!b->st)
        goto fail;
    dds_qos_t *dq = data_qos(b->capacity, !out), *cq = credit_qos();
    what = "topics";
    b->tp = dds_create_topic_sertype(c->pp, b->topic, &b->st, dq, NULL, NULL);
    b->t_credit = dds_create_topic(c->pp, &zfi_msg_credit_desc, b->credit_topic, cq, NULL);
    if (b->tp > 0 && b->t_credit > 0) {
        what = "endpoints";
        if (out) {
            b->ep = dds_create_writer(c->pp, b->tp, dq, NULL);
            b->credit_ep = dds_create_reader(c->pp, b->t_credit, cq, NULL);
        } else {
            b->ep = dds_create_reader(c->pp, b->tp, dq, NULL);
            b->credit_ep = dds_create_writer(c->pp, b->t_credit, cq, NULL);
        }
    }
    dds_delete_qos(dq);
    dds_delete_qos(cq);
    if (b->tp <= 0 || b->t_credit <= 0 || b->ep <= 0 || b->credit_ep <= 0)
        goto fail;
    what = "waitset";
    b->ws = dds_create_waitset(c->pp);
    b->guard = dds_create_guardcondition(c->pp);
    /* the writer waits for credits (and the guard); the reader's samples go
     * to its listener, and its thread waits for the guard only */
    if (out)
        b->rc = dds_create_readcondition(b->credit_ep, DDS_ANY_STATE);
    if (b->ws <= 0 || b->guard <= 0 || (out && b->rc <= 0) ||
        dds_waitset_attach(b->ws, b->guard, 0) < 0 ||
        (out && dds_waitset_attach(b->ws, b->rc, 0) < 0))
        goto fail;
    if (out) {
        if (dds_set_status_mask(b->ep, DDS_PUBLICATION_MATCHED_STATUS) < 0 ||
            dds_waitset_attach(b->ws, b->ep, 0) < 0)
            goto fail;
    }
    b->c = c;
    registry_add(c, b);
    if (out) {
        zfi_link_on_data(zfi_node_input(n, 0), out_on_data, n);
    } else {
        /* before the first credit: no sample comes sooner */
        dds_listener_t *l = dds_create_listener(b);
        dds_lset_data_available(l, in_on_data);
        dds_return_t lr = dds_set_listener(b->ep, l);
        dds_delete_listener(l);
        if (lr < 0) {
            what = "listener";
            goto fail;
        }
        publish_credit(b); /* the first credit: the writer may begin */
    }
    if (!out && !zfi_cluster_alive(c, b->peer)) {
        pthread_mutex_lock(&c->mu);
        b->peer_lost = true;
        pthread_mutex_unlock(&c->mu);
        dds_set_guardcondition(b->guard, true); /* its thread ends the stream */
    }
    if (pthread_create(&b->thread, NULL, out ? out_main : in_main, b) != 0) {
        what = "thread";
        goto fail;
    }
    b->thread_started = true;
    *state = b;
    return ZF_OK;
fail:
    zf_node_set_error(n, "bridge %s: Cyclone DDS refused its %s (%s)", b->topic, what,
                      dds_strretcode(b->tp < 0         ? b->tp
                                     : b->t_credit < 0 ? b->t_credit
                                                       : b->ep));
    bridge_free(b);
    return err;
}

static zf_err out_init(zf_node *n, void **state)
{
    return bridge_init(n, state, true);
}

static zf_err in_init(zf_node *n, void **state)
{
    return bridge_init(n, state, false);
}

static void bridge_fini(void *state)
{
    zfi_bridge *b = state;
    if (b->shed)
        zfi_log(ZF_LOG_INFO, "cluster", "%s: %llu capsule(s) dropped with no reader left", b->topic,
                (unsigned long long)b->shed);
    bridge_free(b);
}

static const zf_port_decl any_port[] = {{"data", "any"}};

const zf_node_decl zfi_bridge_out_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SINK,
    .name = "zflow bridge (writer)",
    .inputs = any_port,
    .n_inputs = 1,
    .init = out_init,
    .fini = bridge_fini,
};

const zf_node_decl zfi_bridge_in_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SOURCE,
    .name = "zflow bridge (reader)",
    .outputs = any_port,
    .n_outputs = 1,
    .init = in_init,
    .fini = bridge_fini,
};
