/* The C++ API (zflow.hpp): zf::Data reference counting (copy, move),
 * pinning with a lambda capturing a std::shared_ptr (released exactly once,
 * when the last reference drops), copy on write, send moving its argument,
 * exceptions turned into counted node errors with their what(), and the
 * C++ detect operator in the seed pipeline. Built with g++ -std=c++17.
 *
 * A small exception-based harness (the C harness longjmps, which would skip
 * C++ destructors); same output: "ok name", and "N passed, M failed". */
#include <zflow/zflow.hpp>

extern "C" {
#include "testutil.h"
}

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace
{

struct Failure {
    std::string msg;
};

[[noreturn]] void fail(const char *file, int line, const std::string &what)
{
    std::ostringstream s;
    s << file << ":" << line << ": " << what;
    throw Failure{s.str()};
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail(__FILE__, __LINE__, "check failed: " #c);                                         \
    } while (0)
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_)                                                                              \
            fail(__FILE__, __LINE__,                                                               \
                 std::string(#a " == " #b ": ") + std::to_string(a_) +                             \
                     " != " + std::to_string(b_));                                                 \
    } while (0)
#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        std::string h_ = (hay);                                                                    \
        if (h_.find(needle) == std::string::npos)                                                  \
            fail(__FILE__, __LINE__, "\"" + h_ + "\" does not contain \"" + (needle) + "\"");      \
    } while (0)

zf_runtime *rt;

void setup()
{
    if (!rt && zf_runtime_create(nullptr, &rt) != ZF_OK)
        fail(__FILE__, __LINE__, "cannot create a runtime");
}

/* Captures every log line while alive. */
struct LogCapture {
    std::mutex mu;
    std::string text;
    LogCapture() { zf_log_set(&LogCapture::fn, this, ZF_LOG_DEBUG); }
    ~LogCapture() { zf_log_set(nullptr, nullptr, ZF_LOG_ERROR); }
    static void fn(void *arg, zf_log_level, const char *scope, const char *msg)
    {
        auto *self = static_cast<LogCapture *>(arg);
        std::lock_guard<std::mutex> g(self->mu);
        self->text += std::string(scope) + ": " + msg + "\n";
    }
    std::string get()
    {
        std::lock_guard<std::mutex> g(mu);
        return text;
    }
};

struct Pool {
    zf_pool *p = nullptr;
    Pool()
    {
        if (zf_pool_create(nullptr, &p) != ZF_OK)
            fail(__FILE__, __LINE__, "zf_pool_create");
    }
    ~Pool() { zf_pool_destroy(p); }
    zf::Data alloc(size_t n)
    {
        zf_data *d = nullptr;
        if (zf_pool_alloc(p, n, &d) != ZF_OK)
            fail(__FILE__, __LINE__, "zf_pool_alloc");
        return zf::Data::adopt(d);
    }
    uint64_t bytes()
    {
        zf_pool_stats s;
        zf_pool_stats_get(p, &s);
        return s.bytes_in_use;
    }
};

/* ---- zf::Data without a runtime ---- */

void data_copy_and_move_are_references()
{
    Pool pool;
    zf::Data a = pool.alloc(128);
    CHECK(a);
    CHECK_EQ(a.size(), 128);
    CHECK_EQ(a.use_count(), 1);
    zf::Data b = a; /* copy: one more reference, same bytes */
    CHECK_EQ(a.use_count(), 2);
    CHECK(b.data() == a.data());
    zf::Data c = std::move(b); /* move: a transfer */
    CHECK(!b);
    CHECK_EQ(b.use_count(), 0);
    CHECK_EQ(c.use_count(), 2);
    {
        zf::Data d;
        d = c; /* copy assignment */
        CHECK_EQ(a.use_count(), 3);
        zf::Data e;
        e = std::move(d); /* move assignment */
        CHECK(!d);
        CHECK_EQ(a.use_count(), 3);
    }
    CHECK_EQ(a.use_count(), 2);
    zf::Data &same = c;
    c = same; /* self-assignment changes nothing */
    CHECK_EQ(a.use_count(), 2);
    c.reset();
    CHECK(!c);
    CHECK_EQ(a.use_count(), 1);
    CHECK(a.unique());
    zf_data *raw = a.release(); /* give up ownership */
    CHECK(!a);
    CHECK_EQ(zf_data_refcount(raw), 1);
    zf::Data back = zf::Data::adopt(raw);
    zf::Data shared = zf::Data::share(raw);
    CHECK_EQ(back.use_count(), 2);
    shared.reset();
    back.reset();
    CHECK_EQ(pool.bytes(), 0); /* every reference dropped: the block is back */
}

void wrap_with_lambda_releases_once_when_the_last_reference_drops()
{
    zf_wrap_stats before;
    zf_wrap_stats_get(&before);
    auto buf = std::make_shared<std::vector<uint8_t>>(4096, 7);
    std::atomic<int> calls{0};
    std::weak_ptr<std::vector<uint8_t>> weak = buf;
    {
        zf::Data a = zf::Data::wrap(buf->data(), buf->size(), [buf, &calls] { calls++; });
        CHECK_EQ(buf.use_count(), 2);   /* the lambda pins the buffer */
        CHECK(a.data() == buf->data()); /* no copy */
        zf::Data b = a, c = b;
        CHECK_EQ(a.use_count(), 3);
        CHECK_EQ(buf.use_count(), 2); /* capsule references do not copy the lambda */
        a.reset();
        b.reset();
        CHECK_EQ(calls.load(), 0);
        CHECK_EQ(buf.use_count(), 2);
        /* The last reference drops on another thread. */
        std::thread t([d = std::move(c)]() mutable { d.reset(); });
        t.join();
        CHECK_EQ(calls.load(), 1);
        CHECK_EQ(buf.use_count(), 1);
    }
    CHECK_EQ(calls.load(), 1);
    buf.reset();
    CHECK(weak.expired()); /* nothing else kept it */

    /* A callable taking the pointer, and a move-only one. */
    void *seen = nullptr;
    auto owner = std::make_unique<int[]>(16);
    int *raw = owner.get();
    {
        zf::Data d = zf::Data::wrap(raw, 16 * sizeof(int),
                                    [o = std::move(owner), &seen](void *p) { seen = p; });
        CHECK(seen == nullptr);
    }
    CHECK(seen == raw);

    /* A failed wrap destroys the callable without calling it. */
    auto buf2 = std::make_shared<int>(1);
    bool threw = false;
    try {
        zf::Data d = zf::Data::wrap(static_cast<void *>(nullptr), 10, [buf2, &calls] { calls++; });
    } catch (const zf::Error &e) {
        threw = e.code() == ZF_EINVAL;
    }
    CHECK(threw);
    CHECK_EQ(calls.load(), 1);
    CHECK_EQ(buf2.use_count(), 1);

    zf_wrap_stats after;
    zf_wrap_stats_get(&after);
    CHECK_EQ(after.wrapped - before.wrapped, 2);
    CHECK_EQ(after.released - before.released, 2);
}

void mutable_data_copies_on_write_only_when_shared()
{
    Pool pool;
    zf::Data a = pool.alloc(64);
    const void *original = a.data();
    auto *w = static_cast<uint8_t *>(a.mutable_data()); /* unique: its own buffer */
    CHECK(w == original);
    std::memset(w, 0xab, 64);
    zf::Data b = a; /* shared now: read-only */
    auto *wb = static_cast<uint8_t *>(b.mutable_data());
    CHECK(wb != original);       /* b got a private copy... */
    CHECK(a.data() == original); /* ...a kept the original */
    CHECK(a.unique());
    CHECK(b.unique());
    CHECK_EQ(wb[63], 0xab);
    wb[0] = 1;
    CHECK_EQ(a.bytes()[0], 0xab);
    CHECK_EQ(b.bytes()[0], 1);

    /* Pinned memory too: the owner's buffer is never written once shared. */
    static uint8_t pinned[32] = {5};
    zf::Data p = zf::Data::wrap(pinned, sizeof pinned, [] {});
    zf::Data q = p;
    auto *wq = static_cast<uint8_t *>(q.mutable_data());
    CHECK(wq != pinned);
    wq[0] = 9;
    CHECK_EQ(pinned[0], 5);

    /* Metadata setters need a unique capsule. */
    zf::Data u = pool.alloc(8);
    u.set_seq(42);
    CHECK_EQ(u.seq(), 42);
    zf::Data v = u;
    bool threw = false;
    try {
        v.set_seq(1);
    } catch (const zf::Error &e) {
        threw = e.code() == ZF_ESTATE;
    }
    CHECK(threw);
    zf::Data empty;
    threw = false;
    try {
        empty.mutable_data();
    } catch (const zf::Error &) {
        threw = true;
    }
    CHECK(threw);
    CHECK(!empty);
    CHECK(empty.data() == nullptr);
}

/* ---- nodes in a runtime ---- */

std::string chain(const std::string &gen, const std::string &relay, const std::string &sink_sum)
{
    return "name: cpp-chain\n"
           "sources:\n"
           "  - id: gen\n"
           "    library: \"{{ NODES }}/libt_cpp_gen.so\"\n"
           "    configuration: {" +
           gen +
           "}\n"
           "    outputs: [{id: out, type: bytes}]\n"
           "operators:\n"
           "  - id: relay\n"
           "    library: \"{{ NODES }}/libt_cpp_relay.so\"\n"
           "    configuration: {" +
           relay +
           "}\n"
           "    inputs: [{id: in, type: bytes}]\n"
           "    outputs: [{id: out, type: bytes}]\n"
           "sinks:\n"
           "  - id: sink\n"
           "    library: \"{{ NODES }}/libt_count.so\"\n"
           "    configuration: {summary: \"" +
           sink_sum +
           "\"}\n"
           "    inputs: [{id: in, type: bytes}]\n"
           "links:\n"
           "  - {from: {node: gen, output: out}, to: {node: relay, input: in}, queue: {capacity: "
           "8}}\n"
           "  - {from: {node: relay, output: out}, to: {node: sink, input: in}, queue: {capacity: "
           "8}}\n";
}

zf_node_stats node_stats(zf_instance *inst, const char *id, std::string *reason = nullptr)
{
    zf_node_stats s;
    std::memset(&s, 0, sizeof s);
    char why[256] = "";
    if (!zt_node_stats(inst, id, &s, why, sizeof why))
        fail(__FILE__, __LINE__, std::string("no node ") + id);
    if (reason)
        *reason = why;
    return s;
}

/* Run until node `id` completed `n` callbacks (or 60 s), then stop. */
zf_stop_report run_until(const std::string &yaml, const char *id, uint64_t n,
                         zf_node_stats *stats = nullptr, const char *stats_of = nullptr)
{
    setup();
    zf_stop_report r;
    std::memset(&r, 0, sizeof r);
    zf_diag *d = zf_diag_new();
    zf_flow *f = zt_flow(yaml.c_str(), nullptr, d, nullptr);
    if (!f) {
        char *t = zf_diag_format(d);
        std::string msg = t ? t : "";
        std::free(t);
        zf_diag_free(d);
        fail(__FILE__, __LINE__, "descriptor: " + msg);
    }
    zf_instance *inst = zt_start(rt, f, d);
    if (!inst) {
        char *t = zf_diag_format(d);
        std::string msg = t ? t : "";
        std::free(t);
        zf_diag_free(d);
        zf_flow_free(f);
        fail(__FILE__, __LINE__, "instance: " + msg);
    }
    for (int t = 0; t < 60000; t += 5) {
        if (node_stats(inst, id).callbacks >= n)
            break;
        zt_sleep_ms(5);
    }
    CHECK_EQ(zf_instance_stop(inst, &r), ZF_OK);
    if (stats)
        *stats = node_stats(inst, stats_of ? stats_of : id);
    zf_instance_destroy(inst);
    zf_flow_free(f);
    zf_diag_free(d);
    return r;
}

void send_moves_and_nothing_is_copied()
{
    const char *g = zt_tmp_path("gen.json"), *r = zt_tmp_path("relay.json"),
               *s = zt_tmp_path("sink.json");
    zf_stop_report rep =
        run_until(chain(std::string("count: 2000, size: 64, summary: \"") + g + "\"",
                        std::string("summary: \"") + r + "\"", s),
                  "sink", 2000);
    CHECK_EQ(rep.bytes_leaked, 0);
    CHECK_EQ(zt_summary(g, "sent"), 2000);
    CHECK_EQ(zt_summary(g, "empty_after_send"), 2000); /* send(port, std::move(d)) */
    CHECK_EQ(zt_summary(r, "moved_empty"), 2000);
    CHECK_EQ(zt_summary(s, "count"), 2000);
    CHECK_EQ(zt_summary(s, "same_address"), 2000); /* the source's buffer, every time */
    CHECK_EQ(zt_summary(s, "out_of_order"), 0);
}

void pinned_lambdas_release_once_per_capsule_in_a_pipeline()
{
    const char *g = zt_tmp_path("wgen.json"), *s = zt_tmp_path("wsink.json");
    zf_stop_report rep = run_until(
        chain(std::string("count: 500, size: 4096, mode: wrap, summary: \"") + g + "\"", "", s),
        "sink", 500);
    CHECK_EQ(zt_summary(s, "count"), 500);
    CHECK_EQ(zt_summary(s, "same_address"), 500); /* the vector's own memory */
    CHECK_EQ(rep.releases, 500);
    /* The source is finalized last: by then every lambda ran, once. */
    CHECK_EQ(zt_summary(g, "released"), 500);
    CHECK_EQ(rep.bytes_leaked, 0);
}

/* A C++ source with nothing to send throws zf::Error(ZF_EAGAIN):
 * produce returns ZF_EAGAIN, not an error, and wake() calls it again; in
 * process and isolated (tests/cpp/nodes/cpp_woken.cpp). */
void eagain_in_produce_waits_for_wake_not_an_error()
{
    for (int isolated = 0; isolated < 2; isolated++) {
        const char *g = zt_tmp_path("cwoken.json"), *s = zt_tmp_path("cwsink.json");
        std::string yaml = std::string("name: cpp-woken\n"
                                       "sources:\n"
                                       "  - id: src\n"
                                       "    library: \"{{ NODES }}/libt_cpp_woken.so\"\n") +
                           (isolated ? "    isolation: process\n" : "") +
                           "    configuration: {count: 200, summary: \"" + g +
                           "\"}\n"
                           "    outputs: [out]\n"
                           "sinks:\n"
                           "  - id: sink\n"
                           "    library: \"{{ NODES }}/libt_count.so\"\n"
                           "    configuration: {summary: \"" +
                           s +
                           "\"}\n"
                           "    inputs: [in]\n"
                           "links:\n"
                           "  - {from: {node: src, output: out}, to: {node: sink, input: in}}\n";
        zf_node_stats src;
        zf_stop_report rep = run_until(yaml, "sink", 200, &src, "src");
        std::printf("  %s: %lld produce calls, %llu errors\n", isolated ? "isolated" : "in process",
                    zt_summary(g, "produce_calls"), (unsigned long long)src.errors);
        CHECK_EQ(src.errors, 0);
        CHECK_EQ(zt_summary(g, "sent"), 200);
        CHECK_EQ(zt_summary(s, "count"), 200);
        CHECK(zt_summary(g, "produce_calls") <= 3 * 200 + 300); /* no busy loop */
        CHECK_EQ(rep.bytes_leaked, 0);
    }
}

void exception_in_on_input_is_a_counted_error_with_its_message()
{
    struct Case {
        const char *kind, *text;
    } cases[] = {{"std", "on_input: boom on capsule 50"},
                 {"zf", "on_input: boom on capsule 50"},
                 {"int", "on_input: unknown exception"}};
    for (const Case &c : cases) {
        LogCapture logs;
        const char *s = zt_tmp_path("exc.json");
        zf_node_stats relay;
        zf_stop_report rep = run_until(
            chain("count: 100, size: 64", std::string("throw_every: 50, throw: ") + c.kind, s),
            "relay", 100, &relay);
        CHECK_EQ(relay.callbacks, 100);
        CHECK_EQ(relay.errors, 2);            /* capsules 50 and 100 */
        CHECK_EQ(zt_summary(s, "count"), 98); /* the rest went through */
        CHECK_EQ(rep.bytes_leaked, 0);
        std::string text = logs.get();
        CHECK_CONTAINS(text, "ZF_ENODE");
        CHECK_CONTAINS(text, c.text); /* what(), through zf_node_set_error */
    }
}

void repeated_exceptions_degrade_the_node_with_the_reason()
{
    setup();
    zf_flow *f = zt_flow(chain("count: 0, size: 64", "throw_every: 1", "").c_str(), nullptr,
                         nullptr, nullptr);
    CHECK(f);
    zf_instance *inst = zt_start(rt, f, nullptr);
    CHECK(inst);
    bool degraded = zt_wait_state(inst, "relay", ZF_NODE_DEGRADED, 10000);
    std::string reason;
    zf_node_stats s = node_stats(inst, "relay", &reason);
    zf_stop_report rep;
    CHECK_EQ(zf_instance_stop(inst, &rep), ZF_OK);
    zf_instance_destroy(inst);
    zf_flow_free(f);
    CHECK(degraded);
    CHECK(s.errors >= 5);
    CHECK_CONTAINS(reason, "ZF_ENODE");
    CHECK_CONTAINS(reason, "boom on capsule");
    CHECK_EQ(rep.bytes_leaked, 0);
}

void exception_in_constructor_fails_the_load_with_its_message()
{
    setup();
    zf_diag *d = zf_diag_new();
    zf_flow *f = zt_flow(chain("count: 1", "throw_in_ctor: true", "").c_str(), nullptr, d, nullptr);
    CHECK(f);
    zf_instance *inst = nullptr;
    zf_err e = zf_instance_create(rt, f, nullptr, d, &inst);
    char *t = zf_diag_format(d);
    std::string text = t ? t : "";
    std::free(t);
    zf_diag_free(d);
    zf_flow_free(f);
    CHECK_EQ(e, ZF_ENODE);
    CHECK(!inst);
    CHECK_CONTAINS(text, "init failed");
    CHECK_CONTAINS(text, "refuses to start: throw_in_ctor is set");
}

void cpp_detect_runs_the_seed_pipeline()
{
    setup();
    std::string flow = std::string(zt_source_dir()) + "/examples/seed-pipeline/flow-cpp.yaml";
    std::string lib = std::string("LIB_DIR=") + zt_build_dir() + "/examples/seed-pipeline";
    std::string motor = std::string("MOTOR_SUMMARY=") + zt_tmp_path("motor.json");
    std::string rec = std::string("RECORDER_SUMMARY=") + zt_tmp_path("recorder.json");
    const char *vars[] = {lib.c_str(), motor.c_str(), rec.c_str(), "FRAME_BYTES=1MiB"};
    zf_flow_options opt = {vars, 4, nullptr, 0, false};
    zf_diag *d = zf_diag_new();
    zf_flow *f = nullptr;
    zf_err e = zf_flow_load(flow.c_str(), &opt, d, &f);
    if (e != ZF_OK) {
        char *t = zf_diag_format(d);
        std::string msg = t ? t : "";
        std::free(t);
        zf_diag_free(d);
        fail(__FILE__, __LINE__, "flow-cpp.yaml: " + msg);
    }
    zf_instance *inst = zt_start(rt, f, d);
    zf_diag_free(d);
    CHECK(inst);
    for (int t = 0; t < 20000 && node_stats(inst, "motor").callbacks < 30; t += 10)
        zt_sleep_ms(10);
    zf_stop_report rep;
    CHECK_EQ(zf_instance_stop(inst, &rep), ZF_OK);
    zf_node_stats det = node_stats(inst, "detect"), cam = node_stats(inst, "camera");
    zf_instance_destroy(inst);
    zf_flow_free(f);
    const char *mpath = zt_tmp_path("motor.json"), *rpath = zt_tmp_path("recorder.json");
    CHECK(zt_summary(mpath, "detections") >= 30);
    CHECK_EQ(det.errors, 0);
    CHECK_EQ(zt_summary(mpath, "detections"), (long long)cam.sent); /* every frame detected */
    CHECK_EQ(zt_summary(mpath, "out_of_order"), 0);
    CHECK_EQ(zt_summary(rpath, "frames"), (long long)cam.sent);
    CHECK_EQ(zt_summary(rpath, "bad"), 0);
    CHECK_EQ(rep.bytes_leaked, 0);
}

struct Entry {
    const char *name;
    void (*fn)();
};

const Entry cases[] = {
    {"data_copy_and_move_are_references", data_copy_and_move_are_references},
    {"wrap_with_lambda_releases_once_when_the_last_reference_drops",
     wrap_with_lambda_releases_once_when_the_last_reference_drops},
    {"mutable_data_copies_on_write_only_when_shared",
     mutable_data_copies_on_write_only_when_shared},
    {"send_moves_and_nothing_is_copied", send_moves_and_nothing_is_copied},
    {"pinned_lambdas_release_once_per_capsule_in_a_pipeline",
     pinned_lambdas_release_once_per_capsule_in_a_pipeline},
    {"exception_in_on_input_is_a_counted_error_with_its_message",
     exception_in_on_input_is_a_counted_error_with_its_message},
    {"repeated_exceptions_degrade_the_node_with_the_reason",
     repeated_exceptions_degrade_the_node_with_the_reason},
    {"exception_in_constructor_fails_the_load_with_its_message",
     exception_in_constructor_fails_the_load_with_its_message},
    {"cpp_detect_runs_the_seed_pipeline", cpp_detect_runs_the_seed_pipeline},
    {"eagain_in_produce_waits_for_wake_not_an_error",
     eagain_in_produce_waits_for_wake_not_an_error},
};

} // namespace

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : nullptr;
    int passed = 0, failed = 0;
    if (std::getenv("ZT_LOG"))
        zf_log_set(zf_log_stderr, nullptr, ZF_LOG_DEBUG);
    for (const Entry &e : cases) {
        if (only && std::strcmp(only, e.name) != 0)
            continue;
        uint64_t t0 = zf_clock_ns();
        try {
            e.fn();
            passed++;
            std::printf("ok   %s (%.1f ms)\n", e.name, (double)(zf_clock_ns() - t0) / 1e6);
        } catch (const Failure &f) {
            failed++;
            std::fprintf(stderr, "  FAIL %s\n", f.msg.c_str());
            std::printf("FAIL %s\n", e.name);
        } catch (const std::exception &x) {
            failed++;
            std::fprintf(stderr, "  FAIL exception: %s\n", x.what());
            std::printf("FAIL %s\n", e.name);
        }
        std::fflush(stdout);
    }
    if (rt)
        zf_runtime_destroy(rt);
    if (only && passed + failed == 0) {
        std::fprintf(stderr, "no test case named %s\n", only);
        return 2;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
