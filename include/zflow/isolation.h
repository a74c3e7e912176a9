/* zflow: process-isolated nodes (docs/isolation.md).
 *
 * A node with `isolation: process` (or every node, with
 * zf_instance_options.isolate_all, `zfctl run --isolate`, `zfd --isolate`)
 * runs in a child process: the node host, zf-node-host, installed with
 * zflow (in <libexecdir>/zflow; ZF_NODE_HOST overrides where the runtime
 * looks). Capsules cross as handles into the runtime's pool, which the
 * child maps: no payload byte is copied, except memory wrapped with
 * zf_data_wrap (or static memory), copied into the pool once. */
#ifndef ZFLOW_ISOLATION_H
#define ZFLOW_ISOLATION_H

#include <zflow/base.h>
#include <zflow/config.h>
#include <zflow/flow.h>
#include <zflow/node.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The node host's whole program: zf-node-host's main calls it. It expects
 *  the control socket the runtime passes as fd 3, loads the one node the
 *  runtime describes, runs it until told to finish or until the runtime is
 *  gone, and returns the process's exit status (it may also end the
 *  process itself). Not for other callers. */
ZF_EXPORT int zf_node_host_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
