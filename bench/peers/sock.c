/* zfpeer-sock: one hop over a byte stream, the baselines of zf-bench hop.
 *
 *   zfpeer-sock tcp   two threads, a TCP connection on 127.0.0.1 (bench "hop")
 *   zfpeer-sock uds   two processes, a Unix domain stream socket (bench "ipc_hop")
 *   zfpeer-sock all   both
 *
 * A message is a 16-byte header (payload length, send timestamp) and the
 * payload, written with one writev. The receiver reads the header, then
 * the whole payload into its buffer, then takes the time. Latency: one
 * message in flight (the sender waits until the receiver counted it).
 * Throughput: the sender writes as fast as the socket takes them (the
 * kernel's socket buffer is the bounded queue); messages counted by the
 * receiver over the window after the warm-up. CPU time: both threads, or
 * both processes. A header of length UINT64_MAX ends a phase. */
#include "peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define END_OF_PHASE UINT64_MAX

typedef struct msg_hdr {
    uint64_t len;
    uint64_t stamp;
} msg_hdr;

/* Shared between sender and receiver (threads, or processes via mmap). */
typedef struct ctl {
    _Alignas(64) atomic_uint_fast64_t received;
    _Alignas(64) atomic_uint_fast64_t phases_done;
    atomic_int failed;
    size_t max_lat;
    double lat[]; /* latency samples of the current phase */
} ctl;

typedef struct receiver {
    int fd;
    ctl *c;
    char *buf;
    size_t buf_size;
    size_t phases; /* phases to run before returning */
    bool record;   /* per phase: alternate latency (record) / throughput */
} receiver;

/* Reads exactly n bytes. Spins (non-blocking reads) up to PEER_SPIN_NS
 * for the first bytes when `spin`, then blocks. -1 on EOF or error. */
static int read_full(int fd, void *p, size_t n, bool spin)
{
    char *b = p;
    size_t got = 0;
    if (spin) {
        uint64_t t0 = peer_clock_ns();
        while (got == 0) {
            ssize_t r = recv(fd, b, n, MSG_DONTWAIT);
            if (r > 0)
                got = (size_t)r;
            else if (r == 0)
                return -1;
            else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return -1;
            else if (peer_clock_ns() - t0 > PEER_SPIN_NS)
                break;
            else
                peer_cpu_relax();
        }
    }
    while (got < n) {
        ssize_t r = recv(fd, b + got, n - got, MSG_WAITALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0) {
        ssize_t w = writev(fd, iov, iovcnt);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        size_t left = (size_t)w;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

/* One phase on the receiving side: messages until the end marker. */
static int receive_phase(receiver *rx, bool record)
{
    uint64_t k = 0;
    for (;;) {
        msg_hdr h;
        if (read_full(rx->fd, &h, sizeof h, true) != 0)
            return -1;
        if (h.len == END_OF_PHASE)
            break;
        if (h.len > rx->buf_size || read_full(rx->fd, rx->buf, h.len, false) != 0)
            return -1;
        uint64_t now = peer_clock_ns();
        if (record && k < rx->c->max_lat)
            rx->c->lat[k] = (double)(now - h.stamp);
        k++;
        atomic_store_explicit(&rx->c->received, k, memory_order_release);
    }
    atomic_fetch_add_explicit(&rx->c->phases_done, 1, memory_order_release);
    return 0;
}

static void *receiver_main(void *arg)
{
    receiver *rx = arg;
    peer_pin(1);
    for (size_t i = 0; i < rx->phases; i++) {
        if (receive_phase(rx, i % 2 == 0) != 0) {
            atomic_store(&rx->c->failed, 1);
            atomic_fetch_add(&rx->c->phases_done, 1);
            break;
        }
    }
    return NULL;
}

static int send_msg(int fd, const char *payload, size_t len)
{
    msg_hdr h = {.len = len, .stamp = peer_clock_ns()};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
    return write_full(fd, iov, len ? 2 : 1);
}

static int end_phase(int fd, ctl *c, uint64_t phase)
{
    msg_hdr h = {.len = END_OF_PHASE};
    struct iovec iov = {&h, sizeof h};
    if (write_full(fd, &iov, 1) != 0)
        return -1;
    while (atomic_load_explicit(&c->phases_done, memory_order_acquire) < phase)
        peer_cpu_relax();
    return atomic_load(&c->failed) ? -1 : 0;
}

typedef struct sender {
    int fd;
    ctl *c;
    const char *payload;
    pid_t child; /* 0: the receiver is a thread of this process */
    uint64_t phase;
} sender;

static double cpu_now(const sender *s)
{
    return peer_cpu_ns() + (s->child ? peer_cpu_ns_of(s->child) : 0);
}

struct send_arg {
    sender *s;
    size_t size;
};

static int send_lat(void *arg)
{
    struct send_arg *a = arg;
    return send_msg(a->s->fd, a->s->payload, a->size);
}

static int run_size(const peer_opts *o, sender *s, size_t size, peer_result *r)
{
    ctl *c = s->c;
    /* Latency: one in flight; warm-up samples dropped. */
    struct send_arg a = {s, size};
    size_t warm = 0;
    atomic_store(&c->received, 0);
    long sent = peer_latency_phase(o, size, send_lat, &a, &c->received, &c->failed, &warm);
    if (sent < 0 || end_phase(s->fd, c, ++s->phase) != 0)
        return -1;
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
        if (send_msg(s->fd, s->payload, size) != 0)
            return -1;
        uint64_t now = peer_clock_ns();
        if (!in_window && now >= warm_end) {
            in_window = true;
            cpu0 = cpu_now(s);
            r0 = atomic_load(&c->received);
            t_start = peer_clock_ns();
        } else if (in_window && now >= deadline) {
            r1 = atomic_load(&c->received);
            t_stop = peer_clock_ns();
            cpu1 = cpu_now(s);
            break;
        }
    }
    if (end_phase(s->fd, c, ++s->phase) != 0)
        return -1;
    uint64_t got = r1 - r0;
    r->msgs_per_s = (double)got / ((double)(t_stop - t_start) / 1e9);
    r->cpu_ns_per_msg = got ? (cpu1 - cpu0) / (double)got : 0;
    return 0;
}

static int tune_socket(int fd, bool tcp)
{
    int one = 1;
    if (tcp && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        return -1;
    return 0;
}

/* A connected TCP pair on 127.0.0.1 (an ephemeral port). */
static int tcp_pair(int fds[2])
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) != 0)
        goto fail;
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof a) != 0)
        goto fail;
    fds[1] = accept(ls, NULL, NULL);
    if (fds[1] < 0)
        goto fail;
    close(ls);
    return tune_socket(fds[0], true) || tune_socket(fds[1], true) ? -1 : 0;
fail:
    perror("zfpeer-sock: tcp on 127.0.0.1");
    if (ls >= 0)
        close(ls);
    return -1;
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

static size_t max_size(const peer_opts *o)
{
    size_t m = 0;
    for (size_t i = 0; i < o->n_sizes; i++)
        m = o->sizes[i] > m ? o->sizes[i] : m;
    return m;
}

static int run(const peer_opts *o, bool tcp, peer_result *res, size_t *n_res)
{
    size_t lat_n = max_samples(o), big = max_size(o);
    size_t ctl_bytes = sizeof(ctl) + lat_n * sizeof(double);
    ctl *c = peer_shared_alloc(ctl_bytes);
    char *payload = peer_touched_alloc(big);
    if (!c || !payload) {
        fprintf(stderr, "zfpeer-sock: out of memory\n");
        return -1;
    }
    c->max_lat = lat_n;
    int fds[2] = {-1, -1};
    if (tcp ? tcp_pair(fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) {
        perror("zfpeer-sock: socket");
        return -1;
    }
    receiver rx = {.fd = fds[1], .c = c, .buf_size = big, .phases = 2 * o->n_sizes};
    sender s = {.fd = fds[0], .c = c, .payload = payload};
    pthread_t thr;
    if (tcp) {
        rx.buf = peer_touched_alloc(big);
        if (!rx.buf || pthread_create(&thr, NULL, receiver_main, &rx) != 0)
            return -1;
    } else {
        fflush(NULL);
        s.child = fork();
        if (s.child < 0)
            return -1;
        if (s.child == 0) {
            close(fds[0]);
            rx.buf = peer_touched_alloc(big);
            if (!rx.buf)
                _exit(1);
            receiver_main(&rx);
            _exit(0);
        }
        close(fds[1]);
    }
    peer_pin(0);
    int rc = 0;
    for (size_t i = 0; i < o->n_sizes && rc == 0; i++) {
        peer_result *r = &res[*n_res];
        memset(r, 0, sizeof *r);
        r->bench = tcp ? "hop" : "ipc_hop";
        r->impl = tcp ? "tcp" : "uds";
        r->size = o->sizes[i];
        rc = run_size(o, &s, o->sizes[i], r);
        if (rc == 0)
            (*n_res)++;
        else
            fprintf(stderr, "zfpeer-sock: %s failed at %zu bytes\n", r->impl, o->sizes[i]);
    }
    close(fds[0]);
    if (tcp) {
        pthread_join(thr, NULL);
        close(fds[1]);
        free(rx.buf);
    } else {
        int st;
        waitpid(s.child, &st, 0);
    }
    free(payload);
    peer_shared_free(c, ctl_bytes);
    return rc;
}

int main(int argc, char **argv)
{
    peer_opts o;
    bool done;
    int rc = peer_parse_args(argc, argv,
                             "usage: zfpeer-sock tcp|uds|all [options]\n"
                             "  tcp  one hop between two threads over TCP on 127.0.0.1 (\"hop\")\n"
                             "  uds  one hop between two processes over a Unix domain socket "
                             "(\"ipc_hop\")",
                             &o, &done);
    if (done)
        return rc;
    const char *w = o.which ? o.which : "all";
    bool all = !strcmp(w, "all");
    if (!all && strcmp(w, "tcp") && strcmp(w, "uds")) {
        fprintf(stderr, "zfpeer-sock: unknown transport '%s' (tcp, uds, all)\n", w);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    peer_result res[2 * PEER_MAX_SIZES];
    size_t n = 0;
    if (all || !strcmp(w, "tcp"))
        rc |= run(&o, true, res, &n);
    if (all || !strcmp(w, "uds"))
        rc |= run(&o, false, res, &n);
    peer_print(stdout, res, n, o.json);
    return rc ? 1 : 0;
}
