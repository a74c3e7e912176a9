/* A small JSON writer for the daemon's responses. Keys are NULL inside
 * arrays. A failed allocation sticks; jw_steal then returns NULL. */
#ifndef ZFD_JW_H
#define ZFD_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jw {
    char *s;
    size_t len, cap;
    bool failed;
    int depth;
    bool first[32];
} jw;

void jw_init(jw *w);
void jw_obj(jw *w, const char *key);
void jw_end_obj(jw *w);
void jw_arr(jw *w, const char *key);
void jw_end_arr(jw *w);
void jw_str(jw *w, const char *key, const char *val); /* NULL: null */
void jw_int(jw *w, const char *key, long long v);
void jw_uint(jw *w, const char *key, unsigned long long v);
void jw_num(jw *w, const char *key, double v);
void jw_bool(jw *w, const char *key, bool v);
/* Append already-encoded JSON as a value. */
void jw_raw(jw *w, const char *key, const char *json);
char *jw_steal(jw *w);
void jw_free(jw *w);

#endif
