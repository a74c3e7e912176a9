/* Taps: read-only observers of a link (core/tap.c). A tap queues, for each
 * capsule pushed on its link, either a copy of the capsule's metadata and
 * first bytes, or (hold) a reference to the capsule itself, in a bounded
 * lock-free queue; a producer never waits on it: a full queue drops and
 * counts. */
#ifndef ZFI_TAP_H
#define ZFI_TAP_H

#include "core/common.h"
#include "core/futex.h"

typedef struct zfi_tap zfi_tap;

/* A new tap (queue of `capacity` items, at most max_bytes of held payload);
 * NULL on allocation failure. */
zfi_tap *zfi_tap_new(uint32_t capacity, uint64_t max_bytes, bool hold);
/* Free it (detached from its link first); held capsules are released. */
void zfi_tap_free(zfi_tap *t);
/* The producer's side: capsule c is being pushed (never waits). */
void zfi_tap_offer(zfi_tap *t, zf_data *c);
/* The link closed: the reader gets ZF_ECLOSED once the queue is empty. */
void zfi_tap_end(zfi_tap *t);
/* The reader's side: the next item (its held capsule, if any, is the
 * caller's), waiting up to timeout_ns (<0: forever). ZF_ETIMEDOUT,
 * ZF_ECLOSED (ended and empty). */
zf_err zfi_tap_next(zfi_tap *t, zf_tap_item *out, int64_t timeout_ns);
/* Also notify e after each item (a reader of several taps waits on one
 * eventcount). Set before the tap is attached. */
void zfi_tap_set_notify(zfi_tap *t, zfi_evc *e);
/* Items dropped so far. */
uint64_t zfi_tap_dropped(const zfi_tap *t);

/* On the link (link.c): attach (ZF_EBUSY if it has a tap), detach (waits
 * for offers in flight: a few instructions). */
zf_err zfi_link_tap_attach(zf_link *l, zfi_tap *t);
void zfi_link_tap_detach(zf_link *l, zfi_tap *t);

#endif
