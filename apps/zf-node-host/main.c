/* zf-node-host: runs one process-isolated node for the zflow runtime that
 * started it (include/zflow/isolation.h, docs/isolation.md). */
#include <zflow/isolation.h>

int main(int argc, char **argv)
{
    return zf_node_host_main(argc, argv);
}
