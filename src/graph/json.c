/* zf_flow_to_json: the flattened graph, in declaration order. */
#include "graph/loader.h"

#include <inttypes.h>
#include <string.h>

static void ports(zfi_buf *b, const zfi_port *p, size_t n)
{
    zfi_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        zfi_buf_puts(b, i ? ",{\"id\":" : "{\"id\":");
        zfi_buf_json_str(b, p[i].name);
        zfi_buf_puts(b, ",\"type\":");
        zfi_buf_json_str(b, p[i].type);
        zfi_buf_puts(b, "}");
    }
    zfi_buf_puts(b, "]");
}

static void num(zfi_buf *b, const char *key, int64_t v)
{
    zfi_buf_printf(b, ",\"%s\":", key);
    if (v)
        zfi_buf_printf(b, "%" PRId64, v);
    else
        zfi_buf_puts(b, "null");
}

static void node(zfi_buf *b, const zfi_node *n)
{
    static const char *const isolation[] = {"thread", "process"};
    static const char *const restart[] = {"never", "on-failure", "always"};
    zfi_buf_puts(b, "{\"id\":");
    zfi_buf_json_str(b, n->id);
    zfi_buf_printf(b, ",\"kind\":\"%s\",\"description\":", zfi_kind_word(n->kind));
    zfi_buf_json_str(b, n->description);
    zfi_buf_puts(b, ",\"library\":");
    zfi_buf_json_str(b, n->library);
    zfi_buf_puts(b, ",\"python\":");
    zfi_buf_json_str(b, n->python);
    zfi_buf_puts(b, ",\"inputs\":");
    ports(b, n->inputs, n->n_inputs);
    zfi_buf_puts(b, ",\"outputs\":");
    ports(b, n->outputs, n->n_outputs);
    zfi_buf_puts(b, ",\"configuration\":");
    if (n->config)
        zfi_config_to_json(n->config, b);
    else
        zfi_buf_puts(b, "{}");
    num(b, "period_ns", n->period_ns);
    num(b, "hang_timeout_ns", n->hang_timeout_ns);
    num(b, "send_timeout_ns", n->send_timeout_ns);
    num(b, "max_errors", n->max_errors);
    num(b, "error_window_ns", n->error_window_ns);
    zfi_buf_printf(b, ",\"isolation\":\"%s\",\"restart\":\"%s\",\"worker\":",
                   isolation[n->isolation == ZFI_ISOLATION_PROCESS],
                   restart[n->restart <= ZFI_RESTART_ALWAYS ? n->restart : 0]);
    zfi_buf_json_str(b, n->worker);
    zfi_buf_puts(b, "}");
}

static void link(zfi_buf *b, const zf_flow *f, const zfi_link *l)
{
    const zfi_node *from = &f->nodes[l->from], *to = &f->nodes[l->to];
    zfi_buf_puts(b, "{\"from\":{\"node\":");
    zfi_buf_json_str(b, from->id);
    zfi_buf_puts(b, ",\"output\":");
    zfi_buf_json_str(b, from->outputs[l->from_port].name);
    zfi_buf_puts(b, "},\"to\":{\"node\":");
    zfi_buf_json_str(b, to->id);
    zfi_buf_puts(b, ",\"input\":");
    zfi_buf_json_str(b, to->inputs[l->to_port].name);
    zfi_buf_printf(b, "},\"queue\":{\"capacity\":%" PRIu32 ",\"max_bytes\":",
                   l->queue.capacity ? l->queue.capacity : ZFI_DEFAULT_CAPACITY);
    if (l->queue.max_bytes)
        zfi_buf_printf(b, "%" PRIu64, l->queue.max_bytes);
    else
        zfi_buf_puts(b, "null");
    const char *policy = zfi_policy_word(l->queue.policy);
    zfi_buf_printf(b, ",\"policy\":\"%s\"}}", policy ? policy : "block");
}

/* Workers in the order their first node appears; nodes in declaration order. */
static void mapping(zfi_buf *b, const zf_flow *f)
{
    zfi_buf_puts(b, "{");
    bool first = true;
    for (size_t i = 0; i < f->n_nodes; i++) {
        const char *w = f->nodes[i].worker;
        bool seen = !w;
        for (size_t j = 0; j < i && !seen; j++)
            seen = f->nodes[j].worker && !strcmp(f->nodes[j].worker, w);
        if (seen)
            continue;
        if (!first)
            zfi_buf_puts(b, ",");
        first = false;
        zfi_buf_json_str(b, w);
        zfi_buf_puts(b, ":[");
        bool first_id = true;
        for (size_t j = i; j < f->n_nodes; j++) {
            if (!f->nodes[j].worker || strcmp(f->nodes[j].worker, w))
                continue;
            if (!first_id)
                zfi_buf_puts(b, ",");
            first_id = false;
            zfi_buf_json_str(b, f->nodes[j].id);
        }
        zfi_buf_puts(b, "]");
    }
    zfi_buf_puts(b, "}");
}

char *zf_flow_to_json(const zf_flow *f)
{
    if (!f)
        return NULL;
    zfi_buf b;
    zfi_buf_init(&b);
    zfi_buf_puts(&b, "{\"name\":");
    zfi_buf_json_str(&b, f->name);
    zfi_buf_puts(&b, ",\"id\":");
    zfi_buf_json_str(&b, f->instance_id[0] ? f->instance_id : NULL);
    zfi_buf_printf(&b, ",\"node_file\":%s", f->node_file ? "true" : "false");
    zfi_buf_puts(&b, ",\"file\":");
    zfi_buf_json_str(&b, f->file);
    zfi_buf_puts(&b, ",\"max_memory\":");
    if (f->max_memory)
        zfi_buf_printf(&b, "%" PRIu64, f->max_memory);
    else
        zfi_buf_puts(&b, "null");
    num(&b, "drain_timeout_ns", f->drain_timeout_ns);
    zfi_buf_puts(&b, ",\"nodes\":[");
    for (size_t i = 0; i < f->n_nodes; i++) {
        if (i)
            zfi_buf_puts(&b, ",");
        node(&b, &f->nodes[i]);
    }
    zfi_buf_puts(&b, "],\"links\":[");
    for (size_t i = 0; i < f->n_links; i++) {
        if (i)
            zfi_buf_puts(&b, ",");
        link(&b, f, &f->links[i]);
    }
    zfi_buf_puts(&b, "],\"mapping\":");
    mapping(&b, f);
    zfi_buf_puts(&b, "}");
    return zfi_buf_steal(&b);
}
