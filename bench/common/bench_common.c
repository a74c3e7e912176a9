/* Benchmarks' shared helpers: clocks, CPU time, pinning, percentiles, the
 * machine and the report (zf-bench's JSON schema). */
#include "bench_common.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

bench_result *bench_result_init(bench_result *r, const char *bench, const char *impl, size_t size)
{
    memset(r, 0, sizeof *r);
    r->bench = bench;
    r->impl = impl;
    r->size = size;
    return r;
}

uint64_t bench_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ts_ns(const struct timespec *ts)
{
    return (double)ts->tv_sec * 1e9 + (double)ts->tv_nsec;
}

double bench_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

double bench_cpu_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts_ns(&ts);
}

double bench_cpu_ns_of(pid_t pid)
{
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &ts) != 0)
        return 0;
    return ts_ns(&ts);
}

void bench_pin(int cpu)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 2)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % n, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

size_t bench_samples_for(size_t samples, size_t size)
{
    size_t n = samples;
    if (size >= (64u << 20))
        n /= 20;
    else if (size >= (8u << 20))
        n /= 5;
    return n < 200 ? 200 : n;
}

size_t bench_warmup_for(size_t samples)
{
    return samples / 10 + 10;
}

size_t bench_queue_cap(size_t size, size_t budget, size_t links)
{
    size_t cap = budget / (size + 64) / (links ? links : 1);
    return cap < 2 ? 2 : cap > 256 ? 256 : cap;
}

void *bench_touched_alloc(size_t size)
{
    char *p = malloc(size ? size : 1);
    if (p)
        memset(p, 0x5a, size);
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_percentiles(double *ns, size_t n, bench_result *r)
{
    if (!n)
        return;
    qsort(ns, n, sizeof *ns, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ns[i];
    r->samples = n;
    r->min_ns = ns[0];
    r->p50_ns = ns[n / 2];
    r->p99_ns = ns[(size_t)((double)n * 0.99)];
    r->p999_ns = ns[(size_t)((double)n * 0.999)];
    r->mean_ns = sum / (double)n;
}

void bench_human_size(size_t s, char *buf, size_t n)
{
    if (s >= (1u << 20) && s % (1u << 20) == 0)
        snprintf(buf, n, "%zu MiB", s >> 20);
    else if (s >= 1024 && s % 1024 == 0)
        snprintf(buf, n, "%zu KiB", s >> 10);
    else
        snprintf(buf, n, "%zu B", s);
}

void bench_machine(FILE *out, bool json)
{
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c += 2;
                    c[strcspn(c, "\n")] = 0;
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        }
        fclose(f);
    }
    /* JSON strings: drop what would need escaping. */
    for (char *c = model; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = ' ';
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long mem_mib = sysconf(_SC_PHYS_PAGES) / 1024 * (sysconf(_SC_PAGESIZE) / 1024);
    if (json)
        fprintf(out, "\"machine\":{\"cpu\":\"%s\",\"cores\":%ld,\"memory_mib\":%ld}", model, cores,
                mem_mib);
    else
        fprintf(out, "machine: %s, %ld cores, %ld MiB\n", model, cores, mem_mib);
}

void bench_print(FILE *out, const bench_result *res, size_t n, bool json, int impl_width)
{
    if (json) {
        fprintf(out, "{");
        bench_machine(out, true);
        fprintf(out, ",\"results\":[\n");
    } else {
        bench_machine(out, false);
    }
    for (size_t i = 0; i < n; i++) {
        const bench_result *r = &res[i];
        if (json) {
            fprintf(out,
                    "%s{\"bench\":\"%s\",\"impl\":\"%s\",\"size\":%zu,\"samples\":%zu,"
                    "\"p50_ns\":%.0f,\"p99_ns\":%.0f,\"p999_ns\":%.0f,\"mean_ns\":%.0f,"
                    "\"min_ns\":%.0f,\"msgs_per_s\":%.0f,\"cpu_ns_per_msg\":%.0f}",
                    i ? ",\n" : "", r->bench, r->impl, r->size, r->samples, r->p50_ns, r->p99_ns,
                    r->p999_ns, r->mean_ns, r->min_ns, r->msgs_per_s, r->cpu_ns_per_msg);
            continue;
        }
        char sz[32];
        bench_human_size(r->size, sz, sizeof sz);
        fprintf(out,
                "%-9s %-*s %9s  p50 %10.0f ns  p99 %10.0f ns  p99.9 %10.0f ns  %12.0f msg/s  "
                "%8.0f cpu-ns/msg\n",
                r->bench, impl_width, r->impl, sz, r->p50_ns, r->p99_ns, r->p999_ns, r->msgs_per_s,
                r->cpu_ns_per_msg);
    }
    if (json)
        fprintf(out, "\n]}\n");
    fflush(out);
}
