/* zf-bench pipeline: source -> N operators -> sink through the runtime
 * (worker threads, scheduler, links), with the bench node libraries.
 *
 * Latency: lockstep, one capsule in flight, stamped at allocation by the
 * source and read by the sink: the cost of the scheduler plus N+1 hops.
 * Throughput: the source runs free, links of `block` policy; capsules
 * counted at the sink per second, allocation and release included.
 *
 * zf-bench stage: the same pipeline on one worker, so every node runs on
 * the same core (no line crosses cores): its CPU per message divided by
 * the 3 stages (a callback and the hop after it, the source's allocation
 * and the sink's release included) is the cost of one stage.
 *
 * zf-bench hop --isolated: source -> an operator in a process of its own
 * -> sink. Two results per size: "hop_isolated" "zflow" is one crossing,
 * the one-way latency from the source's send to the operator's receipt in
 * its process (the operator reads the clock first thing and writes the
 * sample into POSIX shared memory the bench maps), as iceoryx's figure is
 * publisher to subscriber; "hop_isolated" "zflow-roundtrip" is the whole
 * lockstep path back to the sink in the runtime's process, two crossings.
 * Both carry the free-running rate of that path. */
#include "bench.h"
#include "bench_flow.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The shared memory the isolated operator writes its samples into (b has
 * max_samples set): 0, or -1 (b->stamps stays ""). */
static int stamps_open(bench_shared *b, size_t size)
{
    snprintf(b->stamps, sizeof b->stamps, "/zf-bench-%d-%zu", (int)getpid(), size);
    size_t bytes = b->max_samples * sizeof(uint64_t);
    int fd = shm_open(b->stamps, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        fprintf(stderr, "zf-bench: shared memory %s: cannot create it\n", b->stamps);
        if (fd >= 0) {
            close(fd);
            shm_unlink(b->stamps);
        }
        b->stamps[0] = '\0';
        return -1;
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(b->stamps);
        b->stamps[0] = '\0';
        return -1;
    }
    b->stamps_ns = p;
    return 0;
}

static void stamps_close(bench_shared *b)
{
    if (!b->stamps[0])
        return;
    munmap(b->stamps_ns, b->max_samples * sizeof(uint64_t));
    shm_unlink(b->stamps);
    b->stamps[0] = '\0';
}

static int phase(bench_shared *b, int ops, unsigned workers, bool isolated, uint32_t cap,
                 double seconds, uint64_t want, double *elapsed_s, double *cpu_ns)
{
    const char *d = getenv("ZF_BENCH_NODES");
    const bench_flow fl = {.name = "bench-pipeline",
                           .prog = "zf-bench pipeline",
                           .nodes_dir = d ? d : ZF_BENCH_NODES_DIR,
                           .ops = ops,
                           .numbered = true,
                           .workers = workers,
                           .isolated = isolated};
    return bench_flow_phase(&fl, b, cap, seconds, want, elapsed_s, cpu_ns);
}

static int pipeline(const bench_opts *o, const char *name, int ops, unsigned workers, bool isolated,
                    bench_result *out, size_t *n_out)
{
    for (size_t i = 0; i < o->n_sizes; i++) {
        size_t size = o->sizes[i];
        bench_result *r = bench_result_init(&out[*n_out], name, "zflow", size);
        bench_result *rt =
            isolated ? bench_result_init(&out[*n_out + 1], name, "zflow-roundtrip", size) : NULL;

        /* Latency: lockstep (the source sends the next when the sink woke
         * it: zf_node_wake; 2 workers, as the throughput phase). Warm-up
         * samples are dropped. */
        size_t n = workers > 1 ? bench_samples_for(o->samples, size) : 0;
        size_t warm = bench_warmup_for(n);
        bench_shared *b = bench_shared_new();
        b->size = size;
        b->lockstep = 1;
        b->max_samples = n + warm;
        b->lat_ns = calloc(n + warm, sizeof *b->lat_ns);
        if (!b->lat_ns || (isolated && n && stamps_open(b, size) != 0)) {
            free(b->lat_ns);
            free(b);
            return -1;
        }
        double el, cpu;
        if (n && phase(b, ops, workers, isolated, 4, 120.0, n + warm, &el, &cpu) != 0) {
            stamps_close(b);
            return -1;
        }
        uint64_t got = atomic_load(&b->received);
        if (got > n + warm)
            got = n + warm;
        if (got > warm && isolated) {
            /* the operator's samples: one crossing (the sink's: both) */
            bench_percentiles(b->lat_ns + warm, got - warm, rt);
            for (uint64_t k = 0; k < got; k++)
                b->lat_ns[k] = (double)b->stamps_ns[k];
            bench_percentiles(b->lat_ns + warm, got - warm, r);
        } else if (got > warm) {
            bench_percentiles(b->lat_ns + warm, got - warm, r);
        }
        stamps_close(b);
        free(b->lat_ns);
        free(b);

        /* Throughput: free-running. */
        b = bench_shared_new();
        b->size = size;
        size_t cap = bench_queue_cap(size, 256u << 20, (size_t)(ops + 1));
        /* First touch before the clock: what the links hold, and as much
         * again in an isolated node's input ring (isolated.c, in_limit_of). */
        b->reserve = cap * (size_t)(ops + 1) * (isolated ? 2 : 1) + 8;
        if (phase(b, ops, workers, isolated, (uint32_t)cap, o->seconds, 0, &el, &cpu) != 0)
            return -1;
        uint64_t recv = atomic_load(&b->received);
        r->msgs_per_s = (double)recv / el;
        r->cpu_ns_per_msg = recv ? cpu / (double)recv : 0;
        if (workers == 1) /* one stage: a node's callback and its hop */
            r->cpu_ns_per_msg /= (double)(ops + 1);
        if (rt) {
            rt->msgs_per_s = r->msgs_per_s;
            rt->cpu_ns_per_msg = r->cpu_ns_per_msg;
            (*n_out)++;
        }
        free(b);
        (*n_out)++;
    }
    return 0;
}

int bench_pipeline_ops(const bench_opts *o, int ops, bench_result *out, size_t *n_out)
{
    return pipeline(o, ops == 2 ? "pipeline" : "chain", ops, 2, false, out, n_out);
}

int bench_pipeline(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return bench_pipeline_ops(o, 2, out, n_out);
}

int bench_stage(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return pipeline(o, "stage", 2, 1, false, out, n_out);
}

int bench_hop_isolated(const bench_opts *o, bench_result *out, size_t *n_out)
{
    return pipeline(o, "hop_isolated", 1, 2, true, out, n_out);
}
