/* Live figures: rates over sliding windows.
 *
 * Nothing here runs per message. The timer thread (timer.c), which wakes at
 * least every ZFI_TICK_NS anyway, samples every instance's one-writer
 * counters every ZFI_RATES_STEP_NS (100 ms) into a ring of the last 10 s:
 * per link its enqueued, dequeued and dropped counts and its bytes in and
 * out; per node its sent count and its busy time. A reader takes the newest
 * sample and the one a window (1 s, 10 s) before it, and divides. So a rate
 * is at most one step (100 ms) old, and falls to 0 one window after the
 * traffic stops (a suspended instance reads 0 within 1 s). */
#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS     101u /* 10 s of 100 ms steps, plus the newest */
#define LINK_COLS 5u   /* enqueued, dequeued, dropped, bytes in, bytes out */
#define NODE_COLS 2u   /* sent, busy ns */

struct zfi_rates {
    pthread_mutex_t mu; /* the ring (the timer writes, readers read) */
    size_t n_links, n_nodes, cols;
    uint64_t *v; /* [SLOTS][cols] */
    uint64_t t[SLOTS];
    size_t newest, count;
};

struct zfi_rates *zfi_rates_new(const zf_instance *inst)
{
    struct zfi_rates *r = zfi_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->n_links = inst->n_links;
    r->n_nodes = inst->n_nodes;
    r->cols = r->n_links * LINK_COLS + r->n_nodes * NODE_COLS;
    r->v = zfi_calloc(SLOTS * (r->cols ? r->cols : 1), sizeof *r->v);
    if (!r->v) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void zfi_rates_free(struct zfi_rates *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r->v);
    free(r);
}

void zfi_rates_sample(zf_instance *inst, uint64_t now)
{
    struct zfi_rates *r = inst->rates;
    if (!r || (r->count && now - r->t[r->newest] < ZFI_RATES_STEP_NS - ZFI_TICK_NS / 2))
        return;
    pthread_mutex_lock(&r->mu);
    size_t slot = r->count ? (r->newest + 1) % SLOTS : 0;
    uint64_t *v = r->v + slot * r->cols;
    for (size_t i = 0; i < r->n_links; i++, v += LINK_COLS) {
        zf_link_stats st;
        zf_link_stats_get(inst->links[i], &st);
        v[0] = st.enqueued;
        v[1] = st.dequeued;
        v[2] = st.dropped;
        zfi_link_bytes(inst->links[i], &v[3], &v[4]);
    }
    for (size_t i = 0; i < r->n_nodes; i++, v += NODE_COLS) {
        const zf_node *n = inst->nodes[i];
        v[0] = atomic_load_explicit(&n->sent, memory_order_relaxed) +
               atomic_load_explicit(&n->sent_x, memory_order_relaxed);
        v[1] = atomic_load_explicit(&n->busy_ns, memory_order_relaxed);
    }
    r->t[slot] = now;
    r->newest = slot;
    if (r->count < SLOTS)
        r->count++;
    pthread_mutex_unlock(&r->mu);
}

/* The sample about `window` ns before the newest (the oldest one if the
 * ring is younger); r->mu held, r->count >= 1. */
static size_t back(const struct zfi_rates *r, uint64_t window)
{
    size_t k = r->newest;
    for (size_t step = 1; step < r->count; step++) {
        size_t j = (r->newest + SLOTS - step) % SLOTS;
        k = j;
        if (r->t[r->newest] - r->t[j] >= window - ZFI_TICK_NS)
            break;
    }
    return k;
}

static double per_s(uint64_t a, uint64_t b, uint64_t dt)
{
    return dt && a > b ? (double)(a - b) * 1e9 / (double)dt : 0.0;
}

zf_err zf_instance_live_get(zf_instance *inst, zf_instance_live **out)
{
    if (!inst || !out)
        return zfi_error(ZF_EINVAL, "zf_instance_live_get: NULL argument");
    *out = NULL;
    struct zfi_rates *r = inst->rates;
    zf_instance_live *l = zfi_calloc(1, sizeof *l);
    if (!l || !r)
        goto nomem;
    l->nodes = zfi_calloc(inst->n_nodes ? inst->n_nodes : 1, sizeof *l->nodes);
    l->links = zfi_calloc(inst->n_links ? inst->n_links : 1, sizeof *l->links);
    if (!l->nodes || !l->links)
        goto nomem;
    l->n_nodes = inst->n_nodes;
    l->n_links = inst->n_links;
    for (size_t i = 0; i < inst->n_links; i++)
        zfi_link_bytes(inst->links[i], &l->links[i].bytes_in, &l->links[i].bytes_out);
    for (size_t i = 0; i < inst->n_nodes; i++) {
        l->nodes[i].cpu_ns = atomic_load(&inst->nodes[i]->busy_ns);
        l->nodes[i].held = atomic_load(&inst->nodes[i]->held);
        l->cpu_ns += l->nodes[i].cpu_ns;
    }
    pthread_mutex_lock(&r->mu);
    if (r->count < 2) {
        pthread_mutex_unlock(&r->mu);
        *out = l;
        return ZF_OK;
    }
    const uint64_t windows[2] = {1000000000ull, 10000000000ull};
    const uint64_t *now = r->v + r->newest * r->cols;
    for (int w = 0; w < 2; w++) {
        size_t k = back(r, windows[w]);
        uint64_t dt = r->t[r->newest] - r->t[k];
        const uint64_t *then = r->v + k * r->cols;
        if (w == 0)
            l->window_1s = (double)dt / 1e9;
        else
            l->window_10s = (double)dt / 1e9;
        for (size_t i = 0; i < r->n_links; i++) {
            const uint64_t *a = now + i * LINK_COLS, *b = then + i * LINK_COLS;
            zf_link_live *ll = &l->links[i];
            zf_rate *in = w ? &ll->in_10s : &ll->in_1s, *outr = w ? &ll->out_10s : &ll->out_1s;
            in->msgs = per_s(a[0], b[0], dt);
            outr->msgs = per_s(a[1], b[1], dt);
            *(w ? &ll->drops_10s : &ll->drops_1s) = per_s(a[2], b[2], dt);
            in->bytes = per_s(a[3], b[3], dt);
            outr->bytes = per_s(a[4], b[4], dt);
            /* Into its consumer; out of its producer (a port's fan-out
             * counts once: its first link). */
            const zfi_link *fl = &inst->flow->links[i];
            zf_node_live *to = &l->nodes[fl->to], *from = &l->nodes[fl->from];
            zf_rate *tin = w ? &to->in_10s : &to->in_1s;
            tin->msgs += outr->msgs;
            tin->bytes += outr->bytes;
            bool first = true;
            for (size_t j = 0; j < i && first; j++)
                first = !(inst->flow->links[j].from == fl->from &&
                          inst->flow->links[j].from_port == fl->from_port);
            if (first)
                (w ? &from->out_10s : &from->out_1s)->bytes += in->bytes;
        }
        const uint64_t *na = now + r->n_links * LINK_COLS, *nb = then + r->n_links * LINK_COLS;
        for (size_t i = 0; i < r->n_nodes; i++) {
            zf_node_live *nl = &l->nodes[i];
            (w ? &nl->out_10s : &nl->out_1s)->msgs =
                per_s(na[i * NODE_COLS], nb[i * NODE_COLS], dt);
            /* A node runs on one thread at a time: at most one core. Busy
             * time is sampled and extrapolated, and a slow sampled callback
             * is credited when it returns (zfctl ls showed 677 % one second
             * after a start): the estimate is bounded by what is possible. */
            double cpu = per_s(na[i * NODE_COLS + 1], nb[i * NODE_COLS + 1], dt) / 1e9;
            if (cpu > 1.0)
                cpu = 1.0;
            *(w ? &nl->cpu_10s : &nl->cpu_1s) = cpu;
            *(w ? &l->cpu_10s : &l->cpu_1s) += cpu;
        }
    }
    pthread_mutex_unlock(&r->mu);
    *out = l;
    return ZF_OK;
nomem:
    zf_instance_live_free(l);
    return zfi_error(ZF_ENOMEM, "out of memory");
}

void zf_instance_live_free(zf_instance_live *l)
{
    if (!l)
        return;
    free(l->nodes);
    free(l->links);
    free(l);
}
