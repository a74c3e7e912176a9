/* zflow's benchmark peers: flags, clocks, percentiles, JSON (zf-bench's). */
#include "peer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const char common_usage[] =
    "options (zf-bench's):\n"
    "  --json          results as JSON (with the machine)\n"
    "  --sizes LIST    payload sizes, e.g. 64,4KiB,1MiB (default 64,4KiB,1MiB,10MiB,100MiB)\n"
    "  --seconds S     throughput phase per size (default 1)\n"
    "  --samples N     latency samples per size (default 20000; /5 from 8 MiB, /20 from 64 "
    "MiB)\n"
    "  --max-latency-seconds S  stop a latency phase after S seconds (default 20)\n"
    "  --warmup S      free-running warm-up before the throughput window (default 0.2)\n"
    "  --queues N      zfpeer-gst: queues in the pipeline (default 3; 0-2 to take its costs "
    "apart)\n"
    "  -h, --help      this help\n";

int peer_parse_size(const char *s, size_t *out)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"", 1},          {"B", 1},      {"KiB", 1024.0},  {"MiB", 1048576.0},
                 {"GiB", 1 << 30}, {"kB", 1e3},   {"KB", 1e3},      {"MB", 1e6},
                 {"GB", 1e9},      {"K", 1024.0}, {"M", 1048576.0}, {"G", 1 << 30}};
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0) {
            double b = v * units[i].mult;
            if (b != floor(b) || b > 4e9)
                return -1;
            *out = (size_t)b;
            return 0;
        }
    }
    return -1;
}

static int parse_sizes(const char *arg, peer_opts *o)
{
    char *copy = strdup(arg), *save = NULL;
    int rc = 0;
    o->n_sizes = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t b;
        if (o->n_sizes == PEER_MAX_SIZES || peer_parse_size(tok, &b) != 0 || b == 0) {
            fprintf(stderr, "--sizes: '%s' is not a size (e.g. 64, 4KiB, 1MiB)\n", tok);
            rc = -1;
            break;
        }
        o->sizes[o->n_sizes++] = b;
    }
    free(copy);
    return rc == 0 && o->n_sizes ? 0 : -1;
}

int peer_parse_args(int argc, char **argv, const char *usage, peer_opts *o, bool *done)
{
    *o = (peer_opts){.seconds = 1.0,
                     .samples = 20000,
                     .max_lat_s = 20.0,
                     .warm_s = 0.2,
                     .queues = 3,
                     .sizes = {64, 4096, 1u << 20, 10u << 20, 100u << 20},
                     .n_sizes = 5};
    *done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s\n%s", usage, common_usage);
            *done = true;
            return 0;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--sizes") && more) {
            if (parse_sizes(argv[++i], o) != 0)
                goto bad;
        } else if (!strcmp(a, "--seconds") && more) {
            o->seconds = atof(argv[++i]);
        } else if (!strcmp(a, "--samples") && more) {
            o->samples = (size_t)atol(argv[++i]);
        } else if (!strcmp(a, "--max-latency-seconds") && more) {
            o->max_lat_s = atof(argv[++i]);
        } else if (!strcmp(a, "--queues") && more) {
            o->queues = atoi(argv[++i]);
        } else if (!strcmp(a, "--warmup") && more) {
            o->warm_s = atof(argv[++i]);
        } else if (a[0] != '-' && !o->which) {
            o->which = a;
        } else {
            fprintf(stderr, "unknown argument '%s'\n", a);
            goto bad;
        }
    }
    if (o->seconds <= 0 || o->warm_s < 0 || o->max_lat_s <= 0 || o->queues < 0 || o->queues > 8) {
        fprintf(stderr, "--seconds and --max-latency-seconds must be > 0, --warmup >= 0, "
                        "--queues 0 to 8\n");
        goto bad;
    }
    return 0;
bad:
    fprintf(stderr, "%s\n%s", usage, common_usage);
    *done = true;
    return 2;
}

uint64_t peer_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ts_ns(const struct timespec *ts)
{
    return (double)ts->tv_sec * 1e9 + (double)ts->tv_nsec;
}

double peer_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts_ns(&ts);
}

double peer_cpu_ns_of(pid_t pid)
{
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &ts) != 0)
        return 0;
    return ts_ns(&ts);
}

void peer_pin(int cpu)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 2)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % n, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

size_t peer_samples_for(const peer_opts *o, size_t size)
{
    size_t n = o->samples;
    if (size >= (64u << 20))
        n /= 20;
    else if (size >= (8u << 20))
        n /= 5;
    return n < 200 ? 200 : n;
}

size_t peer_warmup_for(size_t samples)
{
    return samples / 10 + 10;
}

size_t peer_queue_cap(size_t size, size_t budget, size_t links)
{
    size_t cap = budget / (size + 64) / (links ? links : 1);
    return cap < 2 ? 2 : cap > 256 ? 256 : cap;
}

long peer_latency_phase(const peer_opts *o, size_t size, peer_send_fn send, void *arg,
                        const atomic_uint_fast64_t *received, const atomic_int *failed,
                        size_t *warm)
{
    size_t n = peer_samples_for(o, size);
    size_t warm_n = peer_warmup_for(n);
    uint64_t t0 = peer_clock_ns(), cap = (uint64_t)(o->max_lat_s * 1e9);
    uint64_t warm_end = t0 + cap / 10, t_end = t0 + cap;
    size_t sent = 0;
    *warm = 0;
    for (;;) {
        if (send(arg) != 0)
            return -1;
        sent++;
        while (atomic_load_explicit(received, memory_order_acquire) < sent) {
            if (failed && atomic_load(failed))
                return -1;
            peer_cpu_relax();
        }
        uint64_t now = peer_clock_ns();
        if (!*warm) {
            if (sent >= warm_n || (sent >= 2 && now >= warm_end))
                *warm = sent;
            continue;
        }
        if (sent - *warm >= n || now >= t_end)
            break;
    }
    return (long)sent;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void peer_percentiles(double *ns, size_t n, peer_result *r)
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

static void machine(FILE *out, bool json)
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

void peer_human_size(size_t s, char *buf, size_t n)
{
    if (s >= (1u << 20) && s % (1u << 20) == 0)
        snprintf(buf, n, "%zu MiB", s >> 20);
    else if (s >= 1024 && s % 1024 == 0)
        snprintf(buf, n, "%zu KiB", s >> 10);
    else
        snprintf(buf, n, "%zu B", s);
}

void peer_print(FILE *out, const peer_result *res, size_t n, bool json)
{
    if (json) {
        fprintf(out, "{");
        machine(out, true);
        fprintf(out, ",\"results\":[\n");
    } else {
        machine(out, false);
    }
    for (size_t i = 0; i < n; i++) {
        const peer_result *r = &res[i];
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
        peer_human_size(r->size, sz, sizeof sz);
        fprintf(out,
                "%-9s %-10s %9s  p50 %10.0f ns  p99 %10.0f ns  p99.9 %10.0f ns  %12.0f msg/s  "
                "%8.0f cpu-ns/msg\n",
                r->bench, r->impl, sz, r->p50_ns, r->p99_ns, r->p999_ns, r->msgs_per_s,
                r->cpu_ns_per_msg);
    }
    if (json)
        fprintf(out, "\n]}\n");
    fflush(out);
}

void *peer_shared_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void peer_shared_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

void *peer_touched_alloc(size_t size)
{
    char *p = malloc(size ? size : 1);
    if (p)
        memset(p, 0x5a, size);
    return p;
}
