/* zf-bench's sink: counts capsules, records latency in lockstep mode (and
 * reads the clock only then). */
#include "bench_shared.h"

#include <zflow/zflow.h>

static zf_err sink_init(zf_node *n, void **state)
{
    int64_t addr = 0;
    if (zf_config_int(zf_node_config(n), "shared", 0, &addr) != ZF_OK || !addr) {
        zf_node_set_error(n, "bench nodes run inside zf-bench only");
        return ZF_EINVAL;
    }
    *state = (void *)(uintptr_t)addr;
    return ZF_OK;
}

static zf_err sink_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    bench_shared *b = state;
    (void)n;
    (void)port;
    uint64_t k = atomic_load_explicit(&b->received, memory_order_relaxed);
    /* The clock only where a latency is recorded: free-running, a read per
     * message was half the clock reads the stage figure counted
     * (32 ns each on the EPYC VM), none of them the runtime's. */
    if (b->lockstep && k < b->max_samples)
        b->lat_ns[k] = (double)(zf_clock_ns() - zf_data_timestamp(*d));
    atomic_store_explicit(&b->received, k + 1, memory_order_release);
    if (b->lockstep) {
        atomic_store_explicit(&b->ack, (uint32_t)(k + 1), memory_order_release);
        zf_node_wake(atomic_load(&b->src));
    }
    return ZF_OK;
}

static const zf_port_decl inputs[] = {{"in", NULL}};
static const zf_node_decl decl = {.abi = ZF_ABI_VERSION,
                                  .kind = ZF_SINK,
                                  .name = "bench_sink",
                                  .inputs = inputs,
                                  .n_inputs = 1,
                                  .init = sink_init,
                                  .on_input = sink_on_input};
ZF_NODE_EXPORT(decl)
