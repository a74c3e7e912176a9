/* Reading descriptor fields: every wrong value becomes a diagnostic that
 * names the place, the field, what was found and what was expected. */
#include "graph/loader.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *zfi_kind_name(const zf_config *c)
{
    return c ? zf_config_kind_name(c->kind) : "nothing";
}

const char *zfi_field(char *buf, const char *prefix, const char *key)
{
    if (prefix && *prefix)
        snprintf(buf, ZFI_FIELD_MAX, "%s.%s", prefix, key);
    else
        snprintf(buf, ZFI_FIELD_MAX, "%s", key);
    return buf;
}

const char *zfi_field_at(char *buf, const char *prefix, size_t i)
{
    snprintf(buf, ZFI_FIELD_MAX, "%s[%zu]", prefix ? prefix : "", i);
    return buf;
}

zf_err zfi_err(zfi_loader *ld, zf_err code, const zf_config *at, const char *field, const char *fmt,
               ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_diag_vadd(ld->diag, code, at ? at->file : NULL, at ? at->line : 0, at ? at->col : 0, field,
                  fmt, ap);
    va_end(ap);
    return code;
}

static bool want_kind(zfi_loader *ld, const zf_config *c, const char *field, bool required,
                      zf_config_kind kind, const char *what)
{
    if (!c)
        return false;
    if (c->kind == kind)
        return true;
    if (c->kind == ZF_CFG_NULL && !required)
        return false;
    zfi_err(ld, ZF_EINVAL, c, field, "expected %s, found %s", what, zfi_kind_name(c));
    return false;
}

bool zfi_want_map(zfi_loader *ld, const zf_config *c, const char *field, bool required)
{
    return want_kind(ld, c, field, required, ZF_CFG_MAP, "a map");
}

bool zfi_want_seq(zfi_loader *ld, const zf_config *c, const char *field, bool required)
{
    return want_kind(ld, c, field, required, ZF_CFG_SEQ, "a sequence");
}

const char *zfi_list(char *buf, size_t size, const char *const *names, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < 8 && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s'%s'", i ? ", " : "", names[i]);
    if (n > 8 && used < size)
        snprintf(buf + used, size - used, ", ...");
    return buf;
}

void zfi_known(zfi_loader *ld, const zf_config *map, const char *prefix, const char *what,
               const char *const *known, size_t n)
{
    if (!map || map->kind != ZF_CFG_MAP)
        return;
    for (size_t k = 0; k < map->n; k++) {
        const char *key = map->keys[k];
        bool ok = false;
        for (size_t j = 0; j < n && !ok; j++)
            ok = strcmp(key, known[j]) == 0;
        if (ok)
            continue;
        char f[ZFI_FIELD_MAX];
        zfi_field(f, prefix, key);
        zfi_mark m = map->key_marks ? map->key_marks[k] : (zfi_mark){map->line, map->col};
        const char *near = zfi_nearest(key, known, n);
        if (near) {
            zfi_diag_add(ld->diag, ZF_EINVAL, map->file, m.line, m.col, f,
                         "unknown field '%s' in %s: did you mean '%s'?", key, what, near);
        } else {
            char list[512];
            zfi_diag_add(ld->diag, ZF_EINVAL, map->file, m.line, m.col, f,
                         "unknown field '%s' in %s: expected one of %s", key, what,
                         zfi_list(list, sizeof list, known, n));
        }
    }
}

const char *zfi_want_text(zfi_loader *ld, const zf_config *c, const char *field)
{
    if (!c)
        return NULL;
    if (c->kind == ZF_CFG_MAP || c->kind == ZF_CFG_SEQ || c->kind == ZF_CFG_NULL) {
        zfi_err(ld, ZF_EINVAL, c, field, "expected a string, found %s", zfi_kind_name(c));
        return NULL;
    }
    return c->text ? c->text : "";
}

bool zfi_want_duration(zfi_loader *ld, const zf_config *c, const char *field, int64_t *out)
{
    const char *t = zfi_want_text(ld, c, field);
    if (!t)
        return false;
    int64_t ns = 0;
    if (c->kind != ZF_CFG_INT && c->kind != ZF_CFG_FLOAT && zf_parse_duration(t, &ns) != ZF_OK) {
        zfi_err(ld, ZF_EINVAL, c, field, "%s", zf_last_error()); /* what, and what was expected */
        return false;
    }
    if (c->kind == ZF_CFG_INT || c->kind == ZF_CFG_FLOAT) {
        zfi_err(ld, ZF_EINVAL, c, field,
                "'%s' is not a duration: expected a number with a unit (ns, us, ms, s, m, h), "
                "e.g. \"16ms\" or \"1.5s\"",
                t);
        return false;
    }
    if (ns <= 0) {
        zfi_err(ld, ZF_EINVAL, c, field, "the duration must be greater than 0, found '%s'", t);
        return false;
    }
    *out = ns;
    return true;
}

bool zfi_want_size(zfi_loader *ld, const zf_config *c, const char *field, uint64_t *out)
{
    const char *t = zfi_want_text(ld, c, field);
    if (!t)
        return false;
    uint64_t v = 0;
    if (c->kind == ZF_CFG_INT) {
        if (c->i <= 0) {
            zfi_err(ld, ZF_EINVAL, c, field, "the size must be greater than 0, found %" PRId64,
                    c->i);
            return false;
        }
        v = (uint64_t)c->i;
    } else if (c->kind == ZF_CFG_STRING && zf_parse_size(t, &v) != ZF_OK) {
        zfi_err(ld, ZF_EINVAL, c, field, "%s", zf_last_error()); /* what, and what was expected */
        return false;
    } else if (c->kind != ZF_CFG_STRING) {
        zfi_err(ld, ZF_EINVAL, c, field,
                "'%s' is not a size: expected bytes with an optional unit (B, KiB, MiB, GiB, kB, "
                "MB, GB), e.g. \"512MiB\"",
                t);
        return false;
    } else if (v == 0) {
        zfi_err(ld, ZF_EINVAL, c, field, "the size must be greater than 0, found '%s'", t);
        return false;
    }
    *out = v;
    return true;
}

bool zfi_want_enum(zfi_loader *ld, const zf_config *c, const char *field, const char *const *names,
                   size_t n, int *out)
{
    const char *t = zfi_want_text(ld, c, field);
    if (!t)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t, names[i]) == 0) {
            *out = (int)i;
            return true;
        }
    }
    char list[256];
    const char *near = zfi_nearest(t, names, n);
    zfi_err(ld, ZF_EINVAL, c, field, "'%s' is not valid here: expected one of %s%s%s%s", t,
            zfi_list(list, sizeof list, names, n), near ? " (did you mean '" : "", near ? near : "",
            near ? "'?)" : "");
    return false;
}

bool zfi_want_id(zfi_loader *ld, const zf_config *c, const char *field, const char *what,
                 const char **out)
{
    const char *t = zfi_want_text(ld, c, field);
    if (!t)
        return false;
    if (!*t) {
        zfi_err(ld, ZF_EINVAL, c, field, "the %s is empty: expected a name", what);
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        if (*p <= ' ' || *p == 0x7f || strchr(">/*$?#", *p)) {
            zfi_err(ld, ZF_EINVAL, c, field,
                    "the %s '%s' contains '%c': expected a name without blanks, control "
                    "characters or any of > / * $ ? # ('>' separates composite ids, the others "
                    "are reserved by Zenoh key expressions and topics)",
                    what, t,
                    *p == ' ' ? ' ' : (char)*p); /* (the diagnostic shows controls as \xNN) */
            return false;
        }
    }
    *out = t;
    return true;
}
