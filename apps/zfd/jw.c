/* The daemon's JSON writer. */
#include "jw.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(jw *w)
{
    memset(w, 0, sizeof *w);
    w->first[0] = true;
}

void jw_free(jw *w)
{
    free(w->s);
    jw_init(w);
}

static void put(jw *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 512;
        while (cap < w->len + n + 1)
            cap *= 2;
        char *p = realloc(w->s, cap);
        if (!p) {
            w->failed = true;
            return;
        }
        w->s = p;
        w->cap = cap;
    }
    memcpy(w->s + w->len, s, n);
    w->len += n;
    w->s[w->len] = '\0';
}

static void puts_(jw *w, const char *s)
{
    put(w, s, strlen(s));
}

static void quoted(jw *w, const char *s)
{
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(w, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            puts_(w, esc);
        } else {
            put(w, (const char *)p, 1);
        }
    }
    put(w, "\"", 1);
}

static void key(jw *w, const char *k)
{
    if (!w->first[w->depth])
        put(w, ",", 1);
    w->first[w->depth] = false;
    if (k) {
        quoted(w, k);
        put(w, ":", 1);
    }
}

static void open_(jw *w, const char *k, const char *c)
{
    key(w, k);
    puts_(w, c);
    if (w->depth < 31)
        w->depth++;
    w->first[w->depth] = true;
}

static void close_(jw *w, const char *c)
{
    if (w->depth > 0)
        w->depth--;
    puts_(w, c);
}

void jw_obj(jw *w, const char *k)
{
    open_(w, k, "{");
}
void jw_end_obj(jw *w)
{
    close_(w, "}");
}
void jw_arr(jw *w, const char *k)
{
    open_(w, k, "[");
}
void jw_end_arr(jw *w)
{
    close_(w, "]");
}

void jw_str(jw *w, const char *k, const char *v)
{
    key(w, k);
    if (v)
        quoted(w, v);
    else
        puts_(w, "null");
}

void jw_int(jw *w, const char *k, long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    key(w, k);
    puts_(w, b);
}

void jw_uint(jw *w, const char *k, unsigned long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%llu", v);
    key(w, k);
    puts_(w, b);
}

void jw_num(jw *w, const char *k, double v)
{
    char b[64];
    snprintf(b, sizeof b, "%.6g", v);
    key(w, k);
    puts_(w, b);
}

void jw_bool(jw *w, const char *k, bool v)
{
    key(w, k);
    puts_(w, v ? "true" : "false");
}

void jw_raw(jw *w, const char *k, const char *json)
{
    key(w, k);
    puts_(w, json ? json : "null");
}

char *jw_steal(jw *w)
{
    if (w->failed) {
        jw_free(w);
        return NULL;
    }
    char *s = w->s ? w->s : strdup("");
    w->s = NULL;
    jw_init(w);
    return s;
}
