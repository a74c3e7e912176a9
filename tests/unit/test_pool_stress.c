/* The magazine pool under threads: blocks allocated on one thread and
 * freed on another (they migrate between magazines), the depot's stacks
 * hammered where a magazine holds one block (ABA), max_bytes refusals
 * within the documented slack, and teardown racing the last releases (one
 * owner frees the pool, exactly once). Every figure the pool reports must
 * be exact once the threads are done. */
#include "harness.h"

#include "core/capsule.h"
#include "core/link.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static int scale(int n)
{
    return getenv("ZF_SOAK_SECONDS") ? n / 10 : n; /* the sanitizer suites */
}

/* ---- migration: producers allocate, consumers free ---- */

typedef struct mig {
    zf_pool *pool;
    zf_link *l;
    int per_producer;
    atomic_int bad;
} mig;

static void *mig_producer(void *arg)
{
    mig *m = arg;
    static const size_t sizes[] = {1,     64,     100,     1000,   4000,
                                   20000, 300000, 1000000, 2500000 /* large */};
    for (int i = 0; i < m->per_producer; i++) {
        zf_data *d = NULL;
        size_t len = sizes[(size_t)i % 9];
        if (zf_pool_alloc(m->pool, len, &d) != ZF_OK) {
            atomic_fetch_add(&m->bad, 1);
            break;
        }
        memset(zf_data_mut(&d), (int)(len & 0xff), len < 64 ? len : 64);
        if (zf_link_push(m->l, &d, 10000000000LL) != ZF_OK)
            atomic_fetch_add(&m->bad, 1);
    }
    return NULL;
}

static void *mig_consumer(void *arg)
{
    mig *m = arg;
    for (;;) {
        zf_data *d = NULL;
        zf_err e = zf_link_pop(m->l, &d, 10000000000LL);
        if (e == ZF_ECLOSED)
            return NULL;
        if (e != ZF_OK) {
            atomic_fetch_add(&m->bad, 1);
            return NULL;
        }
        const unsigned char *p = zf_data_ptr(d);
        size_t len = zf_data_len(d);
        for (size_t k = 0; k < (len < 64 ? len : 64); k++)
            if (p[k] != (len & 0xff)) {
                atomic_fetch_add(&m->bad, 1); /* the block was handed out twice */
                break;
            }
        zf_data_unref(d);
    }
}

ZT_CASE(blocks_migrate_between_threads_and_the_books_balance)
{
    mig m = {.per_producer = scale(100000)};
    ZT_OK(zf_pool_create(NULL, &m.pool));
    zf_link_config lc = {.capacity = 64};
    ZT_OK(zf_link_create(&lc, &m.l));
    pthread_t p[3], c[3];
    for (int i = 0; i < 3; i++) {
        pthread_create(&p[i], NULL, mig_producer, &m);
        pthread_create(&c[i], NULL, mig_consumer, &m);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(p[i], NULL);
    zf_link_close(m.l);
    for (int i = 0; i < 3; i++)
        pthread_join(c[i], NULL);
    zf_link_destroy(m.l);
    ZT_EQ(atomic_load(&m.bad), 0);
    zfi_pool_quarantine_flush(m.pool);
    zf_pool_stats s;
    zf_pool_stats_get(m.pool, &s);
    ZT_EQ(s.allocs, 3 * m.per_producer);
    ZT_EQ(s.frees, s.allocs);
    ZT_EQ(s.blocks_in_use, 0);
    ZT_EQ(s.bytes_in_use, 0); /* the threads exited: their counts were kept */
    zf_pool_destroy(m.pool);
}

/* ---- ABA: one block per magazine, so every alloc and free meets the
 * depot's lock-free stacks ---- */

typedef struct aba {
    zf_pool *pool;
    int iters;
    int id;
    atomic_int *bad;
} aba;

static void *aba_worker(void *arg)
{
    aba *a = arg;
    zf_data *held[4] = {0};
    for (int i = 0; i < a->iters; i++) {
        int k = i % 4;
        if (held[k]) {
            const uint32_t *w = zf_data_ptr(held[k]);
            if (w[0] != (uint32_t)a->id || w[1] != (uint32_t)(i - 4))
                atomic_fetch_add(a->bad, 1); /* someone else got our block */
            zf_data_unref(held[k]);
            held[k] = NULL;
        }
        zf_data *d = NULL;
        if (zf_pool_alloc(a->pool, 500000, &d) != ZF_OK) { /* a 512 KiB class */
            atomic_fetch_add(a->bad, 1);
            break;
        }
        uint32_t *w = zf_data_mut(&d);
        w[0] = (uint32_t)a->id;
        w[1] = (uint32_t)i;
        held[k] = d;
        if (i % 7 == 0)
            sched_yield();
    }
    for (int k = 0; k < 4; k++)
        zf_data_unref(held[k]);
    return NULL;
}

ZT_CASE(depot_stacks_survive_aba)
{
    zf_pool *pool = NULL;
    ZT_OK(zf_pool_create(NULL, &pool));
    atomic_int bad = 0;
    aba a[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (aba){.pool = pool, .iters = scale(50000), .id = i + 1, .bad = &bad};
        pthread_create(&t[i], NULL, aba_worker, &a[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ZT_EQ(atomic_load(&bad), 0);
    zf_pool_stats s;
    zf_pool_stats_get(pool, &s);
    ZT_EQ(s.blocks_in_use, 0);
    ZT_EQ(s.bytes_in_use, 0);
    ZT_EQ(s.allocs, 4 * a[0].iters);
    /* 4 threads x 4 held + their magazines: the arena did not grow per
     * allocation (blocks were recycled through the depot) */
    ZT_CHECK(s.bytes_mapped < 256ull << 20);
    zf_pool_destroy(pool);
}

/* ---- max_bytes: refused only within the documented slack ---- */

typedef struct capped {
    zf_pool *pool;
    zf_data *held[4096];
    size_t n;
    uint64_t in_use_at_refusal;
    pthread_barrier_t *go;
} capped;

static void *cap_worker(void *arg)
{
    capped *c = arg;
    pthread_barrier_wait(c->go);
    while (c->n < 4096) {
        zf_data *d = NULL;
        if (zf_pool_alloc(c->pool, 960, &d) != ZF_OK) /* 1 KiB blocks */
            break;
        c->held[c->n++] = d;
    }
    return NULL;
}

ZT_CASE(max_bytes_refusals_within_the_documented_slack)
{
    const uint64_t cap = 1u << 20, step = 32 * 1024; /* 32 blocks of 1 KiB */
    zf_pool_config cfg = {.max_bytes = cap, .name = "capped"};
    zf_pool *pool = NULL;
    ZT_OK(zf_pool_create(&cfg, &pool));
    /* One thread: refused within its own slack of the cap. */
    capped one = {.pool = pool};
    pthread_barrier_t go1;
    pthread_barrier_init(&go1, NULL, 1);
    one.go = &go1;
    cap_worker(&one);
    zf_pool_stats s;
    zf_pool_stats_get(pool, &s);
    ZT_CHECK(s.bytes_in_use <= cap);
    ZT_CHECK(s.bytes_in_use + 2 * step >= cap);
    ZT_EQ(s.alloc_failures, 1);
    for (size_t i = 0; i < one.n; i++)
        zf_data_unref(one.held[i]);
    /* Three threads at once: within (threads - 1) x 2 steps, plus each
     * one's own. */
    capped c[3];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 3);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (capped){.pool = pool, .go = &go};
        pthread_create(&t[i], NULL, cap_worker, &c[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    zf_pool_stats_get(pool, &s);
    ZT_CHECK(s.bytes_in_use <= cap);
    ZT_CHECK(s.bytes_in_use + 3 * 2 * step >= cap);
    ZT_CHECK(s.bytes_high_water <= cap); /* reservations never pass the cap */
    for (int i = 0; i < 3; i++)
        for (size_t k = 0; k < c[i].n; k++)
            zf_data_unref(c[i].held[k]);
    zf_pool_stats_get(pool, &s);
    ZT_EQ(s.bytes_in_use, 0);
    pthread_barrier_destroy(&go);
    pthread_barrier_destroy(&go1);
    zf_pool_destroy(pool);
}

/* ---- teardown racing the last releases ---- */

typedef struct race {
    zf_data **caps;
    size_t from, to;
    pthread_barrier_t *go;
} race;

static void *race_release(void *arg)
{
    race *r = arg;
    pthread_barrier_wait(r->go);
    for (size_t i = r->from; i < r->to; i++) {
        zf_data_unref(r->caps[i]);
        if (i % 3 == 0)
            sched_yield();
    }
    return NULL;
}

/* ... and another pool's releases go on meanwhile: debug builds keep
 * freed capsules in their own pool's quarantine, which destroying this
 * pool must not touch (a process-wide one was flushed by every destroy,
 * while another instance's capsules were being released: issue 17). */
ZT_CASE(destroy_racing_the_last_release_frees_the_pool_once)
{
    size_t base = zfi_pool_live_count();
    int rounds = scale(200);
    for (int round = 0; round < rounds; round++) {
        zf_pool *pool = NULL, *other = NULL;
        ZT_OK(zf_pool_create(NULL, &pool));
        ZT_OK(zf_pool_create(NULL, &other));
        zf_data *caps[64];
        for (size_t i = 0; i < 48; i++)
            ZT_OK(zf_pool_alloc(pool, i % 12 ? 100 + i : (1u << 20) + 1, &caps[i])); /* 4 large */
        for (size_t i = 48; i < 64; i++)
            ZT_OK(zf_pool_alloc(other, 100 + i, &caps[i]));
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 5);
        race r[4];
        pthread_t t[4];
        for (int i = 0; i < 4; i++) { /* the fourth releases the other pool's */
            r[i] = (race){caps, (size_t)i * 16, (size_t)i * 16 + 16, &go};
            pthread_create(&t[i], NULL, race_release, &r[i]);
        }
        pthread_barrier_wait(&go);
        for (int k = 0; k < round % 5; k++)
            sched_yield();
        zf_pool_destroy(pool); /* while the last capsules are being released */
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        zf_pool_stats st;
        zf_pool_stats_get(other, &st);
        ZT_EQ(st.bytes_in_use, 0); /* every release of the other pool counted */
        zfi_pool_quarantine_flush(other);
        zf_pool_destroy(other);
        ZT_EQ(zfi_pool_live_count(), base); /* freed, by exactly one party each */
    }
}

ZT_MAIN(ZT_ENTRY(blocks_migrate_between_threads_and_the_books_balance),
        ZT_ENTRY(depot_stacks_survive_aba),
        ZT_ENTRY(max_bytes_refusals_within_the_documented_slack),
        ZT_ENTRY(destroy_racing_the_last_release_frees_the_pool_once))
