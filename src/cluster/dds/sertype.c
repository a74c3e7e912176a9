/* The capsule sertype: how a capsule crosses a DDS link.
 *
 * A serdata holds a reference to the capsule, not a copy. Its serialized
 * form is the 4-byte CDR encapsulation header, a small wire header (magic,
 * flags, sequence, timestamp, length, the port's type) kept in the serdata,
 * then the capsule's payload. to_ser_ref points Cyclone straight into the
 * payload for every fragment that lies in it; only the one fragment that
 * straddles header and payload (the first), or the padding past the end,
 * is assembled in a buffer of its own (at most one fragment's bytes). The
 * capsule stays referenced until Cyclone drops the serdata (acknowledged
 * by every reader, or the writer deleted).
 *
 * Receiving copies the payload once, from Cyclone's receive buffers into a
 * capsule of the reader endpoint's pool: the receive buffers are not ours.
 * The topic is keyless: one instance, so the instance's key serdata holds
 * no capsule. */
#include "cluster/dds/impl.h"

#include <dds/ddsi/ddsi_serdata.h>
#include <dds/ddsi/ddsi_sertype.h>
#include <dds/ddsi/q_radmin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_MAGIC 0x5a464331u /* "ZFC1" */
#define TYPE_MAX   64

/* After the 4-byte encapsulation header; little-endian, as this host. */
typedef struct wire {
    uint32_t magic;
    uint32_t flags;
    uint64_t seq;
    uint64_t ts;
    uint64_t len;
    uint32_t type_len;
    uint32_t reserved;
} wire;

#define PREFIX_MAX (4 + sizeof(wire) + TYPE_MAX)

typedef struct zsertype {
    struct ddsi_sertype c;
    zf_node *recv_node; /* the reader endpoint (capsules come from its pool) */
    char type[TYPE_MAX];
} zsertype;

typedef struct zserdata {
    struct ddsi_serdata c;
    zf_data *d; /* NULL: end of stream, a key, or a refused sample */
    uint32_t flags;
    uint32_t size;   /* serialized size, header included */
    uint32_t plen;   /* bytes of prefix */
    size_t readable; /* payload bytes to_ser_ref may point at (capacity) */
    unsigned char prefix[PREFIX_MAX];
} zserdata;

static _Atomic uint64_t malformed;

uint64_t zfi_capsule_malformed(void)
{
    return atomic_load(&malformed);
}

static const struct ddsi_serdata_ops serdata_ops;

static zserdata *new_serdata(const struct ddsi_sertype *st, enum ddsi_serdata_kind kind)
{
    zserdata *s = calloc(1, sizeof *s);
    if (s)
        ddsi_serdata_init(&s->c, st, kind);
    return s;
}

static void put_prefix(zserdata *s, const zsertype *t, const zf_data *d, uint32_t flags)
{
    static const unsigned char cdr_le[4] = {0x00, 0x01, 0x00, 0x00};
    size_t tl = strlen(t->type);
    wire w = {.magic = WIRE_MAGIC,
              .flags = flags,
              .seq = d ? zf_data_seq(d) : 0,
              .ts = d ? zf_data_timestamp(d) : 0,
              .len = d ? zf_data_len(d) : 0,
              .type_len = (uint32_t)tl};
    memcpy(s->prefix, cdr_le, 4);
    memcpy(s->prefix + 4, &w, sizeof w);
    memcpy(s->prefix + 4 + sizeof w, t->type, tl);
    s->plen = (uint32_t)(4 + sizeof w + tl);
    s->size = s->plen + (uint32_t)w.len;
}

struct ddsi_sertype *zfi_capsule_sertype_new(const char *type_name, zf_node *recv_node);

struct ddsi_serdata *zfi_capsule_serdata(struct ddsi_sertype *st, zf_data *d, uint32_t flags)
{
    zserdata *s = new_serdata(st, SDK_DATA);
    if (!s) {
        zf_data_unref(d);
        return NULL;
    }
    s->d = d;
    s->flags = flags;
    s->readable = d ? zf_data_capacity(d) : 0;
    put_prefix(s, (const zsertype *)st, d, flags);
    return &s->c;
}

zf_data *zfi_capsule_take(struct ddsi_serdata *sd, uint32_t *flags)
{
    zserdata *s = (zserdata *)sd;
    *flags = s->flags;
    return s->d ? zf_data_ref(s->d) : NULL;
}

/* ---- serdata ops ---- */

static bool sd_eqkey(const struct ddsi_serdata *a, const struct ddsi_serdata *b)
{
    (void)a;
    (void)b;
    return true; /* keyless: one instance */
}

static uint32_t sd_size(const struct ddsi_serdata *d)
{
    return ((const zserdata *)d)->size;
}

static void sd_free(struct ddsi_serdata *d)
{
    zserdata *s = (zserdata *)d;
    zf_data_unref(s->d);
    free(s);
}

/* The received bytes [off, off+len) of a fragment chain into dst; false
 * when the chain does not cover them. */
typedef struct chain {
    const struct nn_rdata *frags; /* or, from an iovec: */
    const ddsrt_iovec_t *iov;
    size_t niov;
} chain;

static bool chain_read(const chain *ch, size_t off, size_t len, unsigned char *dst)
{
    size_t end = off + len, done = off;
    if (ch->frags) {
        for (const struct nn_rdata *f = ch->frags; f && done < end; f = f->nextfrag) {
            if (f->maxp1 <= done || f->min > done)
                continue;
            const unsigned char *p =
                NN_RMSG_PAYLOADOFF(f->rmsg, NN_RDATA_PAYLOAD_OFF(f)) + (done - f->min);
            size_t k = (f->maxp1 < end ? f->maxp1 : end) - done;
            memcpy(dst + (done - off), p, k);
            done += k;
        }
    } else {
        size_t at = 0;
        for (size_t i = 0; i < ch->niov && done < end; i++) {
            size_t lo = at, hi = at + ch->iov[i].iov_len;
            at = hi;
            if (hi <= done || lo > done)
                continue;
            size_t k = (hi < end ? hi : end) - done;
            memcpy(dst + (done - off), (const unsigned char *)ch->iov[i].iov_base + (done - lo), k);
            done += k;
        }
    }
    return done == end;
}

static struct ddsi_serdata *from_chain(const struct ddsi_sertype *st, enum ddsi_serdata_kind kind,
                                       const chain *ch, size_t size)
{
    const zsertype *t = (const zsertype *)st;
    zserdata *s = new_serdata(st, kind);
    if (!s)
        return NULL;
    if (kind != SDK_DATA)
        return &s->c;
    wire w;
    if (size < 4 + sizeof w || !chain_read(ch, 4, sizeof w, (unsigned char *)&w) ||
        w.magic != WIRE_MAGIC || w.type_len >= TYPE_MAX || size < 4 + sizeof w + w.type_len ||
        w.len > size - 4 - sizeof w - w.type_len ||
        size - 4 - sizeof w - w.type_len - w.len >= 4) { /* an unfragmented sample comes
                                                             padded to a multiple of 4 */
        atomic_fetch_add(&malformed, 1);
        zfi_log(ZF_LOG_WARN, "cluster",
                "a sample of %zu bytes on a zflow topic is malformed: dropped", size);
        return &s->c;
    }
    char type[TYPE_MAX] = "";
    chain_read(ch, 4 + sizeof w, w.type_len, (unsigned char *)type);
    if (strcmp(type, t->type) != 0) {
        atomic_fetch_add(&malformed, 1);
        zfi_log(ZF_LOG_WARN, "cluster",
                "a sample of type '%s' came where '%s' was expected: dropped", type, t->type);
        return &s->c;
    }
    s->flags = w.flags;
    if (w.flags & ZFI_WIRE_EOS || !t->recv_node) {
        put_prefix(s, t, NULL, w.flags);
        return &s->c;
    }
    zf_data *d = NULL;
    if (zf_data_alloc(t->recv_node, (size_t)w.len, &d) != ZF_OK) {
        zfi_log(ZF_LOG_WARN, "cluster", "%s: no pool memory for a %llu-byte capsule: dropped",
                zf_node_id(t->recv_node), (unsigned long long)w.len);
        s->flags = 0;
        return &s->c;
    }
    /* The one copy: from the receive buffers into the pool. */
    if (!chain_read(ch, 4 + sizeof w + w.type_len, (size_t)w.len, zf_data_mut(&d))) {
        atomic_fetch_add(&malformed, 1);
        zf_data_unref(d);
        return &s->c;
    }
    /* d is unique (just allocated): the setters cannot fail */
    ZF_IGNORE(zf_data_set_seq(d, w.seq));
    ZF_IGNORE(zf_data_set_timestamp(d, w.ts));
    s->d = d;
    s->readable = zf_data_capacity(d);
    put_prefix(s, t, d, w.flags);
    return &s->c;
}

static struct ddsi_serdata *sd_from_ser(const struct ddsi_sertype *st, enum ddsi_serdata_kind kind,
                                        const struct nn_rdata *fragchain, size_t size)
{
    chain ch = {.frags = fragchain};
    return from_chain(st, kind, &ch, size);
}

static struct ddsi_serdata *sd_from_ser_iov(const struct ddsi_sertype *st,
                                            enum ddsi_serdata_kind kind, ddsrt_msg_iovlen_t niov,
                                            const ddsrt_iovec_t *iov, size_t size)
{
    chain ch = {.iov = iov, .niov = (size_t)niov};
    return from_chain(st, kind, &ch, size);
}

static struct ddsi_serdata *sd_from_keyhash(const struct ddsi_sertype *st,
                                            const struct ddsi_keyhash *kh)
{
    (void)kh;
    zserdata *s = new_serdata(st, SDK_KEY);
    return s ? &s->c : NULL;
}

static struct ddsi_serdata *sd_from_sample(const struct ddsi_sertype *st,
                                           enum ddsi_serdata_kind kind, const void *sample)
{
    (void)st;
    (void)kind;
    (void)sample;
    return NULL; /* written with dds_writecdr only */
}

/* Bytes [off, off+sz) of the serialized form into buf. */
static void sd_to_ser(const struct ddsi_serdata *d, size_t off, size_t sz, void *buf)
{
    const zserdata *s = (const zserdata *)d;
    unsigned char *out = buf;
    for (size_t i = 0; i < sz;) {
        size_t at = off + i;
        if (at < s->plen) {
            size_t k = s->plen - at < sz - i ? s->plen - at : sz - i;
            memcpy(out + i, s->prefix + at, k);
            i += k;
        } else if (s->d && at - s->plen < zf_data_len(s->d)) {
            size_t p = at - s->plen, k = zf_data_len(s->d) - p;
            if (k > sz - i)
                k = sz - i;
            memcpy(out + i, (const unsigned char *)zf_data_ptr(s->d) + p, k);
            i += k;
        } else {
            out[i++] = 0; /* padding to a multiple of 4 */
        }
    }
}

static struct ddsi_serdata *sd_to_ser_ref(const struct ddsi_serdata *d, size_t off, size_t sz,
                                          ddsrt_iovec_t *ref)
{
    const zserdata *s = (const zserdata *)d;
    ref->iov_len = (ddsrt_iov_len_t)sz;
    if (off + sz <= s->plen) {
        ref->iov_base = (void *)(s->prefix + off);
    } else if (s->d && off >= s->plen && off - s->plen + sz <= s->readable) {
        ref->iov_base = (unsigned char *)zf_data_ptr(s->d) + (off - s->plen); /* zero copy */
    } else {
        void *buf = malloc(sz ? sz : 1);
        if (!buf)
            return NULL;
        sd_to_ser(d, off, sz, buf);
        ref->iov_base = buf;
    }
    return ddsi_serdata_ref(d);
}

static void sd_to_ser_unref(struct ddsi_serdata *d, const ddsrt_iovec_t *ref)
{
    zserdata *s = (zserdata *)d;
    const unsigned char *p = ref->iov_base;
    const unsigned char *payload = s->d ? zf_data_ptr(s->d) : NULL;
    bool ours = (p >= s->prefix && p < s->prefix + sizeof s->prefix) ||
                (payload && p >= payload && p < payload + s->readable);
    if (!ours)
        free(ref->iov_base);
    ddsi_serdata_unref(d);
}

static bool sd_to_sample(const struct ddsi_serdata *d, void *sample, void **bufptr, void *buflim)
{
    (void)d;
    (void)sample;
    (void)bufptr;
    (void)buflim;
    return false; /* read with dds_takecdr only */
}

static struct ddsi_serdata *sd_to_untyped(const struct ddsi_serdata *d)
{
    /* The instance's key: keyless, so no data (never the capsule, which
     * would then live as long as the instance). */
    zserdata *s = new_serdata(d->type, SDK_KEY);
    return s ? &s->c : NULL;
}

static bool sd_untyped_to_sample(const struct ddsi_sertype *st, const struct ddsi_serdata *d,
                                 void *sample, void **bufptr, void *buflim)
{
    (void)st;
    return sd_to_sample(d, sample, bufptr, buflim);
}

static size_t sd_print(const struct ddsi_sertype *st, const struct ddsi_serdata *d, char *buf,
                       size_t size)
{
    const zserdata *s = (const zserdata *)d;
    (void)st;
    return (size_t)snprintf(buf, size, "zflow capsule (%zu bytes%s)",
                            s->d ? zf_data_len(s->d) : (size_t)0,
                            s->flags & ZFI_WIRE_EOS ? ", end of stream" : "");
}

static void sd_get_keyhash(const struct ddsi_serdata *d, struct ddsi_keyhash *buf, bool force_md5)
{
    (void)d;
    (void)force_md5;
    memset(buf, 0, sizeof *buf);
}

static const struct ddsi_serdata_ops serdata_ops = {
    .eqkey = sd_eqkey,
    .get_size = sd_size,
    .from_ser = sd_from_ser,
    .from_ser_iov = sd_from_ser_iov,
    .from_keyhash = sd_from_keyhash,
    .from_sample = sd_from_sample,
    .to_ser = sd_to_ser,
    .to_ser_ref = sd_to_ser_ref,
    .to_ser_unref = sd_to_ser_unref,
    .to_sample = sd_to_sample,
    .to_untyped = sd_to_untyped,
    .untyped_to_sample = sd_untyped_to_sample,
    .free = sd_free,
    .print = sd_print,
    .get_keyhash = sd_get_keyhash,
};

/* ---- sertype ops ---- */

static void st_free(struct ddsi_sertype *st)
{
    ddsi_sertype_fini(st);
    free(st);
}

static void st_zero_samples(const struct ddsi_sertype *st, void *samples, size_t count)
{
    (void)st;
    (void)samples;
    (void)count;
}

static void st_realloc_samples(void **ptrs, const struct ddsi_sertype *st, void *old,
                               size_t oldcount, size_t count)
{
    (void)st;
    (void)old;
    (void)oldcount;
    for (size_t i = 0; ptrs && i < count; i++)
        ptrs[i] = NULL;
}

static void st_free_samples(const struct ddsi_sertype *st, void **ptrs, size_t count,
                            dds_free_op_t op)
{
    (void)st;
    (void)ptrs;
    (void)count;
    (void)op;
}

static bool st_equal(const struct ddsi_sertype *a, const struct ddsi_sertype *b)
{
    const zsertype *x = (const zsertype *)a, *y = (const zsertype *)b;
    return x->recv_node == y->recv_node && !strcmp(x->type, y->type);
}

static uint32_t st_hash(const struct ddsi_sertype *st)
{
    const zsertype *t = (const zsertype *)st;
    uint32_t h = 2166136261u;
    for (const char *p = t->type; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h ^ (uint32_t)(uintptr_t)t->recv_node;
}

static const struct ddsi_sertype_ops sertype_ops = {
    .version = ddsi_sertype_v0,
    .free = st_free,
    .zero_samples = st_zero_samples,
    .realloc_samples = st_realloc_samples,
    .free_samples = st_free_samples,
    .equal = st_equal,
    .hash = st_hash,
};

struct ddsi_sertype *zfi_capsule_sertype_new(const char *type_name, zf_node *recv_node)
{
    zsertype *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    snprintf(t->type, sizeof t->type, "%s", type_name && *type_name ? type_name : "any");
    t->recv_node = recv_node;
    ddsi_sertype_init(&t->c, "zflow::Capsule", &sertype_ops, &serdata_ops, true);
    return &t->c;
}
