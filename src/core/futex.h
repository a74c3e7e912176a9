/* The waiting primitives, in one place: the futex calls, a CPU pause for
 * spin loops (x86 and aarch64), an eventcount, and a small spin-then-futex
 * lock.
 *
 * An eventcount lets a thread sleep until some condition that other
 * threads make true, without a lock around the condition and without a
 * lost wake-up:
 *
 *     waiter                                 notifier
 *     key = zfi_evc_prepare(&e);             make the condition true;
 *     if (condition) zfi_evc_cancel(&e);     zfi_evc_notify(&e);
 *     else zfi_evc_wait(&e, key, timeout);
 *
 * prepare announces the waiter (a sequentially consistent increment) and
 * the waiter re-checks with seq_cst loads; the notifier makes the condition
 * true with a seq_cst store or read-modify-write, then reads the waiter
 * count (seq_cst: no fence). It bumps the sequence and wakes only when
 * someone waits, so a notifier with nobody asleep pays one load; a
 * notify-all after another with no new waiter in between pays one load too
 * (ZFI_EVC_WOKEN). Either the
 * waiter's re-check sees the condition, or the notifier sees the waiter and
 * changes the sequence the waiter sleeps on (FUTEX_WAIT returns at once
 * when it differs). `shared` futex calls are for memory several processes
 * map (the rings of process-isolated nodes, src/proc). */
#ifndef ZFI_FUTEX_H
#define ZFI_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void zfi_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Sleep while *addr == val, at most timeout_ns (< 0: no limit). Returns
 * early on a wake, a signal, or a changed value (the caller re-checks). */
static inline void zfi_futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns,
                                  bool shared)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, val, tp, NULL,
            0);
}

/* One word of a vectored wait: sleep while *addr == val. */
typedef struct zfi_futex_vec {
    _Atomic uint32_t *addr;
    uint32_t val;
    bool shared;
} zfi_futex_vec;

/* Sleep while every word still holds its value, until one of them is woken
 * (FUTEX_WAITV, Linux 5.16), at most n = 128 words. Returns false when the
 * kernel has no FUTEX_WAITV (the caller waits some other way); true
 * otherwise, early on a changed value, a signal, or an address that is no
 * longer mapped (the caller re-checks). */
static inline bool zfi_futex_waitv(const zfi_futex_vec *v, unsigned n)
{
#if defined(SYS_futex_waitv) && defined(FUTEX_32)
    struct futex_waitv w[128];
    if (n > 128)
        n = 128;
    for (unsigned i = 0; i < n; i++)
        w[i] = (struct futex_waitv){.val = v[i].val,
                                    .uaddr = (uint64_t)(uintptr_t)v[i].addr,
                                    .flags = FUTEX_32 | (v[i].shared ? 0 : FUTEX_PRIVATE_FLAG)};
    long r = syscall(SYS_futex_waitv, w, n, 0, NULL, 0);
    return !(r < 0 && errno == ENOSYS);
#else
    (void)v;
    (void)n;
    return false;
#endif
}

/* Wake up to n sleepers on addr. */
static inline void zfi_futex_wake(_Atomic uint32_t *addr, int n, bool shared)
{
    syscall(SYS_futex, (uint32_t *)addr, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, n, NULL, NULL,
            0);
}

typedef struct zfi_evc {
    _Atomic uint32_t seq;     /* the futex word */
    _Atomic uint32_t waiters; /* threads between prepare and wait's end, | ZFI_EVC_WOKEN */
} zfi_evc;

/* In `waiters`: every waiter counted was woken by a notify-all and no
 * waiter announced itself since, so the next notify-all skips the futex
 * call (the woken ones are on their way; until they leave, each notify
 * would otherwise pay a FUTEX_WAKE for nobody). A prepare clears it. */
#define ZFI_EVC_WOKEN 0x80000000u

static inline void zfi_evc_init(zfi_evc *e)
{
    atomic_init(&e->seq, 0);
    atomic_init(&e->waiters, 0);
}

/* Announce a waiter; returns the key to wait on. Follow with exactly one of
 * zfi_evc_wait or zfi_evc_cancel. */
static inline uint32_t zfi_evc_prepare(zfi_evc *e)
{
    uint32_t key = atomic_load_explicit(&e->seq, memory_order_acquire);
    atomic_fetch_add_explicit(&e->waiters, 1, memory_order_seq_cst);
    /* A notify-all after this wakes for this waiter. (Two plain read-
     * modify-writes, no loop: the word may be in memory a hostile process
     * writes.) */
    if (atomic_load_explicit(&e->waiters, memory_order_seq_cst) & ZFI_EVC_WOKEN)
        atomic_fetch_and_explicit(&e->waiters, ~ZFI_EVC_WOKEN, memory_order_seq_cst);
#if !defined(__x86_64__) && !defined(__i386__)
    /* The caller's re-check may be relaxed loads: on an LL/SC CPU (ARMv8.0)
     * a plain load can complete before the announcement above is visible,
     * and a notifier that read no waiter then never wakes this one. On x86
     * the read-modify-write above is a full barrier already. */
    atomic_thread_fence(memory_order_seq_cst);
#endif
    return key;
}

static inline void zfi_evc_cancel(zfi_evc *e)
{
    atomic_fetch_sub_explicit(&e->waiters, 1, memory_order_relaxed);
}

/* Sleep until a notify after `key`, or the timeout (< 0: none). The caller
 * re-checks its condition after it returns. `shared`: the eventcount is in
 * memory several processes map (src/proc's rings: shared futex calls; a
 * waiter there may have scribbled over the words, and the worst it gets is
 * a spurious or a missed wake-up of its own traffic). */
static inline void zfi_evc_wait_x(zfi_evc *e, uint32_t key, int64_t timeout_ns, bool shared)
{
    if (atomic_load_explicit(&e->seq, memory_order_acquire) == key)
        zfi_futex_wait(&e->seq, key, timeout_ns, shared);
    atomic_fetch_sub_explicit(&e->waiters, 1, memory_order_relaxed);
}

/* Wake up to n waiters, if there is one. Call after making the condition
 * true with a sequentially consistent store or read-modify-write (that and
 * this seq_cst load pair with prepare's increment and the waiter's
 * re-check: no fence needed, and on x86 the load is a plain move).
 * zfi_evc_notify_begin is its first half: it decides whether a futex wake is
 * due (true: the sequence moved; follow with zfi_futex_wake(&e->seq, n,
 * shared), which may come after the caller dropped the lock it decided
 * under: the wake reads nothing of *e, it only names its address). */
static inline bool zfi_evc_notify_begin(zfi_evc *e, int n)
{
    uint32_t w = atomic_load_explicit(&e->waiters, memory_order_seq_cst);
    if (!(w & ~ZFI_EVC_WOKEN))
        return false;
    if (n == INT_MAX) {
        /* Every waiter counted has a key older than the sequence the
         * notify that set WOKEN bumped (each announced itself before that
         * notify's fetch_or: no prepare cleared the flag since): it is
         * woken already, or its wait returns at once. One futex call per
         * sleep, not one per notify while the sleepers wake up. */
        if ((w & ZFI_EVC_WOKEN) ||
            (atomic_fetch_or_explicit(&e->waiters, ZFI_EVC_WOKEN, memory_order_seq_cst) &
             ZFI_EVC_WOKEN))
            return false;
    }
    atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
    return true;
}

static inline void zfi_evc_notify_x(zfi_evc *e, int n, bool shared)
{
    if (zfi_evc_notify_begin(e, n))
        zfi_futex_wake(&e->seq, n, shared);
}

static inline void zfi_evc_wait(zfi_evc *e, uint32_t key, int64_t timeout_ns)
{
    zfi_evc_wait_x(e, key, timeout_ns, false);
}

/* Wake every waiter. */
static inline void zfi_evc_notify(zfi_evc *e)
{
    zfi_evc_notify_x(e, INT_MAX, false);
}

/* Wake one waiter (for queues whose waiters are interchangeable). */
static inline void zfi_evc_notify_one(zfi_evc *e)
{
    zfi_evc_notify_x(e, 1, false);
}

static inline void zfi_evc_wait_shared(zfi_evc *e, uint32_t key, int64_t timeout_ns)
{
    zfi_evc_wait_x(e, key, timeout_ns, true);
}

static inline void zfi_evc_notify_shared(zfi_evc *e)
{
    zfi_evc_notify_x(e, INT_MAX, true);
}

/* Wake waiters whatever the waiter count says (the count lives in memory
 * another process may have scribbled over: a death must wake for sure). */
static inline void zfi_evc_kick_shared(zfi_evc *e)
{
    atomic_fetch_add_explicit(&e->seq, 1, memory_order_seq_cst);
    zfi_futex_wake(&e->seq, INT_MAX, true);
}

/* A small lock for very short critical sections (the run queue): an
 * atomic word, a brief spin, then a futex (Drepper's "mutex2": 0 free, 1
 * locked, 2 locked with sleepers). Cheaper than a pthread mutex under
 * contention, where most waits end within the spin. Process-private. */
typedef struct zfi_lock {
    _Atomic uint32_t v;
} zfi_lock;

static inline void zfi_lock_init(zfi_lock *l)
{
    atomic_init(&l->v, 0);
}

static inline void zfi_lock_acquire(zfi_lock *l)
{
    uint32_t z = 0;
    if (atomic_compare_exchange_strong_explicit(&l->v, &z, 1, memory_order_acquire,
                                                memory_order_relaxed))
        return;
    for (int i = 0; i < 128; i++) {
        z = 0;
        if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&l->v, &z, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        zfi_cpu_relax();
    }
    while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire) != 0)
        zfi_futex_wait(&l->v, 2, -1, false);
}

static inline void zfi_lock_release(zfi_lock *l)
{
    if (atomic_exchange_explicit(&l->v, 0, memory_order_release) == 2)
        zfi_futex_wake(&l->v, 1, false);
}

#endif
