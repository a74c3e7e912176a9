/* The shared memory of one isolated node (shm.h): its size, its layout, and
 * creating or mapping its memfd. */
#include "proc/shm.h"

#include <zflow/base.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

zfi_spin *zfi_spin_start(zfi_spin *s, zfi_spin *tmp, uint64_t now, uint64_t budget_ns)
{
    uint64_t budget = ZFI_SPIN_MIN_NS;
    if (!s) {
        *tmp = (zfi_spin){0};
        s = tmp;
    } else if (s->last && s->gap < ZFI_SPIN_DENSE_NS && now >= s->calm) {
        budget = ZFI_SPIN_MAX_NS;
    }
    s->t0 = s->look = now;
    s->budget = budget < budget_ns ? budget : budget_ns;
    s->i = 0;
    return s;
}

/* A sign that spinning does not pay: park for a while, twice as long as
 * last time when the last calm ended less than ZFI_SPIN_CALM_RESET_NS ago
 * (proc/shm.h). */
static bool calm_down(zfi_spin *s, uint64_t now)
{
    uint64_t d = ZFI_SPIN_CALM_MIN_NS;
    if (s->calm && now - s->calm < ZFI_SPIN_CALM_RESET_NS)
        d = 2 * s->calm_ns < ZFI_SPIN_CALM_NS ? 2 * s->calm_ns : ZFI_SPIN_CALM_NS;
    s->calm = now + d;
    s->calm_ns = d;
    return false;
}

bool zfi_spin_again(zfi_spin *s)
{
    if ((++s->i & 7) == 0) {
        uint64_t now = zf_clock_ns();
        if (now - s->look > ZFI_SPIN_LOST_NS)
            return calm_down(s, now); /* the CPUs are taken */
        s->look = now;
        if (now - s->t0 > s->budget) {
            if (s->budget > ZFI_SPIN_MIN_NS)
                return calm_down(s, now); /* spun in vain */
            return false;
        }
    }
    zfi_cpu_relax();
    return true;
}

void zfi_spin_hit(zfi_spin *s)
{
    uint64_t now = zf_clock_ns();
    uint64_t gap = s->last && now > s->last ? now - s->last : ZFI_SPIN_DENSE_NS;
    if (gap > 4ull * ZFI_SPIN_DENSE_NS)
        gap = 4ull * ZFI_SPIN_DENSE_NS; /* one long pause weighs as much as a few short gaps */
    s->gap = s->last ? s->gap - s->gap / 4 + gap / 4 : gap;
    s->last = now;
}

static size_t rings_at(size_t n_in, size_t n_out)
{
    size_t ctl = (sizeof(zfi_shm_ctl) + ZFI_CACHELINE - 1) / ZFI_CACHELINE * ZFI_CACHELINE;
    return ctl + (n_in + n_out + 2) * sizeof(zfi_sring);
}

size_t zfi_shm_size(size_t n_in, size_t n_out)
{
    size_t cells =
        n_in * ZFI_PROC_IN_CAP + n_out * ZFI_PROC_OUT_CAP + ZFI_PROC_COMP_CAP + ZFI_PROC_LOAN_CAP;
    size_t size = rings_at(n_in, n_out) + cells * sizeof(zfi_cell);
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    return (size + page - 1) / page * page;
}

static zfi_cell *ring_at(zfi_ring *r, zfi_sring *s, zfi_cell *cells, uint32_t cap)
{
    r->s = s;
    r->cells = cells;
    r->cap = cap;
    r->pos = 0;
    r->seen = 0;
    return cells + cap;
}

void zfi_shm_layout(zfi_shm *m, void *base, size_t size, size_t n_in, size_t n_out)
{
    memset(m, 0, sizeof *m);
    m->base = base;
    m->size = size;
    m->ctl = base;
    m->n_in = n_in;
    m->n_out = n_out;
    size_t ctl = (sizeof(zfi_shm_ctl) + ZFI_CACHELINE - 1) / ZFI_CACHELINE * ZFI_CACHELINE;
    zfi_sring *s = (zfi_sring *)((char *)base + ctl);
    zfi_cell *c = (zfi_cell *)((char *)base + rings_at(n_in, n_out));
    for (size_t i = 0; i < n_in; i++)
        c = ring_at(&m->in[i], s++, c, ZFI_PROC_IN_CAP);
    for (size_t o = 0; o < n_out; o++)
        c = ring_at(&m->out[o], s++, c, ZFI_PROC_OUT_CAP);
    c = ring_at(&m->comp, s++, c, ZFI_PROC_COMP_CAP);
    ring_at(&m->loan, s, c, ZFI_PROC_LOAN_CAP);
}

int zfi_shm_create(zfi_shm *m, size_t n_in, size_t n_out)
{
    size_t size = zfi_shm_size(n_in, n_out);
    int fd = memfd_create("zflow-node-rings", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)size) != 0)
        goto fail;
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        goto fail;
    zfi_shm_layout(m, base, size, n_in, n_out);
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

bool zfi_shm_map(zfi_shm *m, int fd, size_t n_in, size_t n_out)
{
    size_t size = zfi_shm_size(n_in, n_out);
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return false;
    zfi_shm_layout(m, base, size, n_in, n_out);
    return true;
}

void zfi_shm_unmap(zfi_shm *m)
{
    if (m->base)
        munmap(m->base, m->size);
    m->base = NULL;
    m->ctl = NULL;
}
