/* Interned strings: file names that tree nodes and diagnostics point to. */
#include "graph/loader.h"

#include <stdlib.h>
#include <string.h>

struct zfi_strings {
    char **s;
    size_t n, cap;
};

zfi_strings *zfi_strings_new(void)
{
    return zfi_calloc(1, sizeof(zfi_strings));
}

const char *zfi_strings_intern(zfi_strings *t, const char *s)
{
    if (!t || !s)
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->s[i], s) == 0)
            return t->s[i];
    if (!zfi_grow((void **)&t->s, &t->cap, t->n + 1, sizeof *t->s))
        return NULL;
    char *copy = zfi_strdup(s);
    if (!copy)
        return NULL;
    t->s[t->n++] = copy;
    return copy;
}

void zfi_strings_free(zfi_strings *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t);
}
