/* State shared between zf-bench and its node libraries, in one process.
 * zf-bench passes its address in the nodes' configuration (`shared`): a
 * benchmark harness, not a pattern for applications. */
#ifndef ZF_BENCH_SHARED_H
#define ZF_BENCH_SHARED_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each line has one writer: what is read on every message and written only
 * before or after a phase, then the source's count, then the sink's. (The
 * two counts on one line made it cross cores twice a message, a locked
 * add among them: 9 % of a 10 MiB pipeline's samples, in the harness.)
 * Allocate it with bench_shared_new (aligned: the lines are lines). */
#define BENCH_LINE 64

typedef struct bench_shared {
    uint64_t size;               /* payload bytes */
    int lockstep;                /* 1: one capsule in flight (latency) */
    struct zf_node *_Atomic src; /* the source node (set at its init) */
    uint64_t reserve;            /* capsules to pre-fault at init */
    double *lat_ns;              /* lockstep: one sample per capsule */
    uint64_t max_samples;
    /* Lockstep with an isolated operator: the POSIX shared memory (its
     * name; "" if none) of max_samples uint64 where the operator, in its
     * process, writes each capsule's one-way latency into it (zf-bench hop
     * --isolated), and the bench's mapping of it. */
    char stamps[48];
    uint64_t *stamps_ns;
    atomic_int stop;
    /* the source's: capsules sent (lockstep only) */
    _Alignas(BENCH_LINE) atomic_uint_fast64_t sent;
    /* the sink's: capsules received; lockstep: its count, then it wakes the source */
    _Alignas(BENCH_LINE) atomic_uint_fast64_t received;
    _Atomic uint32_t ack;
} bench_shared;

/* A zeroed bench_shared on its own lines (free() it), or NULL. */
static inline bench_shared *bench_shared_new(void)
{
    bench_shared *b = aligned_alloc(BENCH_LINE, sizeof *b);
    if (b)
        memset(b, 0, sizeof *b);
    return b;
}

#endif
