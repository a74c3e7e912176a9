/* Property test: at least 10^6 random operations (allocations, pinned
 * capsules, refs, unrefs, fan-out sends, pops) across producer and consumer
 * threads on links of every policy. Afterwards every release callback has
 * run exactly once and the pool is back to 0 bytes. */
#include "harness.h"

#include "core/capsule.h"
#include "core/link.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define PRODUCERS 3
#define CONSUMERS 3
#define LINKS     6
#define MAX_WRAPS 400000

static zf_pool *pool;
static zf_link *links[LINKS];
static atomic_uchar release_count[MAX_WRAPS];
static atomic_int next_wrap;
static atomic_long ops;
static atomic_int producers_left;
static long target_ops;

typedef struct wrap_tag {
    int id;
} wrap_tag;

static void on_release(void *arg)
{
    wrap_tag *t = arg;
    atomic_fetch_add(&release_count[t->id], 1);
    free(t);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static zf_data *make_capsule(uint64_t *seed)
{
    zf_data *d = NULL;
    if (rnd(seed) % 4 == 0) {
        int id = atomic_fetch_add(&next_wrap, 1);
        if (id < MAX_WRAPS) {
            wrap_tag *t = malloc(sizeof *t);
            t->id = id;
            if (zf_data_wrap(t, sizeof *t, on_release, t, &d) != ZF_OK)
                free(t);
            return d;
        }
    }
    static const size_t sizes[] = {0, 8, 64, 200, 1000, 5000, 70000};
    if (zf_pool_alloc(pool, sizes[rnd(seed) % 7], &d) != ZF_OK)
        return NULL; /* the producer tries again */
    return d;
}

static void *producer(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg * 7919 + 1;
    zf_data *held[8] = {0};
    while (atomic_load(&ops) < target_ops) {
        zf_data *d = make_capsule(&seed);
        if (!d)
            continue;
        long n = 1;
        /* Random extra references, kept a while then dropped. */
        unsigned slot = (unsigned)(rnd(&seed) % 8);
        if (rnd(&seed) % 3 == 0) {
            zf_data_unref(held[slot]);
            held[slot] = zf_data_ref(d);
            n += 2;
        }
        /* Fan-out to a random subset of links. */
        zf_link *to[LINKS];
        size_t nt = 0;
        uint64_t mask = rnd(&seed);
        for (int i = 0; i < LINKS; i++)
            if (mask & (1u << i))
                to[nt++] = links[i];
        if (rnd(&seed) % 5 == 0 && nt) {
            zf_err e = zf_link_try_push(to[0], &d);
            if (e == ZF_EAGAIN)
                zf_data_unref(d); /* we kept it: drop it ourselves */
            n++;
        } else {
            /* a link closed or full past the timeout drops its copy: that is
             * part of the test (every capsule is released in the end) */
            ZF_IGNORE(zf_link_push_all(to, nt, &d, 1000000));
            n += (long)nt;
        }
        atomic_fetch_add(&ops, n);
    }
    for (int i = 0; i < 8; i++)
        zf_data_unref(held[i]);
    if (atomic_fetch_sub(&producers_left, 1) == 1)
        for (int i = 0; i < LINKS; i++)
            zf_link_close(links[i]);
    return NULL;
}

static void *consumer(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg * 104729 + 3;
    zf_data *held[4] = {0};
    int closed = 0;
    bool done[LINKS] = {0};
    while (closed < LINKS) {
        int i = (int)(rnd(&seed) % LINKS);
        if (done[i])
            continue;
        zf_data *d = NULL;
        zf_err e = zf_link_pop(links[i], &d, 100000);
        if (e == ZF_ECLOSED) {
            done[i] = true;
            closed++;
            continue;
        }
        if (e != ZF_OK)
            continue;
        long n = 1;
        if (rnd(&seed) % 4 == 0) {
            unsigned s = (unsigned)(rnd(&seed) % 4);
            zf_data_unref(held[s]);
            held[s] = zf_data_ref(d);
            n += 2;
        }
        (void)zf_data_len(d);
        zf_data_unref(d);
        atomic_fetch_add(&ops, n + 1);
    }
    for (int i = 0; i < 4; i++)
        zf_data_unref(held[i]);
    return NULL;
}

ZT_CASE(random_operations_release_everything_exactly_once)
{
    target_ops = getenv("ZF_PROPERTY_OPS") ? atol(getenv("ZF_PROPERTY_OPS")) : 1000000;
    ZT_OK(zf_pool_create(NULL, &pool));
    static const zf_policy pols[] = {ZF_POLICY_BLOCK, ZF_POLICY_DROP_OLDEST, ZF_POLICY_DROP_NEWEST};
    for (int i = 0; i < LINKS; i++) {
        zf_link_config c = {.capacity = (uint32_t)(4 + i * 7),
                            .max_bytes = i == 5 ? 100000 : 0,
                            .policy = pols[i % 3]};
        ZT_OK(zf_link_create(&c, &links[i]));
    }
    zf_wrap_stats before;
    zf_wrap_stats_get(&before);
    atomic_store(&producers_left, PRODUCERS);
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    for (int i = 0; i < LINKS; i++)
        zf_link_destroy(links[i]);
    zfi_pool_quarantine_flush(pool);

    ZT_CHECK(atomic_load(&ops) >= target_ops);
    int wraps = atomic_load(&next_wrap);
    if (wraps > MAX_WRAPS)
        wraps = MAX_WRAPS;
    ZT_CHECK(wraps > 1000);
    for (int i = 0; i < wraps; i++)
        if (atomic_load(&release_count[i]) != 1)
            ZT_FAIL("pinned capsule %d released %d times", i, atomic_load(&release_count[i]));
    zf_wrap_stats after;
    zf_wrap_stats_get(&after);
    ZT_EQ(after.wrapped - before.wrapped, after.released - before.released);
    zf_pool_stats s;
    zf_pool_stats_get(pool, &s);
    ZT_EQ(s.bytes_in_use, 0);
    ZT_EQ(s.blocks_in_use, 0);
    ZT_EQ(s.allocs, s.frees);
    printf("  %ld operations, %d pinned capsules, %llu pool allocations\n", atomic_load(&ops),
           wraps, (unsigned long long)s.allocs);
    zf_pool_destroy(pool);
}

ZT_MAIN(ZT_ENTRY(random_operations_release_everything_exactly_once))
