/* zfd and zfctl: real daemon processes, real sockets. */
#include "harness.h"
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static char zfd_bin[512], zfctl_bin[512], sock[512], seed_flow[512], seed_libs[512],
    nodes_libs[512], log_path[512];
static pid_t daemon_pid;

static void paths(void)
{
    snprintf(zfd_bin, sizeof zfd_bin, "%s/apps/zfd/zfd", zt_build_dir());
    snprintf(zfctl_bin, sizeof zfctl_bin, "%s/apps/zfctl/zfctl", zt_build_dir());
    snprintf(sock, sizeof sock, "%s", zt_tmp_path("zfd.sock"));
    snprintf(seed_flow, sizeof seed_flow, "%s/examples/seed-pipeline/flow.yaml", zt_source_dir());
    snprintf(seed_libs, sizeof seed_libs, "%s/examples/seed-pipeline", zt_build_dir());
    snprintf(nodes_libs, sizeof nodes_libs, "%s/tests/nodes", zt_build_dir());
    snprintf(log_path, sizeof log_path, "%s", zt_tmp_path("zfd.log"));
}

static bool socket_up(void)
{
    zf_client *c = NULL;
    if (zf_client_connect(sock, &c) != ZF_OK)
        return false;
    zf_client_close(c);
    return true;
}

static int stop_daemon(void);

/* A case that fails leaves its daemon running: never let one outlive the
 * test (ctest would wait on its open output). */
static void kill_daemon(void)
{
    if (daemon_pid > 0) {
        kill(daemon_pid, SIGKILL);
        waitpid(daemon_pid, NULL, 0);
        daemon_pid = 0;
    }
}

/* Start zfd with --lib-path for the seed pipeline and the test nodes. */
static void start_daemon(void)
{
    static bool registered;
    if (!registered) {
        atexit(kill_daemon);
        registered = true;
    }
    kill_daemon(); /* left by a failed case */
    paths();
    unlink(sock);
    daemon_pid = fork();
    if (daemon_pid == 0) {
        FILE *f = freopen(log_path, "w", stderr);
        (void)f;
        /* Keep ASan's quarantine from looking like growth in the RSS test. */
        setenv("ASAN_OPTIONS", "quarantine_size_mb=1:detect_leaks=0", 1);
        execl(zfd_bin, zfd_bin, "--name", "edge_1", "--socket", sock, "--lib-path", seed_libs,
              "--lib-path", nodes_libs, "--workers", "2", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && !socket_up(); i++)
        zt_sleep_ms(10);
}

static int stop_daemon(void)
{
    if (daemon_pid <= 0)
        return -1;
    kill(daemon_pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 3000; i++) {
        if (waitpid(daemon_pid, &status, WNOHANG) == daemon_pid) {
            daemon_pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        zt_sleep_ms(10);
    }
    kill(daemon_pid, SIGKILL);
    waitpid(daemon_pid, &status, 0);
    daemon_pid = 0;
    return -2;
}

/* zfctl ARGS... (NULL-terminated), with --socket added; output in *out. */
static int ctl(char **out, const char *a0, ...)
{
    char *argv[32] = {zfctl_bin};
    int n = 1;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 28; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n++] = "--socket";
    argv[n++] = sock;
    argv[n] = NULL;
    return zt_exec(argv, out, 60);
}

/* One request through the library; the parsed answer. */
static zf_config *request(zf_op op, const char *id)
{
    zf_client *c = NULL;
    if (zf_client_connect(sock, &c) != ZF_OK)
        return NULL;
    zf_request r = {.version = ZF_PROTOCOL_VERSION, .op = op, .id = id};
    zf_config *resp = NULL;
    zf_client_call(c, &r, &resp, 30000);
    zf_client_close(c);
    return resp;
}

static long long node_callbacks(const char *id, const char *node)
{
    zf_config *r = request(ZF_OP_STATUS, id);
    const zf_config *nodes = zf_config_get(r, "result.nodes");
    long long v = -1;
    for (size_t i = 0; i < zf_config_len(nodes); i++) {
        const zf_config *n = zf_config_at(nodes, i);
        const char *nid = NULL;
        zf_config_string(n, "id", "", &nid);
        if (!strcmp(nid, node)) {
            int64_t cb = 0;
            zf_config_int(n, "callbacks", 0, &cb);
            v = cb;
        }
    }
    zf_config_free(r);
    return v;
}

static char *deploy_seed(const char *name, bool start)
{
    char libdir[600];
    snprintf(libdir, sizeof libdir, "LIB_DIR=%s", seed_libs);
    char *out = NULL;
    int rc = start ? ctl(&out, "deploy", seed_flow, "--name", name, "--var", libdir, "--var",
                         "FRAME_BYTES=64KiB", NULL)
                   : ctl(&out, "deploy", seed_flow, "--name", name, "--var", libdir, "--var",
                         "FRAME_BYTES=64KiB", "--no-start", NULL);
    if (rc != 0) {
        fprintf(stderr, "  deploy failed (%d): %s\n", rc, out);
        free(out);
        return NULL;
    }
    out[strcspn(out, "\n")] = 0;
    return out;
}

ZT_CASE(five_instances_listed_destroyed_suspended_resumed)
{
    start_daemon();
    ZT_CHECK(socket_up());
    char *ids[5];
    char name[16];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "cam%d", i);
        ids[i] = deploy_seed(name, i != 4);
        ZT_CHECK(ids[i]);
        ZT_EQ(strlen(ids[i]), 36);
    }
    char *out;
    ZT_EQ(ctl(&out, "ls", NULL), 0);
    ZT_CONTAINS(out, "UUID");
    ZT_CONTAINS(out, "WORKERS");
    for (int i = 0; i < 5; i++)
        ZT_CONTAINS(out, ids[i]);
    ZT_CONTAINS(out, "cam4                  CREATED");
    ZT_CONTAINS(out, "cam0                  RUNNING");
    ZT_CONTAINS(out, "edge_1");
    free(out);

    ZT_EQ(ctl(&out, "destroy", "cam3", NULL), 0);
    ZT_CONTAINS(out, "nothing leaked");
    free(out);
    zf_config *ls = request(ZF_OP_LIST, NULL);
    ZT_EQ(zf_config_len(zf_config_get(ls, "result.instances")), 4);
    zf_config_free(ls);

    /* suspend: the sink count stops; resume: it goes on; nothing lost. */
    zt_sleep_ms(300);
    ZT_EQ(ctl(&out, "suspend", ids[1], NULL), 0);
    free(out);
    zt_sleep_ms(200);
    long long a = node_callbacks(ids[1], "motor");
    zt_sleep_ms(500);
    long long b = node_callbacks(ids[1], "motor");
    ZT_CHECK(a > 0);
    ZT_EQ(a, b);
    ZT_EQ(ctl(&out, "resume", ids[1], NULL), 0);
    free(out);
    zt_sleep_ms(500);
    ZT_CHECK(node_callbacks(ids[1], "motor") > b + 10);
    ZT_EQ(ctl(&out, "resume", ids[1], NULL), 1); /* RUNNING: not resumable */
    ZT_CONTAINS(out, "only a SUSPENDED instance can be resumed");
    free(out);
    ZT_EQ(ctl(&out, "destroy", ids[1], "-o", "json", NULL), 0);
    ZT_CONTAINS(out, "\"dropped\":0");
    ZT_CONTAINS(out, "\"bytes_leaked\":0");
    free(out);

    /* IDs: unique prefix, name, unknown, ambiguous. */
    char prefix[9];
    snprintf(prefix, sizeof prefix, "%.8s", ids[0]);
    ZT_EQ(ctl(&out, "status", prefix, NULL), 0);
    ZT_CONTAINS(out, "cam0");
    ZT_CONTAINS(out, "detect.frame");
    free(out);
    ZT_EQ(ctl(&out, "status", "no-such-instance", NULL), 1);
    ZT_CONTAINS(out, "no instance matches 'no-such-instance'");
    free(out);
    ZT_EQ(ctl(&out, "status", "", NULL), 1); /* "" prefixes every UUID */
    free(out);

    ZT_EQ(ctl(&out, "start", "cam4", NULL), 0);
    ZT_CONTAINS(out, "RUNNING");
    free(out);
    ZT_EQ(ctl(&out, "workers", NULL), 0);
    ZT_CONTAINS(out, "edge_1");
    free(out);
    for (int i = 0; i < 5; i++)
        free(ids[i]);
    ZT_EQ(stop_daemon(), 0);
}

ZT_CASE(library_outside_lib_path_is_refused)
{
    start_daemon();
    /* The seed flow with the libraries taken from somewhere else. */
    char *out;
    ZT_EQ(ctl(&out, "deploy", seed_flow, "--var", "LIB_DIR=/usr/lib/x86_64-linux-gnu", NULL), 1);
    ZT_CONTAINS(out, "node 'camera': /usr/lib/x86_64-linux-gnu/libzf_camera.so does not exist");
    ZT_CONTAINS(out, "This daemon loads node code only from");
    ZT_CONTAINS(out, "ZF_EPERM");
    free(out);
    /* A copy of a real node library, outside the allowed folders. */
    char cmd[2048], copy[600], libdir[700];
    snprintf(copy, sizeof copy, "%s", zt_tmp_path("libzf_camera.so"));
    snprintf(cmd, sizeof cmd, "cp %s/libzf_camera.so %s", seed_libs, copy);
    ZT_EQ(system(cmd), 0);
    snprintf(libdir, sizeof libdir, "LIB_DIR=%s", zt_tmp_dir());
    ZT_EQ(ctl(&out, "deploy", seed_flow, "--var", libdir, NULL), 1);
    ZT_CONTAINS(out, copy);
    ZT_CONTAINS(out, "is outside the daemon's --lib-path folders");
    free(out);
    ZT_EQ(stop_daemon(), 0);
}

ZT_CASE(node_files_outside_lib_path_are_not_read)
{
    start_daemon();
    FILE *f = fopen(zt_tmp_path("secret.txt"), "w");
    fprintf(f, "line one\nsecret-token-AAAA\n");
    fclose(f);
    f = fopen(zt_tmp_path("incl.yaml"), "w");
    fprintf(f, "name: incl\noperators:\n  - id: op\n    descriptor: %s\n",
            zt_tmp_path("secret.txt"));
    fclose(f);
    char *out;
    ZT_EQ(ctl(&out, "deploy", zt_tmp_path("incl.yaml"), NULL), 1);
    ZT_CONTAINS(out, "outside the folders node files may be read from");
    ZT_CHECK(!strstr(out, "secret-token")); /* never read, never echoed */
    free(out);
    ZT_EQ(stop_daemon(), 0);
}

ZT_CASE(invalid_descriptor_is_reported_with_its_place)
{
    start_daemon();
    FILE *f = fopen(zt_tmp_path("bad.yaml"), "w");
    fprintf(f, "name: bad\nsources:\n  - id: a\n    library: x.so\n    ouputs: [o]\n");
    fclose(f);
    char *out;
    ZT_EQ(ctl(&out, "deploy", zt_tmp_path("bad.yaml"), NULL), 3);
    ZT_CONTAINS(out, "bad.yaml:5:5");
    free(out);
    ZT_EQ(stop_daemon(), 0);
}

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%.100s", sock);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    (void)w;
}

/* Read one response frame's text (or "" on close), with a bound. */
static void read_reply(int fd, char *buf, size_t len)
{
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    unsigned char hdr[4];
    buf[0] = 0;
    if (recv(fd, hdr, 4, MSG_WAITALL) != 4)
        return;
    size_t n = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
    if (n >= len)
        n = len - 1;
    ssize_t k = recv(fd, buf, n, MSG_WAITALL);
    buf[k > 0 ? k : 0] = 0;
}

static void frame(int fd, const char *json)
{
    size_t n = strlen(json);
    unsigned char hdr[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    send_all(fd, hdr, 4);
    send_all(fd, json, n);
}

static bool hello_ok(void)
{
    zf_config *r = request(ZF_OP_HELLO, NULL);
    bool ok = false;
    zf_config_bool(r, "ok", false, &ok);
    zf_config_free(r);
    return ok;
}

ZT_CASE(hostile_clients_never_crash_or_wedge_the_daemon)
{
    start_daemon();
    char reply[8192];
    int fd;
    /* Garbage framed as a request. */
    fd = raw_connect();
    frame(fd, "this is not json {{{");
    read_reply(fd, reply, sizeof reply);
    ZT_CONTAINS(reply, "\"ok\":false");
    ZT_CONTAINS(reply, "ZF_EPARSE");
    /* The same connection still works after a bad request. */
    frame(fd, "{\"v\":1,\"op\":\"hello\"}");
    read_reply(fd, reply, sizeof reply);
    ZT_CONTAINS(reply, "\"ok\":true");
    /* Well-formed JSON, wrong requests. */
    const char *bad[] = {"[]",
                         "{\"op\":\"list\"}",
                         "{\"v\":99,\"op\":\"list\"}",
                         "{\"v\":1,\"op\":\"explode\"}",
                         "{\"v\":1,\"op\":\"status\"}",
                         "{\"v\":1,\"op\":\"deploy\",\"descriptor\":1,\"path\":\"/x\"}",
                         "{\"v\":1,\"op\":\"list\",\"extra\":true}",
                         "{\"v\":1,\"op\":\"deploy\",\"descriptor\":\"x\",\"path\":\"rel\"}"};
    const char *expect[] = {"a request is a JSON object",
                            "field 'v'",
                            "newer than",
                            "unknown op 'explode'",
                            "field 'id' is missing",
                            "field 'descriptor' must be a string",
                            "unknown field 'extra'",
                            "absolute path"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        frame(fd, bad[i]);
        read_reply(fd, reply, sizeof reply);
        ZT_CONTAINS(reply, expect[i]);
    }
    close(fd);
    /* A huge length: refused, connection closed, daemon fine. */
    fd = raw_connect();
    unsigned char huge[4] = {0x7f, 0xff, 0xff, 0xff};
    send_all(fd, huge, 4);
    read_reply(fd, reply, sizeof reply);
    ZT_CONTAINS(reply, "exceeds the limit");
    close(fd);
    /* Half a header, then close. */
    fd = raw_connect();
    send_all(fd, "\0\0", 2);
    close(fd);
    /* Half a message, then close mid-request. */
    fd = raw_connect();
    unsigned char hdr[4] = {0, 0, 1, 0};
    send_all(fd, hdr, 4);
    send_all(fd, "{\"v\":1,", 7);
    close(fd);
    /* Binary noise. */
    fd = raw_connect();
    unsigned char noise[256];
    for (int i = 0; i < 256; i++)
        noise[i] = (unsigned char)(i * 37 + 11);
    noise[0] = 0;
    noise[1] = 0;
    noise[2] = 0;
    noise[3] = 200;
    send_all(fd, noise, sizeof noise);
    read_reply(fd, reply, sizeof reply);
    ZT_CONTAINS(reply, "\"ok\":false");
    close(fd);
    /* A slow client holding a half request does not block the others. */
    int slow = raw_connect();
    send_all(slow, hdr, 4);
    ZT_CHECK(hello_ok());
    char *out;
    ZT_EQ(ctl(&out, "ls", NULL), 0);
    free(out);
    close(slow);
    /* Many connections at once, then gone. */
    int many[40];
    for (int i = 0; i < 40; i++)
        many[i] = raw_connect();
    for (int i = 0; i < 40; i++)
        if (many[i] >= 0)
            close(many[i]);
    ZT_CHECK(hello_ok());
    /* The daemon is alive and logged what it refused. */
    ZT_EQ(kill(daemon_pid, 0), 0);
    ZT_EQ(stop_daemon(), 0);
    char logbuf[65536];
    zt_read_file(log_path, logbuf, sizeof logbuf);
    ZT_CONTAINS(logbuf, "malformed request from pid");
    ZT_CONTAINS(logbuf, "truncated frame");
}

ZT_CASE(socket_is_0660_and_other_users_are_refused)
{
    start_daemon();
    struct stat st;
    ZT_EQ(stat(sock, &st), 0);
    ZT_EQ(st.st_mode & 0777, 0660);
    if (geteuid() != 0) {
        printf("  (not root: cannot test another user's connection)\n");
        ZT_EQ(stop_daemon(), 0);
        return;
    }
    /* The socket's folder must be reachable for the kernel to even check
     * the socket's own mode: open the temp folder to others. */
    chmod(zt_tmp_dir(), 0755);
    pid_t p = fork();
    if (p == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        zf_client *c = NULL;
        zf_err e = zf_client_connect(sock, &c);
        _exit(e == ZF_EPERM ? 0 : 1);
    }
    int status = 0;
    waitpid(p, &status, 0);
    ZT_CHECK(WIFEXITED(status));
    ZT_EQ(WEXITSTATUS(status), 0);
    ZT_CHECK(hello_ok());
    ZT_EQ(stop_daemon(), 0);
}

static int daemon_fds(void)
{
    return zt_open_fds(daemon_pid);
}

static uint64_t daemon_rss(void)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", daemon_pid);
    FILE *f = fopen(path, "r");
    unsigned long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

ZT_CASE(two_hundred_deploy_destroy_cycles_stay_flat)
{
    start_daemon();
    const char *flow = zt_tmp_path("small.yaml");
    FILE *f = fopen(flow, "w");
    fprintf(f,
            "name: small\n"
            "sources:\n"
            "  - id: gen\n"
            "    library: %s/libt_gen.so\n"
            "    period: 1ms\n"
            "    configuration: {size: 4096}\n"
            "    outputs: [out]\n"
            "sinks:\n"
            "  - id: sink\n"
            "    library: %s/libt_count.so\n"
            "    inputs: [in]\n"
            "links:\n"
            "  - {from: {node: gen, output: out}, to: {node: sink, input: in}}\n",
            nodes_libs, nodes_libs);
    fclose(f);
    char text[4096];
    f = fopen(flow, "r");
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    uint64_t rss_warm = 0;
    int fds_warm = 0;
    for (int i = 0; i < 200; i++) {
        zf_client *c = NULL;
        ZT_OK(zf_client_connect(sock, &c));
        zf_request r = {.version = ZF_PROTOCOL_VERSION,
                        .op = ZF_OP_DEPLOY,
                        .descriptor = text,
                        .path = flow,
                        .start = true};
        zf_config *resp = NULL;
        ZT_OK(zf_client_call(c, &r, &resp, 30000));
        const char *uuid = NULL;
        zf_config_string(resp, "result.uuid", NULL, &uuid);
        ZT_CHECK(uuid);
        char id[40];
        snprintf(id, sizeof id, "%s", uuid);
        zf_config_free(resp);
        zf_request d = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_DESTROY, .id = id};
        ZT_OK(zf_client_call(c, &d, &resp, 30000));
        int64_t after = -1, leaked = -1;
        zf_config_int(resp, "result.report.pool_bytes_after", -1, &after);
        zf_config_int(resp, "result.report.bytes_leaked", -1, &leaked);
        zf_config_free(resp);
        zf_client_close(c);
        ZT_EQ(after, 0); /* the pool is back to 0 after each destroy */
        ZT_EQ(leaked, 0);
        if (i == 19) {
            rss_warm = daemon_rss();
            fds_warm = daemon_fds();
        }
    }
    zt_sleep_ms(100);
    uint64_t rss_end = daemon_rss();
    int fds_end = daemon_fds();
    printf("  daemon RSS %.1f MiB after 20 cycles, %.1f MiB after 200; fds %d -> %d\n",
           (double)rss_warm / 1048576, (double)rss_end / 1048576, fds_warm, fds_end);
    if (ZT_RSS_MEANINGFUL)
        ZT_CHECK(rss_end <= rss_warm + rss_warm / 10);
    ZT_CHECK(fds_end <= fds_warm + fds_warm / 10 + 1);
    ZT_EQ(stop_daemon(), 0);
}

ZT_CASE(sigterm_destroys_every_instance_gracefully)
{
    start_daemon();
    char *ids[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "run%d", i);
        ids[i] = deploy_seed(name, true);
        ZT_CHECK(ids[i]);
    }
    zt_sleep_ms(500);
    ZT_EQ(stop_daemon(), 0);
    char logbuf[65536];
    zt_read_file(log_path, logbuf, sizeof logbuf);
    ZT_CONTAINS(logbuf, "SIGTERM: destroying 3 instance(s)");
    for (int i = 0; i < 3; i++) {
        char want[128];
        snprintf(want, sizeof want, "destroyed %s (run%d)", ids[i], i);
        ZT_CONTAINS(logbuf, want);
        free(ids[i]);
    }
    ZT_CONTAINS(logbuf, "0 bytes leaked");
    ZT_CHECK(!strstr(logbuf, "LEAKED"));
    struct stat st;
    ZT_CHECK(stat(sock, &st) != 0); /* the socket file is gone */
}

ZT_CASE(daemon_not_running_is_a_clear_message)
{
    paths();
    char *out;
    ZT_EQ(ctl(&out, "ls", NULL), 4);
    ZT_CONTAINS(out, "no zfd is listening on");
    ZT_CONTAINS(out, "zfd --name NAME");
    free(out);
}

/* Zenoh-Flow's spellings behave as their zflow equivalents; a name (or a
 * descriptor's instance `id`) a live instance has is refused with its UUID. */
ZT_CASE(zenoh_flow_spellings_and_unique_names)
{
    start_daemon();
    ZT_CHECK(socket_up());
    char vars[700];
    snprintf(vars, sizeof vars, "LIB_DIR=%s,FRAME_BYTES=64KiB", seed_libs);
    char *out, *id;
    /* instance create = deploy --no-start, with --vars K=V,K=V */
    ZT_EQ(ctl(&id, "instance", "create", seed_flow, "--vars", vars, "--name", "zf1", NULL), 0);
    id[strcspn(id, "\n")] = 0;
    ZT_EQ(strlen(id), 36);
    ZT_EQ(ctl(&out, "instance", "list", NULL), 0);
    ZT_CONTAINS(out, id);
    ZT_CONTAINS(out, "zf1                   CREATED");
    free(out);
    /* the same name again: refused, naming the live one */
    ZT_EQ(ctl(&out, "deploy", seed_flow, "--vars", vars, "--name", "zf1", NULL), 1);
    ZT_CONTAINS(out, "an instance named 'zf1' already exists");
    ZT_CONTAINS(out, id);
    ZT_CONTAINS(out, "ZF_EEXIST");
    free(out);
    zf_config *ls = request(ZF_OP_LIST, NULL);
    ZT_EQ(zf_config_len(zf_config_get(ls, "result.instances")), 1);
    zf_config_free(ls);

    ZT_EQ(ctl(&out, "instance", "start", "zf1", NULL), 0);
    ZT_CONTAINS(out, "RUNNING");
    free(out);
    ZT_EQ(ctl(&out, "instance", "status", "zf1", NULL), 0);
    ZT_CONTAINS(out, id);
    ZT_CONTAINS(out, "camera");
    free(out);
    ZT_EQ(ctl(&out, "instance", "abort", "zf1", NULL), 0);
    ZT_CONTAINS(out, "SUSPENDED");
    free(out);
    ZT_EQ(ctl(&out, "runtime", "list", NULL), 0);
    ZT_CONTAINS(out, "edge_1");
    free(out);
    ZT_EQ(ctl(&out, "runtime", "status", "edge_1", NULL), 0);
    ZT_CONTAINS(out, "edge_1");
    free(out);
    ZT_EQ(ctl(&out, "runtime", "status", "cloud_9", NULL), 1);
    ZT_CONTAINS(out, "no worker named 'cloud_9'");
    free(out);
    ZT_EQ(ctl(&out, "instance", "delete", "zf1", NULL), 0);
    ZT_CONTAINS(out, "nothing leaked");
    free(out);
    ZT_EQ(ctl(&out, "instance", "remove", "zf1", NULL), 2);
    ZT_CONTAINS(out, "instance delete");
    free(out);
    /* the name is free again; `instance create --start` starts */
    ZT_EQ(ctl(&out, "instance", "create", seed_flow, "--vars", vars, "--name", "zf1", "--start",
              NULL),
          0);
    free(out);
    ZT_EQ(ctl(&out, "ls", NULL), 0);
    ZT_CONTAINS(out, "zf1                   RUNNING");
    free(out);
    ZT_EQ(ctl(&out, "destroy", "zf1", NULL), 0);
    free(out);
    free(id);

    /* 0.6's top-level `id`: the instance's UUID; twice is refused */
    const char *flow = zt_tmp_path("with-id.yaml");
    FILE *f = fopen(flow, "w");
    fprintf(f,
            "flow: with-id\n"
            "id: 5d1f0c2a-8b7e-4f3a-9c6d-2e1b0a9f8e7d\n"
            "sources: [{id: gen, library: %s/libt_gen.so, period: 10ms, outputs: [out]}]\n"
            "sinks: [{id: sink, library: %s/libt_count.so, inputs: [in]}]\n"
            "links: [{from: {node: gen, output: out}, to: {node: sink, input: in}}]\n",
            nodes_libs, nodes_libs);
    fclose(f);
    ZT_EQ(ctl(&out, "deploy", flow, NULL), 0);
    ZT_CONTAINS(out, "5d1f0c2a-8b7e-4f3a-9c6d-2e1b0a9f8e7d");
    free(out);
    ZT_EQ(ctl(&out, "deploy", flow, "--name", "other", NULL), 1);
    ZT_CONTAINS(out, "instance id 5d1f0c2a-8b7e-4f3a-9c6d-2e1b0a9f8e7d is taken");
    free(out);
    ZT_EQ(ctl(&out, "destroy", "5d1f0c2a", NULL), 0);
    ZT_CONTAINS(out, "nothing leaked");
    free(out);
    ZT_EQ(stop_daemon(), 0);
}

ZT_MAIN(ZT_ENTRY(five_instances_listed_destroyed_suspended_resumed),
        ZT_ENTRY(library_outside_lib_path_is_refused),
        ZT_ENTRY(node_files_outside_lib_path_are_not_read),
        ZT_ENTRY(invalid_descriptor_is_reported_with_its_place),
        ZT_ENTRY(hostile_clients_never_crash_or_wedge_the_daemon),
        ZT_ENTRY(socket_is_0660_and_other_users_are_refused),
        ZT_ENTRY(two_hundred_deploy_destroy_cycles_stay_flat),
        ZT_ENTRY(sigterm_destroys_every_instance_gracefully),
        ZT_ENTRY(daemon_not_running_is_a_clear_message),
        ZT_ENTRY(zenoh_flow_spellings_and_unique_names))
