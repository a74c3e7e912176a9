/* zf_flow_to_dot: Graphviz records with ports; edges port to port. */
#include "graph/loader.h"

#include <inttypes.h>
#include <string.h>

/* Text inside a record label: escape what records and DOT strings mean. */
static void rec(zfi_buf *b, const char *s)
{
    for (; s && *s; s++) {
        if (strchr("{}|<>\"\\", *s))
            zfi_buf_append(b, "\\", 1);
        if (*s == '\n')
            zfi_buf_puts(b, "\\n");
        else
            zfi_buf_append(b, s, 1);
    }
}

static void dstr(zfi_buf *b, const char *s)
{
    zfi_buf_puts(b, "\"");
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            zfi_buf_append(b, "\\", 1);
        if (*s == '\n')
            zfi_buf_puts(b, "\\n");
        else
            zfi_buf_append(b, s, 1);
    }
    zfi_buf_puts(b, "\"");
}

static void port_group(zfi_buf *b, char tag, const zfi_port *p, size_t n)
{
    zfi_buf_puts(b, "{");
    for (size_t i = 0; i < n; i++) {
        zfi_buf_printf(b, "%s<%c%zu> ", i ? "|" : "", tag, i);
        rec(b, p[i].name);
        zfi_buf_puts(b, " : ");
        rec(b, p[i].type);
    }
    zfi_buf_puts(b, "}");
}

char *zf_flow_to_dot(const zf_flow *f)
{
    static const char *const fill[] = {"white", "palegreen", "lightblue", "lightsalmon"};
    if (!f)
        return NULL;
    zfi_buf b;
    zfi_buf_init(&b);
    zfi_buf_puts(&b, "digraph ");
    dstr(&b, f->name);
    zfi_buf_puts(&b,
                 " {\n  rankdir=LR;\n  node [shape=record, style=filled, fontname=\"Helvetica\"];\n"
                 "  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (size_t i = 0; i < f->n_nodes; i++) {
        const zfi_node *n = &f->nodes[i];
        zfi_buf_printf(&b, "  n%zu [fillcolor=%s, label=\"{", i,
                       fill[n->kind <= ZF_SINK ? n->kind : 0]);
        if (n->n_inputs) {
            port_group(&b, 'i', n->inputs, n->n_inputs);
            zfi_buf_puts(&b, "|");
        }
        zfi_buf_puts(&b, "{");
        rec(&b, n->id);
        zfi_buf_printf(&b, "\\n(%s)", zf_node_kind_name(n->kind));
        if (n->worker) {
            zfi_buf_puts(&b, "\\n@");
            rec(&b, n->worker);
        }
        zfi_buf_puts(&b, "}");
        if (n->n_outputs) {
            zfi_buf_puts(&b, "|");
            port_group(&b, 'o', n->outputs, n->n_outputs);
        }
        zfi_buf_puts(&b, "}\"];\n");
    }
    for (size_t i = 0; i < f->n_links; i++) {
        const zfi_link *l = &f->links[i];
        const char *type = f->nodes[l->from].outputs[l->from_port].type;
        zfi_buf_printf(&b, "  n%zu:o%zu -> n%zu:i%zu [label=", l->from, l->from_port, l->to,
                       l->to_port);
        zfi_buf b2;
        zfi_buf_init(&b2);
        zfi_buf_printf(&b2, "%s\ncap %" PRIu32 ", %s", type,
                       l->queue.capacity ? l->queue.capacity : ZFI_DEFAULT_CAPACITY,
                       zf_policy_name(l->queue.policy));
        if (l->queue.max_bytes)
            zfi_buf_printf(&b2, ", max %" PRIu64 " B", l->queue.max_bytes);
        dstr(&b, b2.s ? b2.s : "");
        zfi_buf_free(&b2);
        zfi_buf_puts(&b, "];\n");
    }
    zfi_buf_puts(&b, "}\n");
    return zfi_buf_steal(&b);
}
