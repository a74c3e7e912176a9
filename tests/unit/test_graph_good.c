/* Good descriptors: zflow's extensions, vars from options, relative paths,
 * composites with inherited settings, JSON that parses back, DOT. */
#include "harness.h"

#include "core/common.h"
#include "graph/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char root[4096];

static const char *good(void)
{
    const char *src = getenv("ZF_SOURCE_DIR");
    if (src)
        snprintf(root, sizeof root, "%s/tests/descriptors/good", src);
    else
        snprintf(root, sizeof root, "%.*s/tests/descriptors/good",
                 (int)(strstr(__FILE__, "/tests/unit/") - __FILE__), __FILE__);
    return root;
}

static zf_flow *load(const char *file, const char *const *vars, size_t n)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", good(), file);
    zf_flow_options opt = {.vars = vars, .n_vars = n};
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    if (zf_flow_load(path, &opt, d, &f) != ZF_OK) {
        char *s = zf_diag_format(d);
        fprintf(stderr, "%s", s);
        free(s);
    }
    zf_diag_free(d);
    return f;
}

static const zfi_node *node(const zf_flow *f, const char *id)
{
    long i = zfi_flow_find(f, id);
    return i < 0 ? NULL : &f->nodes[i];
}

static const char *in_good(const char *rel)
{
    static char buf[4400];
    snprintf(buf, sizeof buf, "%s/%s", good(), rel);
    return buf;
}

/* ---- a small JSON parser into zf_config, to read zf_flow_to_json back ---- */

typedef struct js {
    const char *p;
    bool ok;
} js;

static void ws(js *s)
{
    while (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r')
        s->p++;
}

static char *jstring(js *s)
{
    zfi_buf b;
    zfi_buf_init(&b);
    if (*s->p != '"') {
        s->ok = false;
        return NULL;
    }
    for (s->p++; *s->p && *s->p != '"'; s->p++) {
        char c = *s->p;
        if ((unsigned char)c < 0x20) {
            s->ok = false;
            break;
        }
        if (c == '\\') {
            c = *++s->p;
            if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
            else if (c == 'r')
                c = '\r';
            else if (c == 'u') {
                unsigned v = 0;
                if (sscanf(s->p + 1, "%4x", &v) != 1 || v > 0x7f) {
                    s->ok = false;
                    break;
                }
                c = (char)v;
                s->p += 4;
            } else if (c != '"' && c != '\\' && c != '/') {
                s->ok = false;
                break;
            }
        }
        zfi_buf_append(&b, &c, 1);
    }
    if (*s->p != '"')
        s->ok = false;
    else
        s->p++;
    char *r = zfi_buf_steal(&b);
    if (!s->ok) {
        free(r);
        return NULL;
    }
    return r;
}

static zf_config *jvalue(js *s, int depth)
{
    ws(s);
    if (depth > 64) {
        s->ok = false;
        return NULL;
    }
    if (*s->p == '{' || *s->p == '[') {
        bool map = *s->p == '{';
        zf_config *c = zfi_config_new(map ? ZF_CFG_MAP : ZF_CFG_SEQ, NULL, 0, 0);
        s->p++;
        ws(s);
        if (*s->p == (map ? '}' : ']')) {
            s->p++;
            return c;
        }
        for (;;) {
            char *key = NULL;
            if (map) {
                ws(s);
                key = jstring(s);
                ws(s);
                if (!key || *s->p != ':') {
                    free(key);
                    s->ok = false;
                    break;
                }
                s->p++;
            }
            zf_config *v = jvalue(s, depth + 1);
            if (!v) {
                free(key);
                break;
            }
            if (map)
                zfi_config_map_set(c, key, v);
            else
                zfi_config_seq_push(c, v);
            free(key);
            ws(s);
            if (*s->p == ',') {
                s->p++;
                continue;
            }
            if (*s->p == (map ? '}' : ']')) {
                s->p++;
                return c;
            }
            s->ok = false;
            break;
        }
        zfi_config_free(c);
        return NULL;
    }
    if (*s->p == '"') {
        char *t = jstring(s);
        zf_config *c = t ? zfi_config_scalar(t, true, NULL, 0, 0) : NULL;
        free(t);
        return c;
    }
    const char *start = s->p;
    while (*s->p && strchr("-+.0123456789eEtruefalsn", *s->p))
        s->p++;
    char tok[64];
    size_t n = (size_t)(s->p - start);
    if (!n || n >= sizeof tok) {
        s->ok = false;
        return NULL;
    }
    memcpy(tok, start, n);
    tok[n] = '\0';
    zf_config *c = zfi_config_scalar(tok, false, NULL, 0, 0);
    if (c && c->kind == ZF_CFG_STRING) { /* not a JSON literal or number */
        zfi_config_free(c);
        s->ok = false;
        return NULL;
    }
    return c;
}

static zf_config *parse_json(const char *text)
{
    js s = {text, true};
    zf_config *c = jvalue(&s, 0);
    ws(&s);
    if (!s.ok || *s.p) {
        zfi_config_free(c);
        return NULL;
    }
    return c;
}

static const char *jstr(const zf_config *c, const char *path)
{
    const char *v = NULL;
    ZT_OK(zf_config_string(c, path, NULL, &v));
    return v;
}

static int64_t jint(const zf_config *c, const char *path)
{
    int64_t v = -1;
    ZT_OK(zf_config_int(c, path, -1, &v));
    return v;
}

static bool jnull(const zf_config *c, const char *path)
{
    const zf_config *v = zf_config_get(c, path);
    return v && zf_config_kind_of(v) == ZF_CFG_NULL;
}

/* ---- cases ---- */

ZT_CASE(extensions_are_parsed)
{
    zf_flow *f = load("pipeline.yaml", NULL, 0);
    ZT_CHECK(f != NULL);
    ZT_STREQ(zf_flow_name(f), "pipeline");
    ZT_EQ(f->max_memory, 512ull << 20);
    ZT_EQ(f->drain_timeout_ns, 2000000000ll);
    ZT_EQ(f->n_nodes, 4);

    const zfi_node *cam = node(f, "camera");
    ZT_EQ(cam->kind, ZF_SOURCE);
    ZT_STREQ(cam->description, "USB camera");
    ZT_STREQ(cam->library, in_good("lib/debug/libcamera.so"));
    ZT_EQ(cam->period_ns, 33000000);
    ZT_EQ(cam->n_outputs, 1);
    ZT_STREQ(cam->outputs[0].name, "frame");
    ZT_STREQ(cam->outputs[0].type, "image/bgr8");
    int64_t fps = 0;
    ZT_OK(zf_config_int(cam->config, "fps", 0, &fps));
    ZT_EQ(fps, 30);
    const char *s = NULL;
    ZT_OK(zf_config_string(cam->config, "log_level", NULL, &s));
    ZT_STREQ(s, "info");
    ZT_STREQ(cam->worker, "edge_1");

    const zfi_node *det = node(f, "detect");
    ZT_EQ(det->kind, ZF_OPERATOR);
    ZT_STREQ(det->library, in_good("lib/libdetect.so")); /* relative to nodes/ */
    ZT_STREQ(det->description, "finds objects in frames");
    ZT_EQ(det->hang_timeout_ns, 500000000);
    ZT_EQ(det->isolation, ZFI_ISOLATION_THREAD);
    ZT_STREQ(det->inputs[0].type, "image/bgr8");
    ZT_STREQ(det->outputs[0].type, "motor/cmd");
    double th = 0;
    ZT_OK(zf_config_float(det->config, "threshold", 0, &th));
    ZT_CHECK(th == 0.6); /* the entry's configuration wins over the node file's */
    ZT_OK(zf_config_string(det->config, "model", NULL, &s));
    ZT_STREQ(s, "yolo.onnx");
    ZT_STREQ(det->file, in_good("nodes/detect.yaml"));
    ZT_EQ(det->line, 2);

    const zfi_node *motor = node(f, "motor");
    ZT_CHECK(motor->library == NULL);
    ZT_STREQ(motor->python, in_good("nodes/motor.py"));
    ZT_EQ(motor->isolation, ZFI_ISOLATION_PROCESS);
    ZT_EQ(motor->restart, ZFI_RESTART_ON_FAILURE);
    ZT_EQ(motor->max_errors, 5);
    ZT_EQ(motor->error_window_ns, 10000000000ll);
    ZT_EQ(motor->send_timeout_ns, 250000000);
    ZT_EQ(motor->period_ns, 0);
    ZT_STREQ(motor->inputs[0].type, "any");
    ZT_CHECK(motor->worker == NULL);

    const zfi_node *rec = node(f, "recorder");
    ZT_STREQ(rec->library, in_good("lib/librecorder.so"));
    ZT_STREQ(rec->worker, "cloud_1");

    ZT_EQ(f->n_links, 3);
    const zfi_link *l = &f->links[0];
    ZT_STREQ(f->nodes[l->from].id, "camera");
    ZT_STREQ(f->nodes[l->to].id, "detect");
    ZT_EQ(l->queue.capacity, 4);
    ZT_EQ(l->queue.max_bytes, 64ull << 20);
    ZT_EQ(l->queue.policy, ZF_POLICY_DROP_OLDEST);
    ZT_EQ(l->line, 42);
    ZT_EQ(l->col, 5);
    ZT_EQ(f->links[1].queue.capacity, 50);
    ZT_EQ(f->links[1].queue.max_bytes, 0);
    ZT_EQ(f->links[1].queue.policy, ZF_POLICY_DROP_NEWEST);
    ZT_EQ(f->links[2].queue.capacity, 16); /* defaults */
    ZT_EQ(f->links[2].queue.policy, ZF_POLICY_BLOCK);
    zf_flow_free(f);
}

ZT_CASE(vars_from_options_override)
{
    const char *vars[] = {"BUILD=release", "FPS_PERIOD=10ms"};
    zf_flow *f = load("pipeline.yaml", vars, 2);
    ZT_CHECK(f != NULL);
    ZT_STREQ(node(f, "camera")->library, in_good("lib/release/libcamera.so"));
    ZT_EQ(node(f, "camera")->period_ns, 10000000);
    zf_flow_free(f);
}

ZT_CASE(composite_settings_and_mapping)
{
    zf_flow *f = load("composite.yaml", NULL, 0);
    ZT_CHECK(f != NULL);
    static const char *const ids[] = {"camera",       "left>filter",  "left>encode",
                                      "right>filter", "right>encode", "screen"};
    ZT_EQ(f->n_nodes, 6);
    for (size_t i = 0; i < 6; i++)
        ZT_STREQ(f->nodes[i].id, ids[i]);
    /* the entry's isolation applies to every node of the composite */
    ZT_EQ(node(f, "left>filter")->isolation, ZFI_ISOLATION_PROCESS);
    ZT_EQ(node(f, "left>encode")->isolation, ZFI_ISOLATION_PROCESS);
    ZT_EQ(node(f, "right>encode")->isolation, ZFI_ISOLATION_THREAD);
    /* the composite's hang_timeout wins over the node file's */
    ZT_EQ(node(f, "right>encode")->hang_timeout_ns, 2000000000ll);
    ZT_EQ(node(f, "left>filter")->restart, ZFI_RESTART_ALWAYS);
    const char *side = NULL;
    ZT_OK(zf_config_string(node(f, "left>encode")->config, "side", NULL, &side));
    ZT_STREQ(side, "left");
    ZT_OK(zf_config_string(node(f, "right>encode")->config, "side", NULL, &side));
    ZT_STREQ(side, "none");
    /* a flattened id and a composite id can both be mapped */
    ZT_STREQ(node(f, "left>filter")->worker, "edge_1");
    ZT_CHECK(node(f, "left>encode")->worker == NULL);
    ZT_STREQ(node(f, "right>filter")->worker, "cloud_1");
    ZT_STREQ(node(f, "right>encode")->worker, "cloud_1");
    ZT_EQ(f->n_links, 6);
    zf_flow_free(f);
}

ZT_CASE(json_parses_back)
{
    zf_flow *f = load("pipeline.yaml", NULL, 0);
    ZT_CHECK(f != NULL);
    char *json = zf_flow_to_json(f);
    zf_config *j = parse_json(json);
    ZT_CHECK(j != NULL);
    ZT_STREQ(jstr(j, "name"), "pipeline");
    ZT_STREQ(jstr(j, "file"), in_good("pipeline.yaml"));
    ZT_EQ(jint(j, "max_memory"), 512ll << 20);
    ZT_EQ(jint(j, "drain_timeout_ns"), 2000000000ll);
    const zf_config *nodes = zf_config_get(j, "nodes");
    ZT_EQ(zf_config_len(nodes), 4);
    const zf_config *cam = zf_config_at(nodes, 0);
    ZT_STREQ(jstr(cam, "id"), "camera");
    ZT_STREQ(jstr(cam, "kind"), "source");
    ZT_STREQ(jstr(cam, "library"), in_good("lib/debug/libcamera.so"));
    ZT_CHECK(jnull(cam, "python"));
    ZT_EQ(zf_config_len(zf_config_get(cam, "inputs")), 0);
    ZT_STREQ(jstr(zf_config_at(zf_config_get(cam, "outputs"), 0), "type"), "image/bgr8");
    ZT_EQ(jint(cam, "period_ns"), 33000000);
    ZT_CHECK(jnull(cam, "hang_timeout_ns"));
    ZT_STREQ(jstr(cam, "configuration.device"), "/dev/video0");
    ZT_EQ(jint(cam, "configuration.fps"), 30);
    ZT_STREQ(jstr(cam, "worker"), "edge_1");
    const zf_config *motor = zf_config_at(nodes, 2);
    ZT_STREQ(jstr(motor, "kind"), "sink");
    ZT_STREQ(jstr(motor, "isolation"), "process");
    ZT_STREQ(jstr(motor, "restart"), "on-failure");
    ZT_CHECK(jnull(motor, "library"));
    ZT_CHECK(jnull(motor, "worker"));
    const zf_config *links = zf_config_get(j, "links");
    ZT_EQ(zf_config_len(links), 3);
    const zf_config *l0 = zf_config_at(links, 0);
    ZT_STREQ(jstr(l0, "from.node"), "camera");
    ZT_STREQ(jstr(l0, "from.output"), "frame");
    ZT_STREQ(jstr(l0, "to.node"), "detect");
    ZT_STREQ(jstr(l0, "to.input"), "image");
    ZT_EQ(jint(l0, "queue.capacity"), 4);
    ZT_EQ(jint(l0, "queue.max_bytes"), 64ll << 20);
    ZT_STREQ(jstr(l0, "queue.policy"), "drop_oldest");
    ZT_CHECK(jnull(zf_config_at(links, 2), "queue.max_bytes"));
    const zf_config *edge = zf_config_get(j, "mapping.edge_1");
    ZT_EQ(zf_config_len(edge), 2);
    ZT_STREQ(zf_config_text(zf_config_at(edge, 0)), "camera");
    ZT_STREQ(zf_config_text(zf_config_at(edge, 1)), "detect");
    ZT_STREQ(zf_config_key_at(zf_config_get(j, "mapping"), 1), "cloud_1");
    zfi_config_free(j);
    free(json);
    zf_flow_free(f);
}

ZT_CASE(json_of_compat_flow_parses_back)
{
    zf_flow *f = load("composite.yaml", NULL, 0);
    ZT_CHECK(f != NULL);
    char *json = zf_flow_to_json(f);
    zf_config *j = parse_json(json);
    ZT_CHECK(j != NULL);
    ZT_EQ(zf_config_len(zf_config_get(j, "nodes")), 6);
    ZT_EQ(zf_config_len(zf_config_get(j, "mapping.cloud_1")), 2);
    zfi_config_free(j);
    free(json);
    zf_flow_free(f);
}

ZT_CASE(dot_has_nodes_and_edges)
{
    zf_flow *f = load("pipeline.yaml", NULL, 0);
    ZT_CHECK(f != NULL);
    char *dot = zf_flow_to_dot(f);
    ZT_CONTAINS(dot, "digraph \"pipeline\" {");
    ZT_CONTAINS(dot, "n0 [fillcolor=palegreen, label=\"{{camera\\n(source)");
    ZT_CONTAINS(dot, "<o0> frame : image/bgr8");
    ZT_CONTAINS(dot, "n1 [fillcolor=lightblue");
    ZT_CONTAINS(dot, "<i0> image : image/bgr8");
    ZT_CONTAINS(dot, "n2 [fillcolor=lightsalmon");
    ZT_CONTAINS(dot, "n0:o0 -> n1:i0 [label=\"image/bgr8\\ncap 4, drop_oldest, max 67108864 B\"]");
    ZT_CONTAINS(dot, "n0:o0 -> n3:i0");
    ZT_CONTAINS(dot, "n1:o0 -> n2:i0 [label=\"motor/cmd\\ncap 16, block\"]");
    free(dot);
    zf_flow_free(f);
}

ZT_CASE(load_string_resolves_against_base_dir)
{
    const char *text = "name: inline\n"
                       "sources:\n"
                       "  - id: src\n"
                       "    library: ./plugins/../libsrc.so\n"
                       "    outputs: [out]\n"
                       "sinks:\n"
                       "  - id: dst\n"
                       "    library: file:///opt/zflow/libdst%20x.so\n"
                       "    inputs: [in]\n"
                       "  - id: detect\n"
                       "    descriptor: nodes/detect.yaml\n"
                       "links:\n"
                       "  - {from: {node: src, output: out}, to: {node: dst, input: in}}\n";
    zf_diag *d = zf_diag_new();
    zf_flow *f = NULL;
    /* `detect` is an operator file listed under sinks: it declares outputs */
    ZT_EQ(zf_flow_load_string(text, strlen(text), "inline.yaml", good(), NULL, d, &f), ZF_EINVAL);
    ZT_CONTAINS(zf_diag_get(d, 0)->message, "'detect' is a sink: a sink has no outputs");
    ZT_STREQ(zf_diag_get(d, 0)->file, in_good("nodes/detect.yaml"));
    zf_diag_free(d);

    const char *ok = "name: inline\n"
                     "sources:\n"
                     "  - id: src\n"
                     "    library: ./plugins/../libsrc.so\n"
                     "    outputs: [out]\n"
                     "sinks:\n"
                     "  - id: dst\n"
                     "    library: file:///opt/zflow/libdst%20x.so\n"
                     "    inputs: [in]\n"
                     "links:\n"
                     "  - {from: {node: src, output: out}, to: {node: dst, input: in}}\n";
    ZT_OK(zf_flow_load_string(ok, strlen(ok), "inline.yaml", good(), NULL, NULL, &f));
    ZT_STREQ(f->nodes[0].library, in_good("libsrc.so"));
    ZT_STREQ(f->nodes[1].library, "/opt/zflow/libdst x.so");
    ZT_STREQ(f->file, "inline.yaml");
    ZT_STREQ(f->dir, good());
    ZT_EQ(f->nodes[0].line, 3);
    ZT_EQ(f->nodes[0].col, 5);
    ZT_EQ(f->nodes[0].outputs[0].line, 5);
    ZT_EQ(f->nodes[0].outputs[0].col, 15);
    zf_flow_free(f);
}

ZT_CASE(references_keep_the_flow)
{
    zf_flow *f = load("pipeline.yaml", NULL, 0);
    ZT_CHECK(f != NULL);
    zf_flow *g = zfi_flow_ref(f);
    ZT_CHECK(g == f);
    zf_flow_free(f);
    ZT_STREQ(zf_flow_name(g), "pipeline"); /* still alive (ASan checks) */
    ZT_EQ(zfi_flow_find(g, "recorder"), 3);
    ZT_EQ(zfi_flow_find(g, "nope"), -1);
    zf_flow_free(g);
    zf_flow_free(NULL);
    ZT_CHECK(zf_flow_to_json(NULL) == NULL);
    ZT_CHECK(zf_flow_to_dot(NULL) == NULL);
}

ZT_CASE(fan_out_and_any_types)
{
    const char *text = "name: fan\n"
                       "sources:\n"
                       "  - {id: a, library: a.so, outputs: [{id: x, type: t/1}]}\n"
                       "sinks:\n"
                       "  - {id: b, library: b.so, inputs: [x]}\n"
                       "  - {id: c, library: c.so, inputs: [{id: x, type: t/1}]}\n"
                       "  - {id: d, library: d.so, inputs: [{id: x, type: any}]}\n"
                       "links:\n"
                       "  - {from: {node: a, output: x}, to: {node: b, input: x}}\n"
                       "  - {from: {node: a, output: x}, to: {node: c, input: x}}\n"
                       "  - {from: {node: a, output: x}, to: {node: d, input: x}}\n";
    zf_flow *f = NULL;
    ZT_OK(zf_flow_load_string(text, strlen(text), NULL, NULL, NULL, NULL, &f));
    ZT_EQ(f->n_links, 3);
    ZT_STREQ(f->file, "<string>");
    zf_flow_free(f);
}

ZT_CASE(json_descriptor)
{
    /* Zenoh-Flow also reads .json descriptors: JSON is YAML */
    const char *text =
        "{\"name\":\"json-flow\",\"sources\":[{\"id\":\"s\",\"library\":\"s.so\","
        "\"outputs\":[\"o\"]}],\"sinks\":[{\"id\":\"d\",\"library\":\"d.so\","
        "\"inputs\":[\"i\"]}],\"links\":[{\"from\":{\"node\":\"s\",\"output\":\"o\"},"
        "\"to\":{\"node\":\"d\",\"input\":\"i\"}}]}";
    zf_flow *f = NULL;
    ZT_OK(zf_flow_load_string(text, strlen(text), "flow.json", "/srv", NULL, NULL, &f));
    ZT_STREQ(zf_flow_name(f), "json-flow");
    ZT_STREQ(f->nodes[1].library, "/srv/d.so");
    zf_flow_free(f);
}

ZT_CASE(paths)
{
    static const struct {
        const char *ref, *want;
    } cases[] = {
        {"x.so", "/a/b/x.so"},
        {"../x.so", "/a/x.so"},
        {"./lib//x.so", "/a/b/lib/x.so"},
        {"file:///abs//y/./z.so", "/abs/y/z.so"},
        {"file://rel/z.so", "/a/b/rel/z.so"},
        {"file://localhost/etc/x.so", "/etc/x.so"},
        {"file:///with%20space/%41.so", "/with space/A.so"},
        {"a%20b.so", "/a/b/a%20b.so"},
        {"/../../x.so", "/x.so"},
        {"../../../..", "/"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = NULL;
        char *p = zfi_path_resolve("/a/b", cases[i].ref, &why);
        if (!p || strcmp(p, cases[i].want))
            ZT_FAIL("'%s' -> '%s', expected '%s'", cases[i].ref, p ? p : "(null)", cases[i].want);
        free(p);
    }
    static const char *const bad[] = {"", "file://", "http://host/x.so", "zenoh://a/b",
                                      "file://a%00b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = NULL;
        char *p = zfi_path_resolve("/a/b", bad[i], &why);
        if (p || !why)
            ZT_FAIL("'%s' should be refused", bad[i]);
        free(p);
    }
    char *d = zfi_path_dirname("/x/y.yaml");
    ZT_STREQ(d, "/x");
    free(d);
    d = zfi_path_dirname("/y.yaml");
    ZT_STREQ(d, "/");
    free(d);
}

ZT_CASE(escaping_in_outputs)
{
    const char *text =
        "name: \"quo\\\"te\"\n"
        "sources:\n"
        "  - {id: \"s{x}|<y\", description: \"a\\nb \\\"c\\\"\", library: a.so,\n"
        "     outputs: [{id: o, type: \"t|{}\"}]}\n"
        "sinks:\n"
        "  - {id: d, library: d.so, inputs: [i], configuration: {k: \"\\t\\u0001\"}}\n"
        "links:\n"
        "  - {from: {node: \"s{x}|<y\", output: o}, to: {node: d, input: i},\n"
        "     shared_memory: {enabled: true}}\n";
    zf_flow *f = NULL;
    zf_diag *diag = zf_diag_new();
    zf_err rc = zf_flow_load_string(text, strlen(text), "esc.yaml", "/tmp", NULL, diag, &f);
    if (rc) {
        char *s = zf_diag_format(diag);
        fprintf(stderr, "%s", s);
        free(s);
    }
    zf_diag_free(diag);
    ZT_OK(rc);
    char *json = zf_flow_to_json(f);
    zf_config *j = parse_json(json);
    ZT_CHECK(j != NULL);
    ZT_STREQ(jstr(j, "name"), "quo\"te");
    ZT_STREQ(jstr(zf_config_at(zf_config_get(j, "nodes"), 0), "description"), "a\nb \"c\"");
    ZT_STREQ(jstr(zf_config_at(zf_config_get(j, "nodes"), 1), "configuration.k"), "\t\x01");
    zfi_config_free(j);
    free(json);
    char *dot = zf_flow_to_dot(f);
    ZT_CONTAINS(dot, "digraph \"quo\\\"te\"");
    ZT_CONTAINS(dot, "s\\{x\\}\\|\\<y\\n(source)");
    ZT_CONTAINS(dot, "<o0> o : t\\|\\{\\}");
    free(dot);
    zf_flow_free(f);
}

ZT_MAIN(ZT_ENTRY(extensions_are_parsed), ZT_ENTRY(vars_from_options_override),
        ZT_ENTRY(composite_settings_and_mapping), ZT_ENTRY(json_parses_back),
        ZT_ENTRY(json_of_compat_flow_parses_back), ZT_ENTRY(dot_has_nodes_and_edges),
        ZT_ENTRY(load_string_resolves_against_base_dir), ZT_ENTRY(references_keep_the_flow),
        ZT_ENTRY(fan_out_and_any_types), ZT_ENTRY(json_descriptor), ZT_ENTRY(paths),
        ZT_ENTRY(escaping_in_outputs))
