/* Capsules: reference counting, pinning, static memory, copy on write.
 *
 * The last zf_data_unref frees: a pool block goes back to its pool, a
 * pinned buffer's release callback runs (exactly once, on that thread).
 * A freed header is marked (magic DEAD) so a later use aborts with a
 * clear message naming the capsule; debug builds (ZF_DEBUG_POISON) also
 * hold freed capsules in their pool's quarantine so the mark is not
 * overwritten by the next allocation at once. The holder of the only
 * reference frees with plain stores (no locked instruction). */
#include "core/capsule.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- per-thread context and pinned-memory accounting ---- */

ZFI_TLS zfi_ctx zfi_thread_ctx;

static atomic_uint_fast64_t global_wrapped, global_released;

zfi_acct *zfi_acct_new(void)
{
    zfi_acct *a = zfi_calloc(1, sizeof *a);
    if (a)
        atomic_init(&a->refs, 1);
    return a;
}

void zfi_acct_ref(zfi_acct *a)
{
    if (a)
        atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void zfi_acct_unref(zfi_acct *a)
{
    if (a && atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) == 1)
        free(a);
}

void zf_wrap_stats_get(zf_wrap_stats *out)
{
    out->wrapped = atomic_load(&global_wrapped);
    out->released = atomic_load(&global_released);
}

/* ---- checks ---- */

void zfi_data_check_fail(const zf_data *d, const char *where)
{
    if (!d)
        zfi_fatal("capsule", "%s: NULL capsule", where);
    uint32_t m = atomic_load_explicit(&((zf_data *)d)->magic, memory_order_relaxed);
    if (m == ZFI_MAGIC_DEAD)
        zfi_fatal("capsule",
                  "%s: capsule %p (len %llu, seq %llu) used after its last zf_data_unref; take a "
                  "reference with zf_data_ref to keep it",
                  where, (const void *)d, (unsigned long long)d->len, (unsigned long long)d->seq);
    zfi_fatal("capsule", "%s: %p is not a capsule (bad header magic 0x%08x)", where,
              (const void *)d, m);
}

/* ---- freeing ---- */

/* The last reference dropped: a pinned buffer goes back to its owner now,
 * whatever the build (the release callback must not be delayed); a pool
 * block goes back to its pool (in debug builds after a while in its
 * pool's quarantine, marked dead). */
static void free_capsule(zf_data *d)
{
    if (d->kind == ZFI_KIND_SMALL || d->kind == ZFI_KIND_LARGE) {
        zfi_pool_free(d);
        return;
    }
    if (d->kind == ZFI_KIND_REMOTE) {
        zfi_ext *x = (zfi_ext *)d;
        x->release(x->arg);
    } else if (d->kind == ZFI_KIND_WRAP) {
        zfi_ext *x = (zfi_ext *)d;
        if (x->release)
            x->release(x->arg);
        atomic_fetch_add_explicit(&global_released, 1, memory_order_relaxed);
        if (x->acct) {
            atomic_fetch_add_explicit(&x->acct->released, 1, memory_order_relaxed);
            zfi_acct_unref(x->acct);
            x->acct = NULL;
        }
    }
    free(d);
}

/* ---- the shared-write check (ZF_CHECK_SHARED) ---- */

_Atomic bool zfi_check_shared;
static atomic_uint_fast64_t global_shared_writes;

/* FNV-1a over the payload's 64-bit words (and the tail's bytes); | 1 so
 * that 0 means "no sum". */
static uint64_t payload_sum(const zf_data *d)
{
    const unsigned char *p = zfi_payload(d);
    size_t n = (size_t)d->len, i = 0;
    uint64_t h = 1469598103934665603ull;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h | 1;
}

/* Another reference to a unique capsule: remember what it holds. */
static void check_becomes_shared(zf_data *d)
{
    atomic_store_explicit(&d->check, payload_sum(d), memory_order_relaxed);
}

/* A reference released while shared (before: the count before the drop). */
static void check_release(zf_data *d, uint32_t before)
{
    uint64_t want = atomic_load_explicit(&d->check, memory_order_relaxed);
    if (!want)
        return;
    if (payload_sum(d) != want && atomic_exchange(&d->check, 0) == want) {
        atomic_fetch_add_explicit(&global_shared_writes, 1, memory_order_relaxed);
        zfi_log(ZF_LOG_ERROR, "capsule",
                "capsule %p (seq %llu, %llu bytes) was written while shared: its bytes changed "
                "after it was sent to several receivers (a node wrote through zf_data_ptr; "
                "use zf_data_mut, which copies a shared capsule)",
                (void *)d, (unsigned long long)d->seq, (unsigned long long)d->len);
        if (d->kind == ZFI_KIND_SMALL || d->kind == ZFI_KIND_LARGE)
            zfi_pool_note_shared_write(d);
        return;
    }
    if (before == 2) /* unique again: its holder may write it */
        atomic_store_explicit(&d->check, 0, memory_order_relaxed);
}

uint64_t zf_debug_shared_writes(void)
{
    return atomic_load_explicit(&global_shared_writes, memory_order_relaxed);
}

/* ---- references ---- */

zf_data *zf_data_ref(zf_data *d)
{
    zfi_data_check(d, "zf_data_ref");
    if (ZFI_UNLIKELY(atomic_load_explicit(&zfi_check_shared, memory_order_relaxed)) &&
        atomic_load_explicit(&d->refs, memory_order_relaxed) == 1)
        check_becomes_shared(d); /* the caller is its only holder */
    atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
    zfi_held(1);
    return d;
}

void zf_data_unref(zf_data *d)
{
    if (!d)
        return;
    zfi_data_check(d, "zf_data_unref");
    zfi_held(-1);
    /* The holder of the only reference needs no read-modify-write: nobody
     * else can take one (acquire: whatever other holders did before their
     * release-decrement happens before the free). Shared: acq_rel rather
     * than release + an acquire fence on the last drop (the same
     * instruction on x86, and ThreadSanitizer does not model fences). */
    uint32_t before = atomic_load_explicit(&d->refs, memory_order_acquire);
    if (before != 1) {
        if (ZFI_UNLIKELY(atomic_load_explicit(&zfi_check_shared, memory_order_relaxed)))
            check_release(d, before);
        before = atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel);
        if (ZFI_LIKELY(before > 1))
            return;
        if (before == 0)
            zfi_fatal("capsule",
                      "zf_data_unref: capsule %p (len %llu) released more times than "
                      "it was referenced",
                      (void *)d, (unsigned long long)d->len);
    } else {
        atomic_store_explicit(&d->refs, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&d->magic, ZFI_MAGIC_DEAD, memory_order_relaxed);
    free_capsule(d);
}

unsigned zf_data_refcount(const zf_data *d)
{
    zfi_data_check(d, "zf_data_refcount");
    return atomic_load_explicit(&((zf_data *)d)->refs, memory_order_acquire);
}

bool zf_data_is_unique(const zf_data *d)
{
    return zf_data_refcount(d) == 1;
}

/* ---- access ---- */

const void *zf_data_ptr(const zf_data *d)
{
    zfi_data_check(d, "zf_data_ptr");
    return zfi_payload(d);
}

size_t zf_data_len(const zf_data *d)
{
    zfi_data_check(d, "zf_data_len");
    return (size_t)d->len;
}

size_t zf_data_capacity(const zf_data *d)
{
    zfi_data_check(d, "zf_data_capacity");
    return (size_t)d->cap;
}

uint64_t zf_data_timestamp(const zf_data *d)
{
    zfi_data_check(d, "zf_data_timestamp");
    return d->ts;
}

uint64_t zf_data_seq(const zf_data *d)
{
    zfi_data_check(d, "zf_data_seq");
    return d->seq;
}

static zf_err require_unique(const zf_data *d, const char *where)
{
    zfi_data_check(d, where);
    if (atomic_load_explicit(&((zf_data *)d)->refs, memory_order_acquire) != 1)
        return zfi_error(ZF_ESTATE,
                         "%s: capsule %p is shared (read-only); use zf_data_mut for "
                         "a private copy",
                         where, (const void *)d);
    return ZF_OK;
}

zf_err zf_data_set_timestamp(zf_data *d, uint64_t ns)
{
    zf_err e = require_unique(d, "zf_data_set_timestamp");
    if (e == ZF_OK)
        d->ts = ns;
    return e;
}

zf_err zf_data_set_seq(zf_data *d, uint64_t seq)
{
    zf_err e = require_unique(d, "zf_data_set_seq");
    if (e == ZF_OK)
        d->seq = seq;
    return e;
}

zf_err zf_data_set_len(zf_data *d, size_t len)
{
    zf_err e = require_unique(d, "zf_data_set_len");
    if (e != ZF_OK)
        return e;
    if (len > d->cap)
        return zfi_error(ZF_EINVAL, "zf_data_set_len: %zu exceeds the capacity %llu", len,
                         (unsigned long long)d->cap);
    d->len = len;
    return ZF_OK;
}

void *zf_data_mut(zf_data **dp)
{
    if (!dp)
        return NULL;
    zf_data *d = *dp;
    zfi_data_check(d, "zf_data_mut");
    bool unique = atomic_load_explicit(&d->refs, memory_order_acquire) == 1;
    if (unique && d->kind != ZFI_KIND_STATIC && (d->kind != ZFI_KIND_REMOTE || d->cls))
        return zfi_payload(d);
    /* Copy on write: a private copy from the same pool when the capsule is
     * pool-backed, else from the current instance's (or the default) pool. */
    zf_pool *pool = NULL;
    zfi_ctx *ctx = zfi_ctx_get();
    if (ctx->pool)
        pool = ctx->pool;
    if (!pool)
        pool = zfi_pool_default();
    zf_data *copy = NULL;
    if (!pool || zf_pool_alloc(pool, (size_t)d->len, &copy) != ZF_OK)
        return NULL;
    memcpy(zfi_payload(copy), zfi_payload(d), (size_t)d->len);
    copy->ts = d->ts;
    copy->seq = d->seq;
    *dp = copy;
    zf_data_unref(d);
    return zfi_payload(copy);
}

/* ---- pinned and static memory ---- */

static zf_err new_ext(int kind, void *ptr, size_t len, zf_data **out, zfi_ext **xo)
{
    zfi_ext *x = aligned_alloc(ZFI_CACHELINE,
                               (sizeof *x + ZFI_CACHELINE - 1) / ZFI_CACHELINE * ZFI_CACHELINE);
    if (!x)
        return zfi_error(ZF_ENOMEM, "out of memory for a capsule header");
    memset(x, 0, sizeof *x);
    x->h.kind = (uint8_t)kind;
    atomic_store_explicit(&x->h.refs, 1, memory_order_relaxed);
    x->h.len = len;
    x->h.cap = len; /* stamped when first sent */
    atomic_store_explicit(&x->h.magic, ZFI_MAGIC_LIVE, memory_order_relaxed);
    x->ptr = ptr;
    zfi_held(1);
    *out = &x->h;
    *xo = x;
    return ZF_OK;
}

zf_err zf_data_wrap(void *ptr, size_t len, zf_release_fn release, void *arg, zf_data **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_data_wrap: out is NULL");
    *out = NULL;
    if (!ptr && len)
        return zfi_error(ZF_EINVAL, "zf_data_wrap: NULL pointer with length %zu", len);
    zfi_ext *x = NULL;
    zf_err e = new_ext(ZFI_KIND_WRAP, ptr, len, out, &x);
    if (e != ZF_OK)
        return e;
    x->release = release;
    x->arg = arg;
    x->acct = zfi_ctx_get()->acct;
    if (x->acct) {
        zfi_acct_ref(x->acct);
        atomic_fetch_add_explicit(&x->acct->wrapped, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&global_wrapped, 1, memory_order_relaxed);
    return ZF_OK;
}

zf_err zfi_data_remote(void *ptr, size_t len, size_t cap, bool writable, zf_release_fn release,
                       void *arg, zf_data **out)
{
    zfi_ext *x = NULL;
    zf_err e = new_ext(ZFI_KIND_REMOTE, ptr, len, out, &x);
    if (e != ZF_OK)
        return e;
    x->h.cap = cap;
    x->h.cls = writable; /* remote: 1 if loaned (writable) */
    x->release = release;
    x->arg = arg;
    return ZF_OK;
}

void *zfi_data_remote_arg(const zf_data *d)
{
    return d->kind == ZFI_KIND_REMOTE ? ((const zfi_ext *)d)->arg : NULL;
}

void zfi_data_remote_forget(zf_data *d)
{
    zfi_held(-1);
    atomic_store_explicit(&d->magic, ZFI_MAGIC_DEAD, memory_order_relaxed);
    free(d);
}

/* The calling thread's stack, found once per thread. */
static bool on_own_stack(const void *p)
{
    static _Thread_local uintptr_t lo, hi;
    if (!hi) {
        pthread_attr_t attr;
        void *addr;
        size_t size;
        if (pthread_getattr_np(pthread_self(), &attr) != 0)
            return false;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            lo = (uintptr_t)addr;
            hi = lo + size;
        }
        pthread_attr_destroy(&attr);
    }
    uintptr_t a = (uintptr_t)p;
    return a >= lo && a < hi;
}

zf_err zf_data_static(const void *ptr, size_t len, zf_data **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_data_static: out is NULL");
    *out = NULL;
    if (!ptr && len)
        return zfi_error(ZF_EINVAL, "zf_data_static: NULL pointer with length %zu", len);
    if (ptr && on_own_stack(ptr))
        return zfi_error(ZF_EINVAL,
                         "zf_data_static: %p is on the calling thread's stack, which is gone "
                         "when the function returns; a capsule may outlive it. Use "
                         "zf_data_alloc (pool memory) or zf_data_wrap (your own heap memory "
                         "with a release callback) instead",
                         ptr);
    zfi_ext *x = NULL;
    return new_ext(ZFI_KIND_STATIC, (void *)ptr, len, out, &x);
}
