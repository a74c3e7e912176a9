/*
 * zflow/json.h — JSON in and out of zflow: the one parser and the one writer
 * the library and its programs (zfd, zfctl) use.
 *
 * Reading: zf_json_parse turns JSON text into a zf_config tree (the tree a
 * node's configuration is; read it with zf_config_get and friends).
 *
 * Writing: a zf_json_writer appends values in order -- objects and arrays
 * opened and closed, scalars put with a key inside an object and without one
 * (NULL) inside an array or at the top -- into a growable buffer:
 *
 *     zf_json_writer *w = zf_json_writer_new();
 *     zf_json_open_object(w, NULL);
 *     zf_json_put_string(w, "worker", name);   // escaped; NULL writes null
 *     zf_json_open_array(w, "ports");
 *     zf_json_put_int(w, NULL, 7);
 *     zf_json_close(w);                        // the array
 *     zf_json_close(w);                        // the object
 *     char *text = zf_json_writer_finish(w);   // {"worker":"...","ports":[7]}
 *     ...
 *     zf_free(text);
 *
 * Failure contract: the writing calls return nothing. The first failure
 * (out of memory, a key missing in an object or given in an array, a close
 * with nothing open, more than ZF_JSON_MAX_DEPTH levels, a second value at
 * the top) sticks: later calls do nothing, and zf_json_writer_finish returns
 * NULL with the reason in zf_last_error(). A NULL writer is a no-op
 * everywhere (so a failed zf_json_writer_new needs no check until finish).
 * Strings are written as valid JSON whatever their bytes: control characters
 * escaped, bytes that are not UTF-8 as U+FFFD. One writer is used by one
 * thread at a time.
 */
#ifndef ZFLOW_JSON_H
#define ZFLOW_JSON_H

#include <zflow/base.h>
#include <zflow/config.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Containers open at once in one writer. */
#define ZF_JSON_MAX_DEPTH 256

typedef struct zf_json_writer zf_json_writer;

/** A new, empty writer; the caller owns it (zf_json_writer_finish or
 *  zf_json_writer_free). NULL when out of memory. */
ZF_EXPORT zf_json_writer *zf_json_writer_new(void);
/** The text written, NUL-terminated; the caller owns it (zf_free). The
 *  writer is freed in every case. NULL (detail in zf_last_error) when a
 *  write failed, a container is still open, nothing was written or w is
 *  NULL. */
ZF_EXPORT char *zf_json_writer_finish(zf_json_writer *w);
/** Free a writer and what it wrote. NULL is a no-op. */
ZF_EXPORT void zf_json_writer_free(zf_json_writer *w);

/** Open an object / an array: `key` inside an object, NULL elsewhere. */
ZF_EXPORT void zf_json_open_object(zf_json_writer *w, const char *key);
ZF_EXPORT void zf_json_open_array(zf_json_writer *w, const char *key);
/** Close the innermost open object or array. */
ZF_EXPORT void zf_json_close(zf_json_writer *w);

/** Scalars (`key` as for zf_json_open_object). A NULL string writes null. */
ZF_EXPORT void zf_json_put_string(zf_json_writer *w, const char *key, const char *v);
ZF_EXPORT void zf_json_put_int(zf_json_writer *w, const char *key, int64_t v);
ZF_EXPORT void zf_json_put_uint(zf_json_writer *w, const char *key, uint64_t v);
/** Shortest text that reads back as v, with a ".0" when it looks integral;
 *  NaN and infinities (which JSON has not) write null. */
ZF_EXPORT void zf_json_put_double(zf_json_writer *w, const char *key, double v);
ZF_EXPORT void zf_json_put_bool(zf_json_writer *w, const char *key, bool v);
ZF_EXPORT void zf_json_put_null(zf_json_writer *w, const char *key);
/** Text that is already one JSON value (not checked), e.g. another
 *  writer's; NULL writes null. */
ZF_EXPORT void zf_json_put_raw(zf_json_writer *w, const char *key, const char *json);
/** A configuration tree: maps as objects, sequences as arrays, scalars by
 *  their kind; NULL writes null. */
ZF_EXPORT void zf_json_put_config(zf_json_writer *w, const char *key, const zf_config *c);

/** Parse JSON text (RFC 8259; strings valid UTF-8 without \u0000) into a
 *  tree: objects are maps, arrays sequences, integers that fit in 64 bits
 *  ZF_CFG_INT. Depth is limited to 64. On ZF_OK the caller owns *out
 *  (zf_config_free); else *out is NULL and zf_last_error says where (the
 *  byte) and what. Errors: ZF_EINVAL (NULL argument), ZF_EPARSE. */
ZF_EXPORT ZF_NODISCARD zf_err zf_json_parse(const char *text, size_t len, zf_config **out);

/** The tree as JSON text; the caller owns it (zf_free). NULL when out of
 *  memory. c NULL writes "null". */
ZF_EXPORT char *zf_config_to_json(const zf_config *c);

#ifdef __cplusplus
}
#endif

#endif
