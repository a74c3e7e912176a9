/* One descriptor file, loaded as Zenoh-Flow loads it: read its own `vars`
 * from the raw text, let the including side override them (or, for 0.5,
 * only fill in what they lack), render the mustache variables into the
 * text, then parse the YAML. */
#include "graph/loader.h"

#include <stdlib.h>
#include <string.h>

void zfi_doc_free(zfi_doc *d)
{
    if (!d)
        return;
    zfi_config_free(d->root);
    free(d->dir);
    free(d);
}

static bool has_tags(const char *t, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (t[i] == '{' && t[i + 1] == '{')
            return true;
    return false;
}

/* The file's own `vars` (null values are ""). */
static void read_vars(zfi_loader *ld, const zf_config *root, zfi_vars *own)
{
    const zf_config *v = zfi_config_member(root, "vars");
    if (!v || !zfi_want_map(ld, v, "vars", false))
        return;
    for (size_t k = 0; k < v->n; k++) {
        char f[ZFI_FIELD_MAX];
        const char *name = v->keys[k];
        const zf_config *val = v->items[k];
        zfi_field(f, "vars", name);
        bool bad = !*name;
        for (const char *p = name; *p && !bad; p++)
            bad = *p == ' ' || *p == '\t' || *p == '{' || *p == '}';
        if (bad) {
            zfi_mark m = v->key_marks ? v->key_marks[k] : (zfi_mark){v->line, v->col};
            zfi_diag_add(ld->diag, ZF_EINVAL, v->file, m.line, m.col, f,
                         "'%s' is not a variable name: expected a name without blanks or braces",
                         name);
            continue;
        }
        if (val->kind == ZF_CFG_MAP || val->kind == ZF_CFG_SEQ) {
            zfi_err(ld, ZF_EINVAL, val, f, "expected a text value for variable '%s', found %s",
                    name, zfi_kind_name(val));
            continue;
        }
        if (!zfi_vars_set(own, name, val->kind == ZF_CFG_NULL ? "" : val->text))
            ld->oom = true;
    }
}

/* Is rendered offset `off` inside a YAML comment (a '#' after a blank or at
 * the start of its line)? Only asked for places outside every scalar. */
static bool in_comment(const char *t, size_t off)
{
    size_t start = off;
    while (start > 0 && t[start - 1] != '\n' && t[start - 1] != '\r')
        start--;
    for (size_t i = start; i < off; i++)
        if (t[i] == '#' && (i == start || t[i - 1] == ' ' || t[i - 1] == '\t'))
            return true;
    return false;
}

/* First pass: the document as it is (or with the tags blanked when it is
 * not YAML before rendering), only to read `vars`. */
static zf_err first_pass(zfi_loader *ld, const char *file, const char *text, size_t len, bool tags,
                         zf_config **out)
{
    zfi_src s;
    if (!zfi_src_identity(&s, file, text, len))
        return ZF_ENOMEM;
    zf_err rc = zfi_yaml_parse(&s, tags ? NULL : ld->diag, NULL, 0, out);
    zfi_src_free(&s);
    if (*out || !tags)
        return rc;
    char *blank = zfi_placeholder_text(text, len);
    if (!blank)
        return ZF_ENOMEM;
    if (!zfi_src_identity(&s, file, blank, len)) {
        free(blank);
        return ZF_ENOMEM;
    }
    rc = zfi_yaml_parse(&s, NULL, NULL, 0, out);
    if (!*out) /* report the syntax error, at its exact place */
        rc = zfi_yaml_parse(&s, ld->diag, NULL, 0, out);
    zfi_src_free(&s);
    free(blank);
    return rc;
}

zf_err zfi_doc_load(zfi_loader *ld, const char *file, const char *dir, const char *text, size_t len,
                    const zfi_vars *under, const zfi_vars *inherited, zfi_vars *eff, zfi_doc **out)
{
    *out = NULL;
    bool tags = has_tags(text, len);
    zf_config *raw = NULL;
    zf_err rc = first_pass(ld, file, text, len, tags, &raw);
    if (!raw)
        return rc ? rc : ZF_EPARSE;
    zfi_doc *d = zfi_calloc(1, sizeof *d);
    zfi_vars vars = {0};
    if (!d || !(d->dir = zfi_strdup(dir)))
        goto oom;
    d->file = file;
    zfi_vars own = {0};
    read_vars(ld, raw, &own);
    bool ok = zfi_vars_overlay(&vars, under) && zfi_vars_overlay(&vars, &own) &&
              zfi_vars_overlay(&vars, inherited) && (!eff || zfi_vars_overlay(eff, &vars));
    zfi_vars_free(&own);
    if (!ok)
        goto oom;
    if (!tags) {
        d->root = raw;
        zfi_vars_free(&vars);
        *out = d;
        return rc;
    }
    zfi_config_free(raw);
    raw = NULL;

    zfi_src s = {.file = file};
    zfi_unbound *unb = NULL;
    size_t n_unb = 0;
    zfi_probe *probes = NULL;
    rc = zfi_render(&s, text, len, &vars, ld->diag, &unb, &n_unb);
    if (rc == ZF_ENOMEM || (n_unb && !(probes = zfi_calloc(n_unb, sizeof *probes)))) {
        zfi_src_free(&s);
        zfi_unbound_free(unb, n_unb);
        goto oom;
    }
    if (s.text) {
        for (size_t i = 0; i < n_unb; i++)
            probes[i].roff = unb[i].roff;
        zf_err prc = zfi_yaml_parse(&s, ld->diag, probes, n_unb, &d->root);
        if (!rc)
            rc = prc;
    }
    for (size_t i = 0; i < n_unb; i++) {
        if (!probes[i].field && s.text && in_comment(s.text, unb[i].roff))
            continue; /* a variable in a comment does not matter */
        zfi_diag_add(ld->diag, ZF_EINVAL, file, unb[i].line, unb[i].col,
                     probes[i].field ? probes[i].field : "",
                     "undefined variable '%s': define it under 'vars' or pass %s=value",
                     unb[i].name, unb[i].name);
        if (!rc)
            rc = ZF_EINVAL;
    }
    for (size_t i = 0; i < n_unb; i++)
        free(probes[i].field);
    free(probes);
    zfi_unbound_free(unb, n_unb);
    zfi_src_free(&s);
    zfi_vars_free(&vars);
    if (!d->root) {
        zfi_doc_free(d);
        return rc ? rc : ZF_EPARSE;
    }
    *out = d;
    return rc;
oom:
    zfi_config_free(raw);
    zfi_vars_free(&vars);
    zfi_doc_free(d);
    ld->oom = true;
    return zfi_err(ld, ZF_ENOMEM, NULL, "", "out of memory while loading %s", file);
}
