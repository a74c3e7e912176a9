/* Containment: the watchdog and the breaker.
 *
 * A node whose callback has not returned within its hang_timeout, or that
 * returned errors max_errors times within error_window, is DEGRADED: the
 * breaker opens on its inputs (they shed load, dropping their oldest
 * capsules, so producers upstream keep their rate even on `block` links)
 * and, for a hang, the stuck worker is replaced. When the callback returns
 * (or errors stop for a window) the breaker closes and the node is RUNNING
 * again. This file decides when; the changes themselves (states, breakers)
 * are the node lifecycle's (lifecycle.c). With the scheduler and the timer
 * it forms the one circle of src/runtime (scripts/imports.sh). */
#include "runtime/runtime.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_ERRORS      5u
#define DEFAULT_ERROR_WINDOW_NS 1000000000LL

void zfi_watchdog_scan(zf_instance *inst, uint64_t now)
{
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        if (n->proxy) { /* its callbacks run in its process */
            n->proxy->watch(n, now);
            continue;
        }
        uint64_t w = atomic_load(&n->cb_word);
        int64_t limit = n->hang_timeout_ns ? n->hang_timeout_ns : ZFI_DEFAULT_HANG_TIMEOUT_NS;
        /* The start is the timer's clock when the callback began: up to a
         * tick before the real start, so a tick more is allowed (a hang is
         * seen between hang_timeout and hang_timeout + 2 ticks). */
        if (!w || (w & (ZFI_CB_HUNG | ZFI_CB_ABANDONED)) || now < w ||
            now - w <= (uint64_t)limit + ZFI_TICK_NS)
            continue;
        uint64_t start = w;
        char why[160];
        snprintf(why, sizeof why, "%s has not returned for %.1f s (hang_timeout %.1f s)",
                 n->decl->kind == ZF_SOURCE ? "produce" : "on_input", (double)(now - start) / 1e9,
                 (double)limit / 1e9);
        /* Mark and degrade under the lock the returning worker takes to
         * recover: it cannot recover between the two. */
        pthread_mutex_lock(&inst->mu);
        bool marked = zfi_node_mark_hung(n, start);
        if (marked)
            zfi_node_degrade(n, ZFI_DEG_HUNG, why);
        pthread_mutex_unlock(&inst->mu);
        if (!marked)
            continue; /* that callback returned meanwhile */
        /* Its thread is left in the node's code, may burn a core: shown
         * with the abandoned threads until it returns (rt->mu is held: the
         * returning worker drops the entry only after this). */
        zfi_abandoned_add_locked(n, "callback", n->tid);
        zfi_worker_add_locked(inst->rt);
    }
}

void zfi_node_returned_from_hang(zf_node *n)
{
    if (!n->proxy) /* the watchdog listed this thread (an isolated node's is its child) */
        zfi_abandoned_drop(n, zfi_tid());
    pthread_mutex_lock(&n->inst->mu);
    zfi_node_recover(n, ZFI_DEG_HUNG, "the stuck callback returned");
    pthread_mutex_unlock(&n->inst->mu);
}

void zfi_node_error(zf_node *n, zf_err err, const char *what)
{
    zfi_node_error_msg(n, err, what, n->error_msg);
}

void zfi_node_error_msg(zf_node *n, zf_err err, const char *what, const char *msg)
{
    uint64_t now = zf_clock_ns();
    atomic_fetch_add_explicit(&n->errors, 1, memory_order_relaxed);
    uint32_t max = n->max_errors ? n->max_errors : DEFAULT_MAX_ERRORS;
    int64_t window = n->error_window_ns ? n->error_window_ns : DEFAULT_ERROR_WINDOW_NS;
    /* The ring holds the last `max` error times; the node's callbacks run
     * on one worker at a time, so no lock is needed for it. */
    n->err_times[n->err_head] = now;
    n->err_head = (n->err_head + 1) % max;
    n->last_error_ns = now;
    uint64_t oldest = n->err_times[n->err_head]; /* max errors ago */
    if (atomic_load(&n->errors) == 1 || zfi_log_enabled(ZF_LOG_DEBUG))
        zfi_log_at(&n->origin, ZF_LOG_WARN, "node", "instance %s: node '%s' %s failed: %s%s%s",
                   n->inst->uuid, n->desc->id, what, zf_errname(err), msg[0] ? ": " : "", msg);
    if (oldest && now - oldest <= (uint64_t)window &&
        !(atomic_load(&n->degraded) & ZFI_DEG_ERRORS)) {
        char why[200];
        snprintf(why, sizeof why, "%u errors within %.1f s (last: %s%s%.80s)", max,
                 (double)window / 1e9, zf_errname(err), msg[0] ? ": " : "", msg);
        pthread_mutex_lock(&n->inst->mu);
        zfi_node_degrade(n, ZFI_DEG_ERRORS, why);
        pthread_mutex_unlock(&n->inst->mu);
    }
}

void zfi_node_success(zf_node *n, uint64_t now)
{
    if (!(atomic_load(&n->degraded) & ZFI_DEG_ERRORS))
        return;
    int64_t window = n->error_window_ns ? n->error_window_ns : DEFAULT_ERROR_WINDOW_NS;
    if (now - n->last_error_ns < (uint64_t)window)
        return;
    pthread_mutex_lock(&n->inst->mu);
    zfi_node_recover(n, ZFI_DEG_ERRORS, "no error for a whole error_window");
    pthread_mutex_unlock(&n->inst->mu);
}
