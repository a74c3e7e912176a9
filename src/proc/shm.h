/* The memory a process-isolated node shares with the runtime: one memfd
 * per child incarnation (a restarted child gets a fresh one: resetting the
 * rings is dropping the old memfd), holding a control block and, per port,
 * single-producer single-consumer rings of 32-byte cells (an input cell
 * carries the capsule's stamp and sequence number beside its handle and
 * length, so the child builds its capsule without reading the block's
 * header, a line last written on the runtime's core).
 *
 *   input[i]    runtime -> child   capsules delivered on input i
 *   output[o]   child -> runtime   capsules the child sends on output o
 *   completion  child -> runtime   references the child has released
 *   loan        runtime -> child   free pool blocks for the child to fill
 *
 * The one-writer rule (DESIGN.md lesson 7): every word here has one writer.
 * The producer of a ring writes its cells and its `tail`, the consumer its
 * `head`, the runtime its `limit` (in the producer's line, whichever side
 * produces); the control block has a line the runtime writes and a line the
 * child writes. Each side keeps its own positions in private memory and
 * reads the other side's index only to learn how far it may go, so a child
 * that scribbles over this memory can make the runtime see nothing, or see
 * a value the runtime then refuses (zfi_ring_* return false: the runtime
 * kills that child) — never make the runtime write anywhere but here.
 * No lock lives here: waiting is an eventcount per direction (shared futex
 * calls), after a short spin. */
#ifndef ZFI_PROC_SHM_H
#define ZFI_PROC_SHM_H

#include "core/common.h"
#include "core/futex.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ZFI_PROC_IN_CAP    256u  /* cells per input ring */
#define ZFI_PROC_OUT_CAP   256u  /* cells per output ring */
#define ZFI_PROC_COMP_CAP  1024u /* completion ring */
#define ZFI_PROC_LOAN_CAP  16u   /* loan ring */
#define ZFI_PROC_MAX_PORTS 64u

/* The layout of this memory (cells, lines, control block): the runtime
 * sends its own in the node's description, and a node host built with
 * another refuses to start (an installed zf-node-host from another build
 * would misread every ring). Bumped whenever the layout changes. */
#define ZFI_SHM_LAYOUT 3u

/* An output cell's len: bits 0-47 the length; KEEP: the child keeps its
 * reference (it still holds the capsule), so the runtime sends a new one. */
#define ZFI_CELL_LEN_MASK ((1ull << 48) - 1)
#define ZFI_CELL_KEEP     (1ull << 63)

/* The runtime's flags (rt.flags). */
enum {
    ZFI_RT_STARTED = 1, /* the instance started: sources may produce */
    ZFI_RT_STOP = 2,    /* sources: stop producing; then acknowledge */
    ZFI_RT_EOS = 4,     /* every input saw end of stream: acknowledge when drained */
    ZFI_RT_BELL = 8,    /* idle workers take the outputs: ring to_workers, not to_rt */
    ZFI_RT_LIVE = 16    /* (BELL, up) they take the completions too: ring them for those */
};

typedef struct zfi_cell {
    _Atomic uint64_t h;   /* a pool handle (core/capsule.h); loan cells: 0 = refused */
    _Atomic uint64_t len; /* input: length; output: length | KEEP; loan: capacity */
    _Atomic uint64_t ts;  /* input: the capsule's stamp (0 elsewhere) */
    _Atomic uint64_t seq; /* input: its sequence number (0 elsewhere) */
} zfi_cell;

typedef struct zfi_sring {
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t tail; /* producer */
    /* The cells the ring's producer keeps in it at most: the capacity of
     * the link feeding an input ring, the smallest among an output's links
     * for an output ring (zfi_iso's in_limit_of / out_limit_of), so what an
     * isolated node holds stays bounded by its links, as in process, not
     * by the ring's cells. The consumer of an input ring (the child) wakes
     * the runtime waiting for room once at most half of it waits
     * (zfi_ring_low). Written by the runtime only (on the output rings'
     * producer line too, the child's otherwise), once per incarnation as
     * it tells the child to init, before any capsule crosses; the runtime
     * never reads it back. 0, or not below cap, means cap. */
    _Atomic uint32_t limit;
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t head; /* consumer */
} zfi_sring;

typedef struct zfi_shm_ctl {
    struct {
        /* written by the runtime only; flags and msgs, which the child
         * looks at while it waits for input, on a line of their own: the
         * words below change as workers sleep and wake, and each change
         * would be a line the waiting child misses */
        _Alignas(ZFI_CACHELINE) _Atomic uint32_t flags;
        _Atomic uint32_t msgs; /* control messages sent */
        _Alignas(ZFI_CACHELINE) _Atomic uint32_t
            room_wanted;              /* notify to_rt when an input cell frees */
        _Atomic uint32_t bell_wanted; /* a worker sleeps on to_workers: wake it */
        _Atomic int32_t waker_cpu;    /* 1 + the CPU that last woke the child (0: none) */
    } rt;
    _Alignas(ZFI_CACHELINE) zfi_evc to_child; /* the child sleeps here */
    _Alignas(ZFI_CACHELINE) zfi_evc to_rt;    /* the runtime's proxy sleeps here */
    /* Idle runtime workers sleep on its sequence (among other words) for
     * outputs; after publishing one the child bumps it and wakes them when
     * rt.bell_wanted says one sleeps (ZFI_RT_BELL). Its waiter count is not
     * used: the runtime's workers count themselves in their own memory. */
    _Alignas(ZFI_CACHELINE) zfi_evc to_workers;
    struct {
        /* written by the child only; the runtime reads and checks */
        _Alignas(ZFI_CACHELINE) _Atomic uint64_t loan_want; /* bytes wanted (0: none) */
        _Atomic uint64_t busy_since;                        /* callback start (CLOCK_MONOTONIC) */
        _Atomic uint64_t callbacks;                         /* callbacks completed */
        _Atomic uint64_t copies;                            /* payload copies (wrapped memory) */
        _Atomic uint32_t acked;                             /* ZFI_RT_STOP / ZFI_RT_EOS seen */
        _Atomic uint32_t room_wanted; /* notify to_child when an output cell frees */
    } child;
} zfi_shm_ctl;

/* One ring as one side sees it: the shared header and cells, and this
 * side's private position and view of the other side. */
typedef struct zfi_ring {
    zfi_sring *s;
    zfi_cell *cells;
    uint32_t cap;  /* a power of two, from the layout (never read from shared memory) */
    uint32_t lim;  /* the ring's limit: the runtime's own (it publishes it), the child's last
                      reading (zfi_ring_load_lim); 0: cap */
    uint64_t pos;  /* producer: the next tail; consumer: the next head */
    uint64_t seen; /* producer: the consumer's head last read */
} zfi_ring;

/* The layout of a child's memory for n_in inputs and n_out outputs. */
typedef struct zfi_shm {
    void *base;
    size_t size;
    zfi_shm_ctl *ctl;
    size_t n_in, n_out;
    zfi_ring in[ZFI_PROC_MAX_PORTS], out[ZFI_PROC_MAX_PORTS], comp, loan;
} zfi_shm;

/* Adaptive spin-then-park for a side of these rings (the child waiting
 * for input, the proxy thread for its child; docs/isolation.md, "Waiting").
 *
 * - A waiter spins only while its traffic is dense (the recent gap between
 *   two arrivals, an average over the last few, below ZFI_SPIN_DENSE_NS)
 *   and spinning pays: it spins up to ZFI_SPIN_MAX_NS, so the next message
 *   finds it on the ring and its producer, seeing no sleeper announced on
 *   the eventcount, makes no futex call. Otherwise it spins
 *   ZFI_SPIN_MIN_NS, then parks: sparse traffic (60 fps) and a pipeline
 *   gone idle never spin more than ZFI_SPIN_MAX_NS after the last message.
 * - Spinning stops paying when the CPUs are taken (2 vCPUs shared with
 *   other work: the spinner keeps the thread that has the work off the
 *   CPU, and a thread that parks is woken sooner, the scheduler favouring
 *   a thread that slept, than one that spent its share spinning). Two
 *   signs of it: a spin of ZFI_SPIN_MAX_NS that ended with nothing, and a
 *   spin that lost the CPU for ZFI_SPIN_LOST_NS. Either makes the waiter
 *   park after ZFI_SPIN_MIN_NS for a while, then try again: 1 ms
 *   (ZFI_SPIN_CALM_MIN_NS), or twice the last time when the last calm
 *   ended less than ZFI_SPIN_CALM_RESET_NS ago (signs in a row: the CPUs
 *   stay taken), up to ZFI_SPIN_CALM_NS. One
 *   sign alone (the host took the CPU once, a lockstep path paused once)
 *   used to make it park for 20 ms: every message meanwhile paid a futex
 *   wake-up, ~13 us against ~0.5 (a 100 MiB isolated hop's whole
 *   measurement, 250 messages, measured 13.6 us p50 in one run of five).
 *
 * One waiter owns a zfi_spin (no atomics); zero-initialised is ready. */
#define ZFI_SPIN_MIN_NS        2000u
#define ZFI_SPIN_MAX_NS        50000u
#define ZFI_SPIN_DENSE_NS      100000u
#define ZFI_SPIN_LOST_NS       200000u
#define ZFI_SPIN_CALM_MIN_NS   1000000u
#define ZFI_SPIN_CALM_NS       20000000u
#define ZFI_SPIN_CALM_RESET_NS 100000000u

typedef struct zfi_spin {
    uint64_t last;    /* when the last wait ended in an arrival (0: none yet) */
    uint64_t gap;     /* the recent gap between arrivals, ns (an average) */
    uint64_t calm;    /* spin ZFI_SPIN_MIN_NS only until then (the CPUs are taken) */
    uint64_t calm_ns; /* the last such time */
    uint64_t t0;      /* this wait: its start, its budget, its last look */
    uint64_t budget;
    uint64_t look;
    unsigned i;
} zfi_spin;

/* Start a wait at `now`; budget_ns caps its spin (a timeout; UINT64_MAX:
 * none). With s NULL, a fixed ZFI_SPIN_MIN_NS spin (s is then `tmp`). */
zfi_spin *zfi_spin_start(zfi_spin *s, zfi_spin *tmp, uint64_t now, uint64_t budget_ns);
/* After a look found nothing: pause and return true, or false when the
 * spin is over (park). */
bool zfi_spin_again(zfi_spin *s);
/* The wait ended in an arrival (after a spin or a park). */
void zfi_spin_hit(zfi_spin *s);

/* Bytes needed for this many ports. */
size_t zfi_shm_size(size_t n_in, size_t n_out);
/* Point m's rings into base (size bytes, zfi_shm_size), positions at 0. */
void zfi_shm_layout(zfi_shm *m, void *base, size_t size, size_t n_in, size_t n_out);
/* A fresh memfd of zfi_shm_size bytes, mapped (read-write, shared) into m.
 * -1 and errno on failure. Returns the fd (the caller closes it). */
int zfi_shm_create(zfi_shm *m, size_t n_in, size_t n_out);
/* Map a memfd received from the runtime. false and errno on failure. */
bool zfi_shm_map(zfi_shm *m, int fd, size_t n_in, size_t n_out);
void zfi_shm_unmap(zfi_shm *m);

/* ---- the producer side ---- */

/* A published cell carries its lap in bits 48-62 of its len word (the
 * lengths are below 2^48; bit 63 is KEEP), so the consumer learns from
 * the cell's own line that it is published: one line crosses per cell, not
 * the cell's and the tail's. The tail is still written (after the cell),
 * for the checks that need a count (full? a bad tail?). */
#define ZFI_CELL_TAG_SHIFT 48
#define ZFI_CELL_TAG_MASK  (0x7fffull << ZFI_CELL_TAG_SHIFT)

/* The tag of the cell at position pos: its lap + 1 (never 0: a fresh,
 * zeroed cell is unpublished), 15 bits (consecutive laps differ). */
static inline uint64_t zfi_cell_tag(const zfi_ring *r, uint64_t pos)
{
    return (((pos >> __builtin_ctz(r->cap)) + 1) << ZFI_CELL_TAG_SHIFT) & ZFI_CELL_TAG_MASK;
}

/* The cells r's producer keeps in it at most (r->lim, validated), as this
 * side sees it. */
static inline uint32_t zfi_ring_lim(const zfi_ring *r)
{
    return r->lim && r->lim < r->cap ? r->lim : r->cap;
}

/* Read the limit the runtime published (sring.limit) into this side's view. */
static inline void zfi_ring_load_lim(zfi_ring *r)
{
    r->lim = atomic_load_explicit(&r->s->limit, memory_order_acquire);
}

/* The consumer's low mark: it wakes a producer waiting for room once at
 * most this many cells wait (the producer's hysteresis: half its limit). */
static inline uint32_t zfi_ring_low(const zfi_ring *r)
{
    return zfi_ring_lim(r) / 2;
}

/* Free cells, as far as the consumer's head tells; false if that head is
 * not a head this ring can have (it went backwards or past the tail). */
static inline bool zfi_ring_room(zfi_ring *r, uint32_t *room)
{
    uint64_t head = atomic_load_explicit(&r->s->head, memory_order_seq_cst);
    if (head - r->seen > r->pos - r->seen)
        return false;
    r->seen = head;
    uint32_t used = (uint32_t)(r->pos - head), lim = zfi_ring_lim(r);
    *room = used >= lim ? 0 : lim - used;
    return true;
}

/* Free cells by this side's last reading of the consumer's head (no
 * shared line read; a lower bound: head only grows). */
static inline uint32_t zfi_ring_room_seen(const zfi_ring *r)
{
    uint32_t lim = zfi_ring_lim(r);
    uint64_t used = r->pos - r->seen;
    return used < lim ? lim - (uint32_t)used : 0;
}

/* As zfi_ring_room, but the consumer's head is read only when the view
 * from its last reading shows no room (head only grows: the view errs
 * towards "full"): a send into a ring the consumer just took from makes
 * no line cross for it. For "is there room", not "how much". */
static inline bool zfi_ring_room_lazy(zfi_ring *r, uint32_t *room)
{
    *room = zfi_ring_room_seen(r);
    return *room || zfi_ring_room(r, room);
}

/* Write a cell and publish it; the caller checked the room. len must be
 * below 2^48, or KEEP with a length below 2^48. (seq_cst: the wake-up
 * checks after it, and the consumer's "had it been full", pair with it.) */
static inline void zfi_ring_put_meta(zfi_ring *r, uint64_t h, uint64_t len, uint64_t ts,
                                     uint64_t seq)
{
    zfi_cell *c = &r->cells[r->pos & (r->cap - 1)];
    atomic_store_explicit(&c->h, h, memory_order_relaxed);
    atomic_store_explicit(&c->ts, ts, memory_order_relaxed);
    atomic_store_explicit(&c->seq, seq, memory_order_relaxed);
    atomic_store_explicit(&c->len, (len & ~ZFI_CELL_TAG_MASK) | zfi_cell_tag(r, r->pos),
                          memory_order_seq_cst);
    r->pos++;
    atomic_store_explicit(&r->s->tail, r->pos, memory_order_seq_cst);
}

/* A cell without a stamp (output, completion and loan rings). */
static inline void zfi_ring_put(zfi_ring *r, uint64_t h, uint64_t len)
{
    zfi_ring_put_meta(r, h, len, 0, 0);
}

/* ---- the consumer side ---- */

/* Taking a cell: 1 taken, 0 empty, -1 the producer's tail is not a tail
 * this ring can have (past a full ring ahead, or behind), or says published
 * what the cell does not. The head is stored with release order, not
 * seq_cst: a locked store would wait here for the head's line, which the
 * producer reads now and then, before the consumer can use the cell. A
 * consumer that then looks whether the producer waits for room (a flag, a
 * cell) fences first: zfi_ring_was_full does.
 *
 * zfi_ring_peek: the next cell, if published (1, *cell and *len, its
 * length word without the tag); the caller reads the fields it needs, then
 * zfi_ring_advance. zfi_ring_take_meta and zfi_ring_take do both. */
static inline int zfi_ring_peek(zfi_ring *r, const zfi_cell **cell, uint64_t *len)
{
    zfi_cell *c = &r->cells[r->pos & (r->cap - 1)];
    uint64_t want = zfi_cell_tag(r, r->pos);
    uint64_t l = atomic_load_explicit(&c->len, memory_order_acquire);
    if ((l & ZFI_CELL_TAG_MASK) != want) {
        /* (The tail may lag one cell behind the cells: the last one taken
         * was published, its tail not stored yet.) */
        uint64_t tail = atomic_load_explicit(&r->s->tail, memory_order_acquire);
        if (tail == r->pos || tail == r->pos - 1)
            return 0;
        if (tail - r->pos > r->cap)
            return -1;
        /* the tail says published: the cell was written before it */
        l = atomic_load_explicit(&c->len, memory_order_acquire);
        if ((l & ZFI_CELL_TAG_MASK) != want)
            return -1;
    }
    *cell = c;
    *len = l & ~ZFI_CELL_TAG_MASK;
    return 1;
}

/* Past the cell zfi_ring_peek gave, its fields read: the head moves on. */
static inline void zfi_ring_advance(zfi_ring *r)
{
    r->pos++;
    atomic_store_explicit(&r->s->head, r->pos, memory_order_release);
}

/* A cell's handle and length, and an input cell's stamp and sequence
 * number (ts and seq NULL for any other cell: not read). */
static inline int zfi_ring_take_meta(zfi_ring *r, uint64_t *h, uint64_t *len, uint64_t *ts,
                                     uint64_t *seq)
{
    const zfi_cell *c = NULL;
    int k = zfi_ring_peek(r, &c, len);
    if (k <= 0)
        return k;
    *h = atomic_load_explicit(&c->h, memory_order_relaxed);
    if (ts)
        *ts = atomic_load_explicit(&c->ts, memory_order_relaxed);
    if (seq)
        *seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
    zfi_ring_advance(r);
    return 1;
}

/* Any other cell (output, completion, loan): handle and length. */
static inline int zfi_ring_take(zfi_ring *r, uint64_t *h, uint64_t *len)
{
    return zfi_ring_take_meta(r, h, len, NULL, NULL);
}

/* Whether the next cell is published. The cell alone: a waiting side
 * spins here, and reading the producer's tail too would make that line
 * cross at every message (the producer's store of it then waits for the
 * line to come back), for nothing: a producer that moves its tail without
 * publishing a cell sends nothing (a take asked for an unpublished cell
 * checks the tail, and refuses one no ring can have). seq_cst: a waiter
 * that announced itself then looks pairs with put (its seq_cst store of
 * the cell). */
static inline bool zfi_ring_ready(const zfi_ring *r)
{
    const zfi_cell *c = &r->cells[r->pos & (r->cap - 1)];
    return (atomic_load_explicit(&c->len, memory_order_seq_cst) & ZFI_CELL_TAG_MASK) ==
           zfi_cell_tag(r, r->pos);
}

/* After a take: whether the ring had been full (held lim cells, its
 * producer's limit, at most cap) just before it (its producer may wait for
 * room). The cell lim - 1 after the one taken is the last of a full ring:
 * published? (A full fence after the take's store of head, then a seq_cst
 * load: a producer that saw no room had published it.) */
static inline bool zfi_ring_was_full(const zfi_ring *r, uint32_t lim)
{
    atomic_thread_fence(memory_order_seq_cst); /* (the take's store of head, then this load) */
    uint64_t last = r->pos - 2 + lim;          /* the last cell of a full ring, before the take */
    const zfi_cell *c = &r->cells[last & (r->cap - 1)];
    return (atomic_load_explicit(&c->len, memory_order_seq_cst) & ZFI_CELL_TAG_MASK) ==
           zfi_cell_tag(r, last);
}

#endif
