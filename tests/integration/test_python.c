/* Python nodes (libzflow-python.so, scripts in tests/python/): zero copy
 * both ways, proven by addresses (a C source's buffer reaches a Python sink
 * in place; a Python object sent by a Python source reaches a C sink in
 * place); writable Python objects (bytearray, array.array, NumPy arrays and
 * views of them) copied once at send, so a write after send reaches no
 * receiver, while bytes and read-only NumPy arrays over bytes stay in place;
 * pinned Python objects released when the last reference drops;
 * exceptions contained as counted errors with their traceback; on_input's
 * memoryview unusable (raising, not crashing) after its callback; a pure
 * Python source -> C operator -> Python sink pipeline; load errors named;
 * and the seed pipeline with detect.py.
 *
 * Skipped (each case passes with a note) when the Python host was not
 * built. Under AddressSanitizer, LeakSanitizer is told to ignore what the
 * never-finalized interpreter keeps (tests/python/lsan.supp): allocations
 * made by libpython only, never by zflow. */
#include "harness.h"
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- LeakSanitizer: suppressions for CPython's own allocations ---- */
#if defined(__SANITIZE_ADDRESS__) || defined(ZF_SANITIZE_ADDRESS)
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__lsan_default_suppressions(void)
{
    static char text[4096];
    const char *src = getenv("ZF_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/python/lsan.supp", src ? src : "..");
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    } else {
        snprintf(text, sizeof text, "leak:libpython3\n");
    }
    return text;
}
#endif

static zf_runtime *rt;
static char py_var[1024];
static const char *vars[] = {py_var, NULL};

/* Logs, captured for the checks on error messages. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char logs[65536];
static size_t logs_len;

static void capture(void *arg, zf_log_level level, const char *scope, const char *msg)
{
    (void)arg;
    (void)level;
    pthread_mutex_lock(&log_mu);
    int n = snprintf(logs + logs_len, sizeof logs - logs_len, "%s: %s\n", scope, msg);
    if (n > 0 && logs_len + (size_t)n < sizeof logs)
        logs_len += (size_t)n;
    pthread_mutex_unlock(&log_mu);
}

static void logs_start(void)
{
    pthread_mutex_lock(&log_mu);
    logs_len = 0;
    logs[0] = '\0';
    pthread_mutex_unlock(&log_mu);
    zf_log_set(capture, NULL, ZF_LOG_DEBUG);
}

static void logs_stop(void)
{
    zf_log_set(getenv("ZT_LOG") ? zf_log_stderr : NULL, NULL, ZF_LOG_DEBUG);
}

/* True (and a note) when there is no Python host to test. */
static bool no_python(void)
{
    char host[1024];
    const char *env = getenv("ZF_PYTHON_HOST");
    snprintf(host, sizeof host, "%s/libzflow-python.so", zt_build_dir());
    if ((env && *env && access(env, R_OK) == 0) || access(host, R_OK) == 0) {
        if (!rt)
            ZT_OK(zf_runtime_create(NULL, &rt));
        snprintf(py_var, sizeof py_var, "PY=%s/tests/python", zt_source_dir());
        return false;
    }
    printf("  skip: %s not built (needs python3-dev)\n", host);
    return true;
}

/* Create and start; NULL with the diagnostics printed. */
static zf_instance *start(const char *yaml, zf_flow **fo)
{
    return zt_launch(rt, yaml, vars, fo);
}

/* Start, wait (60 s at most) until node `id` has had `n` callbacks, stop. */
static zt_outcome run_until(const char *yaml, const char *id, uint64_t n)
{
    return zt_run_until(rt, yaml, vars, id, n, 60000);
}

/* A Python node's code line. */
#define PY(script) "python: \"{{ PY }}/" script "\""

/* gen (C) -> sink.py */
static const char *c_to_py(const char *gen_cfg, const char *sink_cfg)
{
    const zt_node n[] = {{"gen", ZT_LIB("gen"), gen_cfg, "capacity: 8"},
                         {"sink", PY("sink.py"), sink_cfg, NULL}};
    return zt_chain("c-to-py", n, 2, true);
}

/* source.py -> count (C), optionally through relay (C) */
static const char *py_to_c(const char *src_cfg, const char *relay_cfg, const char *sum)
{
    zt_node n[] = {{"src", PY("source.py"), src_cfg, "capacity: 8"},
                   {"relay", ZT_LIB("relay"), relay_cfg, "capacity: 8"},
                   {"sink", ZT_LIB("count"), zt_fmt("summary: \"%s\"", sum), NULL}};
    if (!relay_cfg)
        n[1] = n[2];
    return zt_chain("py-to-c", n, relay_cfg ? 3 : 2, true);
}

ZT_CASE(c_source_to_python_sink_reads_the_same_buffer)
{
    if (no_python())
        return;
    /* 64 B and 4 MiB capsules: the Python sink's memoryview points at the
     * address the C source wrote into each payload (checked through
     * zflow.address and, independently, through ctypes). */
    const char *sizes[] = {"count: 2000, size: 64", "count: 40, size: 4194304"};
    const long long counts[] = {2000, 40};
    for (int i = 0; i < 2; i++) {
        const char *sum = zt_tmp_path("pysink.json");
        char scfg[512];
        snprintf(scfg, sizeof scfg, "summary: \"%s\"", sum);
        zt_outcome run = run_until(c_to_py(sizes[i], scfg), "sink", (uint64_t)counts[i]);
        ZT_CHECK(run.started);
        ZT_CHECK(run.reached);
        zf_node_stats s = run.node;
        zf_stop_report r = run.report;
        ZT_EQ(s.errors, 0);
        ZT_EQ(zt_summary(sum, "count"), counts[i]);
        ZT_EQ(zt_summary(sum, "same_address"), counts[i]);
        ZT_EQ(zt_summary(sum, "ctypes_same"), counts[i]);
        ZT_EQ(zt_summary(sum, "out_of_order"), 0);
        ZT_EQ(zt_summary(sum, "ports"), 1);
        ZT_EQ(r.bytes_leaked, 0);
    }
}

ZT_CASE(two_nodes_run_one_script_each_with_its_own_state)
{
    if (no_python())
        return;
    /* gen fans out to two sinks running sink.py: each its own module and
     * object (both count everything), both reading the same buffers. */
    const char *a = zt_tmp_path("s1.json"), *b = zt_tmp_path("s2.json");
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "name: two\n"
             "sources:\n"
             "  - id: gen\n"
             "    library: \"{{ NODES }}/libt_gen.so\"\n"
             "    configuration: {count: 1000, size: 64}\n"
             "    outputs: [out]\n"
             "sinks:\n"
             "  - id: s1\n"
             "    python: \"{{ PY }}/sink.py\"\n"
             "    configuration: {summary: \"%s\"}\n"
             "    inputs: [in]\n"
             "  - id: s2\n"
             "    python: \"{{ PY }}/sink.py\"\n"
             "    configuration: {summary: \"%s\"}\n"
             "    inputs: [in]\n"
             "links:\n"
             "  - {from: {node: gen, output: out}, to: {node: s1, input: in}}\n"
             "  - {from: {node: gen, output: out}, to: {node: s2, input: in}}\n",
             a, b);
    zf_flow *f;
    zf_instance *inst = start(yaml, &f);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_callbacks(inst, "s1", 1000, 60000));
    ZT_CHECK(zt_wait_callbacks(inst, "s2", 1000, 60000));
    zf_stop_report r = zt_finish(inst, f);
    ZT_EQ(zt_summary(a, "count"), 1000);
    ZT_EQ(zt_summary(b, "count"), 1000);
    ZT_EQ(zt_summary(a, "same_address"), 1000);
    ZT_EQ(zt_summary(b, "same_address"), 1000);
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(python_source_objects_reach_a_c_sink_in_place)
{
    if (no_python())
        return;
    /* What nothing can write is not copied: immutable bytes and a read-only
     * memoryview of bytes (pinned with zf_data_wrap, one release each), and
     * alloc() views (pool capsules). The C sink finds each payload at the
     * address Python wrote into it, and the host copied none. */
    const char *modes[] = {"mode: bytes", "mode: readonly", "mode: alloc"};
    for (int i = 0; i < 3; i++) {
        const char *sum = zt_tmp_path("count.json"), *ssum = zt_tmp_path("src.json");
        char cfg[512];
        snprintf(cfg, sizeof cfg, "count: 1000, size: 256, %s, summary: \"%s\"", modes[i], ssum);
        zt_outcome run = run_until(py_to_c(cfg, NULL, sum), "sink", 1000);
        ZT_CHECK(run.started);
        ZT_CHECK(run.reached);
        zf_stop_report r = run.report;
        ZT_EQ(zt_summary(sum, "count"), 1000);
        ZT_EQ(zt_summary(sum, "same_address"), 1000);
        ZT_EQ(zt_summary(sum, "out_of_order"), 0);
        ZT_EQ(zt_summary(ssum, "copies"), 0);
        ZT_EQ(r.bytes_leaked, 0);
        if (i < 2)
            ZT_EQ(r.releases, 1000); /* one release per pinned object */
        if (i == 1)
            ZT_EQ(zt_summary(ssum, "finalized"), 1000);
        if (i == 2)
            ZT_EQ(zt_summary(ssum, "released_after_send"), 1000); /* send hands over */
    }
}

/* True (and a note) when the embedded CPython has no NumPy. */
static bool no_numpy(void)
{
    char *out = NULL;
    char *const argv[] = {"/usr/bin/python3", "-c", "import numpy", NULL};
    int st = zt_exec(argv, &out, 30);
    free(out);
    if (st != 0)
        printf("  skip: NumPy is not installed (apt-get install python3-numpy)\n");
    return st != 0;
}

ZT_CASE(read_only_numpy_arrays_over_bytes_are_sent_in_place)
{
    if (no_python() || no_numpy())
        return;
    const char *sum = zt_tmp_path("np.json"), *ssum = zt_tmp_path("npsrc.json");
    char cfg[512];
    snprintf(cfg, sizeof cfg, "count: 300, size: 65536, mode: numpy_ro, summary: \"%s\"", ssum);
    zt_outcome run = run_until(py_to_c(cfg, NULL, sum), "sink", 300);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(zt_summary(sum, "count"), 300);
    ZT_EQ(zt_summary(sum, "same_address"), 300);
    ZT_EQ(zt_summary(ssum, "copies"), 0);
    ZT_EQ(zt_summary(ssum, "finalized"), 300);
    ZT_EQ(r.releases, 300);
    ZT_EQ(r.bytes_leaked, 0);
}

/* source.py (write_after) -> sink.py (check): the sender overwrites the
 * payload's body right after each send, before the sink can run (both hold
 * the GIL in turn). `copied`: something can write the object, so the host
 * copied it into the pool at send (context.copies) and the sink reads what
 * was sent; else it is pinned, and nothing can write it. */
static void write_after_send(const char *mode, bool copied)
{
    const int n = 200, size = 4096;
    const char *sum = zt_tmp_path("wa.json"), *ssum = zt_tmp_path("wasrc.json");
    char cfg[512], scfg[512];
    snprintf(cfg, sizeof cfg, "count: %d, size: %d, mode: %s, write_after: true, summary: \"%s\"",
             n, size, mode, ssum);
    snprintf(scfg, sizeof scfg, "summary: \"%s\", check: true", sum);
    const zt_node nodes[] = {{"src", PY("source.py"), cfg, "capacity: 8"},
                             {"sink", PY("sink.py"), scfg, NULL}};
    zt_outcome run = run_until(zt_chain("write-after", nodes, 2, true), "sink", (uint64_t)n);
    printf("  %s: %lld intact, %lld corrupted, %lld in place, %lld copies\n", mode,
           zt_summary(sum, "intact"), zt_summary(sum, "corrupted"), zt_summary(sum, "same_address"),
           zt_summary(ssum, "copies"));
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    ZT_EQ(run.node.errors, 0);
    ZT_EQ(zt_summary(sum, "count"), n);
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    ZT_EQ(zt_summary(sum, "intact"), n); /* what was sent, whatever the sender did next */
    ZT_EQ(zt_summary(sum, "corrupted"), 0);
    if (copied) {
        ZT_EQ(zt_summary(sum, "same_address"), 0);
        ZT_EQ(zt_summary(ssum, "written_after"), n); /* the object stayed the sender's */
        ZT_EQ(zt_summary(ssum, "copies"), n);
        ZT_EQ(zt_summary(ssum, "copied_bytes"), (long long)n * size);
        ZT_EQ(zt_summary(ssum, "finalized"), n); /* nothing pinned it */
        ZT_EQ(run.report.releases, 0);
    } else {
        ZT_EQ(zt_summary(sum, "same_address"), n); /* zero copy */
        ZT_EQ(zt_summary(ssum, "write_refused"), n);
        ZT_EQ(zt_summary(ssum, "copies"), 0);
    }
    ZT_EQ(run.report.bytes_leaked, 0);
}

ZT_CASE(writable_objects_are_copied_once_at_send)
{
    if (no_python())
        return;
    write_after_send("bytearray", true);
    write_after_send("array", true);
    write_after_send("ro_bytearray", true); /* read-only view, writable owner */
    write_after_send("bytes", false);
    if (no_numpy())
        return;
    write_after_send("numpy", true);
    write_after_send("numpy_view", true); /* written through a view made before the send */
    write_after_send("numpy_ro", false);
}

ZT_CASE(pinned_python_objects_are_released_when_the_last_reference_drops)
{
    if (no_python())
        return;
    /* source.py -> relay (C, keeps the first 5 capsules until its fini) ->
     * count. While running, every object but those 5 has been released by
     * Python; after the stop, all of them, each once. */
    const char *sum = zt_tmp_path("kcount.json"), *status = zt_tmp_path("kstatus.json"),
               *ssum = zt_tmp_path("ksrc.json");
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "count: 200, size: 128, mode: readonly, status: \"%s\", summary: \"%s\"", status,
             ssum);
    zf_flow *f;
    zf_instance *inst = start(py_to_c(cfg, "keep: 5", sum), &f);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_callbacks(inst, "sink", 200, 60000));
    long long fin = -1;
    for (int t = 0; t < 10000 && fin != 195; t += 10) {
        zt_sleep_ms(10);
        fin = zt_summary(status, "finalized");
    }
    ZT_EQ(fin, 195);
    zf_wrap_stats w;
    zf_wrap_stats_get(&w);
    zt_sleep_ms(100);
    ZT_EQ(zt_summary(status, "finalized"), 195); /* the kept ones stay pinned */
    zf_stop_report r = zt_finish(inst, f);
    ZT_EQ(zt_summary(sum, "count"), 200);
    ZT_EQ(zt_summary(sum, "same_address"), 200);
    ZT_EQ(r.releases, 200);
    ZT_EQ(zt_summary(ssum, "finalized"), 200); /* relay's fini ran before the source's close */
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(python_source_c_operator_python_sink)
{
    if (no_python())
        return;
    const char *sum = zt_tmp_path("chain.json");
    const zt_node n[] = {
        {"src", PY("source.py"), "count: 3000, size: 64, mode: bytes", "capacity: 4"},
        {"relay", ZT_LIB("relay"), NULL, "capacity: 4"},
        {"sink", PY("sink.py"), zt_fmt("summary: \"%s\"", sum), NULL}};
    const char *yaml = zt_chain("py-c-py", n, 3, true);
    zt_outcome run = run_until(yaml, "sink", 3000);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(zt_summary(sum, "count"), 3000);
    ZT_EQ(zt_summary(sum, "same_address"), 3000); /* Python's bytes, in place, end to end */
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    ZT_EQ(zt_summary(sum, "last_seq"), 3000);
    ZT_EQ(r.releases, 3000);
    ZT_EQ(r.bytes_leaked, 0);
}

/* gen (C) -> relay.py -> count (C) */
static const char *through_py_relay(const char *gen_cfg, const char *relay_cfg, const char *sum)
{
    const zt_node n[] = {{"gen", ZT_LIB("gen"), gen_cfg, "capacity: 8"},
                         {"relay", PY("relay.py"), relay_cfg, "capacity: 8"},
                         {"sink", ZT_LIB("count"), zt_fmt("summary: \"%s\"", sum), NULL}};
    return zt_chain("py-relay", n, 3, true);
}

ZT_CASE(python_operator_forwards_the_same_capsule)
{
    if (no_python())
        return;
    const char *sum = zt_tmp_path("fwd.json");
    zt_outcome run = run_until(through_py_relay("count: 2000, size: 64", "", sum), "sink", 2000);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(zt_summary(sum, "count"), 2000);
    ZT_EQ(zt_summary(sum, "same_address"), 2000);
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(r.releases, 0); /* forwarded, never re-wrapped */
}

ZT_CASE(python_exceptions_are_counted_errors_with_their_traceback)
{
    if (no_python())
        return;
    logs_start();
    const char *sum = zt_tmp_path("exc.json");
    zt_outcome run =
        run_until(through_py_relay("count: 100, size: 64", "fail_every: 50", sum), "relay", 100);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_node_stats s = run.node;
    zf_stop_report r = run.report;
    logs_stop();
    ZT_EQ(s.errors, 2);
    ZT_EQ(zt_summary(sum, "count"), 98); /* the others went through */
    ZT_EQ(r.bytes_leaked, 0);
    /* The runtime's line carries the one-line description... */
    ZT_CONTAINS(logs, "on_input failed: ZF_ENODE: on_input: ValueError: boom on capsule 50 [at "
                      "relay.py:");
    ZT_CONTAINS(logs, "in explode <- relay.py:");
    /* ...and the node's log the full traceback. */
    ZT_CONTAINS(logs, "Traceback (most recent call last):");
    ZT_CONTAINS(logs, "in on_input");
    ZT_CONTAINS(logs, "ValueError: boom on capsule 50");

    /* Failing every time: DEGRADED, like any node, with the reason. */
    zf_flow *f;
    zf_instance *inst2 = start(through_py_relay("size: 64", "fail_every: 1", ""), &f);
    ZT_CHECK(inst2);
    ZT_CHECK(zt_wait_state(inst2, "relay", ZF_NODE_DEGRADED, 10000));
    char reason[256];
    zt_node_stats(inst2, "relay", &s, reason, sizeof reason);
    r = zt_finish(inst2, f);
    ZT_CONTAINS(reason, "ZF_ENODE: on_input: ValueError: boom on capsule");
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(memoryview_used_after_its_callback_raises)
{
    if (no_python())
        return;
    /* sink.py keeps `data` past the call (it must raise ValueError when
     * used), a slice of it (still readable: it keeps the capsule), and
     * zflow.keep() capsules (readable until released in close). */
    const char *sum = zt_tmp_path("probe.json");
    char scfg[512];
    snprintf(scfg, sizeof scfg, "summary: \"%s\", probe: true", sum);
    zt_outcome run = run_until(c_to_py("count: 500, size: 64", scfg), "sink", 500);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_node_stats s = run.node;
    zf_stop_report r = run.report;
    ZT_EQ(s.errors, 0);
    ZT_EQ(zt_summary(sum, "count"), 500);
    ZT_EQ(zt_summary(sum, "raised_after"), 500); /* 499 callbacks + close */
    ZT_EQ(zt_summary(sum, "slice_ok"), 500);
    ZT_EQ(zt_summary(sum, "kept_ok"), 3 * 500 - 3); /* 3 kept, checked at each call */
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(r.holders[0], 0);
}

ZT_CASE(writable_copies_on_write_only_when_shared)
{
    if (no_python())
        return;
    /* A unique capsule: zflow.writable writes in place (the C sink finds
     * the payload where gen put it). */
    const char *u = zt_tmp_path("unique.json");
    zt_outcome run =
        run_until(through_py_relay("count: 500, size: 128", "mode: mutate", u), "sink", 500);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(zt_summary(u, "count"), 500);
    ZT_EQ(zt_summary(u, "same_address"), 500);
    ZT_EQ(r.bytes_leaked, 0);

    /* A part of a unique capsule (data[8:]) is pinned bytes that the whole's
     * holders read: zflow.writable copies it (relay.py raises if `data`
     * changed, and then sends nothing). */
    const char *p = zt_tmp_path("part.json");
    run = run_until(through_py_relay("count: 500, size: 128", "mode: mutate_part", p), "sink", 500);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    ZT_EQ(zt_summary(p, "count"), 500);
    ZT_EQ(zt_summary(p, "bytes"), 500 * 120);
    ZT_EQ(run.report.bytes_leaked, 0);

    /* Shared: gen fans out to relay.py (mutate) and to a C relay that keeps
     * every capsule until its fini. relay.py always gets a shared capsule,
     * so each write goes to a copy; the other branch keeps the originals. */
    const char *a = zt_tmp_path("direct.json"), *b = zt_tmp_path("mutated.json");
    char yaml[2048];
    snprintf(yaml, sizeof yaml,
             "name: py-cow\n"
             "sources:\n"
             "  - id: gen\n"
             "    library: \"{{ NODES }}/libt_gen.so\"\n"
             "    configuration: {count: 500, size: 128}\n"
             "    outputs: [out]\n"
             "operators:\n"
             "  - id: relay\n"
             "    python: \"{{ PY }}/relay.py\"\n"
             "    configuration: {mode: mutate}\n"
             "    inputs: [in]\n"
             "    outputs: [out]\n"
             "  - id: keeper\n"
             "    library: \"{{ NODES }}/libt_relay.so\"\n"
             "    configuration: {keep: 500}\n"
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
             "  - {from: {node: gen, output: out}, to: {node: keeper, input: in}}\n"
             "  - {from: {node: gen, output: out}, to: {node: relay, input: in}}\n"
             "  - {from: {node: keeper, output: out}, to: {node: direct, input: in}}\n"
             "  - {from: {node: relay, output: out}, to: {node: mutated, input: in}}\n",
             a, b);
    zf_flow *f;
    zf_instance *inst = start(yaml, &f);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_callbacks(inst, "mutated", 500, 60000));
    ZT_CHECK(zt_wait_callbacks(inst, "direct", 500, 60000));
    r = zt_finish(inst, f);
    ZT_EQ(zt_summary(a, "count"), 500);
    ZT_EQ(zt_summary(b, "count"), 500);
    ZT_EQ(zt_summary(a, "same_address"), 500); /* the originals, never written */
    ZT_EQ(zt_summary(b, "moved"), 500);        /* every write went to a copy */
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(python_source_with_its_own_thread)
{
    if (no_python())
        return;
    const char *sum = zt_tmp_path("thr.json");
    const zt_node n[] = {{"src", PY("source_thread.py"), "count: 2000", "capacity: 2"},
                         {"relay", ZT_LIB("relay"), "sleep_us: 20", NULL},
                         {"sink", ZT_LIB("count"), zt_fmt("summary: \"%s\"", sum), NULL}};
    const char *yaml = zt_chain("py-thread", n, 3, false);
    zt_outcome run = run_until(yaml, "sink", 2000);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(zt_summary(sum, "count"), 2000);
    ZT_EQ(zt_summary(sum, "moved"), 2000); /* bytearrays: copied at send, the thread's to reuse */
    ZT_EQ(zt_summary(sum, "out_of_order"), 0);
    ZT_EQ(r.dropped, 0);
    ZT_EQ(r.bytes_leaked, 0);
}

/* Creating an instance with `script` as a sink (gen -> it) or as a source
 * (it -> count) fails: the diagnostics, or NULL if it did not fail. */
static char *load_error(const char *script, bool as_source, const char *cfg)
{
    const zt_node node = {"node", zt_fmt("python: \"{{ PY }}/%s\"", script), cfg, NULL};
    const zt_node as_src[] = {node, {"sink", ZT_LIB("count"), NULL, NULL}};
    const zt_node as_sink[] = {{"gen", ZT_LIB("gen"), NULL, NULL}, node};
    const char *yaml = zt_chain("bad", as_source ? as_src : as_sink, 2, false);
    zf_diag *d = zf_diag_new();
    zf_flow *f = zt_flow(yaml, vars, d, NULL);
    zf_instance *inst = NULL;
    zf_err e = f ? zf_instance_create(rt, f, NULL, d, &inst) : ZF_EINVAL;
    if (inst)
        zf_instance_destroy(inst);
    char *t = zf_diag_format(d);
    zf_diag_free(d);
    zf_flow_free(f);
    if (e == ZF_OK) {
        free(t);
        return NULL;
    }
    return t;
}

ZT_CASE(load_errors_name_the_script_and_the_problem)
{
    if (no_python())
        return;
    char *t = load_error("bad_syntax.py", false, "");
    ZT_CHECK(t);
    ZT_CONTAINS(t, "SyntaxError");
    ZT_CONTAINS(t, "bad_syntax.py:4");
    free(t);
    t = load_error("bad_two_classes.py", false, "");
    ZT_CHECK(t);
    ZT_CONTAINS(t, "several node classes (First, Second)");
    ZT_CONTAINS(t, "zflow_node = TheClass");
    free(t);
    t = load_error("bad_no_class.py", false, "");
    ZT_CHECK(t);
    ZT_CONTAINS(t, "defines no node class");
    free(t);
    t = load_error("sink.py", true, "");
    ZT_CHECK(t);
    ZT_CONTAINS(t, "Sink is used as a source, which needs produce(self)");
    free(t);
    t = load_error("bad_init.py", false, "device: /dev/video9");
    ZT_CHECK(t);
    ZT_CONTAINS(t, "init failed: __init__: RuntimeError: cannot open the device /dev/video9");
    ZT_CONTAINS(t, "bad_init.py:");
    free(t);
    t = load_error("missing.py", false, "");
    ZT_CHECK(t);
    ZT_CONTAINS(t, "missing.py does not exist");
    free(t);
}

ZT_CASE(seed_pipeline_with_detect_py)
{
    if (no_python())
        return;
    char flow[1024], lib[1024], motor[1024], rec[1024];
    snprintf(flow, sizeof flow, "%s/examples/seed-pipeline/flow-python.yaml", zt_source_dir());
    snprintf(lib, sizeof lib, "LIB_DIR=%s/examples/seed-pipeline", zt_build_dir());
    snprintf(motor, sizeof motor, "MOTOR_SUMMARY=%s", zt_tmp_path("motor.json"));
    snprintf(rec, sizeof rec, "RECORDER_SUMMARY=%s", zt_tmp_path("recorder.json"));
    const char *v[] = {lib, motor, rec, "FRAME_BYTES=1MiB"};
    zf_flow_options opt = {.vars = v, .n_vars = 4};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    zf_err e = zf_flow_load(flow, &opt, d, &f);
    if (e != ZF_OK) {
        char *t = zf_diag_format(d);
        fprintf(stderr, "%s", t);
        free(t);
    }
    ZT_OK(e);
    zf_instance *inst = zt_start(rt, f, d);
    zf_diag_free(d);
    ZT_CHECK(inst);
    ZT_CHECK(zt_wait_callbacks(inst, "motor", 30, 30000));
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    zf_node_stats det, cam;
    zt_node_stats(inst, "detect", &det, NULL, 0);
    zt_node_stats(inst, "camera", &cam, NULL, 0);
    zf_instance_destroy(inst);
    zf_flow_free(f);
    const char *m = zt_tmp_path("motor.json"), *rc = zt_tmp_path("recorder.json");
    ZT_EQ(det.errors, 0);
    ZT_CHECK(zt_summary(m, "detections") >= 30);
    ZT_EQ(zt_summary(m, "detections"), (long long)cam.sent);
    ZT_EQ(zt_summary(m, "out_of_order"), 0);
    ZT_EQ(zt_summary(rc, "frames"), (long long)cam.sent);
    ZT_EQ(zt_summary(rc, "bad"), 0);
    ZT_EQ(r.bytes_leaked, 0);
}

ZT_CASE(teardown)
{
    if (rt)
        zf_runtime_destroy(rt);
    rt = NULL;
}

/* After send() nothing in Python can write the sent capsule: a send while
 * another view (NumPy array, slice, memoryview) could still write it is
 * refused (BufferError, nothing changed), and once sent every view of it
 * raises. */
ZT_CASE(a_sent_capsule_cannot_be_written_by_its_sender)
{
    if (no_python() || no_numpy())
        return;
    const char *sum = zt_tmp_path("guard.json"), *gsum = zt_tmp_path("guardsrc.json");
    char cfg[512];
    snprintf(cfg, sizeof cfg, "count: 50, summary: \"%s\"", gsum);
    char ccfg[512];
    snprintf(ccfg, sizeof ccfg, "summary: \"%s\"", sum);
    const zt_node n[] = {{"src", PY("guard.py"), cfg, "capacity: 64"},
                         {"sink", ZT_LIB("count"), ccfg, NULL}};
    zt_outcome run = run_until(zt_chain("guard", n, 2, true), "sink", 100);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    ZT_EQ(zt_summary(gsum, "sent"), 50);
    static const char *const refusals[] = {
        "numpy",    "slice",       "part",        "second_view",   "keep",
        "try_send", "write_after", "numpy_after", "capsule_after", "array_copied"};
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        if (zt_summary(gsum, refusals[i]) != 50)
            printf("  refusal '%s': %lld of 50\n", refusals[i], zt_summary(gsum, refusals[i]));
        ZT_EQ(zt_summary(gsum, refusals[i]), 50);
    }
    ZT_EQ(zt_summary(sum, "count"), 100);       /* 50 from alloc(), 50 NumPy arrays */
    ZT_EQ(zt_summary(sum, "same_address"), 50); /* alloc(): still zero copy */
    ZT_EQ(zt_summary(sum, "moved"), 50);        /* the writable arrays: copied at send */
    ZT_EQ(run.report.bytes_leaked, 0);
}

/* A view of a received capsule sent on is pinned; its last holder (the C
 * sink) drops it on its own thread. The stop report must not call those
 * references a leak. */
ZT_CASE(pinned_views_are_not_reported_as_leaks)
{
    if (no_python())
        return;
    const char *sum = zt_tmp_path("slice.json");
    zt_outcome run =
        run_until(through_py_relay("count: 200, size: 64", "mode: slice", sum), "sink", 200);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(zt_summary(sum, "count"), 200);
    ZT_EQ(zt_summary(sum, "same_address"), 200); /* the slice is the capsule's own bytes */
    ZT_EQ(r.releases, 200);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_CHECK(strstr(r.holders, "never released") == NULL);
    /* every pool reference the relay's views took was dropped by the sink's
     * release of the pinned slice, outside the relay's code */
    ZT_CONTAINS(r.holders, "node 'relay' took 200 reference(s) that were dropped outside its own "
                           "code (views or pinned objects released later, or on another thread): "
                           "nothing is held");
}

/* Pinned capsules (a Python source's bytes) that a Python object still holds
 * when the instance stops (keeper.py keeps them in a module global): named
 * as such, no pool memory, not "never released". */
ZT_CASE(pinned_capsules_held_past_stop_are_named_as_such)
{
    if (no_python())
        return;
    const zt_node n[] = {{"src", PY("source.py"), "count: 20, size: 64, mode: bytes", NULL},
                         {"keeper", PY("keeper.py"), NULL, NULL}};
    zt_outcome run = run_until(zt_chain("keep", n, 2, true), "keeper", 20);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    zf_stop_report r = run.report;
    ZT_EQ(r.bytes_leaked, 0);
    ZT_EQ(r.pool_bytes_after, 0);
    ZT_CHECK(strstr(r.holders, "never released") == NULL);
    ZT_CONTAINS(r.holders, "node 'keeper' took 20 reference(s) not dropped in its own code: views "
                           "or objects still holding 20 pinned capsule(s) (their own memory, no "
                           "pool memory; released when they go)");
}

/* ---- Zenoh-Flow Python nodes (the zenoh_flow compatibility package) ---- */

/* Load a file of tests/python/zenoh-flow/, start it, wait for `n`
 * callbacks of `id`, stop: every node without error, nothing leaked. */
static zf_stop_report run_zenoh_flow(const char *file, const char *id, uint64_t n, bool *ok)
{
    char path[1024], nodes[1024];
    snprintf(path, sizeof path, "%s/tests/python/zenoh-flow/%s", zt_source_dir(), file);
    snprintf(nodes, sizeof nodes, "NODES=%s/tests/nodes", zt_build_dir());
    const char *v[] = {nodes};
    zf_flow_options opt = {.vars = v, .n_vars = 1};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    zf_stop_report r = {0};
    *ok = false;
    if (zf_flow_load(path, &opt, d, &f) != ZF_OK) {
        char *t = zf_diag_format(d);
        fprintf(stderr, "%s", t);
        free(t);
        zf_diag_free(d);
        return r;
    }
    zf_instance *inst = zt_start(rt, f, d);
    zf_diag_free(d);
    if (inst) {
        *ok = zt_wait_callbacks(inst, id, n, 30000);
        ZT_OK(zf_instance_stop(inst, &r));
        for (size_t i = 0; i < zf_flow_node_count(f); i++) {
            zf_node_stats st;
            zt_node_stats(inst, zf_flow_node_id(f, i), &st, NULL, 0);
            if (st.errors) {
                printf("  node '%s': %llu errors (%s)\n", zf_flow_node_id(f, i),
                       (unsigned long long)st.errors, st.reason ? st.reason : "");
                *ok = false;
            }
        }
        zf_instance_destroy(inst);
    }
    zf_flow_free(f);
    return r;
}

ZT_CASE(zenoh_flow_python_05_examples_run_unchanged)
{
    if (no_python())
        return;
    /* pipeline.yml: counter_source.py (a value every 0.1 s) ->
     * double_operator.py -> print_sink.py (which fails on an odd value),
     * through `uri: file://./x.py` node files and register() */
    bool ok;
    zf_stop_report r = run_zenoh_flow("0.5/pipeline.yml", "Printer", 3, &ok);
    ZT_CHECK(ok);
    ZT_EQ(r.bytes_leaked, 0);
    ZT_CHECK(r.releases >= 3); /* the source's bytes, pinned, each released */
}

ZT_CASE(zenoh_flow_python_06_sink_runs_unchanged)
{
    if (no_python())
        return;
    bool ok;
    zf_stop_report r = run_zenoh_flow("0.6/flow.yaml", "python-sink", 50, &ok);
    ZT_CHECK(ok);
    ZT_EQ(r.bytes_leaked, 0);
}

/* period-miss-detector's shape: an iteration waiting for the first of an
 * input and a 1.5 s timer. The timer does not hold a worker (hang_timeout is
 * 1 s): the callback returns and the node's timer thread resumes the loop,
 * so the tick comes, and the node is never DEGRADED. */
ZT_CASE(zenoh_flow_timer_does_not_hold_a_worker)
{
    if (no_python())
        return;
    char path[1024], nodes[1024];
    snprintf(path, sizeof path, "%s/tests/python/zenoh-flow/0.5/period.yml", zt_source_dir());
    snprintf(nodes, sizeof nodes, "NODES=%s/tests/nodes", zt_build_dir());
    const char *v[] = {nodes};
    zf_flow_options opt = {.vars = v, .n_vars = 1};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(zf_flow_load(path, &opt, d, &f));
    zf_instance *inst = f ? zt_start(rt, f, d) : NULL;
    zf_diag_free(d);
    ZT_CHECK(inst != NULL);
    if (!inst) {
        zf_flow_free(f);
        return;
    }
    /* 5 values forwarded, then (no input for 1.5 s) a tick */
    ZT_CHECK(zt_wait_callbacks(inst, "Sink", 6, 30000));
    zf_node_stats st;
    ZT_CHECK(zt_node_stats(inst, "Watch", &st, NULL, 0));
    ZT_EQ(st.degraded_count, 0);
    ZT_EQ(st.errors, 0);
    ZT_CHECK(st.busy_ns < 1000000000ull); /* never 1.5 s inside a callback */
    zf_stop_report r;
    ZT_OK(zf_instance_stop(inst, &r));
    ZT_EQ(r.bytes_leaked, 0);
    zf_instance_destroy(inst);
    zf_flow_free(f);
}

ZT_CASE(zenoh_flow_operator_payload_is_zero_copy)
{
    if (no_python())
        return;
    const char *sum = zt_tmp_path("zfc.json"), *fsum = zt_tmp_path("zff.json");
    char gcfg[256], fcfg[512], ccfg[512];
    snprintf(gcfg, sizeof gcfg, "count: 300, size: 256");
    snprintf(fcfg, sizeof fcfg, "summary: \"%s\", flow: zenoh-flow-op", fsum);
    snprintf(ccfg, sizeof ccfg, "summary: \"%s\"", sum);
    const zt_node n[] = {{"gen", ZT_LIB("gen"), gcfg, "capacity: 8"},
                         {"zf", "library: \"{{ PY }}/zf_forward.py\"", fcfg, "capacity: 8"},
                         {"sink", ZT_LIB("count"), ccfg, NULL}};
    zt_outcome run = run_until(zt_chain("zenoh-flow-op", n, 3, true), "sink", 300);
    ZT_CHECK(run.started);
    ZT_CHECK(run.reached);
    ZT_EQ(zt_summary(fsum, "received"), 300);
    ZT_EQ(zt_summary(fsum, "zero_copy"), 300);
    ZT_EQ(zt_summary(fsum, "wall_ms_ok"), 300);
    ZT_EQ(zt_summary(fsum, "context_ok"), 1); /* flow name, instance UUID, script */
    ZT_EQ(zt_summary(sum, "count"), 300);
    ZT_EQ(zt_summary(sum, "same_address"), 300); /* send_async(payload): the same capsule */
    ZT_EQ(run.report.bytes_leaked, 0);
}

ZT_MAIN(ZT_ENTRY(c_source_to_python_sink_reads_the_same_buffer),
        ZT_ENTRY(two_nodes_run_one_script_each_with_its_own_state),
        ZT_ENTRY(python_source_objects_reach_a_c_sink_in_place),
        ZT_ENTRY(read_only_numpy_arrays_over_bytes_are_sent_in_place),
        ZT_ENTRY(writable_objects_are_copied_once_at_send),
        ZT_ENTRY(a_sent_capsule_cannot_be_written_by_its_sender),
        ZT_ENTRY(pinned_python_objects_are_released_when_the_last_reference_drops),
        ZT_ENTRY(python_source_c_operator_python_sink),
        ZT_ENTRY(python_operator_forwards_the_same_capsule),
        ZT_ENTRY(pinned_views_are_not_reported_as_leaks),
        ZT_ENTRY(pinned_capsules_held_past_stop_are_named_as_such),
        ZT_ENTRY(python_exceptions_are_counted_errors_with_their_traceback),
        ZT_ENTRY(memoryview_used_after_its_callback_raises),
        ZT_ENTRY(writable_copies_on_write_only_when_shared),
        ZT_ENTRY(python_source_with_its_own_thread),
        ZT_ENTRY(load_errors_name_the_script_and_the_problem),
        ZT_ENTRY(seed_pipeline_with_detect_py),
        ZT_ENTRY(zenoh_flow_python_05_examples_run_unchanged),
        ZT_ENTRY(zenoh_flow_python_06_sink_runs_unchanged),
        ZT_ENTRY(zenoh_flow_timer_does_not_hold_a_worker),
        ZT_ENTRY(zenoh_flow_operator_payload_is_zero_copy), ZT_ENTRY(teardown))
