/* The per-thread detail of the last failure (the codes' names: names.c). */
#include "core/common.h"

#include <stdio.h>

static _Thread_local char last_error[1024];

const char *zf_last_error(void)
{
    return last_error;
}

void zfi_error_clear(void)
{
    last_error[0] = '\0';
}

zf_err zfi_verror(zf_err code, const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    return code;
}

zf_err zfi_error(zf_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zfi_verror(code, fmt, ap);
    va_end(ap);
    return code;
}
