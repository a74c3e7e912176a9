/* zfd: the zflow daemon.
 *
 *   zfd --name NAME [--socket PATH] [--lib-path DIR]... [--config FILE]
 *       [--workers N] [--log LEVEL] [--allow-descriptor-dir]
 *
 * Foreground; logs to stderr. SIGTERM / SIGINT destroy every instance
 * gracefully (each stop report logged), then exit 0. */
#include "zfd.h"

#include "args.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a node that crashes or exits takes zfd with it: say so ---- */

static atomic_bool orderly_exit; /* main is returning, or refused to start */

/* Append s to buf (async-signal-safe). */
static size_t put(char *buf, size_t len, size_t at, const char *s)
{
    while (*s && at + 1 < len)
        buf[at++] = *s++;
    return at;
}

static size_t put_num(char *buf, size_t len, size_t at, long v)
{
    char d[24];
    size_t k = 0;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do
        d[k++] = (char)('0' + u % 10);
    while ((u /= 10) && k < sizeof d);
    if (v < 0 && at + 1 < len)
        buf[at++] = '-';
    while (k && at + 1 < len)
        buf[at++] = d[--k];
    return at;
}

/* One line on stderr with write(2) only: the name of the node whose code
 * runs on this thread (zf_crash_context), what happened, what follows. */
static void last_words(const char *what, long num, const char *then)
{
    char line[768], ctx[400];
    size_t k = put(line, sizeof line, 0, "zfd: ");
    size_t from = k; /* the node's log gets the line from here */
    k = put(line, sizeof line, k, what);
    if (num >= 0) {
        k = put(line, sizeof line, k, " (");
        k = put_num(line, sizeof line, k, num);
        k = put(line, sizeof line, k, ")");
    }
    bool in_node = zf_crash_context(ctx, sizeof ctx) > 0;
    k = put(line, sizeof line, k, " in ");
    k = put(line, sizeof line, k, in_node ? ctx : "zfd's own code");
    k = put(line, sizeof line, k, " (pid ");
    k = put_num(line, sizeof line, k, (long)getpid());
    k = put(line, sizeof line, k, "); ");
    k = put(line, sizeof line, k, then);
    k = put(line, sizeof line, k, "\n");
    ssize_t w = write(STDERR_FILENO, line, k);
    (void)w;
    if (in_node) /* and into that node's log file */
        zfd_logs_crash(ctx, line + from, k - from - 1);
}

static void on_fatal(int sig)
{
    const char *name = sig == SIGSEGV   ? "fatal signal SIGSEGV"
                       : sig == SIGBUS  ? "fatal signal SIGBUS"
                       : sig == SIGILL  ? "fatal signal SIGILL"
                       : sig == SIGFPE  ? "fatal signal SIGFPE"
                       : sig == SIGABRT ? "fatal signal SIGABRT"
                                        : "fatal signal";
    last_words(name, sig, "zfd dies with it (every instance is lost; its supervisor restarts it)");
    /* SA_RESETHAND: the default action now, with the signal's own status. */
    raise(sig);
}

/* exit() called anywhere but main's own return (a node's code): never
 * exit 0 because of it, so a supervisor sees a failure and restarts zfd. */
static void on_exit_unplanned(void)
{
    if (atomic_load(&orderly_exit))
        return;
    last_words("exit() called", -1,
               "zfd exits with status 70 (EX_SOFTWARE), not the status asked for");
    _exit(70);
}

static void install_crash_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaction(fatal[i], &sa, NULL);
    atexit(on_exit_unplanned);
}

static void help(FILE *out)
{
    fprintf(out,
            "usage: zfd --name NAME [options]\n"
            "\n"
            "The zflow daemon: hosts dataflow instances that 'zfctl deploy' sends it.\n"
            "\n"
            "  --name NAME            this worker's name (as in descriptors' mapping)\n"
            "  --socket PATH          control socket (default: $ZF_SOCKET, else\n"
            "                         $XDG_RUNTIME_DIR/zflow/zfd.sock, else /run/zflow/zfd.sock)\n"
            "  --lib-path DIR         load node code (libraries, Python files) only from DIR;\n"
            "                         repeatable\n"
            "  --allow-descriptor-dir also allow node code from the deployed descriptor's folder\n"
            "                         (one the daemon can read and only root or its user can\n"
            "                         change)\n"
            "  --allow-writable-lib-path  accept code folders and files that users other than\n"
            "                         root and the daemon's could change (logged; unsafe)\n"
            "  --isolate              run every node of every instance in a process of its own\n"
            "                         (isolation: process; a crash takes only that node)\n"
            "  --config FILE          YAML: name, socket, lib_paths, workers, log,\n"
            "                         allow_descriptor_dir (options given here win)\n"
            "  --workers N            worker threads (default: one per CPU)\n"
            "  --max-instances N      instances hosted at once (default 256)\n"
            "  --domain N             join the cluster on DDS domain N (default: $ZF_DOMAIN;\n"
            "                         none: a daemon of its own)\n"
            "  --dds-config XML|file://PATH  Cyclone DDS configuration (default:\n"
            "                         $ZF_DDS_CONFIG, else loopback; docs/cluster.md)\n"
            "  --lease D              liveliness lease (default 1s): a worker killed is seen\n"
            "                         lost after it\n"
            "  --cluster-key FILE     sign and check every control message (32 bytes or\n"
            "                         64 hex digits)\n"
            "  --log LEVEL            error, warn, info (default), debug, trace\n"
            "  --http ADDR            serve /metrics (Prometheus) and a live page on ADDR\n"
            "                         (PORT or HOST:PORT; no host: 127.0.0.1; off by default)\n"
            "  --state-dir DIR        logs and state (default /var/lib/zflow for root, else\n"
            "                         $XDG_STATE_HOME/zflow or ~/.local/state/zflow)\n"
            "  --node-log LEVEL       the most verbose level kept in instances' logs\n"
            "                         (default debug; zfctl logs reads them)\n"
            "  --log-max-size SIZE    rotate each node's log file past SIZE (default 1MiB;\n"
            "                         one older file is kept)\n"
            "  --log-ring LINES       the newest log lines kept in memory for followers\n"
            "                         (zfctl logs --follow; default 4096, 16 to 1000000)\n"
            "  --version              print the version\n");
}

typedef struct opts {
    const char *name, *socket, *config, *state_dir, *http;
    zf_log_level node_log;
    uint64_t log_max;
    size_t log_ring;
    const char **lib_paths;
    size_t n_lib_paths;
    unsigned workers;
    size_t max_instances;
    bool allow_descriptor_dir;
    bool allow_writable;
    bool isolate;
    bool log_set;
} opts;

static _Noreturn void die(const char *fmt, ...) ZF_PRINTF(1, 2);
static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "zfd: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    atomic_store(&orderly_exit, true);
    exit(2);
}

/* The option NAME at argv[*i] (args.h), or exit when its value is missing. */
static bool opt(int argc, char **argv, int *i, const char *name, const char **v)
{
    zf_arg r = zf_arg_value(argc, argv, i, name, v);
    if (r == ZF_ARG_MISSING)
        die("%s needs a value (see zfd --help)", name);
    return r == ZF_ARG_VALUE;
}

/* A whole decimal number from lo to hi, or exit naming the option. */
static long number(const char *name, const char *v, long lo, long hi)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        die("%s takes a number from %ld to %ld, got '%s'", name, lo, hi, v);
    return x;
}

static void add_lib_path(opts *o, const char *dir)
{
    if (o->n_lib_paths == ZFD_MAX_LIB_PATHS)
        die("at most %d --lib-path folders", ZFD_MAX_LIB_PATHS);
    const char **n = realloc(o->lib_paths, (o->n_lib_paths + 1) * sizeof *n);
    if (!n)
        die("out of memory");
    o->lib_paths = n;
    o->lib_paths[o->n_lib_paths++] = dir;
}

static void parse_args(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            printf("zfd %s (protocol %d, node ABI %u)\n", ZF_VERSION_STRING, ZF_PROTOCOL_VERSION,
                   ZF_ABI_VERSION);
            exit(0);
        } else if (opt(argc, argv, &i, "--name", &v)) {
            o->name = v;
        } else if (opt(argc, argv, &i, "--socket", &v)) {
            o->socket = v;
        } else if (opt(argc, argv, &i, "--lib-path", &v)) {
            add_lib_path(o, v);
        } else if (opt(argc, argv, &i, "--config", &v)) {
            o->config = v;
        } else if (opt(argc, argv, &i, "--workers", &v)) {
            o->workers = (unsigned)number("--workers", v, 1, 256);
        } else if (opt(argc, argv, &i, "--max-instances", &v)) {
            o->max_instances = (size_t)number("--max-instances", v, 1, 4000);
        } else if (opt(argc, argv, &i, "--log-max-size", &v)) {
            if (zf_parse_size(v, &o->log_max) != ZF_OK || o->log_max < 4096)
                die("--log-max-size takes a size of at least 4KiB (e.g. 1MiB), not '%s'", v);
        } else if (opt(argc, argv, &i, "--log-ring", &v)) {
            o->log_ring = (size_t)number("--log-ring", v, 16, 1000000);
        } else if (opt(argc, argv, &i, "--log", &v)) {
            if (zf_log_level_parse(v, &zfd_log_level) != ZF_OK)
                die("--log: %s", zf_last_error());
            o->log_set = true;
        } else if (opt(argc, argv, &i, "--http", &v)) {
            o->http = v;
        } else if (opt(argc, argv, &i, "--state-dir", &v)) {
            o->state_dir = v;
        } else if (opt(argc, argv, &i, "--node-log", &v)) {
            if (zf_log_level_parse(v, &o->node_log) != ZF_OK)
                die("--node-log: %s", zf_last_error());
        } else if (!strcmp(a, "--allow-descriptor-dir")) {
            o->allow_descriptor_dir = true;
        } else if (!strcmp(a, "--allow-writable-lib-path")) {
            o->allow_writable = true;
        } else if (zfd_cluster_arg(argc, argv, &i)) {
            /* --domain, --dds-config, --lease, --cluster-key (cluster.c) */
        } else if (!strcmp(a, "--isolate")) {
            o->isolate = true;
        } else {
            die("unknown %s '%s' (see zfd --help)", a[0] == '-' ? "option" : "argument", a);
        }
    }
}

/* Options from --config fill in what the command line left unset. */
static zf_config *read_config(opts *o)
{
    FILE *f = fopen(o->config, "r");
    if (!f)
        die("--config %s: %s", o->config, strerror(errno));
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, m);
    fclose(f);
    fclose(m);
    zf_diag *dg = zf_diag_new();
    zf_config *c = NULL;
    if (zf_yaml_parse(text, len, o->config, &c, dg) != ZF_OK) {
        char *t = zf_diag_format(dg);
        fprintf(stderr, "%s", t ? t : "");
        die("--config %s is not valid YAML", o->config);
    }
    zf_diag_free(dg);
    free(text);
    static const char *const known[] = {"name",
                                        "socket",
                                        "lib_paths",
                                        "workers",
                                        "log",
                                        "allow_descriptor_dir",
                                        "allow_writable_lib_path",
                                        "domain",
                                        "dds_config",
                                        "lease",
                                        "cluster_key"};
    for (size_t i = 0; i < zf_config_len(c); i++) {
        const char *key = zf_config_key_at(c, i);
        bool ok = false;
        for (size_t j = 0; j < sizeof known / sizeof known[0] && !ok; j++)
            ok = key && !strcmp(key, known[j]);
        if (!ok)
            die("--config %s: unknown field '%s' (expected name, socket, lib_paths, workers, "
                "log, allow_descriptor_dir, allow_writable_lib_path, domain, dds_config, lease, "
                "cluster_key)",
                o->config, key ? key : "?");
    }
    const char *s = NULL;
    if (!o->name && zf_config_string(c, "name", NULL, &s) == ZF_OK && s)
        o->name = s;
    if (!o->socket && zf_config_string(c, "socket", NULL, &s) == ZF_OK && s)
        o->socket = s;
    const zf_config *libs = zf_config_get(c, "lib_paths");
    if (libs && zf_config_kind_of(libs) != ZF_CFG_SEQ)
        die("--config %s: lib_paths must be a list of folders", o->config);
    for (size_t i = 0; i < zf_config_len(libs); i++)
        add_lib_path(o, zf_config_text(zf_config_at(libs, i)));
    int64_t w = 0;
    if (!o->workers && zf_config_int(c, "workers", 0, &w) == ZF_OK && w > 0 && w <= 256)
        o->workers = (unsigned)w;
    if (!o->log_set && zf_config_string(c, "log", NULL, &s) == ZF_OK && s &&
        zf_log_level_parse(s, &zfd_log_level) != ZF_OK)
        die("--config %s: log: %s", o->config, zf_last_error());
    zfd_cluster_config(c, o->config);
    bool allow = false;
    if (zf_config_bool(c, "allow_descriptor_dir", false, &allow) == ZF_OK && allow)
        o->allow_descriptor_dir = true;
    if (zf_config_bool(c, "allow_writable_lib_path", false, &allow) == ZF_OK && allow)
        o->allow_writable = true;
    return c;
}

int main(int argc, char **argv)
{
    opts o = {.node_log = ZF_LOG_DEBUG, .log_max = 1u << 20, .log_ring = 4096};
    parse_args(argc, argv, &o);
    zf_config *cfg = o.config ? read_config(&o) : NULL;
    if (!o.name || !*o.name)
        die("--name NAME is required (this worker's name, as in descriptors' mapping)");
    zf_log_set(zf_log_stderr, NULL, zfd_log_level);
    char *state_dir = o.state_dir ? strdup(o.state_dir) : zfd_default_state_dir();
    char why[512];
    zfd_logs *logs =
        zfd_logs_open(state_dir, o.log_max, o.log_ring, zfd_log_level, o.node_log, why, sizeof why);
    if (!logs)
        die("--state-dir %s: %s", state_dir, why);
    zf_log_set_entry(zfd_logs_entry, logs, o.node_log > zfd_log_level ? o.node_log : zfd_log_level);

    /* Signals are taken by sigwait below; every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    install_crash_handlers();

    zfd_daemon d = {.name = strdup(o.name),
                    .allow_descriptor_dir = o.allow_descriptor_dir,
                    .allow_writable = o.allow_writable,
                    .max_instances = o.max_instances ? o.max_instances : 256,
                    .isolate = o.isolate,
                    .logs = logs,
                    .state_dir = state_dir};
    pthread_mutex_init(&d.mu, NULL);
    d.lib_paths = calloc(o.n_lib_paths + 1, sizeof *d.lib_paths);
    for (size_t i = 0; i < o.n_lib_paths; i++) {
        char *real = zfd_real_dir(o.lib_paths[i]);
        if (!real)
            die("--lib-path %s: %s", o.lib_paths[i], strerror(errno));
        /* Another user able to change a library there would run code in
         * this daemon: refused unless explicitly overridden. */
        if (zf_code_path_check(real) != ZF_OK) {
            if (!o.allow_writable)
                die("--lib-path %s: %s (fix the folder's owner or mode, or start zfd with "
                    "--allow-writable-lib-path)",
                    o.lib_paths[i], zf_last_error());
            zfd_log(ZF_LOG_WARN, "--lib-path %s accepted by --allow-writable-lib-path: %s",
                    o.lib_paths[i], zf_last_error());
        }
        d.lib_paths[d.n_lib_paths++] = real;
    }
    zf_runtime_options ro = {.workers = o.workers, .worker = o.name};
    if (zf_runtime_create(&ro, &d.rt) != ZF_OK)
        die("%s", zf_last_error());
    d.started_ns = zf_clock_ns();
    if (!zfd_cluster_start(&d)) {
        zf_runtime_destroy(d.rt);
        atomic_store(&orderly_exit, true);
        return 1;
    }
    char sock[512];
    if (o.socket)
        snprintf(sock, sizeof sock, "%s", o.socket);
    else
        zf_control_default_socket(sock, sizeof sock);
    d.socket = sock; /* before the server's threads can read it */
    zf_server_options so = {.path = sock};
    zf_server *srv = NULL;
    if (zf_server_start(&so, zfd_handle, &d, &srv) != ZF_OK) {
        zfd_log(ZF_LOG_ERROR, "%s", zf_last_error());
        zf_runtime_destroy(d.rt);
        atomic_store(&orderly_exit, true);
        return 1;
    }
    zfd_http *http = NULL;
    if (o.http && !(http = zfd_http_start(&d, o.http, why, sizeof why))) {
        zfd_log(ZF_LOG_ERROR, "--http %s", why);
        zf_server_stop(srv);
        zf_runtime_destroy(d.rt);
        atomic_store(&orderly_exit, true);
        return 2;
    }
    if (http)
        zfd_log(ZF_LOG_INFO, "http: /metrics and the live page on %s (port %u)", o.http,
                zfd_http_port(http));
    zfd_log(ZF_LOG_INFO, "worker '%s' ready (pid %d, socket %s, %zu lib path%s)", d.name,
            (int)getpid(), d.socket, d.n_lib_paths, d.n_lib_paths == 1 ? "" : "s");

    int sig = 0;
    for (;;) {
        if (sigwait(&sigs, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            zfd_log(ZF_LOG_INFO, "SIGHUP ignored (restart zfd to change its options)");
            continue;
        }
        break;
    }
    atomic_store(&d.stopping, true);
    zfd_http_stop(http);
    const char *signame = sig == SIGINT ? "SIGINT" : "SIGTERM";
    bool clean = zf_server_stop(srv);
    /* Every instance in the table is destroyed gracefully, even when a
     * request is stuck (a node's init or fini that ignores its bound): that
     * request's instance is not in the table. */
    pthread_mutex_lock(&d.mu);
    size_t count = d.count;
    pthread_mutex_unlock(&d.mu);
    zfd_log(ZF_LOG_INFO, "%s: destroying %zu instance(s), then exiting", signame, count);
    zfd_destroy_all(&d);
    if (!clean) {
        /* The stuck request still uses the runtime, and its instance may
         * have bridges that use the cluster: free neither. */
        zfd_log(ZF_LOG_ERROR,
                "%s: a request was still running after 30 s (a node's init or fini does not "
                "return); every other instance was destroyed; exiting with status 1",
                signame);
        atomic_store(&orderly_exit, true);
        return 1;
    }
    zfd_cluster_stop(&d);
    zf_runtime_destroy(d.rt);
    zf_log_set(zf_log_stderr, NULL, zfd_log_level);
    zfd_logs_close(logs);
    free(state_dir);
    for (size_t i = 0; i < d.n_lib_paths; i++)
        free(d.lib_paths[i]);
    free(d.lib_paths);
    free((void *)o.lib_paths);
    free(d.name);
    zf_config_free(cfg);
    pthread_mutex_destroy(&d.mu);
    zfd_log(ZF_LOG_INFO, "bye");
    atomic_store(&orderly_exit, true);
    return 0;
}
