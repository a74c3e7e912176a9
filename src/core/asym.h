/* Asymmetric fences: a hot side that pays a compiler barrier, a rare side
 * that pays a process-wide barrier (membarrier(2), private expedited: every
 * running thread of the process executes a full memory barrier before the
 * call returns). Between a hot side's store and its later load, either the
 * rare side's barrier ran (then the hot load sees what the rare side stored
 * before it), or it had not yet (then the rare side, after it, sees the hot
 * store). The scheduler's callback end (runtime/sched.c) and a link side
 * owned by one party (core/link.c) are built on it.
 *
 * Where membarrier is refused (an old kernel, a seccomp filter)
 * zfi_asym_ok() is false, and callers keep their symmetric protocol. */
#ifndef ZFI_ASYM_H
#define ZFI_ASYM_H

#include <stdbool.h>

/* Set by zfi_asym_init: true when the barrier is available. */
extern bool zfi_asym_available;

/* Register with the kernel, once per process (thread-safe, idempotent). */
void zfi_asym_init(void);

/* The barrier is available (zfi_asym_init ran first). */
static inline bool zfi_asym_ok(void)
{
    return zfi_asym_available;
}

/* The rare side's barrier (zfi_asym_ok() must be true). A kernel that keeps
 * refusing it after registration succeeded is fatal (zfi_fatal): the hot
 * sides' protocol depends on it. */
void zfi_asym_barrier(void);

#endif
