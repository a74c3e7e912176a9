/*
 * zflow/data.h — the data plane: capsules (zf_data), the shared-memory pool
 * they live in, and links, the bounded queues that carry them. For node
 * authors (capsules) and embedders (pools and links of their own).
 * Sending consumes: a capsule handed to zf_send or zf_link_push is no
 * longer the caller's (*d is NULL afterwards).
 */
#ifndef ZFLOW_DATA_H
#define ZFLOW_DATA_H

#include <zflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- capsules and the pool ---- */

typedef struct zf_pool_config {
    uint64_t max_bytes;     /**< cap on bytes in use; 0 = unlimited */
    uint64_t segment_bytes; /**< the first small-block segment (each next one twice as
                                 large, up to 64 MiB); 0 = 256 KiB */
    const char *name;       /**< for logs and memfd names; may be NULL */
} zf_pool_config;

typedef struct zf_pool_stats {
    uint64_t bytes_in_use;     /**< bytes of blocks handed out, headers included */
    uint64_t bytes_high_water; /**< maximum of bytes_in_use */
    uint64_t blocks_in_use;    /**< capsules alive in this pool */
    uint64_t allocs;           /**< successful allocations */
    uint64_t frees;            /**< blocks returned */
    uint64_t alloc_failures;   /**< allocations refused (cap reached or no memory) */
    uint64_t bytes_mapped;     /**< shared memory mapped (in use + cached free) */
    uint64_t segments;         /**< memfd segments mapped */
} zf_pool_stats;

/** Create a pool. `cfg` may be NULL (defaults). On ZF_OK the caller owns
 *  *out and releases it with zf_pool_destroy. Errors: ZF_EINVAL, ZF_ENOMEM,
 *  ZF_ESYS (memfd_create or mmap failed). */
ZF_EXPORT ZF_NODISCARD zf_err zf_pool_create(const zf_pool_config *cfg, zf_pool **out);

/** Give up the caller's ownership of the pool. Memory is unmapped at once if
 *  no capsule of the pool is alive, otherwise when the last one is released.
 *  NULL is a no-op. */
ZF_EXPORT void zf_pool_destroy(zf_pool *pool);

/** Snapshot of the pool's accounting into *out (lock-free, approximate
 *  under concurrent use); all zeros for a NULL pool. */
ZF_EXPORT void zf_pool_stats_get(const zf_pool *pool, zf_pool_stats *out);

/** Allocate a unique, writable capsule of `len` bytes from `pool`. The bytes
 *  are not zeroed. On ZF_OK the caller owns *out (one reference).
 *  Errors: ZF_EINVAL (NULL argument), ZF_ENOMEM (cap reached or the system
 *  refused more memory; never an OOM kill), ZF_ESYS. */
ZF_EXPORT ZF_NODISCARD zf_err zf_pool_alloc(zf_pool *pool, size_t len, zf_data **out);

/** Pre-fault memory for `count` capsules of `len` bytes, so that the first
 *  frames of a pipeline do not pay for fresh pages (about 10 us per 4 KiB
 *  page on small VMs): allocates them and releases them to the pool's free
 *  lists. Counts against max_bytes while it runs. Errors: as zf_pool_alloc
 *  (what was reserved before the failure stays in the free lists). */
ZF_EXPORT ZF_NODISCARD zf_err zf_pool_reserve(zf_pool *pool, size_t len, size_t count);

/** Pre-fault the node's instance pool for `count` capsules of `len` bytes
 *  (see zf_pool_reserve); call it from init. ZF_EINVAL for a NULL node,
 *  else as zf_pool_reserve. */
ZF_EXPORT ZF_NODISCARD zf_err zf_data_reserve(zf_node *node, size_t len, size_t count);

/** Allocate from the pool of the node's instance; as zf_pool_alloc (*out
 *  NULL on error), plus ZF_ECLOSED for a node abandoned at stop. */
ZF_EXPORT ZF_NODISCARD zf_err zf_data_alloc(zf_node *node, size_t len, zf_data **out);

/** A release callback for pinned memory. */
typedef void (*zf_release_fn)(void *arg);

/** Pin memory the caller owns into a capsule, without copying it. The
 *  runtime calls release(arg) exactly once, on whatever thread drops the
 *  last reference anywhere. `release` may be NULL (nothing to release).
 *  The memory must stay valid and unchanged until then. On ZF_OK the caller
 *  owns *out (one reference) and the capsule owns the memory; on error
 *  nothing was taken and release is not called. Errors: ZF_EINVAL, ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_data_wrap(void *ptr, size_t len, zf_release_fn release, void *arg,
                                           zf_data **out);

/** Make a capsule over memory that lives as long as the process (string
 *  literals, globals). An address on the calling thread's stack is refused
 *  with ZF_EINVAL (use zf_data_alloc or zf_data_wrap instead). On ZF_OK the
 *  caller owns *out. */
ZF_EXPORT ZF_NODISCARD zf_err zf_data_static(const void *ptr, size_t len, zf_data **out);

/* The accessors below take a live capsule: NULL or a released one is a
 * programmer error, caught (an abort naming the call) in debug builds. */

/** The bytes of a capsule (read-only once shared), owned by the capsule. */
ZF_EXPORT const void *zf_data_ptr(const zf_data *d);
/** The length in bytes. */
ZF_EXPORT size_t zf_data_len(const zf_data *d);
/** Bytes the buffer can hold (>= len; pool capsules may have slack). */
ZF_EXPORT size_t zf_data_capacity(const zf_data *d);

/** Writable access. A unique capsule returns its own buffer. A shared one is
 *  first copied into a new unique pool capsule (copy on write): *d is
 *  replaced by the copy and the caller's reference to the original is
 *  dropped; other holders keep the untouched original. Returns NULL (and *d
 *  is unchanged) when the copy cannot be allocated, or d or *d is NULL. */
ZF_EXPORT void *zf_data_mut(zf_data **d);

/** Shrink or grow the length of a unique capsule within its capacity.
 *  Errors: ZF_EINVAL (len > capacity), ZF_ESTATE (shared capsule). */
ZF_EXPORT ZF_NODISCARD zf_err zf_data_set_len(zf_data *d, size_t len);

/** Take one more reference; returns d. The caller owns the new reference.
 *  It makes the capsule shared (read-only) for every holder. */
ZF_EXPORT zf_data *zf_data_ref(zf_data *d);

/** Drop one reference; the last one frees the buffer (back to the pool, or
 *  the release callback). NULL is a no-op. */
ZF_EXPORT void zf_data_unref(zf_data *d);

/** Number of references (a snapshot; for tests and diagnostics). */
ZF_EXPORT unsigned zf_data_refcount(const zf_data *d);
/** True when the caller holds the only reference. */
ZF_EXPORT bool zf_data_is_unique(const zf_data *d);

/** Capsules found written while shared, in this process: with
 *  ZF_CHECK_SHARED=1 in the environment (a debug mode: a shared capsule's
 *  payload is summed when it becomes shared and checked whenever one of its
 *  references is released; each finding is logged at ERROR), else 0. */
ZF_EXPORT uint64_t zf_debug_shared_writes(void);

/** Metadata: timestamp (zf_clock_ns when first sent, unless set; 0 before) and
 *  a sequence number (set by zf_send per output port unless set). */
ZF_EXPORT uint64_t zf_data_timestamp(const zf_data *d);
ZF_EXPORT uint64_t zf_data_seq(const zf_data *d);
/** Setters require a unique capsule (ZF_ESTATE otherwise). */
ZF_EXPORT ZF_NODISCARD zf_err zf_data_set_timestamp(zf_data *d, uint64_t ns);
ZF_EXPORT ZF_NODISCARD zf_err zf_data_set_seq(zf_data *d, uint64_t seq);

/** Process-wide counters of pinned memory: capsules made by zf_data_wrap and
 *  release callbacks invoked so far (into *out). */
typedef struct zf_wrap_stats {
    uint64_t wrapped;  /**< capsules made by zf_data_wrap */
    uint64_t released; /**< release callbacks invoked */
} zf_wrap_stats;
/** The counters now, into *out. */
ZF_EXPORT void zf_wrap_stats_get(zf_wrap_stats *out);

/* ---- links: bounded queues of capsules ---- */

/* What a full link does; the names are the descriptor's `queue.policy`. */
#define ZF_POLICY_MAP(X)                                                                           \
    X(ZF_POLICY_BLOCK, 0, "block")             /* the producer waits */                            \
    X(ZF_POLICY_DROP_OLDEST, 1, "drop_oldest") /* the oldest capsule queued is dropped */          \
    X(ZF_POLICY_DROP_NEWEST, 2, "drop_newest") /* the capsule being sent is dropped */

typedef enum zf_policy { ZF_POLICY_MAP(ZF_ENUM_VALUE_) } zf_policy;

/** "block", "drop_oldest", "drop_newest" (ZF_UNKNOWN_NAME otherwise). */
ZF_EXPORT const char *zf_policy_name(zf_policy p);

typedef struct zf_link_config {
    uint32_t capacity;  /**< messages; 0 = default (16) */
    uint64_t max_bytes; /**< bytes queued; 0 = no byte limit */
    zf_policy policy;   /**< what a full link does; default ZF_POLICY_BLOCK */
} zf_link_config;

typedef struct zf_link_stats {
    uint64_t depth;      /**< messages queued now */
    uint64_t bytes;      /**< bytes queued now */
    uint64_t high_water; /**< maximum depth seen */
    uint64_t enqueued;   /**< capsules accepted */
    uint64_t dequeued;   /**< capsules taken by consumers */
    uint64_t dropped;    /**< by the policy, the breaker or closing */
    uint64_t blocked_ns; /**< time producers spent waiting for room */
    uint32_t capacity;   /**< messages the link holds */
    zf_policy policy;    /**< its policy */
} zf_link_stats;

/** Create a link (multi-producer, multi-consumer safe). `cfg` may be NULL
 *  (defaults). On ZF_OK the caller owns *out (zf_link_destroy); else *out is
 *  NULL. Errors: ZF_EINVAL (capacity out of range), ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_link_create(const zf_link_config *cfg, zf_link **out);

/** Destroy a link; capsules still queued are released. NULL is a no-op.
 *  No thread may be using the link. */
ZF_EXPORT void zf_link_destroy(zf_link *link);

/** Enqueue *d, consuming it: *d is NULL afterwards whatever the result.
 *  A full `block` link waits up to timeout_ns (<0: forever) for room;
 *  `drop_oldest` drops the oldest queued capsule; `drop_newest` drops *d
 *  (counted in `dropped`, result ZF_OK). Errors: ZF_ETIMEDOUT (dropped),
 *  ZF_ECLOSED (link closed; dropped), ZF_EINVAL. */
ZF_EXPORT ZF_NODISCARD zf_err zf_link_push(zf_link *link, zf_data **d, int64_t timeout_ns);

/** As zf_link_push, but a full `block` link returns ZF_EAGAIN at once and
 *  the caller keeps *d. */
ZF_EXPORT ZF_NODISCARD zf_err zf_link_try_push(zf_link *link, zf_data **d);

/** Fan-out: enqueue one capsule on n links, adding a reference per extra
 *  link. Consumes *d. Returns the first error met (each link still gets its
 *  copy of the pointer when it has room). */
ZF_EXPORT ZF_NODISCARD zf_err zf_link_push_all(zf_link *const *links, size_t n, zf_data **d,
                                               int64_t timeout_ns);

/** Dequeue into *out (the caller owns it). Waits up to timeout_ns (<0:
 *  forever): it spins briefly, then sleeps on a futex. Errors: ZF_ETIMEDOUT,
 *  ZF_ECLOSED (closed and empty: end of stream). */
ZF_EXPORT ZF_NODISCARD zf_err zf_link_pop(zf_link *link, zf_data **out, int64_t timeout_ns);

/** As zf_link_pop without waiting: ZF_EAGAIN when empty. */
ZF_EXPORT ZF_NODISCARD zf_err zf_link_try_pop(zf_link *link, zf_data **out);

/** End of stream: later pushes fail with ZF_ECLOSED; consumers drain what
 *  is queued, then get ZF_ECLOSED. Wakes every waiter. Idempotent; NULL is
 *  a no-op. */
ZF_EXPORT void zf_link_close(zf_link *link);

/** Snapshot of the link's counters into *out (each has one writer: exact
 *  for a quiet link, approximate while it moves); all zeros for NULL. */
ZF_EXPORT void zf_link_stats_get(const zf_link *link, zf_link_stats *out);

#ifdef __cplusplus
}
#endif

#endif
