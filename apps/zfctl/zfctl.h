/* zfctl: the command-line interface. Each command lives in its own file
 * and uses the public API only. */
#ifndef ZFCTL_H
#define ZFCTL_H

#include <zflow/zflow.h>

#include <stdbool.h>
#include <stdio.h>

/* Exit codes (documented in docs/zfctl.md). */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,    /* the dataflow failed, or leaked */
    EXIT_USAGE = 2,   /* bad command line */
    EXIT_INVALID = 3, /* the descriptor or a node library is invalid */
    EXIT_DAEMON = 4   /* the daemon is unreachable or refused */
};

/* Options shared by the commands that load a descriptor. */
typedef struct flow_args {
    const char *path;
    const char **vars;
    size_t n_vars;
} flow_args;

/* Consume "--var K=V" or "--vars K=V[,K=V...]" (Zenoh-Flow's spelling; the
 * list is split in argv) at argv[*i]; true if it was one. Exits on a bad
 * one. */
bool args_var(int argc, char **argv, int *i, flow_args *fa);
/* True if argv[*i] is the option NAME exactly, as "NAME VALUE" (VALUE is the
 * next argument, consumed) or "NAME=VALUE"; *value is then VALUE. "NAME"
 * with no value left exits with a usage error; another option, even one NAME
 * is a prefix of, is not NAME (false). */
bool args_opt(int argc, char **argv, int *i, const char *name, const char *cmd, const char **value);
/* Exit with "zfctl CMD: MSG" and a pointer to --help. */
_Noreturn void usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Load a flow, printing every diagnostic; NULL on failure. */
zf_flow *load_flow(const flow_args *fa);
/* Print diagnostics to stderr ("file:line:col: error: field: message"). */
void print_diag(const zf_diag *d);

/* Members of a daemon's answer: a string ("" when absent), an integer, a
 * number (0 when absent). */
const char *cfg_str(const zf_config *c, const char *key);
long long cfg_num(const zf_config *c, const char *key);
double cfg_real(const zf_config *c, const char *key);

/* Human-readable sizes and durations. */
const char *fmt_bytes(uint64_t b, char *buf, size_t n);
const char *fmt_ns(uint64_t ns, char *buf, size_t n);

/* Tables of an instance's statistics. */
void print_nodes(FILE *out, const zf_instance_stats *s);
void print_links(FILE *out, const zf_instance_stats *s);
void print_pool(FILE *out, const zf_instance_stats *s);
void print_report(FILE *out, const zf_stop_report *r);

/* Where a daemon command goes, and how its errors print. */
typedef struct daemon_conn {
    const char *cmd;    /* for messages: "zfctl CMD: ..." */
    const char *socket; /* NULL: the default */
    bool json;          /* errors as JSON on stdout too */
} daemon_conn;
/* One request (hello first, with a short bound); the daemon's result (owned
 * by *tree), or NULL after printing the error and setting *rc
 * (cmd_daemon.c). */
const zf_config *daemon_call(const daemon_conn *c, zf_request *req, zf_config **tree, int *rc);
/* Consume --socket PATH or -o json|table at argv[*i] into c; true if it
 * was one (cmd_ops.c). */
bool args_daemon(int argc, char **argv, int *i, daemon_conn *c);

int cmd_run(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_graph(int argc, char **argv);
/* deploy, ls, status, start, suspend, resume, destroy, workers */
int cmd_daemon(int argc, char **argv);
/* logs, top, echo, hz (cmd_ops.c) */
int cmd_logs(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_echo(int argc, char **argv);
int cmd_hz(int argc, char **argv);
/* record (a daemon's instance), replay (in this process) (cmd_record.c) */
int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);

/* A cluster's workers table and destroy report (cmd_cluster.c). */
void print_cluster_workers_header(void);
void print_cluster_worker(const zf_config *w);
void print_cluster_destroy(const zf_config *r);

#endif
