/* Log lines about nodes: the logger finds the node whose code runs on a
 * thread through this lookup (core does not know nodes), and hosts that
 * capture a node's output feed its lines in here. */
#include "runtime/runtime.h"

#include <stdio.h>
#include <string.h>

const zfi_log_origin *zfi_node_log_origin(void *node)
{
    return node ? &((zf_node *)node)->origin : NULL;
}

void zf_node_log_output(zf_node *n, int fd, const char *line, size_t len)
{
    if (!n || !line)
        return;
    zf_log_level level = fd == 2 ? ZF_LOG_WARN : ZF_LOG_INFO;
    if (!zfi_log_enabled(level))
        return;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    char msg[2048];
    size_t k = len < sizeof msg - 1 ? len : sizeof msg - 1;
    memcpy(msg, line, k);
    msg[k] = '\0';
    char scope[160];
    snprintf(scope, sizeof scope, "node %s %s", n->desc->id, fd == 2 ? "stderr" : "stdout");
    zfi_log_text(&n->origin, level, scope, msg);
}
