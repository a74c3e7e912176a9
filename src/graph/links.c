/* Links: each end is resolved in its level, through composites' `inputs` /
 * `outputs` down to the flat node that really sends or receives; then the
 * one-link-per-input rule and the port types are checked. */
#include "graph/level.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const link_fields[] = {"from",          "to",  "queue",        "record",
                                          "shared_memory", "shm", "shared-memory"};
#define FIRST_SHM 4 /* link_fields[FIRST_SHM...]: the shared-memory spellings */

/* Zenoh's shared-memory settings of a link, under any of Zenoh-Flow's
 * spellings (`shared_memory`, `shm`, `shared-memory`): zflow always hands
 * over pool memory, so a map, a boolean or null is accepted and has no
 * effect; more than one spelling, or another value, is an error. */
static void shared_memory(zfi_loader *ld, const zf_config *item, const char *field)
{
    const char *given = NULL;
    for (size_t i = FIRST_SHM; i < ZFI_ARRAY_LEN(link_fields); i++) {
        const zf_config *c = zfi_config_member(item, link_fields[i]);
        if (!c)
            continue;
        char f[ZFI_FIELD_MAX];
        zfi_field(f, field, link_fields[i]);
        if (given)
            zfi_err(ld, ZF_EINVAL, c, f,
                    "'%s' and '%s' are two spellings of a link's shared-memory settings: give "
                    "only one",
                    given, link_fields[i]);
        else if (c->kind != ZF_CFG_MAP && c->kind != ZF_CFG_BOOL && c->kind != ZF_CFG_NULL)
            zfi_err(ld, ZF_EINVAL, c, f,
                    "expected a map of Zenoh shared-memory settings (or true/false), found %s",
                    zfi_kind_name(c));
        given = link_fields[i];
    }
}

static zfi_end resolve(zfi_loader *ld, const zfi_level *lv, bool output, const char *node,
                       const char *port, const zf_config *nodec, const zf_config *portc,
                       const char *fnode, const char *fport)
{
    const char *pk = output ? "output" : "input";
    char h[512];
    const zfi_kid *k = zfi_kid_find(lv, node);
    if (!k) {
        const char **names = zfi_calloc(lv->n, sizeof *names);
        for (size_t i = 0; names && i < lv->n; i++)
            names[i] = lv->kids[i].id;
        zfi_hint(h, sizeof h, node, names, names ? lv->n : 0, "nodes");
        free(names);
        zfi_err(ld, ZF_EINVAL, nodec, fnode, "no node '%s' in this %s%s", node, lv->what, h);
        return (zfi_end){END_BAD, -1, -1};
    }
    if (k->broken)
        return (zfi_end){END_BROKEN, -1, -1};
    if (k->composite) {
        const zfi_bport *bp = output ? k->outs : k->ins;
        size_t nb = output ? k->n_outs : k->n_ins;
        for (size_t i = 0; i < nb; i++)
            if (!strcmp(bp[i].id, port))
                return bp[i].node < 0 ? (zfi_end){END_BROKEN, -1, -1}
                                      : (zfi_end){END_OK, bp[i].node, bp[i].port};
        const char **names = zfi_calloc(nb, sizeof *names);
        for (size_t i = 0; names && i < nb; i++)
            names[i] = bp[i].id;
        zfi_hint(h, sizeof h, port, names, names ? nb : 0, output ? "outputs" : "inputs");
        free(names);
        zfi_err(ld, ZF_EINVAL, portc, fport, "composite operator '%s' has no %s '%s'%s", node, pk,
                port, h);
        return (zfi_end){END_BAD, -1, -1};
    }
    if (k->leaf < 0)
        return (zfi_end){END_BROKEN, -1, -1};
    const zfi_node *n = &ld->nodes[k->leaf];
    const zfi_port *ps = output ? n->outputs : n->inputs, *other = output ? n->inputs : n->outputs;
    size_t np = output ? n->n_outputs : n->n_inputs, no = output ? n->n_inputs : n->n_outputs;
    for (size_t i = 0; i < np; i++)
        if (!strcmp(ps[i].name, port))
            return (zfi_end){END_OK, k->leaf, (long)i};
    if (!np) /* "declares no input/output" was reported already */
        return (zfi_end){END_BROKEN, -1, -1};
    for (size_t i = 0; i < no; i++) {
        if (!strcmp(other[i].name, port)) {
            zfi_err(ld, ZF_EINVAL, portc, fport, "'%s' is an %s of node '%s', not an %s", port,
                    output ? "input" : "output", node, pk);
            return (zfi_end){END_BAD, -1, -1};
        }
    }
    const char **names = zfi_calloc(np, sizeof *names);
    for (size_t i = 0; names && i < np; i++)
        names[i] = ps[i].name;
    zfi_hint(h, sizeof h, port, names, names ? np : 0, output ? "outputs" : "inputs");
    free(names);
    zfi_err(ld, ZF_EINVAL, portc, fport, "node '%s' has no %s '%s'%s", node, pk, port, h);
    return (zfi_end){END_BAD, -1, -1};
}

/* `from` / `to` of a link, or a composite's inputs / outputs entry. */
static zfi_end endpoint(zfi_loader *ld, const zfi_level *lv, const zf_config *m, const char *field,
                        bool output, bool link_end)
{
    const char *port_key = output ? "output" : "input";
    static const char *const from_fields[] = {"node", "output"};
    static const char *const to_fields[] = {"node", "input"};
    char fn[ZFI_FIELD_MAX], fp[ZFI_FIELD_MAX];
    const zf_config *nodec = zfi_config_member(m, "node"), *portc = zfi_config_member(m, port_key);
    if (link_end)
        zfi_known(ld, m, field, output ? "a link's 'from'" : "a link's 'to'",
                  output ? from_fields : to_fields, 2);
    if (!nodec)
        zfi_err(ld, ZF_EINVAL, m, field, "missing 'node': expected the id of the %s node",
                output ? "sending" : "receiving");
    if (!portc)
        zfi_err(ld, ZF_EINVAL, m, field, "missing '%s': expected the id of the %s port", port_key,
                output ? "output" : "input");
    const char *node = zfi_want_text(ld, nodec, zfi_field(fn, field, "node"));
    const char *port = zfi_want_text(ld, portc, zfi_field(fp, field, port_key));
    if (!node || !port)
        return (zfi_end){END_BAD, -1, -1};
    return resolve(ld, lv, output, node, port, nodec, portc, fn, fp);
}

static void add_link(zfi_loader *ld, const zf_config *item, const char *field, zfi_end from,
                     zfi_end to, const zf_link_config *q, const char *record)
{
    if (from.st == END_OK)
        ld->aux[from.node].out_n[from.port]++;
    if (to.st != END_OK)
        return;
    zfi_aux *ta = &ld->aux[to.node];
    const zfi_node *tn = &ld->nodes[to.node];
    if (ta->in_n[to.port]++) {
        const zf_config *first = ta->in_first[to.port];
        zfi_err(ld, ZF_EINVAL, item, field,
                "input '%s' of node '%s' already has a link (%s:%u): an input receives from "
                "exactly one output",
                tn->inputs[to.port].name, tn->id, first && first->file ? first->file : "",
                first ? first->line : 0);
        return;
    }
    ta->in_first[to.port] = item;
    if (from.st != END_OK)
        return;
    const zfi_node *fnode = &ld->nodes[from.node];
    const char *tf = fnode->outputs[from.port].type, *tt = tn->inputs[to.port].type;
    if (strcmp(tf, "any") && strcmp(tt, "any") && strcmp(tf, tt)) {
        zfi_err(ld, ZF_ETYPE, item, field,
                "type mismatch: output '%s.%s' sends '%s' but input '%s.%s' expects '%s'; both "
                "ends of a link must have the same type (or 'any')",
                fnode->id, fnode->outputs[from.port].name, tf, tn->id, tn->inputs[to.port].name,
                tt);
        return;
    }
    if (!zfi_grow((void **)&ld->links, &ld->cap_links, ld->n_links + 1, sizeof *ld->links)) {
        zfi_oom(ld);
        return;
    }
    ld->links[ld->n_links++] = (zfi_link){.from = (size_t)from.node,
                                          .from_port = (size_t)from.port,
                                          .to = (size_t)to.node,
                                          .to_port = (size_t)to.port,
                                          .queue = *q,
                                          .record = record,
                                          .file = item->file,
                                          .line = item->line,
                                          .col = item->col};
}

void zfi_links(zfi_loader *ld, zfi_level *lv, const zf_config *list)
{
    if (!zfi_want_seq(ld, list, "links", false))
        return;
    for (size_t i = 0; i < list->n; i++) {
        const zf_config *item = list->items[i];
        char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
        zfi_field_at(f, "links", i);
        if (!zfi_want_map(ld, item, f, true))
            continue;
        zfi_known(ld, item, f, "a link", link_fields, ZFI_ARRAY_LEN(link_fields));
        const zf_config *from = zfi_config_member(item, "from"),
                        *to = zfi_config_member(item, "to");
        zfi_end e1 = {END_BAD, -1, -1}, e2 = {END_BAD, -1, -1};
        if (!from)
            zfi_err(ld, ZF_EINVAL, item, f, "missing 'from': expected {node, output}");
        else if (zfi_want_map(ld, from, zfi_field(g, f, "from"), true))
            e1 = endpoint(ld, lv, from, g, true, true);
        if (!to)
            zfi_err(ld, ZF_EINVAL, item, f, "missing 'to': expected {node, input}");
        else if (zfi_want_map(ld, to, zfi_field(g, f, "to"), true))
            e2 = endpoint(ld, lv, to, g, false, true);
        shared_memory(ld, item, f);
        zf_link_config q = {.capacity = ZFI_DEFAULT_CAPACITY, .policy = ZF_POLICY_BLOCK};
        const zf_config *qc = zfi_config_member(item, "queue");
        if (qc)
            zfi_parse_queue(ld, qc, zfi_field(g, f, "queue"), &q);
        /* record: FILE (operations.md): the runtime records the link's
         * output into FILE while the instance lives */
        const zf_config *rc = zfi_config_member(item, "record");
        const char *record = NULL;
        if (rc && (rc->kind != ZF_CFG_STRING || !rc->text[0]))
            zfi_err(ld, ZF_EINVAL, rc, zfi_field(g, f, "record"),
                    "expected the file to record this link into (a string), found %s",
                    zfi_kind_name(rc));
        else if (rc)
            record = zfi_strings_intern(ld->strings, rc->text);
        add_link(ld, item, f, e1, e2, &q, record);
    }
}

void zfi_boundary(zfi_loader *ld, zfi_level *in, const zf_config *m, bool output, zfi_kid *k)
{
    static const char *const in_fields[] = {"id", "node", "input"};
    static const char *const out_fields[] = {"id", "node", "output"};
    const char *key = output ? "outputs" : "inputs";
    const zf_config *list = zfi_config_member(m, key);
    char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
    if (zfi_port_list_empty(list) && (!list || list->kind != ZF_CFG_NULL)) {
        zfi_err(ld, ZF_EINVAL, list ? list : m, key,
                "a composite operator needs at least one %s: expected {id, node, %s} entries",
                output ? "output" : "input", output ? "output" : "input");
        return;
    }
    if (!zfi_want_seq(ld, list, key, true))
        return;
    zfi_bport **bp = output ? &k->outs : &k->ins;
    size_t *nb = output ? &k->n_outs : &k->n_ins, cap = 0;
    for (size_t i = 0; i < list->n; i++) {
        const zf_config *item = list->items[i];
        const char *id;
        zfi_field_at(f, key, i);
        if (!zfi_want_map(ld, item, f, true))
            continue;
        zfi_known(ld, item, f, output ? "a composite output" : "a composite input",
                  output ? out_fields : in_fields, 3);
        const zf_config *idc = zfi_config_member(item, "id");
        if (!idc) {
            zfi_err(ld, ZF_EINVAL, item, f, "missing 'id': expected the port's name");
            continue;
        }
        if (!zfi_want_id(ld, idc, zfi_field(g, f, "id"), output ? "output" : "input", &id))
            continue;
        bool dup = false;
        for (size_t j = 0; j < *nb && !dup; j++)
            dup = !strcmp((*bp)[j].id, id);
        if (dup) {
            zfi_err(ld, ZF_EINVAL, idc, g, "duplicate %s id '%s' of the composite operator",
                    output ? "output" : "input", id);
            continue;
        }
        zfi_end e = endpoint(ld, in, item, f, output, false);
        if (!zfi_grow((void **)bp, &cap, *nb + 1, sizeof **bp) ||
            !((*bp)[*nb].id = zfi_strdup(id))) {
            zfi_oom(ld);
            return;
        }
        (*bp)[*nb].node = e.st == END_OK ? e.node : -1;
        (*bp)[(*nb)++].port = e.st == END_OK ? e.port : -1;
    }
}
