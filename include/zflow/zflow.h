/*
 * zflow — a zero-copy dataflow runtime: the public C API.
 *
 * This header includes them all; each can be included on its own:
 *
 *   zflow/version.h   the version (ZF_VERSION_*)
 *   zflow/base.h      conventions, errors and their detail, zf_free, logging,
 *                     the clock, the opaque types
 *   zflow/data.h      capsules, the pool, links             (node authors,
 *   zflow/config.h    the configuration tree                 embedders)
 *   zflow/node.h      the node ABI, a node's calls, hosts   (node authors)
 *   zflow/flow.h      descriptors, runtime, instances       (embedders)
 *   zflow/control.h   the daemon's protocol, client, server (zfctl, zfd)
 *   zflow/json.h      the JSON writer and parser
 *
 * docs/api.md says why the API is cut this way; zflow/base.h has the
 * conventions every header follows (ownership, failure, error detail).
 */
#ifndef ZFLOW_H
#define ZFLOW_H

#include <zflow/base.h>
#include <zflow/cluster.h>
#include <zflow/config.h>
#include <zflow/control.h>
#include <zflow/data.h>
#include <zflow/flow.h>
#include <zflow/isolation.h>
#include <zflow/json.h>
#include <zflow/node.h>
#include <zflow/ops.h>
/* Headers of further concepts are added here, one #include each. */

#endif /* ZFLOW_H */
