/* relay: a test operator forwarding its input (the same capsule: no copy).
 *   mutate: false   write a byte first (copy on write when shared)
 *   keep: 0         keep a reference to the first N capsules until fini
 *   leak: 0         keep a reference to the first N capsules forever
 *   fail_every: 0   return an error for every Nth capsule
 *   sleep_us: 0     busy time per capsule
 *   hang_on: 0      hang in the Nth capsule's callback...
 *   hang_ms: 0      ...for this long (0: never return)
 *   linger_ms: 0    stay in the callback this long after sending (a long
 *                   callback whose output is ready before it returns)...
 *   linger_on: 0    ...for the Nth capsule only (0: every one)
 *   scribble: false write into the capsule through zf_data_ptr, the bug
 *                   ZF_CHECK_SHARED catches (a shared capsule's bytes change) */
#include <zflow/zflow.h>

#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(ZF_SANITIZE_THREAD)
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#endif

typedef struct relay {
    bool mutate, scribble;
    int64_t keep, leak, fail_every, sleep_us, hang_on, hang_ms, linger_ms, linger_on, seen;
    zf_data **kept;
    int64_t n_kept;
} relay;

static zf_err relay_init(zf_node *n, void **state)
{
    relay *r = calloc(1, sizeof *r);
    if (!r)
        return ZF_ENOMEM;
    const zf_config *c = zf_node_config(n);
    if (zf_config_bool(c, "mutate", false, &r->mutate) != ZF_OK ||
        zf_config_bool(c, "scribble", false, &r->scribble) != ZF_OK ||
        zf_config_int(c, "keep", 0, &r->keep) != ZF_OK ||
        zf_config_int(c, "leak", 0, &r->leak) != ZF_OK ||
        zf_config_int(c, "fail_every", 0, &r->fail_every) != ZF_OK ||
        zf_config_int(c, "sleep_us", 0, &r->sleep_us) != ZF_OK ||
        zf_config_int(c, "hang_on", 0, &r->hang_on) != ZF_OK ||
        zf_config_int(c, "hang_ms", 0, &r->hang_ms) != ZF_OK ||
        zf_config_int(c, "linger_ms", 0, &r->linger_ms) != ZF_OK ||
        zf_config_int(c, "linger_on", 0, &r->linger_on) != ZF_OK) {
        zf_node_set_error(n, "%s",
                          zf_last_error()); /* "configuration 'KEY' is ..., expected ..." */
        free(r);
        return ZF_ETYPE;
    }
    r->kept = calloc((size_t)(r->keep + 1), sizeof *r->kept);
    *state = r;
    return ZF_OK;
}

static zf_err relay_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    relay *r = state;
    (void)port;
    r->seen++;
    if (r->sleep_us) {
        struct timespec ts = {0, r->sleep_us * 1000};
        nanosleep(&ts, NULL);
    }
    if (r->hang_on && r->seen == r->hang_on) {
        struct timespec ts = {r->hang_ms / 1000, (r->hang_ms % 1000) * 1000000};
        while (!r->hang_ms)
            sleep(3600); /* hung for good: stop abandons this thread */
        nanosleep(&ts, NULL);
    }
    if (r->fail_every && r->seen % r->fail_every == 0) {
        zf_node_set_error(n, "injected failure %lld", (long long)r->seen);
        return ZF_EINVAL;
    }
    if (r->scribble && zf_data_len(*d)) {
        /* Wrong on purpose (zf_data_mut copies): a write into a capsule its
         * siblings are reading, a real data race, which the shared-write
         * check is there to report. TSan would report it too: hide this
         * one write from it, as the test is about the runtime's check. */
#if defined(ZF_SANITIZE_THREAD)
        __tsan_ignore_thread_begin();
#endif
        ((unsigned char *)zf_data_ptr(*d))[0] ^= 0xff;
#if defined(ZF_SANITIZE_THREAD)
        __tsan_ignore_thread_end();
#endif
    }
    if (r->n_kept < r->keep)
        r->kept[r->n_kept++] = zf_data_ref(*d);
    if (r->leak > 0) {
        r->leak--;
        zf_data_ref(*d); /* deliberately never released */
    }
    if (r->mutate) {
        unsigned char *w = zf_data_mut(d);
        if (!w)
            return ZF_ENOMEM;
        w[15] ^= 0xff;
    }
    zf_err e = zf_send(n, 0, d);
    if (r->linger_ms && (!r->linger_on || r->seen == r->linger_on)) {
        struct timespec ts = {r->linger_ms / 1000, (r->linger_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    return e;
}

static void relay_fini(void *state)
{
    relay *r = state;
    for (int64_t i = 0; i < r->n_kept; i++)
        zf_data_unref(r->kept[i]);
    free(r->kept);
    free(r);
}

static const zf_port_decl inputs[] = {{"in", "bytes"}};
static const zf_port_decl outputs[] = {{"out", "bytes"}};

static const zf_node_decl decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_OPERATOR,
    .name = "relay",
    .inputs = inputs,
    .n_inputs = 1,
    .outputs = outputs,
    .n_outputs = 1,
    .init = relay_init,
    .fini = relay_fini,
    .on_input = relay_on_input,
};

ZF_NODE_EXPORT(decl)
