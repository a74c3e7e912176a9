/* The JSON writer (zflow/json.h): what it writes, reads back through the
 * parser, and its failure contract. */
#include "harness.h"

#include <math.h>
#include <string.h>
#include <zflow/json.h>

ZT_CASE(writes_nested_values_that_parse_back)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "s", "a \"q\" \\ \n\t\x01 \xc3\xa9 \xff");
    zf_json_put_int(w, "i", -9223372036854775807LL - 1);
    zf_json_put_uint(w, "u", 18446744073709551615ULL);
    zf_json_put_double(w, "d", 0.1);
    zf_json_put_double(w, "whole", 3.0);
    zf_json_put_double(w, "inf", INFINITY);
    zf_json_put_bool(w, "b", true);
    zf_json_put_null(w, "n");
    zf_json_put_string(w, "ns", NULL);
    zf_json_put_raw(w, "raw", "[1,{\"x\":2}]");
    zf_json_open_array(w, "a");
    zf_json_put_int(w, NULL, 1);
    zf_json_open_object(w, NULL);
    zf_json_close(w);
    zf_json_open_array(w, NULL);
    zf_json_close(w);
    zf_json_close(w);
    zf_json_close(w);
    char *text = zf_json_writer_finish(w);
    ZT_CHECK(text != NULL);
    ZT_STREQ(text, "{\"s\":\"a \\\"q\\\" \\\\ \\n\\t\\u0001 \xc3\xa9 \\ufffd\","
                   "\"i\":-9223372036854775808,\"u\":18446744073709551615,\"d\":0.1,"
                   "\"whole\":3.0,\"inf\":null,\"b\":true,\"n\":null,\"ns\":null,"
                   "\"raw\":[1,{\"x\":2}],\"a\":[1,{},[]]}");
    zf_config *c = NULL;
    ZT_OK(zf_json_parse(text, strlen(text), &c));
    const char *s = NULL;
    ZT_OK(zf_config_string(c, "s", NULL, &s));
    ZT_STREQ(s, "a \"q\" \\ \n\t\x01 \xc3\xa9 \xef\xbf\xbd");
    ZT_CHECK(zf_config_kind_of(zf_config_get(c, "u")) != ZF_CFG_NULL);
    ZT_EQ(zf_config_len(zf_config_get(c, "raw")), 2);
    ZT_EQ(zf_config_len(zf_config_get(c, "a")), 3);
    /* a tree written back is the same text */
    char *again = zf_config_to_json(c);
    zf_json_writer *w2 = zf_json_writer_new();
    zf_json_put_config(w2, NULL, c);
    char *via_writer = zf_json_writer_finish(w2);
    ZT_STREQ(again, via_writer);
    zf_free(again);
    zf_free(via_writer);
    zf_config_free(c);
    zf_free(text);
}

/* Each misuse sticks: later writes do nothing, finish says what it was. */
ZT_CASE(the_first_failure_sticks_and_finish_names_it)
{
    struct {
        int misuse;
        const char *want;
    } cases[] = {
        {0, "a value without a key inside an object"},
        {1, "a key inside an array"},
        {2, "a close with nothing open"},
        {3, "an object or array left open"},
        {4, "a second value at the top level"},
        {5, "a key at the top level"},
        {6, "nothing written"},
        {7, "nested deeper than ZF_JSON_MAX_DEPTH"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        zf_json_writer *w = zf_json_writer_new();
        switch (cases[k].misuse) {
        case 0:
            zf_json_open_object(w, NULL);
            zf_json_put_int(w, NULL, 1);
            zf_json_close(w);
            break;
        case 1:
            zf_json_open_array(w, NULL);
            zf_json_put_int(w, "k", 1);
            zf_json_close(w);
            break;
        case 2:
            zf_json_put_int(w, NULL, 1);
            zf_json_close(w);
            break;
        case 3:
            zf_json_open_array(w, NULL);
            break;
        case 4:
            zf_json_put_int(w, NULL, 1);
            zf_json_put_int(w, NULL, 2);
            break;
        case 5:
            zf_json_put_int(w, "k", 1);
            break;
        case 6:
            break;
        case 7:
            for (int d = 0; d <= ZF_JSON_MAX_DEPTH; d++)
                zf_json_open_array(w, NULL);
            for (int d = 0; d <= ZF_JSON_MAX_DEPTH; d++)
                zf_json_close(w);
            break;
        }
        ZT_CHECK(zf_json_writer_finish(w) == NULL);
        ZT_CONTAINS(zf_last_error(), cases[k].want);
    }
    /* NULL is a no-op everywhere; finish(NULL) fails cleanly */
    zf_json_open_object(NULL, NULL);
    zf_json_put_string(NULL, "k", "v");
    zf_json_close(NULL);
    zf_json_writer_free(NULL);
    ZT_CHECK(zf_json_writer_finish(NULL) == NULL);
    /* free discards what was written */
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_writer_free(w);
}

ZT_MAIN(ZT_ENTRY(writes_nested_values_that_parse_back),
        ZT_ENTRY(the_first_failure_sticks_and_finish_names_it))
