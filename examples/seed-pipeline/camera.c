/* camera: a source producing frames (default 10 MiB at the descriptor's
 * period), filled with a per-frame pattern and checksummed.
 *
 * configuration:
 *   frame_bytes: 10MiB   size of a frame, header included
 *   pinned: false        true: frames are the camera's own heap buffers
 *                        pinned with zf_data_wrap (a driver's buffer ring);
 *                        false: frames are allocated from the pool
 *   buffers: 64          pinned mode: buffers in the ring
 *   frames: 0            stop producing after this many (0: no limit)
 *   reserve: 0           pool mode: pre-fault the pool for this many frames
 *                        at init, so a filling queue never waits for fresh
 *                        pages (zf_data_reserve)
 *
 * The pinned mode shows the pattern for memory a driver owns: the release
 * callback returns the buffer to the ring, on whatever thread drops the
 * last reference. The ring is reference-counted so that it outlives fini
 * if frames are still in flight somewhere. */
#include "frame.h"

#include <zflow/zflow.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct ring {
    pthread_mutex_t mu;
    void **free_bufs;
    size_t n_free, n_bufs;
    void **all;
    atomic_int refs; /* the camera + one per buffer in flight */
} ring;

typedef struct camera {
    size_t frame_bytes;
    bool pinned;
    int64_t max_frames;
    uint64_t seq;
    uint64_t dropped_no_buffer, alloc_failures;
    ring *ring;
} camera;

static void ring_unref(ring *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (size_t i = 0; i < r->n_bufs; i++)
        free(r->all[i]);
    free(r->all);
    free(r->free_bufs);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

typedef struct pinned_buf {
    ring *ring;
    void *mem;
} pinned_buf;

/* The release callback: the last reference to a pinned frame dropped. */
static void give_back(void *arg)
{
    pinned_buf *pb = arg;
    ring *r = pb->ring;
    pthread_mutex_lock(&r->mu);
    r->free_bufs[r->n_free++] = pb->mem;
    pthread_mutex_unlock(&r->mu);
    free(pb);
    ring_unref(r);
}

static zf_err ring_new(size_t nbufs, size_t bytes, ring **out)
{
    ring *r = calloc(1, sizeof *r);
    if (!r)
        return ZF_ENOMEM;
    pthread_mutex_init(&r->mu, NULL);
    r->all = calloc(nbufs, sizeof *r->all);
    r->free_bufs = calloc(nbufs, sizeof *r->free_bufs);
    atomic_init(&r->refs, 1);
    if (!r->all || !r->free_bufs) {
        ring_unref(r);
        return ZF_ENOMEM;
    }
    for (size_t i = 0; i < nbufs; i++) {
        void *m = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!m) {
            ring_unref(r);
            return ZF_ENOMEM;
        }
        memset(m, 0, bytes); /* touch every page now, not on the hot path */
        r->all[r->n_bufs++] = m;
        r->free_bufs[r->n_free++] = m;
    }
    *out = r;
    return ZF_OK;
}

static zf_err camera_init(zf_node *n, void **state)
{
    camera *c = calloc(1, sizeof *c);
    if (!c)
        return ZF_ENOMEM;
    const zf_config *cfg = zf_node_config(n);
    const char *size = "10MiB";
    uint64_t bytes = 0;
    int64_t buffers = 64;
    int64_t reserve = 0;
    if (zf_config_bool(cfg, "pinned", false, &c->pinned) != ZF_OK ||
        zf_config_int(cfg, "buffers", 64, &buffers) != ZF_OK ||
        zf_config_int(cfg, "frames", 0, &c->max_frames) != ZF_OK ||
        zf_config_int(cfg, "reserve", 0, &reserve) != ZF_OK) {
        zf_node_set_error(n, "%s",
                          zf_last_error()); /* "configuration 'KEY' is ..., expected ..." */
        free(c);
        return ZF_ETYPE;
    }
    const zf_config *fb = zf_config_get(cfg, "frame_bytes");
    if (fb && zf_config_kind_of(fb) == ZF_CFG_INT) {
        int64_t v = 0;
        ZF_IGNORE(zf_config_int(cfg, "frame_bytes", 0, &v)); /* an integer: checked above */
        bytes = v > 0 ? (uint64_t)v : 0;
    } else {
        if (zf_config_string(cfg, "frame_bytes", size, &size) != ZF_OK ||
            zf_parse_size(size, &bytes) != ZF_OK) {
            zf_node_set_error(n, "frame_bytes: %s", zf_last_error());
            free(c);
            return ZF_EINVAL;
        }
    }
    if (bytes < sizeof(frame_header) || buffers < 1) {
        zf_node_set_error(n, "frame_bytes must be at least %zu and buffers at least 1",
                          sizeof(frame_header));
        free(c);
        return ZF_EINVAL;
    }
    c->frame_bytes = (size_t)bytes;
    if (c->pinned && ring_new((size_t)buffers, c->frame_bytes, &c->ring) != ZF_OK) {
        zf_node_set_error(n, "cannot allocate %lld pinned buffers of %zu bytes", (long long)buffers,
                          c->frame_bytes);
        free(c);
        return ZF_ENOMEM;
    }
    if (!c->pinned && reserve > 0 && zf_data_reserve(n, c->frame_bytes, (size_t)reserve) != ZF_OK)
        zf_node_log(n, ZF_LOG_WARN, "cannot reserve %lld frames: %s", (long long)reserve,
                    zf_last_error());
    zf_node_log(n, ZF_LOG_INFO, "frames of %zu bytes, %s", c->frame_bytes,
                c->pinned ? "pinned heap buffers (zf_data_wrap)" : "from the pool");
    *state = c;
    return ZF_OK;
}

static void fill(void *mem, size_t bytes, uint64_t seq)
{
    frame_header *h = mem;
    uint64_t *px = (uint64_t *)(h + 1);
    size_t pixel_bytes = bytes - sizeof *h;
    size_t words = pixel_bytes / 8;
    for (size_t i = 0; i < words; i++)
        px[i] = frame_word(seq, i);
    memset((char *)px + words * 8, (int)(seq & 0xff), pixel_bytes % 8);
    h->magic = FRAME_MAGIC;
    h->seq = seq;
    h->bytes = pixel_bytes;
    h->checksum = frame_checksum(px, pixel_bytes);
}

static zf_err camera_produce(void *state, zf_node *n)
{
    camera *c = state;
    if (c->max_frames && (int64_t)c->seq >= c->max_frames)
        return ZF_OK;
    zf_data *d = NULL;
    if (c->pinned) {
        ring *r = c->ring;
        pthread_mutex_lock(&r->mu);
        void *mem = r->n_free ? r->free_bufs[--r->n_free] : NULL;
        pthread_mutex_unlock(&r->mu);
        if (!mem) {
            c->dropped_no_buffer++; /* every buffer is in flight: a driver drops */
            return ZF_OK;
        }
        pinned_buf *pb = malloc(sizeof *pb);
        if (!pb)
            return ZF_ENOMEM;
        pb->ring = r;
        pb->mem = mem;
        atomic_fetch_add(&r->refs, 1);
        fill(mem, c->frame_bytes, c->seq + 1);
        zf_err e = zf_data_wrap(mem, c->frame_bytes, give_back, pb, &d);
        if (e != ZF_OK) {
            give_back(pb);
            return e;
        }
    } else {
        zf_err e = zf_data_alloc(n, c->frame_bytes, &d);
        if (e == ZF_ENOMEM) {
            c->alloc_failures++; /* the instance's max_memory: count it, go on */
            return ZF_OK;
        }
        if (e != ZF_OK)
            return e;
        fill(zf_data_mut(&d), c->frame_bytes, c->seq + 1);
    }
    c->seq++;
    ZF_IGNORE(zf_data_set_seq(d, c->seq)); /* d is unique (allocated above): cannot fail */
    return zf_send(n, 0, &d);
}

static void camera_fini(void *state)
{
    camera *c = state;
    if (c->ring)
        ring_unref(c->ring);
    free(c);
}

static const zf_port_decl outputs[] = {{"frame", "image/raw"}};

static const zf_node_decl camera_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SOURCE,
    .name = "camera",
    .outputs = outputs,
    .n_outputs = 1,
    .init = camera_init,
    .fini = camera_fini,
    .produce = camera_produce,
};

ZF_NODE_EXPORT(camera_decl)
