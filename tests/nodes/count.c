/* count: a test sink. Counts capsules and bytes, checks that each payload
 * sits at the address its source recorded in it (zero copy), and writes
 * {"count":N,"bytes":N,"same_address":N,"moved":N,"last_seq":N} to
 * `summary` at fini. `delay_us`: sleep that long per capsule (a slow
 * consumer). The summary also has the median and mean of now - the
 * capsule's timestamp ("lat_p50_ns", "lat_mean_ns"), over the first 65536. */
#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct count {
    uint64_t count, bytes, same, moved, last_seq, out_of_order;
    int64_t delay_us;
    uint64_t lat[65536], lat_sum;
    size_t n_lat;
    char *summary;
} count;

static zf_err count_init(zf_node *n, void **state)
{
    count *c = calloc(1, sizeof *c);
    if (!c)
        return ZF_ENOMEM;
    const char *p = NULL;
    if (zf_config_string(zf_node_config(n), "summary", NULL, &p) != ZF_OK) {
        zf_node_set_error(n, "%s",
                          zf_last_error()); /* "configuration 'KEY' is ..., expected ..." */
        free(c);
        return ZF_ETYPE;
    }
    c->summary = p && *p ? strdup(p) : NULL;
    ZF_IGNORE(zf_config_int(zf_node_config(n), "delay_us", 0, &c->delay_us));
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
    if (zf_data_timestamp(*d) && c->n_lat < sizeof c->lat / sizeof c->lat[0]) {
        uint64_t l = zf_clock_ns() - zf_data_timestamp(*d);
        c->lat[c->n_lat++] = l;
        c->lat_sum += l;
    }
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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void count_fini(void *state)
{
    count *c = state;
    qsort(c->lat, c->n_lat, sizeof c->lat[0], cmp_u64);
    if (c->summary) {
        FILE *f = fopen(c->summary, "w");
        if (f) {
            fprintf(f,
                    "{\"count\":%llu,\"bytes\":%llu,\"same_address\":%llu,\"moved\":%llu,"
                    "\"last_seq\":%llu,\"out_of_order\":%llu,\"lat_p50_ns\":%llu,"
                    "\"lat_mean_ns\":%llu}\n",
                    (unsigned long long)c->count, (unsigned long long)c->bytes,
                    (unsigned long long)c->same, (unsigned long long)c->moved,
                    (unsigned long long)c->last_seq, (unsigned long long)c->out_of_order,
                    (unsigned long long)(c->n_lat ? c->lat[c->n_lat / 2] : 0),
                    (unsigned long long)(c->n_lat ? c->lat_sum / c->n_lat : 0));
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
