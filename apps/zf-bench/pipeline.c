/* zf-bench pipeline: source -> N operators -> sink through the runtime
 * (worker threads, scheduler, links), with the bench node libraries.
 *
 * Latency: lockstep, one capsule in flight, stamped at allocation by the
 * source and read by the sink: the cost of the scheduler plus N+1 hops.
 * Throughput: the source runs free, links of `block` policy; capsules
 * counted at the sink per second, allocation and release included.
 *
 * zf-bench stage: the same pipeline on one worker, so every node runs on
 * the same core (no line crosses cores): its CPU per message divided by
 * the 3 stages (a callback and the hop after it, the source's allocation
 * and the sink's release included) is the cost of one stage. */
#include "bench.h"
#include "bench_flow.h"

#include <stdlib.h>
#include <string.h>

static int phase(bench_shared *b, int ops, unsigned workers, bool isolated, uint32_t cap,
                 double seconds, uint64_t want, double *elapsed_s, double *cpu_ns)
{
    const char *d = getenv("ZF_BENCH_NODES");
    const bench_flow fl = {.name = "bench-pipeline",
                           .prog = "zf-bench pipeline",
                           .nodes_dir = d ? d : ZF_BENCH_NODES_DIR,
                           .ops = ops,
                           .numbered = true,
                           .workers = workers,
                           .isolated = isolated};
    return bench_flow_phase(&fl, b, cap, seconds, want, elapsed_s, cpu_ns);
}

static int pipeline(const bench_opts *o, const char *name, int ops, unsigned workers, bool isolated,
                    bench_result *out, size_t *n_out)
{
    for (size_t i = 0; i < o->n_sizes; i++) {
        size_t size = o->sizes[i];
        bench_result *r = bench_result_init(&out[*n_out], name, "zflow", size);

        /* Latency: lockstep (the source sends the next when the sink woke
         * it: zf_node_wake; 2 workers, as the throughput phase). Warm-up
         * samples are dropped. */
        size_t n = workers > 1 ? bench_samples_for(o->samples, size) : 0;
        size_t warm = bench_warmup_for(n);
        bench_shared *b = bench_shared_new();
        b->size = size;
        b->lockstep = 1;
        b->max_samples = n + warm;
        b->lat_ns = calloc(n + warm, sizeof *b->lat_ns);
        double el, cpu;
        if (n && phase(b, ops, workers, isolated, 4, 120.0, n + warm, &el, &cpu) != 0)
            return -1;
        uint64_t got = atomic_load(&b->received);
        if (got > n + warm)
            got = n + warm;
        if (got > warm)
            bench_percentiles(b->lat_ns + warm, got - warm, r);
        free(b->lat_ns);
        free(b);

        /* Throughput: free-running. */
        b = bench_shared_new();
        b->size = size;
        size_t cap = bench_queue_cap(size, 256u << 20, (size_t)(ops + 1));
        /* First touch before the clock: what the links hold, and as much
         * again in an isolated node's input ring (isolated.c, in_limit_of). */
        b->reserve = cap * (size_t)(ops + 1) * (isolated ? 2 : 1) + 8;
        if (phase(b, ops, workers, isolated, (uint32_t)cap, o->seconds, 0, &el, &cpu) != 0)
            return -1;
        uint64_t recv = atomic_load(&b->received);
        r->msgs_per_s = (double)recv / el;
        r->cpu_ns_per_msg = recv ? cpu / (double)recv : 0;
        if (workers == 1) /* one stage: a node's callback and its hop */
            r->cpu_ns_per_msg /= (double)(ops + 1);
        free(b);
        (*n_out)++;
    }
    return 0;
}

int bench_pipeline_ops(const bench_opts *o, int ops, bench_result *out, size_t *n_out)
{
    return pipeline(o, ops == 2 ? "pipeline" : "chain", ops, 2, false, out, n_out);
}

int bench_pipeline(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return bench_pipeline_ops(o, 2, out, n_out);
}

int bench_stage(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return pipeline(o, "stage", 2, 1, false, out, n_out);
}

int bench_hop_isolated(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return pipeline(o, "hop_isolated", 1, 2, true, out, n_out);
}
