/* The shared-memory pool.
 *
 * Small blocks (header + payload up to 1 MiB) come from size classes of
 * powers of two, carved from an "arena": one reserved range of address
 * space into which memfd segments are mapped back to back, so a block is
 * named by its offset (index) and another process that maps the same
 * segments in the same order sees the same layout. Free blocks of a class
 * form a lock-free stack (Treiber) whose head packs a 32-bit ABA tag with
 * a 32-bit block index; the link lives in the block header.
 *
 * Large blocks get a memfd segment of their own, rounded to a size step so
 * that freed segments are recycled by later allocations of similar size.
 *
 * Memory is touched once, when a segment is created (MAP_POPULATE); the
 * allocation hot path never faults in fresh pages. */
#include "core/capsule.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NCLASS          14u           /* blocks of 128 B .. 1 MiB */
#define MIN_BLOCK_SHIFT 7u            /* 128 B = 64 B header + 64 B payload */
#define SMALL_MAX_BLOCK (1u << 20)    /* larger blocks get their own segment */
#define CARVE_BYTES     (64u * 1024u) /* blocks carved per refill */
#define MAX_POOLS       4096u
#define DEFAULT_SEGMENT (4u << 20)
#define MAX_SEGMENT     (64u << 20)
#define DEFAULT_RESERVE (8ull << 30) /* address space, not memory */
#define LARGE_CACHE_MIN (256ull << 20)

typedef struct large_seg {
    int fd;
    char *base;
    size_t size;
    bool in_use;
    uint64_t freed_at; /* for eviction order */
} large_seg;

struct zf_pool {
    struct {
        _Alignas(ZFI_CACHELINE) _Atomic uint64_t head; /* tag << 32 | (index + 1) */
    } cls[NCLASS];

    _Alignas(ZFI_CACHELINE) atomic_uint_fast64_t bytes_in_use;
    atomic_uint_fast64_t blocks_in_use;
    atomic_uint_fast64_t allocs;
    _Alignas(ZFI_CACHELINE) atomic_uint_fast64_t high_water;
    atomic_uint_fast64_t failures;
    atomic_uint_fast64_t bytes_mapped;
    atomic_uint_fast64_t segments;
    atomic_int orphaned;
    atomic_int destroyed;

    uint64_t max_bytes;
    uint64_t seg_bytes;
    uint16_t slot;
    char name[40];

    char *arena;
    size_t arena_reserved;
    pthread_mutex_t grow_mu; /* arena growth and carving */
    size_t arena_mapped;
    size_t arena_used;
    int *seg_fds;
    size_t n_segs, segs_cap;
    struct carve {
        size_t off, block, count;
    } * carves; /* every run of blocks carved, for zfi_pool_walk */
    size_t n_carves, carves_cap;

    pthread_mutex_t large_mu; /* large segment table */
    large_seg *large;
    size_t n_large, large_cap;
    uint64_t large_cached_bytes;
    uint64_t large_in_use, large_high_water; /* bytes: the working set */
    uint64_t large_clock;
};

static _Atomic(zf_pool *) pool_table[MAX_POOLS];
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static unsigned class_of(size_t block)
{
    unsigned c = 0;
    while (((size_t)1 << (MIN_BLOCK_SHIFT + c)) < block)
        c++;
    return c;
}

static size_t class_block(unsigned c)
{
    return (size_t)1 << (MIN_BLOCK_SHIFT + c);
}

/* ---- accounting ---- */

static bool reserve_bytes(zf_pool *p, uint64_t n)
{
    uint64_t now = atomic_fetch_add_explicit(&p->bytes_in_use, n, memory_order_relaxed) + n;
    if (p->max_bytes && now > p->max_bytes) {
        atomic_fetch_sub_explicit(&p->bytes_in_use, n, memory_order_relaxed);
        return false;
    }
    uint64_t hw = atomic_load_explicit(&p->high_water, memory_order_relaxed);
    while (now > hw && !atomic_compare_exchange_weak_explicit(
                           &p->high_water, &hw, now, memory_order_relaxed, memory_order_relaxed))
        ;
    return true;
}

static void unreserve_bytes(zf_pool *p, uint64_t n)
{
    atomic_fetch_sub_explicit(&p->bytes_in_use, n, memory_order_relaxed);
}

/* ---- segments ---- */

static int new_memfd(zf_pool *p, char tag, size_t idx, size_t size)
{
    char name[64];
    snprintf(name, sizeof name, "zflow-%s-%c%zu", p->name, tag, idx);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Map one more segment at the end of the arena. Called with grow_mu held. */
static zf_err arena_grow(zf_pool *p, size_t need)
{
    size_t size = p->seg_bytes << (p->n_segs < 4 ? p->n_segs : 4);
    if (size > MAX_SEGMENT && p->seg_bytes <= MAX_SEGMENT)
        size = MAX_SEGMENT;
    if (size < need)
        size = round_up(need, page_size());
    if (p->arena_mapped + size > p->arena_reserved)
        return zfi_error(ZF_ENOMEM,
                         "pool %s: address space reserved for small blocks (%zu MiB) "
                         "is exhausted",
                         p->name, p->arena_reserved >> 20);
    if (p->max_bytes && p->arena_mapped + size > round_up(p->max_bytes, size) + size)
        return zfi_error(ZF_ENOMEM, "pool %s: max_bytes %llu reached", p->name,
                         (unsigned long long)p->max_bytes);
    if (!zfi_grow((void **)&p->seg_fds, &p->segs_cap, p->n_segs + 1, sizeof(int)))
        return zfi_error(ZF_ENOMEM, "pool %s: out of memory", p->name);
    int fd = new_memfd(p, 's', p->n_segs, size);
    if (fd < 0)
        return zfi_error(ZF_ESYS, "pool %s: memfd_create/ftruncate of %zu bytes: %s", p->name, size,
                         strerror(errno));
    void *at = mmap(p->arena + p->arena_mapped, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0);
    if (at == MAP_FAILED) {
        int e = errno;
        close(fd);
        return zfi_error(e == ENOMEM ? ZF_ENOMEM : ZF_ESYS, "pool %s: mmap of %zu bytes: %s",
                         p->name, size, strerror(e));
    }
    p->seg_fds[p->n_segs++] = fd;
    p->arena_mapped += size;
    atomic_fetch_add_explicit(&p->bytes_mapped, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->segments, 1, memory_order_relaxed);
    zfi_log(ZF_LOG_DEBUG, "pool", "%s: mapped small segment %zu (%zu KiB)", p->name, p->n_segs - 1,
            size >> 10);
    return ZF_OK;
}

/* ---- small blocks: lock-free stacks per class ---- */

static uint32_t block_index(const zf_pool *p, const zf_data *d)
{
    return (uint32_t)(((const char *)d - p->arena) / ZFI_HDR_SIZE);
}

static zf_data *small_pop(zf_pool *p, unsigned c)
{
    uint64_t old = atomic_load_explicit(&p->cls[c].head, memory_order_acquire);
    for (;;) {
        uint32_t top = (uint32_t)old;
        if (!top)
            return NULL;
        zf_data *d = (zf_data *)(p->arena + (uint64_t)(top - 1) * ZFI_HDR_SIZE);
        uint32_t next = atomic_load_explicit(&d->next, memory_order_relaxed);
        uint64_t nw = (((old >> 32) + 1) << 32) | next;
        if (atomic_compare_exchange_weak_explicit(&p->cls[c].head, &old, nw, memory_order_acquire,
                                                  memory_order_acquire))
            return d;
    }
}

static void small_push(zf_pool *p, unsigned c, zf_data *d)
{
    uint32_t idx = block_index(p, d) + 1;
    uint64_t old = atomic_load_explicit(&p->cls[c].head, memory_order_relaxed);
    uint64_t nw;
    do {
        atomic_store_explicit(&d->next, (uint32_t)old, memory_order_relaxed);
        nw = (((old >> 32) + 1) << 32) | idx;
    } while (!atomic_compare_exchange_weak_explicit(&p->cls[c].head, &old, nw, memory_order_release,
                                                    memory_order_relaxed));
}

/* Carve fresh blocks of class c; return one, push the rest. */
static zf_err small_refill(zf_pool *p, unsigned c, zf_data **out)
{
    size_t bs = class_block(c);
    zf_err err = ZF_OK;
    pthread_mutex_lock(&p->grow_mu);
    /* Another thread may have refilled while we waited. */
    zf_data *d = small_pop(p, c);
    if (d)
        goto done;
    if (p->arena_used + bs > p->arena_mapped) {
        err = arena_grow(p, bs);
        if (err != ZF_OK)
            goto done;
    }
    size_t n = (p->arena_mapped - p->arena_used) / bs;
    size_t want = CARVE_BYTES / bs ? CARVE_BYTES / bs : 1;
    if (n > want)
        n = want;
    if (!zfi_grow((void **)&p->carves, &p->carves_cap, p->n_carves + 1, sizeof *p->carves)) {
        err = zfi_error(ZF_ENOMEM, "pool %s: out of memory", p->name);
        goto done;
    }
    p->carves[p->n_carves++] = (struct carve){p->arena_used, bs, n};
    char *base = p->arena + p->arena_used;
    p->arena_used += n * bs;
    for (size_t i = 1; i < n; i++) {
        zf_data *b = (zf_data *)(base + i * bs);
        atomic_store_explicit(&b->magic, 0, memory_order_relaxed);
        small_push(p, c, b);
    }
    d = (zf_data *)base;
done:
    pthread_mutex_unlock(&p->grow_mu);
    *out = d;
    return err;
}

/* ---- large blocks: a segment each, recycled ---- */

static void large_unmap(zf_pool *p, large_seg *s)
{
    munmap(s->base, s->size);
    close(s->fd);
    atomic_fetch_sub_explicit(&p->bytes_mapped, s->size, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->segments, 1, memory_order_relaxed);
    s->base = NULL;
    s->fd = -1;
    s->size = 0;
    s->in_use = false;
}

/* Unmap cached segments, oldest first, until `fits` holds. large_mu held. */
static void large_evict(zf_pool *p, uint64_t incoming)
{
    for (;;) {
        uint64_t mapped = atomic_load_explicit(&p->bytes_mapped, memory_order_relaxed);
        bool over_cap = p->max_bytes && mapped + incoming > p->max_bytes + p->seg_bytes * 2;
        /* Keep freed segments up to the working set seen so far: a pipeline
         * that held N frames in flight will again. */
        uint64_t keep =
            p->large_high_water > LARGE_CACHE_MIN ? p->large_high_water : LARGE_CACHE_MIN;
        bool over_cache = p->large_cached_bytes > keep;
        if (!over_cap && !over_cache)
            return;
        large_seg *oldest = NULL;
        for (size_t i = 0; i < p->n_large; i++) {
            large_seg *s = &p->large[i];
            if (s->base && !s->in_use && (!oldest || s->freed_at < oldest->freed_at))
                oldest = s;
        }
        if (!oldest)
            return;
        p->large_cached_bytes -= oldest->size;
        large_unmap(p, oldest);
    }
}

static size_t large_size(size_t len)
{
    size_t need = round_up(len + ZFI_HDR_SIZE, page_size());
    size_t pow = (size_t)1 << (63 - __builtin_clzll((unsigned long long)need));
    size_t step = pow / 8 > page_size() ? pow / 8 : page_size();
    return round_up(need, step);
}

static zf_err large_alloc(zf_pool *p, size_t size, zf_data **out)
{
    zf_err err = ZF_OK;
    pthread_mutex_lock(&p->large_mu);
    large_seg *best = NULL, *hole = NULL;
    for (size_t i = 0; i < p->n_large; i++) {
        large_seg *s = &p->large[i];
        if (!s->base) {
            if (!hole)
                hole = s;
        } else if (!s->in_use && s->size >= size && s->size <= size + size / 4 &&
                   (!best || s->size < best->size)) {
            best = s;
        }
    }
    if (best) {
        best->in_use = true;
        p->large_cached_bytes -= best->size;
        goto found;
    }
    large_evict(p, size);
    if (!hole) {
        if (!zfi_grow((void **)&p->large, &p->large_cap, p->n_large + 1, sizeof(large_seg))) {
            err = zfi_error(ZF_ENOMEM, "pool %s: out of memory", p->name);
            goto out;
        }
        hole = &p->large[p->n_large++];
        hole->base = NULL;
    }
    size_t id = (size_t)(hole - p->large);
    int fd = new_memfd(p, 'l', id, size);
    if (fd < 0) {
        err = zfi_error(ZF_ESYS, "pool %s: memfd_create/ftruncate of %zu bytes: %s", p->name, size,
                        strerror(errno));
        goto out;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        close(fd);
        err = zfi_error(e == ENOMEM ? ZF_ENOMEM : ZF_ESYS, "pool %s: mmap of %zu bytes: %s",
                        p->name, size, strerror(e));
        goto out;
    }
    hole->fd = fd;
    hole->base = base;
    hole->size = size;
    hole->in_use = true;
    best = hole;
    atomic_fetch_add_explicit(&p->bytes_mapped, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->segments, 1, memory_order_relaxed);
    zfi_log(ZF_LOG_DEBUG, "pool", "%s: mapped large segment %zu (%zu KiB)", p->name, id,
            size >> 10);
found : {
    p->large_in_use += best->size;
    if (p->large_in_use > p->large_high_water)
        p->large_high_water = p->large_in_use;
    zf_data *d = (zf_data *)best->base;
    d->seg = (uint32_t)(best - p->large);
    /* The bytes reserved, not the segment's: a reused segment may be up to a
     * quarter larger, and freeing must give back exactly what was taken. */
    d->cap = size - ZFI_HDR_SIZE;
    *out = d;
}
out:
    pthread_mutex_unlock(&p->large_mu);
    return err;
}

static void large_free(zf_pool *p, zf_data *d)
{
    pthread_mutex_lock(&p->large_mu);
    large_seg *s = &p->large[d->seg];
    s->in_use = false;
    s->freed_at = ++p->large_clock;
    p->large_in_use -= s->size;
    p->large_cached_bytes += s->size;
    large_evict(p, 0);
    pthread_mutex_unlock(&p->large_mu);
}

/* ---- public ---- */

zf_err zf_pool_create(const zf_pool_config *cfg, zf_pool **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_pool_create: out is NULL");
    *out = NULL;
    zf_pool_config def = {0};
    if (!cfg)
        cfg = &def;
    zf_pool *p = aligned_alloc(ZFI_CACHELINE, round_up(sizeof *p, ZFI_CACHELINE));
    if (!p)
        return zfi_error(ZF_ENOMEM, "zf_pool_create: out of memory");
    memset(p, 0, sizeof *p);
    p->max_bytes = cfg->max_bytes;
    p->seg_bytes = cfg->segment_bytes ? round_up(cfg->segment_bytes, page_size()) : DEFAULT_SEGMENT;
    if (p->max_bytes && p->seg_bytes > p->max_bytes)
        p->seg_bytes = round_up(p->max_bytes, page_size());
    snprintf(p->name, sizeof p->name, "%s", cfg->name && *cfg->name ? cfg->name : "pool");
    pthread_mutex_init(&p->grow_mu, NULL);
    pthread_mutex_init(&p->large_mu, NULL);

    /* Reserve address space for the small arena: twice the cap when one is
     * set (classes fragment), else DEFAULT_RESERVE. No memory is used. */
    p->arena_reserved =
        p->max_bytes ? round_up(p->max_bytes * 2 + MAX_SEGMENT, page_size()) : DEFAULT_RESERVE;
    if (p->arena_reserved > DEFAULT_RESERVE)
        p->arena_reserved = DEFAULT_RESERVE;
    void *r = mmap(NULL, p->arena_reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (r == MAP_FAILED) {
        zf_err e = zfi_error(ZF_ESYS, "zf_pool_create: reserving %zu MiB of address space: %s",
                             p->arena_reserved >> 20, strerror(errno));
        free(p);
        return e;
    }
    p->arena = r;

    pthread_mutex_lock(&table_mu);
    unsigned slot = MAX_POOLS;
    for (unsigned i = 1; i < MAX_POOLS; i++)
        if (!atomic_load(&pool_table[i])) {
            slot = i;
            break;
        }
    if (slot < MAX_POOLS)
        atomic_store(&pool_table[slot], p);
    pthread_mutex_unlock(&table_mu);
    if (slot == MAX_POOLS) {
        munmap(p->arena, p->arena_reserved);
        free(p);
        return zfi_error(ZF_ENOMEM, "zf_pool_create: more than %u pools in one process",
                         MAX_POOLS - 1);
    }
    p->slot = (uint16_t)slot;
    *out = p;
    return ZF_OK;
}

static void pool_really_destroy(zf_pool *p)
{
    pthread_mutex_lock(&table_mu);
    atomic_store(&pool_table[p->slot], NULL);
    pthread_mutex_unlock(&table_mu);
    for (size_t i = 0; i < p->n_large; i++)
        if (p->large[i].base)
            large_unmap(p, &p->large[i]);
    free(p->large);
    munmap(p->arena, p->arena_reserved);
    for (size_t i = 0; i < p->n_segs; i++)
        close(p->seg_fds[i]);
    free(p->seg_fds);
    free(p->carves);
    pthread_mutex_destroy(&p->grow_mu);
    pthread_mutex_destroy(&p->large_mu);
    free(p);
}

static void pool_maybe_destroy(zf_pool *p)
{
    int expected = 0;
    if (atomic_load(&p->orphaned) && atomic_load(&p->blocks_in_use) == 0 &&
        atomic_compare_exchange_strong(&p->destroyed, &expected, 1))
        pool_really_destroy(p);
}

void zf_pool_destroy(zf_pool *p)
{
    if (!p)
        return;
    uint64_t live = atomic_load(&p->blocks_in_use);
    if (live)
        zfi_log(ZF_LOG_WARN, "pool",
                "%s: destroyed with %llu capsules alive; memory is unmapped when the last "
                "is released",
                p->name, (unsigned long long)live);
    atomic_store(&p->orphaned, 1);
    pool_maybe_destroy(p);
}

void zf_pool_stats_get(const zf_pool *cp, zf_pool_stats *out)
{
    zf_pool *p = (zf_pool *)cp;
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    out->bytes_in_use = atomic_load_explicit(&p->bytes_in_use, memory_order_relaxed);
    out->bytes_high_water = atomic_load_explicit(&p->high_water, memory_order_relaxed);
    out->blocks_in_use = atomic_load_explicit(&p->blocks_in_use, memory_order_relaxed);
    out->allocs = atomic_load_explicit(&p->allocs, memory_order_relaxed);
    out->frees = out->allocs - out->blocks_in_use;
    out->alloc_failures = atomic_load_explicit(&p->failures, memory_order_relaxed);
    out->bytes_mapped = atomic_load_explicit(&p->bytes_mapped, memory_order_relaxed);
    out->segments = atomic_load_explicit(&p->segments, memory_order_relaxed);
}

zf_err zf_pool_alloc(zf_pool *p, size_t len, zf_data **out)
{
    if (!p || !out)
        return zfi_error(ZF_EINVAL, "zf_pool_alloc: NULL %s", p ? "out" : "pool");
    *out = NULL;
    if (len > ((size_t)1 << 46))
        return zfi_error(ZF_EINVAL, "zf_pool_alloc: %zu bytes is not a sane capsule size", len);
    zf_data *d = NULL;
    zf_err err;
    size_t block = len + ZFI_HDR_SIZE;
    if (block <= SMALL_MAX_BLOCK) {
        unsigned c = class_of(block);
        block = class_block(c);
        if (!reserve_bytes(p, block))
            goto cap;
        d = small_pop(p, c);
        if (!d) {
            err = small_refill(p, c, &d);
            if (err != ZF_OK) {
                unreserve_bytes(p, block);
                goto fail;
            }
        }
        d->kind = ZFI_KIND_SMALL;
        d->cls = (uint8_t)c;
        d->cap = block - ZFI_HDR_SIZE;
    } else {
        block = large_size(len);
        if (!reserve_bytes(p, block))
            goto cap;
        err = large_alloc(p, block, &d);
        if (err != ZF_OK) {
            unreserve_bytes(p, block);
            goto fail;
        }
        d->kind = ZFI_KIND_LARGE;
        d->cls = 0;
    }
    d->pool_slot = p->slot;
    atomic_store_explicit(&d->refs, 1, memory_order_relaxed);
    d->len = len;
    d->ts = zf_clock_ns();
    d->seq = 0;
    atomic_store_explicit(&d->owner, 0, memory_order_relaxed);
    atomic_store_explicit(&d->magic, ZFI_MAGIC_LIVE, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->blocks_in_use, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->allocs, 1, memory_order_relaxed);
    zfi_held(1);
    *out = d;
    return ZF_OK;
cap:
    err = zfi_error(ZF_ENOMEM,
                    "pool %s: allocating %zu bytes would exceed max_bytes %llu (%llu in use)",
                    p->name, len, (unsigned long long)p->max_bytes,
                    (unsigned long long)atomic_load(&p->bytes_in_use));
fail:
    atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
    return err;
}

static zf_pool *owner_pool(const zf_data *d)
{
    zf_pool *p = atomic_load_explicit(&pool_table[d->pool_slot], memory_order_acquire);
    if (!p)
        zfi_fatal("pool", "capsule %p names pool slot %u, which does not exist", (const void *)d,
                  d->pool_slot);
    return p;
}

static size_t block_size(const zf_data *d)
{
    return d->kind == ZFI_KIND_SMALL ? class_block(d->cls) : (size_t)d->cap + ZFI_HDR_SIZE;
}

void zfi_pool_release_bytes(zf_data *d)
{
    unreserve_bytes(owner_pool(d), block_size(d));
}

void zfi_pool_recycle(zf_data *d)
{
    zf_pool *p = owner_pool(d);
    if (d->kind == ZFI_KIND_SMALL)
        small_push(p, d->cls, d);
    else
        large_free(p, d);
    if (atomic_fetch_sub_explicit(&p->blocks_in_use, 1, memory_order_acq_rel) == 1)
        pool_maybe_destroy(p);
}

zf_pool *zfi_pool_default(void)
{
    static _Atomic(zf_pool *) def;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    zf_pool *p = atomic_load(&def);
    if (p)
        return p;
    pthread_mutex_lock(&mu);
    p = atomic_load(&def);
    if (!p) {
        zf_pool_config cfg = {.name = "default"};
        if (zf_pool_create(&cfg, &p) == ZF_OK)
            atomic_store(&def, p);
    }
    pthread_mutex_unlock(&mu);
    return p;
}

zf_err zf_pool_reserve(zf_pool *p, size_t len, size_t count)
{
    if (!p)
        return zfi_error(ZF_EINVAL, "zf_pool_reserve: NULL pool");
    zf_data **held = zfi_calloc(count, sizeof *held);
    if (!held)
        return zfi_error(ZF_ENOMEM, "zf_pool_reserve: out of memory");
    zf_err err = ZF_OK;
    size_t n = 0;
    while (n < count && (err = zf_pool_alloc(p, len, &held[n])) == ZF_OK)
        n++;
    for (size_t i = 0; i < n; i++)
        zf_data_unref(held[i]);
    free(held);
    return err;
}

void zfi_pool_walk(zf_pool *p, void (*cb)(void *arg, const zf_data *d, size_t block), void *arg)
{
    pthread_mutex_lock(&p->grow_mu);
    for (size_t i = 0; i < p->n_carves; i++) {
        const struct carve *c = &p->carves[i];
        for (size_t k = 0; k < c->count; k++) {
            const zf_data *d = (const zf_data *)(p->arena + c->off + k * c->block);
            if (atomic_load_explicit(&((zf_data *)d)->magic, memory_order_acquire) ==
                ZFI_MAGIC_LIVE)
                cb(arg, d, c->block);
        }
    }
    pthread_mutex_unlock(&p->grow_mu);
    pthread_mutex_lock(&p->large_mu);
    for (size_t i = 0; i < p->n_large; i++)
        if (p->large[i].base && p->large[i].in_use)
            cb(arg, (const zf_data *)p->large[i].base, p->large[i].size);
    pthread_mutex_unlock(&p->large_mu);
}
