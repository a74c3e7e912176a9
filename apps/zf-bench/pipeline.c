/* zf-bench pipeline: source -> N operators -> sink through the runtime
 * (worker threads, scheduler, links), with the bench node libraries.
 *
 * Latency: lockstep, one capsule in flight, stamped at allocation by the
 * source and read by the sink: the cost of the scheduler plus N+1 hops.
 * Throughput: the source runs free, links of `block` policy; capsules
 * counted at the sink per second, allocation and release included. */
#include "bench.h"
#include "bench_shared.h"

#include <zflow/zflow.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *nodes_dir(void)
{
    const char *d = getenv("ZF_BENCH_NODES");
    return d ? d : ZF_BENCH_NODES_DIR;
}

static char *descriptor(bench_shared *b, int ops, uint32_t cap)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    const char *dir = nodes_dir();
    unsigned long long addr = (unsigned long long)(uintptr_t)b;
    fprintf(f, "name: bench-pipeline\n");
    fprintf(f,
            "sources:\n  - id: src\n    library: \"%s/libbench_source.so\"\n"
            "    configuration: {shared: %llu}\n    outputs: [out]\n",
            dir, addr);
    if (ops > 0)
        fprintf(f, "operators:\n");
    for (int i = 0; i < ops; i++)
        fprintf(f,
                "  - id: op%d\n    library: \"%s/libbench_op.so\"\n    inputs: [in]\n"
                "    outputs: [out]\n",
                i, dir);
    fprintf(f,
            "sinks:\n  - id: sink\n    library: \"%s/libbench_sink.so\"\n"
            "    configuration: {shared: %llu}\n    inputs: [in]\n",
            dir, addr);
    fprintf(f, "links:\n");
    for (int i = 0; i <= ops; i++) {
        char from[16], to[16];
        snprintf(from, sizeof from, i == 0 ? "src" : "op%d", i - 1);
        snprintf(to, sizeof to, i == ops ? "sink" : "op%d", i);
        fprintf(f,
                "  - {from: {node: %s, output: out}, to: {node: %s, input: in}, "
                "queue: {capacity: %u}}\n",
                from, to, cap);
    }
    fclose(f);
    return s;
}

/* Run one phase; returns 0 on success. */
static int phase(bench_shared *b, int ops, uint32_t cap, double seconds, uint64_t want,
                 double *elapsed_s, double *cpu_ns)
{
    char *yaml = descriptor(b, ops, cap);
    zf_diag *diag = zf_diag_new();
    zf_flow *f = NULL;
    zf_runtime *rt = NULL;
    zf_instance *inst = NULL;
    int rc = -1;
    zf_runtime_options ro = {.workers = 2};
    if (zf_flow_load_string(yaml, strlen(yaml), "bench-pipeline", NULL, NULL, diag, &f) != ZF_OK ||
        zf_runtime_create(&ro, &rt) != ZF_OK ||
        zf_instance_create(rt, f, NULL, diag, &inst) != ZF_OK) {
        char *t = zf_diag_format(diag);
        fprintf(stderr, "zf-bench pipeline: %s%s\n", t && *t ? t : "", zf_last_error());
        free(t);
        goto out;
    }
    uint64_t t0 = zf_clock_ns(), deadline = t0 + (uint64_t)(seconds * 1e9);
    double cpu0 = bench_cpu_ns();
    t0 = zf_clock_ns();
    deadline = t0 + (uint64_t)(seconds * 1e9);
    zf_instance_start(inst);
    for (;;) {
        uint64_t now = zf_clock_ns();
        uint64_t got = atomic_load(&b->received);
        if ((want && got >= want) || now >= deadline)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&b->stop, 1);
    *elapsed_s = (double)(zf_clock_ns() - t0) / 1e9;
    *cpu_ns = bench_cpu_ns() - cpu0;
    zf_instance_stop(inst, NULL);
    rc = 0;
out:
    zf_instance_destroy(inst);
    zf_runtime_destroy(rt);
    zf_flow_free(f);
    zf_diag_free(diag);
    free(yaml);
    return rc;
}

int bench_pipeline_ops(const bench_opts *o, int ops, bench_result *out, size_t *n_out)
{
    for (size_t i = 0; i < o->n_sizes; i++) {
        size_t size = o->sizes[i];
        bench_result *r = &out[*n_out];
        memset(r, 0, sizeof *r);
        r->bench = ops == 2 ? "pipeline" : "chain";
        r->impl = "zflow";
        r->size = size;

        /* Latency: lockstep. Warm-up samples are dropped. */
        size_t n = bench_samples_for(o, size);
        size_t warm = n / 10 + 10;
        bench_shared *b = calloc(1, sizeof *b);
        b->size = size;
        b->lockstep = 1;
        b->max_samples = n + warm;
        b->lat_ns = calloc(n + warm, sizeof *b->lat_ns);
        double el, cpu;
        if (phase(b, ops, 4, 120.0, n + warm, &el, &cpu) != 0)
            return -1;
        uint64_t got = atomic_load(&b->received);
        if (got > n + warm)
            got = n + warm;
        if (got > warm)
            bench_percentiles(b->lat_ns + warm, got - warm, r);
        free(b->lat_ns);
        free(b);

        /* Throughput: free-running. */
        b = calloc(1, sizeof *b);
        b->size = size;
        size_t cap = (size_t)(256u << 20) / (size + 64) / (size_t)(ops + 1);
        cap = cap < 2 ? 2 : cap > 256 ? 256 : cap;
        b->reserve = cap * (size_t)(ops + 1) + 8; /* first touch before the clock */
        if (phase(b, ops, (uint32_t)cap, o->seconds, 0, &el, &cpu) != 0)
            return -1;
        uint64_t recv = atomic_load(&b->received);
        r->msgs_per_s = (double)recv / el;
        r->cpu_ns_per_msg = recv ? cpu / (double)recv : 0;
        free(b);
        (*n_out)++;
    }
    return 0;
}

int bench_pipeline(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return bench_pipeline_ops(o, 2, out, n_out);
}
