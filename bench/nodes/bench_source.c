/* zf-bench's source: capsules of `size` bytes from the pool, stamped.
 * In lockstep mode it sends the next only once the previous capsule
 * reached the sink, so latency is measured without queueing. */
#include "bench_shared.h"

#include <zflow/zflow.h>

#include <stdlib.h>

static zf_err src_init(zf_node *n, void **state)
{
    int64_t addr = 0;
    if (zf_config_int(zf_node_config(n), "shared", 0, &addr) != ZF_OK || !addr) {
        zf_node_set_error(n, "bench nodes run inside zf-bench only");
        return ZF_EINVAL;
    }
    bench_shared *b = (void *)(uintptr_t)addr;
    zf_err e = b->reserve ? zf_data_reserve(n, (size_t)b->size, (size_t)b->reserve) : ZF_OK;
    if (e != ZF_OK) {
        zf_node_set_error(n, "reserving %d capsules: %s", (int)b->reserve, zf_last_error());
        return e;
    }
    atomic_store(&b->src, n);
    *state = b;
    return ZF_OK;
}

static zf_err src_produce(void *state, zf_node *n)
{
    bench_shared *b = state;
    if (atomic_load(&b->stop))
        return ZF_OK;
    /* Lockstep: nothing to send until the previous capsule reached the
     * sink, which then wakes this source (zf_node_wake): no worker waits
     * here, and the sink's worker runs the next produce itself. */
    if (b->lockstep && atomic_load_explicit(&b->ack, memory_order_acquire) <
                           (uint32_t)atomic_load_explicit(&b->sent, memory_order_relaxed))
        return ZF_EAGAIN;
    zf_data *d = NULL;
    zf_err e = zf_data_alloc(n, (size_t)b->size, &d);
    if (e != ZF_OK)
        return e;
    /* zf_send would stamp it too (a capsule is stamped when first sent);
     * stamped here, after the allocation as zf-bench hop does (d is
     * unique: setting it cannot fail) */
    if (b->lockstep)
        ZF_IGNORE(zf_data_set_timestamp(d, zf_clock_ns()));
    if (b->lockstep) /* (one writer: a plain store) */
        atomic_store_explicit(&b->sent, atomic_load_explicit(&b->sent, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    return zf_send(n, 0, &d);
}

static const zf_port_decl outputs[] = {{"out", NULL}};
static const zf_node_decl decl = {.abi = ZF_ABI_VERSION,
                                  .kind = ZF_SOURCE,
                                  .name = "bench_source",
                                  .outputs = outputs,
                                  .n_outputs = 1,
                                  .init = src_init,
                                  .produce = src_produce};
ZF_NODE_EXPORT(decl)
