/* The runtime object: its workers (sched.c), its timer and watchdog thread
 * (timer.c), the instances it hosts. The top layer of src/runtime: it uses
 * the instances (instance.c) and the scheduler; nothing below calls it
 * (docs/architecture.md, "The runtime's layers"). */
#include "runtime/runtime.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zf_err zf_runtime_create(const zf_runtime_options *opt, zf_runtime **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_runtime_create: out is NULL");
    *out = NULL;
    /* aligned: now_ns and left are on lines of their own */
    zf_runtime *rt = aligned_alloc(ZFI_CACHELINE, sizeof *rt);
    if (!rt)
        return zfi_error(ZF_ENOMEM, "zf_runtime_create: out of memory");
    memset(rt, 0, sizeof *rt);
    zfi_evc_init(&rt->left);
    rt->target_workers = opt && opt->workers ? opt->workers : zfi_cpus_usable();
    rt->worker_name = zfi_strdup(opt && opt->worker ? opt->worker : "local");
    zfi_lock_init(&rt->q_mu);
    pthread_mutex_init(&rt->mu, NULL);
    zfi_cond_init_monotonic(&rt->cv);
    zfi_cond_init_monotonic(&rt->timer_cv);
    zfi_log_set_origin_lookup(zfi_node_log_origin);
    zfi_sched_init_once();
    zf_err err = zfi_workers_start(rt);
    if (err == ZF_OK)
        err = zfi_timer_start(rt);
    if (err != ZF_OK) {
        zf_runtime_destroy(rt);
        return err;
    }
    zfi_log(ZF_LOG_DEBUG, "runtime", "started %u workers", rt->target_workers);
    *out = rt;
    return ZF_OK;
}

void zf_runtime_destroy(zf_runtime *rt)
{
    if (!rt)
        return;
    for (;;) {
        pthread_mutex_lock(&rt->mu);
        zf_instance *inst = rt->instances;
        pthread_mutex_unlock(&rt->mu);
        if (!inst)
            break;
        zfi_log(ZF_LOG_WARN, "runtime", "instance %s still alive at runtime destroy: stopping it",
                inst->uuid);
        zf_instance_destroy(inst);
    }
    zfi_timer_stop(rt);
    zfi_workers_stop(rt);
    zfi_iso_table_free(rt);
    free(rt->q);
    free(rt->worker_name);
    zfi_abandoned_free_all(rt);
    pthread_cond_destroy(&rt->timer_cv);
    pthread_cond_destroy(&rt->cv);
    /* Threads stuck in abandoned nodes never touch the runtime again, but
     * they were counted under rt->mu: leave the mutexes be. */
    if (rt->stuck_workers == 0)
        pthread_mutex_destroy(&rt->mu);
    free(rt);
}
