/* A small mutex for very short critical sections (a link's ring, the run
 * queue): an atomic word, a brief spin, then a futex (Drepper's "mutex2":
 * 0 free, 1 locked, 2 locked with sleepers). Cheaper than pthread_mutex
 * where a hop costs tens of nanoseconds; understood by ThreadSanitizer (it
 * is built from atomics with acquire/release order). */
#ifndef ZFI_LOCK_H
#define ZFI_LOCK_H

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct zfi_lock {
    _Atomic uint32_t v;
} zfi_lock;

#define ZFI_LOCK_INIT                                                                              \
    {                                                                                              \
        0                                                                                          \
    }

static inline void zfi_lock_init(zfi_lock *l)
{
    atomic_init(&l->v, 0);
}

static inline void zfi_lock_slow(zfi_lock *l)
{
    for (int i = 0; i < 100; i++) {
        uint32_t z = 0;
        if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, (uint32_t *)&l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

static inline void zfi_lock_acquire(zfi_lock *l)
{
    uint32_t z = 0;
    if (!atomic_compare_exchange_strong_explicit(&l->v, &z, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        zfi_lock_slow(l);
}

static inline void zfi_lock_release(zfi_lock *l)
{
    if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
        syscall(SYS_futex, (uint32_t *)&l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif
