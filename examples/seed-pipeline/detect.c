/* detect: an operator reading each frame in place (no copy) and sending a
 * small detection record.
 *
 * configuration (fault injection, for the containment examples and tests):
 *   hang_on_frame: 0        hang when this frame arrives (0: never)
 *   hang_every_frames: 0    hang on every Nth frame (0: never)
 *   hang_for: forever       how long a hang lasts ("1.5s", or "forever")
 *   fail_from_frame: 0      return an error for frames in
 *   fail_to_frame: 0        [fail_from_frame, fail_to_frame] (0: never)
 */
#include "frame.h"

#include <zflow/zflow.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct detect {
    int64_t hang_on, hang_every, fail_from, fail_to;
    int64_t hang_ns; /* <0: forever */
    uint64_t frames;
} detect;

static zf_err detect_init(zf_node *n, void **state)
{
    detect *d = calloc(1, sizeof *d);
    if (!d)
        return ZF_ENOMEM;
    const zf_config *cfg = zf_node_config(n);
    const char *hang_for = "forever";
    if (zf_config_int(cfg, "hang_on_frame", 0, &d->hang_on) != ZF_OK ||
        zf_config_int(cfg, "hang_every_frames", 0, &d->hang_every) != ZF_OK ||
        zf_config_int(cfg, "fail_from_frame", 0, &d->fail_from) != ZF_OK ||
        zf_config_int(cfg, "fail_to_frame", 0, &d->fail_to) != ZF_OK ||
        zf_config_string(cfg, "hang_for", "forever", &hang_for) != ZF_OK) {
        zf_node_set_error(n, "%s",
                          zf_last_error()); /* "configuration 'KEY' is ..., expected ..." */
        free(d);
        return ZF_ETYPE;
    }
    d->hang_ns = -1;
    if (strcmp(hang_for, "forever") != 0 && zf_parse_duration(hang_for, &d->hang_ns) != ZF_OK) {
        zf_node_set_error(n, "hang_for: %s", zf_last_error());
        free(d);
        return ZF_EINVAL;
    }
    *state = d;
    return ZF_OK;
}

static void hang(const detect *d)
{
    struct timespec ts = {.tv_sec = 1};
    if (d->hang_ns < 0) {
        for (;;)
            nanosleep(&ts, NULL); /* a deadlock, a stuck GPU call */
    }
    ts.tv_sec = d->hang_ns / 1000000000;
    ts.tv_nsec = d->hang_ns % 1000000000;
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static zf_err detect_on_input(void *state, zf_node *n, unsigned port, zf_data **frame)
{
    detect *d = state;
    (void)port;
    const frame_header *h = zf_data_ptr(*frame);
    size_t len = zf_data_len(*frame);
    if (len < sizeof *h || h->magic != FRAME_MAGIC) {
        zf_node_set_error(n, "not a frame (%zu bytes)", len);
        return ZF_EINVAL;
    }
    d->frames++;
    int64_t seq = (int64_t)h->seq;
    if ((d->hang_on && seq == d->hang_on) || (d->hang_every && seq % d->hang_every == 0))
        hang(d);
    if (d->fail_from && seq >= d->fail_from && seq <= d->fail_to) {
        zf_node_set_error(n, "injected failure on frame %lld", (long long)seq);
        return ZF_EINVAL;
    }
    /* "Detect": sample one byte per 4 KiB page of the frame, in place. */
    const unsigned char *px = (const unsigned char *)(h + 1);
    uint64_t sum = 0, count = 0;
    for (size_t i = 0; i < h->bytes; i += 4096, count++)
        sum += px[i];
    zf_data *out = NULL;
    zf_err e = zf_data_alloc(n, sizeof(detection), &out);
    if (e != ZF_OK)
        return e;
    detection *det = zf_data_mut(&out);
    det->frame_seq = h->seq;
    det->frame_checksum = h->checksum;
    det->frame_timestamp_ns = zf_data_timestamp(*frame);
    det->brightness = count ? (uint32_t)(sum / count) : 0;
    det->objects = (uint32_t)(h->seq % 4);
    return zf_send(n, 0, &out);
}

static void detect_fini(void *state)
{
    free(state);
}

static const zf_port_decl inputs[] = {{"frame", "image/raw"}};
static const zf_port_decl outputs[] = {{"detection", "detection"}};

static const zf_node_decl detect_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_OPERATOR,
    .name = "detect",
    .inputs = inputs,
    .n_inputs = 1,
    .outputs = outputs,
    .n_outputs = 1,
    .init = detect_init,
    .fini = detect_fini,
    .on_input = detect_on_input,
};

ZF_NODE_EXPORT(detect_decl)
