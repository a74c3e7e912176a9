/* zfd's own log lines: stderr, UTC timestamps and levels, escaped like the
 * library's (zf_log_stderr). */
#include "zfd.h"

#include <stdarg.h>
#include <stdio.h>

zf_log_level zfd_log_level = ZF_LOG_INFO;

void zfd_log(zf_log_level level, const char *fmt, ...)
{
    if (level > zfd_log_level)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    zf_log_stderr(NULL, level, "zfd", msg);
}
