/* Durations ("16ms") and sizes ("512MiB") as written in descriptors. */
#include "core/common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Split "<number><unit>" with optional blanks between; the number may have
 * a fraction. Returns false when there is no number. */
static bool split_number(const char *s, double *num, const char **unit)
{
    while (isspace((unsigned char)*s))
        s++;
    const char *p = s;
    while (isdigit((unsigned char)*p))
        p++;
    if (p == s)
        return false;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    errno = 0;
    double v = strtod(s, NULL);
    if (errno != 0 || !isfinite(v))
        return false;
    while (isspace((unsigned char)*p))
        p++;
    *num = v;
    *unit = p;
    return true;
}

typedef struct unit {
    const char *name;
    double scale;
} unit;

/* "<number><unit>" with a unit from the table: the number times its scale. */
static bool scaled(const char *s, const unit *units, size_t n, double *out)
{
    double v;
    const char *u;
    if (!s || !split_number(s, &v, &u))
        return false;
    size_t ul = strlen(u);
    while (ul && isspace((unsigned char)u[ul - 1]))
        ul--;
    for (size_t i = 0; i < n; i++)
        if (strlen(units[i].name) == ul && strncmp(u, units[i].name, ul) == 0) {
            *out = v * units[i].scale;
            return true;
        }
    return false;
}

zf_err zf_parse_duration(const char *s, int64_t *out_ns)
{
    static const unit units[] = {{"ns", 1},  {"us", 1e3}, {"µs", 1e3},   {"ms", 1e6},
                                 {"s", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
    double ns;
    bool num = scaled(s, units, ZFI_ARRAY_LEN(units), &ns);
    if (num && ns <= 9.2e18) {
        *out_ns = (int64_t)llround(ns);
        return ZF_OK;
    }
    if (num)
        return zfi_error(ZF_EINVAL,
                         "'%s' is too long a duration: at most 9.2e18 ns (about 292 years)", s);
    return zfi_error(ZF_EINVAL,
                     "'%s' is not a duration: expected a non-negative number with a unit "
                     "(ns, us, ms, s, m, h), e.g. \"16ms\" or \"1.5s\"",
                     s ? s : "(null)");
}

zf_err zf_parse_size(const char *s, uint64_t *out_bytes)
{
    static const unit units[] = {{"", 1},
                                 {"B", 1},
                                 {"KiB", 1024.0},
                                 {"MiB", 1048576.0},
                                 {"GiB", 1073741824.0},
                                 {"TiB", 1099511627776.0},
                                 {"kB", 1e3},
                                 {"KB", 1e3},
                                 {"MB", 1e6},
                                 {"GB", 1e9},
                                 {"TB", 1e12},
                                 {"K", 1024.0},
                                 {"M", 1048576.0},
                                 {"G", 1073741824.0}};
    double b;
    bool num = scaled(s, units, ZFI_ARRAY_LEN(units), &b);
    if (num && b <= 1.8e19 && b == floor(b)) {
        *out_bytes = (uint64_t)b;
        return ZF_OK;
    }
    if (num && b == floor(b))
        return zfi_error(ZF_EINVAL, "'%s' is too large a size: at most 1.8e19 bytes (16 EiB)", s);
    if (num)
        return zfi_error(ZF_EINVAL, "'%s' is not a whole number of bytes", s);
    return zfi_error(ZF_EINVAL,
                     "'%s' is not a size: expected a non-negative whole number of bytes with an "
                     "optional unit (B, KiB, MiB, GiB, kB, MB, GB), e.g. \"512MiB\"",
                     s ? s : "(null)");
}
