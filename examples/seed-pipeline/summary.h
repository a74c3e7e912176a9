/* Sinks of the seed pipeline may write a one-line JSON summary at fini
 * (configuration `summary: PATH`), which tests and the README read. */
#ifndef SEED_SUMMARY_H
#define SEED_SUMMARY_H

#include <zflow/zflow.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The `summary` path (malloc'd), or NULL: none, or not a string (logged). */
static inline char *summary_path(zf_node *n)
{
    const char *p = NULL;
    if (zf_config_string(zf_node_config(n), "summary", NULL, &p) != ZF_OK)
        zf_node_log(n, ZF_LOG_WARN, "no summary written: %s", zf_last_error());
    return p && *p ? strdup(p) : NULL;
}

static inline void summary_write(const char *path, const char *json)
{
    if (!path)
        return;
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "%s\n", json);
    fclose(f);
}

#endif
