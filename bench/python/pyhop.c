/* pyhop: what a Python operator costs per hop, against a C operator.
 *
 *   bench_source -> op -> bench_sink, op = bench_op.c (C) or hop_op.py
 *
 * Latency: lockstep (one capsule in flight), stamped by the source when it
 * sends, read by the sink on receipt: two hops and the operator's callback.
 * The Python operator's overhead is the difference of the medians. It must
 * not grow with the message size: the operator gets a memoryview over the
 * capsule and sends the same capsule on, whatever its size.
 * Throughput: the source runs free; capsules per second at the sink.
 *
 *   pyhop [--samples N] [--seconds S] [SIZE...]     (default: 64 10MiB)
 *
 * ZF_BENCH_NODES and ZF_PYHOP_SCRIPT override where the bench node
 * libraries and hop_op.py are. */
#include "bench_common.h"
#include "bench_flow.h"

#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

/* One run until `want` capsules arrived (0: for `seconds`). */
static int phase(bench_shared *b, bool python, uint32_t cap, double seconds, uint64_t want,
                 double *elapsed_s)
{
    const bench_flow fl = {
        .name = "pyhop",
        .prog = "pyhop",
        .nodes_dir = env_or("ZF_BENCH_NODES", ZF_BENCH_NODES_DIR),
        .ops = 1,
        .python = python ? env_or("ZF_PYHOP_SCRIPT", ZF_PYHOP_SCRIPT) : NULL,
    };
    return bench_flow_phase(&fl, b, cap, seconds, want, elapsed_s, NULL);
}

/* Latency (p50, p99) and msgs_per_s of one operator at one size. */
static int measure(size_t size, bool python, size_t n, double seconds, bench_result *r)
{
    size_t warm = bench_warmup_for(n);
    bench_shared *b = bench_shared_new();
    b->size = size;
    b->lockstep = 1;
    b->reserve = 4;
    b->max_samples = n + warm;
    b->lat_ns = calloc(n + warm, sizeof *b->lat_ns);
    double el;
    if (phase(b, python, 4, 300.0, n + warm, &el) != 0)
        return -1;
    uint64_t got = atomic_load(&b->received);
    if (got > n + warm)
        got = n + warm;
    if (got <= warm) {
        fprintf(stderr, "pyhop: only %llu samples\n", (unsigned long long)got);
        return -1;
    }
    bench_percentiles(b->lat_ns + warm, (size_t)(got - warm), r);
    free(b->lat_ns);
    free(b);

    b = bench_shared_new();
    b->size = size;
    size_t cap = bench_queue_cap(size, 256u << 20, 2);
    b->reserve = cap * 2 + 8;
    if (phase(b, python, (uint32_t)cap, seconds, 0, &el) != 0)
        return -1;
    r->msgs_per_s = (double)atomic_load(&b->received) / el;
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    size_t samples = 0;
    double seconds = 2.0;
    size_t sizes[16];
    size_t n_sizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--samples") && i + 1 < argc) {
            samples = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: pyhop [--samples N] [--seconds S] [SIZE...]\n");
            return 2;
        } else if (n_sizes < 16) {
            uint64_t s;
            if (zf_parse_size(argv[i], &s) != ZF_OK) {
                fprintf(stderr, "pyhop: %s: %s\n", argv[i], zf_last_error());
                return 2;
            }
            sizes[n_sizes++] = (size_t)s;
        }
    }
    if (!n_sizes) {
        sizes[n_sizes++] = 64;
        sizes[n_sizes++] = 10u << 20;
    }
    printf("%-10s %-7s %10s %10s %12s\n", "size", "op", "p50 us", "p99 us", "msgs/s");
    for (size_t i = 0; i < n_sizes; i++) {
        size_t n = samples ? samples : sizes[i] >= (1u << 20) ? 500 : 20000;
        bench_result c = {0}, py = {0};
        if (measure(sizes[i], false, n, seconds, &c) != 0 ||
            measure(sizes[i], true, n, seconds, &py) != 0)
            return 1;
        char h[32];
        bench_human_size(sizes[i], h, sizeof h);
        printf("%-10s %-7s %10.2f %10.2f %12.0f\n", h, "C", c.p50_ns / 1e3, c.p99_ns / 1e3,
               c.msgs_per_s);
        printf("%-10s %-7s %10.2f %10.2f %12.0f\n", h, "Python", py.p50_ns / 1e3, py.p99_ns / 1e3,
               py.msgs_per_s);
        printf("%-10s %-7s %10.2f %10s %12s   <- Python hop overhead (p50)\n", h, "delta",
               py.p50_ns / 1e3 - c.p50_ns / 1e3, "", "");
        fflush(stdout);
    }
    return 0;
}
