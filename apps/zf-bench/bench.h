/* zf-bench: options and the benchmarks (the measurement helpers and the
 * result schema are bench/common's, shared with the peers). */
#ifndef ZF_BENCH_H
#define ZF_BENCH_H

#include "bench_common.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct bench_opts {
    bool json;
    size_t sizes[BENCH_MAX_SIZES];
    size_t n_sizes;
    double seconds; /* throughput phase per size */
    size_t samples; /* latency samples per size (scaled down for big sizes) */
    bool isolated;  /* hop --isolated */
} bench_opts;

/* A raw ring of 8-byte cells between the same two pinned threads: the
 * machine's limit for one hop, measured by hop's rules (limit.c). */
int bench_limit(const bench_opts *o, bench_result *out, size_t *n_out);
int bench_hop(const bench_opts *o, bool copy, bench_result *out, size_t *n_out);
int bench_pipeline(const bench_opts *o, bench_result *out, size_t *n_out);
/* The pipeline on one worker; CPU per message per stage (3 stages). */
int bench_stage(const bench_opts *o, bench_result *out, size_t *n_out);
/* `hop --isolated`: source -> an isolated operator (its own process,
 * forwarding the same capsule) -> sink: two process crossings, through the
 * runtime, lockstep for latency (pipeline.c). */
int bench_hop_isolated(const bench_opts *o, bench_result *out, size_t *n_out);
/* source -> `ops` operators -> sink ("chain" for 1, "pipeline" for 2). */
int bench_pipeline_ops(const bench_opts *o, int ops, bench_result *out, size_t *n_out);

#endif
