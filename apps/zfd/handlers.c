/* zfd's request handlers and instance table.
 *
 * Entries are reference-counted: a request holds its entry while it works
 * on the instance, so a concurrent destroy cannot free it underneath. The
 * table lock is never held across a slow call (a drain takes seconds). */
#include "zfd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct entry {
    zf_instance *inst;
    zf_flow *flow;
    char uuid[37];
    char *name;
    time_t created;      /* wall clock, for display */
    uint64_t created_ns; /* monotonic */
    int refs;            /* under d->mu */
    bool removed;        /* out of the table (being destroyed) */
    char *workers;       /* a cluster instance's part: its workers (JSON array), else NULL */
    char lost[160];      /* a worker of it that was lost (under d->mu), or "" */
    entry *next;
};

/* A success response with the writer's JSON as result. */
static char *ok(zf_json_writer *w)
{
    char *result = zf_json_writer_finish(w);
    char *resp = result ? zf_response_ok(result) : NULL;
    zf_free(result);
    return resp;
}

/* ---- the table ---- */

static void entry_unref(zfd_daemon *d, entry *e)
{
    pthread_mutex_lock(&d->mu);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&d->mu);
    if (!last)
        return;
    zf_instance_destroy(e->inst);
    zf_flow_free(e->flow);
    free(e->name);
    free(e->workers);
    free(e);
}

/* Find by UUID, name or unique UUID prefix; a reference on success. */
static entry *resolve(zfd_daemon *d, const char *id, char **error)
{
    entry *found = NULL;
    size_t matches = 0;
    char names[512] = "";
    pthread_mutex_lock(&d->mu);
    for (entry *e = d->list; e && !found; e = e->next)
        if (!strcmp(e->uuid, id))
            found = e;
    if (!found) {
        size_t idlen = strlen(id);
        for (entry *e = d->list; e; e = e->next) {
            if (!strcmp(e->name, id) || !strncmp(e->uuid, id, idlen)) {
                matches++;
                found = e;
                size_t n = strlen(names);
                snprintf(names + n, sizeof names - n, "%s%s (%s)", n ? ", " : "", e->uuid, e->name);
            }
        }
    }
    if (found && matches <= 1)
        found->refs++;
    pthread_mutex_unlock(&d->mu);
    if (!found) {
        *error = zf_response_error(ZF_ENOTFOUND,
                                   "no instance matches '%s' (give a UUID, a unique prefix of "
                                   "one, or a name; 'zfctl ls' lists them)",
                                   id);
        return NULL;
    }
    if (matches > 1) {
        *error = zf_response_error(ZF_EINVAL, "'%s' is ambiguous: it matches %s", id, names);
        return NULL;
    }
    return found;
}

/* The live instance named `name`, if any: its UUID into uuid. Names are
 * unique on a daemon (commands find instances by name). d->mu held. */
static bool name_taken(const zfd_daemon *d, const char *name, char uuid[37])
{
    for (const entry *e = d->list; e; e = e->next)
        if (!e->removed && !strcmp(e->name, name)) {
            memcpy(uuid, e->uuid, 37);
            return true;
        }
    return false;
}

static char *name_refused(const char *name, const char *uuid)
{
    return zf_response_error(ZF_EEXIST,
                             "an instance named '%s' already exists: %s; destroy it first "
                             "('zfctl destroy %s') or deploy with another --name",
                             name, uuid, uuid);
}

static const char *status_text(zf_instance *inst, const char *lost, char *buf, size_t len)
{
    zf_instance_stats *s = NULL;
    const char *state = zf_instance_state_name(zf_instance_state_get(inst));
    snprintf(buf, len, "%s", state);
    if (lost && *lost)
        snprintf(buf + strlen(buf), len - strlen(buf), " (DEGRADED: worker '%s)", lost);
    if (zf_instance_stats_get(inst, &s) != ZF_OK)
        return buf;
    size_t n = 0;
    for (size_t i = 0; i < s->n_nodes; i++) {
        if (s->nodes[i].state != ZF_NODE_DEGRADED)
            continue;
        n += (size_t)snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
                              n ? "," : " (DEGRADED: ", s->nodes[i].id);
    }
    if (n)
        snprintf(buf + strlen(buf), len - strlen(buf), ")");
    zf_instance_stats_free(s);
    return buf;
}

static void iso_time(time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- deploy ---- */

char *zfd_real_dir(const char *dir)
{
    char *r = realpath(dir, NULL);
    if (!r)
        return NULL;
    size_t n = strlen(r);
    char *s = malloc(n + 2);
    if (s) {
        memcpy(s, r, n);
        s[n] = n && r[n - 1] == '/' ? '\0' : '/';
        s[n + 1] = '\0';
    }
    free(r);
    return s;
}

static bool under(const char *real, const char *dir_slash)
{
    return !strncmp(real, dir_slash, strlen(dir_slash));
}

/* With --allow-descriptor-dir: the descriptor's folder, verified by the
 * daemon itself, or NULL with why in `why`. A client's `path` is only a
 * claim: zfd opens that file, resolves it to its real path, and widens the
 * allowed set only if it holds exactly the text deployed and its folder
 * passes the --lib-path checks (no one but root or this user can change
 * it). */
static char *verified_descriptor_dir(zfd_daemon *d, const zf_request *req, char *why, size_t len)
{
    why[0] = '\0';
    int fd = open(req->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char proc[64], real[PATH_MAX];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t k = fd >= 0 ? readlink(proc, real, sizeof real - 1) : -1;
    size_t want = strlen(req->descriptor);
    char *text = NULL;
    if (fd < 0 || k <= 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size != want || !(text = malloc(want + 1))) {
        snprintf(why, len, "the daemon cannot read %s as the deployed descriptor (%s)", req->path,
                 fd < 0 ? strerror(errno) : "not a regular file of that length");
        goto fail;
    }
    size_t got = 0;
    for (ssize_t r; got < want && (r = read(fd, text + got, want - got)) > 0;)
        got += (size_t)r;
    if (got != want || memcmp(text, req->descriptor, want) != 0) {
        snprintf(why, len, "%s does not hold the descriptor deployed", req->path);
        goto fail;
    }
    real[k] = '\0';
    *strrchr(real, '/') = '\0';
    char *dir = zfd_real_dir(real[0] ? real : "/");
    if (dir && !d->allow_writable && zf_code_path_check(dir) != ZF_OK) {
        snprintf(why, len, "%s", zf_last_error());
        free(dir);
        dir = NULL;
    }
    free(text);
    close(fd);
    return dir;
fail:
    free(text);
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Node code must come from --lib-path folders (or desc_dir, the verified
 * descriptor's folder). Returns NULL, or an error response; desc_why says
 * why the descriptor's folder is not allowed. */
static char *check_sources(zfd_daemon *d, const zf_flow *f, const char *desc_dir,
                           const char *desc_why)
{
    char msg[2048] = "";
    for (size_t i = 0; i < zf_flow_node_count(f); i++) {
        const char *src = zf_flow_node_source(f, i);
        if (!src)
            continue;
        char *real = realpath(src, NULL);
        bool ok = false;
        for (size_t k = 0; real && k < d->n_lib_paths && !ok; k++)
            ok = under(real, d->lib_paths[k]);
        if (real && desc_dir && !ok)
            ok = under(real, desc_dir);
        if (!ok) {
            size_t n = strlen(msg);
            snprintf(msg + n, sizeof msg - n, "%snode '%s': %s %s", n ? "; " : "",
                     zf_flow_node_id(f, i), real ? real : src,
                     real ? "is outside the daemon's --lib-path folders" : "does not exist");
        }
        free(real);
    }
    if (!msg[0])
        return NULL;
    zf_json_writer *w = zf_json_writer_new(); /* the folders as a JSON list */
    zf_json_open_array(w, NULL);
    for (size_t k = 0; k < d->n_lib_paths; k++)
        zf_json_put_string(w, NULL, d->lib_paths[k]);
    zf_json_close(w);
    char *dirs = zf_json_writer_finish(w);
    char *r = zf_response_error(ZF_EPERM,
                                "%s. This daemon loads node code only from: %s%s%s%s%s (start zfd "
                                "with --lib-path DIR%s)",
                                msg, d->n_lib_paths ? dirs : "(no --lib-path given)",
                                d->allow_descriptor_dir ? " and the descriptor's folder" : "",
                                desc_why[0] ? " (not allowed here: " : "", desc_why,
                                desc_why[0] ? ")" : "",
                                d->allow_descriptor_dir ? "" : ", or --allow-descriptor-dir");
    free(dirs);
    return r;
}

static void log_report(const char *uuid, const char *name, const zf_stop_report *r);

static char *check_mapping(zfd_daemon *d, const zf_flow *f)
{
    for (size_t i = 0; i < zf_flow_node_count(f); i++) {
        const char *w = zf_flow_node_worker(f, i);
        if (w && *w && strcmp(w, d->name) != 0)
            return zf_response_error(ZF_ENOTFOUND,
                                     "node '%s' is mapped to worker '%s', which is not "
                                     "reachable; this daemon is '%s' and sees no other worker",
                                     zf_flow_node_id(f, i), w, d->name);
    }
    return NULL;
}

static char *diag_error(zf_err code, const char *what, const zf_diag *dg)
{
    char *text = zf_diag_format(dg);
    char *r = zf_response_error(code, "%s:\n%s", what, text && *text ? text : zf_last_error());
    free(text);
    return r;
}

static char *deploy(zfd_daemon *d, const zf_request *req, const zfd_part *part)
{
    pthread_mutex_lock(&d->mu);
    size_t count = d->count;
    pthread_mutex_unlock(&d->mu);
    if (count >= d->max_instances)
        return zf_response_error(ZF_EBUSY,
                                 "this daemon already hosts %zu instances (its --max-instances); "
                                 "destroy some first",
                                 count);
    const char *slash = strrchr(req->path, '/');
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - req->path) : 1, req->path);
    /* Node files and node code: only from the allowed folders (the
     * descriptor's own folder too with --allow-descriptor-dir). */
    const char *dirs[ZFD_MAX_LIB_PATHS + 1];
    size_t n_dirs = 0;
    for (size_t i = 0; i < d->n_lib_paths && n_dirs < ZFD_MAX_LIB_PATHS; i++)
        dirs[n_dirs++] = d->lib_paths[i];
    char desc_why[512] = "";
    char *desc_dir =
        d->allow_descriptor_dir ? verified_descriptor_dir(d, req, desc_why, sizeof desc_why) : NULL;
    if (desc_dir)
        dirs[n_dirs++] = desc_dir;
    static const char *const nowhere[] = {"/nonexistent-zflow-lib-path/"};
    zf_diag *dg = zf_diag_new();
    zf_flow_options fo = {.vars = req->vars,
                          .n_vars = req->n_vars,
                          .include_dirs = n_dirs ? dirs : nowhere,
                          .n_include_dirs = n_dirs ? n_dirs : 1};
    zf_flow *f = NULL;
    char *resp = NULL;
    zf_err e = zf_flow_load_string(req->descriptor, strlen(req->descriptor), req->path,
                                   dir[0] ? dir : "/", &fo, dg, &f);
    if (e != ZF_OK) {
        resp = diag_error(e, "the descriptor is invalid", dg);
        goto out;
    }
    if (part) {
        /* a cluster deploy's part: this worker's nodes and the bridges */
        zf_flow *mine = NULL;
        e = zf_flow_part(f, d->name, part->orchestrator, part->uuid, &mine);
        if (e != ZF_OK) {
            resp = zf_response_error(e, "worker '%s': %s", d->name, zf_last_error());
            goto out;
        }
        zf_flow_free(f);
        f = mine;
    } else if (d->cluster && zfd_cluster_spans(d, f)) {
        resp = zfd_cluster_deploy(d, req, f);
        goto out;
    }
    if ((resp = check_sources(d, f, desc_dir, desc_why)) || (!part && (resp = check_mapping(d, f))))
        goto out;
    const char *name = req->name && *req->name ? req->name : zf_flow_name(f);
    char other[37];
    pthread_mutex_lock(&d->mu);
    bool taken = name_taken(d, name, other);
    pthread_mutex_unlock(&d->mu);
    if (taken) {
        resp = name_refused(name, other);
        goto out;
    }
    char rdir[PATH_MAX] = "/nonexistent-zflow-recordings"; /* no state folder: none */
    if (d->state_dir) { /* `record:` links write there, plain names only */
        snprintf(rdir, sizeof rdir, "%s/recordings", d->state_dir);
        mkdir(rdir, 0750);
    }
    zf_instance_options io = {.name = req->name,
                              .code_dirs = fo.include_dirs,
                              .n_code_dirs = fo.n_include_dirs,
                              .allow_writable_code = d->allow_writable,
                              .record_dir = rdir,
                              .isolate_all = d->isolate};
    zf_instance *inst = NULL;
    e = zf_instance_create(d->rt, f, &io, dg, &inst);
    if (e != ZF_OK) {
        resp = diag_error(e, "the instance could not be created", dg);
        goto out;
    }
    entry *en = calloc(1, sizeof *en);
    if (!en) {
        zf_instance_destroy(inst);
        resp = zf_response_error(ZF_ENOMEM, "out of memory");
        goto out;
    }
    en->inst = inst;
    en->flow = f;
    f = NULL;
    snprintf(en->uuid, sizeof en->uuid, "%s", zf_instance_uuid(inst));
    en->name = strdup(zf_instance_name(inst));
    en->refs = 1; /* the table's */
    if (!en->name) {
        entry_unref(d, en);
        resp = zf_response_error(ZF_ENOMEM, "out of memory");
        goto out;
    }
    en->created = time(NULL);
    en->created_ns = zf_clock_ns();
    if (part && !(en->workers = strdup(part->workers))) {
        entry_unref(d, en);
        resp = zf_response_error(ZF_ENOMEM, "out of memory");
        goto out;
    }
    if (atomic_load(&d->stopping)) {
        /* SIGTERM came while this deploy ran: the daemon destroys what it
         * hosts; say so rather than hand out an instance about to go. */
        zf_stop_report r;
        /* ZF_OK for an instance: what the stop met is in r, logged */
        ZF_IGNORE(zf_instance_stop(inst, &r));
        log_report(en->uuid, en->name, &r);
        entry_unref(d, en); /* never listed: the last reference */
        resp = zf_response_error(ZF_ECLOSED,
                                 "zfd is shutting down (SIGTERM): the instance was created, then "
                                 "destroyed again; deploy it to the daemon that replaces this one");
        goto out;
    }
    pthread_mutex_lock(&d->mu);
    if (name_taken(d, en->name, other)) { /* deployed meanwhile */
        pthread_mutex_unlock(&d->mu);
        resp = name_refused(en->name, other);
        entry_unref(d, en); /* never listed: the last reference */
        goto out;
    }
    if (req->start && zf_instance_start(inst) != ZF_OK) /* the answer says CREATED */
        zfd_log(ZF_LOG_WARN, "%s: not started: %s", en->uuid, zf_last_error());
    entry **tail = &d->list; /* creation order */
    while (*tail)
        tail = &(*tail)->next;
    *tail = en;
    d->count++;
    size_t hosted = d->count;
    pthread_mutex_unlock(&d->mu);
    zf_cluster_announce(d->cluster, (unsigned)hosted);
    char line[256];
    snprintf(line, sizeof line, "deployed %s (%s)%s", en->uuid, en->name,
             req->start ? " and started it" : "");
    zfd_log(ZF_LOG_INFO, "%s", line);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", en->uuid);
    zf_json_put_string(w, "name", en->name);
    zf_json_put_string(w, "state", zf_instance_state_name(zf_instance_state_get(inst)));
    zf_json_put_string(w, "worker", d->name);
    zf_json_close(w);
    resp = ok(w);
out:
    zf_flow_free(f);
    zf_diag_free(dg);
    free(desc_dir);
    return resp;
}

static void abandoned_json(zfd_daemon *d, zf_json_writer *w, const char *uuid);

/* ---- list, status ---- */

/* "workers": a cluster instance's, else this daemon. */
static void workers_json(const zfd_daemon *d, const entry *e, zf_json_writer *w)
{
    if (e->workers) {
        zf_json_put_raw(w, "workers", e->workers);
        return;
    }
    zf_json_open_array(w, "workers");
    zf_json_put_string(w, NULL, d->name);
    zf_json_close(w);
}

static char *list(zfd_daemon *d)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_open_array(w, "instances");
    pthread_mutex_lock(&d->mu);
    for (entry *e = d->list; e; e = e->next) {
        char status[256], created[32];
        iso_time(e->created, created, sizeof created);
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "uuid", e->uuid);
        zf_json_put_string(w, "name", e->name);
        zf_json_put_string(w, "status", status_text(e->inst, e->lost, status, sizeof status));
        workers_json(d, e, w);
        zf_json_put_string(w, "created", created);
        zf_json_put_double(w, "uptime_s", (double)(zf_clock_ns() - e->created_ns) / 1e9);
        zfd_live_summary(w, e->inst);
        zf_json_close(w);
    }
    pthread_mutex_unlock(&d->mu);
    zf_json_close(w);
    zf_json_close(w);
    return ok(w);
}

static void report_json(zf_json_writer *w, const char *key, const zf_stop_report *r)
{
    zf_json_open_object(w, key);
    zf_json_put_uint(w, "in_flight_at_stop", r->in_flight_at_stop);
    zf_json_put_uint(w, "delivered_in_drain", r->delivered_in_drain);
    zf_json_put_uint(w, "dropped", r->dropped);
    zf_json_put_uint(w, "dropped_in_drain", r->dropped_in_drain);
    zf_json_put_uint(w, "release_callbacks", r->releases);
    zf_json_put_uint(w, "pool_bytes_before", r->pool_bytes_before);
    zf_json_put_uint(w, "bytes_freed",
                     r->pool_bytes_before > r->pool_bytes_after
                         ? r->pool_bytes_before - r->pool_bytes_after
                         : 0);
    zf_json_put_uint(w, "pool_bytes_after", r->pool_bytes_after);
    zf_json_put_uint(w, "bytes_abandoned", r->bytes_abandoned);
    zf_json_put_uint(w, "bytes_leaked", r->bytes_leaked);
    zf_json_put_uint(w, "pool_high_water", r->pool_high_water);
    zf_json_put_uint(w, "nodes_abandoned", r->nodes_abandoned);
    zf_json_put_uint(w, "child_deaths", r->child_deaths);
    zf_json_put_uint(w, "refs_reclaimed", r->refs_reclaimed);
    zf_json_put_uint(w, "bytes_reclaimed", r->bytes_reclaimed);
    zf_json_put_uint(w, "inputs_lost", r->inputs_lost);
    zf_json_put_uint(w, "nodes_killed_at_stop", r->nodes_killed_at_stop);
    zf_json_put_uint(w, "shared_writes", r->shared_writes);
    zf_json_put_double(w, "drain_s", (double)r->drain_ns / 1e9);
    zf_json_put_bool(w, "drain_timed_out", r->drain_timed_out);
    zf_json_put_string(w, "held", r->holders);
    zf_json_close(w);
}

static char *status(zfd_daemon *d, entry *e)
{
    zf_instance_stats *s = NULL;
    if (zf_instance_stats_get(e->inst, &s) != ZF_OK)
        return zf_response_error(ZF_ENOMEM, "%s", zf_last_error());
    zf_instance_live *live = NULL;
    if (zf_instance_live_get(e->inst, &live) != ZF_OK)
        live = NULL; /* out of memory: the figures read 0 */
    uint64_t now = zf_clock_ns();
    double up = (double)(now - e->created_ns) / 1e9;
    char created[32], status_buf[256];
    iso_time(e->created, created, sizeof created);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", e->uuid);
    zf_json_put_string(w, "name", e->name);
    zf_json_put_string(w, "state", zf_instance_state_name(s->state));
    zf_json_put_string(w, "status", status_text(e->inst, e->lost, status_buf, sizeof status_buf));
    zf_json_put_string(w, "created", created);
    zf_json_put_double(w, "uptime_s", up);
    zf_json_put_double(w, "state_for_s", (double)(now - s->state_since_ns) / 1e9);
    workers_json(d, e, w);
    zf_json_open_object(w, "pool");
    zf_json_put_uint(w, "bytes_in_use", s->pool.bytes_in_use);
    zf_json_put_uint(w, "bytes_high_water", s->pool.bytes_high_water);
    zf_json_put_uint(w, "bytes_mapped", s->pool.bytes_mapped);
    zf_json_put_uint(w, "allocations", s->pool.allocs);
    zf_json_put_uint(w, "refused", s->pool.alloc_failures);
    zf_json_put_uint(w, "held_capsules", s->pool.blocks_in_use);
    zf_json_close(w);
    zfd_live_windows(w, live);
    zf_json_open_array(w, "nodes");
    for (size_t i = 0; i < s->n_nodes; i++) {
        const zf_node_stats *n = &s->nodes[i];
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "id", n->id);
        zf_json_put_string(w, "kind", zf_node_kind_name(n->kind));
        zf_json_put_string(w, "state", zf_node_state_name(n->state));
        zf_json_put_string(w, "reason", n->reason);
        zf_json_put_double(w, "state_for_s", (double)(now - n->since_ns) / 1e9);
        zf_json_put_string(w, "worker", d->name);
        zf_json_put_uint(w, "callbacks", n->callbacks);
        zf_json_put_uint(w, "errors", n->errors);
        zf_json_put_uint(w, "restarts", n->restarts);
        if (n->pid)
            zf_json_put_uint(w, "pid", (uint64_t)n->pid);
        if (n->last_exit && n->last_exit[0])
            zf_json_put_string(w, "last_exit", n->last_exit);
        if (n->pid || n->deaths)
            zf_json_put_uint(w, "lost", n->lost);
        zf_json_put_uint(w, "sent", n->sent);
        zf_json_put_uint(w, "alloc_failures", n->alloc_failures);
        zf_json_put_uint(w, "degraded_count", n->degraded_count);
        zfd_live_node(w, live, i);
        if (n->last_progress_ns)
            zf_json_put_double(w, "last_progress_s_ago", (double)(now - n->last_progress_ns) / 1e9);
        else
            zf_json_put_string(w, "last_progress_s_ago", NULL);
        zf_json_close(w);
    }
    zf_json_close(w);
    zf_json_open_array(w, "links");
    for (size_t i = 0; i < s->n_links; i++) {
        const zf_link_info *l = &s->links[i];
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "from", l->from);
        zf_json_put_string(w, "to", l->to);
        zf_json_put_string(w, "policy", zf_policy_name(l->stats.policy));
        zf_json_put_uint(w, "capacity", l->stats.capacity);
        zf_json_put_uint(w, "depth", l->stats.depth);
        zf_json_put_uint(w, "high_water", l->stats.high_water);
        zf_json_put_uint(w, "enqueued", l->stats.enqueued);
        zf_json_put_uint(w, "dequeued", l->stats.dequeued);
        zf_json_put_uint(w, "dropped", l->stats.dropped);
        zf_json_put_double(w, "blocked_s", (double)l->stats.blocked_ns / 1e9);
        zf_json_put_double(w, "throughput_per_s", up > 0 ? (double)l->stats.dequeued / up : 0.0);
        zfd_live_link(w, live, i);
        zf_json_close(w);
    }
    zf_json_close(w);
    abandoned_json(d, w, e->uuid);
    zf_json_close(w);
    zf_instance_stats_free(s);
    zf_instance_live_free(live);
    return ok(w);
}

/* ---- lifecycle ---- */

static char *transition(entry *e, zf_op op)
{
    zf_instance_state st = zf_instance_state_get(e->inst);
    if (op == ZF_OP_RESUME && st != ZF_INSTANCE_SUSPENDED)
        return zf_response_error(ZF_ESTATE,
                                 "instance %s is %s: only a SUSPENDED instance can be resumed",
                                 e->uuid, zf_instance_state_name(st));
    zf_err err = op == ZF_OP_SUSPEND ? zf_instance_suspend(e->inst) : zf_instance_start(e->inst);
    if (err != ZF_OK)
        return zf_response_error(err, "%s", zf_last_error());
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", e->uuid);
    zf_json_put_string(w, "state", zf_instance_state_name(zf_instance_state_get(e->inst)));
    zf_json_close(w);
    return ok(w);
}

static void log_report(const char *uuid, const char *name, const zf_stop_report *r)
{
    char line[1400];
    snprintf(line, sizeof line,
             "destroyed %s (%s): %llu in flight at stop, %llu delivered during drain, %llu "
             "dropped, %llu release callbacks, %llu bytes freed, %llu bytes leaked, %llu "
             "isolated node(s) killed at stop, %llu input(s) lost in isolated processes%s%s",
             uuid, name, (unsigned long long)r->in_flight_at_stop,
             (unsigned long long)r->delivered_in_drain, (unsigned long long)r->dropped,
             (unsigned long long)r->releases,
             (unsigned long long)(r->pool_bytes_before > r->pool_bytes_after
                                      ? r->pool_bytes_before - r->pool_bytes_after
                                      : 0),
             (unsigned long long)r->bytes_leaked, (unsigned long long)r->nodes_killed_at_stop,
             (unsigned long long)r->inputs_lost, r->holders[0] ? "; " : "", r->holders);
    zfd_log(r->bytes_leaked || r->nodes_killed_at_stop ? ZF_LOG_WARN : ZF_LOG_INFO, "%s", line);
}

/* Take e out of the table (if still in it) and stop it; e's table reference
 * is dropped. Returns false if someone else is destroying it. */
static bool take_out(zfd_daemon *d, entry *e)
{
    pthread_mutex_lock(&d->mu);
    if (e->removed) {
        pthread_mutex_unlock(&d->mu);
        return false;
    }
    e->removed = true;
    for (entry **p = &d->list; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    d->count--;
    e->refs--; /* the table's reference; the caller still holds one */
    pthread_mutex_unlock(&d->mu);
    return true;
}

static char *destroy(zfd_daemon *d, entry *e)
{
    if (!take_out(d, e))
        return zf_response_error(ZF_ESTATE, "instance %s is already being destroyed", e->uuid);
    zf_stop_report r;
    /* ZF_OK for an instance: what the stop met is in r, logged and answered */
    ZF_IGNORE(zf_instance_stop(e->inst, &r));
    zfd_record_end(e->uuid); /* a recording ends with the drain */
    log_report(e->uuid, e->name, &r);
    if (d->logs)
        zfd_logs_forget(d->logs, e->uuid);
    pthread_mutex_lock(&d->mu);
    size_t hosted = d->count;
    pthread_mutex_unlock(&d->mu);
    zf_cluster_announce(d->cluster, (unsigned)hosted);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", e->uuid);
    zf_json_put_string(w, "name", e->name);
    zf_json_put_string(w, "state", "DESTROYED");
    zf_json_put_string(w, "worker", d->name);
    report_json(w, "report", &r);
    if (e->workers) {
        size_t bridges = 0;
        for (size_t i = 0; i < zf_flow_node_count(e->flow); i++)
            bridges += zf_flow_node_source(e->flow, i) == NULL &&
                       strstr(zf_flow_node_id(e->flow, i), ">>") != NULL;
        size_t readers = 0;
        for (size_t i = 0; i < zf_flow_node_count(e->flow); i++)
            readers += zf_flow_node_kind(e->flow, i) == ZF_SOURCE &&
                       zf_flow_node_source(e->flow, i) == NULL;
        zf_json_put_uint(w, "remote_links_closed", bridges + readers);
        zf_json_put_uint(w, "dds_entities_left", zf_cluster_entities(d->cluster, e->uuid));
    }
    zf_json_close(w);
    return ok(w);
}

void zfd_destroy_all(zfd_daemon *d)
{
    for (;;) {
        pthread_mutex_lock(&d->mu);
        entry *e = d->list;
        if (e)
            e->refs++;
        pthread_mutex_unlock(&d->mu);
        if (!e)
            return;
        char *resp = destroy(d, e);
        free(resp);
        entry_unref(d, e);
    }
}

void zfd_each_instance(zfd_daemon *d, zfd_instance_fn fn, void *arg)
{
    pthread_mutex_lock(&d->mu);
    uint64_t now = zf_clock_ns();
    for (entry *e = d->list; e; e = e->next)
        fn(arg, e->inst, e->uuid, e->name, (double)(now - e->created_ns) / 1e9);
    pthread_mutex_unlock(&d->mu);
}

/* ---- abandoned threads ---- */

/* "abandoned_threads": [...] of the whole daemon (uuid NULL) or of one
 * instance: threads left inside node code, which may still burn a core. */
static void abandoned_json(zfd_daemon *d, zf_json_writer *w, const char *uuid)
{
    zf_abandoned_thread *t = NULL;
    size_t n = 0;
    if (zf_runtime_abandoned(d->rt, &t, &n) != ZF_OK) { /* out of memory: not known */
        zf_json_put_null(w, "abandoned_threads");
        return;
    }
    uint64_t now = zf_clock_ns();
    zf_json_open_array(w, "abandoned_threads");
    for (size_t i = 0; i < n; i++) {
        if (uuid && strcmp(uuid, t[i].instance) != 0)
            continue;
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "node", t[i].node);
        zf_json_put_string(w, "instance", t[i].instance);
        zf_json_put_string(w, "instance_name", t[i].instance_name);
        zf_json_put_string(w, "in", t[i].in);
        zf_json_put_int(w, "tid", t[i].tid);
        zf_json_put_bool(w, "alive", t[i].alive);
        zf_json_put_double(w, "cpu_s", (double)t[i].cpu_ns / 1e9);
        zf_json_put_double(w, "for_s", (double)(now - t[i].since_ns) / 1e9);
        zf_json_close(w);
    }
    zf_json_close(w);
    zf_free(t);
}

/* ---- dispatch ---- */

static char *workers(zfd_daemon *d)
{
    pthread_mutex_lock(&d->mu);
    size_t n = d->count;
    pthread_mutex_unlock(&d->mu);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_open_array(w, "workers");
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "name", d->name);
    zf_json_put_int(w, "pid", getpid());
    zf_json_put_uint(w, "instances", n);
    zf_json_put_double(w, "uptime_s", (double)(zf_clock_ns() - d->started_ns) / 1e9);
    zf_json_put_string(w, "address", d->socket);
    zf_json_put_string(w, "version", ZF_VERSION_STRING);
    abandoned_json(d, w, NULL);
    zf_json_close(w);
    zf_json_close(w);
    zf_json_close(w);
    return ok(w);
}

/* The worker's name is the operator's (--name, --config): written escaped. */
static char *hello(zfd_daemon *d)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "version", ZF_VERSION_STRING);
    zf_json_put_int(w, "protocol", ZF_PROTOCOL_VERSION);
    zf_json_put_string(w, "worker", d->name);
    zf_json_put_int(w, "pid", getpid());
    zf_json_close(w);
    return ok(w);
}

void zfd_mark_lost(zfd_daemon *d, const char *worker, bool left)
{
    char quoted[160];
    snprintf(quoted, sizeof quoted, "\"%s\"", worker);
    pthread_mutex_lock(&d->mu);
    for (entry *e = d->list; e; e = e->next)
        if (e->workers && strstr(e->workers, quoted) && !e->lost[0])
            snprintf(e->lost, sizeof e->lost, "%s' %s", worker, left ? "left" : "lost");
    pthread_mutex_unlock(&d->mu);
}

bool zfd_is_cluster_instance(zfd_daemon *d, const char *id, char uuid[37], char **workers)
{
    char *err = NULL;
    entry *e = resolve(d, id, &err);
    free(err);
    if (!e)
        return false;
    bool yes = e->workers != NULL;
    if (yes) {
        memcpy(uuid, e->uuid, 37);
        *workers = strdup(e->workers);
    }
    entry_unref(d, e);
    return yes;
}

char *zfd_deploy_part(zfd_daemon *d, const zf_request *req, const zfd_part *part)
{
    return deploy(d, req, part);
}

char *zfd_handle(void *arg, const zf_request *req, const zf_peer *peer)
{
    zfd_daemon *d = arg;
    char *r = d->cluster ? zfd_cluster_handle(d, req) : NULL;
    return r ? r : zfd_handle_local(d, req, peer);
}

char *zfd_handle_local(void *arg, const zf_request *req, const zf_peer *peer)
{
    zfd_daemon *d = arg;
    (void)peer;
    switch (req->op) {
    case ZF_OP_HELLO:
        return hello(d);
    case ZF_OP_DEPLOY:
        return deploy(d, req, NULL);
    case ZF_OP_LIST:
        return list(d);
    case ZF_OP_WORKERS:
        return workers(d);
    default:
        break;
    }
    char *err = NULL;
    if (req->op == ZF_OP_LOGS && d->logs && zfd_logs_known(d->logs, req->id))
        return zfd_logs_query(d->logs, req->id, req); /* also a destroyed instance's */
    entry *e = resolve(d, req->id, &err);
    if (!e)
        return err;
    char *resp;
    switch (req->op) {
    case ZF_OP_STATUS:
        resp = status(d, e);
        break;
    case ZF_OP_START:
    case ZF_OP_RESUME:
    case ZF_OP_SUSPEND:
        resp = transition(e, req->op);
        break;
    case ZF_OP_DESTROY:
        resp = destroy(d, e);
        break;
    case ZF_OP_ECHO:
        resp = zfd_echo(e->inst, e->uuid, req);
        break;
    case ZF_OP_HZ:
        resp = zfd_hz(e->inst, e->uuid, req);
        break;
    case ZF_OP_RECORD:
        resp = zfd_record(d, e->inst, e->uuid, req);
        break;
    case ZF_OP_LOGS:
        resp = d->logs ? zfd_logs_query(d->logs, e->uuid, req)
                       : zf_response_error(ZF_ENOTFOUND, "this daemon keeps no logs");
        break;
    default:
        resp = zf_response_error(ZF_EPROTO, "unknown op");
        break;
    }
    entry_unref(d, e);
    return resp;
}
