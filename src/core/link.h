/* Internal side of links: what the scheduler needs beyond the public API.
 * The ring itself and its protocol: link.c. */
#ifndef ZFI_LINK_H
#define ZFI_LINK_H

#include "core/common.h"

typedef void (*zfi_link_hook)(void *arg);

/* on_data(arg) runs after every push and on close (the consumer has work);
 * on_room(arg) runs when a link that parked its producer is back under
 * capacity (once per zfi_link_want_room that returned false, or per park).
 * Each runs after a full barrier (the push's seq_cst publication or a
 * fence; the exchange of room_wanted): nothing the caller stored before
 * is still in its store buffer. Set before use. */
void zfi_link_set_hooks(zf_link *l, zfi_link_hook on_data, void *data_arg, zfi_link_hook on_room,
                        void *room_arg);
/* Only on_data: a consumer on a thread of its own that handles a push on
 * the producer's thread (a bridge endpoint). Before the producer runs. */
void zfi_link_set_on_data(zf_link *l, zfi_link_hook on_data, void *data_arg);

/* Push from inside a runtime callback: never waits. A full `block` link
 * accepts the capsule anyway and sets *park (the producer must not run
 * again until on_room). `own`: the caller is the link's producer node in
 * its callback (it counts with plain stores; any other caller, false).
 * Consumes *d. ZF_ECLOSED when closed. */
zf_err zfi_link_push_nowait(zf_link *l, zf_data **d, bool own, bool *park);

/* Give each side of a new link to its runtime node (before any traffic):
 * the producer node's pushes from its callbacks (zfi_link_push_nowait with
 * own) and the consumer node's takes (zfi_link_take) then move the ring's
 * positions with plain stores, not compare-and-swaps. Any other party on a
 * side (another thread's push, a pop, a drop, the breaker, a flush, a
 * close, a spill's refill) makes that side shared for good first, at the
 * cost of one process-wide barrier (core/asym.h). Without membarrier(2)
 * both sides stay shared. */
void zfi_link_own(zf_link *l);

/* The link's consumer node takes the head capsule (the caller owns it),
 * counted as delivered (dequeued); NULL when none. *eos is set when the
 * link is closed and empty. The one consumer node only (others use
 * zf_link_try_pop). A take of the owner has no fence: after its takes
 * (before it goes idle or waits), the consumer calls zfi_link_settle. */
zf_data *zfi_link_take(zf_link *l, bool *eos);
/* After the consumer node's takes from l: a full fence, then the wake-ups
 * a take owes (a producer parked for room, threads waiting for room), so
 * that none is lost to a take's plain store still on its way. */
void zfi_link_settle(zf_link *l);

/* True when a capsule waits at the head (lock-free; for the consumer). */
bool zfi_link_ready(zf_link *l);
/* True when closed and empty. */
bool zfi_link_drained(zf_link *l);
/* True while the link is under capacity (or never parks: drop policies,
 * breaker open). */
bool zfi_link_has_room(zf_link *l);
/* Ask for on_room once the link is under capacity; returns true if it
 * already is (no hook will come for this request). */
bool zfi_link_want_room(zf_link *l);

/* Breaker: while open, a full link drops its oldest capsule whatever its
 * policy, and never parks its producer. Opening trims the queue to its
 * capacity and wakes a parked producer. */
void zfi_link_set_breaker(zf_link *l, bool open);
/* Drop every queued capsule (counted as dropped); returns how many. A cell
 * reserved and not yet published is waited for until *deadline (ns; 0: set
 * to 10 ms from the first wait), shared by the flushes of one pass so that
 * the pass waits 10 ms at most in all; NULL: this flush's own. */
size_t zfi_link_flush(zf_link *l, uint64_t *deadline);
/* Bytes counted in (by producers) and out (by consumers) so far: the
 * one-writer counters, read without touching the hot lines' writers. */
void zfi_link_bytes(const zf_link *l, uint64_t *in, uint64_t *out);
/* The capacity the link was created with (messages). */
uint32_t zfi_link_capacity(const zf_link *l);
/* Account time a parked producer waited for room. */
void zfi_link_add_blocked(zf_link *l, uint64_t ns);

#endif
