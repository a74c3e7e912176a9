/* zfctl's daemon commands: deploy, ls, status, start, suspend, resume,
 * destroy, workers. Each sends one request to zfd and prints the answer,
 * as a table or (-o json) as the daemon's JSON result. */
#include "zfctl.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct daemon_args {
    const char *cmd;
    const char *socket;
    bool json;
    const char *id;                          /* ID commands */
    flow_args fa;                            /* deploy */
    const char *name;                        /* deploy */
    bool no_start;                           /* deploy */
    const char *status_filter, *name_filter; /* ls */
} daemon_args;

static void help(const char *cmd)
{
    if (!strcmp(cmd, "deploy"))
        printf("usage: zfctl deploy FLOW [--name N] [--var KEY=VALUE]... [--vars K=V,...] "
               "[--no-start]\n"
               "                    [--socket PATH] [-o json]\n\n"
               "Send FLOW to the daemon, which creates (and starts) an instance; prints its "
               "UUID.\n");
    else if (!strcmp(cmd, "ls"))
        printf("usage: zfctl ls [--status S] [--name PATTERN] [--socket PATH] [-o json]\n\n"
               "List the daemon's instances: UUID NAME STATUS WORKERS NODES UPTIME CPU MEM\n"
               "(NODES running/all, CPU over the last second in %% of a core, MEM the pool's\n"
               "mapped memory). --status keeps those whose status starts with S (RUNNING,\n"
               "SUSPENDED, ...; any case), --name those whose name matches the shell\n"
               "pattern (cam*).\n");
    else if (!strcmp(cmd, "workers"))
        printf("usage: zfctl workers [NAME] [--socket PATH] [-o json]\n\nList the daemons "
               "reachable (NAME: that one only).\n");
    else
        printf("usage: zfctl %s ID [--socket PATH] [-o json]\n\n"
               "ID is an instance's UUID, a unique prefix of it, or its name.\n",
               cmd);
    printf("\nThe daemon's socket: --socket, else $ZF_SOCKET, else the default "
           "($XDG_RUNTIME_DIR/zflow/zfd.sock or /run/zflow/zfd.sock).\n");
}

static bool wants_id(const char *cmd)
{
    return strcmp(cmd, "deploy") && strcmp(cmd, "ls") && strcmp(cmd, "workers");
}

static void parse(int argc, char **argv, daemon_args *a)
{
    a->cmd = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            help(a->cmd);
            exit(EXIT_OK);
        } else if (args_opt(argc, argv, &i, "--socket", a->cmd, &v)) {
            a->socket = v;
        } else if (args_opt(argc, argv, &i, "-o", a->cmd, &v) ||
                   args_opt(argc, argv, &i, "--output", a->cmd, &v)) {
            if (strcmp(v, "json") && strcmp(v, "table"))
                usage_error(a->cmd, "-o takes json or table");
            a->json = !strcmp(v, "json");
        } else if (!strcmp(a->cmd, "deploy") && args_var(argc, argv, &i, &a->fa)) {
        } else if (!strcmp(a->cmd, "deploy") && args_opt(argc, argv, &i, "--name", a->cmd, &v)) {
            a->name = v;
        } else if (!strcmp(a->cmd, "ls") && args_opt(argc, argv, &i, "--status", a->cmd, &v)) {
            a->status_filter = v;
        } else if (!strcmp(a->cmd, "ls") && args_opt(argc, argv, &i, "--name", a->cmd, &v)) {
            a->name_filter = v;
        } else if (!strcmp(a->cmd, "deploy") && !strcmp(s, "--no-start")) {
            a->no_start = true;
        } else if (s[0] == '-') {
            usage_error(a->cmd, "unknown option '%s'", s);
        } else if (!strcmp(a->cmd, "deploy") && !a->fa.path) {
            a->fa.path = s;
        } else if ((wants_id(a->cmd) || !strcmp(a->cmd, "workers")) && !a->id) {
            a->id = s; /* workers: a worker's name (Zenoh-Flow's `runtime status NAME`) */
        } else {
            usage_error(a->cmd, "unexpected argument '%s'", s);
        }
    }
    if (!strcmp(a->cmd, "deploy") && !a->fa.path)
        usage_error(a->cmd, "missing FLOW (a descriptor file)");
    if (wants_id(a->cmd) && !a->id)
        usage_error(a->cmd, "missing ID (a UUID, a unique prefix of one, or a name)");
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = NULL;
    FILE *m = open_memstream(&text, len);
    char buf[65536];
    size_t k, total = 0;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0 && total < ZF_FRAME_MAX) {
        fwrite(buf, 1, k, m);
        total += k;
    }
    fclose(f);
    fclose(m);
    return text;
}

/* One request; the daemon's result (owned by *tree), or NULL after printing
 * the error and setting *rc. */
const zf_config *daemon_call(const daemon_conn *a, zf_request *req, zf_config **tree, int *rc)
{
    char path[512];
    if (a->socket)
        snprintf(path, sizeof path, "%s", a->socket);
    else
        zf_control_default_socket(path, sizeof path);
    zf_client *c = NULL;
    zf_err e = zf_client_connect(path, &c);
    if (e != ZF_OK) {
        fprintf(stderr, "zfctl %s: %s\n", a->cmd, zf_last_error());
        if (e == ZF_ENOTFOUND)
            fprintf(stderr, "start one with:  zfd --name NAME --lib-path DIR --socket %s\n", path);
        *rc = EXIT_DAEMON;
        return NULL;
    }
    /* A live daemon answers hello at once; a socket that accepts and never
     * answers (its daemon died, a process it forked holds it) must not keep
     * zfctl waiting for the request's own 60 s. */
    zf_request hello = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_HELLO};
    e = zf_client_call(c, &hello, tree, ZF_CONTROL_PROBE_MS);
    zf_config_free(*tree);
    *tree = NULL;
    if (e == ZF_ETIMEDOUT || e == ZF_ECLOSED) {
        fprintf(stderr,
                "zfctl %s: %s accepts connections but no daemon answers (%s): its daemon died "
                "and a process it started may hold the socket; restart zfd\n",
                a->cmd, path, zf_last_error());
        zf_client_close(c);
        *rc = EXIT_DAEMON;
        return NULL;
    }
    if (e == ZF_OK)
        e = zf_client_call(c, req, tree, 60000 + req->wait_ms);
    zf_client_close(c);
    if (e != ZF_OK) {
        fprintf(stderr, "zfctl %s: %s\n", a->cmd, zf_last_error());
        *rc = EXIT_DAEMON;
        return NULL;
    }
    bool ok = false;
    /* zf_client_call answers only with a boolean "ok" */
    ZF_IGNORE(zf_config_bool(*tree, "ok", false, &ok));
    if (!ok) {
        const char *code = "?", *msg = "?";
        /* shown as they are: a field of another kind shows as "?" */
        ZF_IGNORE(zf_config_string(*tree, "error.code", "?", &code));
        ZF_IGNORE(zf_config_string(*tree, "error.message", "?", &msg));
        if (a->json) {
            zf_json_writer *w = zf_json_writer_new();
            zf_json_open_object(w, NULL);
            zf_json_put_config(w, "error", zf_config_get(*tree, "error"));
            zf_json_close(w);
            char *j = zf_json_writer_finish(w);
            printf("%s\n", j ? j : "{\"error\":null}");
            zf_free(j);
        }
        fprintf(stderr, "zfctl %s: %s (%s)\n", a->cmd, msg, code);
        /* 3 is for an invalid descriptor or node library: only a deploy's */
        *rc =
            req->op == ZF_OP_DEPLOY && (!strcmp(code, "ZF_EPARSE") || !strcmp(code, "ZF_EINVAL") ||
                                        !strcmp(code, "ZF_EABI") || !strcmp(code, "ZF_ETYPE"))
                ? EXIT_INVALID
                : EXIT_FAIL;
        return NULL;
    }
    return zf_config_get(*tree, "result");
}

/* Whether instance e passes ls's --status and --name filters. */
static bool ls_keeps(const daemon_args *a, const zf_config *e)
{
    if (a->status_filter &&
        strncasecmp(cfg_str(e, "status"), a->status_filter, strlen(a->status_filter)) != 0)
        return false;
    return !a->name_filter || fnmatch(a->name_filter, cfg_str(e, "name"), 0) == 0;
}

/* ls -o json: the answer's instances that pass the filters. */
static void print_ls_json(const daemon_args *a, const zf_config *r)
{
    const zf_config *list = zf_config_get(r, "instances");
    printf("{\"instances\":[");
    for (size_t i = 0, n = 0; i < zf_config_len(list); i++) {
        const zf_config *e = zf_config_at(list, i);
        if (!ls_keeps(a, e))
            continue;
        char *j = zf_config_to_json(e);
        printf("%s%s", n++ ? "," : "", j ? j : "null");
        free(j);
    }
    printf("]}\n");
}

static void print_ls(const daemon_args *a, const zf_config *r)
{
    const zf_config *list = zf_config_get(r, "instances");
    printf("%-36s  %-20s  %-28s  %-10s %5s %8s %6s %9s\n", "UUID", "NAME", "STATUS", "WORKERS",
           "NODES", "UPTIME", "CPU", "MEM");
    for (size_t i = 0; i < zf_config_len(list); i++) {
        const zf_config *e = zf_config_at(list, i);
        if (!ls_keeps(a, e))
            continue;
        const zf_config *w = zf_config_get(e, "workers");
        char workers[256] = "", nodes[32], mem[32];
        for (size_t k = 0; k < zf_config_len(w); k++)
            snprintf(workers + strlen(workers), sizeof workers - strlen(workers), "%s%s",
                     k ? "," : "", zf_config_text(zf_config_at(w, k)));
        snprintf(nodes, sizeof nodes, "%lld/%lld", cfg_num(e, "nodes_running"),
                 cfg_num(e, "nodes"));
        printf("%-36s  %-20s  %-28s  %-10s %5s %7.0fs %5.1f%% %9s\n", cfg_str(e, "uuid"),
               cfg_str(e, "name"), cfg_str(e, "status"), workers, nodes, cfg_real(e, "uptime_s"),
               100.0 * cfg_real(e, "cpu_1s"),
               fmt_bytes((uint64_t)cfg_num(e, "mem_bytes"), mem, sizeof mem));
    }
}

static void print_report_json(const zf_config *rep)
{
    char a[32], b[32];
    printf("stop: %lld in flight at stop, %lld delivered during drain, %lld dropped, %lld "
           "release callbacks, drained in %.2f s%s\n",
           cfg_num(rep, "in_flight_at_stop"), cfg_num(rep, "delivered_in_drain"),
           cfg_num(rep, "dropped"), cfg_num(rep, "release_callbacks"), cfg_real(rep, "drain_s"),
           zf_config_get(rep, "drain_timed_out") && !strcmp(cfg_str(rep, "drain_timed_out"), "true")
               ? " (drain timeout reached)"
               : "");
    printf("pool: %s freed, %s leaked\n",
           fmt_bytes((uint64_t)cfg_num(rep, "bytes_freed"), a, sizeof a),
           fmt_bytes((uint64_t)cfg_num(rep, "bytes_leaked"), b, sizeof b));
    if (cfg_num(rep, "child_deaths") || cfg_num(rep, "refs_reclaimed") ||
        cfg_num(rep, "nodes_killed_at_stop") || cfg_num(rep, "inputs_lost"))
        printf("isolated processes: %lld died, %lld killed at stop, %lld reference(s) (%s) "
               "reclaimed from them, %lld input(s) they never processed\n",
               cfg_num(rep, "child_deaths"), cfg_num(rep, "nodes_killed_at_stop"),
               cfg_num(rep, "refs_reclaimed"),
               fmt_bytes((uint64_t)cfg_num(rep, "bytes_reclaimed"), a, sizeof a),
               cfg_num(rep, "inputs_lost"));
    if (*cfg_str(rep, "held"))
        printf("held: %s\n", cfg_str(rep, "held"));
    printf("bytes leaked: %lld%s\n", cfg_num(rep, "bytes_leaked"),
           cfg_num(rep, "bytes_leaked") ? " (LEAKED)" : " (nothing leaked)");
}

/* Threads the daemon left inside node code (they may burn a core). */
static void print_abandoned(const zf_config *list)
{
    for (size_t i = 0; i < zf_config_len(list); i++) {
        const zf_config *t = zf_config_at(list, i);
        bool alive = false;
        ZF_IGNORE(zf_config_bool(t, "alive", false, &alive)); /* as str */
        printf("  abandoned thread %lld: node '%s' of %s (%s), in %s, %.2f s CPU, %s\n",
               cfg_num(t, "tid"), cfg_str(t, "node"), cfg_str(t, "instance_name"),
               cfg_str(t, "instance"), cfg_str(t, "in"), cfg_real(t, "cpu_s"),
               alive ? "still alive" : "gone");
    }
}

static void print_status(const zf_config *r)
{
    char a[32], b[32];
    printf("instance  %s (%s)\n", cfg_str(r, "uuid"), cfg_str(r, "name"));
    printf("status    %s for %.1f s (created %s, up %.1f s)\n", cfg_str(r, "status"),
           cfg_real(r, "state_for_s"), cfg_str(r, "created"), cfg_real(r, "uptime_s"));
    const zf_config *pool = zf_config_get(r, "pool");
    printf("pool      %s in use, high water %s, %lld allocations, %lld refused\n",
           fmt_bytes((uint64_t)cfg_num(pool, "bytes_in_use"), a, sizeof a),
           fmt_bytes((uint64_t)cfg_num(pool, "bytes_high_water"), b, sizeof b),
           cfg_num(pool, "allocations"), cfg_num(pool, "refused"));
    const zf_config *nodes = zf_config_get(r, "nodes");
    printf("nodes:\n  %-22s %-8s %-9s %-10s %10s %7s %8s %12s  %s\n", "ID", "KIND", "STATE",
           "WORKER", "CALLBACKS", "ERRORS", "RESTARTS", "PROGRESS", "REASON");
    for (size_t i = 0; i < zf_config_len(nodes); i++) {
        const zf_config *n = zf_config_at(nodes, i);
        char ago[32] = "never";
        if (zf_config_kind_of(zf_config_get(n, "last_progress_s_ago")) != ZF_CFG_NULL)
            snprintf(ago, sizeof ago, "%.2f s ago", cfg_real(n, "last_progress_s_ago"));
        printf("  %-22s %-8s %-9s %-10s %10lld %7lld %8lld %12s  %s", cfg_str(n, "id"),
               cfg_str(n, "kind"), cfg_str(n, "state"), cfg_str(n, "worker"),
               cfg_num(n, "callbacks"), cfg_num(n, "errors"), cfg_num(n, "restarts"), ago,
               cfg_str(n, "reason"));
        /* isolated nodes: their process and how it last ended */
        if (cfg_num(n, "pid") > 0 || *cfg_str(n, "last_exit")) {
            printf("%s[pid %lld", *cfg_str(n, "reason") ? " " : "", cfg_num(n, "pid"));
            if (cfg_num(n, "lost"))
                printf(", %lld input(s) lost", cfg_num(n, "lost"));
            printf("%s%s]", *cfg_str(n, "last_exit") ? ", last exit: " : "",
                   cfg_str(n, "last_exit"));
        }
        printf("\n");
    }
    const zf_config *links = zf_config_get(r, "links");
    printf("links:\n  %-26s %-26s %-11s %5s %5s %5s %8s %12s\n", "FROM", "TO", "POLICY", "CAP",
           "DEPTH", "HIGH", "DROPPED", "MSGS/S");
    for (size_t i = 0; i < zf_config_len(links); i++) {
        const zf_config *l = zf_config_at(links, i);
        printf("  %-26s %-26s %-11s %5lld %5lld %5lld %8lld %12.1f\n", cfg_str(l, "from"),
               cfg_str(l, "to"), cfg_str(l, "policy"), cfg_num(l, "capacity"), cfg_num(l, "depth"),
               cfg_num(l, "high_water"), cfg_num(l, "dropped"), cfg_real(l, "throughput_per_s"));
    }
    print_abandoned(zf_config_get(r, "abandoned_threads"));
}

/* The workers (only `name` when not NULL); false when none is `name`. */
static bool print_workers(const zf_config *r, const char *name)
{
    const zf_config *list = zf_config_get(r, "workers");
    bool found = false;
    for (size_t i = 0; name && i < zf_config_len(list); i++)
        found = found || !strcmp(cfg_str(zf_config_at(list, i), "name"), name);
    if (name && !found) {
        fprintf(stderr, "zfctl workers: no worker named '%s' (", name);
        for (size_t i = 0; i < zf_config_len(list); i++)
            fprintf(stderr, "%s'%s'", i ? ", " : "", cfg_str(zf_config_at(list, i), "name"));
        fprintf(stderr, " answered)\n");
        return false;
    }
    bool cluster = zf_config_get(zf_config_at(list, 0), "status") != NULL;
    if (cluster) /* zfd --domain: every worker of the cluster (cmd_cluster.c) */
        print_cluster_workers_header();
    else
        printf("%-16s %8s %10s %10s  %s\n", "NAME", "PID", "INSTANCES", "UPTIME", "ADDRESS");
    for (size_t i = 0; i < zf_config_len(list); i++) {
        const zf_config *w = zf_config_at(list, i);
        if (name && strcmp(cfg_str(w, "name"), name))
            continue;
        if (cluster)
            print_cluster_worker(w);
        else
            printf("%-16s %8lld %10lld %9.0fs  %s\n", cfg_str(w, "name"), cfg_num(w, "pid"),
                   cfg_num(w, "instances"), cfg_real(w, "uptime_s"), cfg_str(w, "address"));
        print_abandoned(zf_config_get(w, "abandoned_threads"));
    }
    return true;
}

int cmd_daemon(int argc, char **argv)
{
    daemon_args a = {0};
    parse(argc, argv, &a);
    zf_request req = {
        .version = ZF_PROTOCOL_VERSION, .id = wants_id(a.cmd) ? a.id : NULL, .start = true};
    char *text = NULL;
    char abs[PATH_MAX];
    if (!strcmp(a.cmd, "deploy")) {
        size_t len = 0;
        text = read_file(a.fa.path, &len);
        if (!text || !realpath(a.fa.path, abs)) {
            fprintf(stderr, "zfctl deploy: cannot read %s: %s\n", a.fa.path, strerror(errno));
            free(text);
            free(a.fa.vars);
            return EXIT_INVALID;
        }
        req.op = ZF_OP_DEPLOY;
        req.descriptor = text;
        req.path = abs;
        req.name = a.name;
        req.vars = a.fa.vars;
        req.n_vars = a.fa.n_vars;
        req.start = !a.no_start;
    } else {
        static const struct {
            const char *cmd;
            zf_op op;
        } ops[] = {{"ls", ZF_OP_LIST},         {"status", ZF_OP_STATUS}, {"start", ZF_OP_START},
                   {"suspend", ZF_OP_SUSPEND}, {"resume", ZF_OP_RESUME}, {"destroy", ZF_OP_DESTROY},
                   {"workers", ZF_OP_WORKERS}};
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            if (!strcmp(a.cmd, ops[i].cmd))
                req.op = ops[i].op;
    }
    zf_config *tree = NULL;
    int rc = EXIT_OK;
    daemon_conn conn = {.cmd = a.cmd, .socket = a.socket, .json = a.json};
    const zf_config *r = daemon_call(&conn, &req, &tree, &rc);
    free(text);
    free(a.fa.vars);
    if (!r) {
        zf_config_free(tree);
        return rc;
    }
    if (a.json && req.op == ZF_OP_LIST) {
        print_ls_json(&a, r);
    } else if (a.json) {
        char *j = zf_config_to_json(r);
        printf("%s\n", j ? j : "null");
        free(j);
    } else if (req.op == ZF_OP_DEPLOY) {
        printf("%s\n", cfg_str(r, "uuid"));
    } else if (req.op == ZF_OP_LIST) {
        print_ls(&a, r);
    } else if (req.op == ZF_OP_STATUS) {
        print_status(r);
    } else if (req.op == ZF_OP_DESTROY) {
        printf("destroyed %s (%s)\n", cfg_str(r, "uuid"), cfg_str(r, "name"));
        print_report_json(zf_config_get(r, "report"));
        print_cluster_destroy(r);
    } else if (req.op == ZF_OP_WORKERS) {
        if (!print_workers(r, a.id))
            rc = EXIT_FAIL;
    } else {
        printf("%s %s\n", cfg_str(r, "uuid"), cfg_str(r, "state"));
    }
    if (req.op == ZF_OP_DESTROY && cfg_num(zf_config_get(r, "report"), "bytes_leaked"))
        rc = EXIT_FAIL;
    zf_config_free(tree);
    return rc;
}
