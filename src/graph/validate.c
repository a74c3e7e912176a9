/* Whole-graph checks once every link is known: each input has exactly one
 * link (the second is refused as it is read), each output at least one. */
#include "graph/loader.h"

void zfi_validate_ports(zfi_loader *ld)
{
    char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
    for (size_t i = 0; i < ld->n_nodes; i++) {
        const zfi_node *n = &ld->nodes[i];
        const zfi_aux *a = &ld->aux[i];
        for (size_t j = 0; j < n->n_inputs; j++) {
            if (a->in_n[j])
                continue;
            zfi_diag_add(ld->diag, ZF_EINVAL, a->ports_file, n->inputs[j].line, n->inputs[j].col,
                         zfi_field_at(g, zfi_field(f, a->field, "inputs"), j),
                         "input '%s' of node '%s' is not connected: expected a link to it under "
                         "'links'",
                         n->inputs[j].name, n->id);
        }
        for (size_t j = 0; j < n->n_outputs; j++) {
            if (a->out_n[j])
                continue;
            zfi_diag_add(ld->diag, ZF_EINVAL, a->ports_file, n->outputs[j].line, n->outputs[j].col,
                         zfi_field_at(g, zfi_field(f, a->field, "outputs"), j),
                         "output '%s' of node '%s' is not connected: expected at least one link "
                         "from it under 'links'",
                         n->outputs[j].name, n->id);
        }
    }
}
