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

typedef struct ctl {
    _Alignas(64) atomic_uint_fast64_t received;
    _Alignas(64) atomic_uint_fast64_t phases_done;
    atomic_uint_fast64_t sub_ready; /* index + 1 of the size whose subscriber exists */
    atomic_int failed;
    size_t max_lat;
    double lat[];
} ctl;

static size_t queue_cap(size_t size)
{
    return peer_queue_cap(size, 512u << 20, 1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
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
    /* Ready when its socket appears; dead if it exits. */
    for (int i = 0; i < 200; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "zfpeer-iox: RouDi (%s) exited at start; its log: %s\n", roudi_path(),
                    log);
            return -1;
        }
        if (stat("/tmp/roudi", &st) == 0 && i >= 3)
            return pid;
        sleep_ms(50);
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
        sleep_ms(50);
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
static int receive_phase(iox_sub_t sub, iox_ws_t ws, ctl *c, bool record)
{
    uint64_t k = 0, spin0 = peer_clock_ns();
    iox_notification_info_t info[1];
    for (;;) {
        const void *p = NULL;
        enum iox_ChunkReceiveResult r = iox_sub_take_chunk(sub, &p);
        if (r == ChunkReceiveResult_SUCCESS) {
            uint64_t now = peer_clock_ns();
            const msg_hdr *h = p;
            bool end = h->flags & FLAG_END;
            if (!end && record && k < c->max_lat)
                c->lat[k] = (double)(now - h->stamp);
            iox_sub_release_chunk(sub, p);
            if (end)
                break;
            k++;
            atomic_store_explicit(&c->received, k, memory_order_release);
            spin0 = peer_clock_ns();
            continue;
        }
        if (r != ChunkReceiveResult_NO_CHUNK_AVAILABLE)
            return -1;
        if (peer_clock_ns() - spin0 < PEER_SPIN_NS) {
            peer_cpu_relax();
            continue;
        }
        uint64_t missed = 0;
        struct timespec timeout = {0, 10000000};
        iox_ws_timed_wait(ws, timeout, info, 1, &missed);
        spin0 = peer_clock_ns();
    }
    atomic_fetch_add_explicit(&c->phases_done, 1, memory_order_release);
    return 0;
}

static int subscriber_main(const peer_opts *o, ctl *c)
{
    iox_set_loglevel(Iceoryx_LogLevel_Warn);
    iox_runtime_init("zfpeer-iox-sub");
    peer_pin(1);
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
            sleep_ms(1);
        atomic_store(&c->sub_ready, i + 1);
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
    ctl *c;
    pid_t child;
    uint64_t phase;
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
    h->stamp = peer_clock_ns();
    iox_pub_publish_chunk(x->pub, h);
    return 0;
}

static int end_phase(pubctx *x, size_t size)
{
    if (publish(x, size, FLAG_END) != 0)
        return -1;
    x->phase++;
    while (atomic_load_explicit(&x->c->phases_done, memory_order_acquire) < x->phase)
        peer_cpu_relax();
    return atomic_load(&x->c->failed) ? -1 : 0;
}

struct send_arg {
    pubctx *x;
    size_t size;
};

static int send_lat(void *arg)
{
    struct send_arg *a = arg;
    return publish(a->x, a->size, 0);
}

static int run_size(const peer_opts *o, pubctx *x, size_t i, peer_result *r)
{
    size_t size = o->sizes[i];
    ctl *c = x->c;
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
    uint64_t t_wait = peer_clock_ns() + 10000000000u;
    while (atomic_load(&c->sub_ready) < i + 1 || !iox_pub_has_subscribers(x->pub)) {
        if (peer_clock_ns() > t_wait) {
            fprintf(stderr, "zfpeer-iox: the subscriber did not connect\n");
            goto out;
        }
        sleep_ms(1);
    }

    /* Latency: one in flight; warm-up samples dropped. */
    struct send_arg a = {x, size};
    size_t warm = 0;
    atomic_store(&c->received, 0);
    long sent = peer_latency_phase(o, size, send_lat, &a, &c->received, &c->failed, &warm);
    if (sent < 0 || end_phase(x, size) != 0)
        goto out;
    if ((size_t)sent > warm)
        peer_percentiles(c->lat + warm, (size_t)sent - warm, r);

    /* Throughput: free-running; the window starts after the warm-up. */
    atomic_store(&c->received, 0);
    uint64_t t0 = peer_clock_ns(), warm_end = t0 + (uint64_t)(o->warm_s * 1e9);
    uint64_t deadline = warm_end + (uint64_t)(o->seconds * 1e9);
    uint64_t r0 = 0, r1 = 0, t_start = 0, t_stop = 0;
    double cpu0 = 0, cpu1 = 0;
    bool in_window = false;
    for (;;) {
        if (publish(x, size, 0) != 0)
            goto out;
        uint64_t now = peer_clock_ns();
        if (!in_window && now >= warm_end) {
            in_window = true;
            cpu0 = peer_cpu_ns() + peer_cpu_ns_of(x->child);
            r0 = atomic_load(&c->received);
            t_start = peer_clock_ns();
        } else if (in_window && now >= deadline) {
            r1 = atomic_load(&c->received);
            t_stop = peer_clock_ns();
            cpu1 = peer_cpu_ns() + peer_cpu_ns_of(x->child);
            break;
        }
    }
    if (end_phase(x, size) != 0)
        goto out;
    r->msgs_per_s = (double)(r1 - r0) / ((double)(t_stop - t_start) / 1e9);
    r->cpu_ns_per_msg = r1 > r0 ? (cpu1 - cpu0) / (double)(r1 - r0) : 0;
    rc = 0;
out:
    iox_pub_deinit(x->pub);
    return rc;
}

static size_t max_samples(const peer_opts *o)
{
    size_t m = 0;
    for (size_t i = 0; i < o->n_sizes; i++) {
        size_t n = peer_samples_for(o, o->sizes[i]);
        n += peer_warmup_for(n);
        m = n > m ? n : m;
    }
    return m;
}

/* The publisher process: runs every size, writes results into `res`. */
static int publisher_main(const peer_opts *o, ctl *c, pid_t sub, peer_result *res, size_t *n)
{
    iox_set_loglevel(Iceoryx_LogLevel_Warn);
    iox_runtime_init("zfpeer-iox-pub");
    peer_pin(0);
    pubctx x = {.c = c, .child = sub};
    int rc = 0;
    for (size_t i = 0; i < o->n_sizes && rc == 0; i++) {
        peer_result *r = &res[*n];
        memset(r, 0, sizeof *r);
        r->bench = "ipc_hop";
        r->impl = "iceoryx";
        r->size = o->sizes[i];
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
    int rc = peer_parse_args(argc, argv,
                             "usage: zfpeer-iox [ipc_hop] [options]\n"
                             "  one hop between two processes through iceoryx (\"ipc_hop\");\n"
                             "  starts and stops its own RouDi ($ZF_IOX_ROUDI or iox-roudi)",
                             &o, &done);
    if (done)
        return rc;
    if (o.which && strcmp(o.which, "ipc_hop") && strcmp(o.which, "all")) {
        fprintf(stderr, "zfpeer-iox: unknown benchmark '%s' (ipc_hop)\n", o.which);
        return 2;
    }
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
    size_t lat_n = max_samples(&o), ctl_bytes = sizeof(ctl) + lat_n * sizeof(double);
    size_t res_bytes = sizeof(size_t) + PEER_MAX_SIZES * sizeof(peer_result);
    ctl *c = peer_shared_alloc(ctl_bytes);
    size_t *n_res = peer_shared_alloc(res_bytes);
    if (!c || !n_res)
        return 1;
    peer_result *res = (peer_result *)(n_res + 1);
    c->max_lat = lat_n;

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
    peer_print(stdout, res, *n_res, o.json);
    peer_shared_free(c, ctl_bytes);
    peer_shared_free(n_res, res_bytes);
    return rc;
}
