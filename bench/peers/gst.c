/* zfpeer-gst: GStreamer's answer to zf-bench pipeline (bench "pipeline").
 *
 *   fakesrc ! queue ! queue ! queue ! fakesink
 *
 * built with the C API: three queues are three thread boundaries, as
 * zflow's three links are (source -> op -> op -> sink). fakesrc allocates
 * a fresh buffer of `size` bytes per message (sizetype=fixed, sizemax)
 * and does not fill it (filltype=nothing), as zflow's source allocates a
 * pool capsule without writing it. Each queue holds at most
 * 256 MiB / (size + 64) / 3 buffers, clamped to [2, 256] (zf-bench's
 * link capacity), with no byte or time limit. fakesink: sync=false,
 * enable-last-sample=false (it would keep a reference to the last buffer).
 * --queues 0..2 builds shorter pipelines (impl "gstreamer-qN") to take
 * the cost of a buffer apart: allocation and push, then each queue.
 *
 * Latency: one buffer in flight. A probe on fakesrc's pad waits (on a
 * futex, as zflow's bench source does) until the previous buffer reached
 * the sink, then takes the time; a probe on fakesink's pad takes the time
 * on receipt. Throughput: fakesrc runs free; buffers counted by the sink
 * probe over the window after a warm-up; CPU time of the whole process. */
#include "peer.h"

#include <gst/gst.h>

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct gst_ctx {
    bool lockstep;
    atomic_uint_fast64_t sent;
    _Alignas(64) atomic_uint_fast64_t received;
    _Alignas(64) _Atomic uint32_t ack; /* futex word: the sink bumps it */
    atomic_uint_fast64_t t_send;       /* lockstep: stamp of the buffer in flight */
    atomic_int stop;
    double *lat;
    size_t max_lat;
} gst_ctx;

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
    struct timespec ts = {0, 10000000}; /* bounded: re-check stop */
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static GstPadProbeReturn src_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
    gst_ctx *c = data;
    for (;;) {
        uint32_t a = atomic_load_explicit(&c->ack, memory_order_acquire);
        if (a >= (uint32_t)atomic_load_explicit(&c->sent, memory_order_relaxed))
            break;
        if (atomic_load(&c->stop))
            return GST_PAD_PROBE_DROP;
        futex_wait(&c->ack, a);
    }
    if (atomic_load(&c->stop))
        return GST_PAD_PROBE_DROP;
    atomic_store_explicit(&c->t_send, bench_clock_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&c->sent, 1, memory_order_release);
    return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn sink_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
    gst_ctx *c = data;
    uint64_t now = bench_clock_ns();
    uint64_t k = atomic_load_explicit(&c->received, memory_order_relaxed);
    if (c->lockstep && k < c->max_lat)
        c->lat[k] = (double)(now - atomic_load_explicit(&c->t_send, memory_order_relaxed));
    atomic_store_explicit(&c->received, k + 1, memory_order_release);
    if (c->lockstep) {
        atomic_store_explicit(&c->ack, (uint32_t)(k + 1), memory_order_release);
        futex_wake(&c->ack);
    }
    return GST_PAD_PROBE_OK;
}

static GstElement *make(GstElement *pipe, const char *factory, const char *name)
{
    GstElement *e = gst_element_factory_make(factory, name);
    if (!e) {
        fprintf(stderr, "zfpeer-gst: no GStreamer element '%s' (gstreamer1.0-plugins-base?)\n",
                factory);
        return NULL;
    }
    gst_bin_add(GST_BIN(pipe), e);
    return e;
}

static GstElement *build(size_t size, int queues, gst_ctx *c)
{
    GstElement *pipe = gst_pipeline_new("zfpeer");
    GstElement *src = make(pipe, "fakesrc", "src");
    if (!src)
        return NULL;
    g_object_set(src, "sizemax", (gint)size, "silent", TRUE, "num-buffers", (gint)-1, NULL);
    gst_util_set_object_arg(G_OBJECT(src), "sizetype", "fixed");
    gst_util_set_object_arg(G_OBJECT(src), "filltype", "nothing");
    gst_util_set_object_arg(G_OBJECT(src), "data", "allocate");
    GstElement *prev = src;
    guint cap = (guint)bench_queue_cap(size, 256u << 20, 3);
    for (int i = 0; i < queues; i++) {
        char name[16];
        snprintf(name, sizeof name, "q%d", i);
        GstElement *q = make(pipe, "queue", name);
        if (!q)
            return NULL;
        g_object_set(q, "max-size-buffers", cap, "max-size-bytes", (guint)0, "max-size-time",
                     (guint64)0, "silent", TRUE, NULL);
        if (!gst_element_link(prev, q))
            return NULL;
        prev = q;
    }
    GstElement *sink = make(pipe, "fakesink", "sink");
    if (!sink)
        return NULL;
    g_object_set(sink, "sync", FALSE, "async", FALSE, "silent", TRUE, "enable-last-sample", FALSE,
                 "qos", FALSE, NULL);
    if (!gst_element_link(prev, sink))
        return NULL;
    GstPad *sp = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(sp, GST_PAD_PROBE_TYPE_BUFFER, sink_probe, c, NULL);
    gst_object_unref(sp);
    if (c->lockstep) {
        GstPad *op = gst_element_get_static_pad(src, "src");
        gst_pad_add_probe(op, GST_PAD_PROBE_TYPE_BUFFER, src_probe, c, NULL);
        gst_object_unref(op);
    }
    return pipe;
}

/* The pipeline's error, if it posted one. */
static int bus_error(GstElement *pipe)
{
    GstBus *bus = gst_element_get_bus(pipe);
    GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    int rc = 0;
    if (m) {
        GError *err = NULL;
        gst_message_parse_error(m, &err, NULL);
        fprintf(stderr, "zfpeer-gst: %s\n", err ? err->message : "error");
        g_clear_error(&err);
        gst_message_unref(m);
        rc = -1;
    }
    gst_object_unref(bus);
    return rc;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

static int run_size(const peer_opts *o, size_t size, bench_result *r)
{
    /* Latency: lockstep; warm-up samples dropped (peer_hop_run's rule). */
    size_t n = bench_samples_for(o->samples, size), warm_n = bench_warmup_for(n), warm = 0;
    gst_ctx *c = calloc(1, sizeof *c);
    c->lockstep = true;
    c->max_lat = n + warm_n;
    c->lat = calloc(c->max_lat, sizeof *c->lat);
    GstElement *pipe = build(size, o->queues, c);
    if (!pipe || gst_element_set_state(pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
        return -1;
    uint64_t tl0 = bench_clock_ns(), cap = (uint64_t)(o->max_lat_s * 1e9);
    for (;;) {
        uint64_t got = atomic_load(&c->received), now = bench_clock_ns();
        if (!warm) {
            if (got >= warm_n)
                warm = warm_n; /* the samples after it are recorded already */
            else if (got >= 2 && now >= tl0 + cap / 10)
                warm = got;
        } else if (got - warm >= n || now >= tl0 + cap) {
            break;
        }
        if (bus_error(pipe))
            break;
        sleep_ns(200000);
    }
    atomic_store(&c->stop, 1);
    gst_element_set_state(pipe, GST_STATE_NULL);
    gst_object_unref(pipe);
    uint64_t got = atomic_load(&c->received);
    got = got > c->max_lat ? c->max_lat : got;
    if (warm && got > warm)
        bench_percentiles(c->lat + warm, got - warm, r);
    free(c->lat);
    free(c);

    /* Throughput: free-running; the window starts after the warm-up. */
    c = calloc(1, sizeof *c);
    pipe = build(size, o->queues, c);
    if (!pipe || gst_element_set_state(pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
        return -1;
    sleep_ns((uint64_t)(o->warm_s * 1e9));
    double cpu0 = bench_cpu_clock_ns();
    uint64_t r0 = atomic_load(&c->received), t0 = bench_clock_ns();
    sleep_ns((uint64_t)(o->seconds * 1e9));
    uint64_t r1 = atomic_load(&c->received), t1 = bench_clock_ns();
    double cpu1 = bench_cpu_clock_ns();
    int rc = bus_error(pipe);
    gst_element_set_state(pipe, GST_STATE_NULL);
    gst_object_unref(pipe);
    free(c);
    r->msgs_per_s = (double)(r1 - r0) / ((double)(t1 - t0) / 1e9);
    r->cpu_ns_per_msg = r1 > r0 ? (cpu1 - cpu0) / (double)(r1 - r0) : 0;
    return rc;
}

int main(int argc, char **argv)
{
    peer_opts o;
    bool done;
    int rc = peer_parse_args(argc, argv, "zfpeer-gst", "pipeline",
                             "usage: zfpeer-gst [pipeline] [options]\n"
                             "  fakesrc ! queue ! queue ! queue ! fakesink (\"pipeline\")",
                             &o, &done);
    if (done)
        return rc;
    gst_init(NULL, NULL);
    bench_result res[PEER_MAX_SIZES];
    size_t n = 0;
    for (size_t i = 0; i < o.n_sizes; i++) {
        static const char *impls[] = {"gstreamer-q0", "gstreamer-q1", "gstreamer-q2"};
        bench_result *r = bench_result_init(
            &res[n], "pipeline", o.queues < 3 ? impls[o.queues] : "gstreamer", o.sizes[i]);
        if (o.sizes[i] > INT_MAX) {
            fprintf(stderr, "zfpeer-gst: fakesrc's sizemax cannot be %zu bytes\n", o.sizes[i]);
            rc = 1;
            continue;
        }
        if (run_size(&o, o.sizes[i], r) != 0) {
            fprintf(stderr, "zfpeer-gst: failed at %zu bytes\n", o.sizes[i]);
            rc = 1;
            continue;
        }
        n++;
    }
    bench_print(stdout, res, n, o.json, 10);
    return rc;
}
