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
    ZFI_KIND_SMALL = 1, /* size-class block in the pool's small arena */
    ZFI_KIND_LARGE = 2, /* a memfd segment of its own */
    ZFI_KIND_WRAP = 3,  /* pinned user memory with a release callback */
    ZFI_KIND_STATIC = 4 /* process-lifetime memory */
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
    _Atomic uint32_t owner; /* last holder: (node index + 1) << 8 | (input port + 1) */
    uint64_t reserved;
};
_Static_assert(sizeof(struct zf_data) == ZFI_HDR_SIZE, "capsule header is 64 bytes");

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

zfi_ctx *zfi_ctx_get(void);

/* Abort with a clear message if d is not a live capsule. */
void zfi_data_check(const zf_data *d, const char *where);

/* Release the capsules held in the debug quarantine (ZF_DEBUG_POISON
 * builds keep freed capsules poisoned for a while); a no-op otherwise. Call
 * before checking that a pool is back to 0 bytes. */
void zfi_quarantine_flush(void);

/* Call cb for every live capsule of the pool (for leak reports; not for hot
 * paths: it scans every block carved). */
void zfi_pool_walk(zf_pool *p, void (*cb)(void *arg, const zf_data *d, size_t block), void *arg);

/* Pool internals used by capsule.c: a block's bytes stop counting as in
 * use when its last reference drops (release_bytes); the block itself goes
 * back to the free lists when recycled (later, in debug builds). */
void zfi_pool_release_bytes(zf_data *d);
void zfi_pool_recycle(zf_data *d);
/* The process-wide default pool (created on first use), for copies of
 * capsules made outside any instance. NULL if it cannot be created. */
zf_pool *zfi_pool_default(void);

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
