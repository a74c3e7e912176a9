/* Built against an installed zflow (pkg-config and find_package): a capsule
 * through a link, to prove the installed headers and libraries work. */
#include <zflow/zflow.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    zf_pool *pool = NULL;
    zf_link *link = NULL;
    zf_data *d = NULL, *got = NULL;
    if (zf_pool_create(NULL, &pool) != ZF_OK || zf_link_create(NULL, &link) != ZF_OK ||
        zf_pool_alloc(pool, 5, &d) != ZF_OK)
        return 1;
    memcpy(zf_data_mut(&d), "hello", 5);
    const void *addr = zf_data_ptr(d);
    if (zf_link_push(link, &d, 0) != ZF_OK || zf_link_pop(link, &got, 0) != ZF_OK)
        return 1;
    int ok = zf_data_ptr(got) == addr && memcmp(zf_data_ptr(got), "hello", 5) == 0;
    zf_data_unref(got);
    zf_link_destroy(link);
    zf_pool_destroy(pool);
    printf("zflow %s: %s\n", ZF_VERSION_STRING, ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
