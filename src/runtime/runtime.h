/* The runtime's internal structures: nodes as actors, instances, workers.
 *
 * A node runs on one worker at a time. Its `sched` word is the actor
 * state machine: IDLE -> QUEUED (in the run queue) -> RUNNING -> IDLE, with
 * NOTIFIED recording that work arrived while it ran, so it runs again. */
#ifndef ZFI_RUNTIME_H
#define ZFI_RUNTIME_H

#include "core/capsule.h"
#include "core/common.h"
#include "core/futex.h"
#include "core/link.h"
#include "graph/flow.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

enum zfi_sched { ZFI_IDLE = 0, ZFI_QUEUED = 1, ZFI_RUNNING = 2, ZFI_RUNNING_NOTIFIED = 3 };

#define ZFI_CB_HUNG      (1ull << 63) /* the watchdog replaced its worker */
#define ZFI_CB_ABANDONED (1ull << 62) /* left behind at stop */
#define ZFI_CB_START(w)  ((w) & ~(ZFI_CB_HUNG | ZFI_CB_ABANDONED))

#define ZFI_DEFAULT_HANG_TIMEOUT_NS 1000000000LL
/* The timer thread wakes at least this often (timer.c). */
#define ZFI_TICK_NS 10000000ull
/* A scheduling step runs a node for up to ZFI_BATCH callbacks; an operator
 * or sink takes its input capsules one at a time from its links (each take
 * is one claim on the lock-free ring, so nothing is ever taken and not
 * delivered), until ZFI_BATCH capsules or the timer's clock (ZFI_TICK_NS)
 * moves: a step of slow callbacks ends within a tick and one callback,
 * whatever the capsules' size (zero copy: a capsule's size is not its
 * cost). */
#define ZFI_BATCH 32

/* Why a node is DEGRADED (bits: several may hold at once). */
enum { ZFI_DEG_HUNG = 1, ZFI_DEG_ERRORS = 2, ZFI_DEG_DOWN = 4 /* its process died */ };

typedef struct zfi_out {
    zf_link **links; /* fan-out: one link per receiving input */
    size_t n;
    uint64_t seq; /* sequence numbers stamped on sent capsules */
} zfi_out;

typedef struct zfi_iso zfi_iso; /* a process-isolated node's proxy (isolated.c) */

/* What the scheduler, the watchdog and the node lifecycle ask of a node
 * whose code runs elsewhere (a process-isolated node: isolated.c). The
 * instance that creates the node sets it, so these lower layers reach the
 * proxy without calling up into it. */
typedef struct zfi_proxy {
    bool (*room)(zf_node *n);                /* may another capsule be handed to it now? */
    bool (*eos)(zf_node *n);                 /* every input ended: has it drained? */
    void (*watch)(zf_node *n, uint64_t now); /* the watchdog's look (timer thread) */
    void (*fini)(zf_node *n);                /* fini there, bounded; its process ends */
} zfi_proxy;

typedef struct zfi_loaded {
    void *dl;                  /* dlopen handle (NULL for built-ins) */
    zf_host_free_fn host_free; /* a language host's declaration: free it */
    const zf_node_decl *decl;  /* the library's declaration */
    size_t *in_map;            /* descriptor input i -> library input index */
    size_t *out_map;           /* descriptor output i -> library output index */
} zfi_loaded;

struct zf_node {
    zf_instance *inst;
    const zfi_node *desc; /* in the flow (which the instance keeps alive) */
    size_t index;         /* in inst->nodes */
    zfi_loaded lib;
    const zf_node_decl *decl;
    void *state;
    zfi_iso *iso;           /* isolation: process: the proxy (the runtime's side) */
    const zfi_proxy *proxy; /* set with iso, once its process started */
    void *host;             /* in a node host: the child's side (node_host.c) */
    bool initialized;
    bool fini_abandoned; /* its fini outlived its bound */

    size_t n_in, n_out; /* library port counts */
    zf_link **in;       /* by library input index */
    zfi_out *out;       /* by library output index */
    unsigned rr;        /* round robin over inputs */

    /* scheduling */
    _Atomic int sched;
    atomic_int ticks;   /* periodic sources: a produce is due */
    atomic_bool parked; /* an output link is over capacity */
    uint64_t parked_since;
    zf_link *parked_on;          /* the full link that parked it (for blocked time) */
    zf_link *refused_on;         /* the full link a zf_try_send of its produce was refused by */
    uint64_t next_due_ns;        /* periodic sources: timer thread only */
    _Atomic uint64_t wake_at_ns; /* free-running source backing off; 0: none */
    uint64_t backoff_ns;         /* its current backoff (worker only) */
    bool waits;                  /* its produce returned ZF_EAGAIN: zf_node_wake calls it */
    uint32_t waiting_sends;      /* sends left as a waiting source (worker): no handoff */
    atomic_bool done;            /* saw end of stream on every input (or stopped source) */
    bool outputs_closed;         /* under inst->mu */
    atomic_bool failed_for_good; /* an isolated node past its restart policy: never runs again */

    /* watchdog: 0 outside callbacks, else the callback's start time (ns),
     * possibly with ZFI_CB_HUNG or ZFI_CB_ABANDONED set. The start time
     * names the callback, so a compare-and-swap acts on that one only. */
    _Atomic uint64_t cb_word;
    _Atomic uint64_t cb_done; /* the last callback that ended (its start; worker only) */
    zf_data *cb_capsule;      /* the capsule the running on_input holds */
    int tid;                  /* the thread that last entered its code (abandoned-thread reports) */
    uint64_t last_start;      /* the previous callback's cb_word (worker only) */
    uint32_t timing_tick;     /* every BUSY_SAMPLE-th callback is timed precisely */
    uint64_t dur_sample[2];   /* the last two of those, ns (worker only: slot_wait_long) */
    atomic_llong held;        /* references node code took and did not drop */
    atomic_int degraded;      /* ZFI_DEG_* bits */
    atomic_bool abandoned;    /* left behind at stop: never freed */
    atomic_bool replaced;     /* its stuck worker was replaced */
    zfi_log_origin origin;    /* whom its log lines are about */
    uint64_t *err_times;      /* ring of recent error times */
    size_t err_head;
    uint64_t last_error_ns;

    /* state for observers (under inst->mu) */
    zf_node_state node_state;
    uint64_t state_since_ns;
    char reason[320];
    char error_msg[512]; /* from zf_node_set_error */

    /* counters */
    atomic_uint_fast64_t callbacks, errors, alloc_failures, sent, last_progress_ns, busy_ns,
        degraded_count;
    atomic_uint_fast64_t sent_x; /* sent from threads the runtime does not own */

    int64_t hang_timeout_ns, send_timeout_ns, error_window_ns;
    uint32_t max_errors;
};

struct zf_instance {
    zf_runtime *rt;
    zf_flow *flow; /* a reference */
    char uuid[37];
    char *name;
    zf_pool *pool;
    zfi_acct *acct;
    zf_node **nodes;
    size_t n_nodes;
    zf_link **links; /* by flow link index */
    size_t n_links;
    size_t *topo;     /* node indices, sources first */
    char **code_dirs; /* zf_instance_options.code_dirs (copied) */
    size_t n_code_dirs;
    bool allow_writable_code; /* zf_instance_options.allow_writable_code */
    bool isolate_all;         /* zf_instance_options.isolate_all */
    int64_t drain_timeout_ns;

    pthread_mutex_t mu;
    pthread_cond_t cv; /* drain progress, state changes */
    zf_instance_state state;
    uint64_t state_since_ns;
    atomic_bool started;         /* start ran once: nodes may be scheduled */
    atomic_bool sources_stopped; /* suspended or draining: sources idle */
    atomic_bool halted;          /* past the drain: run no more callbacks */
    bool stopped;
    bool init_abandoned; /* an init outlived its bound: never free */
    zf_stop_report report;
    size_t sinks_left;
    unsigned failed_gen; /* under mu: nodes failed for good so far (a stop's drain cuts them out) */
    zfi_log_origin origin;          /* whom its log lines are about (node NULL) */
    struct zfi_rates *rates;        /* live figures, sampled by the timer (rates.c) */
    struct zf_recording *replay;    /* replayed into its sources (record.c), or NULL */
    struct zf_recorder *recorders;  /* recording it (record.c; under mu) */
    struct zf_instance *next_in_rt; /* runtime's list (under rt->mu) */
};

/* ---- the runtime (runtime.c; its workers sched.c, its timer timer.c) ---- */

typedef struct zfi_worker zfi_worker;

#define ZFI_MAX_WORKERS 256

/* What idle workers do besides the run queue, set by the isolation layer
 * (isolated.c) with its table, so that the scheduler does not call it:
 *   poll  deliver what isolated children published into their downstream
 *         links, without blocking (a full link is left to the node's proxy
 *         thread); true if it delivered anything.
 *   wait  sleep on the run queue's eventcount (key from zfi_evc_prepare(q),
 *         which this ends), woken as well when a child publishes. */
typedef struct zfi_idle_hooks {
    bool (*poll)(zf_runtime *rt);
    void (*wait)(zf_runtime *rt, zfi_evc *q, uint32_t key);
} zfi_idle_hooks;

struct zf_runtime {
    char *worker_name;
    unsigned target_workers;

    /* run queue */
    zfi_lock q_mu; /* the run queue (short sections: spin, then futex) */
    zf_node **q;
    size_t q_head, q_len, q_cap;
    zfi_evc q_evc;            /* idle workers sleep here */
    atomic_size_t q_count;    /* published length */
    atomic_uint idle_workers; /* workers looking for work (spinning or asleep) */
    atomic_uint spinning;     /* of which spinning (a push wakes none then) */
    atomic_uint woken;        /* a worker was woken and has not spun yet (idem) */
    /* Work idle workers found, other than periodic sources (sched.c): when
     * it came less than ZFI_DENSE_NS apart lately, one idle worker spins
     * through the gap. Written by workers as they find it; a heuristic. */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t found_last, found_gap, spin_calm;
    /* Each worker's "run next" slot (sched.c), stealable by idle workers. */
    _Alignas(ZFI_CACHELINE) _Atomic(zf_node *) slots[ZFI_MAX_WORKERS];
    bool slot_used[ZFI_MAX_WORKERS]; /* under mu */
    atomic_uint n_slots;             /* highest slot in use + 1 */
    /* What each slot held at the timer's last tick (the timer thread's
     * own: compared, never dereferenced; zfi_sched_tick). */
    const zf_node *slot_seen[ZFI_MAX_WORKERS];
    uint64_t slot_seen_ns[ZFI_MAX_WORKERS]; /* since when (the timer's clock) */
    /* Process-isolated nodes whose outputs idle workers take (isolated.c);
     * NULL until the first one, when isolated.c also sets idle. */
    _Atomic(struct zfi_iso_table *) isos;
    _Atomic(const struct zfi_idle_hooks *) idle;

    /* workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* CLOCK_MONOTONIC; a worker exited */
    unsigned live_workers;   /* threads running worker_main */
    unsigned active_workers; /* live minus those stuck in a hung node */
    unsigned stuck_workers;  /* in abandoned nodes: never come back */
    bool shutdown;
    zf_instance *instances;
    struct zfi_abandoned *abandoned; /* threads left in node code (lifecycle.c) */

    /* The timer thread's clock (CLOCK_MONOTONIC, ns), stored at each of its
     * wake-ups (at least every ZFI_TICK_NS): callbacks are stamped with it
     * for the watchdog and the progress figures, so a callback reads no
     * clock. On a line of its own (one writer, read by every worker). */
    _Alignas(ZFI_CACHELINE) _Atomic uint64_t now_ns;

    /* timers and watchdog */
    pthread_t timer_thread;
    bool timer_started;
    pthread_cond_t timer_cv;
    bool timer_stop;

    /* A worker left a node (it is idle or queued again), or a node was
     * found hung: stop and destroy wait here for their instance's nodes
     * (stop.c). On a line of its own: every worker reads it when it leaves
     * a node; only a waiting stop writes it. */
    _Alignas(ZFI_CACHELINE) zfi_evc left;
};

/* This thread's kernel id (lifecycle.c), cached per thread. */
extern ZFI_TLS int zfi_tls_tid;
int zfi_tid_slow(void);
static inline int zfi_tid(void)
{
    return zfi_tls_tid ? zfi_tls_tid : zfi_tid_slow();
}

/* Run node code on this thread: capsules it allocates come from its pool,
 * pinned ones count in its instance, references it takes count as its own.
 * Returns the previous context for zfi_node_leave. */
static inline zfi_ctx zfi_node_enter(zf_node *n)
{
    zfi_ctx *ctx = zfi_ctx_get();
    zfi_ctx saved = *ctx;
    ctx->pool = n->inst->pool;
    ctx->acct = n->inst->acct;
    ctx->node = n;
    ctx->held = &n->held;
    n->tid = zfi_tid();
    return saved;
}

static inline void zfi_node_leave(zfi_ctx saved)
{
    *zfi_ctx_get() = saved;
}

/* Mark a node runnable (any thread). */
void zfi_node_notify(zf_node *n);
/* Link hooks. */
void zfi_node_on_data(void *node);
void zfi_node_on_room(void *node);
/* Start / stop the worker threads (sched.c). */
zf_err zfi_workers_start(zf_runtime *rt);
void zfi_workers_stop(zf_runtime *rt);
/* Add one worker (the watchdog replaces a worker stuck in a hung node). */
void zfi_worker_add(zf_runtime *rt);
void zfi_worker_add_locked(zf_runtime *rt); /* rt->mu held */
/* The watchdog marks the callback that started at `start` hung (its worker
 * is then replaced); true if that callback is still running. */
/* Once per process, before the first worker runs: whether a callback's
 * end can do without a locked instruction (sched.c, membarrier). */
void zfi_sched_init_once(void);
bool zfi_node_mark_hung(zf_node *n, uint64_t start);
/* Stop abandons a node stuck in the callback that began at `start` (the one
 * it judged overdue, not whichever runs by the time it acts): it is never
 * freed, its worker never counted again. True if it was still inside it. */
bool zfi_node_abandon(zf_node *n, uint64_t start);
/* The node whose callback is running on this thread, or NULL. */
/* The node whose callback this thread is running, or NULL. */
extern ZFI_TLS zf_node *zfi_tls_node;
static inline zf_node *zfi_current_node(void)
{
    return zfi_tls_node;
}

/* Timer and watchdog thread (timer.c). */
zf_err zfi_timer_start(zf_runtime *rt);
void zfi_timer_stop(zf_runtime *rt);
/* Wake the timer thread (an instance started or changed). */
void zfi_timer_kick(zf_runtime *rt);

/* The watchdog (watchdog.c): hangs and errors. The scan runs on the timer
 * thread with rt->mu held. */
void zfi_watchdog_scan(zf_instance *inst, uint64_t now);
/* The timer thread, every pass: a node left in a worker's run-next slot
 * for a tick (behind a long callback) gets a sleeping worker woken to
 * take it (sched.c). */
void zfi_sched_tick(zf_runtime *rt);
void zfi_node_error(zf_node *n, zf_err err, const char *what);
void zfi_node_success(zf_node *n, uint64_t now);
void zfi_node_returned_from_hang(zf_node *n);

/* The instance's state machine (state.c): every change of inst->state goes
 * through zfi_instance_set_state (inst->mu held), which checks it against
 * the table of allowed changes (a disallowed one is a programmer error:
 * fatal), wakes inst->cv and logs it at INFO with why. state_init sets
 * CREATED (at creation, before anyone else sees inst). */
void zfi_instance_state_init(zf_instance *inst);
void zfi_instance_set_state(zf_instance *inst, zf_instance_state to, const char *why);

/* A node's lifecycle (lifecycle.c). Its state and reason (inst->mu held). */
void zfi_node_set_state(zf_node *n, zf_node_state s, const char *fmt, ...) ZF_PRINTF(3, 4);
/* Every input saw end of stream: mark n done, close its outputs, count a
 * sink done; once only. The scheduler calls it; so does a system sink
 * taking from its links on its own thread when it saw end of stream. */
void zfi_node_finish(zf_node *n);
/* A built-in node (nd->builtin, or one registered as nd->builtin_name): its
 * declaration, ports mapped one to one (loader.c). ZF_ENOTFOUND (not
 * registered: in diag), ZF_ENOMEM. */
zf_err zfi_builtin_node(const zfi_node *nd, zfi_loaded *out, zf_diag *diag);
/* Make a built-in node known by name (before any flow uses it): make(nd)
 * returns a declaration with nd's ports (NULL: refused, zf_last_error says
 * why: out of memory, a module that cannot be loaded), which
 * free_decl releases when the node is unloaded. */
typedef const zf_node_decl *(*zfi_builtin_make)(const zfi_node *nd);
void zfi_builtin_register(const char *name, zfi_builtin_make make, zf_host_free_fn free_decl);
/* Close a node's outputs (end of stream downstream; lifecycle.c). */
void zfi_node_close_outputs(zf_node *n);
/* Sinks: one more saw end of stream (lifecycle.c). */
void zfi_instance_sink_done(zf_instance *inst);
/* Fini every initialized, non-abandoned node, sinks first, each bounded
 * (zfi_lifecycle_call; an isolated one through its proxy); one abandoned
 * is counted in r (may be NULL) and named in the log (lifecycle.c). */
void zfi_instance_fini_nodes(zf_instance *inst, zf_stop_report *r);
/* Free the instance and everything it owns (instance.c). */
void zfi_instance_free(zf_instance *inst);
/* After its stop: wait until no node of inst is queued or running (a
 * worker leaving a node wakes it), so that it may be freed (stop.c). */
void zfi_instance_wait_idle(zf_instance *inst);

/* Loader (loader.c). */
/* Load node nd's code. It must be a regular file. With code_dirs
 * (n_code_dirs > 0), it must lie in one of those folders (real paths ending
 * in '/'), checked on the file opened, and (unless allow_writable) be
 * changeable only by root or this user (zfi_trust_check). */
zf_err zfi_load_node(const zfi_node *nd, const char *file, char *const *code_dirs,
                     size_t n_code_dirs, bool allow_writable, zfi_loaded *out, zf_diag *diag);
/* real (absolute) and every folder above it belong to root or this user;
 * real itself writable by no one else, the folders above only if sticky.
 * leaf_st: real's stat if the caller has it (an open file's), else NULL.
 * ZF_EPERM with the offending component (trust.c). */
zf_err zfi_trust_check(const char *real, const struct stat *leaf_st);
void zfi_unload_node(zfi_loaded *l, bool keep_mapped);

/* Bounded init and fini, abandoned threads (lifecycle.c). */
typedef struct zfi_abandoned {
    char node[128], instance[37], name[128], in[16];
    int tid;
    uint64_t since_ns;
    struct zfi_abandoned *next;
} zfi_abandoned;
/* Run n's init (fini false; its state is stored in n->state) or fini on a
 * thread of its own and wait at most zfi_lifecycle_bound_ns. True when it
 * returned (*result: init's result); false when it was abandoned (n is
 * marked abandoned and recorded: never free it). */
bool zfi_lifecycle_call(zf_node *n, bool fini, zf_err *result);
int64_t zfi_lifecycle_bound_ns(const zf_node *n);
/* Record a thread left inside n's code ("callback", "init", "fini"); once
 * per thread and node. _locked: rt->mu held (the watchdog). */
void zfi_abandoned_add(zf_node *n, const char *in, int tid);
void zfi_abandoned_add_locked(zf_node *n, const char *in, int tid);
/* Thread tid returned from n's code (a hung callback that came back). */
void zfi_abandoned_drop(zf_node *n, int tid);
void zfi_abandoned_free_all(zf_runtime *rt);

/* Logging about nodes (ops.c): the lookup the logger uses to name the
 * node whose code runs on a thread. */
const zfi_log_origin *zfi_node_log_origin(void *node);

/* A tap's items also notify e (ops.c; the recorder reads several taps). */
void zfi_tap_notify_also(zf_tap *t, zfi_evc *e);
/* Replay (record.c): whether node nd produced a link of rec; if so (a
 * source) *out holds the built-in replay source with nd's ports. */
zf_err zfi_replay_load(struct zf_recording *rec, const zfi_node *nd, zfi_loaded *out,
                       bool *replaced, zf_diag *diag);

/* At stop, after fini: close every link and wait (up to timeout_ns) for the
 * recorders of inst to have written and released what they hold, so the
 * stop report counts no recorded capsule as leaked (record.c). */
void zfi_recorders_settle(zf_instance *inst, int64_t timeout_ns);
/* Start a recorder for each file named by the flow's `record:` links (one
 * per file; into record_dir, plain names only, when it is set, else
 * relative to the descriptor's folder); stop them (record.c). */
zf_err zfi_recorders_start_declared(zf_instance *inst, const char *record_dir, zf_diag *diag);
void zfi_recorders_stop_owned(zf_instance *inst);
/* Every output rec recorded exists in f (record.c). */
zf_err zfi_replay_check(const struct zf_recording *rec, const zf_flow *f, zf_diag *diag);

/* Live figures (rates.c): the timer samples every instance's counters
 * every ZFI_RATES_STEP_NS; readers compute windows from the samples. */
#define ZFI_RATES_STEP_NS 100000000ull
struct zfi_rates *zfi_rates_new(const zf_instance *inst);
void zfi_rates_free(struct zfi_rates *r);
void zfi_rates_sample(zf_instance *inst, uint64_t now);

/* Node state changes made for process-isolated nodes (lifecycle.c): its
 * process died (DEGRADED, breaker open; restarted after backoff_ns), it
 * runs again (RUNNING), it is not restarted (FAILED, breaker left open),
 * a callback of its process is past hang_timeout (DEGRADED). */
void zfi_node_crashed(zf_node *n, const char *why, uint64_t backoff_ns);
void zfi_node_restarted(zf_node *n, uint64_t restarts);
void zfi_node_isolated_failed(zf_node *n, const char *why, const char *why_not);
void zfi_node_hung(zf_node *n, const char *why);
/* Its process had to be killed to end (a fini past its bound): FAILED. */
void zfi_node_killed_at_stop(zf_node *n, const char *why);
/* A failed callback reported with its message (watchdog.c). */
void zfi_node_error_msg(zf_node *n, zf_err err, const char *what, const char *msg);
/* Degrade or recover for a reason (ZFI_DEG_*), logging it (lifecycle.c);
 * inst->mu held. A hang also wakes a stop waiting on rt->left. */
void zfi_node_degrade(zf_node *n, int bit, const char *reason);
void zfi_node_recover(zf_node *n, int bit, const char *what);

/* Process-isolated nodes (isolated.c). */
typedef struct zfi_iso_info {
    int pid; /* 0: no process now */
    uint64_t restarts, deaths, crashes, reclaimed_refs, reclaimed_bytes, copies;
    uint64_t callbacks;      /* completed in its processes */
    uint64_t lost;           /* inputs handed over, never processed */
    uint64_t killed_at_stop; /* stops that killed its process */
    char last_exit[256];
} zfi_iso_info;
/* Start n's process and load its code there: n gets the proxy's
 * declaration and ports. Problems go to diag. On failure n->iso may be
 * set: zfi_iso_free it. */
zf_err zfi_iso_create(zf_node *n, zf_diag *diag);
/* init in the process, bounded (killed past ten times hang_timeout). */
zf_err zfi_iso_init(zf_node *n);
/* fini in the process, bounded; the process ends, what it held is released. */
void zfi_iso_fini(zf_node *n);
void zfi_iso_free(zf_node *n);
/* The scheduler's gate: may another capsule be handed to it now? (If not,
 * the node is notified when it may.) */
bool zfi_iso_room(zf_node *n);
/* Every input ended: true once the process has drained what it had. */
bool zfi_iso_eos(zf_node *n);
/* The instance started or resumed (sources produce), or was suspended. */
void zfi_iso_start(zf_node *n);
void zfi_iso_suspend(zf_node *n);
/* A source: stop producing; wait (until deadline) for what it sent. */
void zfi_iso_stop_source(zf_node *n, uint64_t deadline);
void zfi_iso_stats(zf_node *n, zfi_iso_info *out);
/* The watchdog's look at a process's callback (timer thread, rt->mu held). */
void zfi_iso_watch(zf_node *n, uint64_t now);
/* At runtime destroy, after the workers stopped. */
void zfi_iso_table_free(zf_runtime *rt);
/* In a node host (node_host.c): send and allocate across the boundary. */
zf_err zfi_host_send(zf_node *n, unsigned port, zf_data **d, bool try_only, int64_t timeout_ns);
zf_err zfi_host_alloc(zf_node *n, size_t len, zf_data **out);
void zfi_host_wake(zf_node *n); /* zf_node_wake in a node host */

/* UUID v4 (uuid.c). */
void zfi_uuid_v4(char out[37]);

#endif
