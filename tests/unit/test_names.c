/* Enum names: one table per enum (ZF_<ENUM>_MAP), one name function each,
 * "unknown" for any value outside the enum; the parsers read the same names. */
#include "harness.h"

#include <string.h>
#include <zflow/zflow.h>

ZT_CASE(every_value_has_its_tables_name_and_others_are_unknown)
{
#define ERR(symbol, value, string)                                                                 \
    ZT_EQ((int)symbol, value);                                                                     \
    ZT_STREQ(zf_strerror(symbol), string);                                                         \
    ZT_STREQ(zf_errname(symbol), #symbol);
    ZF_ERR_MAP(ERR)
#undef ERR
    ZT_STREQ(zf_strerror(ZF_ERR_COUNT), ZF_UNKNOWN_NAME);
    ZT_STREQ(zf_errname((zf_err)-1), ZF_UNKNOWN_NAME);

#define CHECK(fn, type)                                                                            \
    do {                                                                                           \
        ZT_STREQ(fn((type)99), ZF_UNKNOWN_NAME);                                                   \
        ZT_STREQ(fn((type)-1), ZF_UNKNOWN_NAME);                                                   \
    } while (0)
#define NAME(symbol, value, string) ZT_STREQ(NAME_FN(symbol), string);
#define NAME_FN                     zf_log_level_name
    ZF_LOG_LEVEL_MAP(NAME)
#undef NAME_FN
#define NAME_FN zf_policy_name
    ZF_POLICY_MAP(NAME)
#undef NAME_FN
#define NAME_FN zf_config_kind_name
    ZF_CONFIG_KIND_MAP(NAME)
#undef NAME_FN
#define NAME_FN zf_node_kind_name
    ZF_NODE_KIND_MAP(NAME)
#undef NAME_FN
#define NAME_FN zf_node_state_name
    ZF_NODE_STATE_MAP(NAME)
#undef NAME_FN
#define NAME_FN zf_instance_state_name
    ZF_INSTANCE_STATE_MAP(NAME)
#undef NAME_FN
#define NAME_FN zf_op_name
    ZF_OP_MAP(NAME)
#undef NAME_FN
    CHECK(zf_log_level_name, zf_log_level);
    CHECK(zf_policy_name, zf_policy);
    CHECK(zf_config_kind_name, zf_config_kind);
    CHECK(zf_node_kind_name, zf_node_kind);
    ZT_STREQ(zf_node_kind_name((zf_node_kind)0), ZF_UNKNOWN_NAME);
    CHECK(zf_node_state_name, zf_node_state);
    CHECK(zf_instance_state_name, zf_instance_state);
    CHECK(zf_op_name, zf_op);
    ZT_STREQ(zf_op_name(ZF_OP_COUNT), ZF_UNKNOWN_NAME);
}

/* zf_log_level_parse reads exactly the names zf_log_level_name writes. */
ZT_CASE(log_levels_parse_their_own_names)
{
#define PARSE(symbol, value, string)                                                               \
    {                                                                                              \
        zf_log_level l = (zf_log_level)-1;                                                         \
        ZT_OK(zf_log_level_parse(string, &l));                                                     \
        ZT_EQ(l, symbol);                                                                          \
    }
    ZF_LOG_LEVEL_MAP(PARSE)
#undef PARSE
    zf_log_level l = ZF_LOG_INFO;
    ZT_EQ(zf_log_level_parse("verbose", &l), ZF_EINVAL);
    ZT_CONTAINS(zf_last_error(), "expected error, warn, info, debug or trace");
    ZT_EQ(zf_log_level_parse(NULL, &l), ZF_EINVAL);
}

ZT_MAIN(ZT_ENTRY(every_value_has_its_tables_name_and_others_are_unknown),
        ZT_ENTRY(log_levels_parse_their_own_names))
