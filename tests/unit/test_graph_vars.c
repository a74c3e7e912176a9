/* `vars` and {{ VAR }} substitution, as Zenoh-Flow does it (on the text,
 * before YAML), with errors that still point into the file as written. */
#include "harness.h"

#include "graph/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FLOW_TAIL                                                                                  \
    "sinks:\n"                                                                                     \
    "  - {id: dst, library: dst.so, inputs: [in]}\n"                                               \
    "links:\n"                                                                                     \
    "  - {from: {node: src, output: out}, to: {node: dst, input: in}}\n"

static zf_err load(const char *text, const char *const *vars, size_t n, const char *dir, zf_diag *d,
                   zf_flow **f)
{
    zf_flow_options opt = {.vars = vars, .n_vars = n};
    zf_err rc =
        zf_flow_load_string(text, strlen(text), "flow.yaml", dir ? dir : "/base", &opt, d, f);
    if (getenv("ZT_VERBOSE")) {
        char *s = zf_diag_format(d);
        fprintf(stderr, "%s", s);
        free(s);
    }
    return rc;
}

ZT_CASE(spacing_and_forms)
{
    const char *text = "name: \"{{NAME}}-{{ NAME }}-{{    NAME }}-{{{ NAME }}}-{{& NAME}}\"\n"
                       "vars:\n"
                       "  NAME: n\n"
                       "  EMPTY:\n"
                       "sources:\n"
                       "  - id: src{{ EMPTY }}{{! a comment }}\n"
                       "    library: src.so\n"
                       "    outputs: [out]\n" FLOW_TAIL;
    zf_flow *f = NULL;
    ZT_OK(load(text, NULL, 0, NULL, NULL, &f));
    ZT_STREQ(zf_flow_name(f), "n-n-n-n-n");
    ZT_STREQ(f->nodes[0].id, "src"); /* a null value is the empty string */
    zf_flow_free(f);
}

ZT_CASE(options_override_vars)
{
    const char *text = "name: \"{{ NAME }}\"\n"
                       "vars:\n"
                       "  NAME: from-file\n"
                       "  LIB: file.so\n"
                       "sources:\n"
                       "  - {id: src, library: \"{{ LIB }}\", outputs: [out]}\n" FLOW_TAIL;
    const char *vars[] = {"NAME=from-options", "UNUSED=1", "LIB=a=b.so"};
    zf_flow *f = NULL;
    ZT_OK(load(text, vars, 3, NULL, NULL, &f));
    ZT_STREQ(zf_flow_name(f), "from-options");
    ZT_STREQ(f->nodes[0].library, "/base/a=b.so"); /* only the first '=' splits */
    zf_flow_free(f);
}

ZT_CASE(substitution_is_textual)
{
    /* as in Zenoh-Flow, the text is rendered before it is YAML: a value can
     * bring structure, and an unquoted tag is fine */
    const char *text = "name: t\n"
                       "vars: {PORTS: \"[a, b]\", LIB: x.so}\n"
                       "sources:\n"
                       "  - id: src\n"
                       "    library: {{ LIB }}\n"
                       "    outputs: {{ PORTS }}\n"
                       "sinks:\n"
                       "  - {id: dst, library: lib/{{ LIB }}, inputs: [a, b]}\n"
                       "links:\n"
                       "  - {from: {node: src, output: a}, to: {node: dst, input: a}}\n"
                       "  - {from: {node: src, output: b}, to: {node: dst, input: b}}\n";
    zf_flow *f = NULL;
    ZT_OK(load(text, NULL, 0, NULL, NULL, &f));
    ZT_EQ(f->nodes[0].n_outputs, 2);
    ZT_STREQ(f->nodes[0].library, "/base/x.so");
    ZT_STREQ(f->nodes[1].library, "/base/lib/x.so");
    zf_flow_free(f);
}

ZT_CASE(positions_survive_substitution)
{
    /* the duplicate 'x' is after a long substituted value on the same line:
     * its column is the one in the file as written */
    const char *text = "name: t\n"
                       "vars:\n"
                       "  P: a_rather_long_port_name_that_shifts_columns\n"
                       "sources:\n"
                       "  - id: src\n"
                       "    library: src.so\n"
                       "    outputs: [\"{{ P }}\", x, x]\n" FLOW_TAIL;
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load(text, NULL, 0, NULL, d, &f), ZF_EINVAL);
    const zf_diag_entry *e = zf_diag_get(d, 0);
    ZT_STREQ(e->field, "sources[0].outputs[2]");
    ZT_CONTAINS(e->message, "duplicate output id 'x'");
    ZT_EQ(e->line, 7);
    ZT_EQ(e->col, 29);
    zf_diag_free(d);
}

ZT_CASE(undefined_vars)
{
    const char *text = "name: t\n"
                       "# {{ IN_A_COMMENT }} does not matter\n"
                       "sources:\n"
                       "  - id: src  # {{ ALSO_IGNORED }}\n"
                       "    library: \"{{ DIR }}/src.so\"\n"
                       "    outputs: [out]\n"
                       "    configuration: {k: \"x{{ K }}\"}\n" FLOW_TAIL "mapping:\n"
                       "  \"{{ WORKER }}\": [src]\n";
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load(text, NULL, 0, NULL, d, &f), ZF_EINVAL);
    ZT_CHECK(f == NULL);
    ZT_EQ(zf_diag_count(d), 4); /* three undefined + the empty worker name */
    const zf_diag_entry *e = zf_diag_get(d, 0);
    ZT_EQ(e->line, 5);
    ZT_EQ(e->col, 15);
    ZT_STREQ(e->field, "sources[0].library");
    ZT_CONTAINS(e->message, "undefined variable 'DIR': define it under 'vars' or pass DIR=value");
    e = zf_diag_get(d, 1);
    ZT_EQ(e->line, 7);
    ZT_STREQ(e->field, "sources[0].configuration.k");
    ZT_CONTAINS(e->message, "'K'");
    e = zf_diag_get(d, 2);
    ZT_EQ(e->line, 13);
    ZT_EQ(e->col, 4);
    ZT_STREQ(e->field, "mapping.");
    ZT_CONTAINS(e->message, "'WORKER'");
    ZT_CONTAINS(zf_diag_get(d, 3)->message, "empty worker name");
    zf_diag_free(d);
}

ZT_CASE(tag_errors)
{
    const char *text = "name: t\n"
                       "description: \"{{ }}\"\n"
                       "other: \"{{ open\"\n";
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_CHECK(load(text, NULL, 0, NULL, d, &f) != ZF_OK);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "unsupported mustache tag '{{ }}'");
    ZT_EQ(zf_diag_get(d, 0)->line, 2);
    ZT_EQ(zf_diag_get(d, 0)->col, 15);
    ZT_CONTAINS(zf_diag_get(d, 1)->message, "unclosed mustache tag");
    ZT_EQ(zf_diag_get(d, 1)->line, 3);
    ZT_EQ(zf_diag_get(d, 1)->col, 9);
    zf_diag_free(d);
}

ZT_CASE(bad_vars_section)
{
    const char *text = "name: t\n"
                       "vars:\n"
                       "  LIST: [1, 2]\n"
                       "  \"A B\": x\n"
                       "sources:\n"
                       "  - {id: src, library: src.so, outputs: [out]}\n" FLOW_TAIL;
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load(text, NULL, 0, NULL, d, &f), ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 2);
    ZT_STREQ(zf_diag_get(d, 0)->field, "vars.LIST");
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "expected a text value for variable 'LIST'");
    ZT_STREQ(zf_diag_get(d, 1)->field, "vars.A B");
    ZT_EQ(zf_diag_get(d, 1)->line, 4);
    zf_diag_free(d);
    d = zf_diag_new();
    const char *seq = "name: t\nvars: [A]\n";
    ZT_EQ(load(seq, NULL, 0, NULL, d, &f), ZF_EINVAL);
    ZT_STREQ(zf_diag_get(d, 0)->field, "vars");
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "expected a map, found a sequence");
    zf_diag_free(d);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

ZT_CASE(node_files_take_the_flow_vars)
{
    char dir[] = "/tmp/zf_graph_vars_XXXXXX";
    ZT_CHECK(mkdtemp(dir) != NULL);
    char path[256], sub[256];
    snprintf(sub, sizeof sub, "%s/nodes", dir);
    mkdir(sub, 0755);
    /* the node file's own vars are defaults; the flow's override them */
    snprintf(path, sizeof path, "%s/nodes/src.yaml", dir);
    write_file(path, "vars:\n  LIB: own.so\n  KIND: own\n"
                     "library: \"{{ LIB }}\"\n"
                     "outputs: [out]\n"
                     "configuration: {kind: \"{{ KIND }}\", build: \"{{ BUILD }}\"}\n");
    snprintf(path, sizeof path, "%s/flow.yaml", dir);
    write_file(path, "name: t\n"
                     "vars: {LIB: flow.so, BUILD: debug}\n"
                     "sources:\n"
                     "  - {id: src, descriptor: nodes/src.yaml}\n" FLOW_TAIL);
    const char *opts[] = {"BUILD=release"};
    zf_flow_options opt = {.vars = opts, .n_vars = 1};
    zf_flow *f = NULL;
    zf_diag *d = zf_diag_new();
    ZT_OK(zf_flow_load(path, &opt, d, &f));
    char want[300];
    snprintf(want, sizeof want, "%s/nodes/flow.so", dir);
    ZT_STREQ(f->nodes[0].library, want);
    const char *s = NULL;
    ZT_OK(zf_config_string(f->nodes[0].config, "kind", NULL, &s));
    ZT_STREQ(s, "own");
    ZT_OK(zf_config_string(f->nodes[0].config, "build", NULL, &s));
    ZT_STREQ(s, "release");
    zf_flow_free(f);

    /* an undefined variable in a node file names that file */
    snprintf(path, sizeof path, "%s/nodes/src.yaml", dir);
    write_file(path, "library: \"{{ NOPE }}.so\"\noutputs: [out]\n");
    snprintf(path, sizeof path, "%s/flow.yaml", dir);
    ZT_EQ(zf_flow_load(path, NULL, d, &f), ZF_EINVAL);
    const zf_diag_entry *e = zf_diag_get(d, 0);
    ZT_CONTAINS(e->file, "/nodes/src.yaml");
    ZT_EQ(e->line, 1);
    ZT_EQ(e->col, 11);
    ZT_STREQ(e->field, "library");
    zf_diag_free(d);

    snprintf(path, sizeof path, "%s/nodes/src.yaml", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/flow.yaml", dir);
    unlink(path);
    rmdir(sub);
    rmdir(dir);
}

ZT_CASE(render_positions)
{
    zfi_vars v = {0};
    ZT_CHECK(zfi_vars_set(&v, "A", "1234567890"));
    ZT_CHECK(zfi_vars_set(&v, "A", "12345"));
    ZT_STREQ(zfi_vars_get(&v, "A"), "12345");
    const char *text = "x: {{A}} y\r\nz: é{{ A }}w\n";
    zfi_src s = {.file = "f"};
    zfi_unbound *u = NULL;
    size_t n = 0;
    ZT_OK(zfi_render(&s, text, strlen(text), &v, NULL, &u, &n));
    ZT_EQ(n, 0);
    ZT_STREQ(s.text, "x: 12345 y\r\nz: é12345w\n");
    unsigned line, col;
    zfi_src_pos(&s, zfi_src_offset(&s, 0, 9), &line, &col); /* 'y' */
    ZT_EQ(line, 1);
    ZT_EQ(col, 10);
    zfi_src_pos(&s, zfi_src_offset(&s, 1, 5), &line, &col); /* inside the value */
    ZT_EQ(line, 2);
    ZT_EQ(col, 5);
    zfi_src_pos(&s, zfi_src_offset(&s, 1, 9), &line, &col); /* 'w' */
    ZT_EQ(line, 2);
    ZT_EQ(col, 12);
    zfi_src_free(&s);
    zfi_vars_free(&v);
    char *blank = zfi_placeholder_text(text, strlen(text));
    ZT_STREQ(blank, "x: xxxxx y\r\nz: éxxxxxxxw\n");
    free(blank);
}

ZT_MAIN(ZT_ENTRY(spacing_and_forms), ZT_ENTRY(options_override_vars),
        ZT_ENTRY(substitution_is_textual), ZT_ENTRY(positions_survive_substitution),
        ZT_ENTRY(undefined_vars), ZT_ENTRY(tag_errors), ZT_ENTRY(bad_vars_section),
        ZT_ENTRY(node_files_take_the_flow_vars), ZT_ENTRY(render_positions))
