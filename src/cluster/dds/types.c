/* The control topics' types, with their serializer programs written by hand
 * (Cyclone's opcodes, dds_opcodes.h), so no IDL compiler is needed. */
#include "cluster/dds/impl.h"

#include <stddef.h>

/* clang-format off: one instruction per line */
static const uint32_t worker_ops[] = {
    DDS_OP_ADR | DDS_OP_TYPE_STR | DDS_OP_FLAG_KEY,
    offsetof(zfi_msg_worker, name),
    DDS_OP_ADR | DDS_OP_TYPE_STR,
    offsetof(zfi_msg_worker, info),
    DDS_OP_RTS,
    DDS_OP_KOF | 1u,
    0u, /* the key: the instruction at 0 */
};
static const dds_key_descriptor_t worker_keys[] = {{"name", 5, 0}};

static const uint32_t ctl_ops[] = {
    DDS_OP_ADR | DDS_OP_TYPE_STR, offsetof(zfi_msg_ctl, to),    DDS_OP_ADR | DDS_OP_TYPE_STR,
    offsetof(zfi_msg_ctl, from),  DDS_OP_ADR | DDS_OP_TYPE_8BY, offsetof(zfi_msg_ctl, id),
    DDS_OP_ADR | DDS_OP_TYPE_4BY, offsetof(zfi_msg_ctl, kind),  DDS_OP_ADR | DDS_OP_TYPE_8BY,
    offsetof(zfi_msg_ctl, time),  DDS_OP_ADR | DDS_OP_TYPE_STR, offsetof(zfi_msg_ctl, body),
    DDS_OP_ADR | DDS_OP_TYPE_STR, offsetof(zfi_msg_ctl, sig),   DDS_OP_RTS,
};

static const uint32_t credit_ops[] = {
    DDS_OP_ADR | DDS_OP_TYPE_STR | DDS_OP_FLAG_KEY,
    offsetof(zfi_msg_credit, reader),
    DDS_OP_ADR | DDS_OP_TYPE_8BY,
    offsetof(zfi_msg_credit, taken),
    DDS_OP_RTS,
    DDS_OP_KOF | 1u,
    0u,
};
static const dds_key_descriptor_t credit_keys[] = {{"reader", 5, 0}};
/* clang-format on */

const dds_topic_descriptor_t zfi_msg_worker_desc = {
    .m_size = sizeof(zfi_msg_worker),
    .m_align = _Alignof(zfi_msg_worker),
    .m_flagset = 0,
    .m_nkeys = 1,
    .m_typename = "zflow::Worker",
    .m_keys = worker_keys,
    .m_nops = 4,
    .m_ops = worker_ops,
    .m_meta = "",
};

const dds_topic_descriptor_t zfi_msg_ctl_desc = {
    .m_size = sizeof(zfi_msg_ctl),
    .m_align = _Alignof(zfi_msg_ctl),
    .m_flagset = 0,
    .m_nkeys = 0,
    .m_typename = "zflow::Control",
    .m_keys = NULL,
    .m_nops = 8,
    .m_ops = ctl_ops,
    .m_meta = "",
};

const dds_topic_descriptor_t zfi_msg_credit_desc = {
    .m_size = sizeof(zfi_msg_credit),
    .m_align = _Alignof(zfi_msg_credit),
    .m_flagset = 0,
    .m_nkeys = 1,
    .m_typename = "zflow::Credit",
    .m_keys = credit_keys,
    .m_nops = 4,
    .m_ops = credit_ops,
    .m_meta = "",
};
