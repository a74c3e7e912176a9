/* Read-only views of a loaded flow's nodes, for applications (the daemon
 * checks where node code comes from before running it). */
#include "graph/flow.h"

size_t zf_flow_node_count(const zf_flow *f)
{
    return f ? f->n_nodes : 0;
}

const char *zf_flow_node_id(const zf_flow *f, size_t i)
{
    return f && i < f->n_nodes ? f->nodes[i].id : NULL;
}

zf_node_kind zf_flow_node_kind(const zf_flow *f, size_t i)
{
    return f && i < f->n_nodes ? f->nodes[i].kind : (zf_node_kind)0;
}

const char *zf_flow_node_source(const zf_flow *f, size_t i)
{
    if (!f || i >= f->n_nodes)
        return NULL;
    return f->nodes[i].python ? f->nodes[i].python : f->nodes[i].library;
}

const char *zf_flow_node_worker(const zf_flow *f, size_t i)
{
    return f && i < f->n_nodes ? f->nodes[i].worker : NULL;
}
