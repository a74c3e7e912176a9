/* `vars` and mustache substitution, done on the text before YAML parsing as
 * Zenoh-Flow does, keeping a map from rendered offsets back to the source so
 * that every error still points at the right line and column. */
#include "graph/loader.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- variables ---- */

void zfi_vars_free(zfi_vars *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->keys[i]);
        free(v->vals[i]);
    }
    free(v->keys);
    free(v->vals);
    memset(v, 0, sizeof *v);
}

const char *zfi_vars_get(const zfi_vars *v, const char *key)
{
    for (size_t i = 0; v && i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->vals[i];
    return NULL;
}

bool zfi_vars_set(zfi_vars *v, const char *key, const char *val)
{
    char *nv = zfi_strdup(val ? val : "");
    if (!nv)
        return false;
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->keys[i], key) == 0) {
            free(v->vals[i]);
            v->vals[i] = nv;
            return true;
        }
    }
    size_t cap = v->cap;
    char *nk = zfi_strdup(key);
    if (!nk || !zfi_grow((void **)&v->keys, &cap, v->n + 1, sizeof *v->keys)) {
        free(nk);
        free(nv);
        return false;
    }
    cap = v->cap;
    if (!zfi_grow((void **)&v->vals, &cap, v->n + 1, sizeof *v->vals)) {
        free(nk);
        free(nv);
        return false;
    }
    v->cap = cap;
    v->keys[v->n] = nk;
    v->vals[v->n++] = nv;
    return true;
}

bool zfi_vars_overlay(zfi_vars *v, const zfi_vars *high)
{
    for (size_t i = 0; high && i < high->n; i++)
        if (!zfi_vars_set(v, high->keys[i], high->vals[i]))
            return false;
    return true;
}

/* ---- positions ---- */

/* Line starts, counting breaks as libyaml does: \r\n, \r, \n, NEL, LS, PS. */
static bool line_table(const char *t, size_t len, size_t **out, size_t *n)
{
    size_t cap = 0, count = 0;
    size_t *lines = NULL;
    if (!zfi_grow((void **)&lines, &cap, 1, sizeof *lines))
        return false;
    lines[count++] = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)t[i];
        size_t brk = 0;
        if (c == '\r')
            brk = (i + 1 < len && t[i + 1] == '\n') ? 2 : 1;
        else if (c == '\n')
            brk = 1;
        else if (c == 0xC2 && i + 1 < len && (unsigned char)t[i + 1] == 0x85)
            brk = 2;
        else if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
                 ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9))
            brk = 3;
        if (!brk)
            continue;
        i += brk - 1;
        if (!zfi_grow((void **)&lines, &cap, count + 1, sizeof *lines)) {
            free(lines);
            return false;
        }
        lines[count++] = i + 1;
    }
    *out = lines;
    *n = count;
    return true;
}

static size_t advance_chars(const char *t, size_t len, size_t off, size_t chars)
{
    while (chars-- && off < len) {
        off++;
        while (off < len && ((unsigned char)t[off] & 0xC0) == 0x80)
            off++;
    }
    return off;
}

static size_t count_chars(const char *t, size_t from, size_t to)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++)
        if (((unsigned char)t[i] & 0xC0) != 0x80)
            n++;
    return n;
}

bool zfi_src_identity(zfi_src *s, const char *file, const char *text, size_t len)
{
    memset(s, 0, sizeof *s);
    s->file = file;
    s->orig = s->text = text;
    s->orig_len = s->len = len;
    return line_table(text, len, &s->olines, &s->n_olines);
}

void zfi_src_free(zfi_src *s)
{
    free(s->owned);
    free(s->segs);
    if (s->rlines != s->olines)
        free(s->rlines);
    free(s->olines);
    memset(s, 0, sizeof *s);
}

size_t zfi_src_offset(const zfi_src *s, size_t line, size_t col)
{
    const size_t *lines = s->rlines ? s->rlines : s->olines;
    size_t n = s->rlines ? s->n_rlines : s->n_olines;
    if (!lines || line >= n)
        return s->len;
    zfi_src *m = (zfi_src *)(uintptr_t)s; /* only the lookup cache changes */
    size_t off = m->off_ok && m->off_line == line && m->off_col <= col
                     ? advance_chars(s->text, s->len, m->off_at, col - m->off_col)
                     : advance_chars(s->text, s->len, lines[line], col);
    m->off_ok = true;
    m->off_line = line;
    m->off_col = col;
    m->off_at = off;
    return off;
}

static size_t to_orig(const zfi_src *s, size_t off)
{
    if (!s->segs)
        return off < s->orig_len ? off : s->orig_len;
    size_t lo = 0, hi = s->n_segs; /* last segment with out <= off */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->segs[mid].out <= off)
            lo = mid;
        else
            hi = mid;
    }
    const zfi_seg *g = &s->segs[lo];
    if (!g->copy)
        return g->in;
    size_t d = off > g->out ? off - g->out : 0;
    if (d > g->len)
        d = g->len;
    return g->in + d;
}

/* Source offset -> 1-based line and column. */
static void orig_pos(const zfi_src *s, size_t o, unsigned *line, unsigned *col)
{
    size_t lo = 0, hi = s->n_olines;
    if (!hi) {
        *line = 1;
        *col = 1;
        return;
    }
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->olines[mid] <= o)
            lo = mid;
        else
            hi = mid;
    }
    zfi_src *m = (zfi_src *)(uintptr_t)s; /* only the lookup cache changes */
    size_t c = m->pos_ok && m->pos_line == lo && m->pos_at <= o
                   ? m->pos_chars + count_chars(s->orig, m->pos_at, o)
                   : count_chars(s->orig, s->olines[lo], o);
    m->pos_ok = true;
    m->pos_line = lo;
    m->pos_at = o;
    m->pos_chars = c;
    *line = lo + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)(lo + 1);
    *col = c + 1 > UINT32_MAX ? UINT32_MAX : (unsigned)(c + 1);
}

void zfi_src_pos(const zfi_src *s, size_t off, unsigned *line, unsigned *col)
{
    orig_pos(s, to_orig(s, off), line, col);
}

/* ---- mustache ---- */

typedef struct tag {
    size_t start, end;     /* the tag's bytes in the text */
    size_t name, name_len; /* the variable name (trimmed) */
    enum { TAG_VAR, TAG_COMMENT, TAG_UNSUPPORTED, TAG_UNCLOSED, TAG_EMPTY } kind;
} tag;

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Find the next "{{" at or after i and describe the tag; false when none. */
static bool next_tag(const char *t, size_t len, size_t i, tag *g)
{
    size_t p = i;
    for (;; p++) {
        if (p + 1 >= len)
            return false;
        if (t[p] == '{' && t[p + 1] == '{')
            break;
    }
    memset(g, 0, sizeof *g);
    g->start = p;
    bool triple = p + 2 < len && t[p + 2] == '{';
    size_t open = triple ? 3 : 2, close = open;
    size_t q = p + open;
    for (;; q++) {
        if (q + close > len || t[q] == '\n' || t[q] == '\r') {
            g->kind = TAG_UNCLOSED;
            g->end = p + open;
            return true;
        }
        if (t[q] == '}' && t[q + 1] == '}' && (!triple || t[q + 2] == '}'))
            break;
    }
    g->end = q + close;
    size_t a = p + open, b = q;
    while (a < b && blank(t[a]))
        a++;
    while (b > a && blank(t[b - 1]))
        b--;
    g->kind = TAG_VAR;
    if (!triple && a < b) {
        if (t[a] == '!') {
            g->kind = TAG_COMMENT;
            return true;
        }
        if (t[a] == '&') {
            a++;
            while (a < b && blank(t[a]))
                a++;
        } else if (strchr("#^/>=", t[a])) {
            g->kind = TAG_UNSUPPORTED;
        }
    }
    g->name = a;
    g->name_len = b - a;
    if (g->kind == TAG_VAR && a == b)
        g->kind = TAG_EMPTY;
    return true;
}

static bool add_seg(zfi_src *s, size_t in, size_t len, bool copy)
{
    if (!len)
        return true;
    if (!zfi_grow((void **)&s->segs, &s->cap_segs, s->n_segs + 1, sizeof *s->segs))
        return false;
    s->segs[s->n_segs++] = (zfi_seg){.out = s->len, .in = in, .len = len, .copy = copy};
    return true;
}

static bool emit(zfi_src *s, zfi_buf *out, const char *p, size_t n, size_t in, bool copy)
{
    if (!add_seg(s, in, n, copy))
        return false;
    zfi_buf_append(out, p, n);
    s->len += n;
    return !out->failed;
}

void zfi_unbound_free(zfi_unbound *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(u[i].name);
    free(u);
}

zf_err zfi_render(zfi_src *s, const char *text, size_t len, const zfi_vars *vars, zf_diag *diag,
                  zfi_unbound **unb, size_t *n_unb)
{
    const char *file = s->file;
    zf_err rc = ZF_OK;
    *unb = NULL;
    *n_unb = 0;
    size_t cap_unb = 0;
    memset(s, 0, sizeof *s);
    s->file = file;
    s->orig = text;
    s->orig_len = len;
    if (!line_table(text, len, &s->olines, &s->n_olines))
        return ZF_ENOMEM;
    zfi_buf out;
    zfi_buf_init(&out);
    size_t i = 0;
    tag g;
    while (next_tag(text, len, i, &g)) {
        unsigned line, col;
        if (!emit(s, &out, text + i, g.start - i, i, true))
            goto oom;
        orig_pos(s, g.start, &line, &col);
        i = g.end;
        if (g.kind == TAG_UNCLOSED) {
            rc = zfi_diag_add(diag, ZF_EINVAL, file, line, col, "",
                              "unclosed mustache tag: found '{{' without '}}' on the same line; "
                              "expected a variable like {{ NAME }}");
            if (!emit(s, &out, text + g.start, g.end - g.start, g.start, true))
                goto oom;
            continue;
        }
        if (g.kind == TAG_COMMENT)
            continue;
        if (g.kind == TAG_UNSUPPORTED || g.kind == TAG_EMPTY) {
            rc = zfi_diag_add(diag, ZF_EINVAL, file, line, col, "",
                              "unsupported mustache tag '%.*s': zflow substitutes variables "
                              "only, expected {{ NAME }}",
                              (int)(g.end - g.start > 64 ? 64 : g.end - g.start), text + g.start);
            continue;
        }
        char *name = zfi_strndup(text + g.name, g.name_len);
        if (!name)
            goto oom;
        const char *val = zfi_vars_get(vars, name);
        if (!val) {
            if (!zfi_grow((void **)unb, &cap_unb, *n_unb + 1, sizeof **unb)) {
                free(name);
                goto oom;
            }
            (*unb)[(*n_unb)++] =
                (zfi_unbound){.roff = s->len, .line = line, .col = col, .name = name};
            continue;
        }
        free(name);
        if (s->len + strlen(val) > ZFI_MAX_RENDERED) {
            zfi_diag_add(diag, ZF_EINVAL, file, line, col, "",
                         "the descriptor grows beyond %u bytes once its variables are "
                         "substituted",
                         ZFI_MAX_RENDERED);
            zfi_buf_free(&out);
            return ZF_EINVAL;
        }
        if (!emit(s, &out, val, strlen(val), g.start, false))
            goto oom;
    }
    if (!emit(s, &out, text + i, len - i, i, true))
        goto oom;
    s->owned = zfi_buf_steal(&out);
    if (!s->owned)
        return ZF_ENOMEM;
    s->text = s->owned;
    if (!line_table(s->text, s->len, &s->rlines, &s->n_rlines))
        return ZF_ENOMEM;
    return rc;
oom:
    zfi_buf_free(&out);
    return ZF_ENOMEM;
}

char *zfi_placeholder_text(const char *text, size_t len)
{
    char *t = malloc(len + 1);
    if (!t)
        return NULL;
    memcpy(t, text, len);
    t[len] = '\0';
    size_t i = 0;
    tag g;
    while (next_tag(text, len, i, &g)) {
        if (g.kind != TAG_UNCLOSED)
            memset(t + g.start, 'x', g.end - g.start);
        i = g.end;
    }
    return t;
}
