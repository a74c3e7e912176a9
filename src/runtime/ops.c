/* The runtime's side of operating an instance: log lines about nodes (the
 * logger finds the node whose code runs on a thread through this lookup,
 * since core does not know nodes; hosts that capture a node's output feed
 * its lines in here), and taps on an output port's link (core/tap.c). */
#include "core/tap.h"
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
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

struct zf_tap {
    zfi_tap *t;
    zf_link *link;
    const char *type;
};

zf_err zf_tap_open(zf_instance *inst, const char *output, const zf_tap_options *opt, zf_tap **out)
{
    if (!inst || !output || !out)
        return zfi_error(ZF_EINVAL, "zf_tap_open: NULL argument");
    *out = NULL;
    const char *dot = strrchr(output, '.');
    size_t nlen = dot ? (size_t)(dot - output) : 0;
    const zf_flow *f = inst->flow;
    for (size_t i = 0; dot && i < f->n_links; i++) {
        const zfi_link *fl = &f->links[i];
        const zfi_node *from = &f->nodes[fl->from];
        const zfi_port *p = &from->outputs[fl->from_port];
        if (strlen(from->id) != nlen || strncmp(from->id, output, nlen) || strcmp(p->name, dot + 1))
            continue;
        zf_tap *tap = zfi_calloc(1, sizeof *tap);
        tap->t =
            tap ? zfi_tap_new(opt ? opt->capacity : 0, opt ? opt->max_bytes : 0, opt && opt->hold)
                : NULL;
        if (!tap || !tap->t) {
            free(tap);
            return zfi_error(ZF_ENOMEM, "out of memory");
        }
        tap->link = inst->links[i];
        tap->type = p->type;
        zf_err e = zfi_link_tap_attach(tap->link, tap->t);
        if (e != ZF_OK) {
            zfi_tap_free(tap->t);
            free(tap);
            return e;
        }
        *out = tap;
        return ZF_OK;
    }
    return zfi_error(ZF_ENOTFOUND,
                     "instance %s has no linked output '%s' (expected NODE.PORT, an output port "
                     "of a node, linked to an input)",
                     inst->uuid, output);
}

zf_err zf_tap_next(zf_tap *t, zf_tap_item *out, int64_t timeout_ns)
{
    if (!t || !out)
        return zfi_error(ZF_EINVAL, "zf_tap_next: NULL argument");
    return zfi_tap_next(t->t, out, timeout_ns);
}

uint64_t zf_tap_dropped(const zf_tap *t)
{
    return t ? zfi_tap_dropped(t->t) : 0;
}

const char *zf_tap_type(const zf_tap *t)
{
    return t ? t->type : NULL;
}

void zf_tap_close(zf_tap *t)
{
    if (!t)
        return;
    zfi_link_tap_detach(t->link, t->t);
    zfi_tap_free(t->t);
    free(t);
}

void zfi_tap_notify_also(zf_tap *t, zfi_evc *e)
{
    zfi_tap_set_notify(t->t, e);
}
