/* Membership and control over Cyclone DDS.
 *
 * zf/workers: each worker's announcement, keyed by name, transient-local
 * (a worker that joins later sees everyone), with automatic liveliness of
 * the configured lease: a worker killed without leaving is seen lost when
 * its lease expires; one that leaves disposes its announcement.
 * zf/ctl: requests and replies (reliable, keep-all), each addressed to one
 * worker, numbered by its sender, signed with the cluster key when one is
 * set. One thread per cluster waits on both readers; each request runs on
 * a thread of its own, so a slow deploy does not hold the others. */
#include "cluster/dds/impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_LEASE_NS   1000000000LL
#define REPLAY_WINDOW_NS   (120 * 1000000000ull)
#define CTL_MAX_BLOCKING_S 10

struct zfi_pending {
    uint64_t id;
    const char *to;
    char *reply;
    bool done;
    zfi_pending *next;
};

static pthread_mutex_t the_mu = PTHREAD_MUTEX_INITIALIZER;
static zf_cluster *the_cluster;

zf_cluster *zfi_cluster_get(void)
{
    pthread_mutex_lock(&the_mu);
    zf_cluster *c = the_cluster;
    pthread_mutex_unlock(&the_mu);
    return c;
}

/* The default configuration: one machine, over loopback, unicast discovery
 * of up to 120 participants on 127.0.0.1; datagrams and fragments of about
 * 64 KB (a 10 MiB sample is ~170 datagrams), socket buffers of 8 MB, prompt
 * NACKs and heartbeats, and a writer history allowed 64 MB unacknowledged
 * (the same as bench/peers/dds.c, so the benchmark compares like with
 * like). %lld: the lease in ms. */
static const char loopback_config[] =
    "<CycloneDDS><Domain Id=\"any\">"
    "<General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast>"
    "<MaxMessageSize>65000B</MaxMessageSize><FragmentSize>60000B</FragmentSize></General>"
    "<Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>120</MaxAutoParticipantIndex>"
    "<Peers><Peer Address=\"127.0.0.1\"/></Peers>"
    "<LeaseDuration>%lldms</LeaseDuration></Discovery>"
    "<Internal><SocketReceiveBufferSize max=\"8MB\"/><SocketSendBufferSize max=\"8MB\"/>"
    "<NackDelay>1ms</NackDelay><HeartbeatInterval min=\"1ms\">10ms</HeartbeatInterval>"
    "<Watermarks><WhcHigh>64MB</WhcHigh></Watermarks></Internal>"
    "</Domain></CycloneDDS>";

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *zfi_cluster_name(const zf_cluster *c)
{
    return c ? c->name : NULL;
}

/* ---- the workers table ---- */

static zfi_peer *peer_find(zf_cluster *c, const char *name)
{
    for (size_t i = 0; i < c->n_peers; i++)
        if (!strcmp(c->peers[i].info.name, name))
            return &c->peers[i];
    return NULL;
}

static void info_parse(zf_worker_info *w, const char *json)
{
    zf_config *t = NULL;
    if (zf_json_parse(json, strlen(json), &t) != ZF_OK)
        return;
    const char *s = NULL;
    int64_t v = 0;
    if (zf_config_string(t, "host", "", &s) == ZF_OK)
        snprintf(w->host, sizeof w->host, "%s", s);
    if (zf_config_string(t, "os", "", &s) == ZF_OK)
        snprintf(w->os, sizeof w->os, "%s", s);
    if (zf_config_string(t, "version", "", &s) == ZF_OK)
        snprintf(w->version, sizeof w->version, "%s", s);
    if (zf_config_int(t, "cpus", 0, &v) == ZF_OK)
        w->cpus = (unsigned)v;
    if (zf_config_int(t, "memory", 0, &v) == ZF_OK)
        w->memory = (uint64_t)v;
    if (zf_config_int(t, "pid", 0, &v) == ZF_OK)
        w->pid = (int)v;
    if (zf_config_int(t, "instances", 0, &v) == ZF_OK)
        w->instances = (unsigned)v;
    zf_config_free(t);
}

static void on_workers(zf_cluster *c)
{
    for (;;) {
        void *buf[16] = {NULL};
        dds_sample_info_t si[16];
        int n = dds_take(c->r_workers, buf, si, 16, 16);
        if (n <= 0)
            return;
        char lost[16][128], joined[16][128];
        bool left[16];
        size_t n_lost = 0, n_joined = 0;
        pthread_mutex_lock(&c->mu);
        for (int i = 0; i < n; i++) {
            const zfi_msg_worker *m = buf[i];
            zfi_peer *p = NULL;
            if (si[i].valid_data) {
                if (!strcmp(m->name, c->name))
                    continue;
                p = peer_find(c, m->name);
                if (!p) {
                    if (!zfi_grow((void **)&c->peers, &c->cap_peers, c->n_peers + 1,
                                  sizeof *c->peers))
                        continue;
                    p = &c->peers[c->n_peers++];
                    memset(p, 0, sizeof *p);
                    snprintf(p->info.name, sizeof p->info.name, "%s", m->name);
                }
                if (!p->info.alive) {
                    p->info.since_ns = zf_clock_ns();
                    zfi_log(ZF_LOG_INFO, "cluster", "worker '%s' joined", m->name);
                    if (n_joined < 16)
                        snprintf(joined[n_joined++], sizeof joined[0], "%s", m->name);
                }
                p->ih = si[i].instance_handle;
                info_parse(&p->info, m->info);
                p->info.alive = true;
                p->info.left = false;
                continue;
            }
            for (size_t k = 0; k < c->n_peers && !p; k++)
                if (c->peers[k].ih == si[i].instance_handle)
                    p = &c->peers[k];
            if (!p || !p->info.alive || si[i].instance_state == DDS_IST_ALIVE)
                continue;
            p->info.alive = false;
            p->info.left = si[i].instance_state == DDS_IST_NOT_ALIVE_DISPOSED;
            p->info.since_ns = zf_clock_ns();
            if (n_lost < 16) {
                snprintf(lost[n_lost], sizeof lost[n_lost], "%s", p->info.name);
                left[n_lost++] = p->info.left;
            }
        }
        pthread_cond_broadcast(&c->cv); /* callers waiting on a lost worker */
        pthread_mutex_unlock(&c->mu);
        dds_return_loan(c->r_workers, buf, n);
        for (size_t i = 0; i < n_lost; i++) {
            zfi_log(left[i] ? ZF_LOG_INFO : ZF_LOG_WARN, "cluster", "worker '%s' %s", lost[i],
                    left[i] ? "left" : "was lost (its liveliness lease expired)");
            zfi_bridges_worker_lost(c, lost[i]);
            if (c->on_lost)
                c->on_lost(c->lost_arg, lost[i], left[i]);
        }
        for (size_t i = 0; i < n_joined && c->on_joined; i++)
            c->on_joined(c->joined_arg, joined[i]);
    }
}

bool zfi_cluster_alive(zf_cluster *c, const char *name)
{
    if (!c || !name)
        return false;
    if (!strcmp(name, c->name))
        return true;
    pthread_mutex_lock(&c->mu);
    zfi_peer *p = peer_find(c, name);
    bool alive = p && p->info.alive;
    pthread_mutex_unlock(&c->mu);
    return alive;
}

static void self_info(zf_cluster *c, zf_worker_info *w)
{
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", c->name);
    info_parse(w, c->info);
    w->alive = true;
}

zf_err zfi_cluster_workers(zf_cluster *c, zf_worker_info **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&c->mu);
    zf_worker_info *w = zfi_calloc(c->n_peers + 1, sizeof *w);
    if (!w) {
        pthread_mutex_unlock(&c->mu);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    self_info(c, &w[0]);
    for (size_t i = 0; i < c->n_peers; i++)
        w[i + 1] = c->peers[i].info;
    *n = c->n_peers + 1;
    pthread_mutex_unlock(&c->mu);
    *out = w;
    return ZF_OK;
}

static void announce_locked(zf_cluster *c, unsigned instances)
{
    struct utsname u;
    uname(&u);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    char os[300];
    snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "host", host);
    zf_json_put_string(w, "os", os);
    zf_json_put_int(w, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
    zf_json_put_int(w, "memory", pages > 0 && psz > 0 ? (int64_t)pages * psz : 0);
    zf_json_put_string(w, "version", ZF_VERSION_STRING);
    zf_json_put_int(w, "pid", getpid());
    zf_json_put_uint(w, "instances", instances);
    zf_json_close(w);
    char *text = zf_json_writer_finish(w);
    snprintf(c->info, sizeof c->info, "%s", text ? text : "{}");
    zf_free(text);
    zfi_msg_worker m = {.name = c->name, .info = c->info};
    dds_return_t r = dds_write(c->w_workers, &m);
    if (r != DDS_RETCODE_OK)
        zfi_log(ZF_LOG_WARN, "cluster", "announcing worker '%s': %s", c->name, dds_strretcode(r));
}

void zfi_cluster_announce(zf_cluster *c, unsigned instances)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    announce_locked(c, instances);
    pthread_mutex_unlock(&c->mu);
}

/* ---- control messages ---- */

static void ctl_send(zf_cluster *c, const char *to, uint64_t id, uint32_t kind, const char *body)
{
    char sig[65] = "";
    zfi_msg_ctl m = {.to = (char *)to,
                     .from = c->name,
                     .id = id,
                     .kind = kind,
                     .time = wall_ns(),
                     .body = (char *)(body ? body : "null"),
                     .sig = sig};
    if (c->key.set)
        zfi_ctl_sign(&c->key, &m, sig);
    dds_return_t r = dds_write(c->w_ctl, &m);
    pthread_mutex_lock(&c->mu);
    c->sent++;
    pthread_mutex_unlock(&c->mu);
    if (r != DDS_RETCODE_OK)
        zfi_log(ZF_LOG_WARN, "cluster", "control message to '%s': %s", to, dds_strretcode(r));
}

typedef struct request {
    zf_cluster *c;
    char *from, *body;
    uint64_t id;
} request;

static void *request_main(void *arg)
{
    request *q = arg;
    zfi_thread_name("zf-dds-request");
    zf_cluster *c = q->c;
    char *reply = c->handler ? c->handler(c->handler_arg, q->from, q->body) : NULL;
    ctl_send(c, q->from, q->id, ZFI_CTL_REPLY, reply);
    free(reply);
    free(q->from);
    free(q->body);
    free(q);
    pthread_mutex_lock(&c->mu);
    c->requests_running--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Where a refused message came from: its writer's participant. */
static void origin(zf_cluster *c, const dds_sample_info_t *si, char *buf, size_t len)
{
    dds_builtintopic_endpoint_t *ep =
        dds_get_matched_publication_data(c->r_ctl, si->publication_handle);
    if (!ep) {
        snprintf(buf, len, "an unknown writer");
        return;
    }
    const unsigned char *g = ep->participant_key.v;
    snprintf(buf, len, "DDS participant %02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x", g[0],
             g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11]);
    dds_builtintopic_free_endpoint(ep);
}

static bool ctl_accept(zf_cluster *c, const zfi_msg_ctl *m, const dds_sample_info_t *si)
{
    const char *why = NULL;
    if (c->key.set) {
        uint64_t now = wall_ns();
        if (!m->sig || !*m->sig)
            why = "it is not signed";
        else if (!zfi_ctl_verify(&c->key, m))
            why = "its signature does not match the cluster key";
        else if (m->time + REPLAY_WINDOW_NS < now || m->time > now + REPLAY_WINDOW_NS)
            why = "it is older than 120 s (a replay?) or from a clock far off";
    }
    if (!why)
        return true;
    char from[128];
    origin(c, si, from, sizeof from);
    pthread_mutex_lock(&c->mu);
    c->refused++;
    pthread_mutex_unlock(&c->mu);
    char what[80];
    snprintf(what, sizeof what, "%s", m->body ? m->body : "");
    zfi_log(ZF_LOG_WARN, "cluster",
            "refused a control %s claiming to come from '%s' (%s): %s; it began %s",
            m->kind == ZFI_CTL_REQUEST ? "request" : "reply", m->from ? m->from : "?", from, why,
            what);
    return false;
}

static void on_ctl(zf_cluster *c)
{
    for (;;) {
        void *buf[16] = {NULL};
        dds_sample_info_t si[16];
        int n = dds_take(c->r_ctl, buf, si, 16, 16);
        if (n <= 0)
            return;
        for (int i = 0; i < n; i++) {
            const zfi_msg_ctl *m = buf[i];
            if (!si[i].valid_data || strcmp(m->to, c->name) != 0)
                continue;
            if (!ctl_accept(c, m, &si[i]))
                continue;
            pthread_mutex_lock(&c->mu);
            c->received++;
            if (m->kind == ZFI_CTL_REPLY) {
                for (zfi_pending *p = c->pending; p; p = p->next)
                    if (p->id == m->id && !p->done && !strcmp(p->to, m->from)) {
                        p->reply = zfi_strdup(m->body);
                        p->done = true;
                        pthread_cond_broadcast(&c->cv);
                    }
                pthread_mutex_unlock(&c->mu);
                continue;
            }
            pthread_mutex_unlock(&c->mu);
            if (m->kind != ZFI_CTL_REQUEST)
                continue;
            request *q = zfi_calloc(1, sizeof *q);
            pthread_t t;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            if (q && (q->from = zfi_strdup(m->from)) && (q->body = zfi_strdup(m->body))) {
                q->c = c;
                q->id = m->id;
                pthread_mutex_lock(&c->mu);
                c->requests_running++;
                pthread_mutex_unlock(&c->mu);
                if (pthread_create(&t, &at, request_main, q) == 0)
                    q = NULL;
                else {
                    pthread_mutex_lock(&c->mu);
                    c->requests_running--;
                    pthread_mutex_unlock(&c->mu);
                }
            }
            pthread_attr_destroy(&at);
            if (q) {
                zfi_log(ZF_LOG_ERROR, "cluster", "no thread for a request from '%s'", m->from);
                free(q->from);
                free(q->body);
                free(q);
            }
        }
        dds_return_loan(c->r_ctl, buf, n);
    }
}

static void *cluster_main(void *arg)
{
    zf_cluster *c = arg;
    zfi_thread_name("zf-cluster");
    while (!atomic_load(&c->stop)) {
        dds_waitset_wait(c->ws, NULL, 0, DDS_INFINITY);
        on_workers(c);
        on_ctl(c);
    }
    return NULL;
}

zf_err zfi_cluster_call(zf_cluster *c, size_t n, const char *const *workers,
                        const char *const *bodies, int timeout_ms, char **replies, char **errors)
{
    if (!c || (n && (!workers || !bodies || !replies)))
        return zfi_error(ZF_EINVAL, "zf_cluster_call: NULL argument");
    zfi_pending *p = zfi_calloc(n, sizeof *p);
    if (!p)
        return zfi_error(ZF_ENOMEM, "out of memory");
    size_t self = n;
    for (size_t i = 0; i < n; i++) {
        replies[i] = NULL;
        if (errors)
            errors[i] = NULL;
    }
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < n; i++) {
        p[i].to = workers[i];
        p[i].id = ++c->next_id;
        if (!strcmp(workers[i], c->name)) {
            p[i].done = true; /* run below, on this thread */
            self = i;
            continue;
        }
        zfi_peer *w = peer_find(c, workers[i]);
        if (!w || !w->info.alive) {
            p[i].done = true;
            if (errors)
                errors[i] = zfi_asprintf("worker '%s' is %s", workers[i],
                                         !w             ? "not in the cluster (no such worker seen)"
                                         : w->info.left ? "gone (it left)"
                                                        : "lost (its lease expired)");
            continue;
        }
        p[i].next = c->pending;
        c->pending = &p[i];
    }
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n; i++)
        if (i != self && !p[i].done)
            ctl_send(c, workers[i], p[i].id, ZFI_CTL_REQUEST, bodies[i]);
    if (self < n && c->handler)
        p[self].reply = c->handler(c->handler_arg, c->name, bodies[self]);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t deadline = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
                        (uint64_t)(timeout_ms < 0 ? 3600000 : timeout_ms) * 1000000u;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < n; i++) {
            if (p[i].done)
                continue;
            zfi_peer *w = peer_find(c, workers[i]);
            if (!w || !w->info.alive) {
                p[i].done = true;
                if (errors)
                    errors[i] = zfi_asprintf("worker '%s' was lost before it answered", workers[i]);
                continue;
            }
            all = false;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        if (all || now >= deadline)
            break;
        struct timespec dl = {.tv_sec = (time_t)(deadline / 1000000000u),
                              .tv_nsec = (long)(deadline % 1000000000u)};
        pthread_cond_timedwait(&c->cv, &c->mu, &dl);
    }
    /* unlink ours from the pending list */
    for (zfi_pending **q = &c->pending; *q;) {
        if (*q >= p && *q < p + n)
            *q = (*q)->next;
        else
            q = &(*q)->next;
    }
    pthread_mutex_unlock(&c->mu);
    zf_err err = ZF_OK;
    for (size_t i = 0; i < n; i++) {
        replies[i] = p[i].reply;
        if (!p[i].done && errors)
            errors[i] =
                zfi_asprintf("worker '%s' did not answer within %d ms", workers[i], timeout_ms);
        if (!replies[i])
            err = ZF_ETIMEDOUT;
    }
    free(p);
    if (err != ZF_OK)
        zfi_error(err, "not every worker answered");
    return err;
}

void zfi_cluster_stats_get(zf_cluster *c, zf_cluster_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    out->sent = c->sent;
    out->received = c->received;
    out->refused = c->refused;
    pthread_mutex_unlock(&c->mu);
}

/* Whether entity e is a topic of the instance, or an endpoint on one. */
static bool of_instance(dds_entity_t e, const char *prefix)
{
    char name[256] = "";
    dds_entity_t t = dds_get_name(e, name, sizeof name) == DDS_RETCODE_OK ? e : dds_get_topic(e);
    if (t != e && (t <= 0 || dds_get_name(t, name, sizeof name) != DDS_RETCODE_OK))
        return false;
    return !strncmp(name, prefix, strlen(prefix));
}

size_t zfi_cluster_entities(zf_cluster *c, const char *uuid)
{
    if (!c || !uuid)
        return 0;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "zf/%s/", uuid);
    zfi_topic_name(prefix);
    static dds_entity_t kids[1024], eps[4096];
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    size_t found = 0;
    dds_return_t n = dds_get_children(c->pp, kids, 1024);
    for (dds_return_t i = 0; i < n && i < 1024; i++) {
        if (of_instance(kids[i], prefix)) {
            found++; /* a topic */
            continue;
        }
        dds_return_t k = dds_get_children(kids[i], eps, 4096); /* publishers, subscribers */
        for (dds_return_t j = 0; j < k && j < 4096; j++)
            found += of_instance(eps[j], prefix);
    }
    pthread_mutex_unlock(&mu);
    return found;
}

/* ---- create, destroy ---- */

static dds_qos_t *workers_qos(int64_t lease_ns)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(CTL_MAX_BLOCKING_S));
    dds_qset_durability(q, DDS_DURABILITY_TRANSIENT_LOCAL);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
    dds_qset_liveliness(q, DDS_LIVELINESS_AUTOMATIC, lease_ns);
    /* A lost writer must not look like one that left: only zf_cluster_destroy
     * disposes. */
    dds_qset_writer_data_lifecycle(q, false);
    return q;
}

static dds_qos_t *ctl_qos(void)
{
    dds_qos_t *q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(CTL_MAX_BLOCKING_S));
    dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
    return q;
}

void zfi_cluster_destroy(zf_cluster *c)
{
    if (!c)
        return;
    if (c->thread_started) {
        atomic_store(&c->stop, true);
        dds_set_guardcondition(c->guard, true);
        pthread_join(c->thread, NULL);
    }
    pthread_mutex_lock(&c->mu);
    while (c->requests_running) /* their replies need the writer */
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (c->w_workers > 0) {
        zfi_msg_worker m = {.name = c->name, .info = c->info};
        dds_dispose(c->w_workers, &m); /* the others see it leave */
    }
    if (c->pp > 0)
        dds_delete(c->pp);
    pthread_mutex_lock(&the_mu);
    if (the_cluster == c)
        the_cluster = NULL;
    pthread_mutex_unlock(&the_mu);
    free(c->peers);
    free(c->name);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static zf_err dds_fail(zf_cluster *c, const char *what, dds_return_t r)
{
    zf_err e = zfi_error(ZF_ESYS, "Cyclone DDS: %s: %s", what, dds_strretcode(r));
    char keep[512];
    snprintf(keep, sizeof keep, "%s", zf_last_error());
    zfi_cluster_destroy(c);
    return zfi_error(e, "%s", keep);
}

char *zfi_dds_config_text(const char *given, int64_t lease_ns)
{
    if (lease_ns <= 0)
        lease_ns = DEFAULT_LEASE_NS;
    const char *cfg = given && *given ? given : getenv("ZF_DDS_CONFIG");
    if (cfg && *cfg)
        return zfi_strdup(cfg);
    if (getenv("CYCLONEDDS_URI") && *getenv("CYCLONEDDS_URI"))
        return NULL;
    return zfi_asprintf(loopback_config, (long long)(lease_ns / 1000000));
}

zf_err zfi_cluster_create(const zf_cluster_options *opt, zf_cluster **out)
{
    if (!opt || !out || !opt->name || !*opt->name)
        return zfi_error(ZF_EINVAL, "zf_cluster_create: a worker name is required");
    *out = NULL;
    int domain = opt->domain;
    if (domain < 0) {
        const char *e = getenv("ZF_DOMAIN");
        domain = e && *e ? atoi(e) : 0;
    }
    if (domain < 0 || domain > 230)
        return zfi_error(ZF_EINVAL, "DDS domain id %d: expected 0 to 230", domain);
    zf_cluster *c = zfi_calloc(1, sizeof *c);
    if (!c)
        return zfi_error(ZF_ENOMEM, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    zfi_cond_init_monotonic(&c->cv);
    c->name = zfi_strdup(opt->name);
    c->domain = domain;
    c->lease_ns = opt->lease_ns > 0 ? opt->lease_ns : DEFAULT_LEASE_NS;
    c->handler = opt->handler;
    c->handler_arg = opt->handler_arg;
    c->on_lost = opt->on_lost;
    c->lost_arg = opt->lost_arg;
    c->on_joined = opt->on_joined;
    c->joined_arg = opt->joined_arg;
    snprintf(c->info, sizeof c->info, "{}");
    if (opt->key_file && zfi_key_load(opt->key_file, &c->key) != ZF_OK) {
        char keep[512];
        snprintf(keep, sizeof keep, "%s", zf_last_error());
        zfi_cluster_destroy(c);
        return zfi_error(ZF_EINVAL, "%s", keep);
    }
    pthread_mutex_lock(&the_mu);
    bool taken = the_cluster != NULL;
    if (!taken)
        the_cluster = c;
    pthread_mutex_unlock(&the_mu);
    if (taken) {
        zfi_cluster_destroy(c);
        return zfi_error(ZF_EBUSY, "this process is in a cluster already");
    }
    char *cfg = zfi_dds_config_text(opt->config, c->lease_ns);
    if (cfg) {
        dds_entity_t dom = dds_create_domain((dds_domainid_t)domain, cfg);
        free(cfg);
        if (dom < 0 && dom != DDS_RETCODE_PRECONDITION_NOT_MET)
            return dds_fail(c, "the domain configuration was refused (see Cyclone's log)", dom);
    }
    c->pp = dds_create_participant((dds_domainid_t)domain, NULL, NULL);
    if (c->pp < 0)
        return dds_fail(c, "participant", c->pp);
    dds_qos_t *wq = workers_qos(c->lease_ns), *cq = ctl_qos();
    c->t_workers = dds_create_topic(c->pp, &zfi_msg_worker_desc, "zf/workers", wq, NULL);
    c->t_ctl = dds_create_topic(c->pp, &zfi_msg_ctl_desc, "zf/ctl", cq, NULL);
    if (c->t_workers > 0)
        c->w_workers = dds_create_writer(c->pp, c->t_workers, wq, NULL);
    if (c->t_workers > 0)
        c->r_workers = dds_create_reader(c->pp, c->t_workers, wq, NULL);
    if (c->t_ctl > 0)
        c->w_ctl = dds_create_writer(c->pp, c->t_ctl, cq, NULL);
    if (c->t_ctl > 0)
        c->r_ctl = dds_create_reader(c->pp, c->t_ctl, cq, NULL);
    dds_delete_qos(wq);
    dds_delete_qos(cq);
    dds_entity_t bad = c->t_workers < 0   ? c->t_workers
                       : c->t_ctl < 0     ? c->t_ctl
                       : c->w_workers < 0 ? c->w_workers
                       : c->r_workers < 0 ? c->r_workers
                       : c->w_ctl < 0     ? c->w_ctl
                       : c->r_ctl < 0     ? c->r_ctl
                                          : 0;
    if (bad < 0)
        return dds_fail(c, "control topics", bad);
    c->ws = dds_create_waitset(c->pp);
    c->guard = dds_create_guardcondition(c->pp);
    c->rc_workers = dds_create_readcondition(c->r_workers, DDS_ANY_STATE);
    c->rc_ctl = dds_create_readcondition(c->r_ctl, DDS_ANY_STATE);
    if (c->ws < 0 || c->guard < 0 || c->rc_workers < 0 || c->rc_ctl < 0 ||
        dds_waitset_attach(c->ws, c->guard, 0) < 0 ||
        dds_waitset_attach(c->ws, c->rc_workers, 0) < 0 ||
        dds_waitset_attach(c->ws, c->rc_ctl, 0) < 0)
        return dds_fail(c, "waitset", DDS_RETCODE_ERROR);
    pthread_mutex_lock(&c->mu);
    announce_locked(c, 0);
    pthread_mutex_unlock(&c->mu);
    if (pthread_create(&c->thread, NULL, cluster_main, c) != 0)
        return dds_fail(c, "thread", DDS_RETCODE_OUT_OF_RESOURCES);
    c->thread_started = true;
    zfi_log(ZF_LOG_INFO, "cluster", "worker '%s' joined DDS domain %d (lease %.1f s%s)", c->name,
            domain, (double)c->lease_ns / 1e9, c->key.set ? ", signed control" : "");
    *out = c;
    return ZF_OK;
}
