/* zf-bench limit: the machine's limit for one hop, measured the way `hop`
 * measures zflow.
 *
 * A raw single-producer single-consumer ring of 8-byte cells between the
 * same two pinned threads (CPU 0 produces, CPU 1 consumes), with nothing
 * of zflow in it: a cell is 0 when empty, the producer writes a non-zero
 * word into the next empty cell, the consumer takes it and writes 0 back
 * (Giacomoni's FastForward: no shared head or tail, one cache line crosses
 * per message). What crosses is the sender's timestamp itself, so the
 * latency phase measures one cache line from core to core, the floor of
 * any hop; the throughput phase streams words as fast as the ring takes
 * them. The same rules as `hop`: latency with one message in flight and
 * the same warm-up and percentiles, throughput on a ring as deep as `hop`'s
 * link for that size. The payload size changes nothing here (a hop moves a
 * handle whatever the payload): each size is one more measurement of the
 * same limit in the same run, which shows its noise.
 *
 * A second series, "ring+header", is the floor of a hop that names its
 * message rather than carrying it, as a zflow link does (a handle in the
 * cell, the capsule's header on a line of its own): the producer writes
 * the timestamp into one of 512 line-sized headers (a pool's blocks, taken
 * in turn: more than the deepest ring holds) and its index into the cell; the consumer reads the
 * cell, then the header it names. Two lines written on one core are read on the other, the second
 * only once the first has arrived: two crossings in a row. */
#include "bench.h"

#include <zflow/zflow.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64

typedef struct ring {
    _Alignas(LINE) _Atomic uint64_t *cells;
    size_t mask;
    _Alignas(LINE) size_t tail; /* the producer's alone */
    _Alignas(LINE) size_t head; /* the consumer's alone */
    _Alignas(LINE) _Atomic uint64_t received;
    _Atomic int done;
    size_t n;
    double *lat;
} ring;

static int ring_init(ring *r, size_t cap)
{
    size_t n = 2;
    while (n < cap)
        n <<= 1;
    r->cells = aligned_alloc(LINE, n * sizeof *r->cells < LINE ? LINE : n * sizeof *r->cells);
    if (!r->cells)
        return -1;
    for (size_t i = 0; i < n; i++)
        atomic_init(&r->cells[i], 0);
    r->mask = n - 1;
    r->tail = r->head = 0;
    atomic_init(&r->received, 0);
    atomic_init(&r->done, 0);
    return 0;
}

static inline void ring_push(ring *r, uint64_t v)
{
    _Atomic uint64_t *c = &r->cells[r->tail & r->mask];
    while (atomic_load_explicit(c, memory_order_acquire) != 0)
        ; /* full */
    atomic_store_explicit(c, v, memory_order_release);
    r->tail++;
}

/* 0 when the producer is done and the ring is empty. */
static inline uint64_t ring_pop(ring *r)
{
    _Atomic uint64_t *c = &r->cells[r->head & r->mask];
    uint64_t v;
    while ((v = atomic_load_explicit(c, memory_order_acquire)) == 0)
        if (atomic_load_explicit(&r->done, memory_order_acquire) &&
            atomic_load_explicit(c, memory_order_acquire) == 0)
            return 0;
    atomic_store_explicit(c, 0, memory_order_release);
    r->head++;
    return v;
}

/* ring+header: what the producer writes on a line of its own per message,
 * as a capsule's header. */
#define N_HDRS 512u
typedef struct hdr {
    _Alignas(LINE) _Atomic uint64_t ts;
    uint64_t len;
} hdr;
static hdr hdrs[N_HDRS];

/* Send v: in the cell (ring), or in the next header, its index in the cell. */
static inline void send_one(ring *r, bool header, uint64_t v)
{
    if (!header) {
        ring_push(r, v);
        return;
    }
    uint64_t k = r->tail % N_HDRS;
    atomic_store_explicit(&hdrs[k].ts, v, memory_order_relaxed);
    hdrs[k].len = 64;
    ring_push(r, k + 1); /* release: the header before the cell */
}

/* The next value (0: done), read through the header when `header`. */
static inline uint64_t take_one(ring *r, bool header)
{
    uint64_t v = ring_pop(r);
    if (!header || !v)
        return v;
    return atomic_load_explicit(&hdrs[v - 1].ts, memory_order_relaxed);
}

typedef struct consumer_arg {
    ring *r;
    bool header;
} consumer_arg;

static void *latency_consumer(void *arg)
{
    consumer_arg *a = arg;
    ring *r = a->r;
    bench_pin(1);
    for (size_t i = 0; i < r->n; i++) {
        uint64_t ts = take_one(r, a->header);
        if (!ts)
            break;
        r->lat[i] = (double)(zf_clock_ns() - ts);
        atomic_store_explicit(&r->received, i + 1, memory_order_release);
    }
    return NULL;
}

static void *throughput_consumer(void *arg)
{
    consumer_arg *a = arg;
    ring *r = a->r;
    bench_pin(1);
    uint64_t got = 0;
    while (take_one(r, a->header))
        got++;
    atomic_store(&r->received, got);
    return NULL;
}

static int run_size(const bench_opts *o, size_t size, bool header, bench_result *res)
{
    bench_result_init(res, "limit", header ? "ring+header" : "ring", size);
    ring r;
    size_t n = bench_samples_for(o->samples, size);
    size_t warm = bench_warmup_for(n);
    if (ring_init(&r, 4) != 0)
        return -1;
    r.n = n + warm;
    r.lat = calloc(r.n, sizeof *r.lat);
    if (!r.lat) {
        free(r.cells);
        return -1;
    }
    pthread_t t;
    consumer_arg ca = {&r, header};
    pthread_create(&t, NULL, latency_consumer, &ca);
    bench_pin(0);
    for (size_t i = 0; i < r.n; i++) {
        send_one(&r, header, zf_clock_ns());
        while (atomic_load_explicit(&r.received, memory_order_acquire) < i + 1)
            ;
    }
    atomic_store(&r.done, 1);
    pthread_join(t, NULL);
    bench_percentiles(r.lat + warm, r.n - warm, res);
    free(r.lat);
    free(r.cells);

    ring tr;
    if (ring_init(&tr, bench_queue_cap(size, 512u << 20, 1)) != 0)
        return -1;
    consumer_arg tca = {&tr, header};
    pthread_create(&t, NULL, throughput_consumer, &tca);
    uint64_t sent = 0;
    double cpu0 = bench_cpu_ns();
    uint64_t t0 = zf_clock_ns(), deadline = t0 + (uint64_t)(o->seconds * 1e9);
    for (;;) {
        for (int k = 0; k < 64; k++)
            send_one(&tr, header, ++sent);
        if (zf_clock_ns() >= deadline)
            break;
    }
    atomic_store(&tr.done, 1);
    pthread_join(t, NULL);
    uint64_t t1 = zf_clock_ns();
    double cpu1 = bench_cpu_ns();
    res->msgs_per_s = (double)atomic_load(&tr.received) / ((double)(t1 - t0) / 1e9);
    res->cpu_ns_per_msg = (cpu1 - cpu0) / (double)sent;
    free(tr.cells);
    return 0;
}

int bench_limit(const bench_opts *o, bench_result *out, size_t *n_out)
{
    for (int header = 0; header < 2; header++)
        for (size_t i = 0; i < o->n_sizes; i++) {
            if (run_size(o, o->sizes[i], header, &out[*n_out]) != 0)
                return -1;
            (*n_out)++;
        }
    return 0;
}
