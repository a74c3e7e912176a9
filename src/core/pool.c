/* The shared-memory pool.
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
#include "core/capsule.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NCLASS          14u           /* blocks of 128 B .. 1 MiB */
#define MIN_BLOCK_SHIFT 7u            /* 128 B = 64 B header + 64 B payload */
#define SMALL_MAX_BLOCK (1u << 20)    /* larger blocks get their own segment */
#define CARVE_BYTES     (64u * 1024u) /* blocks carved per refill, at most */
#define MAX_POOLS       ZFI_MAX_POOLS
#define DEFAULT_SEGMENT (256u << 10) /* doubling to MAX_SEGMENT */
#define MAX_SEGMENT     (64u << 20)
#define DEFAULT_RESERVE (8ull << 30) /* address space, not memory */
#define LARGE_CACHE_MIN (256ull << 20)

#define MAG_MAX       32u           /* blocks per magazine, small classes */
#define MAG_BYTES     (512u * 1024) /* and at most this much memory */
#define MAGS_PER_DIR  256u
#define MAG_DIRS      1024u
#define LARGE_PER_DIR 256u
#define LARGE_DIRS    256u
#define RES_CHUNK     (256u * 1024u)

_Static_assert(MAX_POOLS <= (1u << ZFI_HANDLE_SLOT_BITS), "pool slots fit a handle");

/* A magazine: free block indices of one class, used as a stack. */
typedef struct mag {
    uint32_t id;
    uint32_t count;
    _Atomic uint32_t next; /* in a depot stack: next magazine id + 1 */
    uint32_t blk[MAG_MAX];
} mag;

/* One thread's cache of one pool: its magazines, its accounting. */
typedef struct trec {
    zf_pool *pool;
    uint32_t slot, gen;
    struct trec *pnext, *pprev; /* in pool->recs (table_mu) */
    mag *loaded[NCLASS], *prev[NCLASS];
    uint64_t res; /* bytes reserved and not spent: this thread's slack */
    /* Written by the owning thread alone (load + store), read by stats. */
    _Atomic uint64_t allocs, frees, bytes_alloc, bytes_freed;
} trec;

/* A large segment, by id, in a directory that never moves (so the free
 * stacks' links can be read without a lock while segments come and go). */
typedef struct large_ent {
    _Atomic(char *) base;    /* NULL: no segment under this id */
    _Atomic uint32_t next;   /* in its bucket's free stack: next id + 1 */
    _Atomic uint32_t in_use; /* 1 while a capsule lives in it */
    size_t size;             /* set (large_mu) before base is published */
    int fd;
} large_ent;

/* Large segments come in discrete sizes (large_size): 2^l x (8 + k) / 8. */
#define LARGE_BUCKETS ((47 - 20) * 8)

struct zf_pool {
    /* Read-mostly: read by every allocation and handle lookup. */
    char *arena;
    uint64_t max_bytes;
    uint64_t chunk; /* reservation step */
    uint32_t gen;
    uint16_t slot;
    _Atomic(large_ent *) large_dir[LARGE_DIRS]; /* segment id -> its entry */

    struct {
        _Alignas(ZFI_CACHELINE) _Atomic uint64_t full; /* tag << 32 | (id + 1) */
        _Atomic uint64_t empty;
        _Atomic uint64_t loose; /* single free blocks (when no magazine could be had) */
    } depot[NCLASS];

    _Alignas(ZFI_CACHELINE) _Atomic uint64_t reserved;
    _Atomic uint64_t high_water;
    _Alignas(ZFI_CACHELINE) atomic_uint_fast64_t failures;
    atomic_uint_fast64_t shared_writes; /* ZF_CHECK_SHARED findings */
    _Atomic uint32_t shared_write_owner;
    atomic_uint_fast64_t bytes_mapped;
    atomic_uint_fast64_t segments;

    uint64_t seg_bytes;
    char name[40];

    size_t arena_reserved;
    pthread_mutex_t grow_mu; /* arena growth, carving, new magazines */
    size_t arena_mapped;
    size_t arena_used;
    int *seg_fds;
    size_t n_segs, segs_cap;
    struct carve {
        size_t off, block, count;
    } * carves; /* every run of blocks carved, for zfi_pool_walk */
    size_t n_carves, carves_cap;
    _Atomic(mag *) mag_dir[MAG_DIRS];
    uint32_t n_mags;

    pthread_mutex_t large_mu; /* creating and unmapping large segments */
    _Atomic uint32_t n_large; /* ids handed out */
    /* free segments of each size: tag << 32 | (id + 1) */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t large_free[LARGE_BUCKETS];

    /* table_mu: the threads' records, and what exited threads counted. */
    trec *recs;
    uint64_t gone_allocs, gone_frees, gone_bytes_alloc, gone_bytes_freed;

#ifdef ZF_DEBUG_POISON
    pthread_mutex_t q_mu; /* this pool's quarantine of freed capsules */
    zf_data *q_ring[1024];
    size_t q_next;
#endif
};

/* The pool table (core/capsule.h). */
zfi_pool_slot zfi_pool_slots[ZFI_MAX_POOLS];
#define slots zfi_pool_slots
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_gen = 1; /* table_mu */

/* ---- helpers ---- */

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
    if (block <= (1u << MIN_BLOCK_SHIFT))
        return 0;
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(block - 1))) - MIN_BLOCK_SHIFT;
}

static size_t class_block(unsigned c)
{
    return (size_t)1 << (MIN_BLOCK_SHIFT + c);
}

/* Blocks per magazine, by class: MAG_MAX, or what fits in MAG_BYTES. */
static const uint8_t mag_caps[NCLASS] = {32, 32, 32, 32, 32, 32, 32, 32, 16, 8, 4, 2, 1, 1};
_Static_assert(MAG_BYTES / (1u << (MIN_BLOCK_SHIFT + 8)) == 16 &&
                   MAG_BYTES / (1u << (MIN_BLOCK_SHIFT + 12)) == 1,
               "mag_caps matches MAG_BYTES");

static inline uint32_t mag_cap(unsigned c)
{
    return mag_caps[c];
}

static inline uint64_t ld(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* A counter with one writer: no locked read-modify-write. */
static inline void bump(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, ld(c) + v, memory_order_relaxed);
}

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
 * membarrier, freeing threads fence themselves (free_fence). */
static bool process_barrier(void)
{
    if (barrier_cmd > 0 && syscall(SYS_membarrier, barrier_cmd, 0) == 0)
        return true;
    atomic_thread_fence(memory_order_seq_cst);
    return false;
}

static _Atomic bool free_fence; /* set when membarrier is missing */

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

/* ---- lock-free stacks of 32-bit ids (ABA-safe: a tag beside the id) ---- */

static _Atomic uint32_t *mag_link(zf_pool *p, uint32_t id);
static _Atomic uint32_t *block_link(zf_pool *p, uint32_t id);

/* Pop: the id, or UINT32_MAX when empty. Reading the link of an entry that
 * another thread popped meanwhile is harmless: the memory stays mapped and
 * the tag makes the compare-and-swap fail. */
static uint32_t stack_pop(zf_pool *p, _Atomic uint64_t *head,
                          _Atomic uint32_t *(*link)(zf_pool *, uint32_t))
{
    uint64_t old = atomic_load_explicit(head, memory_order_acquire);
    for (;;) {
        uint32_t top = (uint32_t)old;
        if (!top)
            return UINT32_MAX;
        uint32_t next = atomic_load_explicit(link(p, top - 1), memory_order_relaxed);
        uint64_t nw = (((old >> 32) + 1) << 32) | next;
        if (atomic_compare_exchange_weak_explicit(head, &old, nw, memory_order_acquire,
                                                  memory_order_acquire))
            return top - 1;
    }
}

static void stack_push(zf_pool *p, _Atomic uint64_t *head, uint32_t id,
                       _Atomic uint32_t *(*link)(zf_pool *, uint32_t))
{
    _Atomic uint32_t *l = link(p, id);
    uint64_t old = atomic_load_explicit(head, memory_order_relaxed);
    uint64_t nw;
    do {
        atomic_store_explicit(l, (uint32_t)old, memory_order_relaxed);
        nw = (((old >> 32) + 1) << 32) | (id + 1);
    } while (!atomic_compare_exchange_weak_explicit(head, &old, nw, memory_order_release,
                                                    memory_order_relaxed));
}

static mag *mag_at(zf_pool *p, uint32_t id)
{
    mag *dir = atomic_load_explicit(&p->mag_dir[id / MAGS_PER_DIR], memory_order_acquire);
    return &dir[id % MAGS_PER_DIR];
}

static _Atomic uint32_t *mag_link(zf_pool *p, uint32_t id)
{
    return &mag_at(p, id)->next;
}

static zf_data *block_at(const zf_pool *p, uint32_t idx)
{
    return (zf_data *)(p->arena + (uint64_t)idx * ZFI_HDR_SIZE);
}

static _Atomic uint32_t *block_link(zf_pool *p, uint32_t idx)
{
    return &block_at(p, idx)->next;
}

static uint32_t block_index(const zf_pool *p, const zf_data *d)
{
    return (uint32_t)(((const char *)d - p->arena) / ZFI_HDR_SIZE);
}

/* A new empty magazine; NULL when out of memory. grow_mu held. */
static mag *mag_new_locked(zf_pool *p)
{
    uint32_t id = p->n_mags;
    if (id >= MAGS_PER_DIR * MAG_DIRS)
        return NULL;
    if (id % MAGS_PER_DIR == 0) {
        mag *dir = zfi_calloc(MAGS_PER_DIR, sizeof *dir);
        if (!dir)
            return NULL;
        atomic_store_explicit(&p->mag_dir[id / MAGS_PER_DIR], dir, memory_order_release);
    }
    p->n_mags++;
    mag *m = mag_at(p, id);
    m->id = id;
    m->count = 0;
    return m;
}

/* An empty magazine of the depot, or a new one; NULL when out of memory. */
static mag *mag_empty(zf_pool *p, unsigned c)
{
    uint32_t id = stack_pop(p, &p->depot[c].empty, mag_link);
    if (id != UINT32_MAX)
        return mag_at(p, id);
    pthread_mutex_lock(&p->grow_mu);
    mag *m = mag_new_locked(p);
    pthread_mutex_unlock(&p->grow_mu);
    return m;
}

/* ---- threads' records ---- */

typedef struct tcache {
    size_t mask;
    trec **tab; /* open addressing by pool slot */
} tcache;

static ZFI_TLS tcache *tls_tc;
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

static void rec_flush_locked(trec *r);
static uint64_t live_locked(const zf_pool *p, zf_pool_stats *s);
static void pool_free_locked(zf_pool *p);

/* Thread exit: every record goes back to its pool (if alive). */
static void tc_destroy(void *arg)
{
    tcache *tc = arg;
    pthread_mutex_lock(&table_mu);
    for (size_t i = 0; i <= tc->mask; i++) {
        trec *r = tc->tab[i];
        if (!r)
            continue;
        if (atomic_load_explicit(&slots[r->slot].gen, memory_order_relaxed) == r->gen &&
            atomic_load_explicit(&slots[r->slot].pool, memory_order_relaxed) == r->pool) {
            zf_pool *p = r->pool;
            rec_flush_locked(r);
            if (atomic_load_explicit(&slots[r->slot].orphaned, memory_order_relaxed) &&
                live_locked(p, NULL) == 0)
                pool_free_locked(p);
        }
        free(r);
    }
    pthread_mutex_unlock(&table_mu);
    free(tc->tab);
    free(tc);
    if (tls_tc == tc)
        tls_tc = NULL;
}

static void tc_key_init(void)
{
    pthread_key_create(&tc_key, tc_destroy);
}

/* The record's magazines and reservation back to its pool; its counters
 * into the pool's; unlinked. table_mu held, the pool alive. */
static void rec_flush_locked(trec *r)
{
    zf_pool *p = r->pool;
    for (unsigned c = 0; c < NCLASS; c++) {
        mag *ms[2] = {r->loaded[c], r->prev[c]};
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

static bool tc_insert(tcache *tc, trec *r);

/* Remove entry i, re-inserting the rest of its cluster so that probing
 * stays correct (re-inserting never grows the table). */
static void tc_drop(tcache *tc, size_t i)
{
    tc->tab[i] = NULL;
    for (size_t j = (i + 1) & tc->mask; tc->tab[j]; j = (j + 1) & tc->mask) {
        trec *m = tc->tab[j];
        tc->tab[j] = NULL;
        size_t k = m->slot & tc->mask;
        while (tc->tab[k])
            k = (k + 1) & tc->mask;
        tc->tab[k] = m;
    }
}

/* The calling thread's record for p, created on first use; NULL when out
 * of memory. */
static trec *rec_slow(zf_pool *p)
{
    pthread_once(&tc_once, tc_key_init);
    tcache *tc = tls_tc;
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
        tls_tc = tc;
        pthread_setspecific(tc_key, tc);
    }
    /* A record of a dead pool that had the same slot goes (its pool took
     * its magazines and counters with it). */
    for (size_t i = p->slot & tc->mask;; i = (i + 1) & tc->mask) {
        trec *r = tc->tab[i];
        if (!r)
            break;
        if (r->slot != p->slot)
            continue;
        if (r->pool == p && r->gen == p->gen)
            return r;
        /* a dead pool's: nothing links it any more */
        tc_drop(tc, i);
        free(r);
        break;
    }
    trec *r = zfi_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->pool = p;
    r->slot = p->slot;
    r->gen = p->gen;
    if (!tc_insert(tc, r)) {
        free(r);
        return NULL;
    }
    pthread_mutex_lock(&table_mu);
    r->pnext = p->recs;
    if (p->recs)
        p->recs->pprev = r;
    p->recs = r;
    pthread_mutex_unlock(&table_mu);
    return r;
}

static bool tc_insert(tcache *tc, trec *r)
{
    size_t used = 0;
    for (size_t i = 0; i <= tc->mask; i++)
        used += tc->tab[i] != NULL;
    if ((used + 1) * 2 > tc->mask + 1) {
        size_t nmask = tc->mask * 2 + 1;
        trec **nt = zfi_calloc(nmask + 1, sizeof *nt);
        if (!nt)
            return false;
        for (size_t i = 0; i <= tc->mask; i++) {
            trec *m = tc->tab[i];
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

static inline trec *rec_get(zf_pool *p)
{
    tcache *tc = tls_tc;
    if (ZFI_LIKELY(tc)) {
        trec *r = tc->tab[p->slot & tc->mask];
        if (ZFI_LIKELY(r && r->pool == p && r->gen == p->gen))
            return r;
    }
    return rec_slow(p);
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
static bool take(zf_pool *p, uint64_t n)
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

/* The reservation step for blocks of n bytes: a magazine's worth (32
 * blocks), at least 4 KiB, at most the pool's chunk. */
static uint64_t chunk_for(const zf_pool *p, uint64_t n)
{
    uint64_t c = n * MAG_MAX;
    if (c < 4096)
        c = 4096;
    return c < p->chunk ? c : p->chunk;
}

static bool reserve(zf_pool *p, trec *r, uint64_t n)
{
    if (ZFI_LIKELY(r->res >= n)) {
        r->res -= n;
        return true;
    }
    uint64_t need = n - r->res; /* what this thread's slack lacks */
    uint64_t step = chunk_for(p, n);
    if (take(p, need + step)) {
        r->res = step; /* a step beyond n stays as slack */
        return true;
    }
    if (take(p, need)) { /* near the cap: exactly what is missing */
        r->res = 0;
        return true;
    }
    return false;
}

/* Freed bytes become this thread's slack; beyond two steps, all but one
 * goes back to the pool. */
static void unreserve(zf_pool *p, trec *r, uint64_t n)
{
    r->res += n;
    uint64_t step = chunk_for(p, n);
    if (ZFI_UNLIKELY(r->res > 2 * step)) {
        uint64_t give = r->res - step;
        atomic_fetch_sub_explicit(&p->reserved, give, memory_order_relaxed);
        r->res -= give;
    }
}

/* ---- small blocks ---- */

/* Fill r->loaded[c] (empty or NULL): from prev, the depot, or fresh blocks.
 * Returns false (error set) when no block can be had. */
static bool refill(zf_pool *p, trec *r, unsigned c)
{
    mag *m = r->loaded[c];
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
    if (p->arena_used + bs > p->arena_mapped && arena_grow(p, bs) != ZF_OK) {
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
static bool spill(zf_pool *p, trec *r, unsigned c)
{
    mag *m = r->loaded[c], *pv = r->prev[c];
    if (m && pv && pv->count == 0) {
        r->prev[c] = m;
        r->loaded[c] = pv;
        return true;
    }
    mag *e = mag_empty(p, c);
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

/* ---- large blocks: a segment each, recycled ----
 *
 * A freed segment goes on a lock-free stack of its size; an allocation of
 * that size pops one. Only mapping a new segment (and unmapping cached ones
 * to make room) takes large_mu. */

static large_ent *large_at(zf_pool *p, uint32_t id, bool create)
{
    if (id >= LARGE_PER_DIR * LARGE_DIRS)
        return NULL;
    large_ent *dir = atomic_load_explicit(&p->large_dir[id / LARGE_PER_DIR], memory_order_acquire);
    if (!dir && create) { /* large_mu held */
        dir = zfi_calloc(LARGE_PER_DIR, sizeof *dir);
        if (!dir)
            return NULL;
        for (size_t i = 0; i < LARGE_PER_DIR; i++)
            dir[i].fd = -1;
        atomic_store_explicit(&p->large_dir[id / LARGE_PER_DIR], dir, memory_order_release);
    }
    return dir ? &dir[id % LARGE_PER_DIR] : NULL;
}

static _Atomic uint32_t *large_link(zf_pool *p, uint32_t id)
{
    return &large_at(p, id, false)->next;
}

static unsigned large_bucket(size_t size)
{
    unsigned l = 63u - (unsigned)__builtin_clzll((unsigned long long)size);
    size_t pow = (size_t)1 << l;
    return (l - 20) * 8 + (unsigned)((size - pow) / (pow / 8));
}

static size_t large_size(size_t len)
{
    size_t need = round_up(len + ZFI_HDR_SIZE, page_size());
    size_t pow = (size_t)1 << (63 - __builtin_clzll((unsigned long long)need));
    size_t step = pow / 8 > page_size() ? pow / 8 : page_size();
    return round_up(need, step);
}

/* large_mu held; the segment is free and off every stack. */
static void large_unmap(zf_pool *p, large_ent *e)
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
                uint32_t id = stack_pop(p, &p->large_free[b], large_link);
                if (id == UINT32_MAX)
                    break;
                large_unmap(p, large_at(p, id, false));
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
    large_ent *e = NULL;
    for (; id < n; id++) { /* a hole left by an unmapped segment */
        e = large_at(p, id, false);
        if (!atomic_load_explicit(&e->base, memory_order_relaxed) && e->fd < 0)
            break;
    }
    if (id == n) {
        e = large_at(p, id, true);
        if (!e) {
            err = zfi_error(ZF_ENOMEM, "pool %s: more than %u large segments (or out of memory)",
                            p->name, LARGE_PER_DIR * LARGE_DIRS);
            goto out;
        }
    }
    int fd = new_memfd(p, 'l', id, size);
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
    atomic_store_explicit(&e->in_use, 1, memory_order_relaxed);
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
static zf_err large_alloc(zf_pool *p, size_t size, zf_data **out)
{
    unsigned b = large_bucket(size);
    uint32_t id = UINT32_MAX;
    for (unsigned k = 0; k < 3 && id == UINT32_MAX && b + k < LARGE_BUCKETS; k++) {
        unsigned l = (b + k) / 8 + 20;
        size_t bsize = ((size_t)1 << l) / 8 * (8 + (b + k) % 8);
        if (bsize > size + size / 4)
            break;
        id = stack_pop(p, &p->large_free[b + k], large_link);
    }
    if (id == UINT32_MAX)
        return large_new(p, size, out);
    large_ent *e = large_at(p, id, false);
    atomic_store_explicit(&e->in_use, 1, memory_order_relaxed);
    zf_data *d = (zf_data *)atomic_load_explicit(&e->base, memory_order_acquire);
    zfi_prefetch_w(d);
    d->seg = id;
    /* The bytes reserved, not the segment's: a reused segment may be up to a
     * quarter larger, and freeing must give back exactly what was taken. */
    d->cap = size - ZFI_HDR_SIZE;
    *out = d;
    return ZF_OK;
}

static void large_free(zf_pool *p, zf_data *d)
{
    large_ent *e = large_at(p, d->seg, false);
    atomic_store_explicit(&e->in_use, 0, memory_order_relaxed);
    stack_push(p, &p->large_free[large_bucket(e->size)], d->seg, large_link);
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
    pthread_mutex_lock(&table_mu);
    if (barrier_cmd < 0)
        barrier_init();
    if (barrier_cmd == 0)
        atomic_store(&free_fence, true);
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
    pthread_mutex_unlock(&table_mu);
    if (slot == MAX_POOLS) {
        munmap(p->arena, p->arena_reserved);
        free(p);
        return zfi_error(ZF_ENOMEM, "zf_pool_create: more than %u pools in one process",
                         MAX_POOLS - 1);
    }
    *out = p;
    return ZF_OK;
}

/* Live blocks: allocations minus frees over every thread. table_mu held. */
static uint64_t live_locked(const zf_pool *p, zf_pool_stats *s)
{
    uint64_t a = p->gone_allocs, f = p->gone_frees, ba = p->gone_bytes_alloc,
             bf = p->gone_bytes_freed;
    for (trec *r = p->recs; r; r = r->pnext) {
        a += ld(&r->allocs);
        f += ld(&r->frees);
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

/* Free everything. table_mu held; nothing of the pool is alive. */
static void pool_free_locked(zf_pool *p)
{
    atomic_store_explicit(&slots[p->slot].pool, NULL, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].arena, NULL, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].arena_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].gen, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[p->slot].orphaned, 0, memory_order_relaxed);
    /* Records of other threads stay theirs (they see the generation
     * change); only the list of them goes. */
    for (uint32_t id = 0; id < atomic_load_explicit(&p->n_large, memory_order_relaxed); id++) {
        large_ent *e = large_at(p, id, false);
        if (atomic_load_explicit(&e->base, memory_order_relaxed))
            large_unmap(p, e);
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
    pthread_mutex_lock(&table_mu);
    zf_pool *p = atomic_load_explicit(&slots[slot].pool, memory_order_relaxed);
    if (p && atomic_load_explicit(&slots[slot].gen, memory_order_relaxed) == gen &&
        atomic_load_explicit(&slots[slot].orphaned, memory_order_relaxed) &&
        live_locked(p, NULL) == 0)
        pool_free_locked(p);
    pthread_mutex_unlock(&table_mu);
}

void zf_pool_destroy(zf_pool *p)
{
    if (!p)
        return;
    zfi_pool_quarantine_flush(p);
    uint32_t slot = p->slot, gen = p->gen;
    /* The caller's own magazines go back now (a thread that never uses the
     * pool again would keep them until it exits). */
    pthread_mutex_lock(&table_mu);
    tcache *tc = tls_tc;
    for (size_t i = 0; tc && i <= tc->mask; i++) {
        trec *r = tc->tab[i];
        if (r && r->pool == p && r->gen == gen) {
            rec_flush_locked(r);
            tc_drop(tc, i);
            free(r);
            break;
        }
    }
    uint64_t live = live_locked(p, NULL);
    pthread_mutex_unlock(&table_mu);
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
    pthread_mutex_lock(&table_mu);
    live_locked(p, out);
    pthread_mutex_unlock(&table_mu);
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
    trec *r = rec_get(p);
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
        mag *m = r->loaded[c];
        if (ZFI_UNLIKELY(!m || !m->count)) {
            if (!refill(p, r, c)) {
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
        block = large_size(len);
        if (!reserve(p, r, block))
            goto cap;
        zf_err err = large_alloc(p, block, &d);
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

/* A freed block back into the calling thread's magazine (or the loose
 * stack), a large one to its segment table. No accounting. */
static void recycle(zf_pool *p, trec *r, zf_data *d)
{
    if (d->kind != ZFI_KIND_SMALL) {
        large_free(p, d);
        return;
    }
    unsigned c = d->cls;
    uint32_t idx = block_index(p, d);
    mag *m = r ? r->loaded[c] : NULL;
    if (ZFI_UNLIKELY(!m || m->count == mag_cap(c)))
        m = r && spill(p, r, c) ? r->loaded[c] : NULL;
    if (ZFI_LIKELY(m))
        m->blk[m->count++] = idx;
    else
        stack_push(p, &p->depot[c].loose, idx, block_link);
}

void zfi_pool_free(zf_data *d)
{
    zf_pool *p = owner_pool(d);
    uint32_t slot = p->slot, gen = p->gen;
    size_t block = block_size(d);
    trec *r = rec_get(p);
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
            recycle(p, r, evicted);
    } else {
        recycle(p, r, d);
    }
#else
    recycle(p, r, d);
#endif
    if (ZFI_UNLIKELY(!r)) {
        /* No record (out of memory): count the free against the pool under
         * the table lock. */
        pthread_mutex_lock(&table_mu);
        p->gone_frees++;
        p->gone_bytes_freed += block;
        atomic_fetch_sub_explicit(&p->reserved, block, memory_order_relaxed);
        pthread_mutex_unlock(&table_mu);
    } else {
        unreserve(p, r, block);
        bump(&r->bytes_freed, block);
        bump(&r->frees, 1);
    }
    /* From here on the pool may be gone (if orphaned): only the table. */
    if (ZFI_UNLIKELY(atomic_load_explicit(&free_fence, memory_order_relaxed)))
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
    pthread_mutex_lock(&table_mu);
    for (unsigned i = 1; i < MAX_POOLS; i++)
        n += atomic_load_explicit(&slots[i].pool, memory_order_relaxed) != NULL;
    pthread_mutex_unlock(&table_mu);
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
        large_ent *e = large_at(p, id, false);
        const zf_data *d = (const zf_data *)atomic_load_explicit(&e->base, memory_order_acquire);
        if (d && atomic_load_explicit(&e->in_use, memory_order_relaxed) &&
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
    large_ent *e = id < atomic_load_explicit(&p->n_large, memory_order_acquire)
                       ? large_at(p, (uint32_t)id, false)
                       : NULL;
    return e ? (zf_data *)atomic_load_explicit(&e->base, memory_order_acquire) : NULL;
}

/* ---- the debug quarantine, per pool ---- */

void zfi_pool_quarantine_flush(zf_pool *p)
{
#ifdef ZF_DEBUG_POISON
    if (!p)
        return;
    trec *r = rec_get(p);
    pthread_mutex_lock(&p->q_mu);
    for (size_t i = 0; i < ZFI_ARRAY_LEN(p->q_ring); i++)
        if (p->q_ring[i]) {
            recycle(p, r, p->q_ring[i]);
            p->q_ring[i] = NULL;
        }
    pthread_mutex_unlock(&p->q_mu);
#else
    ZFI_UNUSED(p);
#endif
}
