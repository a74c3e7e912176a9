/* Command-line options shared by zfctl and zfd (args.h). */
#include "args.h"

#include <string.h>

zf_arg zf_arg_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '='))
        return ZF_ARG_OTHER;
    if (a[n] == '=') {
        *value = a + n + 1;
        return ZF_ARG_VALUE;
    }
    if (*i + 1 >= argc)
        return ZF_ARG_MISSING;
    *value = argv[++*i];
    return ZF_ARG_VALUE;
}
