/* Every string field of a control request is valid UTF-8 without control
 * characters (finding 11 of issue 17): invalid sequences are refused by the
 * JSON parser, control characters by the decoder, responses stay valid
 * JSON whatever they quote, and a log line cannot be forged through a
 * request's text. */
#include "harness.h"

#include "core/common.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The 8 invalid sequences of the attack: a lone continuation byte, an
 * overlong slash, an overlong NUL, a truncated 2-byte and 3-byte sequence, a
 * UTF-16 surrogate, a code point past U+10FFFF, and 0xff. */
static const char *const bad_utf8[] = {"\x80",     "\xc0\xaf",     "\xc1\x80",         "\xc3",
                                       "\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"};

/* Every string member of a request and a valid value for it; the filters
 * of logs, echo, hz and record are decoded for every op. */
static const struct {
    const char *field, *valid;
} members[] = {
    {"op", "deploy"},          {"id", "x"},         {"name", "cam"},    {"path", "/flows/a.yaml"},
    {"descriptor", "name: a"}, {"node", "cam"},     {"level", "info"},  {"grep", "frame"},
    {"since", "10m"},          {"link", "cam.out"}, {"file", "cam.rec"}};

/* A deploy request with `field` holding `value` (raw bytes inside the JSON
 * string; "vars": its one entry; "key": the name of one more member);
 * every other field valid. */
static const char *request_with(const char *field, const char *value)
{
    static char buf[2048];
    size_t n = (size_t)snprintf(buf, sizeof buf, "{\"v\":1,\"vars\":[\"%s\"]",
                                !strcmp(field, "vars") ? value : "K=V");
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, ",\"%s\":\"%s\"", members[i].field,
                              !strcmp(field, members[i].field) ? value : members[i].valid);
    if (!strcmp(field, "key"))
        n += (size_t)snprintf(buf + n, sizeof buf - n, ",\"%s\":1", value);
    snprintf(buf + n, sizeof buf - n, "}");
    return buf;
}

/* Decode text; the failure's detail (zf_last_error) into err. */
static zf_err decode(const char *text, char *err, size_t errlen)
{
    zf_request *r = NULL;
    zf_err e = zf_request_decode(text, strlen(text), &r);
    snprintf(err, errlen, "%s", e == ZF_OK ? "" : zf_last_error());
    zf_request_free(r);
    return e;
}

/* Every string a request holds ("key": a member's name); the descriptor
 * and the key stay last (the control character case skips the key). */
static const char *const fields[] = {"op",   "id",    "name", "path", "vars",       "node", "level",
                                     "grep", "since", "link", "file", "descriptor", "key"};

ZT_CASE(a_valid_request_decodes)
{
    char err[512];
    ZT_EQ(decode(request_with("", ""), err, sizeof err), ZF_OK);
    /* valid UTF-8 anywhere is fine: a name in Greek, a path in Japanese */
    ZT_EQ(decode(request_with("name", "\xce\xba\xce\xac\xce\xbc\xce\xb5\xcf\x81\xce\xb1"), err,
                 sizeof err),
          ZF_OK);
    ZT_EQ(decode(request_with("path", "/\xe6\xb5\x81\xe3\x82\x8c.yaml"), err, sizeof err), ZF_OK);
    ZT_EQ(decode(request_with("descriptor", "name: a\\n\\tb: \\u00e9"), err, sizeof err), ZF_OK);
}

ZT_CASE(invalid_utf8_is_refused_in_every_string_field)
{
    char err[512];
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        for (size_t i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++) {
            char v[32];
            snprintf(v, sizeof v, "%s%s", !strcmp(fields[f], "path") ? "/" : "", bad_utf8[i]);
            zf_err e = decode(request_with(fields[f], v), err, sizeof err);
            if (e != ZF_EPARSE)
                ZT_FAIL("field %s, sequence %zu: %s (%s)", fields[f], i, zf_errname(e), err);
            ZT_CONTAINS(err, "invalid UTF-8 in a string");
        }
}

ZT_CASE(control_characters_are_refused_in_every_string_field)
{
    /* JSON escapes decode to control characters: refused after decoding.
     * The descriptor (a text) may hold tabs and line breaks only. */
    static const char *const ctl[] = {"\\u0001", "\\u001b[31m", "\\n",    "\\r",
                                      "\\t",     "\\u007f",     "\\u0085"};
    char err[512];
    for (size_t f = 0; f < sizeof fields / sizeof fields[0] - 1; f++)
        for (size_t i = 0; i < sizeof ctl / sizeof ctl[0]; i++) {
            bool text_ws = !strcmp(fields[f], "descriptor") && i >= 2 && i <= 4;
            char v[64];
            snprintf(v, sizeof v, "%sa%s", !strcmp(fields[f], "path") ? "/" : "",
                     !strcmp(fields[f], "vars") ? "=" : "");
            strcat(v, ctl[i]);
            zf_err e = decode(request_with(fields[f], v), err, sizeof err);
            if (text_ws) {
                ZT_EQ(e, ZF_OK);
                continue;
            }
            if (!strcmp(fields[f], "op")) {
                ZT_EQ(e, ZF_EPROTO); /* either way never echoed raw */
                ZT_CHECK(!strchr(err, '\x1b') && !strchr(err, '\n') && !strchr(err, '\x01'));
                continue;
            }
            if (e != ZF_EPROTO)
                ZT_FAIL("field %s, %s: %s (%s)", fields[f], ctl[i], zf_errname(e), err);
            ZT_CONTAINS(err, "holds a control character");
        }
    /* an unknown field named with a control character: echoed printable */
    ZT_EQ(decode("{\"v\":1,\"op\":\"list\",\"a\\u001b[2Jb\":1}", err, sizeof err), ZF_EPROTO);
    ZT_CONTAINS(err, "unknown field 'a?[2Jb'");
}

ZT_CASE(responses_are_valid_json_whatever_they_quote)
{
    char *r = zf_response_error(ZF_EINVAL, "bad \xff\xfe name \xc0\xaf and \x1b[31m");
    ZT_CHECK(r);
    zf_config *tree = NULL;
    ZT_EQ(zf_json_parse(r, strlen(r), &tree), ZF_OK);
    const char *msg = NULL;
    ZT_OK(zf_config_string(tree, "error.message", NULL, &msg));
    ZT_CONTAINS(msg, "bad \xef\xbf\xbd\xef\xbf\xbd name");
    ZT_CHECK(!strchr(msg, '\xff'));
    zf_config_free(tree);
    free(r);
}

ZT_CASE(a_logged_request_cannot_forge_a_log_line)
{
    char path[] = "/tmp/zt-log-XXXXXX";
    int fd = mkstemp(path);
    ZT_CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    zf_log_stderr(NULL, ZF_LOG_WARN, "control",
                  "unknown op 'x'\n2026-12-01T00:00:00.000Z error [zfd] forged\x1b[2J\xff");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[1024] = "";
    lseek(fd, 0, SEEK_SET);
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    unlink(path);
    ZT_CHECK(k > 0);
    buf[k] = '\0';
    ZT_CONTAINS(buf,
                "unknown op 'x'\n  | 2026-12-01T00:00:00.000Z error [zfd] forged\\x1b[2J\\xff\n");
    ZT_CHECK(!strchr(buf, '\x1b'));
}

/* A protocol version of the wrong kind or value is named as such, not as
 * missing. */
ZT_CASE(a_bad_protocol_version_says_what_is_wrong)
{
    char err[512];
    ZT_EQ(decode("{\"op\":\"hello\"}", err, sizeof err), ZF_EPROTO);
    ZT_CONTAINS(err, "field 'v' (the protocol version, an integer >= 1) is missing");
    ZT_EQ(decode("{\"v\":\"1\",\"op\":\"hello\"}", err, sizeof err), ZF_EPROTO);
    ZT_CONTAINS(err, "must be an integer >= 1, not a string");
    ZT_EQ(decode("{\"v\":1.0,\"op\":\"hello\"}", err, sizeof err), ZF_EPROTO);
    ZT_CONTAINS(err, "not a float");
    ZT_EQ(decode("{\"v\":-1,\"op\":\"hello\"}", err, sizeof err), ZF_EPROTO);
    ZT_CONTAINS(err, "must be an integer >= 1, not -1");
}

ZT_MAIN(ZT_ENTRY(a_valid_request_decodes), ZT_ENTRY(a_bad_protocol_version_says_what_is_wrong),
        ZT_ENTRY(invalid_utf8_is_refused_in_every_string_field),
        ZT_ENTRY(control_characters_are_refused_in_every_string_field),
        ZT_ENTRY(responses_are_valid_json_whatever_they_quote),
        ZT_ENTRY(a_logged_request_cannot_forge_a_log_line))
