/* zfpeer-dds: one hop between two processes over raw Eclipse Cyclone DDS
 * (bench "dds_hop"), the baseline for zflow's future cross-worker links.
 *
 * Loopback only: unless $ZF_PEER_DDS_URI names another configuration, the
 * peer sets CYCLONEDDS_URI to use the `lo` interface, no multicast,
 * unicast discovery of 127.0.0.1, 64 KB UDP datagrams (fewer packets per
 * large sample), on a domain id derived from the process id (so two runs
 * do not meet). The writer is this process, the reader a forked child.
 *
 * The type is `struct { uint64 stamp; uint64 flags; sequence<octet> data; }`
 * with its topic descriptor written by hand below (the serializer's
 * program for the three members: no idlc needed at build time). One topic
 * per size; reliable QoS, keep-last history of depth
 * 512 MiB / (size + 64) clamped to [2, 256] (zf-bench hop's link
 * capacity) on both sides, max blocking time 10 s.
 *
 * Latency: one sample in flight: take the time, dds_write; the reader
 * takes it (spinning on dds_take for PEER_SPIN_NS, then waiting in a
 * WaitSet), takes the time; the writer waits until it was counted.
 * Throughput: the writer runs free (Cyclone throttles it on its
 * unacknowledged bytes); samples counted by the reader after a warm-up.
 * CPU time: both processes, Cyclone's own threads included. */
#include "peer.h"

#include <dds/dds.h>

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLAG_END 1u

/* The layout Cyclone's serializer expects for sequence<octet>. */
typedef struct octets {
    uint32_t _maximum;
    uint32_t _length;
    uint8_t *_buffer;
    bool _release;
} octets;

typedef struct msg {
    uint64_t stamp;
    uint64_t flags;
    octets data;
} msg;

/* clang-format off: one instruction per line */
static const uint32_t msg_ops[] = {
    DDS_OP_ADR | DDS_OP_TYPE_8BY,
    offsetof(msg, stamp),
    DDS_OP_ADR | DDS_OP_TYPE_8BY,
    offsetof(msg, flags),
    DDS_OP_ADR | DDS_OP_TYPE_SEQ | DDS_OP_SUBTYPE_1BY,
    offsetof(msg, data),
    DDS_OP_RTS,
};
/* clang-format on */

static const dds_topic_descriptor_t msg_desc = {
    .m_size = sizeof(msg),
    .m_align = _Alignof(msg),
    .m_flagset = 0,
    .m_nkeys = 0,
    .m_typename = "zfpeer::Msg",
    .m_keys = NULL,
    .m_nops = 4,
    .m_ops = msg_ops,
    .m_meta = "",
};

/* Loopback, unicast; large datagrams and fragments (a 100 MiB sample is
 * ~1700 datagrams, not 78000), socket buffers up to 8 MB, prompt
 * NACKs and heartbeats, and a writer history cache allowed to hold 64 MB
 * unacknowledged (Cyclone's default of 500 kB stalls large samples). */
static const char loopback_config[] =
    "<CycloneDDS><Domain Id=\"any\">"
    "<General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast>"
    "<MaxMessageSize>65000B</MaxMessageSize><FragmentSize>60000B</FragmentSize></General>"
    "<Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>20</MaxAutoParticipantIndex>"
    "<Peers><Peer Address=\"127.0.0.1\"/></Peers></Discovery>"
    "<Internal><SocketReceiveBufferSize max=\"8MB\"/><SocketSendBufferSize max=\"8MB\"/>"
    "<NackDelay>1ms</NackDelay><HeartbeatInterval min=\"1ms\">10ms</HeartbeatInterval>"
    "<Watermarks><WhcHigh>64MB</WhcHigh></Watermarks></Internal>"
    "</Domain></CycloneDDS>";

static size_t history_depth(size_t size)
{
    return bench_queue_cap(size, 512u << 20, 1);
}

static dds_qos_t *make_qos(size_t size)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(10));
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, (int32_t)history_depth(size));
    return q;
}

static dds_entity_t make_topic(dds_entity_t pp, size_t size)
{
    char name[64];
    snprintf(name, sizeof name, "zfpeer_size%zu", size);
    return dds_create_topic(pp, &msg_desc, name, NULL, NULL);
}

/* ---- reader (child process) ---- */

static int receive_phase(dds_entity_t rd, dds_entity_t ws, peer_ctl *c, bool record)
{
    uint64_t k = 0, spin0 = bench_clock_ns();
    for (;;) {
        void *buf[1] = {NULL};
        dds_sample_info_t si[1];
        int n = dds_take(rd, buf, si, 1, 1);
        if (n < 0)
            return -1;
        if (n > 0) {
            uint64_t now = bench_clock_ns();
            bool end = false;
            if (si[0].valid_data) {
                const msg *m = buf[0];
                end = m->flags & FLAG_END;
                if (!end && record && k < c->max_lat)
                    c->lat[k] = (double)(now - m->stamp);
            }
            dds_return_loan(rd, buf, n);
            if (!si[0].valid_data)
                continue;
            if (end)
                break;
            k++;
            atomic_store_explicit(&c->received, k, memory_order_release);
            spin0 = bench_clock_ns();
            continue;
        }
        if (bench_clock_ns() - spin0 < PEER_SPIN_NS) {
            peer_cpu_relax();
            continue;
        }
        dds_waitset_wait(ws, NULL, 0, DDS_MSECS(10));
        spin0 = bench_clock_ns();
    }
    atomic_fetch_add_explicit(&c->phases_done, 1, memory_order_release);
    return 0;
}

static int reader_main(const peer_opts *o, peer_ctl *c, dds_domainid_t domain)
{
    dds_entity_t pp = dds_create_participant(domain, NULL, NULL);
    if (pp < 0) {
        fprintf(stderr, "zfpeer-dds: reader participant: %s\n", dds_strretcode(pp));
        return -1;
    }
    bench_pin(1); /* after Cyclone started its threads: they stay unpinned */
    int rc = 0;
    for (size_t i = 0; i < o->n_sizes && rc == 0; i++) {
        dds_qos_t *q = make_qos(o->sizes[i]);
        dds_entity_t tp = make_topic(pp, o->sizes[i]);
        dds_entity_t rd = dds_create_reader(pp, tp, q, NULL);
        dds_delete_qos(q);
        dds_entity_t ws = dds_create_waitset(pp);
        dds_entity_t rc_any = dds_create_readcondition(rd, DDS_ANY_STATE);
        if (tp < 0 || rd < 0 || ws < 0 || rc_any < 0 || dds_waitset_attach(ws, rc_any, 0) < 0) {
            fprintf(stderr, "zfpeer-dds: reader setup failed\n");
            rc = -1;
            break;
        }
        dds_subscription_matched_status_t st = {0};
        while (dds_get_subscription_matched_status(rd, &st) == 0 && st.current_count < 1)
            peer_sleep_ms(1);
        atomic_store(&c->ready, i + 1); /* the reader matched */
        if (receive_phase(rd, ws, c, true) != 0 || receive_phase(rd, ws, c, false) != 0)
            rc = -1;
        dds_delete(ws);
        dds_delete(rc_any);
        dds_delete(rd);
        dds_delete(tp);
    }
    if (rc != 0) {
        atomic_store(&c->failed, 1);
        atomic_fetch_add(&c->phases_done, 2 * o->n_sizes);
    }
    dds_delete(pp);
    return rc;
}

/* ---- writer (this process) ---- */

typedef struct writer {
    dds_entity_t wr;
    peer_ctl *c;
    pid_t child;
    uint64_t phase;
    uint8_t *payload;
    size_t size; /* of the samples of this phase */
} writer;

static int send_one(writer *w, size_t size, uint64_t flags)
{
    msg m = {
        .flags = flags,
        .data = {._maximum = (uint32_t)size, ._length = (uint32_t)size, ._buffer = w->payload}};
    m.stamp = bench_clock_ns();
    dds_return_t r = dds_write(w->wr, &m);
    if (r != DDS_RETCODE_OK) {
        fprintf(stderr, "zfpeer-dds: dds_write: %s\n", dds_strretcode(r));
        return -1;
    }
    return 0;
}

static int end_phase(writer *w, size_t size)
{
    if (send_one(w, 0, FLAG_END) != 0)
        return -1;
    return peer_wait_phase(w->c, ++w->phase, 60000000000u,
                           "zfpeer-dds: the reader did not finish the phase");
}

static int send_sample(void *arg)
{
    writer *w = arg;
    return send_one(w, w->size, 0);
}

static int end_sample(void *arg)
{
    writer *w = arg;
    return end_phase(w, w->size);
}

static int run_size(const peer_opts *o, writer *w, dds_entity_t pp, size_t i, bench_result *r)
{
    size_t size = o->sizes[i];
    peer_ctl *c = w->c;
    dds_qos_t *q = make_qos(size);
    dds_entity_t tp = make_topic(pp, size);
    w->wr = dds_create_writer(pp, tp, q, NULL);
    dds_delete_qos(q);
    int rc = -1;
    if (tp < 0 || w->wr < 0) {
        fprintf(stderr, "zfpeer-dds: writer setup failed\n");
        goto out;
    }
    uint64_t t_wait = bench_clock_ns() + 20000000000u;
    dds_publication_matched_status_t st = {0};
    while (atomic_load(&c->ready) < i + 1 ||
           (dds_get_publication_matched_status(w->wr, &st) == 0 && st.current_count < 1)) {
        if (bench_clock_ns() > t_wait || atomic_load(&c->failed)) {
            fprintf(stderr, "zfpeer-dds: the reader did not match\n");
            goto out;
        }
        peer_sleep_ms(1);
    }

    w->size = size;
    const peer_hop h = {
        .send = send_sample, .end_phase = end_sample, .arg = w, .c = c, .child = w->child};
    if (peer_hop_run(o, size, &h, r) != 0)
        goto out;
    rc = 0;
out:
    if (w->wr > 0)
        dds_delete(w->wr);
    if (tp > 0)
        dds_delete(tp);
    return rc;
}

int main(int argc, char **argv)
{
    peer_opts o;
    bool done;
    int rc = peer_parse_args(argc, argv, "zfpeer-dds", "dds_hop",
                             "usage: zfpeer-dds [dds_hop] [options]\n"
                             "  one hop between two processes over Cyclone DDS on loopback "
                             "(\"dds_hop\")",
                             &o, &done);
    if (done)
        return rc;
    size_t big = peer_max_size(&o);
    if (big > (size_t)INT32_MAX) {
        fprintf(stderr, "zfpeer-dds: sizes above 2 GiB are not supported\n");
        return 2;
    }
    const char *uri = getenv("ZF_PEER_DDS_URI");
    setenv("CYCLONEDDS_URI", uri && *uri ? uri : loopback_config, 1);
    dds_domainid_t domain = (dds_domainid_t)(1 + getpid() % 200);

    size_t ctl_bytes;
    peer_ctl *c = peer_ctl_alloc(&o, &ctl_bytes);
    if (!c)
        return 1;
    fflush(NULL);
    pid_t child = fork(); /* before any DDS call: each process its own participant */
    if (child == 0)
        _exit(reader_main(&o, c, domain) == 0 ? 0 : 1);
    if (child < 0)
        return 1;

    writer w = {.c = c, .child = child, .payload = bench_touched_alloc(big)};
    dds_entity_t pp = dds_create_participant(domain, NULL, NULL);
    bench_result res[PEER_MAX_SIZES];
    size_t n = 0;
    if (pp < 0 || !w.payload) {
        fprintf(stderr, "zfpeer-dds: writer participant: %s\n",
                pp < 0 ? dds_strretcode(pp) : "out of memory");
        rc = 1;
    } else {
        bench_pin(0);
    }
    for (size_t i = 0; i < o.n_sizes && rc == 0; i++) {
        bench_result *r = bench_result_init(&res[n], "dds_hop", "cyclonedds", o.sizes[i]);
        if (run_size(&o, &w, pp, i, r) != 0) {
            fprintf(stderr, "zfpeer-dds: failed at %zu bytes\n", o.sizes[i]);
            rc = 1;
            break;
        }
        n++;
    }
    if (pp > 0)
        dds_delete(pp);
    if (rc != 0)
        kill(child, SIGKILL);
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        rc = 1;
    free(w.payload);
    peer_shared_free(c, ctl_bytes);
    bench_print(stdout, res, n, o.json, 10);
    return rc;
}
