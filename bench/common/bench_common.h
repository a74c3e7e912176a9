/* What every benchmark program of zflow shares (zf-bench, the peers in
 * bench/peers, pyhop): one result schema, the clocks, percentiles, pinning,
 * queue depths, the machine's description and the report, text or JSON.
 * Uses none of zflow, so the peers measure their transports alone.
 *
 * The measurement rules: latency with one message in flight, n/10+10
 * warm-up samples dropped, percentiles as sorted[n/2], sorted[n*0.99],
 * sorted[n*0.999]; throughput on bounded queues of `budget` bytes. */
#ifndef ZF_BENCH_COMMON_H
#define ZF_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define BENCH_MAX_SIZES 16

/* One line of the report (bench/report.py reads them all side by side). */
typedef struct bench_result {
    const char *bench; /* "hop", "copy", "pipeline", "chain", "ipc_hop", "dds_hop" */
    const char *impl;  /* "zflow", "memcpy", "tcp", "gstreamer", "iceoryx", "uds", ... */
    size_t size;
    size_t samples;
    double p50_ns, p99_ns, p999_ns, mean_ns, min_ns;
    double msgs_per_s;
    double cpu_ns_per_msg;
} bench_result;

/* *r zeroed but for these; returns r. */
bench_result *bench_result_init(bench_result *r, const char *bench, const char *impl, size_t size);

uint64_t bench_clock_ns(void); /* CLOCK_MONOTONIC, ns */
/* This process's CPU time, user + system: from getrusage (microseconds,
 * zf-bench's), or from its CPU clock (ns, all threads, the peers': the same
 * clock as bench_cpu_ns_of's). */
double bench_cpu_ns(void);
double bench_cpu_clock_ns(void);
double bench_cpu_ns_of(pid_t pid); /* another process (its CPU clock), 0 if unknown */
/* Pin the calling thread to CPU `cpu` modulo the CPUs online (no-op on 1). */
void bench_pin(int cpu);

/* Latency samples to take of a payload size, given --samples (scaled down
 * from 8 MiB and from 64 MiB, 200 at least), and the warm-up ones to drop
 * before them (n/10 + 10). */
size_t bench_samples_for(size_t samples, size_t size);
size_t bench_warmup_for(size_t samples);
/* Queue depth for a free-running phase: `budget` bytes over `links`
 * queues, clamped to [2, 256]. */
size_t bench_queue_cap(size_t size, size_t budget, size_t links);
/* A buffer of `size` bytes with every page touched (no faults later). */
void *bench_touched_alloc(size_t size);

/* Latency percentiles, mean and minimum of `n` samples (sorted in place). */
void bench_percentiles(double *ns, size_t n, bench_result *r);
/* "64 B", "4 KiB", "10 MiB". */
void bench_human_size(size_t s, char *buf, size_t n);
/* The machine (CPU model, cores, memory) as a text line or as the JSON
 * member "machine":{...}. */
void bench_machine(FILE *out, bool json);
/* The report: the machine, then the `n` results, as text (the impl column
 * `impl_width` wide) or as {"machine":{...},"results":[...]}. */
void bench_print(FILE *out, const bench_result *res, size_t n, bool json, int impl_width);

#endif
