/* Soak: the seed pipeline for 60 s (ZF_SOAK_SECONDS) with detect hanging
 * for 1.5 s every 3 s. Process RSS and pool high water stay flat: within
 * 10% between the first and the last quarter of the run. */
#include "harness.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

ZT_CASE(hangs_every_few_seconds_memory_stays_flat)
{
    int seconds = getenv("ZF_SOAK_SECONDS") ? atoi(getenv("ZF_SOAK_SECONDS")) : 60;
    const zt_seed seed = {.name = "soak",
                          .top = "",
                          .reserve = 60,
                          .hang_timeout = "500ms",
                          .detect_cfg = "hang_every_frames: 180, hang_for: 1.5s",
                          .capacity = 50,
                          .policy = "block"};
    const char *yaml = zt_seed_flow(&seed);
    zf_runtime *rt = NULL;
    ZT_OK(zf_runtime_create(NULL, &rt));
    zf_flow *f = zt_flow(yaml, NULL, NULL, NULL);
    ZT_CHECK(f);
    zf_instance *inst = zt_start(rt, f, NULL);
    ZT_CHECK(inst);

    int samples = seconds * 4, q = samples / 4;
    uint64_t rss_q1 = 0, rss_q4 = 0, hw_q1 = 0, hw_end = 0;
    for (int i = 0; i < samples; i++) {
        zt_sleep_ms(250);
        uint64_t rss = zt_rss();
        zf_pool_stats p = zt_pool_stats(inst);
        if (i < q && rss > rss_q1)
            rss_q1 = rss;
        if (i >= samples - q && rss > rss_q4)
            rss_q4 = rss;
        if (i == q - 1)
            hw_q1 = p.bytes_high_water;
        hw_end = p.bytes_high_water;
    }
    zf_node_stats det, cam;
    zt_node_stats(inst, "detect", &det, NULL, 0);
    zt_node_stats(inst, "camera", &cam, NULL, 0);
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    zf_instance_destroy(inst);
    zf_flow_free(f);
    zf_runtime_destroy(rt);

    printf("  %d s: %llu frames, detect degraded %llu times; RSS max %.1f MiB (first quarter) "
           "%.1f MiB (last); pool high water %.1f MiB -> %.1f MiB\n",
           seconds, (unsigned long long)cam.sent, (unsigned long long)det.degraded_count,
           (double)rss_q1 / 1048576, (double)rss_q4 / 1048576, (double)hw_q1 / 1048576,
           (double)hw_end / 1048576);
    ZT_CHECK(det.degraded_count >= (uint64_t)seconds / 6); /* hangs were injected */
    if (ZT_RSS_MEANINGFUL)
        ZT_CHECK(rss_q4 <= rss_q1 + rss_q1 / 10);
    ZT_CHECK(hw_end <= hw_q1 + hw_q1 / 10);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(r.nodes_abandoned, 0);
}

ZT_MAIN(ZT_ENTRY(hangs_every_few_seconds_memory_stays_flat))
