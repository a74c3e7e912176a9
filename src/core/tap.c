/* Taps: a bounded queue of what passed a link, for `zfctl echo`, `hz` and
 * `record` (docs/operations.md).
 *
 * The link's producer offers each capsule it pushes while a tap is
 * attached (the link's fast path sends tapped pushes to its slow path: the
 * untapped cost is one more flag in a test the fast path already makes).
 * The queue is a lock-free bounded ring of items (Vyukov's: a sequence word
 * per cell; a link's producer side may be shared, so producers claim a
 * cell with a compare-and-swap). A full ring drops the item and counts it:
 * a slow or stuck reader never slows the link, and a reader that is merely
 * descheduled costs nothing (it holds no lock a producer could meet). With
 * hold, the payload bytes held are counted by an atomic; producers racing
 * past max_bytes at the same instant may overshoot it by one capsule each.
 * The reader sleeps on an eventcount (a producer with nobody asleep pays
 * one load). */
#include "core/tap.h"

#include "core/capsule.h"
#include "core/futex.h"

#include <stdlib.h>
#include <string.h>

typedef struct cell {
    _Atomic uint64_t seq; /* pos: free for the producer of pos; pos + 1: full */
    zf_tap_item it;
    zf_data *held;
} cell;

struct zfi_tap {
    cell *ring;
    uint32_t cap;
    bool hold;
    uint64_t max_bytes;
    _Atomic uint64_t tail;  /* producers (off the hot path: no line of its own) */
    _Atomic uint64_t head;  /* the reader */
    _Atomic uint64_t bytes; /* held payload bytes */
    _Atomic uint64_t dropped;
    _Atomic uint32_t ended;
    zfi_evc evc;              /* the reader waits here */
    _Atomic(zfi_evc *) extra; /* and a reader of several taps, here */
};

zfi_tap *zfi_tap_new(uint32_t capacity, uint64_t max_bytes, bool hold)
{
    zfi_tap *t = zfi_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = capacity ? capacity : 256;
    t->ring = zfi_calloc(t->cap, sizeof *t->ring);
    if (!t->ring) {
        free(t);
        return NULL;
    }
    for (uint32_t i = 0; i < t->cap; i++)
        atomic_init(&t->ring[i].seq, i);
    t->max_bytes = max_bytes ? max_bytes : 64u << 20;
    t->hold = hold;
    zfi_evc_init(&t->evc);
    return t;
}

void zfi_tap_free(zfi_tap *t)
{
    if (!t)
        return;
    uint64_t tail = atomic_load(&t->tail);
    for (uint64_t p = atomic_load(&t->head); p != tail; p++) {
        cell *x = &t->ring[p % t->cap];
        if (atomic_load(&x->seq) == p + 1)
            zf_data_unref(x->held);
    }
    free(t->ring);
    free(t);
}

static void drop(zfi_tap *t)
{
    atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
}

void zfi_tap_offer(zfi_tap *t, zf_data *c)
{
    if (t->hold && atomic_load_explicit(&t->bytes, memory_order_relaxed) + c->len > t->max_bytes &&
        atomic_load_explicit(&t->tail, memory_order_relaxed) !=
            atomic_load_explicit(&t->head, memory_order_relaxed)) {
        drop(t);
        return;
    }
    uint64_t pos = atomic_load_explicit(&t->tail, memory_order_relaxed);
    cell *x;
    for (;;) {
        x = &t->ring[pos % t->cap];
        uint64_t seq = atomic_load_explicit(&x->seq, memory_order_acquire);
        if (seq == pos) {
            if (atomic_compare_exchange_weak_explicit(&t->tail, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (seq < pos) {
            drop(t); /* full: the reader has not freed this cell yet */
            return;
        } else {
            pos = atomic_load_explicit(&t->tail, memory_order_relaxed);
        }
    }
    memset(&x->it, 0, sizeof x->it);
    x->it.seq = c->seq;
    x->it.timestamp_ns = c->ts;
    x->it.len = c->len;
    x->it.dropped_before = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    if (t->hold) {
        x->held = zf_data_ref(c);
        atomic_fetch_add_explicit(&t->bytes, c->len, memory_order_relaxed);
    } else {
        x->held = NULL;
        x->it.head_len = c->len < sizeof x->it.head ? (size_t)c->len : sizeof x->it.head;
        memcpy(x->it.head, zf_data_ptr(c), x->it.head_len);
    }
    atomic_store_explicit(&x->seq, pos + 1, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst); /* the item, then the waiter count */
    zfi_evc_notify(&t->evc);
    zfi_evc *also = atomic_load_explicit(&t->extra, memory_order_acquire);
    if (also)
        zfi_evc_notify(also);
}

void zfi_tap_end(zfi_tap *t)
{
    atomic_store(&t->ended, 1);
    zfi_evc_notify(&t->evc);
    zfi_evc *also = atomic_load_explicit(&t->extra, memory_order_acquire);
    if (also)
        zfi_evc_notify(also);
}

void zfi_tap_set_notify(zfi_tap *t, zfi_evc *e)
{
    atomic_store_explicit(&t->extra, e, memory_order_release);
}

/* Whether an item is published at the head (a cell claimed and not yet
 * written is not). */
static bool ready(zfi_tap *t)
{
    uint64_t pos = atomic_load_explicit(&t->head, memory_order_relaxed);
    return atomic_load_explicit(&t->ring[pos % t->cap].seq, memory_order_acquire) == pos + 1;
}

/* One item out, or false when none. */
static bool take(zfi_tap *t, zf_tap_item *out)
{
    uint64_t pos = atomic_load_explicit(&t->head, memory_order_relaxed);
    for (;;) {
        cell *x = &t->ring[pos % t->cap];
        uint64_t seq = atomic_load_explicit(&x->seq, memory_order_acquire);
        if (seq != pos + 1) {
            if (seq < pos + 1)
                return false; /* empty, or its producer is still writing it */
            pos = atomic_load_explicit(&t->head, memory_order_relaxed); /* another reader */
            continue;
        }
        if (!atomic_compare_exchange_weak_explicit(&t->head, &pos, pos + 1, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        *out = x->it;
        out->data = x->held;
        if (x->held)
            atomic_fetch_sub_explicit(&t->bytes, x->it.len, memory_order_relaxed);
        x->held = NULL;
        atomic_store_explicit(&x->seq, pos + t->cap, memory_order_release);
        return true;
    }
}

zf_err zfi_tap_next(zfi_tap *t, zf_tap_item *out, int64_t timeout_ns)
{
    uint64_t t0 = zf_clock_ns();
    for (;;) {
        if (take(t, out))
            return ZF_OK;
        if (atomic_load(&t->ended) && !take(t, out))
            return zfi_error(ZF_ECLOSED, "the link was closed (end of stream)");
        int64_t left = timeout_ns < 0 ? -1 : timeout_ns - (int64_t)(zf_clock_ns() - t0);
        if (timeout_ns >= 0 && left <= 0)
            return zfi_error(ZF_ETIMEDOUT, "nothing passed the link");
        uint32_t key = zfi_evc_prepare(&t->evc);
        if (ready(t) || atomic_load(&t->ended))
            zfi_evc_cancel(&t->evc);
        else
            zfi_evc_wait(&t->evc, key, left);
    }
}

uint64_t zfi_tap_dropped(const zfi_tap *t)
{
    return atomic_load_explicit(&((zfi_tap *)t)->dropped, memory_order_relaxed);
}
