/* The names of the public enums: one function per enum, each expanded from
 * the enum's own table (ZF_<ENUM>_MAP, next to the enum in its public header), each returning
 * ZF_UNKNOWN_NAME for a value outside its enum. The parsers that read names
 * (descriptors, requests, --log) expand the same tables. */
#include "core/common.h"

#define NAME_CASE(symbol, value, string)                                                           \
    case symbol:                                                                                   \
        return string;
#define SYMBOL_CASE(symbol, value, string)                                                         \
    case symbol:                                                                                   \
        return #symbol;

/* The switches list every value; a value outside the enum falls through. */
const char *zf_strerror(zf_err err)
{
    switch (err) {
        ZF_ERR_MAP(NAME_CASE)
    case ZF_ERR_COUNT:
        break;
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_errname(zf_err err)
{
    switch (err) {
        ZF_ERR_MAP(SYMBOL_CASE)
    case ZF_ERR_COUNT:
        break;
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_log_level_name(zf_log_level level)
{
    switch (level) {
        ZF_LOG_LEVEL_MAP(NAME_CASE)
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_policy_name(zf_policy p)
{
    switch (p) {
        ZF_POLICY_MAP(NAME_CASE)
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_config_kind_name(zf_config_kind k)
{
    switch (k) {
        ZF_CONFIG_KIND_MAP(NAME_CASE)
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_node_kind_name(zf_node_kind k)
{
    switch (k) {
        ZF_NODE_KIND_MAP(NAME_CASE)
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_node_state_name(zf_node_state s)
{
    switch (s) {
        ZF_NODE_STATE_MAP(NAME_CASE)
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_instance_state_name(zf_instance_state s)
{
    switch (s) {
        ZF_INSTANCE_STATE_MAP(NAME_CASE)
    }
    return ZF_UNKNOWN_NAME;
}

const char *zf_op_name(zf_op op)
{
    switch (op) {
        ZF_OP_MAP(NAME_CASE)
    case ZF_OP_COUNT:
        break;
    }
    return ZF_UNKNOWN_NAME;
}
