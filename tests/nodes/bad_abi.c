/* A node built for another ABI version: the loader must refuse it. */
#include <zflow/zflow.h>

static const zf_port_decl inputs[] = {{"in", "bytes"}};

static const zf_node_decl decl = {
    .abi = 999,
    .kind = ZF_SINK,
    .inputs = inputs,
    .n_inputs = 1,
};

ZF_NODE_EXPORT(decl)
