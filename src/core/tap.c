/* Taps: a bounded queue of what passed a link, for `zfctl echo`, `hz` and
 * `record` (docs/operations.md).
 *
 * The link's producer offers each capsule it pushes while a tap is
 * attached (the link's fast path sends tapped pushes to its slow path: the
 * untapped cost is one more flag in a test the fast path already makes).
 * The queue is a ring under a mutex that the producer only ever *tries*:
 * it spins a few times if the reader holds it, then drops the item and
 * counts it, so a slow or stuck reader never slows the link. The reader
 * sleeps on an eventcount (a producer with nobody asleep pays one load). */
#include "core/tap.h"

#include "core/capsule.h"
#include "core/futex.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TRY_SPINS 64

typedef struct item {
    zf_tap_item it;
    zf_data *held;
} item;

struct zfi_tap {
    pthread_mutex_t mu; /* the ring (producers only try it) */
    item *ring;
    uint32_t cap, head, count;
    uint64_t bytes, max_bytes;
    bool hold;
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
    t->max_bytes = max_bytes ? max_bytes : 64u << 20;
    t->hold = hold;
    pthread_mutex_init(&t->mu, NULL);
    zfi_evc_init(&t->evc);
    return t;
}

void zfi_tap_free(zfi_tap *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->count; i++)
        zf_data_unref(t->ring[(t->head + i) % t->cap].held);
    pthread_mutex_destroy(&t->mu);
    free(t->ring);
    free(t);
}

void zfi_tap_offer(zfi_tap *t, zf_data *c)
{
    int spins = 0;
    while (pthread_mutex_trylock(&t->mu) != 0) {
        if (++spins == TRY_SPINS) {
            atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
            return;
        }
        zfi_cpu_relax();
    }
    if (t->count == t->cap || (t->hold && t->bytes + c->len > t->max_bytes && t->count)) {
        pthread_mutex_unlock(&t->mu);
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        return;
    }
    item *x = &t->ring[(t->head + t->count) % t->cap];
    memset(&x->it, 0, sizeof x->it);
    x->it.seq = c->seq;
    x->it.timestamp_ns = c->ts;
    x->it.len = c->len;
    x->it.dropped_before = atomic_load_explicit(&t->dropped, memory_order_relaxed);
    if (t->hold) {
        x->held = zf_data_ref(c);
        t->bytes += c->len;
    } else {
        x->held = NULL;
        x->it.head_len = c->len < sizeof x->it.head ? (size_t)c->len : sizeof x->it.head;
        memcpy(x->it.head, zf_data_ptr(c), x->it.head_len);
    }
    t->count++;
    pthread_mutex_unlock(&t->mu);
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

/* One item out, or false when none. */
static bool take(zfi_tap *t, zf_tap_item *out)
{
    pthread_mutex_lock(&t->mu);
    bool got = t->count > 0;
    if (got) {
        item *x = &t->ring[t->head];
        *out = x->it;
        out->data = x->held;
        if (x->held)
            t->bytes -= x->it.len;
        x->held = NULL;
        t->head = (t->head + 1) % t->cap;
        t->count--;
    }
    pthread_mutex_unlock(&t->mu);
    return got;
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
        pthread_mutex_lock(&t->mu);
        bool ready = t->count > 0;
        pthread_mutex_unlock(&t->mu);
        if (ready || atomic_load(&t->ended))
            zfi_evc_cancel(&t->evc);
        else
            zfi_evc_wait(&t->evc, key, left);
    }
}

uint64_t zfi_tap_dropped(const zfi_tap *t)
{
    return atomic_load_explicit(&((zfi_tap *)t)->dropped, memory_order_relaxed);
}
