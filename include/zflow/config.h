/*
 * zflow/config.h — the configuration tree: what a node reads its
 * configuration from, and what a parsed document (YAML, JSON, a control
 * response) is. Read-only for its users; maps keep their order.
 */
#ifndef ZFLOW_CONFIG_H
#define ZFLOW_CONFIG_H

#include <zflow/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of a tree's values; the names are as messages say them. */
#define ZF_CONFIG_KIND_MAP(X)                                                                      \
    X(ZF_CFG_NULL, 0, "null")                                                                      \
    X(ZF_CFG_BOOL, 1, "a boolean")                                                                 \
    X(ZF_CFG_INT, 2, "an integer")                                                                 \
    X(ZF_CFG_FLOAT, 3, "a float")                                                                  \
    X(ZF_CFG_STRING, 4, "a string")                                                                \
    X(ZF_CFG_SEQ, 5, "a sequence")                                                                 \
    X(ZF_CFG_MAP, 6, "a map")

typedef enum zf_config_kind { ZF_CONFIG_KIND_MAP(ZF_ENUM_VALUE_) } zf_config_kind;

/** "null", "a boolean", "an integer", "a float", "a string", "a sequence",
 *  "a map" (ZF_UNKNOWN_NAME otherwise). */
ZF_EXPORT const char *zf_config_kind_name(zf_config_kind k);

/** Kind of a value; ZF_CFG_NULL for a NULL pointer. */
ZF_EXPORT zf_config_kind zf_config_kind_of(const zf_config *c);
/** Member `key` of a map (a dotted path "a.b.c" descends maps), or NULL. */
ZF_EXPORT const zf_config *zf_config_get(const zf_config *c, const char *key);
/** Number of entries of a map or sequence, 0 otherwise. */
ZF_EXPORT size_t zf_config_len(const zf_config *c);
/** Entry i of a sequence or map (value), or NULL. */
ZF_EXPORT const zf_config *zf_config_at(const zf_config *c, size_t i);
/** Key of entry i of a map, or NULL. */
ZF_EXPORT const char *zf_config_key_at(const zf_config *c, size_t i);
/** Scalar as text (the source text of any scalar), or NULL if not a scalar. */
ZF_EXPORT const char *zf_config_text(const zf_config *c);

/** Typed lookups of `key` (dotted path) with a default when absent or null
 *  (c NULL: absent). A value of the wrong kind returns ZF_ETYPE and leaves
 *  *out at the default; out NULL is ZF_EINVAL. An integer reads as a float;
 *  a float does not read as an integer. The string stays owned by the tree. */
ZF_EXPORT ZF_NODISCARD zf_err zf_config_string(const zf_config *c, const char *key, const char *def,
                                               const char **out);
ZF_EXPORT ZF_NODISCARD zf_err zf_config_int(const zf_config *c, const char *key, int64_t def,
                                            int64_t *out);
ZF_EXPORT ZF_NODISCARD zf_err zf_config_float(const zf_config *c, const char *key, double def,
                                              double *out);
ZF_EXPORT ZF_NODISCARD zf_err zf_config_bool(const zf_config *c, const char *key, bool def,
                                             bool *out);

/** Parse YAML text (one document) into a tree; every problem goes to diag
 *  (may be NULL), at `name` (NULL: "<yaml>") and the line and column. On
 *  ZF_OK the caller owns *out (zf_config_free); else *out is NULL. Errors:
 *  ZF_EINVAL (NULL argument), ZF_EPARSE, ZF_ENOMEM. */
ZF_EXPORT ZF_NODISCARD zf_err zf_yaml_parse(const char *text, size_t len, const char *name,
                                            zf_config **out, zf_diag *diag);

/** Free a tree returned by zf_json_parse, zf_yaml_parse or zf_client_call.
 *  NULL is a no-op. Never free a tree the library lends (zf_node_config). */
ZF_EXPORT void zf_config_free(zf_config *c);

#ifdef __cplusplus
}
#endif

#endif
