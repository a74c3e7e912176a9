/* chatty: a test source that logs.
 *   spam: 0        lines of ~100 bytes to log at init (the rotation test)
 *   tick_every: 20 log "tick N" every that many produces (0: never)
 *   print: false   write "stdout-test" and "stderr-test" lines to its real
 *                  stdout and stderr (what an isolated node's host captures)
 * At init it logs "level-test LEVEL" once at every level and, unless print,
 * feeds one line as its standard output ("stdout-test") through
 * zf_node_log_output, as a host capturing an isolated node's output does. Each produce sends a
 * 64-byte capsule on `out`. */
#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct chatty {
    int64_t tick_every, produced;
} chatty;

static zf_err chatty_init(zf_node *n, void **state)
{
    chatty *c = calloc(1, sizeof *c);
    if (!c)
        return ZF_ENOMEM;
    int64_t spam = 0;
    bool print = false;
    if (zf_config_int(zf_node_config(n), "spam", 0, &spam) != ZF_OK ||
        zf_config_int(zf_node_config(n), "tick_every", 20, &c->tick_every) != ZF_OK ||
        zf_config_bool(zf_node_config(n), "print", false, &print) != ZF_OK) {
        zf_node_set_error(n, "%s", zf_last_error());
        free(c);
        return ZF_ETYPE;
    }
    zf_node_log(n, ZF_LOG_ERROR, "level-test error");
    zf_node_log(n, ZF_LOG_WARN, "level-test warn");
    zf_node_log(n, ZF_LOG_INFO, "level-test info");
    zf_node_log(n, ZF_LOG_DEBUG, "level-test debug");
    zf_node_log(n, ZF_LOG_TRACE, "level-test trace");
    static const char out[] = "stdout-test: a line the node printed\n";
    if (print) {
        fputs(out, stdout);
        fputs("stderr-test: a line the node wrote to stderr\n", stderr);
        printf("stdout-test: a second line, ");
        printf("written in two parts\n");
    } else {
        zf_node_log_output(n, 1, out, sizeof out - 1);
    }
    for (int64_t i = 0; i < spam; i++)
        zf_node_log(n, ZF_LOG_INFO,
                    "spam %06lld: the quick brown fox jumps over the lazy dog, again and again",
                    (long long)i);
    *state = c;
    return ZF_OK;
}

static void chatty_fini(void *state)
{
    free(state);
}

static zf_err chatty_produce(void *state, zf_node *n)
{
    chatty *c = state;
    c->produced++;
    if (c->tick_every && c->produced % c->tick_every == 0)
        zf_node_log(n, ZF_LOG_INFO, "tick %lld", (long long)c->produced);
    zf_data *d = NULL;
    zf_err e = zf_data_alloc(n, 64, &d);
    if (e != ZF_OK)
        return e;
    memset(zf_data_mut(&d), 0, 64);
    return zf_send(n, 0, &d);
}

static const zf_port_decl outputs[] = {{"out", "any"}};
static const zf_node_decl decl = {.abi = ZF_ABI_VERSION,
                                  .kind = ZF_SOURCE,
                                  .name = "chatty",
                                  .outputs = outputs,
                                  .n_outputs = 1,
                                  .init = chatty_init,
                                  .fini = chatty_fini,
                                  .produce = chatty_produce};
ZF_NODE_EXPORT(decl)
