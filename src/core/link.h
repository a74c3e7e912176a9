/* Internal side of links: what the scheduler needs beyond the public API. */
#ifndef ZFI_LINK_H
#define ZFI_LINK_H

#include "core/common.h"

typedef void (*zfi_link_hook)(void *arg);

/* on_data(arg) runs after every push and on close (the consumer has work);
 * on_room(arg) runs when a link that parked its producer is back under
 * capacity. Hooks run outside the link's lock. Set before use. */
void zfi_link_set_hooks(zf_link *l, zfi_link_hook on_data, void *data_arg, zfi_link_hook on_room,
                        void *room_arg);

/* Push from inside a runtime callback: never waits. A full `block` link
 * accepts the capsule anyway and sets *park (the producer must not run
 * again until on_room). Consumes *d. ZF_ECLOSED when closed. */
zf_err zfi_link_push_nowait(zf_link *l, zf_data **d, bool *park);

/* Pop up to max capsules into out[], and past the first no more than
 * max_bytes of payload in all; returns how many. *eos is set when the link
 * is closed and now empty. Not counted as dequeued: the consumer counts
 * each capsule it delivers with zfi_link_delivered (so putting some back
 * with zfi_link_unpop keeps the statistics monotonic). */
size_t zfi_link_pop_batch(zf_link *l, zf_data **out, size_t max, uint64_t max_bytes, bool *eos);
/* Count one popped capsule as delivered (dequeued). The link's one
 * consumer only. */
void zfi_link_delivered(zf_link *l);

/* Put back n capsules popped by zfi_link_pop_batch and not delivered, at
 * the head of the link in their order (the link may briefly hold more than
 * its capacity). Consumes them. */
void zfi_link_unpop(zf_link *l, zf_data *const *caps, size_t n);

/* Messages queued (lock-free snapshot). */
uint32_t zfi_link_depth(const zf_link *l);
/* True when closed and empty. */
bool zfi_link_drained(zf_link *l);
/* True while the link is under capacity. */
bool zfi_link_has_room(zf_link *l);
/* Ask for on_room once the link is under capacity; returns true if it
 * already is (no hook will come for this request). */
bool zfi_link_want_room(zf_link *l);

/* Breaker: while open, a full link drops its oldest capsule whatever its
 * policy, and never parks its producer. Opening trims the queue to its
 * capacity and wakes a parked producer. */
void zfi_link_set_breaker(zf_link *l, bool open);
/* Drop every queued capsule (counted as dropped); returns how many. */
size_t zfi_link_flush(zf_link *l);
/* Account time a parked producer waited for room. */
void zfi_link_add_blocked(zf_link *l, uint64_t ns);

#endif
