#include "harness.h"

#include "zflow/zflow.h"

#include <stdbool.h>
#include <time.h>

jmp_buf zt_jmp;
int zt_failed_checks;

const char *zt_detail(void)
{
    return zf_last_error();
}

/* Whether `name` is one of the cases. */
static bool known(const zt_entry *cases, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cases[i].name, name))
            return true;
    return false;
}

int zt_run(const zt_entry *cases, size_t n, int argc, char **argv)
{
    /* prog [CASE | --skip CASE...] */
    const char *only = NULL, *skip[16];
    size_t n_skip = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--skip") && a + 1 < argc && n_skip < 16) {
            skip[n_skip] = argv[++a];
            if (!known(cases, n, skip[n_skip])) {
                fprintf(stderr, "no test case named %s\n", skip[n_skip]);
                return 2;
            }
            n_skip++;
        } else if (!only && !n_skip) {
            only = argv[a];
        } else {
            fprintf(stderr, "usage: %s [CASE | --skip CASE...]\n", argv[0]);
            return 2;
        }
    }
    int passed = 0, failed = 0;
    if (getenv("ZT_LOG"))
        zf_log_set(zf_log_stderr, NULL, ZF_LOG_DEBUG);
    for (size_t i = 0; i < n; i++) {
        if (only && strcmp(only, cases[i].name) != 0)
            continue;
        bool skipped = false;
        for (size_t k = 0; k < n_skip; k++)
            skipped = skipped || !strcmp(skip[k], cases[i].name);
        if (skipped)
            continue;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int before = zt_failed_checks;
        if (setjmp(zt_jmp) == 0)
            cases[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (zt_failed_checks == before) {
            passed++;
            printf("ok   %s (%.1f ms)\n", cases[i].name, ms);
        } else {
            failed++;
            printf("FAIL %s\n", cases[i].name);
        }
        fflush(stdout);
    }
    if (only && passed + failed == 0) {
        fprintf(stderr, "no test case named %s\n", only);
        return 2;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
