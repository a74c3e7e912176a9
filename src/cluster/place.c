/* Placement: the part of a flow one worker creates.
 *
 * A node goes to the worker `mapping` names, an unmapped one to the worker
 * that received the deploy (default_worker). A link whose two ends go to
 * different workers is cut: the producer's worker gets one bridge-out node
 * per output port read elsewhere (its input linked from the port with the
 * cut link's queue; one DDS writer for every remote reader), and each
 * consumer's worker one bridge-in node per remote output port it reads (its
 * output linked to each local consumer with that link's queue). Every other
 * link stays as it is. The part is an ordinary flow: the runtime, the
 * scheduler, the policies and the stop see ordinary nodes and links. */
#include "cluster/module.h"
#include "core/common.h"
#include "graph/flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *where(const zfi_node *n, const char *default_worker)
{
    return n->worker && *n->worker ? n->worker : default_worker;
}

void zfi_topic_name(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '/'))
            *s = '_';
}

zf_err zf_flow_workers(const zf_flow *f, const char *default_worker, const char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    const char **w = zfi_calloc(f->n_nodes + 1, sizeof *w);
    if (!w)
        return zfi_error(ZF_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < f->n_nodes; i++) {
        const char *x = where(&f->nodes[i], default_worker);
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = !strcmp(w[j], x);
        if (!seen)
            w[k++] = x;
    }
    *out = w;
    *n = k;
    return ZF_OK;
}

typedef struct builder {
    zf_flow *p;
    size_t cap_nodes, cap_links;
    bool oom;
} builder;

static zfi_port *ports_copy(const zfi_port *src, size_t n, bool *oom)
{
    zfi_port *p = zfi_calloc(n, sizeof *p);
    if (!p) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        p[i] = src[i];
        p[i].name = zfi_strdup(src[i].name);
        p[i].type = zfi_strdup(src[i].type);
        if (!p[i].name || !p[i].type)
            *oom = true;
    }
    return p;
}

static zfi_node *add_node(builder *b)
{
    if (!zfi_grow((void **)&b->p->nodes, &b->cap_nodes, b->p->n_nodes + 1, sizeof(zfi_node))) {
        b->oom = true;
        return NULL;
    }
    zfi_node *n = &b->p->nodes[b->p->n_nodes++];
    memset(n, 0, sizeof *n);
    return n;
}

static void add_link(builder *b, size_t from, size_t from_port, size_t to, size_t to_port,
                     const zfi_link *like)
{
    if (!zfi_grow((void **)&b->p->links, &b->cap_links, b->p->n_links + 1, sizeof(zfi_link))) {
        b->oom = true;
        return;
    }
    zfi_link *l = &b->p->links[b->p->n_links++];
    *l = *like;
    l->from = from;
    l->from_port = from_port;
    l->to = to;
    l->to_port = to_port;
}

static void set_text(builder *b, zf_config *map, const char *key, const char *value)
{
    zf_config *v = zfi_config_scalar(value, true, NULL, 0, 0);
    if (!v || !zfi_config_map_set(map, key, v))
        b->oom = true;
}

/* A bridge node: its id, kind, the one port (name and type of the remote
 * end's port), its configuration. */
static long add_bridge(builder *b, const zfi_node *origin, const zfi_port *port, bool out,
                       const char *id, const char *topic, uint32_t capacity, const char *writer)
{
    zfi_node *n = add_node(b);
    if (!n)
        return -1;
    n->id = zfi_strdup(id);
    n->kind = out ? ZF_SINK : ZF_SOURCE;
    n->builtin_name = out ? ZFI_BRIDGE_OUT_NODE : ZFI_BRIDGE_IN_NODE;
    n->bridge = true;
    zfi_port p = {
        .name = (char *)"data", .type = port->type, .line = origin->line, .col = origin->col};
    if (out) {
        n->inputs = ports_copy(&p, 1, &b->oom);
        n->n_inputs = 1;
    } else {
        n->outputs = ports_copy(&p, 1, &b->oom);
        n->n_outputs = 1;
    }
    n->file = origin->file;
    n->line = origin->line;
    n->col = origin->col;
    n->config = zfi_config_new(ZF_CFG_MAP, NULL, 0, 0);
    if (!n->id || !n->config) {
        b->oom = true;
        return -1;
    }
    char cap[24];
    snprintf(cap, sizeof cap, "%u", capacity ? capacity : 16);
    set_text(b, n->config, "topic", topic);
    set_text(b, n->config, "type", port->type);
    zf_config *c = zfi_config_scalar(cap, false, NULL, 0, 0);
    if (!c || !zfi_config_map_set(n->config, "capacity", c))
        b->oom = true;
    if (writer)
        set_text(b, n->config, "writer", writer);
    if (out) {
        zf_config *rs = zfi_config_new(ZF_CFG_SEQ, NULL, 0, 0);
        if (!rs || !zfi_config_map_set(n->config, "readers", rs))
            b->oom = true;
    }
    return (long)(b->p->n_nodes - 1);
}

static void add_reader(builder *b, zfi_node *bridge, const char *worker)
{
    zf_config *rs = zfi_config_member(bridge->config, "readers");
    for (size_t i = 0; rs && i < rs->n; i++)
        if (!strcmp(rs->items[i]->text, worker))
            return;
    zf_config *v = zfi_config_scalar(worker, true, NULL, 0, 0);
    if (!rs || !v || !zfi_config_seq_push(rs, v))
        b->oom = true;
}

zf_err zf_flow_part(const zf_flow *f, const char *worker, const char *default_worker,
                    const char *uuid, zf_flow **out)
{
    if (!f || !worker || !default_worker || !uuid || !out || strlen(uuid) != 36)
        return zfi_error(ZF_EINVAL, "zf_flow_part: NULL argument or not a UUID");
    *out = NULL;
    builder b = {.p = zfi_calloc(1, sizeof(zf_flow))};
    if (!b.p)
        return zfi_error(ZF_ENOMEM, "out of memory");
    zf_flow *p = b.p;
    atomic_init(&p->refs, 1);
    p->parent = zfi_flow_ref(f);
    p->name = zfi_strdup(f->name);
    p->file = zfi_strdup(f->file);
    p->dir = zfi_strdup(f->dir);
    p->max_memory = f->max_memory;
    p->drain_timeout_ns = f->drain_timeout_ns;
    memcpy(p->instance_id, uuid, 37);
    p->strings = zfi_strings_new();
    long *local = zfi_calloc(f->n_nodes, sizeof *local); /* flow node -> part node */
    if (!p->name || !p->file || !p->dir || !p->strings || !local) {
        free(local);
        zf_flow_free(p);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < f->n_nodes; i++) {
        local[i] = -1;
        const zfi_node *s = &f->nodes[i];
        if (strcmp(where(s, default_worker), worker) != 0)
            continue;
        zfi_node *n = add_node(&b);
        if (!n)
            break;
        *n = *s;
        n->id = zfi_strdup(s->id);
        n->description = zfi_strdup(s->description);
        n->library = zfi_strdup(s->library);
        n->python = zfi_strdup(s->python);
        n->inputs = ports_copy(s->inputs, s->n_inputs, &b.oom);
        n->outputs = ports_copy(s->outputs, s->n_outputs, &b.oom);
        n->config = zfi_config_clone(s->config);
        n->worker = zfi_strdup(worker);
        if (!n->id || !n->config || !n->worker)
            b.oom = true;
        local[i] = (long)(p->n_nodes - 1);
    }
    if (!b.oom && p->n_nodes == 0) {
        free(local);
        zf_flow_free(p);
        return zfi_error(ZF_ENOTFOUND, "no node of flow '%s' goes to worker '%s'", f->name, worker);
    }
    /* Bridges are found by id (a linear search over the part's nodes). */
    for (size_t li = 0; li < f->n_links && !b.oom; li++) {
        const zfi_link *l = &f->links[li];
        const zfi_node *from = &f->nodes[l->from], *to = &f->nodes[l->to];
        const char *wf = where(from, default_worker), *wt = where(to, default_worker);
        bool here_from = local[l->from] >= 0, here_to = local[l->to] >= 0;
        if (here_from && here_to) {
            add_link(&b, (size_t)local[l->from], l->from_port, (size_t)local[l->to], l->to_port, l);
            continue;
        }
        if (!here_from && !here_to)
            continue;
        const zfi_port *port = &from->outputs[l->from_port];
        char topic[300], id[300];
        snprintf(topic, sizeof topic, "zf/%s/%s/%s", uuid, from->id, port->name);
        zfi_topic_name(topic);
        if (here_from) {
            snprintf(id, sizeof id, "%s.%s>>", from->id, port->name);
            long k = -1;
            for (size_t j = 0; j < p->n_nodes && k < 0; j++)
                if (p->nodes[j].bridge && !strcmp(p->nodes[j].id, id))
                    k = (long)j;
            if (k < 0) {
                k = add_bridge(&b, from, port, true, id, topic, l->queue.capacity, NULL);
                if (k >= 0)
                    add_link(&b, (size_t)local[l->from], l->from_port, (size_t)k, 0, l);
            }
            if (k >= 0)
                add_reader(&b, &p->nodes[k], wt);
        } else {
            snprintf(id, sizeof id, "%s.%s<<%s", from->id, port->name, wf);
            long k = -1;
            for (size_t j = 0; j < p->n_nodes && k < 0; j++)
                if (p->nodes[j].bridge && !strcmp(p->nodes[j].id, id))
                    k = (long)j;
            if (k < 0)
                k = add_bridge(&b, from, port, false, id, topic, l->queue.capacity, wf);
            if (k >= 0)
                add_link(&b, (size_t)k, 0, (size_t)local[l->to], l->to_port, l);
        }
    }
    free(local);
    if (b.oom) {
        zf_flow_free(p);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    *out = p;
    return ZF_OK;
}
