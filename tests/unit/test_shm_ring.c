/* The shared rings of process-isolated nodes (proc/shm.h) as the two sides
 * see them: one memfd mapped twice, a producer's view and a consumer's.
 * The limit the runtime publishes bounds what the producer keeps in a ring
 * and sets the consumer's low mark, the mark both sides' hysteresis uses;
 * a limit the ring cannot have (unpublished: 0) means the ring's cells; a
 * head or tail no ring can have is refused, not trusted. */
#include "harness.h"

#include "proc/shm.h"

#include <stdint.h>
#include <unistd.h>

typedef struct two_views {
    zfi_shm prod, cons;
} two_views;

static bool open_views(two_views *v)
{
    int fd = zfi_shm_create(&v->prod, 1, 1);
    ZT_CHECK(fd >= 0);
    if (fd < 0)
        return false;
    bool ok = zfi_shm_map(&v->cons, fd, 1, 1);
    ZT_CHECK(ok);
    close(fd);
    if (!ok)
        zfi_shm_unmap(&v->prod);
    return ok;
}

static void close_views(two_views *v)
{
    zfi_shm_unmap(&v->cons);
    zfi_shm_unmap(&v->prod);
}

/* Fill r until it says no room; how many cells went in (bounded). */
static uint32_t fill(zfi_ring *r, uint64_t first)
{
    uint32_t n = 0, room = 0;
    while (n <= r->cap && zfi_ring_room_lazy(r, &room) && room) {
        zfi_ring_put(r, first + n, 64);
        n++;
    }
    return n;
}

ZT_CASE(a_ring_holds_at_most_its_published_limit)
{
    two_views v;
    if (!open_views(&v))
        return;
    zfi_ring *p = &v.prod.in[0], *c = &v.cons.in[0];
    ZT_CHECK(p->cap > 8);
    atomic_store(&p->s->limit, 4u); /* the runtime publishes it */
    zfi_ring_load_lim(p);
    zfi_ring_load_lim(c);
    ZT_EQ(zfi_ring_lim(p), 4);
    ZT_EQ(zfi_ring_low(c), 2); /* the consumer wakes the producer at 2 waiting */
    ZT_EQ(fill(p, 1), 4);
    uint64_t h = 0, len = 0;
    ZT_EQ(zfi_ring_take(c, &h, &len), 1);
    ZT_EQ(h, 1);
    ZT_EQ(len, 64);
    ZT_CHECK(zfi_ring_was_full(c, zfi_ring_lim(c))); /* a producer may wait: wake it */
    ZT_EQ(fill(p, 5), 1);
    ZT_EQ(zfi_ring_take(c, &h, &len), 1);
    ZT_EQ(zfi_ring_take(c, &h, &len), 1);
    ZT_CHECK(!zfi_ring_was_full(c, zfi_ring_lim(c))); /* one had been free */
    ZT_EQ(h, 3);
    /* A wider limit published later (the start, once links are wired)
     * takes effect at the producer's next reading. */
    atomic_store(&p->s->limit, 8u);
    zfi_ring_load_lim(p);
    ZT_EQ(fill(p, 6), 6);
    uint32_t taken = 0;
    while (zfi_ring_take(c, &h, &len) == 1 && taken < 64)
        taken++;
    ZT_EQ(taken, 8);
    ZT_EQ(h, 11); /* in order, none lost */
    close_views(&v);
}

/* The consumer's low mark and the producer's wait agree: a producer of a
 * full ring waits until at most low cells wait (room lim - low), and the
 * consumer's take that brings the ring to low is the one that wakes it. */
ZT_CASE(the_low_mark_is_where_the_producer_resumes)
{
    two_views v;
    if (!open_views(&v))
        return;
    zfi_ring *p = &v.prod.in[0], *c = &v.cons.in[0];
    uint32_t lims[] = {1, 2, 3, 12, 13};
    uint64_t next = 1, h, len;
    for (size_t k = 0; k < sizeof lims / sizeof lims[0]; k++) {
        atomic_store(&p->s->limit, lims[k]);
        zfi_ring_load_lim(p);
        zfi_ring_load_lim(c);
        uint32_t lim = zfi_ring_lim(p), low = zfi_ring_low(c);
        ZT_EQ(lim, lims[k]);
        ZT_CHECK(low < lim); /* a full ring is never at its low mark */
        ZT_EQ(fill(p, next), lim);
        next += lim;
        uint32_t room = 0;
        for (uint32_t waiting = lim; waiting > low; waiting--) {
            ZT_CHECK(zfi_ring_room(p, &room));
            ZT_CHECK(room < lim - low); /* not yet */
            ZT_EQ(zfi_ring_take(c, &h, &len), 1);
        }
        ZT_CHECK(zfi_ring_room(p, &room));
        ZT_EQ(room, lim - low); /* at the mark: resume */
        while (zfi_ring_take(c, &h, &len) == 1)
            ;
        ZT_EQ(h, next - 1);
    }
    close_views(&v);
}

ZT_CASE(a_limit_the_ring_cannot_have_means_its_cells)
{
    two_views v;
    if (!open_views(&v))
        return;
    zfi_ring *p = &v.prod.out[0], *c = &v.cons.out[0];
    uint32_t bad[] = {0, p->cap, p->cap + 1, UINT32_MAX};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        atomic_store(&p->s->limit, bad[k]);
        zfi_ring_load_lim(p);
        zfi_ring_load_lim(c);
        ZT_EQ(zfi_ring_lim(p), p->cap);
        ZT_EQ(zfi_ring_low(c), p->cap / 2);
    }
    ZT_EQ(fill(p, 1), p->cap);
    uint64_t h, len;
    ZT_EQ(zfi_ring_take(c, &h, &len), 1);
    ZT_CHECK(zfi_ring_was_full(c, zfi_ring_lim(c)));
    close_views(&v);
}

ZT_CASE(an_impossible_head_or_tail_is_refused)
{
    two_views v;
    if (!open_views(&v))
        return;
    zfi_ring *p = &v.prod.in[0], *c = &v.cons.in[0];
    ZT_EQ(fill(p, 1), p->cap);
    uint64_t h, len;
    ZT_EQ(zfi_ring_take(c, &h, &len), 1);
    uint32_t room = 0;
    /* a head past the tail, then one gone backwards */
    atomic_store(&p->s->head, p->pos + 1);
    ZT_CHECK(!zfi_ring_room(p, &room));
    atomic_store(&p->s->head, 1u);
    ZT_CHECK(zfi_ring_room(p, &room));
    ZT_EQ(room, 1);
    atomic_store(&p->s->head, 0u);
    ZT_CHECK(!zfi_ring_room(p, &room));
    /* a tail far ahead of the cells published: the take says corrupt */
    zfi_ring *po = &v.prod.out[0], *co = &v.cons.out[0];
    atomic_store(&po->s->tail, (uint64_t)po->cap * 3);
    ZT_EQ(zfi_ring_take(co, &h, &len), -1);
    close_views(&v);
}

/* An input cell carries the capsule's stamp and sequence number with its
 * handle and length, across the mapping and over laps of the ring; a cell
 * put without them reads 0. */
ZT_CASE(an_input_cell_carries_stamp_and_sequence)
{
    two_views v;
    if (!open_views(&v))
        return;
    zfi_ring *p = &v.prod.in[0], *c = &v.cons.in[0];
    for (uint64_t i = 1; i <= 3ull * p->cap; i++) {
        uint32_t room = 0;
        ZT_CHECK(zfi_ring_room_lazy(p, &room) && room > 0);
        zfi_ring_put_meta(p, i, i * 10, 1000000 + i, 7 * i);
        uint64_t h = 0, len = 0, ts = 0, seq = 0;
        ZT_EQ(zfi_ring_take_meta(c, &h, &len, &ts, &seq), 1);
        ZT_EQ(h, i);
        ZT_EQ(len, i * 10);
        ZT_EQ(ts, 1000000 + i);
        ZT_EQ(seq, 7 * i);
    }
    zfi_ring_put(p, 99, 64);
    uint64_t h = 0, len = 0, ts = 1, seq = 1;
    ZT_EQ(zfi_ring_take_meta(c, &h, &len, &ts, &seq), 1);
    ZT_EQ(h, 99);
    ZT_EQ(ts, 0);
    ZT_EQ(seq, 0);
    close_views(&v);
}

ZT_MAIN(ZT_ENTRY(a_ring_holds_at_most_its_published_limit),
        ZT_ENTRY(the_low_mark_is_where_the_producer_resumes),
        ZT_ENTRY(a_limit_the_ring_cannot_have_means_its_cells),
        ZT_ENTRY(an_impossible_head_or_tail_is_refused),
        ZT_ENTRY(an_input_cell_carries_stamp_and_sequence))
