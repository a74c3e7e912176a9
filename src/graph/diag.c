/* Diagnostics: the list of problems found while loading a descriptor. */
#include "graph/loader.h"

#include <stdlib.h>
#include <string.h>

#define ZFI_DIAG_MAX 1000

struct zf_diag {
    zf_diag_entry *e;
    zf_err *codes;
    size_t n, cap, cap_codes;
    bool truncated;
};

zf_diag *zf_diag_new(void)
{
    return zfi_calloc(1, sizeof(zf_diag));
}

static void entry_free(zf_diag_entry *e)
{
    free((char *)e->file);
    free((char *)e->field);
    free((char *)e->message);
}

void zf_diag_free(zf_diag *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        entry_free(&d->e[i]);
    free(d->e);
    free(d->codes);
    free(d);
}

size_t zf_diag_count(const zf_diag *d)
{
    return d ? d->n : 0;
}

const zf_diag_entry *zf_diag_get(const zf_diag *d, size_t i)
{
    return d && i < d->n ? &d->e[i] : NULL;
}

zf_err zfi_diag_code(const zf_diag *d, size_t i)
{
    return d && i < d->n ? d->codes[i] : ZF_OK;
}

static bool same(const zf_diag_entry *e, const char *file, unsigned line, unsigned col,
                 const char *field, const char *msg)
{
    return e->line == line && e->col == col && strcmp(e->file, file) == 0 &&
           strcmp(e->field, field) == 0 && strcmp(e->message, msg) == 0;
}

static void push(zf_diag *d, zf_err code, const char *file, unsigned line, unsigned col,
                 const char *field, char *msg)
{
    for (size_t i = 0; i < d->n; i++) {
        if (same(&d->e[i], file, line, col, field, msg)) {
            free(msg);
            return; /* the same file reported twice (a composite used twice) */
        }
    }
    if (d->n >= ZFI_DIAG_MAX) {
        d->truncated = true;
        free(msg);
        return;
    }
    if (!zfi_grow((void **)&d->e, &d->cap, d->n + 1, sizeof *d->e) ||
        !zfi_grow((void **)&d->codes, &d->cap_codes, d->n + 1, sizeof *d->codes)) {
        free(msg);
        return;
    }
    zf_diag_entry *e = &d->e[d->n];
    e->file = zfi_strdup(file);
    e->field = zfi_strdup(field);
    e->message = msg;
    e->line = line;
    e->col = col;
    if (!e->file || !e->field) {
        entry_free(e);
        return;
    }
    d->codes[d->n++] = code;
}

zf_err zfi_diag_vadd(zf_diag *d, zf_err code, const char *file, unsigned line, unsigned col,
                     const char *field, const char *fmt, va_list ap)
{
    if (!d)
        return code;
    zfi_buf raw, b;
    zfi_buf_init(&raw);
    zfi_buf_vprintf(&raw, fmt, ap);
    char *text = zfi_buf_steal(&raw);
    if (!text)
        return code;
    /* What the descriptor said is echoed: a control byte in it (an escape
     * sequence in an id) is shown as \xNN, not sent to the reader's
     * terminal. */
    zfi_buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            zfi_buf_printf(&b, "\\x%02x", *p);
        else
            zfi_buf_printf(&b, "%c", *p);
    free(text);
    char *msg = zfi_buf_steal(&b);
    if (msg)
        push(d, code, file ? file : "", line, col, field ? field : "", msg);
    return code;
}

zf_err zfi_diag_add(zf_diag *d, zf_err code, const char *file, unsigned line, unsigned col,
                    const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_diag_vadd(d, code, file, line, col, field, fmt, ap);
    va_end(ap);
    return code;
}

zf_err zfi_diag_at(zf_diag *d, zf_err code, const zf_config *at, const char *field, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_diag_vadd(d, code, at ? at->file : NULL, at ? at->line : 0, at ? at->col : 0, field, fmt,
                  ap);
    va_end(ap);
    return code;
}

void zfi_diag_append(zf_diag *dst, const zf_diag *src)
{
    if (!dst || !src)
        return;
    for (size_t i = 0; i < src->n; i++) {
        const zf_diag_entry *e = &src->e[i];
        zfi_diag_add(dst, src->codes[i], e->file, e->line, e->col, e->field, "%s", e->message);
    }
}

static void format_entry(zfi_buf *b, const zf_diag_entry *e)
{
    zfi_buf_puts(b, e->file[0] ? e->file : "<descriptor>");
    if (e->line)
        zfi_buf_printf(b, ":%u:%u", e->line, e->col);
    zfi_buf_puts(b, ": ");
    if (e->field[0])
        zfi_buf_printf(b, "%s: ", e->field);
    zfi_buf_puts(b, e->message);
}

char *zfi_diag_entry_format(const zf_diag_entry *e)
{
    zfi_buf b;
    zfi_buf_init(&b);
    format_entry(&b, e);
    return zfi_buf_steal(&b);
}

char *zf_diag_format(const zf_diag *d)
{
    zfi_buf b;
    zfi_buf_init(&b);
    for (size_t i = 0; d && i < d->n; i++) {
        format_entry(&b, &d->e[i]);
        zfi_buf_puts(&b, "\n");
    }
    if (d && d->truncated)
        zfi_buf_printf(&b, "(more than %d problems; the rest are not shown)\n", ZFI_DIAG_MAX);
    return zfi_buf_steal(&b);
}
