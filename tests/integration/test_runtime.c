/* The runtime: pipelines deliver everything, by reference, in order; fan-out
 * shares one buffer; pinned memory is released exactly once per capsule;
 * sources on threads of their own block with a timeout; periodic sources
 * keep their rate; suspend and resume; copy on write; the stop report. */
#include "harness.h"
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static zf_runtime *rt;

static void setup(void)
{
    if (!rt)
        ZT_OK(zf_runtime_create(NULL, &rt));
}

/* source -> relay -> sink; knobs as extra descriptor text. */
static const char *chain(const char *gen_cfg, const char *relay_cfg, const char *queue,
                         const char *summary)
{
    const zt_node n[] = {{"gen", ZT_LIB("gen"), gen_cfg, queue},
                         {"relay", ZT_LIB("relay"), relay_cfg, queue},
                         {"sink", ZT_LIB("count"), zt_fmt("summary: \"%s\"", summary), NULL}};
    return zt_chain("chain", n, 3, true);
}

static zf_stop_report run_until(const char *yaml, const char *id, uint64_t n)
{
    setup();
    return zt_run_until(rt, yaml, NULL, id, n, 60000).report;
}

ZT_CASE(pipeline_delivers_everything_in_order_without_copies)
{
    const char *sum = zt_tmp_path("chain.json");
    zf_stop_report r =
        run_until(chain("count: 20000, size: 64", "", "capacity: 4", sum), "sink", 20000);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(r.pool_bytes_after, 0);
    ZT_EQ(r.dropped, 0);
    ZT_EQ(zt_summary(sum, "count"), 20000);
    ZT_EQ(zt_summary(sum, "same_address"), 20000); /* the source's buffer, every time */
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    ZT_EQ(zt_summary(sum, "last_seq"), 20000);
}

ZT_CASE(large_capsules_move_by_reference)
{
    const char *sum = zt_tmp_path("large.json");
    zf_stop_report r =
        run_until(chain("count: 200, size: 4194304", "", "capacity: 8", sum), "sink", 200);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(zt_summary(sum, "count"), 200);
    ZT_EQ(zt_summary(sum, "same_address"), 200);
    ZT_EQ(zt_summary(sum, "bytes"), 200ll * 4194304);
}

ZT_CASE(pinned_capsules_release_once_each)
{
    const char *sum = zt_tmp_path("wrap.json");
    zf_stop_report r = run_until(
        chain("count: 3000, size: 256, mode: wrap", "", "capacity: 16", sum), "sink", 3000);
    ZT_EQ(zt_summary(sum, "count"), 3000);
    ZT_EQ(zt_summary(sum, "same_address"), 3000);
    ZT_EQ(r.releases, 3000); /* one release callback per capsule */
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(static_capsules)
{
    const char *sum = zt_tmp_path("static.json");
    zf_stop_report r =
        run_until(chain("count: 100, size: 16, mode: static", "", "capacity: 4", sum), "sink", 100);
    ZT_EQ(zt_summary(sum, "count"), 100);
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(source_thread_blocks_with_timeout_and_loses_nothing)
{
    const char *sum = zt_tmp_path("thread.json");
    zf_stop_report r =
        run_until(chain("count: 2000, size: 64, thread: true", "sleep_us: 50", "capacity: 2", sum),
                  "sink", 2000);
    ZT_EQ(zt_summary(sum, "count"), 2000);
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    ZT_EQ(r.dropped, 0);
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(copy_on_write_in_a_fan_out)
{
    /* gen fans out to relay (which writes: copy on write) and to a sink
     * that sees the original, untouched and at the source's address. */
    const char *a = zt_tmp_path("direct.json"), *b = zt_tmp_path("mutated.json");
    char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "name: cow\n"
             "sources:\n"
             "  - id: gen\n"
             "    library: \"{{ NODES }}/libt_gen.so\"\n"
             "    configuration: {count: 500, size: 128}\n"
             "    outputs: [out]\n"
             "operators:\n"
             "  - id: relay\n"
             "    library: \"{{ NODES }}/libt_relay.so\"\n"
             "    configuration: {mutate: true, keep: 500}\n"
             "    inputs: [in]\n"
             "    outputs: [out]\n"
             "sinks:\n"
             "  - id: direct\n"
             "    library: \"{{ NODES }}/libt_count.so\"\n"
             "    configuration: {summary: \"%s\"}\n"
             "    inputs: [in]\n"
             "  - id: mutated\n"
             "    library: \"{{ NODES }}/libt_count.so\"\n"
             "    configuration: {summary: \"%s\"}\n"
             "    inputs: [in]\n"
             "links:\n"
             "  - {from: {node: gen, output: out}, to: {node: relay, input: in}}\n"
             "  - {from: {node: gen, output: out}, to: {node: direct, input: in}}\n"
             "  - {from: {node: relay, output: out}, to: {node: mutated, input: in}}\n",
             a, b);
    zf_stop_report r = run_until(yaml, "mutated", 500);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(zt_summary(a, "count"), 500);
    ZT_EQ(zt_summary(b, "count"), 500);
    /* relay keeps a reference before writing, so every capsule is shared
     * when it writes: the mutated branch gets copies (moved), the direct
     * branch the originals at the source's address. */
    ZT_EQ(zt_summary(b, "moved"), 500);
    ZT_EQ(zt_summary(a, "same_address"), 500);
}

/* What a callback sent is delivered while that callback goes on: the
 * downstream node, put in this worker's run-next slot, is taken by the
 * other worker (asleep by then: the flow is idle), woken by the timer's
 * tick (sched.c, slot_wait_long and zfi_sched_tick), not left until the
 * callback returns. */
ZT_CASE(output_of_a_long_callback_is_delivered_before_it_returns)
{
    zf_runtime *two = NULL;
    const zf_runtime_options o = {.workers = 2};
    ZT_OK(zf_runtime_create(&o, &two));
    const char *sum = zt_tmp_path("linger.sum");
    /* The second capsule comes a second after the first: both workers
     * sleep by then; the relay's callback for it sends, then stays 3 s.
     * The next thing to wake a worker otherwise is the source's next tick,
     * a second later still: the bound of 1.5 s tells the two apart. */
    const zt_node n[] = {
        {"gen", ZT_LIB("gen") "\n    period: 1000ms", "count: 2", NULL},
        {"relay", ZT_LIB("relay") "\n    hang_timeout: 10s", "linger_ms: 3000, linger_on: 2", NULL},
        {"sink", ZT_LIB("count"), zt_fmt("summary: \"%s\"", sum), NULL}};
    zf_flow *f = NULL;
    zf_instance *inst = zt_launch(two, zt_chain("linger", n, 3, true), NULL, &f);
    ZT_CHECK(inst);
    zf_node_stats relay = {0};
    bool first = zt_wait_callbacks(inst, "sink", 1, 2500);
    bool second = first && zt_wait_callbacks(inst, "sink", 2, 1500);
    ZT_CHECK(zt_node_stats(inst, "relay", &relay, NULL, 0));
    /* the callback's end, before the destroy (which would abandon it) */
    ZT_CHECK(zt_wait_callbacks(inst, "relay", 2, 10000));
    zf_instance_destroy(inst);
    zf_flow_free(f);
    zf_runtime_destroy(two);
    ZT_CHECK(first);
    ZT_CHECK(second);
    ZT_EQ(relay.callbacks, 1); /* the relay's second callback had not returned */
}

ZT_CASE(periodic_source_keeps_its_rate)
{
    setup();
    const char *yaml = "name: periodic\n"
                       "sources:\n"
                       "  - id: gen\n"
                       "    library: \"{{ NODES }}/libt_gen.so\"\n"
                       "    period: 10ms\n"
                       "    outputs: [out]\n"
                       "sinks:\n"
                       "  - id: sink\n"
                       "    library: \"{{ NODES }}/libt_count.so\"\n"
                       "    inputs: [in]\n"
                       "links:\n"
                       "  - {from: {node: gen, output: out}, to: {node: sink, input: in}}\n";
    zf_flow *f = zt_flow(yaml, NULL, NULL, NULL);
    ZT_CHECK(f);
    zf_instance *inst = zt_start(rt, f, NULL);
    ZT_CHECK(inst);
    zt_sleep_ms(1000);
    zf_node_stats s;
    ZT_CHECK(zt_node_stats(inst, "gen", &s, NULL, 0));
    zf_instance_destroy(inst);
    zf_flow_free(f);
    /* 100 ticks expected; wide margins, this is not a timing test. */
    ZT_CHECK(s.callbacks >= 50);
    ZT_CHECK(s.callbacks <= 110);
}

ZT_CASE(suspend_stops_sources_resume_continues_nothing_lost)
{
    setup();
    const char *sum = zt_tmp_path("suspend.json");
    zt_node nodes[] = {{"gen", ZT_LIB("gen") "\n    period: 2ms", NULL, NULL},
                       {"sink", ZT_LIB("count"), zt_fmt("summary: \"%s\"", sum), NULL}};
    zf_flow *f = zt_flow(zt_chain("suspend", nodes, 2, false), NULL, NULL, NULL);
    zf_instance *inst = zt_start(rt, f, NULL);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_callbacks(inst, "sink", 20, 5000));
    ZT_OK(zf_instance_suspend(inst));
    ZT_EQ(zf_instance_state_get(inst), ZF_INSTANCE_SUSPENDED);
    ZT_EQ(zf_instance_suspend(inst), ZF_ESTATE);
    zt_sleep_ms(50);
    zf_node_stats a, b;
    zt_node_stats(inst, "sink", &a, NULL, 0);
    zt_sleep_ms(300);
    zt_node_stats(inst, "sink", &b, NULL, 0);
    ZT_EQ(a.callbacks, b.callbacks); /* suspended: nothing flows */
    ZT_OK(zf_instance_start(inst));  /* resume */
    ZT_CHECK(zt_wait_callbacks(inst, "sink", b.callbacks + 20, 5000));
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    zf_node_stats g;
    zt_node_stats(inst, "gen", &g, NULL, 0);
    zf_instance_destroy(inst);
    zf_flow_free(f);
    ZT_EQ(r.dropped, 0);
    ZT_EQ(zt_summary(sum, "count"), (long long)g.sent); /* every capsule sent arrived */
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
}

ZT_CASE(stop_report_names_who_holds_leaked_bytes)
{
    zf_stop_report r = run_until(
        chain("count: 100, size: 960", "leak: 3", "capacity: 4", zt_tmp_path("leak.json")), "sink",
        100);
    ZT_EQ(r.bytes_leaked, 3 * 1024);
    ZT_CONTAINS(r.holders, "node 'relay' took 3 reference(s) it never released");
    ZT_CONTAINS(r.holders, "last delivered to node 'sink' (input 'in')");
    ZT_CONTAINS(r.holders, "3 capsule(s), 3072 bytes");
}

ZT_CASE(kept_references_released_in_fini_are_not_leaks)
{
    zf_stop_report r = run_until(
        chain("count: 100, size: 1000", "keep: 10", "capacity: 4", zt_tmp_path("keep.json")),
        "sink", 100);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(r.holders[0], 0);
}

ZT_CASE(drop_oldest_link_sheds_and_stays_bounded)
{
    setup();
    const char *sum = zt_tmp_path("drop.json");
    zf_flow *f = zt_flow(
        chain("count: 3000, size: 64", "sleep_us: 200", "capacity: 8, policy: drop_oldest", sum),
        NULL, NULL, NULL);
    zf_instance *inst = zt_start(rt, f, NULL);
    ZT_CHECK(inst);
    zf_node_stats g;
    for (int t = 0; t < 10000 && (zt_node_stats(inst, "gen", &g, NULL, 0), g.sent < 3000); t += 5)
        zt_sleep_ms(5);
    ZT_EQ(g.sent, 3000);
    zf_link_stats in;
    for (int t = 0; t < 10000 && (zt_link_stats(inst, "relay.in", &in), in.depth > 0); t += 5)
        zt_sleep_ms(5);
    zf_pool_stats p = zt_pool_stats(inst);
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    zf_instance_destroy(inst);
    zf_flow_free(f);
    ZT_CHECK(r.dropped > 0);
    ZT_CHECK(in.high_water <= 8);
    /* two queues of 8, plus what nodes hold, plus each worker's reservation
     * slack (two 4 KiB steps for 128-byte blocks: docs/performance.md) */
    ZT_CHECK(p.bytes_high_water <= 32 * 128 + 2 * 2 * 4096);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(zt_summary(sum, "last_seq"), 3000); /* the newest survive */
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
}

/* What the runtime logged at INFO about instances (state_machine_...). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char logs[8192];
static size_t logs_len;

static void capture(void *arg, zf_log_level level, const char *scope, const char *msg)
{
    (void)arg;
    if (level != ZF_LOG_INFO || strcmp(scope, "instance") != 0)
        return;
    pthread_mutex_lock(&log_mu);
    int n = snprintf(logs + logs_len, sizeof logs - logs_len, "%s\n", msg);
    if (n > 0 && logs_len + (size_t)n < sizeof logs)
        logs_len += (size_t)n;
    pthread_mutex_unlock(&log_mu);
}

ZT_CASE(state_machine_refuses_bad_transitions)
{
    setup();
    logs_len = 0;
    logs[0] = '\0';
    zf_log_set(capture, NULL, ZF_LOG_INFO);
    zf_flow *f = zt_flow(chain("count: 10", "", "capacity: 4", ""), NULL, NULL, NULL);
    zf_instance *inst = NULL;
    ZT_OK(zf_instance_create(rt, f, NULL, NULL, &inst));
    ZT_EQ(zf_instance_state_get(inst), ZF_INSTANCE_CREATED);
    ZT_EQ(zf_instance_suspend(inst), ZF_ESTATE);
    ZT_OK(zf_instance_start(inst));
    ZT_EQ(zf_instance_start(inst), ZF_ESTATE);
    ZT_CONTAINS(zf_last_error(), "RUNNING");
    ZT_OK(zf_instance_stop(inst, NULL));
    ZT_EQ(zf_instance_state_get(inst), ZF_INSTANCE_DESTROYED);
    ZT_OK(zf_instance_stop(inst, NULL)); /* idempotent */
    ZT_EQ(zf_instance_start(inst), ZF_ESTATE);
    ZT_EQ(strlen(zf_instance_uuid(inst)), 36);
    ZT_EQ(zf_instance_uuid(inst)[14], '4'); /* UUID v4 */
    /* every change, once, with its reason; none for the refused ones */
    char line[160];
    pthread_mutex_lock(&log_mu);
    snprintf(line, sizeof line, "%s: CREATED -> RUNNING: started\n", zf_instance_uuid(inst));
    ZT_CONTAINS(logs, line);
    snprintf(line, sizeof line, "%s: RUNNING -> DRAINING: stopping", zf_instance_uuid(inst));
    ZT_CONTAINS(logs, line);
    snprintf(line, sizeof line, "%s: DRAINING -> DESTROYED: stopped\n", zf_instance_uuid(inst));
    ZT_CONTAINS(logs, line);
    size_t changes = 0;
    for (const char *p = logs; (p = strstr(p, " -> ")); p++)
        changes++;
    pthread_mutex_unlock(&log_mu);
    ZT_EQ(changes, 3);
    zf_log_set(getenv("ZT_LOG") ? zf_log_stderr : NULL, NULL, ZF_LOG_DEBUG);
    zf_instance_destroy(inst);
    zf_flow_free(f);
}

ZT_CASE(stopping_a_never_started_instance_is_immediate)
{
    setup();
    zf_flow *f = zt_flow(chain("count: 10", "", "capacity: 4", ""), NULL, NULL, NULL);
    zf_instance *inst = NULL;
    ZT_OK(zf_instance_create(rt, f, NULL, NULL, &inst));
    uint64_t t0 = zf_clock_ns();
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    ZT_CHECK(zf_clock_ns() - t0 < 500000000ull); /* no drain to wait for */
    ZT_CHECK(!r.drain_timed_out);
    zf_instance_destroy(inst);
    zf_flow_free(f);
}

/* End of stream that comes while a consumer waits in the run queue for its
 * last capsule (large capsules: one fills a step's budget) is seen by that
 * step: every stop drains at once, none waits for the drain timeout. */
ZT_CASE(end_of_stream_behind_a_full_step_is_seen)
{
    setup();
    zf_flow *f = zt_flow(chain("count: 3, size: 131072", "", "capacity: 4", ""), NULL, NULL, NULL);
    zf_instance_options o = {.drain_timeout_ns = 1000000000};
    int timed_out = 0;
    for (int i = 0; i < 400 && !timed_out; i++) {
        zf_instance *inst = NULL;
        ZT_OK(zf_instance_create(rt, f, &o, NULL, &inst));
        ZT_OK(zf_instance_start(inst));
        if (i % 3)
            zt_sleep_ms(i % 3); /* the stop lands before, during or after the last sends */
        zf_stop_report r;
        ZT_OK(zf_instance_stop(inst, &r));
        timed_out += r.drain_timed_out;
        ZT_EQ(r.bytes_leaked, 0);
        zf_instance_destroy(inst);
    }
    ZT_EQ(timed_out, 0);
    zf_flow_free(f);
}

/* A slow (not hung) node is waited for at stop, never abandoned, and runs
 * no callback once the instance is halted. */
ZT_CASE(slow_nodes_are_waited_for_not_abandoned)
{
    setup();
    zf_flow *f = zt_flow(chain("count: 200, size: 64", "sleep_us: 150000", "capacity: 64", ""),
                         NULL, NULL, NULL);
    zf_instance_options io = {.drain_timeout_ns = 300000000};
    zf_instance *inst = NULL;
    ZT_OK(zf_instance_create(rt, f, &io, NULL, &inst));
    ZT_OK(zf_instance_start(inst));
    ZT_CHECK(zt_wait_callbacks(inst, "relay", 2, 5000));
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    zf_node_stats a, b;
    zt_node_stats(inst, "relay", &a, NULL, 0);
    zt_sleep_ms(500);
    zt_node_stats(inst, "relay", &b, NULL, 0);
    ZT_EQ(r.nodes_abandoned, 0);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(a.callbacks, b.callbacks); /* halted: nothing ran after the stop */
    zf_instance_destroy(inst);
    zf_flow_free(f);
}

/* A node abandoned inside a callback in the middle of a batch of small
 * capsules: those its step had not taken yet are still in the link (a step
 * takes them one at a time) and are flushed; only the one it holds is
 * unaccounted for, and it is not a leak. */
ZT_CASE(abandoned_mid_batch_leaks_nothing)
{
    setup();
    zf_flow *f = zt_flow(chain("size: 64", "sleep_us: 20000, hang_on: 3", "capacity: 64", ""), NULL,
                         NULL, NULL);
    zf_instance_options io = {.drain_timeout_ns = 300000000};
    zf_instance *inst = NULL;
    ZT_OK(zf_instance_create(rt, f, &io, NULL, &inst));
    ZT_OK(zf_instance_start(inst));
    ZT_CHECK(zt_wait_callbacks(inst, "relay", 2, 5000));
    zt_sleep_ms(200); /* in the third callback, for good */
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    ZT_EQ(r.nodes_abandoned, 1);
    ZT_CONTAINS(r.holders, "node 'relay' abandoned");
    ZT_EQ(r.bytes_leaked, 0);
    ZT_CHECK(r.bytes_abandoned > 0);
    ZT_EQ(r.pool_bytes_after, r.bytes_abandoned); /* one capsule: the one it holds */
    ZT_CHECK(r.dropped >= 20);                    /* what waits in its link, flushed */
    ZT_CHECK(r.in_flight_at_stop >= 60);          /* a full link */
    ZT_CHECK(r.delivered_in_drain < 1000);
    zf_instance_destroy(inst);
    zf_flow_free(f);
}

/* A node that outlives its hang_timeout in the middle of a batch of small
 * capsules, then returns: the rest of its batch goes back to its link (the
 * breaker sheds from there), its worker retires, and every capsule is
 * accounted for: delivered in order, or counted dropped. */
ZT_CASE(hung_mid_batch_then_back_accounts_for_everything)
{
    const char *sum = zt_tmp_path("hungback.json");
    setup();
    zf_flow *f = zt_flow(chain("count: 3000, size: 64",
                               "sleep_us: 20000, hang_on: 3, hang_ms: 1500", "capacity: 64", sum),
                         NULL, NULL, NULL);
    int threads = zt_threads();
    zf_instance *inst = zt_start(rt, f, NULL);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_state(inst, "relay", ZF_NODE_DEGRADED, 5000));
    ZT_CHECK(zt_wait_state(inst, "relay", ZF_NODE_RUNNING, 5000));
    zf_node_stats g;
    for (int i = 0; i < 600; i++) { /* the source sends all it has */
        zt_node_stats(inst, "gen", &g, NULL, 0);
        if (g.sent == 3000)
            break;
        zt_sleep_ms(10);
    }
    ZT_EQ(g.sent, 3000);
    /* the watchdog's replacement stays, the retired worker went */
    for (int i = 0; i < 200 && zt_threads() != threads; i++)
        zt_sleep_ms(10);
    ZT_EQ(zt_threads(), threads);
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    ZT_EQ(r.nodes_abandoned, 0);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_CHECK(r.dropped > 0); /* the breaker shed load while it hung */
    ZT_EQ(zt_summary(sum, "count") + (long long)r.dropped, 3000);
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    zf_instance_destroy(inst);
    zf_flow_free(f);
}

/* Destroying one instance while a slow one keeps the only worker busy: the
 * destroyed instance's queued nodes are popped later, safely. */
ZT_CASE(destroy_while_its_nodes_wait_in_the_run_queue)
{
    zf_runtime *one = NULL;
    zf_runtime_options ro = {.workers = 1};
    ZT_OK(zf_runtime_create(&ro, &one));
    zf_flow *fa =
        zt_flow(chain("thread: true", "sleep_us: 100000", "capacity: 64", ""), NULL, NULL, NULL);
    zf_flow *fb = zt_flow(chain("", "", "capacity: 4", ""), NULL, NULL, NULL);
    zf_instance *a = zt_start(one, fa, NULL), *b = zt_start(one, fb, NULL);
    ZT_CHECK(a && b);
    zt_sleep_ms(300);
    zf_instance_destroy(b); /* freed by the worker that pops its last node */
    zt_sleep_ms(1500);
    zf_instance_destroy(a);
    zf_runtime_destroy(one);
    zf_flow_free(fa);
    zf_flow_free(fb);
}

/* Issue 17: a send to an output port that does not exist degrades the node
 * with a reason that names the port, not only "last: ZF_EINVAL". */
ZT_CASE(send_to_a_missing_port_is_named_in_the_reason)
{
    setup();
    const zt_node n[] = {
        {"gen", ZT_LIB("gen"), "count: 50, size: 64", NULL},
        {"bad", "library: \"{{ NODES }}/libt_faulty.so\"", "mode: bad_port", NULL}};
    zf_flow *f = zt_flow(zt_chain("bad-port", n, 2, false), NULL, NULL, NULL);
    ZT_CHECK(f);
    zf_instance *inst = zt_start(rt, f, NULL);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_state(inst, "bad", ZF_NODE_DEGRADED, 10000));
    char reason[256];
    zf_node_stats st;
    ZT_CHECK(zt_node_stats(inst, "bad", &st, reason, sizeof reason));
    ZT_CONTAINS(reason,
                "last: ZF_EINVAL: zf_send to output port 3, which does not exist (0 outputs)");
    zt_finish(inst, f);
}

ZT_CASE(teardown)
{
    zf_runtime_destroy(rt);
    rt = NULL;
}

/* Issue 17, finding 10: a node writing through zf_data_ptr into a capsule
 * its sibling branch also holds. With ZF_CHECK_SHARED=1 the change is
 * caught when a reference is released, counted in the stop report and
 * logged (the last case before teardown: the mode stays on for the
 * process). */
ZT_CASE(writes_into_shared_capsules_are_caught_in_debug_mode)
{
    setenv("ZF_CHECK_SHARED", "1", 1);
    const char *a = zt_tmp_path("scribbled.json"), *b = zt_tmp_path("slow.json");
    char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "name: scribble\n"
             "sources:\n"
             "  - id: gen\n"
             "    library: \"{{ NODES }}/libt_gen.so\"\n"
             "    configuration: {count: 300, size: 128}\n"
             "    outputs: [out]\n"
             "operators:\n"
             "  - id: writer\n"
             "    library: \"{{ NODES }}/libt_relay.so\"\n"
             "    configuration: {scribble: true}\n"
             "    inputs: [in]\n"
             "    outputs: [out]\n"
             "  - id: reader\n"
             "    library: \"{{ NODES }}/libt_relay.so\"\n"
             "    configuration: {sleep_us: 300}\n"
             "    inputs: [in]\n"
             "    outputs: [out]\n"
             "sinks:\n"
             "  - id: scribbled\n"
             "    library: \"{{ NODES }}/libt_count.so\"\n"
             "    configuration: {summary: \"%s\"}\n"
             "    inputs: [in]\n"
             "  - id: slow\n"
             "    library: \"{{ NODES }}/libt_count.so\"\n"
             "    configuration: {summary: \"%s\"}\n"
             "    inputs: [in]\n"
             "links:\n"
             "  - {from: {node: gen, output: out}, to: {node: writer, input: in}}\n"
             "  - {from: {node: gen, output: out}, to: {node: reader, input: in}}\n"
             "  - {from: {node: writer, output: out}, to: {node: scribbled, input: in}}\n"
             "  - {from: {node: reader, output: out}, to: {node: slow, input: in}}\n",
             a, b);
    uint64_t before = zf_debug_shared_writes();
    zf_stop_report r = run_until(yaml, "slow", 300);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_CHECK(r.shared_writes > 0);
    ZT_CHECK(zf_debug_shared_writes() - before >= r.shared_writes);
    ZT_CONTAINS(r.holders, "written while shared");
    printf("  %llu of 300 shared capsules caught written\n", (unsigned long long)r.shared_writes);
}

ZT_MAIN(ZT_ENTRY(pipeline_delivers_everything_in_order_without_copies),
        ZT_ENTRY(large_capsules_move_by_reference), ZT_ENTRY(pinned_capsules_release_once_each),
        ZT_ENTRY(static_capsules), ZT_ENTRY(source_thread_blocks_with_timeout_and_loses_nothing),
        ZT_ENTRY(copy_on_write_in_a_fan_out), ZT_ENTRY(periodic_source_keeps_its_rate),
        ZT_ENTRY(output_of_a_long_callback_is_delivered_before_it_returns),
        ZT_ENTRY(suspend_stops_sources_resume_continues_nothing_lost),
        ZT_ENTRY(stop_report_names_who_holds_leaked_bytes),
        ZT_ENTRY(kept_references_released_in_fini_are_not_leaks),
        ZT_ENTRY(drop_oldest_link_sheds_and_stays_bounded),
        ZT_ENTRY(state_machine_refuses_bad_transitions),
        ZT_ENTRY(stopping_a_never_started_instance_is_immediate),
        ZT_ENTRY(end_of_stream_behind_a_full_step_is_seen),
        ZT_ENTRY(slow_nodes_are_waited_for_not_abandoned),
        ZT_ENTRY(abandoned_mid_batch_leaks_nothing),
        ZT_ENTRY(hung_mid_batch_then_back_accounts_for_everything),
        ZT_ENTRY(destroy_while_its_nodes_wait_in_the_run_queue),
        ZT_ENTRY(send_to_a_missing_port_is_named_in_the_reason),
        ZT_ENTRY(writes_into_shared_capsules_are_caught_in_debug_mode), ZT_ENTRY(teardown))
