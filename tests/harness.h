/* A small test harness (libuv style): cases registered in a table, run in
 * order, each failed check reported with file:line and the expression.
 *
 *   ZT_CASE(name) { ZT_CHECK(x == 1); ZT_EQ(a, b); }
 *   ZT_MAIN(ZT_ENTRY(name), ...)
 *
 * `prog CASE` runs one case, `prog --skip CASE...` all but those (each
 * --skip names one). The last line is "N passed, M failed". */
#ifndef ZT_HARNESS_H
#define ZT_HARNESS_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct zt_entry {
    const char *name;
    void (*fn)(void);
} zt_entry;

extern jmp_buf zt_jmp;
extern int zt_failed_checks;

#define ZT_CASE(name) static void name(void)
#define ZT_ENTRY(name)                                                                             \
    {                                                                                              \
#name, name                                                                                \
    }

#define ZT_FAIL(...)                                                                               \
    do {                                                                                           \
        fprintf(stderr, "  FAIL %s:%d: ", __FILE__, __LINE__);                                     \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        zt_failed_checks++;                                                                        \
        longjmp(zt_jmp, 1);                                                                        \
    } while (0)

#define ZT_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ZT_FAIL("check failed: %s", #cond);                                                    \
    } while (0)

#define ZT_EQ(a, b)                                                                                \
    do {                                                                                           \
        long long zt_a_ = (long long)(a), zt_b_ = (long long)(b);                                  \
        if (zt_a_ != zt_b_)                                                                        \
            ZT_FAIL("%s == %s: %lld != %lld", #a, #b, zt_a_, zt_b_);                               \
    } while (0)

#define ZT_STREQ(a, b)                                                                             \
    do {                                                                                           \
        const char *zt_a_ = (a), *zt_b_ = (b);                                                     \
        if (!zt_a_ || !zt_b_ || strcmp(zt_a_, zt_b_) != 0)                                         \
            ZT_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, zt_a_ ? zt_a_ : "(null)",                \
                    zt_b_ ? zt_b_ : "(null)");                                                     \
    } while (0)

#define ZT_CONTAINS(hay, needle)                                                                   \
    do {                                                                                           \
        const char *zt_h_ = (hay), *zt_n_ = (needle);                                              \
        if (!zt_h_ || !strstr(zt_h_, zt_n_))                                                       \
            ZT_FAIL("\"%s\" does not contain \"%s\"", zt_h_ ? zt_h_ : "(null)", zt_n_);            \
    } while (0)

#define ZT_OK(expr)                                                                                \
    do {                                                                                           \
        int zt_e_ = (int)(expr);                                                                   \
        if (zt_e_ != 0)                                                                            \
            ZT_FAIL("%s returned %d (%s)", #expr, zt_e_, zt_detail());                             \
    } while (0)

const char *zt_detail(void);
int zt_run(const zt_entry *cases, size_t n, int argc, char **argv);

#define ZT_MAIN(...)                                                                               \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const zt_entry zt_cases[] = {__VA_ARGS__};                                          \
        return zt_run(zt_cases, sizeof(zt_cases) / sizeof(zt_cases[0]), argc, argv);               \
    }

#endif
