/* zf-bench pipeline: placeholder until the runtime lands (filled below). */
#include "bench.h"

int bench_pipeline(const bench_opts *o, bench_result *out, size_t *n_out)
{
    (void)o;
    (void)out;
    (void)n_out;
    return 0;
}
