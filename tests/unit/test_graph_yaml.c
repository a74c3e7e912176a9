/* YAML -> zf_config: core-schema scalars, positions, anchors and their
 * limits, duplicate keys; the public zf_config accessors; merge; JSON;
 * diagnostics. */
#include "harness.h"

#include "graph/loader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static zf_config *parse(const char *text, zf_diag *d)
{
    zfi_src s;
    zf_config *c = NULL;
    if (!zfi_src_identity(&s, "t.yaml", text, strlen(text)))
        return NULL;
    zfi_yaml_parse(&s, d, NULL, 0, &c);
    zfi_src_free(&s);
    return c;
}

ZT_CASE(core_schema_scalars)
{
    static const struct {
        const char *text;
        zf_config_kind kind;
    } cases[] = {
        {"", ZF_CFG_NULL},
        {"~", ZF_CFG_NULL},
        {"null", ZF_CFG_NULL},
        {"NULL", ZF_CFG_NULL},
        {"true", ZF_CFG_BOOL},
        {"False", ZF_CFG_BOOL},
        {"yes", ZF_CFG_STRING},
        {"0", ZF_CFG_INT},
        {"-42", ZF_CFG_INT},
        {"+7", ZF_CFG_INT},
        {"007", ZF_CFG_INT},
        {"0x1F", ZF_CFG_INT},
        {"0o17", ZF_CFG_INT},
        {"0x", ZF_CFG_STRING},
        {"0o8", ZF_CFG_STRING},
        {"1_000", ZF_CFG_STRING},
        {"3.5", ZF_CFG_FLOAT},
        {"1e3", ZF_CFG_FLOAT},
        {"-.5", ZF_CFG_FLOAT},
        {"2.", ZF_CFG_FLOAT},
        {".inf", ZF_CFG_FLOAT},
        {"-.Inf", ZF_CFG_FLOAT},
        {".NaN", ZF_CFG_FLOAT},
        {".", ZF_CFG_STRING},
        {"1e", ZF_CFG_STRING},
        {"16ms", ZF_CFG_STRING},
        {"image/bgr8", ZF_CFG_STRING},
        {"99999999999999999999", ZF_CFG_FLOAT},
        {"0xFFFFFFFFFFFFFFFFFF", ZF_CFG_STRING},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool b;
        int64_t n;
        double f;
        zf_config_kind k = zfi_config_resolve(cases[i].text, &b, &n, &f);
        if (k != cases[i].kind)
            ZT_FAIL("'%s' resolved to %d, expected %d", cases[i].text, k, cases[i].kind);
    }
    zf_config *c = parse("a: 0x1F\nb: 0o17\nc: -.inf\nd: \"true\"\ne: 'null'\nf: !!str 5\n"
                         "g: !!float 5\nh: |\n  12\ni: True\n",
                         NULL);
    ZT_CHECK(c != NULL);
    int64_t v = 0;
    ZT_OK(zf_config_int(c, "a", 0, &v));
    ZT_EQ(v, 31);
    ZT_OK(zf_config_int(c, "b", 0, &v));
    ZT_EQ(v, 15);
    double x = 0;
    ZT_OK(zf_config_float(c, "c", 0, &x));
    ZT_CHECK(isinf(x) && x < 0);
    const char *s = NULL;
    ZT_OK(zf_config_string(c, "d", NULL, &s));
    ZT_STREQ(s, "true");
    ZT_OK(zf_config_string(c, "e", NULL, &s));
    ZT_STREQ(s, "null");
    ZT_OK(zf_config_string(c, "f", NULL, &s));
    ZT_STREQ(s, "5");
    ZT_EQ(zf_config_kind_of(zf_config_get(c, "g")), ZF_CFG_FLOAT);
    ZT_OK(zf_config_string(c, "h", NULL, &s)); /* block scalars are strings */
    ZT_STREQ(s, "12\n");
    bool bv = false;
    ZT_OK(zf_config_bool(c, "i", false, &bv));
    ZT_CHECK(bv);
    zfi_config_free(c);
}

ZT_CASE(positions_and_key_marks)
{
    const char *text = "name: x\n"
                       "list:\n"
                       "  - a\n"
                       "  - {k: v, w: [1, 2]}\n";
    zf_config *c = parse(text, NULL);
    ZT_CHECK(c != NULL);
    ZT_EQ(c->line, 1);
    ZT_EQ(c->col, 1);
    const zf_config *list = zf_config_get(c, "list");
    ZT_EQ(list->line, 3);
    ZT_EQ(list->col, 3);
    ZT_EQ(c->key_marks[1].line, 2);
    ZT_EQ(c->key_marks[1].col, 1);
    const zf_config *m = zf_config_at(list, 1);
    ZT_EQ(m->line, 4);
    ZT_EQ(m->col, 5);
    ZT_EQ(m->key_marks[1].col, 12);
    const zf_config *two = zf_config_at(zf_config_get(m, "w"), 1);
    ZT_EQ(two->line, 4);
    ZT_EQ(two->col, 19);
    ZT_STREQ(two->file, "t.yaml");
    zfi_config_free(c);
}

ZT_CASE(anchors_and_aliases)
{
    zf_config *c = parse("base: &b {x: 1, y: [a, b]}\ncopy: *b\nname: &n hello\nagain: *n\n", NULL);
    ZT_CHECK(c != NULL);
    int64_t v = 0;
    ZT_OK(zf_config_int(c, "copy.x", 0, &v));
    ZT_EQ(v, 1);
    ZT_EQ(zf_config_len(zf_config_get(c, "copy.y")), 2);
    ZT_CHECK(zf_config_get(c, "copy") != zf_config_get(c, "base")); /* a copy */
    ZT_STREQ(zf_config_text(zf_config_get(c, "again")), "hello");
    zfi_config_free(c);

    zf_diag *d = zf_diag_new();
    ZT_CHECK(parse("a: *nowhere\n", d) == NULL);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "alias '*nowhere' refers to no anchor");
    zf_diag_free(d);
}

ZT_CASE(alias_bomb_is_capped)
{
    zfi_buf b;
    zfi_buf_init(&b);
    zfi_buf_puts(&b, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 12; i++) {
        zfi_buf_printf(&b, "a%d: &a%d [", i, i);
        for (int j = 0; j < 10; j++)
            zfi_buf_printf(&b, "%s*a%d", j ? ", " : "", i - 1);
        zfi_buf_puts(&b, "]\n");
    }
    zf_diag *d = zf_diag_new();
    ZT_CHECK(parse(b.s, d) == NULL);
    ZT_EQ(zf_diag_count(d), 1);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "more than 200000 nodes (aliases expanded)");
    zf_diag_free(d);
    zfi_buf_free(&b);
}

/* Issue 17: with no alias, the cap does not speak of aliases. The document
 * is one line of 400 KB (a flow sequence): positions on a long line cost
 * linear time (this took 81 s when each was counted from the line's start). */
ZT_CASE(node_cap_without_aliases_says_so)
{
    zfi_buf b;
    zfi_buf_init(&b);
    zfi_buf_puts(&b, "a: [0");
    for (int i = 0; i < 200001; i++)
        zfi_buf_puts(&b, ",0");
    zfi_buf_puts(&b, "]\n");
    zf_diag *d = zf_diag_new();
    uint64_t t0 = zf_clock_ns();
    ZT_CHECK(parse(b.s, d) == NULL);
    double secs = (double)(zf_clock_ns() - t0) / 1e9;
    printf("  200001 items on one line: %.3f s\n", secs);
    ZT_CHECK(secs < 20.0);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "more than 200000 nodes: refusing it");
    ZT_CHECK(!strstr(zf_diag_get(d, 0)->message, "alias"));
    zf_diag_free(d);
    zfi_buf_free(&b);
}

/* Issue 17: what an alias copies is placed where the alias is used, so an
 * error found in the copy points at the use, not at the anchor. */
ZT_CASE(alias_copies_are_placed_at_their_use)
{
    zf_config *c = parse("base: &b {x: 1, y: [a]}\n\n\ncopy:   *b\n", NULL);
    ZT_CHECK(c != NULL);
    const zf_config *orig = zf_config_get(c, "base.x"), *copy = zf_config_get(c, "copy.x");
    ZT_CHECK(orig && copy);
    ZT_EQ(orig->line, 1);
    ZT_EQ(copy->line, 4);
    ZT_EQ(copy->col, 9);
    ZT_EQ(zf_config_get(c, "copy.y")->line, 4);
    ZT_EQ(zf_config_get(c, "copy")->key_marks ? zf_config_get(c, "copy")->key_marks[0].line : 4, 4);
    zfi_config_free(c);
}

ZT_CASE(depth_is_capped)
{
    zfi_buf b;
    zfi_buf_init(&b);
    for (int i = 0; i < 100000; i++)
        zfi_buf_puts(&b, "[");
    zf_diag *d = zf_diag_new();
    ZT_CHECK(parse(b.s, d) == NULL);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "nests deeper than 128 levels");
    zf_diag_free(d);
    zfi_buf_free(&b);

    /* an alias cannot make a tree deeper than the limit either */
    zfi_buf_init(&b);
    zfi_buf_puts(&b, "a: &a ");
    for (int i = 0; i < 100; i++)
        zfi_buf_puts(&b, "[");
    for (int i = 0; i < 100; i++)
        zfi_buf_puts(&b, "]");
    zfi_buf_puts(&b, "\nb: ");
    for (int i = 0; i < 60; i++)
        zfi_buf_puts(&b, "[");
    zfi_buf_puts(&b, "*a");
    for (int i = 0; i < 60; i++)
        zfi_buf_puts(&b, "]");
    d = zf_diag_new();
    ZT_CHECK(parse(b.s, d) == NULL);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "deeper than 128 levels");
    zf_diag_free(d);
    zfi_buf_free(&b);
}

ZT_CASE(duplicate_and_complex_keys)
{
    zf_diag *d = zf_diag_new();
    zf_config *c = parse("a: 1\nb: 2\na: 3\n{x: 1}: 4\n[y]: 5\nc: 6\n", d);
    ZT_CHECK(c != NULL); /* tolerated in the tree, reported */
    ZT_EQ(zf_diag_count(d), 3);
    ZT_STREQ(zf_diag_get(d, 0)->field, "a");
    ZT_EQ(zf_diag_get(d, 0)->line, 3);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "duplicate key 'a' (first at line 1)");
    ZT_CONTAINS(zf_diag_get(d, 1)->message, "a map key must be a scalar, found a map");
    ZT_CONTAINS(zf_diag_get(d, 2)->message, "found a sequence");
    int64_t v = 0;
    ZT_OK(zf_config_int(c, "a", 0, &v));
    ZT_EQ(v, 1); /* the first one is kept */
    ZT_OK(zf_config_int(c, "c", 0, &v));
    ZT_EQ(v, 6);
    ZT_EQ(zf_config_len(c), 3);
    zfi_config_free(c);
    zf_diag_free(d);
}

ZT_CASE(duplicate_keys_in_a_big_map)
{
    zfi_buf b;
    zfi_buf_init(&b);
    for (int i = 0; i < 50000; i++)
        zfi_buf_printf(&b, "k%d: %d\n", i, i);
    zfi_buf_puts(&b, "k777: again\n");
    zf_diag *d = zf_diag_new();
    zf_config *c = parse(b.s, d);
    ZT_CHECK(c != NULL);
    ZT_EQ(zf_config_len(c), 50000);
    ZT_EQ(zf_diag_count(d), 1);
    ZT_EQ(zf_diag_get(d, 0)->line, 50001);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "duplicate key 'k777' (first at line 778)");
    zfi_config_free(c);
    zf_diag_free(d);
    zfi_buf_free(&b);
}

ZT_CASE(syntax_and_text_errors)
{
    zf_diag *d = zf_diag_new();
    ZT_CHECK(parse("a: [1, 2\nb: 3\n", d) == NULL);
    ZT_EQ(zfi_diag_code(d, 0), ZF_EPARSE);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "invalid YAML");
    ZT_CHECK(parse("a: 1\n---\nb: 2\n", d) == NULL);
    ZT_CONTAINS(zf_diag_get(d, 1)->message, "second YAML document");
    ZT_CHECK(parse("a: \"\x01\"\n", d) == NULL);
    ZT_CONTAINS(zf_diag_get(d, 2)->message, "invalid text");
    ZT_EQ(zf_diag_get(d, 2)->line, 1);
    ZT_EQ(zf_diag_get(d, 2)->col, 5);
    ZT_CHECK(parse("a: \xff\xfe\n", d) == NULL);
    zf_config *t = parse("a: !custom 5\n", d);
    ZT_CHECK(t != NULL); /* reported, the tree is still usable */
    zfi_config_free(t);
    ZT_CONTAINS(zf_diag_get(d, zf_diag_count(d) - 1)->message, "unsupported YAML tag");
    t = parse("a: !!int five\n", d);
    zfi_config_free(t);
    ZT_CONTAINS(zf_diag_get(d, zf_diag_count(d) - 1)->message, "'five' is not a valid !!int");
    zf_diag_free(d);

    zf_config *c = parse("", NULL); /* empty: a null document */
    ZT_CHECK(c != NULL);
    ZT_EQ(c->kind, ZF_CFG_NULL);
    zfi_config_free(c);
}

ZT_CASE(accessors)
{
    zf_config *c = parse("a:\n  b:\n    c: 5\n  x.y: 6\n  s: text\n  f: 1.5\n  n: ~\n"
                         "seq: [x, 2]\n",
                         NULL);
    ZT_CHECK(c != NULL);
    int64_t v = 0;
    ZT_OK(zf_config_int(c, "a.b.c", 0, &v));
    ZT_EQ(v, 5);
    ZT_OK(zf_config_int(c, "a.x.y", 0, &v)); /* a key with a dot */
    ZT_EQ(v, 6);
    ZT_OK(zf_config_int(c, "a.missing", 7, &v));
    ZT_EQ(v, 7);
    ZT_OK(zf_config_int(c, "a.n", 8, &v)); /* null: the default */
    ZT_EQ(v, 8);
    ZT_EQ(zf_config_int(c, "a.s", 9, &v), ZF_ETYPE);
    ZT_EQ(v, 9);
    ZT_CONTAINS(zf_last_error(), "'a.s' is a string, expected an integer");
    double x = 0;
    ZT_OK(zf_config_float(c, "a.b.c", 0, &x)); /* ints read as floats */
    ZT_CHECK(x == 5.0);
    ZT_OK(zf_config_float(c, "a.f", 0, &x));
    ZT_CHECK(x == 1.5);
    const char *s = "def";
    ZT_EQ(zf_config_string(c, "a.f", "def", &s), ZF_ETYPE);
    ZT_STREQ(s, "def");
    bool b = true;
    ZT_EQ(zf_config_bool(c, "a.s", true, &b), ZF_ETYPE);
    ZT_EQ(zf_config_string(c, "x", NULL, NULL), ZF_EINVAL);
    const zf_config *seq = zf_config_get(c, "seq");
    ZT_EQ(zf_config_kind_of(seq), ZF_CFG_SEQ);
    ZT_EQ(zf_config_len(seq), 2);
    ZT_STREQ(zf_config_text(zf_config_at(seq, 1)), "2");
    ZT_CHECK(zf_config_at(seq, 2) == NULL);
    ZT_CHECK(zf_config_key_at(seq, 0) == NULL);
    ZT_STREQ(zf_config_key_at(c, 1), "seq");
    ZT_CHECK(zf_config_text(seq) == NULL);
    ZT_CHECK(zf_config_get(seq, "x") == NULL);
    ZT_EQ(zf_config_kind_of(NULL), ZF_CFG_NULL);
    ZT_EQ(zf_config_len(NULL), 0);
    ZT_OK(zf_config_int(NULL, "a", 3, &v));
    ZT_EQ(v, 3);
    zfi_config_free(c);
}

ZT_CASE(merge_clone_json)
{
    zf_config *hi = parse("a: 1\nm: {x: hi}\nonly_hi: true\n", NULL);
    zf_config *lo = parse("m: {x: lo, y: lo}\na: 0\nonly_lo: [1, 2.5, \"q\\\"\"]\n", NULL);
    zf_config *m = zfi_config_merge(hi, lo);
    char *j = zf_config_to_json(m);
    /* Top-level keys: hi's m replaces lo's m whole (as Zenoh-Flow merges). */
    ZT_STREQ(j, "{\"m\":{\"x\":\"hi\"},\"a\":1,\"only_lo\":[1,2.5,\"q\\\"\"],"
                "\"only_hi\":true}");
    ZT_EQ(m->key_marks[0].line, 1); /* positions follow the values' origin */
    zf_config *cl = zfi_config_clone(m);
    zf_free(j);
    j = zf_config_to_json(cl);
    ZT_CONTAINS(j, "\"only_hi\":true");
    zf_free(j);
    zf_config *n = parse("f: [.inf, .nan, 0.1, 3.0, 1e300]\nz: null\n", NULL);
    j = zf_config_to_json(n);
    ZT_STREQ(j, "{\"f\":[null,null,0.1,3.0,1e+300],\"z\":null}");
    zf_free(j);
    zf_config *only = zfi_config_merge(NULL, lo);
    ZT_EQ(zf_config_len(only), 3);
    ZT_CHECK(zfi_config_merge(NULL, NULL) == NULL);
    zf_config *set = zfi_config_new(ZF_CFG_MAP, NULL, 0, 0);
    ZT_CHECK(zfi_config_map_set(set, "k", zfi_config_scalar("1", false, NULL, 0, 0)));
    ZT_CHECK(zfi_config_map_set(set, "k", zfi_config_scalar("2", false, NULL, 0, 0)));
    ZT_EQ(zf_config_len(set), 1);
    ZT_EQ(zfi_config_member(set, "k")->i, 2);
    zf_config *stray = zfi_config_new(ZF_CFG_NULL, NULL, 0, 0);
    ZT_CHECK(!zfi_config_seq_push(set, stray)); /* not a sequence */
    zfi_config_free(stray);
    zfi_config_free(set);
    zfi_config_free(only);
    zfi_config_free(n);
    zfi_config_free(cl);
    zfi_config_free(m);
    zfi_config_free(hi);
    zfi_config_free(lo);
}

ZT_CASE(diagnostics)
{
    zf_diag *d = zf_diag_new();
    ZT_EQ(zfi_diag_add(d, ZF_EINVAL, "f.yaml", 3, 4, "links[0]", "bad %s", "thing"), ZF_EINVAL);
    zfi_diag_add(d, ZF_EINVAL, "f.yaml", 3, 4, "links[0]", "bad %s", "thing"); /* deduplicated */
    zfi_diag_add(d, ZF_ENOTFOUND, NULL, 0, 0, NULL, "no file");
    ZT_EQ(zfi_diag_add(NULL, ZF_EPARSE, "x", 1, 1, "", "ignored"), ZF_EPARSE);
    ZT_EQ(zf_diag_count(d), 2);
    ZT_EQ(zfi_diag_code(d, 1), ZF_ENOTFOUND);
    ZT_EQ(zfi_diag_code(d, 9), ZF_OK);
    char *s = zf_diag_format(d);
    ZT_STREQ(s, "f.yaml:3:4: links[0]: bad thing\n<descriptor>: no file\n");
    free(s);
    zf_config at = {.file = "g.yaml", .line = 7, .col = 2};
    zfi_diag_at(d, ZF_ETYPE, &at, "x", "typed");
    ZT_EQ(zf_diag_get(d, 2)->line, 7);
    ZT_CHECK(zf_diag_get(d, 3) == NULL);
    zf_diag *copy = zf_diag_new();
    zfi_diag_append(copy, d);
    ZT_EQ(zf_diag_count(copy), 3);
    zf_diag_free(copy);
    for (int i = 0; i < 1200; i++)
        zfi_diag_add(d, ZF_EINVAL, "f", (unsigned)i + 10, 1, "", "many");
    ZT_EQ(zf_diag_count(d), 1000);
    s = zf_diag_format(d);
    ZT_CONTAINS(s, "the rest are not shown");
    free(s);
    zf_diag_free(d);
    zf_diag_free(NULL);
    ZT_EQ(zf_diag_count(NULL), 0);
    s = zf_diag_format(NULL);
    ZT_STREQ(s, "");
    free(s);
}

ZT_MAIN(ZT_ENTRY(core_schema_scalars), ZT_ENTRY(positions_and_key_marks),
        ZT_ENTRY(anchors_and_aliases), ZT_ENTRY(alias_bomb_is_capped),
        ZT_ENTRY(node_cap_without_aliases_says_so), ZT_ENTRY(alias_copies_are_placed_at_their_use),
        ZT_ENTRY(depth_is_capped), ZT_ENTRY(duplicate_and_complex_keys),
        ZT_ENTRY(duplicate_keys_in_a_big_map), ZT_ENTRY(syntax_and_text_errors),
        ZT_ENTRY(accessors), ZT_ENTRY(merge_clone_json), ZT_ENTRY(diagnostics))
