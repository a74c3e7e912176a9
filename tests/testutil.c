#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *zt_build_dir(void)
{
    const char *d = getenv("ZF_BINARY_DIR");
    return d ? d : ".";
}

const char *zt_source_dir(void)
{
    const char *d = getenv("ZF_SOURCE_DIR");
    return d ? d : "..";
}

static char tmp_dir[256];

static void remove_tmp(void)
{
    if (!tmp_dir[0])
        return;
    DIR *d = opendir(tmp_dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') {
                snprintf(p, sizeof p, "%s/%s", tmp_dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(tmp_dir);
}

const char *zt_tmp_dir(void)
{
    if (!tmp_dir[0]) {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/zflow-test-XXXXXX");
        if (!mkdtemp(tmp_dir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(remove_tmp);
    }
    return tmp_dir;
}

const char *zt_tmp_path(const char *name)
{
    static char ring[8][512];
    static int k;
    char *p = ring[k++ % 8];
    snprintf(p, 512, "%s/%s", zt_tmp_dir(), name);
    return p;
}

zf_flow *zt_flow(const char *yaml, const char *const *extra, zf_diag *diag, zf_err *err)
{
    char nodes[512], seed[512], tmp[512];
    snprintf(nodes, sizeof nodes, "NODES=%s/tests/nodes", zt_build_dir());
    snprintf(seed, sizeof seed, "SEED=%s/examples/seed-pipeline", zt_build_dir());
    snprintf(tmp, sizeof tmp, "TMP=%s", zt_tmp_dir());
    const char *vars[32] = {nodes, seed, tmp};
    size_t n = 3;
    for (size_t i = 0; extra && extra[i] && n < 32; i++)
        vars[n++] = extra[i];
    zf_flow_options opt = {.vars = vars, .n_vars = n};
    zf_flow *f = NULL;
    zf_err e = zf_flow_load_string(yaml, strlen(yaml), "test.yaml", zt_tmp_dir(), &opt, diag, &f);
    if (err)
        *err = e;
    return e == ZF_OK ? f : NULL;
}

zf_instance *zt_start(zf_runtime *rt, const zf_flow *f, zf_diag *diag)
{
    zf_instance *inst = NULL;
    if (zf_instance_create(rt, f, NULL, diag, &inst) != ZF_OK) {
        fprintf(stderr, "  instance: %s\n", zf_last_error());
        return NULL;
    }
    if (zf_instance_start(inst) != ZF_OK) {
        fprintf(stderr, "  start: %s\n", zf_last_error());
        zf_instance_destroy(inst);
        return NULL;
    }
    return inst;
}

zf_instance *zt_launch(zf_runtime *rt, const char *yaml, const char *const *extra, zf_flow **fo)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = zt_flow(yaml, extra, d, NULL);
    zf_instance *inst = f ? zt_start(rt, f, d) : NULL;
    if (!inst) {
        char *t = zf_diag_format(d);
        fprintf(stderr, "%s", t ? t : "");
        free(t);
        zf_flow_free(f);
        f = NULL;
    }
    zf_diag_free(d);
    *fo = f;
    return inst;
}

zf_stop_report zt_finish(zf_instance *inst, zf_flow *f)
{
    zf_stop_report r;
    memset(&r, 0, sizeof r);
    /* ZF_OK for an instance: what the stop met is in r, returned */
    ZF_IGNORE(zf_instance_stop(inst, &r));
    zf_instance_destroy(inst);
    zf_flow_free(f);
    return r;
}

bool zt_wait_callbacks(zf_instance *inst, const char *id, uint64_t n, int timeout_ms)
{
    for (int t = 0; t < timeout_ms; t += 5) {
        zf_node_stats s;
        if (zt_node_stats(inst, id, &s, NULL, 0) && s.callbacks >= n)
            return true;
        zt_sleep_ms(5);
    }
    return false;
}

zt_outcome zt_run_until(zf_runtime *rt, const char *yaml, const char *const *extra, const char *id,
                        uint64_t n, int timeout_ms)
{
    zt_outcome run;
    memset(&run, 0, sizeof run);
    zf_flow *f;
    zf_instance *inst = zt_launch(rt, yaml, extra, &f);
    if (!inst)
        return run;
    run.started = true;
    run.reached = zt_wait_callbacks(inst, id, n, timeout_ms);
    if (!run.reached)
        fprintf(stderr, "  %s did not reach %llu callbacks\n", id, (unsigned long long)n);
    zt_node_stats(inst, id, &run.node, NULL, 0);
    run.report = zt_finish(inst, f);
    return run;
}

const char *zt_fmt(const char *fmt, ...)
{
    static char ring[8][1024];
    static int k;
    char *p = ring[k++ % 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, sizeof ring[0], fmt, ap);
    va_end(ap);
    return p;
}

/* Descriptor text, appended to a static buffer (too long: a bug, abort). */
typedef struct zt_text {
    char *buf;
    size_t len, cap;
} zt_text;

__attribute__((format(printf, 2, 3))) static void add(zt_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->cap - t->len) {
        fprintf(stderr, "testutil: a descriptor longer than %zu bytes\n", t->cap);
        abort();
    }
    t->len += (size_t)n;
}

static void add_node(zt_text *t, const zt_node *nd, bool in, bool out, bool typed)
{
    add(t, "  - id: %s\n    %s\n", nd->id, nd->code);
    if (nd->cfg)
        add(t, "    configuration: {%s}\n", nd->cfg);
    if (in)
        add(t, "    inputs: [%s]\n", typed ? "{id: in, type: bytes}" : "in");
    if (out)
        add(t, "    outputs: [%s]\n", typed ? "{id: out, type: bytes}" : "out");
}

const char *zt_chain(const char *name, const zt_node *nodes, size_t n, bool typed)
{
    static char buf[8192];
    zt_text t = {buf, 0, sizeof buf};
    add(&t, "name: %s\nsources:\n", name);
    add_node(&t, &nodes[0], false, true, typed);
    if (n > 2)
        add(&t, "operators:\n");
    for (size_t i = 1; i + 1 < n; i++)
        add_node(&t, &nodes[i], true, true, typed);
    add(&t, "sinks:\n");
    add_node(&t, &nodes[n - 1], true, false, typed);
    add(&t, "links:\n");
    for (size_t i = 0; i + 1 < n; i++) {
        add(&t, "  - {from: {node: %s, output: out}, to: {node: %s, input: in}", nodes[i].id,
            nodes[i + 1].id);
        if (nodes[i].queue)
            add(&t, ", queue: {%s}", nodes[i].queue);
        add(&t, "}\n");
    }
    return buf;
}

const char *zt_seed_flow(const zt_seed *s)
{
    static char buf[4096];
    zt_text t = {buf, 0, sizeof buf};
    add(&t,
        "name: %s\n"
        "%s\n"
        "sources:\n"
        "  - id: camera\n"
        "    library: \"{{ SEED }}/libzf_camera.so\"\n"
        "    period: 16.667ms\n"
        "    configuration: {frame_bytes: %u, reserve: %d}\n"
        "    outputs: [{id: frame, type: image/raw}]\n"
        "operators:\n"
        "  - id: detect\n"
        "    library: \"{{ SEED }}/libzf_detect.so\"\n"
        "    hang_timeout: %s\n"
        "    configuration: {%s}\n"
        "    inputs: [{id: frame, type: image/raw}]\n"
        "    outputs: [{id: detection, type: detection}]\n"
        "sinks:\n"
        "  - id: motor\n"
        "    library: \"{{ SEED }}/libzf_motor.so\"\n"
        "    inputs: [{id: detection, type: detection}]\n"
        "  - id: recorder\n"
        "    library: \"{{ SEED }}/libzf_recorder.so\"\n"
        "    inputs: [{id: frame, type: image/raw}]\n"
        "links:\n"
        "  - from: {node: camera, output: frame}\n"
        "    to: {node: detect, input: frame}\n"
        "    queue: {capacity: %d, policy: %s}\n"
        "  - from: {node: camera, output: frame}\n"
        "    to: {node: recorder, input: frame}\n"
        "    queue: {capacity: %d, policy: %s}\n"
        "  - from: {node: detect, output: detection}\n"
        "    to: {node: motor, input: detection}\n"
        "    queue: {capacity: 64, policy: block}\n",
        s->name, s->top, (unsigned)ZT_FRAME_BYTES, s->reserve, s->hang_timeout, s->detect_cfg,
        s->capacity, s->policy, s->capacity, s->policy);
    return buf;
}

bool zt_node_stats(zf_instance *inst, const char *id, zf_node_stats *out, char *reason,
                   size_t reason_len)
{
    zf_instance_stats *s = NULL;
    if (zf_instance_stats_get(inst, &s) != ZF_OK)
        return false;
    bool found = false;
    for (size_t i = 0; i < s->n_nodes && !found; i++)
        if (!strcmp(s->nodes[i].id, id)) {
            *out = s->nodes[i];
            if (reason)
                snprintf(reason, reason_len, "%s", s->nodes[i].reason ? s->nodes[i].reason : "");
            out->reason = NULL;
            out->id = NULL;
            found = true;
        }
    zf_instance_stats_free(s);
    return found;
}

bool zt_link_stats(zf_instance *inst, const char *to, zf_link_stats *out)
{
    zf_instance_stats *s = NULL;
    if (zf_instance_stats_get(inst, &s) != ZF_OK)
        return false;
    bool found = false;
    for (size_t i = 0; i < s->n_links && !found; i++)
        if (!strcmp(s->links[i].to, to)) {
            *out = s->links[i].stats;
            found = true;
        }
    zf_instance_stats_free(s);
    return found;
}

zf_pool_stats zt_pool_stats(zf_instance *inst)
{
    zf_pool_stats p = {0};
    zf_instance_stats *s = NULL;
    if (zf_instance_stats_get(inst, &s) == ZF_OK) {
        p = s->pool;
        zf_instance_stats_free(s);
    }
    return p;
}

void zt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

bool zt_wait_state(zf_instance *inst, const char *id, zf_node_state state, int timeout_ms)
{
    for (int t = 0; t <= timeout_ms; t += 10) {
        zf_node_stats ns;
        if (zt_node_stats(inst, id, &ns, NULL, 0) && ns.state == state)
            return true;
        zt_sleep_ms(10);
    }
    return false;
}

long long zt_summary(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[1024] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    char *p = strstr(buf, pat);
    return p ? atoll(p + strlen(pat)) : -1;
}

int zt_exec(char *const argv[], char **out, int timeout_s)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    time_t end = time(NULL) + timeout_s;
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        int r = poll(&p, 1, 200);
        if (r > 0) {
            if (len + 4096 > cap)
                buf = realloc(buf, cap *= 2);
            ssize_t k = read(fds[0], buf + len, cap - len - 1);
            if (k <= 0)
                break;
            len += (size_t)k;
        }
        if (time(NULL) > end) {
            kill(pid, SIGKILL);
            break;
        }
    }
    close(fds[0]);
    buf[len] = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

size_t zt_read_all(int fd, char *buf, size_t len)
{
    size_t n = 0;
    ssize_t r;
    while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    return n;
}

const char *zt_read_file(const char *path, char *buf, size_t len)
{
    buf[0] = 0;
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        zt_read_all(fd, buf, len);
        close(fd);
    }
    return buf;
}

uint64_t zt_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Entries of /proc/<pid or self>/<what>; -1 if unreadable. */
static int proc_entries(int pid, const char *what)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/%s", pid, what);
    else
        snprintf(path, sizeof path, "/proc/self/%s", what);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

int zt_open_fds(int pid)
{
    int n = proc_entries(pid, "fd");
    return n < 0 ? n : n - 1; /* the one opendir holds */
}

int zt_threads(void)
{
    return proc_entries(0, "task");
}

pid_t zt_zfd_spawn(char *const argv[], const char *log_path)
{
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log_path, "w", stderr);
        (void)f;
        /* zfd's crash handler, not the sanitizers', reports a node's SIGSEGV */
        setenv("ASAN_OPTIONS", "detect_leaks=0:allow_user_segv_handler=1", 1);
        const char *tsan = getenv("TSAN_OPTIONS");
        char topts[512];
        snprintf(topts, sizeof topts, "%s%sallow_user_segv_handler=1", tsan ? tsan : "",
                 tsan && *tsan ? ":" : "");
        setenv("TSAN_OPTIONS", topts, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

bool zt_zfd_wait_socket(const char *sock, int timeout_ms)
{
    for (int i = 0; i < timeout_ms / 10; i++) {
        zf_client *c = NULL;
        if (zf_client_connect(sock, &c) == ZF_OK) {
            zf_client_close(c);
            return true;
        }
        zt_sleep_ms(10);
    }
    return false;
}

void zt_zfd_stop(pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGTERM);
    int st;
    for (int i = 0; i < 3000 && waitpid(*pid, &st, WNOHANG) == 0; i++)
        zt_sleep_ms(10);
    kill(*pid, SIGKILL); /* if it did not exit: it is ours */
    waitpid(*pid, &st, 0);
    *pid = 0;
}

int zt_zfctl(char **out, const char *sock, const char *a0, ...)
{
    char bin[600];
    snprintf(bin, sizeof bin, "%s/apps/zfctl/zfctl", zt_build_dir());
    char *argv[40] = {bin};
    int n = 1;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 36; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n++] = "--socket";
    argv[n++] = (char *)sock;
    argv[n] = NULL;
    return zt_exec(argv, out, 60);
}

const char *zt_zfd_deploy(const char *sock, const char *name, const char *yaml)
{
    static char uuid[64];
    const char *path = zt_tmp_path(zt_fmt("%s.yaml", name));
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fputs(yaml, f);
    fclose(f);
    char *out = NULL;
    int rc = zt_zfctl(&out, sock, "deploy", path, "--name", name, NULL);
    if (rc != 0) {
        fprintf(stderr, "  deploy: %s\n", out);
        free(out);
        return NULL;
    }
    snprintf(uuid, sizeof uuid, "%.36s", out);
    free(out);
    return uuid;
}

const char *zt_chatty_flow(const char *name, const char *period, const char *cfg)
{
    return zt_fmt("name: %s\n"
                  "sources:\n"
                  "  - id: chatty\n"
                  "    library: \"%s/tests/nodes/libt_chatty.so\"\n"
                  "    period: %s\n"
                  "    configuration: {%s}\n"
                  "    outputs: [out]\n"
                  "sinks:\n"
                  "  - id: sink\n"
                  "    library: \"%s/tests/nodes/libt_count.so\"\n"
                  "    inputs: [in]\n"
                  "links:\n"
                  "  - from: {node: chatty, output: out}\n"
                  "    to: {node: sink, input: in}\n",
                  name, zt_build_dir(), period, cfg, zt_build_dir());
}
