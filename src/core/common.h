/* Internal helpers shared by every layer: error detail, logging, memory,
 * a growable string buffer. Names are zfi_ (internal, hidden symbols). */
#ifndef ZFI_COMMON_H
#define ZFI_COMMON_H

#include "zflow/zflow.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ZFI_UNUSED(x)    ((void)(x))
#define ZFI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define ZFI_LIKELY(x)    __builtin_expect(!!(x), 1)
#define ZFI_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define ZFI_CACHELINE    64

/* Prefetch a line to write it (x86 PREFETCHW: the line comes exclusive at
 * once, not shared and then upgraded; older CPUs decode it as a NOP), or to
 * read it. Hints only: any address is safe. */
static inline void zfi_prefetch_w(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}
static inline void zfi_prefetch_r(const void *p)
{
    __builtin_prefetch(p, 0, 3);
}
/* Thread-locals on the hot path: the initial-exec model (libzflow is
 * loaded with the program, never dlopen'ed late) reads them at a fixed
 * offset from the thread pointer, without a call to __tls_get_addr. */
#define ZFI_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* A condition variable whose timed waits read CLOCK_MONOTONIC (every timed
 * wait of the library is on zf_clock_ns's clock, not the wall clock). */
static inline void zfi_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* Set this thread's zf_last_error() detail and return `code`. */
zf_err zfi_error(zf_err code, const char *fmt, ...) ZF_PRINTF(2, 3);
zf_err zfi_verror(zf_err code, const char *fmt, va_list ap) ZF_PRINTF(2, 0);
/* Clear the detail (successful calls need not). */
void zfi_error_clear(void);

/* Log through the installed logger; a no-op when none or level too verbose. */
void zfi_log(zf_log_level level, const char *scope, const char *fmt, ...) ZF_PRINTF(3, 4);
void zfi_vlog(zf_log_level level, const char *scope, const char *fmt, va_list ap) ZF_PRINTF(3, 0);
bool zfi_log_enabled(zf_log_level level);
/* Whom a line is about (zf_log_entry's instance and node); the strings
 * live as long as what they name. */
typedef struct zfi_log_origin {
    const char *instance, *instance_name, *node;
} zfi_log_origin;
/* Log about o (NULL: the node whose code runs on this thread, if any). */
void zfi_log_at(const zfi_log_origin *o, zf_log_level level, const char *scope, const char *fmt,
                ...) ZF_PRINTF(4, 5);
void zfi_vlog_at(const zfi_log_origin *o, zf_log_level level, const char *scope, const char *fmt,
                 va_list ap) ZF_PRINTF(4, 0);
/* A line as it is (no format). */
void zfi_log_text(const zfi_log_origin *o, zf_log_level level, const char *scope, const char *msg);
/* The runtime tells the logger how to find the origin of the node in
 * zfi_ctx_get()->node (core does not know nodes). */
void zfi_log_set_origin_lookup(const zfi_log_origin *(*fn)(void *node));

/* A programmer error (broken invariant): log at ERROR, then abort. If no
 * logger is installed the message goes to stderr, the one place the library
 * writes by itself: the process is about to die. */
_Noreturn void zfi_fatal(const char *scope, const char *fmt, ...) ZF_PRINTF(2, 3);

/* Add to a counter that one thread writes (others only read): no locked
 * read-modify-write needed. */
static inline void zfi_counter_add(atomic_uint_fast64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

/* Name the calling thread (what top -H, ps -L and perf show), printf-style,
 * cut to the kernel's 15 characters. Best effort: nothing on failure.
 * Inline: the cluster module has it too, without libzflow's internals. */
static inline void zfi_thread_name(const char *fmt, ...) ZF_PRINTF(1, 2);
static inline void zfi_thread_name(const char *fmt, ...)
{
    char name[16]; /* the kernel's TASK_COMM_LEN */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    pthread_setname_np(pthread_self(), name);
}

/* Move the calling thread off CPU `cpu` onto the next CPU of its affinity
 * mask (wrapping), the mask kept as it was. For two threads that hand work
 * to each other and that the kernel's wake-up placement put on one CPU
 * while another idles (docs/isolation.md, "Sharing a CPU"). False when the
 * mask has no other CPU or cannot be set. */
bool zfi_cpu_leave(int cpu);

/* Memory: NULL on failure (callers handle it). */
/* CPUs this process may run on (its affinity mask: taskset, a cpuset), at
 * least 1; the online count if the mask cannot be read. */
unsigned zfi_cpus_usable(void);

void *zfi_calloc(size_t n, size_t size);
char *zfi_strdup(const char *s);
char *zfi_strndup(const char *s, size_t n);
char *zfi_asprintf(const char *fmt, ...) ZF_PRINTF(1, 2);
/* Grow *items (of `size` bytes each) so that it holds at least `need`
 * elements; *cap is updated. Returns false on allocation failure. */
bool zfi_grow(void **items, size_t *cap, size_t need, size_t size);

/* A growable NUL-terminated string buffer. `failed` sticks after an
 * allocation failure; zfi_buf_steal then returns NULL. */
typedef struct zfi_buf {
    char *s;
    size_t len, cap;
    bool failed;
} zfi_buf;

void zfi_buf_init(zfi_buf *b);
void zfi_buf_free(zfi_buf *b);
void zfi_buf_append(zfi_buf *b, const char *s, size_t n);
void zfi_buf_puts(zfi_buf *b, const char *s);
void zfi_buf_printf(zfi_buf *b, const char *fmt, ...) ZF_PRINTF(2, 3);
void zfi_buf_vprintf(zfi_buf *b, const char *fmt, va_list ap) ZF_PRINTF(2, 0);
/* The length of the valid UTF-8 sequence at s (s[0] >= 0x80; n bytes
 * available): 2 to 4, or 0 if invalid (overlong, surrogate, past U+10FFFF,
 * truncated). */
size_t zfi_utf8_len(const unsigned char *s, size_t n);
/* Take the string (caller frees); the buffer is reset. NULL on failure. */
char *zfi_buf_steal(zfi_buf *b);

/* An enum table's (ZF_<ENUM>_MAP) entry as an array element indexed by the
 * value: `static const char *const names[] = {ZF_POLICY_MAP(ZFI_NAME_ENTRY)};`
 * for a parser that looks names up (zfi_want_enum). */
#define ZFI_NAME_ENTRY(symbol, value, string) [value] = string,
/* A name function from an enum's table: `string` for each value, and
 * ZF_UNKNOWN_NAME for any other (src/core/names.c). */
#define ZFI_NAME_CASE(symbol, value, string)                                                       \
    case symbol:                                                                                   \
        return string;
#define ZFI_NAME_FUNCTION(fn, type, MAP)                                                           \
    const char *fn(type v)                                                                         \
    {                                                                                              \
        switch (v) {                                                                               \
            MAP(ZFI_NAME_CASE)                                                                     \
        default:                                                                                   \
            break;                                                                                 \
        }                                                                                          \
        return ZF_UNKNOWN_NAME;                                                                    \
    }

/* Levenshtein distance, for "did you mean" suggestions. */
size_t zfi_edit_distance(const char *a, const char *b);
/* The candidate nearest to `word` within a reasonable distance, or NULL. */
const char *zfi_nearest(const char *word, const char *const *candidates, size_t n);

#endif
