/* State shared between zf-bench and its node libraries, in one process.
 * zf-bench passes its address in the nodes' configuration (`shared`): a
 * benchmark harness, not a pattern for applications. */
#ifndef ZF_BENCH_SHARED_H
#define ZF_BENCH_SHARED_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct bench_shared {
    uint64_t size; /* payload bytes */
    int lockstep;  /* 1: one capsule in flight (latency) */
    atomic_uint_fast64_t sent, received;
    _Atomic uint32_t ack;        /* lockstep: the sink's count, then it wakes the source */
    struct zf_node *_Atomic src; /* the source node (set at its init) */
    uint64_t reserve;            /* capsules to pre-fault at init */
    double *lat_ns;              /* lockstep: one sample per capsule */
    uint64_t max_samples;
    atomic_int stop;
} bench_shared;

#endif
