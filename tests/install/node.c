/* A node library built by a consumer with the installed package's
 * zf_node(): a sink that counts what it receives. */
#include <zflow/zflow.h>

static zf_err count(void *state, zf_node *n, unsigned port, zf_data **d)
{
    (void)state;
    (void)n;
    (void)port;
    (void)d;
    return ZF_OK;
}

static const zf_port_decl in[] = {{"in", "any"}};
static const zf_node_decl decl = {
    .abi = ZF_ABI_VERSION, .kind = ZF_SINK, .inputs = in, .n_inputs = 1, .on_input = count};
ZF_NODE_EXPORT(decl)
