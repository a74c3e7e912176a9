/* The process-wide logger. The library never prints: it hands lines to the
 * logger the application installed (none by default). */
#include "core/capsule.h"
#include "core/common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The logger is set once at startup in practice; fn and arg are published
 * together behind one pointer so a reader never sees a torn pair. */
typedef struct logger {
    zf_log_fn fn;             /* a plain logger, or */
    zf_log_entry_fn entry_fn; /* one that receives whole entries */
    void *arg;
} logger;

static logger loggers[2];
static _Atomic(logger *) current;
static atomic_int max_level = ZF_LOG_INFO;
static atomic_int slot;

static void install(zf_log_fn fn, zf_log_entry_fn entry_fn, void *arg, zf_log_level level)
{
    if (!fn && !entry_fn) {
        atomic_store(&current, NULL);
        return;
    }
    int s = atomic_fetch_xor(&slot, 1) ^ 1;
    loggers[s].fn = fn;
    loggers[s].entry_fn = entry_fn;
    loggers[s].arg = arg;
    atomic_store(&max_level, (int)level);
    atomic_store(&current, &loggers[s]);
}

void zf_log_set(zf_log_fn fn, void *arg, zf_log_level level)
{
    install(fn, NULL, arg, level);
}

void zf_log_set_entry(zf_log_entry_fn fn, void *arg, zf_log_level level)
{
    install(NULL, fn, arg, level);
}

/* Who a line is about when the caller does not say: the node whose code
 * runs on this thread (the runtime registers the lookup). */
static const zfi_log_origin *(*_Atomic origin_of)(void *node);

void zfi_log_set_origin_lookup(const zfi_log_origin *(*fn)(void *node))
{
    atomic_store(&origin_of, fn);
}

bool zfi_log_enabled(zf_log_level level)
{
    return atomic_load_explicit(&current, memory_order_acquire) &&
           (int)level <= atomic_load_explicit(&max_level, memory_order_relaxed);
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void emit(logger *l, const zfi_log_origin *o, zf_log_level level, const char *scope,
                 const char *msg)
{
    if (!o) {
        const zfi_log_origin *(*fn)(void *) =
            atomic_load_explicit(&origin_of, memory_order_relaxed);
        void *node = zfi_ctx_get()->node;
        o = fn && node ? fn(node) : NULL;
    }
    scope = scope ? scope : "zflow";
    if (l->fn) {
        l->fn(l->arg, level, scope, msg);
        return;
    }
    zf_log_entry e = {.realtime_ns = realtime_ns(),
                      .level = level,
                      .scope = scope,
                      .msg = msg,
                      .instance = o ? o->instance : NULL,
                      .instance_name = o ? o->instance_name : NULL,
                      .node = o ? o->node : NULL};
    l->entry_fn(l->arg, &e);
}

void zfi_vlog_at(const zfi_log_origin *o, zf_log_level level, const char *scope, const char *fmt,
                 va_list ap)
{
    logger *l = atomic_load_explicit(&current, memory_order_acquire);
    if (!l || (int)level > atomic_load_explicit(&max_level, memory_order_relaxed))
        return;
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    emit(l, o, level, scope, msg);
}

void zfi_vlog(zf_log_level level, const char *scope, const char *fmt, va_list ap)
{
    zfi_vlog_at(NULL, level, scope, fmt, ap);
}

void zfi_log_at(const zfi_log_origin *o, zf_log_level level, const char *scope, const char *fmt,
                ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_vlog_at(o, level, scope, fmt, ap);
    va_end(ap);
}

void zfi_log_text(const zfi_log_origin *o, zf_log_level level, const char *scope, const char *msg)
{
    logger *l = atomic_load_explicit(&current, memory_order_acquire);
    if (!l || (int)level > atomic_load_explicit(&max_level, memory_order_relaxed))
        return;
    emit(l, o, level, scope, msg);
}

void zfi_log(zf_log_level level, const char *scope, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_vlog(level, scope, fmt, ap);
    va_end(ap);
}

zf_err zf_log_level_parse(const char *s, zf_log_level *out)
{
#define PARSE(symbol, value, string)                                                               \
    if (s && strcmp(s, string) == 0) {                                                             \
        *out = symbol;                                                                             \
        return ZF_OK;                                                                              \
    }
    ZF_LOG_LEVEL_MAP(PARSE)
#undef PARSE
    return zfi_error(ZF_EINVAL, "log level '%s': expected error, warn, info, debug or trace",
                     s ? s : "(null)");
}

/* msg as one log entry that cannot forge another: a line break continues
 * with "  | ", other control characters and invalid UTF-8 bytes become
 * \xNN (a request's text cannot inject a line or a terminal sequence). */
static void escape_line(zfi_buf *b, const char *msg)
{
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if (*p == '\n') {
            zfi_buf_puts(b, "\n  | ");
        } else if (*p == '\t' || (*p >= 0x20 && *p < 0x7f)) {
            zfi_buf_append(b, (const char *)p, 1);
        } else {
            size_t k = *p >= 0x80 ? zfi_utf8_len(p, strnlen((const char *)p, 4)) : 0;
            bool c1 = k == 2 && p[0] == 0xc2 && p[1] < 0xa0;
            if (k && !c1) {
                zfi_buf_append(b, (const char *)p, k);
                p += k - 1;
            } else {
                zfi_buf_printf(b, "\\x%02x", *p);
            }
        }
    }
}

/* "TIME LEVEL [SCOPE] MSG\n"; time with `digits` decimals of a second. */
static void format_entry(zfi_buf *b, const zf_log_entry *e, int digits)
{
    time_t sec = (time_t)(e->realtime_ns / 1000000000u);
    long frac = (long)(e->realtime_ns % 1000000000u);
    struct tm tm;
    gmtime_r(&sec, &tm);
    for (int k = digits; k < 9; k++)
        frac /= 10;
    const char *lv = zf_log_level_name(e->level);
    zfi_buf_printf(b, "%04d-%02d-%02dT%02d:%02d:%02d.%0*ldZ %-5s [", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, digits, frac, lv);
    escape_line(b, e->scope ? e->scope : "");
    zfi_buf_puts(b, "] ");
    escape_line(b, e->msg ? e->msg : "");
    zfi_buf_puts(b, "\n");
}

char *zf_log_entry_format(const zf_log_entry *e)
{
    if (!e)
        return NULL;
    zfi_buf b;
    zfi_buf_init(&b);
    format_entry(&b, e, 6);
    return zfi_buf_steal(&b);
}

void zf_log_stderr(void *arg, zf_log_level level, const char *scope, const char *msg)
{
    ZFI_UNUSED(arg);
    zf_log_entry e = {.realtime_ns = realtime_ns(), .level = level, .scope = scope, .msg = msg};
    zfi_buf b;
    zfi_buf_init(&b);
    format_entry(&b, &e, 3);
    if (b.s)
        fwrite(b.s, 1, b.len, stderr); /* one write: lines of threads do not mix */
    zfi_buf_free(&b);
}

_Noreturn void zfi_fatal(const char *scope, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    logger *l = atomic_load(&current);
    if (l) {
        l->fn(l->arg, ZF_LOG_ERROR, scope, msg);
    } else {
        /* No logger: the process is about to abort; say why on stderr. */
        char line[1200];
        int n = snprintf(line, sizeof line, "zflow fatal [%s]: %s\n", scope, msg);
        if (n > 0) {
            ssize_t w =
                write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line);
            (void)w;
        }
    }
    abort();
}

uint64_t zf_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
