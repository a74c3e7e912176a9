/* Process-isolated nodes, the runtime's side: a proxy the scheduler treats
 * like a node, and one thread per isolated node that moves handles between
 * the node's child process (zf-node-host, node_host.c) and the links.
 *
 *   worker:  proxy_on_input   the capsule's reference moves into the
 *                             child's ledger; its handle into an input ring
 *   idle worker: iso_poll output rings -> the links, without blocking
 *                             (the child's reference moves on); it sleeps on
 *                             the children's words too (iso_idle_wait)
 *   proxy thread:             outputs on a full link (in order), at a stop,
 *                             end of stream or death; completion ring ->
 *                             unref; keeps the loan ring stocked; control
 *                             messages; death
 *
 * Layers: this file calls down into src/proc (rings, channel, spawn,
 * ledger) and into the runtime's node lifecycle (lifecycle.c) for state
 * changes; nothing calls back up into it but the scheduler's gate and idle
 * loop, the instance's init/fini and the stop's source and end-of-stream
 * hooks.
 *
 * Death (pidfd, watched by a thread blocked in poll): forward what the
 * child published, release every ledger entry, drop its rings (a new
 * incarnation gets new ones), mark the node DEGRADED with the signal or
 * exit code, then apply `restart` (backoff, max_restarts within
 * restart_window; FAILED past it). While down, the gate refuses input so
 * the node's links fill and its breaker sheds load. */
#include "runtime/runtime.h"

#include "proc/chan.h"
#include "proc/ledger.h"
#include "proc/shm.h"
#include "proc/spawn.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_BASE_NS 10000000ull /* 10 ms, doubling per restart in the window */
#define BACKOFF_MAX_NS  2000000000ull
#define MAX_LOAN        ((uint64_t)1 << 40)

enum phase {
    PH_LOADING,  /* spawned, waiting for its DECL */
    PH_LOADED,   /* loaded, waiting for init to be asked */
    PH_INITING,  /* INIT sent */
    PH_UP,       /* running */
    PH_FINISHING /* FINI sent */
};

struct zfi_iso {
    zf_node *n;
    pthread_mutex_t mu; /* ledger, input and loan rings, socket sends, the fields below */
    pthread_cond_t cv;  /* phase and result changes */
    zfi_ledger ledger;
    zfi_child child;
    zfi_shm m;
    bool have_shm;
    enum phase phase;
    bool alive;       /* a child incarnation runs (gate: only when PH_UP) */
    bool init_wanted; /* zfi_iso_init asked */
    bool fini_wanted; /* zfi_iso_fini asked */
    bool load_done;   /* the first load ended (load_err) */
    zf_err load_err;  /* ... */
    char *load_diag;  /* LOAD_FAILED's entries */
    bool init_done;   /* the first init ended (init_err) */
    zf_err init_err;
    char init_msg[512];
    bool thread_done; /* the proxy thread ended */
    bool thread_started;
    bool init_timed_out;  /* the first init outlived its bound */
    bool eos_done;        /* the child drained its inputs after end of stream */
    bool stop_done;       /* a source acknowledged the stop, its outputs drained */
    atomic_bool hung;     /* a callback of the child is past hang_timeout (proxy thread writes) */
    uint64_t copies_dead; /* copies counted by incarnations that ended */
    uint64_t callbacks_dead;   /* callbacks completed by incarnations that ended */
    uint64_t in_put;           /* capsules put into this incarnation's input rings */
    bool sock_closed;          /* its control socket ended (proxy thread) */
    bool first;                /* the first incarnation (create/init report to the caller) */
    uint64_t deadline;         /* of the current phase (0: none) */
    char kill_reason[200];     /* why the runtime killed it, for the death report */
    pthread_mutex_t reason_mu; /* kill_reason (workers and the proxy thread kill) */
    atomic_bool dead;          /* the watcher saw the pidfd */
    _Atomic uint64_t died_ns;  /* when it did */
    atomic_bool wake;          /* a request for the proxy thread */
    pthread_t thread, watcher;
    bool watcher_started;
    size_t small_sent, small_bytes;
    const void **large_sent;
    size_t n_large_sent;
    /* restart policy */
    uint64_t *restart_times; /* ring of the last max_restarts restart times */
    size_t restart_head;
    /* figures (read by stats) */
    atomic_int pid;
    atomic_uint_fast64_t restarts, reclaimed_refs, reclaimed_bytes, deaths, crashes, copies_in;
    /* inputs handed over and never processed: in its rings or its callback
     * when its process ended, or taken while it was down */
    atomic_uint_fast64_t lost;
    atomic_uint_fast64_t killed_at_stop; /* stops at which its process was killed */
    char last_exit[256];                 /* under mu */
    zf_node_decl decl;
    zf_port_decl *in_ports, *out_ports;
    /* Outputs taken by idle workers (iso_poll): the slot's lock guards
     * the output rings' consumer side and the fields below. */
    int slot;                   /* in the runtime's table; -1: none (the proxy takes them) */
    atomic_bool out_live;       /* up, ZFI_RT_BELL set: the workers take the outputs (go_live) */
    zf_data *held;              /* taken, but its link had no room: the proxy sends it */
    unsigned held_port;         /* ... on this output */
    atomic_bool backlog;        /* a link was full: the proxy takes the outputs until drained */
    atomic_uint sleepers;       /* workers asleep on to_workers (zfi_iso_free waits for none) */
    atomic_bool comps_waiting;  /* completions wait for outputs taken first (take_comps) */
    _Atomic uint64_t comps_pos; /* the completion ring's head, for the watchdog (take_comps) */
    uint64_t watch_tail;        /* its tail at the watchdog's last tick (zfi_iso_watch) */
    /* Puts every input ring has room for, as the last put saw it (a lower
     * bound: only the node's runner puts); 0 while the gate is shut or no
     * put has looked. The gate's answer without the lock (zfi_iso_room). */
    atomic_uint room_hint;
    uint32_t incarnations; /* (proxy thread) */
    /* Child wake-ups decided under mu, not yet made (bury waits for none
     * before the unmapping); | WAKES_WAITED. */
    _Atomic uint32_t wakes_out;
};

/* In wakes_out: bury sleeps on the word until the wake-ups in flight are made. */
#define WAKES_WAITED 0x80000000u

/* The isolated nodes of a runtime whose outputs idle workers take. */
#define ISO_SLOTS  64u
#define POLL_BATCH 32u /* cells a worker takes per output per poll */
#define RECLAIM_AT 8u  /* capsules in a ledger past which an input's worker takes completions */

typedef struct iso_slot {
    _Alignas(ZFI_CACHELINE) zfi_lock lock; /* a worker or the proxy thread (spin, then futex) */
    _Atomic(zfi_iso *) iso;
} iso_slot;

/* Input i's ring holds at most what the link feeding it may (its
 * capacity, at most the ring's cells): a child that stops taking holds no
 * more than its link would, so an isolated node's input is bounded by
 * twice its link's capacity (the link, then the ring), not by the ring's
 * ZFI_PROC_IN_CAP cells (256 frames of 10 MiB). */
static uint32_t in_limit_of(const zf_node *n, size_t i, uint32_t cap)
{
    uint32_t c = n->in && n->in[i] ? zfi_link_capacity(n->in[i]) : 0;
    return c && c < cap ? c : cap;
}

/* What the child may keep in output o's ring: the smallest capacity among
 * the output's links (a link of no bound: the ring's cap). */
static uint32_t out_limit_of(const zf_node *n, size_t o, uint32_t cap)
{
    uint32_t lim = cap;
    for (size_t j = 0; n->out && j < n->out[o].n; j++) {
        uint32_t c = zfi_link_capacity(n->out[o].links[j]);
        if (c && c < lim)
            lim = c;
    }
    return lim;
}

/* Publish every ring's limit to the child (sring.limit), and keep it in
 * this side's view of the ring (zfi_ring.lim: in_room reads an input's, mu
 * held; freed_cell an output's at every take, without walking the links;
 * the workers take outputs only once it is up, go_live, after this). Once
 * per incarnation, as the child is told
 * to init (mu held: run), when its links are wired on every incarnation
 * (on a first start they are not yet at the incarnation) and before any
 * capsule crosses (the gate opens once it is up); the INIT message orders
 * the stores before the child's reads. This side never reads the shared
 * copy back: the child may write anything there. */
static void publish_limits(zfi_iso *iso, zfi_shm *m)
{
    for (size_t i = 0; i < m->n_in; i++) {
        m->in[i].lim = in_limit_of(iso->n, i, m->in[i].cap);
        atomic_store_explicit(&m->in[i].s->limit, m->in[i].lim, memory_order_release);
    }
    for (size_t o = 0; o < m->n_out; o++) {
        m->out[o].lim = out_limit_of(iso->n, o, m->out[o].cap);
        atomic_store_explicit(&m->out[o].s->limit, m->out[o].lim, memory_order_release);
    }
}

/* Input i's room under its limit (mu held); false when the child wrote an
 * impossible head. `lazy`: zfi_ring_room_lazy's view (head read only when
 * the view shows no room). */
static bool in_room(zfi_iso *iso, size_t i, bool lazy, uint32_t *room)
{
    zfi_ring *r = &iso->m.in[i];
    return lazy ? zfi_ring_room_lazy(r, room) : zfi_ring_room(r, room);
}

/* Every input ring down to its low mark, the child's hysteresis (mu
 * held): what the runtime waiting for room waits for, and the mark at
 * which the child wakes it. *bad when the child wrote a head no ring can
 * have (the caller kills it). */
static bool inputs_low(zfi_iso *iso, bool *bad)
{
    for (size_t i = 0; i < iso->m.n_in; i++) {
        zfi_ring *r = &iso->m.in[i];
        uint32_t room = 0;
        if (!in_room(iso, i, false, &room)) {
            *bad = true;
            return false;
        }
        if (room < zfi_ring_lim(r) - zfi_ring_low(r))
            return false;
    }
    return true;
}

struct zfi_iso_table {
    atomic_uint n; /* slots ever used + 1 */
    bool waitv;    /* the kernel has FUTEX_WAITV: workers can sleep on children's words */
    iso_slot slot[ISO_SLOTS];
};

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
    return zf_clock_ns();
}

static iso_slot *slot_of(zfi_iso *iso)
{
    struct zfi_iso_table *t = atomic_load_explicit(&iso->n->inst->rt->isos, memory_order_acquire);
    return iso->slot >= 0 && t ? &t->slot[iso->slot] : NULL;
}

static bool slot_trylock(iso_slot *s)
{
    uint32_t z = 0;
    return !atomic_load_explicit(&s->lock.v, memory_order_relaxed) &&
           atomic_compare_exchange_strong_explicit(&s->lock.v, &z, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static void slot_unlock(iso_slot *s)
{
    zfi_lock_release(&s->lock);
}

/* The proxy thread's side: workers hold it only for non-blocking work. */
static void out_lock(zfi_iso *iso)
{
    iso_slot *s = slot_of(iso);
    if (s)
        zfi_lock_acquire(&s->lock);
}

static void out_unlock(zfi_iso *iso)
{
    iso_slot *s = slot_of(iso);
    if (s)
        slot_unlock(s);
}

static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline)
{
    if (!deadline) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                          .tv_nsec = (long)(deadline % 1000000000u)};
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Kill the child for a reason the death report gives. mu held or not. */
static void kill_child(zfi_iso *iso, const char *fmt, ...) ZF_PRINTF(2, 3);
static void kill_child(zfi_iso *iso, const char *fmt, ...)
{
    pthread_mutex_lock(&iso->reason_mu); /* a leaf: taken with or without mu */
    if (!iso->kill_reason[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(iso->kill_reason, sizeof iso->kill_reason, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&iso->reason_mu);
    zfi_child_kill(&iso->child);
}

/* Set the death report's reason without a kill (the child ends itself). */
static void set_reason(zfi_iso *iso, const char *fmt, ...) ZF_PRINTF(2, 3);
static void set_reason(zfi_iso *iso, const char *fmt, ...)
{
    pthread_mutex_lock(&iso->reason_mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(iso->kill_reason, sizeof iso->kill_reason, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&iso->reason_mu);
}

/* Its control socket ended. A child that is exiting closed it by dying (its
 * death says why); one still running closed it itself, and the runtime
 * can reach it no more (no segment, no fini): killed, saying why. */
static void socket_ended(zfi_iso *iso)
{
    if (zfi_child_exiting(&iso->child))
        zfi_child_kill(&iso->child);
    else
        kill_child(iso, "it closed its control socket: the runtime could no longer reach it");
}

/* Tell the child something (mu held): the message, then its count in the
 * control block (the child reads every announced message before it uses a
 * handle that came after it), then a wake-up. */
static bool say(zfi_iso *iso, uint32_t type, const void *data, size_t len, int fd)
{
    if (!zfi_msg_send(iso->child.sock, type, data, len, fd >= 0 ? &fd : NULL, fd >= 0)) {
        if (errno == EPIPE || errno == ECONNRESET)
            socket_ended(iso);
        else
            kill_child(iso, "its control socket failed (%s)", strerror(errno));
        return false;
    }
    if (iso->have_shm) {
        atomic_fetch_add_explicit(&iso->m.ctl->rt.msgs, 1, memory_order_seq_cst);
        zfi_evc_notify_shared(&iso->m.ctl->to_child);
    }
    return true;
}

/* Make sure the child maps the memory of capsule d (mu held): the small
 * segments up to its end, or its large segment as it is now. */
static bool ensure_mapped(zfi_iso *iso, zf_data *d, zfi_handle h)
{
    zf_pool *p = iso->n->inst->pool;
    if (h & ZFI_HANDLE_LARGE) {
        uint32_t id = (uint32_t)((h & (ZFI_HANDLE_LARGE - 1)) - 1);
        const void *base = zfi_pool_large_base(p, id);
        if (id < iso->n_large_sent && iso->large_sent[id] == base)
            return true;
        if (id >= iso->n_large_sent) {
            size_t n = id + 1 > iso->n_large_sent * 2 ? id + 1 : iso->n_large_sent * 2;
            const void **t = realloc(iso->large_sent, n * sizeof *t);
            if (!t)
                return false;
            memset(t + iso->n_large_sent, 0, (n - iso->n_large_sent) * sizeof *t);
            iso->large_sent = t;
            iso->n_large_sent = n;
        }
        size_t size = 0;
        int fd = zfi_pool_large_segment(p, id, &size, &base);
        if (fd < 0)
            return false;
        char msg[12];
        uint64_t sz = size;
        memcpy(msg, &id, 4);
        memcpy(msg + 4, &sz, 8);
        bool ok = say(iso, ZFI_MSG_LARGE, msg, sizeof msg, fd);
        close(fd);
        if (ok)
            iso->large_sent[id] = base;
        return ok;
    }
    uint64_t end = ((h & (ZFI_HANDLE_LARGE - 1)) - 1) * ZFI_HDR_SIZE + ZFI_HDR_SIZE + d->cap;
    while (iso->small_bytes < end) {
        size_t off = 0, size = 0;
        int fd = zfi_pool_small_segment(p, iso->small_sent, &off, &size);
        if (fd < 0)
            return false;
        uint64_t msg[2] = {off, size};
        bool ok = say(iso, ZFI_MSG_SEG, msg, sizeof msg, fd);
        close(fd);
        if (!ok)
            return false;
        iso->small_sent++;
        iso->small_bytes = off + size;
    }
    return true;
}

/* ---- the worker's side: the proxy node ---- */

/* The puts every input ring has room for, by this side's view (mu held;
 * no shared line read): zfi_iso_room's hint. */
static uint32_t inputs_room_seen(zfi_iso *iso)
{
    uint32_t least = UINT32_MAX;
    for (size_t i = 0; i < iso->m.n_in; i++) {
        uint32_t room = zfi_ring_room_seen(&iso->m.in[i]);
        if (room < least)
            least = room;
    }
    return least == UINT32_MAX ? 0 : least;
}

static bool worker_takes_comps(zfi_iso *iso);

static zf_err proxy_on_input(void *state, zf_node *n, unsigned port, zf_data **dp)
{
    zfi_iso *iso = state;
    zf_data *d = *dp;
    if (d->kind != ZFI_KIND_SMALL && d->kind != ZFI_KIND_LARGE) {
        /* Pinned or static memory of this process: into the pool once, the
         * only copy an isolated node costs (counted). */
        zf_data *copy = NULL;
        zf_err e = zf_pool_alloc(n->inst->pool, (size_t)d->len, &copy);
        if (e != ZF_OK) {
            atomic_fetch_add_explicit(&n->alloc_failures, 1, memory_order_relaxed);
            return ZF_OK; /* dropped: *dp is released by the scheduler */
        }
        memcpy(zfi_payload(copy), zfi_payload(d), (size_t)d->len);
        copy->ts = d->ts;
        copy->seq = d->seq;
        atomic_store_explicit(&copy->owner, atomic_load(&d->owner), memory_order_relaxed);
        zf_data_unref(d);
        *dp = d = copy;
        atomic_fetch_add_explicit(&iso->copies_in, 1, memory_order_relaxed);
    }
    zfi_handle h = zfi_handle_of(d);
    pthread_mutex_lock(&iso->mu);
    uint32_t room = 0;
    bool ok = false;
    _Atomic uint32_t *wake = NULL;
    bool reclaim = false;
    zfi_ring *r = &iso->m.in[port];
    if (iso->phase != PH_UP || !iso->alive) {
        pthread_mutex_unlock(&iso->mu);
        atomic_fetch_add_explicit(&iso->lost, 1, memory_order_relaxed);
        return ZF_OK; /* down: lost (the scheduler releases it) */
    }
    if (!in_room(iso, port, true, &room)) {
        kill_child(iso, "it wrote an impossible head (%llu) into input ring %u",
                   (unsigned long long)atomic_load(&r->s->head), port);
        pthread_mutex_unlock(&iso->mu);
        atomic_fetch_add_explicit(&iso->lost, 1, memory_order_relaxed);
        return ZF_OK;
    }
    /* The gate made room for this capsule; a failure here (memory for the
     * ledger, a segment that cannot be sent) drops it, counted. */
    if (room && ensure_mapped(iso, d, h) && zfi_ledger_reserve(&iso->ledger)) {
        /* The cell first, the entry after (reserved: it cannot fail; the
         * child's completion of it is taken under mu, after it): the
         * ledger's lines are not on the child's wait. */
        zfi_ring_put_meta(r, h, d->len, d->ts, d->seq);
        ZF_IGNORE(zfi_ledger_add(&iso->ledger, h, d));
        atomic_store_explicit(&iso->room_hint, inputs_room_seen(iso), memory_order_relaxed);
        iso->in_put++;
        *dp = NULL;
        zfi_held(-1); /* the reference is the ledger's now, not node code's */
        /* A parked child is woken after the unlock (the other worker may
         * want mu meanwhile): decided here, the wake-up counted in
         * wakes_out, which keeps the rings mapped until it is made. */
        if (zfi_evc_notify_begin(&iso->m.ctl->to_child, INT_MAX)) {
            wake = &iso->m.ctl->to_child.seq;
            /* (where the child looks whether it woke on this CPU) */
            atomic_store_explicit(&iso->m.ctl->rt.waker_cpu, sched_getcpu() + 1,
                                  memory_order_relaxed);
            atomic_fetch_add_explicit(&iso->wakes_out, 1, memory_order_relaxed);
        }
        ok = true;
        /* Capsules pile up in its ledger: its completions wait (no worker
         * idles to take them), taken below, after the child has this one. */
        reclaim = iso->ledger.used > RECLAIM_AT;
    }
    pthread_mutex_unlock(&iso->mu);
    if (reclaim) {
        iso_slot *s = slot_of(iso);
        if (s && slot_trylock(s)) {
            worker_takes_comps(iso);
            slot_unlock(s);
        }
    }
    if (wake) {
        zfi_futex_wake(wake, INT_MAX, true);
        if (atomic_fetch_sub_explicit(&iso->wakes_out, 1, memory_order_release) ==
            (WAKES_WAITED | 1u))
            zfi_futex_wake(&iso->wakes_out, 1, false); /* bury waits to unmap */
    }
    if (!ok)
        atomic_fetch_add_explicit(&n->alloc_failures, 1, memory_order_relaxed);
    return ZF_OK;
}

/* A cell free in every input ring (mu held; `lazy`: in_room's). A head no
 * ring can have kills the child (no room then). */
static bool inputs_have_room(zfi_iso *iso, bool lazy)
{
    for (size_t i = 0; i < iso->m.n_in; i++) {
        uint32_t room = 0;
        if (!in_room(iso, i, lazy, &room)) {
            kill_child(iso, "it wrote an impossible head into input ring %zu", i);
            return false;
        }
        if (!room)
            return false;
    }
    return true;
}

bool zfi_iso_room(zf_node *n)
{
    zfi_iso *iso = n->iso;
    if (atomic_load_explicit(&iso->room_hint, memory_order_relaxed))
        return true; /* (a gate that shut meanwhile: proxy_on_input drops, counted) */
    bool ok = true;
    pthread_mutex_lock(&iso->mu);
    if (iso->phase != PH_UP || !iso->alive) {
        ok = false;
    } else {
        ok = inputs_have_room(iso, true);
        if (!ok) {
            /* Ask the child to say when it frees a cell, then look again
             * (one of the two sees the other). */
            atomic_store_explicit(&iso->m.ctl->rt.room_wanted, 1, memory_order_seq_cst);
            ok = inputs_have_room(iso, false);
        }
    }
    pthread_mutex_unlock(&iso->mu);
    return ok;
}

/* ---- the proxy thread ---- */

static void unref_one(void *arg, void *d)
{
    zfi_iso *iso = arg;
    zf_data *c = d;
    atomic_fetch_add_explicit(&iso->reclaimed_refs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&iso->reclaimed_bytes, c->len, memory_order_relaxed);
    zf_data_unref(c);
}

/* What the child prints: lines of one stream, into its node's log. */
typedef struct out_stream {
    int fd;     /* the pipe's read end (the child's), -1 at its end */
    int which;  /* 1 stdout, 2 stderr */
    size_t len; /* bytes of a line not yet ended */
    char buf[2048];
} out_stream;

/* Read what is there (the pipe is non-blocking); every whole line, and a
 * line as long as the buffer, goes to the node's log. At the end of the
 * stream (or an error) what is left goes too. */
static void drain_stream(zf_node *n, out_stream *o)
{
    while (o->fd >= 0) {
        ssize_t k = read(o->fd, o->buf + o->len, sizeof o->buf - o->len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (o->len)
                zf_node_log_output(n, o->which, o->buf, o->len);
            o->len = 0;
            o->fd = -1; /* ended: the child closed it (or died) */
            return;
        }
        o->len += (size_t)k;
        size_t from = 0;
        for (size_t i = 0; i < o->len; i++)
            if (o->buf[i] == '\n') {
                zf_node_log_output(n, o->which, o->buf + from, i - from);
                from = i + 1;
            }
        if (from == 0 && o->len == sizeof o->buf) { /* a line longer than the buffer */
            zf_node_log_output(n, o->which, o->buf, o->len);
            from = o->len;
        }
        memmove(o->buf, o->buf + from, o->len - from);
        o->len -= from;
    }
}

static void wake_proxy(zfi_iso *iso);

static void *watch_main(void *arg)
{
    zfi_iso *iso = arg;
    zfi_thread_name("zf-w:%s", iso->n->desc->id);
    out_stream so = {.fd = iso->child.out, .which = 1}, se = {.fd = iso->child.err, .which = 2};
    int sock = iso->child.sock; /* its hang-up only (it ends with the child, or the
                                   child closed it: the proxy thread finds out which) */
    for (;;) {
        struct pollfd p[4] = {{iso->child.pidfd, POLLIN, 0},
                              {so.fd, POLLIN, 0},
                              {se.fd, POLLIN, 0},
                              {sock, POLLRDHUP, 0}};
        int r = poll(p, 4, -1); /* a closed stream is -1: poll skips it */
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (p[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
            break;
        if (p[1].revents)
            drain_stream(iso->n, &so);
        if (p[2].revents)
            drain_stream(iso->n, &se);
        if (p[3].revents) {
            sock = -1;
            wake_proxy(iso);
        }
    }
    /* It ended: what it printed last is in the pipes (their writers are
     * closed now, so this does not wait). */
    drain_stream(iso->n, &so);
    drain_stream(iso->n, &se);
    atomic_store(&iso->died_ns, now_ns());
    atomic_store(&iso->dead, true);
    zfi_evc_kick_shared(&iso->m.ctl->to_rt);
    return NULL;
}

static void wake_proxy(zfi_iso *iso)
{
    atomic_store(&iso->wake, true);
    pthread_mutex_lock(&iso->mu);
    if (iso->have_shm)
        zfi_evc_kick_shared(&iso->m.ctl->to_rt);
    pthread_cond_broadcast(&iso->cv);
    pthread_mutex_unlock(&iso->mu);
}

static char *spec_text(zf_node *n)
{
    const zfi_node *nd = n->desc;
    zfi_buf b;
    zfi_buf_init(&b);
    zfi_buf_printf(&b, "layout\t%u\n", ZFI_SHM_LAYOUT);
    zfi_buf_printf(&b, "id\t%s\nkind\t%d\nlibrary\t%s\npython\t%s\nfile\t%s\nline\t%u\ncol\t%u\n",
                   nd->id, (int)nd->kind, nd->library ? nd->library : "",
                   nd->python ? nd->python : "", nd->file ? nd->file : n->inst->flow->file,
                   nd->line, nd->col);
    zfi_buf_printf(&b, "period\t%lld\nuuid\t%s\ninstance\t%s\nflow\t%s\npool_slot\t%u\n",
                   (long long)nd->period_ns, n->inst->uuid, n->inst->name, n->inst->flow->name,
                   zfi_pool_slot_of(n->inst->pool));
    for (size_t i = 0; i < nd->n_inputs; i++)
        zfi_buf_printf(&b, "in\t%s %s\n", nd->inputs[i].name, nd->inputs[i].type);
    for (size_t i = 0; i < nd->n_outputs; i++)
        zfi_buf_printf(&b, "out\t%s %s\n", nd->outputs[i].name, nd->outputs[i].type);
    for (size_t i = 0; i < n->inst->n_code_dirs; i++)
        zfi_buf_printf(&b, "code_dir\t%s\n", n->inst->code_dirs[i]);
    zfi_buf_printf(&b, "allow_writable\t%d\n", n->inst->allow_writable_code ? 1 : 0);
    char *cfg = zf_config_to_json(nd->config);
    zfi_buf_printf(&b, "config\t%s\n", cfg ? cfg : "{}");
    free(cfg);
    return zfi_buf_steal(&b);
}

/* Start one incarnation (proxy thread, mu not held): a fresh ring memfd,
 * the host, the watcher of its pidfd, the node's description. */
static zf_err incarnate(zfi_iso *iso)
{
    zf_node *n = iso->n;
    char label[200];
    snprintf(label, sizeof label, "%s@%.8s", n->desc->id, n->inst->uuid);
    zfi_shm m;
    int fd = zfi_shm_create(&m, n->desc->n_inputs, n->desc->n_outputs);
    if (fd < 0)
        return zfi_error(ZF_ESYS, "node '%s': creating its rings: %s", n->desc->id,
                         strerror(errno));
    /* A worker's key read from an earlier incarnation's word never matches
     * this one's (if the new memory lands at the same address). */
    atomic_store(&m.ctl->to_workers.seq, (uint32_t)(++iso->incarnations << 20));
    char *spec = spec_text(n);
    if (!spec) {
        zfi_shm_unmap(&m);
        close(fd);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    zfi_child c;
    zf_err e = zfi_child_spawn(label, &c);
    if (e != ZF_OK) {
        free(spec);
        zfi_shm_unmap(&m);
        close(fd);
        return e;
    }
    bool sent = zfi_msg_send(c.sock, ZFI_MSG_SPEC, spec, strlen(spec), &fd, 1);
    free(spec);
    close(fd);
    pthread_mutex_lock(&iso->mu);
    iso->m = m;
    iso->have_shm = true;
    atomic_store_explicit(&iso->comps_pos, 0, memory_order_relaxed);
    iso->watch_tail = 0;
    iso->child = c;
    iso->alive = true;
    iso->phase = PH_LOADING;
    iso->deadline = now_ns() + (uint64_t)zfi_lifecycle_bound_ns(n);
    iso->small_sent = iso->small_bytes = 0;
    if (iso->large_sent)
        memset(iso->large_sent, 0, iso->n_large_sent * sizeof *iso->large_sent);
    set_reason(iso, "%s", "");
    atomic_store(&iso->dead, false);
    uint32_t flags = 0;
    if (atomic_load(&n->inst->started) && !atomic_load(&n->inst->sources_stopped))
        flags |= ZFI_RT_STARTED;
    if (atomic_load(&n->inst->sources_stopped) && n->desc->kind == ZF_SOURCE)
        flags |= ZFI_RT_STOP;
    struct zfi_iso_table *t = atomic_load(&n->inst->rt->isos);
    if (slot_of(iso) && t->waitv)
        flags |= ZFI_RT_BELL; /* idle workers take its outputs */
    atomic_store(&iso->m.ctl->rt.flags, flags);
    atomic_store(&iso->pid, c.pid);
    pthread_mutex_unlock(&iso->mu);

    if (pthread_create(&iso->watcher, NULL, watch_main, iso) != 0) {
        /* No watcher, no death: end it here. */
        zfi_child_kill(&c);
        char why[160];
        bool failed;
        int sig;
        zfi_child_reap(&iso->child, why, sizeof why, &failed, &sig);
        out_lock(iso); /* (no worker sleeps on it: it published nothing) */
        atomic_store(&iso->out_live, false);
        out_unlock(iso);
        pthread_mutex_lock(&iso->mu);
        iso->alive = false;
        atomic_store_explicit(&iso->room_hint, 0, memory_order_relaxed);
        iso->have_shm = false;
        zfi_shm_unmap(&iso->m);
        zfi_child_close(&iso->child);
        pthread_mutex_unlock(&iso->mu);
        return zfi_error(ZF_ESYS, "node '%s': cannot start a thread to watch its process",
                         n->desc->id);
    }
    iso->watcher_started = true;
    if (!sent)
        kill_child(iso, "its description could not be sent (%s)", strerror(errno));
    zfi_log_at(&n->origin, ZF_LOG_DEBUG, "isolation", "instance %s: node '%s' runs in process %d",
               n->inst->uuid, n->desc->id, (int)c.pid);
    return ZF_OK;
}

static void node_log(zfi_iso *iso, int32_t level, const char *text)
{
    const char *tab = strchr(text, '\t');
    char scope[200];
    if (tab)
        snprintf(scope, sizeof scope, "%.*s [pid %d]", (int)(tab - text), text,
                 atomic_load(&iso->pid));
    else
        snprintf(scope, sizeof scope, "node %s [pid %d]", iso->n->desc->id, atomic_load(&iso->pid));
    if (level < ZF_LOG_ERROR || level > ZF_LOG_DEBUG)
        level = ZF_LOG_INFO;
    zfi_log_at(&iso->n->origin, (zf_log_level)level, scope, "%s", tab ? tab + 1 : text);
}

/* Its init returned (proxy thread): from now idle workers take its outputs
 * (until then the proxy thread does). Set under the slot's lock after the
 * instance was wired and started to init (a worker reading the node's
 * links synchronizes with it through the lock); the workers asleep are
 * woken, so that they sleep on its word too. */
static void go_live(zfi_iso *iso)
{
    if (!(atomic_load(&iso->m.ctl->rt.flags) & ZFI_RT_BELL))
        return;
    out_lock(iso);
    atomic_store(&iso->out_live, true);
    atomic_fetch_or(&iso->m.ctl->rt.flags, ZFI_RT_LIVE);
    out_unlock(iso);
    zfi_evc_notify(&iso->n->inst->rt->q_evc);
}

/* Control messages from the child (proxy thread). */
static bool drain_msgs(zfi_iso *iso)
{
    zf_node *n = iso->n;
    bool did = false;
    for (;;) {
        zfi_msg msg;
        bool closed = false;
        int k = zfi_msg_recv(iso->child.sock, &msg, false, &closed);
        if (k < 0)
            kill_child(iso, "it sent a malformed control message");
        if (k == 0 && closed && !iso->sock_closed) {
            iso->sock_closed = true; /* (ready() polls it no more: it would stay readable) */
            socket_ended(iso);
        }
        if (k <= 0)
            return did;
        did = true;
        int32_t code = 0;
        const char *text = "";
        if (msg.len >= 4) {
            memcpy(&code, msg.data, 4);
            text = msg.data + 4;
        }
        pthread_mutex_lock(&iso->mu);
        switch (msg.type) {
        case ZFI_MSG_DECL:
            if (iso->phase == PH_LOADING) {
                iso->phase = PH_LOADED;
                iso->deadline = 0;
                if (iso->first) {
                    iso->load_done = true;
                    iso->load_err = ZF_OK;
                }
            }
            break;
        case ZFI_MSG_LOAD_FAILED:
            if (iso->phase == PH_LOADING && iso->first && !iso->load_diag) {
                iso->load_diag = zfi_strdup(text);
                iso->load_err = code ? (zf_err)code : ZF_EABI;
            }
            set_reason(iso, "its code did not load");
            break;
        case ZFI_MSG_INIT_DONE:
            if (iso->phase == PH_INITING) {
                if (code == ZF_OK) {
                    iso->phase = PH_UP;
                    iso->deadline = 0;
                }
                if (iso->first) {
                    iso->init_done = true;
                    iso->init_err = (zf_err)code;
                    snprintf(iso->init_msg, sizeof iso->init_msg, "%s", text);
                } else if (code != ZF_OK) {
                    set_reason(iso, "init failed on restart: %s (%s)", text[0] ? text : "",
                               zf_errname((zf_err)code));
                }
            }
            break;
        case ZFI_MSG_LOG:
            pthread_mutex_unlock(&iso->mu);
            node_log(iso, code, text);
            pthread_mutex_lock(&iso->mu);
            break;
        case ZFI_MSG_ERROR: {
            const char *tab = strchr(text, '\t');
            char what[16];
            snprintf(what, sizeof what, "%.*s", tab ? (int)(tab - text) : 8, text);
            pthread_mutex_unlock(&iso->mu);
            zfi_node_error_msg(n, code ? (zf_err)code : ZF_ENODE,
                               strcmp(what, "produce") == 0 ? "produce" : "on_input",
                               tab ? tab + 1 : "");
            pthread_mutex_lock(&iso->mu);
            break;
        }
        case ZFI_MSG_FINI_DONE:
            break;
        default:
            kill_child(iso, "it sent an unknown control message (%u)", msg.type);
        }
        pthread_cond_broadcast(&iso->cv);
        bool up = msg.type == ZFI_MSG_INIT_DONE && iso->phase == PH_UP;
        bool now_up = up && !iso->first;
        pthread_mutex_unlock(&iso->mu);
        zfi_msg_free(&msg);
        if (up)
            go_live(iso);
        if (now_up) {
            zfi_node_restarted(n, atomic_load(&iso->restarts));
            zfi_node_notify(n);
        }
    }
}

/* What a dead child had published, kept to be forwarded after its ledger
 * was released (forwarding may wait for room downstream). */
typedef struct published {
    zf_data **d;
    unsigned *port;
    size_t n, cap;
    size_t dropped; /* no memory to keep them */
} published;

/* After a take from r: if the ring had been full (at the limit this side
 * published: zfi_ring_lim), its producer (the child) may wait for room:
 * wake it. (The take's seq_cst store of head, then this load of the last
 * cell: a child that saw no room had published it first.) */
static void freed_cell(zfi_iso *iso, zfi_ring *r)
{
    if (zfi_ring_was_full(r, zfi_ring_lim(r)))
        zfi_evc_notify_shared(&iso->m.ctl->to_child);
}

/* Take output o's next cell (its consumer: the slot's lock held, or no
 * slot): 1 and *dp the capsule to send, 0 none, -1 the child lied about
 * it (killed: its death is handled by the proxy thread). */
static int take_output(zfi_iso *iso, size_t o, zf_data **dp)
{
    uint64_t h = 0, len = 0;
    int k = zfi_ring_take(&iso->m.out[o], &h, &len);
    if (k < 0) {
        pthread_mutex_lock(&iso->mu); /* (a worker or the proxy thread) */
        kill_child(iso, "it wrote an impossible tail into output ring %zu", o);
        pthread_mutex_unlock(&iso->mu);
        return -1;
    }
    if (!k)
        return 0;
    freed_cell(iso, &iso->m.out[o]);
    bool keep = len & ZFI_CELL_KEEP;
    pthread_mutex_lock(&iso->mu);
    zf_data *d = zfi_ledger_take(&iso->ledger, h);
    if (d && keep && !zfi_ledger_add(&iso->ledger, h, d)) {
        zf_data_unref(d); /* cannot record it: the child's reference is gone */
        keep = false;
        d = NULL;
    }
    if (!d)
        kill_child(iso, "it sent handle %#llx on output %zu, which it does not hold",
                   (unsigned long long)h, o);
    pthread_mutex_unlock(&iso->mu);
    if (!d)
        return -1;
    if (keep)
        zf_data_ref(d);
    len &= ZFI_CELL_LEN_MASK;
    if (zf_data_is_unique(d)) {
        if (len > d->cap) {
            uint64_t cap = d->cap;
            zf_data_unref(d);
            pthread_mutex_lock(&iso->mu);
            kill_child(iso, "it sent %llu bytes in a block of %llu", (unsigned long long)len,
                       (unsigned long long)cap);
            pthread_mutex_unlock(&iso->mu);
            return -1;
        }
        d->len = len;
    }
    *dp = d;
    return 1;
}

/* Send what output o took (proxy thread), or keep it in `later`. As a
 * thread of the node's own: a full `block` link waits up to send_timeout
 * (then drops, counted); once the instance halted nobody drains the links:
 * released at once. */
static void forward(zfi_iso *iso, unsigned o, zf_data *d, published *later)
{
    if (atomic_load(&iso->n->inst->halted)) {
        zf_data_unref(d);
        return;
    }
    if (later && later->n < later->cap) {
        later->d[later->n] = d;
        later->port[later->n++] = o;
        return;
    }
    if (later) { /* a burial with no room to keep it: never wait under the lock */
        later->dropped++;
        zf_data_unref(d);
        return;
    }
    /* consumed whatever the result: a refusal is counted by the link */
    ZF_IGNORE(zf_send(iso->n, o, &d));
}

/* Whether a cell waits in an output ring (the slot's lock held, or no
 * slot: the consumer's positions are the lock holder's). */
static bool outputs_ready(zfi_iso *iso)
{
    bool any = iso->held != NULL;
    for (size_t o = 0; o < iso->m.n_out && !any; o++)
        any = zfi_ring_ready(&iso->m.out[o]);
    return any;
}

/* The same, from the proxy thread. */
static bool outputs_waiting(zfi_iso *iso)
{
    out_lock(iso);
    bool any = outputs_ready(iso);
    out_unlock(iso);
    return any;
}

/* Whether the proxy thread takes the outputs itself: the child does not
 * ring the workers, a link was full (backlog: blocking sends, in order), or
 * the child acknowledged a stop or an end of stream (drained here). */
static bool proxy_takes_outputs(zfi_iso *iso)
{
    uint32_t flags = atomic_load(&iso->m.ctl->rt.flags);
    if (!(flags & ZFI_RT_BELL) || !atomic_load(&iso->out_live) || atomic_load(&iso->backlog))
        return true;
    uint32_t acked = atomic_load(&iso->m.ctl->child.acked) & flags;
    return ((acked & ZFI_RT_EOS) && !iso->eos_done) || ((acked & ZFI_RT_STOP) && !iso->stop_done);
}

/* The outputs (proxy thread). With `later`, they are kept there instead of
 * sent, and the caller holds the slot's lock (the child is dead); without,
 * each is taken under the lock and sent outside it. */
static bool drain_outputs(zfi_iso *iso, published *later)
{
    bool did = false;
    for (;;) {
        if (!later)
            out_lock(iso);
        zf_data *d = iso->held;
        unsigned o = iso->held_port;
        iso->held = NULL;
        for (size_t p = 0; !d && p < iso->m.n_out; p++) {
            o = (unsigned)p;
            if (take_output(iso, p, &d) < 0) {
                if (!later)
                    out_unlock(iso);
                return did;
            }
        }
        /* While it drains the proxy is the one consumer (workers back off on
         * backlog): a cell a worker took while this one is on its way to
         * the link would overtake it. Drained: the workers take them again. */
        atomic_store(&iso->backlog, d != NULL);
        if (!later)
            out_unlock(iso);
        if (!d)
            return did;
        did = true;
        forward(iso, o, d, later);
    }
}

/* Completions: each releases the reference the ledger held for the child
 * (the slot's lock held, or no slot, or `dead` and the caller holds it).
 * Whoever takes the outputs takes these: idle workers after their outputs
 * (poll_one), so the ledger, the runtime's lock and the freed blocks stay
 * on the workers' lines and the proxy thread is off the path of every
 * message; the proxy thread when it takes the outputs itself, when the
 * ring fills up, and at the watchdog's tick (zfi_iso_watch).
 *
 * A completion may release a capsule the child sent just before with KEEP:
 * its output cell must be taken first (it re-records the reference). The
 * child publishes the output before the completion, so: the completions
 * published when every output ring was then seen empty, and no more
 * (while outputs wait, the one that takes them takes these after:
 * comps_waiting). Dead: its outputs were taken. */
static bool take_comps(zfi_iso *iso, bool dead)
{
    bool did = false;
    uint64_t upto = atomic_load_explicit(&iso->m.comp.s->tail, memory_order_seq_cst);
    if (upto == iso->m.comp.pos)
        return false;
    if (!dead && outputs_ready(iso)) {
        atomic_store(&iso->comps_waiting, true);
        return false;
    }
    if (atomic_load_explicit(&iso->comps_waiting, memory_order_relaxed))
        atomic_store(&iso->comps_waiting, false);
    while (iso->m.comp.pos != upto) {
        uint64_t h = 0, len = 0;
        int k = zfi_ring_take(&iso->m.comp, &h, &len);
        if (k < 0) {
            kill_child(iso, "it wrote an impossible tail into its completion ring");
            break;
        }
        if (!k)
            break;
        did = true;
        freed_cell(iso, &iso->m.comp);
        pthread_mutex_lock(&iso->mu);
        zf_data *d = zfi_ledger_take(&iso->ledger, h);
        pthread_mutex_unlock(&iso->mu);
        if (!d) {
            kill_child(iso, "it released handle %#llx, which it does not hold",
                       (unsigned long long)h);
            break;
        }
        zf_data_unref(d);
    }
    atomic_store_explicit(&iso->comps_pos, iso->m.comp.pos, memory_order_relaxed);
    return did;
}

/* Completions, by a worker (the slot's lock held): while the workers take
 * the outputs; a held capsule or a backlog leaves them to the proxy thread,
 * after its outputs. */
static bool worker_takes_comps(zfi_iso *iso)
{
    if (!atomic_load_explicit(&iso->out_live, memory_order_relaxed) || iso->held ||
        atomic_load_explicit(&iso->backlog, memory_order_relaxed))
        return false;
    return take_comps(iso, false);
}

/* Completions (proxy thread). */
static bool drain_comps(zfi_iso *iso, bool dead)
{
    if (dead)
        return take_comps(iso, true);
    out_lock(iso);
    bool did = take_comps(iso, false);
    out_unlock(iso);
    return did;
}

/* Outputs and completions (proxy thread); see drain_outputs for `later`. */
static bool drain_data(zfi_iso *iso, published *later)
{
    bool did = false;
    if (later || proxy_takes_outputs(iso))
        did = drain_outputs(iso, later);
    return drain_comps(iso, later != NULL) || did;
}

/* ---- idle workers take the outputs ---- */

/* Deliver what iso's child published, without blocking (a worker, the
 * slot's lock held): a link without room leaves the rest to the proxy
 * thread (backlog), in order. */
static bool poll_one(zfi_iso *iso)
{
    zf_node *n = iso->n;
    bool did = false;
    if (!atomic_load(&iso->sleepers) &&
        atomic_load_explicit(&iso->m.ctl->rt.bell_wanted, memory_order_relaxed))
        atomic_store_explicit(&iso->m.ctl->rt.bell_wanted, 0, memory_order_relaxed);
    if (iso->held || atomic_load_explicit(&iso->backlog, memory_order_relaxed))
        return false;
    for (size_t o = 0; o < iso->m.n_out; o++) {
        for (unsigned k = 0; k < POLL_BATCH && zfi_ring_ready(&iso->m.out[o]); k++) {
            const zfi_out *out = &n->out[o];
            bool room = true;
            for (size_t i = 0; i < out->n && room; i++)
                room = zfi_link_has_room(out->links[i]);
            zf_data *d = NULL;
            int got = room ? take_output(iso, o, &d) : 0;
            if (got < 0)
                return did;
            if (got && atomic_load(&n->inst->halted)) {
                zf_data_unref(d);
                d = NULL;
            } else if (got && zf_try_send(n, (unsigned)o, &d) == ZF_OK) {
                d = NULL;
            }
            did |= got > 0;
            if (!room || d) {
                /* (d: refused after all: kept, sent first by the proxy) */
                iso->held = d;
                iso->held_port = (unsigned)o;
                atomic_store(&iso->backlog, true);
                atomic_store(&iso->wake, true);
                zfi_evc_kick_shared(&iso->m.ctl->to_rt);
                return did;
            }
        }
    }
    return did;
}

static bool iso_poll(zf_runtime *rt)
{
    struct zfi_iso_table *t = atomic_load_explicit(&rt->isos, memory_order_acquire);
    if (!t)
        return false;
    bool did = false;
    unsigned n = atomic_load_explicit(&t->n, memory_order_acquire);
    for (unsigned i = 0; i < n; i++) {
        iso_slot *s = &t->slot[i];
        if (!atomic_load_explicit(&s->iso, memory_order_relaxed) || !slot_trylock(s))
            continue;
        zfi_iso *iso = atomic_load_explicit(&s->iso, memory_order_acquire);
        if (iso && atomic_load_explicit(&iso->out_live, memory_order_relaxed)) {
            did |= poll_one(iso);
            did |= worker_takes_comps(iso);
        }
        slot_unlock(s);
    }
    return did;
}

static void iso_idle_wait(zf_runtime *rt, zfi_evc *q, uint32_t key)
{
    struct zfi_iso_table *t = atomic_load_explicit(&rt->isos, memory_order_acquire);
    if (!t || !t->waitv) {
        zfi_evc_wait(q, key, -1);
        return;
    }
    zfi_futex_vec v[1 + ISO_SLOTS];
    zfi_iso *reg[ISO_SLOTS];
    unsigned nv = 0, nr = 0;
    v[nv++] = (zfi_futex_vec){&q->seq, key, false};
    bool work = false;
    unsigned n = atomic_load_explicit(&t->n, memory_order_acquire);
    for (unsigned i = 0; i < n && !work; i++) {
        iso_slot *s = &t->slot[i];
        if (!atomic_load_explicit(&s->iso, memory_order_relaxed))
            continue;
        zfi_lock_acquire(&s->lock); /* held briefly: a poll, the proxy taking one, a burial */
        zfi_iso *iso = atomic_load_explicit(&s->iso, memory_order_acquire);
        if (iso && atomic_load_explicit(&iso->out_live, memory_order_relaxed)) {
            /* Announced under the lock, the key read first; after the
             * sleep nothing of the rings is touched (a burial may have
             * unmapped them: it wakes us first), only sleepers, which
             * zfi_iso_free waits for. */
            _Atomic uint32_t *seq = &iso->m.ctl->to_workers.seq;
            v[nv++] = (zfi_futex_vec){seq, atomic_load_explicit(seq, memory_order_acquire), true};
            atomic_fetch_add(&iso->sleepers, 1);
            atomic_store_explicit(&iso->m.ctl->rt.bell_wanted, 1, memory_order_seq_cst);
            /* store-load (the child: its cell, then bell_wanted): the rings'
             * acquire loads below need a full fence on weaker CPUs */
            atomic_thread_fence(memory_order_seq_cst);
            reg[nr++] = iso;
            /* (Registered even during a backlog: once the proxy thread
             * drained it, the next output rings us.) */
            if (!iso->held && !atomic_load(&iso->backlog)) {
                work = outputs_ready(iso) ||
                       atomic_load_explicit(&iso->m.comp.s->tail, memory_order_acquire) !=
                           iso->m.comp.pos;
            }
        }
        slot_unlock(s);
    }
    if (!work && atomic_load_explicit(&q->seq, memory_order_acquire) == key &&
        !zfi_futex_waitv(v, nv))
        zfi_futex_wait(&q->seq, key, -1, false); /* (probed at creation: not reached) */
    atomic_fetch_sub_explicit(&q->waiters, 1, memory_order_relaxed);
    for (unsigned k = 0; k < nr; k++) {
        zfi_iso *iso = reg[k];
        pthread_mutex_lock(&iso->mu);
        if (atomic_fetch_sub(&iso->sleepers, 1) == 1)
            pthread_cond_broadcast(&iso->cv);
        pthread_mutex_unlock(&iso->mu);
    }
}

static uint32_t loan_target(uint64_t want)
{
    return want <= 65536 ? 8 : want <= (1u << 20) ? 4 : 2;
}

/* Keep the loan ring stocked with blocks of the size the child last asked
 * for (proxy thread). */
static bool serve_loans(zfi_iso *iso)
{
    zf_node *n = iso->n;
    uint64_t want = atomic_load_explicit(&iso->m.ctl->child.loan_want, memory_order_seq_cst);
    if (!want)
        return false;
    if (want > MAX_LOAN) {
        kill_child(iso, "it asked for a block of %llu bytes", (unsigned long long)want);
        return false;
    }
    bool did = false;
    pthread_mutex_lock(&iso->mu);
    uint32_t room = 0;
    if (!zfi_ring_room(&iso->m.loan, &room)) {
        kill_child(iso, "it wrote an impossible head into its loan ring");
        pthread_mutex_unlock(&iso->mu);
        return false;
    }
    uint32_t in_ring = iso->m.loan.cap - room, target = loan_target(want);
    while (in_ring < target && room > 0) {
        zf_data *d = NULL;
        if (zf_pool_alloc(n->inst->pool, (size_t)want, &d) != ZF_OK) {
            atomic_fetch_add_explicit(&n->alloc_failures, 1, memory_order_relaxed);
            if (in_ring == 0) {
                zfi_ring_put(&iso->m.loan, 0, 0); /* refused: the child's alloc fails */
                did = true;
            }
            break;
        }
        atomic_store_explicit(&d->owner, zfi_owner_pack(n->index, -1), memory_order_relaxed);
        zfi_handle h = zfi_handle_of(d);
        if (!ensure_mapped(iso, d, h) || !zfi_ledger_add(&iso->ledger, h, d)) {
            zf_data_unref(d);
            break;
        }
        zfi_ring_put(&iso->m.loan, h, d->cap);
        in_ring++;
        room--;
        did = true;
    }
    if (did)
        zfi_evc_notify_shared(&iso->m.ctl->to_child);
    pthread_mutex_unlock(&iso->mu);
    return did;
}

/* Room asked by the gate, end of stream and stop acknowledged (proxy
 * thread). */
static void room_and_acks(zfi_iso *iso)
{
    zf_node *n = iso->n;
    bool notify = false;
    bool outs_empty = !(atomic_load(&iso->m.ctl->child.acked) & (ZFI_RT_EOS | ZFI_RT_STOP)) ||
                      !outputs_waiting(iso);
    pthread_mutex_lock(&iso->mu);
    if (atomic_load_explicit(&iso->m.ctl->rt.room_wanted, memory_order_seq_cst)) {
        bool bad = false;
        bool room = inputs_low(iso, &bad);
        if (bad)
            kill_child(iso, "it wrote an impossible head into an input ring");
        if (room) {
            atomic_store_explicit(&iso->m.ctl->rt.room_wanted, 0, memory_order_relaxed);
            notify = true;
        }
    }
    uint32_t flags = atomic_load(&iso->m.ctl->rt.flags);
    uint32_t acked = atomic_load(&iso->m.ctl->child.acked) & flags;
    if ((acked & ZFI_RT_EOS) && outs_empty && !iso->eos_done) {
        iso->eos_done = true;
        notify = true;
    }
    if ((acked & ZFI_RT_STOP) && outs_empty && !iso->stop_done) {
        iso->stop_done = true;
        pthread_cond_broadcast(&iso->cv);
    }
    pthread_mutex_unlock(&iso->mu);
    if (notify)
        zfi_node_notify(n);
}

/* A callback of the child past its hang_timeout (proxy thread). */
static uint64_t watch_hang(zfi_iso *iso)
{
    zf_node *n = iso->n;
    uint64_t since = atomic_load_explicit(&iso->m.ctl->child.busy_since, memory_order_acquire);
    int64_t limit = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
    uint64_t now = now_ns();
    if (!since || since > now) {
        if (iso->hung) {
            iso->hung = false;
            zfi_node_returned_from_hang(n);
        }
        return 0;
    }
    if (now - since <= (uint64_t)limit)
        return since + (uint64_t)limit + 1; /* look again then */
    if (!iso->hung) {
        iso->hung = true;
        char why[160];
        snprintf(why, sizeof why, "%s has not returned for %.1f s (hang_timeout %.1f s)%s",
                 n->desc->kind == ZF_SOURCE ? "produce" : "on_input", (double)(now - since) / 1e9,
                 (double)limit / 1e9,
                 n->desc->hang_restart ? ": its process is killed (hang_action: restart)" : "");
        zfi_node_hung(n, why);
        if (n->desc->hang_restart)
            kill_child(iso, "%s", why);
    }
    return 0;
}

static bool ready(zfi_iso *iso, bool syscalls)
{
    if (atomic_load(&iso->dead) || atomic_load(&iso->wake))
        return true;
    bool proxy_takes = proxy_takes_outputs(iso);
    if (proxy_takes && outputs_waiting(iso))
        return true;
    /* Completions: when it takes the outputs, or half the ring waits (the
     * workers are busy elsewhere). By the tail, as take_comps takes: a
     * tagged cell past a tail the child did not move would make this loop
     * spin without taking. (comps_pos: the head, from whoever took last.) */
    uint64_t comp_tail = atomic_load_explicit(&iso->m.comp.s->tail, memory_order_acquire);
    uint64_t comp_head = atomic_load_explicit(&iso->comps_pos, memory_order_relaxed);
    if (comp_tail != comp_head && !atomic_load(&iso->comps_waiting) &&
        (proxy_takes || comp_tail - comp_head >= ZFI_PROC_COMP_CAP / 2))
        return true;
    uint64_t want = atomic_load_explicit(&iso->m.ctl->child.loan_want, memory_order_seq_cst);
    if (want) {
        uint64_t head = atomic_load_explicit(&iso->m.loan.s->head, memory_order_seq_cst);
        if (iso->m.loan.pos - head < loan_target(want) &&
            iso->m.loan.pos - head <= ZFI_PROC_LOAN_CAP)
            return true;
    }
    uint32_t flags = atomic_load(&iso->m.ctl->rt.flags);
    uint32_t acked = atomic_load(&iso->m.ctl->child.acked) & flags;
    if (((acked & ZFI_RT_EOS) && !iso->eos_done) || ((acked & ZFI_RT_STOP) && !iso->stop_done))
        return true;
    if (atomic_load(&iso->m.ctl->rt.room_wanted)) {
        bool bad = false; /* (the input rings' positions are the workers': mu) */
        pthread_mutex_lock(&iso->mu);
        bool half = inputs_low(iso, &bad) || bad; /* (room_and_acks kills on bad) */
        pthread_mutex_unlock(&iso->mu);
        if (half)
            return true;
    }
    if (syscalls && !iso->sock_closed) {
        struct pollfd p = {iso->child.sock, POLLIN, 0};
        if (poll(&p, 1, 0) > 0)
            return true;
    }
    return false;
}

/* Run one incarnation until its process ends (proxy thread). */
static void run(zfi_iso *iso)
{
    zf_node *n = iso->n;
    zfi_spin spin = {0};
    for (;;) {
        atomic_store(&iso->wake, false);
        bool did = drain_msgs(iso);
        pthread_mutex_lock(&iso->mu);
        if (iso->phase == PH_LOADED && (iso->init_wanted || !iso->first)) {
            publish_limits(iso, &iso->m);
            iso->phase = PH_INITING;
            iso->deadline = now_ns() + (uint64_t)zfi_lifecycle_bound_ns(n);
            say(iso, ZFI_MSG_INIT, NULL, 0, -1);
        }
        /* A callback already past its hang_timeout when the stop comes
         * would keep fini from ever running: killed at once, not after
         * fini's bound (ten times the hang_timeout). */
        bool hung_at_stop = false;
        if (iso->fini_wanted && iso->phase != PH_FINISHING) {
            /* (the flag, and the callback still running past its limit:
             * the flag is only cleared by the next watch) */
            uint64_t since =
                atomic_load_explicit(&iso->m.ctl->child.busy_since, memory_order_acquire);
            int64_t limit = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
            uint64_t now = now_ns();
            hung_at_stop = iso->phase == PH_UP && atomic_load(&iso->hung) && since && since < now &&
                           now - since > (uint64_t)limit;
            iso->phase = PH_FINISHING;
            atomic_store_explicit(&iso->room_hint, 0, memory_order_relaxed);
            iso->deadline = now_ns() + (uint64_t)zfi_lifecycle_bound_ns(n);
            say(iso, ZFI_MSG_FINI, NULL, 0, -1);
        }
        enum phase ph = iso->phase;
        uint64_t deadline = iso->deadline;
        pthread_mutex_unlock(&iso->mu);
        if (hung_at_stop) {
            int64_t limit = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
            kill_child(iso,
                       "at stop: %s was hung (past its hang_timeout of %.1f s), so fini could "
                       "not run",
                       n->desc->kind == ZF_SOURCE ? "produce" : "on_input", (double)limit / 1e9);
        }
        if (ph >= PH_INITING) {
            did |= drain_data(iso, NULL);
            did |= serve_loans(iso);
            room_and_acks(iso);
            /* Its errors come here (ZFI_MSG_ERROR): so does the recovery
             * after an error_window without one. */
            if (atomic_load(&n->degraded) & ZFI_DEG_ERRORS)
                zfi_node_success(n, now_ns());
        }
        if (atomic_load(&iso->dead))
            return;
        uint64_t now = now_ns();
        if (deadline && now >= deadline) {
            const char *what = ph == PH_LOADING   ? "loading its code"
                               : ph == PH_INITING ? "init"
                                                  : "fini";
            kill_child(iso, "%s has not returned after %.1f s (ten times its hang_timeout)", what,
                       (double)zfi_lifecycle_bound_ns(n) / 1e9);
            pthread_mutex_lock(&iso->mu);
            iso->deadline = 0;
            if (iso->first && ph == PH_INITING)
                iso->init_timed_out = true;
            pthread_mutex_unlock(&iso->mu);
            continue;
        }
        uint64_t hang_at = ph == PH_UP ? watch_hang(iso) : 0;
        if (did) {
            zfi_spin_hit(&spin); /* an arrival: the gap it ends counts */
            continue;
        }
        /* Spin while the child's traffic to this thread (completions,
         * loans, control) is dense, then park (proc/shm.h) */
        zfi_spin_start(&spin, NULL, now_ns(), UINT64_MAX);
        bool go;
        while (!(go = ready(iso, false)) && zfi_spin_again(&spin))
            ;
        if (go)
            continue;
        uint32_t key = zfi_evc_prepare(&iso->m.ctl->to_rt);
        if (ready(iso, true)) {
            zfi_evc_cancel(&iso->m.ctl->to_rt);
            continue;
        }
        uint64_t until = deadline;
        if (hang_at && (!until || hang_at < until))
            until = hang_at;
        now = now_ns();
        zfi_evc_wait_shared(&iso->m.ctl->to_rt, key,
                            until ? (until > now ? (int64_t)(until - now) : 0) : -1);
    }
}

/* After the process ended (proxy thread): forward what it published,
 * release what it held, drop its rings. Returns whether it failed (a
 * signal, a non-zero status, or killed by the runtime). */
static bool bury(zfi_iso *iso, char *why, size_t len)
{
    zf_node *n = iso->n;
    pthread_join(iso->watcher, NULL);
    iso->watcher_started = false;
    char how[160];
    bool failed = true;
    int sig = 0;
    zfi_child_reap(&iso->child, how, sizeof how, &failed, &sig);
    uint64_t t0 = now_ns();
    /* The workers stop taking its outputs: the lock keeps them out from
     * here to the unmapping; those asleep on its bell are woken (they
     * touch nothing of the rings after their sleep). */
    out_lock(iso);
    atomic_store(&iso->out_live, false);
    zfi_evc_kick_shared(&iso->m.ctl->to_workers);
    pthread_mutex_lock(&iso->mu);
    iso->alive = false; /* the gate closes; proxy_on_input drops */
    atomic_store_explicit(&iso->room_hint, 0, memory_order_relaxed);
    enum phase ph = iso->phase;
    pthread_mutex_unlock(&iso->mu);
    /* No wake-up is decided from here (the gate is closed): those in flight
     * are made before the rings are unmapped. */
    uint32_t w = atomic_fetch_or_explicit(&iso->wakes_out, WAKES_WAITED, memory_order_acquire) |
                 WAKES_WAITED;
    while (w != WAKES_WAITED) {
        zfi_futex_wait(&iso->wakes_out, w, -1, false);
        w = atomic_load_explicit(&iso->wakes_out, memory_order_acquire);
    }
    atomic_store_explicit(&iso->wakes_out, 0, memory_order_relaxed);
    /* What it published is taken now and forwarded once the rest of what
     * it held is back in the pool (forwarding may wait for room). */
    published later = {0};
    later.cap = iso->m.n_out * ZFI_PROC_OUT_CAP + 1; /* every ring full, and the held one */
    later.d = zfi_calloc(later.cap, sizeof *later.d);
    later.port = zfi_calloc(later.cap, sizeof *later.port);
    if (!later.d || !later.port)
        later.cap = 0; /* no memory: dropped (a send here could wait, the lock held) */
    drain_msgs(iso);
    if (ph >= PH_INITING)
        drain_data(iso, &later);
    pthread_mutex_lock(&iso->mu);
    uint64_t refs0 = atomic_load(&iso->reclaimed_refs), bytes0 = atomic_load(&iso->reclaimed_bytes);
    zfi_ledger_drain(&iso->ledger, unref_one, iso);
    uint64_t refs = atomic_load(&iso->reclaimed_refs) - refs0;
    uint64_t bytes = atomic_load(&iso->reclaimed_bytes) - bytes0;
    iso->copies_dead += atomic_load(&iso->m.ctl->child.copies);
    /* Inputs it never finished: put into its rings, less its callbacks
     * completed (an operator's and a sink's are its inputs; a source has
     * none). The child's count only makes this figure wrong, if it lies. */
    uint64_t done = atomic_load(&iso->m.ctl->child.callbacks);
    iso->callbacks_dead += done;
    uint64_t lost = n->desc->kind != ZF_SOURCE && iso->in_put > done ? iso->in_put - done : 0;
    atomic_fetch_add(&iso->lost, lost);
    iso->in_put = 0;
    iso->sock_closed = false;
    iso->have_shm = false;
    zfi_shm_unmap(&iso->m);
    out_unlock(iso);
    atomic_store(&iso->backlog, false);
    zfi_child_close(&iso->child);
    atomic_store(&iso->pid, 0);
    pthread_mutex_lock(&iso->reason_mu);
    bool killed = iso->kill_reason[0] != '\0';
    if (killed)
        snprintf(why, len, "was killed by the runtime: %s", iso->kill_reason);
    pthread_mutex_unlock(&iso->reason_mu);
    if (killed)
        failed = true;
    else
        snprintf(why, len, "%s", how);
    snprintf(iso->last_exit, sizeof iso->last_exit, "%s", why);
    iso->eos_done = false;
    iso->stop_done = false;
    iso->hung = false;
    pthread_cond_broadcast(&iso->cv);
    pthread_mutex_unlock(&iso->mu);
    atomic_fetch_add(&iso->deaths, 1);
    if (ph != PH_FINISHING)
        atomic_fetch_add(&iso->crashes, 1);
    uint64_t took = now_ns() - t0, since = now_ns() - atomic_load(&iso->died_ns);
    if (ph != PH_FINISHING || failed)
        zfi_log_at(&n->origin, ph == PH_FINISHING ? ZF_LOG_INFO : ZF_LOG_WARN, "isolation",
                   "instance %s: node '%s' (process %s): %s; %llu reference(s), %llu bytes "
                   "reclaimed in %.3f ms, %.3f ms after its pidfd signalled",
                   n->inst->uuid, n->desc->id, sig ? "killed" : "ended", why,
                   (unsigned long long)refs, (unsigned long long)bytes, (double)took / 1e6,
                   (double)since / 1e6);
    if (ph == PH_FINISHING && failed) {
        atomic_fetch_add(&iso->killed_at_stop, 1);
        zfi_node_killed_at_stop(n, why);
    }
    if (lost)
        zfi_log_at(&n->origin, ZF_LOG_WARN, "isolation",
                   "instance %s: node '%s': %llu input(s) it had been handed were never processed "
                   "(in its rings or its callback when its process ended)",
                   n->inst->uuid, n->desc->id, (unsigned long long)lost);
    if (later.dropped)
        zfi_log_at(&n->origin, ZF_LOG_WARN, "isolation",
                   "%s: node '%s': %zu capsule(s) it published dropped (out of memory at its "
                   "burial)",
                   n->inst->uuid, n->desc->id, later.dropped);
    for (size_t i = 0; i < later.n; i++)
        ZF_IGNORE(zf_send(n, later.port[i], &later.d[i])); /* consumed; a refusal is counted */
    free(later.d);
    free(later.port);
    zfi_node_notify(n); /* the gate changed: a step sees it */
    return failed;
}

/* Whether the policy restarts it now; else why not. */
static bool may_restart(zfi_iso *iso, bool failed, char *why_not, size_t len, uint64_t *backoff)
{
    const zfi_node *nd = iso->n->desc;
    if (nd->restart == ZFI_RESTART_NEVER) {
        snprintf(why_not, len, "restart: never");
        return false;
    }
    if (nd->restart == ZFI_RESTART_ON_FAILURE && !failed) {
        snprintf(why_not, len, "it ended without failing (restart: on-failure)");
        return false;
    }
    uint64_t now = now_ns(), in_window = 0;
    for (size_t i = 0; i < nd->max_restarts; i++)
        if (iso->restart_times[i] && now - iso->restart_times[i] <= (uint64_t)nd->restart_window_ns)
            in_window++;
    if (in_window >= nd->max_restarts) {
        snprintf(why_not, len, "%u restart(s) within %.1f s (max_restarts %u, restart_window)",
                 nd->max_restarts, (double)nd->restart_window_ns / 1e9, nd->max_restarts);
        return false;
    }
    *backoff = BACKOFF_BASE_NS << (in_window < 16 ? in_window : 16);
    if (*backoff > BACKOFF_MAX_NS)
        *backoff = BACKOFF_MAX_NS;
    return true;
}

static void *proxy_main(void *arg)
{
    zfi_iso *iso = arg;
    zf_node *n = iso->n;
    zfi_thread_name("zf-p:%s", n->desc->id);
    for (;;) {
        zf_err e = incarnate(iso);
        char why[256];
        bool failed = true;
        if (e != ZF_OK) {
            snprintf(why, sizeof why, "could not start: %s", zf_last_error());
        } else {
            run(iso);
            failed = bury(iso, why, sizeof why);
        }
        pthread_mutex_lock(&iso->mu);
        bool first = iso->first, fini = iso->fini_wanted;
        if (first) {
            /* The first incarnation reports to zfi_iso_create / zfi_iso_init. */
            if (!iso->load_done) {
                iso->load_done = true;
                iso->load_err = e != ZF_OK ? e : iso->load_err ? iso->load_err : ZF_EABI;
                snprintf(iso->init_msg, sizeof iso->init_msg, "%s", why);
            } else if (!iso->init_done) {
                iso->init_done = true;
                iso->init_err = iso->init_timed_out ? ZF_ETIMEDOUT : ZF_ENODE;
                snprintf(iso->init_msg, sizeof iso->init_msg, "%s", why);
            }
        }
        bool ran = iso->init_done && iso->init_err == ZF_OK;
        iso->first = false;
        pthread_cond_broadcast(&iso->cv);
        pthread_mutex_unlock(&iso->mu);
        if (fini || !ran || atomic_load(&n->inst->halted))
            break; /* (a stopping instance restarts nothing: its fini comes) */
        char why_not[200];
        uint64_t backoff = 0;
        if (!may_restart(iso, failed, why_not, sizeof why_not, &backoff)) {
            zfi_node_isolated_failed(n, why, why_not);
            break;
        }
        zfi_node_crashed(n, why, backoff);
        uint64_t until = now_ns() + backoff;
        pthread_mutex_lock(&iso->mu);
        while (!iso->fini_wanted && now_ns() < until)
            cond_wait_until(&iso->cv, &iso->mu, until);
        fini = iso->fini_wanted;
        pthread_mutex_unlock(&iso->mu);
        if (fini)
            break;
        iso->restart_times[iso->restart_head] = now_ns();
        iso->restart_head = (iso->restart_head + 1) % n->desc->max_restarts;
        atomic_fetch_add(&iso->restarts, 1);
    }
    pthread_mutex_lock(&iso->mu);
    while (!iso->fini_wanted)
        pthread_cond_wait(&iso->cv, &iso->mu);
    iso->thread_done = true;
    pthread_cond_broadcast(&iso->cv);
    pthread_mutex_unlock(&iso->mu);
    return NULL;
}

/* ---- the instance's side ---- */

static bool plain(const char *s)
{
    return !s || !strpbrk(s, "\n\t");
}

/* Every value of the node's description fits on its line. */
static bool one_line_each(const zf_node *n)
{
    const zfi_node *nd = n->desc;
    bool ok = plain(nd->id) && plain(nd->library) && plain(nd->python) && plain(nd->file) &&
              plain(n->inst->flow->file) && plain(n->inst->name) && plain(n->inst->flow->name);
    for (size_t i = 0; ok && i < nd->n_inputs; i++)
        ok = plain(nd->inputs[i].name) && plain(nd->inputs[i].type) &&
             !strchr(nd->inputs[i].name, ' ');
    for (size_t i = 0; ok && i < nd->n_outputs; i++)
        ok = plain(nd->outputs[i].name) && plain(nd->outputs[i].type) &&
             !strchr(nd->outputs[i].name, ' ');
    for (size_t i = 0; ok && i < n->inst->n_code_dirs; i++)
        ok = plain(n->inst->code_dirs[i]);
    return ok;
}

static void add_child_diag(zfi_iso *iso, zf_diag *diag)
{
    const zfi_node *nd = iso->n->desc;
    const char *file = nd->file ? nd->file : iso->n->inst->flow->file;
    bool any = false;
    for (char *p = iso->load_diag; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        char *f[6] = {p};
        size_t k = 1;
        for (char *t = p; k < 6 && (t = strchr(t, '\t')); k++) {
            *t++ = '\0';
            f[k] = t;
        }
        if (k == 6) {
            zfi_diag_add(diag, (zf_err)atoi(f[0]), f[1], (unsigned)atoi(f[2]), (unsigned)atoi(f[3]),
                         f[4], "%s (in its isolated process)", f[5]);
            any = true;
        }
        p = nl ? nl + 1 : p + strlen(p);
    }
    if (!any)
        zfi_diag_add(diag, iso->load_err, file, nd->line, nd->col, "isolation",
                     "node '%s': its isolated process did not load it: %s", nd->id, iso->init_msg);
}

/* Whether the kernel has FUTEX_WAITV (a word that differs: it returns at
 * once, EAGAIN). */
static bool waitv_works(void)
{
    _Atomic uint32_t w = 1;
    zfi_futex_vec v = {&w, 0, false};
    return zfi_futex_waitv(&v, 1);
}

/* What idle workers do for isolated nodes (the scheduler calls it through
 * rt->idle, set with the table). */
static const zfi_idle_hooks iso_idle_hooks = {.poll = iso_poll, .wait = iso_idle_wait};

/* A slot in the runtime's table, so that idle workers take the node's
 * outputs (none free: its proxy thread takes them). */
static void take_slot(zfi_iso *iso)
{
    zf_runtime *rt = iso->n->inst->rt;
    pthread_mutex_lock(&rt->mu);
    struct zfi_iso_table *t = atomic_load(&rt->isos);
    if (!t) {
        t = zfi_calloc(1, sizeof *t);
        if (t) {
            t->waitv = waitv_works();
            atomic_store_explicit(&rt->isos, t, memory_order_release);
            atomic_store_explicit(&rt->idle, &iso_idle_hooks, memory_order_release);
        }
    }
    for (unsigned i = 0; t && i < ISO_SLOTS; i++)
        if (!atomic_load(&t->slot[i].iso) && !atomic_load(&t->slot[i].lock.v)) {
            atomic_store(&t->slot[i].iso, iso);
            iso->slot = (int)i;
            if (i + 1 > atomic_load(&t->n))
                atomic_store_explicit(&t->n, i + 1, memory_order_release);
            break;
        }
    pthread_mutex_unlock(&rt->mu);
}

static void drop_slot(zfi_iso *iso)
{
    iso_slot *s = slot_of(iso);
    if (!s)
        return;
    out_lock(iso);
    atomic_store(&s->iso, NULL);
    out_unlock(iso);
    iso->slot = -1;
    /* Workers woken at the last burial may still count themselves here. */
    pthread_mutex_lock(&iso->mu);
    while (atomic_load(&iso->sleepers))
        pthread_cond_wait(&iso->cv, &iso->mu);
    pthread_mutex_unlock(&iso->mu);
}

void zfi_iso_table_free(zf_runtime *rt)
{
    free(atomic_load(&rt->isos));
    atomic_store(&rt->isos, NULL);
}

zf_err zfi_iso_create(zf_node *n, zf_diag *diag)
{
    const zfi_node *nd = n->desc;
    if (nd->n_inputs > ZFI_PROC_MAX_PORTS || nd->n_outputs > ZFI_PROC_MAX_PORTS)
        return zfi_diag_add(diag, ZF_EINVAL, nd->file, nd->line, nd->col, "isolation",
                            "node '%s': an isolated node has at most %u inputs and %u outputs",
                            nd->id, ZFI_PROC_MAX_PORTS, ZFI_PROC_MAX_PORTS);
    zfi_iso *iso = zfi_calloc(1, sizeof *iso);
    if (!iso)
        return zfi_error(ZF_ENOMEM, "out of memory");
    iso->n = n;
    iso->first = true;
    pthread_mutex_init(&iso->mu, NULL);
    pthread_mutex_init(&iso->reason_mu, NULL);
    zfi_cond_init_monotonic(&iso->cv);
    iso->child.pidfd = iso->child.sock = -1;
    iso->slot = -1;
    iso->in_ports = zfi_calloc(nd->n_inputs + 1, sizeof *iso->in_ports);
    iso->out_ports = zfi_calloc(nd->n_outputs + 1, sizeof *iso->out_ports);
    iso->restart_times = zfi_calloc(nd->max_restarts + 1, sizeof *iso->restart_times);
    n->lib.in_map = zfi_calloc(nd->n_inputs + 1, sizeof *n->lib.in_map);
    n->lib.out_map = zfi_calloc(nd->n_outputs + 1, sizeof *n->lib.out_map);
    n->iso = iso;
    if (!iso->in_ports || !iso->out_ports || !iso->restart_times || !n->lib.in_map ||
        !n->lib.out_map)
        return zfi_error(ZF_ENOMEM, "out of memory");
    for (size_t i = 0; i < nd->n_inputs; i++) {
        iso->in_ports[i] = (zf_port_decl){nd->inputs[i].name, nd->inputs[i].type};
        n->lib.in_map[i] = i;
    }
    for (size_t i = 0; i < nd->n_outputs; i++) {
        iso->out_ports[i] = (zf_port_decl){nd->outputs[i].name, nd->outputs[i].type};
        n->lib.out_map[i] = i;
    }
    iso->decl = (zf_node_decl){.abi = ZF_ABI_VERSION,
                               .kind = nd->kind,
                               .name = nd->id,
                               .inputs = iso->in_ports,
                               .n_inputs = nd->n_inputs,
                               .outputs = iso->out_ports,
                               .n_outputs = nd->n_outputs,
                               .on_input = nd->kind == ZF_SOURCE ? NULL : proxy_on_input};
    n->lib.decl = n->decl = &iso->decl;
    n->state = iso;
    if (!one_line_each(n))
        return zfi_diag_add(diag, ZF_EINVAL, nd->file, nd->line, nd->col, "isolation",
                            "node '%s': a path or name of this node holds a newline or a tab, "
                            "which the description sent to its process cannot carry",
                            nd->id);
    take_slot(iso);
    if (pthread_create(&iso->thread, NULL, proxy_main, iso) != 0)
        return zfi_error(ZF_ESYS, "node '%s': cannot start its proxy thread", nd->id);
    iso->thread_started = true;
    pthread_mutex_lock(&iso->mu);
    while (!iso->load_done)
        pthread_cond_wait(&iso->cv, &iso->mu);
    zf_err e = iso->load_err;
    pthread_mutex_unlock(&iso->mu);
    if (e != ZF_OK) {
        add_child_diag(iso, diag);
        return e;
    }
    return ZF_OK;
}

zf_err zfi_iso_init(zf_node *n)
{
    zfi_iso *iso = n->iso;
    pthread_mutex_lock(&iso->mu);
    iso->init_wanted = true;
    pthread_mutex_unlock(&iso->mu);
    wake_proxy(iso);
    pthread_mutex_lock(&iso->mu);
    while (!iso->init_done)
        pthread_cond_wait(&iso->cv, &iso->mu);
    zf_err e = iso->init_err;
    if (e != ZF_OK)
        snprintf(n->error_msg, sizeof n->error_msg, "%s", iso->init_msg);
    pthread_mutex_unlock(&iso->mu);
    return e;
}

static void join_proxy(zfi_iso *iso)
{
    if (!iso->thread_started)
        return;
    pthread_mutex_lock(&iso->mu);
    iso->fini_wanted = true;
    pthread_mutex_unlock(&iso->mu);
    wake_proxy(iso);
    pthread_join(iso->thread, NULL);
    iso->thread_started = false;
}

void zfi_iso_fini(zf_node *n)
{
    join_proxy(n->iso);
}

void zfi_iso_free(zf_node *n)
{
    zfi_iso *iso = n->iso;
    if (!iso)
        return;
    join_proxy(iso);
    drop_slot(iso);
    zfi_ledger_free(&iso->ledger);
    free(iso->large_sent);
    free(iso->restart_times);
    free(iso->in_ports);
    free(iso->out_ports);
    free(iso->load_diag);
    pthread_mutex_destroy(&iso->mu);
    pthread_mutex_destroy(&iso->reason_mu);
    pthread_cond_destroy(&iso->cv);
    free(iso);
    n->iso = NULL;
    n->decl = n->lib.decl = NULL;
}

void zfi_iso_start(zf_node *n)
{
    zfi_iso *iso = n->iso;
    pthread_mutex_lock(&iso->mu);
    if (iso->have_shm) {
        atomic_fetch_or(&iso->m.ctl->rt.flags, ZFI_RT_STARTED);
        zfi_evc_notify_shared(&iso->m.ctl->to_child);
    }
    pthread_mutex_unlock(&iso->mu);
}

void zfi_iso_suspend(zf_node *n)
{
    zfi_iso *iso = n->iso;
    pthread_mutex_lock(&iso->mu);
    if (iso->have_shm)
        atomic_fetch_and(&iso->m.ctl->rt.flags, ~(uint32_t)ZFI_RT_STARTED);
    pthread_mutex_unlock(&iso->mu);
}

void zfi_iso_stop_source(zf_node *n, uint64_t deadline)
{
    zfi_iso *iso = n->iso;
    pthread_mutex_lock(&iso->mu);
    if (iso->have_shm) {
        atomic_fetch_or(&iso->m.ctl->rt.flags, ZFI_RT_STOP);
        zfi_evc_notify_shared(&iso->m.ctl->to_child);
        zfi_evc_kick_shared(&iso->m.ctl->to_rt);
    }
    while (iso->alive && iso->phase == PH_UP && !iso->stop_done && now_ns() < deadline)
        cond_wait_until(&iso->cv, &iso->mu, deadline);
    pthread_mutex_unlock(&iso->mu);
}

bool zfi_iso_eos(zf_node *n)
{
    zfi_iso *iso = n->iso;
    bool done;
    pthread_mutex_lock(&iso->mu);
    if (!iso->alive || iso->phase != PH_UP) {
        done = true;
    } else {
        if (!(atomic_load(&iso->m.ctl->rt.flags) & ZFI_RT_EOS)) {
            atomic_fetch_or(&iso->m.ctl->rt.flags, ZFI_RT_EOS);
            zfi_evc_notify_shared(&iso->m.ctl->to_child);
        }
        done = iso->eos_done;
    }
    pthread_mutex_unlock(&iso->mu);
    return done;
}

void zfi_iso_watch(zf_node *n, uint64_t now)
{
    zfi_iso *iso = n->iso;
    int64_t limit = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
    pthread_mutex_lock(&iso->mu);
    if (iso->have_shm && iso->phase == PH_UP) {
        uint64_t since = atomic_load_explicit(&iso->m.ctl->child.busy_since, memory_order_acquire);
        /* A callback past its bound, or one that returned after it: the
         * proxy thread judges (watch_hang). */
        if ((since && now > since && now - since > (uint64_t)limit && !iso->hung) ||
            (!since && iso->hung))
            zfi_evc_kick_shared(&iso->m.ctl->to_rt);
        /* Completions waiting since the last tick (the workers busy
         * elsewhere, the ring not half full): the proxy thread takes them. */
        uint64_t tail = atomic_load_explicit(&iso->m.comp.s->tail, memory_order_acquire);
        if (tail != atomic_load_explicit(&iso->comps_pos, memory_order_relaxed) &&
            tail == iso->watch_tail) {
            atomic_store(&iso->wake, true);
            zfi_evc_kick_shared(&iso->m.ctl->to_rt);
        }
        iso->watch_tail = tail;
    }
    pthread_mutex_unlock(&iso->mu);
}

void zfi_iso_stats(zf_node *n, zfi_iso_info *out)
{
    zfi_iso *iso = n->iso;
    memset(out, 0, sizeof *out);
    if (!iso)
        return;
    out->pid = atomic_load(&iso->pid);
    out->restarts = atomic_load(&iso->restarts);
    out->deaths = atomic_load(&iso->deaths);
    out->crashes = atomic_load(&iso->crashes);
    out->reclaimed_refs = atomic_load(&iso->reclaimed_refs);
    out->reclaimed_bytes = atomic_load(&iso->reclaimed_bytes);
    out->copies = atomic_load(&iso->copies_in);
    out->lost = atomic_load(&iso->lost);
    out->killed_at_stop = atomic_load(&iso->killed_at_stop);
    pthread_mutex_lock(&iso->mu);
    out->callbacks = iso->callbacks_dead;
    if (iso->have_shm) {
        out->copies += atomic_load(&iso->m.ctl->child.copies);
        out->callbacks += atomic_load(&iso->m.ctl->child.callbacks);
    }
    out->copies += iso->copies_dead;
    snprintf(out->last_exit, sizeof out->last_exit, "%s", iso->last_exit);
    pthread_mutex_unlock(&iso->mu);
}
