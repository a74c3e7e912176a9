/* State shared between zf-bench and its node libraries, in one process.
 * zf-bench passes its address in the nodes' configuration (`shared`): a
 * benchmark harness, not a pattern for applications. */
#ifndef ZF_BENCH_SHARED_H
#define ZF_BENCH_SHARED_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef struct bench_shared {
    uint64_t size; /* payload bytes */
    int lockstep;  /* 1: one capsule in flight (latency) */
    atomic_uint_fast64_t sent, received;
    _Atomic uint32_t ack; /* lockstep: futex word the sink bumps */
    uint64_t reserve;     /* capsules to pre-fault at init */
    double *lat_ns;       /* lockstep: one sample per capsule */
    uint64_t max_samples;
    atomic_int stop;
} bench_shared;

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline void bench_wait(_Atomic uint32_t *w, uint32_t val)
{
    struct timespec ts = {0, 10000000}; /* bounded: re-check stop */
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static inline void bench_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#endif
