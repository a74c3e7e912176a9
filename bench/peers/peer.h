/* zflow's benchmark peers: what they share with zf-bench.
 *
 * Every peer takes zf-bench's flags (--json --sizes --seconds --samples)
 * and prints zf-bench's JSON schema, so bench/report.py puts them side by
 * side. The measurement rules are zf-bench's (apps/zf-bench): latency with
 * one message in flight, CLOCK_MONOTONIC stamped by the sender just before
 * sending and read by the receiver on receipt, n/10+10 warm-up samples
 * dropped, percentiles as sorted[n/2], sorted[n*0.99], sorted[n*0.999];
 * throughput with the producer running free on a bounded queue. */
#ifndef ZF_PEER_H
#define ZF_PEER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PEER_MAX_SIZES 16
/* Receivers spin this long for the next message before they sleep: the
 * wait zflow's links use (spin, then park on a futex). */
#define PEER_SPIN_NS 50000u

typedef struct peer_opts {
    bool json;
    size_t sizes[PEER_MAX_SIZES];
    size_t n_sizes;
    double seconds;    /* throughput phase per size */
    size_t samples;    /* latency samples per size (scaled down for big sizes) */
    double max_lat_s;  /* latency phase cap per size (the samples actually taken are printed) */
    double warm_s;     /* throughput warm-up before the measured window */
    int queues;        /* zfpeer-gst: queues between fakesrc and fakesink (default 3) */
    const char *which; /* positional argument, or NULL */
} peer_opts;

typedef struct peer_result {
    const char *bench; /* "hop", "pipeline", "ipc_hop", "dds_hop" */
    const char *impl;  /* "tcp", "gstreamer", "iceoryx", "uds", "cyclonedds" */
    size_t size;
    size_t samples;
    double p50_ns, p99_ns, p999_ns, mean_ns, min_ns;
    double msgs_per_s;
    double cpu_ns_per_msg;
} peer_result;

/* Parses argv into `o` (defaults: zf-bench's). Returns 0, or the exit code
 * to leave with (help: 0 after printing; bad argument: 2). `usage` is the
 * peer's own first lines. Sets *done when main should return at once. */
int peer_parse_args(int argc, char **argv, const char *usage, peer_opts *o, bool *done);
int peer_parse_size(const char *s, size_t *out);

uint64_t peer_clock_ns(void);     /* CLOCK_MONOTONIC, ns */
double peer_cpu_ns(void);         /* this process: user + system, all threads */
double peer_cpu_ns_of(pid_t pid); /* another process (its CPU clock), 0 if unknown */
void peer_pin(int cpu);           /* calling thread to cpu modulo the CPUs online */
size_t peer_samples_for(const peer_opts *o, size_t size);
size_t peer_warmup_for(size_t samples); /* n/10 + 10, as zf-bench */
/* Queue depth for a free-running phase: `budget` bytes over `links`
 * queues, clamped to [2, 256] (zf-bench's rule). */
size_t peer_queue_cap(size_t size, size_t budget, size_t links);
void peer_percentiles(double *ns, size_t n, peer_result *r);
void peer_print(FILE *out, const peer_result *r, size_t n, bool json);
void peer_human_size(size_t s, char *buf, size_t n);

/* The latency phase of a hop, one message in flight: send(arg) sends one
 * message (stamping it just before), then the sender spins until
 * *received counts it (or *failed is set). Warm-up: the first n/10 + 10
 * messages, or those of the first tenth of --max-latency-seconds if that
 * comes first (at least 2); the phase ends after `samples` measured ones
 * or --max-latency-seconds. Returns the messages sent (-1 on failure) and
 * sets *warm: samples [*warm, sent) are the measured ones. */
typedef int (*peer_send_fn)(void *arg);
long peer_latency_phase(const peer_opts *o, size_t size, peer_send_fn send, void *arg,
                        const atomic_uint_fast64_t *received, const atomic_int *failed,
                        size_t *warm);

/* Memory shared with a forked child (anonymous, MAP_SHARED), zeroed. */
void *peer_shared_alloc(size_t bytes);
void peer_shared_free(void *p, size_t bytes);
/* A buffer of `size` bytes with every page touched (no faults later). */
void *peer_touched_alloc(size_t size);

static inline void peer_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
