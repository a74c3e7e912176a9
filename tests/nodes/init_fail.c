/* A sink whose init fails with a message of its own. */
#include <zflow/zflow.h>

static zf_err fail_init(zf_node *n, void **state)
{
    (void)state;
    zf_node_set_error(n, "cannot open /dev/video7: no such device");
    return ZF_ENOTFOUND;
}

static zf_err on_input(void *s, zf_node *n, unsigned p, zf_data **d)
{
    (void)s;
    (void)n;
    (void)p;
    (void)d;
    return ZF_OK;
}

static const zf_port_decl inputs[] = {{"in", "bytes"}};

static const zf_node_decl decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SINK,
    .inputs = inputs,
    .n_inputs = 1,
    .init = fail_init,
    .on_input = on_input,
};

ZF_NODE_EXPORT(decl)
