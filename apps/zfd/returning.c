/* Parts left on workers that could not be reached.
 *
 * A destroy (or a deploy's rollback) that finds a worker lost (its lease
 * expired: a machine too loaded to renew it, a network cut) completes on the
 * others and says so; the lost worker's part is still there. If that worker
 * comes back (it was never dead, or the network healed), the destroy is sent
 * again when it rejoins, and the result is logged: without this its part
 * would run on, an orphan no other worker knows. What is waiting is kept in
 * memory by the worker that ran the destroy (lost if that worker stops), at
 * most MAX_WAITING parts (docs/cluster.md, "A lost worker"). */
#include "zfd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WAITING       1024
#define RESEND_TIMEOUT_MS 10000

typedef struct waiting {
    struct waiting *next;
    char *worker, *uuid, *body;
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

/* Under R.mu. */
static void keep(char *worker, char *uuid, char *body)
{
    waiting *w = calloc(1, sizeof *w);
    if (!w || !worker || !uuid || !body || R.n >= MAX_WAITING) {
        zfd_log(ZF_LOG_WARN,
                "instance %s: its part on worker '%s' cannot be remembered for when it comes back "
                "(%s)",
                uuid ? uuid : "?", worker ? worker : "?",
                R.n >= MAX_WAITING ? "too many parts waiting" : "out of memory");
        free(w);
        free(worker);
        free(uuid);
        free(body);
        return;
    }
    *w = (waiting){.next = R.list, .worker = worker, .uuid = uuid, .body = body};
    R.list = w;
    R.n++;
}

void zfd_returning_keep(zfd_daemon *d, size_t n, const char *const *workers, char *const *replies,
                        const char *uuid, const char *body)
{
    zf_worker_info *all = NULL;
    size_t na = 0;
    if (!d->cluster || zf_cluster_workers(d->cluster, &all, &na) != ZF_OK)
        return;
    pthread_mutex_lock(&R.mu);
    R.d = d;
    for (size_t i = 0; i < n; i++) {
        if (replies[i])
            continue; /* it answered: done, or refused for a reason of its own */
        for (size_t k = 0; k < na; k++)
            if (!strcmp(all[k].name, workers[i]) && !all[k].alive && !all[k].left) {
                keep(strdup(workers[i]), strdup(uuid), strdup(body));
                zfd_log(ZF_LOG_WARN,
                        "instance %s: worker '%s' is lost; its part will be destroyed if it "
                        "comes back",
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
                "instance %s: worker '%s' is back; its part, left when it was lost, is destroyed "
                "(%lld bytes leaked)",
                w->uuid, w->worker, (long long)leaked);
    } else if (reply) {
        zfd_log(ZF_LOG_INFO, "instance %s: worker '%s' is back and has no part of it left (%s: %s)",
                w->uuid, w->worker, code, msg);
    } else {
        zfd_log(ZF_LOG_WARN, "instance %s: worker '%s' is back but did not answer the destroy: %s",
                w->uuid, w->worker, err ? err : "no answer");
    }
    zf_config_free(t);
    free(reply);
    free(err);
    return reply != NULL;
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
        pthread_mutex_lock(&R.mu);
        if (!answered) { /* lost again: wait for the next return */
            keep(w->worker, w->uuid, w->body);
            free(w);
            break;
        }
        waiting_free(w);
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
    char *name = any && !R.stopping ? strdup(worker) : NULL;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (name && pthread_create(&t, &at, send_main, name) == 0)
        R.sending++;
    else if (name) {
        zfd_log(ZF_LOG_WARN,
                "worker '%s' is back, but no thread could be made to destroy its parts", worker);
        free(name);
    }
    pthread_attr_destroy(&at);
    pthread_mutex_unlock(&R.mu);
}

void zfd_returning_stop(void)
{
    pthread_mutex_lock(&R.mu);
    R.stopping = true;
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
