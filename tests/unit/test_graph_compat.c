/* Zenoh-Flow's own descriptor files (tests/compat/zenoh-flow/, 0.6) and the
 * four examples of its examples repository (tests/compat/zenoh-flow-examples/,
 * 0.5) load as Zenoh-Flow loads them: flattening, configuration priorities,
 * mapping, recursion, 0.5's `flow:` and node files (`id:` + `uri:`), Python
 * nodes named by `uri:`, node files checked on their own, 0.6's instance
 * `id:`, link shared-memory spellings, and one clear refusal per Zenoh
 * built-in node. */
#include "harness.h"
#include "testutil.h"

#include "graph/flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZT_ARRAY(a) (sizeof(a) / sizeof((a)[0]))

static char dir[4096], exdir[4096];

/* tests/compat/<sub> in the source tree: $ZF_SOURCE_DIR, else where this
 * file was compiled from. */
static const char *compat(char *buf, size_t size, const char *sub)
{
    const char *src = getenv("ZF_SOURCE_DIR");
    if (src)
        snprintf(buf, size, "%s/tests/compat/%s", src, sub);
    else
        snprintf(buf, size, "%.*s/tests/compat/%s",
                 (int)(strstr(__FILE__, "/tests/unit/") - __FILE__), __FILE__, sub);
    return buf;
}

static const char *corpus(void)
{
    return compat(dir, sizeof dir, "zenoh-flow");
}

static const char *examples(const char *sub)
{
    char rel[256];
    snprintf(rel, sizeof rel, "zenoh-flow-examples/%s", sub);
    return compat(exdir, sizeof exdir, rel);
}

/* ZT_VERBOSE=1: print what the loader said. */
static zf_err show(zf_err rc, const zf_diag *d)
{
    if (getenv("ZT_VERBOSE")) {
        char *s = zf_diag_format(d);
        fprintf(stderr, "%s", s);
        free(s);
    }
    return rc;
}

static zf_err load(const char *file, const char *const *vars, size_t n, zf_diag *d, zf_flow **f)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", corpus(), file);
    zf_flow_options opt = {.vars = vars, .n_vars = n};
    return show(zf_flow_load(path, &opt, d, f), d);
}

/* Load examples/<sub>/<file> with BASE_DIR set to examples/<base>. */
static zf_err load_example(const char *sub, const char *file, const char *base, bool node_file,
                           zf_diag *d, zf_flow **f)
{
    char path[4200], var[4300];
    snprintf(path, sizeof path, "%s/%s", examples(sub), file);
    snprintf(var, sizeof var, "BASE_DIR=%s", examples(base));
    const char *vars[] = {var};
    zf_flow_options opt = {.vars = vars, .n_vars = 1, .node_file = node_file};
    return show(zf_flow_load(path, &opt, d, f), d);
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

/* Zenoh's built-ins load as zflow's built-in nodes over DDS: one port per
 * key expression, the key expressions in the configuration. */
static const zfi_node *zenoh_node(const zf_flow *f, const char *id, const char *builtin)
{
    long i = zfi_flow_find(f, id);
    ZT_CHECK(i >= 0);
    if (i < 0)
        return NULL;
    const zfi_node *n = &f->nodes[i];
    ZT_CHECK(n->builtin_name != NULL);
    if (n->builtin_name)
        ZT_STREQ(n->builtin_name, builtin);
    ZT_CHECK(n->library == NULL && n->python == NULL);
    return n;
}

static void has_key(const zfi_node *n, const char *keyexpr)
{
    char *json = zf_config_to_json(zf_config_get(n->config, "key-expressions"));
    ZT_CHECK(json != NULL);
    if (json)
        ZT_CONTAINS(json, keyexpr);
    free(json);
}

ZT_CASE(getting_started_loads_zenoh_nodes)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load("getting-started.yaml", NULL, 0, d, &f), ZF_OK);
    ZT_EQ(zf_diag_count(d), 0);
    ZT_CHECK(f != NULL);
    if (f) {
        ZT_EQ(f->n_nodes, 4);
        const zfi_node *sub = zenoh_node(f, "zenoh-sub", "zenoh-subscribers");
        if (sub) {
            ZT_EQ(sub->kind, ZF_SOURCE);
            ZT_EQ(sub->n_outputs, 1);
            ZT_STREQ(sub->outputs[0].name, "hello");
            has_key(sub, "zf/getting-started/hello");
        }
        const zfi_node *pub = zenoh_node(f, "zenoh-writer", "zenoh-publishers");
        if (pub) {
            ZT_EQ(pub->kind, ZF_SINK);
            ZT_EQ(pub->n_inputs, 1);
            ZT_STREQ(pub->inputs[0].name, "greeting");
            has_key(pub, "zf/getting-started/greeting");
        }
        ZT_EQ(f->n_links, 3);
    }
    zf_flow_free(f);
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

/* ---- Zenoh-Flow 0.5: the examples repository ---- */

ZT_CASE(montblanc_flattens_to_20_nodes_and_36_links)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(load_example("montblanc", "montblanc.yml", "montblanc", false, d, &f));
    ZT_EQ(zf_diag_count(d), 0);
    ZT_STREQ(zf_flow_name(f), "Montblanc"); /* 0.5's `flow:` */
    /* What Zenoh-Flow computes: no composite, so the ids are the entries'
     * (sources, operators, sinks) and the links are the file's 36. */
    static const char *const ids[] = {
        "Cordoba", "Portsmouth", "Freeport",  "Madelin",   "Delhi",      "Hebron",   "Kingston",
        "Lyon",    "Hamburg",    "Taipei",    "Osaka",     "Tripoli",    "Mandalay", "Ponce",
        "Geneva",  "Monaco",     "Rotterdam", "Barcelona", "Georgetown", "Arequipa"};
    ZT_EQ(f->n_nodes, 20);
    for (size_t i = 0; i < ZT_ARRAY(ids); i++)
        ZT_STREQ(f->nodes[i].id, ids[i]);
    static const char *const links[][4] = {{"Cordoba", "Amazon", "Lyon", "Amazon"},
                                           {"Portsmouth", "Danube", "Hamburg", "Danube"},
                                           {"Freeport", "Ganges", "Hamburg", "Ganges"},
                                           {"Madelin", "Nile", "Hamburg", "Nile"},
                                           {"Lyon", "Tigris", "Hamburg", "Tigris"},
                                           {"Delhi", "Columbia", "Taipei", "Columbia"},
                                           {"Delhi", "Columbia", "Osaka", "Columbia"},
                                           {"Taipei", "Colorado", "Osaka", "Colorado"},
                                           {"Hamburg", "Parana", "Osaka", "Parana"},
                                           {"Osaka", "Godavari", "Tripoli", "Godavari"},
                                           {"Delhi", "Columbia", "Tripoli", "Columbia"},
                                           {"Portsmouth", "Danube", "Mandalay", "Danube"},
                                           {"Osaka", "Salween", "Mandalay", "Salween"},
                                           {"Hebron", "Chenab", "Mandalay", "Chenab"},
                                           {"Osaka", "Godavari", "Mandalay", "Godavari"},
                                           {"Tripoli", "Loire", "Mandalay", "Loire"},
                                           {"Kingston", "Yamuna", "Mandalay", "Yamuna"},
                                           {"Portsmouth", "Danube", "Ponce", "Danube"},
                                           {"Mandalay", "Brazos", "Ponce", "Brazos"},
                                           {"Mandalay", "Tagus", "Ponce", "Tagus"},
                                           {"Mandalay", "Missouri", "Ponce", "Missouri"},
                                           {"Tripoli", "Loire", "Ponce", "Loire"},
                                           {"Kingston", "Yamuna", "Ponce", "Yamuna"},
                                           {"Osaka", "Godavari", "Ponce", "Godavari"},
                                           {"Ponce", "Congo", "Geneva", "Congo"},
                                           {"Portsmouth", "Danube", "Geneva", "Danube"},
                                           {"Hamburg", "Parana", "Geneva", "Parana"},
                                           {"Mandalay", "Tagus", "Geneva", "Tagus"},
                                           {"Geneva", "Arkansas", "Arequipa", "Arkansas"},
                                           {"Ponce", "Congo", "Monaco", "Congo"},
                                           {"Ponce", "Mekong", "Rotterdam", "Mekong"},
                                           {"Ponce", "Mekong", "Barcelona", "Mekong"},
                                           {"Rotterdam", "Murray", "Georgetown", "Murray"},
                                           {"Barcelona", "Lena", "Georgetown", "Lena"},
                                           {"Monaco", "Ohio", "Ponce", "Ohio"},
                                           {"Georgetown", "Volga", "Ponce", "Volga"}};
    ZT_EQ(f->n_links, 36);
    for (size_t i = 0; i < ZT_ARRAY(links); i++)
        ZT_CHECK(has_link(f, links[i][0], links[i][1], links[i][2], links[i][3]));
    /* node files: 0.5's `uri` is the library, its `id` the file's */
    ZT_STREQ(node(f, "Hamburg")->library,
             "/home/ato/Workspace/zenoh-flow-examples/montblanc/target/debug/libhamburg.so");
    ZT_EQ(node(f, "Hamburg")->n_inputs, 4);
    ZT_EQ(node(f, "Ponce")->kind, ZF_OPERATOR);
    /* the libraries are not here: checking them names each one missing */
    zf_diag *l = zf_diag_new();
    ZT_EQ(zf_flow_check_libraries(f, l), ZF_ENOTFOUND);
    ZT_EQ(zf_diag_count(l), 20);
    for (size_t i = 0; i < zf_diag_count(l); i++)
        ZT_CONTAINS(zf_diag_get(l, i)->message, "does not exist");
    ZT_CONTAINS(zf_diag_get(l, 0)->message, "libcordoba.so");
    zf_diag_free(l);
    zf_flow_free(f);
    zf_diag_free(d);
}

/* The flows fed by Zenoh's built-in nodes (0.5: `descriptor:
 * builtin://zenoh` with `configuration.key-expressions`) load, each
 * built-in a node over DDS with its key expressions. */
static void zenoh_05_loads(const char *sub, const char *file, const char *base,
                           const char *const *nodes, const char *const *kinds, size_t n,
                           const char *keyexpr)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load_example(sub, file, base, false, d, &f), ZF_OK);
    ZT_EQ(zf_diag_count(d), 0);
    for (size_t i = 0; f && i < n; i++) {
        const zfi_node *z = zenoh_node(f, nodes[i], kinds[i]);
        if (z && i == 0)
            has_key(z, keyexpr);
    }
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_CASE(getting_started_05_loads_its_zenoh_nodes)
{
    static const char *const nodes[] = {"zenoh-sub", "zenoh-writer"};
    static const char *const kinds[] = {"zenoh-subscribers", "zenoh-publishers"};
    zenoh_05_loads("getting-started", "data-flow.yaml", "getting-started", nodes, kinds, 2,
                   "zf/getting-started/hello");
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load_example("getting-started", "data-flow.yaml", "getting-started", false, d, &f),
          ZF_OK);
    const zfi_node *w = f ? zenoh_node(f, "zenoh-writer", "zenoh-publishers") : NULL;
    if (w) {
        ZT_EQ(w->n_inputs, 1);
        ZT_STREQ(w->inputs[0].name, "in");
        has_key(w, "zf/getting-started/greeting");
    }
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_CASE(period_miss_detector_and_transcoding_load_their_zenoh_nodes)
{
    static const char *const pmd[] = {"zenoh-sub"};
    static const char *const pmd_kinds[] = {"zenoh-subscribers"};
    /* its flow's BASE_DIR is the nodes folder (its node files' is one up) */
    zenoh_05_loads("period-miss-detector", "data-flow.yaml", "period-miss-detector/nodes", pmd,
                   pmd_kinds, 1, "zf/period-miss-detector");
    static const char *const tr[] = {"ZenohSrc", "ZenohSink"};
    static const char *const tr_kinds[] = {"zenoh-subscribers", "zenoh-publishers"};
    zenoh_05_loads("transcoding", "dataflow.yml", "transcoding", tr, tr_kinds, 2, "data/proto");
}

/* Copy examples/<sub>/<rel> to <to>/<rel>, with the text `from` (the
 * placeholder of the example's BASE_DIR) replaced by `to`, as the example's
 * README tells a user to edit each file. */
static void copy_edited(const char *sub, const char *rel, const char *from, const char *to)
{
    char src[4400], dst[4400], cmd[9000];
    snprintf(src, sizeof src, "%s/%s", examples(sub), rel);
    snprintf(dst, sizeof dst, "%s/%s", to, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", dst);
    ZT_EQ(system(cmd), 0);
    FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
    ZT_CHECK(in && out);
    char line[4096];
    while (in && out && fgets(line, sizeof line, in)) {
        char *at = strstr(line, from);
        if (at)
            fprintf(out, "%.*s%s%s", (int)(at - line), line, to, at + strlen(from));
        else
            fputs(line, out);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

/* Zenoh-Flow 0.5 rendered each file with its own vars: period-miss-detector's
 * flow has BASE_DIR = .../nodes, its node files BASE_DIR = ... (one up). Each
 * file edited as its README says, the node files keep their own (a 0.6 flow's
 * override them, as Zenoh-Flow 0.6 does); --var beats both. */
ZT_CASE(v05_node_files_keep_their_own_vars)
{
    const char *root = zt_tmp_path("pmd"),
               *ph = "/path/to/zenoh-flow-examples/period-miss-detector";
    static const char *const files[] = {
        "data-flow.yaml", "nodes/python/file-writer/file-writer.yaml",
        "nodes/python/period-miss-detector/period-miss-detector.yaml"};
    for (size_t i = 0; i < ZT_ARRAY(files); i++)
        copy_edited("period-miss-detector", files[i], ph, root);
    char path[4200], want[4400];
    snprintf(path, sizeof path, "%s/data-flow.yaml", root);
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(show(zf_flow_load(path, NULL, d, &f), d));
    snprintf(want, sizeof want, "%s/nodes/python/file-writer/file-writer.py", root);
    ZT_STREQ(node(f, "file-writer")->python, want);
    snprintf(want, sizeof want, "%s/nodes/python/period-miss-detector/period-miss-detector.py",
             root);
    ZT_STREQ(node(f, "period-miss-detector")->python, want);
    zf_flow_free(f);
    /* --var BASE_DIR: every file's */
    const char *vars[] = {"BASE_DIR=/elsewhere"};
    zf_flow_options opt = {.vars = vars, .n_vars = 1};
    ZT_EQ(show(zf_flow_load(path, &opt, d, &f), d), ZF_ENOTFOUND); /* no such node file */
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "/elsewhere/python/period-miss-detector");
    zf_diag_free(d);

    /* the same flow spelled 0.6 (`name:`): the flow's BASE_DIR wins */
    char text[8192];
    snprintf(text, sizeof text,
             "name: pmd\nvars: {BASE_DIR: %s/nodes}\n"
             "sources: [{id: src, library: /src.so, outputs: [out]}]\n"
             "sinks:\n  - id: file-writer\n"
             "    descriptor: \"file://{{ BASE_DIR }}/python/file-writer/file-writer.yaml\"\n"
             "links: [{from: {node: src, output: out}, to: {node: file-writer, input: in}}]\n",
             root);
    d = zf_diag_new();
    ZT_OK(show(zf_flow_load_string(text, strlen(text), "pmd06.yaml", root, NULL, d, &f), d));
    snprintf(want, sizeof want, "%s/nodes/nodes/python/file-writer/file-writer.py", root);
    ZT_STREQ(node(f, "file-writer")->python, want);
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_CASE(python_node_files_run_on_the_python_host)
{
    /* getting-started's Python node files, the built-ins replaced by a
     * library source and sink: `uri: ...py` is a Python node */
    char flow[2048];
    snprintf(flow, sizeof flow,
             "flow: getting-started\n"
             "vars: {BASE_DIR: /nowhere}\n"
             "sources:\n"
             "  - {id: src, library: libsrc.so, outputs: [out]}\n"
             "operators:\n"
             "  - id: greetings-maker\n"
             "    descriptor: \"file://{{ BASE_DIR }}/nodes/python/greetings-maker/"
             "greetings-maker.yaml\"\n"
             "sinks:\n"
             "  - id: file-writer\n"
             "    descriptor: \"file://{{ BASE_DIR }}/nodes/python/file-writer/file-writer.yaml\"\n"
             "links:\n"
             "  - {from: {node: src, output: out}, to: {node: greetings-maker, input: name}}\n"
             "  - {from: {node: greetings-maker, output: greeting}, to: {node: file-writer, "
             "input: in}}\n");
    char var[4300];
    snprintf(var, sizeof var, "BASE_DIR=%s", examples("getting-started"));
    const char *vars[] = {var};
    zf_flow_options opt = {.vars = vars, .n_vars = 1};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(zf_flow_load_string(flow, strlen(flow), "gs.yaml", examples(""), &opt, d, &f));
    const zfi_node *gm = node(f, "greetings-maker");
    ZT_CHECK(gm && gm->library == NULL && gm->python != NULL);
    char want[4400];
    snprintf(want, sizeof want, "%s/nodes/python/greetings-maker/greetings-maker.py",
             examples("getting-started"));
    ZT_STREQ(gm->python, want);
    ZT_CHECK(node(f, "file-writer")->python != NULL);
    ZT_CHECK(node(f, "src")->python == NULL);
    zf_flow_free(f);
    zf_diag_free(d);
}

ZT_CASE(a_node_file_is_checked_as_a_node)
{
    static const struct {
        const char *file, *id;
        zf_node_kind kind;
        size_t ins, outs;
    } cases[] = {{"hamburg/hamburg.yml", "Hamburg", ZF_OPERATOR, 4, 1},
                 {"cordoba/cordoba.yml", "Cordoba", ZF_SOURCE, 0, 1},
                 {"arequipa/arequipa.yml", "Arequipa", ZF_SINK, 1, 0}};
    for (size_t i = 0; i < ZT_ARRAY(cases); i++) {
        zf_diag *d = zf_diag_new();
        zf_flow *f = NULL;
        ZT_OK(load_example("montblanc", cases[i].file, "montblanc", true, d, &f));
        ZT_EQ(zf_diag_count(d), 0);
        ZT_CHECK(zf_flow_is_node_file(f));
        ZT_STREQ(zf_flow_name(f), cases[i].id);
        ZT_EQ(f->n_nodes, 1);
        ZT_STREQ(f->nodes[0].id, cases[i].id);
        ZT_EQ(f->nodes[0].kind, cases[i].kind);
        ZT_EQ(f->nodes[0].n_inputs, cases[i].ins);
        ZT_EQ(f->nodes[0].n_outputs, cases[i].outs);
        ZT_EQ(f->n_links, 0);
        zf_flow_free(f);
        zf_diag_free(d);
    }
    /* a composite operator file: its nodes and links */
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/operator-composite.yml", corpus());
    char base[4300];
    snprintf(base, sizeof base, "BASE_DIR=%s", corpus());
    const char *vars[] = {base, "SCHEME=file://"};
    zf_flow_options opt = {.vars = vars, .n_vars = 2, .node_file = true};
    ZT_OK(zf_flow_load(path, &opt, d, &f));
    ZT_EQ(zf_diag_count(d), 0);
    ZT_EQ(f->n_nodes, 4);
    ZT_STREQ(f->nodes[0].id, "operator-composite>sub-operator-1");
    ZT_EQ(f->n_links, 3);
    zf_flow_free(f);
    zf_diag_free(d);

    /* given as a flow: one error that says what it is */
    d = zf_diag_new();
    ZT_EQ(load_example("montblanc", "hamburg/hamburg.yml", "montblanc", false, d, &f), ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 1);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "this is a node file");
    ZT_EQ(zf_diag_get(d, 0)->line, 1);
    zf_diag_free(d);
}

/* The examples' Rust node files (what their flows would name instead of the
 * Python ones): each loads as a node; a missing library is its only error. */
ZT_CASE(rust_node_files_lack_only_their_libraries)
{
    static const struct {
        const char *example, *file, *lib;
    } cases[] = {
        {"getting-started", "nodes/rust/greetings-maker/greetings-maker.yaml",
         "libgreetings_maker.dylib"},
        {"getting-started", "nodes/rust/file-writer/file-writer.yaml", "libfile_writer.dylib"},
        {"period-miss-detector", "nodes/rust/period-miss-detector/period-miss-detector.yaml",
         "libperiod_miss_detector.dylib"},
        {"period-miss-detector", "nodes/rust/file-writer/file-writer.yaml", "libfile_writer.dylib"},
    };
    for (size_t i = 0; i < ZT_ARRAY(cases); i++) {
        zf_diag *d = zf_diag_new();
        zf_flow *f = NULL;
        ZT_OK(load_example(cases[i].example, cases[i].file, cases[i].example, true, d, &f));
        ZT_EQ(zf_diag_count(d), 0);
        ZT_CHECK(f->nodes[0].library != NULL && f->nodes[0].python == NULL);
        ZT_EQ(zf_flow_check_libraries(f, d), ZF_ENOTFOUND);
        ZT_EQ(zf_diag_count(d), 1);
        ZT_CONTAINS(zf_diag_get(d, 0)->message, cases[i].lib);
        ZT_CONTAINS(zf_diag_get(d, 0)->message, "does not exist");
        zf_flow_free(f);
        zf_diag_free(d);
    }
}

/* ---- Zenoh-Flow 0.6: the instance id, link spellings ---- */

static zf_err load_text(const char *text, zf_diag *d, zf_flow **f)
{
    return show(zf_flow_load_string(text, strlen(text), "t.yaml", "/", NULL, d, f), d);
}

#define TWO_NODES                                                                                  \
    "sources: [{id: a, library: /a.so, outputs: [o]}]\n"                                           \
    "sinks: [{id: b, library: /b.so, inputs: [i]}]\n"

ZT_CASE(top_level_id_is_the_instance_id)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_OK(load_text("name: x\nid: 8C0A4D2E-1B3F-4A5C-9D6E-7F8091A2B3C4\n" TWO_NODES
                    "links: [{from: {node: a, output: o}, to: {node: b, input: i}}]\n",
                    d, &f));
    ZT_STREQ(zf_flow_instance_id(f), "8c0a4d2e-1b3f-4a5c-9d6e-7f8091a2b3c4");
    char *json = zf_flow_to_json(f);
    ZT_CONTAINS(json, "\"id\":\"8c0a4d2e-1b3f-4a5c-9d6e-7f8091a2b3c4\",\"node_file\":false");
    free(json);
    zf_flow_free(f);
    ZT_OK(load_text("name: x\n" TWO_NODES
                    "links: [{from: {node: a, output: o}, to: {node: b, input: i}}]\n",
                    d, &f));
    ZT_CHECK(zf_flow_instance_id(f) == NULL);
    zf_flow_free(f);
    zf_diag_free(d);

    d = zf_diag_new();
    ZT_EQ(load_text("name: x\nid: camera-1\n" TWO_NODES
                    "links: [{from: {node: a, output: o}, to: {node: b, input: i}}]\n",
                    d, &f),
          ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 1);
    const zf_diag_entry *e = zf_diag_get(d, 0);
    ZT_STREQ(e->field, "id");
    ZT_EQ(e->line, 2);
    ZT_EQ(e->col, 5);
    ZT_CONTAINS(e->message, "'camera-1' is not an instance id: expected a UUID");
    zf_diag_free(d);

    d = zf_diag_new();
    ZT_EQ(load_text("name: x\nflow: y\nid: 8c0a4d2e-1b3f-4a5c-9d6e-7f8091a2b3c4\n"
                    "uuid: 8c0a4d2e-1b3f-4a5c-9d6e-7f8091a2b3c4\n" TWO_NODES
                    "links: [{from: {node: a, output: o}, to: {node: b, input: i}}]\n",
                    d, &f),
          ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 2);
    ZT_CHECK(find_entry(d, "flow", "two spellings") != NULL);
    ZT_CHECK(find_entry(d, "uuid", "two spellings") != NULL);
    zf_diag_free(d);
}

ZT_CASE(link_shared_memory_spellings)
{
    static const char *const keys[] = {"shm", "shared-memory", "shared_memory"};
    for (size_t i = 0; i < ZT_ARRAY(keys); i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "name: x\n" TWO_NODES "links:\n"
                 "  - from: {node: a, output: o}\n"
                 "    to: {node: b, input: i}\n"
                 "    %s: {number_elements: 10, element_size: 4096}\n",
                 keys[i]);
        zf_diag *d = zf_diag_new();
        zf_flow *f = NULL;
        ZT_OK(load_text(text, d, &f));
        ZT_EQ(f->n_links, 1);
        zf_flow_free(f);
        zf_diag_free(d);
    }
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load_text("name: x\n" TWO_NODES "links:\n"
                    "  - from: {node: a, output: o}\n"
                    "    to: {node: b, input: i}\n"
                    "    shm: true\n"
                    "    shared-memory: [1]\n",
                    d, &f),
          ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 1);
    const zf_diag_entry *e = zf_diag_get(d, 0);
    ZT_STREQ(e->field, "links[0].shared-memory");
    ZT_EQ(e->line, 8);
    ZT_CONTAINS(e->message, "two spellings");
    zf_diag_free(d);
    d = zf_diag_new();
    ZT_EQ(load_text("name: x\n" TWO_NODES "links:\n"
                    "  - from: {node: a, output: o}\n"
                    "    to: {node: b, input: i}\n"
                    "    shm: [1]\n",
                    d, &f),
          ZF_EINVAL);
    ZT_CHECK(find_entry(d, "links[0].shm", "expected a map of Zenoh shared-memory settings") !=
             NULL);
    zf_diag_free(d);
}

ZT_CASE(unknown_builtin_is_named)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    ZT_EQ(load_text("name: x\nsources: [{id: a, descriptor: \"builtin://mqtt\"}]\n"
                    "sinks: [{id: b, library: /b.so, inputs: [i]}]\n"
                    "links: [{from: {node: a, output: o}, to: {node: b, input: i}}]\n",
                    d, &f),
          ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 1);
    ZT_STREQ(zf_diag_get(d, 0)->field, "sources[0].descriptor");
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "unknown built-in node 'builtin://mqtt'");
    zf_diag_free(d);
    d = zf_diag_new();
    ZT_EQ(load_text("name: x\n" TWO_NODES "operators: [{id: op, descriptor: builtin://zenoh}]\n"
                    "links: [{from: {node: a, output: o}, to: {node: op, input: i}},\n"
                    "        {from: {node: op, output: o}, to: {node: b, input: i}}]\n",
                    d, &f),
          ZF_EINVAL);
    ZT_EQ(zf_diag_count(d), 1);
    ZT_STREQ(zf_diag_get(d, 0)->field, "operators[0].descriptor");
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "not an operator");
    zf_diag_free(d);
}

ZT_MAIN(ZT_ENTRY(data_flow_flattens), ZT_ENTRY(data_flow_needs_its_vars),
        ZT_ENTRY(recursion_is_refused), ZT_ENTRY(duplicate_composite_is_no_recursion),
        ZT_ENTRY(getting_started_loads_zenoh_nodes), ZT_ENTRY(legacy_uri_node_file),
        ZT_ENTRY(montblanc_flattens_to_20_nodes_and_36_links),
        ZT_ENTRY(getting_started_05_loads_its_zenoh_nodes),
        ZT_ENTRY(period_miss_detector_and_transcoding_load_their_zenoh_nodes),
        ZT_ENTRY(python_node_files_run_on_the_python_host),
        ZT_ENTRY(v05_node_files_keep_their_own_vars), ZT_ENTRY(a_node_file_is_checked_as_a_node),
        ZT_ENTRY(rust_node_files_lack_only_their_libraries),
        ZT_ENTRY(top_level_id_is_the_instance_id), ZT_ENTRY(link_shared_memory_spellings),
        ZT_ENTRY(unknown_builtin_is_named))
