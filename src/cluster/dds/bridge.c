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
 *   each push; while the credits allow and the capsule fits in one datagram
 *   (FAST_MAX), it takes the capsule and writes it there, without waking
 *   the endpoint thread. The thread does the rest: credit and match waits,
 *   large capsules (a write that may wait for acks must not hold a
 *   worker), shedding, end of stream. `wmu` makes the two one consumer of
 *   the link; the hook only tries it. The hook reaches its bridge through a
 *   slot (out_slot) with a count of the hooks inside it, not through the
 *   cluster's registry and lock: no lock but `wmu` per push.
 * - Credits: a listener on the credit reader (Cyclone's receive thread,
 *   which received the credit anyway) records each reader's count in
 *   atomics the hook and the thread read; it wakes the endpoint thread
 *   only when one of them stopped for want of credit (`want_credit`), so a
 *   credit costs no thread wake-up while the window is open.
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
#define BATCH        16

typedef struct out_slot out_slot;

struct zfi_bridge {
    zf_cluster *c;
    zf_node *n;
    bool out; /* bridge-out (writer), else bridge-in (reader) */
    char topic[300], credit_topic[320], type[64];
    uint64_t capacity;
    struct ddsi_sertype *st;
    dds_entity_t tp, ep, t_credit, credit_ep, ws, guard;
    pthread_t thread;
    bool thread_started;
    atomic_bool stop;
    /* bridge-out: the readers' workers (set at init) and their credits:
     * taken and known written under cmu (the credit listener, the thread),
     * lost under c->mu, read by anyone; sent, shed, held under wmu */
    pthread_mutex_t wmu, cmu;
    size_t n_readers;
    char readers[MAX_READERS][128];
    _Atomic uint64_t taken[MAX_READERS];
    atomic_bool known[MAX_READERS], lost[MAX_READERS];
    atomic_uint matched;     /* readers matched, as the thread last read it */
    atomic_bool want_credit; /* the hook or the thread stopped for credit */
    uint64_t sent, shed;
    zf_data *held;  /* taken by the hook, for the thread to write */
    out_slot *slot; /* what the input link's hook is given */
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
                if (!strcmp(b->readers[i], worker)) {
                    atomic_store(&b->lost[i], true);
                    hit = true;
                }
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

/* Record what the credit reader holds (the listener, and the thread in
 * case a credit came before the listener was set): each reader's count
 * only grows. Never waits for anything but cmu. */
static void take_credits(zfi_bridge *b)
{
    pthread_mutex_lock(&b->cmu);
    for (;;) {
        void *buf[8] = {NULL};
        dds_sample_info_t si[8];
        int n = dds_take(b->credit_ep, buf, si, 8, 8);
        if (n <= 0)
            break;
        for (int i = 0; i < n; i++) {
            const zfi_msg_credit *m = buf[i];
            if (!si[i].valid_data)
                continue;
            for (size_t r = 0; r < b->n_readers; r++)
                if (!strcmp(b->readers[r], m->reader)) {
                    if (m->taken > atomic_load(&b->taken[r]) || !atomic_load(&b->known[r]))
                        atomic_store(&b->taken[r], m->taken);
                    atomic_store(&b->known[r], true);
                }
        }
        dds_return_loan(b->credit_ep, buf, n);
    }
    pthread_mutex_unlock(&b->cmu);
}

/* Cyclone's listener on the credit reader, on the thread that received the
 * credit: record it; wake the endpoint thread only if someone stopped for
 * want of credit (the stopper raises want_credit, then looks at the
 * credits again: one of the two sees the other). */
static void out_on_credit(dds_entity_t rd, void *arg)
{
    zfi_bridge *b = arg;
    (void)rd;
    take_credits(b);
    if (atomic_exchange(&b->want_credit, false))
        dds_set_guardcondition(b->guard, true);
}

typedef enum { CREDIT_WAIT, CREDIT_MATCH, CREDIT_SEND, CREDIT_SHED } credit_state;

/* Whether the next capsule may go: every live reader known, under its
 * window and matched (CREDIT_SEND, *window: how many more may go, >= 1);
 * waiting for a credit (CREDIT_WAIT) or a match (CREDIT_MATCH); no live
 * reader left: shed. Under wmu (sent); lock-free otherwise. `log`: say what
 * it waits for (the thread). */
static credit_state credit(zfi_bridge *b, uint64_t *window, bool log)
{
    size_t live = 0;
    uint64_t win = UINT64_MAX;
    for (size_t r = 0; r < b->n_readers; r++) {
        if (atomic_load(&b->lost[r]))
            continue;
        live++;
        bool known = atomic_load(&b->known[r]);
        uint64_t taken = atomic_load(&b->taken[r]);
        if (!known || b->sent - taken >= b->capacity) {
            if (log)
                zfi_log(ZF_LOG_TRACE, "cluster", "%s: waiting for %s of '%s'", b->topic,
                        known ? "credit" : "the first credit", b->readers[r]);
            return CREDIT_WAIT;
        }
        if (b->capacity - (b->sent - taken) < win)
            win = b->capacity - (b->sent - taken);
    }
    if (!live)
        return CREDIT_SHED;
    unsigned matched = atomic_load(&b->matched);
    if (matched < live) {
        if (log)
            zfi_log(ZF_LOG_TRACE, "cluster", "%s: %u of %zu readers matched", b->topic, matched,
                    live);
        return CREDIT_MATCH;
    }
    *window = win;
    return CREDIT_SEND;
}

/* credit(), and when it is CREDIT_WAIT, once more after raising
 * want_credit, so that the next credit wakes the endpoint thread. */
static credit_state credit_or_ask(zfi_bridge *b, uint64_t *window, bool log)
{
    credit_state cs = credit(b, window, false);
    if (cs != CREDIT_WAIT)
        return cs;
    atomic_store(&b->want_credit, true);
    return credit(b, window, log);
}

/* Write capsule d (consumed). Under wmu, with credit. */
static void out_write(zfi_bridge *b, zf_data *d)
{
    struct ddsi_serdata *sd = zfi_capsule_serdata(b->st, d, 0);
    dds_return_t r = sd ? dds_writecdr(b->ep, sd) : DDS_RETCODE_OUT_OF_RESOURCES;
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
    /* Read (and so reset) the match status: its condition stays triggered
     * until read, and the wait would spin. The hook uses this count. */
    dds_publication_matched_status_t st;
    if (dds_get_publication_matched_status(b->ep, &st) != DDS_RETCODE_OK)
        st.current_count = 0;
    atomic_store(&b->matched, st.current_count);
    zf_link *in = zfi_node_input(b->n, 0);
    for (;;) {
        uint64_t window = 0;
        credit_state cs = credit_or_ask(b, &window, true);
        if (cs == CREDIT_WAIT || cs == CREDIT_MATCH)
            return false; /* a credit (want_credit) or a match wakes the thread */
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
    zfi_thread_name("zf-bridge-out");
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

/* What the input link's hook is given: a slot naming its bridge and
 * counting the hooks inside it. The link may call its hook after the
 * bridge's fini (a producer on a thread of its own, a push into the closed
 * link), so the bridge is not the hook's argument: bridge_free empties the
 * slot and waits for the hooks inside to leave; slots are kept for reuse
 * and never freed (a late call through a reused slot runs the fast path of
 * the slot's new bridge, on that bridge's own link: harmless). */
struct out_slot {
    _Atomic(zfi_bridge *) b;
    atomic_uint users;
    out_slot *next_free;
};
static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cv = PTHREAD_COND_INITIALIZER;
static out_slot *slots_free;

static out_slot *slot_get(zfi_bridge *b)
{
    pthread_mutex_lock(&slots_mu);
    out_slot *s = slots_free;
    if (s)
        slots_free = s->next_free;
    pthread_mutex_unlock(&slots_mu);
    if (!s)
        s = zfi_calloc(1, sizeof *s);
    if (s)
        atomic_store(&s->b, b);
    return s;
}

/* Empty the slot, wait for the hooks inside it, keep it for reuse. */
static void slot_put(out_slot *s)
{
    atomic_store(&s->b, NULL);
    pthread_mutex_lock(&slots_mu);
    while (atomic_load(&s->users))
        pthread_cond_wait(&slots_cv, &slots_mu);
    s->next_free = slots_free;
    slots_free = s;
    pthread_mutex_unlock(&slots_mu);
}

/* The fast path: write what the link holds while the credits allow and the
 * capsules fit a datagram; leave the rest to the endpoint thread, waking it
 * unless only credit is missing (then the credit listener wakes it). */
static void out_fast(zfi_bridge *b)
{
    if (pthread_mutex_trylock(&b->wmu) != 0) {
        dds_set_guardcondition(b->guard, true); /* the thread is in: it looks again */
        return;
    }
    zf_link *in = zfi_node_input(b->n, 0);
    uint64_t window = 0;
    bool wake = true;
    while (!b->held) {
        if (!window) {
            credit_state cs = credit_or_ask(b, &window, false);
            if (cs != CREDIT_SEND) {
                wake = cs != CREDIT_WAIT;
                break;
            }
        }
        zf_data *d = NULL;
        zf_err e = zf_link_try_pop(in, &d);
        if (e != ZF_OK || !d) {
            wake = e == ZF_ECLOSED; /* end of stream: the thread's */
            break;
        }
        if (zf_data_len(d) > FAST_MAX) {
            b->held = d; /* may wait for acks: not on a worker */
            break;
        }
        out_write(b, d);
        window--;
    }
    pthread_mutex_unlock(&b->wmu);
    if (wake)
        dds_set_guardcondition(b->guard, true);
}

/* The producer's thread, after a push into the input link (or its close).
 * arg: the bridge's slot. */
static void out_on_data(void *arg)
{
    out_slot *s = arg;
    atomic_fetch_add(&s->users, 1);
    zfi_bridge *b = atomic_load(&s->b);
    if (b && !atomic_load(&b->stop))
        out_fast(b);
    if (atomic_fetch_sub(&s->users, 1) == 1 && !atomic_load(&s->b)) {
        pthread_mutex_lock(&slots_mu); /* slot_put may wait for this one */
        pthread_cond_broadcast(&slots_cv);
        pthread_mutex_unlock(&slots_mu);
    }
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
    zfi_thread_name("zf-bridge-in");
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
    if (b->out && b->credit_ep > 0)
        dds_set_listener(b->credit_ep, NULL);
    if (b->thread_started) {
        dds_set_guardcondition(b->guard, true);
        if (b->out)
            zf_link_close(zfi_node_input(b->n, 0)); /* ends its stream */
        else
            zfi_node_end_outputs(b->n, false); /* wakes a send into a full link */
        pthread_join(b->thread, NULL);
    }
    if (b->c)
        registry_remove(b->c, b);
    if (b->slot)
        slot_put(b->slot); /* a hook still running finishes */
    if (b->held)
        zf_data_unref(b->held);
    for (size_t i = b->i_pend; i < b->n_pend; i++)
        zf_data_unref(b->pend[i]);
    /* Every entity of the link: the endpoints first (a writer drops the
     * capsules its history holds), then the topics. */
    dds_entity_t es[] = {b->guard, b->ws, b->ep, b->credit_ep, b->tp, b->t_credit};
    for (size_t i = 0; i < sizeof es / sizeof es[0]; i++)
        if (es[i] > 0)
            dds_delete(es[i]);
    if (b->st && b->tp <= 0)
        ddsi_sertype_unref(b->st); /* never taken by a topic */
    pthread_mutex_destroy(&b->wmu);
    pthread_mutex_destroy(&b->cmu);
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
    pthread_mutex_init(&b->cmu, NULL);
    pthread_mutex_init(&b->rmu, NULL);
    const zf_config *cfg = zf_node_config(n);
    const char *topic = NULL, *type = NULL, *peer = NULL;
    int64_t cap = 0;
    if (zf_config_string(cfg, "topic", NULL, &topic) != ZF_OK ||
        zf_config_string(cfg, "type", "any", &type) != ZF_OK ||
        zf_config_string(cfg, "writer", "", &peer) != ZF_OK ||
        zf_config_int(cfg, "capacity", 16, &cap) != ZF_OK || !topic) {
        pthread_mutex_destroy(&b->wmu);
        pthread_mutex_destroy(&b->cmu);
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
    /* the writer's thread waits for the guard (set by the credit listener,
     * the hook, a lost worker) and the match status; the reader's samples
     * go to its listener, and its thread waits for the guard only */
    if (b->ws <= 0 || b->guard <= 0 || dds_waitset_attach(b->ws, b->guard, 0) < 0)
        goto fail;
    if (out) {
        if (dds_set_status_mask(b->ep, DDS_PUBLICATION_MATCHED_STATUS) < 0 ||
            dds_waitset_attach(b->ws, b->ep, 0) < 0)
            goto fail;
    }
    b->c = c;
    registry_add(c, b);
    if (out) {
        b->slot = slot_get(b);
        dds_listener_t *l = b->slot ? dds_create_listener(b) : NULL;
        if (l)
            dds_lset_data_available(l, out_on_credit);
        dds_return_t lr = l ? dds_set_listener(b->credit_ep, l) : DDS_RETCODE_OUT_OF_RESOURCES;
        if (l)
            dds_delete_listener(l);
        if (lr < 0) {
            what = "credit listener";
            goto fail;
        }
        zfi_link_on_data(zfi_node_input(n, 0), out_on_data, b->slot);
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
