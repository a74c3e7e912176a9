/* The adaptive spin-then-park of process-isolated nodes (proc/shm.h): who
 * spins how long, and when it stops spinning. */
#include "harness.h"

#include "proc/shm.h"

#include <zflow/base.h>

#include <sched.h>
#include <stdint.h>

/* A spin with nothing to wait for, until it says park; its length. */
static uint64_t spin_out(zfi_spin *s)
{
    uint64_t t0 = zf_clock_ns();
    for (long i = 0; i < 2000000000L && zfi_spin_again(s); i++)
        ;
    return zf_clock_ns() - t0;
}

ZT_CASE(no_history_spins_briefly)
{
    zfi_spin s = {0};
    uint64_t now = zf_clock_ns();
    zfi_spin_start(&s, NULL, now, UINT64_MAX);
    ZT_EQ(s.budget, ZFI_SPIN_MIN_NS);
    /* without a state of its own: the short spin, capped by a timeout */
    zfi_spin tmp;
    zfi_spin *t = zfi_spin_start(NULL, &tmp, now, 500);
    ZT_CHECK(t == &tmp);
    ZT_EQ(t->budget, 500);
    ZT_CHECK(spin_out(t) < 1000000000ull); /* it ends */
}

ZT_CASE(dense_traffic_spins_long_sparse_briefly)
{
    uint64_t now = zf_clock_ns();
    zfi_spin s = {.last = now - 10000, .gap = 20000};
    zfi_spin_start(&s, NULL, now, UINT64_MAX);
    ZT_EQ(s.budget, ZFI_SPIN_MAX_NS);
    zfi_spin_start(&s, NULL, now, 30000); /* a timeout caps it */
    ZT_EQ(s.budget, 30000);
    s.gap = 2 * ZFI_SPIN_DENSE_NS; /* 60 fps and the like */
    zfi_spin_start(&s, NULL, now, UINT64_MAX);
    ZT_EQ(s.budget, ZFI_SPIN_MIN_NS);
}

ZT_CASE(arrivals_close_together_make_traffic_dense)
{
    zfi_spin s = {0};
    zfi_spin_hit(&s);
    ZT_CHECK(s.last > 0);
    ZT_EQ(s.gap, ZFI_SPIN_DENSE_NS); /* one arrival says nothing yet */
    /* back-to-back arrivals: the average falls under the threshold (a
     * preemption between two of them only delays it) */
    int i = 0;
    while (s.gap >= ZFI_SPIN_DENSE_NS && i++ < 1000)
        zfi_spin_hit(&s);
    ZT_CHECK(s.gap < ZFI_SPIN_DENSE_NS);
    /* one long pause weighs as a few short gaps, not more */
    uint64_t before = s.gap;
    s.last = zf_clock_ns() - 1000000000ull; /* a second ago */
    zfi_spin_hit(&s);
    ZT_EQ(s.gap, before - before / 4 + ZFI_SPIN_DENSE_NS); /* (4 x DENSE, a quarter of it) */
}

ZT_CASE(a_vain_spin_calms_the_waiter)
{
    uint64_t now = zf_clock_ns();
    zfi_spin s = {.last = now, .gap = 1000};
    zfi_spin_start(&s, NULL, now, UINT64_MAX);
    ZT_EQ(s.budget, ZFI_SPIN_MAX_NS);
    uint64_t took = spin_out(&s); /* nothing comes */
    printf("  a vain spin of %.1f us\n", (double)took / 1000.0);
    /* it spun its budget, or lost its CPU on the way (a loaded machine):
     * either way it parks sooner for a while */
    ZT_CHECK(s.calm > now);
    uint64_t later = zf_clock_ns();
    zfi_spin_start(&s, NULL, later, UINT64_MAX);
    ZT_EQ(s.budget, ZFI_SPIN_MIN_NS);
    /* and spins again once the calm is over */
    zfi_spin_start(&s, NULL, s.calm, UINT64_MAX);
    ZT_EQ(s.budget, ZFI_SPIN_MAX_NS);
}

ZT_CASE(a_short_spin_does_not_calm)
{
    zfi_spin s = {0};
    uint64_t t0 = zf_clock_ns();
    zfi_spin_start(&s, NULL, t0, UINT64_MAX);
    (void)spin_out(&s);
    uint64_t took = zf_clock_ns() - t0; /* from the start the spin counts from */
    ZT_CHECK(took >= ZFI_SPIN_MIN_NS);
    ZT_CHECK(s.calm == 0 || took > ZFI_SPIN_LOST_NS); /* (only a lost CPU calms it) */
}

/* Leaving a CPU shared with a peer: the thread runs on another CPU of its
 * mask at once, and the mask is what it was. */
ZT_CASE(leaving_a_cpu_moves_the_thread_and_keeps_its_mask)
{
    cpu_set_t before, after;
    ZT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
    int cpu = sched_getcpu();
    ZT_CHECK(cpu >= 0);
    if (CPU_COUNT(&before) < 2) {
        ZT_CHECK(!zfi_cpu_leave(cpu)); /* nowhere to go */
        printf("  one CPU: nothing to leave for\n");
        return;
    }
    ZT_CHECK(zfi_cpu_leave(cpu));
    ZT_CHECK(sched_getcpu() != cpu);
    ZT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
    ZT_CHECK(CPU_EQUAL(&before, &after));
    ZT_CHECK(!zfi_cpu_leave(-1));
}

ZT_MAIN(ZT_ENTRY(no_history_spins_briefly), ZT_ENTRY(dense_traffic_spins_long_sparse_briefly),
        ZT_ENTRY(arrivals_close_together_make_traffic_dense),
        ZT_ENTRY(a_vain_spin_calms_the_waiter), ZT_ENTRY(a_short_spin_does_not_calm),
        ZT_ENTRY(leaving_a_cpu_moves_the_thread_and_keeps_its_mask))
