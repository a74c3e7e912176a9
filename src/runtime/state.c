/* An instance's state machine: the one place its state changes.
 *
 *     CREATED -> RUNNING <-> SUSPENDED
 *     CREATED | RUNNING | SUSPENDED -> DRAINING -> DESTROYED
 *
 * Every change goes through zfi_instance_set_state, which refuses (as a
 * programmer error) a change the table does not allow, stamps the time,
 * wakes whoever waits on inst->cv and logs the change at INFO with its
 * reason. FAILED is reserved (docs/lifecycle.md): no change leads to it
 * yet. */
#include "runtime/runtime.h"

#include <stdio.h>

#define BIT(s) (1u << (s))

/* allowed[from]: the states `from` may change to. */
static const unsigned allowed[] = {
    [ZF_INSTANCE_CREATED] = BIT(ZF_INSTANCE_RUNNING) | BIT(ZF_INSTANCE_DRAINING),
    [ZF_INSTANCE_RUNNING] = BIT(ZF_INSTANCE_SUSPENDED) | BIT(ZF_INSTANCE_DRAINING),
    [ZF_INSTANCE_SUSPENDED] = BIT(ZF_INSTANCE_RUNNING) | BIT(ZF_INSTANCE_DRAINING),
    [ZF_INSTANCE_DRAINING] = BIT(ZF_INSTANCE_DESTROYED),
    [ZF_INSTANCE_DESTROYED] = 0,
    [ZF_INSTANCE_FAILED] = 0,
};

void zfi_instance_state_init(zf_instance *inst)
{
    inst->state = ZF_INSTANCE_CREATED;
    inst->state_since_ns = zf_clock_ns();
}

static bool change_allowed(zf_instance_state from, zf_instance_state to)
{
    return (unsigned)from < ZFI_ARRAY_LEN(allowed) && (unsigned)to < 32 &&
           (allowed[from] & BIT(to));
}

void zfi_instance_set_state(zf_instance *inst, zf_instance_state to, const char *why)
{
    zf_instance_state from = inst->state;
    if (!change_allowed(from, to))
        zfi_fatal("instance", "%s: no change from %s to %s (%s)", inst->uuid,
                  zf_instance_state_name(from), zf_instance_state_name(to), why);
    inst->state = to;
    inst->state_since_ns = zf_clock_ns();
    pthread_cond_broadcast(&inst->cv);
    zfi_log_at(&inst->origin, ZF_LOG_INFO, "instance", "%s: %s -> %s: %s", inst->uuid,
               zf_instance_state_name(from), zf_instance_state_name(to), why);
}

zf_instance_state zf_instance_state_get(const zf_instance *cinst)
{
    zf_instance *inst = (zf_instance *)cinst;
    pthread_mutex_lock(&inst->mu);
    zf_instance_state s = inst->state;
    pthread_mutex_unlock(&inst->mu);
    return s;
}
