/* Large blocks (over 1 MiB): a memfd segment each, in discrete sizes
 * (2^l x (8 + k) / 8), recycled through a lock-free stack per size; only
 * mapping a new segment, and unmapping cached ones to make room, take the
 * pool's large_mu. The entries live in a directory that never moves, so a
 * stack's links are read without a lock while segments come and go. */
#include "core/pool_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- large blocks: a segment each, recycled ----
 *
 * A freed segment goes into the pool's hot word, or (taken) on a lock-free
 * stack of its size; an allocation of that size takes one, the hot word
 * first. Only mapping a new segment (and unmapping cached ones
 * to make room) takes large_mu. */

/* A directory: LARGE_PER_DIR entries, then their free-stack links, the
 * links starting on a line of their own. */
#define LARGE_LINKS_AT                                                                             \
    ((LARGE_PER_DIR * sizeof(zfi_large_ent) + ZFI_CACHELINE - 1) / ZFI_CACHELINE * ZFI_CACHELINE)
#define LARGE_DIR_BYTES                                                                            \
    ((LARGE_LINKS_AT + LARGE_PER_DIR * sizeof(_Atomic uint32_t) + ZFI_CACHELINE - 1) /             \
     ZFI_CACHELINE * ZFI_CACHELINE)

zfi_large_ent *zfi_large_at(zf_pool *p, uint32_t id, bool create)
{
    if (id >= LARGE_PER_DIR * LARGE_DIRS)
        return NULL;
    zfi_large_ent *dir =
        atomic_load_explicit(&p->large_dir[id / LARGE_PER_DIR], memory_order_acquire);
    if (!dir && create) { /* large_mu held */
        dir = aligned_alloc(ZFI_CACHELINE, LARGE_DIR_BYTES);
        if (!dir)
            return NULL;
        memset(dir, 0, LARGE_DIR_BYTES);
        for (size_t i = 0; i < LARGE_PER_DIR; i++)
            dir[i].fd = -1;
        atomic_store_explicit(&p->large_dir[id / LARGE_PER_DIR], dir, memory_order_release);
    }
    return dir ? &dir[id % LARGE_PER_DIR] : NULL;
}

/* The free-stack link of segment id (its directory exists: the id was
 * handed out). */
static _Atomic uint32_t *large_link(zf_pool *p, uint32_t id)
{
    char *dir =
        (char *)atomic_load_explicit(&p->large_dir[id / LARGE_PER_DIR], memory_order_acquire);
    return (_Atomic uint32_t *)(dir + LARGE_LINKS_AT) + id % LARGE_PER_DIR;
}

static unsigned large_bucket(size_t size)
{
    unsigned l = 63u - (unsigned)__builtin_clzll((unsigned long long)size);
    size_t pow = (size_t)1 << l;
    return (l - 20) * 8 + (unsigned)((size - pow) / (pow / 8));
}

size_t zfi_large_size(size_t len)
{
    size_t need = round_up(len + ZFI_HDR_SIZE, page_size());
    size_t pow = (size_t)1 << (63 - __builtin_clzll((unsigned long long)need));
    size_t step = pow / 8 > page_size() ? pow / 8 : page_size();
    return round_up(need, step);
}

/* large_mu held; the segment is free and off every stack. */
void zfi_large_unmap(zf_pool *p, zfi_large_ent *e)
{
    char *base = atomic_load_explicit(&e->base, memory_order_relaxed);
    atomic_store_explicit(&e->base, NULL, memory_order_release);
    munmap(base, e->size);
    close(e->fd);
    atomic_fetch_sub_explicit(&p->bytes_mapped, e->size, memory_order_relaxed);
    atomic_fetch_sub_explicit(&p->segments, 1, memory_order_relaxed);
    e->fd = -1;
    e->size = 0;
}

/* A free segment of bucket b (the hot word if it holds one, then the
 * bucket's stack), or
 * UINT32_MAX. acquire: what its last holder wrote, before it freed it,
 * happens before what the new one writes. */
static uint32_t large_take(zf_pool *p, unsigned b)
{
    uint64_t x = atomic_load_explicit(&p->large_hot, memory_order_relaxed);
    if (x && (unsigned)(x >> 32) == b &&
        atomic_compare_exchange_strong_explicit(&p->large_hot, &x, 0, memory_order_acquire,
                                                memory_order_relaxed))
        return (uint32_t)x - 1;
    return stack_pop(p, &p->zfi_large_free[b], large_link);
}

/* Unmap cached segments (other sizes first) until mapping `incoming` more
 * bytes keeps the pool within its cap and the cache within what the pool
 * has ever had in use (at least LARGE_CACHE_MIN). large_mu held. */
static void large_evict(zf_pool *p, size_t incoming, unsigned keep_bucket)
{
    uint64_t keep = ld(&p->high_water) > LARGE_CACHE_MIN ? ld(&p->high_water) : LARGE_CACHE_MIN;
    for (unsigned pass = 0; pass < 2; pass++)
        for (unsigned b = 0; b < LARGE_BUCKETS; b++) {
            if ((pass == 0) == (b == keep_bucket))
                continue;
            for (;;) {
                uint64_t mapped = atomic_load_explicit(&p->bytes_mapped, memory_order_relaxed);
                uint64_t used = ld(&p->reserved);
                bool over_cap = p->max_bytes && mapped + incoming > p->max_bytes + p->seg_bytes * 2;
                bool over_cache = mapped > used && mapped - used + incoming > keep;
                if (!over_cap && !over_cache)
                    return;
                uint32_t id = large_take(p, b);
                if (id == UINT32_MAX)
                    break;
                zfi_large_unmap(p, zfi_large_at(p, id, false));
            }
        }
}

/* Map a new segment of `size` bytes. */
static zf_err large_new(zf_pool *p, size_t size, zf_data **out)
{
    zf_err err = ZF_OK;
    pthread_mutex_lock(&p->large_mu);
    large_evict(p, size, large_bucket(size));
    uint32_t id = 0, n = atomic_load_explicit(&p->n_large, memory_order_relaxed);
    zfi_large_ent *e = NULL;
    for (; id < n; id++) { /* a hole left by an unmapped segment */
        e = zfi_large_at(p, id, false);
        if (!atomic_load_explicit(&e->base, memory_order_relaxed) && e->fd < 0)
            break;
    }
    if (id == n) {
        e = zfi_large_at(p, id, true);
        if (!e) {
            err = zfi_error(ZF_ENOMEM, "pool %s: more than %u large segments (or out of memory)",
                            p->name, LARGE_PER_DIR * LARGE_DIRS);
            goto out;
        }
    }
    int fd = zfi_pool_memfd(p, 'l', id, size);
    if (fd < 0) {
        err = zfi_error(ZF_ESYS, "pool %s: memfd_create/ftruncate of %zu bytes: %s", p->name, size,
                        strerror(errno));
        goto out;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
        int e2 = errno;
        close(fd);
        err = zfi_error(e2 == ENOMEM ? ZF_ENOMEM : ZF_ESYS, "pool %s: mmap of %zu bytes: %s",
                        p->name, size, strerror(e2));
        goto out;
    }
    e->fd = fd;
    e->size = size;
    atomic_store_explicit(&e->base, (char *)base, memory_order_release);
    if (id == n)
        atomic_store_explicit(&p->n_large, n + 1, memory_order_release);
    atomic_fetch_add_explicit(&p->bytes_mapped, size, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->segments, 1, memory_order_relaxed);
    zfi_log(ZF_LOG_DEBUG, "pool", "%s: mapped large segment %u (%zu KiB)", p->name, id, size >> 10);
    zf_data *d = (zf_data *)base;
    d->seg = id;
    d->cap = size - ZFI_HDR_SIZE;
    *out = d;
out:
    pthread_mutex_unlock(&p->large_mu);
    return err;
}

/* A free segment of this size, or of the next sizes up to a quarter
 * larger; else a new one. */
zf_err zfi_large_alloc(zf_pool *p, size_t size, zf_data **out)
{
    unsigned b = large_bucket(size);
    uint32_t id = UINT32_MAX;
    for (unsigned k = 0; k < 3 && id == UINT32_MAX && b + k < LARGE_BUCKETS; k++) {
        unsigned l = (b + k) / 8 + 20;
        size_t bsize = ((size_t)1 << l) / 8 * (8 + (b + k) % 8);
        if (bsize > size + size / 4)
            break;
        id = large_take(p, b + k);
    }
    if (id == UINT32_MAX)
        return large_new(p, size, out);
    zfi_large_ent *e = zfi_large_at(p, id, false);
    zf_data *d = (zf_data *)atomic_load_explicit(&e->base, memory_order_acquire);
    zfi_prefetch_w(d);
    d->seg = id;
    /* The bytes reserved, not the segment's: a reused segment may be up to a
     * quarter larger, and freeing must give back exactly what was taken. */
    d->cap = size - ZFI_HDR_SIZE;
    *out = d;
    return ZF_OK;
}

/* Into the pool's hot word if that is empty (release: pairs with
 * large_take), else onto its size's stack. */
void zfi_large_free(zf_pool *p, zf_data *d)
{
    unsigned b = large_bucket(zfi_large_at(p, d->seg, false)->size);
    uint64_t none = 0;
    if (!atomic_compare_exchange_strong_explicit(&p->large_hot, &none,
                                                 (uint64_t)b << 32 | (d->seg + 1u),
                                                 memory_order_release, memory_order_relaxed))
        stack_push(p, &p->zfi_large_free[b], d->seg, large_link);
}

/* ---- sharing with a node host ---- */

int zfi_pool_large_segment(zf_pool *p, uint32_t id, size_t *size, const void **base)
{
    int fd = -1;
    pthread_mutex_lock(&p->large_mu);
    zfi_large_ent *e = id < atomic_load_explicit(&p->n_large, memory_order_acquire)
                           ? zfi_large_at(p, id, false)
                           : NULL;
    if (e && atomic_load_explicit(&e->base, memory_order_relaxed) && e->fd >= 0) {
        *size = e->size;
        *base = atomic_load_explicit(&e->base, memory_order_relaxed);
        fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
    }
    pthread_mutex_unlock(&p->large_mu);
    return fd;
}

const void *zfi_pool_large_base(zf_pool *p, uint32_t id)
{
    zfi_large_ent *e = id < atomic_load_explicit(&p->n_large, memory_order_acquire)
                           ? zfi_large_at(p, id, false)
                           : NULL;
    return e ? atomic_load_explicit(&e->base, memory_order_acquire) : NULL;
}
