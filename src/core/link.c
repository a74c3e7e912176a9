/* Links: bounded queues of capsule pointers.
 *
 * A ring under a short lock (core/lock.h: it spins briefly, then sleeps),
 * with the depth published atomically so a waiting consumer polls without
 * the lock. Waiting is spin-then-park: a consumer spins for up to
 * SPIN_NS, then sleeps on a futex (an eventcount: a sequence word plus a
 * waiter count, so producers only make a syscall when someone sleeps).
 *
 * Policies at capacity: `block` makes the producer wait (or, inside a
 * runtime callback, accepts and parks the producer node), `drop_oldest`
 * drops the head, `drop_newest` drops the capsule being pushed. A dropped
 * capsule is unreferenced at once, outside the lock. */
#include "core/link.h"

#include "core/capsule.h"
#include "core/lock.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CAPACITY 16u
#define SPIN_NS          50000u

struct zf_link {
    zfi_lock mu;
    zf_data **ring;
    uint32_t ring_cap, head, count;
    uint32_t capacity;
    uint64_t max_bytes;
    zf_policy policy;
    uint64_t bytes;
    bool closed;
    bool breaker;
    bool room_wanted; /* the producer node is parked until under capacity */

    uint64_t high_water, enqueued, dequeued, dropped;
    atomic_uint_fast64_t blocked_ns;

    _Alignas(ZFI_CACHELINE) _Atomic uint32_t depth; /* published count */
    _Atomic uint32_t closed_pub;
    _Alignas(ZFI_CACHELINE) _Atomic uint32_t data_seq;
    _Atomic uint32_t data_waiters;
    _Alignas(ZFI_CACHELINE) _Atomic uint32_t room_seq;
    _Atomic uint32_t room_waiters;
    zfi_link_hook on_data, on_room; /* read by every push and pop */
    void *data_arg, *room_arg;

    /* Capsules the runtime handed to its consumer's callbacks (written by
     * that consumer alone: a link has one; a line of its own, away from
     * what producers read). `dequeued` = this + public pops. */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t delivered;
};

/* ---- futex ---- */

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tp = &ts;
    }
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void signal_data(zf_link *l)
{
    if (atomic_load(&l->data_waiters)) {
        atomic_fetch_add(&l->data_seq, 1);
        futex_wake_all(&l->data_seq);
    }
}

static void signal_room(zf_link *l)
{
    if (atomic_load(&l->room_waiters)) {
        atomic_fetch_add(&l->room_seq, 1);
        futex_wake_all(&l->room_seq);
    }
}

/* ---- lifecycle ---- */

const char *zf_policy_name(zf_policy p)
{
    switch (p) {
    case ZF_POLICY_BLOCK:
        return "block";
    case ZF_POLICY_DROP_OLDEST:
        return "drop_oldest";
    case ZF_POLICY_DROP_NEWEST:
        return "drop_newest";
    }
    return NULL;
}

zf_err zf_link_create(const zf_link_config *cfg, zf_link **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_link_create: out is NULL");
    *out = NULL;
    zf_link_config def = {0};
    if (!cfg)
        cfg = &def;
    if ((unsigned)cfg->policy > ZF_POLICY_DROP_NEWEST)
        return zfi_error(ZF_EINVAL, "zf_link_create: unknown policy %d", (int)cfg->policy);
    zf_link *l = aligned_alloc(ZFI_CACHELINE,
                               (sizeof *l + ZFI_CACHELINE - 1) / ZFI_CACHELINE * ZFI_CACHELINE);
    if (!l)
        return zfi_error(ZF_ENOMEM, "zf_link_create: out of memory");
    memset(l, 0, sizeof *l);
    l->capacity = cfg->capacity ? cfg->capacity : DEFAULT_CAPACITY;
    l->max_bytes = cfg->max_bytes;
    l->policy = cfg->policy;
    l->ring_cap = l->capacity;
    l->ring = calloc(l->ring_cap, sizeof *l->ring);
    if (!l->ring) {
        uint32_t cap = l->capacity;
        free(l);
        return zfi_error(ZF_ENOMEM, "zf_link_create: out of memory for %u slots", cap);
    }
    zfi_lock_init(&l->mu);
    *out = l;
    return ZF_OK;
}

void zf_link_destroy(zf_link *l)
{
    if (!l)
        return;
    for (uint32_t i = 0; i < l->count; i++)
        zf_data_unref(l->ring[(l->head + i) % l->ring_cap]);
    free(l->ring);
    free(l);
}

void zfi_link_set_hooks(zf_link *l, zfi_link_hook on_data, void *data_arg, zfi_link_hook on_room,
                        void *room_arg)
{
    l->on_data = on_data;
    l->data_arg = data_arg;
    l->on_room = on_room;
    l->room_arg = room_arg;
}

/* ---- ring (lock held) ---- */

static bool ring_full(const zf_link *l, uint64_t len)
{
    if (l->count >= l->capacity)
        return true;
    return l->max_bytes && l->count > 0 && l->bytes + len > l->max_bytes;
}

static zf_data *ring_take(zf_link *l)
{
    zf_data *d = l->ring[l->head];
    l->ring[l->head] = NULL;
    l->head = (l->head + 1) % l->ring_cap;
    l->count--;
    l->bytes -= d->len;
    atomic_store_explicit(&l->depth, l->count, memory_order_release);
    return d;
}

/* Room for one more in the ring. Only a parked producer's burst, or
 * capsules a consumer put back, go past capacity: grow. */
static bool ring_reserve(zf_link *l)
{
    if (l->count < l->ring_cap)
        return true;
    uint32_t ncap = l->ring_cap * 2;
    zf_data **nr = calloc(ncap, sizeof *nr);
    if (!nr)
        return false;
    for (uint32_t i = 0; i < l->count; i++)
        nr[i] = l->ring[(l->head + i) % l->ring_cap];
    free(l->ring);
    l->ring = nr;
    l->ring_cap = ncap;
    l->head = 0;
    return true;
}

static bool ring_put(zf_link *l, zf_data *d)
{
    if (!ring_reserve(l))
        return false;
    l->ring[(l->head + l->count) % l->ring_cap] = d;
    l->count++;
    l->bytes += d->len;
    l->enqueued++;
    if (l->count > l->high_water)
        l->high_water = l->count;
    atomic_store_explicit(&l->depth, l->count, memory_order_release);
    return true;
}

/* ---- push ---- */

enum push_mode { PUSH_WAIT, PUSH_TRY, PUSH_NOWAIT_PARK };

#define MAX_DROPS 16
#define ZFI_RETRY ZF_ERR_COUNT /* internal: dropped MAX_DROPS, still full */

/* One attempt under the lock. Returns ZF_OK (queued or dropped by policy),
 * ZF_EAGAIN (full block link, caller keeps *d), ZF_ECLOSED, or ZFI_RETRY.
 * Capsules to unreference (outside the lock) go to drops[]. */
static int push_locked(zf_link *l, zf_data **d, enum push_mode mode, zf_data **drops, size_t *nd,
                       bool *park)
{
    if (l->closed) {
        drops[(*nd)++] = *d;
        *d = NULL;
        l->dropped++;
        return ZF_ECLOSED;
    }
    uint64_t len = (*d)->len;
    if (ring_full(l, len)) {
        zf_policy pol = l->breaker ? ZF_POLICY_DROP_OLDEST : l->policy;
        switch (pol) {
        case ZF_POLICY_DROP_NEWEST:
            drops[(*nd)++] = *d;
            *d = NULL;
            l->dropped++;
            return ZF_OK;
        case ZF_POLICY_DROP_OLDEST:
            while (l->count && ring_full(l, len)) {
                if (*nd == MAX_DROPS)
                    return ZFI_RETRY;
                drops[(*nd)++] = ring_take(l);
                l->dropped++;
            }
            break;
        case ZF_POLICY_BLOCK:
            if (mode != PUSH_NOWAIT_PARK)
                return ZF_EAGAIN;
            *park = true;
            l->room_wanted = true;
            break;
        }
    }
    if (!ring_put(l, *d)) {
        drops[(*nd)++] = *d;
        l->dropped++;
    }
    *d = NULL;
    return ZF_OK;
}

static zf_err push(zf_link *l, zf_data **d, enum push_mode mode, int64_t timeout_ns, bool *park)
{
    if (!l || !d || !*d)
        return zfi_error(ZF_EINVAL, "zf_link_push: NULL %s", !l ? "link" : "capsule");
    zfi_data_check(*d, "zf_link_push");
    uint64_t t0 = 0;
    int err;
    for (;;) {
        zf_data *drops[MAX_DROPS + 1];
        size_t nd = 0;
        zfi_lock_acquire(&l->mu);
        err = push_locked(l, d, mode, drops, &nd, park);
        zfi_lock_release(&l->mu);
        for (size_t i = 0; i < nd; i++)
            zf_data_unref(drops[i]);
        if (err == ZFI_RETRY)
            continue;
        if (err != ZF_EAGAIN)
            break;
        if (mode == PUSH_TRY)
            return zfi_error(ZF_EAGAIN, "link full (%u messages)", l->capacity);
        /* Block: wait for room. */
        uint64_t now = zf_clock_ns();
        if (!t0)
            t0 = now;
        int64_t left = timeout_ns < 0 ? -1 : timeout_ns - (int64_t)(now - t0);
        if (timeout_ns >= 0 && left <= 0) {
            atomic_fetch_add(&l->blocked_ns, now - t0);
            zfi_lock_acquire(&l->mu);
            l->dropped++;
            zfi_lock_release(&l->mu);
            zf_data_unref(*d);
            *d = NULL;
            return zfi_error(ZF_ETIMEDOUT, "link full for %lld ms; capsule dropped",
                             (long long)(timeout_ns / 1000000));
        }
        uint32_t seq = atomic_load(&l->room_seq);
        atomic_fetch_add(&l->room_waiters, 1);
        zfi_lock_acquire(&l->mu);
        bool room = l->closed || !ring_full(l, (*d)->len);
        zfi_lock_release(&l->mu);
        if (!room)
            futex_wait(&l->room_seq, seq, left);
        atomic_fetch_sub(&l->room_waiters, 1);
    }
    if (t0)
        atomic_fetch_add(&l->blocked_ns, zf_clock_ns() - t0);
    signal_data(l);
    if (l->on_data)
        l->on_data(l->data_arg);
    if (err == ZF_ECLOSED)
        return zfi_error(ZF_ECLOSED, "link closed; capsule dropped");
    return (zf_err)err;
}

zf_err zf_link_push(zf_link *l, zf_data **d, int64_t timeout_ns)
{
    bool park = false;
    return push(l, d, PUSH_WAIT, timeout_ns, &park);
}

zf_err zf_link_try_push(zf_link *l, zf_data **d)
{
    bool park = false;
    return push(l, d, PUSH_TRY, 0, &park);
}

zf_err zfi_link_push_nowait(zf_link *l, zf_data **d, bool *park)
{
    return push(l, d, PUSH_NOWAIT_PARK, 0, park);
}

zf_err zf_link_push_all(zf_link *const *links, size_t n, zf_data **d, int64_t timeout_ns)
{
    if (!d || !*d)
        return zfi_error(ZF_EINVAL, "zf_link_push_all: NULL capsule");
    if (n == 0) {
        zf_data_unref(*d);
        *d = NULL;
        return ZF_OK;
    }
    zf_err first = ZF_OK;
    for (size_t i = 0; i < n; i++) {
        zf_data *one = i + 1 < n ? zf_data_ref(*d) : *d;
        zf_err e = zf_link_push(links[i], &one, timeout_ns);
        if (e != ZF_OK && first == ZF_OK)
            first = e;
    }
    *d = NULL;
    return first;
}

/* ---- pop ---- */

static void after_pop(zf_link *l, bool wake_producer)
{
    signal_room(l);
    if (wake_producer && l->on_room)
        l->on_room(l->room_arg);
}

static size_t pop_batch(zf_link *l, zf_data **out, size_t max, uint64_t max_bytes, bool *eos,
                        bool count)
{
    size_t n = 0;
    uint64_t bytes = 0;
    bool wake = false;
    zfi_lock_acquire(&l->mu);
    while (n < max && l->count) {
        uint64_t len = l->ring[l->head]->len;
        if (n && bytes + len > max_bytes)
            break;
        bytes += len;
        out[n++] = ring_take(l);
    }
    if (count)
        l->dequeued += n;
    if (l->room_wanted && l->count < l->capacity) {
        l->room_wanted = false;
        wake = true;
    }
    *eos = l->closed && l->count == 0;
    zfi_lock_release(&l->mu);
    if (n || wake)
        after_pop(l, wake);
    return n;
}

size_t zfi_link_pop_batch(zf_link *l, zf_data **out, size_t max, uint64_t max_bytes, bool *eos)
{
    return pop_batch(l, out, max, max_bytes, eos, false);
}

void zfi_link_delivered(zf_link *l)
{
    atomic_store_explicit(&l->delivered,
                          atomic_load_explicit(&l->delivered, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void zfi_link_unpop(zf_link *l, zf_data *const *caps, size_t n)
{
    size_t i = n; /* back to front: each goes before the previous */
    zfi_lock_acquire(&l->mu);
    while (i > 0 && ring_reserve(l)) {
        zf_data *d = caps[--i];
        l->head = (l->head + l->ring_cap - 1) % l->ring_cap;
        l->ring[l->head] = d;
        l->count++;
        l->bytes += d->len;
    }
    l->dropped += i; /* out of memory growing the ring: caps[0..i) are lost */
    if (l->count > l->high_water)
        l->high_water = l->count;
    atomic_store_explicit(&l->depth, l->count, memory_order_release);
    zfi_lock_release(&l->mu);
    while (i > 0)
        zf_data_unref(caps[--i]);
}

zf_err zf_link_try_pop(zf_link *l, zf_data **out)
{
    if (!l || !out)
        return zfi_error(ZF_EINVAL, "zf_link_try_pop: NULL argument");
    *out = NULL;
    bool eos;
    if (pop_batch(l, out, 1, 0, &eos, true))
        return ZF_OK;
    return eos ? ZF_ECLOSED : ZF_EAGAIN;
}

zf_err zf_link_pop(zf_link *l, zf_data **out, int64_t timeout_ns)
{
    if (!l || !out)
        return zfi_error(ZF_EINVAL, "zf_link_pop: NULL argument");
    *out = NULL;
    uint64_t t0 = zf_clock_ns();
    /* Spin: a busy consumer gets the next message without a syscall. */
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(&l->depth, memory_order_acquire) ||
            atomic_load_explicit(&l->closed_pub, memory_order_acquire)) {
            zf_err e = zf_link_try_pop(l, out);
            if (e != ZF_EAGAIN)
                return e;
        }
        if ((i & 63) == 63) {
            uint64_t spent = zf_clock_ns() - t0;
            if (spent > SPIN_NS || (timeout_ns >= 0 && (int64_t)spent >= timeout_ns))
                break;
        }
        cpu_relax();
    }
    /* Park. */
    for (;;) {
        uint32_t seq = atomic_load(&l->data_seq);
        atomic_fetch_add(&l->data_waiters, 1);
        zf_err e = zf_link_try_pop(l, out);
        if (e != ZF_EAGAIN) {
            atomic_fetch_sub(&l->data_waiters, 1);
            return e;
        }
        int64_t left = -1;
        if (timeout_ns >= 0) {
            left = timeout_ns - (int64_t)(zf_clock_ns() - t0);
            if (left <= 0) {
                atomic_fetch_sub(&l->data_waiters, 1);
                return zfi_error(ZF_ETIMEDOUT, "no message within %lld us",
                                 (long long)(timeout_ns / 1000));
            }
        }
        futex_wait(&l->data_seq, seq, left);
        atomic_fetch_sub(&l->data_waiters, 1);
    }
}

/* ---- control ---- */

void zf_link_close(zf_link *l)
{
    if (!l)
        return;
    zfi_lock_acquire(&l->mu);
    bool was = l->closed;
    l->closed = true;
    atomic_store(&l->closed_pub, 1);
    zfi_lock_release(&l->mu);
    if (was)
        return;
    atomic_fetch_add(&l->data_seq, 1);
    futex_wake_all(&l->data_seq);
    atomic_fetch_add(&l->room_seq, 1);
    futex_wake_all(&l->room_seq);
    if (l->on_data)
        l->on_data(l->data_arg);
}

void zf_link_stats_get(const zf_link *cl, zf_link_stats *out)
{
    zf_link *l = (zf_link *)cl;
    memset(out, 0, sizeof *out);
    if (!l)
        return;
    zfi_lock_acquire(&l->mu);
    out->depth = l->count;
    out->bytes = l->bytes;
    out->high_water = l->high_water;
    out->enqueued = l->enqueued;
    out->dequeued = l->dequeued + atomic_load_explicit(&l->delivered, memory_order_relaxed);
    out->dropped = l->dropped;
    out->capacity = l->capacity;
    out->policy = l->policy;
    zfi_lock_release(&l->mu);
    out->blocked_ns = atomic_load(&l->blocked_ns);
}

uint32_t zfi_link_depth(const zf_link *l)
{
    return atomic_load_explicit(&((zf_link *)l)->depth, memory_order_acquire);
}

bool zfi_link_drained(zf_link *l)
{
    zfi_lock_acquire(&l->mu);
    bool r = l->closed && l->count == 0;
    zfi_lock_release(&l->mu);
    return r;
}

bool zfi_link_has_room(zf_link *l)
{
    zfi_lock_acquire(&l->mu);
    bool full = l->count >= l->capacity || (l->max_bytes && l->count && l->bytes >= l->max_bytes);
    bool r = !full || l->breaker || l->policy != ZF_POLICY_BLOCK;
    zfi_lock_release(&l->mu);
    return r;
}

bool zfi_link_want_room(zf_link *l)
{
    zfi_lock_acquire(&l->mu);
    bool r = l->count < l->capacity || l->breaker || l->closed;
    if (!r)
        l->room_wanted = true;
    zfi_lock_release(&l->mu);
    return r;
}

/* Drop queued capsules (all of them, or down to capacity), unreferenced
 * outside the lock; wake a parked producer. Returns how many. */
static size_t drop_queued(zf_link *l, bool all, bool set_breaker, bool open)
{
    size_t total = 0, nd;
    zf_data *drop[64];
    bool wake = false;
    do {
        nd = 0;
        zfi_lock_acquire(&l->mu);
        if (set_breaker)
            l->breaker = open;
        uint32_t keep = all ? 0 : l->capacity;
        while ((all || open) && l->count > keep && nd < ZFI_ARRAY_LEN(drop)) {
            drop[nd++] = ring_take(l);
            l->dropped++;
        }
        if ((all || open) && l->room_wanted) {
            l->room_wanted = false;
            wake = true;
        }
        zfi_lock_release(&l->mu);
        for (size_t i = 0; i < nd; i++)
            zf_data_unref(drop[i]);
        total += nd;
    } while (nd == ZFI_ARRAY_LEN(drop));
    if (wake || open || all)
        after_pop(l, wake);
    return total;
}

void zfi_link_set_breaker(zf_link *l, bool open)
{
    drop_queued(l, false, true, open);
}

size_t zfi_link_flush(zf_link *l)
{
    return drop_queued(l, true, false, false);
}

void zfi_link_add_blocked(zf_link *l, uint64_t ns)
{
    atomic_fetch_add(&l->blocked_ns, ns);
}
