/* recorder: a sink on the camera's fan-out. It recomputes the checksum of
 * every byte of every frame: proof that the same buffer reached both
 * branches intact, with no copy (the address is the camera's).
 *
 * configuration:
 *   summary: PATH   write {"frames":N,"bad":N,"bytes":N} at fini */
#include "frame.h"
#include "summary.h"

#include <zflow/zflow.h>

typedef struct recorder {
    uint64_t frames, bad, bytes;
    char *summary;
} recorder;

static zf_err recorder_init(zf_node *n, void **state)
{
    recorder *r = calloc(1, sizeof *r);
    if (!r)
        return ZF_ENOMEM;
    r->summary = summary_path(n);
    *state = r;
    return ZF_OK;
}

static zf_err recorder_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    recorder *r = state;
    (void)port;
    const frame_header *h = zf_data_ptr(*d);
    size_t len = zf_data_len(*d);
    r->frames++;
    if (len < sizeof *h || h->magic != FRAME_MAGIC || h->bytes != len - sizeof *h ||
        frame_checksum(h + 1, h->bytes) != h->checksum) {
        r->bad++;
        zf_node_set_error(n, "frame %llu: checksum mismatch",
                          len >= sizeof *h ? (unsigned long long)h->seq : 0ull);
        return ZF_EINVAL;
    }
    r->bytes += len;
    return ZF_OK;
}

static void recorder_fini(void *state)
{
    recorder *r = state;
    char json[256];
    snprintf(json, sizeof json, "{\"frames\":%llu,\"bad\":%llu,\"bytes\":%llu}",
             (unsigned long long)r->frames, (unsigned long long)r->bad,
             (unsigned long long)r->bytes);
    summary_write(r->summary, json);
    free(r->summary);
    free(r);
}

static const zf_port_decl inputs[] = {{"frame", "image/raw"}};

static const zf_node_decl recorder_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SINK,
    .name = "recorder",
    .inputs = inputs,
    .n_inputs = 1,
    .init = recorder_init,
    .fini = recorder_fini,
    .on_input = recorder_on_input,
};

ZF_NODE_EXPORT(recorder_decl)
