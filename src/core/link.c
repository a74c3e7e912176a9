/* Links: bounded, lock-free rings of capsule handles.
 *
 * A ring in the manner of Vyukov's: a power-of-two array of cells, each a
 * sequence word and an 8-byte handle (core/capsule.h), with the producers'
 * position (`tail`) and the consumers' (`head`) on cache lines of their
 * own. A producer claims position t with a compare-and-swap on tail when
 * its view of head says cell t is free, writes the handle and publishes
 * the cell (sequence t + 1); a consumer reads the handle of a published
 * cell and claims position h with a compare-and-swap on head, which is
 * also what frees the cell: unlike Vyukov's, a consumer never writes a
 * cell back. So cells are written by producers only, claims are on lines
 * that their side alone normally writes, and a message makes one line
 * cross cores: its cell, which carries the capsule's length too, so a
 * take reads nothing of the capsule (its header crosses when the consumer
 * first uses it, fetched ahead at the take). Several producers and consumers at once are
 * correct, which is what the rare parties are: the watchdog's breaker and
 * the stop (consumers that drop), `drop_oldest` (the producer dropping the
 * head), threads the runtime does not own. While only the runtime's two
 * nodes use a link, each side is owned by its node and claimed with a
 * plain store instead (side_share, below).
 *
 * The ring holds at least capacity + ZFI_LINK_BURST cells; `capacity` is
 * enforced against the producers' cached view of head (head only grows, so
 * a stale view only errs towards "full", and is then refreshed). A
 * producer inside a runtime callback is never refused by a full `block`
 * link: the capsule is accepted and the producer parked. A burst that
 * outgrows even the ring goes to a spill list (under a mutex: the rare
 * path), after which every push goes there until the consumer has moved it
 * back into the ring, so order holds.
 *
 * Counters have one writer each or are on the rare path: enqueued is the
 * tail (plus what went through the spill list), dequeued the consumer's
 * own count plus public pops, bytes are counted in by the producer and out
 * by the consumer (the runtime's own parties count with plain stores,
 * others with atomic adds), depth is computed. High water is refreshed
 * exactly whenever the producer refreshes its view of head: at every
 * ZFI_LINK_HW_EVERY-th position while the link is deeper than the high
 * water seen, and whenever it looks full; so it is exact at capacity and
 * can miss a spike shorter than that many messages. (A refresh reads the
 * consumers' line, and the consumer's next claim waits for it to come back:
 * refreshing at every push made that wait part of most hops.)
 *
 * Waiting is spin-then-park on eventcounts (core/futex.h). A producer node
 * parked on a full link raises `room_wanted`; the consumer, after a take
 * (a seq_cst compare-and-swap; an owning consumer's plain take is followed
 * by a fence at the end of its step, zfi_link_settle, and the check again),
 * reads the flag and calls on_room once the
 * link is down to half its capacity (hysteresis: the producer then has room
 * for a burst, not for one message); the producer, after raising it
 * (seq_cst), checks for room again and takes the flag back if there is:
 * one of the two always sees the other, so a wake-up cannot be lost. */
#include "core/link.h"

#include "core/asym.h"
#include "core/capsule.h"
#include "core/futex.h"
#include "core/tap.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CAPACITY  16u
#define SPIN_NS           50000u
#define ZFI_LINK_BURST    32u
#define ZFI_LINK_HW_EVERY 16u
#define MAX_DROPS         16u
#define FLUSH_WAIT_NS     10000000u /* a flush's wait for a reserved cell */

/* Set in tail by close (under spill_mu): no cell is reserved after it, so
 * a consumer that sees it, then tail equal to head, has seen the last
 * message. Positions never reach it. */
#define TAIL_CLOSED (1ull << 63)

/* A side of the ring (its producers' tail, its consumers' head) is owned or
 * shared. Owned, one party (the runtime's node at that end) moves the
 * position with plain stores; every other party first makes the side
 * shared for good (side_share), after which everyone claims positions with
 * a compare-and-swap. */
enum side_mode { SIDE_OWNED = 0, SIDE_SHARING = 1, SIDE_SHARED = 2 };

/* A cell's word packs its sequence (the low 32 bits: its position + 1 once
 * published, compared modulo 2^32, the ring being far smaller) and the
 * capsule's length (the high 32 bits; CELL_LEN_BIG: in the header only), so
 * a consumer counts the bytes it takes without reading the capsule's
 * header, a line last written on the producer's core. */
typedef struct cell {
    _Atomic uint64_t word;
    _Atomic uint64_t h;
} cell;
#define CELL_LEN_BIG 0xffffffffu

static inline uint64_t cell_word(uint64_t pos, uint64_t len)
{
    return (len < CELL_LEN_BIG ? len : CELL_LEN_BIG) << 32 | (uint32_t)(pos + 1);
}

/* How far the cell's sequence is from position pos's: 0, published for pos;
 * below, an older lap (empty); above, a newer one (pos is stale). */
static inline int32_t cell_lag(uint64_t word, uint64_t pos)
{
    return (int32_t)((uint32_t)word - (uint32_t)(pos + 1));
}

struct zf_link {
    /* Read-mostly: set at creation (and the hooks before use). */
    cell *cells;
    uint64_t mask;
    uint32_t capacity;
    zf_policy policy;
    uint64_t max_bytes;
    zfi_link_hook on_data, on_room;
    void *data_arg, *room_arg;
    bool pub_release; /* the asymmetric barrier is there: release_pub */

    /* The producers' line: written by producers only. */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t tail;
    _Atomic uint64_t head_seen; /* producers' view of head (a cache) */
    _Atomic uint64_t high_water;
    _Atomic uint64_t bytes_in;   /* by the producer node (plain stores) */
    _Atomic uint64_t bytes_in_x; /* by other producers (atomic adds) */
    _Atomic uint32_t prod_busy;  /* the owning producer is inside a plain put */

    /* The consumers' line: written by consumers only. */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t head;
    _Atomic uint64_t delivered;   /* by the consumer node (plain stores) */
    _Atomic uint64_t bytes_out;   /* by the consumer node (plain stores) */
    _Atomic uint64_t popped;      /* public pops (atomic adds) */
    _Atomic uint64_t bytes_out_x; /* by other consumers (atomic adds) */
    _Atomic uint32_t cons_busy;   /* the owning consumer is inside a plain take */

    /* The rare parties' line: read on every push and take, written only
     * by what is rare (close, breaker, parking, bursts, waiters). */
    _Alignas(ZFI_CACHELINE) _Atomic uint32_t closed;
    _Atomic uint32_t breaker;
    _Atomic uint32_t room_wanted; /* a producer node is parked until room */
    _Atomic uint32_t spill_n;     /* capsules in the spill list */
    _Atomic uint32_t tapped;      /* a tap is attached: pushes take the slow path */
    _Atomic uint32_t tap_users;   /* pushes offering to the tap right now */
    _Atomic(zfi_tap *) tap;
    _Atomic uint32_t prod_mode, cons_mode; /* enum side_mode */
    zfi_evc data_evc, room_evc;

    /* Written on drops, bursts and blocking only. */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t dropped;
    _Atomic uint64_t spilled; /* enqueued through the spill list, less moved back */
    atomic_uint_fast64_t blocked_ns;

    pthread_mutex_t spill_mu;
    zfi_handle *spill;
    size_t spill_head, spill_len, spill_cap;
};

static inline uint64_t ld(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static inline void bump(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, ld(c) + v, memory_order_relaxed);
}

/* ---- lifecycle ---- */

zf_err zf_link_create(const zf_link_config *cfg, zf_link **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_link_create: out is NULL");
    *out = NULL;
    zf_link_config def = {0};
    if (!cfg)
        cfg = &def;
    if ((unsigned)cfg->policy > ZF_POLICY_DROP_NEWEST)
        return zfi_error(ZF_EINVAL, "zf_link_create: unknown policy %d", (int)cfg->policy);
    uint32_t cap = cfg->capacity ? cfg->capacity : DEFAULT_CAPACITY;
    if (cap > (1u << 29))
        return zfi_error(ZF_EINVAL, "zf_link_create: capacity %u is too large", cap);
    zf_link *l = aligned_alloc(ZFI_CACHELINE,
                               (sizeof *l + ZFI_CACHELINE - 1) / ZFI_CACHELINE * ZFI_CACHELINE);
    if (!l)
        return zfi_error(ZF_ENOMEM, "zf_link_create: out of memory");
    memset(l, 0, sizeof *l);
    uint64_t n = 64;
    while (n < (uint64_t)cap + ZFI_LINK_BURST)
        n <<= 1;
    l->cells = aligned_alloc(ZFI_CACHELINE, n * sizeof *l->cells);
    if (!l->cells) {
        free(l);
        return zfi_error(ZF_ENOMEM, "zf_link_create: out of memory for %u cells", cap);
    }
    for (uint64_t i = 0; i < n; i++) {
        atomic_init(&l->cells[i].word, 0); /* cell i first holds position i: sequence i + 1 */
        atomic_init(&l->cells[i].h, 0);
    }
    atomic_init(&l->prod_mode, SIDE_SHARED);
    atomic_init(&l->cons_mode, SIDE_SHARED);
    l->mask = n - 1;
    l->capacity = cap;
    l->max_bytes = cfg->max_bytes;
    l->policy = cfg->policy;
    zfi_asym_init();
    l->pub_release = zfi_asym_ok();
    zfi_evc_init(&l->data_evc);
    zfi_evc_init(&l->room_evc);
    pthread_mutex_init(&l->spill_mu, NULL);
    *out = l;
    return ZF_OK;
}

static zf_data *take_any(zf_link *l);

void zf_link_destroy(zf_link *l)
{
    if (!l)
        return;
    /* Nobody else uses it now: shared without the barrier. */
    atomic_store(&l->prod_mode, SIDE_SHARED);
    atomic_store(&l->cons_mode, SIDE_SHARED);
    zf_data *d;
    while ((d = take_any(l)))
        zf_data_unref(d);
    free(l->spill);
    pthread_mutex_destroy(&l->spill_mu);
    free(l->cells);
    free(l);
}

void zfi_link_set_hooks(zf_link *l, zfi_link_hook on_data, void *data_arg, zfi_link_hook on_room,
                        void *room_arg)
{
    l->on_data = on_data;
    l->data_arg = data_arg;
    l->on_room = on_room;
    l->room_arg = room_arg;
}

void zfi_link_set_on_data(zf_link *l, zfi_link_hook on_data, void *data_arg)
{
    /* A source's own thread may be pushing already: the argument first,
     * then the hook, published (after_push reads it with acquire). */
    l->data_arg = data_arg;
    __atomic_store_n(&l->on_data, on_data, __ATOMIC_RELEASE);
}

/* ---- the ring ---- */

/* The producers' position: tail without its closed bit. */
static inline uint64_t tail_pos(zf_link *l)
{
    return atomic_load_explicit(&l->tail, memory_order_seq_cst) & ~TAIL_CLOSED;
}

/* Make a side shared, once and for good, before a party other than its
 * owner moves its position (an asymmetric Dekker, core/asym.h). The owner
 * raises `busy`, then reads the mode: still owned, it moves the position
 * with plain stores and lowers `busy` (release). Here: the mode leaves
 * SIDE_OWNED, the process-wide barrier runs, and `busy` is waited down. So
 * an owner's plain operation either saw the mode change (and took the
 * shared path) or is seen busy and waited for; after this, every operation
 * on the side claims with a compare-and-swap. The owner's window is a few
 * instructions (no call, no wait), so the wait is short unless the owner
 * lost its CPU inside it. Racing sharers: one runs the barrier, the others
 * wait for SIDE_SHARED. */
static __attribute__((noinline)) void side_share_slow(_Atomic uint32_t *mode,
                                                      _Atomic uint32_t *busy)
{
    uint32_t m = SIDE_OWNED;
    if (atomic_compare_exchange_strong(mode, &m, SIDE_SHARING)) {
        zfi_asym_barrier();
        for (unsigned i = 0; atomic_load_explicit(busy, memory_order_acquire); i++)
            if ((i & 1023) == 1023)
                sched_yield(); /* the owner may be off the CPU, inside its window */
            else
                zfi_cpu_relax();
        atomic_store_explicit(mode, SIDE_SHARED, memory_order_release);
        return;
    }
    for (unsigned i = 0; atomic_load_explicit(mode, memory_order_acquire) != SIDE_SHARED; i++)
        if ((i & 1023) == 1023)
            sched_yield();
        else
            zfi_cpu_relax();
}

static inline void side_share(_Atomic uint32_t *mode, _Atomic uint32_t *busy)
{
    if (ZFI_UNLIKELY(atomic_load_explicit(mode, memory_order_acquire) != SIDE_SHARED))
        side_share_slow(mode, busy);
}

/* The owner's window: raise busy, then read the mode (a compiler barrier
 * between them, the rare side's barrier is the fence). True: still owned,
 * the caller moves the position with plain stores, then calls
 * owner_leave. False: shared (busy is lowered again). */
static inline bool owner_enter(_Atomic uint32_t *mode, _Atomic uint32_t *busy)
{
    atomic_store_explicit(busy, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (ZFI_LIKELY(atomic_load_explicit(mode, memory_order_relaxed) == SIDE_OWNED))
        return true;
    atomic_store_explicit(busy, 0, memory_order_release);
    return false;
}

static inline void owner_leave(_Atomic uint32_t *busy)
{
    atomic_store_explicit(busy, 0, memory_order_release);
}

void zfi_link_own(zf_link *l)
{
    zfi_asym_init();
    if (!zfi_asym_ok())
        return; /* no barrier for the rare side: both sides stay shared */
    atomic_store(&l->prod_mode, SIDE_OWNED);
    atomic_store(&l->cons_mode, SIDE_OWNED);
}

/* Whether a push may publish its cell with release order rather than
 * seq_cst: a link nobody's node consumes (no on_data hook: the public API's
 * threads), where the asymmetric barrier is there. A seq_cst store waits
 * for the cell's line, which a consumer keeping up reads all the time:
 * that wait was most of a streaming push (perf: 62 % of zf_link_push on
 * the xchg, zf-bench hop 64 B). What the order was for: a consumer about
 * to sleep on data_evc announces itself, then looks at the cell; the
 * producer publishes, then reads the announcement. With release, the
 * sleeper runs the process-wide barrier between the two (zfi_asym_barrier:
 * the rare side; it has spun 50 us first), so one of the two sees the
 * other. A node's hook (zfi_node_notify) pairs with the publication
 * through a state the consumer node moves with plain stores: those links
 * keep seq_cst, and a hook installed while a push was on its way is
 * called after a fence (after_push). */
static inline bool release_pub(zf_link *l)
{
    return l->pub_release && !__atomic_load_n(&l->on_data, __ATOMIC_RELAXED);
}

static inline void publish(cell *c, uint64_t word, bool rel)
{
    if (rel)
        atomic_store_explicit(&c->word, word, memory_order_release);
    else
        atomic_store_explicit(&c->word, word, memory_order_seq_cst);
}

/* The owning producer's put (its side owned, no closed bit: a close shares
 * the side first): the same as the shared put below, with a plain store of
 * tail for the compare-and-swap. The publication stays seq_cst (the
 * wake-up checks after it pair with it). */
static inline bool owned_put(zf_link *l, zfi_handle h, uint64_t len, bool rel)
{
    uint64_t p = atomic_load_explicit(&l->tail, memory_order_relaxed);
    if (ZFI_UNLIKELY((int64_t)(p - atomic_load_explicit(&l->head_seen, memory_order_acquire)) >
                     (int64_t)l->mask)) {
        uint64_t seen = atomic_load_explicit(&l->head, memory_order_seq_cst);
        atomic_store_explicit(&l->head_seen, seen, memory_order_release);
        if ((int64_t)(p - seen) > (int64_t)l->mask)
            return false;
    }
    atomic_store_explicit(&l->tail, p + 1, memory_order_relaxed);
    cell *c = &l->cells[p & l->mask];
    atomic_store_explicit(&c->h, h, memory_order_relaxed);
    publish(c, cell_word(p, len), rel);
    return true;
}

/* Put h (len bytes) at the tail if a cell is free and the link is open (refill: open or
 * not, for the spill list's own capsules). Cell pos is free once the
 * consumers' head has passed pos - size (whoever claimed that position read
 * its handle before the claim): the producer reads its cached view of head
 * (refreshed only when it says "full"), never the cell (docs/data-plane.md:
 * why the consumer writes no cell back). seq_cst reservation and publication: close's bit, the
 * end-of-stream test and the wake-up checks that follow (waiters, the consumer node's state) pair
 * with them. False when full or closed. */
static inline bool ring_put(zf_link *l, zfi_handle h, uint64_t len, bool refill, bool own, bool rel)
{
    if (own) {
        if (ZFI_LIKELY(owner_enter(&l->prod_mode, &l->prod_busy))) {
            bool ok = owned_put(l, h, len, rel);
            owner_leave(&l->prod_busy);
            return ok;
        }
    } else {
        side_share(&l->prod_mode, &l->prod_busy);
    }
    uint64_t pos = atomic_load_explicit(&l->tail, memory_order_relaxed);
    for (;;) {
        if (ZFI_UNLIKELY(pos & TAIL_CLOSED) && !refill)
            return false;
        uint64_t p = pos & ~TAIL_CLOSED;
        /* head_seen is never ahead of head (any producer may store a stale
         * view: it only errs towards "full", then refreshed); it is ahead
         * of p only when p is stale (the claim below fails and reloads).
         * Acquire, with the release of whoever stored it: the consumer's
         * read of the cell's last handle, before its claim on head, comes
         * before this producer's write of the cell. */
        if (ZFI_UNLIKELY((int64_t)(p - atomic_load_explicit(&l->head_seen, memory_order_acquire)) >
                         (int64_t)l->mask)) {
            uint64_t seen = atomic_load_explicit(&l->head, memory_order_seq_cst);
            atomic_store_explicit(&l->head_seen, seen, memory_order_release);
            if ((int64_t)(p - seen) > (int64_t)l->mask)
                return false; /* every cell is taken */
        }
        if (atomic_compare_exchange_weak_explicit(&l->tail, &pos, pos + 1, memory_order_seq_cst,
                                                  memory_order_relaxed)) {
            cell *c = &l->cells[p & l->mask];
            atomic_store_explicit(&c->h, h, memory_order_relaxed);
            publish(c, cell_word(p, len), rel);
            return true;
        }
    }
}

/* When the cell at pos is published and on the line just read (not a line
 * the producer may be about to write), fetch its capsule's header: the
 * consumer reads it once it holds the capsule and its release writes it;
 * it was last written on another core.
 * Only a hint: a stale handle costs a useless prefetch, never a fault. */
static inline void prefetch_next(zf_link *l, uint64_t pos)
{
    if (!(pos % (ZFI_CACHELINE / sizeof(cell))))
        return;
    cell *c = &l->cells[pos & l->mask];
    if (cell_lag(atomic_load_explicit(&c->word, memory_order_relaxed), pos))
        return;
    zfi_handle h = atomic_load_explicit(&c->h, memory_order_relaxed);
    if (!(h & (ZFI_HANDLE_LOCAL | ZFI_HANDLE_LARGE))) {
        /* The address unchecked (zfi_handle_data checks it when the cell
         * is taken): a prefetch never faults, and the slot is masked into
         * the table. */
        uintptr_t arena = (uintptr_t)atomic_load_explicit(
            &zfi_pool_slots[(h >> ZFI_HANDLE_SLOT_SHIFT) & (ZFI_MAX_POOLS - 1)].arena,
            memory_order_relaxed);
        zfi_prefetch_w((const void *)(arena + ((h & (ZFI_HANDLE_LARGE - 1)) - 1) * ZFI_HDR_SIZE));
    }
}

/* Claim the head cell if it is published (its sequence is its position +
 * 1; an older lap's is smaller). Returns the handle, 0 if none, and the
 * length the cell carries (*len; CELL_LEN_BIG: read the header). The handle
 * is read before the claim (a compare-and-swap on head, which frees the
 * cell for the producers): a claim that fails drops what it read, and
 * nothing of the capsule is read before the claim succeeds (a capsule
 * another party claimed may be freed and reused at any moment). */
static inline zfi_handle ring_take(zf_link *l, bool own, uint32_t *len)
{
    if (own) {
        if (ZFI_LIKELY(owner_enter(&l->cons_mode, &l->cons_busy))) {
            /* The owner's take: a plain store of head for the claim
             * (release: the handle is read first). No fence: the wake-ups a
             * take owes are settled by zfi_link_settle after a fence. */
            uint64_t pos = atomic_load_explicit(&l->head, memory_order_relaxed);
            cell *c = &l->cells[pos & l->mask];
            zfi_handle h = 0;
            uint64_t w = atomic_load_explicit(&c->word, memory_order_acquire);
            if (!cell_lag(w, pos)) {
                h = atomic_load_explicit(&c->h, memory_order_relaxed);
                *len = (uint32_t)(w >> 32);
                atomic_store_explicit(&l->head, pos + 1, memory_order_release);
            }
            owner_leave(&l->cons_busy);
            if (h)
                prefetch_next(l, pos + 1);
            return h;
        }
    } else {
        side_share(&l->cons_mode, &l->cons_busy);
    }
    uint64_t pos = atomic_load_explicit(&l->head, memory_order_relaxed);
    for (;;) {
        cell *c = &l->cells[pos & l->mask];
        uint64_t w = atomic_load_explicit(&c->word, memory_order_seq_cst);
        int32_t dif = cell_lag(w, pos);
        if (dif == 0) {
            zfi_handle h = atomic_load_explicit(&c->h, memory_order_relaxed);
            if (atomic_compare_exchange_weak_explicit(&l->head, &pos, pos + 1, memory_order_seq_cst,
                                                      memory_order_relaxed)) {
                *len = (uint32_t)(w >> 32);
                prefetch_next(l, pos + 1);
                return h;
            }
        } else if (dif < 0) {
            return 0; /* empty (or a producer is between its claim and publish) */
        } else {
            pos = atomic_load_explicit(&l->head, memory_order_relaxed);
        }
    }
}

/* Messages queued: the ring and the spill list. */
static uint64_t depth_now(zf_link *l)
{
    uint64_t h = atomic_load_explicit(&l->head, memory_order_seq_cst);
    uint64_t t = tail_pos(l);
    return (t > h ? t - h : 0) + atomic_load_explicit(&l->spill_n, memory_order_relaxed);
}

/* The depth at one instant, for stats and the high water they record.
 * depth_now reads head then tail: a producer that drops the oldest and
 * pushes in between makes it count one capsule twice (a drop_oldest link
 * at capacity 8 showed a high water of 9 under TSan). Here tail is read on
 * both sides of head: equal, it did not move while head was read, so the
 * difference was the ring's depth at that read. A producer that keeps
 * moving it gets a few tries, then the ring's size bounds the answer. */
static uint64_t depth_snapshot(zf_link *l)
{
    uint64_t t = tail_pos(l), h = 0;
    for (int tries = 0; tries < 16; tries++) {
        h = atomic_load_explicit(&l->head, memory_order_seq_cst);
        uint64_t t2 = tail_pos(l);
        if (t2 == t)
            break;
        t = t2;
    }
    uint64_t ring = t > h ? t - h : 0;
    if (ring > l->mask + 1)
        ring = l->mask + 1;
    return ring + atomic_load_explicit(&l->spill_n, memory_order_relaxed);
}

static uint64_t bytes_now(zf_link *l)
{
    uint64_t in = ld(&l->bytes_in) + ld(&l->bytes_in_x);
    uint64_t out = ld(&l->bytes_out) + ld(&l->bytes_out_x);
    return in > out ? in - out : 0;
}

/* Full, for a push of `len` bytes: at capacity, or over max_bytes with
 * something queued. Refreshes the producers' view of head when it looks
 * full, and the high water from it. */
static bool looks_full(zf_link *l, uint64_t len)
{
    uint64_t t = atomic_load_explicit(&l->tail, memory_order_relaxed) & ~TAIL_CLOSED;
    uint64_t seen = atomic_load_explicit(&l->head_seen, memory_order_relaxed);
    uint64_t spill = atomic_load_explicit(&l->spill_n, memory_order_relaxed);
    if (t - seen + spill >= l->capacity) {
        seen = atomic_load_explicit(&l->head, memory_order_seq_cst);
        atomic_store_explicit(&l->head_seen, seen, memory_order_release);
    }
    uint64_t depth = (t > seen ? t - seen : 0) + spill;
    if (depth >= l->capacity)
        return true;
    return l->max_bytes && depth > 0 && bytes_now(l) + len > l->max_bytes;
}

static void note_high_water(zf_link *l, uint64_t depth)
{
    uint64_t hw = ld(&l->high_water);
    while (depth > hw &&
           !atomic_compare_exchange_weak_explicit(&l->high_water, &hw, depth, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* After a push: the high water, from the producers' view of head. */
static inline void after_put(zf_link *l)
{
    uint64_t t = atomic_load_explicit(&l->tail, memory_order_relaxed) & ~TAIL_CLOSED;
    uint64_t seen = atomic_load_explicit(&l->head_seen, memory_order_relaxed);
    uint64_t spill = atomic_load_explicit(&l->spill_n, memory_order_relaxed);
    uint64_t est = t - seen + spill;
    if (est <= ld(&l->high_water))
        return;
    /* Refreshed at every ZFI_LINK_HW_EVERY-th position, not at every push
     * while deeper than the high water: each refresh reads the consumers'
     * line, and the consumer's next claim then waits for it to come back. */
    if (est < l->capacity && t % ZFI_LINK_HW_EVERY && ld(&l->high_water))
        return;
    seen = atomic_load_explicit(&l->head, memory_order_seq_cst);
    atomic_store_explicit(&l->head_seen, seen, memory_order_release);
    note_high_water(l, (t > seen ? t - seen : 0) + spill);
}

/* ---- the spill list (rare: a burst past the ring) ---- */

/* Append h; spill_mu held. False when out of memory. */
static bool spill_append_locked(zf_link *l, zfi_handle h)
{
    if (l->spill_len == l->spill_cap) {
        size_t ncap = l->spill_cap ? l->spill_cap * 2 : 64;
        zfi_handle *ns = malloc(ncap * sizeof *ns);
        if (!ns)
            return false;
        for (size_t i = 0; i < l->spill_len; i++)
            ns[i] = l->spill[(l->spill_head + i) % l->spill_cap];
        free(l->spill);
        l->spill = ns;
        l->spill_cap = ncap;
        l->spill_head = 0;
    }
    l->spill[(l->spill_head + l->spill_len++) % l->spill_cap] = h;
    atomic_store_explicit(&l->spill_n, (uint32_t)l->spill_len, memory_order_seq_cst);
    atomic_fetch_add_explicit(&l->spilled, 1, memory_order_relaxed);
    return true;
}

/* Enqueue h: into the spill list while it is in use (so order holds), else
 * the ring, else (a burst past the ring) the spill list. ZF_ECLOSED when the
 * link closed first (close sets its bit under spill_mu, so nothing is
 * spilled after it), ZF_ENOMEM when out of memory; h is not taken then. */
static zf_err enqueue(zf_link *l, zfi_handle h, uint64_t len, bool own)
{
    if (ZFI_LIKELY(!atomic_load_explicit(&l->spill_n, memory_order_relaxed)) &&
        ring_put(l, h, len, false, own, false))
        return ZF_OK;
    pthread_mutex_lock(&l->spill_mu);
    zf_err e = ZF_OK;
    if (atomic_load_explicit(&l->tail, memory_order_relaxed) & TAIL_CLOSED)
        e = ZF_ECLOSED;
    else if (!(l->spill_len == 0 && ring_put(l, h, len, false, own, false)) &&
             !spill_append_locked(l, h))
        e = ZF_ENOMEM;
    pthread_mutex_unlock(&l->spill_mu);
    return e;
}

/* The ring is empty: move what the spill list holds back into it, in
 * order (each capsule's length from its header: the rare path). */
static void spill_refill(zf_link *l)
{
    pthread_mutex_lock(&l->spill_mu);
    while (l->spill_len) {
        zfi_handle h = l->spill[l->spill_head];
        zf_data *d = zfi_handle_data(h);
        if (!d)
            zfi_fatal("link", "a link's spill list holds handle 0x%llx, which names no capsule",
                      (unsigned long long)h);
        if (!ring_put(l, h, d->len, true, false, false))
            break;
        l->spill_head = (l->spill_head + 1) % l->spill_cap;
        l->spill_len--;
        atomic_fetch_sub_explicit(&l->spilled, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&l->spill_n, (uint32_t)l->spill_len, memory_order_seq_cst);
    pthread_mutex_unlock(&l->spill_mu);
}

/* Take the head capsule, or NULL: as the consumer side's owner (own), or
 * as any party; *len is its length, from the cell (the header is not read
 * here: its line was last written on the producer's core, and the take is
 * over before the consumer needs it). */
static inline zf_data *take_one(zf_link *l, bool own, uint64_t *len)
{
    uint32_t cl = 0;
    zfi_handle h = ring_take(l, own, &cl);
    if (!h && atomic_load_explicit(&l->spill_n, memory_order_seq_cst)) {
        spill_refill(l);
        h = ring_take(l, own, &cl);
    }
    if (!h)
        return NULL;
    zf_data *d = zfi_handle_data(h);
    if (!d)
        zfi_fatal("link", "a link holds handle 0x%llx, which names no capsule",
                  (unsigned long long)h);
    zfi_prefetch_w(d); /* the header: its line is on its way while the take ends */
    *len = ZFI_LIKELY(cl != CELL_LEN_BIG) ? cl : d->len;
    return d;
}

static zf_data *take_any(zf_link *l)
{
    uint64_t len = 0;
    zf_data *d = take_one(l, false, &len);
    if (d)
        atomic_fetch_add_explicit(&l->bytes_out_x, len, memory_order_relaxed);
    return d;
}

/* ---- wake-ups ---- */

static bool has_room(zf_link *l)
{
    uint64_t depth = depth_now(l);
    return depth < l->capacity && !(l->max_bytes && depth && bytes_now(l) >= l->max_bytes);
}

/* Room enough to resume a parked producer node: the link half empty (in
 * messages, and in bytes when it has a byte limit). Waking it as soon as one
 * cell frees would run it for one message and park it again, a scheduler
 * round trip per message when the consumer is the slower side. */
static bool low_water(zf_link *l)
{
    uint64_t depth = depth_now(l);
    return depth <= l->capacity / 2 && !(l->max_bytes && depth && bytes_now(l) > l->max_bytes / 2);
}

/* After a take (or a drop from the head): wake a waiting thread, and the
 * parked producer node once the link is down to its low water. */
static inline __attribute__((always_inline)) void after_take(zf_link *l)
{
    zfi_evc_notify(&l->room_evc);
    if (ZFI_UNLIKELY(atomic_load_explicit(&l->room_wanted, memory_order_seq_cst)) &&
        (low_water(l) || atomic_load(&l->breaker) || atomic_load(&l->closed)) &&
        atomic_exchange(&l->room_wanted, 0) && l->on_room)
        l->on_room(l->room_arg);
}

/* rel: the cell was published with release order (release_pub). */
static inline void after_push(zf_link *l, bool rel)
{
    zfi_evc_notify(&l->data_evc);
    zfi_link_hook hook = __atomic_load_n(&l->on_data, __ATOMIC_ACQUIRE);
    if (hook) {
        if (ZFI_UNLIKELY(rel))
            atomic_thread_fence(memory_order_seq_cst); /* installed since: as seq_cst */
        hook(l->data_arg);
    }
}

/* ---- push ---- */

/* A capsule of len bytes is in: count it, refresh the high water, wake the
 * consumer. Inlined whole: called out of line, it cost the fast push 6
 * more instructions of its 120 (callgrind, zf-bench stage). */
static inline __attribute__((always_inline)) zf_err pushed(zf_link *l, uint64_t len, bool own,
                                                           bool rel)
{
    if (own)
        bump(&l->bytes_in, len);
    else if (!rel)
        atomic_fetch_add_explicit(&l->bytes_in_x, len, memory_order_relaxed);
    after_put(l);
    after_push(l, rel);
    return ZF_OK;
}

enum push_mode { PUSH_WAIT, PUSH_TRY, PUSH_NOWAIT_PARK };

/* Enqueue one capsule, every case (closed, full, policies, waiting, the
 * spill list); *d is consumed unless ZF_EAGAIN. */
static __attribute__((noinline)) zf_err push_slow(zf_link *l, zf_data **d, enum push_mode mode,
                                                  int64_t timeout_ns, bool own, bool *park)
{
    zf_data *c = *d;
    uint64_t len = c->len;
    uint64_t t0 = 0;
    unsigned drops = 0;
    for (;;) {
        if (ZFI_UNLIKELY(atomic_load_explicit(&l->closed, memory_order_acquire)))
            goto closed;
        if (!looks_full(l, len))
            break;
        zf_policy pol = atomic_load_explicit(&l->breaker, memory_order_relaxed)
                            ? ZF_POLICY_DROP_OLDEST
                            : l->policy;
        if (pol == ZF_POLICY_DROP_NEWEST) {
            *d = NULL;
            atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
            zf_data_unref(c);
            return ZF_OK;
        }
        if (pol == ZF_POLICY_DROP_OLDEST) {
            zf_data *old = take_any(l);
            if (old) {
                atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
                zf_data_unref(old);
                after_take(l);
            }
            if (++drops < MAX_DROPS * 64 || !old)
                continue;
            break; /* a consumer and producers racing forever: accept */
        }
        /* block */
        if (mode == PUSH_NOWAIT_PARK) {
            *park = true;
            atomic_store_explicit(&l->room_wanted, 1, memory_order_seq_cst);
            break;
        }
        if (mode == PUSH_TRY)
            return zfi_error(ZF_EAGAIN, "link full (%u messages)", l->capacity);
        uint64_t now = zf_clock_ns();
        if (!t0)
            t0 = now;
        int64_t left = timeout_ns < 0 ? -1 : timeout_ns - (int64_t)(now - t0);
        if (timeout_ns >= 0 && left <= 0) {
            atomic_fetch_add(&l->blocked_ns, now - t0);
            atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
            *d = NULL;
            zf_data_unref(c);
            return zfi_error(ZF_ETIMEDOUT, "link full for %lld ms; capsule dropped",
                             (long long)(timeout_ns / 1000000));
        }
        if (now - t0 < SPIN_NS) {
            /* Spin first: a consumer that is running frees a cell within
             * microseconds, and parking costs both sides system calls. */
            for (int k = 0; k < 64; k++)
                zfi_cpu_relax();
            continue;
        }
        uint32_t key = zfi_evc_prepare(&l->room_evc);
        if (atomic_load(&l->closed) || !looks_full(l, len) || atomic_load(&l->breaker))
            zfi_evc_cancel(&l->room_evc);
        else
            zfi_evc_wait(&l->room_evc, key, left);
    }
    if (t0)
        atomic_fetch_add(&l->blocked_ns, zf_clock_ns() - t0);
    /* Tapped: the tap is offered the capsule once it is in (a capsule the
     * close refuses is not recorded), through a reference of its own (the
     * consumer may take and release it at once). */
    zf_data *tapped = NULL;
    if (ZFI_UNLIKELY(atomic_load_explicit(&l->tapped, memory_order_relaxed)))
        tapped = zf_data_ref(c);
    zf_err e = enqueue(l, zfi_handle_of(c), len, own);
    if (tapped) {
        /* Announce the offer, then read the tap: a detach (tapped 0, tap
         * NULL, then waits for tap_users 0) either is seen or waits. */
        atomic_fetch_add_explicit(&l->tap_users, 1, memory_order_seq_cst);
        zfi_tap *tp = e == ZF_OK ? atomic_load_explicit(&l->tap, memory_order_seq_cst) : NULL;
        if (tp)
            zfi_tap_offer(tp, tapped);
        atomic_fetch_sub_explicit(&l->tap_users, 1, memory_order_release);
        zf_data_unref(tapped);
    }
    if (ZFI_UNLIKELY(e == ZF_ECLOSED))
        goto closed; /* closed after the check above */
    *d = NULL;
    if (ZFI_UNLIKELY(e != ZF_OK)) {
        atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
        zf_data_unref(c);
        return zfi_error(ZF_ENOMEM, "link: out of memory holding a burst past its ring");
    }
    return pushed(l, len, own, false);
closed:
    if (*park) { /* parked for room on a link that takes nothing more */
        *park = false;
        atomic_store_explicit(&l->room_wanted, 0, memory_order_seq_cst);
    }
    *d = NULL;
    atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
    zf_data_unref(c);
    after_push(l, false);
    return zfi_error(ZF_ECLOSED, "link closed; capsule dropped");
}

/* The common case inline: open, no spill list, clearly under capacity, no
 * byte limit, a free cell. Anything else takes push_slow. */
static inline __attribute__((always_inline)) zf_err
push(zf_link *l, zf_data **d, enum push_mode mode, int64_t timeout_ns, bool own, bool *park)
{
    if (ZFI_UNLIKELY(!l || !d || !*d))
        return zfi_error(ZF_EINVAL, "zf_link_push: NULL %s", !l ? "link" : "capsule");
    zf_data *c = *d;
    zfi_data_check(c, "zf_link_push");
    if (c->ts == 0 && atomic_load_explicit(&c->refs, memory_order_relaxed) == 1)
        c->ts = zf_clock_ns(); /* stamped when first sent */
    /* tail with its closed bit: a closed link is "full" here, and slow. */
    uint64_t t = atomic_load_explicit(&l->tail, memory_order_relaxed);
    if (ZFI_UNLIKELY(atomic_load_explicit(&l->closed, memory_order_relaxed) |
                     atomic_load_explicit(&l->spill_n, memory_order_relaxed) |
                     atomic_load_explicit(&l->tapped, memory_order_relaxed)) ||
        l->max_bytes ||
        t - atomic_load_explicit(&l->head_seen, memory_order_relaxed) >= l->capacity)
        return push_slow(l, d, mode, timeout_ns, own, park);
    uint64_t len = c->len;
    bool rel = release_pub(l);
    /* Published with release, a locked add after the cell would wait for
     * the cell's line (the store is still in the buffer): counted before,
     * taken back if the ring refuses (the count errs towards full). */
    if (rel && !own)
        atomic_fetch_add_explicit(&l->bytes_in_x, len, memory_order_relaxed);
    if (ZFI_UNLIKELY(!ring_put(l, zfi_handle_of(c), len, false, own, rel))) {
        if (rel && !own)
            atomic_fetch_sub_explicit(&l->bytes_in_x, len, memory_order_relaxed);
        return push_slow(l, d, mode, timeout_ns, own, park);
    }
    *d = NULL;
    return pushed(l, len, own, rel);
}

zf_err zf_link_push(zf_link *l, zf_data **d, int64_t timeout_ns)
{
    bool park = false;
    return push(l, d, PUSH_WAIT, timeout_ns, false, &park);
}

zf_err zf_link_try_push(zf_link *l, zf_data **d)
{
    bool park = false;
    return push(l, d, PUSH_TRY, 0, false, &park);
}

zf_err zfi_link_push_nowait(zf_link *l, zf_data **d, bool own, bool *park)
{
    return push(l, d, PUSH_NOWAIT_PARK, 0, own, park);
}

zf_err zf_link_push_all(zf_link *const *links, size_t n, zf_data **d, int64_t timeout_ns)
{
    if (!d || !*d)
        return zfi_error(ZF_EINVAL, "zf_link_push_all: NULL capsule");
    if (n == 0) {
        zf_data_unref(*d);
        *d = NULL;
        return ZF_OK;
    }
    zf_err first = ZF_OK;
    for (size_t i = 0; i < n; i++) {
        zf_data *one = i + 1 < n ? zf_data_ref(*d) : *d;
        zf_err e = zf_link_push(links[i], &one, timeout_ns);
        if (e != ZF_OK && first == ZF_OK)
            first = e;
    }
    *d = NULL;
    return first;
}

/* ---- take, pop ---- */

/* End of stream: closed, and nothing queued or coming. The closed bit is
 * read first: no cell is reserved and nothing spilled after it. Then the
 * spill list (empty, its refills are in the ring already), then tail and
 * head: equal, no cell is published or reserved-and-about-to-be. A producer
 * that reserved before the close keeps the stream open until it publishes
 * (and its publication wakes the consumer). */
static bool ended(zf_link *l)
{
    if (!(atomic_load_explicit(&l->tail, memory_order_seq_cst) & TAIL_CLOSED) ||
        atomic_load_explicit(&l->spill_n, memory_order_seq_cst))
        return false;
    uint64_t t = tail_pos(l);
    return t == atomic_load_explicit(&l->head, memory_order_seq_cst);
}

zf_data *zfi_link_take(zf_link *l, bool *eos)
{
    uint64_t len = 0;
    zf_data *d = take_one(l, true, &len);
    if (ZFI_LIKELY(d)) {
        bump(&l->delivered, 1);
        bump(&l->bytes_out, len);
        after_take(l);
        *eos = false;
        return d;
    }
    *eos = ended(l);
    return NULL;
}

void zfi_link_settle(zf_link *l)
{
    atomic_thread_fence(memory_order_seq_cst);
    after_take(l);
}

uint32_t zfi_link_capacity(const zf_link *l)
{
    return l->capacity;
}

bool zfi_link_ready(zf_link *l)
{
    uint64_t pos = atomic_load_explicit(&l->head, memory_order_relaxed);
    uint64_t w = atomic_load_explicit(&l->cells[pos & l->mask].word, memory_order_seq_cst);
    return !cell_lag(w, pos) || atomic_load_explicit(&l->spill_n, memory_order_seq_cst) != 0;
}

zf_err zf_link_try_pop(zf_link *l, zf_data **out)
{
    if (!l || !out)
        return zfi_error(ZF_EINVAL, "zf_link_try_pop: NULL argument");
    *out = take_any(l);
    if (*out) {
        atomic_fetch_add_explicit(&l->popped, 1, memory_order_relaxed);
        after_take(l);
        return ZF_OK;
    }
    return ended(l) ? ZF_ECLOSED : ZF_EAGAIN;
}

zf_err zf_link_pop(zf_link *l, zf_data **out, int64_t timeout_ns)
{
    if (!l || !out)
        return zfi_error(ZF_EINVAL, "zf_link_pop: NULL argument");
    *out = NULL;
    uint64_t t0 = zf_clock_ns();
    /* Spin on the head cell (one line, read-shared until the producer
     * publishes): a busy consumer gets the next message without a syscall. */
    for (unsigned i = 0;; i++) {
        if (zfi_link_ready(l) || atomic_load_explicit(&l->closed, memory_order_relaxed)) {
            zf_err e = zf_link_try_pop(l, out);
            if (e != ZF_EAGAIN)
                return e;
        }
        if ((i & 255) == 255) {
            uint64_t spent = zf_clock_ns() - t0;
            if (spent > SPIN_NS || (timeout_ns >= 0 && (int64_t)spent >= timeout_ns))
                break;
        }
        zfi_cpu_relax();
    }
    /* Park. */
    for (;;) {
        uint32_t key = zfi_evc_prepare(&l->data_evc);
        if (l->pub_release)
            zfi_asym_barrier(); /* (a push publishes with release: release_pub) */
        zf_err e = zf_link_try_pop(l, out);
        if (e != ZF_EAGAIN) {
            zfi_evc_cancel(&l->data_evc);
            return e;
        }
        int64_t left = -1;
        if (timeout_ns >= 0) {
            left = timeout_ns - (int64_t)(zf_clock_ns() - t0);
            if (left <= 0) {
                zfi_evc_cancel(&l->data_evc);
                return zfi_error(ZF_ETIMEDOUT, "no message within %lld us",
                                 (long long)(timeout_ns / 1000));
            }
        }
        zfi_evc_wait(&l->data_evc, key, left);
    }
}

/* ---- control ---- */

void zf_link_close(zf_link *l)
{
    if (!l)
        return;
    if (atomic_exchange_explicit(&l->closed, 1, memory_order_seq_cst))
        return;
    side_share(&l->prod_mode, &l->prod_busy); /* the bit goes in with a read-modify-write */
    pthread_mutex_lock(&l->spill_mu);
    atomic_fetch_or_explicit(&l->tail, TAIL_CLOSED, memory_order_seq_cst);
    pthread_mutex_unlock(&l->spill_mu);
    atomic_fetch_add_explicit(&l->tap_users, 1, memory_order_seq_cst);
    zfi_tap *tp = atomic_load_explicit(&l->tap, memory_order_seq_cst);
    if (tp)
        zfi_tap_end(tp);
    atomic_fetch_sub_explicit(&l->tap_users, 1, memory_order_release);
    zfi_evc_notify(&l->room_evc);
    if (atomic_exchange(&l->room_wanted, 0) && l->on_room)
        l->on_room(l->room_arg);
    after_push(l, false);
}

void zf_link_stats_get(const zf_link *cl, zf_link_stats *out)
{
    zf_link *l = (zf_link *)cl;
    memset(out, 0, sizeof *out);
    if (!l)
        return;
    /* Consumer-side counters first: read later, the producer's are never
     * behind them, so the balance below never goes negative. */
    uint64_t delivered = ld(&l->delivered) + ld(&l->popped);
    uint64_t dropped = ld(&l->dropped);
    uint64_t spilled = ld(&l->spilled);
    out->depth = depth_snapshot(l);
    out->enqueued = tail_pos((zf_link *)cl) + spilled;
    out->dequeued = delivered;
    out->dropped = dropped;
    out->bytes = bytes_now(l);
    out->high_water = ld(&l->high_water);
    if (out->depth > out->high_water) {
        note_high_water(l, out->depth);
        out->high_water = out->depth;
    }
    out->capacity = l->capacity;
    out->policy = l->policy;
    out->blocked_ns = atomic_load(&l->blocked_ns);
}

zf_err zfi_link_tap_attach(zf_link *l, zfi_tap *t)
{
    zfi_tap *none = NULL;
    if (!atomic_compare_exchange_strong(&l->tap, &none, t))
        return zfi_error(ZF_EBUSY, "the link is already tapped (one tap at a time)");
    atomic_store(&l->tapped, 1);
    if (atomic_load(&l->closed))
        zfi_tap_end(t);
    return ZF_OK;
}

void zfi_link_tap_detach(zf_link *l, zfi_tap *t)
{
    if (atomic_load(&l->tap) != t)
        return;
    atomic_store(&l->tapped, 0);
    atomic_store(&l->tap, NULL);
    /* An offer in flight is a few instructions (a try-lock, a copy): wait
     * for it to leave the tap before the tap is freed. */
    while (atomic_load_explicit(&l->tap_users, memory_order_acquire))
        zfi_cpu_relax();
}

void zfi_link_bytes(const zf_link *cl, uint64_t *in, uint64_t *out)
{
    zf_link *l = (zf_link *)cl;
    *out = ld(&l->bytes_out) + ld(&l->bytes_out_x); /* consumers first: in >= out */
    *in = ld(&l->bytes_in) + ld(&l->bytes_in_x);
}

bool zfi_link_drained(zf_link *l)
{
    return ended(l);
}

bool zfi_link_has_room(zf_link *l)
{
    return l->policy != ZF_POLICY_BLOCK || atomic_load(&l->breaker) || has_room(l);
}

bool zfi_link_want_room(zf_link *l)
{
    if (atomic_load(&l->breaker) || atomic_load(&l->closed) || l->policy != ZF_POLICY_BLOCK)
        return true;
    if (has_room(l))
        return true;
    atomic_store_explicit(&l->room_wanted, 1, memory_order_seq_cst);
    /* The consumer may have made room before it could see the flag: look
     * again, and take the flag back if so (if the consumer took it first,
     * its on_room is on its way). */
    if ((has_room(l) || atomic_load(&l->breaker) || atomic_load(&l->closed)) &&
        atomic_exchange(&l->room_wanted, 0))
        return true;
    return false;
}

/* Whether the head cell is published (the spill list aside). */
static bool head_published(zf_link *l)
{
    uint64_t pos = atomic_load_explicit(&l->head, memory_order_seq_cst);
    return !cell_lag(atomic_load_explicit(&l->cells[pos & l->mask].word, memory_order_seq_cst),
                     pos);
}

/* A producer reserved the head cell and has not published it (tail is past
 * head): wait for the publication, on the eventcount every push notifies,
 * until `deadline`. False when nothing is reserved or the time is up. */
static bool wait_reserved(zf_link *l, uint64_t deadline)
{
    for (;;) {
        if (head_published(l))
            return true;
        if (tail_pos(l) == atomic_load_explicit(&l->head, memory_order_seq_cst))
            return false; /* empty: nothing reserved */
        uint64_t now = zf_clock_ns();
        if (now >= deadline)
            return false;
        uint32_t key = zfi_evc_prepare(&l->data_evc);
        if (l->pub_release)
            zfi_asym_barrier(); /* (release_pub) */
        if (head_published(l) ||
            tail_pos(l) == atomic_load_explicit(&l->head, memory_order_seq_cst))
            zfi_evc_cancel(&l->data_evc);
        else
            zfi_evc_wait(&l->data_evc, key, (int64_t)(deadline - now));
    }
}

/* Drop queued capsules from the head (all of them, or down to capacity);
 * returns how many. Dropping all, a cell a producer has reserved and not
 * published yet (between its two stores, or preempted there) is waited
 * for, FLUSH_WAIT_NS at most over the whole flush (*deadline, set at its
 * first wait, shared by the flushes of one pass), so what is behind it
 * goes too; past that (a producer thread stopped between its claim and its
 * publication) the flush ends at that cell and the rest stays in the link,
 * where the stop report counts it as leaked. */
static size_t drop_queued(zf_link *l, bool all, uint64_t *deadline)
{
    size_t n = 0;
    for (;;) {
        if (!all && depth_now(l) <= l->capacity)
            break;
        zf_data *d = take_any(l);
        if (!d && all) {
            if (!*deadline)
                *deadline = zf_clock_ns() + FLUSH_WAIT_NS;
            if (wait_reserved(l, *deadline))
                continue;
        }
        if (!d)
            break;
        atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
        zf_data_unref(d);
        n++;
    }
    after_take(l);
    return n;
}

void zfi_link_set_breaker(zf_link *l, bool open)
{
    atomic_store(&l->breaker, open ? 1u : 0u);
    if (open)
        drop_queued(l, false, NULL);
}

size_t zfi_link_flush(zf_link *l, uint64_t *deadline)
{
    uint64_t mine = 0;
    return drop_queued(l, true, deadline ? deadline : &mine);
}

void zfi_link_add_blocked(zf_link *l, uint64_t ns)
{
    atomic_fetch_add(&l->blocked_ns, ns);
}
