/* The shared-memory pool (this file: the pool object; magazine.c: the
 * threads' magazines and reservations; large.c: large segments;
 * pool_impl.h: what they share).
 *
 * Small blocks (header + payload up to 1 MiB) come from size classes of
 * powers of two, carved from an "arena": one reserved range of address
 * space into which memfd segments are mapped back to back, so a block is
 * named by its offset (index) and another process that maps the same
 * segments in the same order sees the same layout. Large blocks get a memfd
 * segment of their own, rounded to a size step so that freed segments are
 * recycled by later allocations of similar size.
 *
 * The hot path touches nothing another core writes (Bonwick's magazines):
 * every thread keeps, per pool and size class, two magazines of free block
 * indices (`loaded` and `prev`); it allocates from and frees into them, and
 * meets the pool's shared state once per magazine (up to 32 blocks): a
 * lock-free, ABA-safe stack of full magazines and one of empty ones per
 * class (a 32-bit tag beside the 32-bit index in the stack head). Only when
 * the depot is empty are fresh blocks carved, under a mutex.
 *
 * Accounting is per thread too (allocations, frees, bytes, each written by
 * its thread alone), summed when read, so the statistics and the stop
 * report stay exact. `max_bytes` is enforced through reservations: a
 * thread reserves pool bytes a step at a time (a magazine's worth: 32
 * blocks of the size it allocates, at least 4 KiB, at most 256 KiB or 1/64
 * of the cap) and spends them locally; freeing gives bytes back to the
 * freeing thread, which returns what it holds beyond two steps. So a
 * refusal can come while up to (threads - 1) x 2 steps are reserved and
 * unused (the documented slack), and `bytes_high_water` is the high water
 * of reservations: at least the real peak, at most the peak plus that slack.
 *
 * Teardown has one owner. The pool table's slot (never freed) holds the
 * pool, a generation and an `orphaned` flag. zf_pool_destroy sets the
 * flag, then a process-wide memory barrier (membarrier), then counts live
 * blocks under the table mutex; a freeing thread updates its counters, then
 * reads the flag. Either the count sees the free, or the freer sees the
 * flag and counts again under the mutex: whoever finds 0 first frees the
 * pool, after checking under the mutex that the slot still names it.
 *
 * Memory is touched once, when a segment is created (MAP_POPULATE); the
 * allocation hot path never faults in fresh pages and reads no clock. */
#include "core/pool_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The pool table (core/capsule.h). */
zfi_pool_slot zfi_pool_slots[ZFI_MAX_POOLS];
pthread_mutex_t zfi_pool_table_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_gen = 1; /* zfi_pool_table_mu */

/* ---- the process-wide barrier that makes teardown's check exact ---- */

static int barrier_cmd = -1; /* membarrier command, 0 if none */

static void barrier_init(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
    barrier_cmd = 0;
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0)
        barrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED;
    else if (cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL))
        barrier_cmd = MEMBARRIER_CMD_GLOBAL;
}

/* Every thread of the process executes a full memory barrier. Without
 * membarrier, freeing threads fence themselves (zfi_pool_free_fence). */
static bool process_barrier(void)
{
    if (barrier_cmd > 0 && syscall(SYS_membarrier, barrier_cmd, 0) == 0)
        return true;
    atomic_thread_fence(memory_order_seq_cst);
    return false;
}

_Atomic bool zfi_pool_free_fence; /* set when membarrier is missing */

/* ---- segments ---- */

int zfi_pool_memfd(zf_pool *p, char tag, size_t idx, size_t size)
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
zf_err zfi_pool_arena_grow(zf_pool *p, size_t need)
{
    /* A small first segment (a started instance moving small messages maps
     * and populates 256 KiB, not 4 MiB), each next one twice the last, up
     * to MAX_SEGMENT. */
    size_t size = p->seg_bytes << (p->n_segs < 8 ? p->n_segs : 8);
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
    int fd = zfi_pool_memfd(p, 's', p->n_segs, size);
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

/* ---- create, destroy ---- */

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
    p->chunk = RES_CHUNK;
    if (p->max_bytes && p->chunk > p->max_bytes / 64)
        p->chunk = p->max_bytes / 64 > 4096 ? p->max_bytes / 64 : 4096;
    p->seg_bytes = cfg->segment_bytes ? round_up(cfg->segment_bytes, page_size()) : DEFAULT_SEGMENT;
    if (p->max_bytes && p->seg_bytes > p->max_bytes)
        p->seg_bytes = round_up(p->max_bytes, page_size());
    snprintf(p->name, sizeof p->name, "%s", cfg->name && *cfg->name ? cfg->name : "pool");
    pthread_mutex_init(&p->grow_mu, NULL);
    pthread_mutex_init(&p->large_mu, NULL);
#ifdef ZF_DEBUG_POISON
    pthread_mutex_init(&p->q_mu, NULL);
#endif

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

    const char *chk = getenv("ZF_CHECK_SHARED");
    if (chk && *chk && strcmp(chk, "0") != 0)
        atomic_store(&zfi_check_shared, true);
    pthread_mutex_lock(&zfi_pool_table_mu);
    if (barrier_cmd < 0)
        barrier_init();
    if (barrier_cmd == 0)
        atomic_store(&zfi_pool_free_fence, true);
    unsigned slot = MAX_POOLS;
    for (unsigned i = 1; i < MAX_POOLS; i++)
        if (!atomic_load_explicit(&slots[i].pool, memory_order_relaxed)) {
            slot = i;
            break;
        }
    if (slot < MAX_POOLS) {
        p->slot = (uint16_t)slot;
        p->gen = next_gen++;
        atomic_store_explicit(&slots[slot].gen, p->gen, memory_order_relaxed);
        atomic_store_explicit(&slots[slot].orphaned, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[slot].arena_bytes, p->arena_reserved, memory_order_relaxed);
        atomic_store_explicit(&slots[slot].arena, p->arena, memory_order_release);
        atomic_store_explicit(&slots[slot].pool, p, memory_order_release);
    }
    pthread_mutex_unlock(&zfi_pool_table_mu);
    if (slot == MAX_POOLS) {
        munmap(p->arena, p->arena_reserved);
        free(p);
        return zfi_error(ZF_ENOMEM, "zf_pool_create: more than %u pools in one process",
                         MAX_POOLS - 1);
    }
    *out = p;
    return ZF_OK;
}

/* Live blocks: allocations minus frees over every thread. zfi_pool_table_mu held. */
uint64_t zfi_pool_live_locked(const zf_pool *p, zf_pool_stats *s)
{
    uint64_t a = p->gone_allocs, f = p->gone_frees, ba = p->gone_bytes_alloc,
             bf = p->gone_bytes_freed;
    for (zfi_trec *r = p->recs; r; r = r->pnext) {
        a += ld(&r->allocs);
        f += atomic_load_explicit(&r->frees, memory_order_acquire);
        ba += ld(&r->bytes_alloc);
        bf += ld(&r->bytes_freed);
    }
    if (s) {
        s->allocs = a;
        s->frees = f;
        s->blocks_in_use = a - f;
        s->bytes_in_use = ba - bf;
    }
    return a - f;
}

/* Free everything. zfi_pool_table_mu held; nothing of the pool is alive. */
void zfi_pool_free_locked(zf_pool *p)
{
    atomic_store_explicit(&slots[p->slot].pool, NULL, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].arena, NULL, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].arena_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].gen, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].orphaned, 0, memory_order_relaxed);
    /* Records of other threads stay theirs (they see the generation
     * change); only the list of them goes. */
    for (uint32_t id = 0; id < atomic_load_explicit(&p->n_large, memory_order_relaxed); id++) {
        zfi_large_ent *e = zfi_large_at(p, id, false);
        if (atomic_load_explicit(&e->base, memory_order_relaxed))
            zfi_large_unmap(p, e);
    }
    for (size_t i = 0; i < LARGE_DIRS; i++)
        free(atomic_load_explicit(&p->large_dir[i], memory_order_relaxed));
    for (size_t i = 0; i < MAG_DIRS; i++)
        free(atomic_load_explicit(&p->mag_dir[i], memory_order_relaxed));
    munmap(p->arena, p->arena_reserved);
    for (size_t i = 0; i < p->n_segs; i++)
        close(p->seg_fds[i]);
    free(p->seg_fds);
    free(p->carves);
    pthread_mutex_destroy(&p->grow_mu);
    pthread_mutex_destroy(&p->large_mu);
#ifdef ZF_DEBUG_POISON
    pthread_mutex_destroy(&p->q_mu);
#endif
    free(p);
}

/* The slot's pool, if it is still generation `gen`, orphaned and empty, is
 * freed here. */
static void try_teardown(uint32_t slot, uint32_t gen)
{
    pthread_mutex_lock(&zfi_pool_table_mu);
    zf_pool *p = atomic_load_explicit(&slots[slot].pool, memory_order_relaxed);
    if (p && atomic_load_explicit(&slots[slot].gen, memory_order_relaxed) == gen &&
        atomic_load_explicit(&slots[slot].orphaned, memory_order_relaxed) &&
        zfi_pool_live_locked(p, NULL) == 0)
        zfi_pool_free_locked(p);
    pthread_mutex_unlock(&zfi_pool_table_mu);
}

void zf_pool_destroy(zf_pool *p)
{
    if (!p)
        return;
    zfi_pool_quarantine_flush(p);
    uint32_t slot = p->slot, gen = p->gen;
    /* The caller's own magazines go back now (a thread that never uses the
     * pool again would keep them until it exits). */
    pthread_mutex_lock(&zfi_pool_table_mu);
    zfi_tcache *tc = zfi_tls_tc;
    for (size_t i = 0; tc && i <= tc->mask; i++) {
        zfi_trec *r = tc->tab[i];
        if (r && r->pool == p && r->gen == gen) {
            zfi_rec_flush_locked(r);
            zfi_tc_drop(tc, i);
            free(r);
            break;
        }
    }
    uint64_t live = zfi_pool_live_locked(p, NULL);
    pthread_mutex_unlock(&zfi_pool_table_mu);
    if (live)
        zfi_log(ZF_LOG_WARN, "pool",
                "%s: destroyed with %llu capsules alive; memory is unmapped when the last "
                "is released",
                p->name, (unsigned long long)live);
    atomic_store_explicit(&slots[slot].orphaned, 1, memory_order_seq_cst);
    process_barrier();
    try_teardown(slot, gen);
}

void zf_pool_stats_get(const zf_pool *cp, zf_pool_stats *out)
{
    zf_pool *p = (zf_pool *)cp;
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    pthread_mutex_lock(&zfi_pool_table_mu);
    zfi_pool_live_locked(p, out);
    pthread_mutex_unlock(&zfi_pool_table_mu);
    out->bytes_high_water = ld(&p->high_water);
    if (out->bytes_high_water < out->bytes_in_use)
        out->bytes_high_water = out->bytes_in_use;
    out->alloc_failures = atomic_load_explicit(&p->failures, memory_order_relaxed);
    out->bytes_mapped = atomic_load_explicit(&p->bytes_mapped, memory_order_relaxed);
    out->segments = atomic_load_explicit(&p->segments, memory_order_relaxed);
}

/* ---- allocate, free ---- */

static zf_err alloc_fail(zf_pool *p, zf_err err)
{
    atomic_fetch_add_explicit(&p->failures, 1, memory_order_relaxed);
    return err;
}

zf_err zf_pool_alloc(zf_pool *p, size_t len, zf_data **out)
{
    if (!p || !out)
        return zfi_error(ZF_EINVAL, "zf_pool_alloc: NULL %s", p ? "out" : "pool");
    *out = NULL;
    if (len > ((size_t)1 << 46))
        return zfi_error(ZF_EINVAL, "zf_pool_alloc: %zu bytes is not a sane capsule size", len);
    zfi_trec *r = rec_get(p);
    if (!r)
        return alloc_fail(
            p, zfi_error(ZF_ENOMEM, "pool %s: out of memory for a thread cache", p->name));
    zf_data *d = NULL;
    size_t block = len + ZFI_HDR_SIZE;
    if (block <= SMALL_MAX_BLOCK) {
        unsigned c = class_of(block);
        block = class_block(c);
        if (!reserve(p, r, block))
            goto cap;
        zfi_mag *m = r->loaded[c];
        if (ZFI_UNLIKELY(!m || !m->count)) {
            if (!zfi_mag_refill(p, r, c)) {
                unreserve(p, r, block);
                return alloc_fail(p, ZF_ENOMEM);
            }
            m = r->loaded[c];
        }
        d = block_at(p, m->blk[--m->count]);
        /* The next block's header was last written by whoever freed it:
         * fetch it writable now, while this one travels. */
        if (ZFI_LIKELY(m->count))
            zfi_prefetch_w(block_at(p, m->blk[m->count - 1]));
        d->kind = ZFI_KIND_SMALL;
        d->cls = (uint8_t)c;
        d->cap = block - ZFI_HDR_SIZE;
    } else {
        block = zfi_large_size(len);
        if (!reserve(p, r, block))
            goto cap;
        zf_err err = zfi_large_alloc(p, block, &d);
        if (err != ZF_OK) {
            unreserve(p, r, block);
            return alloc_fail(p, err);
        }
        d->kind = ZFI_KIND_LARGE;
        d->cls = 0;
    }
    d->pool_slot = p->slot;
    atomic_store_explicit(&d->refs, 1, memory_order_relaxed);
    d->len = len;
    d->ts = 0; /* stamped when first sent */
    atomic_store_explicit(&d->check, 0, memory_order_relaxed);
    d->seq = 0;
    atomic_store_explicit(&d->owner, 0, memory_order_relaxed);
    atomic_store_explicit(&d->magic, ZFI_MAGIC_LIVE, memory_order_relaxed);
    bump(&r->allocs, 1);
    bump(&r->bytes_alloc, block);
    zfi_held(1);
    *out = d;
    return ZF_OK;
cap:
    return alloc_fail(p, zfi_error(ZF_ENOMEM,
                                   "pool %s: allocating %zu bytes would exceed max_bytes %llu "
                                   "(%llu reserved)",
                                   p->name, len, (unsigned long long)p->max_bytes,
                                   (unsigned long long)ld(&p->reserved)));
}

static zf_pool *owner_pool(const zf_data *d)
{
    zf_pool *p = atomic_load_explicit(&slots[d->pool_slot].pool, memory_order_acquire);
    if (!p)
        zfi_fatal("pool", "capsule %p names pool slot %u, which does not exist", (const void *)d,
                  d->pool_slot);
    return p;
}

static size_t block_size(const zf_data *d)
{
    return d->kind == ZFI_KIND_SMALL ? class_block(d->cls) : (size_t)d->cap + ZFI_HDR_SIZE;
}

void zfi_pool_free(zf_data *d)
{
    zf_pool *p = owner_pool(d);
    uint32_t slot = p->slot, gen = p->gen;
    size_t block = block_size(d);
    zfi_trec *r = rec_get(p);
#ifdef ZF_DEBUG_POISON
    /* Small blocks wait, marked dead, in the pool's quarantine before they
     * can be handed out again (not once the pool is orphaned: nobody would
     * flush it). Their bytes stop counting now. */
    if (d->kind == ZFI_KIND_SMALL && d->cap <= 4096 &&
        !atomic_load_explicit(&slots[slot].orphaned, memory_order_relaxed)) {
        pthread_mutex_lock(&p->q_mu);
        zf_data *evicted = p->q_ring[p->q_next];
        p->q_ring[p->q_next] = d;
        p->q_next = (p->q_next + 1) % ZFI_ARRAY_LEN(p->q_ring);
        pthread_mutex_unlock(&p->q_mu);
        if (evicted)
            zfi_mag_recycle(p, r, evicted);
    } else {
        zfi_mag_recycle(p, r, d);
    }
#else
    zfi_mag_recycle(p, r, d);
#endif
    if (ZFI_UNLIKELY(!r)) {
        /* No record (out of memory): count the free against the pool under
         * the table lock. */
        pthread_mutex_lock(&zfi_pool_table_mu);
        p->gone_frees++;
        p->gone_bytes_freed += block;
        atomic_fetch_sub_explicit(&p->reserved, block, memory_order_relaxed);
        pthread_mutex_unlock(&zfi_pool_table_mu);
    } else {
        unreserve(p, r, block);
        bump(&r->bytes_freed, block);
        bump_release(&r->frees, 1);
    }
    /* From here on the pool may be gone (if orphaned): only the table. */
    if (ZFI_UNLIKELY(atomic_load_explicit(&zfi_pool_free_fence, memory_order_relaxed)))
        atomic_thread_fence(memory_order_seq_cst);
    else
        atomic_signal_fence(memory_order_seq_cst);
    if (ZFI_UNLIKELY(atomic_load_explicit(&slots[slot].orphaned, memory_order_relaxed)))
        try_teardown(slot, gen);
}

void zfi_pool_note_shared_write(zf_data *d)
{
    zf_pool *p = owner_pool(d);
    atomic_fetch_add_explicit(&p->shared_writes, 1, memory_order_relaxed);
    atomic_store_explicit(&p->shared_write_owner,
                          atomic_load_explicit(&d->owner, memory_order_relaxed),
                          memory_order_relaxed);
}

uint64_t zfi_pool_shared_writes(const zf_pool *cp, uint32_t *last_owner)
{
    zf_pool *p = (zf_pool *)cp;
    if (last_owner)
        *last_owner = atomic_load_explicit(&p->shared_write_owner, memory_order_relaxed);
    return atomic_load_explicit(&p->shared_writes, memory_order_relaxed);
}

size_t zfi_pool_live_count(void)
{
    size_t n = 0;
    pthread_mutex_lock(&zfi_pool_table_mu);
    for (unsigned i = 1; i < MAX_POOLS; i++)
        n += atomic_load_explicit(&slots[i].pool, memory_order_relaxed) != NULL;
    pthread_mutex_unlock(&zfi_pool_table_mu);
    return n;
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
    for (uint32_t id = 0; id < atomic_load_explicit(&p->n_large, memory_order_relaxed); id++) {
        zfi_large_ent *e = zfi_large_at(p, id, false);
        const zf_data *d = (const zf_data *)atomic_load_explicit(&e->base, memory_order_acquire);
        if (d &&
            atomic_load_explicit(&((zf_data *)d)->magic, memory_order_acquire) == ZFI_MAGIC_LIVE)
            cb(arg, d, e->size);
    }
    pthread_mutex_unlock(&p->large_mu);
}

/* ---- handles ---- */

zfi_handle zfi_handle_of_slow(const zf_data *d)
{
    if (d->kind == ZFI_KIND_SMALL)
        return zfi_handle_of(d);
    if (d->kind == ZFI_KIND_LARGE)
        return (zfi_handle)d->pool_slot << ZFI_HANDLE_SLOT_SHIFT | ZFI_HANDLE_LARGE |
               ((uint64_t)d->seg + 1);
    return ZFI_HANDLE_LOCAL | (uint64_t)(uintptr_t)d;
}

zf_data *zfi_handle_data_slow(zfi_handle h)
{
    if (h & ZFI_HANDLE_LOCAL)
        return (zf_data *)(uintptr_t)(h & ~ZFI_HANDLE_LOCAL);
    if (!(h & ZFI_HANDLE_LARGE))
        return zfi_handle_data(h);
    uint32_t slot = (uint32_t)(h >> ZFI_HANDLE_SLOT_SHIFT);
    uint64_t id = (h & (ZFI_HANDLE_LARGE - 1)) - 1;
    zf_pool *p =
        slot < MAX_POOLS ? atomic_load_explicit(&slots[slot].pool, memory_order_acquire) : NULL;
    if (!p || id + 1 == 0)
        return NULL;
    zfi_large_ent *e = id < atomic_load_explicit(&p->n_large, memory_order_acquire)
                           ? zfi_large_at(p, (uint32_t)id, false)
                           : NULL;
    return e ? (zf_data *)atomic_load_explicit(&e->base, memory_order_acquire) : NULL;
}

/* ---- the debug quarantine, per pool ---- */

void zfi_pool_quarantine_flush(zf_pool *p)
{
#ifdef ZF_DEBUG_POISON
    if (!p)
        return;
    zfi_trec *r = rec_get(p);
    pthread_mutex_lock(&p->q_mu);
    for (size_t i = 0; i < ZFI_ARRAY_LEN(p->q_ring); i++)
        if (p->q_ring[i]) {
            zfi_mag_recycle(p, r, p->q_ring[i]);
            p->q_ring[i] = NULL;
        }
    pthread_mutex_unlock(&p->q_mu);
#else
    ZFI_UNUSED(p);
#endif
}

/* ---- sharing with a node host ---- */

int zfi_pool_small_segment(zf_pool *p, size_t index, size_t *offset, size_t *size)
{
    int fd = -1;
    pthread_mutex_lock(&p->grow_mu);
    if (index < p->n_segs) {
        size_t off = 0;
        struct stat st;
        for (size_t i = 0; i <= index; i++) {
            if (fstat(p->seg_fds[i], &st) != 0)
                break;
            if (i == index) {
                *offset = off;
                *size = (size_t)st.st_size;
                fd = fcntl(p->seg_fds[i], F_DUPFD_CLOEXEC, 0);
            }
            off += (size_t)st.st_size;
        }
    }
    pthread_mutex_unlock(&p->grow_mu);
    return fd;
}

unsigned zfi_pool_slot_of(const zf_pool *p)
{
    return p->slot;
}
