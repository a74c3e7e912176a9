/* Instances: creation (load every node, create the links and the pool,
 * init the nodes), start, suspend, statistics, destroy and free. Above the
 * stop (stop.c), the node lifecycle (lifecycle.c) and the scheduler: it
 * calls them, they do not call it. Its state changes go through
 * zfi_instance_set_state (state.c). */
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DRAIN_TIMEOUT_NS 2000000000LL

/* ---- instance creation ---- */

static void free_node(zf_node *n)
{
    if (!n)
        return;
    zfi_iso_free(n);
    zfi_unload_node(&n->lib, false);
    for (size_t o = 0; o < n->n_out; o++)
        free(n->out[o].links);
    free(n->out);
    free(n->in);
    free(n->err_times);
    free(n);
}

/* What the layers below ask of a process-isolated node (isolated.c). */
static const zfi_proxy iso_proxy = {
    .room = zfi_iso_room, .eos = zfi_iso_eos, .watch = zfi_iso_watch, .fini = zfi_iso_fini};

static zf_err new_node(zf_instance *inst, size_t i, zf_diag *diag, zf_node **out)
{
    const zfi_node *nd = &inst->flow->nodes[i];
    zf_node *n = zfi_calloc(1, sizeof *n);
    if (!n)
        return zfi_error(ZF_ENOMEM, "out of memory");
    n->inst = inst;
    n->desc = nd;
    n->index = i;
    n->origin = (zfi_log_origin){inst->uuid, inst->name, nd->id};
    n->hang_timeout_ns = nd->hang_timeout_ns;
    /* Built-in nodes and replay sources run in the runtime; other nodes in
     * a process of their own when asked to, else loaded here. */
    bool replaced = false, builtin = nd->builtin || nd->builtin_name;
    zf_err err = inst->replay && !builtin
                     ? zfi_replay_load(inst->replay, nd, &n->lib, &replaced, diag)
                     : ZF_OK;
    if (err == ZF_OK && !replaced) {
        if (builtin)
            err = zfi_builtin_node(nd, &n->lib, diag);
        else if (nd->isolation == ZFI_ISOLATION_PROCESS || inst->isolate_all) {
            err = zfi_iso_create(n, diag); /* loaded in its own process */
            if (err == ZF_OK)
                n->proxy = &iso_proxy;
        } else
            err = zfi_load_node(nd, inst->flow->file, inst->code_dirs, inst->n_code_dirs,
                                inst->allow_writable_code, &n->lib, diag);
    }
    if (err != ZF_OK) {
        free_node(n);
        return err;
    }
    n->decl = n->lib.decl;
    n->n_in = n->decl->n_inputs;
    n->n_out = n->decl->n_outputs;
    n->hang_timeout_ns = nd->hang_timeout_ns;
    n->send_timeout_ns = nd->send_timeout_ns;
    n->error_window_ns = nd->error_window_ns;
    n->max_errors = nd->max_errors ? nd->max_errors : 5;
    n->in = zfi_calloc(n->n_in, sizeof *n->in);
    n->out = zfi_calloc(n->n_out, sizeof *n->out);
    n->err_times = zfi_calloc(n->max_errors, sizeof *n->err_times);
    zfi_node_set_state(n, ZF_NODE_RUNNING, "%s", ""); /* no one else sees n yet */
    if (!n->in || !n->out || !n->err_times) {
        free_node(n);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    *out = n;
    return ZF_OK;
}

static zf_err wire_links(zf_instance *inst, zf_diag *diag)
{
    const zf_flow *f = inst->flow;
    inst->links = zfi_calloc(f->n_links, sizeof *inst->links);
    if (!inst->links)
        return zfi_error(ZF_ENOMEM, "out of memory");
    inst->n_links = f->n_links;
    for (size_t i = 0; i < f->n_links; i++) {
        const zfi_link *fl = &f->links[i];
        zf_node *from = inst->nodes[fl->from], *to = inst->nodes[fl->to];
        zf_err err = zf_link_create(&fl->queue, &inst->links[i]);
        if (err != ZF_OK)
            return zfi_diag_add(diag, err, fl->file, fl->line, fl->col, "queue", "%s",
                                zf_last_error());
        zf_link *l = inst->links[i];
        zfi_link_own(l); /* its two nodes move its positions (core/link.h) */
        /* A sink without on_input (a bridge endpoint) takes from its link
         * on a thread of its own, woken by the link itself. */
        bool own_thread = to->decl->kind == ZF_SINK && !to->decl->on_input;
        zfi_link_set_hooks(l, own_thread ? NULL : zfi_node_on_data, to, zfi_node_on_room, from);
        zfi_out *o = &from->out[from->lib.out_map[fl->from_port]];
        zf_link **nl = realloc(o->links, (o->n + 1) * sizeof *nl);
        if (!nl)
            return zfi_error(ZF_ENOMEM, "out of memory");
        o->links = nl;
        o->links[o->n++] = l;
        to->in[to->lib.in_map[fl->to_port]] = l;
    }
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        for (size_t p = 0; p < n->n_in; p++)
            if (!n->in[p])
                return zfi_diag_add(diag, ZF_EINVAL, n->desc->file, n->desc->line, n->desc->col,
                                    "inputs", "node '%s': input '%s' is not connected", n->desc->id,
                                    n->decl->inputs[p].name);
        for (size_t p = 0; p < n->n_out; p++)
            if (!n->out[p].n)
                return zfi_diag_add(diag, ZF_EINVAL, n->desc->file, n->desc->line, n->desc->col,
                                    "outputs", "node '%s': output '%s' is not connected",
                                    n->desc->id, n->decl->outputs[p].name);
    }
    return ZF_OK;
}

/* Topological order (sources first); nodes on cycles follow in index order. */
static zf_err topo_sort(zf_instance *inst)
{
    const zf_flow *f = inst->flow;
    size_t n = inst->n_nodes;
    size_t *indeg = zfi_calloc(n, sizeof *indeg);
    bool *placed = zfi_calloc(n, sizeof *placed);
    inst->topo = zfi_calloc(n, sizeof *inst->topo);
    if (!indeg || !placed || !inst->topo) {
        free(indeg);
        free(placed);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < f->n_links; i++)
        indeg[f->links[i].to]++;
    size_t k = 0;
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t i = 0; i < n; i++) {
            if (placed[i] || indeg[i])
                continue;
            placed[i] = true;
            inst->topo[k++] = i;
            progress = true;
            for (size_t j = 0; j < f->n_links; j++)
                if (f->links[j].from == i)
                    indeg[f->links[j].to]--;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!placed[i])
            inst->topo[k++] = i;
    free(indeg);
    free(placed);
    return ZF_OK;
}

/* Run init for every node, in topological order, each bounded. */
static zf_err init_nodes(zf_instance *inst, zf_diag *diag)
{
    zf_err err = ZF_OK;
    for (size_t k = 0; k < inst->n_nodes && err == ZF_OK; k++) {
        zf_node *n = inst->nodes[inst->topo[k]];
        if (n->iso) { /* bounded by its process being killed */
            n->error_msg[0] = '\0';
            zf_err e = zfi_iso_init(n);
            if (e == ZF_OK) {
                n->initialized = true;
                continue;
            }
            err = zfi_diag_add(diag, e == ZF_ETIMEDOUT ? ZF_ETIMEDOUT : ZF_ENODE, n->desc->file,
                               n->desc->line, n->desc->col, "library",
                               "node '%s': init failed in its isolated process: %s", n->desc->id,
                               n->error_msg[0] ? n->error_msg : zf_strerror(e));
            break;
        }
        if (!n->decl->init) {
            n->initialized = true;
            continue;
        }
        n->error_msg[0] = '\0';
        zf_err e;
        if (!zfi_lifecycle_call(n, false, &e)) {
            double s = (double)zfi_lifecycle_bound_ns(n) / 1e9;
            zfi_log(ZF_LOG_WARN, "instance",
                    "%s: node '%s': init has not returned after %.1f s: abandoned (its thread is "
                    "left behind)",
                    inst->uuid, n->desc->id, s);
            err = zfi_diag_add(diag, ZF_ETIMEDOUT, n->desc->file, n->desc->line, n->desc->col,
                               "library",
                               "node '%s': init has not returned after %.1f s (ten times its "
                               "hang_timeout): abandoned, its thread left behind",
                               n->desc->id, s);
            inst->init_abandoned = true;
            break;
        }
        if (e == ZF_OK) {
            n->initialized = true;
            continue;
        }
        char why[600];
        if (n->error_msg[0])
            snprintf(why, sizeof why, "%s", n->error_msg);
        else
            snprintf(why, sizeof why, "%s (%s)", zf_strerror(e), zf_errname(e));
        err = zfi_diag_add(diag, ZF_ENODE, n->desc->file, n->desc->line, n->desc->col, "library",
                           "node '%s': init failed: %s", n->desc->id, why);
    }
    return err;
}

/* Free everything (no abandoned node may reference it). */
void zfi_instance_free(zf_instance *inst)
{
    for (size_t i = 0; i < inst->n_links; i++)
        zf_link_destroy(inst->links[i]);
    free(inst->links);
    for (size_t i = 0; i < inst->n_nodes; i++)
        free_node(inst->nodes[i]);
    free(inst->nodes);
    free(inst->topo);
    zf_pool_destroy(inst->pool);
    zfi_acct_unref(inst->acct);
    for (size_t i = 0; i < inst->n_code_dirs; i++)
        free(inst->code_dirs[i]);
    free(inst->code_dirs);
    zfi_rates_free(inst->rates);
    zf_flow_free(inst->flow);
    pthread_mutex_destroy(&inst->mu);
    pthread_cond_destroy(&inst->cv);
    free(inst->name);
    free(inst);
}

/* The graceful stop (stop.c), then free. */
void zf_instance_destroy(zf_instance *inst)
{
    if (!inst)
        return;
    /* ZF_OK for an instance: what went wrong is in inst->report, read below. */
    ZF_IGNORE(zf_instance_stop(inst, NULL));
    if (inst->report.nodes_abandoned) {
        /* A node left inside a callback may still touch its links, its
         * instance and its pool when it returns: keep them. */
        zfi_log(ZF_LOG_WARN, "instance",
                "%s: keeping the instance's memory for its %llu abandoned node(s)", inst->uuid,
                (unsigned long long)inst->report.nodes_abandoned);
        return;
    }
    /* A node of a stopped instance may still wait in the run queue or a
     * worker's slot (it does nothing once popped: the instance is halted):
     * free only when every node is idle (stop.c). */
    zfi_instance_wait_idle(inst);
    zfi_instance_free(inst);
}

/* Refuse a UUID a live instance of rt already has (a descriptor's `id`
 * deployed twice). rt->mu held. */
static zf_err check_unique(zf_runtime *rt, const zf_instance *inst, zf_diag *diag)
{
    for (const zf_instance *o = rt->instances; o; o = o->next_in_rt) {
        if (o == inst || strcmp(o->uuid, inst->uuid))
            continue;
        zfi_diag_add(diag, ZF_EEXIST, inst->flow->file, 0, 0, "id",
                     "instance id %s is taken: instance '%s' (%s) has it; destroy it first, or "
                     "remove 'id' from the descriptor so that each instance gets a new one",
                     o->uuid, o->name, zf_instance_state_name(o->state));
        return zfi_error(ZF_EEXIST, "instance id %s is taken by instance '%s' (%s)", o->uuid,
                         o->name, zf_instance_state_name(o->state));
    }
    return ZF_OK;
}

zf_err zf_instance_create(zf_runtime *rt, const zf_flow *f, const zf_instance_options *opt,
                          zf_diag *diag, zf_instance **out)
{
    if (!rt || !f || !out)
        return zfi_error(ZF_EINVAL, "zf_instance_create: NULL argument");
    *out = NULL;
    zf_instance *inst = zfi_calloc(1, sizeof *inst);
    if (!inst)
        return zfi_error(ZF_ENOMEM, "out of memory");
    inst->rt = rt;
    inst->flow = zfi_flow_ref(f);
    if (f->instance_id[0])
        memcpy(inst->uuid, f->instance_id, sizeof inst->uuid);
    else
        zfi_uuid_v4(inst->uuid);
    inst->name = zfi_strdup(opt && opt->name && *opt->name ? opt->name : f->name);
    inst->origin = (zfi_log_origin){inst->uuid, inst->name, NULL};
    pthread_mutex_init(&inst->mu, NULL);
    zfi_cond_init_monotonic(&inst->cv);
    zfi_instance_state_init(inst);
    zf_err err = ZF_OK;
    if (f->instance_id[0]) {
        pthread_mutex_lock(&rt->mu);
        err = check_unique(rt, inst, diag);
        pthread_mutex_unlock(&rt->mu);
        if (err != ZF_OK)
            goto fail;
    }
    inst->drain_timeout_ns = opt && opt->drain_timeout_ns ? opt->drain_timeout_ns
                             : f->drain_timeout_ns        ? f->drain_timeout_ns
                                                          : DEFAULT_DRAIN_TIMEOUT_NS;
    char pool_name[16];
    memcpy(pool_name, inst->uuid, 8);
    pool_name[8] = '\0';
    zf_pool_config pc = {.max_bytes = opt && opt->max_memory ? opt->max_memory : f->max_memory,
                         .name = pool_name};
    err = zf_pool_create(&pc, &inst->pool);
    if (err != ZF_OK)
        goto fail;
    inst->acct = zfi_acct_new();
    inst->nodes = zfi_calloc(f->n_nodes, sizeof *inst->nodes);
    if (!inst->name || !inst->acct || !inst->nodes) {
        err = zfi_error(ZF_ENOMEM, "out of memory");
        goto fail;
    }
    inst->n_nodes = f->n_nodes;
    inst->allow_writable_code = opt && opt->allow_writable_code;
    inst->replay = opt ? opt->replay : NULL;
    inst->isolate_all = opt && opt->isolate_all;
    if (opt && opt->n_code_dirs && opt->code_dirs) {
        inst->code_dirs = zfi_calloc(opt->n_code_dirs, sizeof *inst->code_dirs);
        for (size_t i = 0; inst->code_dirs && i < opt->n_code_dirs; i++)
            if ((inst->code_dirs[i] = zfi_strdup(opt->code_dirs[i])))
                inst->n_code_dirs++;
        if (inst->n_code_dirs != opt->n_code_dirs) {
            err = zfi_error(ZF_ENOMEM, "out of memory");
            goto fail;
        }
    }
    if (inst->replay && (err = zfi_replay_check(inst->replay, f, diag)) != ZF_OK)
        goto fail;
    /* Load every node before failing, to report every problem at once. */
    for (size_t i = 0; i < f->n_nodes; i++) {
        zf_err e = new_node(inst, i, diag, &inst->nodes[i]);
        if (e != ZF_OK && err == ZF_OK)
            err = e;
    }
    if (err != ZF_OK)
        goto fail;
    if ((err = wire_links(inst, diag)) != ZF_OK || (err = topo_sort(inst)) != ZF_OK)
        goto fail;
    for (size_t i = 0; i < inst->n_nodes; i++)
        if (inst->nodes[i]->decl->kind == ZF_SINK)
            inst->sinks_left++;
    if (!(inst->rates = zfi_rates_new(inst))) {
        err = zfi_error(ZF_ENOMEM, "out of memory");
        goto fail;
    }
    if ((err = init_nodes(inst, diag)) != ZF_OK) {
        zfi_instance_fini_nodes(inst, NULL);
        if (inst->init_abandoned) {
            /* The init left behind still uses its node, instance and pool
             * when (if) it returns: keep them. */
            zfi_log(ZF_LOG_WARN, "instance",
                    "%s: keeping the instance's memory for its abandoned init", inst->uuid);
            return err;
        }
        goto fail;
    }
    if ((err = zfi_recorders_start_declared(inst, opt ? opt->record_dir : NULL, diag)) != ZF_OK) {
        zfi_recorders_stop_owned(inst);
        zfi_instance_fini_nodes(inst, NULL);
        goto fail;
    }
    pthread_mutex_lock(&rt->mu);
    err = check_unique(rt, inst, diag); /* again: another may have come meanwhile */
    if (err == ZF_OK) {
        inst->next_in_rt = rt->instances;
        rt->instances = inst;
    }
    pthread_mutex_unlock(&rt->mu);
    if (err != ZF_OK) {
        zfi_recorders_stop_owned(inst);
        zfi_instance_fini_nodes(inst, NULL);
        goto fail;
    }
    zfi_log_at(&inst->origin, ZF_LOG_INFO, "instance", "created %s '%s' (%zu nodes, %zu links)",
               inst->uuid, inst->name, inst->n_nodes, inst->n_links);
    *out = inst;
    return ZF_OK;
fail:
    if (!inst->acct)
        inst->acct = zfi_acct_new();
    zfi_instance_free(inst);
    return err;
}

const char *zf_instance_uuid(const zf_instance *inst)
{
    return inst ? inst->uuid : NULL;
}

const char *zf_instance_name(const zf_instance *inst)
{
    return inst ? inst->name : NULL;
}

zf_err zf_instance_start(zf_instance *inst)
{
    if (!inst)
        return zfi_error(ZF_EINVAL, "zf_instance_start: NULL instance");
    pthread_mutex_lock(&inst->mu);
    zf_instance_state s = inst->state;
    if (s != ZF_INSTANCE_CREATED && s != ZF_INSTANCE_SUSPENDED) {
        pthread_mutex_unlock(&inst->mu);
        return zfi_error(ZF_ESTATE,
                         "instance %s is %s: only a CREATED or SUSPENDED instance "
                         "can start",
                         inst->uuid, zf_instance_state_name(s));
    }
    zfi_instance_set_state(inst, ZF_INSTANCE_RUNNING,
                           s == ZF_INSTANCE_CREATED ? "started" : "resumed");
    atomic_store(&inst->sources_stopped, false);
    atomic_store(&inst->started, true);
    pthread_mutex_unlock(&inst->mu);

    zf_runtime *rt = inst->rt;
    pthread_mutex_lock(&rt->mu);
    for (size_t i = 0; i < inst->n_nodes; i++)
        inst->nodes[i]->next_due_ns = 0; /* periodic sources tick now */
    pthread_cond_broadcast(&rt->timer_cv);
    pthread_mutex_unlock(&rt->mu);
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        if (n->iso)
            zfi_iso_start(n);
        if (n->decl->kind != ZF_SOURCE || n->desc->period_ns <= 0)
            zfi_node_notify(n); /* free-running sources, anything with input */
    }
    return ZF_OK;
}

zf_err zf_instance_suspend(zf_instance *inst)
{
    if (!inst)
        return zfi_error(ZF_EINVAL, "zf_instance_suspend: NULL instance");
    pthread_mutex_lock(&inst->mu);
    if (inst->state != ZF_INSTANCE_RUNNING) {
        zf_instance_state s = inst->state;
        pthread_mutex_unlock(&inst->mu);
        return zfi_error(ZF_ESTATE,
                         "instance %s is %s: only a RUNNING instance can be "
                         "suspended",
                         inst->uuid, zf_instance_state_name(s));
    }
    atomic_store(&inst->sources_stopped, true);
    zfi_instance_set_state(inst, ZF_INSTANCE_SUSPENDED, "suspended: sources wait");
    pthread_mutex_unlock(&inst->mu);
    for (size_t i = 0; i < inst->n_nodes; i++)
        if (inst->nodes[i]->iso) /* its process's sources wait */
            zfi_iso_suspend(inst->nodes[i]);
    return ZF_OK;
}

/* ---- statistics ---- */

zf_err zf_instance_stats_get(zf_instance *inst, zf_instance_stats **out)
{
    if (!inst || !out)
        return zfi_error(ZF_EINVAL, "zf_instance_stats_get: NULL argument");
    zf_instance_stats *s = zfi_calloc(1, sizeof *s);
    if (!s)
        return zfi_error(ZF_ENOMEM, "out of memory");
    s->nodes = zfi_calloc(inst->n_nodes, sizeof *s->nodes);
    s->links = zfi_calloc(inst->n_links, sizeof *s->links);
    if (!s->nodes || !s->links) {
        zf_instance_stats_free(s);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    zf_pool_stats_get(inst->pool, &s->pool);
    s->wraps.wrapped = atomic_load(&inst->acct->wrapped);
    s->wraps.released = atomic_load(&inst->acct->released);
    pthread_mutex_lock(&inst->mu);
    s->state = inst->state;
    s->state_since_ns = inst->state_since_ns;
    s->n_nodes = inst->n_nodes;
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        zf_node_stats *ns = &s->nodes[i];
        ns->id = n->desc->id;
        ns->kind = n->decl->kind;
        /* A node's state follows its instance's: suspended, it runs no
         * more (a source) or only drains (the others). */
        ns->state = n->node_state == ZF_NODE_RUNNING && inst->state == ZF_INSTANCE_SUSPENDED
                        ? ZF_NODE_SUSPENDED
                        : n->node_state;
        ns->reason = zfi_strdup(n->reason);
        ns->since_ns = n->state_since_ns;
        ns->callbacks = atomic_load(&n->callbacks);
        ns->errors = atomic_load(&n->errors);
        ns->alloc_failures = atomic_load(&n->alloc_failures);
        ns->sent = atomic_load(&n->sent) + atomic_load(&n->sent_x);
        ns->last_progress_ns = atomic_load(&n->last_progress_ns);
        ns->busy_ns = atomic_load(&n->busy_ns);
        ns->degraded_count = atomic_load(&n->degraded_count);
        zfi_iso_info ii;
        zfi_iso_stats(n, &ii);
        ns->pid = ii.pid;
        ns->restarts = ii.restarts;
        ns->deaths = ii.deaths;
        ns->copies = ii.copies;
        ns->lost = ii.lost;
        if (n->iso)
            ns->callbacks = ii.callbacks; /* (the proxy's count is of capsules handed over) */
        ns->last_exit = zfi_strdup(ii.last_exit);
    }
    pthread_mutex_unlock(&inst->mu);
    s->n_links = inst->n_links;
    for (size_t i = 0; i < inst->n_links; i++) {
        const zfi_link *fl = &inst->flow->links[i];
        const zfi_node *from = &inst->flow->nodes[fl->from], *to = &inst->flow->nodes[fl->to];
        s->links[i].from = zfi_asprintf("%s.%s", from->id, from->outputs[fl->from_port].name);
        s->links[i].to = zfi_asprintf("%s.%s", to->id, to->inputs[fl->to_port].name);
        zf_link_stats_get(inst->links[i], &s->links[i].stats);
    }
    *out = s;
    return ZF_OK;
}

void zf_instance_stats_free(zf_instance_stats *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->nodes && i < s->n_nodes; i++) {
        free((char *)s->nodes[i].reason);
        free((char *)s->nodes[i].last_exit);
    }
    for (size_t i = 0; s->links && i < s->n_links; i++) {
        free((char *)s->links[i].from);
        free((char *)s->links[i].to);
    }
    free(s->nodes);
    free(s->links);
    free(s);
}
