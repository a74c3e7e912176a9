/* Fields of nodes and links: ports and their types, queues, zflow's runtime
 * settings, and the Zenoh built-in nodes zflow refuses. */
#include "graph/loader.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- runtime settings ---- */

static const char *const isolations[] = {ZFI_ISOLATION_MAP(ZFI_NAME_ENTRY)};
static const char *const restarts[] = {ZFI_RESTART_MAP(ZFI_NAME_ENTRY)};

ZFI_NAME_FUNCTION(zfi_isolation_name, zfi_isolation, ZFI_ISOLATION_MAP)
ZFI_NAME_FUNCTION(zfi_restart_name, zfi_restart, ZFI_RESTART_MAP)
static const char *const hang_actions[] = {"degrade", "restart"};

/* A whole number from `min` to UINT32_MAX; else an error saying so. */
static bool want_count(zfi_loader *ld, const zf_config *c, const char *field, int64_t min,
                       const char *what, int64_t *out)
{
    if (c->kind != ZF_CFG_INT || c->i < min || c->i > UINT32_MAX) {
        zfi_err(ld, ZF_EINVAL, c, field,
                "expected a whole number of %s of at least %lld, found %s%s%s%s", what,
                (long long)min, zfi_kind_name(c), c->text ? " '" : "", c->text ? c->text : "",
                c->text ? "'" : "");
        return false;
    }
    *out = c->i;
    return true;
}

void zfi_parse_settings(zfi_loader *ld, const zf_config *map, const char *prefix, const char *id,
                        zf_node_kind kind, bool composite, zfi_settings *out)
{
    zfi_settings s = ZFI_SETTINGS_INIT;
    char f[ZFI_FIELD_MAX];
    const zf_config *c;
    if ((c = zfi_config_member(map, "period"))) {
        zfi_field(f, prefix, "period");
        if (composite || kind != ZF_SOURCE)
            zfi_err(ld, ZF_EINVAL, c, f,
                    "'period' applies to sources only, and '%s' is %s: remove it (operators "
                    "and sinks run when data arrives)",
                    id,
                    composite         ? "a composite operator"
                    : kind == ZF_SINK ? "a sink"
                                      : "an operator");
        else
            zfi_want_duration(ld, c, f, &s.period_ns);
    }
    if ((c = zfi_config_member(map, "hang_timeout")))
        zfi_want_duration(ld, c, zfi_field(f, prefix, "hang_timeout"), &s.hang_ns);
    if ((c = zfi_config_member(map, "send_timeout")))
        zfi_want_duration(ld, c, zfi_field(f, prefix, "send_timeout"), &s.send_ns);
    if ((c = zfi_config_member(map, "error_window")))
        zfi_want_duration(ld, c, zfi_field(f, prefix, "error_window"), &s.window_ns);
    int64_t v;
    if ((c = zfi_config_member(map, "max_errors")) &&
        want_count(ld, c, zfi_field(f, prefix, "max_errors"), 1, "errors", &v))
        s.max_errors = (uint32_t)v;
    if ((c = zfi_config_member(map, "isolation")))
        zfi_want_enum(ld, c, zfi_field(f, prefix, "isolation"), isolations,
                      ZFI_ARRAY_LEN(isolations), &s.isolation);
    if ((c = zfi_config_member(map, "restart"))) {
        zfi_want_enum(ld, c, zfi_field(f, prefix, "restart"), restarts, ZFI_ARRAY_LEN(restarts),
                      &s.restart);
        s.restart_at = c;
    }
    if ((c = zfi_config_member(map, "max_restarts")) &&
        want_count(ld, c, zfi_field(f, prefix, "max_restarts"), 0, "restarts", &v))
        s.max_restarts = v;
    if ((c = zfi_config_member(map, "restart_window")))
        zfi_want_duration(ld, c, zfi_field(f, prefix, "restart_window"), &s.restart_window_ns);
    if ((c = zfi_config_member(map, "hang_action"))) {
        zfi_want_enum(ld, c, zfi_field(f, prefix, "hang_action"), hang_actions,
                      ZFI_ARRAY_LEN(hang_actions), &s.hang_action);
        if (s.hang_action == 1 && !s.restart_at)
            s.restart_at = c;
    }
    *out = s;
}

void zfi_settings_under(zfi_settings *into, const zfi_settings *low)
{
    if (!into->period_ns)
        into->period_ns = low->period_ns;
    if (!into->hang_ns)
        into->hang_ns = low->hang_ns;
    if (!into->send_ns)
        into->send_ns = low->send_ns;
    if (!into->window_ns)
        into->window_ns = low->window_ns;
    if (!into->max_errors)
        into->max_errors = low->max_errors;
    if (into->isolation < 0)
        into->isolation = low->isolation;
    if (into->restart < 0)
        into->restart = low->restart;
    if (into->max_restarts < 0)
        into->max_restarts = low->max_restarts;
    if (!into->restart_window_ns)
        into->restart_window_ns = low->restart_window_ns;
    if (into->hang_action < 0)
        into->hang_action = low->hang_action;
    if (!into->restart_at)
        into->restart_at = low->restart_at;
}

void zfi_settings_apply(zfi_node *n, const zfi_settings *s)
{
    n->period_ns = n->kind == ZF_SOURCE ? s->period_ns : 0;
    n->hang_timeout_ns = s->hang_ns;
    n->send_timeout_ns = s->send_ns;
    n->error_window_ns = s->window_ns;
    n->max_errors = s->max_errors;
    n->isolation = s->isolation == 1 ? ZFI_ISOLATION_PROCESS : ZFI_ISOLATION_THREAD;
    n->restart = s->restart == 2   ? ZFI_RESTART_ALWAYS
                 : s->restart == 1 ? ZFI_RESTART_ON_FAILURE
                                   : ZFI_RESTART_NEVER;
    n->max_restarts = s->max_restarts >= 0 ? (uint32_t)s->max_restarts : 5;
    n->restart_window_ns = s->restart_window_ns ? s->restart_window_ns : 60000000000LL;
    n->hang_restart = s->hang_action == 1;
}

/* ---- ports ---- */

void zfi_ports_free(zfi_port *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        free(p[i].name);
        free(p[i].type);
    }
    free(p);
}

static const char *port_type(zfi_loader *ld, const zf_config *t, const char *field)
{
    const char *s = zfi_want_text(ld, t, field);
    if (!s)
        return NULL;
    bool bad = !*s;
    for (const char *p = s; *p && !bad; p++)
        bad = (unsigned char)*p <= ' ';
    if (bad) {
        zfi_err(ld, ZF_EINVAL, t, field,
                "'%s' is not a port type: expected a name without blanks such as "
                "\"image/bgr8\" (or \"any\")",
                s);
        return NULL;
    }
    return s;
}

bool zfi_parse_ports(zfi_loader *ld, const zf_config *list, const char *field, const char *what,
                     zfi_port **out, size_t *n)
{
    static const char *const port_fields[] = {"id", "type"};
    *out = NULL;
    *n = 0;
    if (!zfi_want_seq(ld, list, field, false))
        return true;
    size_t cap = 0;
    for (size_t i = 0; i < list->n; i++) {
        const zf_config *item = list->items[i];
        char f[ZFI_FIELD_MAX], g[ZFI_FIELD_MAX];
        zfi_field_at(f, field, i);
        const char *name = NULL, *type = "any";
        const zf_config *at = item;
        if (item->kind == ZF_CFG_MAP) {
            zfi_known(ld, item, f, "a port", port_fields, 2);
            at = zfi_config_member(item, "id");
            if (!at) {
                zfi_err(ld, ZF_EINVAL, item, f, "missing 'id': a port is a name or {id, type}");
                continue;
            }
            const zf_config *t = zfi_config_member(item, "type");
            if (t && !(type = port_type(ld, t, zfi_field(g, f, "type"))))
                type = "any";
            if (!zfi_want_id(ld, at, zfi_field(g, f, "id"), what, &name))
                continue;
        } else if (item->kind == ZF_CFG_SEQ) {
            zfi_err(ld, ZF_EINVAL, item, f, "expected a port name or {id, type}, found %s",
                    zfi_kind_name(item));
            continue;
        } else if (!zfi_want_id(ld, item, f, what, &name)) {
            continue;
        }
        size_t j = 0;
        while (j < *n && strcmp((*out)[j].name, name))
            j++;
        if (j < *n) {
            zfi_err(ld, ZF_EINVAL, at, f,
                    "duplicate %s id '%s' (first at line %u): port ids of a node are unique", what,
                    name, (*out)[j].line);
            continue;
        }
        if (*n >= ZFI_MAX_PORTS) {
            zfi_err(ld, ZF_EINVAL, at, f, "more than %d %ss: refusing the node", ZFI_MAX_PORTS,
                    what);
            break;
        }
        if (!zfi_grow((void **)out, &cap, *n + 1, sizeof **out))
            return false;
        zfi_port *p = &(*out)[*n];
        p->name = zfi_strdup(name);
        p->type = zfi_strdup(type);
        p->line = at->line;
        p->col = at->col;
        if (!p->name || !p->type) {
            free(p->name);
            free(p->type);
            return false;
        }
        (*n)++;
    }
    return true;
}

/* ---- queues ---- */

static const char *const policies[] = {ZF_POLICY_MAP(ZFI_NAME_ENTRY)};

void zfi_parse_queue(zfi_loader *ld, const zf_config *q, const char *field, zf_link_config *out)
{
    static const char *const queue_fields[] = {"capacity", "max_bytes", "policy"};
    char f[ZFI_FIELD_MAX];
    if (!zfi_want_map(ld, q, field, false))
        return;
    zfi_known(ld, q, field, "a queue", queue_fields, 3);
    const zf_config *c;
    if ((c = zfi_config_member(q, "capacity"))) {
        zfi_field(f, field, "capacity");
        if (c->kind != ZF_CFG_INT || c->i < 1 || c->i > ZFI_MAX_CAPACITY)
            zfi_err(ld, ZF_EINVAL, c, f,
                    "the capacity must be a positive integer from 1 to %d messages, found %s%s%s%s",
                    ZFI_MAX_CAPACITY, zfi_kind_name(c), c->text ? " '" : "", c->text ? c->text : "",
                    c->text ? "'" : "");
        else
            out->capacity = (uint32_t)c->i;
    }
    if ((c = zfi_config_member(q, "max_bytes")))
        zfi_want_size(ld, c, zfi_field(f, field, "max_bytes"), &out->max_bytes);
    if ((c = zfi_config_member(q, "policy"))) {
        int p = 0;
        if (zfi_want_enum(ld, c, zfi_field(f, field, "policy"), policies, ZFI_ARRAY_LEN(policies),
                          &p))
            out->policy = (zf_policy)p;
    }
}

/* ---- Zenoh built-ins ---- */

bool zfi_refuse_zenoh(zfi_loader *ld, const zf_config *map, const char *prefix, const char *id)
{
    static const struct {
        const char *key, *what, *instead;
    } builtins[] = {
        {"zenoh-subscribers", "subscriber source", "a source"},
        {"zenoh-publishers", "publisher sink", "a sink"},
    };
    bool refused = false;
    for (size_t b = 0; b < ZFI_ARRAY_LEN(builtins); b++) {
        for (size_t k = 0; map && map->kind == ZF_CFG_MAP && k < map->n; k++) {
            if (strcmp(map->keys[k], builtins[b].key))
                continue;
            char f[ZFI_FIELD_MAX];
            zfi_mark m = map->key_marks ? map->key_marks[k] : (zfi_mark){map->line, map->col};
            zfi_diag_add(ld->diag, ZF_EINVAL, map->file, m.line, m.col,
                         zfi_field(f, prefix, builtins[b].key),
                         "node '%s' is Zenoh-Flow's built-in Zenoh %s ('%s'): zflow has no "
                         "Zenoh, so it cannot run it; implement %s with a library or a Python "
                         "file instead",
                         id, builtins[b].what, builtins[b].key, builtins[b].instead);
            refused = true;
        }
    }
    return refused;
}

void zfi_refuse_builtin(zfi_loader *ld, const zf_config *entry, const zf_config *desc,
                        const char *field, const char *id, zf_node_kind kind, const char *name)
{
    if (strcmp(name, "zenoh") != 0) {
        zfi_err(ld, ZF_EINVAL, desc, field,
                "node '%s': unknown built-in node 'builtin://%s' (Zenoh-Flow's only built-in is "
                "'builtin://zenoh'): expected a node file (a path or a file:// URL)",
                id, name);
        return;
    }
    if (kind == ZF_OPERATOR) {
        zfi_err(ld, ZF_EINVAL, desc, field,
                "node '%s': 'builtin://zenoh' is Zenoh-Flow's built-in Zenoh source or sink, not "
                "an operator (and zflow has no Zenoh): expected a node file",
                id);
        return;
    }
    /* what it would subscribe or publish: configuration.key-expressions */
    const zf_config *cfg = zfi_config_member(entry, "configuration");
    const zf_config *ke =
        cfg && cfg->kind == ZF_CFG_MAP ? zfi_config_member(cfg, "key-expressions") : NULL;
    zfi_buf keys;
    zfi_buf_init(&keys);
    for (size_t k = 0; ke && ke->kind == ZF_CFG_MAP && k < ke->n; k++)
        zfi_buf_printf(&keys, "%s%s '%s' %s %s", k ? ", " : "",
                       kind == ZF_SINK ? "input" : "output", ke->keys[k],
                       kind == ZF_SINK ? "->" : "<-",
                       ke->items[k]->text ? ke->items[k]->text : "?");
    zfi_err(ld, ZF_EINVAL, desc, field,
            "node '%s' is Zenoh-Flow's built-in Zenoh %s ('builtin://zenoh'%s%s): zflow has no "
            "Zenoh, so it cannot run it; implement %s with a library or a Python file that talks "
            "to Zenoh, or feed the flow from a node of your own",
            id, kind == ZF_SINK ? "publisher (sink)" : "subscriber (source)", keys.s ? ": " : "",
            keys.s ? keys.s : "", kind == ZF_SINK ? "the sink" : "the source");
    zfi_buf_free(&keys);
}
