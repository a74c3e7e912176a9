/* The pool's insides, shared by its three files and by nothing else:
 *   pool.c      the pool object: create, destroy and its one-owner teardown,
 *               allocate and free, the arena's segments, handles, statistics
 *   magazine.c  the threads' magazines of free blocks and their accounting,
 *               the depot, reservations (max_bytes)
 *   large.c     large blocks: a memfd segment each, recycled by size
 * The design is described at the top of pool.c and in docs/data-plane.md. */
#ifndef ZFI_POOL_IMPL_H
#define ZFI_POOL_IMPL_H

#include "core/capsule.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define NCLASS          14u           /* blocks of 128 B .. 1 MiB */
#define MIN_BLOCK_SHIFT 7u            /* 128 B = 64 B header + 64 B payload */
#define SMALL_MAX_BLOCK (1u << 20)    /* larger blocks get their own segment */
#define CARVE_BYTES     (64u * 1024u) /* blocks carved per zfi_mag_refill, at most */
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
typedef struct zfi_mag {
    uint32_t id;
    uint32_t count;
    _Atomic uint32_t next; /* in a depot stack: next magazine id + 1 */
    uint32_t blk[MAG_MAX];
} zfi_mag;

/* One thread's cache of one pool: its magazines, its accounting. */
typedef struct zfi_trec {
    zf_pool *pool;
    uint32_t slot, gen;
    struct zfi_trec *pnext, *pprev; /* in pool->recs (zfi_pool_table_mu) */
    zfi_mag *loaded[NCLASS], *prev[NCLASS];
    uint64_t res; /* bytes reserved and not spent: this thread's slack */
    /* Written by the owning thread alone (load + store), read by stats. */
    _Atomic uint64_t allocs, frees, bytes_alloc, bytes_freed;
} zfi_trec;

/* A large segment, by id, in a directory that never moves (so the free
 * stacks' links can be read without a lock while segments come and go).
 * An entry is written only when its segment is mapped or unmapped: every
 * handle lookup reads its base, and finds the line shared. The free
 * stacks' links (next id + 1), which a free and an allocation write, are
 * in the same allocation but after the entries, on lines of their own
 * (large.c): beside the bases, a link written by the sink's thread
 * made the next lookup of a neighbour's base miss (82 % of the lookup's
 * samples in a 10 MiB pipeline). Whether a capsule lives in a segment is
 * its header's magic. */
typedef struct zfi_large_ent {
    _Atomic(char *) base; /* NULL: no segment under this id */
    size_t size;          /* set (large_mu) before base is published */
    int fd;
} zfi_large_ent;

/* Large segments come in discrete sizes (zfi_large_size): 2^l x (8 + k) / 8. */
#define LARGE_BUCKETS ((47 - 20) * 8)

struct zf_pool {
    /* Read-mostly: read by every allocation and handle lookup. */
    char *arena;
    uint64_t max_bytes;
    uint64_t chunk; /* reservation step */
    uint32_t gen;
    uint16_t slot;
    _Atomic(zfi_large_ent *) large_dir[LARGE_DIRS]; /* segment id -> its entry */

    struct {
        _Alignas(ZFI_CACHELINE) _Atomic uint64_t full; /* tag << 32 | (id + 1) */
        _Atomic uint64_t empty;
        _Atomic uint64_t loose; /* single free blocks (when no magazine could be had) */
    } depot[NCLASS];

    _Alignas(ZFI_CACHELINE) _Atomic uint64_t reserved;
    _Atomic uint64_t high_water;
    /* One free large segment, before the stacks: bucket << 32 | (id + 1),
     * 0: none. A free fills it, an allocation of that size empties it, a
     * compare-and-swap each, with no link to read; on the reservation's
     * line, which a large allocation and a free write anyway, so a segment
     * handed from the consumer back to the producer makes one line cross
     * (and its header), not three. */
    _Atomic uint64_t large_hot;
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
    _Atomic(zfi_mag *) mag_dir[MAG_DIRS];
    uint32_t n_mags;

    pthread_mutex_t large_mu; /* creating and unmapping large segments */
    _Atomic uint32_t n_large; /* ids handed out */
    /* free segments of each size: tag << 32 | (id + 1) */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t zfi_large_free[LARGE_BUCKETS];

    /* zfi_pool_table_mu: the threads' records, and what exited threads counted. */
    zfi_trec *recs;
    uint64_t gone_allocs, gone_frees, gone_bytes_alloc, gone_bytes_freed;

#ifdef ZF_DEBUG_POISON
    pthread_mutex_t q_mu; /* this pool's quarantine of freed capsules */
    zf_data *q_ring[1024];
    size_t q_next;
#endif
};

#define slots zfi_pool_slots

/* ---- helpers ---- */

/* The page size, read once; threads racing the first read all store
 * the same value, through a relaxed atomic so the race is not one. */
static inline size_t page_size(void)
{
    static size_t ps;
    size_t v = __atomic_load_n(&ps, __ATOMIC_RELAXED);
    if (!v) {
        v = (size_t)sysconf(_SC_PAGESIZE);
        __atomic_store_n(&ps, v, __ATOMIC_RELAXED);
    }
    return v;
}

static inline size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static inline unsigned class_of(size_t block)
{
    if (block <= (1u << MIN_BLOCK_SHIFT))
        return 0;
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(block - 1))) - MIN_BLOCK_SHIFT;
}

static inline size_t class_block(unsigned c)
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

/* The frees counter is a free's last write to the pool: a release store (a
 * plain store on x86 and no fence elsewhere beyond the ordering), so the
 * thread that reads it with acquire and finds the pool empty may tear it
 * down after every access of that free. */
static inline void bump_release(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, ld(c) + v, memory_order_release);
}

/* ---- lock-free stacks of 32-bit ids (ABA-safe: a tag beside the id) ---- */

/* Pop: the id, or UINT32_MAX when empty. Reading the link of an entry that
 * another thread popped meanwhile is harmless: the memory stays mapped and
 * the tag makes the compare-and-swap fail. */
static inline uint32_t stack_pop(zf_pool *p, _Atomic uint64_t *head,
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

static inline void stack_push(zf_pool *p, _Atomic uint64_t *head, uint32_t id,
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

static inline zfi_mag *mag_at(zf_pool *p, uint32_t id)
{
    zfi_mag *dir = atomic_load_explicit(&p->mag_dir[id / MAGS_PER_DIR], memory_order_acquire);
    return &dir[id % MAGS_PER_DIR];
}

static inline _Atomic uint32_t *mag_link(zf_pool *p, uint32_t id)
{
    return &mag_at(p, id)->next;
}

static inline zf_data *block_at(const zf_pool *p, uint32_t idx)
{
    return (zf_data *)(p->arena + (uint64_t)idx * ZFI_HDR_SIZE);
}

static inline _Atomic uint32_t *block_link(zf_pool *p, uint32_t idx)
{
    return &block_at(p, idx)->next;
}

static inline uint32_t block_index(const zf_pool *p, const zf_data *d)
{
    return (uint32_t)(((const char *)d - p->arena) / ZFI_HDR_SIZE);
}

/* ---- threads' records ---- */

typedef struct zfi_tcache {
    size_t mask;
    zfi_trec **tab; /* open addressing by pool slot */
} zfi_tcache;

/* The calling thread's table of records (magazine.c). */
extern ZFI_TLS zfi_tcache *zfi_tls_tc;
/* The pool table's mutex: records, their counts, teardown (pool.c). */
extern pthread_mutex_t zfi_pool_table_mu;
/* Set when membarrier is missing: freeing threads fence themselves. */
extern _Atomic bool zfi_pool_free_fence;

/* magazine.c */
zfi_trec *zfi_rec_slow(zf_pool *p);     /* the caller's record, created; NULL: no memory */
void zfi_rec_flush_locked(zfi_trec *r); /* magazines and counts back to the pool, unlinked */
void zfi_tc_drop(zfi_tcache *tc, size_t i);
bool zfi_pool_take(zf_pool *p, uint64_t n); /* n more reserved bytes, unless past max_bytes */
bool zfi_mag_refill(zf_pool *p, zfi_trec *r, unsigned c);
bool zfi_mag_spill(zf_pool *p, zfi_trec *r, unsigned c);
void zfi_mag_recycle(zf_pool *p, zfi_trec *r, zf_data *d);

/* large.c */
size_t zfi_large_size(size_t len);
zf_err zfi_large_alloc(zf_pool *p, size_t size, zf_data **out);
void zfi_large_free(zf_pool *p, zf_data *d);
zfi_large_ent *zfi_large_at(zf_pool *p, uint32_t id, bool create);
void zfi_large_unmap(zf_pool *p, zfi_large_ent *e);

/* pool.c */
int zfi_pool_memfd(zf_pool *p, char tag, size_t idx, size_t size);
zf_err zfi_pool_arena_grow(zf_pool *p, size_t need);               /* grow_mu held */
uint64_t zfi_pool_live_locked(const zf_pool *p, zf_pool_stats *s); /* table mutex held */
void zfi_pool_free_locked(zf_pool *p);                             /* table mutex held */

static inline zfi_trec *rec_get(zf_pool *p)
{
    zfi_tcache *tc = zfi_tls_tc;
    if (ZFI_LIKELY(tc)) {
        zfi_trec *r = tc->tab[p->slot & tc->mask];
        if (ZFI_LIKELY(r && r->pool == p && r->gen == p->gen))
            return r;
    }
    return zfi_rec_slow(p);
}

/* The reservation step for blocks of n bytes: a magazine's worth (32
 * blocks), at least 4 KiB, at most the pool's chunk. */
static inline uint64_t chunk_for(const zf_pool *p, uint64_t n)
{
    uint64_t c = n * MAG_MAX;
    if (c < 4096)
        c = 4096;
    return c < p->chunk ? c : p->chunk;
}

static inline bool reserve(zf_pool *p, zfi_trec *r, uint64_t n)
{
    if (ZFI_LIKELY(r->res >= n)) {
        r->res -= n;
        return true;
    }
    uint64_t need = n - r->res; /* what this thread's slack lacks */
    uint64_t step = chunk_for(p, n);
    if (zfi_pool_take(p, need + step)) {
        r->res = step; /* a step beyond n stays as slack */
        return true;
    }
    if (zfi_pool_take(p, need)) { /* near the cap: exactly what is missing */
        r->res = 0;
        return true;
    }
    return false;
}

/* Freed bytes become this thread's slack; beyond two steps, all but one
 * goes back to the pool. */
static inline void unreserve(zf_pool *p, zfi_trec *r, uint64_t n)
{
    r->res += n;
    uint64_t step = chunk_for(p, n);
    if (ZFI_UNLIKELY(r->res > 2 * step)) {
        uint64_t give = r->res - step;
        atomic_fetch_sub_explicit(&p->reserved, give, memory_order_relaxed);
        r->res -= give;
    }
}

#endif
