/* Paths in descriptors: `file://` URLs or plain paths, relative ones taken
 * from the folder of the file that names them; stored absolute. */
#include "graph/loader.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* %XX decoding of a file:// URL path; NULL when it decodes to a NUL. */
static char *pct_decode(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        int h, l;
        if (*s == '%' && (h = hex((unsigned char)s[1])) >= 0 &&
            (l = hex((unsigned char)s[2])) >= 0) {
            if (!h && !l) {
                free(out);
                return NULL;
            }
            *o++ = (char)(h * 16 + l);
            s += 2;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

static bool has_scheme(const char *s)
{
    if (!isalpha((unsigned char)*s))
        return false;
    while (isalnum((unsigned char)*s) || *s == '+' || *s == '-' || *s == '.')
        s++;
    return strncmp(s, "://", 3) == 0;
}

/* Lexical normalization of an absolute path: no ".", "..", "//". */
static char *normalize(const char *abs)
{
    size_t len = strlen(abs);
    char *out = malloc(len + 2);
    if (!out)
        return NULL;
    size_t o = 0;
    const char *p = abs;
    while (*p) {
        while (*p == '/')
            p++;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 0)
            break;
        if (n == 1 && p[0] == '.') {
            /* skip */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--; /* the slash */
        } else {
            out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

static char *join(const char *dir, const char *rel)
{
    if (rel[0] == '/')
        return normalize(rel);
    char *cat = zfi_asprintf("%s/%s", dir && *dir ? dir : "/", rel);
    if (!cat)
        return NULL;
    char *n = normalize(cat);
    free(cat);
    return n;
}

char *zfi_path_resolve(const char *dir, const char *ref, const char **why)
{
    *why = "out of memory";
    if (!ref || !*ref) {
        *why = "the path is empty";
        return NULL;
    }
    if (strncmp(ref, "file://", 7) == 0) {
        const char *p = ref + 7;
        if (strncmp(p, "localhost/", 10) == 0)
            p += 9;
        char *dec = pct_decode(p);
        if (!dec) {
            *why = "the URL decodes to a NUL byte";
            return NULL;
        }
        if (!*dec) {
            free(dec);
            *why = "the file:// URL has no path";
            return NULL;
        }
        char *r = join(dir, dec);
        free(dec);
        return r;
    }
    if (has_scheme(ref)) {
        *why = "only file:// URLs and plain paths are supported";
        return NULL;
    }
    return join(dir, ref);
}

char *zfi_path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return zfi_strdup(".");
    if (slash == path)
        return zfi_strdup("/");
    return zfi_strndup(path, (size_t)(slash - path));
}

char *zfi_path_abs(const char *path)
{
    if (path[0] == '/')
        return normalize(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return normalize(path); /* no cwd: keep it as given, rooted */
    return join(cwd, path);
}

char *zfi_read_file(const char *path, size_t *len, int *err)
{
    *err = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *err = errno;
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        *err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > ZFI_MAX_FILE_BYTES) {
        *err = EFBIG;
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap > ZFI_MAX_FILE_BYTES) {
                *err = EFBIG;
                break;
            }
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *err = errno;
            break;
        }
        if (r == 0) {
            close(fd);
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        n += (size_t)r;
    }
    if (!*err)
        *err = ENOMEM;
    free(buf);
    close(fd);
    return NULL;
}
