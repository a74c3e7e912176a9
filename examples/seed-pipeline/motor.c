/* motor: a sink consuming detections; counts them and checks their order.
 *
 * configuration:
 *   summary: PATH   write {"detections":N,"out_of_order":N,"last_seq":N} at fini */
#include "frame.h"
#include "summary.h"

#include <zflow/zflow.h>

typedef struct motor {
    uint64_t detections, out_of_order, last_seq, objects;
    uint64_t latency_sum_ns;
    char *summary;
} motor;

static zf_err motor_init(zf_node *n, void **state)
{
    motor *m = calloc(1, sizeof *m);
    if (!m)
        return ZF_ENOMEM;
    m->summary = summary_path(n);
    *state = m;
    return ZF_OK;
}

static zf_err motor_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    motor *m = state;
    (void)port;
    if (zf_data_len(*d) != sizeof(detection)) {
        zf_node_set_error(n, "a detection is %zu bytes, got %zu", sizeof(detection),
                          zf_data_len(*d));
        return ZF_EINVAL;
    }
    const detection *det = zf_data_ptr(*d);
    if (det->frame_seq <= m->last_seq)
        m->out_of_order++;
    m->last_seq = det->frame_seq;
    m->objects += det->objects;
    m->detections++;
    m->latency_sum_ns += zf_clock_ns() - det->frame_timestamp_ns;
    return ZF_OK;
}

static void motor_fini(void *state)
{
    motor *m = state;
    char json[256];
    snprintf(json, sizeof json,
             "{\"detections\":%llu,\"out_of_order\":%llu,\"last_seq\":%llu,"
             "\"mean_latency_us\":%.1f}",
             (unsigned long long)m->detections, (unsigned long long)m->out_of_order,
             (unsigned long long)m->last_seq,
             m->detections ? (double)m->latency_sum_ns / (double)m->detections / 1e3 : 0.0);
    summary_write(m->summary, json);
    free(m->summary);
    free(m);
}

static const zf_port_decl inputs[] = {{"detection", "detection"}};

static const zf_node_decl motor_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SINK,
    .name = "motor",
    .inputs = inputs,
    .n_inputs = 1,
    .init = motor_init,
    .fini = motor_fini,
    .on_input = motor_on_input,
};

ZF_NODE_EXPORT(motor_decl)
