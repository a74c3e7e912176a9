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
#include "bench_shared.h"

#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static char *descriptor(bench_shared *b, bool python, uint32_t cap)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    const char *dir = env_or("ZF_BENCH_NODES", ZF_BENCH_NODES_DIR);
    unsigned long long addr = (unsigned long long)(uintptr_t)b;
    fprintf(f, "name: pyhop\n");
    fprintf(f,
            "sources:\n  - id: src\n    library: \"%s/libbench_source.so\"\n"
            "    configuration: {shared: %llu}\n    outputs: [out]\n",
            dir, addr);
    if (python)
        fprintf(f, "operators:\n  - id: op\n    python: \"%s\"\n",
                env_or("ZF_PYHOP_SCRIPT", ZF_PYHOP_SCRIPT));
    else
        fprintf(f, "operators:\n  - id: op\n    library: \"%s/libbench_op.so\"\n", dir);
    fprintf(f, "    inputs: [in]\n    outputs: [out]\n");
    fprintf(f,
            "sinks:\n  - id: sink\n    library: \"%s/libbench_sink.so\"\n"
            "    configuration: {shared: %llu}\n    inputs: [in]\n",
            dir, addr);
    fprintf(f,
            "links:\n"
            "  - {from: {node: src, output: out}, to: {node: op, input: in}, "
            "queue: {capacity: %u}}\n"
            "  - {from: {node: op, output: out}, to: {node: sink, input: in}, "
            "queue: {capacity: %u}}\n",
            cap, cap);
    fclose(f);
    return s;
}

/* One run until `want` capsules arrived (0: for `seconds`). */
static int phase(bench_shared *b, bool python, uint32_t cap, double seconds, uint64_t want,
                 double *elapsed_s)
{
    char *yaml = descriptor(b, python, cap);
    zf_diag *diag = zf_diag_new();
    zf_flow *f = NULL;
    zf_runtime *rt = NULL;
    zf_instance *inst = NULL;
    int rc = -1;
    zf_runtime_options ro = {.workers = 2};
    if (zf_flow_load_string(yaml, strlen(yaml), "pyhop", NULL, NULL, diag, &f) != ZF_OK ||
        zf_runtime_create(&ro, &rt) != ZF_OK ||
        zf_instance_create(rt, f, NULL, diag, &inst) != ZF_OK) {
        char *t = zf_diag_format(diag);
        fprintf(stderr, "pyhop: %s%s\n", t && *t ? t : "", zf_last_error());
        free(t);
        goto out;
    }
    uint64_t t0 = zf_clock_ns(), deadline = t0 + (uint64_t)(seconds * 1e9);
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

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct result {
    double p50_us, p99_us, msgs_per_s;
} result;

static int measure(size_t size, bool python, size_t n, double seconds, result *r)
{
    size_t warm = n / 10 + 10;
    bench_shared *b = calloc(1, sizeof *b);
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
    size_t m = (size_t)(got - warm);
    qsort(b->lat_ns + warm, m, sizeof(double), cmp);
    r->p50_us = b->lat_ns[warm + m / 2] / 1e3;
    r->p99_us = b->lat_ns[warm + (size_t)((double)m * 0.99)] / 1e3;
    free(b->lat_ns);
    free(b);

    b = calloc(1, sizeof *b);
    b->size = size;
    size_t cap = (size_t)(256u << 20) / (size + 64) / 2;
    cap = cap < 2 ? 2 : cap > 256 ? 256 : cap;
    b->reserve = cap * 2 + 8;
    if (phase(b, python, (uint32_t)cap, seconds, 0, &el) != 0)
        return -1;
    r->msgs_per_s = (double)atomic_load(&b->received) / el;
    free(b);
    return 0;
}

static void human(size_t size, char *buf, size_t len)
{
    if (size >= (1u << 20) && size % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", size >> 20);
    else if (size >= 1024 && size % 1024 == 0)
        snprintf(buf, len, "%zu KiB", size >> 10);
    else
        snprintf(buf, len, "%zu B", size);
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
        result c, py;
        if (measure(sizes[i], false, n, seconds, &c) != 0 ||
            measure(sizes[i], true, n, seconds, &py) != 0)
            return 1;
        char h[32];
        human(sizes[i], h, sizeof h);
        printf("%-10s %-7s %10.2f %10.2f %12.0f\n", h, "C", c.p50_us, c.p99_us, c.msgs_per_s);
        printf("%-10s %-7s %10.2f %10.2f %12.0f\n", h, "Python", py.p50_us, py.p99_us,
               py.msgs_per_s);
        printf("%-10s %-7s %10.2f %10s %12s   <- Python hop overhead (p50)\n", h, "delta",
               py.p50_us - c.p50_us, "", "");
        fflush(stdout);
    }
    return 0;
}
