/* Live figures in zfd's answers: the rates, CPU and memory that `status`,
 * `list` (zfctl ls, top) and the HTTP side (/metrics, the live page) show.
 * They come from zf_instance_live_get (sampled by the runtime's timer,
 * nothing per message). */
#include "zfd.h"

#include <stdio.h>
#include <string.h>

void zfd_live_summary(zf_json_writer *w, zf_instance *inst)
{
    zf_instance_stats *s = NULL;
    zf_instance_live *l = NULL;
    if (zf_instance_stats_get(inst, &s) != ZF_OK)
        return;
    if (zf_instance_live_get(inst, &l) != ZF_OK)
        l = NULL; /* out of memory: the figures read 0 */
    size_t running = 0;
    for (size_t i = 0; i < s->n_nodes; i++)
        running += s->nodes[i].state == ZF_NODE_RUNNING;
    zf_json_put_uint(w, "nodes", s->n_nodes);
    zf_json_put_uint(w, "nodes_running", running);
    zf_json_put_double(w, "cpu_1s", l ? l->cpu_1s : 0);
    zf_json_put_double(w, "cpu_10s", l ? l->cpu_10s : 0);
    zf_json_put_double(w, "cpu_s", l ? (double)l->cpu_ns / 1e9 : 0);
    zf_json_put_uint(w, "mem_bytes", s->pool.bytes_mapped);
    zf_json_put_uint(w, "held_bytes", s->pool.bytes_in_use);
    zf_json_put_uint(w, "held_capsules", s->pool.blocks_in_use);
    zf_instance_live_free(l);
    zf_instance_stats_free(s);
}

static void rate_json(zf_json_writer *w, const char *prefix, const zf_rate *r1, const zf_rate *r10)
{
    char k[64];
    snprintf(k, sizeof k, "%s_msgs_1s", prefix);
    zf_json_put_double(w, k, r1->msgs);
    snprintf(k, sizeof k, "%s_msgs_10s", prefix);
    zf_json_put_double(w, k, r10->msgs);
    snprintf(k, sizeof k, "%s_bytes_1s", prefix);
    zf_json_put_double(w, k, r1->bytes);
    snprintf(k, sizeof k, "%s_bytes_10s", prefix);
    zf_json_put_double(w, k, r10->bytes);
}

void zfd_live_node(zf_json_writer *w, const zf_instance_live *l, size_t i)
{
    static const zf_node_live none;
    const zf_node_live *n = l && i < l->n_nodes ? &l->nodes[i] : &none;
    rate_json(w, "in", &n->in_1s, &n->in_10s);
    rate_json(w, "out", &n->out_1s, &n->out_10s);
    zf_json_put_double(w, "cpu_1s", n->cpu_1s);
    zf_json_put_double(w, "cpu_10s", n->cpu_10s);
    zf_json_put_double(w, "cpu_s", (double)n->cpu_ns / 1e9);
    zf_json_put_int(w, "held", n->held);
}

void zfd_live_link(zf_json_writer *w, const zf_instance_live *l, size_t i)
{
    static const zf_link_live none;
    const zf_link_live *k = l && i < l->n_links ? &l->links[i] : &none;
    rate_json(w, "in", &k->in_1s, &k->in_10s);
    rate_json(w, "out", &k->out_1s, &k->out_10s);
    zf_json_put_double(w, "drops_1s", k->drops_1s);
    zf_json_put_double(w, "drops_10s", k->drops_10s);
}

void zfd_live_windows(zf_json_writer *w, const zf_instance_live *l)
{
    zf_json_put_double(w, "window_1s", l ? l->window_1s : 0);
    zf_json_put_double(w, "window_10s", l ? l->window_10s : 0);
    zf_json_put_double(w, "cpu_1s", l ? l->cpu_1s : 0);
    zf_json_put_double(w, "cpu_10s", l ? l->cpu_10s : 0);
    zf_json_put_double(w, "cpu_s", l ? (double)l->cpu_ns / 1e9 : 0);
}
