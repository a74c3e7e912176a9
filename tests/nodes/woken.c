/* woken: a test source that has nothing to send until an event. A thread
 * of its own (started at init) grants `count` capsules one at a time: it
 * grants one, calls zf_node_wake, and waits until produce sent it, then
 * `gap_us` more (default 0). produce returns ZF_EAGAIN while nothing is
 * granted (`idle: ok`: ZF_OK, having sent nothing: a backoff), so the
 * runtime calls it again only when woken (or after its safety net).
 * `burst: N` (default 1): N grants back to back, each with its own wake,
 * then a wait (yielding, not sleeping) until produce sent them all.
 * `flood: true`: no granter, all `count` granted from the start and
 * allocated at init (an isolated produce then waits for no loan); produce
 * sends with zf_try_send and passes its ZF_EAGAIN on (an output full).
 * The summary {"granted":N,"sent":N,"produce_calls":N,"wait_ns":N,
 * "wait_mean_ns":N,"refusals":N,"retry_mean_ns":N} goes to `summary` at
 * fini (wait_ns: the slowest grant-to-send; retry: from a refusal to the
 * next produce). */
#include <zflow/zflow.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct woken {
    zf_node *n;
    int64_t count, gap_us, burst;
    bool idle_ok, flood;
    atomic_llong granted, sent, calls;
    _Atomic uint64_t granted_at, worst, wait_sum;
    uint64_t refused_at, refusals, retry_sum; /* (produce only) */
    zf_data **pre;                            /* flood: the capsules, made at init */
    atomic_bool quit;
    pthread_t thread;
    bool started;
    char *summary;
} woken;

static void *granter(void *arg)
{
    woken *w = arg;
    uint64_t rnd = 88172645463325252ull;
    for (long long i = 0; i < w->count && !atomic_load(&w->quit);) {
        /* `burst` grants, each with its wake: the second finds the source
         * queued by the first, or running */
        for (long long b = 0; b < w->burst && i < w->count; b++, i++) {
            if (b > 0) { /* a few hundred ns on: the source is anywhere in its step */
                rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
                for (uint64_t until = zf_clock_ns() + rnd % 1500; zf_clock_ns() < until;)
                    ;
            }
            atomic_store_explicit(&w->granted_at, zf_clock_ns(), memory_order_relaxed);
            atomic_store_explicit(&w->granted, i + 1, memory_order_release);
            zf_node_wake(w->n);
        }
        /* until produce sent them (bounded by the stop) */
        while (atomic_load(&w->sent) < i && !atomic_load(&w->quit) && !zf_node_stopping(w->n)) {
            if (w->burst > 1) {
                sched_yield(); /* (grants follow sends closely) */
                continue;
            }
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        if (w->gap_us > 0) {
            struct timespec ts = {w->gap_us / 1000000, (w->gap_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static zf_err woken_init(zf_node *n, void **state)
{
    woken *w = calloc(1, sizeof *w);
    if (!w)
        return ZF_ENOMEM;
    w->n = n;
    const char *p = NULL;
    const zf_config *c = zf_node_config(n);
    if (zf_config_int(c, "count", 100, &w->count) != ZF_OK ||
        zf_config_int(c, "gap_us", 0, &w->gap_us) != ZF_OK ||
        zf_config_int(c, "burst", 1, &w->burst) != ZF_OK ||
        zf_config_bool(c, "idle_ok", false, &w->idle_ok) != ZF_OK ||
        zf_config_bool(c, "flood", false, &w->flood) != ZF_OK ||
        zf_config_string(c, "summary", NULL, &p) != ZF_OK) {
        zf_node_set_error(n, "%s", zf_last_error());
        free(w);
        return ZF_ETYPE;
    }
    if (w->burst < 1) {
        zf_node_set_error(n, "configuration 'burst' is %lld, expected 1 or more",
                          (long long)w->burst);
        free(w);
        return ZF_EINVAL;
    }
    w->summary = p && *p ? strdup(p) : NULL;
    if (w->flood) {
        atomic_store(&w->granted, w->count);
        w->pre = calloc((size_t)w->count, sizeof *w->pre);
        for (int64_t i = 0; w->pre && i < w->count; i++) {
            zf_err e = zf_data_alloc(n, 8, &w->pre[i]);
            if (e != ZF_OK) {
                zf_node_set_error(n, "%s", zf_last_error());
                while (i-- > 0)
                    zf_data_unref(w->pre[i]);
                free(w->pre);
                free(w->summary);
                free(w);
                return e;
            }
            memcpy(zf_data_mut(&w->pre[i]), &i, 8);
        }
        if (!w->pre) {
            free(w->summary);
            free(w);
            return ZF_ENOMEM;
        }
        *state = w;
        return ZF_OK;
    }
    if (pthread_create(&w->thread, NULL, granter, w) != 0) {
        free(w->summary);
        free(w);
        return ZF_ESYS;
    }
    w->started = true;
    *state = w;
    return ZF_OK;
}

static zf_err woken_produce(void *state, zf_node *n)
{
    woken *w = state;
    atomic_fetch_add(&w->calls, 1);
    if (w->refused_at) {
        w->retry_sum += zf_clock_ns() - w->refused_at;
        w->refused_at = 0;
    }
    long long sent = atomic_load(&w->sent);
    if (atomic_load(&w->granted) <= sent)
        return w->idle_ok ? ZF_OK : ZF_EAGAIN; /* nothing until the granter wakes us */
    if (w->flood) {
        zf_err e = zf_try_send(n, 0, &w->pre[sent]); /* kept on a refusal */
        if (e == ZF_EAGAIN) {
            w->refusals++;
            w->refused_at = zf_clock_ns();
            return e;
        }
        atomic_store(&w->sent, sent + 1);
        return e;
    }
    zf_data *d = NULL;
    zf_err e = zf_data_alloc(n, 8, &d);
    if (e != ZF_OK)
        return e;
    memcpy(zf_data_mut(&d), &sent, 8);
    uint64_t now = zf_clock_ns(), at = atomic_load(&w->granted_at);
    uint64_t waited = now > at ? now - at : 0; /* (a burst's next grant may be newer) */
    if (waited > atomic_load(&w->worst))
        atomic_store(&w->worst, waited);
    atomic_fetch_add(&w->wait_sum, waited);
    atomic_store(&w->sent, sent + 1);
    return zf_send(n, 0, &d);
}

static void woken_fini(void *state)
{
    woken *w = state;
    atomic_store(&w->quit, true);
    if (w->started)
        pthread_join(w->thread, NULL);
    if (w->summary) {
        FILE *f = fopen(w->summary, "w");
        if (f) {
            long long sent = atomic_load(&w->sent);
            fprintf(f,
                    "{\"granted\":%lld,\"sent\":%lld,\"produce_calls\":%lld,\"wait_ns\":%llu,"
                    "\"wait_mean_ns\":%llu,\"refusals\":%llu,\"retry_mean_ns\":%llu}\n",
                    (long long)atomic_load(&w->granted), sent, (long long)atomic_load(&w->calls),
                    (unsigned long long)atomic_load(&w->worst),
                    (unsigned long long)(sent ? atomic_load(&w->wait_sum) / (uint64_t)sent : 0),
                    (unsigned long long)w->refusals,
                    (unsigned long long)(w->refusals ? w->retry_sum / w->refusals : 0));
            fclose(f);
        }
    }
    for (int64_t i = 0; w->pre && i < w->count; i++)
        if (w->pre[i])
            zf_data_unref(w->pre[i]);
    free(w->pre);
    free(w->summary);
    free(w);
}

static const zf_port_decl outputs[] = {{"out", NULL}};
static const zf_node_decl decl = {.abi = ZF_ABI_VERSION,
                                  .kind = ZF_SOURCE,
                                  .name = "woken",
                                  .outputs = outputs,
                                  .n_outputs = 1,
                                  .init = woken_init,
                                  .fini = woken_fini,
                                  .produce = woken_produce};
ZF_NODE_EXPORT(decl)
