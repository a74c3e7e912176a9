/* Bad descriptors: each file of tests/descriptors/bad/MANIFEST must fail
 * with its code, and report its error at the expected file:line:col, field,
 * with the expected phrase. A file with several problems reports them all. */
#include "harness.h"

#include "graph/flow.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char root[4096];

static const char *descriptors(void)
{
    const char *src = getenv("ZF_SOURCE_DIR");
    if (src)
        snprintf(root, sizeof root, "%s/tests/descriptors", src);
    else
        snprintf(root, sizeof root, "%.*s/tests/descriptors",
                 (int)(strstr(__FILE__, "/tests/unit/") - __FILE__), __FILE__);
    return root;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static const char *ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix) && (a == b || s[a - b - 1] == '/') ? s : NULL;
}

static bool entry_matches(const zf_diag_entry *e, const char *file, unsigned line, unsigned col,
                          const char *field, const char *phrase)
{
    return ends_with(e->file, file) && e->line == line && e->col == col &&
           (!strcmp(field, "*") || !strcmp(e->field, field)) && strstr(e->message, phrase);
}

static int check_case(char *line_text)
{
    char *parts[5] = {0};
    size_t n = 0;
    for (char *p = line_text; n < 5; n++) {
        char *bar = strchr(p, '|');
        if (bar)
            *bar = '\0';
        parts[n] = trim(p);
        if (!bar) {
            n++;
            break;
        }
        p = bar + 1;
    }
    if (n != 5) {
        fprintf(stderr, "  bad MANIFEST line: %s\n", line_text);
        return 1;
    }
    const char *file = parts[0], *code = parts[1], *where = parts[2], *field = parts[3];
    const char *phrase = parts[4];
    char wfile[256];
    unsigned wl = 0, wc = 0;
    if (sscanf(where, "%255[^:]:%u:%u", wfile, &wl, &wc) != 3) {
        fprintf(stderr, "  bad place in MANIFEST: %s\n", where);
        return 1;
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/bad/%s", descriptors(), file);
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    zf_err rc = zf_flow_load(path, NULL, d, &f);
    int bad = 0;
    if (f || strcmp(zf_errname(rc), code)) {
        fprintf(stderr, "  %s: returned %s, expected %s\n", file, zf_errname(rc), code);
        bad = 1;
    }
    bool found = false;
    for (size_t i = 0; i < zf_diag_count(d) && !found; i++)
        found = entry_matches(zf_diag_get(d, i), wfile, wl, wc, field, phrase);
    if (!found) {
        char *all = zf_diag_format(d);
        fprintf(stderr, "  %s: no error at %s field '%s' with '%s'; got:\n%s", file, where, field,
                phrase, all);
        free(all);
        bad = 1;
    }
    /* the returned code is the first error's */
    if (zf_diag_count(d) && rc != zfi_diag_code(d, 0)) {
        fprintf(stderr, "  %s: returned %s but the first error is %s\n", file, zf_errname(rc),
                zf_errname(zfi_diag_code(d, 0)));
        bad = 1;
    }
    zf_flow_free(f);
    zf_diag_free(d);
    return bad;
}

ZT_CASE(manifest)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/bad/MANIFEST", descriptors());
    FILE *m = fopen(path, "r");
    ZT_CHECK(m != NULL);
    char line[1024];
    int cases = 0, failed = 0;
    while (fgets(line, sizeof line, m)) {
        char *t = trim(line);
        if (!*t || *t == '#')
            continue;
        cases++;
        failed += check_case(t);
    }
    fclose(m);
    printf("     %d bad descriptors, %d failed\n", cases, failed);
    ZT_CHECK(cases >= 25);
    ZT_EQ(failed, 0);
}

ZT_CASE(every_problem_is_reported)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/multiple_problems.yaml", descriptors());
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(zf_flow_load(path, NULL, d, &f), ZF_EINVAL);
    ZT_CHECK(f == NULL);
    static const struct {
        unsigned line, col;
        const char *field, *phrase;
    } want[] = {
        {6, 13, "sources[0].period", "'16 fortnights' is not a duration"},
        {12, 5, "operators[0].inputz", "did you mean 'inputs'?"},
        {10, 5, "operators[0].inputs", "'detect' is an operator and declares no input"},
        {21, 5, "links[0]", "type mismatch"},
        {25, 23, "links[1].queue.capacity", "found an integer '0'"},
        {25, 34, "links[1].queue.policy", "'newest' is not valid here"},
        {26, 18, "links[2].from.node", "did you mean 'camera'?"},
        {27, 16, "links[2].to.node", "did you mean 'screen'?"},
        {29, 20, "mapping.edge_1[1]", "cannot map 'ghost'"},
    };
    ZT_EQ(zf_diag_count(d), sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const zf_diag_entry *e = zf_diag_get(d, i);
        ZT_CHECK(entry_matches(e, "multiple_problems.yaml", want[i].line, want[i].col,
                               want[i].field, want[i].phrase));
    }
    char *text = zf_diag_format(d);
    ZT_CONTAINS(text, "multiple_problems.yaml:6:13: sources[0].period: '16 fortnights'");
    free(text);
    /* zf_last_error names the first problem */
    ZT_CONTAINS(zf_last_error(), "sources[0].period");
    zf_diag_free(d);
}

ZT_CASE(errors_without_a_diag)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/bad/type_mismatch.yaml", descriptors());
    zf_flow *f = (zf_flow *)1;
    ZT_EQ(zf_flow_load(path, NULL, NULL, &f), ZF_ETYPE);
    ZT_CHECK(f == NULL);
    ZT_CONTAINS(zf_last_error(), "type_mismatch.yaml:14:5: links[0]: type mismatch");
}

ZT_CASE(missing_file)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(zf_flow_load("/nonexistent/flow.yaml", NULL, d, &f), ZF_ENOTFOUND);
    ZT_EQ(zf_diag_count(d), 1);
    ZT_STREQ(zf_diag_get(d, 0)->file, "/nonexistent/flow.yaml");
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "No such file");
    /* a directory is not a descriptor */
    ZT_EQ(zf_flow_load(descriptors(), NULL, d, &f), ZF_EINVAL);
    ZT_CONTAINS(zf_diag_get(d, 1)->message, "Is a directory");
    ZT_EQ(zf_flow_load(NULL, NULL, d, &f), ZF_EINVAL);
    zf_diag_free(d);
}

ZT_CASE(bad_option_vars)
{
    const char *text = "name: x\n";
    const char *vars[] = {"NOEQUALS", "=empty"};
    zf_flow_options opt = {.vars = vars, .n_vars = 2};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(zf_flow_load_string(text, strlen(text), "x.yaml", NULL, &opt, d, &f), ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 2);
    ZT_STREQ(zf_diag_get(d, 0)->field, "vars");
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "expected KEY=VALUE");
    zf_flow_options bad = {.vars = NULL, .n_vars = 3};
    ZT_EQ(zf_flow_load_string(text, strlen(text), "x.yaml", NULL, &bad, d, &f), ZF_EINVAL);
    zf_diag_free(d);
}

/* A chain of `levels` composites in dir; returns the flow's path. */
static void chain(const char *dir, int levels, char *flow, size_t size)
{
    char path[512];
    for (int i = 0; i <= levels; i++) {
        snprintf(path, sizeof path, "%s/c%d.yaml", dir, i);
        FILE *f = fopen(path, "w");
        if (!f)
            return;
        if (i < levels)
            fprintf(f,
                    "inputs: [{id: in, node: x, input: in}]\n"
                    "outputs: [{id: out, node: x, output: out}]\n"
                    "operators: [{id: x, descriptor: c%d.yaml}]\n"
                    "links: []\n",
                    i + 1);
        else
            fprintf(f, "library: leaf.so\ninputs: [in]\noutputs: [out]\n");
        fclose(f);
    }
    snprintf(flow, size, "%s/flow.yaml", dir);
    FILE *f = fopen(flow, "w");
    if (!f)
        return;
    fprintf(f, "name: chain\n"
               "sources: [{id: s, library: s.so, outputs: [o]}]\n"
               "operators: [{id: c, descriptor: c0.yaml}]\n"
               "sinks: [{id: d, library: d.so, inputs: [i]}]\n"
               "links:\n"
               "  - {from: {node: s, output: o}, to: {node: c, input: in}}\n"
               "  - {from: {node: c, output: out}, to: {node: d, input: i}}\n");
    fclose(f);
}

static void unchain(const char *dir, int levels)
{
    char path[512];
    for (int i = 0; i <= levels; i++) {
        snprintf(path, sizeof path, "%s/c%d.yaml", dir, i);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/flow.yaml", dir);
    unlink(path);
    rmdir(dir);
}

ZT_CASE(composites_nest_deep_but_not_too_deep)
{
    char dir[] = "/tmp/zf_graph_chain_XXXXXX", flow[600];
    ZT_CHECK(mkdtemp(dir) != NULL);
    chain(dir, 30, flow, sizeof flow);
    zf_flow *f = NULL;
    zf_diag *d = zf_diag_new();
    ZT_OK(zf_flow_load(flow, NULL, d, &f));
    ZT_EQ(f->n_nodes, 3);
    ZT_CHECK(strncmp(f->nodes[1].id, "c>x>x>x>", 8) == 0);
    zf_flow_free(f);
    unchain(dir, 30);

    ZT_CHECK(mkdtemp(strcpy(dir, "/tmp/zf_graph_chain_XXXXXX")) != NULL);
    chain(dir, 80, flow, sizeof flow);
    ZT_EQ(zf_flow_load(flow, NULL, d, &f), ZF_EINVAL);
    ZT_CHECK(f == NULL);
    bool found = false;
    for (size_t i = 0; i < zf_diag_count(d); i++)
        found = found || strstr(zf_diag_get(d, i)->message, "nest deeper than 64 levels");
    ZT_CHECK(found);
    zf_diag_free(d);
    unchain(dir, 80);
}

ZT_MAIN(ZT_ENTRY(manifest), ZT_ENTRY(every_problem_is_reported), ZT_ENTRY(errors_without_a_diag),
        ZT_ENTRY(missing_file), ZT_ENTRY(bad_option_vars),
        ZT_ENTRY(composites_nest_deep_but_not_too_deep))
