/* The node host: the child side of a process-isolated node (zf-node-host
 * calls zf_node_host_main). It loads one node the way the runtime does
 * (zfi_load_node: the same trust and ABI checks, a Python node in an
 * interpreter of its own), maps the runtime's pool segments as they are
 * sent over the control socket, and runs the node's callbacks on capsules
 * that arrive as handles in its input rings (src/proc/shm.h).
 *
 * What the child writes (lesson 7): its ring cells and indices, the child
 * line of the control block, and the payloads of blocks it was loaned.
 * References are counted here on local headers (ZFI_KIND_REMOTE); the
 * runtime holds one reference per capsule this process holds, in its
 * ledger, and gets it back through the completion ring when the last local
 * reference drops, or through an output ring when the capsule is sent.
 *
 * Mapping: small-arena segments are mapped read-write (a small block shares
 * its pages with others, so it cannot be protected alone); a large block has
 * a memfd of its own and is mapped read-only, except while it is loaned to
 * this child (docs/isolation.md). */
#include "runtime/runtime.h"

#include "graph/loader.h"
#include "proc/chan.h"
#include "proc/shm.h"
#include "zflow/isolation.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define HOST_SOCK      3
#define MAX_BACKOFF_NS 10000000ll

typedef struct large_map {
    char *base;
    size_t size;
    bool rw;
} large_map;

typedef struct zfi_host {
    int sock;
    zfi_shm m;
    _Atomic uint32_t msgs_seen; /* written under seg_mu (catch_up); the predicates read it */
    uint32_t pool_slot;
    char *arena;
    size_t arena_reserved, arena_mapped;
    large_map *large;
    size_t n_large;
    pthread_mutex_t mu; /* the output, completion and loan rings (a node's own threads send and
                           release too); the input rings are the main thread's */
    zfi_node nd;
    zf_flow flow;
    zf_instance inst;
    zf_node node;
    size_t *out_ring; /* library output index -> ring (descriptor order) */
    atomic_bool fini_asked;
    atomic_bool woken;         /* zf_node_wake since the source's last produce */
    pthread_t main_thread;     /* the one that runs the callbacks */
    bool producing;            /* it is in produce (read by it only) */
    _Atomic uint64_t moved_at; /* when a waiting thread last left the waker's CPU */
    zfi_ring *full;            /* the output ring a zf_try_send of that produce found full */
} zfi_host;

static zfi_host H;

/* ---- messages to the runtime ---- */

static void tell(uint32_t type, int32_t code, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n > ZFI_MSG_MAX - 8)
        n = ZFI_MSG_MAX - 8;
    char *buf = malloc(4 + n);
    if (!buf)
        return;
    memcpy(buf, &code, 4);
    if (n)
        memcpy(buf + 4, text, n);
    zfi_msg_send(H.sock, type, buf, 4 + n, NULL, 0);
    free(buf);
    if (H.m.ctl)
        zfi_evc_notify_shared(&H.m.ctl->to_rt);
}

static void host_log(void *arg, zf_log_level level, const char *scope, const char *msg)
{
    (void)arg;
    char line[2048];
    snprintf(line, sizeof line, "%s\t%s", scope, msg);
    tell(ZFI_MSG_LOG, (int32_t)level, line);
}

_Noreturn static void die(const char *fmt, ...) ZF_PRINTF(1, 2);
static void die(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tell(ZFI_MSG_LOG, ZF_LOG_ERROR, msg);
    _exit(70);
}

/* ---- segments ---- */

static void map_small(const zfi_msg *msg)
{
    uint64_t off, size;
    if (msg->len != 16 || msg->n_fds != 1)
        die("node host: malformed segment message");
    memcpy(&off, msg->data, 8);
    memcpy(&size, msg->data + 8, 8);
    if (off != H.arena_mapped || off + size > H.arena_reserved)
        die("node host: segment at %llu (+%llu) does not follow the %zu bytes mapped",
            (unsigned long long)off, (unsigned long long)size, H.arena_mapped);
    if (mmap(H.arena + off, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, msg->fds[0], 0) ==
        MAP_FAILED)
        die("node host: mapping a pool segment of %llu bytes: %s", (unsigned long long)size,
            strerror(errno));
    __atomic_store_n(&H.arena_mapped, off + size, __ATOMIC_RELEASE); /* (block_of reads it) */
}

static void map_large(const zfi_msg *msg)
{
    uint32_t id;
    uint64_t size;
    if (msg->len != 12 || msg->n_fds != 1)
        die("node host: malformed large segment message");
    memcpy(&id, msg->data, 4);
    memcpy(&size, msg->data + 4, 8);
    if (id >= H.n_large) {
        size_t n = id + 1 > H.n_large * 2 ? id + 1 : H.n_large * 2;
        large_map *t = realloc(H.large, n * sizeof *t);
        if (!t)
            die("node host: out of memory");
        memset(t + H.n_large, 0, (n - H.n_large) * sizeof *t);
        H.large = t;
        H.n_large = n;
    }
    large_map *l = &H.large[id];
    if (l->base)
        munmap(l->base, l->size);
    void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, msg->fds[0], 0);
    if (p == MAP_FAILED)
        die("node host: mapping a large segment of %llu bytes: %s", (unsigned long long)size,
            strerror(errno));
    *l = (large_map){p, size, false};
}

static void run_fini(void);

static void handle(zfi_msg *msg)
{
    switch (msg->type) {
    case ZFI_MSG_SEG:
        map_small(msg);
        break;
    case ZFI_MSG_LARGE:
        map_large(msg);
        break;
    case ZFI_MSG_FINI:
        atomic_store(&H.fini_asked, true);
        break;
    default:
        die("node host: unexpected message %u", msg->type);
    }
}

/* Read every message the runtime has announced (rt.msgs): what a handle in
 * a ring needs is always sent before the handle. The callbacks' thread and
 * a node's own threads (an allocation waiting for a loan) both catch up:
 * one at a time (seg_mu), so that two never wait for the same message,
 * and the segment table changes under the lock block_of reads it with. */
static pthread_mutex_t seg_mu = PTHREAD_MUTEX_INITIALIZER;

static void catch_up(void)
{
    /* A message may be read before the runtime has counted it (it counts
     * after sending): seen may be ahead of the count, never behind it for
     * long. */
    uint32_t want = atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_acquire);
    if (want == atomic_load_explicit(&H.msgs_seen, memory_order_acquire))
        return; /* (at every input: no lock when nothing came) */
    pthread_mutex_lock(&seg_mu);
    want = atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_acquire);
    while ((int32_t)(want - atomic_load_explicit(&H.msgs_seen, memory_order_relaxed)) > 0) {
        zfi_msg msg;
        bool closed = false;
        int k = zfi_msg_recv(H.sock, &msg, true, &closed);
        if (k <= 0)
            _exit(closed ? 0 : 71); /* the runtime is gone */
        handle(&msg);
        zfi_msg_free(&msg);
        /* (counted once handled: a thread that finds the count caught up
         * without the lock finds the segments it announced mapped) */
        atomic_fetch_add_explicit(&H.msgs_seen, 1, memory_order_release);
    }
    pthread_mutex_unlock(&seg_mu);
}

/* The header of the block a handle names, mapped (read-only for large
 * blocks unless `loaned`). */
static zf_data *block_of(uint64_t h, bool loaned, size_t *room)
{
    if ((h & ZFI_HANDLE_LOCAL) || ((h >> ZFI_HANDLE_SLOT_SHIFT) & 0x7fff) != H.pool_slot)
        die("node host: handle %#llx names no block of the instance's pool", (unsigned long long)h);
    if (h & ZFI_HANDLE_LARGE) {
        uint64_t id = (h & (ZFI_HANDLE_LARGE - 1)) - 1;
        pthread_mutex_lock(&seg_mu); /* the table may grow on another thread (catch_up) */
        if (id >= H.n_large || !H.large[id].base)
            die("node host: large segment %llu was never sent", (unsigned long long)id);
        large_map *l = &H.large[id];
        if (loaned != l->rw) {
            if (mprotect(l->base, l->size, PROT_READ | (loaned ? PROT_WRITE : 0)) != 0)
                die("node host: mprotect: %s", strerror(errno));
            l->rw = loaned;
        }
        void *base = l->base;
        *room = l->size > ZFI_HDR_SIZE ? l->size - ZFI_HDR_SIZE : 0;
        pthread_mutex_unlock(&seg_mu);
        return (zf_data *)base;
    }
    uint64_t idx = h & (ZFI_HANDLE_LARGE - 1);
    size_t mapped = __atomic_load_n(&H.arena_mapped, __ATOMIC_ACQUIRE);
    if (!idx || idx * ZFI_HDR_SIZE > mapped)
        die("node host: block %llu is past the %zu bytes of pool mapped", (unsigned long long)idx,
            mapped);
    *room = mapped - idx * ZFI_HDR_SIZE;
    return (zf_data *)(H.arena + (idx - 1) * ZFI_HDR_SIZE);
}

/* ---- waiting: spin, then park on to_child ---- */

/* The operator's wait for input (adaptive: proc/shm.h); other waits (room,
 * a loan, a source's period) spin ZFI_SPIN_MIN_NS. */
static zfi_spin input_spin;

/* Sharing a CPU (docs/isolation.md): woken on the CPU of the runtime thread
 * that woke it, the child and that thread take turns on one CPU, each
 * parking for the other, while another CPU idles; the kernel's wake-up
 * placement keeps them there. The child moves to another CPU of its mask
 * (at most once a millisecond), and its next wait spins again. */
static void unshare_cpu(zfi_spin *s)
{
    int waker = atomic_load_explicit(&H.m.ctl->rt.waker_cpu, memory_order_relaxed) - 1;
    if (waker < 0 || sched_getcpu() != waker)
        return;
    uint64_t now = zf_clock_ns();
    uint64_t last = atomic_load_explicit(&H.moved_at, memory_order_relaxed);
    /* (a node's own threads wait here too: one of them moves at a time) */
    if (now - last < 1000000u ||
        !atomic_compare_exchange_strong_explicit(&H.moved_at, &last, now, memory_order_relaxed,
                                                 memory_order_relaxed) ||
        !zfi_cpu_leave(waker))
        return;
    s->calm = 0;
}

static void wait_child(bool (*ready)(void *), void *arg, int64_t timeout_ns, zfi_spin *sp)
{
    zfi_spin tmp;
    uint64_t t0 = zf_clock_ns();
    zfi_spin *s = zfi_spin_start(sp, &tmp, t0, timeout_ns >= 0 ? (uint64_t)timeout_ns : UINT64_MAX);
    bool go;
    while (!(go = ready(arg)) && zfi_spin_again(s))
        ;
    if (!go) {
        uint32_t key = zfi_evc_prepare(&H.m.ctl->to_child);
        if ((go = ready(arg))) {
            zfi_evc_cancel(&H.m.ctl->to_child);
        } else {
            int64_t left = timeout_ns;
            if (timeout_ns >= 0) {
                uint64_t spent = zf_clock_ns() - t0;
                left = spent >= (uint64_t)timeout_ns ? 0 : timeout_ns - (int64_t)spent;
            }
            zfi_evc_wait_shared(&H.m.ctl->to_child, key, left);
            go = ready(arg);
            unshare_cpu(s);
        }
    }
    if (go)
        zfi_spin_hit(s);
}

/* (A wait's predicate, outside mu: it takes mu, since the ring's private
 * positions are written by whichever thread of the child sends.) */
static bool has_room(void *arg)
{
    uint32_t room = 0;
    pthread_mutex_lock(&H.mu);
    bool ok = zfi_ring_room(arg, &room);
    pthread_mutex_unlock(&H.mu);
    if (!ok)
        die("node host: the runtime's view of a ring is inconsistent");
    return room > 0 || (int32_t)(atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_relaxed) -
                                 H.msgs_seen) > 0;
}

/* The runtime asked the node to stop (a source's stop, or fini). */
static bool stop_asked(void)
{
    return (atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_acquire) & ZFI_RT_STOP) ||
           atomic_load(&H.fini_asked);
}

static bool room_or_stopping(void *arg)
{
    return has_room(arg) || stop_asked();
}

/* Push a cell (mu held; released while waiting for room). `stoppable` (a
 * thread of the node's own sending): the wait ends at a stop, and after
 * timeout_ns when >= 0, as a full link bounds such a sender in process:
 * nothing is pushed then, and the answer is ZF_ECLOSED or ZF_ETIMEDOUT. */
static zf_err push_within(zfi_ring *r, uint64_t h, uint64_t len, bool stoppable, int64_t timeout_ns)
{
    zfi_ring_load_lim(r); /* the runtime's bound, published at the init */
    uint64_t t0 = zf_clock_ns();
    for (;;) {
        uint32_t room = 0;
        if (!zfi_ring_room_lazy(r, &room))
            die("node host: a ring's head is inconsistent");
        if (room)
            break;
        int64_t left = -1;
        if (stoppable && stop_asked())
            return ZF_ECLOSED;
        if (stoppable && timeout_ns >= 0) {
            left = timeout_ns - (int64_t)(zf_clock_ns() - t0);
            if (left <= 0)
                return ZF_ETIMEDOUT;
        }
        pthread_mutex_unlock(&H.mu);
        zfi_evc_notify_shared(&H.m.ctl->to_rt);
        wait_child(stoppable ? room_or_stopping : has_room, r, left, NULL);
        if (stoppable)
            catch_up(); /* a fini announced wakes it too: read it here */
        pthread_mutex_lock(&H.mu);
    }
    zfi_ring_put(r, h, len);
    return ZF_OK;
}

/* Push a cell that must go in (a completion): waits for room. */
static void push(zfi_ring *r, uint64_t h, uint64_t len)
{
    ZF_IGNORE(push_within(r, h, len, false, -1)); /* (not stoppable: ZF_OK) */
}

/* ---- capsules ---- */

/* An input waits (the child has work: it does not linger). The input
 * rings are the main thread's alone (it takes without a lock: operator_loop):
 * a node's own thread answers yes, which only means it does not linger. */
static bool input_waiting(void)
{
    if (!pthread_equal(pthread_self(), H.main_thread))
        return true;
    bool any = false;
    for (size_t i = 0; i < H.m.n_in && !any; i++)
        any = zfi_ring_ready(&H.m.in[i]);
    return any;
}

/* Whether a worker still spinning takes the cell at `pos` - 1 within
 * BELL_GRACE_NS: a worker sleeps (bell_wanted), but another may be looking
 * at the ring (lockstep: the one that wrote the input). Waking the sleeper
 * too would cost a system call here and a thread competing for the CPUs
 * (2 vCPUs: the child, the looking worker, the woken one) for a cell
 * already taken. Only while the child has nothing else to do: a lone cell
 * (a burst rings at once) and no input waiting (throughput: it rings and
 * goes on, as before). */
#define BELL_GRACE_NS 2000u
static bool taken_soon(zfi_ring *r, uint64_t pos)
{
    uint64_t t0 = 0;
    for (unsigned i = 1;; i++) {
        uint64_t head = atomic_load_explicit(&r->s->head, memory_order_acquire);
        if (head - pos < (1ull << 63))
            return true; /* head >= pos (a scribbled head only rings or not: harmless) */
        if (head + 1 != pos || input_waiting())
            return false; /* not a lone cell, or work waits: ring now */
        if ((i & 15) == 0) {
            uint64_t now = zf_clock_ns();
            if (!t0)
                t0 = now;
            else if (now - t0 > BELL_GRACE_NS)
                return false;
        }
        zfi_cpu_relax();
    }
}

/* After a cell at `mine` - 1 of r (an output or a completion; H.mu not
 * held): ring whoever takes it. Idle workers take the outputs (BELL) and,
 * once the node is up, its completions (LIVE): a sleeping one is rung,
 * unless a spinning one takes the cell soon; the proxy thread then sleeps
 * on. Otherwise the proxy thread. */
static void ring_runtime(zfi_ring *r, uint64_t mine, uint32_t workers_take)
{
    if ((atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_relaxed) & workers_take) ==
        workers_take) {
        /* (the tail's seq_cst store, then this seq_cst load: a worker that
         * announced itself before it checked the ring is seen) */
        if (atomic_load_explicit(&H.m.ctl->rt.bell_wanted, memory_order_seq_cst) &&
            !taken_soon(r, mine))
            zfi_evc_kick_shared(&H.m.ctl->to_workers);
    } else {
        zfi_evc_notify_shared(&H.m.ctl->to_rt);
    }
}

static void release_handle(void *arg)
{
    pthread_mutex_lock(&H.mu);
    push(&H.m.comp, (uint64_t)(uintptr_t)arg, 0);
    uint64_t mine = H.m.comp.pos;
    pthread_mutex_unlock(&H.mu);
    ring_runtime(&H.m.comp, mine, ZFI_RT_BELL | ZFI_RT_LIVE);
}

/* The capsule for block b (handle h): its payload, released through the
 * completion ring. */
static zf_err wrap(zf_data *b, uint64_t h, uint64_t len, uint64_t cap, bool writable, uint64_t ts,
                   uint64_t seq, zf_data **out)
{
    zf_err e = zfi_data_remote((char *)b + ZFI_HDR_SIZE, len, cap, writable, release_handle,
                               (void *)(uintptr_t)h, out);
    if (e == ZF_OK) {
        (*out)->ts = ts;
        (*out)->seq = seq;
    }
    return e;
}

/* A block loaned to this process (writable while unique). */
static zf_err wrap_loan(uint64_t h, uint64_t len, zf_data **out)
{
    size_t room;
    zf_data *b = block_of(h, true, &room);
    uint64_t cap = b->cap;
    if (len > cap || cap > room)
        die("node host: a capsule of %llu bytes in a block of %llu (%zu mapped)",
            (unsigned long long)len, (unsigned long long)cap, room);
    return wrap(b, h, len, cap, true, b->ts, b->seq, out);
}

/* A capsule delivered on an input, built from its cell (length, stamp,
 * sequence number) without reading the block's header: its line was last
 * written on the runtime's core, and reading it would put a second line
 * crossing before on_input. Its capacity is its length (received, it is
 * read-only here: zf_data_mut copies). The length is checked against what
 * is mapped after the header, so no cell makes node code read past it. */
static zf_err wrap_input(uint64_t h, uint64_t len, uint64_t ts, uint64_t seq, zf_data **out)
{
    size_t room;
    zf_data *b = block_of(h, false, &room);
    if (len > room)
        die("node host: a capsule of %llu bytes where %zu are mapped", (unsigned long long)len,
            room);
    return wrap(b, h, len, len, false, ts, seq, out);
}

static bool loan_ready(void *arg)
{
    (void)arg;
    return zfi_ring_ready(&H.m.loan) ||
           (int32_t)(atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_relaxed) - H.msgs_seen) >
               0;
}

/* A loaned block of at least len bytes: ZF_OK, or ZF_ENOMEM when the
 * runtime refused (its pool is at max_memory). */
static zf_err host_alloc(size_t len, zf_data **out)
{
    *out = NULL;
    atomic_store_explicit(&H.m.ctl->child.loan_want, len ? len : 1, memory_order_seq_cst);
    for (;;) {
        uint64_t h = 0, cap = 0;
        pthread_mutex_lock(&H.mu);
        int k = zfi_ring_take(&H.m.loan, &h, &cap);
        pthread_mutex_unlock(&H.mu);
        atomic_thread_fence(memory_order_seq_cst); /* (its head, then the runtime's words) */
        if (k < 0)
            die("node host: the loan ring's tail is inconsistent");
        if (k == 0) {
            zfi_evc_notify_shared(&H.m.ctl->to_rt);
            wait_child(loan_ready, NULL, -1, NULL);
            catch_up();
            continue;
        }
        zfi_evc_notify_shared(&H.m.ctl->to_rt); /* the runtime tops the ring up */
        if (!h) {
            atomic_store_explicit(&H.m.ctl->child.loan_want, 0, memory_order_seq_cst);
            return zfi_error(ZF_ENOMEM, "the runtime's pool refused %zu bytes (max_memory)", len);
        }
        catch_up();
        if (cap < len) {
            release_handle((void *)(uintptr_t)h); /* another size: give it back */
            continue;
        }
        zf_err e = wrap_loan(h, len, out);
        if (e != ZF_OK)
            release_handle((void *)(uintptr_t)h);
        return e;
    }
}

zf_err zfi_host_alloc(zf_node *n, size_t len, zf_data **out)
{
    zf_err e = host_alloc(len, out);
    if (e == ZF_ENOMEM)
        atomic_fetch_add_explicit(&n->alloc_failures, 1, memory_order_relaxed);
    return e;
}

zf_err zfi_host_send(zf_node *n, unsigned port, zf_data **d, bool try_only, int64_t timeout_ns)
{
    if (!d || !*d)
        return zfi_error(ZF_EINVAL, "zf_send: NULL capsule");
    if (port >= n->n_out) {
        zf_data_unref(*d);
        *d = NULL;
        return zfi_error(ZF_EINVAL, "zf_send: node '%s' has no output port %u (it has %zu)",
                         n->desc->id, port, n->n_out);
    }
    zf_data *c = *d;
    zfi_data_check(c, "zf_send");
    zfi_ring *r = &H.m.out[H.out_ring[port]];
    if (try_only) {
        uint32_t room = 0;
        pthread_mutex_lock(&H.mu);
        zfi_ring_load_lim(r);
        bool ok = zfi_ring_room(r, &room);
        pthread_mutex_unlock(&H.mu);
        if (ok && !room) {
            if (pthread_equal(pthread_self(), H.main_thread) && H.producing &&
                n->desc->period_ns <= 0)
                H.full = r; /* a ZF_EAGAIN produce then waits for its room */
            return zfi_error(ZF_EAGAIN, "zf_try_send: output %u of '%s' is full", port,
                             n->desc->id);
        }
    }
    *d = NULL;
    if (c->kind != ZFI_KIND_REMOTE) {
        /* Memory of this process (wrapped, static, a local copy): copied
         * into a block of the runtime's pool once, the only copy there is. */
        zf_data *copy = NULL;
        zf_err e = host_alloc((size_t)c->len, &copy);
        if (e != ZF_OK) {
            zf_data_unref(c);
            return e;
        }
        memcpy(zfi_payload(copy), zfi_payload(c), (size_t)c->len);
        copy->len = c->len;
        atomic_fetch_add_explicit(&H.m.ctl->child.copies, 1, memory_order_relaxed);
        zf_data_unref(c);
        c = copy;
    }
    uint64_t h = (uint64_t)(uintptr_t)zfi_data_remote_arg(c);
    bool keep = zf_data_refcount(c) > 1;
    /* The callbacks' thread waits for room (the runtime takes, or kills a
     * child it finds hung); a thread of the node's own is bounded. */
    bool own_thread = !pthread_equal(pthread_self(), H.main_thread);
    pthread_mutex_lock(&H.mu);
    zf_err pe = push_within(r, h, (c->len & ZFI_CELL_LEN_MASK) | (keep ? ZFI_CELL_KEEP : 0),
                            own_thread, timeout_ns);
    uint64_t mine = pe == ZF_OK ? r->pos : 0; /* taken once the head reaches it */
    pthread_mutex_unlock(&H.mu);
    if (pe != ZF_OK) {
        zf_data_unref(c); /* not sent: released (its handle goes back) */
        if (pe == ZF_ECLOSED)
            return zfi_error(pe, "zf_send: '%s' is stopping; capsule dropped", n->desc->id);
        return zfi_error(pe, "zf_send: output %u of '%s' full for %lld ms; capsule dropped", port,
                         n->desc->id, (long long)(timeout_ns / 1000000));
    }
    ring_runtime(r, mine, ZFI_RT_BELL);
    atomic_fetch_add_explicit(&n->sent, 1, memory_order_relaxed);
    if (keep)
        zf_data_unref(c); /* a local reference; the runtime took its own */
    else
        zfi_data_remote_forget(c); /* the reference went with the capsule */
    return ZF_OK;
}

/* ---- the node ---- */

static void report_error(zf_err e, const char *what)
{
    char text[700];
    snprintf(text, sizeof text, "%s\t%s", what, H.node.error_msg);
    tell(ZFI_MSG_ERROR, (int32_t)e, text);
}

/* A callback starts (on) or ends: the runtime's hang watch reads the start,
 * its stop report the count (the main thread's alone: plain stores). The
 * start is read from the coarse clock (the kernel's tick, 1-4 ms): hang
 * timeouts are seconds, and a precise read (~26 ns on a kvm-clock VM) came
 * between every input's arrival and its on_input. The coarse clock is never
 * ahead of the runtime's CLOCK_MONOTONIC. */
static void busy(bool on)
{
    _Atomic uint64_t *since = &H.m.ctl->child.busy_since;
    if (on) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
        uint64_t ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
        atomic_store_explicit(since, ns ? ns : 1, memory_order_release);
        return;
    }
    atomic_store_explicit(since, 0, memory_order_release);
    _Atomic uint64_t *calls = &H.m.ctl->child.callbacks;
    atomic_store_explicit(calls, atomic_load_explicit(calls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void run_fini(void)
{
    zf_node *n = &H.node;
    if (n->decl->fini && n->initialized)
        n->decl->fini(n->state);
    n->initialized = false;
    zfi_unload_node(&n->lib, true);
    tell(ZFI_MSG_FINI_DONE, 0, "");
    _exit(0);
}

static bool work_ready(void *arg)
{
    (void)arg;
    if (atomic_load(&H.fini_asked))
        return true; /* a node's own thread read the FINI (catch_up) */
    if ((int32_t)(atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_relaxed) - H.msgs_seen) > 0)
        return true;
    uint32_t flags = atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_acquire);
    uint32_t acked = atomic_load_explicit(&H.m.ctl->child.acked, memory_order_relaxed);
    if ((flags & ~acked) & (ZFI_RT_STOP | ZFI_RT_EOS))
        return true;
    for (size_t i = 0; i < H.m.n_in; i++)
        if (zfi_ring_ready(&H.m.in[i]))
            return true;
    return false;
}

/* After a take from input ring i: if the runtime waits for room, tell it
 * once no more than its low mark waits (hysteresis: not a wake-up per
 * cell; a wake-up above the mark finds too little room and sleeps again, a
 * futex round trip per message). The fence pairs the take's store of the
 * head with the runtime's seq_cst store of room_wanted and its look at the
 * head after. (The tail may lag one cell behind what was taken: 0 waiting;
 * the tail and the limit are read only when the runtime waits: that line
 * is the runtime's.) */
static void room_told(size_t i)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(&H.m.ctl->rt.room_wanted, memory_order_relaxed))
        return;
    zfi_ring_load_lim(&H.m.in[i]); /* its low mark (on the tail's line too) */
    uint64_t waiting =
        atomic_load_explicit(&H.m.in[i].s->tail, memory_order_relaxed) - H.m.in[i].pos;
    if (waiting <= zfi_ring_low(&H.m.in[i]) || waiting == UINT64_MAX)
        zfi_evc_notify_shared(&H.m.ctl->to_rt);
}

static void operator_loop(void)
{
    zf_node *n = &H.node;
    size_t rr = 0;
    for (;;) {
        catch_up();
        if (atomic_load(&H.fini_asked))
            run_fini();
        bool did = false;
        for (size_t k = 0; k < H.m.n_in; k++) {
            size_t i = (rr + k) % H.m.n_in;
            uint64_t h, len, ts, seq;
            /* Only a published cell is taken: a take of an unpublished one
             * reads the ring's tail to tell empty from inconsistent, and
             * that line is the runtime's, which stores the tail at every
             * put (a line pulled here at every look is one its next put
             * waits for). */
            if (!zfi_ring_ready(&H.m.in[i]))
                continue;
            /* Without mu: the input rings are this thread's alone, and no
             * locked instruction may come between the take and on_input
             * (it would wait for the head's line: room_told's fence comes
             * after the callback). */
            int got = zfi_ring_take_meta(&H.m.in[i], &h, &len, &ts, &seq);
            if (got < 0)
                die("node host: input ring %zu's tail is inconsistent", i);
            if (!got)
                continue;
            catch_up();
            zf_data *d = NULL;
            if (wrap_input(h, len, ts, seq, &d) != ZF_OK) {
                release_handle((void *)(uintptr_t)h);
                room_told(i);
                continue;
            }
            did = true;
            rr = i + 1;
            n->error_msg[0] = '\0';
            busy(true);
            zf_err e = n->decl->on_input(n->state, n, (unsigned)n->lib.in_map[i], &d);
            busy(false);
            room_told(i); /* (after the callback: its fence waits for the head's line) */
            if (d)
                zf_data_unref(d);
            if (e != ZF_OK)
                report_error(e, "on_input");
            break;
        }
        if (did)
            continue;
        uint32_t flags = atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_acquire);
        uint32_t acked = atomic_load_explicit(&H.m.ctl->child.acked, memory_order_relaxed);
        bool empty = (int32_t)(atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_relaxed) -
                               H.msgs_seen) <= 0;
        for (size_t i = 0; i < H.m.n_in && empty; i++)
            empty = !zfi_ring_ready(&H.m.in[i]);
        if ((flags & ZFI_RT_EOS) && !(acked & ZFI_RT_EOS) && empty) {
            atomic_store_explicit(&H.m.ctl->child.acked, acked | ZFI_RT_EOS, memory_order_seq_cst);
            zfi_evc_notify_shared(&H.m.ctl->to_rt);
            continue;
        }
        wait_child(work_ready, NULL, -1, &input_spin);
    }
}

static bool stop_or_msg(void *arg)
{
    (void)arg;
    return atomic_load(&H.fini_asked) || /* (read by a node's own thread: catch_up) */
           (atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_acquire) & ZFI_RT_STOP) ||
           (int32_t)(atomic_load_explicit(&H.m.ctl->rt.msgs, memory_order_relaxed) - H.msgs_seen) >
               0;
}

static bool woken_or_stop(void *arg)
{
    return atomic_load_explicit(&H.woken, memory_order_acquire) || stop_or_msg(arg);
}

void zfi_host_wake(zf_node *n)
{
    (void)n; /* the host's one node */
    atomic_store_explicit(&H.woken, true, memory_order_seq_cst);
    zfi_evc_notify_shared(&H.m.ctl->to_child);
}

static bool started_or_msg(void *arg)
{
    (void)arg;
    return (atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_acquire) & ZFI_RT_STARTED) ||
           stop_or_msg(NULL);
}

/* A produce's zf_try_send found output ring `full` without room: it runs
 * again once that ring has room, as a blocked send resumes (or at a stop,
 * or a message). */
static bool room_or_stop(void *arg)
{
    return has_room(arg) || stop_or_msg(NULL);
}

static void source_loop(void)
{
    zf_node *n = &H.node;
    int64_t backoff = 0;
    uint64_t next = 0;
    bool started_once = false, waits = false, waited = false;
    for (;;) {
        catch_up();
        if (atomic_load(&H.fini_asked))
            run_fini();
        uint32_t flags = atomic_load_explicit(&H.m.ctl->rt.flags, memory_order_acquire);
        /* zf_node_stopping() for the node's own threads: suspended (after
         * a start) or stopping, as in process */
        started_once |= (flags & ZFI_RT_STARTED) != 0;
        atomic_store(&H.inst.sources_stopped,
                     (started_once && !(flags & ZFI_RT_STARTED)) || (flags & ZFI_RT_STOP));
        if (flags & ZFI_RT_STOP) {
            uint32_t acked = atomic_load_explicit(&H.m.ctl->child.acked, memory_order_relaxed);
            if (!(acked & ZFI_RT_STOP)) {
                atomic_store_explicit(&H.m.ctl->child.acked, acked | ZFI_RT_STOP,
                                      memory_order_seq_cst);
                zfi_evc_notify_shared(&H.m.ctl->to_rt);
            }
            wait_child(work_ready, NULL, -1, NULL); /* now only for fini */
            continue;
        }
        if (!(flags & ZFI_RT_STARTED) || !n->decl->produce) {
            wait_child(flags & ZFI_RT_STARTED ? stop_or_msg : started_or_msg, NULL, -1, NULL);
            continue;
        }
        uint64_t now = zf_clock_ns();
        if (n->desc->period_ns > 0) {
            if (!next)
                next = now;
            if (now < next) {
                wait_child(stop_or_msg, NULL, (int64_t)(next - now), NULL);
                continue;
            }
            next += (uint64_t)n->desc->period_ns;
            if (next < now)
                next = now; /* fell behind: no burst to catch up */
        } else if (!waited && (H.full || waits || backoff)) {
            /* The waits of include/zflow/node.h (produce): a zf_node_wake
             * ends the ZF_EAGAIN wait and the backoff alike. */
            if (H.full)
                wait_child(room_or_stop, H.full, -1, NULL);
            else
                wait_child(woken_or_stop, NULL, waits ? MAX_BACKOFF_NS : backoff, NULL);
            waited = true;
            continue; /* the top sees a stop first: no produce after it */
        }
        waited = false;
        H.full = NULL;
        uint64_t sent = atomic_load_explicit(&n->sent, memory_order_relaxed);
        n->error_msg[0] = '\0';
        atomic_store_explicit(&H.woken, false, memory_order_seq_cst);
        H.producing = true;
        busy(true);
        zf_err e = n->decl->produce(n->state, n);
        busy(false);
        H.producing = false;
        waits = e == ZF_EAGAIN && n->desc->period_ns <= 0;
        if (e == ZF_EAGAIN)
            e = ZF_OK; /* nothing to send until an event: not an error */
        else
            H.full = NULL; /* it did not pass the refusal on */
        if (e != ZF_OK && !(e == ZF_ECLOSED && (flags & ZFI_RT_STOP)))
            report_error(e, "produce");
        if (waits)
            backoff = 0;
        else if (n->desc->period_ns <= 0) {
            if (atomic_load_explicit(&n->sent, memory_order_relaxed) == sent)
                backoff = backoff ? (backoff * 2 > MAX_BACKOFF_NS ? MAX_BACKOFF_NS : backoff * 2)
                                  : 100000;
            else
                backoff = 0;
        }
    }
}

/* ---- the node's description (ZFI_MSG_SPEC) ---- */

static char *field(char **p)
{
    char *s = *p, *tab = strchr(s, '\t'), *nl = strchr(s, '\n');
    if (!nl)
        return NULL;
    *nl = '\0';
    *p = nl + 1;
    if (!tab || tab > nl)
        return NULL;
    return tab + 1;
}

static bool add_port(zfi_port **ports, size_t *n, char *v)
{
    char *type = strchr(v, ' ');
    if (!type)
        return false;
    *type++ = '\0';
    zfi_port *t = realloc(*ports, (*n + 1) * sizeof *t);
    if (!t)
        return false;
    *ports = t;
    t[*n] = (zfi_port){zfi_strdup(v), zfi_strdup(type), 0, 0};
    (*n)++;
    return true;
}

static char **code_dirs;
static size_t n_code_dirs;
static bool allow_writable;

static void parse_spec(char *text)
{
    zfi_node *nd = &H.nd;
    memset(nd, 0, sizeof *nd);
    unsigned layout = 0;
    for (char *p = text; *p;) {
        char *key = p;
        char *v = field(&p);
        if (!v)
            die("node host: malformed node description");
        size_t kl = (size_t)(strchr(key, '\t') - key);
#define IS(k) (kl == sizeof(k) - 1 && memcmp(key, k, kl) == 0)
        if (IS("layout"))
            layout = (unsigned)atoi(v);
        else if (IS("id"))
            nd->id = zfi_strdup(v);
        else if (IS("kind"))
            nd->kind = (zf_node_kind)atoi(v);
        else if (IS("library"))
            nd->library = *v ? zfi_strdup(v) : NULL;
        else if (IS("python"))
            nd->python = *v ? zfi_strdup(v) : NULL;
        else if (IS("file"))
            nd->file = zfi_strdup(v);
        else if (IS("line"))
            nd->line = (unsigned)atoi(v);
        else if (IS("col"))
            nd->col = (unsigned)atoi(v);
        else if (IS("period"))
            nd->period_ns = strtoll(v, NULL, 10);
        else if (IS("in")) {
            if (!add_port(&nd->inputs, &nd->n_inputs, v))
                die("node host: bad input port");
        } else if (IS("out")) {
            if (!add_port(&nd->outputs, &nd->n_outputs, v))
                die("node host: bad output port");
        } else if (IS("uuid"))
            snprintf(H.inst.uuid, sizeof H.inst.uuid, "%s", v);
        else if (IS("instance"))
            H.inst.name = zfi_strdup(v);
        else if (IS("flow"))
            H.flow.name = zfi_strdup(v);
        else if (IS("pool_slot"))
            H.pool_slot = (uint32_t)atoi(v);
        else if (IS("code_dir")) {
            char **t = realloc(code_dirs, (n_code_dirs + 1) * sizeof *t);
            if (!t)
                die("node host: out of memory");
            code_dirs = t;
            code_dirs[n_code_dirs++] = zfi_strdup(v);
        } else if (IS("allow_writable"))
            allow_writable = atoi(v) != 0;
        else if (IS("config")) {
            zfi_src src;
            memset(&src, 0, sizeof src);
            zf_config *c = NULL;
            if (!zfi_src_identity(&src, "configuration", v, strlen(v)) ||
                zfi_yaml_parse(&src, NULL, NULL, 0, &c) != ZF_OK || !c)
                die("node host: the node's configuration does not parse");
            zfi_src_free(&src);
            nd->config = c;
        }
#undef IS
    }
    if (layout != ZFI_SHM_LAYOUT)
        die("node host: the runtime's shared memory has layout %u, this zf-node-host reads "
            "layout %u: it is from another zflow build (install the runtime and its node host "
            "together)",
            layout, ZFI_SHM_LAYOUT);
    if (!nd->id || (!nd->library && !nd->python))
        die("node host: the node description lacks its id or its code");
    if (!nd->config)
        nd->config = zfi_config_new(ZF_CFG_MAP, NULL, 0, 0);
}

static void send_diag(const zf_diag *diag, zf_err e)
{
    zfi_buf b;
    zfi_buf_init(&b);
    for (size_t i = 0; i < zf_diag_count(diag); i++) {
        const zf_diag_entry *en = zf_diag_get(diag, i);
        zfi_buf_printf(&b, "%d\t%s\t%u\t%u\t%s\t%s\n", (int)zfi_diag_code(diag, i),
                       en->file ? en->file : "", en->line, en->col, en->field ? en->field : "",
                       en->message ? en->message : "");
    }
    tell(ZFI_MSG_LOAD_FAILED, (int32_t)e, b.s ? b.s : "");
    zfi_buf_free(&b);
}

int zf_node_host_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    H.sock = HOST_SOCK;
    H.main_thread = pthread_self();
    /* stdout and stderr are pipes into the node's log: a line reaches it
     * when it is written, as on a terminal (Python's too). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    setvbuf(stderr, NULL, _IOLBF, 0);
    setenv("PYTHONUNBUFFERED", "1", 0);
    /* The runtime's thread that started it (its node's proxy thread, which
     * lives as long as the node) going away ends it too. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* A node's fatal signal ends this process with that signal, so the
     * runtime reports it as it is (whatever handler a sanitizer or the
     * parent's environment installed). */
    const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < ZFI_ARRAY_LEN(fatal); i++)
        signal(fatal[i], SIG_DFL);
    pthread_mutex_init(&H.mu, NULL);
    /* The runtime is the only reader of what this process says. */
    zf_log_set(host_log, NULL, ZF_LOG_INFO);
    zfi_msg msg;
    bool closed = false;
    if (zfi_msg_recv(H.sock, &msg, true, &closed) <= 0 || msg.type != ZFI_MSG_SPEC ||
        msg.n_fds != 1) {
        fprintf(stderr, "zf-node-host: run by the zflow runtime only (no node description on "
                        "fd 3)\n");
        return 2;
    }
    parse_spec(msg.data);
    if (H.nd.n_inputs > ZFI_PROC_MAX_PORTS || H.nd.n_outputs > ZFI_PROC_MAX_PORTS)
        die("node host: too many ports");
    if (!zfi_shm_map(&H.m, msg.fds[0], H.nd.n_inputs, H.nd.n_outputs))
        die("node host: mapping the rings: %s", strerror(errno));
    zfi_msg_free(&msg);
    H.arena_reserved = (size_t)8 << 30;
    void *r =
        mmap(NULL, H.arena_reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        die("node host: reserving address space: %s", strerror(errno));
    H.arena = r;

    zf_node *n = &H.node;
    H.inst.flow = &H.flow;
    n->inst = &H.inst;
    n->desc = &H.nd;
    n->host = &H;
    zf_diag *diag = zf_diag_new();
    zf_err e =
        zfi_load_node(&H.nd, H.nd.file, code_dirs, n_code_dirs, allow_writable, &n->lib, diag);
    if (e == ZF_OK &&
        (n->lib.decl->n_inputs != H.nd.n_inputs || n->lib.decl->n_outputs != H.nd.n_outputs)) {
        zfi_diag_add(diag, ZF_ETYPE, H.nd.file, H.nd.line, H.nd.col, "library",
                     "node '%s': the library declares %zu inputs and %zu outputs, the "
                     "descriptor %zu and %zu",
                     H.nd.id, n->lib.decl->n_inputs, n->lib.decl->n_outputs, H.nd.n_inputs,
                     H.nd.n_outputs);
        e = ZF_ETYPE;
    }
    if (e != ZF_OK) {
        send_diag(diag, e);
        zf_diag_free(diag);
        return 1;
    }
    zf_diag_free(diag);
    n->decl = n->lib.decl;
    n->n_in = n->decl->n_inputs;
    n->n_out = n->decl->n_outputs;
    H.out_ring = zfi_calloc(n->n_out + 1, sizeof *H.out_ring);
    if (!H.out_ring)
        die("node host: out of memory");
    for (size_t o = 0; o < H.nd.n_outputs; o++)
        H.out_ring[n->lib.out_map[o]] = o;
    tell(ZFI_MSG_DECL, 0, "");

    /* init, when asked (after the runtime has every node loaded). */
    for (;;) {
        if (zfi_msg_recv(H.sock, &msg, true, &closed) <= 0)
            return 0;
        H.msgs_seen++;
        uint32_t type = msg.type;
        if (type != ZFI_MSG_INIT && type != ZFI_MSG_FINI)
            handle(&msg);
        zfi_msg_free(&msg);
        if (type == ZFI_MSG_INIT)
            break;
        if (type == ZFI_MSG_FINI)
            return 0;
    }
    n->error_msg[0] = '\0';
    void *state = NULL;
    e = n->decl->init ? n->decl->init(n, &state) : ZF_OK;
    n->state = state;
    n->initialized = e == ZF_OK;
    tell(ZFI_MSG_INIT_DONE, (int32_t)e, n->error_msg);
    if (e != ZF_OK)
        return 1;
    if (n->decl->kind == ZF_SOURCE)
        source_loop();
    else
        operator_loop();
    return 0;
}
