/* The ledger (ledger.h): open addressing, linear probing, by handle. */
#include "proc/ledger.h"

#include "core/common.h"

#include <stdlib.h>

#define TOMB UINT64_MAX

static size_t slot_of(uint64_t h, size_t cap)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static zfi_ledger_ent *find(const zfi_ledger *l, uint64_t h)
{
    if (!l->cap)
        return NULL;
    for (size_t i = slot_of(h, l->cap), k = 0; k < l->cap; i = (i + 1) & (l->cap - 1), k++) {
        zfi_ledger_ent *e = &l->tab[i];
        if (e->h == h)
            return e;
        if (e->h == 0)
            return NULL;
    }
    return NULL;
}

static bool rehash(zfi_ledger *l, size_t cap)
{
    zfi_ledger_ent *t = zfi_calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < l->cap; i++) {
        zfi_ledger_ent *e = &l->tab[i];
        if (e->h == 0 || e->h == TOMB)
            continue;
        size_t j = slot_of(e->h, cap);
        while (t[j].h)
            j = (j + 1) & (cap - 1);
        t[j] = *e;
    }
    free(l->tab);
    l->tab = t;
    l->cap = cap;
    l->tombs = 0;
    return true;
}

bool zfi_ledger_reserve(zfi_ledger *l)
{
    return (l->used + l->tombs + 1) * 2 <= l->cap ||
           rehash(l, l->cap ? (l->used * 4 > l->cap ? l->cap * 2 : l->cap) : 64);
}

bool zfi_ledger_add(zfi_ledger *l, uint64_t h, void *d)
{
    zfi_ledger_ent *e = find(l, h);
    if (e) {
        e->count++;
        l->refs++;
        return true;
    }
    if (!zfi_ledger_reserve(l))
        return false;
    size_t i = slot_of(h, l->cap);
    while (l->tab[i].h && l->tab[i].h != TOMB)
        i = (i + 1) & (l->cap - 1);
    if (l->tab[i].h == TOMB)
        l->tombs--;
    l->tab[i] = (zfi_ledger_ent){h, 1, d};
    l->used++;
    l->refs++;
    return true;
}

void *zfi_ledger_take(zfi_ledger *l, uint64_t h)
{
    if (h == 0 || h == TOMB)
        return NULL;
    zfi_ledger_ent *e = find(l, h);
    if (!e)
        return NULL;
    void *d = e->d;
    l->refs--;
    if (--e->count == 0) {
        e->h = TOMB;
        e->d = NULL;
        l->used--;
        l->tombs++;
    }
    return d;
}

uint64_t zfi_ledger_count(const zfi_ledger *l, uint64_t h, void **d)
{
    zfi_ledger_ent *e = h && h != TOMB ? find(l, h) : NULL;
    if (d)
        *d = e ? e->d : NULL;
    return e ? e->count : 0;
}

void zfi_ledger_drain(zfi_ledger *l, void (*fn)(void *arg, void *d), void *arg)
{
    for (size_t i = 0; i < l->cap; i++) {
        zfi_ledger_ent *e = &l->tab[i];
        if (e->h == 0 || e->h == TOMB)
            continue;
        for (uint64_t k = 0; k < e->count; k++)
            fn(arg, e->d);
    }
    for (size_t i = 0; i < l->cap; i++)
        l->tab[i] = (zfi_ledger_ent){0, 0, NULL};
    l->used = l->tombs = 0;
    l->refs = 0;
}

void zfi_ledger_free(zfi_ledger *l)
{
    free(l->tab);
    l->tab = NULL;
    l->cap = l->used = l->tombs = 0;
    l->refs = 0;
}
