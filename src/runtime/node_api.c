/* The calls a node makes on itself: send, allocate, ports, configuration,
 * logging. */
#include "runtime/runtime.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_SEND_TIMEOUT_NS 1000000000LL

static inline __attribute__((always_inline)) zf_err send(zf_node *n, unsigned port, zf_data **d,
                                                         bool try_only, int64_t timeout_ns)
{
    if (n && n->host) /* in a node host: across the process boundary */
        return zfi_host_send(n, port, d, try_only, timeout_ns);
    if (!d || !*d)
        return zfi_error(ZF_EINVAL, "zf_send: NULL capsule");
    if (!n || port >= n->n_out) {
        zf_data_unref(*d);
        *d = NULL;
        zf_err e = zfi_error(ZF_EINVAL, "zf_send: node '%s' has no output port %u (it has %zu)",
                             n ? n->desc->id : "(null)", port, n ? n->n_out : (size_t)0);
        /* Inside its callback: the reason the node fails names the port
         * (unless the node says more itself). */
        if (n && zfi_current_node() == n && !n->error_msg[0])
            snprintf(n->error_msg, sizeof n->error_msg,
                     "zf_send to output port %u, which does "
                     "not exist (%zu output%s)",
                     port, n->n_out, n->n_out == 1 ? "" : "s");
        return e;
    }
    if (atomic_load(&n->abandoned)) {
        zf_data_unref(*d);
        *d = NULL;
        return zfi_error(ZF_ECLOSED, "node '%s' was abandoned", n->desc->id);
    }
    zfi_out *out = &n->out[port];
    zfi_data_check(*d, "zf_send");
    bool inside = zfi_current_node() == n;
    /* Stamped when first sent (allocation reads no clock); numbered per
     * port. Only a unique capsule's header may be written. */
    zf_data *c = *d;
    if ((c->seq == 0 || c->ts == 0) &&
        atomic_load_explicit(&c->refs, memory_order_acquire) == 1) { /* (checked above) */
        if (c->seq == 0)
            c->seq = ++out->seq;
        if (c->ts == 0)
            c->ts = zf_clock_ns();
    }
    if (try_only) {
        for (size_t i = 0; i < out->n; i++) {
            if (zfi_link_has_room(out->links[i]))
                continue;
            /* A free-running source refused in its produce that passes
             * the ZF_EAGAIN on is parked on that link's room, as a blocked
             * send parks it (step_source): its produce runs again once
             * there is room (include/zflow/node.h). */
            bool park = inside && n->decl->kind == ZF_SOURCE && n->desc->period_ns <= 0;
            if (park && zfi_link_want_room(out->links[i]))
                continue; /* room came meanwhile */
            if (park && !n->refused_on)
                n->refused_on = out->links[i];
            return zfi_error(ZF_EAGAIN, "zf_try_send: output '%s' of '%s' is full",
                             n->decl->outputs[port].name, n->desc->id);
        }
    }
    /* The caller's reference moves into the links (fan-out adds one per
     * extra link); drops happen inside them. None of that is node code. */
    zfi_ctx *ctx = zfi_ctx_get();
    atomic_llong *held = ctx->held;
    ctx->held = NULL;
    zf_err first = ZF_OK;
    size_t links = out->n;
    for (size_t i = 0; i < links; i++) {
        zf_data *one = i + 1 < links ? zf_data_ref(*d) : *d;
        zf_err e;
        if (inside || try_only) {
            bool park = false;
            e = zfi_link_push_nowait(out->links[i], &one, inside, &park);
            if (park) {
                if (!atomic_load_explicit(&n->parked, memory_order_relaxed))
                    n->parked_on = out->links[i];
                atomic_store(&n->parked, true);
            }
        } else {
            e = zf_link_push(out->links[i], &one, timeout_ns);
        }
        if (e != ZF_OK && first == ZF_OK)
            first = e;
    }
    *d = NULL;
    ctx->held = held;
    zfi_held(-1);
    if (first == ZF_OK) {
        /* one writer each: the node's callbacks (an actor), or any other
         * thread (an atomic add) */
        if (inside)
            zfi_counter_add(&n->sent, 1);
        else
            atomic_fetch_add_explicit(&n->sent_x, 1, memory_order_relaxed);
    }
    return first;
}

zf_err zf_send(zf_node *n, unsigned port, zf_data **d)
{
    int64_t t = n && n->send_timeout_ns ? n->send_timeout_ns : DEFAULT_SEND_TIMEOUT_NS;
    return send(n, port, d, false, t);
}

zf_err zf_send_timeout(zf_node *n, unsigned port, zf_data **d, int64_t timeout_ns)
{
    return send(n, port, d, false, timeout_ns);
}

zf_err zf_try_send(zf_node *n, unsigned port, zf_data **d)
{
    return send(n, port, d, true, 0);
}

zf_err zf_data_alloc(zf_node *n, size_t len, zf_data **out)
{
    if (!n || !out)
        return zfi_error(ZF_EINVAL, "zf_data_alloc: NULL %s", n ? "out" : "node");
    if (n->host)
        return zfi_host_alloc(n, len, out);
    if (atomic_load(&n->abandoned)) {
        *out = NULL;
        return zfi_error(ZF_ECLOSED, "node '%s' was abandoned", n->desc->id);
    }
    zf_err e = zf_pool_alloc(n->inst->pool, len, out);
    if (e == ZF_ENOMEM)
        atomic_fetch_add_explicit(&n->alloc_failures, 1, memory_order_relaxed);
    else if (e == ZF_OK)
        atomic_store_explicit(&(*out)->owner, zfi_owner_pack(n->index, -1), memory_order_relaxed);
    return e;
}

zf_err zf_data_reserve(zf_node *n, size_t len, size_t count)
{
    if (!n)
        return zfi_error(ZF_EINVAL, "zf_data_reserve: NULL node");
    if (n->host) /* the runtime's pool: its blocks are faulted in by the runtime */
        return ZF_OK;
    return zf_pool_reserve(n->inst->pool, len, count);
}

static int find_port(const zfi_port *dp, size_t dn, const size_t *map, const char *name)
{
    for (size_t i = 0; name && i < dn; i++)
        if (strcmp(dp[i].name, name) == 0)
            return (int)map[i];
    return -1;
}

int zf_node_input(const zf_node *n, const char *name)
{
    return n ? find_port(n->desc->inputs, n->desc->n_inputs, n->lib.in_map, name) : -1;
}

int zf_node_output(const zf_node *n, const char *name)
{
    return n ? find_port(n->desc->outputs, n->desc->n_outputs, n->lib.out_map, name) : -1;
}

const char *zf_node_id(const zf_node *n)
{
    return n ? n->desc->id : NULL;
}

const char *zf_node_source(const zf_node *n)
{
    return n ? (n->desc->python ? n->desc->python : n->desc->library) : NULL;
}

const char *zf_node_instance_uuid(const zf_node *n)
{
    return n ? n->inst->uuid : NULL;
}

const char *zf_node_flow_name(const zf_node *n)
{
    return n ? n->inst->flow->name : NULL;
}

const zf_config *zf_node_config(const zf_node *n)
{
    return n ? n->desc->config : NULL;
}

void zf_node_wake(zf_node *n)
{
    if (!n || n->decl->kind != ZF_SOURCE)
        return;
    if (n->host) {
        zfi_host_wake(n);
        return;
    }
    atomic_store_explicit(&n->wake_at_ns, 0, memory_order_relaxed);
    zfi_node_notify(n);
}

bool zf_node_stopping(const zf_node *n)
{
    return !n || atomic_load(&n->inst->sources_stopped) || atomic_load(&n->abandoned);
}

void zf_node_log(const zf_node *n, zf_log_level level, const char *fmt, ...)
{
    if (!zfi_log_enabled(level))
        return;
    char scope[160];
    snprintf(scope, sizeof scope, "node %s", n ? n->desc->id : "?");
    va_list ap;
    va_start(ap, fmt);
    zfi_vlog(level, scope, fmt, ap);
    va_end(ap);
}

void zf_node_set_error(zf_node *n, const char *fmt, ...)
{
    if (!n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->error_msg, sizeof n->error_msg, fmt, ap);
    va_end(ap);
    /* Shown in status, logs and JSON: control characters and invalid
     * UTF-8 from node code become '?'. */
    for (unsigned char *p = (unsigned char *)n->error_msg; *p; p++) {
        size_t k = *p >= 0x80 ? zfi_utf8_len(p, strnlen((const char *)p, 4)) : 1;
        if (!k || *p < 0x20 || *p == 0x7f)
            *p = '?';
        else
            p += k - 1;
    }
}
