/* The bench node libraries (bench/nodes) run as one flow through libzflow's
 * public API: bench_source -> operators -> bench_sink, for zf-bench pipeline
 * and pyhop. The source and the sink share `b` (bench_shared.h) with the
 * caller. Unlike bench_common, this part links libzflow. */
#ifndef ZF_BENCH_FLOW_H
#define ZF_BENCH_FLOW_H

#include "bench_shared.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct bench_flow {
    const char *name;      /* the flow's name (descriptor and file name) */
    const char *prog;      /* what error messages start with */
    const char *nodes_dir; /* where libbench_{source,op,sink}.so are */
    int ops;               /* operators between the source and the sink */
    bool numbered;         /* operator ids op0, op1, ...; else the one operator is "op" */
    const char *python;    /* every operator runs this Python script, or NULL: libbench_op.so */
    unsigned workers;      /* the runtime's workers; 0: two */
    bool isolated;         /* the operators run with isolation: process */
} bench_flow;

/* One phase: the flow, every link of capacity `cap`, on a runtime of
 * fl->workers workers, until `want` capsules reached the sink (0: no count) or
 * `seconds` passed. *elapsed_s: from the start to the end of the phase;
 * *cpu_ns (unless NULL): this process's CPU time over it (bench_cpu_ns).
 * Returns 0, or -1 with the diagnostics on stderr. */
int bench_flow_phase(const bench_flow *fl, bench_shared *b, uint32_t cap, double seconds,
                     uint64_t want, double *elapsed_s, double *cpu_ns);

#endif
