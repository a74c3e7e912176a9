/* Graceful stop, with proof.
 *
 * 1. Stop the sources and close their outputs: end of stream flows.
 * 2. Wait until every sink has seen end of stream, or the drain timeout.
 *    A node still hung at the deadline cannot pass end of stream on: its
 *    outputs close and its inputs are flushed, and the rest of the graph
 *    gets a short grace to finish. An isolated node failed for good (past
 *    its restart policy) is cut out the same way at once.
 * 3. Halt: no more callbacks. A node still inside one after a short grace
 *    is abandoned: its thread is left behind (counted), its memory never
 *    freed, so it can return safely whenever it does.
 * 4. fini every other node in reverse topological order; release what the
 *    links still hold; measure the pool: bytes after must be 0, and any
 *    byte still held is attributed to the node (and input port) holding it.
 *
 * Each wait is on an event, never a sleep-poll: the drain on inst->cv
 * (a sink done, lifecycle.c), the callbacks on rt->left (a worker leaving
 * a node, sched.c; a node found hung, lifecycle.c), each bounded by its
 * deadline (the drain timeout, a node's hang_timeout). Destroy's wait for
 * queued nodes (zfi_instance_wait_idle) is the same. */
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GRACE_NS 200000000ull

typedef struct link_totals {
    uint64_t depth, to_sinks, dropped;
} link_totals;

static link_totals totals(zf_instance *inst)
{
    link_totals t = {0};
    for (size_t i = 0; i < inst->n_links; i++) {
        zf_link_stats s;
        zf_link_stats_get(inst->links[i], &s);
        t.depth += s.depth;
        t.dropped += s.dropped;
        if (inst->flow->nodes[inst->flow->links[i].to].kind == ZF_SINK)
            t.to_sinks += s.dequeued; /* capsules delivered, not hops */
    }
    return t;
}

static bool hung(zf_node *n)
{
    return atomic_load(&n->degraded) & ZFI_DEG_HUNG;
}

/* An isolated node FAILED past its restart policy: it never runs again. */
static bool failed_for_good(zf_node *n)
{
    return atomic_load(&n->failed_for_good);
}

/* A node that cannot pass end of stream on (hung; or failed for good): do
 * it for it. */
static void cut_out(zf_instance *inst, bool (*stuck)(zf_node *))
{
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        if (!stuck(n) || atomic_load(&n->abandoned))
            continue;
        pthread_mutex_lock(&inst->mu);
        bool closed = n->outputs_closed;
        pthread_mutex_unlock(&inst->mu);
        if (closed)
            continue;
        uint64_t flush_by = 0; /* one bound for the node's inputs */
        for (size_t p = 0; p < n->n_in; p++)
            zfi_link_flush(n->in[p], &flush_by);
        zfi_node_close_outputs(n);
        if (n->decl->kind == ZF_SINK && !atomic_exchange(&n->done, true))
            zfi_instance_sink_done(inst);
    }
}

/* ---- waiting for the workers ---- */

/* Whether what a stop waits for is true now; *recheck (absolute, ns) asks
 * to be asked again then even if no one notifies (0: only when notified). */
typedef bool (*wait_done_fn)(zf_instance *inst, void *arg, uint64_t now, uint64_t *recheck);

/* Wait until done says so. A worker leaving a node (sched.c) and a node
 * found hung (lifecycle.c) notify rt->left; nothing polls. */
static void wait_left(zf_instance *inst, wait_done_fn done, void *arg)
{
    zfi_evc *e = &inst->rt->left;
    for (;;) {
        uint32_t key = zfi_evc_prepare(e);
        uint64_t now = zf_clock_ns(), recheck = 0;
        if (done(inst, arg, now, &recheck)) {
            zfi_evc_cancel(e);
            return;
        }
        zfi_evc_wait(e, key, !recheck ? -1 : recheck > now ? (int64_t)(recheck - now) : 0);
    }
}

static void recheck_at(uint64_t *recheck, uint64_t t)
{
    if (!*recheck || t < *recheck)
        *recheck = t;
}

/* A source's produce in progress has returned (its capsules are in its
 * links), or it is hung, or the drain deadline passed. */
typedef struct source_wait {
    zf_node *n;
    uint64_t deadline;
} source_wait;

static bool source_returned(zf_instance *inst, void *arg, uint64_t now, uint64_t *recheck)
{
    (void)inst;
    source_wait *sw = arg;
    if (!atomic_load(&sw->n->cb_word) || hung(sw->n) || now >= sw->deadline)
        return true;
    *recheck = sw->deadline;
    return false;
}

/* After the halt: no node runs (a QUEUED node will do nothing when a worker
 * pops it). A node inside a callback that has run longer than its
 * hang_timeout is abandoned; any other callback is waited for, so fini
 * never runs while a callback does. Bounded by the longest hang_timeout. */
static bool settled(zf_instance *inst, void *arg, uint64_t now, uint64_t *recheck)
{
    zf_stop_report *r = arg;
    bool busy = false;
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        if (atomic_load(&n->abandoned))
            continue;
        uint64_t w = atomic_load(&n->cb_word);
        int64_t limit = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
        bool overdue = w && (hung(n) || (w & ZFI_CB_HUNG) ||
                             (now > ZFI_CB_START(w) && now - ZFI_CB_START(w) > (uint64_t)limit));
        if (overdue && zfi_node_abandon(n, ZFI_CB_START(w))) {
            r->nodes_abandoned++;
            zfi_abandoned_add(n, "callback", n->tid);
            pthread_mutex_lock(&inst->mu);
            zfi_node_set_state(n, ZF_NODE_FAILED, "abandoned at stop: stuck in a callback");
            pthread_mutex_unlock(&inst->mu);
            zfi_log_at(&n->origin, ZF_LOG_WARN, "instance",
                       "%s: node '%s' is stuck in a callback: abandoned (its thread is left "
                       "behind)",
                       inst->uuid, n->desc->id);
            continue;
        }
        if (w && !overdue) /* overdue then, if still inside */
            recheck_at(recheck, ZFI_CB_START(w) + (uint64_t)limit + 1);
        int sched = atomic_load(&n->sched);
        if (w || sched == ZFI_RUNNING || sched == ZFI_RUNNING_NOTIFIED)
            busy = true;
    }
    return !busy;
}

typedef struct idle_wait {
    uint64_t t0, warned;
} idle_wait;

/* Every node of a stopped instance is idle (none waits in the run queue or
 * a worker's slot): halted nodes take no time, so this waits only for a
 * worker to be free; every 5 s of waiting is logged. */
static bool all_idle(zf_instance *inst, void *arg, uint64_t now, uint64_t *recheck)
{
    idle_wait *iw = arg;
    bool idle = true;
    for (size_t i = 0; i < inst->n_nodes && idle; i++)
        idle = atomic_load(&inst->nodes[i]->abandoned) ||
               atomic_load(&inst->nodes[i]->sched) == ZFI_IDLE;
    if (idle)
        return true;
    uint64_t waited = now - iw->t0;
    if (waited > (iw->warned + 5) * 1000000000ull) {
        iw->warned = waited / 1000000000ull;
        zfi_log(ZF_LOG_WARN, "instance",
                "%s: destroy has waited %llu s for a worker to retire its queued nodes "
                "(all workers busy)",
                inst->uuid, (unsigned long long)iw->warned);
    }
    *recheck = iw->t0 + (iw->warned + 5) * 1000000000ull + 1;
    return false;
}

void zfi_instance_wait_idle(zf_instance *inst)
{
    idle_wait iw = {.t0 = zf_clock_ns()};
    wait_left(inst, all_idle, &iw);
}

/* ---- who holds leaked bytes ---- */

typedef struct holder {
    uint32_t owner;
    uint64_t count, bytes;
} holder;

typedef struct holders {
    holder h[16];
    size_t n;
    uint64_t other_count, other_bytes;
} holders;

typedef struct walk {
    holders hs;
    zf_instance *inst;
    uint64_t abandoned_bytes; /* live blocks still held by abandoned callbacks */
    size_t *abandoned_held;   /* per node: such blocks found */
} walk;

static void count_holder(void *arg, const zf_data *d, size_t block)
{
    walk *w = arg;
    holders *hs = &w->hs;
    /* The capsule an abandoned callback was given, if still alive (compared
     * by address only: it may have been forwarded and freed long ago). */
    for (size_t i = 0; i < w->inst->n_nodes; i++)
        if (atomic_load(&w->inst->nodes[i]->abandoned) && w->inst->nodes[i]->cb_capsule == d) {
            w->abandoned_bytes += block;
            w->abandoned_held[i]++;
            return;
        }
    uint32_t owner = atomic_load_explicit(&((zf_data *)d)->owner, memory_order_relaxed);
    for (size_t i = 0; i < hs->n; i++)
        if (hs->h[i].owner == owner) {
            hs->h[i].count++;
            hs->h[i].bytes += block;
            return;
        }
    if (hs->n < ZFI_ARRAY_LEN(hs->h)) {
        hs->h[hs->n++] = (holder){owner, 1, block};
    } else {
        hs->other_count++;
        hs->other_bytes += block;
    }
}

/* Who an owner word names: the node a capsule was last delivered to, or
 * the one that allocated it. */
static void describe_owner(zfi_buf *b, zf_instance *inst, uint32_t owner)
{
    size_t node = zfi_owner_node(owner);
    long port = zfi_owner_port(owner);
    if (node == 0 || node > inst->n_nodes) {
        zfi_buf_puts(b, "allocated outside any node");
        return;
    }
    zf_node *n = inst->nodes[node - 1];
    if (port >= 0 && (size_t)port < n->n_in)
        zfi_buf_printf(b, "last delivered to node '%s' (input '%s')", n->desc->id,
                       n->decl->inputs[port].name);
    else
        zfi_buf_printf(b, "allocated by node '%s' and never sent", n->desc->id);
}

static void describe_holders(zf_instance *inst, zf_stop_report *r)
{
    zfi_buf b;
    zfi_buf_init(&b);
    walk w = {.inst = inst, .abandoned_held = zfi_calloc(inst->n_nodes, sizeof(size_t))};
    if (r->pool_bytes_after && w.abandoned_held)
        zfi_pool_walk(inst->pool, count_holder, &w);
    r->bytes_abandoned = w.abandoned_bytes;
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        if (!atomic_load(&n->abandoned))
            continue;
        zfi_buf_printf(&b, "%snode '%s' abandoned inside %s", b.len ? "; " : "", n->desc->id,
                       n->fini_abandoned ? "fini" : "a callback");
        if (w.abandoned_held && w.abandoned_held[i])
            zfi_buf_puts(&b, ", holding the capsule it was given until it returns");
    }
    /* A node's count is of references taken and dropped by its own code on
     * its own thread: one dropped elsewhere (a Python view released later, a
     * pinned object's last holder on another thread) stays counted. With no
     * pool memory held, say so instead of calling it a leak. */
    uint64_t pinned = atomic_load(&inst->acct->wrapped) - atomic_load(&inst->acct->released);
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        long long held = atomic_load(&n->held);
        if (atomic_load(&n->abandoned) || held <= 0)
            continue;
        if (r->pool_bytes_after)
            zfi_buf_printf(&b, "%snode '%s' took %lld reference(s) it never released",
                           b.len ? "; " : "", n->desc->id, held);
        else if (pinned)
            zfi_buf_printf(&b,
                           "%snode '%s' took %lld reference(s) not dropped in its own code: views "
                           "or objects still holding %llu pinned capsule(s) (their own memory, "
                           "no pool memory; released when they go)",
                           b.len ? "; " : "", n->desc->id, held, (unsigned long long)pinned);
        else
            zfi_buf_printf(&b,
                           "%snode '%s' took %lld reference(s) that were dropped outside its own "
                           "code (views or pinned objects released later, or on another "
                           "thread): nothing is held",
                           b.len ? "; " : "", n->desc->id, held);
    }
    holders *hs = &w.hs;
    for (size_t i = 0; i < hs->n; i++) {
        zfi_buf_printf(&b, "%s%llu capsule(s), %llu bytes: ", b.len ? "; " : "",
                       (unsigned long long)hs->h[i].count, (unsigned long long)hs->h[i].bytes);
        describe_owner(&b, inst, hs->h[i].owner);
    }
    uint32_t scribbled = 0;
    r->shared_writes = zfi_pool_shared_writes(inst->pool, &scribbled);
    if (r->shared_writes) {
        zfi_buf_printf(&b, "%s%llu capsule(s) written while shared (ZF_CHECK_SHARED), the last ",
                       b.len ? "; " : "", (unsigned long long)r->shared_writes);
        describe_owner(&b, inst, scribbled);
    }
    if (hs->other_count)
        zfi_buf_printf(&b, "; %llu more capsule(s), %llu bytes",
                       (unsigned long long)hs->other_count, (unsigned long long)hs->other_bytes);
    r->bytes_leaked =
        r->pool_bytes_after > r->bytes_abandoned ? r->pool_bytes_after - r->bytes_abandoned : 0;
    snprintf(r->holders, sizeof r->holders, "%s", b.s ? b.s : "");
    zfi_buf_free(&b);
    free(w.abandoned_held);
}

/* ---- stop ---- */

static void remove_from_runtime(zf_instance *inst)
{
    zf_runtime *rt = inst->rt;
    pthread_mutex_lock(&rt->mu);
    for (zf_instance **p = &rt->instances; *p; p = &(*p)->next_in_rt)
        if (*p == inst) {
            *p = inst->next_in_rt;
            break;
        }
    pthread_mutex_unlock(&rt->mu);
}

zf_err zf_instance_stop(zf_instance *inst, zf_stop_report *report)
{
    if (!inst)
        return zfi_error(ZF_EINVAL, "zf_instance_stop: NULL instance");
    pthread_mutex_lock(&inst->mu);
    while (!inst->stopped && inst->state == ZF_INSTANCE_DRAINING)
        pthread_cond_wait(&inst->cv, &inst->mu); /* another stop is draining */
    if (inst->stopped) {
        if (report)
            *report = inst->report;
        pthread_mutex_unlock(&inst->mu);
        return ZF_OK;
    }
    zfi_instance_set_state(inst, ZF_INSTANCE_DRAINING, "stopping: sources stop, the rest drains");
    pthread_mutex_unlock(&inst->mu);

    zf_stop_report r;
    memset(&r, 0, sizeof r);
    uint64_t t0 = zf_clock_ns();
    uint64_t deadline = t0 + (uint64_t)inst->drain_timeout_ns;
    atomic_store(&inst->sources_stopped, true);
    zfi_pool_quarantine_flush(inst->pool);
    zf_pool_stats ps;
    zf_pool_stats_get(inst->pool, &ps);
    r.pool_bytes_before = ps.bytes_in_use;
    link_totals before = totals(inst);
    r.in_flight_at_stop = before.depth;

    /* 1. Sources stop: no new produce; one in progress finishes (and its
     * capsules are delivered) unless it is hung; end of stream flows. */
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        if (n->decl->kind != ZF_SOURCE || n->desc->bridge)
            continue; /* a bridge closes when end of stream arrives from its remote producer */
        if (n->iso)   /* its process stops producing; what it sent is forwarded */
            zfi_iso_stop_source(n, deadline);
        wait_left(inst, source_returned, &(source_wait){n, deadline});
        zfi_node_finish(n);
    }
    /* 2. Drain until every sink has seen end of stream. A hung node may
     * still come back before the deadline; past it, it is cut out and the
     * nodes after it get a short grace to finish. */
    pthread_mutex_lock(&inst->mu);
    bool cut = false;
    if (!atomic_load(&inst->started))
        inst->sinks_left = 0;                    /* never ran: nothing to drain */
    unsigned failed_seen = inst->failed_gen - 1; /* (cut out what failed before, too) */
    for (;;) {
        /* A node failed for good will never drain: cut out at once, and
         * again whenever one fails meanwhile (it counts itself under mu
         * and signals inst->cv, so no failure is missed before the wait). */
        if (inst->failed_gen != failed_seen) {
            failed_seen = inst->failed_gen;
            pthread_mutex_unlock(&inst->mu);
            cut_out(inst, failed_for_good);
            pthread_mutex_lock(&inst->mu);
            continue;
        }
        uint64_t now = zf_clock_ns();
        if (inst->sinks_left == 0 || (cut && now >= deadline + GRACE_NS))
            break;
        if (!cut && now >= deadline) {
            pthread_mutex_unlock(&inst->mu);
            cut_out(inst, hung);
            for (size_t i = 0; i < inst->n_nodes; i++)
                if (inst->nodes[i]->desc->bridge && inst->nodes[i]->decl->kind == ZF_SOURCE)
                    zfi_node_finish(inst->nodes[i]); /* its remote producer never ended */
            pthread_mutex_lock(&inst->mu);
            cut = true;
            continue;
        }
        uint64_t wake = cut ? deadline + GRACE_NS : deadline;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000u),
                              .tv_nsec = (long)(wake % 1000000000u)};
        pthread_cond_timedwait(&inst->cv, &inst->mu, &ts);
    }
    r.drain_timed_out = cut;
    pthread_mutex_unlock(&inst->mu);
    r.drain_ns = (int64_t)(zf_clock_ns() - t0);

    /* 3. Halt: no more callbacks; wait for those running (abandoning the
     * ones past their hang_timeout). */
    atomic_store(&inst->halted, true);
    wait_left(inst, settled, &r);
    link_totals after = totals(inst);
    r.delivered_in_drain = after.to_sinks - before.to_sinks;

    /* 4. fini, release, measure. */
    zfi_instance_fini_nodes(inst, &r);
    remove_from_runtime(inst);
    uint64_t flush_by = 0; /* one bound for the pass, not one per link */
    for (size_t i = 0; i < inst->n_links; i++)
        zfi_link_flush(inst->links[i], &flush_by);
    zfi_recorders_settle(inst, inst->drain_timeout_ns);
    zfi_recorders_stop_owned(inst); /* `record:` links: their files are whole */
    after = totals(inst);
    r.dropped = after.dropped;
    r.dropped_in_drain = after.dropped - before.dropped;
    zfi_pool_quarantine_flush(inst->pool);
    zf_pool_stats_get(inst->pool, &ps);
    r.pool_bytes_after = ps.bytes_in_use;
    r.pool_high_water = ps.bytes_high_water;
    r.releases = atomic_load(&inst->acct->released);
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zfi_iso_info ii;
        zfi_iso_stats(inst->nodes[i], &ii);
        r.child_deaths += ii.crashes;
        r.refs_reclaimed += ii.reclaimed_refs;
        r.bytes_reclaimed += ii.reclaimed_bytes;
        r.inputs_lost += ii.lost;
        r.nodes_killed_at_stop += ii.killed_at_stop ? 1 : 0;
    }
    describe_holders(inst, &r);

    pthread_mutex_lock(&inst->mu);
    inst->report = r;
    inst->stopped = true;
    zfi_instance_set_state(inst, ZF_INSTANCE_DESTROYED, "stopped");
    pthread_mutex_unlock(&inst->mu);
    zfi_log_at(&inst->origin, ZF_LOG_INFO, "instance",
               "stopped %s: %llu in flight, %llu delivered in drain, %llu dropped, %llu bytes "
               "leaked, %llu held by abandoned nodes%s%s",
               inst->uuid, (unsigned long long)r.in_flight_at_stop,
               (unsigned long long)r.delivered_in_drain, (unsigned long long)r.dropped,
               (unsigned long long)r.bytes_leaked, (unsigned long long)r.bytes_abandoned,
               r.holders[0] ? ": " : "", r.holders);
    if (report)
        *report = r;
    return ZF_OK;
}
