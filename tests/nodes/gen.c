/* gen: a test source.
 *   count: N        capsules to send (0: no limit)
 *   size: 64        payload bytes (>= 16)
 *   mode: pool      pool | wrap (heap + release callback) | static
 *   thread: false   send from a thread of its own (produce is then unused)
 * Each payload starts with its own address and a sequence number, so a
 * receiver can prove it got the very same buffer (no copy). */
#include <zflow/zflow.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct gen {
    zf_node *node;
    int64_t count, size, sent;
    char mode;
    bool threaded;
    pthread_t thread;
    atomic_bool stop;
} gen;

static const char static_payload[4096] = "static payload";

static zf_err make(gen *g, zf_data **d)
{
    zf_err e;
    if (g->mode == 'w') {
        void *mem = malloc((size_t)g->size);
        if (!mem)
            return ZF_ENOMEM;
        e = zf_data_wrap(mem, (size_t)g->size, free, mem, d);
        if (e != ZF_OK)
            free(mem);
    } else if (g->mode == 's') {
        return zf_data_static(static_payload, (size_t)g->size, d);
    } else {
        e = zf_data_alloc(g->node, (size_t)g->size, d);
    }
    if (e != ZF_OK)
        return e;
    uint64_t *p = zf_data_mut(d);
    p[0] = (uint64_t)(uintptr_t)zf_data_ptr(*d);
    p[1] = (uint64_t)(g->sent + 1);
    return ZF_OK;
}

static zf_err one(gen *g)
{
    if (g->count && g->sent >= g->count)
        return ZF_OK;
    zf_data *d = NULL;
    zf_err e = make(g, &d);
    if (e != ZF_OK)
        return e;
    g->sent++;
    return zf_send(g->node, 0, &d);
}

static void *loop(void *arg)
{
    gen *g = arg;
    while (!atomic_load(&g->stop) && !zf_node_stopping(g->node) &&
           (!g->count || g->sent < g->count)) {
        zf_err e = one(g);
        if (e == ZF_ECLOSED)
            break;
    }
    return NULL;
}

static zf_err gen_init(zf_node *n, void **state)
{
    gen *g = calloc(1, sizeof *g);
    if (!g)
        return ZF_ENOMEM;
    g->node = n;
    const zf_config *c = zf_node_config(n);
    const char *mode = "pool";
    if (zf_config_int(c, "count", 0, &g->count) != ZF_OK ||
        zf_config_int(c, "size", 64, &g->size) != ZF_OK ||
        zf_config_string(c, "mode", "pool", &mode) != ZF_OK ||
        zf_config_bool(c, "thread", false, &g->threaded) != ZF_OK) {
        zf_node_set_error(n, "%s",
                          zf_last_error()); /* "configuration 'KEY' is ..., expected ..." */
        free(g);
        return ZF_ETYPE;
    }
    g->mode = mode[0] == 'w' ? 'w' : mode[0] == 's' ? 's' : 'p';
    if (g->size < 16 || (g->mode == 's' && g->size > (int64_t)sizeof static_payload)) {
        zf_node_set_error(n, "size must be >= 16 (<= 4096 for static)");
        free(g);
        return ZF_EINVAL;
    }
    if (g->threaded && pthread_create(&g->thread, NULL, loop, g) != 0) {
        free(g);
        return ZF_ESYS;
    }
    *state = g;
    return ZF_OK;
}

static zf_err gen_produce(void *state, zf_node *n)
{
    (void)n;
    gen *g = state;
    return g->threaded ? ZF_OK : one(g);
}

static void gen_fini(void *state)
{
    gen *g = state;
    if (g->threaded) {
        atomic_store(&g->stop, true);
        pthread_join(g->thread, NULL);
    }
    free(g);
}

static const zf_port_decl outputs[] = {{"out", "bytes"}};

static const zf_node_decl decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SOURCE,
    .name = "gen",
    .outputs = outputs,
    .n_outputs = 1,
    .init = gen_init,
    .fini = gen_fini,
    .produce = gen_produce,
};

ZF_NODE_EXPORT(decl)
