/* Record and replay (docs/operations.md has the file format).
 *
 * A recorder taps the chosen output ports with `hold` taps (core/tap.c:
 * the producer queues a reference, never waits; what the bounded queue
 * cannot take is dropped and counted) and one thread of its own writes
 * each capsule's payload straight from the pool to the file (writev: no
 * copy), so memory stays bounded by the taps' byte limit. A size limit
 * ends the recording cleanly.
 *
 * A recording is read back whole-checked: zf_recording_open walks every
 * record header before anything is replayed, so a truncated or foreign
 * file is refused with its name and the offset where it goes wrong.
 * Replaying replaces the sources that produced the recorded links by a
 * replay source (a built-in node with the same ports) whose thread sends
 * the recorded capsules at their recorded pace (or faster). */
#include "core/futex.h"
#include "core/tap.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAGIC      "ZFLOWREC"
#define VERSION    1u
#define TAG_RECORD 0x3152465au /* "ZFR1" little-endian */
#define TAG_END    0x4552465au /* "ZFRE" */
#define HDR_FIXED  16u         /* magic, version, header length */
#define REC_BYTES  32u         /* tag, link, seq, timestamp, len */
#define MAX_LINKS  256u
#define MAX_HEADER (1u << 20)

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static bool write_all(int fd, const struct iovec *iov, int n)
{
    struct iovec v[2];
    memcpy(v, iov, (size_t)n * sizeof *v);
    while (n > 0) {
        ssize_t w = writev(fd, v, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        size_t k = (size_t)w;
        while (n > 0 && k >= v[0].iov_len) {
            k -= v[0].iov_len;
            memmove(v, v + 1, (size_t)(n - 1) * sizeof *v);
            n--;
        }
        if (n > 0) {
            v[0].iov_base = (char *)v[0].iov_base + k;
            v[0].iov_len -= k;
        }
    }
    return true;
}

/* ---- recording ---- */

struct zf_recorder {
    zf_instance *inst;
    char *path;
    int fd;
    size_t n;
    zf_tap **taps;
    uint64_t max_bytes, written, records, payload;
    bool limit_reached;
    zf_err error;
    char why[256];
    zfi_evc evc; /* the taps notify it */
    atomic_bool stop;
    pthread_t thread;
    uint64_t dropped_closed;     /* drops counted by taps closed early */
    uint64_t started_ns, cpu_ns; /* cpu_ns: the writer thread's, when it ends */
    bool done;                   /* its thread is over (under inst->mu) */
    bool owned;                  /* started for `record:` links: the instance stops it */
    struct zf_recorder *next_in_inst;
};

/* The taps' drops, and close them: every held capsule is released. */
static void close_taps(zf_recorder *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!r->taps[i])
            continue;
        r->dropped_closed += zf_tap_dropped(r->taps[i]);
        zf_tap_close(r->taps[i]);
        r->taps[i] = NULL;
    }
}

/* Write one item; false on a write error or at the size limit. */
static bool write_item(zf_recorder *r, uint32_t link, const zf_tap_item *it)
{
    uint64_t add = REC_BYTES + it->len;
    if (r->max_bytes && r->written + add + REC_BYTES > r->max_bytes) {
        r->limit_reached = true;
        return false;
    }
    uint8_t h[REC_BYTES];
    put32(h, TAG_RECORD);
    put32(h + 4, link);
    put64(h + 8, it->seq);
    put64(h + 16, it->timestamp_ns);
    put64(h + 24, it->len);
    struct iovec v[2] = {{h, sizeof h}, {(void *)zf_data_ptr(it->data), (size_t)it->len}};
    if (!write_all(r->fd, v, it->len ? 2 : 1)) {
        r->error = ZF_ESYS;
        snprintf(r->why, sizeof r->why, "writing %s: %s", r->path, strerror(errno));
        return false;
    }
    r->written += add;
    r->records++;
    r->payload += it->len;
    return true;
}

static void *recorder_main(void *arg)
{
    zf_recorder *r = arg;
    zfi_thread_name("zf-record");
    bool open_links = true, writing = true;
    while (open_links && writing) {
        bool any = false;
        open_links = false;
        for (size_t i = 0; i < r->n; i++) {
            zf_tap_item it;
            zf_err e;
            while ((e = zf_tap_next(r->taps[i], &it, 0)) == ZF_OK) {
                any = true;
                if (writing)
                    writing = write_item(r, (uint32_t)i, &it);
                zf_data_unref(it.data);
            }
            open_links = open_links || e != ZF_ECLOSED;
        }
        if (atomic_load(&r->stop) && !any)
            break;
        if (any || !open_links)
            continue;
        uint32_t key = zfi_evc_prepare(&r->evc);
        if (atomic_load(&r->stop))
            zfi_evc_cancel(&r->evc);
        else
            zfi_evc_wait(&r->evc, key, 100000000); /* also re-checks for closed links */
    }
    if (!writing)
        close_taps(r); /* the size limit or a write error: the producers go free */
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        r->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
    zf_instance *inst = r->inst;
    pthread_mutex_lock(&inst->mu);
    r->done = true; /* a stop waiting for its recorders (zfi_recorders_settle) */
    pthread_cond_broadcast(&inst->cv);
    pthread_mutex_unlock(&inst->mu);
    return NULL;
}

void zfi_recorders_settle(zf_instance *inst, int64_t timeout_ns)
{
    pthread_mutex_lock(&inst->mu);
    bool any = inst->recorders != NULL;
    pthread_mutex_unlock(&inst->mu);
    if (!any)
        return;
    for (size_t i = 0; i < inst->n_links; i++)
        zf_link_close(inst->links[i]); /* every tap ends */
    uint64_t until = zf_clock_ns() + (uint64_t)timeout_ns;
    struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                          .tv_nsec = (long)(until % 1000000000u)};
    pthread_mutex_lock(&inst->mu);
    for (;;) {
        bool busy = false;
        for (zf_recorder *r = inst->recorders; r && !busy; r = r->next_in_inst)
            busy = !r->done;
        if (!busy || pthread_cond_timedwait(&inst->cv, &inst->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&inst->mu);
}

zf_err zf_recorder_start(zf_instance *inst, const char *path, const zf_recorder_options *o,
                         zf_recorder **out)
{
    if (!inst || !path || !out)
        return zfi_error(ZF_EINVAL, "zf_recorder_start: NULL argument");
    *out = NULL;
    zf_recorder *r = zfi_calloc(1, sizeof *r);
    if (!r || !(r->path = zfi_strdup(path))) {
        free(r);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    r->inst = inst;
    r->fd = -1;
    r->max_bytes = o ? o->max_bytes : 0;
    zfi_evc_init(&r->evc);
    const zf_flow *f = inst->flow;
    /* Which outputs: the ones asked for, else every linked output (once
     * per port: a fanned-out port is one stream). */
    const char **outs = zfi_calloc(f->n_links + 1, sizeof *outs);
    char **owned = zfi_calloc(f->n_links + 1, sizeof *owned);
    zf_err e = ZF_OK;
    if (!outs || !owned) {
        e = zfi_error(ZF_ENOMEM, "out of memory");
        goto fail;
    }
    size_t n = 0;
    if (o && o->n_outputs) {
        for (size_t i = 0; i < o->n_outputs && n < f->n_links; i++)
            outs[n++] = o->outputs[i];
    } else {
        for (size_t i = 0; i < f->n_links; i++) {
            const zfi_link *fl = &f->links[i];
            bool first = true;
            for (size_t j = 0; j < i && first; j++)
                first = !(f->links[j].from == fl->from && f->links[j].from_port == fl->from_port);
            if (first) {
                owned[n] = zfi_asprintf("%s.%s", f->nodes[fl->from].id,
                                        f->nodes[fl->from].outputs[fl->from_port].name);
                outs[n] = owned[n];
                n++;
            }
        }
    }
    if (!n || n > MAX_LINKS) {
        e = zfi_error(ZF_EINVAL, "a recording needs 1 to %u outputs", MAX_LINKS);
        goto fail;
    }
    r->taps = zfi_calloc(n, sizeof *r->taps);
    if (!r->taps) {
        e = zfi_error(ZF_ENOMEM, "out of memory");
        goto fail;
    }
    zf_tap_options to = {.capacity = 1024,
                         .max_bytes = o && o->buffer_bytes ? o->buffer_bytes : 256u << 20,
                         .hold = true};
    zf_json_writer *hw = zf_json_writer_new();
    zf_json_open_object(hw, NULL);
    zf_json_put_string(hw, "flow", f->name);
    zf_json_put_string(hw, "instance", inst->uuid);
    zf_json_put_string(hw, "instance_name", inst->name);
    zf_json_open_array(hw, "links");
    for (size_t i = 0; i < n; i++) {
        if ((e = zf_tap_open(inst, outs[i], &to, &r->taps[i])) != ZF_OK)
            break;
        r->n++;
        zfi_tap_notify_also(r->taps[i], &r->evc);
        zf_json_open_object(hw, NULL);
        zf_json_put_string(hw, "output", outs[i]);
        zf_json_put_string(hw, "type", zf_tap_type(r->taps[i]));
        zf_json_close(hw);
    }
    zf_json_close(hw);
    zf_json_close(hw);
    char *hs = zf_json_writer_finish(hw);
    size_t hlen = hs ? strlen(hs) : 0;
    if (e != ZF_OK || !hs) {
        zf_free(hs);
        if (e == ZF_OK)
            e = zfi_error(ZF_ENOMEM, "out of memory");
        goto fail;
    }
    r->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    uint8_t fixed[HDR_FIXED];
    memcpy(fixed, MAGIC, 8);
    put32(fixed + 8, VERSION);
    put32(fixed + 12, (uint32_t)hlen);
    struct iovec v[2] = {{fixed, sizeof fixed}, {hs, hlen}};
    if (r->fd < 0 || !write_all(r->fd, v, 2)) {
        e = zfi_error(ZF_ESYS, "cannot write %s: %s", path, strerror(errno));
        zf_free(hs);
        goto fail;
    }
    r->written = HDR_FIXED + hlen;
    zf_free(hs);
    r->started_ns = zf_clock_ns();
    int pe = pthread_create(&r->thread, NULL, recorder_main, r);
    if (pe != 0) {
        e = zfi_error(ZF_ESYS, "cannot start the recorder's thread: %s", strerror(pe));
        goto fail;
    }
    for (size_t i = 0; i <= f->n_links; i++)
        free(owned[i]);
    free(owned);
    free(outs);
    zfi_log_at(&inst->origin, ZF_LOG_INFO, "record", "recording %zu output(s) to %s", r->n, path);
    pthread_mutex_lock(&inst->mu);
    r->next_in_inst = inst->recorders;
    inst->recorders = r;
    pthread_mutex_unlock(&inst->mu);
    *out = r;
    return ZF_OK;
fail:
    for (size_t i = 0; r->taps && i < r->n; i++)
        zf_tap_close(r->taps[i]);
    for (size_t i = 0; owned && i <= f->n_links; i++)
        free(owned[i]);
    free(owned);
    free(outs);
    if (r->fd >= 0) {
        close(r->fd);
        unlink(path);
    }
    free(r->taps);
    free(r->path);
    free(r);
    return e;
}

zf_err zf_recorder_stop(zf_recorder *r, zf_recorder_stats *st)
{
    if (!r)
        return zfi_error(ZF_EINVAL, "zf_recorder_stop: NULL recorder");
    pthread_mutex_lock(&r->inst->mu);
    for (zf_recorder **p = &r->inst->recorders; *p; p = &(*p)->next_in_inst)
        if (*p == r) {
            *p = r->next_in_inst;
            break;
        }
    pthread_mutex_unlock(&r->inst->mu);
    atomic_store(&r->stop, true);
    zfi_evc_notify(&r->evc);
    pthread_join(r->thread, NULL);
    close_taps(r);
    zf_recorder_stats s = {.records = r->records,
                           .bytes = r->written,
                           .limit_reached = r->limit_reached,
                           .dropped = r->dropped_closed,
                           .cpu_ns = r->cpu_ns,
                           .elapsed_ns = zf_clock_ns() - r->started_ns};
    zf_err e = r->error;
    if (e == ZF_OK) {
        uint8_t end[REC_BYTES] = {0};
        put32(end, TAG_END);
        put64(end + 8, r->records);
        put64(end + 16, r->payload);
        struct iovec v[1] = {{end, sizeof end}};
        if (!write_all(r->fd, v, 1) || fsync(r->fd) != 0)
            e = zfi_error(ZF_ESYS, "writing %s: %s", r->path, strerror(errno));
        else
            s.bytes += REC_BYTES;
    } else {
        zfi_error(e, "%s", r->why);
    }
    if (close(r->fd) != 0 && e == ZF_OK)
        e = zfi_error(ZF_ESYS, "closing %s: %s", r->path, strerror(errno));
    zfi_log_at(
        &r->inst->origin, s.dropped ? ZF_LOG_WARN : ZF_LOG_INFO, "record",
        "recorded %llu capsules (%llu bytes) to %s%s; %llu dropped; writer CPU %.3f s in %.3f s",
        (unsigned long long)s.records, (unsigned long long)s.bytes, r->path,
        s.limit_reached ? " (size limit reached)" : "", (unsigned long long)s.dropped,
        (double)s.cpu_ns / 1e9, (double)s.elapsed_ns / 1e9);
    s.error = e;
    if (st)
        *st = s;
    free(r->taps);
    free(r->path);
    free(r);
    return e;
}

/* ---- `record:` on links ---- */

zf_err zfi_recorders_start_declared(zf_instance *inst, const char *record_dir, zf_diag *diag)
{
    const zf_flow *f = inst->flow;
    zf_err err = ZF_OK;
    for (size_t i = 0; i < f->n_links && err == ZF_OK; i++) {
        const char *file = f->links[i].record;
        bool first = file != NULL;
        for (size_t j = 0; j < i && first; j++)
            first = !f->links[j].record || strcmp(f->links[j].record, file);
        if (!first)
            continue; /* that file's recorder is started */
        /* Every output recorded into this file, once per port. */
        const char **outs = zfi_calloc(f->n_links, sizeof *outs);
        char **names = zfi_calloc(f->n_links, sizeof *names);
        size_t n = 0;
        for (size_t k = i; outs && names && k < f->n_links; k++) {
            const zfi_link *l = &f->links[k];
            if (!l->record || strcmp(l->record, file))
                continue;
            char *o = zfi_asprintf("%s.%s", f->nodes[l->from].id,
                                   f->nodes[l->from].outputs[l->from_port].name);
            bool dup = false;
            for (size_t m = 0; o && m < n && !dup; m++)
                dup = !strcmp(names[m], o);
            if (dup || !o) {
                free(o);
                continue;
            }
            names[n] = o;
            outs[n] = o;
            n++;
        }
        char *path = NULL;
        bool plain = !strchr(file, '/') && file[0] != '.';
        if (record_dir && !plain)
            err = zfi_diag_add(
                diag, ZF_EPERM, f->links[i].file, f->links[i].line, f->links[i].col, "record",
                "'%s': here a recording is a plain file name (it goes into %s)", file, record_dir);
        else if (record_dir)
            path = zfi_asprintf("%s/%s", record_dir, file);
        else
            path = file[0] == '/' ? zfi_strdup(file) : zfi_asprintf("%s/%s", f->dir, file);
        zf_recorder *r = NULL;
        if (err == ZF_OK && (!path || !outs || !names))
            err = zfi_error(ZF_ENOMEM, "out of memory");
        if (err == ZF_OK) {
            zf_recorder_options o = {.outputs = outs, .n_outputs = n};
            if ((err = zf_recorder_start(inst, path, &o, &r)) != ZF_OK)
                zfi_diag_add(diag, err, f->links[i].file, f->links[i].line, f->links[i].col,
                             "record", "%s", zf_last_error());
            else
                r->owned = true; /* only the instance's own thread reads it */
        }
        for (size_t m = 0; names && m < n; m++)
            free(names[m]);
        free(names);
        free(outs);
        free(path);
    }
    return err;
}

void zfi_recorders_stop_owned(zf_instance *inst)
{
    for (;;) {
        pthread_mutex_lock(&inst->mu);
        zf_recorder *r = inst->recorders;
        while (r && !r->owned)
            r = r->next_in_inst;
        pthread_mutex_unlock(&inst->mu);
        if (!r)
            return;
        zf_recorder_stats st;
        ZF_IGNORE(zf_recorder_stop(r, &st)); /* logs what it wrote, and a write error */
    }
}

/* ---- reading ---- */

typedef struct rec_link {
    char *output, *type;
    uint64_t records, bytes;
} rec_link;

struct zf_recording {
    char *path;
    int fd;
    uint64_t size, data_start, pos;
    char *flow;
    size_t n_links;
    rec_link *links;
    uint64_t records, first_ts, last_ts;
    zf_recording_link pub;
    /* replay */
    double speed;
    bool fast;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned running; /* replay sources still sending */
    _Atomic uint64_t sent, late;
};

static zf_err bad_file(zf_recording *r, uint64_t at, const char *fmt, ...) ZF_PRINTF(3, 4);
static zf_err bad_file(zf_recording *r, uint64_t at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return zfi_error(ZF_EPARSE, "%s: offset %llu: %s", r->path, (unsigned long long)at, msg);
}

static bool read_at(int fd, void *buf, size_t len, uint64_t at)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(fd, (char *)buf + got, len - got, (off_t)(at + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        got += (size_t)k;
    }
    return true;
}

void zf_recording_close(zf_recording *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    for (size_t i = 0; i < r->n_links; i++) {
        free(r->links[i].output);
        free(r->links[i].type);
    }
    free(r->links);
    free(r->flow);
    free(r->path);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* The header's JSON: flow name and links. */
static zf_err parse_header(zf_recording *r, const char *text, size_t len)
{
    zf_config *c = NULL;
    if (zf_json_parse(text, len, &c) != ZF_OK)
        return bad_file(r, HDR_FIXED, "the header is not valid JSON: %s", zf_last_error());
    const char *flow = NULL;
    const zf_config *links = zf_config_get(c, "links");
    zf_err e = ZF_OK;
    if (zf_config_string(c, "flow", NULL, &flow) != ZF_OK || !flow ||
        zf_config_kind_of(links) != ZF_CFG_SEQ || !zf_config_len(links) ||
        zf_config_len(links) > MAX_LINKS) {
        e = bad_file(r, HDR_FIXED, "the header lacks 'flow' or 'links' (1 to %u)", MAX_LINKS);
        goto out;
    }
    r->flow = zfi_strdup(flow);
    r->n_links = zf_config_len(links);
    r->links = zfi_calloc(r->n_links, sizeof *r->links);
    if (!r->flow || !r->links) {
        e = zfi_error(ZF_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < r->n_links; i++) {
        const char *o = NULL, *t = NULL;
        const zf_config *l = zf_config_at(links, i);
        if (zf_config_string(l, "output", NULL, &o) != ZF_OK ||
            zf_config_string(l, "type", "any", &t) != ZF_OK || !o || !strchr(o, '.')) {
            e = bad_file(r, HDR_FIXED, "links[%zu] has no 'output' (NODE.PORT)", i);
            goto out;
        }
        r->links[i].output = zfi_strdup(o);
        r->links[i].type = zfi_strdup(t ? t : "any");
    }
out:
    zf_config_free(c);
    return e;
}

zf_err zf_recording_open(const char *path, zf_recording **out)
{
    if (!path || !out)
        return zfi_error(ZF_EINVAL, "zf_recording_open: NULL argument");
    *out = NULL;
    zf_recording *r = zfi_calloc(1, sizeof *r);
    if (!r || !(r->path = zfi_strdup(path))) {
        free(r);
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&r->mu, NULL);
    zfi_cond_init_monotonic(&r->cv);
    r->speed = 1.0;
    zf_err e = ZF_OK;
    struct stat st;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0 || fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        e = zfi_error(ZF_ENOTFOUND, "%s: %s", path, r->fd < 0 ? strerror(errno) : "not a file");
        goto fail;
    }
    r->size = (uint64_t)st.st_size;
    uint8_t fixed[HDR_FIXED];
    if (r->size < HDR_FIXED || !read_at(r->fd, fixed, HDR_FIXED, 0) || memcmp(fixed, MAGIC, 8)) {
        e = bad_file(r, 0, "not a zflow recording (it does not start with %s)", MAGIC);
        goto fail;
    }
    uint32_t version = get32(fixed + 8), hlen = get32(fixed + 12);
    if (version != VERSION) {
        e = bad_file(r, 8, "format version %u; this zflow reads version %u", version, VERSION);
        goto fail;
    }
    if (hlen > MAX_HEADER || HDR_FIXED + (uint64_t)hlen > r->size) {
        e = bad_file(r, 12,
                     "truncated: the header of %u bytes ends past the end of the file "
                     "(%llu bytes)",
                     hlen, (unsigned long long)r->size);
        goto fail;
    }
    char *text = malloc(hlen + 1u);
    if (!text || !read_at(r->fd, text, hlen, HDR_FIXED)) {
        free(text);
        e = zfi_error(ZF_ESYS, "%s: cannot read the header", path);
        goto fail;
    }
    e = parse_header(r, text, hlen);
    free(text);
    if (e != ZF_OK)
        goto fail;
    /* Walk every record header: a truncated or damaged file is refused
     * before anything replays. */
    r->data_start = HDR_FIXED + hlen;
    uint64_t at = r->data_start, payload = 0;
    for (;;) {
        uint8_t h[REC_BYTES];
        if (at + REC_BYTES > r->size || !read_at(r->fd, h, REC_BYTES, at)) {
            e = bad_file(r, at,
                         "truncated: the file ends %s (%llu records read; the recording was "
                         "interrupted or the file cut)",
                         at == r->size ? "without its end record" : "inside a record header",
                         (unsigned long long)r->records);
            goto fail;
        }
        uint32_t tag = get32(h);
        if (tag == TAG_END) {
            if (get64(h + 8) != r->records || get64(h + 16) != payload) {
                e = bad_file(r, at, "the end record counts %llu records, the file holds %llu",
                             (unsigned long long)get64(h + 8), (unsigned long long)r->records);
                goto fail;
            }
            break;
        }
        uint32_t link = get32(h + 4);
        uint64_t len = get64(h + 24), ts = get64(h + 16);
        if (tag != TAG_RECORD || link >= r->n_links) {
            e = bad_file(r, at, "not a record (expected ZFR1 for one of the %zu links, or ZFRE)",
                         r->n_links);
            goto fail;
        }
        if (len > r->size || at + REC_BYTES + len > r->size) {
            e = bad_file(r, at,
                         "truncated: the record of %llu bytes ends past the end of the file "
                         "(%llu bytes)",
                         (unsigned long long)len, (unsigned long long)r->size);
            goto fail;
        }
        if (!r->records)
            r->first_ts = ts;
        r->last_ts = ts;
        r->records++;
        r->links[link].records++;
        r->links[link].bytes += len;
        payload += len;
        at += REC_BYTES + len;
    }
    r->pos = r->data_start;
    *out = r;
    return ZF_OK;
fail:
    zf_recording_close(r);
    return e;
}

const char *zf_recording_flow(const zf_recording *r)
{
    return r ? r->flow : NULL;
}

size_t zf_recording_link_count(const zf_recording *r)
{
    return r ? r->n_links : 0;
}

const zf_recording_link *zf_recording_link_get(zf_recording *r, size_t i)
{
    if (!r || i >= r->n_links)
        return NULL;
    r->pub = (zf_recording_link){r->links[i].output, r->links[i].type, r->links[i].records,
                                 r->links[i].bytes};
    return &r->pub;
}

uint64_t zf_recording_count(const zf_recording *r)
{
    return r ? r->records : 0;
}

uint64_t zf_recording_duration_ns(const zf_recording *r)
{
    return r && r->records ? r->last_ts - r->first_ts : 0;
}

zf_err zf_recording_next(zf_recording *r, zf_record *rec)
{
    if (!r || !rec)
        return zfi_error(ZF_EINVAL, "zf_recording_next: NULL argument");
    uint8_t h[REC_BYTES];
    if (!read_at(r->fd, h, REC_BYTES, r->pos))
        return zfi_error(ZF_ESYS, "%s: offset %llu: cannot read", r->path,
                         (unsigned long long)r->pos);
    if (get32(h) == TAG_END)
        return zfi_error(ZF_ECLOSED, "end of the recording");
    rec->link = get32(h + 4);
    rec->seq = get64(h + 8);
    rec->timestamp_ns = get64(h + 16);
    rec->len = get64(h + 24);
    rec->offset = r->pos + REC_BYTES;
    r->pos += REC_BYTES + rec->len;
    return ZF_OK;
}

zf_err zf_recording_read(zf_recording *r, const zf_record *rec, void *dst)
{
    if (!r || !rec || (!dst && rec->len))
        return zfi_error(ZF_EINVAL, "zf_recording_read: NULL argument");
    if (!read_at(r->fd, dst, (size_t)rec->len, rec->offset))
        return zfi_error(ZF_ESYS, "%s: offset %llu: cannot read %llu bytes", r->path,
                         (unsigned long long)rec->offset, (unsigned long long)rec->len);
    return ZF_OK;
}

zf_err zf_recording_set_speed(zf_recording *r, double speed, bool as_fast_as_possible)
{
    if (!r || (!as_fast_as_possible && !(speed > 0 && speed <= 1000)))
        return zfi_error(ZF_EINVAL, "speed must be > 0 and <= 1000 (got %g)", speed);
    r->speed = speed;
    r->fast = as_fast_as_possible;
    return ZF_OK;
}

/* ---- replay: the built-in source ---- */

typedef struct replay_src {
    zf_node *node;
    zf_recording *shared; /* speed, the count of running sources */
    zf_recording *own;    /* this source's cursor */
    int *port_of;         /* recording link -> this node's output, or -1 */
    pthread_t thread;
    bool started;
    bool stop; /* under shared->mu */
} replay_src;

/* Wait while the instance is CREATED or SUSPENDED (a suspended replay
 * pauses: its pace resumes where it was, *t0 moved by the pause); false
 * once it is stopping. */
static bool wait_running(replay_src *s, uint64_t *t0)
{
    zf_instance *inst = s->node->inst;
    uint64_t p0 = zf_clock_ns();
    pthread_mutex_lock(&inst->mu);
    while (inst->state == ZF_INSTANCE_CREATED || inst->state == ZF_INSTANCE_SUSPENDED)
        pthread_cond_wait(&inst->cv, &inst->mu);
    bool run = inst->state == ZF_INSTANCE_RUNNING;
    pthread_mutex_unlock(&inst->mu);
    if (*t0)
        *t0 += zf_clock_ns() - p0;
    return run;
}

static void *replay_main(void *arg)
{
    replay_src *s = arg;
    zfi_thread_name("zf-replay");
    zf_recording *sh = s->shared;
    uint64_t t0 = 0, first = 0;
    zf_record rec;
    while (zf_recording_next(s->own, &rec) == ZF_OK) {
        if (s->port_of[rec.link] < 0)
            continue;
        if (!wait_running(s, &t0))
            break;
        if (!t0) {
            t0 = zf_clock_ns();
            first = rec.timestamp_ns;
        }
        if (!sh->fast) {
            uint64_t due = t0 + (uint64_t)((double)(rec.timestamp_ns - first) / sh->speed);
            struct timespec ts = {.tv_sec = (time_t)(due / 1000000000u),
                                  .tv_nsec = (long)(due % 1000000000u)};
            pthread_mutex_lock(&sh->mu);
            while (!s->stop && zf_clock_ns() < due)
                if (pthread_cond_timedwait(&sh->cv, &sh->mu, &ts) == ETIMEDOUT)
                    break;
            bool stop = s->stop;
            pthread_mutex_unlock(&sh->mu);
            if (stop)
                break;
            if (zf_clock_ns() > due + 5000000)
                atomic_fetch_add(&sh->late, 1);
        }
        zf_data *d = NULL;
        if (zf_data_alloc(s->node, (size_t)rec.len, &d) != ZF_OK) {
            zf_node_log(s->node, ZF_LOG_ERROR, "replay: no memory for a capsule of %llu bytes",
                        (unsigned long long)rec.len);
            break;
        }
        if (zf_recording_read(s->own, &rec, zf_data_mut(&d)) != ZF_OK) {
            zf_node_log(s->node, ZF_LOG_ERROR, "replay: %s", zf_last_error());
            zf_data_unref(d);
            break;
        }
        ZF_IGNORE(zf_data_set_seq(d, rec.seq)); /* d is unique: just allocated */
        zf_err e = zf_send_timeout(s->node, (unsigned)s->port_of[rec.link], &d, -1);
        if (e == ZF_ECLOSED)
            break;
        if (e == ZF_OK)
            atomic_fetch_add(&sh->sent, 1);
    }
    pthread_mutex_lock(&sh->mu);
    sh->running--;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

typedef struct replay_decl {
    zf_node_decl decl;
    zf_port_decl *outs;
    zf_recording *rec;
} replay_decl;

static zf_err replay_init(zf_node *n, void **state)
{
    const replay_decl *rd = (const replay_decl *)n->decl;
    replay_src *s = zfi_calloc(1, sizeof *s);
    if (!s)
        return ZF_ENOMEM;
    s->node = n;
    s->shared = rd->rec;
    s->port_of = zfi_calloc(rd->rec->n_links, sizeof *s->port_of);
    zf_err e = s->port_of ? zf_recording_open(rd->rec->path, &s->own) : ZF_ENOMEM;
    if (e != ZF_OK) {
        zf_node_set_error(n, "replay: %s", zf_last_error());
        free(s->port_of);
        free(s);
        return e;
    }
    const char *id = zf_node_id(n);
    size_t idl = strlen(id);
    for (size_t i = 0; i < rd->rec->n_links; i++) {
        const char *o = rd->rec->links[i].output;
        s->port_of[i] = !strncmp(o, id, idl) && o[idl] == '.' ? zf_node_output(n, o + idl + 1) : -1;
    }
    pthread_mutex_lock(&s->shared->mu);
    s->shared->running++;
    pthread_mutex_unlock(&s->shared->mu);
    int pe = pthread_create(&s->thread, NULL, replay_main, s);
    if (pe != 0) {
        pthread_mutex_lock(&s->shared->mu);
        s->shared->running--;
        pthread_mutex_unlock(&s->shared->mu);
        zf_recording_close(s->own);
        free(s->port_of);
        free(s);
        zf_node_set_error(n, "replay: cannot start a thread: %s", strerror(pe));
        return ZF_ESYS;
    }
    s->started = true;
    *state = s;
    return ZF_OK;
}

static void replay_fini(void *state)
{
    replay_src *s = state;
    pthread_mutex_lock(&s->shared->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->shared->cv);
    pthread_mutex_unlock(&s->shared->mu);
    zf_instance *inst = s->node->inst; /* a thread waiting for RUNNING */
    pthread_mutex_lock(&inst->mu);
    pthread_cond_broadcast(&inst->cv);
    pthread_mutex_unlock(&inst->mu);
    pthread_join(s->thread, NULL);
    zf_recording_close(s->own);
    free(s->port_of);
    free(s);
}

static void replay_decl_free(const zf_node_decl *d)
{
    replay_decl *rd = (replay_decl *)d;
    free(rd->outs);
    free(rd);
}

zf_err zfi_replay_check(const zf_recording *rec, const zf_flow *f, zf_diag *diag)
{
    zf_err err = ZF_OK;
    for (size_t i = 0; i < rec->n_links; i++) {
        const char *o = rec->links[i].output, *dot = strrchr(o, '.');
        bool found = false;
        for (size_t k = 0; k < f->n_nodes && !found; k++) {
            const zfi_node *nd = &f->nodes[k];
            if (strlen(nd->id) != (size_t)(dot - o) || strncmp(nd->id, o, (size_t)(dot - o)))
                continue;
            for (size_t p = 0; p < nd->n_outputs && !found; p++)
                found = !strcmp(nd->outputs[p].name, dot + 1);
        }
        if (!found)
            err = zfi_diag_add(diag, ZF_ENOTFOUND, f->file, 0, 0, "replay",
                               "%s records output '%s', which flow '%s' does not have", rec->path,
                               o, f->name);
    }
    return err;
}

/* Whether node nd is replaced by a replay source (it produced a recorded
 * link); if so *out is loaded with the built-in. Only sources are. */
zf_err zfi_replay_load(zf_recording *rec, const zfi_node *nd, zfi_loaded *out, bool *replaced,
                       zf_diag *diag)
{
    *replaced = false;
    size_t idl = strlen(nd->id);
    bool hit = false;
    for (size_t i = 0; i < rec->n_links && !hit; i++)
        hit = !strncmp(rec->links[i].output, nd->id, idl) && rec->links[i].output[idl] == '.';
    if (!hit)
        return ZF_OK;
    if (nd->kind != ZF_SOURCE)
        return zfi_diag_add(diag, ZF_EINVAL, nd->file, nd->line, nd->col, "replay",
                            "node '%s' produced a recorded link but is not a source: replay "
                            "replaces sources only (record the outputs of the sources)",
                            nd->id);
    memset(out, 0, sizeof *out);
    replay_decl *rd = zfi_calloc(1, sizeof *rd);
    if (rd)
        rd->outs = zfi_calloc(nd->n_outputs ? nd->n_outputs : 1, sizeof *rd->outs);
    out->out_map = zfi_calloc(nd->n_outputs ? nd->n_outputs : 1, sizeof *out->out_map);
    if (!rd || !rd->outs || !out->out_map) {
        if (rd)
            free(rd->outs);
        free(rd);
        free(out->out_map);
        out->out_map = NULL;
        return zfi_error(ZF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nd->n_outputs; i++) {
        rd->outs[i] = (zf_port_decl){nd->outputs[i].name, nd->outputs[i].type};
        out->out_map[i] = i;
    }
    rd->rec = rec;
    rd->decl = (zf_node_decl){.abi = ZF_ABI_VERSION,
                              .kind = ZF_SOURCE,
                              .name = "replay",
                              .outputs = rd->outs,
                              .n_outputs = nd->n_outputs,
                              .init = replay_init,
                              .fini = replay_fini};
    out->decl = &rd->decl;
    out->host_free = replay_decl_free;
    *replaced = true;
    return ZF_OK;
}

bool zf_recording_wait(zf_recording *r, int64_t timeout_ns)
{
    if (!r)
        return true;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ns >= 0) {
        until.tv_sec += (time_t)(timeout_ns / 1000000000);
        until.tv_nsec += (long)(timeout_ns % 1000000000);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&r->mu);
    while (r->running)
        if (timeout_ns < 0)
            pthread_cond_wait(&r->cv, &r->mu);
        else if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
            break;
    bool done = r->running == 0;
    pthread_mutex_unlock(&r->mu);
    return done;
}

void zf_recording_replayed(const zf_recording *r, uint64_t *sent, uint64_t *late)
{
    zf_recording *m = (zf_recording *)r;
    if (sent)
        *sent = r ? atomic_load(&m->sent) : 0;
    if (late)
        *late = r ? atomic_load(&m->late) : 0;
}
