/* Command-line options shared by zfctl and zfd: an option matches by its
 * whole name, in either spelling ("--name VALUE", "--name=VALUE"); one that
 * only begins like it (--names, --log-level) is another option. */
#ifndef ZF_APPS_ARGS_H
#define ZF_APPS_ARGS_H

/* What zf_arg_value found at argv[*i]. */
typedef enum zf_arg {
    ZF_ARG_OTHER = 0, /* not the option NAME */
    ZF_ARG_VALUE,     /* NAME with its value in *value (the next argument consumed) */
    ZF_ARG_MISSING    /* NAME as the last argument, with no value */
} zf_arg;

zf_arg zf_arg_value(int argc, char **argv, int *i, const char *name, const char **value);

#endif
