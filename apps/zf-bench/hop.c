/* zf-bench hop / copy: one link between two threads.
 *
 * Latency: one capsule in flight. The capsule is stamped as it is pushed
 * (zf_link_push stamps a capsule on its first send; for `copy`: before the
 * memcpy of the payload into a fresh capsule, the deep-copy hop that
 * zero-copy replaces); the consumer,
 * spinning in zf_link_pop, takes the time on receipt; then the producer
 * sends the next. A take reads nothing of the capsule (its length is in the
 * ring's cell): the capsule's header line crosses when the consumer first
 * uses it, here when it reads the stamp, after which it takes the time
 * again: the series "zflow+header" (the hop and the first use, the rule of
 * `limit`'s ring+header; it includes the first clock read, ~20 ns). Throughput: the producer
 * allocates and sends as fast as the link takes them, the consumer pops and releases; messages /
 * second over the whole phase, allocation and release included. */
#include "bench.h"

#include <zflow/zflow.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct hop_ctx {
    zf_link *link;
    size_t n;
    double *lat, *lat_hdr;
    atomic_size_t received;
} hop_ctx;

static void *latency_consumer(void *arg)
{
    hop_ctx *c = arg;
    bench_pin(1);
    for (size_t i = 0; i < c->n; i++) {
        zf_data *d = NULL;
        if (zf_link_pop(c->link, &d, -1) != ZF_OK)
            break;
        uint64_t now = zf_clock_ns();
        uint64_t ts = zf_data_timestamp(d);
        uint64_t used = zf_clock_ns();
        c->lat[i] = (double)(now - ts);
        c->lat_hdr[i] = (double)(used - ts);
        zf_data_unref(d);
        atomic_store_explicit(&c->received, i + 1, memory_order_release);
    }
    return NULL;
}

static void *throughput_consumer(void *arg)
{
    hop_ctx *c = arg;
    bench_pin(1);
    size_t got = 0;
    for (;;) {
        zf_data *d = NULL;
        if (zf_link_pop(c->link, &d, -1) != ZF_OK)
            break;
        zf_data_unref(d);
        got++;
    }
    atomic_store(&c->received, got);
    return NULL;
}

static int make_link(uint32_t cap, zf_link **out)
{
    zf_link_config lc = {.capacity = cap, .policy = ZF_POLICY_BLOCK};
    return zf_link_create(&lc, out) == ZF_OK ? 0 : -1;
}

/* One message: a fresh pool capsule, filled by memcpy when copying. The
 * hop's clock starts where a node's send would: zero-copy, the capsule is
 * stamped by zf_link_push itself (a capsule is stamped when first sent);
 * copying, just before the memcpy that zero-copy replaces. Allocation is
 * the producer's work before it sends (a camera fills the capsule after
 * it), and is in the throughput phase and its CPU figure. */
static zf_data *make_msg(zf_pool *pool, size_t size, const char *src, bool copy)
{
    zf_data *d = NULL;
    if (zf_pool_alloc(pool, size, &d) != ZF_OK)
        return NULL;
    if (copy) {
        uint64_t t0 = zf_clock_ns();
        memcpy(zf_data_mut(&d), src, size);
        ZF_IGNORE(zf_data_set_timestamp(d, t0)); /* d is unique (just allocated): cannot fail */
    }
    return d;
}

static int run_size(const bench_opts *o, bool copy, size_t size, bench_result *r, bench_result *rh)
{
    zf_pool *pool = NULL;
    zf_pool_config pc = {.name = "bench"};
    if (zf_pool_create(&pc, &pool) != ZF_OK)
        return -1;
    char *src = NULL;
    if (copy) {
        src = bench_touched_alloc(size); /* touched: no page faults in the loop */
        if (!src)
            return -1;
    }
    bench_result_init(r, copy ? "copy" : "hop", copy ? "memcpy" : "zflow", size);

    /* Latency. Warm-up messages prime the pool's segments. */
    hop_ctx c = {.n = bench_samples_for(o->samples, size)};
    size_t warm = bench_warmup_for(c.n);
    c.lat = calloc(c.n + warm, sizeof *c.lat);
    c.lat_hdr = calloc(c.n + warm, sizeof *c.lat_hdr);
    if (!c.lat || !c.lat_hdr) {
        free(c.lat);
        free(c.lat_hdr);
        free(src);
        zf_pool_destroy(pool);
        return -1;
    }
    c.n += warm;
    make_link(4, &c.link);
    pthread_t t;
    pthread_create(&t, NULL, latency_consumer, &c);
    bench_pin(0);
    for (size_t i = 0; i < c.n; i++) {
        zf_data *d = make_msg(pool, size, src, copy);
        if (!d || zf_link_push(c.link, &d, -1) != ZF_OK)
            break;
        while (atomic_load_explicit(&c.received, memory_order_acquire) < i + 1)
            ;
    }
    zf_link_close(c.link);
    pthread_join(t, NULL);
    zf_link_destroy(c.link);
    bench_percentiles(c.lat + warm, c.n - warm, r);
    if (rh)
        bench_percentiles(c.lat_hdr + warm, c.n - warm, rh);
    free(c.lat);
    free(c.lat_hdr);

    /* Throughput. Queue depth bounded so big messages stay in memory. */
    size_t cap = bench_queue_cap(size, 512u << 20, 1);
    /* First touch happens here, untimed; one that fails (out of memory)
     * only moves the page faults into the timed loop. */
    ZF_IGNORE(zf_pool_reserve(pool, size, cap + 4));
    hop_ctx tc = {0};
    make_link((uint32_t)cap, &tc.link);
    pthread_create(&t, NULL, throughput_consumer, &tc);
    size_t sent = 0;
    double cpu0 = bench_cpu_ns();
    uint64_t t0 = zf_clock_ns(), deadline = t0 + (uint64_t)(o->seconds * 1e9);
    for (;;) {
        for (int k = 0; k < 64; k++) {
            zf_data *d = make_msg(pool, size, src, copy);
            if (!d || zf_link_push(tc.link, &d, -1) != ZF_OK)
                goto out;
            sent++;
        }
        if (zf_clock_ns() >= deadline)
            break;
    }
out:
    zf_link_close(tc.link);
    pthread_join(t, NULL);
    uint64_t t1 = zf_clock_ns();
    double cpu1 = bench_cpu_ns();
    zf_link_destroy(tc.link);
    r->msgs_per_s = (double)atomic_load(&tc.received) / ((double)(t1 - t0) / 1e9);
    r->cpu_ns_per_msg = sent ? (cpu1 - cpu0) / (double)sent : 0;
    if (rh) {
        rh->msgs_per_s = r->msgs_per_s;
        rh->cpu_ns_per_msg = r->cpu_ns_per_msg;
    }
    free(src);
    zf_pool_destroy(pool);
    return 0;
}

int bench_hop(const bench_opts *o, bool copy, bench_result *out, size_t *n_out)
{
    for (size_t i = 0; i < o->n_sizes; i++) {
        bench_result *rh = NULL;
        if (!copy)
            rh = bench_result_init(&out[*n_out + 1], "hop", "zflow+header", o->sizes[i]);
        if (run_size(o, copy, o->sizes[i], &out[*n_out], rh) != 0)
            return -1;
        *n_out += rh ? 2 : 1;
    }
    return 0;
}
