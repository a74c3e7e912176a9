/* Links: each policy's exact semantics at capacity, byte limits, closing,
 * waiting, fan-out, statistics, and the scheduler-facing calls. */
#include "harness.h"

#include "core/capsule.h"
#include "core/link.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static zf_pool *pool;

static zf_data *msg(uint64_t seq, size_t len)
{
    zf_data *d = NULL;
    if (zf_pool_alloc(pool, len, &d) != ZF_OK)
        return NULL;
    ZF_IGNORE(zf_data_set_seq(d, seq)); /* d is unique (just allocated): cannot fail */
    return d;
}

static zf_link *mk(uint32_t cap, uint64_t max_bytes, zf_policy pol)
{
    zf_link_config c = {.capacity = cap, .max_bytes = max_bytes, .policy = pol};
    zf_link *l = NULL;
    if (zf_link_create(&c, &l) != ZF_OK)
        return NULL;
    return l;
}

static uint64_t depth(zf_link *l)
{
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    return s.depth;
}

static void setup(void)
{
    if (!pool)
        ZT_OK(zf_pool_create(NULL, &pool));
}

static uint64_t pool_in_use(void)
{
    zfi_pool_quarantine_flush(pool);
    zf_pool_stats s;
    zf_pool_stats_get(pool, &s);
    return s.bytes_in_use;
}

ZT_CASE(block_policy_at_capacity)
{
    setup();
    zf_link *l = mk(3, 0, ZF_POLICY_BLOCK);
    for (uint64_t i = 1; i <= 3; i++) {
        zf_data *d = msg(i, 10);
        ZT_OK(zf_link_try_push(l, &d));
        ZT_CHECK(d == NULL); /* consumed */
    }
    zf_data *d = msg(4, 10);
    ZT_EQ(zf_link_try_push(l, &d), ZF_EAGAIN);
    ZT_CHECK(d != NULL); /* the caller keeps it */
    ZT_EQ(zf_link_push(l, &d, 2000000 /* 2 ms */), ZF_ETIMEDOUT);
    ZT_CHECK(d == NULL); /* consumed even on error */
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    ZT_EQ(s.depth, 3);
    ZT_EQ(s.enqueued, 3);
    ZT_EQ(s.dropped, 1);
    ZT_CHECK(s.blocked_ns >= 2000000);
    for (uint64_t i = 1; i <= 3; i++) {
        zf_data *o = NULL;
        ZT_OK(zf_link_try_pop(l, &o));
        ZT_EQ(zf_data_seq(o), i); /* FIFO */
        zf_data_unref(o);
    }
    zf_data *o = NULL;
    ZT_EQ(zf_link_try_pop(l, &o), ZF_EAGAIN);
    zf_link_destroy(l);
    ZT_EQ(pool_in_use(), 0);
}

ZT_CASE(drop_oldest_at_capacity)
{
    setup();
    zf_link *l = mk(3, 0, ZF_POLICY_DROP_OLDEST);
    for (uint64_t i = 1; i <= 5; i++) {
        zf_data *d = msg(i, 10);
        ZT_OK(zf_link_push(l, &d, 0));
    }
    ZT_EQ(pool_in_use(), 3 * 128); /* the two dropped were released at once */
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    ZT_EQ(s.dropped, 2);
    ZT_EQ(s.depth, 3);
    ZT_EQ(s.high_water, 3);
    for (uint64_t i = 3; i <= 5; i++) {
        zf_data *o = NULL;
        ZT_OK(zf_link_try_pop(l, &o));
        ZT_EQ(zf_data_seq(o), i); /* the newest three survive, in order */
        zf_data_unref(o);
    }
    zf_link_destroy(l);
    ZT_EQ(pool_in_use(), 0);
}

ZT_CASE(drop_newest_at_capacity)
{
    setup();
    zf_link *l = mk(3, 0, ZF_POLICY_DROP_NEWEST);
    for (uint64_t i = 1; i <= 5; i++) {
        zf_data *d = msg(i, 10);
        ZT_OK(zf_link_push(l, &d, 0));
        ZT_CHECK(d == NULL);
    }
    ZT_EQ(pool_in_use(), 3 * 128);
    for (uint64_t i = 1; i <= 3; i++) {
        zf_data *o = NULL;
        ZT_OK(zf_link_try_pop(l, &o));
        ZT_EQ(zf_data_seq(o), i); /* the oldest three survive */
        zf_data_unref(o);
    }
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    ZT_EQ(s.dropped, 2);
    ZT_EQ(s.dequeued, 3);
    zf_link_destroy(l);
}

ZT_CASE(max_bytes_limits_queue)
{
    setup();
    zf_link *l = mk(100, 1000, ZF_POLICY_DROP_NEWEST);
    for (uint64_t i = 1; i <= 5; i++) {
        zf_data *d = msg(i, 300);
        ZT_OK(zf_link_push(l, &d, 0));
    }
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    ZT_EQ(s.depth, 3); /* 900 bytes; a fourth would make 1200 */
    ZT_EQ(s.bytes, 900);
    ZT_EQ(s.dropped, 2);
    zf_link_destroy(l);
    /* A message bigger than max_bytes passes an empty link (never stuck). */
    l = mk(4, 100, ZF_POLICY_BLOCK);
    zf_data *big = msg(1, 5000);
    ZT_OK(zf_link_try_push(l, &big));
    zf_link_destroy(l);
    ZT_EQ(pool_in_use(), 0);
}

ZT_CASE(close_drains_then_reports_end)
{
    setup();
    zf_link *l = mk(4, 0, ZF_POLICY_BLOCK);
    zf_data *d = msg(1, 1);
    ZT_OK(zf_link_push(l, &d, -1));
    zf_link_close(l);
    zf_link_close(l); /* idempotent */
    d = msg(2, 1);
    ZT_EQ(zf_link_push(l, &d, -1), ZF_ECLOSED);
    ZT_CHECK(d == NULL);
    zf_data *o = NULL;
    ZT_OK(zf_link_pop(l, &o, -1));
    ZT_EQ(zf_data_seq(o), 1);
    zf_data_unref(o);
    ZT_EQ(zf_link_pop(l, &o, -1), ZF_ECLOSED);
    ZT_CHECK(zfi_link_drained(l));
    zf_link_destroy(l);
    ZT_EQ(pool_in_use(), 0);
}

ZT_CASE(pop_times_out)
{
    setup();
    zf_link *l = mk(4, 0, ZF_POLICY_BLOCK);
    zf_data *o = NULL;
    uint64_t t0 = zf_clock_ns();
    ZT_EQ(zf_link_pop(l, &o, 20000000), ZF_ETIMEDOUT);
    ZT_CHECK(zf_clock_ns() - t0 >= 20000000);
    ZT_CHECK(o == NULL);
    zf_link_destroy(l);
}

typedef struct {
    zf_link *l;
    int n;
    atomic_int got;
} consumer_arg;

static void *slow_consumer(void *p)
{
    consumer_arg *a = p;
    for (;;) {
        zf_data *o = NULL;
        zf_err e = zf_link_pop(a->l, &o, -1);
        if (e == ZF_ECLOSED)
            break;
        usleep(200);
        zf_data_unref(o);
        atomic_fetch_add(&a->got, 1);
    }
    return NULL;
}

ZT_CASE(blocking_push_waits_for_room)
{
    setup();
    consumer_arg a = {.l = mk(2, 0, ZF_POLICY_BLOCK), .n = 200};
    pthread_t t;
    pthread_create(&t, NULL, slow_consumer, &a);
    for (int i = 0; i < a.n; i++) {
        zf_data *d = msg((uint64_t)i, 8);
        ZT_OK(zf_link_push(a.l, &d, 5000000000LL));
    }
    zf_link_close(a.l);
    pthread_join(t, NULL);
    ZT_EQ(atomic_load(&a.got), a.n); /* nothing lost on a block link */
    zf_link_stats s;
    zf_link_stats_get(a.l, &s);
    ZT_EQ(s.dropped, 0);
    ZT_CHECK(s.high_water <= 2);
    ZT_CHECK(s.blocked_ns > 0);
    zf_link_destroy(a.l);
    ZT_EQ(pool_in_use(), 0);
}

ZT_CASE(fan_out_adds_a_reference_per_receiver)
{
    setup();
    zf_link *ls[3] = {mk(4, 0, ZF_POLICY_BLOCK), mk(4, 0, ZF_POLICY_BLOCK),
                      mk(4, 0, ZF_POLICY_BLOCK)};
    zf_data *d = msg(7, 100);
    const void *payload = zf_data_ptr(d);
    ZT_OK(zf_link_push_all(ls, 3, &d, 0));
    ZT_CHECK(d == NULL);
    zf_data *o[3];
    for (int i = 0; i < 3; i++) {
        ZT_OK(zf_link_try_pop(ls[i], &o[i]));
        ZT_CHECK(zf_data_ptr(o[i]) == payload); /* the same buffer, no copy */
    }
    ZT_EQ(zf_data_refcount(o[0]), 3);
    for (int i = 0; i < 3; i++) {
        zf_data_unref(o[i]);
        zf_link_destroy(ls[i]);
    }
    ZT_EQ(pool_in_use(), 0);
}

static atomic_int room_calls, data_calls;
static void on_room(void *arg)
{
    atomic_fetch_add(&room_calls, 1);
}
static void on_data(void *arg)
{
    atomic_fetch_add(&data_calls, 1);
}

ZT_CASE(nowait_push_parks_and_room_hook_fires)
{
    setup();
    atomic_store(&room_calls, 0);
    atomic_store(&data_calls, 0);
    zf_link *l = mk(2, 0, ZF_POLICY_BLOCK);
    zfi_link_set_hooks(l, on_data, NULL, on_room, NULL);
    bool park = false;
    for (int i = 0; i < 3; i++) {
        zf_data *d = msg((uint64_t)i, 8);
        ZT_OK(zfi_link_push_nowait(l, &d, true, &park));
    }
    ZT_CHECK(park); /* accepted beyond capacity, producer must park */
    ZT_EQ(depth(l), 3);
    ZT_EQ(atomic_load(&data_calls), 3);
    zf_data *o[4];
    bool eos;
    ZT_CHECK((o[0] = zfi_link_take(l, &eos)) != NULL);
    ZT_EQ(atomic_load(&room_calls), 0); /* still at capacity */
    ZT_CHECK((o[1] = zfi_link_take(l, &eos)) != NULL);
    ZT_EQ(atomic_load(&room_calls), 1); /* under capacity: wake the producer */
    ZT_CHECK((o[2] = zfi_link_take(l, &eos)) != NULL);
    ZT_EQ(atomic_load(&room_calls), 1); /* once */
    ZT_CHECK(zfi_link_take(l, &eos) == NULL);
    ZT_CHECK(!eos);
    for (int i = 0; i < 3; i++)
        zf_data_unref(o[i]);
    zf_link_destroy(l);
}

ZT_CASE(breaker_sheds_load_even_on_block_links)
{
    setup();
    atomic_store(&room_calls, 0);
    zf_link *l = mk(2, 0, ZF_POLICY_BLOCK);
    zfi_link_set_hooks(l, NULL, NULL, on_room, NULL);
    bool park = false;
    for (int i = 0; i < 4; i++) {
        zf_data *d = msg((uint64_t)i, 8);
        ZT_OK(zfi_link_push_nowait(l, &d, true, &park));
    }
    ZT_EQ(depth(l), 4);
    zfi_link_set_breaker(l, true);
    ZT_EQ(depth(l), 2);                 /* trimmed to capacity */
    ZT_EQ(atomic_load(&room_calls), 1); /* the parked producer resumes */
    for (int i = 4; i < 10; i++) {
        zf_data *d = msg((uint64_t)i, 8);
        park = false;
        ZT_OK(zfi_link_push_nowait(l, &d, true, &park));
        ZT_CHECK(!park);
    }
    ZT_EQ(depth(l), 2);
    zf_data *o = NULL;
    ZT_OK(zf_link_try_pop(l, &o));
    ZT_EQ(zf_data_seq(o), 8); /* the newest survive */
    zf_data_unref(o);
    zfi_link_set_breaker(l, false);
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    ZT_EQ(s.dropped, 8);
    zf_link_destroy(l);
    ZT_EQ(pool_in_use(), 0);
}

/* A producer node's burst past capacity and past the ring itself (a
 * callback that sends 1000 capsules into a link of 8): every capsule is
 * accepted, kept in order, counted once, and the statistics balance. */
ZT_CASE(burst_past_the_ring_keeps_order_and_counts)
{
    setup();
    zf_link *l = mk(8, 0, ZF_POLICY_BLOCK);
    bool park = false;
    for (uint64_t i = 1; i <= 1000; i++) {
        zf_data *d = msg(i, 100);
        ZT_OK(zfi_link_push_nowait(l, &d, true, &park));
    }
    ZT_CHECK(park);
    zf_link_stats s;
    zf_link_stats_get(l, &s);
    ZT_EQ(s.depth, 1000);
    ZT_EQ(s.enqueued, 1000);
    ZT_EQ(s.bytes, 100000);
    ZT_EQ(s.high_water, 1000);
    bool eos;
    for (uint64_t want = 1; want <= 600; want++) {
        zf_data *d = zfi_link_take(l, &eos);
        ZT_CHECK(d != NULL);
        ZT_EQ(zf_data_seq(d), want);
        zf_data_unref(d);
    }
    /* more arrive while the burst drains: they queue behind it */
    for (uint64_t i = 1001; i <= 1010; i++) {
        zf_data *d = msg(i, 100);
        ZT_OK(zfi_link_push_nowait(l, &d, true, &park));
    }
    for (uint64_t want = 601; want <= 1010; want++) {
        zf_data *d = NULL;
        ZT_OK(zf_link_try_pop(l, &d));
        ZT_EQ(zf_data_seq(d), want);
        zf_data_unref(d);
    }
    zf_link_stats_get(l, &s);
    ZT_EQ(s.depth, 0);
    ZT_EQ(s.enqueued, 1010);
    ZT_EQ(s.dequeued, 1010);
    ZT_EQ(s.bytes, 0);
    ZT_EQ(s.dropped, 0);
    zf_link_close(l);
    ZT_CHECK(zfi_link_take(l, &eos) == NULL);
    ZT_CHECK(eos);
    zf_link_destroy(l);
    ZT_EQ(pool_in_use(), 0);
}

static void count_release(void *arg)
{
    (*(int *)arg)++;
}

/* A cell carries its capsule's length, so a take counts bytes without the
 * header; a length past 32 bits is read from the header instead. Both
 * ways, through the owners' calls and the public ones: the byte balance is
 * exact. (Pinned capsules: the link never touches a payload.) */
ZT_CASE(cells_carry_lengths_of_any_size)
{
    setup();
    static char byte;
    const uint64_t lens[] = {0, 1, 4095, 0xfffffffeull, 0xffffffffull, 5ull << 30};
    const size_t n = sizeof lens / sizeof lens[0];
    int released = 0;
    for (int owned = 0; owned < 2; owned++) {
        zf_link *l = mk(16, 0, ZF_POLICY_BLOCK);
        ZT_CHECK(l != NULL);
        if (owned)
            zfi_link_own(l); /* the runtime's nodes' plain puts and takes */
        uint64_t total = 0;
        bool park = false;
        for (size_t i = 0; i < n; i++) {
            zf_data *d = NULL;
            ZT_OK(zf_data_wrap(&byte, (size_t)lens[i], count_release, &released, &d));
            if (owned)
                ZT_OK(zfi_link_push_nowait(l, &d, true, &park));
            else
                ZT_OK(zf_link_push(l, &d, -1));
            total += lens[i];
        }
        zf_link_stats s;
        zf_link_stats_get(l, &s);
        ZT_EQ(s.bytes, total);
        for (size_t i = 0; i < n; i++) {
            bool eos = false;
            zf_data *d = NULL;
            if (owned)
                d = zfi_link_take(l, &eos);
            else
                ZT_OK(zf_link_try_pop(l, &d));
            ZT_CHECK(d != NULL);
            ZT_EQ(zf_data_len(d), lens[i]);
            zf_data_unref(d);
            total -= lens[i];
            zf_link_stats_get(l, &s);
            ZT_EQ(s.bytes, total);
        }
        ZT_EQ(s.dequeued, n);
        zf_link_destroy(l);
    }
    ZT_EQ(released, (int)(2 * n));
}

ZT_MAIN(ZT_ENTRY(block_policy_at_capacity), ZT_ENTRY(drop_oldest_at_capacity),
        ZT_ENTRY(drop_newest_at_capacity), ZT_ENTRY(max_bytes_limits_queue),
        ZT_ENTRY(close_drains_then_reports_end), ZT_ENTRY(pop_times_out),
        ZT_ENTRY(blocking_push_waits_for_room), ZT_ENTRY(fan_out_adds_a_reference_per_receiver),
        ZT_ENTRY(nowait_push_parks_and_room_hook_fires),
        ZT_ENTRY(breaker_sheds_load_even_on_block_links),
        ZT_ENTRY(burst_past_the_ring_keeps_order_and_counts),
        ZT_ENTRY(cells_carry_lengths_of_any_size))
