/* The threads' magazines (Bonwick): every thread keeps, per pool and size
 * class, two magazines of free block indices, allocates from and frees into
 * them, and meets the pool's depot (lock-free stacks of full and of empty
 * magazines) once per magazine. Its allocations, frees and bytes are
 * counted in its own record (one writer each), summed when read; max_bytes
 * is enforced through reservations a thread takes a step at a time. See
 * pool.c for the whole design. */
#include "core/pool_impl.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A new empty magazine; NULL when out of memory. grow_mu held. */
static zfi_mag *mag_new_locked(zf_pool *p)
{
    uint32_t id = p->n_mags;
    if (id >= MAGS_PER_DIR * MAG_DIRS)
        return NULL;
    if (id % MAGS_PER_DIR == 0) {
        zfi_mag *dir = zfi_calloc(MAGS_PER_DIR, sizeof *dir);
        if (!dir)
            return NULL;
        atomic_store_explicit(&p->mag_dir[id / MAGS_PER_DIR], dir, memory_order_release);
    }
    p->n_mags++;
    zfi_mag *m = mag_at(p, id);
    m->id = id;
    m->count = 0;
    return m;
}

/* An empty magazine of the depot, or a new one; NULL when out of memory. */
static zfi_mag *mag_empty(zf_pool *p, unsigned c)
{
    uint32_t id = stack_pop(p, &p->depot[c].empty, mag_link);
    if (id != UINT32_MAX)
        return mag_at(p, id);
    pthread_mutex_lock(&p->grow_mu);
    zfi_mag *m = mag_new_locked(p);
    pthread_mutex_unlock(&p->grow_mu);
    return m;
}

ZFI_TLS zfi_tcache *zfi_tls_tc;
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

/* Thread exit: every record goes back to its pool (if alive). */
static void tc_destroy(void *arg)
{
    zfi_tcache *tc = arg;
    pthread_mutex_lock(&zfi_pool_table_mu);
    for (size_t i = 0; i <= tc->mask; i++) {
        zfi_trec *r = tc->tab[i];
        if (!r)
            continue;
        if (atomic_load_explicit(&slots[r->slot].gen, memory_order_relaxed) == r->gen &&
            atomic_load_explicit(&slots[r->slot].pool, memory_order_relaxed) == r->pool) {
            zf_pool *p = r->pool;
            zfi_rec_flush_locked(r);
            if (atomic_load_explicit(&slots[r->slot].orphaned, memory_order_relaxed) &&
                zfi_pool_live_locked(p, NULL) == 0)
                zfi_pool_free_locked(p);
        }
        free(r);
    }
    pthread_mutex_unlock(&zfi_pool_table_mu);
    free(tc->tab);
    free(tc);
    if (zfi_tls_tc == tc)
        zfi_tls_tc = NULL;
}

static void tc_key_init(void)
{
    pthread_key_create(&tc_key, tc_destroy);
}

/* The record's magazines and reservation back to its pool; its counters
 * into the pool's; unlinked. zfi_pool_table_mu held, the pool alive. */
void zfi_rec_flush_locked(zfi_trec *r)
{
    zf_pool *p = r->pool;
    for (unsigned c = 0; c < NCLASS; c++) {
        zfi_mag *ms[2] = {r->loaded[c], r->prev[c]};
        for (int k = 0; k < 2; k++) {
            if (!ms[k])
                continue;
            stack_push(p, ms[k]->count ? &p->depot[c].full : &p->depot[c].empty, ms[k]->id,
                       mag_link);
        }
        r->loaded[c] = r->prev[c] = NULL;
    }
    if (r->res)
        atomic_fetch_sub_explicit(&p->reserved, r->res, memory_order_relaxed);
    r->res = 0;
    p->gone_allocs += ld(&r->allocs);
    p->gone_frees += ld(&r->frees);
    p->gone_bytes_alloc += ld(&r->bytes_alloc);
    p->gone_bytes_freed += ld(&r->bytes_freed);
    if (r->pprev)
        r->pprev->pnext = r->pnext;
    else
        p->recs = r->pnext;
    if (r->pnext)
        r->pnext->pprev = r->pprev;
}

static bool tc_insert(zfi_tcache *tc, zfi_trec *r);

/* Remove entry i, re-inserting the rest of its cluster so that probing
 * stays correct (re-inserting never grows the table). */
void zfi_tc_drop(zfi_tcache *tc, size_t i)
{
    tc->tab[i] = NULL;
    for (size_t j = (i + 1) & tc->mask; tc->tab[j]; j = (j + 1) & tc->mask) {
        zfi_trec *m = tc->tab[j];
        tc->tab[j] = NULL;
        size_t k = m->slot & tc->mask;
        while (tc->tab[k])
            k = (k + 1) & tc->mask;
        tc->tab[k] = m;
    }
}

/* The calling thread's record for p, created on first use; NULL when out
 * of memory. */
zfi_trec *zfi_rec_slow(zf_pool *p)
{
    pthread_once(&tc_once, tc_key_init);
    zfi_tcache *tc = zfi_tls_tc;
    if (!tc) {
        tc = zfi_calloc(1, sizeof *tc);
        if (!tc)
            return NULL;
        tc->mask = 7;
        tc->tab = zfi_calloc(tc->mask + 1, sizeof *tc->tab);
        if (!tc->tab) {
            free(tc);
            return NULL;
        }
        zfi_tls_tc = tc;
        pthread_setspecific(tc_key, tc);
    }
    /* A record of a dead pool that had the same slot goes (its pool took
     * its magazines and counters with it). */
    for (size_t i = p->slot & tc->mask;; i = (i + 1) & tc->mask) {
        zfi_trec *r = tc->tab[i];
        if (!r)
            break;
        if (r->slot != p->slot)
            continue;
        if (r->pool == p && r->gen == p->gen)
            return r;
        /* a dead pool's: nothing links it any more */
        zfi_tc_drop(tc, i);
        free(r);
        break;
    }
    zfi_trec *r = zfi_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->pool = p;
    r->slot = p->slot;
    r->gen = p->gen;
    if (!tc_insert(tc, r)) {
        free(r);
        return NULL;
    }
    pthread_mutex_lock(&zfi_pool_table_mu);
    r->pnext = p->recs;
    if (p->recs)
        p->recs->pprev = r;
    p->recs = r;
    pthread_mutex_unlock(&zfi_pool_table_mu);
    return r;
}

static bool tc_insert(zfi_tcache *tc, zfi_trec *r)
{
    size_t used = 0;
    for (size_t i = 0; i <= tc->mask; i++)
        used += tc->tab[i] != NULL;
    if ((used + 1) * 2 > tc->mask + 1) {
        size_t nmask = tc->mask * 2 + 1;
        zfi_trec **nt = zfi_calloc(nmask + 1, sizeof *nt);
        if (!nt)
            return false;
        for (size_t i = 0; i <= tc->mask; i++) {
            zfi_trec *m = tc->tab[i];
            if (!m)
                continue;
            size_t j = m->slot & nmask;
            while (nt[j])
                j = (j + 1) & nmask;
            nt[j] = m;
        }
        free(tc->tab);
        tc->tab = nt;
        tc->mask = nmask;
    }
    size_t j = r->slot & tc->mask;
    while (tc->tab[j])
        j = (j + 1) & tc->mask;
    tc->tab[j] = r;
    return true;
}

/* ---- reservations (max_bytes and the high water) ---- */

static void note_high_water(zf_pool *p, uint64_t now)
{
    uint64_t hw = ld(&p->high_water);
    while (now > hw && !atomic_compare_exchange_weak_explicit(
                           &p->high_water, &hw, now, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Take n more bytes from the pool's reservation; false when that would
 * pass max_bytes. */
bool zfi_pool_take(zf_pool *p, uint64_t n)
{
    uint64_t cur = ld(&p->reserved);
    for (;;) {
        if (p->max_bytes && cur + n > p->max_bytes)
            return false;
        if (atomic_compare_exchange_weak_explicit(&p->reserved, &cur, cur + n, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    note_high_water(p, cur + n);
    return true;
}

/* ---- small blocks ---- */

/* Fill r->loaded[c] (empty or NULL): from prev, the depot, or fresh blocks.
 * Returns false (error set) when no block can be had. */
bool zfi_mag_refill(zf_pool *p, zfi_trec *r, unsigned c)
{
    zfi_mag *m = r->loaded[c];
    if (r->prev[c] && r->prev[c]->count) {
        r->loaded[c] = r->prev[c];
        r->prev[c] = m;
        return true;
    }
    uint32_t id = stack_pop(p, &p->depot[c].full, mag_link);
    if (id != UINT32_MAX) {
        if (m) {
            if (!r->prev[c])
                r->prev[c] = m;
            else
                stack_push(p, &p->depot[c].empty, m->id, mag_link);
        }
        r->loaded[c] = mag_at(p, id);
        return true;
    }
    uint32_t loose = stack_pop(p, &p->depot[c].loose, block_link);
    pthread_mutex_lock(&p->grow_mu);
    if (!m)
        m = r->loaded[c] = mag_new_locked(p);
    if (!m) {
        pthread_mutex_unlock(&p->grow_mu);
        if (loose != UINT32_MAX)
            stack_push(p, &p->depot[c].loose, loose, block_link);
        zfi_error(ZF_ENOMEM, "pool %s: out of memory for a magazine", p->name);
        return false;
    }
    if (loose != UINT32_MAX) {
        m->blk[m->count++] = loose;
        pthread_mutex_unlock(&p->grow_mu);
        return true;
    }
    size_t bs = class_block(c);
    if (p->arena_used + bs > p->arena_mapped && zfi_pool_arena_grow(p, bs) != ZF_OK) {
        pthread_mutex_unlock(&p->grow_mu);
        return false;
    }
    size_t n = (p->arena_mapped - p->arena_used) / bs;
    size_t want = CARVE_BYTES / bs ? CARVE_BYTES / bs : 1;
    if (want > mag_cap(c))
        want = mag_cap(c);
    if (n > want)
        n = want;
    if (!zfi_grow((void **)&p->carves, &p->carves_cap, p->n_carves + 1, sizeof *p->carves)) {
        pthread_mutex_unlock(&p->grow_mu);
        zfi_error(ZF_ENOMEM, "pool %s: out of memory", p->name);
        return false;
    }
    p->carves[p->n_carves++] = (struct carve){p->arena_used, bs, n};
    char *base = p->arena + p->arena_used;
    p->arena_used += n * bs;
    for (size_t i = n; i-- > 0;) { /* the lowest address first out */
        zf_data *b = (zf_data *)(base + i * bs);
        atomic_store_explicit(&b->magic, 0, memory_order_relaxed);
        m->blk[m->count++] = block_index(p, b);
    }
    pthread_mutex_unlock(&p->grow_mu);
    return true;
}

/* Make room in r->loaded[c] (full or NULL) for one more block. Returns
 * false when no magazine can be had (out of memory): the caller frees the
 * block onto the loose stack. */
bool zfi_mag_spill(zf_pool *p, zfi_trec *r, unsigned c)
{
    zfi_mag *m = r->loaded[c], *pv = r->prev[c];
    if (m && pv && pv->count == 0) {
        r->prev[c] = m;
        r->loaded[c] = pv;
        return true;
    }
    zfi_mag *e = mag_empty(p, c);
    if (!e)
        return false;
    if (m) {
        if (pv) /* full, or partly: the allocating side takes any count */
            stack_push(p, &p->depot[c].full, pv->id, mag_link);
        r->prev[c] = m;
    }
    r->loaded[c] = e;
    return true;
}

/* A freed block back into the calling thread's magazine (or the loose
 * stack), a large one to its segment table. No accounting. */
void zfi_mag_recycle(zf_pool *p, zfi_trec *r, zf_data *d)
{
    if (d->kind != ZFI_KIND_SMALL) {
        zfi_large_free(p, d);
        return;
    }
    unsigned c = d->cls;
    uint32_t idx = block_index(p, d);
    zfi_mag *m = r ? r->loaded[c] : NULL;
    if (ZFI_UNLIKELY(!m || m->count == mag_cap(c)))
        m = r && zfi_mag_spill(p, r, c) ? r->loaded[c] : NULL;
    if (ZFI_LIKELY(m))
        m->blk[m->count++] = idx;
    else
        stack_push(p, &p->depot[c].loose, idx, block_link);
}
