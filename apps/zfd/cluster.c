/* zfd in a cluster: the options, and the requests that span workers.
 *
 * With --domain (or ZF_DOMAIN, or `domain` in --config) zfd joins a Cyclone
 * DDS domain (zf_cluster_create). A deploy whose nodes `mapping` puts on
 * other workers is orchestrated here in two phases: every worker creates
 * its part (zf_flow_part: its nodes plus bridge endpoints), not started; if
 * any fails, every part is destroyed again and the error names the worker
 * and what it said; then every part starts. ls, status, start, suspend,
 * resume and destroy of such an instance, from any worker, ask every worker
 * of it and aggregate the answers. Workers talk in JSON over the cluster's
 * control topic; each request carries one ordinary zflow request. */
#include "zfd.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PHASE_TIMEOUT_MS 30000 /* load, start, destroy */
#define QUERY_TIMEOUT_MS 5000  /* ls, status */

static struct {
    int domain; /* -1: not asked */
    const char *dds_config, *key_file;
    int64_t lease_ns;
} co = {.domain = -1};

static const char *arg_value(int argc, char **argv, int *i)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        fprintf(stderr, "zfd: %s needs a value (see zfd --help)\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

static void set_domain(const char *v, const char *where)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 0 || n > 230) {
        fprintf(stderr, "zfd: %s: the DDS domain id is a number from 0 to 230, not '%s'\n", where,
                v);
        exit(2);
    }
    co.domain = (int)n;
}

static void set_lease(const char *v, const char *where)
{
    if (zf_parse_duration(v, &co.lease_ns) != ZF_OK || co.lease_ns < 100000000LL) {
        fprintf(stderr, "zfd: %s: a lease is a duration of at least 100ms (\"1s\"), not '%s'\n",
                where, v);
        exit(2);
    }
}

bool zfd_cluster_arg(int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strncmp(a, "--domain", 8) && (a[8] == '\0' || a[8] == '='))
        set_domain(arg_value(argc, argv, i), "--domain");
    else if (!strncmp(a, "--dds-config", 12) && (a[12] == '\0' || a[12] == '='))
        co.dds_config = arg_value(argc, argv, i);
    else if (!strncmp(a, "--lease", 7) && (a[7] == '\0' || a[7] == '='))
        set_lease(arg_value(argc, argv, i), "--lease");
    else if (!strncmp(a, "--cluster-key", 13) && (a[13] == '\0' || a[13] == '='))
        co.key_file = arg_value(argc, argv, i);
    else
        return false;
    return true;
}

void zfd_cluster_config(const zf_config *c, const char *file)
{
    const char *s = NULL;
    char where[600];
    snprintf(where, sizeof where, "--config %s", file);
    const zf_config *dom = zf_config_get(c, "domain");
    if (dom && co.domain < 0)
        set_domain(zf_config_text(dom) ? zf_config_text(dom) : "", where);
    if (!co.dds_config && zf_config_string(c, "dds_config", NULL, &s) == ZF_OK && s)
        co.dds_config = s;
    if (!co.key_file && zf_config_string(c, "cluster_key", NULL, &s) == ZF_OK && s)
        co.key_file = s;
    if (!co.lease_ns && zf_config_string(c, "lease", NULL, &s) == ZF_OK && s)
        set_lease(s, where);
}

/* ---- requests from other workers ---- */

static zf_request *decode(const zf_config *req)
{
    char *text = zf_config_to_json(req);
    zf_request *r = NULL;
    if (text && zf_request_decode(text, strlen(text), &r) != ZF_OK)
        r = NULL; /* the caller answers that no valid request came */
    free(text);
    return r;
}

/* {"op":"part"|"local"|"abort", "request":{...}, "uuid", "orchestrator",
 * "workers"} -> the local handler's response text. */
static char *on_request(void *arg, const char *from, const char *body)
{
    zfd_daemon *d = arg;
    zf_config *t = NULL;
    if (zf_json_parse(body, strlen(body), &t) != ZF_OK)
        return zf_response_error(ZF_EPARSE, "worker '%s' sent a request that is not JSON: %s", from,
                                 zf_last_error());
    const char *op = NULL, *uuid = NULL, *orch = NULL;
    ZF_IGNORE(zf_config_string(t, "op", "", &op));
    ZF_IGNORE(zf_config_string(t, "uuid", NULL, &uuid));
    ZF_IGNORE(zf_config_string(t, "orchestrator", NULL, &orch));
    zf_request *req = decode(zf_config_get(t, "request"));
    char *resp = NULL;
    if (!req) {
        resp = zf_response_error(ZF_EPROTO, "worker '%s' sent no valid request", from);
    } else if (!strcmp(op, "part") && uuid && orch) {
        char *workers = zf_config_to_json(zf_config_get(t, "workers"));
        zfd_part p = {.uuid = uuid, .orchestrator = orch, .workers = workers ? workers : "[]"};
        resp = zfd_deploy_part(d, req, &p);
        free(workers);
    } else if (!strcmp(op, "local")) {
        resp = zfd_handle_local(d, req, NULL);
    } else {
        resp = zf_response_error(ZF_EPROTO, "unknown cluster operation '%s'", op);
    }
    zf_request_free(req);
    zf_config_free(t);
    return resp;
}

static void on_lost(void *arg, const char *worker, bool left)
{
    zfd_mark_lost(arg, worker, left);
}

static void on_joined(void *arg, const char *worker)
{
    zfd_returning_joined(arg, worker);
}

bool zfd_cluster_start(zfd_daemon *d)
{
    const char *env = getenv("ZF_DOMAIN");
    if (co.domain < 0 && !(env && *env))
        return true; /* a daemon of its own */
    zf_cluster_options o = {.name = d->name,
                            .domain = co.domain,
                            .config = co.dds_config,
                            .lease_ns = co.lease_ns,
                            .key_file = co.key_file,
                            .handler = on_request,
                            .handler_arg = d,
                            .on_lost = on_lost,
                            .lost_arg = d,
                            .on_joined = on_joined,
                            .joined_arg = d};
    if (zf_cluster_create(&o, &d->cluster) != ZF_OK) {
        fprintf(stderr, "zfd: cannot join the cluster: %s\n", zf_last_error());
        return false;
    }
    zfd_log(ZF_LOG_INFO, "worker '%s' is in the cluster (DDS domain %d)", d->name,
            co.domain >= 0 ? co.domain : atoi(env));
    return true;
}

void zfd_cluster_stop(zfd_daemon *d)
{
    zfd_returning_stop();
    zf_cluster_destroy(d->cluster);
    d->cluster = NULL;
}

/* ---- helpers ---- */

static char *encode_with(const zf_request *req, zf_op op, const char *id, bool start)
{
    zf_request r = *req;
    r.op = op;
    if (id)
        r.id = id;
    r.start = start;
    return zf_request_encode(&r);
}

static char *body(const char *op, const char *request, const char *uuid, const char *orch,
                  const char *workers)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "op", op);
    zf_json_put_raw(w, "request", request);
    if (uuid)
        zf_json_put_string(w, "uuid", uuid);
    if (orch)
        zf_json_put_string(w, "orchestrator", orch);
    if (workers)
        zf_json_put_raw(w, "workers", workers);
    zf_json_close(w);
    return zf_json_writer_finish(w);
}

/* The result of a response text (parsed; the caller frees the tree), or
 * NULL with its error message into msg. */
static zf_config *result_of(const char *resp, char *msg, size_t len, zf_config **tree)
{
    *tree = NULL;
    if (!resp) {
        snprintf(msg, len, "no answer");
        return NULL;
    }
    if (zf_json_parse(resp, strlen(resp), tree) != ZF_OK) {
        snprintf(msg, len, "an answer that is not JSON");
        return NULL;
    }
    bool okv = false;
    ZF_IGNORE(zf_config_bool(*tree, "ok", false, &okv));
    if (!okv) {
        const char *m = NULL;
        ZF_IGNORE(zf_config_string(*tree, "error.message", "?", &m));
        snprintf(msg, len, "%s", m);
        return NULL;
    }
    return (zf_config *)zf_config_get(*tree, "result");
}

typedef struct fanout {
    size_t n;
    const char **workers;
    char **bodies, **replies, **errors;
} fanout;

static void fanout_free(fanout *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->bodies[i]);
        free(f->replies[i]);
        free(f->errors[i]);
    }
    free(f->bodies);
    free(f->replies);
    free(f->errors);
    free((void *)f->workers);
}

/* The same body to every worker named in `workers` (a JSON array), or to
 * every live worker (NULL). */
static bool fanout_call(zfd_daemon *d, fanout *f, const char *workers_json, const char *b,
                        int timeout_ms)
{
    memset(f, 0, sizeof *f);
    zf_config *t = NULL;
    zf_worker_info *all = NULL;
    size_t n = 0;
    if (workers_json) {
        if (zf_json_parse(workers_json, strlen(workers_json), &t) != ZF_OK)
            return false;
        n = zf_config_len(t);
    } else if (zf_cluster_workers(d->cluster, &all, &n) != ZF_OK) {
        return false;
    }
    f->workers = calloc(n + 1, sizeof *f->workers);
    f->bodies = calloc(n + 1, sizeof *f->bodies);
    f->replies = calloc(n + 1, sizeof *f->replies);
    f->errors = calloc(n + 1, sizeof *f->errors);
    char **names = calloc(n + 1, sizeof *names);
    bool okv = f->workers && f->bodies && f->replies && f->errors && names;
    for (size_t i = 0; okv && i < n; i++) {
        if (all && !all[i].alive)
            continue;
        names[f->n] = strdup(all ? all[i].name : zf_config_text(zf_config_at(t, i)));
        f->workers[f->n] = names[f->n];
        f->bodies[f->n] = strdup(b);
        f->n++;
    }
    free(all);
    zf_config_free(t);
    if (okv)
        /* every reply, or why there is none, is in f->replies and f->errors */
        ZF_IGNORE(zf_cluster_call(d->cluster, f->n, f->workers, (const char *const *)f->bodies,
                                  timeout_ms, f->replies, f->errors));
    /* names are owned through f->workers from here */
    free(names);
    return okv;
}

static void fanout_free_names(fanout *f)
{
    for (size_t i = 0; i < f->n; i++)
        free((char *)f->workers[i]);
}

bool zfd_cluster_spans(zfd_daemon *d, const zf_flow *f)
{
    for (size_t i = 0; i < zf_flow_node_count(f); i++) {
        const char *w = zf_flow_node_worker(f, i);
        if (w && *w && strcmp(w, d->name) != 0)
            return true;
    }
    return false;
}

static void new_uuid(char out[37])
{
    unsigned char b[16] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t k = read(fd, b, sizeof b);
        (void)k;
        close(fd);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* ---- deploy ---- */

char *zfd_cluster_deploy(zfd_daemon *d, const zf_request *req, const zf_flow *f)
{
    const char **ws = NULL;
    size_t n = 0;
    if (zf_flow_workers(f, d->name, &ws, &n) != ZF_OK)
        return zf_response_error(ZF_ENOMEM, "out of memory");
    char msg[2048] = "";
    for (size_t i = 0; i < n; i++) {
        if (zf_cluster_alive(d->cluster, ws[i]))
            continue;
        for (size_t k = 0; k < zf_flow_node_count(f); k++) {
            const char *w = zf_flow_node_worker(f, k);
            if (w && !strcmp(w, ws[i])) {
                size_t l = strlen(msg);
                snprintf(msg + l, sizeof msg - l,
                         "%snode '%s' is mapped to worker '%s', which "
                         "is not in the cluster",
                         l ? "; " : "", zf_flow_node_id(f, k), ws[i]);
                break;
            }
        }
    }
    if (msg[0]) {
        free(ws);
        return zf_response_error(ZF_ENOTFOUND, "%s ('zfctl workers' lists the workers seen)", msg);
    }
    char uuid[37];
    if (zf_flow_instance_id(f))
        snprintf(uuid, sizeof uuid, "%s", zf_flow_instance_id(f));
    else
        new_uuid(uuid);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_array(w, NULL);
    for (size_t i = 0; i < n; i++)
        zf_json_put_string(w, NULL, ws[i]);
    zf_json_close(w);
    char *workers = zf_json_writer_finish(w);
    free(ws);
    char *enc = encode_with(req, ZF_OP_DEPLOY, NULL, false);
    char *b = body("part", enc, uuid, d->name, workers);
    free(enc);
    uint64_t t0 = zf_clock_ns();
    fanout fo;
    char *resp = NULL;
    if (!fanout_call(d, &fo, workers, b, PHASE_TIMEOUT_MS)) {
        free(b);
        free(workers);
        return zf_response_error(ZF_ENOMEM, "out of memory");
    }
    free(b);
    /* Phase 1 answered: any failure rolls every part back. */
    char failed[4096] = "", loaded[1024] = "";
    size_t n_loaded = 0;
    const char *name = NULL;
    char first_name[160] = "";
    for (size_t i = 0; i < fo.n; i++) {
        char m[3000];
        zf_config *tree = NULL;
        zf_config *r = result_of(fo.replies[i], m, sizeof m, &tree);
        if (!r && fo.errors[i])
            snprintf(m, sizeof m, "%s", fo.errors[i]);
        if (r) {
            n_loaded++;
            size_t l = strlen(loaded);
            snprintf(loaded + l, sizeof loaded - l, "%s%s", l ? ", " : "", fo.workers[i]);
            if (!first_name[0] && zf_config_string(r, "name", "", &name) == ZF_OK)
                snprintf(first_name, sizeof first_name, "%s", name);
        } else {
            size_t l = strlen(failed);
            snprintf(failed + l, sizeof failed - l, "%sworker '%s': %s", l ? "; " : "",
                     fo.workers[i], m);
        }
        zf_config_free(tree);
    }
    if (failed[0]) {
        zf_request abort_req = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_DESTROY, .id = uuid};
        char *aenc = zf_request_encode(&abort_req);
        char *ab = body("local", aenc, NULL, NULL, NULL);
        free(aenc);
        /* roll back where it loaded (the others have nothing of it) */
        w = zf_json_writer_new();
        zf_json_open_array(w, NULL);
        for (size_t i = 0; i < fo.n; i++) {
            zf_config *tree = NULL;
            char m[64];
            if (result_of(fo.replies[i], m, sizeof m, &tree))
                zf_json_put_string(w, NULL, fo.workers[i]);
            zf_config_free(tree);
        }
        zf_json_close(w);
        char *back = zf_json_writer_finish(w);
        fanout fb;
        if (n_loaded && fanout_call(d, &fb, back, ab, PHASE_TIMEOUT_MS)) {
            zfd_returning_keep(d, fb.n, fb.workers, fb.replies, uuid, ab);
            fanout_free_names(&fb);
            fanout_free(&fb);
        }
        /* a lost worker may have created its part before it went */
        zfd_returning_keep(d, fo.n, fo.workers, fo.replies, uuid, ab);
        free(back);
        free(ab);
        resp = zf_response_error(ZF_ENODE, "the deploy failed on %s%s%s%s", failed,
                                 n_loaded ? "; rolled back on " : "; nothing was created", loaded,
                                 n_loaded ? "" : "");
        zfd_log(ZF_LOG_WARN, "cluster deploy %s refused: %s", uuid, failed);
        goto out;
    }
    if (req->start) {
        zf_request sr = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_START, .id = uuid};
        char *senc = zf_request_encode(&sr);
        char *sb = body("local", senc, NULL, NULL, NULL);
        free(senc);
        fanout fs;
        char serr[1024] = "";
        if (fanout_call(d, &fs, workers, sb, PHASE_TIMEOUT_MS)) {
            for (size_t i = 0; i < fs.n; i++) {
                zf_config *tree = NULL;
                char m[512];
                if (!result_of(fs.replies[i], m, sizeof m, &tree)) {
                    size_t l = strlen(serr);
                    snprintf(serr + l, sizeof serr - l, "%sworker '%s': %s", l ? "; " : "",
                             fs.workers[i], fs.errors[i] ? fs.errors[i] : m);
                }
                zf_config_free(tree);
            }
            fanout_free_names(&fs);
            fanout_free(&fs);
        }
        free(sb);
        if (serr[0]) {
            resp = zf_response_error(ZF_ENODE, "instance %s was created but did not start on %s",
                                     uuid, serr);
            goto out;
        }
    }
    zfd_log(ZF_LOG_INFO, "deployed %s (%s) across %s in %.1f ms%s", uuid, first_name, loaded,
            (double)(zf_clock_ns() - t0) / 1e6, req->start ? ", started" : "");
out:
    fanout_free_names(&fo);
    fanout_free(&fo);
    if (!resp) {
        w = zf_json_writer_new();
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "uuid", uuid);
        zf_json_put_string(w, "name", first_name);
        zf_json_put_string(w, "state", req->start ? "RUNNING" : "CREATED");
        zf_json_put_string(w, "worker", d->name);
        zf_json_put_raw(w, "workers", workers);
        zf_json_put_double(w, "deploy_s", (double)(zf_clock_ns() - t0) / 1e9);
        zf_json_close(w);
        char *res = zf_json_writer_finish(w);
        resp = zf_response_ok(res);
        free(res);
    }
    free(workers);
    return resp;
}

/* ---- ls, workers, and requests on a cluster instance ---- */

/* Every instance of the cluster: each worker's list, merged by UUID; the
 * status is the first non-RUNNING one seen, or DEGRADED naming a worker of
 * the instance that did not answer. */
static char *cluster_list(zfd_daemon *d)
{
    zf_request lr = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_LIST};
    char *enc = zf_request_encode(&lr);
    char *b = body("local", enc, NULL, NULL, NULL);
    free(enc);
    fanout fo;
    bool okv = fanout_call(d, &fo, NULL, b, QUERY_TIMEOUT_MS);
    free(b);
    if (!okv)
        return zf_response_error(ZF_ENOMEM, "out of memory");
    zf_config *trees[512] = {NULL};
    const zf_config *lists[512] = {NULL};
    size_t nt = fo.n < 512 ? fo.n : 512;
    for (size_t i = 0; i < nt; i++) {
        char m[256];
        zf_config *r = result_of(fo.replies[i], m, sizeof m, &trees[i]);
        lists[i] = r ? zf_config_get(r, "instances") : NULL;
    }
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_open_array(w, "instances");
    for (size_t i = 0; i < nt; i++) {
        for (size_t k = 0; k < zf_config_len(lists[i]); k++) {
            const zf_config *e = zf_config_at(lists[i], k);
            const char *uuid = NULL, *st = NULL;
            ZF_IGNORE(zf_config_string(e, "uuid", "", &uuid));
            bool seen = false; /* listed by an earlier worker */
            for (size_t j = 0; j < i && !seen; j++)
                for (size_t q = 0; q < zf_config_len(lists[j]) && !seen; q++) {
                    const char *u2 = NULL;
                    ZF_IGNORE(zf_config_string(zf_config_at(lists[j], q), "uuid", "", &u2));
                    seen = !strcmp(u2, uuid);
                }
            if (seen)
                continue;
            char status[400];
            ZF_IGNORE(zf_config_string(e, "status", "?", &st));
            snprintf(status, sizeof status, "%s", st);
            const zf_config *ws = zf_config_get(e, "workers");
            for (size_t x = 0; x < zf_config_len(ws); x++) {
                const char *wn = zf_config_text(zf_config_at(ws, x));
                bool answered = false;
                for (size_t j = 0; j < nt && !answered; j++) {
                    if (!lists[j] || strcmp(fo.workers[j], wn))
                        continue;
                    for (size_t q = 0; q < zf_config_len(lists[j]) && !answered; q++) {
                        const char *u2 = NULL, *s2 = NULL;
                        ZF_IGNORE(zf_config_string(zf_config_at(lists[j], q), "uuid", "", &u2));
                        if (strcmp(u2, uuid))
                            continue;
                        answered = true;
                        ZF_IGNORE(zf_config_string(zf_config_at(lists[j], q), "status", "", &s2));
                        if (strncmp(s2, "RUNNING", 7) == 0 && strcmp(s2, "RUNNING") &&
                            !strchr(status, '('))
                            snprintf(status, sizeof status, "%s", s2);
                    }
                }
                if (!answered && !strstr(status, wn)) {
                    size_t l = strlen(status);
                    snprintf(status + l, sizeof status - l, " (DEGRADED: worker '%s' lost)", wn);
                }
            }
            zf_json_open_object(w, NULL);
            zf_json_put_string(w, "uuid", uuid);
            const char *nm = NULL, *cr = NULL;
            ZF_IGNORE(zf_config_string(e, "name", "", &nm));
            ZF_IGNORE(zf_config_string(e, "created", "", &cr));
            zf_json_put_string(w, "name", nm);
            zf_json_put_string(w, "status", status);
            char *wj = zf_config_to_json(ws);
            zf_json_put_raw(w, "workers", wj ? wj : "[]");
            free(wj);
            zf_json_put_string(w, "created", cr);
            zf_json_close(w);
        }
    }
    zf_json_close(w);
    zf_json_close(w);
    for (size_t i = 0; i < nt; i++)
        zf_config_free(trees[i]);
    fanout_free_names(&fo);
    fanout_free(&fo);
    char *res = zf_json_writer_finish(w);
    char *resp = zf_response_ok(res);
    free(res);
    return resp;
}

static char *cluster_workers(zfd_daemon *d, const zf_request *req)
{
    char *mine = zfd_handle_local(d, req, NULL);
    zf_config *tree = NULL;
    char m[256];
    const zf_config *r = result_of(mine, m, sizeof m, &tree);
    const zf_config *self = r ? zf_config_at(zf_config_get(r, "workers"), 0) : NULL;
    zf_worker_info *all = NULL;
    size_t n = 0;
    if (zf_cluster_workers(d->cluster, &all, &n) != ZF_OK)
        n = 0; /* out of memory: the table lists none */
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_open_array(w, "workers");
    for (size_t i = 0; i < n; i++) {
        const zf_worker_info *x = &all[i];
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "name", x->name);
        zf_json_put_string(w, "status", x->alive ? "alive" : x->left ? "left" : "lost");
        zf_json_put_string(w, "host", x->host);
        zf_json_put_string(w, "os", x->os);
        zf_json_put_int(w, "pid", x->pid);
        zf_json_put_uint(w, "instances", x->instances);
        zf_json_put_uint(w, "cpus", x->cpus);
        zf_json_put_uint(w, "memory", x->memory);
        zf_json_put_string(w, "version", x->version);
        if (i == 0 && self) {
            const char *addr = NULL;
            double up = 0;
            ZF_IGNORE(zf_config_string(self, "address", "", &addr));
            ZF_IGNORE(zf_config_float(self, "uptime_s", 0, &up));
            zf_json_put_string(w, "address", addr);
            zf_json_put_double(w, "uptime_s", up);
            char *ab = zf_config_to_json(zf_config_get(self, "abandoned_threads"));
            zf_json_put_raw(w, "abandoned_threads", ab ? ab : "[]");
            free(ab);
            zf_cluster_stats cs;
            zf_cluster_stats_get(d->cluster, &cs);
            zf_json_put_uint(w, "control_sent", cs.sent);
            zf_json_put_uint(w, "control_received", cs.received);
            zf_json_put_uint(w, "control_refused", cs.refused);
        } else {
            zf_json_put_string(w, "address", "dds");
            zf_json_put_raw(w, "abandoned_threads", "[]");
        }
        zf_json_close(w);
    }
    zf_json_close(w);
    zf_json_close(w);
    free(all);
    zf_config_free(tree);
    free(mine);
    char *res = zf_json_writer_finish(w);
    char *resp = zf_response_ok(res);
    free(res);
    return resp;
}

/* The UUID and workers of a cluster instance named by id, asking the other
 * workers when this one has no part of it. */
static bool find_instance(zfd_daemon *d, const char *id, char uuid[37], char **workers)
{
    if (zfd_is_cluster_instance(d, id, uuid, workers))
        return true;
    char *err = NULL;
    zf_request probe = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_STATUS, .id = id};
    char *local = zfd_handle_local(d, &probe, NULL);
    zf_config *tree = NULL;
    char m[256];
    bool here = result_of(local, m, sizeof m, &tree) != NULL;
    zf_config_free(tree);
    free(local);
    free(err);
    if (here)
        return false; /* an instance of this daemon alone */
    char *all = cluster_list(d);
    const zf_config *r = result_of(all, m, sizeof m, &tree);
    const zf_config *list = r ? zf_config_get(r, "instances") : NULL;
    bool found = false;
    size_t idlen = strlen(id);
    for (size_t i = 0; i < zf_config_len(list) && !found; i++) {
        const zf_config *e = zf_config_at(list, i);
        const char *u = NULL, *nm = NULL;
        ZF_IGNORE(zf_config_string(e, "uuid", "", &u));
        ZF_IGNORE(zf_config_string(e, "name", "", &nm));
        if (!strcmp(u, id) || !strcmp(nm, id) || !strncmp(u, id, idlen)) {
            snprintf(uuid, 37, "%s", u);
            *workers = zf_config_to_json(zf_config_get(e, "workers"));
            found = *workers != NULL;
        }
    }
    zf_config_free(tree);
    free(all);
    return found;
}

static void sum_report(zf_json_writer *w, const zf_config *const *reports, size_t n)
{
    static const char *const fields[] = {
        "in_flight_at_stop", "delivered_in_drain",  "dropped",         "dropped_in_drain",
        "release_callbacks", "pool_bytes_before",   "bytes_freed",     "pool_bytes_after",
        "bytes_abandoned",   "bytes_leaked",        "pool_high_water", "nodes_abandoned",
        "shared_writes",     "child_deaths",        "refs_reclaimed",  "bytes_reclaimed",
        "inputs_lost",       "nodes_killed_at_stop"};
    zf_json_open_object(w, "report");
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t v = 0;
            ZF_IGNORE(zf_config_int(reports[i], fields[f], 0, &v));
            sum += (uint64_t)v;
        }
        zf_json_put_uint(w, fields[f], sum);
    }
    double drain = 0;
    bool timed_out = false;
    char held[1024] = "";
    for (size_t i = 0; i < n; i++) {
        double x = 0;
        bool t = false;
        const char *h = NULL;
        ZF_IGNORE(zf_config_float(reports[i], "drain_s", 0, &x));
        ZF_IGNORE(zf_config_bool(reports[i], "drain_timed_out", false, &t));
        ZF_IGNORE(zf_config_string(reports[i], "held", "", &h));
        drain = x > drain ? x : drain;
        timed_out = timed_out || t;
        if (h && *h) {
            size_t l = strlen(held);
            snprintf(held + l, sizeof held - l, "%s%s", l ? "; " : "", h);
        }
    }
    zf_json_put_double(w, "drain_s", drain);
    zf_json_put_bool(w, "drain_timed_out", timed_out);
    zf_json_put_string(w, "held", held);
    zf_json_close(w);
}

/* start, suspend, resume, status, destroy on every worker of the instance. */
static char *cluster_op(zfd_daemon *d, const zf_request *req, const char *uuid, const char *workers)
{
    zf_request r = *req;
    r.id = uuid;
    char *enc = zf_request_encode(&r);
    char *b = body("local", enc, NULL, NULL, NULL);
    free(enc);
    fanout fo;
    bool okv = fanout_call(d, &fo, workers, b,
                           req->op == ZF_OP_STATUS ? QUERY_TIMEOUT_MS : PHASE_TIMEOUT_MS);
    if (!okv) {
        free(b);
        return zf_response_error(ZF_ENOMEM, "out of memory");
    }
    zf_config *trees[512] = {NULL};
    const zf_config *res[512] = {NULL};
    size_t nt = fo.n < 512 ? fo.n : 512, answered = 0;
    char failed[2048] = "";
    for (size_t i = 0; i < nt; i++) {
        char m[512];
        res[i] = result_of(fo.replies[i], m, sizeof m, &trees[i]);
        if (res[i]) {
            answered++;
            continue;
        }
        size_t l = strlen(failed);
        snprintf(failed + l, sizeof failed - l, "%s%s: %s", l ? "; " : "", fo.workers[i],
                 fo.errors[i] ? fo.errors[i] : m);
    }
    char *resp = NULL;
    if (req->op == ZF_OP_DESTROY) /* even when nobody answered */
        zfd_returning_keep(d, fo.n, fo.workers, fo.replies, uuid, b);
    zf_json_writer *w = zf_json_writer_new();
    if (!answered) {
        resp =
            zf_response_error(ZF_ENOTFOUND, "no worker of instance %s answered: %s", uuid, failed);
        goto out;
    }
    const zf_config *first = NULL;
    for (size_t i = 0; i < nt && !first; i++)
        first = res[i];
    const char *nm = NULL, *st = NULL, *status = NULL;
    ZF_IGNORE(zf_config_string(first, "name", "", &nm));
    ZF_IGNORE(zf_config_string(first, "state", "", &st));
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", uuid);
    zf_json_put_string(w, "name", nm);
    zf_json_put_string(w, "state", st);
    zf_json_put_raw(w, "workers", workers);
    zf_json_open_array(w, "unreachable");
    for (size_t i = 0; i < nt; i++)
        if (!res[i])
            zf_json_put_string(w, NULL, fo.workers[i]);
    zf_json_close(w);
    if (failed[0])
        zf_json_put_string(w, "errors", failed);
    if (req->op == ZF_OP_STATUS) {
        char stbuf[512];
        ZF_IGNORE(zf_config_string(first, "status", "", &status));
        snprintf(stbuf, sizeof stbuf, "%s", status);
        for (size_t i = 0; i < nt; i++) {
            const char *s2 = NULL;
            ZF_IGNORE(zf_config_string(res[i], "status", "", &s2));
            if (res[i] && strcmp(s2, stbuf) && !strchr(stbuf, '('))
                snprintf(stbuf, sizeof stbuf, "%s", s2);
            if (!res[i] && !strstr(stbuf, fo.workers[i])) {
                size_t l = strlen(stbuf);
                snprintf(stbuf + l, sizeof stbuf - l, " (DEGRADED: worker '%s' lost)",
                         fo.workers[i]);
            }
        }
        zf_json_put_string(w, "status", stbuf);
        const char *cr = NULL;
        double up = 0, sf = 0;
        ZF_IGNORE(zf_config_string(first, "created", "", &cr));
        ZF_IGNORE(zf_config_float(first, "uptime_s", 0, &up));
        ZF_IGNORE(zf_config_float(first, "state_for_s", 0, &sf));
        zf_json_put_string(w, "created", cr);
        zf_json_put_double(w, "uptime_s", up);
        zf_json_put_double(w, "state_for_s", sf);
        static const char *const arrays[] = {"nodes", "links", "abandoned_threads"};
        for (size_t a = 0; a < 3; a++) {
            zf_json_open_array(w, arrays[a]);
            for (size_t i = 0; i < nt; i++) {
                const zf_config *arr = zf_config_get(res[i], arrays[a]);
                for (size_t k = 0; k < zf_config_len(arr); k++) {
                    char *x = zf_config_to_json(zf_config_at(arr, k));
                    zf_json_put_raw(w, NULL, x ? x : "null");
                    free(x);
                }
            }
            zf_json_close(w);
        }
        zf_json_open_object(w, "pool");
        static const char *const pf[] = {"bytes_in_use", "bytes_high_water", "bytes_mapped",
                                         "allocations", "refused"};
        for (size_t f = 0; f < 5; f++) {
            uint64_t sum = 0;
            for (size_t i = 0; i < nt; i++) {
                int64_t v = 0;
                ZF_IGNORE(zf_config_int(zf_config_get(res[i], "pool"), pf[f], 0, &v));
                sum += (uint64_t)v;
            }
            zf_json_put_uint(w, pf[f], sum);
        }
        zf_json_close(w);
    } else if (req->op == ZF_OP_DESTROY) {
        const zf_config *reps[512];
        size_t nr = 0;
        zf_json_open_array(w, "per_worker");
        for (size_t i = 0; i < nt; i++) {
            if (!res[i])
                continue;
            const zf_config *rp = zf_config_get(res[i], "report");
            reps[nr++] = rp;
            int64_t leaked = 0, after = 0, links = 0, ents = 0;
            ZF_IGNORE(zf_config_int(rp, "bytes_leaked", 0, &leaked));
            ZF_IGNORE(zf_config_int(rp, "pool_bytes_after", 0, &after));
            ZF_IGNORE(zf_config_int(res[i], "remote_links_closed", 0, &links));
            ZF_IGNORE(zf_config_int(res[i], "dds_entities_left", 0, &ents));
            zf_json_open_object(w, NULL);
            zf_json_put_string(w, "worker", fo.workers[i]);
            zf_json_put_uint(w, "bytes_leaked", (uint64_t)leaked);
            zf_json_put_uint(w, "pool_bytes_after", (uint64_t)after);
            zf_json_put_uint(w, "remote_links_closed", (uint64_t)links);
            zf_json_put_uint(w, "dds_entities_left", (uint64_t)ents);
            zf_json_close(w);
        }
        zf_json_close(w);
        sum_report(w, reps, nr);
    }
    zf_json_close(w);
    char *text = zf_json_writer_finish(w);
    resp = zf_response_ok(text);
    free(text);
out:
    for (size_t i = 0; i < nt; i++)
        zf_config_free(trees[i]);
    fanout_free_names(&fo);
    fanout_free(&fo);
    free(b);
    return resp;
}

char *zfd_cluster_handle(zfd_daemon *d, const zf_request *req)
{
    switch (req->op) {
    case ZF_OP_LIST:
        return cluster_list(d);
    case ZF_OP_WORKERS:
        return cluster_workers(d, req);
    case ZF_OP_STATUS:
    case ZF_OP_START:
    case ZF_OP_SUSPEND:
    case ZF_OP_RESUME:
    case ZF_OP_DESTROY: {
        char uuid[37], *workers = NULL;
        if (!req->id || !find_instance(d, req->id, uuid, &workers))
            return NULL;
        char *r = cluster_op(d, req, uuid, workers);
        free(workers);
        return r;
    }
    default:
        return NULL;
    }
}
