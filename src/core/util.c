/* Small allocation and string helpers, and the CPU count. */
#include "core/common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned zfi_cpus_usable(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (unsigned)cpus : 1;
}

bool zfi_cpu_leave(int cpu)
{
    cpu_set_t mask, one;
    if (cpu < 0 || sched_getaffinity(0, sizeof mask, &mask) != 0)
        return false;
    int to = -1;
    for (int k = 1; k < CPU_SETSIZE && to < 0; k++) /* (k < CPU_SETSIZE: never cpu itself) */
        if (CPU_ISSET((cpu + k) % CPU_SETSIZE, &mask))
            to = (cpu + k) % CPU_SETSIZE;
    if (to < 0)
        return false;
    CPU_ZERO(&one);
    CPU_SET(to, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) /* moves it now */
        return false;
    sched_setaffinity(0, sizeof mask, &mask); /* (it stays where it is) */
    return true;
}

void *zfi_calloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size ? size : 1);
}

char *zfi_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *zfi_strndup(const char *s, size_t n)
{
    return s ? strndup(s, n) : NULL;
}

char *zfi_asprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

bool zfi_grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*items, ncap * size);
    if (!p)
        return false;
    memset((char *)p + *cap * size, 0, (ncap - *cap) * size);
    *items = p;
    *cap = ncap;
    return true;
}

void zfi_buf_init(zfi_buf *b)
{
    memset(b, 0, sizeof *b);
}

void zfi_buf_free(zfi_buf *b)
{
    free(b->s);
    zfi_buf_init(b);
}

void zfi_buf_append(zfi_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 256;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *p = realloc(b->s, ncap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->s = p;
        b->cap = ncap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void zfi_buf_puts(zfi_buf *b, const char *s)
{
    zfi_buf_append(b, s, strlen(s));
}

void zfi_buf_vprintf(zfi_buf *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        b->failed = true;
    } else if ((size_t)n < sizeof small) {
        zfi_buf_append(b, small, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big) {
            b->failed = true;
        } else {
            vsnprintf(big, (size_t)n + 1, fmt, ap2);
            zfi_buf_append(b, big, (size_t)n);
            free(big);
        }
    }
    va_end(ap2);
}

void zfi_buf_printf(zfi_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* The length of the valid UTF-8 sequence starting at s[0] (a byte >= 0x80),
 * at most n bytes available; 0 if invalid. */
size_t zfi_utf8_len(const unsigned char *s, size_t n)
{
    size_t k;
    unsigned cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        k = 2;
        cp = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        k = 3;
        cp = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        k = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0; /* a continuation byte, an overlong lead (c0, c1) or past f4 */
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

char *zfi_buf_steal(zfi_buf *b)
{
    if (b->failed) {
        zfi_buf_free(b);
        return NULL;
    }
    if (!b->s)
        zfi_buf_append(b, "", 0);
    char *s = b->s;
    zfi_buf_init(b);
    return s;
}

size_t zfi_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return (size_t)-1;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *zfi_nearest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = zfi_edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    size_t len = strlen(word);
    size_t limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    return best_d <= limit ? best : NULL;
}

void zf_free(void *p)
{
    free(p);
}
