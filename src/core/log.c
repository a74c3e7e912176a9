/* The process-wide logger. The library never prints: it hands lines to the
 * logger the application installed (none by default). */
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
    zf_log_fn fn;
    void *arg;
} logger;

static logger loggers[2];
static _Atomic(logger *) current;
static atomic_int max_level = ZF_LOG_INFO;
static atomic_int slot;

void zf_log_set(zf_log_fn fn, void *arg, zf_log_level level)
{
    if (!fn) {
        atomic_store(&current, NULL);
        return;
    }
    int s = atomic_fetch_xor(&slot, 1) ^ 1;
    loggers[s].fn = fn;
    loggers[s].arg = arg;
    atomic_store(&max_level, (int)level);
    atomic_store(&current, &loggers[s]);
}

bool zfi_log_enabled(zf_log_level level)
{
    return atomic_load_explicit(&current, memory_order_acquire) &&
           (int)level <= atomic_load_explicit(&max_level, memory_order_relaxed);
}

void zfi_vlog(zf_log_level level, const char *scope, const char *fmt, va_list ap)
{
    logger *l = atomic_load_explicit(&current, memory_order_acquire);
    if (!l || (int)level > atomic_load_explicit(&max_level, memory_order_relaxed))
        return;
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    l->fn(l->arg, level, scope ? scope : "zflow", msg);
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

void zf_log_stderr(void *arg, zf_log_level level, const char *scope, const char *msg)
{
    ZFI_UNUSED(arg);
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    const char *lv = zf_log_level_name(level);
    zfi_buf b;
    zfi_buf_init(&b);
    zfi_buf_printf(&b, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s [", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                   ts.tv_nsec / 1000000, lv);
    escape_line(&b, scope ? scope : "");
    zfi_buf_puts(&b, "] ");
    escape_line(&b, msg ? msg : "");
    zfi_buf_puts(&b, "\n");
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
