/* The pool: size classes, large segments, recycling, accounting, the cap. */
#include "harness.h"

#include "core/capsule.h"

#include <pthread.h>
#include <string.h>

static zf_pool_stats stats(zf_pool *p)
{
    zfi_pool_quarantine_flush(p);
    zf_pool_stats s;
    zf_pool_stats_get(p, &s);
    return s;
}

ZT_CASE(size_classes_from_64_bytes)
{
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(NULL, &p));
    size_t sizes[] = {0, 1, 64, 65, 1000, 4096, 65536, 1000000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        zf_data *d = NULL;
        ZT_OK(zf_pool_alloc(p, sizes[i], &d));
        ZT_CHECK(zf_data_capacity(d) >= sizes[i]);
        ZT_CHECK(zf_data_capacity(d) >= 64);
        ZT_EQ(((uintptr_t)zf_data_ptr(d)) % 64, 0); /* cache-line aligned payload */
        memset(zf_data_mut(&d), 1, sizes[i]);
        zf_data_unref(d);
    }
    ZT_EQ(stats(p).bytes_in_use, 0);
    ZT_EQ(stats(p).blocks_in_use, 0);
    ZT_EQ(stats(p).allocs, 8);
    ZT_EQ(stats(p).frees, 8);
    zf_pool_destroy(p);
}

ZT_CASE(small_blocks_are_recycled)
{
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(NULL, &p));
    zf_data *d = NULL;
    /* warm up past what debug builds hold back (the pool's quarantine of
     * 1024 freed capsules) and the thread's magazines */
    for (int i = 0; i < 4096; i++) {
        ZT_OK(zf_pool_alloc(p, 100, &d));
        zf_data_unref(d);
    }
    uint64_t mapped = stats(p).bytes_mapped;
    for (int i = 0; i < 100000; i++) {
        ZT_OK(zf_pool_alloc(p, 100, &d));
        zf_data_unref(d);
    }
    ZT_EQ(stats(p).bytes_mapped, mapped); /* no new memory: freed blocks reused */
    zf_pool_destroy(p);
}

ZT_CASE(large_blocks_get_own_segment_and_are_recycled)
{
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(NULL, &p));
    zf_data *d = NULL;
    size_t ten_mib = 10u << 20;
    ZT_OK(zf_pool_alloc(p, ten_mib, &d));
    ZT_EQ(zf_data_len(d), ten_mib);
    memset(zf_data_mut(&d), 0x5a, ten_mib);
    zf_pool_stats s = stats(p);
    ZT_CHECK(s.bytes_in_use >= ten_mib);
    ZT_CHECK(s.bytes_in_use < ten_mib + ten_mib / 4);
    const void *first = zf_data_ptr(d);
    zf_data_unref(d);
    ZT_EQ(stats(p).bytes_in_use, 0);
    uint64_t segs = stats(p).segments;
    ZT_OK(zf_pool_alloc(p, ten_mib - 1000, &d)); /* similar size: the same segment */
    ZT_CHECK(zf_data_ptr(d) == first);
    ZT_EQ(stats(p).segments, segs);
    zf_data_unref(d);
    zf_pool_destroy(p);
}

typedef struct {
    zf_data **d;
    size_t n;
} unref_all_arg;

static void *unref_all(void *arg)
{
    unref_all_arg *a = arg;
    for (size_t i = 0; i < a->n; i++)
        zf_data_unref(a->d[i]);
    return NULL;
}

/* Segments freed by another thread reach the allocating one: no new
 * mapping, exact counts. */
ZT_CASE(large_segments_freed_by_another_thread_are_reused)
{
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(NULL, &p));
    enum { N = 12 };
    zf_data *d[N];
    size_t ten_mib = 10u << 20;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            ZT_OK(zf_pool_alloc(p, ten_mib, &d[i]));
        uint64_t segs = stats(p).segments;
        ZT_EQ(stats(p).blocks_in_use, N);
        if (round)
            ZT_EQ(segs, N); /* every one a segment freed before */
        unref_all_arg a = {d, N};
        pthread_t t;
        ZT_EQ(pthread_create(&t, NULL, unref_all, &a), 0);
        ZT_EQ(pthread_join(t, NULL), 0);
        ZT_EQ(stats(p).bytes_in_use, 0);
        ZT_EQ(stats(p).blocks_in_use, 0);
        ZT_EQ(stats(p).segments, segs);
    }
    zf_pool_destroy(p);
}

/* zf_pool_reserve's segments go to the pool, not to the reserving thread's
 * cache: another thread gets every one of them while the reserving thread
 * lives on (a node's init, say, that never allocates that size again). */
typedef struct {
    zf_pool *p;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int phase; /* 1: reserved; 2: may exit */
    zf_err err;
} reserver_arg;

static void *reserver(void *arg)
{
    reserver_arg *a = arg;
    zf_err e = zf_pool_reserve(a->p, 10u << 20, 8);
    pthread_mutex_lock(&a->mu);
    a->err = e;
    a->phase = 1;
    pthread_cond_broadcast(&a->cv);
    while (a->phase != 2)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

ZT_CASE(reserved_large_segments_reach_every_thread)
{
    reserver_arg a = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    ZT_OK(zf_pool_create(NULL, &a.p));
    pthread_t t;
    ZT_EQ(pthread_create(&t, NULL, reserver, &a), 0);
    pthread_mutex_lock(&a.mu);
    while (a.phase != 1)
        pthread_cond_wait(&a.cv, &a.mu);
    pthread_mutex_unlock(&a.mu);
    ZT_OK(a.err);
    uint64_t segs = stats(a.p).segments;
    ZT_EQ(segs, 8);
    zf_data *d[8];
    for (int i = 0; i < 8; i++)
        ZT_OK(zf_pool_alloc(a.p, 10u << 20, &d[i]));
    ZT_EQ(stats(a.p).segments, segs); /* none mapped anew */
    for (int i = 0; i < 8; i++)
        zf_data_unref(d[i]);
    pthread_mutex_lock(&a.mu);
    a.phase = 2;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
    ZT_EQ(pthread_join(t, NULL), 0);
    ZT_EQ(stats(a.p).bytes_in_use, 0);
    zf_pool_destroy(a.p);
}

/* A cached segment up to a quarter larger may serve a smaller request: the
 * bytes given back must be the bytes taken. */
ZT_CASE(reused_large_segment_accounts_exactly)
{
    zf_pool_config cfg = {.max_bytes = 64u << 20, .name = "reuse"};
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(&cfg, &p));
    zf_data *d = NULL;
    ZT_OK(zf_pool_alloc(p, 5u << 20, &d));
    zf_data_unref(d);
    ZT_OK(zf_pool_alloc(p, (46u << 20) / 10, &d)); /* 4.6 MiB: reuses the 5 MiB segment */
    zf_data_unref(d);
    ZT_EQ(stats(p).bytes_in_use, 0);
    ZT_OK(zf_pool_alloc(p, 100, &d)); /* the cap still works */
    zf_data_unref(d);
    zf_pool_destroy(p);
}

ZT_CASE(high_water_and_counts)
{
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(NULL, &p));
    zf_data *d[10];
    for (int i = 0; i < 10; i++)
        ZT_OK(zf_pool_alloc(p, 960, &d[i])); /* + 64 B header = a 1 KiB block */
    zf_pool_stats s = stats(p);
    ZT_EQ(s.blocks_in_use, 10);
    ZT_EQ(s.bytes_in_use, 10 * 1024);
    for (int i = 0; i < 10; i++)
        zf_data_unref(d[i]);
    s = stats(p);
    ZT_EQ(s.bytes_in_use, 0);
    /* The high water is the reservations': the real peak plus at most this
     * thread's slack (a step of 32 such blocks; docs/performance.md). */
    ZT_CHECK(s.bytes_high_water >= 10 * 1024);
    ZT_CHECK(s.bytes_high_water <= 10 * 1024 + 32 * 1024);
    zf_pool_destroy(p);
}

ZT_CASE(cap_yields_enomem_not_a_crash)
{
    zf_pool_config cfg = {.max_bytes = 1u << 20, .name = "capped"};
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(&cfg, &p));
    zf_data *held[64] = {0};
    int n = 0;
    zf_err e = ZF_OK;
    while (n < 64 && (e = zf_pool_alloc(p, 60000, &held[n])) == ZF_OK)
        n++;
    ZT_EQ(e, ZF_ENOMEM);
    ZT_CONTAINS(zf_last_error(), "max_bytes");
    ZT_CHECK(n >= 8 && n <= 16); /* 64 KiB blocks in 1 MiB */
    ZT_CHECK(stats(p).bytes_in_use <= cfg.max_bytes);
    ZT_CHECK(stats(p).alloc_failures >= 1);
    zf_data *big = NULL;
    ZT_EQ(zf_pool_alloc(p, 4u << 20, &big), ZF_ENOMEM);
    ZT_CHECK(big == NULL);
    zf_data_unref(held[0]);
    zfi_pool_quarantine_flush(p);
    ZT_OK(zf_pool_alloc(p, 60000, &held[0])); /* room again after a release */
    for (int i = 0; i < n; i++)
        zf_data_unref(held[i]);
    ZT_EQ(stats(p).bytes_in_use, 0);
    zf_pool_destroy(p);
}

ZT_CASE(pool_outlives_destroy_while_capsules_live)
{
    zf_pool *p = NULL;
    ZT_OK(zf_pool_create(NULL, &p));
    zf_data *d = NULL;
    ZT_OK(zf_pool_alloc(p, 5000, &d));
    memset(zf_data_mut(&d), 3, 5000);
    zf_pool_destroy(p); /* orphaned: unmapped with the last capsule */
    ZT_EQ(((const char *)zf_data_ptr(d))[4999], 3);
    zf_data_unref(d);
}

ZT_CASE(many_pools)
{
    zf_pool *p[50];
    for (int i = 0; i < 50; i++)
        ZT_OK(zf_pool_create(NULL, &p[i]));
    for (int i = 0; i < 50; i++)
        zf_pool_destroy(p[i]);
}

ZT_MAIN(ZT_ENTRY(size_classes_from_64_bytes), ZT_ENTRY(reused_large_segment_accounts_exactly),
        ZT_ENTRY(small_blocks_are_recycled),
        ZT_ENTRY(large_blocks_get_own_segment_and_are_recycled), ZT_ENTRY(high_water_and_counts),
        ZT_ENTRY(cap_yields_enomem_not_a_crash),
        ZT_ENTRY(pool_outlives_destroy_while_capsules_live), ZT_ENTRY(many_pools),
        ZT_ENTRY(large_segments_freed_by_another_thread_are_reused),
        ZT_ENTRY(reserved_large_segments_reach_every_thread))
