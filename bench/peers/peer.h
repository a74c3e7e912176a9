/* zflow's benchmark peers: what they share with each other.
 *
 * Every peer takes zf-bench's flags (--json --sizes --seconds --samples)
 * and prints zf-bench's JSON schema (bench_print, bench/common), so
 * bench/report.py puts them side by side. The measurement rules are
 * zf-bench's (apps/zf-bench): latency with one message in flight,
 * CLOCK_MONOTONIC stamped by the sender just before sending and read by the
 * receiver on receipt, n/10+10 warm-up samples dropped, percentiles as
 * sorted[n/2], sorted[n*0.99], sorted[n*0.999]; throughput with the
 * producer running free on a bounded queue. */
#ifndef ZF_PEER_H
#define ZF_PEER_H

#include "bench_common.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define PEER_MAX_SIZES BENCH_MAX_SIZES
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
    double period_s;   /* latency: a sample every period_s (0: back to back) */
    int queues;        /* zfpeer-gst: queues between fakesrc and fakesink (default 3) */
    const char *which; /* positional argument, or NULL */
} peer_opts;

/* Parses argv into `o` (defaults: zf-bench's). Returns 0, or the exit code
 * to leave with (help: 0 after printing; bad argument: 2). `usage` is the
 * peer's own first lines. `bench`, unless NULL, is the one benchmark the
 * peer `prog` runs: the positional argument, if any, must be it or "all".
 * Sets *done when main should return at once. */
int peer_parse_args(int argc, char **argv, const char *prog, const char *bench, const char *usage,
                    peer_opts *o, bool *done);
int peer_parse_size(const char *s, size_t *out);

/* The largest of --sizes, and the most latency samples (warm-up included)
 * a phase of any of them takes. */
size_t peer_max_size(const peer_opts *o);
size_t peer_max_samples(const peer_opts *o);
void peer_sleep_ms(long ms);

/* What a sender and its receiver share: a thread's, or a forked process's
 * (then in peer_shared_alloc memory). */
typedef struct peer_ctl {
    _Alignas(64) atomic_uint_fast64_t received; /* messages counted in this phase */
    _Alignas(64) atomic_uint_fast64_t phases_done;
    atomic_uint_fast64_t ready; /* index + 1 of the size whose receiver is ready */
    atomic_int failed;
    size_t max_lat;
    double lat[]; /* latency samples of the current phase */
} peer_ctl;

/* The sender's wait for the receiver to finish phase number `phase` (it
 * counts them in c->phases_done), spinning. timeout_ns: 0 for none, else
 * how long before giving up with `late` on stderr. 0, or -1 if the receiver
 * failed or the time passed. */
int peer_wait_phase(peer_ctl *c, uint64_t phase, uint64_t timeout_ns, const char *late);

/* A zeroed peer_ctl in shared memory with room for peer_max_samples(o)
 * samples (max_lat); *bytes for peer_shared_free. NULL if out of memory. */
peer_ctl *peer_ctl_alloc(const peer_opts *o, size_t *bytes);

/* One hop, the sender's side. send(arg) sends one message of the size
 * (stamping it just before); end_phase(arg) sends the end of a phase and
 * returns once the receiver finished it (-1 if the receiver failed). The
 * receiver counts the messages of a phase in c->received and records the
 * latency of each in c->lat during the latency phase. `child`: the
 * receiving process, whose CPU time counts too (0: a thread of this one). */
typedef int (*peer_send_fn)(void *arg);
typedef struct peer_hop {
    peer_send_fn send;
    peer_send_fn end_phase;
    void *arg;
    peer_ctl *c;
    pid_t child;
} peer_hop;

/* The two phases of one size into r. Latency: one message in flight, the
 * sender spinning until c->received counts it (or c->failed is set).
 * Warm-up: the first n/10 + 10 messages, or those of the first tenth of
 * --max-latency-seconds if that comes first (at least 2); the phase ends
 * after `samples` measured ones or --max-latency-seconds. Throughput: the
 * sender runs free; the messages the receiver counted over --seconds after
 * --warmup, and the CPU time of both sides over that window. Returns 0, or
 * -1 if a send or the receiver failed. */
int peer_hop_run(const peer_opts *o, size_t size, const peer_hop *h, bench_result *r);

/* Memory shared with a forked child (anonymous, MAP_SHARED), zeroed. */
void *peer_shared_alloc(size_t bytes);
void peer_shared_free(void *p, size_t bytes);

static inline void peer_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
