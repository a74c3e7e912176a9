/* Error codes, their names, and the per-thread detail of the last failure. */
#include "core/common.h"

#include <stdio.h>

static const struct {
    const char *name;
    const char *text;
} errors[ZF_ERR_COUNT] = {
    [ZF_OK] = {"ZF_OK", "success"},
    [ZF_EINVAL] = {"ZF_EINVAL", "invalid argument"},
    [ZF_ENOMEM] = {"ZF_ENOMEM", "out of memory"},
    [ZF_EAGAIN] = {"ZF_EAGAIN", "would block"},
    [ZF_ETIMEDOUT] = {"ZF_ETIMEDOUT", "timed out"},
    [ZF_ECLOSED] = {"ZF_ECLOSED", "closed"},
    [ZF_ETYPE] = {"ZF_ETYPE", "type mismatch"},
    [ZF_ENOTFOUND] = {"ZF_ENOTFOUND", "not found"},
    [ZF_EABI] = {"ZF_EABI", "not a zflow node or incompatible ABI"},
    [ZF_ESYS] = {"ZF_ESYS", "system call failed"},
    [ZF_EPARSE] = {"ZF_EPARSE", "parse error"},
    [ZF_ESTATE] = {"ZF_ESTATE", "invalid state for this operation"},
    [ZF_EBUSY] = {"ZF_EBUSY", "resource busy"},
    [ZF_EPERM] = {"ZF_EPERM", "not permitted"},
    [ZF_EPROTO] = {"ZF_EPROTO", "protocol error"},
    [ZF_ENODE] = {"ZF_ENODE", "node callback failed"},
    [ZF_EEXIST] = {"ZF_EEXIST", "already exists"},
};

const char *zf_strerror(zf_err err)
{
    if ((unsigned)err >= ZF_ERR_COUNT)
        return "unknown error";
    return errors[err].text;
}

const char *zf_errname(zf_err err)
{
    if ((unsigned)err >= ZF_ERR_COUNT)
        return "ZF_E?";
    return errors[err].name;
}

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
