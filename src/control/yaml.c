/* zf_yaml_parse: a YAML document as a zf_config tree (the daemon's
 * configuration file, for one). The descriptor loader's parser, without
 * variables. */
#include "core/common.h"
#include "graph/flow.h"
#include "graph/loader.h"

#include <string.h>

static void forget_file(zf_config *c)
{
    if (!c)
        return;
    c->file = NULL;
    for (size_t i = 0; i < c->n; i++)
        forget_file(c->items[i]);
}

zf_err zf_yaml_parse(const char *text, size_t len, const char *name, zf_config **out, zf_diag *diag)
{
    if (!text || !out)
        return zfi_error(ZF_EINVAL, "zf_yaml_parse: NULL argument");
    *out = NULL;
    zfi_strings *names = zfi_strings_new();
    if (!names)
        return zfi_error(ZF_ENOMEM, "out of memory");
    zfi_src src;
    zf_err err = ZF_ENOMEM;
    if (zfi_src_identity(&src, zfi_strings_intern(names, name ? name : "<yaml>"), text, len)) {
        err = zfi_yaml_parse(&src, diag, NULL, 0, out);
        zfi_src_free(&src);
    }
    forget_file(*out); /* `file` points into `names`, freed below */
    zfi_strings_free(names);
    return err;
}
