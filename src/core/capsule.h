/* The capsule header and the pool's internal interface.
 *
 * A pool capsule is one block of shared memory: a 64-byte header followed
 * by the payload. Everything in the header is position-independent (no raw
 * pointers), so another process mapping the same memfd can use it: the
 * owning pool is a slot number, a large block names its segment by id.
 * Pinned (zf_data_wrap) and static capsules have a process-local header
 * (zfi_ext) that points at memory the pool does not own. */
#ifndef ZFI_CAPSULE_H
#define ZFI_CAPSULE_H

#include "core/common.h"

#include <stdatomic.h>

#define ZFI_HDR_SIZE   64u
#define ZFI_MAGIC_LIVE 0x7a66636bu /* "zfck" */
#define ZFI_MAGIC_DEAD 0xdeadca75u

enum zfi_kind {
    ZFI_KIND_SMALL = 1,  /* size-class block in the pool's small arena */
    ZFI_KIND_LARGE = 2,  /* a memfd segment of its own */
    ZFI_KIND_WRAP = 3,   /* pinned user memory with a release callback */
    ZFI_KIND_STATIC = 4, /* process-lifetime memory */
    ZFI_KIND_REMOTE = 5  /* in a node host: a block of the runtime's pool, by handle */
};

struct zf_data {
    _Atomic uint32_t magic;
    uint8_t kind;
    uint8_t cls;        /* small: size class */
    uint16_t pool_slot; /* small/large: owning pool in this process's table */
    _Atomic uint32_t refs;
    _Atomic uint32_t next; /* small, while free: next free block index + 1 */
    uint64_t len;
    uint64_t cap;
    uint64_t ts;
    uint64_t seq;
    uint32_t seg;           /* large: segment id within the pool */
    _Atomic uint32_t owner; /* last holder: zfi_owner_pack */
    _Atomic uint64_t check; /* ZF_CHECK_SHARED: the payload's sum while shared, | 1; 0: none */
};
_Static_assert(sizeof(struct zf_data) == ZFI_HDR_SIZE, "capsule header is 64 bytes");

/* A node host's view of one of the runtime's pool blocks: a local header
 * (reference counted here; the runtime holds one reference in the child's
 * ledger for it) over the mapped payload. `release(arg)` runs once, when the
 * last local reference drops (it hands the handle back). Writable: a block
 * loaned to the child (zf_data_mut writes in place while unique); else
 * zf_data_mut copies. */
zf_err zfi_data_remote(void *ptr, size_t len, size_t cap, bool writable, zf_release_fn release,
                       void *arg, zf_data **out);
/* A remote capsule's release argument (NULL for any other kind). */
void *zfi_data_remote_arg(const zf_data *d);
/* Forget a remote capsule's local header without releasing the block
 * (its reference moved to the runtime with a send). */
void zfi_data_remote_forget(zf_data *d);

/* Per-instance accounting of pinned capsules: who wrapped, who released. */
typedef struct zfi_acct {
    atomic_uint_fast64_t wrapped;
    atomic_uint_fast64_t released;
    atomic_uint refs;
} zfi_acct;

zfi_acct *zfi_acct_new(void);
void zfi_acct_ref(zfi_acct *a);
void zfi_acct_unref(zfi_acct *a);

/* The thread's current context, set by the runtime around node callbacks:
 * pinned capsules are counted in `acct`, copies on write come from `pool`. */
typedef struct zfi_ctx {
    zf_pool *pool;
    zfi_acct *acct;
    void *node;         /* runtime's node, or NULL */
    atomic_llong *held; /* references taken minus dropped by node code */
} zfi_ctx;

/* Count a reference taken (+1) or dropped (-1) by the current node code. */
static inline void zfi_held(long long delta);

extern ZFI_TLS zfi_ctx zfi_thread_ctx;
static inline zfi_ctx *zfi_ctx_get(void)
{
    return &zfi_thread_ctx;
}

/* Abort with a clear message if d is not a live capsule. */
_Noreturn void zfi_data_check_fail(const zf_data *d, const char *where) __attribute__((cold));
static inline void zfi_data_check(const zf_data *d, const char *where)
{
    if (ZFI_UNLIKELY(!d || atomic_load_explicit(&((zf_data *)d)->magic, memory_order_relaxed) !=
                               ZFI_MAGIC_LIVE))
        zfi_data_check_fail(d, where);
}

/* The debug quarantine: ZF_DEBUG_POISON builds keep each pool's freed
 * small capsules (their bytes no longer counted) out of circulation for a
 * while, so a use after the last unref finds a dead header. Flushing puts
 * them back in circulation; tests flush before checking that blocks were
 * recycled. NULL is a no-op, and so is every other build. */
void zfi_pool_quarantine_flush(zf_pool *p);

/* Call cb for every live capsule of the pool (for leak reports; not for hot
 * paths: it scans every block carved). */
void zfi_pool_walk(zf_pool *p, void (*cb)(void *arg, const zf_data *d, size_t block), void *arg);

/* A pool block whose last reference dropped goes back to its pool: into
 * the calling thread's magazine (debug builds: the pool's quarantine first),
 * counted as freed. */
void zfi_pool_free(zf_data *d);
/* ZF_CHECK_SHARED=1 in the environment (read when a pool is created): a
 * capsule's payload is summed when it becomes shared and checked whenever a
 * reference to it is released while it is still shared, so a node writing
 * through zf_data_ptr into a capsule others read is caught (a debug mode: it
 * reads every shared payload). */
extern _Atomic bool zfi_check_shared;
/* A capsule of this pool was found written while shared: count it, keep the
 * holder it was last delivered to (its owner word). */
void zfi_pool_note_shared_write(zf_data *d);
/* Capsules of the pool found written while shared, and the owner word of
 * the last one. */
uint64_t zfi_pool_shared_writes(const zf_pool *p, uint32_t *last_owner);

/* ---- sharing a pool with a node host (src/proc) ----
 * The memfd of small-arena segment `index` (a dup: the caller closes it),
 * its offset in the arena and its size; -1 when there is no such segment
 * (yet). */
int zfi_pool_small_segment(zf_pool *p, size_t index, size_t *offset, size_t *size);
/* The memfd of large segment `id` (a dup), its size and the address it is
 * mapped at here (which changes when the id is given to a new segment); -1
 * when the id names no segment. */
int zfi_pool_large_segment(zf_pool *p, uint32_t id, size_t *size, const void **base);
/* The pool's slot in this process's table (the high bits of its handles). */
unsigned zfi_pool_slot_of(const zf_pool *p);
/* The address large segment `id` is mapped at now (NULL: none). */
const void *zfi_pool_large_base(zf_pool *p, uint32_t id);

/* Pools alive in this process (destroyed ones count until their last
 * capsule is released). For tests of teardown. */
size_t zfi_pool_live_count(void);
/* The process-wide default pool (created on first use), for copies of
 * capsules made outside any instance. NULL if it cannot be created. */
zf_pool *zfi_pool_default(void);

/* ---- handles ----
 * A capsule is named on a link by a 64-bit handle, not a pointer, so that
 * the same ring works in memory shared between processes:
 *   bit 63      1: a process-local header (pinned or static capsule), the
 *               rest its address; these never cross a process boundary
 *   bits 62-48  the owning pool's slot
 *   bit 47      1: a large block, bits 46-0 its segment id + 1
 *               0: a small block, bits 46-0 its index (offset / 64) + 1
 * 0 is no capsule. */
typedef uint64_t zfi_handle;
#define ZFI_HANDLE_LOCAL      (1ull << 63)
#define ZFI_HANDLE_SLOT_SHIFT 48
#define ZFI_HANDLE_SLOT_BITS  15
#define ZFI_HANDLE_LARGE_BIT  47
#define ZFI_HANDLE_LARGE      (1ull << ZFI_HANDLE_LARGE_BIT)

/* The pool table (pool.c): a slot per live pool, never freed, so a slot
 * may be read after its pool is gone. `arena` is the pool's small-block
 * arena, for turning handles into addresses without a call. */
#define ZFI_MAX_POOLS 4096u
typedef struct zfi_pool_slot {
    _Atomic(zf_pool *) pool;
    _Atomic(char *) arena;
    _Atomic uint64_t arena_bytes;
    _Atomic uint32_t gen;
    _Atomic uint32_t orphaned;
} zfi_pool_slot;
extern zfi_pool_slot zfi_pool_slots[ZFI_MAX_POOLS];

zfi_handle zfi_handle_of_slow(const zf_data *d);
zf_data *zfi_handle_data_slow(zfi_handle h);

/* The handle of a live capsule (the reference is not moved). */
static inline zfi_handle zfi_handle_of(const zf_data *d)
{
    if (ZFI_LIKELY(d->kind == ZFI_KIND_SMALL)) {
        const char *arena =
            atomic_load_explicit(&zfi_pool_slots[d->pool_slot].arena, memory_order_relaxed);
        return (zfi_handle)d->pool_slot << ZFI_HANDLE_SLOT_SHIFT |
               ((uint64_t)((const char *)d - arena) / ZFI_HDR_SIZE + 1);
    }
    return zfi_handle_of_slow(d);
}

/* The capsule a handle names, or NULL when it names no pool or block of
 * this process (a handle from a ring is checked before use). */
static inline zf_data *zfi_handle_data(zfi_handle h)
{
    if (ZFI_LIKELY(!(h & (ZFI_HANDLE_LOCAL | ZFI_HANDLE_LARGE)))) {
        uint32_t slot = (uint32_t)(h >> ZFI_HANDLE_SLOT_SHIFT);
        uint64_t idx = h & (ZFI_HANDLE_LARGE - 1);
        if (slot >= ZFI_MAX_POOLS || idx == 0)
            return NULL;
        char *arena = atomic_load_explicit(&zfi_pool_slots[slot].arena, memory_order_acquire);
        uint64_t bytes =
            atomic_load_explicit(&zfi_pool_slots[slot].arena_bytes, memory_order_relaxed);
        if (!arena || idx * ZFI_HDR_SIZE > bytes)
            return NULL;
        return (zf_data *)(arena + (idx - 1) * ZFI_HDR_SIZE);
    }
    return zfi_handle_data_slow(h);
}

/* ---- the last holder of a capsule, for leak reports ----
 * (node index + 1) and (input port + 1; 0: none), packed in one word. */
#define ZFI_OWNER_PORT_BITS 13u /* the runtime asserts that ZFI_MAX_PORTS fits */
static inline uint32_t zfi_owner_pack(size_t node_index, long port)
{
    return (uint32_t)((node_index + 1) << ZFI_OWNER_PORT_BITS) | (uint32_t)(port + 1);
}
/* The node index + 1 (0: none) and the input port (-1: none). */
static inline size_t zfi_owner_node(uint32_t owner)
{
    return owner >> ZFI_OWNER_PORT_BITS;
}
static inline long zfi_owner_port(uint32_t owner)
{
    return (long)(owner & ((1u << ZFI_OWNER_PORT_BITS) - 1)) - 1;
}

static inline void *zfi_payload(const zf_data *d);

typedef struct zfi_ext {
    struct zf_data h;
    void *ptr;
    zf_release_fn release;
    void *arg;
    zfi_acct *acct;
} zfi_ext;

static inline void *zfi_payload(const zf_data *d)
{
    if (d->kind <= ZFI_KIND_LARGE)
        return (char *)d + ZFI_HDR_SIZE;
    return ((const zfi_ext *)d)->ptr;
}

extern ZFI_TLS zfi_ctx zfi_thread_ctx;
static inline void zfi_held(long long delta)
{
    /* Only the thread running the node's code writes its count (a node runs
     * on one worker at a time): a plain load and store, no locked add. */
    atomic_llong *h = zfi_thread_ctx.held;
    if (h)
        atomic_store_explicit(h, atomic_load_explicit(h, memory_order_relaxed) + delta,
                              memory_order_relaxed);
}

#endif
