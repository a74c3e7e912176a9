/* zf-bench's operator: forwards each capsule (the same one: no copy). */
#include <zflow/zflow.h>

static zf_err op_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    (void)state;
    (void)port;
    return zf_send(n, 0, d);
}

static const zf_port_decl inputs[] = {{"in", NULL}};
static const zf_port_decl outputs[] = {{"out", NULL}};
static const zf_node_decl decl = {.abi = ZF_ABI_VERSION,
                                  .kind = ZF_OPERATOR,
                                  .name = "bench_op",
                                  .inputs = inputs,
                                  .n_inputs = 1,
                                  .outputs = outputs,
                                  .n_outputs = 1,
                                  .on_input = op_on_input};
ZF_NODE_EXPORT(decl)
