/* zf_flow_to_json: the flattened graph, in declaration order, written with
 * the library's JSON writer (src/core/json_write.c). */
#include "graph/loader.h"

#include <string.h>

static void ports(zf_json_writer *w, const char *key, const zfi_port *p, size_t n)
{
    zf_json_open_array(w, key);
    for (size_t i = 0; i < n; i++) {
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "id", p[i].name);
        zf_json_put_string(w, "type", p[i].type);
        zf_json_close(w);
    }
    zf_json_close(w);
}

/* A setting whose 0 means "the default": null. */
static void setting(zf_json_writer *w, const char *key, int64_t v)
{
    if (v)
        zf_json_put_int(w, key, v);
    else
        zf_json_put_null(w, key);
}

static void node(zf_json_writer *w, const zfi_node *n)
{
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "id", n->id);
    zf_json_put_string(w, "kind", zf_node_kind_name(n->kind));
    zf_json_put_string(w, "description", n->description);
    zf_json_put_string(w, "library", n->library);
    zf_json_put_string(w, "python", n->python);
    ports(w, "inputs", n->inputs, n->n_inputs);
    ports(w, "outputs", n->outputs, n->n_outputs);
    if (n->config)
        zf_json_put_config(w, "configuration", n->config);
    else
        zf_json_put_raw(w, "configuration", "{}");
    setting(w, "period_ns", n->period_ns);
    setting(w, "hang_timeout_ns", n->hang_timeout_ns);
    setting(w, "send_timeout_ns", n->send_timeout_ns);
    setting(w, "max_errors", n->max_errors);
    setting(w, "error_window_ns", n->error_window_ns);
    zf_json_put_string(w, "isolation", zfi_isolation_name(n->isolation));
    zf_json_put_string(w, "restart", zfi_restart_name(n->restart));
    zf_json_put_string(w, "worker", n->worker);
    zf_json_close(w);
}

static void end(zf_json_writer *w, const char *key, const char *node, const char *port_key,
                const char *port)
{
    zf_json_open_object(w, key);
    zf_json_put_string(w, "node", node);
    zf_json_put_string(w, port_key, port);
    zf_json_close(w);
}

static void link(zf_json_writer *w, const zf_flow *f, const zfi_link *l)
{
    const zfi_node *from = &f->nodes[l->from], *to = &f->nodes[l->to];
    zf_json_open_object(w, NULL);
    end(w, "from", from->id, "output", from->outputs[l->from_port].name);
    end(w, "to", to->id, "input", to->inputs[l->to_port].name);
    zf_json_open_object(w, "queue");
    zf_json_put_uint(w, "capacity", l->queue.capacity ? l->queue.capacity : ZFI_DEFAULT_CAPACITY);
    if (l->queue.max_bytes)
        zf_json_put_uint(w, "max_bytes", l->queue.max_bytes);
    else
        zf_json_put_null(w, "max_bytes");
    zf_json_put_string(w, "policy", zf_policy_name(l->queue.policy));
    zf_json_close(w);
    zf_json_close(w);
}

/* Workers in the order their first node appears; nodes in declaration order. */
static void mapping(zf_json_writer *w, const zf_flow *f)
{
    zf_json_open_object(w, "mapping");
    for (size_t i = 0; i < f->n_nodes; i++) {
        const char *worker = f->nodes[i].worker;
        bool seen = !worker;
        for (size_t j = 0; j < i && !seen; j++)
            seen = f->nodes[j].worker && !strcmp(f->nodes[j].worker, worker);
        if (seen)
            continue;
        zf_json_open_array(w, worker);
        for (size_t j = i; j < f->n_nodes; j++)
            if (f->nodes[j].worker && !strcmp(f->nodes[j].worker, worker))
                zf_json_put_string(w, NULL, f->nodes[j].id);
        zf_json_close(w);
    }
    zf_json_close(w);
}

char *zf_flow_to_json(const zf_flow *f)
{
    if (!f)
        return NULL;
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "name", f->name);
    zf_json_put_string(w, "id", f->instance_id[0] ? f->instance_id : NULL);
    zf_json_put_bool(w, "node_file", f->node_file);
    zf_json_put_string(w, "file", f->file);
    if (f->max_memory)
        zf_json_put_uint(w, "max_memory", f->max_memory);
    else
        zf_json_put_null(w, "max_memory");
    setting(w, "drain_timeout_ns", f->drain_timeout_ns);
    zf_json_open_array(w, "nodes");
    for (size_t i = 0; i < f->n_nodes; i++)
        node(w, &f->nodes[i]);
    zf_json_close(w);
    zf_json_open_array(w, "links");
    for (size_t i = 0; i < f->n_links; i++)
        link(w, f, &f->links[i]);
    zf_json_close(w);
    mapping(w, f);
    zf_json_close(w);
    return zf_json_writer_finish(w);
}
