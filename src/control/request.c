/* Control requests and responses: JSON objects, versioned ("v").
 *   {"v":1,"op":"deploy","descriptor":"...","path":"/abs/flow.yaml",
 *    "name":"cam","vars":["K=V"],"start":true}
 *   {"v":1,"ok":true,"result":...}
 *   {"v":1,"ok":false,"error":{"code":"ZF_ENOTFOUND","message":"..."}}
 * Every field is checked for kind and size: a request from a stranger is
 * hostile until proven otherwise. docs/protocol.md is the reference. */
#include "core/common.h"
#include "core/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ID   256
#define MAX_NAME 128
#define MAX_PATH 4096
#define MAX_VARS 1024
#define MAX_VAR  (64u * 1024u)

typedef struct request_impl {
    zf_request r;
    zf_config *tree; /* the strings point into it */
    const char **vars;
} request_impl;

void zf_request_free(zf_request *r)
{
    if (!r)
        return;
    request_impl *x = (request_impl *)r;
    zfi_config_free(x->tree);
    free(x->vars);
    free(x);
}

static zf_err bad(const char *fmt, ...) ZF_PRINTF(1, 2);
static zf_err bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zf_err e = zfi_verror(ZF_EPROTO, fmt, ap);
    va_end(ap);
    return e;
}

/* The offset of the first control character in s (C0, DEL, or C1 as
 * U+0080..U+009F; tab, newline and carriage return allowed when `text`),
 * or -1. The JSON parser already checked s is valid UTF-8. */
static long control_at(const char *s, bool text)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool ws = *p == '\t' || *p == '\n' || *p == '\r';
        if ((*p < 0x20 && !(text && ws)) || *p == 0x7f ||
            (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return (long)(p - (const unsigned char *)s);
    }
    return -1;
}

/* A string field: absent is fine unless required; otherwise a string of
 * 1..max bytes (0 allowed when empty_ok), with no control character (only
 * the descriptor, a text, may hold tabs and line breaks). */
static zf_err str_field(const zf_config *o, const char *key, bool required, size_t max,
                        bool empty_ok, const char **out)
{
    const zf_config *v = zfi_config_member(o, key);
    *out = NULL;
    if (!v) {
        if (required)
            return bad("field '%s' is missing", key);
        return ZF_OK;
    }
    if (v->kind != ZF_CFG_STRING)
        return bad("field '%s' must be a string", key);
    size_t n = strlen(v->text);
    if ((!n && !empty_ok) || n > max)
        return bad("field '%s' must be %s1 to %zu bytes long (got %zu)", key,
                   empty_ok ? "0 or " : "", max, n);
    long at = control_at(v->text, strcmp(key, "descriptor") == 0);
    if (at >= 0)
        return bad("field '%s' holds a control character at byte %ld (expected printable "
                   "UTF-8 text)",
                   key, at);
    *out = v->text;
    return ZF_OK;
}

static bool needs_id(zf_op op)
{
    return op == ZF_OP_STATUS || op == ZF_OP_START || op == ZF_OP_SUSPEND || op == ZF_OP_RESUME ||
           op == ZF_OP_DESTROY || op == ZF_OP_LOGS || op == ZF_OP_ECHO || op == ZF_OP_HZ ||
           op == ZF_OP_RECORD;
}

/* The fields of `logs`: filters, checked like every string, and the
 * follow cursor. */
static zf_err logs_fields(const zf_config *o, zf_request *r)
{
    zf_err e;
    if ((e = str_field(o, "node", false, MAX_NAME, false, &r->node)) != ZF_OK ||
        (e = str_field(o, "level", false, 16, false, &r->level)) != ZF_OK ||
        (e = str_field(o, "grep", false, 256, false, &r->grep)) != ZF_OK ||
        (e = str_field(o, "since", false, 32, false, &r->since)) != ZF_OK)
        return e;
    const zf_config *after = zfi_config_member(o, "after"), *wait = zfi_config_member(o, "wait_ms");
    if (after && (after->kind != ZF_CFG_INT || after->i < 0))
        return bad("field 'after' must be an integer >= 0 (a cursor)");
    if (wait && (wait->kind != ZF_CFG_INT || wait->i < 0 || wait->i > 30000))
        return bad("field 'wait_ms' must be an integer from 0 to 30000");
    r->after = after ? (uint64_t)after->i : 0;
    r->wait_ms = wait ? (int)wait->i : 0;
    bool tap = r->op == ZF_OP_ECHO || r->op == ZF_OP_HZ;
    if ((e = str_field(o, "link", tap, MAX_PATH, false, &r->link)) != ZF_OK)
        return e;
    const zf_config *count = zfi_config_member(o, "count");
    if (count && (count->kind != ZF_CFG_INT || count->i < 0 || count->i > 1000))
        return bad("field 'count' must be an integer from 0 to 1000");
    r->count = count ? (int)count->i : 0;
    if ((e = str_field(o, "file", false, 255, false, &r->file)) != ZF_OK)
        return e;
    const zf_config *mb = zfi_config_member(o, "max_bytes");
    if (mb && (mb->kind != ZF_CFG_INT || mb->i < 0))
        return bad("field 'max_bytes' must be an integer >= 0");
    r->max_bytes = mb ? (uint64_t)mb->i : 0;
    return ZF_OK;
}

static zf_err decode(request_impl *x)
{
    const zf_config *o = x->tree;
    if (o->kind != ZF_CFG_MAP)
        return bad("a request is a JSON object");
    static const char *const known[] = {
        "v",     "op",   "id",    "descriptor", "path",    "name", "vars",  "start", "node",
        "level", "grep", "since", "after",      "wait_ms", "link", "count", "file",  "max_bytes"};
    for (size_t i = 0; i < o->n; i++) {
        bool ok = false;
        for (size_t k = 0; k < ZFI_ARRAY_LEN(known) && !ok; k++)
            ok = strcmp(o->keys[i], known[k]) == 0;
        if (!ok) {
            char key[64];
            size_t k = 0;
            for (const unsigned char *q = (const unsigned char *)o->keys[i]; *q && k < 60; q++)
                key[k++] = *q >= 0x20 && *q < 0x7f ? (char)*q : '?'; /* echoed: printable */
            key[k] = '\0';
            return bad("unknown field '%s'", key);
        }
    }
    const zf_config *v = zfi_config_member(o, "v");
    if (!v)
        return bad("field 'v' (the protocol version, an integer >= 1) is missing");
    if (v->kind != ZF_CFG_INT)
        return bad("field 'v' (the protocol version) must be an integer >= 1, not %s",
                   zf_config_kind_name(v->kind));
    if (v->i < 1)
        return bad("field 'v' (the protocol version) must be an integer >= 1, not %lld",
                   (long long)v->i);
    if (v->i > ZF_PROTOCOL_VERSION)
        return bad("protocol version %lld is newer than this side's %d", (long long)v->i,
                   ZF_PROTOCOL_VERSION);
    x->r.version = (uint32_t)v->i;
    const char *op;
    zf_err e = str_field(o, "op", true, 32, false, &op);
    if (e != ZF_OK)
        return e;
    x->r.op = ZF_OP_COUNT;
    for (int i = 0; i < ZF_OP_COUNT; i++)
        if (strcmp(op, zf_op_name((zf_op)i)) == 0)
            x->r.op = (zf_op)i;
    if (x->r.op == ZF_OP_COUNT)
        return bad("unknown op '%.32s' (expected hello, deploy, list, status, start, suspend, "
                   "resume, destroy, workers, logs, echo, hz or record)",
                   op); /* printable: str_field checked it */
    if ((e = str_field(o, "id", needs_id(x->r.op), MAX_ID, false, &x->r.id)) != ZF_OK)
        return e;
    bool deploy = x->r.op == ZF_OP_DEPLOY;
    if ((e = str_field(o, "descriptor", deploy, ZF_FRAME_MAX, false, &x->r.descriptor)) != ZF_OK ||
        (e = str_field(o, "path", deploy, MAX_PATH, false, &x->r.path)) != ZF_OK ||
        (e = str_field(o, "name", false, MAX_NAME, false, &x->r.name)) != ZF_OK)
        return e;
    if (x->r.path && x->r.path[0] != '/')
        return bad("field 'path' must be an absolute path");
    const zf_config *vars = zfi_config_member(o, "vars");
    if (vars) {
        if (vars->kind != ZF_CFG_SEQ || vars->n > MAX_VARS)
            return bad("field 'vars' must be an array of at most %d strings", MAX_VARS);
        x->vars = zfi_calloc(vars->n, sizeof *x->vars);
        if (!x->vars)
            return zfi_error(ZF_ENOMEM, "out of memory");
        for (size_t i = 0; i < vars->n; i++) {
            const zf_config *kv = vars->items[i];
            if (kv->kind != ZF_CFG_STRING || !strchr(kv->text, '=') || kv->text[0] == '=' ||
                strlen(kv->text) > MAX_VAR)
                return bad("vars[%zu] must be a \"KEY=VALUE\" string", i);
            long at = control_at(kv->text, false);
            if (at >= 0)
                return bad("vars[%zu] holds a control character at byte %ld (expected "
                           "printable UTF-8 text)",
                           i, at);
            x->vars[i] = kv->text;
        }
        x->r.vars = x->vars;
        x->r.n_vars = vars->n;
    }
    if ((e = logs_fields(o, &x->r)) != ZF_OK)
        return e;
    x->r.start = true;
    const zf_config *start = zfi_config_member(o, "start");
    if (start) {
        if (start->kind != ZF_CFG_BOOL)
            return bad("field 'start' must be true or false");
        x->r.start = start->b;
    }
    return ZF_OK;
}

zf_err zf_request_decode(const char *text, size_t len, zf_request **out)
{
    if (!text || !out)
        return zfi_error(ZF_EINVAL, "zf_request_decode: NULL argument");
    *out = NULL;
    request_impl *x = zfi_calloc(1, sizeof *x);
    if (!x)
        return zfi_error(ZF_ENOMEM, "out of memory");
    zf_err e = zf_json_parse(text, len, &x->tree);
    if (e == ZF_OK)
        e = decode(x);
    if (e != ZF_OK) {
        zf_request_free(&x->r);
        return e;
    }
    *out = &x->r;
    return ZF_OK;
}

/* An optional string member: absent when NULL. */
static void optional(zf_json_writer *w, const char *key, const char *val)
{
    if (val)
        zf_json_put_string(w, key, val);
}

char *zf_request_encode(const zf_request *r)
{
    if (!r || (unsigned)r->op >= ZF_OP_COUNT)
        return NULL;
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_int(w, "v", ZF_PROTOCOL_VERSION);
    zf_json_put_string(w, "op", zf_op_name(r->op));
    optional(w, "id", r->id);
    optional(w, "descriptor", r->descriptor);
    optional(w, "path", r->path);
    optional(w, "name", r->name);
    if (r->n_vars) {
        zf_json_open_array(w, "vars");
        for (size_t i = 0; i < r->n_vars; i++)
            zf_json_put_string(w, NULL, r->vars[i]);
        zf_json_close(w);
    }
    if (r->op == ZF_OP_DEPLOY || r->op == ZF_OP_RECORD)
        zf_json_put_bool(w, "start", r->start);
    optional(w, "node", r->node);
    optional(w, "level", r->level);
    optional(w, "grep", r->grep);
    optional(w, "since", r->since);
    if (r->after)
        zf_json_put_uint(w, "after", r->after);
    if (r->wait_ms)
        zf_json_put_int(w, "wait_ms", r->wait_ms);
    optional(w, "link", r->link);
    if (r->count)
        zf_json_put_int(w, "count", r->count);
    optional(w, "file", r->file);
    if (r->max_bytes)
        zf_json_put_uint(w, "max_bytes", r->max_bytes);
    zf_json_close(w);
    return zf_json_writer_finish(w);
}

char *zf_response_ok(const char *result_json)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_int(w, "v", ZF_PROTOCOL_VERSION);
    zf_json_put_bool(w, "ok", true);
    zf_json_put_raw(w, "result", result_json);
    zf_json_close(w);
    return zf_json_writer_finish(w);
}

char *zf_response_error(zf_err code, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_int(w, "v", ZF_PROTOCOL_VERSION);
    zf_json_put_bool(w, "ok", false);
    zf_json_open_object(w, "error");
    zf_json_put_string(w, "code", zf_errname(code));
    zf_json_put_string(w, "message", msg);
    zf_json_close(w);
    zf_json_close(w);
    return zf_json_writer_finish(w);
}
