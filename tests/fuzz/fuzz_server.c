/* libFuzzer target over the control server's request handling, not only
 * its decoders: the bytes are a stream a client sends to a live zf_server
 * (its framing, limits, per-connection thread) whose handler is zfd's own
 * (apps/zfd/handlers.c: deploy checks, the instance table, status, destroy),
 * on a runtime of its own. Every answer must be a JSON object with an "ok"
 * member (abort otherwise), the server must keep answering, and whatever a
 * request created is destroyed before the next input. Node code may load
 * only from an empty folder: deploys go through every check and stop short
 * of running code. */
#include "zfd.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static zfd_daemon daemon_;
static zf_server *server;
static char sock_path[108];

static char tmp_dir[64], lib_dir[128];

/* libFuzzer ends with exit(): leave no folder behind. */
static void cleanup(void)
{
    unlink(sock_path);
    rmdir(lib_dir);
    rmdir(tmp_dir);
}

static void start(void)
{
    /* ZF_FUZZ_LOG=1: every log line of the library and of zfd's handlers */
    zfd_log_level = getenv("ZF_FUZZ_LOG") ? ZF_LOG_DEBUG : ZF_LOG_ERROR;
    if (getenv("ZF_FUZZ_LOG"))
        zf_log_set(zf_log_stderr, NULL, ZF_LOG_DEBUG);
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/zf-fuzz-server-XXXXXX");
    if (!mkdtemp(tmp_dir))
        abort();
    snprintf(lib_dir, sizeof lib_dir, "%s/lib", tmp_dir);
    mkdir(lib_dir, 0755);
    snprintf(sock_path, sizeof sock_path, "%s/zfd.sock", tmp_dir);
    atexit(cleanup);
    daemon_.name = strdup("fuzz");
    daemon_.lib_paths = calloc(1, sizeof *daemon_.lib_paths);
    daemon_.lib_paths[0] = zfd_real_dir(lib_dir);
    daemon_.n_lib_paths = 1;
    daemon_.allow_descriptor_dir = true; /* its checks are fuzzed too */
    daemon_.max_instances = 4;
    daemon_.socket = sock_path;
    pthread_mutex_init(&daemon_.mu, NULL);
    zf_runtime_options ro = {.workers = 1, .worker = "fuzz"};
    zf_server_options so = {.path = sock_path, .request_timeout_ms = 200};
    if (zf_runtime_create(&ro, &daemon_.rt) != ZF_OK ||
        zf_server_start(&so, zfd_handle, &daemon_, &server) != ZF_OK)
        abort();
}

/* Read one frame (bounded in time); its text, or NULL at the end. */
static char *read_frame(int fd, size_t *len)
{
    unsigned char hdr[4];
    size_t got = 0;
    while (got < 4) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, 10000); /* libFuzzer's SIGALRM interrupts it */
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 1)
            abort(); /* the server neither answered nor closed: wedged */
        ssize_t k = recv(fd, hdr + got, 4 - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return NULL;
        got += (size_t)k;
    }
    size_t n = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
    if (n > ZF_FRAME_MAX)
        abort(); /* the server never sends that */
    char *buf = malloc(n + 1);
    for (got = 0; buf && got < n;) {
        ssize_t k = recv(fd, buf + got, n - got, MSG_WAITALL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            abort(); /* a truncated answer */
        got += (size_t)k;
    }
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static void check_answer(const char *text, size_t len)
{
    zf_config *tree = NULL;
    if (zf_json_parse(text, len, &tree) != ZF_OK) {
        fprintf(stderr, "an answer is not JSON (%s): %.300s\n", zf_last_error(), text);
        abort();
    }
    if (zf_config_kind_of(zf_config_get(tree, "ok")) != ZF_CFG_BOOL)
        abort();
    zf_config_free(tree);
}

static int connect_server(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, sock_path, sizeof sock_path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        abort();
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server)
        start();
    if (size > 1 << 20)
        return 0;
    int fd = connect_server();
    for (size_t off = 0; off < size;) {
        ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (w <= 0)
            break; /* the server closed (an oversized frame) */
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    for (int i = 0; i < 64; i++) {
        size_t len = 0;
        char *text = read_frame(fd, &len);
        if (!text)
            break;
        check_answer(text, len);
        free(text);
    }
    close(fd);
    /* still serving: hello on a new connection */
    fd = connect_server();
    static const char hello[] = "\0\0\0\x14{\"v\":1,\"op\":\"hello\"}";
    if (send(fd, hello, sizeof hello - 1, MSG_NOSIGNAL) != (ssize_t)sizeof hello - 1)
        abort();
    size_t len = 0;
    char *text = read_frame(fd, &len);
    if (!text || !strstr(text, "\"ok\":true"))
        abort();
    free(text);
    close(fd);
    zfd_destroy_all(&daemon_);
    return 0;
}
