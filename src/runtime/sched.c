/* The scheduler: a run queue of ready nodes and the worker threads that
 * run them. A node is an actor: it runs on one worker at a time, so its
 * state needs no lock.
 *
 * - An operator or sink is ready when an input has a capsule (or end of
 *   stream); a step hands it up to ZFI_BATCH capsules, one callback each.
 * - A free-running source is ready while its outputs have room; a periodic
 *   one when the timer thread says a period has passed.
 * - A zf_send into a full `block` link never sleeps: the capsule is
 *   accepted and the node is parked after its callback, until the link
 *   calls back (on_room). The worker moves on to other nodes.
 * - Idle workers spin briefly on the queue, then sleep on a futex, and spin
 *   again when woken. A push wakes a sleeper only when no worker spins and
 *   none was woken that has not spun yet (`spinning`, `woken`); a worker
 *   that finds work passes the wake on if more is queued. While work comes
 *   less than ZFI_DENSE_NS apart (a remote link's capsules every 100 us),
 *   one idle worker spins through the gap instead (spin_budget). */
#include "runtime/runtime.h"

#include "core/asym.h"
#include "graph/loader.h" /* ZFI_MAX_PORTS */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPIN_NS        30000u
#define MAX_BACKOFF_NS 10000000ull
#define BUSY_SAMPLE    64
/* A source that waits (its produce returns ZF_EAGAIN) sends from no
 * produce that sleeps: no handoff after its sends. Past this many sends
 * with no wait between them, it is free-running again. */
#define WAITING_SPAN 64u

ZFI_TLS zf_node *zfi_tls_node;
static ZFI_TLS bool tls_retire;
static ZFI_TLS bool tls_ticked; /* this worker's last node was a periodic source */
/* A worker's "run next" slot: a node made ready by the node this worker
 * runs, when no other worker is idle, runs here next: same core, warm
 * caches, no trip through the run queue. Slots are stealable: a worker
 * looking for work takes a node waiting in another's slot, and a sleeping
 * one is woken for it when it would wait long (slot_wait_long): behind a
 * slow or hung callback a node waits at most about two timer ticks. */
static ZFI_TLS zf_runtime *tls_rt;
static ZFI_TLS int tls_slot = -1;
#define MAX_NEXT_RUNS 32

_Static_assert(ZFI_MAX_PORTS + 1 < (1u << ZFI_OWNER_PORT_BITS), "a port fits the owner word");

/* ---- a callback's end against the watchdog and the stop ----
 *
 * A callback's end and a claim on it (the watchdog marking it hung, the
 * stop abandoning it) must agree on who won. The claim is rare, the end
 * is every callback: so the end pays no locked instruction (one was ~11
 * ns of a same-core pipeline stage's ~90 on an Intel Xeon) and the claim
 * pays a process-wide barrier (membarrier(2), an asymmetric Dekker):
 *
 *   end:    cb_done = start; (compiler barrier) read cb_word:
 *           unmarked: cb_word = 0, done. Marked: under claim_mu, what
 *           marks are left in cb_word stand; cb_word = 0.
 *   claim:  under claim_mu: compare-and-swap the mark into cb_word;
 *           membarrier; read cb_done: at or past the start, the callback
 *           had ended and may not have seen the mark: the claimant takes
 *           its own mark back out (other marks that stood stay).
 *
 * One of the two always sees the other (the barrier runs on the worker's
 * CPU between its store and its read, or before its store). Starts grow
 * per node, so a cb_done past the start also means it ended (the worker
 * may have run another callback during the barrier). cb_word changes
 * only under claim_mu or by its worker, so the worker reads it stable
 * under the lock. Where membarrier is refused (a seccomp filter), the end
 * is a compare-and-swap against the claims, as they are. */
static pthread_mutex_t claim_mu = PTHREAD_MUTEX_INITIALIZER;

void zfi_sched_init_once(void)
{
    zfi_asym_init();
}

/* Mark `bit` went into cb_word for the callback that began at `start`
 * (claim_mu held): does it stand? If not, it is taken back out. */
static bool claim_stands(zf_node *n, uint64_t start, uint64_t bit)
{
    if (!zfi_asym_ok())
        return true; /* the end compares-and-swaps: a mark that went in stands */
    zfi_asym_barrier();
    uint64_t done = atomic_load_explicit(&n->cb_done, memory_order_relaxed);
    if ((int64_t)(done - start) < 0)
        return true; /* not ended: its worker will see the mark */
    uint64_t w = atomic_load(&n->cb_word);
    while (ZFI_CB_START(w) == start && (w & bit) &&
           !atomic_compare_exchange_weak(&n->cb_word, &w, w & ~bit))
        ;
    return false;
}

/* The callback that began at t0 returned. Returns the marks that stand
 * on it: 0, or ZFI_CB_HUNG and/or ZFI_CB_ABANDONED. */
static uint64_t callback_end(zf_node *n, uint64_t t0)
{
    const uint64_t marks = ZFI_CB_HUNG | ZFI_CB_ABANDONED;
    if (ZFI_LIKELY(zfi_asym_ok())) {
        atomic_store_explicit(&n->cb_done, t0, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (ZFI_LIKELY(atomic_load_explicit(&n->cb_word, memory_order_relaxed) == t0)) {
            atomic_store_explicit(&n->cb_word, 0, memory_order_release);
            return 0;
        }
        pthread_mutex_lock(&claim_mu); /* claims decide under it: cb_word is stable */
        uint64_t w = atomic_load(&n->cb_word);
        atomic_store_explicit(&n->cb_word, 0, memory_order_release);
        pthread_mutex_unlock(&claim_mu);
        return w & marks;
    }
    uint64_t w = t0;
    while (!atomic_compare_exchange_weak(&n->cb_word, &w, 0))
        ;
    return w & marks;
}

/* ---- run queue ---- */

/* Work was queued: wake a sleeping worker, unless one spins or was woken
 * and has not spun yet (it will see the work: runq_pop_idle). */
static void wake_one(zf_runtime *rt)
{
    atomic_thread_fence(memory_order_seq_cst);
    /* (waiters without its ZFI_EVC_WOKEN flag: the count of sleepers) */
    if (atomic_load(&rt->spinning) || atomic_load(&rt->woken) ||
        !(atomic_load(&rt->q_evc.waiters) & ~ZFI_EVC_WOKEN))
        return;
    atomic_store(&rt->woken, 1);
    zfi_evc_notify_one(&rt->q_evc);
}

static void runq_push(zf_runtime *rt, zf_node *n)
{
    zfi_lock_acquire(&rt->q_mu);
    if (rt->q_len == rt->q_cap) {
        size_t ncap = rt->q_cap ? rt->q_cap * 2 : 64;
        zf_node **nq = malloc(ncap * sizeof *nq);
        if (!nq)
            zfi_fatal("sched", "out of memory growing the run queue to %zu nodes", ncap);
        for (size_t i = 0; i < rt->q_len; i++)
            nq[i] = rt->q[(rt->q_head + i) % rt->q_cap];
        free(rt->q);
        rt->q = nq;
        rt->q_cap = ncap;
        rt->q_head = 0;
    }
    rt->q[(rt->q_head + rt->q_len) % rt->q_cap] = n;
    rt->q_len++;
    atomic_store_explicit(&rt->q_count, rt->q_len, memory_order_release);
    zfi_lock_release(&rt->q_mu);
    wake_one(rt);
}

static zf_node *runq_try_pop(zf_runtime *rt)
{
    zf_node *n = NULL;
    zfi_lock_acquire(&rt->q_mu);
    if (rt->q_len) {
        n = rt->q[rt->q_head];
        rt->q_head = (rt->q_head + 1) % rt->q_cap;
        rt->q_len--;
        atomic_store_explicit(&rt->q_count, rt->q_len, memory_order_release);
    }
    zfi_lock_release(&rt->q_mu);
    return n;
}

static bool runtime_shutdown(zf_runtime *rt)
{
    pthread_mutex_lock(&rt->mu);
    bool s = rt->shutdown;
    pthread_mutex_unlock(&rt->mu);
    return s;
}

/* Runs between two looks of a busy worker at isolated children's outputs
 * (a power of two). */
#define BUSY_POLL_EVERY 16u

/* Next ready node; NULL when the runtime shuts down. */
static zf_node *runq_pop_idle(zf_runtime *rt);
static zf_node *runq_pop(zf_runtime *rt)
{
    atomic_fetch_add(&rt->idle_workers, 1);
    zf_node *n = runq_pop_idle(rt);
    atomic_fetch_sub(&rt->idle_workers, 1);
    return n;
}

/* Take a node waiting in some worker's slot. */
static zf_node *steal(zf_runtime *rt)
{
    unsigned n = atomic_load_explicit(&rt->n_slots, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (atomic_load_explicit(&rt->slots[i], memory_order_relaxed)) {
            zf_node *node = atomic_exchange(&rt->slots[i], NULL);
            if (node)
                return node;
        }
    return NULL;
}

/* A spinning worker leaves a node in another worker's slot for
 * STEAL_GRACE_NS before it takes it: that worker runs it next, on the
 * core where what made it ready was written, as soon as its callback
 * returns, which in lockstep is a few hundred nanoseconds. Taken at once,
 * every message of a lockstep path changed workers (the idle one always
 * won), and every line of the path (the link, the node, an isolated
 * child's ledger) crossed cores with it: an isolated hop measured 0.93 us
 * p50 on 2 workers against 0.67 on one (AMD Zen 5, 2 vCPUs). A node left
 * there longer is taken: its worker is in a longer callback. Its own slot
 * a worker takes at once. */
#define STEAL_GRACE_NS 2000u

typedef struct steal_watch {
    const zf_node *node; /* in slot `slot` when first seen there, at `since` */
    unsigned slot;
    uint64_t since;
} steal_watch;

static zf_node *steal_ripe(zf_runtime *rt, steal_watch *w)
{
    unsigned n = atomic_load_explicit(&rt->n_slots, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
        const zf_node *in = atomic_load_explicit(&rt->slots[i], memory_order_relaxed);
        if (!in)
            continue;
        if ((int)i != tls_slot) {
            if (w->node != in || w->slot != i) {
                w->node = in;
                w->slot = i;
                w->since = zf_clock_ns();
                continue;
            }
            if (zf_clock_ns() - w->since < STEAL_GRACE_NS)
                continue;
        }
        zf_node *node = atomic_exchange(&rt->slots[i], NULL);
        w->node = NULL;
        if (node)
            return node;
    }
    return NULL;
}

/* Besides the run queue: what the isolation layer gave idle workers to do
 * (isolated children's outputs), through rt->idle: NULL until the first
 * isolated node. */
static bool idle_poll(zf_runtime *rt)
{
    const zfi_idle_hooks *h = atomic_load_explicit(&rt->idle, memory_order_acquire);
    return h && h->poll(rt);
}

/* On 2 CPUs or fewer a spinning idle worker yields its CPU now and then,
 * past YIELD_AFTER_NS: the thread it would keep off the CPU may be the one
 * with the work (a woken source, an isolated child; docs/isolation.md,
 * "Waiting"). */
#define YIELD_AFTER_NS 2000u
static bool few_cpus(void)
{
    static _Atomic int few; /* 0: not asked yet, 1: yes, 2: no */
    int v = atomic_load_explicit(&few, memory_order_relaxed);
    if (!v) {
        v = zfi_cpus_usable() <= 2 ? 1 : 2;
        atomic_store_explicit(&few, v, memory_order_relaxed);
    }
    return v == 1;
}

/* Spinning through the gap. A worker woken for each of a stream of
 * capsules 100 us apart (pushed by a thread the runtime does not own: a DDS
 * listener) pays the VM's wake-up per capsule; spinning through the gap
 * takes it off the latency path. So while the work idle workers found came
 * less than ZFI_DENSE_NS apart lately (an average of the last few gaps;
 * periodic sources do not count: the timer wakes on time), one idle worker
 * spins up to twice that gap (at most DENSE_SPIN_MAX_NS), still yielding
 * on few CPUs; the others spin SPIN_NS. Traffic that stopped costs one such
 * spin (the next find, after the pause, raises the average past
 * ZFI_DENSE_NS). Any spin that lost its CPU for DENSE_LOST_NS ends, and
 * for DENSE_CALM_NS workers spin YIELD_AFTER_NS only, without yielding:
 * the CPUs are taken, and a spinner that yielded to a busy thread (a build)
 * waited for the scheduler's next tick, counted as spinning, so that no
 * push woke a worker meanwhile (a 100 us stream beside two busy loops:
 * 76-143 us p50, 57-61 us with this; raw Cyclone 51-61 us). */
#define ZFI_DENSE_NS      200000u
#define DENSE_SPIN_MAX_NS 400000u
#define DENSE_LOST_NS     200000u
#define DENSE_CALM_NS     20000000ull

static void found_work(zf_runtime *rt, const zf_node *n)
{
    if (n->desc && n->desc->period_ns > 0)
        return;
    uint64_t now = zf_clock_ns();
    uint64_t last = atomic_exchange_explicit(&rt->found_last, now, memory_order_relaxed);
    uint64_t gap = last && now > last ? now - last : 4ull * ZFI_DENSE_NS;
    if (gap > 4ull * ZFI_DENSE_NS)
        gap = 4ull * ZFI_DENSE_NS; /* one long pause weighs as much as a few short gaps */
    uint64_t avg = atomic_load_explicit(&rt->found_gap, memory_order_relaxed);
    atomic_store_explicit(&rt->found_gap, last ? avg - avg / 4 + gap / 4 : gap,
                          memory_order_relaxed);
}

/* How long a worker that starts spinning at `now` spins (it counts itself
 * in `spinning`): SPIN_NS, or through the gap (above); YIELD_AFTER_NS
 * after a periodic source's tick, whose next tick the timer wakes a worker
 * for (its spin only kept the CPU from the thread sending the capsule on). */
static uint64_t spin_budget(zf_runtime *rt, uint64_t now)
{
    if (tls_ticked) {
        tls_ticked = false;
        return YIELD_AFTER_NS;
    }
    if (now < atomic_load_explicit(&rt->spin_calm, memory_order_relaxed))
        return YIELD_AFTER_NS;
    uint64_t last = atomic_load_explicit(&rt->found_last, memory_order_relaxed);
    uint64_t gap = atomic_load_explicit(&rt->found_gap, memory_order_relaxed);
    if (!last || gap >= ZFI_DENSE_NS || now - last > 2 * gap ||
        atomic_load_explicit(&rt->spinning, memory_order_relaxed) > 1)
        return SPIN_NS;
    return 2 * gap < SPIN_NS ? SPIN_NS : 2 * gap > DENSE_SPIN_MAX_NS ? DENSE_SPIN_MAX_NS : 2 * gap;
}

/* The end of a spin: no longer counted as spinning. A push that saw this
 * worker spinning woke nobody: if the run queue still has work after the
 * node this worker found, wake another for it. */
static zf_node *spin_end(zf_runtime *rt, zf_node *found)
{
    atomic_fetch_sub(&rt->spinning, 1);
    if (found)
        found_work(rt, found);
    if (found && atomic_load(&rt->q_count))
        wake_one(rt);
    return found;
}

/* A node found while parking (not spinning): this worker may have been the
 * one a push woke, and other pushes skipped their wake-up for it (`woken`):
 * pass the wake on if work is left. */
static zf_node *park_end(zf_runtime *rt, zf_node *found)
{
    atomic_store(&rt->woken, 0);
    found_work(rt, found);
    if (atomic_load(&rt->q_count))
        wake_one(rt);
    return found;
}

/* Spin on the queue for SPIN_NS, then sleep until woken, then spin again:
 * a worker woken for work another worker took first finds the next while
 * it spins, and the push that follows needs no second wake-up. */
static zf_node *runq_pop_idle(zf_runtime *rt)
{
    for (;;) {
        atomic_fetch_add(&rt->spinning, 1);
        atomic_store(&rt->woken, 0); /* (the woken one, or another: one spins) */
        uint64_t t0 = zf_clock_ns(), look = t0, budget = spin_budget(rt, t0);
        steal_watch watch = {0};
        for (unsigned i = 0;; i++) {
            if (atomic_load_explicit(&rt->q_count, memory_order_acquire)) {
                zf_node *n = runq_try_pop(rt);
                if (n)
                    return spin_end(rt, n);
            }
            zf_node *stolen = steal_ripe(rt, &watch);
            if (stolen)
                return spin_end(rt, stolen);
            if (idle_poll(rt)) /* isolated children's outputs (what they make ready runs next) */
                continue;
            if ((i & 63) == 63) {
                uint64_t now = zf_clock_ns();
                if (now - look > DENSE_LOST_NS) {
                    /* it lost its CPU: the CPUs are taken */
                    atomic_store_explicit(&rt->spin_calm, now + DENSE_CALM_NS,
                                          memory_order_relaxed);
                    break;
                }
                look = now;
                if (now - t0 > budget)
                    break;
                if (few_cpus() && now - t0 > YIELD_AFTER_NS) {
                    sched_yield(); /* (the thread it keeps off this CPU may have the work) */
                    continue;
                }
            }
            zfi_cpu_relax();
        }
        spin_end(rt, NULL); /* the park below re-checks the queue after prepare */
        uint32_t key = zfi_evc_prepare(&rt->q_evc);
        zf_node *n = runq_try_pop(rt);
        if (!n)
            n = steal(rt);
        if (n) {
            zfi_evc_cancel(&rt->q_evc);
            return park_end(rt, n);
        }
        if (runtime_shutdown(rt)) {
            zfi_evc_cancel(&rt->q_evc);
            return NULL;
        }
        const zfi_idle_hooks *h = atomic_load_explicit(&rt->idle, memory_order_acquire);
        if (h)
            h->wait(rt, &rt->q_evc, key); /* (or an isolated child's output) */
        else
            zfi_evc_wait(&rt->q_evc, key, -1);
        if (idle_poll(rt)) {
            n = steal(rt);
            if (n)
                return park_end(rt, n);
        }
    }
}

/* ---- notification ---- */

/* A node put in a worker's run-next slot runs when that worker's callback
 * returns. A sleeping worker is woken to take it only when that wait may
 * be long: here, when the node sending took SLOT_WAKE_NS or more in each
 * of its last two timed callbacks or this callback began a tick ago; in a
 * step, when it goes on to another callback; and by the timer, when a slot
 * has held the same node for a tick. Waking one at every fill, for a node
 * the sender ran itself microseconds later, cost a futex call and a
 * context switch per message in lockstep, and the woken worker then
 * competed for the 2 vCPUs with the threads that had the work
 * (docs/isolation.md, "Waiting"). */
#define SLOT_WAKE_NS 50000u

static bool slot_wait_long(zf_runtime *rt)
{
    const zf_node *cur = zfi_tls_node;
    if (!cur)
        return false; /* between callbacks (taking a child's outputs): the slot runs next */
    /* Its last two timed callbacks (one in BUSY_SAMPLE is timed), not its
     * average busy time: that extrapolates each sample, so one slow callback
     * (a 10 MiB source's first touch of a fresh block, ~3 ms) read as 64 of
     * them, and every send woke a sleeping worker (a futex call, 1.2 us
     * before the node in the slot could run) for the next thousands of
     * callbacks: a 10 MiB isolated hop measured 1.9 us instead of 0.6 for
     * 1 000-4 000 messages after its start. (signed: a start is made unique
     * by adding 1, so last_start may be ahead of the timer's clock) */
    int64_t running =
        (int64_t)(atomic_load_explicit(&rt->now_ns, memory_order_relaxed) - cur->last_start);
    return (cur->dur_sample[0] >= SLOT_WAKE_NS && cur->dur_sample[1] >= SLOT_WAKE_NS) ||
           running >= (int64_t)ZFI_TICK_NS;
}

/* A worker sleeps (a filter: wake_one decides). */
static bool sleepers(zf_runtime *rt)
{
    return atomic_load_explicit(&rt->q_evc.waiters, memory_order_relaxed) & ~ZFI_EVC_WOKEN;
}

/* This worker's slot holds a node. */
static bool slot_full(void)
{
    return tls_slot >= 0 && atomic_load_explicit(&tls_rt->slots[tls_slot], memory_order_relaxed);
}

void zfi_sched_tick(zf_runtime *rt)
{
    unsigned n = atomic_load_explicit(&rt->n_slots, memory_order_acquire);
    uint64_t now = atomic_load_explicit(&rt->now_ns, memory_order_relaxed);
    bool stuck = false;
    for (unsigned i = 0; i < n && i < ZFI_MAX_WORKERS; i++) {
        const zf_node *in = atomic_load_explicit(&rt->slots[i], memory_order_relaxed);
        if (!in || in != rt->slot_seen[i]) {
            rt->slot_seen[i] = in;
            rt->slot_seen_ns[i] = now;
        } else if (now - rt->slot_seen_ns[i] >= ZFI_TICK_NS) {
            stuck = true; /* there a tick ago (a kicked pass of the timer is not a tick) */
        }
    }
    /* Not wake_one: its `woken` may be stale (set for a worker whose wait
     * ended otherwise), which would silence this net too. */
    if (stuck)
        zfi_evc_notify_one(&rt->q_evc);
}

/* fenced: the caller ran a full barrier after its last store (the link
 * hooks: core/link.h); otherwise a wake that finds the node queued or
 * running runs one (below). */
static inline void notify(zf_node *n, bool fenced)
{
    for (;;) {
        /* Before the instance starts (a source's own thread may send from
         * init) nothing runs: capsules wait in the links, and start
         * notifies every node. A node never runs before every init has. */
        int s = atomic_load_explicit(&n->inst->started, memory_order_acquire)
                    ? atomic_load_explicit(&n->sched, memory_order_acquire)
                    : -1;
        int next;
        if (s == ZFI_IDLE) {
            next = ZFI_QUEUED;
        } else if (s == ZFI_RUNNING) {
            next = ZFI_RUNNING_NOTIFIED;
        } else if (fenced) {
            return; /* not started, already queued, or will run again */
        } else {
            /* Not started, queued, or will run again: whoever runs the
             * node next must see what the caller stored before this call
             * (an ack, a cell). A step begins by storing RUNNING, then
             * reads (the start, by storing `started`, then notifying);
             * these reads could have passed the caller's stores (a load
             * may pass earlier stores, even on x86): a source that then
             * read the old ack went idle, and the caller's wake_at_ns = 0,
             * landing after the step's own, took the timer's safety net
             * too (a lockstep pipeline stopped for good). The CAS below is
             * a full barrier; this path reads again after one. (The step's
             * side is its seq_cst store of RUNNING, a full barrier on x86:
             * xchg, or mov and mfence. C11 alone would also want the
             * step's reads after it seq_cst; on AArch64 the seq_cst loads
             * that follow it, halted and abandoned, keep the order.) */
            atomic_thread_fence(memory_order_seq_cst);
            fenced = true;
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&n->sched, &s, next, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            if (next != ZFI_QUEUED)
                return;
            zf_runtime *rt = n->inst->rt;
            if (tls_rt == rt && tls_slot >= 0) {
                /* Only this worker puts a node in its slot (others only
                 * take): an empty slot is filled with a plain store. */
                _Atomic(zf_node *) *slot = &rt->slots[tls_slot];
                zf_node *old = atomic_load_explicit(slot, memory_order_relaxed);
                if (old)
                    old = atomic_exchange(slot, n);
                else
                    atomic_store_explicit(slot, n, memory_order_release);
                if (old)
                    runq_push(rt, old);
                else if (slot_wait_long(rt))
                    wake_one(rt); /* a sleeping worker takes it meanwhile */
                return;
            }
            runq_push(rt, n);
            return;
        }
    }
}

void zfi_node_notify(zf_node *n)
{
    notify(n, false);
}

void zfi_node_on_data(void *node)
{
    notify(node, true);
}

void zfi_node_on_room(void *node)
{
    notify(node, true);
}

/* ---- running a node ---- */

/* STEP_RETIRE: the callback outlived its hang_timeout and the watchdog gave
 * this worker's place to a new one: end the step, hand the node back to the
 * run queue and let the thread go. */
enum step_result { STEP_OK, STEP_ABANDONED, STEP_RETIRE };

/* Run one callback with the node's context. Returns STEP_ABANDONED when the
 * node was abandoned while inside it: the worker must touch nothing else. */
static inline __attribute__((always_inline)) enum step_result call(zf_node *n, unsigned port,
                                                                   zf_data **d, uint64_t *now)
{
    zfi_ctx saved = zfi_node_enter(n);
    zfi_tls_node = n;
    n->error_msg[0] = '\0';
    n->cb_capsule = d ? *d : NULL;
    if (d)
        zfi_held(1); /* handed over to the callback */
    /* The watchdog needs the start: the timer thread's clock is enough (it
     * is at most a tick old; made unique per node so it names this
     * callback). Busy time is measured precisely on one callback in
     * BUSY_SAMPLE and extrapolated (clock reads per callback would cost
     * more than a hop); callbacks longer than a tick are counted as they
     * are. */
    zf_runtime *rt = n->inst->rt;
    uint64_t t0 = *now ? *now : atomic_load_explicit(&rt->now_ns, memory_order_relaxed);
    if (t0 <= n->last_start)
        t0 = n->last_start + 1;
    n->last_start = t0;
    bool timed = (n->timing_tick++ % BUSY_SAMPLE) == 0;
    uint64_t p0 = timed ? zf_clock_ns() : 0;
    /* release: cb_capsule is visible to whoever reads this word (the
     * watchdog, zfi_node_abandon, the stop report) */
    atomic_store_explicit(&n->cb_word, t0, memory_order_release);
    zf_err err = d ? n->decl->on_input(n->state, n, port, d) : n->decl->produce(n->state, n);
    /* Decided against zfi_node_abandon and the watchdog: either this
     * worker goes on, or it was abandoned and touches nothing. */
    uint64_t marks = callback_end(n, t0);
    if (ZFI_UNLIKELY(marks & ZFI_CB_ABANDONED)) {
        zfi_tls_node = NULL;
        zfi_node_leave(saved);
        return STEP_ABANDONED;
    }
    bool was_hung = marks & ZFI_CB_HUNG; /* the watchdog replaced this worker meanwhile */
    /* progress: when it completed (within a tick) */
    uint64_t t1 = atomic_load_explicit(&rt->now_ns, memory_order_relaxed);
    if (timed) {
        /* A long one is itself, once: extrapolated, one 40 ms callback
         * read as 2.56 s of work. */
        uint64_t dur = zf_clock_ns() - p0;
        zfi_counter_add(&n->busy_ns, dur >= ZFI_TICK_NS ? dur : dur * BUSY_SAMPLE);
        n->dur_sample[1] = n->dur_sample[0];
        n->dur_sample[0] = dur;
    } else if (ZFI_UNLIKELY(t1 - t0 > 2 * ZFI_TICK_NS)) {
        zfi_counter_add(&n->busy_ns, t1 - t0); /* a long one the timer's clock saw */
    }
    *now = t1; /* the next callback of this step starts now */
    zfi_tls_node = NULL;
    zfi_node_leave(saved);
    zfi_counter_add(&n->callbacks, 1);
    atomic_store_explicit(&n->last_progress_ns, t1, memory_order_relaxed);
    if (was_hung) {
        zfi_node_returned_from_hang(n);
        tls_retire = true; /* a replacement worker took this one's place */
    }
    if (err == ZF_ECLOSED && atomic_load(&n->inst->sources_stopped))
        err = ZF_OK;                   /* sending while the instance stops: not the node's fault */
    n->waits = !d && err == ZF_EAGAIN; /* nothing until zf_node_wake: not an error */
    if (n->waits)
        err = ZF_OK;
    if (err != ZF_OK)
        zfi_node_error(n, err, d ? "on_input" : "produce");
    else if (atomic_load_explicit(&n->degraded, memory_order_relaxed) && !n->proxy)
        zfi_node_success(n, t1); /* (an isolated node's proxy thread judges its own) */
    return was_hung ? STEP_RETIRE : STEP_OK;
}

/* Still parked? Registers for on_room on the first full output link. */
static bool still_parked(zf_node *n)
{
    for (size_t o = 0; o < n->n_out; o++)
        for (size_t k = 0; k < n->out[o].n; k++)
            if (!zfi_link_want_room(n->out[o].links[k]))
                return true;
    return false;
}

static void unpark(zf_node *n)
{
    atomic_store(&n->parked, false);
    if (n->parked_on)
        zfi_link_add_blocked(n->parked_on, zf_clock_ns() - n->parked_since);
    n->parked_on = NULL;
}

/* What the source sent made a node ready in this worker's run-next slot
 * while another worker idles: end the source's step, so that node runs here
 * next and the idle worker may take the source. (A source that waits inside
 * produce would otherwise keep this worker, and everything downstream would
 * cross to a worker that may have gone to sleep.) While every worker is
 * busy, the source keeps its batch. */
static bool handoff_due(void)
{
    return slot_full() && atomic_load_explicit(&tls_rt->idle_workers, memory_order_relaxed) > 0;
}

static enum step_result step_source(zf_node *n, bool *more)
{
    zf_instance *inst = n->inst;
    bool periodic = n->desc->period_ns > 0;
    uint64_t now = 0; /* coarse clock, shared by consecutive callbacks */
    /* Up to ZFI_BATCH calls per step (a periodic source: one per elapsed
     * period), so a free-running source does not go through the run queue
     * once per message. */
    for (int k = 0; k < ZFI_BATCH; k++) {
        if (n->done || atomic_load(&inst->sources_stopped) || atomic_load(&inst->halted) ||
            !n->decl->produce)
            return STEP_OK;
        if (periodic && !atomic_exchange(&n->ticks, 0))
            return STEP_OK;
        /* What the last produce made ready would wait (above): unless this
         * is a waiting source, whose produce returns at once (it does not
         * sleep in it), so this worker runs the slot's node in a moment. */
        if (k > 0 && !n->waiting_sends && slot_full() && sleepers(inst->rt))
            wake_one(inst->rt);
        uint64_t sent = atomic_load_explicit(&n->sent, memory_order_relaxed) +
                        atomic_load_explicit(&n->sent_x, memory_order_relaxed);
        n->refused_on = NULL;
        enum step_result r = call(n, 0, NULL, &now);
        if (r != STEP_OK)
            return r;
        if (n->refused_on && n->waits && !atomic_load(&n->parked)) {
            /* it passed a zf_try_send's refusal on: parked on that room */
            n->parked_on = n->refused_on;
            atomic_store(&n->parked, true);
        }
        if (atomic_load(&n->parked)) {
            n->parked_since = zf_clock_ns();
            return STEP_OK;
        }
        if (periodic) {
            if (!atomic_load(&n->ticks))
                return STEP_OK;
            continue;
        }
        if (n->waits) {
            /* Until zf_node_wake notifies it; the timer thread's next tick
             * (no kick: no system call here) is the safety net. */
            n->waiting_sends = WAITING_SPAN;
            n->backoff_ns = 0;
            atomic_store(&n->wake_at_ns, zf_clock_ns() + MAX_BACKOFF_NS);
            return STEP_OK;
        }
        if (atomic_load_explicit(&n->sent, memory_order_relaxed) +
                atomic_load_explicit(&n->sent_x, memory_order_relaxed) ==
            sent) {
            /* A free-running source that had nothing to send: call it
             * again after a backoff (100 us doubling to 10 ms) rather than
             * spin. */
            n->backoff_ns = n->backoff_ns ? n->backoff_ns * 2 : 100000;
            if (n->backoff_ns > MAX_BACKOFF_NS)
                n->backoff_ns = MAX_BACKOFF_NS;
            atomic_store(&n->wake_at_ns, zf_clock_ns() + n->backoff_ns);
            zfi_timer_kick(inst->rt);
            return STEP_OK;
        }
        n->backoff_ns = 0;
        if (n->waiting_sends)
            n->waiting_sends--; /* (a waiting source does not sleep in produce) */
        else if (handoff_due())
            break;
    }
    *more = !atomic_load(&inst->sources_stopped);
    return STEP_OK;
}

/* Deliver up to ZFI_BATCH capsules, while the timer thread's clock has not
 * moved since the step began (at least one), taking them one at a time
 * round robin over the inputs: a take is one claim on the lock-free ring,
 * so a step never holds capsules it has not delivered, and a stop or a
 * park between two callbacks leaves the rest in the link, in order, where
 * the breaker and the stop reach it. */
static enum step_result consume(zf_node *n, bool *more, uint64_t *took)
{
    /* coarse clock, shared by consecutive callbacks: the step's start */
    uint64_t start = atomic_load_explicit(&n->inst->rt->now_ns, memory_order_relaxed);
    uint64_t now = start;
    if (!n->decl->on_input)
        return STEP_OK; /* a system sink that takes from its links itself */
    for (int k = 0; k < ZFI_BATCH && (k == 0 || now == start); k++) {
        if (atomic_load_explicit(&n->parked, memory_order_relaxed) ||
            atomic_load_explicit(&n->inst->halted, memory_order_relaxed))
            break;
        if (n->proxy && !n->proxy->room(n))
            return STEP_OK; /* its process's rings are full: notified when not */
        zf_data *d = NULL;
        size_t port = 0;
        bool all_eos = true;
        for (size_t j = 0; j < n->n_in; j++) {
            /* (rr < n_in and j < n_in: one subtraction, not a division
             * per take: ~3 % of a same-core stage's time, perf) */
            port = n->rr + j;
            if (port >= n->n_in)
                port -= n->n_in;
            bool eos = false;
            d = zfi_link_take(n->in[port], &eos);
            if (d) {
                *took |= port < 63 ? 1ull << port : 1ull << 63;
                break;
            }
            all_eos = all_eos && eos;
        }
        if (!d) {
            /* An isolated node is done once its process drained its rings
             * (it notifies the node then). */
            if (all_eos && (!n->proxy || n->proxy->eos(n)))
                zfi_node_finish(n);
            return STEP_OK;
        }
        n->rr = port + 1 < n->n_in ? (unsigned)(port + 1) : 0;
        if (slot_full() && sleepers(n->inst->rt))
            wake_one(n->inst->rt); /* what is in the slot would wait for this callback (above) */
        atomic_store_explicit(&d->owner, zfi_owner_pack(n->index, (long)port),
                              memory_order_relaxed);
        enum step_result r = call(n, (unsigned)port, &d, &now);
        if (r == STEP_ABANDONED) {
            /* The pool outlives an abandoned node: releasing is safe. */
            zf_data_unref(d);
            return STEP_ABANDONED;
        }
        if (d) {
            zfi_data_check(d, "on_input");
            atomic_store_explicit(&n->held,
                                  atomic_load_explicit(&n->held, memory_order_relaxed) - 1,
                                  memory_order_relaxed);
            zf_data_unref(d); /* whatever the callback left in *d */
        }
        if (r == STEP_RETIRE)
            return STEP_RETIRE; /* hung meanwhile: the rest waits in the link */
    }
    if (atomic_load(&n->parked)) {
        n->parked_since = zf_clock_ns();
        return STEP_OK;
    }
    if (atomic_load(&n->inst->halted))
        return STEP_OK;
    /* The budget ended the step: more if an input has something; if every
     * input has ended instead, the node is done now. (End of stream may have
     * come before this step ran, its wake-up then finding the node queued:
     * no other wake-up follows, so it must be seen here.) */
    bool all_eos = n->n_in > 0;
    for (size_t j = 0; j < n->n_in && !*more; j++) {
        *more = zfi_link_ready(n->in[j]);
        all_eos = all_eos && !*more && zfi_link_drained(n->in[j]);
    }
    if (!*more && all_eos && (!n->proxy || n->proxy->eos(n)))
        zfi_node_finish(n);
    return STEP_OK;
}

/* A step's takes are the consumer's plain stores (core/link.h): each link
 * taken from is settled once at the step's end (a fence, then the
 * wake-ups its takes owe). Not after an abandon: the worker touches
 * nothing more (the stop flushes and closes those links, which wakes their
 * producers). */
static enum step_result step_consumer(zf_node *n, bool *more)
{
    uint64_t took = 0; /* bit j: input j taken from (bit 63: one past 62) */
    enum step_result r = consume(n, more, &took);
    if (took && r != STEP_ABANDONED)
        for (size_t j = 0; j < n->n_in; j++)
            if (took & (j < 63 ? 1ull << j : 1ull << 63))
                zfi_link_settle(n->in[j]);
    return r;
}

/* Run a node until it has nothing to do, then leave it idle (or queue it
 * again, after the others, when it still has work), notifying rt->left.
 * Returns false when the node was abandoned during a callback. */
static bool run_node(zf_node *n)
{
    zf_instance *inst = n->inst;
    zf_runtime *rt = inst->rt;
    atomic_store(&n->sched, ZFI_RUNNING);
    for (;;) {
        bool more = false;
        if (!atomic_load(&inst->halted) && !atomic_load(&n->abandoned)) {
            bool blocked = atomic_load(&n->parked) && still_parked(n);
            if (!blocked) {
                if (atomic_load(&n->parked))
                    unpark(n);
                enum step_result r =
                    n->decl->kind == ZF_SOURCE ? step_source(n, &more) : step_consumer(n, &more);
                if (r == STEP_ABANDONED)
                    return false;
                if (r == STEP_RETIRE) {
                    /* this thread goes: the node runs on another worker */
                    atomic_store(&n->sched, ZFI_QUEUED);
                    runq_push(rt, n);
                    zfi_evc_notify(&rt->left);
                    return true;
                }
            }
        }
        if (more) {
            atomic_store(&n->sched, ZFI_QUEUED);
            runq_push(rt, n);
            zfi_evc_notify(&rt->left);
            return true;
        }
        int expect = ZFI_RUNNING;
        if (atomic_compare_exchange_strong(&n->sched, &expect, ZFI_IDLE)) {
            /* n may not be touched after this; a stop or destroy waiting
             * for its nodes to be left is told (one load when none waits) */
            zfi_evc_notify(&rt->left);
            return true;
        }
        atomic_store(&n->sched, ZFI_RUNNING); /* notified while running: again */
    }
}

/* ---- workers ---- */

static void *worker_main(void *arg)
{
    zf_runtime *rt = arg;
    tls_rt = rt;
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < ZFI_MAX_WORKERS; i++)
        if (!rt->slot_used[i]) {
            rt->slot_used[i] = true;
            tls_slot = i;
            if ((unsigned)i + 1 > atomic_load(&rt->n_slots))
                atomic_store(&rt->n_slots, (unsigned)i + 1);
            break;
        }
    pthread_mutex_unlock(&rt->mu);
    zfi_thread_name("zf-worker%d", tls_slot);
    unsigned next_runs = 0, polls = 0;
    for (;;) {
        zf_node *n = tls_slot >= 0 ? atomic_exchange(&rt->slots[tls_slot], NULL) : NULL;
        if (n && ++next_runs > MAX_NEXT_RUNS) {
            runq_push(rt, n); /* let the run queue have a turn */
            n = NULL;
        }
        if (!n) {
            next_runs = 0;
            n = runq_pop(rt);
        }
        if (!n)
            break;
        tls_ticked = n->desc && n->desc->period_ns > 0 && n->decl->kind == ZF_SOURCE;
        if (!run_node(n))
            return NULL; /* abandoned: the runtime counts this thread as stuck */
        /* Busy workers look at isolated children's outputs too, now and
         * then: only idle ones did, so workers kept busy by other nodes left
         * a child blocked on a full output ring until it passed for hung. */
        if ((++polls & (BUSY_POLL_EVERY - 1)) == 0)
            idle_poll(rt);
        if (tls_retire)
            break;
    }
    if (tls_slot >= 0) {
        zf_node *left = atomic_exchange(&rt->slots[tls_slot], NULL);
        if (left)
            runq_push(rt, left);
    }
    pthread_mutex_lock(&rt->mu);
    if (tls_slot >= 0)
        rt->slot_used[tls_slot] = false;
    rt->live_workers--;
    if (!tls_retire)
        rt->active_workers--;
    pthread_cond_broadcast(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

/* Start one worker; rt->mu held. */
static zf_err spawn_locked(zf_runtime *rt)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int e = pthread_create(&t, &a, worker_main, rt);
    pthread_attr_destroy(&a);
    if (e != 0)
        return zfi_error(ZF_ESYS, "cannot start a worker thread: %s", strerror(e));
    rt->live_workers++;
    rt->active_workers++;
    return ZF_OK;
}

void zfi_worker_add_locked(zf_runtime *rt)
{
    rt->active_workers--; /* the stuck one no longer counts */
    if (!rt->shutdown && spawn_locked(rt) != ZF_OK)
        zfi_log(ZF_LOG_ERROR, "sched", "could not replace a worker stuck in a hung node: %s",
                zf_last_error());
}

void zfi_worker_add(zf_runtime *rt)
{
    pthread_mutex_lock(&rt->mu);
    zfi_worker_add_locked(rt);
    pthread_mutex_unlock(&rt->mu);
}

zf_err zfi_workers_start(zf_runtime *rt)
{
    zf_err err = ZF_OK;
    pthread_mutex_lock(&rt->mu);
    for (unsigned i = 0; i < rt->target_workers && err == ZF_OK; i++)
        err = spawn_locked(rt);
    pthread_mutex_unlock(&rt->mu);
    return err;
}

void zfi_workers_stop(zf_runtime *rt)
{
    pthread_mutex_lock(&rt->mu);
    rt->shutdown = true;
    pthread_mutex_unlock(&rt->mu);
    zfi_evc_notify(&rt->q_evc);
    /* Every exiting worker broadcasts rt->cv; stuck ones never come back. */
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&rt->mu);
    while (rt->live_workers > rt->stuck_workers &&
           pthread_cond_timedwait(&rt->cv, &rt->mu, &dl) != ETIMEDOUT)
        ;
    if (rt->live_workers > rt->stuck_workers)
        zfi_log(ZF_LOG_WARN, "sched", "%u worker threads did not stop",
                rt->live_workers - rt->stuck_workers);
    pthread_mutex_unlock(&rt->mu);
}

bool zfi_node_mark_hung(zf_node *n, uint64_t start)
{
    uint64_t w = start;
    if (!start)
        return false;
    pthread_mutex_lock(&claim_mu);
    bool marked = atomic_compare_exchange_strong(&n->cb_word, &w, start | ZFI_CB_HUNG) &&
                  claim_stands(n, start, ZFI_CB_HUNG);
    pthread_mutex_unlock(&claim_mu);
    return marked;
}

bool zfi_node_abandon(zf_node *n, uint64_t start)
{
    pthread_mutex_lock(&claim_mu);
    uint64_t w = atomic_load(&n->cb_word);
    bool claimed = false;
    while (start && ZFI_CB_START(w) == start && !(w & ZFI_CB_ABANDONED)) {
        if (atomic_compare_exchange_weak(&n->cb_word, &w, w | ZFI_CB_ABANDONED)) {
            claimed = claim_stands(n, ZFI_CB_START(w), ZFI_CB_ABANDONED);
            break;
        }
    }
    pthread_mutex_unlock(&claim_mu);
    if (!claimed)
        return false;
    atomic_store(&n->abandoned, true);
    zf_runtime *rt = n->inst->rt;
    pthread_mutex_lock(&rt->mu);
    rt->stuck_workers++;
    bool replace = !(w & ZFI_CB_HUNG); /* a hung one was replaced already */
    pthread_mutex_unlock(&rt->mu);
    if (replace)
        zfi_worker_add(rt);
    return true;
}
