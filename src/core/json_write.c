/* The JSON writer (zflow/json.h): the one the library and its programs
 * write JSON with -- control replies and requests, the flattened graph,
 * configuration trees, zfd's and zfctl's output. Values are appended in
 * order to a zfi_buf; a stack of open containers decides where commas go and
 * whether a key is wanted. The first failure sticks (zflow/json.h). */
#include "core/common.h"
#include "core/config.h"
#include "zflow/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zf_json_writer {
    zfi_buf b;
    const char *failed; /* the first failure, or NULL */
    unsigned depth;     /* containers open */
    bool top_done;      /* the top-level value is written */
    bool first[ZF_JSON_MAX_DEPTH + 1];
    char closer[ZF_JSON_MAX_DEPTH + 1]; /* '}' or ']' per open container */
};

/* A JSON string literal: control characters escaped, invalid UTF-8 bytes
 * written as U+FFFD (the result is always valid JSON); NULL gives null. */
static void quoted(zfi_buf *b, const char *s)
{
    if (!s) {
        zfi_buf_puts(b, "null");
        return;
    }
    zfi_buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            zfi_buf_puts(b, "\\\"");
            break;
        case '\\':
            zfi_buf_puts(b, "\\\\");
            break;
        case '\n':
            zfi_buf_puts(b, "\\n");
            break;
        case '\r':
            zfi_buf_puts(b, "\\r");
            break;
        case '\t':
            zfi_buf_puts(b, "\\t");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                zfi_buf_printf(b, "\\u%04x", *p);
            } else if (*p < 0x80) {
                zfi_buf_append(b, (const char *)p, 1);
            } else {
                /* Valid UTF-8 as is; any other byte (a file name's, a
                 * node's message) becomes U+FFFD: the output is JSON. */
                size_t k = zfi_utf8_len(p, strnlen((const char *)p, 4));
                if (k) {
                    zfi_buf_append(b, (const char *)p, k);
                    p += k - 1;
                } else {
                    zfi_buf_puts(b, "\\ufffd");
                }
            }
        }
    }
    zfi_buf_append(b, "\"", 1);
}

static void fail(zf_json_writer *w, const char *why)
{
    if (!w->failed)
        w->failed = why;
}

/* Where a value goes: the comma and the key. False when it must not. */
static bool place(zf_json_writer *w, const char *key)
{
    if (!w || w->failed)
        return false;
    if (w->b.failed) {
        fail(w, "out of memory");
        return false;
    }
    if (w->depth == 0) {
        if (w->top_done) {
            fail(w, "a second value at the top level");
            return false;
        }
        if (key) {
            fail(w, "a key at the top level");
            return false;
        }
        w->top_done = true;
        return true;
    }
    bool in_object = w->closer[w->depth] == '}';
    if (in_object != (key != NULL)) {
        fail(w, in_object ? "a value without a key inside an object" : "a key inside an array");
        return false;
    }
    if (!w->first[w->depth])
        zfi_buf_append(&w->b, ",", 1);
    w->first[w->depth] = false;
    if (key) {
        quoted(&w->b, key);
        zfi_buf_append(&w->b, ":", 1);
    }
    return true;
}

zf_json_writer *zf_json_writer_new(void)
{
    zf_json_writer *w = zfi_calloc(1, sizeof *w);
    if (w)
        zfi_buf_init(&w->b);
    return w;
}

void zf_json_writer_free(zf_json_writer *w)
{
    if (!w)
        return;
    zfi_buf_free(&w->b);
    free(w);
}

char *zf_json_writer_finish(zf_json_writer *w)
{
    if (!w) {
        zfi_error(ZF_ENOMEM, "JSON writer: out of memory");
        return NULL;
    }
    if (!w->failed && w->b.failed)
        w->failed = "out of memory";
    if (!w->failed && w->depth)
        w->failed = "an object or array left open";
    if (!w->failed && !w->top_done)
        w->failed = "nothing written";
    char *s = NULL;
    if (w->failed)
        zfi_error(w->b.failed ? ZF_ENOMEM : ZF_EINVAL, "JSON writer: %s", w->failed);
    else
        s = zfi_buf_steal(&w->b);
    zf_json_writer_free(w);
    return s;
}

static void open_container(zf_json_writer *w, const char *key, char open, char close)
{
    if (!place(w, key))
        return;
    if (w->depth == ZF_JSON_MAX_DEPTH) {
        fail(w, "nested deeper than ZF_JSON_MAX_DEPTH");
        return;
    }
    zfi_buf_append(&w->b, &open, 1);
    w->depth++;
    w->first[w->depth] = true;
    w->closer[w->depth] = close;
}

void zf_json_open_object(zf_json_writer *w, const char *key)
{
    open_container(w, key, '{', '}');
}

void zf_json_open_array(zf_json_writer *w, const char *key)
{
    open_container(w, key, '[', ']');
}

void zf_json_close(zf_json_writer *w)
{
    if (!w || w->failed)
        return;
    if (!w->depth) {
        fail(w, "a close with nothing open");
        return;
    }
    zfi_buf_append(&w->b, &w->closer[w->depth], 1);
    w->depth--;
}

void zf_json_put_string(zf_json_writer *w, const char *key, const char *v)
{
    if (place(w, key))
        quoted(&w->b, v);
}

void zf_json_put_int(zf_json_writer *w, const char *key, int64_t v)
{
    if (place(w, key))
        zfi_buf_printf(&w->b, "%" PRId64, v);
}

void zf_json_put_uint(zf_json_writer *w, const char *key, uint64_t v)
{
    if (place(w, key))
        zfi_buf_printf(&w->b, "%" PRIu64, v);
}

void zf_json_put_double(zf_json_writer *w, const char *key, double f)
{
    if (!place(w, key))
        return;
    if (!isfinite(f)) { /* JSON has no inf / nan */
        zfi_buf_puts(&w->b, "null");
        return;
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.15g", f);
    if (strtod(tmp, NULL) != f)
        snprintf(tmp, sizeof tmp, "%.17g", f);
    zfi_buf_puts(&w->b, tmp);
    if (!strpbrk(tmp, ".eE"))
        zfi_buf_puts(&w->b, ".0");
}

void zf_json_put_bool(zf_json_writer *w, const char *key, bool v)
{
    if (place(w, key))
        zfi_buf_puts(&w->b, v ? "true" : "false");
}

void zf_json_put_null(zf_json_writer *w, const char *key)
{
    if (place(w, key))
        zfi_buf_puts(&w->b, "null");
}

void zf_json_put_raw(zf_json_writer *w, const char *key, const char *json)
{
    if (place(w, key))
        zfi_buf_puts(&w->b, json ? json : "null");
}

void zf_json_put_config(zf_json_writer *w, const char *key, const zf_config *c)
{
    switch (c ? c->kind : ZF_CFG_NULL) {
    case ZF_CFG_NULL:
        zf_json_put_null(w, key);
        break;
    case ZF_CFG_BOOL:
        zf_json_put_bool(w, key, c->b);
        break;
    case ZF_CFG_INT:
        zf_json_put_int(w, key, c->i);
        break;
    case ZF_CFG_FLOAT:
        zf_json_put_double(w, key, c->f);
        break;
    case ZF_CFG_STRING:
        zf_json_put_string(w, key, c->text ? c->text : "");
        break;
    case ZF_CFG_SEQ:
    case ZF_CFG_MAP: {
        bool map = c->kind == ZF_CFG_MAP;
        if (map)
            zf_json_open_object(w, key);
        else
            zf_json_open_array(w, key);
        for (size_t k = 0; k < c->n; k++)
            zf_json_put_config(w, map ? c->keys[k] : NULL, c->items[k]);
        zf_json_close(w);
        break;
    }
    }
}

char *zf_config_to_json(const zf_config *c)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_put_config(w, NULL, c);
    return zf_json_writer_finish(w);
}
