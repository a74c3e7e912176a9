/* zf-bench: zflow's benchmarks. Prints figures, never asserts them.
 *
 *   zf-bench limit|hop|copy|pipeline|stage|chain|all[,...] [--isolated] [--json]
 *            [--sizes 64,4KiB,1MiB]
 *            [--seconds S] [--samples N]
 */
#include "bench.h"

#include <zflow/zflow.h>

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: zf-bench BENCH [options]\n"
        "\n"
        "benchmarks:\n"
        "  limit     a raw ring of 8-byte cells between the same two pinned threads:\n"
        "            the machine's limit for one hop, by hop's rules\n"
        "  hop       one link between two threads, zero-copy (pool capsules); with\n"
        "            --isolated: source -> an operator in a process of its own -> sink\n"
        "            through the runtime: 'zflow' is the first crossing (the send to the\n"
        "            operator's receipt), 'zflow-roundtrip' the two, back at the sink\n"
        "  copy      the same hop with one memcpy of the payload per hop\n"
        "  pipeline  source -> operator -> operator -> sink through the runtime\n"
        "  stage     the same pipeline on one worker: CPU per message of one stage\n"
        "  chain     source -> operator -> sink\n"
        "  all       every one of them (or several, comma-separated: limit,hop\n"
        "            runs the limit just before the hop, size by size)\n"
        "\n"
        "options:\n"
        "  --json          results as JSON (with the machine)\n"
        "  --isolated      hop: across a process boundary (isolation: process)\n"
        "  --sizes LIST    payload sizes, e.g. 64,4KiB,1MiB (default 64,4KiB,1MiB,10MiB,100MiB)\n"
        "  --seconds S     throughput phase per size (default 1)\n"
        "  --samples N     latency samples per size (default 20000)\n"
        "  -h, --help      this help\n");
}

static int parse_sizes(const char *arg, bench_opts *o)
{
    char *copy = strdup(arg), *save = NULL;
    o->n_sizes = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t b;
        if (zf_parse_size(tok, &b) != ZF_OK || o->n_sizes == BENCH_MAX_SIZES) {
            fprintf(stderr, "zf-bench: --sizes: %s\n", zf_last_error());
            free(copy);
            return -1;
        }
        o->sizes[o->n_sizes++] = (size_t)b;
    }
    free(copy);
    return o->n_sizes ? 0 : -1;
}

/* `which` is "all", one benchmark, or several separated by commas
 * ("limit,hop": figures of one run, for ratios). */
static bool wants(const char *which, const char *name)
{
    if (!strcmp(which, "all"))
        return true;
    size_t n = strlen(name);
    for (const char *p = which; (p = strstr(p, name)); p += n)
        if ((p == which || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

/* hop, in process or (--isolated) across a process boundary */
static int hop(const bench_opts *o, bench_result *res, size_t *n)
{
    return o->isolated ? bench_hop_isolated(o, res, n) : bench_hop(o, false, res, n);
}

int main(int argc, char **argv)
{
    bench_opts o = {.seconds = 1.0,
                    .samples = 20000,
                    .sizes = {64, 4096, 1u << 20, 10u << 20, 100u << 20},
                    .n_sizes = 5};
    const char *which = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--isolated")) {
            o.isolated = true;
        } else if (!strcmp(a, "--sizes") && i + 1 < argc) {
            if (parse_sizes(argv[++i], &o) != 0)
                return 2;
        } else if (!strcmp(a, "--seconds") && i + 1 < argc) {
            o.seconds = atof(argv[++i]);
        } else if (!strcmp(a, "--samples") && i + 1 < argc) {
            o.samples = (size_t)atol(argv[++i]);
        } else if (a[0] != '-' && !which) {
            which = a;
        } else {
            fprintf(stderr, "zf-bench: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!which) {
        usage(stderr);
        return 2;
    }
    bench_result res[64];
    size_t n = 0;
    int rc = 0;
    /* limit and hop pin this thread; what a later benchmark starts from it
     * (the runtime's workers, a node host) would inherit that CPU: each
     * benchmark starts from the mask the program started with. */
    cpu_set_t mask;
    bool have_mask = sched_getaffinity(0, sizeof mask, &mask) == 0;
#define RUN(call)                                                                                  \
    do {                                                                                           \
        rc |= (call);                                                                              \
        if (have_mask)                                                                             \
            pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);                            \
    } while (0)
    if (wants(which, "limit") && wants(which, "hop")) {
        /* Size by size, the limit just before the hop: a ratio of the two
         * is of one placement of the vCPUs (a VM's two vCPUs were SMT
         * siblings for some minutes of a run and not for others: the
         * limit's p50 80 ns, then 300). */
        for (size_t i = 0; i < o.n_sizes; i++) {
            bench_opts one = o;
            one.sizes[0] = o.sizes[i];
            one.n_sizes = 1;
            RUN(bench_limit(&one, res, &n));
            RUN(hop(&one, res, &n));
        }
    } else if (wants(which, "limit")) {
        RUN(bench_limit(&o, res, &n));
    } else if (wants(which, "hop")) {
        RUN(hop(&o, res, &n));
    }
    if (wants(which, "copy"))
        RUN(bench_hop(&o, true, res, &n));
    if (wants(which, "pipeline"))
        RUN(bench_pipeline(&o, res, &n));
    if (wants(which, "stage"))
        RUN(bench_stage(&o, res, &n));
    if (wants(which, "chain"))
        RUN(bench_pipeline_ops(&o, 1, res, &n));
#undef RUN
    if (!n && !rc) {
        fprintf(stderr, "zf-bench: unknown benchmark '%s'\n", which);
        return 2;
    }
    bench_print(stdout, res, n, o.json, 7);
    if (rc)
        fprintf(stderr, "zf-bench: a benchmark failed: %s\n", zf_last_error());
    return rc ? 1 : 0;
}
