/* Zenoh-Flow's own descriptor files (tests/compat/zenoh-flow/) load as
 * Zenoh-Flow loads them: flattening, configuration priorities, mapping,
 * recursion, and a clear refusal of the Zenoh built-in nodes. */
#include "harness.h"

#include "graph/flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZT_ARRAY(a) (sizeof(a) / sizeof((a)[0]))

static char dir[4096];

/* The source tree: $ZF_SOURCE_DIR, else where this file was compiled from. */
static const char *corpus(void)
{
    const char *src = getenv("ZF_SOURCE_DIR");
    if (src)
        snprintf(dir, sizeof dir, "%s/tests/compat/zenoh-flow", src);
    else
        snprintf(dir, sizeof dir, "%.*s/tests/compat/zenoh-flow",
                 (int)(strstr(__FILE__, "/tests/unit/") - __FILE__), __FILE__);
    return dir;
}

static zf_err load(const char *file, const char *const *vars, size_t n, zf_diag *d, zf_flow **f)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", corpus(), file);
    zf_flow_options opt = {.vars = vars, .n_vars = n};
    zf_err rc = zf_flow_load(path, &opt, d, f);
    if (getenv("ZT_VERBOSE")) {
        char *s = zf_diag_format(d);
        fprintf(stderr, "%s", s);
        free(s);
    }
    return rc;
}

static const zfi_node *node(const zf_flow *f, const char *id)
{
    long i = zfi_flow_find(f, id);
    return i < 0 ? NULL : &f->nodes[i];
}

static const char *cfg(const zf_flow *f, const char *id, const char *key)
{
    const zfi_node *n = node(f, id);
    const char *v = NULL;
    if (!n || zf_config_string(n->config, key, NULL, &v) != ZF_OK)
        return "(error)";
    return v ? v : "(absent)";
}

static bool has_link(const zf_flow *f, const char *from, const char *out, const char *to,
                     const char *in)
{
    for (size_t i = 0; i < f->n_links; i++) {
        const zfi_link *l = &f->links[i];
        if (!strcmp(f->nodes[l->from].id, from) &&
            !strcmp(f->nodes[l->from].outputs[l->from_port].name, out) &&
            !strcmp(f->nodes[l->to].id, to) && !strcmp(f->nodes[l->to].inputs[l->to_port].name, in))
            return true;
    }
    return false;
}

static const zf_diag_entry *find_entry(const zf_diag *d, const char *field, const char *phrase)
{
    for (size_t i = 0; i < zf_diag_count(d); i++) {
        const zf_diag_entry *e = zf_diag_get(d, i);
        if (!strcmp(e->field, field) && strstr(e->message, phrase))
            return e;
    }
    return NULL;
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

ZT_CASE(data_flow_flattens)
{
    char base[4300];
    snprintf(base, sizeof base, "BASE_DIR=%s", corpus());
    const char *vars[] = {base, "RUNTIME_1=edge_1", "RUNTIME_2=edge_2",
                          "RUNTIME_COMPOSITE=cloud_1"};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(load("data-flow.yml", vars, 4, d, &f));
    ZT_EQ(zf_diag_count(d), 0);
    ZT_STREQ(zf_flow_name(f), "test");

    static const char *const ids[] = {
        "source-1",
        "source-2",
        "source-composite",
        "operator-1",
        "operator-2",
        "operator-composite>sub-operator-1",
        "operator-composite>sub-operator-composite>sub-sub-operator-1",
        "operator-composite>sub-operator-composite>sub-sub-operator-2",
        "operator-composite>sub-operator-2",
        "sink-1",
        "sink-2",
        "sink-composite",
    };
    ZT_EQ(f->n_nodes, ZT_ARRAY(ids));
    for (size_t i = 0; i < ZT_ARRAY(ids); i++)
        ZT_STREQ(f->nodes[i].id, ids[i]);

    /* links, as Zenoh-Flow's own test expects them: the inner nodes' port
     * names at a composite's boundary */
    ZT_EQ(f->n_links, 11);
    ZT_CHECK(has_link(f, "source-1", "source-out", "operator-1", "operator-in"));
    ZT_CHECK(has_link(f, "operator-1", "operator-out", "sink-1", "sink-in"));
    ZT_CHECK(has_link(f, "source-2", "source-out", "operator-2", "operator-in"));
    ZT_CHECK(has_link(f, "operator-2", "operator-out", "sink-2", "sink-in"));
    ZT_CHECK(has_link(f, "source-composite", "source-composite-out-1",
                      "operator-composite>sub-operator-1", "sub-operator-1-in-1"));
    ZT_CHECK(has_link(f, "source-composite", "source-composite-out-2",
                      "operator-composite>sub-operator-1", "sub-operator-1-in-2"));
    ZT_CHECK(has_link(f, "operator-composite>sub-operator-2", "sub-operator-2-out-1",
                      "sink-composite", "sink-composite-in-1"));
    ZT_CHECK(has_link(f, "operator-composite>sub-operator-2", "sub-operator-2-out-2",
                      "sink-composite", "sink-composite-in-2"));
    ZT_CHECK(has_link(f, "operator-composite>sub-operator-1", "sub-operator-1-out",
                      "operator-composite>sub-operator-composite>sub-sub-operator-1",
                      "sub-sub-operator-1-in"));
    ZT_CHECK(has_link(f, "operator-composite>sub-operator-composite>sub-sub-operator-2",
                      "sub-sub-operator-2-out", "operator-composite>sub-operator-2",
                      "sub-operator-2-in"));
    ZT_CHECK(has_link(
        f, "operator-composite>sub-operator-composite>sub-sub-operator-1", "sub-sub-operator-1-out",
        "operator-composite>sub-operator-composite>sub-sub-operator-2", "sub-sub-operator-2-in"));

    /* configuration: entry in flow > flow > entry in composite > composite > node file */
    ZT_STREQ(cfg(f, "source-1", "foo"), "global-outer");
    ZT_STREQ(cfg(f, "source-composite", "foo"), "global-outer");
    ZT_STREQ(cfg(f, "source-composite", "bar"), "re-reverse");
    ZT_STREQ(cfg(f, "sink-composite", "bar"), "reverse");
    ZT_STREQ(cfg(f, "operator-1", "foo"), "global-outer");
    const char *sub1 = "operator-composite>sub-operator-1";
    ZT_STREQ(cfg(f, sub1, "foo"), "global-outer");
    ZT_STREQ(cfg(f, sub1, "quux"), "global-inner");
    ZT_STREQ(cfg(f, sub1, "bar"), "composite-outer");
    ZT_STREQ(cfg(f, sub1, "buzz"), "(absent)");
    ZT_EQ(zf_config_len(node(f, sub1)->config), 3);
    const char *ss1 = "operator-composite>sub-operator-composite>sub-sub-operator-1";
    ZT_STREQ(cfg(f, ss1, "foo"), "global-outer");
    ZT_STREQ(cfg(f, ss1, "quux"), "global-inner");
    ZT_STREQ(cfg(f, ss1, "bar"), "composite-outer");
    ZT_STREQ(cfg(f, ss1, "buzz"), "composite-inner");
    ZT_STREQ(cfg(f, ss1, "baz"), "leaf");
    ZT_EQ(zf_config_len(node(f, ss1)->config), 5);
    const char *ss2 = "operator-composite>sub-operator-composite>sub-sub-operator-2";
    ZT_STREQ(cfg(f, ss2, "buzz"), "composite-inner");
    ZT_STREQ(cfg(f, ss2, "baz"), "(absent)");
    ZT_EQ(zf_config_len(node(f, ss2)->config), 4);
    ZT_STREQ(cfg(f, "operator-composite>sub-operator-2", "bar"), "composite-outer");

    /* descriptions: the entry's wins over the node file's */
    ZT_STREQ(node(f, "operator-1")->description, "Outer description");
    ZT_STREQ(node(f, "operator-2")->description, "operator");
    ZT_STREQ(node(f, ss1)->description, "sub-leaf-operator-1");

    /* libraries resolve against the node file's folder */
    char lib[4300];
    snprintf(lib, sizeof lib, "%s/source.so", corpus());
    ZT_STREQ(node(f, "source-1")->library, lib);
    snprintf(lib, sizeof lib, "%s/sub-sub-operator-2.so", corpus());
    ZT_STREQ(node(f, ss2)->library, lib);

    /* mapping: a composite's id maps every node it flattens to */
    ZT_STREQ(node(f, "source-1")->worker, "edge_1");
    ZT_STREQ(node(f, "sink-2")->worker, "edge_2");
    ZT_STREQ(node(f, "source-composite")->worker, "cloud_1");
    ZT_STREQ(node(f, "sink-composite")->worker, "cloud_1");
    ZT_STREQ(node(f, sub1)->worker, "cloud_1");
    ZT_STREQ(node(f, ss1)->worker, "cloud_1");
    ZT_STREQ(node(f, ss2)->worker, "cloud_1");
    ZT_STREQ(node(f, "operator-composite>sub-operator-2")->worker, "cloud_1");
    ZT_CHECK(node(f, "source-2")->worker == NULL);
    ZT_CHECK(node(f, "operator-1")->worker == NULL);
    ZT_CHECK(node(f, "sink-1")->worker == NULL);
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_CASE(data_flow_needs_its_vars)
{
    /* without BASE_DIR the node files are looked up at the root: not found */
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    const char *vars[] = {"RUNTIME_1=a", "RUNTIME_2=b", "RUNTIME_COMPOSITE=c"};
    ZT_EQ(load("data-flow.yml", vars, 3, d, &f), ZF_ENOTFOUND);
    ZT_CHECK(f == NULL);
    const zf_diag_entry *e = find_entry(d, "sources[0].descriptor", "/source.yml");
    ZT_CHECK(e != NULL);
    ZT_EQ(e->line, 15);
    ZT_EQ(e->col, 17);
    zf_diag_free(d);
}

ZT_CASE(recursion_is_refused)
{
    char base[4300];
    snprintf(base, sizeof base, "BASE_DIR=%s", corpus());
    const char *vars[] = {base, "SCHEME=file://"};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_CHECK(load("data-flow-recursion.yml", vars, 2, d, &f) != ZF_OK);
    ZT_CHECK(f == NULL);
    const zf_diag_entry *e = find_entry(d, "operators[1].descriptor", "recursion");
    ZT_CHECK(e != NULL);
    ZT_STREQ(base_of(e->file), "operator-infinite.yml");
    ZT_EQ(e->line, 24);
    ZT_EQ(e->col, 17);
    ZT_CONTAINS(e->message, "operator-infinite.yml -> operator-infinite.yml");
    zf_diag_free(d);
}

ZT_CASE(duplicate_composite_is_no_recursion)
{
    char base[4300];
    snprintf(base, sizeof base, "BASE_DIR=%s", corpus());
    const char *vars[] = {base, "SCHEME=file://"};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(load("data-flow-recursion-duplicate-composite.yml", vars, 2, d, &f));
    ZT_EQ(zf_diag_count(d), 0);
    ZT_CHECK(zfi_flow_find(f, "operator-composite-1>sub-operator-1") >= 0);
    ZT_CHECK(zfi_flow_find(f, "operator-composite-2>sub-operator-composite>sub-sub-operator-2") >=
             0);
    ZT_EQ(f->n_nodes, 2 + 2 * 4);
    ZT_EQ(f->n_links, 6 + 2 * 3);
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_CASE(getting_started_refuses_zenoh_nodes)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load("getting-started.yaml", NULL, 0, d, &f), ZF_EINVAL);
    ZT_CHECK(f == NULL);
    ZT_EQ(zf_diag_count(d), 2); /* the two built-ins, nothing cascading */
    const zf_diag_entry *e = zf_diag_get(d, 0);
    ZT_STREQ(base_of(e->file), "getting-started.yaml");
    ZT_EQ(e->line, 26);
    ZT_EQ(e->col, 5);
    ZT_STREQ(e->field, "sources[0].zenoh-subscribers");
    ZT_CONTAINS(e->message, "'zenoh-sub'");
    ZT_CONTAINS(e->message, "zflow has no Zenoh");
    e = zf_diag_get(d, 1);
    ZT_EQ(e->line, 49);
    ZT_STREQ(e->field, "sinks[1].zenoh-publishers");
    ZT_CONTAINS(e->message, "'zenoh-writer'");
    ZT_CONTAINS(zf_last_error(), "zenoh-subscribers");
    zf_diag_free(d);
}

ZT_CASE(legacy_uri_node_file)
{
    /* greetings-maker.yaml / file-writer.yaml use the old `uri` and `id` */
    const char *flow = "name: legacy\n"
                       "sources:\n"
                       "  - id: src\n"
                       "    library: libsrc.so\n"
                       "    outputs: [name]\n"
                       "operators:\n"
                       "  - id: greetings-maker\n"
                       "    descriptor: greetings-maker.yaml\n"
                       "sinks:\n"
                       "  - id: file-writer\n"
                       "    descriptor: file://./file-writer.yaml\n"
                       "links:\n"
                       "  - {from: {node: src, output: name}, to: {node: greetings-maker, input: "
                       "name}}\n"
                       "  - {from: {node: greetings-maker, output: greeting}, to: {node: "
                       "file-writer, input: in}}\n";
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(zf_flow_load_string(flow, strlen(flow), "legacy.yml", corpus(), NULL, d, &f));
    ZT_STREQ(f->nodes[1].library,
             "/path/to/zenoh-flow/target/debug/examples/libgreetings_maker.dylib");
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_MAIN(ZT_ENTRY(data_flow_flattens), ZT_ENTRY(data_flow_needs_its_vars),
        ZT_ENTRY(recursion_is_refused), ZT_ENTRY(duplicate_composite_is_no_recursion),
        ZT_ENTRY(getting_started_refuses_zenoh_nodes), ZT_ENTRY(legacy_uri_node_file))
