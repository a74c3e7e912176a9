/* What the levels of flattening share (level.h): freeing a level, finding
 * its nodes, and the loader's error helpers flatten.c, links.c and
 * mapping.c all use, so that none of them calls back into another. */
#include "graph/level.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zfi_level_free(zfi_level *lv)
{
    for (size_t i = 0; i < lv->n; i++) {
        zfi_kid *k = &lv->kids[i];
        free(k->id);
        for (size_t j = 0; j < k->n_ins; j++)
            free(k->ins[j].id);
        for (size_t j = 0; j < k->n_outs; j++)
            free(k->outs[j].id);
        free(k->ins);
        free(k->outs);
    }
    free(lv->kids);
    free(lv->prefix);
}

void zfi_oom(zfi_loader *ld)
{
    if (!ld->oom)
        zfi_err(ld, ZF_ENOMEM, NULL, "", "out of memory while loading the descriptor");
    ld->oom = true;
}

static zfi_mark key_mark(const zf_config *map, const char *key)
{
    for (size_t k = 0; map && k < map->n; k++)
        if (!strcmp(map->keys[k], key))
            return map->key_marks ? map->key_marks[k] : (zfi_mark){map->line, map->col};
    return (zfi_mark){map ? map->line : 0, map ? map->col : 0};
}

void zfi_key_err(zfi_loader *ld, const zf_config *map, const char *key, const char *prefix,
                 const char *fmt, ...)
{
    char f[ZFI_FIELD_MAX];
    zfi_mark m = key_mark(map, key);
    va_list ap;
    va_start(ap, fmt);
    zfi_diag_vadd(ld->diag, ZF_EINVAL, map->file, m.line, m.col, zfi_field(f, prefix, key), fmt,
                  ap);
    va_end(ap);
}

zfi_kid *zfi_kid_find(const zfi_level *lv, const char *id)
{
    for (size_t i = 0; i < lv->n; i++)
        if (!strcmp(lv->kids[i].id, id))
            return &lv->kids[i];
    return NULL;
}

/* ": did you mean 'x'?", " (its nodes: 'a', 'b')" or " (it has no nodes)". */
void zfi_hint(char *buf, size_t size, const char *word, const char *const *names, size_t n,
              const char *noun)
{
    const char *near = zfi_nearest(word, names, n);
    char list[384];
    if (near)
        snprintf(buf, size, ": did you mean '%s'?", near);
    else if (n)
        snprintf(buf, size, " (its %s: %s)", noun, zfi_list(list, sizeof list, names, n));
    else
        snprintf(buf, size, " (it has no %s)", noun);
}

bool zfi_port_list_empty(const zf_config *l)
{
    return !l || l->kind == ZF_CFG_NULL || (l->kind == ZF_CFG_SEQ && l->n == 0);
}
