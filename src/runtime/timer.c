/* The timer thread: ticks periodic sources and runs the watchdog.
 *
 * It wakes at the earliest source deadline or every ZFI_TICK_NS, whichever
 * comes first, and each time stores the time in rt->now_ns, the clock
 * callbacks are stamped with. A source that falls behind skips ticks rather than bursting
 * to catch up (a camera does not deliver missed frames later). */
#include "runtime/runtime.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void tick_sources(zf_instance *inst, uint64_t now, uint64_t *next)
{
    pthread_mutex_lock(&inst->mu);
    bool running = inst->state == ZF_INSTANCE_RUNNING;
    pthread_mutex_unlock(&inst->mu);
    if (!running || atomic_load(&inst->sources_stopped))
        return;
    for (size_t i = 0; i < inst->n_nodes; i++) {
        zf_node *n = inst->nodes[i];
        int64_t period = n->desc->period_ns;
        if (n->decl->kind != ZF_SOURCE || !n->decl->produce)
            continue;
        if (period <= 0) {
            uint64_t wake = atomic_load(&n->wake_at_ns);
            if (wake && now >= wake) {
                atomic_store(&n->wake_at_ns, 0);
                zfi_node_notify(n);
            } else if (wake && wake < *next) {
                *next = wake;
            }
            continue;
        }
        if (!n->next_due_ns)
            n->next_due_ns = now;
        if (now >= n->next_due_ns) {
            atomic_store(&n->ticks, 1);
            zfi_node_notify(n);
            n->next_due_ns += (uint64_t)period;
            if (n->next_due_ns <= now)
                n->next_due_ns = now + (uint64_t)period; /* fell behind: skip */
        }
        if (n->next_due_ns < *next)
            *next = n->next_due_ns;
    }
}

static void *timer_main(void *arg)
{
    zf_runtime *rt = arg;
    zfi_thread_name("zf-timer");
    pthread_mutex_lock(&rt->mu);
    while (!rt->timer_stop) {
        uint64_t now = zf_clock_ns();
        atomic_store_explicit(&rt->now_ns, now, memory_order_relaxed);
        uint64_t next = now + ZFI_TICK_NS;
        for (zf_instance *inst = rt->instances; inst; inst = inst->next_in_rt) {
            tick_sources(inst, now, &next);
            zfi_watchdog_scan(inst, now);
            zfi_rates_sample(inst, now);
        }
        zfi_sched_tick(rt);
        struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
                              .tv_nsec = (long)(next % 1000000000u)};
        pthread_cond_timedwait(&rt->timer_cv, &rt->mu, &ts);
    }
    pthread_mutex_unlock(&rt->mu);
    return NULL;
}

zf_err zfi_timer_start(zf_runtime *rt)
{
    atomic_store(&rt->now_ns, zf_clock_ns());
    int e = pthread_create(&rt->timer_thread, NULL, timer_main, rt);
    if (e != 0)
        return zfi_error(ZF_ESYS, "cannot start the timer thread: %s", strerror(e));
    rt->timer_started = true;
    return ZF_OK;
}

void zfi_timer_stop(zf_runtime *rt)
{
    if (!rt->timer_started)
        return;
    pthread_mutex_lock(&rt->mu);
    rt->timer_stop = true;
    pthread_cond_broadcast(&rt->timer_cv);
    pthread_mutex_unlock(&rt->mu);
    pthread_join(rt->timer_thread, NULL);
    rt->timer_started = false;
}

void zfi_timer_kick(zf_runtime *rt)
{
    pthread_mutex_lock(&rt->mu);
    pthread_cond_broadcast(&rt->timer_cv);
    pthread_mutex_unlock(&rt->mu);
}
