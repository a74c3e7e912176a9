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

typedef struct receiver {
    int fd;
    peer_ctl *c;
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
        uint64_t t0 = bench_clock_ns();
        while (got == 0) {
            ssize_t r = recv(fd, b, n, MSG_DONTWAIT);
            if (r > 0)
                got = (size_t)r;
            else if (r == 0)
                return -1;
            else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                return -1;
            else if (bench_clock_ns() - t0 > PEER_SPIN_NS)
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
        uint64_t now = bench_clock_ns();
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
    bench_pin(1);
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
    msg_hdr h = {.len = len, .stamp = bench_clock_ns()};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, len}};
    return write_full(fd, iov, len ? 2 : 1);
}

static int end_phase(int fd, peer_ctl *c, uint64_t phase)
{
    msg_hdr h = {.len = END_OF_PHASE};
    struct iovec iov = {&h, sizeof h};
    if (write_full(fd, &iov, 1) != 0)
        return -1;
    return peer_wait_phase(c, phase, 0, NULL);
}

typedef struct sender {
    int fd;
    peer_ctl *c;
    const char *payload;
    size_t size; /* of the messages of this phase */
    pid_t child; /* 0: the receiver is a thread of this process */
    uint64_t phase;
} sender;

static int send_one(void *arg)
{
    sender *s = arg;
    return send_msg(s->fd, s->payload, s->size);
}

static int end_one(void *arg)
{
    sender *s = arg;
    return end_phase(s->fd, s->c, ++s->phase);
}

static int run_size(const peer_opts *o, sender *s, size_t size, bench_result *r)
{
    s->size = size;
    const peer_hop h = {
        .send = send_one, .end_phase = end_one, .arg = s, .c = s->c, .child = s->child};
    return peer_hop_run(o, size, &h, r);
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

static int run(const peer_opts *o, bool tcp, bench_result *res, size_t *n_res)
{
    size_t big = peer_max_size(o), ctl_bytes;
    peer_ctl *c = peer_ctl_alloc(o, &ctl_bytes);
    char *payload = bench_touched_alloc(big);
    if (!c || !payload) {
        fprintf(stderr, "zfpeer-sock: out of memory\n");
        return -1;
    }
    int fds[2] = {-1, -1};
    if (tcp ? tcp_pair(fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) {
        perror("zfpeer-sock: socket");
        return -1;
    }
    receiver rx = {.fd = fds[1], .c = c, .buf_size = big, .phases = 2 * o->n_sizes};
    sender s = {.fd = fds[0], .c = c, .payload = payload};
    pthread_t thr;
    if (tcp) {
        rx.buf = bench_touched_alloc(big);
        if (!rx.buf || pthread_create(&thr, NULL, receiver_main, &rx) != 0)
            return -1;
    } else {
        fflush(NULL);
        s.child = fork();
        if (s.child < 0)
            return -1;
        if (s.child == 0) {
            close(fds[0]);
            rx.buf = bench_touched_alloc(big);
            if (!rx.buf)
                _exit(1);
            receiver_main(&rx);
            _exit(0);
        }
        close(fds[1]);
    }
    bench_pin(0);
    int rc = 0;
    for (size_t i = 0; i < o->n_sizes && rc == 0; i++) {
        bench_result *r = bench_result_init(&res[*n_res], tcp ? "hop" : "ipc_hop",
                                            tcp ? "tcp" : "uds", o->sizes[i]);
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
    int rc = peer_parse_args(argc, argv, "zfpeer-sock", NULL,
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
    bench_result res[2 * PEER_MAX_SIZES];
    size_t n = 0;
    if (all || !strcmp(w, "tcp"))
        rc |= run(&o, true, res, &n);
    if (all || !strcmp(w, "uds"))
        rc |= run(&o, false, res, &n);
    bench_print(stdout, res, n, o.json, 10);
    return rc ? 1 : 0;
}
