/* zfd --http ADDR: Prometheus metrics and a live page, served by
 * libmicrohttpd (Debian's libmicrohttpd-dev) on one internal thread.
 *
 *   GET /metrics             the Prometheus text format (0.0.4)
 *   GET /                    the live page (page.c): instances, and the
 *                            running graph of one, redrawn every second
 *   GET /api/list            what `zfctl ls -o json` gets (the control
 *   GET /api/status?id=ID    protocol's `list` / `status` answers)
 *
 * Read-only: nothing served here changes an instance. Off unless --http is
 * given; an address without a host listens on 127.0.0.1 only.
 * docs/operations.md lists every metric. */
#include "zfd.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct zfd_http {
    struct MHD_Daemon *mhd;
    zfd_daemon *d;
};

/* ---- the Prometheus text ---- */

typedef struct prom {
    FILE *f;
    char *text;
    size_t len;
} prom;

/* A sample's value: integers exactly, others with 9 digits. */
static void value(FILE *f, double v)
{
    if (v == (double)(long long)v)
        fprintf(f, "} %lld\n", (long long)v);
    else
        fprintf(f, "} %.9g\n", v);
}

/* A label value with \, " and line breaks escaped (the format's rules),
 * written in runs between the characters to escape. */
static void label(FILE *f, const char *key, const char *v, bool first)
{
    if (!first)
        fputc(',', f);
    fputs(key, f);
    fputs("=\"", f);
    for (const char *p = v ? v : ""; *p;) {
        size_t run = strcspn(p, "\\\"\n");
        fwrite(p, 1, run, f);
        p += run;
        if (*p) {
            fputs(*p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\", f);
            p++;
        }
    }
    fputc('"', f);
}

/* The metric families: each one's samples come from every instance, so
 * the text is written family by family (the format wants a family's
 * samples together, after its HELP and TYPE). */
enum fam {
    F_INST_INFO,
    F_INST_UP,
    F_POOL_USE,
    F_POOL_MAP,
    F_POOL_BLOCKS,
    F_POOL_ALLOCS,
    F_POOL_FAIL,
    F_NODE_STATE,
    F_NODE_CB,
    F_NODE_ERR,
    F_NODE_SENT,
    F_NODE_BUSY,
    F_NODE_HELD,
    F_NODE_DEG,
    F_LINK_ENQ,
    F_LINK_DEQ,
    F_LINK_DROP,
    F_LINK_BIN,
    F_LINK_BOUT,
    F_LINK_DEPTH,
    F_LINK_CAP,
    F_LINK_HW,
    F_LINK_BLOCK,
    F_COUNT
};

static const struct {
    const char *name, *type, *help;
} fams[F_COUNT] = {
    [F_INST_INFO] = {"zflow_instance_info", "gauge", "An instance (1), its state as a label."},
    [F_INST_UP] = {"zflow_instance_uptime_seconds", "gauge", "Seconds since it was deployed."},
    [F_POOL_USE] = {"zflow_pool_bytes_in_use", "gauge", "Pool bytes held by capsules now."},
    [F_POOL_MAP] = {"zflow_pool_bytes_mapped", "gauge", "Shared memory the pool has mapped."},
    [F_POOL_BLOCKS] = {"zflow_pool_capsules", "gauge", "Capsules alive in the pool."},
    [F_POOL_ALLOCS] = {"zflow_pool_allocations_total", "counter", "Capsules allocated."},
    [F_POOL_FAIL] = {"zflow_pool_allocation_failures_total", "counter",
                     "Allocations refused (max_memory reached)."},
    [F_NODE_STATE] = {"zflow_node_state", "gauge", "A node (1), its state as a label."},
    [F_NODE_CB] = {"zflow_node_callbacks_total", "counter", "Callbacks completed."},
    [F_NODE_ERR] = {"zflow_node_errors_total", "counter", "Callbacks that returned an error."},
    [F_NODE_SENT] = {"zflow_node_sent_total", "counter", "Capsules sent."},
    [F_NODE_BUSY] = {"zflow_node_cpu_seconds_total", "counter",
                     "Time spent in the node's callbacks (sampled)."},
    [F_NODE_HELD] = {"zflow_node_held_capsules", "gauge", "Capsule references its code holds."},
    [F_NODE_DEG] = {"zflow_node_degraded_total", "counter", "Times it became DEGRADED."},
    [F_LINK_ENQ] = {"zflow_link_enqueued_total", "counter", "Capsules enqueued on the link."},
    [F_LINK_DEQ] = {"zflow_link_dequeued_total", "counter", "Capsules its consumer took."},
    [F_LINK_DROP] = {"zflow_link_dropped_total", "counter",
                     "Capsules dropped (policy, breaker, closing)."},
    [F_LINK_BIN] = {"zflow_link_bytes_in_total", "counter", "Payload bytes enqueued."},
    [F_LINK_BOUT] = {"zflow_link_bytes_out_total", "counter", "Payload bytes taken."},
    [F_LINK_DEPTH] = {"zflow_link_depth", "gauge", "Capsules queued now."},
    [F_LINK_CAP] = {"zflow_link_capacity", "gauge", "The link's capacity."},
    [F_LINK_HW] = {"zflow_link_high_water", "gauge", "The deepest the link has been."},
    [F_LINK_BLOCK] = {"zflow_link_blocked_seconds_total", "counter",
                      "Time producers waited for room."},
};

typedef struct snap {
    char uuid[37], *name;
    double uptime_s;
    zf_instance_state state;
    zf_instance_stats *s;
    zf_instance_live *l;
    struct snap *next;
} snap;

typedef struct snaps {
    snap *head, **tail;
} snaps;

static void take(void *arg, zf_instance *inst, const char *uuid, const char *name, double up)
{
    snaps *ss = arg;
    snap *x = calloc(1, sizeof *x);
    if (!x)
        return;
    snprintf(x->uuid, sizeof x->uuid, "%s", uuid);
    x->name = strdup(name);
    x->uptime_s = up;
    x->state = zf_instance_state_get(inst);
    if (zf_instance_stats_get(inst, &x->s) != ZF_OK || zf_instance_live_get(inst, &x->l) != ZF_OK) {
        zf_instance_stats_free(x->s);
        free(x->name);
        free(x);
        return;
    }
    *ss->tail = x;
    ss->tail = &x->next;
}

static void inst_labels(FILE *f, const snap *x)
{
    fputc('{', f);
    label(f, "uuid", x->uuid, true);
    label(f, "instance", x->name, false);
}

/* "node.port" into its node and port labels. */
static void end_labels(FILE *f, const char *side, const char *np)
{
    const char *dot = strrchr(np, '.');
    char node[256], key[16];
    snprintf(node, sizeof node, "%.*s", dot ? (int)(dot - np) : (int)strlen(np), np);
    snprintf(key, sizeof key, "%s_node", side);
    label(f, key, node, false);
    snprintf(key, sizeof key, "%s_port", side);
    label(f, key, dot ? dot + 1 : "", false);
}

static void family(FILE *f, enum fam k, const snaps *ss)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fams[k].name, fams[k].help, fams[k].name,
            fams[k].type);
    for (const snap *x = ss->head; x; x = x->next) {
        const zf_instance_stats *s = x->s;
        if (k <= F_POOL_FAIL) {
            double v = 0;
            switch (k) {
            case F_INST_INFO:
                v = 1;
                break;
            case F_INST_UP:
                v = x->uptime_s;
                break;
            case F_POOL_USE:
                v = (double)s->pool.bytes_in_use;
                break;
            case F_POOL_MAP:
                v = (double)s->pool.bytes_mapped;
                break;
            case F_POOL_BLOCKS:
                v = (double)s->pool.blocks_in_use;
                break;
            case F_POOL_ALLOCS:
                v = (double)s->pool.allocs;
                break;
            default:
                v = (double)s->pool.alloc_failures;
                break;
            }
            fputs(fams[k].name, f);
            inst_labels(f, x);
            if (k == F_INST_INFO)
                label(f, "state", zf_instance_state_name(x->state), false);
            value(f, v);
        } else if (k <= F_NODE_DEG) {
            for (size_t i = 0; i < s->n_nodes; i++) {
                const zf_node_stats *n = &s->nodes[i];
                double v = 0;
                switch (k) {
                case F_NODE_STATE:
                    v = 1;
                    break;
                case F_NODE_CB:
                    v = (double)n->callbacks;
                    break;
                case F_NODE_ERR:
                    v = (double)n->errors;
                    break;
                case F_NODE_SENT:
                    v = (double)n->sent;
                    break;
                case F_NODE_BUSY:
                    v = (double)n->busy_ns / 1e9;
                    break;
                case F_NODE_HELD:
                    v = i < x->l->n_nodes ? (double)x->l->nodes[i].held : 0;
                    break;
                default:
                    v = (double)n->degraded_count;
                    break;
                }
                fputs(fams[k].name, f);
                inst_labels(f, x);
                label(f, "node", n->id, false);
                if (k == F_NODE_STATE) {
                    label(f, "kind", zf_node_kind_name(n->kind), false);
                    label(f, "state", zf_node_state_name(n->state), false);
                }
                value(f, v);
            }
        } else {
            for (size_t i = 0; i < s->n_links; i++) {
                const zf_link_info *li = &s->links[i];
                const zf_link_live *ll = i < x->l->n_links ? &x->l->links[i] : NULL;
                double v = 0;
                switch (k) {
                case F_LINK_ENQ:
                    v = (double)li->stats.enqueued;
                    break;
                case F_LINK_DEQ:
                    v = (double)li->stats.dequeued;
                    break;
                case F_LINK_DROP:
                    v = (double)li->stats.dropped;
                    break;
                case F_LINK_BIN:
                    v = ll ? (double)ll->bytes_in : 0;
                    break;
                case F_LINK_BOUT:
                    v = ll ? (double)ll->bytes_out : 0;
                    break;
                case F_LINK_DEPTH:
                    v = (double)li->stats.depth;
                    break;
                case F_LINK_CAP:
                    v = (double)li->stats.capacity;
                    break;
                case F_LINK_HW:
                    v = (double)li->stats.high_water;
                    break;
                default:
                    v = (double)li->stats.blocked_ns / 1e9;
                    break;
                }
                fputs(fams[k].name, f);
                inst_labels(f, x);
                end_labels(f, "from", li->from);
                end_labels(f, "to", li->to);
                value(f, v);
            }
        }
    }
}

/* The daemon's own figures: resident memory from /proc/self/statm. */
static void daemon_metrics(FILE *f, zfd_daemon *d, size_t n)
{
    long pages = 0, rss = 0;
    FILE *m = fopen("/proc/self/statm", "re");
    if (m) {
        if (fscanf(m, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(m);
    }
    fprintf(f, "# HELP zflow_daemon_info The daemon (1): its worker name and version.\n"
               "# TYPE zflow_daemon_info gauge\nzflow_daemon_info{");
    label(f, "worker", d->name, true);
    label(f, "version", ZF_VERSION_STRING, false);
    fprintf(f, "} 1\n");
    fprintf(f,
            "# HELP zflow_daemon_uptime_seconds Seconds since the daemon started.\n"
            "# TYPE zflow_daemon_uptime_seconds gauge\nzflow_daemon_uptime_seconds %.3f\n"
            "# HELP zflow_daemon_instances Instances hosted.\n"
            "# TYPE zflow_daemon_instances gauge\nzflow_daemon_instances %zu\n"
            "# HELP zflow_daemon_resident_bytes The daemon's resident memory.\n"
            "# TYPE zflow_daemon_resident_bytes gauge\nzflow_daemon_resident_bytes %ld\n",
            (double)(zf_clock_ns() - d->started_ns) / 1e9, n, rss * sysconf(_SC_PAGESIZE));
}

char *zfd_metrics_text(zfd_daemon *d)
{
    snaps ss = {NULL, &ss.head};
    zfd_each_instance(d, take, &ss);
    size_t n = 0;
    for (const snap *x = ss.head; x; x = x->next)
        n++;
    prom p = {0};
    p.f = open_memstream(&p.text, &p.len);
    if (p.f) {
        __fsetlocking(p.f, FSETLOCKING_BYCALLER); /* this thread's alone: no lock per call */
        daemon_metrics(p.f, d, n);
        for (int k = 0; k < F_COUNT; k++)
            family(p.f, (enum fam)k, &ss);
        fclose(p.f);
    }
    for (snap *x = ss.head, *next; x; x = next) {
        next = x->next;
        zf_instance_stats_free(x->s);
        zf_instance_live_free(x->l);
        free(x->name);
        free(x);
    }
    return p.text;
}

/* ---- serving ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, char *body,
                             bool owned)
{
    size_t len = body ? strlen(body) : 0;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body ? body : (char *)"", owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (!strncmp(type, "text/html", 9))
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; style-src "
                                "'unsafe-inline'; connect-src 'self'");
    enum MHD_Result res = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return res;
}

/* The control protocol's answer to a read-only op, as the page's JSON. */
static char *api(zfd_daemon *d, zf_op op, const char *id)
{
    zf_request req = {.version = ZF_PROTOCOL_VERSION, .op = op, .id = id};
    zf_peer peer = {.pid = 0, .uid = (unsigned)getuid(), .gid = (unsigned)getgid()};
    return zfd_handle(d, &req, &peer);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    zfd_http *h = cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                     (char *)"only GET and HEAD are served here (read-only)\n", false);
    if (!strcmp(url, "/metrics"))
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                     zfd_metrics_text(h->d), true);
    if (!strcmp(url, "/"))
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)zfd_page_html, false);
    if (!strcmp(url, "/api/list"))
        return reply(c, MHD_HTTP_OK, "application/json", api(h->d, ZF_OP_LIST, NULL), true);
    if (!strcmp(url, "/api/status")) {
        const char *id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "id");
        if (!id || !*id || strlen(id) > 256)
            return reply(c, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8",
                         (char *)"/api/status needs ?id=UUID (or a name)\n", false);
        return reply(c, MHD_HTTP_OK, "application/json", api(h->d, ZF_OP_STATUS, id), true);
    }
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
                 (char *)"not found: /metrics, / (the live page), /api/list, /api/status?id=ID\n",
                 false);
}

/* "PORT", "HOST:PORT" or "[V6]:PORT" into a socket address; a missing
 * host is 127.0.0.1 (loopback unless told otherwise). */
static bool parse_addr(const char *addr, struct sockaddr_storage *ss, char *err, size_t errlen)
{
    memset(ss, 0, sizeof *ss);
    char host[128] = "127.0.0.1";
    const char *port = addr;
    if (addr[0] == '[') {
        const char *e = strchr(addr, ']');
        if (!e || e[1] != ':' || e - addr - 1 >= (long)sizeof host) {
            snprintf(err, errlen, "'%s': expected [IPV6]:PORT", addr);
            return false;
        }
        snprintf(host, sizeof host, "%.*s", (int)(e - addr - 1), addr + 1);
        port = e + 2;
    } else if (strchr(addr, ':')) {
        const char *colon = strrchr(addr, ':');
        if (colon - addr >= (long)sizeof host) {
            snprintf(err, errlen, "'%s': host too long", addr);
            return false;
        }
        if (colon != addr)
            snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        port = colon + 1;
    }
    char *end = NULL;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 0 || p > 65535) {
        snprintf(err, errlen, "'%s': expected PORT, HOST:PORT or [IPV6]:PORT (port 0-65535)", addr);
        return false;
    }
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)p);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)p);
    } else {
        snprintf(err, errlen, "'%s': '%s' is not an IP address (give 127.0.0.1, 0.0.0.0, ::1...)",
                 addr, host);
        return false;
    }
    return true;
}

zfd_http *zfd_http_start(zfd_daemon *d, const char *addr, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    if (!parse_addr(addr, &ss, err, errlen))
        return NULL;
    zfd_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->d = d;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                              (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 32u,
                              MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!h->mhd) {
        snprintf(err, errlen, "cannot listen on %s (in use, or not an address of this machine)",
                 addr);
        free(h);
        return NULL;
    }
    return h;
}

unsigned zfd_http_port(const zfd_http *h)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}

void zfd_http_stop(zfd_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->mhd);
    free(h);
}
