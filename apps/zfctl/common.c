/* zfctl: argument helpers, descriptor loading, formatting. */
#include "zfctl.h"

#include "args.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "zfctl %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'zfctl %s --help')\n", cmd);
    exit(EXIT_USAGE);
}

bool args_opt(int argc, char **argv, int *i, const char *name, const char *cmd, const char **value)
{
    zf_arg r = zf_arg_value(argc, argv, i, name, value);
    if (r == ZF_ARG_MISSING)
        usage_error(cmd, "%s needs a value", name);
    return r == ZF_ARG_VALUE;
}

static void add_var(flow_args *fa, const char *opt, const char *kv)
{
    if (!strchr(kv, '=') || kv[0] == '=') {
        fprintf(stderr, "zfctl: %s takes KEY=VALUE, got '%s'\n", opt, kv);
        exit(EXIT_USAGE);
    }
    const char **nv = realloc(fa->vars, (fa->n_vars + 1) * sizeof *nv);
    if (!nv)
        exit(EXIT_FAIL);
    fa->vars = nv;
    fa->vars[fa->n_vars++] = kv;
}

bool args_var(int argc, char **argv, int *i, flow_args *fa)
{
    const char *v = NULL;
    bool one = args_opt(argc, argv, i, "--var", "", &v);
    bool list = !one && args_opt(argc, argv, i, "--vars", "", &v);
    if (!one && !list)
        return false;
    char *kv = (char *)v;
    if (one) {
        add_var(fa, "--var", kv);
        return true;
    }
    /* Zenoh-Flow's spelling: K=V (its value is all after the first '='),
     * and zflow's list K=V[,K=V...]: a comma starts a new pair only when
     * what follows it is KEY=..., so `--vars DIRS=/a,/b` keeps its comma.
     * Split in place (argv is ours). */
    add_var(fa, "--vars", kv);
    for (char *p = kv; (p = strchr(p, ',')); p++) {
        size_t key = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789_-.");
        if (key == 0 || p[1 + key] != '=')
            continue;
        *p = '\0';
        add_var(fa, "--vars", p + 1);
    }
    return true;
}

void print_diag(const zf_diag *d)
{
    for (size_t i = 0; i < zf_diag_count(d); i++) {
        const zf_diag_entry *e = zf_diag_get(d, i);
        fprintf(stderr, "%s:%u:%u: error: %s%s%s\n", e->file && *e->file ? e->file : "<input>",
                e->line, e->col, e->field && *e->field ? e->field : "",
                e->field && *e->field ? ": " : "", e->message);
    }
}

zf_flow *load_flow(const flow_args *fa)
{
    zf_diag *d = zf_diag_new();
    zf_flow_options opt = {.vars = fa->vars, .n_vars = fa->n_vars};
    zf_flow *f = NULL;
    zf_err e = zf_flow_load(fa->path, &opt, d, &f);
    if (e != ZF_OK) {
        if (zf_diag_count(d))
            print_diag(d);
        else
            fprintf(stderr, "%s: error: %s\n", fa->path, zf_last_error());
        f = NULL;
    }
    zf_diag_free(d);
    return f;
}

const char *fmt_bytes(uint64_t b, char *buf, size_t n)
{
    if (b >= (1ull << 30))
        snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, n, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", (double)b / 1024);
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
    return buf;
}

const char *fmt_ns(uint64_t ns, char *buf, size_t n)
{
    if (ns >= 1000000000ull)
        snprintf(buf, n, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, n, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, n, "%.1f us", (double)ns / 1e3);
    else
        snprintf(buf, n, "%llu ns", (unsigned long long)ns);
    return buf;
}

void print_nodes(FILE *out, const zf_instance_stats *s)
{
    uint64_t now = zf_clock_ns();
    fprintf(out, "nodes:\n  %-22s %-8s %-9s %10s %7s %8s %6s %10s %12s  %s\n", "ID", "KIND",
            "STATE", "CALLBACKS", "ERRORS", "SENT", "NOMEM", "BUSY", "PROGRESS", "REASON");
    for (size_t i = 0; i < s->n_nodes; i++) {
        const zf_node_stats *n = &s->nodes[i];
        char busy[32], ago[64], since[40];
        fmt_ns(n->busy_ns, busy, sizeof busy);
        if (n->last_progress_ns)
            snprintf(ago, sizeof ago, "%s ago",
                     fmt_ns(now - n->last_progress_ns, since, sizeof since));
        else
            snprintf(ago, sizeof ago, "never");
        fprintf(out, "  %-22s %-8s %-9s %10llu %7llu %8llu %6llu %10s %12s  %s\n", n->id,
                zf_node_kind_name(n->kind), zf_node_state_name(n->state),
                (unsigned long long)n->callbacks, (unsigned long long)n->errors,
                (unsigned long long)n->sent, (unsigned long long)n->alloc_failures, busy, ago,
                n->reason ? n->reason : "");
    }
    for (size_t i = 0; i < s->n_nodes; i++) { /* isolated nodes: their process */
        const zf_node_stats *n = &s->nodes[i];
        if (n->pid || n->deaths)
            fprintf(out, "  %s: process %d, %llu restart(s), %llu input(s) lost%s%s\n", n->id,
                    n->pid, (unsigned long long)n->restarts, (unsigned long long)n->lost,
                    n->last_exit && n->last_exit[0] ? ", last exit: " : "",
                    n->last_exit ? n->last_exit : "");
    }
}

void print_links(FILE *out, const zf_instance_stats *s)
{
    fprintf(out, "links:\n  %-26s %-26s %-11s %5s %5s %5s %9s %9s %8s %10s\n", "FROM", "TO",
            "POLICY", "CAP", "DEPTH", "HIGH", "ENQUEUED", "DEQUEUED", "DROPPED", "BLOCKED");
    for (size_t i = 0; i < s->n_links; i++) {
        const zf_link_info *l = &s->links[i];
        char blocked[32];
        fprintf(out, "  %-26s %-26s %-11s %5u %5llu %5llu %9llu %9llu %8llu %10s\n", l->from, l->to,
                zf_policy_name(l->stats.policy), l->stats.capacity,
                (unsigned long long)l->stats.depth, (unsigned long long)l->stats.high_water,
                (unsigned long long)l->stats.enqueued, (unsigned long long)l->stats.dequeued,
                (unsigned long long)l->stats.dropped,
                fmt_ns(l->stats.blocked_ns, blocked, sizeof blocked));
    }
}

void print_pool(FILE *out, const zf_instance_stats *s)
{
    char a[32], b[32], c[32];
    fprintf(out, "pool: %s in use, high water %s, %s mapped, %llu allocations, %llu refused\n",
            fmt_bytes(s->pool.bytes_in_use, a, sizeof a),
            fmt_bytes(s->pool.bytes_high_water, b, sizeof b),
            fmt_bytes(s->pool.bytes_mapped, c, sizeof c), (unsigned long long)s->pool.allocs,
            (unsigned long long)s->pool.alloc_failures);
}

void print_report(FILE *out, const zf_stop_report *r)
{
    char a[32], b[32], c[32], d[32];
    fprintf(out,
            "stop: %llu in flight at stop, %llu delivered during drain, %llu dropped (%llu "
            "during drain), %llu release callbacks, drained in %s%s\n",
            (unsigned long long)r->in_flight_at_stop, (unsigned long long)r->delivered_in_drain,
            (unsigned long long)r->dropped, (unsigned long long)r->dropped_in_drain,
            (unsigned long long)r->releases, fmt_ns((uint64_t)r->drain_ns, d, sizeof d),
            r->drain_timed_out ? " (drain timeout reached)" : "");
    fprintf(out, "pool: %s in use before stop, %s after, high water %s\n",
            fmt_bytes(r->pool_bytes_before, a, sizeof a),
            fmt_bytes(r->pool_bytes_after, b, sizeof b),
            fmt_bytes(r->pool_high_water, c, sizeof c));
    if (r->nodes_abandoned)
        fprintf(out, "abandoned nodes: %llu\n", (unsigned long long)r->nodes_abandoned);
    if (r->child_deaths || r->refs_reclaimed || r->nodes_killed_at_stop || r->inputs_lost)
        fprintf(out,
                "isolated processes: %llu died, %llu killed at stop, %llu reference(s) (%s) "
                "reclaimed from them, %llu input(s) they never processed\n",
                (unsigned long long)r->child_deaths, (unsigned long long)r->nodes_killed_at_stop,
                (unsigned long long)r->refs_reclaimed, fmt_bytes(r->bytes_reclaimed, d, sizeof d),
                (unsigned long long)r->inputs_lost);
    if (r->holders[0])
        fprintf(out, "held: %s\n", r->holders);
    if (r->bytes_abandoned)
        fprintf(out, "bytes held by abandoned nodes: %llu (released if they return)\n",
                (unsigned long long)r->bytes_abandoned);
    fprintf(out, "bytes still held in the pool: %llu%s\n", (unsigned long long)r->bytes_leaked,
            r->bytes_leaked ? " (LEAKED)" : " (nothing leaked)");
}

const char *cfg_str(const zf_config *c, const char *key)
{
    const char *s = NULL;
    ZF_IGNORE(zf_config_string(c, key, "", &s)); /* absent or not a string: "" */
    return s ? s : "";
}

long long cfg_num(const zf_config *c, const char *key)
{
    int64_t v = 0;
    ZF_IGNORE(zf_config_int(c, key, 0, &v)); /* absent or not a number: 0 */
    return (long long)v;
}

double cfg_real(const zf_config *c, const char *key)
{
    double v = 0;
    ZF_IGNORE(zf_config_float(c, key, 0, &v)); /* absent or not a number: 0 */
    return v;
}
