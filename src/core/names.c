/* The names of the public enums: one function per enum, each expanded from
 * the enum's own table (ZF_<ENUM>_MAP, next to the enum in its public
 * header) by ZFI_NAME_FUNCTION (core/common.h), each returning
 * ZF_UNKNOWN_NAME for a value outside its enum. The parsers that read names
 * (descriptors, requests, --log) expand the same tables. */
#include "core/common.h"

ZFI_NAME_FUNCTION(zf_strerror, zf_err, ZF_ERR_MAP)
ZFI_NAME_FUNCTION(zf_log_level_name, zf_log_level, ZF_LOG_LEVEL_MAP)
ZFI_NAME_FUNCTION(zf_policy_name, zf_policy, ZF_POLICY_MAP)
ZFI_NAME_FUNCTION(zf_config_kind_name, zf_config_kind, ZF_CONFIG_KIND_MAP)
ZFI_NAME_FUNCTION(zf_node_kind_name, zf_node_kind, ZF_NODE_KIND_MAP)
ZFI_NAME_FUNCTION(zf_node_state_name, zf_node_state, ZF_NODE_STATE_MAP)
ZFI_NAME_FUNCTION(zf_instance_state_name, zf_instance_state, ZF_INSTANCE_STATE_MAP)
ZFI_NAME_FUNCTION(zf_op_name, zf_op, ZF_OP_MAP)

/* An error's name is its symbol's spelling ("ZF_EINVAL"). */
#define SYMBOL_CASE(symbol, value, string)                                                         \
    case symbol:                                                                                   \
        return #symbol;

const char *zf_errname(zf_err err)
{
    switch (err) {
        ZF_ERR_MAP(SYMBOL_CASE)
    default:
        break;
    }
    return ZF_UNKNOWN_NAME;
}
