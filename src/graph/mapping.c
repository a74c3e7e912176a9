/* `mapping`: worker -> node ids. An id may be a node, a composite (all the
 * nodes it flattens to) or a flattened id ("left>filter"). */
#include "graph/level.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void map_node(zfi_loader *ld, size_t i, const char *worker, const zf_config *at,
                     const char *field)
{
    zfi_node *n = &ld->nodes[i];
    if (n->worker) {
        zfi_err(ld, ZF_EINVAL, at, field, "node '%s' is already mapped to worker '%s'%s", n->id,
                n->worker, strcmp(n->worker, worker) ? ": a node runs on one worker" : "");
        return;
    }
    if (!(n->worker = zfi_strdup(worker)))
        zfi_oom(ld);
}

void zfi_mapping(zfi_loader *ld, const zfi_level *lv, const zf_config *m)
{
    if (!zfi_want_map(ld, m, "mapping", false))
        return;
    for (size_t w = 0; w < m->n; w++) {
        const char *worker = m->keys[w];
        const zf_config *list = m->items[w];
        char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
        zfi_field(f, "mapping", worker);
        if (!*worker) {
            zfi_mark km = m->key_marks ? m->key_marks[w] : (zfi_mark){m->line, m->col};
            zfi_diag_add(ld->diag, ZF_EINVAL, m->file, km.line, km.col, f,
                         "empty worker name: expected the name of a worker (zfd --name)");
            continue;
        }
        if (!zfi_want_seq(ld, list, f, true))
            continue;
        for (size_t j = 0; j < list->n; j++) {
            const zf_config *c = list->items[j];
            const char *id = zfi_want_text(ld, c, zfi_field_at(g, f, j));
            if (!id)
                continue;
            const zfi_kid *k = zfi_kid_find(lv, id);
            if (k && k->broken)
                continue;
            if (k && k->leaf >= 0) {
                map_node(ld, (size_t)k->leaf, worker, c, g);
                continue;
            }
            if (k && k->composite) {
                for (size_t i = k->first; i < k->first + k->count; i++)
                    map_node(ld, i, worker, c, g);
                continue;
            }
            size_t found = 0, len = strlen(id);
            for (size_t i = 0; i < ld->n_nodes; i++) {
                const char *nid = ld->nodes[i].id;
                if (!strcmp(nid, id) || (!strncmp(nid, id, len) && nid[len] == '>')) {
                    map_node(ld, i, worker, c, g);
                    found++;
                }
            }
            if (found)
                continue;
            char h[512];
            const char **names = zfi_calloc(lv->n, sizeof *names);
            for (size_t i = 0; names && i < lv->n; i++)
                names[i] = lv->kids[i].id;
            zfi_hint(h, sizeof h, id, names, names ? lv->n : 0, "nodes");
            free(names);
            zfi_err(ld, ZF_EINVAL, c, g,
                    "cannot map '%s' to worker '%s': no such node in the flow%s", id, worker, h);
        }
    }
}
