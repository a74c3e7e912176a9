/* zflow's benchmark peers: flags, the shared control block, the phases of
 * a hop (the clocks, percentiles and JSON are bench/common's). */
#include "peer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static const char common_usage[] =
    "options (zf-bench's):\n"
    "  --json          results as JSON (with the machine)\n"
    "  --sizes LIST    payload sizes, e.g. 64,4KiB,1MiB (default 64,4KiB,1MiB,10MiB,100MiB)\n"
    "  --seconds S     throughput phase per size (default 1)\n"
    "  --samples N     latency samples per size (default 20000; /5 from 8 MiB, /20 from 64 "
    "MiB)\n"
    "  --max-latency-seconds S  stop a latency phase after S seconds (default 20)\n"
    "  --warmup S      free-running warm-up before the throughput window (default 0.2)\n"
    "  --period S      latency: one sample every S seconds (one in flight; default 0: the\n"
    "                  next as soon as the last arrived)\n"
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

int peer_parse_args(int argc, char **argv, const char *prog, const char *bench, const char *usage,
                    peer_opts *o, bool *done)
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
        } else if (!strcmp(a, "--period") && more) {
            o->period_s = atof(argv[++i]);
        } else if (a[0] != '-' && !o->which) {
            o->which = a;
        } else {
            fprintf(stderr, "unknown argument '%s'\n", a);
            goto bad;
        }
    }
    if (o->seconds <= 0 || o->warm_s < 0 || o->max_lat_s <= 0 || o->queues < 0 || o->queues > 8 ||
        o->period_s < 0 || o->period_s > 10) {
        fprintf(stderr, "--seconds and --max-latency-seconds must be > 0, --warmup >= 0, "
                        "--queues 0 to 8, --period 0 to 10\n");
        goto bad;
    }
    if (bench && o->which && strcmp(o->which, bench) && strcmp(o->which, "all")) {
        fprintf(stderr, "%s: unknown benchmark '%s' (%s)\n", prog, o->which, bench);
        *done = true;
        return 2;
    }
    return 0;
bad:
    fprintf(stderr, "%s\n%s", usage, common_usage);
    *done = true;
    return 2;
}

size_t peer_max_size(const peer_opts *o)
{
    size_t m = 0;
    for (size_t i = 0; i < o->n_sizes; i++)
        m = o->sizes[i] > m ? o->sizes[i] : m;
    return m;
}

size_t peer_max_samples(const peer_opts *o)
{
    size_t m = 0;
    for (size_t i = 0; i < o->n_sizes; i++) {
        size_t n = bench_samples_for(o->samples, o->sizes[i]);
        n += bench_warmup_for(n);
        m = n > m ? n : m;
    }
    return m;
}

void peer_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int peer_wait_phase(peer_ctl *c, uint64_t phase, uint64_t timeout_ns, const char *late)
{
    uint64_t t_end = timeout_ns ? bench_clock_ns() + timeout_ns : 0;
    while (atomic_load_explicit(&c->phases_done, memory_order_acquire) < phase) {
        if (t_end && bench_clock_ns() > t_end) {
            fprintf(stderr, "%s\n", late);
            return -1;
        }
        peer_cpu_relax();
    }
    return atomic_load(&c->failed) ? -1 : 0;
}

peer_ctl *peer_ctl_alloc(const peer_opts *o, size_t *bytes)
{
    size_t lat_n = peer_max_samples(o);
    *bytes = sizeof(peer_ctl) + lat_n * sizeof(double);
    peer_ctl *c = peer_shared_alloc(*bytes);
    if (c)
        c->max_lat = lat_n;
    return c;
}

/* The latency phase: returns the messages sent (-1 on failure) and sets
 * *warm: samples [*warm, sent) are the measured ones. */
static long latency_phase(const peer_opts *o, size_t size, const peer_hop *h, size_t *warm)
{
    size_t n = bench_samples_for(o->samples, size);
    size_t warm_n = bench_warmup_for(n);
    uint64_t t0 = bench_clock_ns(), cap = (uint64_t)(o->max_lat_s * 1e9);
    uint64_t warm_end = t0 + cap / 10, t_end = t0 + cap;
    size_t sent = 0;
    *warm = 0;
    struct timespec tick;
    clock_gettime(CLOCK_MONOTONIC, &tick);
    for (;;) {
        if (o->period_s > 0) { /* sparse traffic: both ends park between samples */
            uint64_t per = (uint64_t)(o->period_s * 1e9);
            uint64_t due = (uint64_t)tick.tv_sec * 1000000000u + (uint64_t)tick.tv_nsec + per;
            /* A sender that fell behind skips the periods it missed, as
             * zflow's periodic sources do (src/runtime/timer.c), rather
             * than sending back to back until it caught up: a burst keeps
             * the receiver hot and is not the sparse traffic measured. */
            if (due < bench_clock_ns())
                due = bench_clock_ns() + per;
            tick.tv_sec = (time_t)(due / 1000000000u);
            tick.tv_nsec = (long)(due % 1000000000u);
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL) == EINTR)
                ;
        }
        if (h->send(h->arg) != 0)
            return -1;
        sent++;
        while (atomic_load_explicit(&h->c->received, memory_order_acquire) < sent) {
            if (atomic_load(&h->c->failed))
                return -1;
            peer_cpu_relax();
        }
        uint64_t now = bench_clock_ns();
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

/* Both sides' CPU time. */
static double hop_cpu_ns(const peer_hop *h)
{
    return bench_cpu_clock_ns() + (h->child ? bench_cpu_ns_of(h->child) : 0);
}

int peer_hop_run(const peer_opts *o, size_t size, const peer_hop *h, bench_result *r)
{
    peer_ctl *c = h->c;
    /* Latency: one in flight; warm-up samples dropped. */
    size_t warm = 0;
    atomic_store(&c->received, 0);
    long sent = latency_phase(o, size, h, &warm);
    if (sent < 0 || h->end_phase(h->arg) != 0)
        return -1;
    if ((size_t)sent > warm)
        bench_percentiles(c->lat + warm, (size_t)sent - warm, r);

    /* Throughput: free-running; the window starts after the warm-up. */
    atomic_store(&c->received, 0);
    uint64_t t0 = bench_clock_ns(), warm_end = t0 + (uint64_t)(o->warm_s * 1e9);
    uint64_t deadline = warm_end + (uint64_t)(o->seconds * 1e9);
    uint64_t r0 = 0, r1 = 0, t_start = 0, t_stop = 0;
    double cpu0 = 0, cpu1 = 0;
    bool in_window = false;
    for (;;) {
        if (h->send(h->arg) != 0)
            return -1;
        uint64_t now = bench_clock_ns();
        if (!in_window && now >= warm_end) {
            in_window = true;
            cpu0 = hop_cpu_ns(h);
            r0 = atomic_load(&c->received);
            t_start = bench_clock_ns();
        } else if (in_window && now >= deadline) {
            r1 = atomic_load(&c->received);
            t_stop = bench_clock_ns();
            cpu1 = hop_cpu_ns(h);
            break;
        }
    }
    if (h->end_phase(h->arg) != 0)
        return -1;
    uint64_t got = r1 - r0;
    r->msgs_per_s = (double)got / ((double)(t_stop - t_start) / 1e9);
    r->cpu_ns_per_msg = got ? (cpu1 - cpu0) / (double)got : 0;
    return 0;
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
