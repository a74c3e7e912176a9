/* A child's ledger: for every capsule a process-isolated node holds (or
 * that is on its way to it: in its input or loan rings), the references the
 * runtime holds on its behalf, by handle. Runtime memory only: the child
 * never sees it. When the child dies, every entry is released exactly once;
 * a handle the child returns that the ledger does not have is a lie (the
 * child is killed). Not thread-safe: its owner locks. */
#ifndef ZFI_PROC_LEDGER_H
#define ZFI_PROC_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zfi_ledger_ent {
    uint64_t h; /* 0: empty; ZFI_LEDGER_TOMB: deleted */
    uint64_t count;
    void *d; /* the capsule (zf_data *) */
} zfi_ledger_ent;

typedef struct zfi_ledger {
    zfi_ledger_ent *tab;
    size_t cap, used, tombs; /* used: live entries */
    uint64_t refs;           /* references held in all */
} zfi_ledger;

/* One more reference for handle h (capsule d). false: out of memory. */
bool zfi_ledger_add(zfi_ledger *l, uint64_t h, void *d);
/* Room for one more entry, so that the next zfi_ledger_add cannot fail.
 * false: out of memory. */
bool zfi_ledger_reserve(zfi_ledger *l);
/* One reference less: the capsule (whose reference the caller now holds),
 * or NULL if the ledger holds none for h. */
void *zfi_ledger_take(zfi_ledger *l, uint64_t h);
/* References held for h (0: none); *d the capsule. */
uint64_t zfi_ledger_count(const zfi_ledger *l, uint64_t h, void **d);
/* Call fn(arg, d) once per reference held, and empty the ledger. */
void zfi_ledger_drain(zfi_ledger *l, void (*fn)(void *arg, void *d), void *arg);
void zfi_ledger_free(zfi_ledger *l);

#endif
