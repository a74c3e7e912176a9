/* libFuzzer target: any bytes given to the descriptor loader must produce a
 * flow or diagnostics, never a crash, a hang, a leak or undefined behavior;
 * a flow that loads must print as JSON and DOT. */
#include "graph/flow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef ZF_FUZZ_BASE_DIR
#define ZF_FUZZ_BASE_DIR "/tmp"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const zf_config *c, int depth)
{
    const char *s;
    int64_t i;
    double f;
    bool b;
    if (depth > 8)
        return;
    /* Any input: a lookup either succeeds or is ZF_ETYPE, and *out is set
     * either way (what the fuzzer checks is that nothing crashes). */
    ZF_IGNORE(zf_config_string(c, "a.b", "d", &s));
    ZF_IGNORE(zf_config_int(c, "x", 0, &i));
    ZF_IGNORE(zf_config_float(c, "y.z", 0, &f));
    ZF_IGNORE(zf_config_bool(c, "k", false, &b));
    (void)zf_config_text(c);
    for (size_t k = 0; k < zf_config_len(c) && k < 16; k++) {
        (void)zf_config_key_at(c, k);
        walk(zf_config_at(c, k), depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The first byte picks the options, the rest is the descriptor. */
    static const char *const vars[] = {"BASE_DIR=" ZF_FUZZ_BASE_DIR, "SCHEME=file://",
                                       "RUNTIME_1=edge_1",           "RUNTIME_2=edge_2",
                                       "RUNTIME_COMPOSITE=cloud_1",  "X={{ X }}"};
    zf_flow_options opt = {.vars = vars, .n_vars = size && (data[0] & 1) ? 6 : 0};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    zf_err e =
        zf_flow_load_string((const char *)data, size, "fuzz.yaml", ZF_FUZZ_BASE_DIR, &opt, d, &f);
    if ((e == ZF_OK) != (f != NULL)) /* the contract: a flow exactly on success */
        abort();
    char *text = zf_diag_format(d);
    free(text);
    if (f) {
        char *json = zf_flow_to_json(f);
        char *dot = zf_flow_to_dot(f);
        if (!json || !dot || json[0] != '{' || strncmp(dot, "digraph ", 8) != 0)
            abort();
        free(json);
        free(dot);
        (void)zf_flow_name(f);
        for (size_t i = 0; i < f->n_nodes; i++)
            walk(f->nodes[i].config, 0);
    }
    zf_diag_free(d);
    zf_flow_free(f);
    return 0;
}
