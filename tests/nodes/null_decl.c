/* A node library whose declaration function returns NULL. */
#include <zflow/zflow.h>

__attribute__((visibility("default"))) const zf_node_decl *zf_node_declare(void);
const zf_node_decl *zf_node_declare(void)
{
    return NULL;
}
