/* count: a test sink. Counts capsules and bytes, checks that each payload
 * sits at the address its source recorded in it (zero copy), and writes
 * {"count":N,"bytes":N,"same_address":N,"moved":N,"last_seq":N} to
 * `summary` at fini. `delay_us`: sleep that long per capsule (a slow
 * consumer). */
#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct count {
    uint64_t count, bytes, same, moved, last_seq, out_of_order;
    int64_t delay_us;
    char *summary;
} count;

static zf_err count_init(zf_node *n, void **state)
{
    count *c = calloc(1, sizeof *c);
    if (!c)
        return ZF_ENOMEM;
    const char *p = NULL;
    zf_config_string(zf_node_config(n), "summary", NULL, &p);
    c->summary = p && *p ? strdup(p) : NULL;
    zf_config_int(zf_node_config(n), "delay_us", 0, &c->delay_us);
    *state = c;
    return ZF_OK;
}

static zf_err count_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    count *c = state;
    (void)n;
    (void)port;
    c->count++;
    c->bytes += zf_data_len(*d);
    if (c->delay_us > 0) {
        struct timespec ts = {c->delay_us / 1000000, (c->delay_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    if (zf_data_len(*d) >= 16) {
        const uint64_t *p = zf_data_ptr(*d);
        if (p[0] == (uint64_t)(uintptr_t)p)
            c->same++;
        else
            c->moved++;
        if (p[1] <= c->last_seq)
            c->out_of_order++;
        c->last_seq = p[1];
    }
    return ZF_OK;
}

static void count_fini(void *state)
{
    count *c = state;
    if (c->summary) {
        FILE *f = fopen(c->summary, "w");
        if (f) {
            fprintf(f,
                    "{\"count\":%llu,\"bytes\":%llu,\"same_address\":%llu,\"moved\":%llu,"
                    "\"last_seq\":%llu,\"out_of_order\":%llu}\n",
                    (unsigned long long)c->count, (unsigned long long)c->bytes,
                    (unsigned long long)c->same, (unsigned long long)c->moved,
                    (unsigned long long)c->last_seq, (unsigned long long)c->out_of_order);
            fclose(f);
        }
        free(c->summary);
    }
    free(c);
}

static const zf_port_decl inputs[] = {{"in", "bytes"}};

static const zf_node_decl decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SINK,
    .name = "count",
    .inputs = inputs,
    .n_inputs = 1,
    .init = count_init,
    .fini = count_fini,
    .on_input = count_on_input,
};

ZF_NODE_EXPORT(decl)
