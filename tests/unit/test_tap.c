/* Taps (core/tap.c): the lock-free queue a link's producers offer to and a
 * reader takes from. Several producers at once with a reader taking as
 * they go: every offer is either taken exactly once, in each producer's
 * order, or counted as dropped, and a queue with room for everything drops
 * nothing, however the reader is scheduled. With hold: the bytes bound
 * refuses, and what is still queued at the free is released. Clean under
 * ThreadSanitizer and AddressSanitizer. */
#include "harness.h"

#include "core/capsule.h"
#include "core/tap.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define PRODUCERS 3

static zf_pool *pool;
static int n_offers; /* per producer */

typedef struct producer {
    zfi_tap *t;
    int id;
} producer;

static void *offer_all(void *arg)
{
    producer *p = arg;
    for (int i = 0; i < n_offers; i++) {
        zf_data *d = NULL;
        if (zf_pool_alloc(pool, 16, &d) != ZF_OK)
            abort();
        uint32_t v[2] = {(uint32_t)p->id, (uint32_t)i};
        memcpy(zf_data_mut(&d), v, sizeof v);
        d->seq = (uint64_t)i;
        zfi_tap_offer(p->t, d);
        zf_data_unref(d);
        if (i % 97 == 0)
            sched_yield(); /* let the reader and the others interleave */
    }
    return NULL;
}

static void setup(void)
{
    if (!pool)
        ZT_OK(zf_pool_create(NULL, &pool));
    n_offers = getenv("ZF_SOAK_SECONDS") ? 20000 : 200000; /* set in the sanitizer suites */
}

/* Producers and the reader race; returns the reader's count of items. */
static uint64_t race(uint32_t capacity, uint64_t *dropped)
{
    zfi_tap *t = zfi_tap_new(capacity, 0, false);
    ZT_CHECK(t);
    producer p[PRODUCERS];
    pthread_t th[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        p[i] = (producer){t, i};
        ZT_EQ(pthread_create(&th[i], NULL, offer_all, &p[i]), 0);
    }
    int64_t next[PRODUCERS] = {0};
    uint64_t got = 0, total = (uint64_t)PRODUCERS * (uint64_t)n_offers;
    zf_tap_item it;
    for (;;) {
        zf_err e = zfi_tap_next(t, &it, 10000000000LL); /* a lost wake-up fails here */
        if (e == ZF_ECLOSED)
            break;
        ZT_EQ(e, ZF_OK);
        uint32_t v[2];
        ZT_EQ(it.head_len, 16);
        memcpy(v, it.head, sizeof v);
        ZT_CHECK(v[0] < PRODUCERS);
        if ((int64_t)v[1] < next[v[0]])
            ZT_FAIL("producer %u: item %u after item %lld (twice, or out of order)", v[0], v[1],
                    (long long)next[v[0]] - 1);
        ZT_EQ(it.seq, v[1]);
        next[v[0]] = (int64_t)v[1] + 1;
        got++;
        if (got + zfi_tap_dropped(t) == total) {
            for (int i = 0; i < PRODUCERS; i++)
                pthread_join(th[i], NULL);
            zfi_tap_end(t);
        }
    }
    *dropped = zfi_tap_dropped(t);
    ZT_EQ(got + *dropped, total);
    zfi_tap_free(t);
    zf_pool_stats ps;
    zf_pool_stats_get(pool, &ps);
    ZT_EQ(ps.bytes_in_use, 0);
    return got;
}

ZT_CASE(producers_race_the_reader_each_item_once_in_order)
{
    setup();
    uint64_t dropped = 0, got = race(64, &dropped);
    printf("  %llu taken, %llu dropped (queue of 64)\n", (unsigned long long)got,
           (unsigned long long)dropped);
}

/* Room for everything: nothing is dropped, however the reader runs (the
 * queue took no lock a descheduled reader could hold). */
ZT_CASE(a_queue_with_room_for_all_drops_nothing)
{
    setup();
    n_offers = 5000;
    uint64_t dropped = 0, got = race(PRODUCERS * 5000, &dropped);
    ZT_EQ(dropped, 0);
    ZT_EQ(got, PRODUCERS * 5000);
}

/* Hold: each item keeps a reference; past max_bytes (with something queued)
 * an offer is dropped; the free releases what is left. */
ZT_CASE(hold_bounds_bytes_and_free_releases_what_is_queued)
{
    setup();
    zfi_tap *t = zfi_tap_new(100, 4096, true);
    ZT_CHECK(t);
    for (int i = 0; i < 10; i++) {
        zf_data *d = NULL;
        ZT_OK(zf_pool_alloc(pool, 1024, &d));
        zfi_tap_offer(t, d);
        zf_data_unref(d);
    }
    ZT_EQ(zfi_tap_dropped(t), 6); /* 4 x 1 KiB held */
    zf_pool_stats ps;
    zf_pool_stats_get(pool, &ps);
    ZT_CHECK(ps.bytes_in_use >= 4 * 1024);
    zf_tap_item it;
    ZT_OK(zfi_tap_next(t, &it, 0));
    ZT_CHECK(it.data);
    ZT_EQ(zf_data_len(it.data), 1024);
    zf_data_unref(it.data);
    zfi_tap_free(t); /* three still queued */
    zf_pool_stats_get(pool, &ps);
    ZT_EQ(ps.bytes_in_use, 0);
}

ZT_MAIN(ZT_ENTRY(producers_race_the_reader_each_item_once_in_order),
        ZT_ENTRY(a_queue_with_room_for_all_drops_nothing),
        ZT_ENTRY(hold_bounds_bytes_and_free_releases_what_is_queued))
