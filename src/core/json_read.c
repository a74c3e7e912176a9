/* JSON text -> zf_config tree (RFC 8259): the one JSON parser. A
 * recursive-descent parser with a depth limit; strings must be valid UTF-8
 * (no overlong forms, surrogates or code points past U+10FFFF; escapes
 * decoded, \u0000 refused: protocol strings are C strings);
 * numbers become ints when they are integers that fit in 64 bits. */
#include "core/common.h"
#include "core/config.h"
#include "zflow/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH   64
#define MAX_MEMBERS 4096 /* per object: bounds the duplicate-key check */

typedef struct parser {
    const char *s;
    size_t len, pos;
    char msg[128]; /* the first failure */
    bool failed;
} parser;

static void fail(parser *p, const char *what)
{
    if (p->failed)
        return;
    p->failed = true;
    snprintf(p->msg, sizeof p->msg, "JSON: %s at byte %zu", what, p->pos);
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static bool literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return false;
    p->pos += n;
    return true;
}

static int hex4(parser *p)
{
    if (p->len - p->pos < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static void put_utf8(zfi_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    zfi_buf_append(b, u, n);
}

/* A string literal (p->pos at the opening quote); the caller frees it. */
static char *string(parser *p)
{
    p->pos++;
    zfi_buf b;
    zfi_buf_init(&b);
    for (;;) {
        if (p->pos >= p->len) {
            fail(p, "unterminated string");
            break;
        }
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c == '"')
            return zfi_buf_steal(&b);
        if (c < 0x20) {
            fail(p, "control character in a string");
            break;
        }
        if (c >= 0x80) {
            size_t k = zfi_utf8_len((const unsigned char *)p->s + p->pos - 1, p->len - p->pos + 1);
            if (!k) {
                p->pos--;
                fail(p, "invalid UTF-8 in a string");
                break;
            }
            zfi_buf_append(&b, p->s + p->pos - 1, k);
            p->pos += k - 1;
            continue;
        }
        if (c != '\\') {
            zfi_buf_append(&b, (const char *)&c, 1);
            continue;
        }
        if (p->pos >= p->len) {
            fail(p, "unterminated escape");
            break;
        }
        char e = p->s[p->pos++];
        const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
        const char *m = strchr(map, e);
        if (e && m && ((m - map) % 2 == 0)) {
            zfi_buf_append(&b, m + 1, 1);
            continue;
        }
        if (e != 'u') {
            fail(p, "bad escape in a string");
            break;
        }
        int cp = hex4(p);
        if (cp >= 0xd800 && cp <= 0xdbff) {
            int lo = -1;
            if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
                p->pos += 2;
                lo = hex4(p);
            }
            if (lo < 0xdc00 || lo > 0xdfff) {
                fail(p, "unpaired surrogate in a string");
                break;
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp < 0 || (cp >= 0xdc00 && cp <= 0xdfff)) {
            fail(p, "bad \\u escape in a string");
            break;
        }
        if (cp == 0) {
            fail(p, "\\u0000 in a string");
            break;
        }
        put_utf8(&b, (unsigned)cp);
    }
    zfi_buf_free(&b);
    return NULL;
}

static zf_config *number(parser *p)
{
    size_t start = p->pos;
    if (p->pos < p->len && p->s[p->pos] == '-')
        p->pos++;
    size_t digits = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    if (p->pos == digits || (p->s[digits] == '0' && p->pos - digits > 1)) {
        fail(p, "bad number");
        return NULL;
    }
    if (p->pos < p->len && p->s[p->pos] == '.') {
        size_t f = ++p->pos;
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
            p->pos++;
        if (p->pos == f) {
            fail(p, "bad number");
            return NULL;
        }
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        size_t x = p->pos;
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
            p->pos++;
        if (p->pos == x) {
            fail(p, "bad number");
            return NULL;
        }
    }
    char *text = zfi_strndup(p->s + start, p->pos - start);
    if (!text) {
        fail(p, "out of memory");
        return NULL;
    }
    zf_config *c = zfi_config_scalar(text, false, NULL, 0, 0);
    free(text);
    if (!c)
        fail(p, "out of memory");
    return c;
}

static zf_config *value(parser *p, int depth);

static zf_config *container(parser *p, int depth, bool object)
{
    char close = object ? '}' : ']';
    zf_config *c = zfi_config_new(object ? ZF_CFG_MAP : ZF_CFG_SEQ, NULL, 0, 0);
    if (!c) {
        fail(p, "out of memory");
        return NULL;
    }
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return c;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"') {
                fail(p, "expected a string key");
                break;
            }
            key = string(p);
            if (!key)
                break;
            if (c->n >= MAX_MEMBERS) {
                fail(p, "more than 4096 members in one object");
                free(key);
                break;
            }
            if (zfi_config_member(c, key)) {
                fail(p, "duplicate key");
                free(key);
                break;
            }
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                fail(p, "expected ':'");
                free(key);
                break;
            }
            p->pos++;
        }
        zf_config *v = value(p, depth + 1);
        bool ok = v && (object ? zfi_config_map_add(c, key, v) : zfi_config_seq_push(c, v));
        free(key);
        if (!ok) {
            zfi_config_free(v);
            fail(p, "out of memory");
            break;
        }
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return c;
        }
        fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    zfi_config_free(c);
    return NULL;
}

static zf_config *value(parser *p, int depth)
{
    if (depth > MAX_DEPTH) {
        fail(p, "nested too deeply");
        return NULL;
    }
    skip_ws(p);
    if (p->pos >= p->len) {
        fail(p, "unexpected end");
        return NULL;
    }
    char c = p->s[p->pos];
    if (c == '{' || c == '[')
        return container(p, depth, c == '{');
    if (c == '"') {
        char *s = string(p);
        if (!s)
            return NULL;
        zf_config *v = zfi_config_scalar(s, true, NULL, 0, 0);
        free(s);
        if (!v)
            fail(p, "out of memory");
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return number(p);
    const char *word = literal(p, "true")    ? "true"
                       : literal(p, "false") ? "false"
                       : literal(p, "null")  ? "null"
                                             : NULL;
    if (!word) {
        fail(p, "unexpected character");
        return NULL;
    }
    zf_config *v = zfi_config_scalar(word, false, NULL, 0, 0);
    if (!v)
        fail(p, "out of memory");
    return v;
}

zf_err zf_json_parse(const char *text, size_t len, zf_config **out)
{
    if (!text || !out)
        return zfi_error(ZF_EINVAL, "zf_json_parse: NULL argument");
    *out = NULL;
    parser p = {.s = text, .len = len};
    zf_config *v = value(&p, 0);
    if (v) {
        skip_ws(&p);
        if (p.pos != p.len) {
            fail(&p, "trailing characters");
            zfi_config_free(v);
            v = NULL;
        }
    }
    if (!v)
        return zfi_error(ZF_EPARSE, "%s", p.msg);
    *out = v;
    return ZF_OK;
}
