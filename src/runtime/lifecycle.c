/* A node's lifecycle, in one file: its states (RUNNING, DEGRADED, DONE,
 * FAILED) with their reasons, degrading and recovering (the breaker on its
 * inputs), end of stream (closing its outputs, a sink done), init and fini
 * bounded like callbacks, and the threads left behind in node code.
 *
 * The scheduler, the watchdog, stop and the isolated nodes' proxy call in
 * here; this file calls none of them (a node that runs elsewhere is reached
 * through n->proxy, set by the instance that created it).
 *
 * init and fini each run on a thread of their own, and the caller waits at
 * most ten times the node's hang_timeout (10 s by default). One that has
 * not returned by then is abandoned: its thread is left behind (recorded
 * with the runtime's abandoned threads), the node is never freed, and the
 * caller goes on (the instance fails to create, or the stop completes).
 * Abandoned threads of every kind are listed by zf_runtime_abandoned: those
 * left in init or fini, callbacks abandoned at stop, and callbacks whose
 * worker the watchdog replaced (listed while they stay stuck, dropped from
 * the list when they return). */
#include "runtime/runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ZFI_TLS int zfi_tls_tid;

int zfi_tid_slow(void)
{
    zfi_tls_tid = (int)syscall(SYS_gettid);
    return zfi_tls_tid;
}

/* ---- states ---- */

void zfi_node_set_state(zf_node *n, zf_node_state s, const char *fmt, ...)
{
    /* inst->mu held */
    n->node_state = s;
    n->state_since_ns = zf_clock_ns();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->reason, sizeof n->reason, fmt, ap);
    va_end(ap);
}

static void set_breakers(zf_node *n, bool open)
{
    for (size_t i = 0; i < n->n_in; i++)
        zfi_link_set_breaker(n->in[i], open);
}

/* Apply a change of the degraded bits; inst->mu held. */
void zfi_node_degrade(zf_node *n, int bit, const char *reason)
{
    int before = atomic_fetch_or(&n->degraded, bit);
    if (before & bit)
        return;
    if (n->node_state == ZF_NODE_RUNNING || n->node_state == ZF_NODE_DEGRADED) {
        if (!before)
            atomic_fetch_add(&n->degraded_count, 1);
        zfi_node_set_state(n, ZF_NODE_DEGRADED, "%s", reason);
    }
    zfi_log_at(&n->origin, ZF_LOG_WARN, "watchdog",
               "instance %s: node '%s' DEGRADED: %s; its inputs shed load", n->inst->uuid,
               n->desc->id, reason);
    if (!before)
        set_breakers(n, true);
    if (bit & ZFI_DEG_HUNG) /* a stop waiting for its callback may give up now */
        zfi_evc_notify(&n->inst->rt->left);
}

void zfi_node_recover(zf_node *n, int bit, const char *what)
{
    int before = atomic_fetch_and(&n->degraded, ~bit);
    if (!(before & bit) || (before & ~bit))
        return; /* not degraded for this reason, or still for another */
    if (n->node_state == ZF_NODE_DEGRADED)
        zfi_node_set_state(n, ZF_NODE_RUNNING, "%s", "");
    set_breakers(n, false);
    zfi_log_at(&n->origin, ZF_LOG_INFO, "watchdog", "instance %s: node '%s' RUNNING again (%s)",
               n->inst->uuid, n->desc->id, what);
}

/* ---- end of stream ---- */

void zfi_node_close_outputs(zf_node *n)
{
    pthread_mutex_lock(&n->inst->mu);
    bool was = n->outputs_closed;
    n->outputs_closed = true;
    if (n->done && n->node_state == ZF_NODE_RUNNING)
        zfi_node_set_state(n, ZF_NODE_DONE, "%s", "end of stream");
    pthread_mutex_unlock(&n->inst->mu);
    if (was)
        return;
    for (size_t o = 0; o < n->n_out; o++)
        for (size_t k = 0; k < n->out[o].n; k++)
            zf_link_close(n->out[o].links[k]);
}

void zfi_instance_sink_done(zf_instance *inst)
{
    pthread_mutex_lock(&inst->mu);
    if (inst->sinks_left)
        inst->sinks_left--;
    pthread_cond_broadcast(&inst->cv);
    pthread_mutex_unlock(&inst->mu);
}

/* Every input saw end of stream: the node is done; end of stream flows on.
 * (Stop may mark a hung node done concurrently: once only.) */
void zfi_node_finish(zf_node *n)
{
    if (atomic_exchange(&n->done, true))
        return;
    zfi_node_close_outputs(n);
    if (n->decl->kind == ZF_SINK)
        zfi_instance_sink_done(n->inst);
}

/* ---- the abandoned threads ---- */

/* The entry listing thread tid for n, or NULL; rt->mu held. */
static zfi_abandoned **abandoned_find(zf_runtime *rt, const zf_node *n, int tid)
{
    for (zfi_abandoned **p = &rt->abandoned; *p; p = &(*p)->next)
        if ((*p)->tid == tid && !strcmp((*p)->instance, n->inst->uuid) &&
            !strcmp((*p)->node, n->desc->id))
            return p;
    return NULL;
}

/* rt->mu held. A thread already listed for n (the watchdog recorded a
 * hung callback, then stop abandoned it) is listed once. The newest is
 * first. */
void zfi_abandoned_add_locked(zf_node *n, const char *in, int tid)
{
    zf_runtime *rt = n->inst->rt;
    if (tid && abandoned_find(rt, n, tid))
        return;
    zfi_abandoned *a = zfi_calloc(1, sizeof *a);
    if (!a)
        return;
    snprintf(a->node, sizeof a->node, "%s", n->desc->id);
    snprintf(a->instance, sizeof a->instance, "%s", n->inst->uuid);
    snprintf(a->name, sizeof a->name, "%s", n->inst->name ? n->inst->name : "");
    snprintf(a->in, sizeof a->in, "%s", in);
    a->tid = tid;
    a->since_ns = zf_clock_ns();
    a->next = rt->abandoned;
    rt->abandoned = a;
}

void zfi_abandoned_add(zf_node *n, const char *in, int tid)
{
    zf_runtime *rt = n->inst->rt;
    pthread_mutex_lock(&rt->mu);
    zfi_abandoned_add_locked(n, in, tid);
    pthread_mutex_unlock(&rt->mu);
}

/* Thread tid came back: no longer listed (freed: zf_runtime_abandoned
 * copies what it hands out, so a node that hangs and returns again and
 * again does not grow the list). */
void zfi_abandoned_drop(zf_node *n, int tid)
{
    zf_runtime *rt = n->inst->rt;
    pthread_mutex_lock(&rt->mu);
    zfi_abandoned **p = abandoned_find(rt, n, tid);
    if (p) {
        zfi_abandoned *a = *p;
        *p = a->next;
        free(a);
    }
    pthread_mutex_unlock(&rt->mu);
}

/* CPU time of thread tid of this process (ns); false if it is gone. */
static bool thread_cpu(int tid, uint64_t *ns)
{
    clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6u); /* the kernel's per-thread clock */
    struct timespec ts;
    if (clock_gettime(clk, &ts) != 0)
        return false;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return true;
}

zf_err zf_runtime_abandoned(zf_runtime *rt, zf_abandoned_thread **out, size_t *n)
{
    if (!rt || !out || !n)
        return zfi_error(ZF_EINVAL, "zf_runtime_abandoned: NULL argument");
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&rt->mu);
    size_t count = 0;
    for (zfi_abandoned *a = rt->abandoned; a; a = a->next)
        count++;
    /* One allocation: the array, then a copy of each entry (its strings). */
    zf_abandoned_thread *v =
        count ? zfi_calloc(1, count * (sizeof *v + sizeof(zfi_abandoned))) : NULL;
    if (count && !v) {
        pthread_mutex_unlock(&rt->mu);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    zfi_abandoned *copies = (zfi_abandoned *)(void *)(v + count);
    size_t i = count;
    for (zfi_abandoned *a = rt->abandoned; a; a = a->next) {
        zfi_abandoned *c = &copies[--i];
        *c = *a;
        zf_abandoned_thread *t = &v[i]; /* oldest first */
        t->node = c->node;
        t->instance = c->instance;
        t->instance_name = c->name;
        t->in = c->in;
        t->tid = c->tid;
        t->since_ns = c->since_ns;
        t->alive = thread_cpu(c->tid, &t->cpu_ns);
    }
    pthread_mutex_unlock(&rt->mu);
    *out = v;
    *n = count;
    return ZF_OK;
}

void zfi_abandoned_free_all(zf_runtime *rt)
{
    while (rt->abandoned) {
        zfi_abandoned *a = rt->abandoned;
        rt->abandoned = a->next;
        free(a);
    }
}

/* ---- bounded init and fini ---- */

typedef struct lc_call {
    zf_node *n;
    bool fini;
    zf_err result;
    void *state;
    int tid;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;       /* under mu */
    atomic_int refs; /* the caller's and the thread's: the last frees */
} lc_call;

static void lc_unref(lc_call *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static void *lc_main(void *arg)
{
    lc_call *c = arg;
    zf_node *n = c->n;
    zfi_thread_name("zf-lc:%s", n->desc->id);
    pthread_mutex_lock(&c->mu);
    c->tid = zfi_tid();
    pthread_mutex_unlock(&c->mu);
    zfi_ctx saved = zfi_node_enter(n);
    zf_err e = ZF_OK;
    void *state = n->state;
    if (c->fini)
        n->decl->fini(state);
    else
        e = n->decl->init(n, &state);
    zfi_node_leave(saved);
    pthread_mutex_lock(&c->mu);
    c->result = e;
    c->state = state;
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    lc_unref(c);
    return NULL;
}

int64_t zfi_lifecycle_bound_ns(const zf_node *n)
{
    int64_t h = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
    return h > INT64_MAX / 10 ? INT64_MAX : 10 * h;
}

bool zfi_lifecycle_call(zf_node *n, bool fini, zf_err *result)
{
    *result = ZF_OK;
    lc_call *c = zfi_calloc(1, sizeof *c);
    if (!c) {
        *result = zfi_error(ZF_ENOMEM, "out of memory");
        return true;
    }
    c->n = n;
    c->fini = fini;
    pthread_mutex_init(&c->mu, NULL);
    zfi_cond_init_monotonic(&c->cv);
    atomic_init(&c->refs, 2);
    pthread_t t;
    int err = pthread_create(&t, NULL, lc_main, c);
    if (err != 0) {
        /* No thread to spare: run it here, unbounded, rather than not at all. */
        zfi_log_at(&n->origin, ZF_LOG_WARN, "instance",
                   "node '%s': cannot start a thread for %s (%s): running "
                   "it unbounded",
                   n->desc->id, fini ? "fini" : "init", strerror(err));
        atomic_store(&c->refs, 1);
        lc_main(c);
        return true;
    }
    uint64_t deadline = zf_clock_ns() + (uint64_t)zfi_lifecycle_bound_ns(n);
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000u),
                          .tv_nsec = (long)(deadline % 1000000000u)};
    pthread_mutex_lock(&c->mu);
    while (!c->done && pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
        ;
    bool done = c->done;
    int tid = c->tid;
    if (done) {
        *result = c->result;
        if (!fini)
            n->state = c->state;
    }
    pthread_mutex_unlock(&c->mu);
    if (done)
        pthread_join(t, NULL); /* returned: gone in a moment, leaves no thread behind */
    else
        pthread_detach(t);
    lc_unref(c);
    if (!done) {
        atomic_store(&n->abandoned, true);
        zfi_abandoned_add(n, fini ? "fini" : "init", tid);
    }
    return done;
}

/* ---- fini of every node ---- */

static void fini_node(zf_node *n, zf_stop_report *r)
{
    if (n->proxy) { /* fini in its process, which then ends (killed past its bound) */
        n->proxy->fini(n);
        n->initialized = false;
        return;
    }
    if (!n->initialized || !n->decl->fini)
        return;
    zf_err ignored;
    if (!zfi_lifecycle_call(n, true, &ignored)) {
        double s = (double)zfi_lifecycle_bound_ns(n) / 1e9;
        n->fini_abandoned = true;
        if (r)
            r->nodes_abandoned++;
        pthread_mutex_lock(&n->inst->mu);
        zfi_node_set_state(n, ZF_NODE_FAILED,
                           "abandoned at stop: fini has not returned after %.1f s", s);
        pthread_mutex_unlock(&n->inst->mu);
        zfi_log(ZF_LOG_WARN, "instance",
                "%s: node '%s': fini has not returned after %.1f s: abandoned (its thread is left "
                "behind); the stop goes on",
                n->inst->uuid, n->desc->id, s);
        return;
    }
    n->initialized = false;
}

/* Fini every node in reverse topological order (sinks first). */
void zfi_instance_fini_nodes(zf_instance *inst, zf_stop_report *r)
{
    for (size_t k = inst->n_nodes; k-- > 0;) {
        zf_node *n = inst->nodes[inst->topo[k]];
        if (!atomic_load(&n->abandoned))
            fini_node(n, r);
    }
}

/* ---- the crash context ---- */

static size_t put(char *buf, size_t len, size_t at, const char *s)
{
    while (s && *s && at + 1 < len)
        buf[at++] = *s++;
    return at;
}

size_t zf_crash_context(char *buf, size_t len)
{
    if (!buf || !len)
        return 0;
    const zf_node *n = zfi_thread_ctx.node;
    size_t k = 0;
    if (n && n->desc && n->inst) {
        k = put(buf, len, k, "node '");
        k = put(buf, len, k, n->desc->id);
        k = put(buf, len, k, "' of instance ");
        k = put(buf, len, k, n->inst->uuid);
        k = put(buf, len, k, " (");
        k = put(buf, len, k, n->inst->name);
        k = put(buf, len, k, ")");
    }
    buf[k] = '\0';
    return k;
}

/* ---- process-isolated nodes: death, restart, failure ---- */

void zfi_node_crashed(zf_node *n, const char *why, uint64_t backoff_ns)
{
    char reason[sizeof n->reason]; /* (the why may be long: the backoff must fit) */
    snprintf(reason, sizeof reason, "its process %s; restarting in %.0f ms", why,
             (double)backoff_ns / 1e6);
    pthread_mutex_lock(&n->inst->mu);
    zfi_node_degrade(n, ZFI_DEG_DOWN, reason);
    if (n->node_state == ZF_NODE_DEGRADED) /* a second death: the new reason */
        zfi_node_set_state(n, ZF_NODE_DEGRADED, "%s", reason);
    pthread_mutex_unlock(&n->inst->mu);
}

void zfi_node_restarted(zf_node *n, uint64_t restarts)
{
    char what[64];
    snprintf(what, sizeof what, "its process restarted, restart %llu",
             (unsigned long long)restarts);
    pthread_mutex_lock(&n->inst->mu);
    zfi_node_recover(n, ZFI_DEG_DOWN | ZFI_DEG_HUNG, what);
    pthread_mutex_unlock(&n->inst->mu);
}

void zfi_node_isolated_failed(zf_node *n, const char *why, const char *why_not)
{
    pthread_mutex_lock(&n->inst->mu);
    int before = atomic_fetch_or(&n->degraded, ZFI_DEG_DOWN);
    if (!before) {
        atomic_fetch_add(&n->degraded_count, 1);
        for (size_t i = 0; i < n->n_in; i++)
            zfi_link_set_breaker(n->in[i], true); /* its inputs shed load for good */
    }
    zfi_node_set_state(n, ZF_NODE_FAILED, "its process %s; not restarted: %s", why, why_not);
    atomic_store(&n->failed_for_good, true);
    n->inst->failed_gen++;
    pthread_cond_broadcast(&n->inst->cv); /* a stop's drain cuts it out (stop.c) */
    pthread_mutex_unlock(&n->inst->mu);
    zfi_log_at(&n->origin, ZF_LOG_ERROR, "isolation",
               "instance %s: node '%s' FAILED: its process %s; %s", n->inst->uuid, n->desc->id, why,
               why_not);
}

void zfi_node_killed_at_stop(zf_node *n, const char *why)
{
    pthread_mutex_lock(&n->inst->mu);
    zfi_node_set_state(n, ZF_NODE_FAILED, "at stop: its process %s", why);
    pthread_mutex_unlock(&n->inst->mu);
}

void zfi_node_hung(zf_node *n, const char *why)
{
    pthread_mutex_lock(&n->inst->mu);
    zfi_node_degrade(n, ZFI_DEG_HUNG, why);
    pthread_mutex_unlock(&n->inst->mu);
}
