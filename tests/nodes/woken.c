/* woken: a test source that has nothing to send until an event. A thread
 * of its own (started at init) grants `count` capsules one at a time: it
 * grants one, calls zf_node_wake, and waits until produce sent it. produce
 * returns ZF_EAGAIN while nothing is granted, so the runtime calls it
 * again only when woken (or after its safety net of about 10 ms). The
 * summary {"granted":N,"sent":N,"produce_calls":N,"wait_ns":N} goes to
 * `summary` at fini (wait_ns: the slowest grant-to-send). */
#include <zflow/zflow.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct woken {
    zf_node *n;
    int64_t count;
    atomic_llong granted, sent, calls;
    _Atomic uint64_t granted_at, worst;
    atomic_bool quit;
    pthread_t thread;
    bool started;
    char *summary;
} woken;

static void *granter(void *arg)
{
    woken *w = arg;
    for (long long i = 0; i < w->count && !atomic_load(&w->quit); i++) {
        atomic_store(&w->granted_at, zf_clock_ns());
        atomic_store(&w->granted, i + 1);
        zf_node_wake(w->n);
        /* until produce sent it (bounded by the stop) */
        while (atomic_load(&w->sent) < i + 1 && !atomic_load(&w->quit) && !zf_node_stopping(w->n)) {
            struct timespec ts = {0, 20000};
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
    if (zf_config_int(zf_node_config(n), "count", 100, &w->count) != ZF_OK ||
        zf_config_string(zf_node_config(n), "summary", NULL, &p) != ZF_OK) {
        zf_node_set_error(n, "%s", zf_last_error());
        free(w);
        return ZF_ETYPE;
    }
    w->summary = p && *p ? strdup(p) : NULL;
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
    long long sent = atomic_load(&w->sent);
    if (atomic_load(&w->granted) <= sent)
        return ZF_EAGAIN; /* nothing until the granter wakes us */
    zf_data *d = NULL;
    zf_err e = zf_data_alloc(n, 8, &d);
    if (e != ZF_OK)
        return e;
    memcpy(zf_data_mut(&d), &sent, 8);
    uint64_t waited = zf_clock_ns() - atomic_load(&w->granted_at);
    if (waited > atomic_load(&w->worst))
        atomic_store(&w->worst, waited);
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
            fprintf(f, "{\"granted\":%lld,\"sent\":%lld,\"produce_calls\":%lld,\"wait_ns\":%llu}\n",
                    (long long)atomic_load(&w->granted), (long long)atomic_load(&w->sent),
                    (long long)atomic_load(&w->calls), (unsigned long long)atomic_load(&w->worst));
            fclose(f);
        }
    }
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
