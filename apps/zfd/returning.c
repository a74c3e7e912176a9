/* Parts left on workers that could not be reached.
 *
 * A destroy (or a deploy's rollback) that finds a worker lost (its lease
 * expired: a machine too loaded to renew it, a network cut) completes on the
 * others and says so; the lost worker's part is still there. If that worker
 * comes back (it was never dead, or the network healed), the destroy is sent
 * again when it rejoins, and the result is logged: without this its part
 * would run on, an orphan no other worker knows. A worker that is alive but
 * did not answer (it was back before the destroy ended, or its answer was
 * lost while DDS matched it again) is sent the destroy again at once, up to
 * MAX_TRIES times. What is waiting is kept in
 * memory by the worker that ran the destroy (lost if that worker stops), at
 * most MAX_WAITING parts (docs/cluster.md, "A lost worker"). */
#include "zfd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WAITING       1024
#define MAX_TRIES         4
#define RESEND_TIMEOUT_MS 5000

typedef struct waiting {
    struct waiting *next;
    char *worker, *uuid, *body;
    unsigned tries; /* sends that got no answer from a live worker */
} waiting;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    waiting *list;
    size_t n;
    unsigned sending; /* threads under way */
    bool stopping;
    zfd_daemon *d;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void waiting_free(waiting *w)
{
    free(w->worker);
    free(w->uuid);
    free(w->body);
    free(w);
}

/* Under R.mu: w into the list (or freed, logged, when the list is full). */
static void put(waiting *w)
{
    if (R.n >= MAX_WAITING) {
        zfd_log(ZF_LOG_WARN,
                "instance %s: its part on worker '%s' cannot be remembered (%d parts wait "
                "already): destroy it there by hand",
                w->uuid, w->worker, MAX_WAITING);
        waiting_free(w);
        return;
    }
    w->next = R.list;
    R.list = w;
    R.n++;
}

static void *send_main(void *arg);

/* Under R.mu: a thread sends what waits for worker (unless stopping). */
static void start_sender(const char *worker)
{
    char *name = R.stopping ? NULL : strdup(worker);
    if (!name)
        return;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, send_main, name) == 0) {
        R.sending++;
    } else {
        zfd_log(ZF_LOG_WARN, "no thread could be made to destroy the parts left on worker '%s'",
                worker);
        free(name);
    }
    pthread_attr_destroy(&at);
}

void zfd_returning_keep(zfd_daemon *d, size_t n, const char *const *workers, char *const *replies,
                        const char *uuid, const char *body)
{
    zf_worker_info *all = NULL;
    size_t na = 0;
    if (!d->cluster)
        return;
    /* The workers' states read under R.mu: a worker that rejoins from here
     * on finds its entry (zfd_returning_joined takes R.mu). */
    pthread_mutex_lock(&R.mu);
    R.d = d;
    if (zf_cluster_workers(d->cluster, &all, &na) != ZF_OK)
        na = 0;
    for (size_t i = 0; i < n; i++) {
        if (replies[i])
            continue; /* it answered: done, or refused for a reason of its own */
        const zf_worker_info *x = NULL;
        for (size_t k = 0; k < na && !x; k++)
            if (!strcmp(all[k].name, workers[i]))
                x = &all[k];
        if (!x || x->left)
            continue; /* never seen (nothing of it there), or left in order (it destroyed all) */
        waiting *w = calloc(1, sizeof *w);
        if (w) {
            w->worker = strdup(workers[i]);
            w->uuid = strdup(uuid);
            w->body = strdup(body);
        }
        if (!w || !w->worker || !w->uuid || !w->body) {
            zfd_log(ZF_LOG_WARN,
                    "instance %s: its part on worker '%s' cannot be remembered (out of memory)",
                    uuid, workers[i]);
            if (w)
                waiting_free(w);
            continue;
        }
        put(w);
        if (x->alive) {
            zfd_log(ZF_LOG_WARN,
                    "instance %s: worker '%s' did not answer; its part is destroyed again", uuid,
                    workers[i]);
            start_sender(workers[i]);
        } else {
            zfd_log(ZF_LOG_WARN,
                    "instance %s: worker '%s' is lost; its part will be destroyed if it comes "
                    "back",
                    uuid, workers[i]);
        }
    }
    pthread_mutex_unlock(&R.mu);
    free(all);
}

/* Send one waiting destroy; true when the worker answered. */
static bool resend(zfd_daemon *d, waiting *w)
{
    const char *to[1] = {w->worker}, *bodies[1] = {w->body};
    char *reply = NULL, *err = NULL;
    ZF_IGNORE(zf_cluster_call(d->cluster, 1, to, bodies, RESEND_TIMEOUT_MS, &reply, &err));
    zf_config *t = NULL;
    bool ok = false;
    const char *code = "", *msg = "";
    if (reply && zf_json_parse(reply, strlen(reply), &t) == ZF_OK) {
        ZF_IGNORE(zf_config_bool(t, "ok", false, &ok));
        ZF_IGNORE(zf_config_string(t, "error.code", "", &code));
        ZF_IGNORE(zf_config_string(t, "error.message", "", &msg));
    }
    if (ok) {
        int64_t leaked = 0;
        ZF_IGNORE(zf_config_int(t, "result.report.bytes_leaked", 0, &leaked));
        zfd_log(ZF_LOG_INFO,
                "instance %s: worker '%s': its part, which the destroy could not reach, is "
                "destroyed now (%lld bytes leaked)",
                w->uuid, w->worker, (long long)leaked);
    } else if (reply) {
        zfd_log(ZF_LOG_INFO, "instance %s: worker '%s' has no part of it left (%s: %s)", w->uuid,
                w->worker, code, msg);
    } else {
        zfd_log(ZF_LOG_WARN, "instance %s: worker '%s' did not answer the destroy: %s", w->uuid,
                w->worker, err ? err : "no answer");
    }
    zf_config_free(t);
    free(reply);
    free(err);
    return reply != NULL;
}

/* Under R.mu: wait s seconds, or less if the daemon stops. */
static void pause_s(unsigned s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)s;
    while (!R.stopping && pthread_cond_timedwait(&R.cv, &R.mu, &ts) == 0)
        ;
}

static void *send_main(void *arg)
{
    char *worker = arg;
    pthread_mutex_lock(&R.mu);
    zfd_daemon *d = R.d;
    while (!R.stopping) {
        waiting *w = NULL;
        for (waiting **p = &R.list; *p; p = &(*p)->next)
            if (!strcmp((*p)->worker, worker)) {
                w = *p;
                *p = w->next;
                R.n--;
                break;
            }
        if (!w)
            break;
        pthread_mutex_unlock(&R.mu);
        bool answered = resend(d, w);
        bool alive = answered || zf_cluster_alive(d->cluster, worker);
        pthread_mutex_lock(&R.mu);
        if (answered) {
            waiting_free(w);
        } else if (!alive) {
            put(w); /* lost again: sent when it comes back */
            break;
        } else if (++w->tries >= MAX_TRIES) {
            zfd_log(ZF_LOG_WARN,
                    "instance %s: worker '%s' is alive but did not answer %u destroys: its part "
                    "may be left there (zfctl destroy ID on it)",
                    w->uuid, w->worker, w->tries);
            waiting_free(w);
        } else {
            unsigned s = 1u << (w->tries - 1); /* 1, 2, 4 s */
            put(w);                            /* (w may be freed here) */
            pause_s(s);
        }
    }
    R.sending--;
    pthread_cond_broadcast(&R.cv);
    pthread_mutex_unlock(&R.mu);
    free(worker);
    return NULL;
}

void zfd_returning_joined(zfd_daemon *d, const char *worker)
{
    pthread_mutex_lock(&R.mu);
    R.d = d;
    bool any = false;
    for (waiting *w = R.list; w && !any; w = w->next)
        any = !strcmp(w->worker, worker);
    if (any)
        start_sender(worker);
    pthread_mutex_unlock(&R.mu);
}

void zfd_returning_stop(void)
{
    pthread_mutex_lock(&R.mu);
    R.stopping = true;
    pthread_cond_broadcast(&R.cv); /* senders pausing between tries */
    while (R.sending)
        pthread_cond_wait(&R.cv, &R.mu);
    while (R.list) {
        waiting *w = R.list;
        R.list = w->next;
        zfd_log(ZF_LOG_WARN, "instance %s: its part on worker '%s' (lost) is left there", w->uuid,
                w->worker);
        waiting_free(w);
    }
    R.n = 0;
    pthread_mutex_unlock(&R.mu);
}
