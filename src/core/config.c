/* The configuration tree (zf_config): construction, YAML 1.2 core-schema
 * scalars, clone, merge, the public read-only accessors and zf_config_free.
 * Parsers: src/graph/tree.c (YAML), src/core/json_read.c (JSON); writing it
 * as JSON: src/core/json_write.c. */
#include "core/config.h"
#include "core/common.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

zf_config *zfi_config_new(zf_config_kind kind, const char *file, unsigned line, unsigned col)
{
    zf_config *c = zfi_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->kind = kind;
    c->file = file;
    c->line = line;
    c->col = col;
    return c;
}

/* ---- YAML 1.2 core schema ---- */

static bool is_null(const char *s)
{
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int is_bool(const char *s)
{
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return 1;
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return 0;
    return -1;
}

static bool all_digits(const char *p, int base)
{
    if (!*p)
        return false;
    for (; *p; p++) {
        int c = (unsigned char)*p;
        bool ok = base == 16 ? isxdigit(c) : base == 8 ? (c >= '0' && c <= '7') : isdigit(c);
        if (!ok)
            return false;
    }
    return true;
}

static bool float_syntax(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t before = 0, after = 0;
    while (isdigit((unsigned char)*p))
        p++, before++;
    bool dot = *p == '.';
    if (dot) {
        p++;
        while (isdigit((unsigned char)*p))
            p++, after++;
    }
    if (!before && !after)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

zf_config_kind zfi_config_resolve(const char *s, bool *b, int64_t *i, double *f)
{
    *b = false;
    *i = 0;
    *f = 0;
    if (is_null(s))
        return ZF_CFG_NULL;
    int bv = is_bool(s);
    if (bv >= 0) {
        *b = bv;
        return ZF_CFG_BOOL;
    }
    int base = 0;
    const char *digits = s;
    if (s[0] == '0' && s[1] == 'x')
        base = 16, digits = s + 2;
    else if (s[0] == '0' && s[1] == 'o')
        base = 8, digits = s + 2;
    if (base) {
        if (!all_digits(digits, base))
            return ZF_CFG_STRING;
        errno = 0;
        unsigned long long v = strtoull(digits, NULL, base);
        if (errno || v > INT64_MAX)
            return ZF_CFG_STRING;
        *i = (int64_t)v;
        *f = (double)v;
        return ZF_CFG_INT;
    }
    const char *p = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    if (all_digits(p, 10)) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == ERANGE) { /* beyond 64 bits: keep the magnitude */
            *f = strtod(s, NULL);
            return ZF_CFG_FLOAT;
        }
        *i = v;
        *f = (double)v;
        return ZF_CFG_INT;
    }
    if (float_syntax(s)) {
        *f = strtod(s, NULL);
        return ZF_CFG_FLOAT;
    }
    const char *q = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    if (!strcmp(q, ".inf") || !strcmp(q, ".Inf") || !strcmp(q, ".INF")) {
        *f = s[0] == '-' ? -INFINITY : INFINITY;
        return ZF_CFG_FLOAT;
    }
    if (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN")) {
        *f = NAN;
        return ZF_CFG_FLOAT;
    }
    return ZF_CFG_STRING;
}

zf_config *zfi_config_scalar(const char *text, bool quoted, const char *file, unsigned line,
                             unsigned col)
{
    zf_config *c = zfi_config_new(ZF_CFG_STRING, file, line, col);
    if (!c)
        return NULL;
    c->text = zfi_strdup(text ? text : "");
    if (!c->text) {
        free(c);
        return NULL;
    }
    c->quoted = quoted;
    if (!quoted)
        c->kind = zfi_config_resolve(c->text, &c->b, &c->i, &c->f);
    return c;
}

void zfi_config_free(zf_config *c)
{
    if (!c)
        return;
    for (size_t k = 0; k < c->n; k++) {
        if (c->keys)
            free(c->keys[k]);
        zfi_config_free(c->items[k]);
    }
    free(c->keys);
    free(c->key_marks);
    free(c->items);
    free(c->text);
    free(c);
}

static bool reserve(zf_config *c, size_t need)
{
    if (need <= c->cap)
        return true;
    size_t ncap = c->cap ? c->cap * 2 : 4;
    while (ncap < need)
        ncap *= 2;
    zf_config **items = realloc(c->items, ncap * sizeof *items);
    if (!items)
        return false;
    c->items = items;
    if (c->kind == ZF_CFG_MAP) {
        char **keys = realloc(c->keys, ncap * sizeof *keys);
        if (!keys)
            return false;
        c->keys = keys;
        zfi_mark *marks = realloc(c->key_marks, ncap * sizeof *marks);
        if (!marks)
            return false;
        c->key_marks = marks;
    }
    c->cap = ncap;
    return true;
}

bool zfi_config_map_add_at(zf_config *map, const char *key, zf_config *v, unsigned line,
                           unsigned col)
{
    if (!map || map->kind != ZF_CFG_MAP || !key || !v || !reserve(map, map->n + 1))
        return false;
    char *k = zfi_strdup(key);
    if (!k)
        return false;
    map->keys[map->n] = k;
    map->key_marks[map->n] = (zfi_mark){line, col};
    map->items[map->n++] = v;
    return true;
}

bool zfi_config_map_add(zf_config *map, const char *key, zf_config *v)
{
    return zfi_config_map_add_at(map, key, v, 0, 0);
}

static bool map_copy(zf_config *map, const zf_config *from, size_t k, zf_config *v)
{
    zfi_mark m = from->key_marks ? from->key_marks[k] : (zfi_mark){0, 0};
    return zfi_config_map_add_at(map, from->keys[k], v, m.line, m.col);
}

bool zfi_config_map_set(zf_config *map, const char *key, zf_config *v)
{
    if (!map || map->kind != ZF_CFG_MAP || !key || !v)
        return false;
    for (size_t k = 0; k < map->n; k++) {
        if (strcmp(map->keys[k], key) == 0) {
            zfi_config_free(map->items[k]);
            map->items[k] = v;
            return true;
        }
    }
    return zfi_config_map_add(map, key, v);
}

bool zfi_config_seq_push(zf_config *seq, zf_config *v)
{
    if (!seq || seq->kind != ZF_CFG_SEQ || !v || !reserve(seq, seq->n + 1))
        return false;
    seq->items[seq->n++] = v;
    return true;
}

zf_config *zfi_config_member(const zf_config *map, const char *key)
{
    if (!map || map->kind != ZF_CFG_MAP || !key)
        return NULL;
    for (size_t k = 0; k < map->n; k++)
        if (strcmp(map->keys[k], key) == 0)
            return map->items[k];
    return NULL;
}

zf_config *zfi_config_clone(const zf_config *c)
{
    if (!c)
        return NULL;
    zf_config *d = zfi_config_new(c->kind, c->file, c->line, c->col);
    if (!d)
        return NULL;
    d->quoted = c->quoted;
    d->b = c->b;
    d->i = c->i;
    d->f = c->f;
    if (c->text && !(d->text = zfi_strdup(c->text)))
        goto fail;
    if (c->kind == ZF_CFG_MAP || c->kind == ZF_CFG_SEQ) {
        if (!reserve(d, c->n))
            goto fail;
        for (size_t k = 0; k < c->n; k++) {
            zf_config *item = zfi_config_clone(c->items[k]);
            bool ok = item && (c->kind == ZF_CFG_MAP ? map_copy(d, c, k, item)
                                                     : zfi_config_seq_push(d, item));
            if (!ok) {
                zfi_config_free(item);
                goto fail;
            }
        }
    }
    return d;
fail:
    zfi_config_free(d);
    return NULL;
}

size_t zfi_config_count(const zf_config *c, size_t *depth)
{
    size_t n = 1, deepest = 0;
    for (size_t k = 0; c && k < c->n; k++) {
        size_t d = 0;
        n += zfi_config_count(c->items[k], &d);
        if (d > deepest)
            deepest = d;
    }
    if (depth)
        *depth = deepest + 1;
    return n;
}

/* Keys of `low` in their order (recursively merged with high's when both
 * are maps, else high's value), then high's other keys. */
zf_config *zfi_config_merge(const zf_config *high, const zf_config *low)
{
    if (!high || high->kind == ZF_CFG_NULL)
        return zfi_config_clone(low);
    if (!low || low->kind != ZF_CFG_MAP || high->kind != ZF_CFG_MAP)
        return zfi_config_clone(high);
    zf_config *m = zfi_config_new(ZF_CFG_MAP, high->file, high->line, high->col);
    if (!m)
        return NULL;
    for (size_t k = 0; k < low->n; k++) {
        const zf_config *h = zfi_config_member(high, low->keys[k]);
        /* As Zenoh-Flow: a key set higher replaces the lower value whole. */
        zf_config *v = zfi_config_clone(h ? h : low->items[k]);
        if (!v || !map_copy(m, low, k, v)) {
            zfi_config_free(v);
            goto fail;
        }
    }
    for (size_t k = 0; k < high->n; k++) {
        if (zfi_config_member(low, high->keys[k]))
            continue;
        zf_config *v = zfi_config_clone(high->items[k]);
        if (!v || !map_copy(m, high, k, v)) {
            zfi_config_free(v);
            goto fail;
        }
    }
    return m;
fail:
    zfi_config_free(m);
    return NULL;
}

/* ---- public accessors ---- */

zf_config_kind zf_config_kind_of(const zf_config *c)
{
    return c ? c->kind : ZF_CFG_NULL;
}

static const zf_config *member_n(const zf_config *c, const char *key, size_t len)
{
    for (size_t k = 0; k < c->n; k++)
        if (strlen(c->keys[k]) == len && memcmp(c->keys[k], key, len) == 0)
            return c->items[k];
    return NULL;
}

const zf_config *zf_config_get(const zf_config *c, const char *key)
{
    if (!c || c->kind != ZF_CFG_MAP || !key)
        return NULL;
    /* descend first; a key that itself contains dots is the fallback */
    for (const char *dot = strchr(key, '.'); dot; dot = strchr(dot + 1, '.')) {
        const zf_config *sub = member_n(c, key, (size_t)(dot - key)), *v;
        if (sub && (v = zf_config_get(sub, dot + 1)))
            return v;
    }
    return zfi_config_member(c, key);
}

size_t zf_config_len(const zf_config *c)
{
    return c && (c->kind == ZF_CFG_MAP || c->kind == ZF_CFG_SEQ) ? c->n : 0;
}

const zf_config *zf_config_at(const zf_config *c, size_t i)
{
    return c && (c->kind == ZF_CFG_MAP || c->kind == ZF_CFG_SEQ) && i < c->n ? c->items[i] : NULL;
}

const char *zf_config_key_at(const zf_config *c, size_t i)
{
    return c && c->kind == ZF_CFG_MAP && i < c->n ? c->keys[i] : NULL;
}

const char *zf_config_text(const zf_config *c)
{
    return c && c->kind != ZF_CFG_MAP && c->kind != ZF_CFG_SEQ ? (c->text ? c->text : "") : NULL;
}

/* The value to read: NULL when absent or null (the default applies). */
static const zf_config *lookup(const zf_config *c, const char *key)
{
    const zf_config *v = key && *key ? zf_config_get(c, key) : c;
    return v && v->kind != ZF_CFG_NULL ? v : NULL;
}

static zf_err wrong(const char *key, const zf_config *v, const char *want)
{
    return zfi_error(ZF_ETYPE, "configuration '%s' is %s, expected %s", key ? key : "",
                     zf_config_kind_name(v->kind), want);
}

zf_err zf_config_string(const zf_config *c, const char *key, const char *def, const char **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_config_string: out is NULL");
    *out = def;
    const zf_config *v = lookup(c, key);
    if (!v)
        return ZF_OK;
    if (v->kind != ZF_CFG_STRING)
        return wrong(key, v, "a string");
    *out = v->text ? v->text : "";
    return ZF_OK;
}

zf_err zf_config_int(const zf_config *c, const char *key, int64_t def, int64_t *out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_config_int: out is NULL");
    *out = def;
    const zf_config *v = lookup(c, key);
    if (!v)
        return ZF_OK;
    if (v->kind != ZF_CFG_INT)
        return wrong(key, v, "an integer");
    *out = v->i;
    return ZF_OK;
}

zf_err zf_config_float(const zf_config *c, const char *key, double def, double *out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_config_float: out is NULL");
    *out = def;
    const zf_config *v = lookup(c, key);
    if (!v)
        return ZF_OK;
    if (v->kind != ZF_CFG_FLOAT && v->kind != ZF_CFG_INT)
        return wrong(key, v, "a number");
    *out = v->f;
    return ZF_OK;
}

zf_err zf_config_bool(const zf_config *c, const char *key, bool def, bool *out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_config_bool: out is NULL");
    *out = def;
    const zf_config *v = lookup(c, key);
    if (!v)
        return ZF_OK;
    if (v->kind != ZF_CFG_BOOL)
        return wrong(key, v, "a boolean");
    *out = v->b;
    return ZF_OK;
}

void zf_config_free(zf_config *c)
{
    zfi_config_free(c);
}
