/* zfpeer-iox: one hop between two processes through Eclipse iceoryx
 * (its C binding), the zero-copy shared-memory figure zflow's
 * process-isolated nodes are measured against (bench "ipc_hop").
 *
 * The peer starts its own RouDi (iox-roudi from $ZF_IOX_ROUDI or PATH)
 * with a config written for the sizes asked: one mempool per size, with
 * room for a full subscriber queue and the publisher's loans. It forks a
 * subscriber process; this process publishes. One service per size.
 *
 * A message is a loaned chunk of `size` bytes whose first 16 bytes carry
 * the send time and a flag (the rest is not written, as zf-bench hop does
 * not write its capsules). Latency: one chunk in flight: loan, take the
 * time, publish; the subscriber takes it, takes the time, releases it;
 * the publisher waits until it was counted. The subscriber spins on
 * take for PEER_SPIN_NS, then sleeps in a WaitSet. Throughput: the
 * publisher runs free; the subscriber queue holds at most
 * 512 MiB / (size + 64) chunks (zf-bench hop's link capacity), and both
 * sides block rather than drop (WAIT_FOR_CONSUMER, BLOCK_PRODUCER). CPU
 * time: both processes (RouDi is not on the data path and not counted). */
#include "peer.h"

#include <iceoryx_binding_c/log.h>
#include <iceoryx_binding_c/notification_info.h>
#include <iceoryx_binding_c/publisher.h>
#include <iceoryx_binding_c/runtime.h>
#include <iceoryx_binding_c/subscriber.h>
#include <iceoryx_binding_c/wait_set.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLAG_END  1u
#define PUB_LOANS 8u /* iceoryx 2.0: chunks a publisher may hold at once */

typedef struct msg_hdr {
    uint64_t stamp;
    uint64_t flags;
} msg_hdr;

static size_t queue_cap(size_t size)
{
    return bench_queue_cap(size, 512u << 20, 1);
}

/* ---- RouDi ---- */

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int write_config(const peer_opts *o, const char *path)
{
    size_t s[PEER_MAX_SIZES];
    memcpy(s, o->sizes, o->n_sizes * sizeof *s);
    qsort(s, o->n_sizes, sizeof *s, cmp_size);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# written by zfpeer-iox\n[general]\nversion = 1\n\n[[segment]]\n\n");
    for (size_t i = 0; i < o->n_sizes; i++) {
        if (i && s[i] == s[i - 1])
            continue;
        /* Chunk = payload + iceoryx's chunk header (well under 1 KiB). */
        size_t chunk = (s[i] + 1024 + 63) & ~(size_t)63;
        size_t count = queue_cap(s[i]) + PUB_LOANS + 4;
        fprintf(f, "[[segment.mempool]]\nsize = %zu\ncount = %zu\n\n", chunk, count);
    }
    return fclose(f);
}

static const char *roudi_path(void)
{
    const char *p = getenv("ZF_IOX_ROUDI");
    return p && *p ? p : "iox-roudi";
}

static pid_t start_roudi(const char *cfg, const char *log)
{
    struct stat st;
    if (stat("/tmp/roudi", &st) == 0) {
        /* A live RouDi holds its lock file; a stale socket is harmless. */
        fprintf(stderr, "zfpeer-iox: note: /tmp/roudi exists (another RouDi running?)\n");
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execlp(roudi_path(), roudi_path(), "-c", cfg, "-l", "warning", (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", roudi_path(), strerror(errno));
        _exit(127);
    }
    /* Ready when its socket appears; dead if it exits. Up to 60 s: on some
     * VMs RouDi takes 9 s to reserve its 2.7 GB (mostly waiting, not CPU). */
    for (int i = 0; i < 1200; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "zfpeer-iox: RouDi (%s) exited at start; its log: %s\n", roudi_path(),
                    log);
            return -1;
        }
        if (stat("/tmp/roudi", &st) == 0 && i >= 3)
            return pid;
        peer_sleep_ms(50);
    }
    fprintf(stderr, "zfpeer-iox: RouDi did not come up; its log: %s\n", log);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static void stop_roudi(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        peer_sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---- subscriber (child process) ---- */

static void service_name(size_t size, char *buf, size_t n)
{
    snprintf(buf, n, "size%zu", size);
}

/* One phase: chunks until the end flag. */
static int receive_phase(iox_sub_t sub, iox_ws_t ws, peer_ctl *c, bool record)
{
    uint64_t k = 0, spin0 = bench_clock_ns();
    iox_notification_info_t info[1];
    for (;;) {
        const void *p = NULL;
        enum iox_ChunkReceiveResult r = iox_sub_take_chunk(sub, &p);
        if (r == ChunkReceiveResult_SUCCESS) {
            uint64_t now = bench_clock_ns();
            const msg_hdr *h = p;
            bool end = h->flags & FLAG_END;
            if (!end && record && k < c->max_lat)
                c->lat[k] = (double)(now - h->stamp);
            iox_sub_release_chunk(sub, p);
            if (end)
                break;
            k++;
            atomic_store_explicit(&c->received, k, memory_order_release);
            spin0 = bench_clock_ns();
            continue;
        }
        if (r != ChunkReceiveResult_NO_CHUNK_AVAILABLE)
            return -1;
        if (bench_clock_ns() - spin0 < PEER_SPIN_NS) {
            peer_cpu_relax();
            continue;
        }
        uint64_t missed = 0;
        struct timespec timeout = {0, 10000000};
        iox_ws_timed_wait(ws, timeout, info, 1, &missed);
        spin0 = bench_clock_ns();
    }
    atomic_fetch_add_explicit(&c->phases_done, 1, memory_order_release);
    return 0;
}

static int subscriber_main(const peer_opts *o, peer_ctl *c)
{
    iox_set_loglevel(Iceoryx_LogLevel_Warn);
    iox_runtime_init("zfpeer-iox-sub");
    bench_pin(1);
    int rc = 0;
    for (size_t i = 0; i < o->n_sizes && rc == 0; i++) {
        char inst[32];
        service_name(o->sizes[i], inst, sizeof inst);
        iox_sub_options_t so;
        iox_sub_options_init(&so);
        so.queueCapacity = queue_cap(o->sizes[i]);
        so.historyRequest = 0;
        so.queueFullPolicy = QueueFullPolicy_BLOCK_PRODUCER;
        so.nodeName = "zfpeer";
        iox_sub_storage_t ss;
        iox_sub_t sub = iox_sub_init(&ss, "zfpeer", inst, "data", &so);
        iox_ws_storage_t wss;
        iox_ws_t ws = iox_ws_init(&wss);
        iox_ws_attach_subscriber_state(ws, sub, SubscriberState_HAS_DATA, 0, NULL);
        while (iox_sub_get_subscription_state(sub) != SubscribeState_SUBSCRIBED)
            peer_sleep_ms(1);
        atomic_store(&c->ready, i + 1); /* the subscriber exists */
        if (receive_phase(sub, ws, c, true) != 0 || receive_phase(sub, ws, c, false) != 0) {
            atomic_store(&c->failed, 1);
            atomic_fetch_add(&c->phases_done, 2);
            rc = -1;
        }
        iox_ws_detach_subscriber_state(ws, sub, SubscriberState_HAS_DATA);
        iox_ws_deinit(ws);
        iox_sub_deinit(sub);
    }
    iox_runtime_shutdown();
    return rc;
}

/* ---- publisher (this process) ---- */

typedef struct pubctx {
    iox_pub_t pub;
    peer_ctl *c;
    pid_t child;
    uint64_t phase;
    size_t size; /* of the chunks of this phase */
} pubctx;

static void *loan(iox_pub_t pub, size_t size)
{
    void *p = NULL;
    for (int tries = 0;; tries++) {
        enum iox_AllocationResult r = iox_pub_loan_chunk(pub, &p, (uint32_t)size);
        if (r == AllocationResult_SUCCESS)
            return p;
        if (r != AllocationResult_RUNNING_OUT_OF_CHUNKS || tries > 1000000)
            return NULL;
        peer_cpu_relax();
    }
}

static int publish(pubctx *x, size_t size, uint64_t flags)
{
    msg_hdr *h = loan(x->pub, size);
    if (!h)
        return -1;
    h->flags = flags;
    h->stamp = bench_clock_ns();
    iox_pub_publish_chunk(x->pub, h);
    return 0;
}

static int end_phase(pubctx *x, size_t size)
{
    if (publish(x, size, FLAG_END) != 0)
        return -1;
    return peer_wait_phase(x->c, ++x->phase, 0, NULL);
}

static int send_chunk(void *arg)
{
    pubctx *x = arg;
    return publish(x, x->size, 0);
}

static int end_chunk(void *arg)
{
    pubctx *x = arg;
    return end_phase(x, x->size);
}

static int run_size(const peer_opts *o, pubctx *x, size_t i, bench_result *r)
{
    size_t size = o->sizes[i];
    peer_ctl *c = x->c;
    char inst[32];
    service_name(size, inst, sizeof inst);
    iox_pub_options_t po;
    iox_pub_options_init(&po);
    po.historyCapacity = 0;
    po.nodeName = "zfpeer";
    po.subscriberTooSlowPolicy = ConsumerTooSlowPolicy_WAIT_FOR_CONSUMER;
    iox_pub_storage_t ps;
    x->pub = iox_pub_init(&ps, "zfpeer", inst, "data", &po);
    int rc = -1;
    uint64_t t_wait = bench_clock_ns() + 10000000000u;
    while (atomic_load(&c->ready) < i + 1 || !iox_pub_has_subscribers(x->pub)) {
        if (bench_clock_ns() > t_wait) {
            fprintf(stderr, "zfpeer-iox: the subscriber did not connect\n");
            goto out;
        }
        peer_sleep_ms(1);
    }

    x->size = size;
    const peer_hop h = {
        .send = send_chunk, .end_phase = end_chunk, .arg = x, .c = c, .child = x->child};
    if (peer_hop_run(o, size, &h, r) != 0)
        goto out;
    rc = 0;
out:
    iox_pub_deinit(x->pub);
    return rc;
}

/* The publisher process: runs every size, writes results into `res`. */
static int publisher_main(const peer_opts *o, peer_ctl *c, pid_t sub, bench_result *res, size_t *n)
{
    iox_set_loglevel(Iceoryx_LogLevel_Warn);
    iox_runtime_init("zfpeer-iox-pub");
    bench_pin(0);
    pubctx x = {.c = c, .child = sub};
    int rc = 0;
    for (size_t i = 0; i < o->n_sizes && rc == 0; i++) {
        bench_result *r = bench_result_init(&res[*n], "ipc_hop", "iceoryx", o->sizes[i]);
        if (run_size(o, &x, i, r) != 0) {
            fprintf(stderr, "zfpeer-iox: failed at %zu bytes\n", o->sizes[i]);
            rc = -1;
            break;
        }
        (*n)++;
    }
    iox_runtime_shutdown();
    return rc;
}

int main(int argc, char **argv)
{
    peer_opts o;
    bool done;
    int rc = peer_parse_args(argc, argv, "zfpeer-iox", "ipc_hop",
                             "usage: zfpeer-iox [ipc_hop] [options]\n"
                             "  one hop between two processes through iceoryx (\"ipc_hop\");\n"
                             "  starts and stops its own RouDi ($ZF_IOX_ROUDI or iox-roudi)",
                             &o, &done);
    if (done)
        return rc;
    for (size_t i = 0; i < o.n_sizes; i++) {
        if (o.sizes[i] < sizeof(msg_hdr) || o.sizes[i] > (size_t)UINT32_MAX - 4096) {
            fprintf(stderr, "zfpeer-iox: %zu bytes: iceoryx chunks hold 16 B to 4 GiB here\n",
                    o.sizes[i]);
            return 2;
        }
    }
    char dir[] = "/tmp/zfpeer-iox.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("zfpeer-iox: mkdtemp");
        return 1;
    }
    char cfg[64], log[64];
    snprintf(cfg, sizeof cfg, "%s/roudi.toml", dir);
    snprintf(log, sizeof log, "%s/roudi.log", dir);
    if (write_config(&o, cfg) != 0) {
        perror("zfpeer-iox: config");
        return 1;
    }
    /* Shared with the two children: control block, samples, results. */
    size_t ctl_bytes, res_bytes = sizeof(size_t) + PEER_MAX_SIZES * sizeof(bench_result);
    peer_ctl *c = peer_ctl_alloc(&o, &ctl_bytes);
    size_t *n_res = peer_shared_alloc(res_bytes);
    if (!c || !n_res)
        return 1;
    bench_result *res = (bench_result *)(n_res + 1);

    pid_t roudi = start_roudi(cfg, log);
    if (roudi < 0)
        return 1;
    /* This process never joins iceoryx: RouDi stops only once both
     * children left it (exit() runs the runtime's deregistration). */
    fflush(NULL);
    pid_t sub = fork();
    if (sub == 0)
        exit(subscriber_main(&o, c) == 0 ? 0 : 1);
    pid_t pub = sub > 0 ? fork() : -1;
    if (pub == 0)
        exit(publisher_main(&o, c, sub, res, n_res) == 0 ? 0 : 1);
    rc = sub > 0 && pub > 0 ? 0 : 1;
    int st = 0;
    if (pub > 0) {
        waitpid(pub, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            rc = 1;
            if (sub > 0)
                kill(sub, SIGKILL);
        }
    }
    if (sub > 0) {
        waitpid(sub, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
    stop_roudi(roudi);
    if (rc == 0) {
        unlink(cfg);
        unlink(log);
        rmdir(dir);
    } else {
        fprintf(stderr, "zfpeer-iox: RouDi's config and log are in %s\n", dir);
    }
    bench_print(stdout, res, *n_res, o.json, 10);
    peer_shared_free(c, ctl_bytes);
    peer_shared_free(n_res, res_bytes);
    return rc;
}
