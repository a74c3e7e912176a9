/* The bench node libraries as one flow: descriptor, run, stop. */
#include "bench_flow.h"
#include "bench_common.h"

#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void op_id(const bench_flow *fl, int i, char *buf, size_t n)
{
    if (fl->numbered)
        snprintf(buf, n, "op%d", i);
    else
        snprintf(buf, n, "op");
}

static char *descriptor(const bench_flow *fl, bench_shared *b, uint32_t cap)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    const char *dir = fl->nodes_dir;
    unsigned long long addr = (unsigned long long)(uintptr_t)b;
    fprintf(f, "name: %s\n", fl->name);
    fprintf(f,
            "sources:\n  - id: src\n    library: \"%s/libbench_source.so\"\n"
            "    configuration: {shared: %llu}\n    outputs: [out]\n",
            dir, addr);
    if (fl->ops > 0)
        fprintf(f, "operators:\n");
    for (int i = 0; i < fl->ops; i++) {
        char id[16];
        op_id(fl, i, id, sizeof id);
        fprintf(f, "  - id: %s\n", id);
        if (fl->python)
            fprintf(f, "    python: \"%s\"\n", fl->python);
        else
            fprintf(f, "    library: \"%s/libbench_op.so\"\n", dir);
        if (fl->isolated)
            fprintf(f, "    isolation: process\n");
        if (i == 0 && b->stamps[0])
            fprintf(f, "    configuration: {stamps: \"%s\", stamps_n: %llu}\n", b->stamps,
                    (unsigned long long)b->max_samples);
        fprintf(f, "    inputs: [in]\n    outputs: [out]\n");
    }
    fprintf(f,
            "sinks:\n  - id: sink\n    library: \"%s/libbench_sink.so\"\n"
            "    configuration: {shared: %llu}\n    inputs: [in]\n",
            dir, addr);
    fprintf(f, "links:\n");
    for (int i = 0; i <= fl->ops; i++) {
        char from[16] = "src", to[16] = "sink";
        if (i > 0)
            op_id(fl, i - 1, from, sizeof from);
        if (i < fl->ops)
            op_id(fl, i, to, sizeof to);
        fprintf(f,
                "  - {from: {node: %s, output: out}, to: {node: %s, input: in}, "
                "queue: {capacity: %u}}\n",
                from, to, cap);
    }
    fclose(f);
    return s;
}

int bench_flow_phase(const bench_flow *fl, bench_shared *b, uint32_t cap, double seconds,
                     uint64_t want, double *elapsed_s, double *cpu_ns)
{
    char *yaml = descriptor(fl, b, cap);
    zf_diag *diag = zf_diag_new();
    zf_flow *f = NULL;
    zf_runtime *rt = NULL;
    zf_instance *inst = NULL;
    int rc = -1;
    zf_runtime_options ro = {.workers = fl->workers ? fl->workers : 2};
    if (zf_flow_load_string(yaml, strlen(yaml), fl->name, NULL, NULL, diag, &f) != ZF_OK ||
        zf_runtime_create(&ro, &rt) != ZF_OK ||
        zf_instance_create(rt, f, NULL, diag, &inst) != ZF_OK) {
        char *t = zf_diag_format(diag);
        fprintf(stderr, "%s: %s%s\n", fl->prog, t && *t ? t : "", zf_last_error());
        free(t);
        goto out;
    }
    double cpu0 = cpu_ns ? bench_cpu_ns() : 0;
    uint64_t t0 = zf_clock_ns(), deadline = t0 + (uint64_t)(seconds * 1e9);
    if (zf_instance_start(inst) != ZF_OK) {
        fprintf(stderr, "%s: %s\n", fl->prog, zf_last_error());
        goto out;
    }
    for (;;) {
        uint64_t now = zf_clock_ns();
        uint64_t got = atomic_load(&b->received);
        if ((want && got >= want) || now >= deadline)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&b->stop, 1);
    *elapsed_s = (double)(zf_clock_ns() - t0) / 1e9;
    if (cpu_ns)
        *cpu_ns = bench_cpu_ns() - cpu0;
    /* ZF_OK for an instance; the figures were taken above */
    ZF_IGNORE(zf_instance_stop(inst, NULL));
    rc = 0;
out:
    zf_instance_destroy(inst);
    zf_runtime_destroy(rt);
    zf_flow_free(f);
    zf_diag_free(diag);
    free(yaml);
    return rc;
}
