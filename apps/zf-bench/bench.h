/* zf-bench: shared measurement helpers. */
#ifndef ZF_BENCH_H
#define ZF_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct bench_opts {
    bool json;
    size_t sizes[16];
    size_t n_sizes;
    double seconds; /* throughput phase per size */
    size_t samples; /* latency samples per size (scaled down for big sizes) */
} bench_opts;

typedef struct bench_result {
    const char *bench; /* "hop", "copy", "pipeline" */
    const char *impl;  /* "zflow", "memcpy", ... */
    size_t size;
    size_t samples;
    double p50_ns, p99_ns, p999_ns, mean_ns, min_ns;
    double msgs_per_s;
    double cpu_ns_per_msg;
} bench_result;

/* Latency percentiles of `n` samples (sorted in place). */
void bench_percentiles(double *ns, size_t n, bench_result *r);
/* Process CPU time (user + system) in ns. */
double bench_cpu_ns(void);
/* Pin the calling thread to CPU `cpu` modulo the CPUs online (no-op on 1). */
void bench_pin(int cpu);
/* Print the machine (CPU model, cores) as text or as a JSON object body. */
void bench_machine(FILE *out, bool json);
void bench_print(FILE *out, const bench_result *r, bool json, bool first);
/* Latency samples to take for a payload size. */
size_t bench_samples_for(const bench_opts *o, size_t size);

int bench_hop(const bench_opts *o, bool copy, bench_result *out, size_t *n_out);
int bench_pipeline(const bench_opts *o, bench_result *out, size_t *n_out);
/* source -> `ops` operators -> sink ("chain" for 1, "pipeline" for 2). */
int bench_pipeline_ops(const bench_opts *o, int ops, bench_result *out, size_t *n_out);

#endif
