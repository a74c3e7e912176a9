/* The node loader: every way a node library can be wrong is refused with a
 * message naming the node, the file and what was expected. */
#include "harness.h"
#include "testutil.h"

static const char *sink_flow(const char *lib, const char *in_type)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "name: loader\n"
             "sources:\n"
             "  - id: src\n"
             "    library: \"{{ NODES }}/libt_gen.so\"\n"
             "    outputs: [{id: out, type: any}]\n"
             "sinks:\n"
             "  - id: snk\n"
             "    library: \"%s\"\n"
             "    inputs: [{id: in, type: %s}]\n"
             "links:\n"
             "  - from: {node: src, output: out}\n"
             "    to: {node: snk, input: in}\n",
             lib, in_type);
    return buf;
}

/* Load, check libraries; return the first error and the diagnostics text. */
static zf_err check(const char *yaml, char **text)
{
    zf_diag *d = zf_diag_new();
    zf_err e;
    zf_flow *f = zt_flow(yaml, NULL, d, &e);
    if (f) {
        e = zf_flow_check_libraries(f, d);
        zf_flow_free(f);
    }
    *text = zf_diag_format(d);
    zf_diag_free(d);
    return e;
}

ZT_CASE(valid_libraries_pass)
{
    char *t;
    ZT_OK(check(sink_flow("{{ NODES }}/libt_count.so", "bytes"), &t));
    free(t);
}

ZT_CASE(missing_library)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ NODES }}/libt_nowhere.so", "bytes"), &t), ZF_ENOTFOUND);
    ZT_CONTAINS(t, "test.yaml:7:");
    ZT_CONTAINS(t, "library");
    ZT_CONTAINS(t, "libt_nowhere.so does not exist");
    ZT_CONTAINS(t, "'snk'");
    free(t);
}

ZT_CASE(not_a_zflow_node)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ NODES }}/libt_not_a_node.so", "bytes"), &t), ZF_EABI);
    ZT_CONTAINS(t, "is not a zflow node");
    ZT_CONTAINS(t, "zf_node_declare");
    free(t);
}

ZT_CASE(not_a_shared_library)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ TMP }}/../../etc/hostname", "bytes"), &t), ZF_EABI);
    ZT_CONTAINS(t, "cannot load");
    free(t);
}

ZT_CASE(abi_mismatch)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ NODES }}/libt_bad_abi.so", "bytes"), &t), ZF_EABI);
    ZT_CONTAINS(t, "ABI 999");
    ZT_CONTAINS(t, "rebuild");
    free(t);
}

ZT_CASE(null_declaration)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ NODES }}/libt_null_decl.so", "bytes"), &t), ZF_EABI);
    ZT_CONTAINS(t, "returned NULL");
    free(t);
}

ZT_CASE(wrong_kind)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ NODES }}/libt_relay.so", "bytes"), &t), ZF_ETYPE);
    ZT_CONTAINS(t, "declared as a sink in the descriptor");
    ZT_CONTAINS(t, "declares a node of kind operator");
    free(t);
}

ZT_CASE(port_type_mismatch)
{
    char *t;
    ZT_EQ(check(sink_flow("{{ NODES }}/libt_count.so", "image/raw"), &t), ZF_ETYPE);
    ZT_CONTAINS(t, "has type 'image/raw' in the descriptor but 'bytes'");
    free(t);
}

ZT_CASE(port_missing_in_library)
{
    const char *yaml = "name: ports\n"
                       "sources:\n"
                       "  - id: src\n"
                       "    library: \"{{ NODES }}/libt_gen.so\"\n"
                       "    outputs: [frames]\n"
                       "sinks:\n"
                       "  - id: snk\n"
                       "    library: \"{{ NODES }}/libt_count.so\"\n"
                       "    inputs: [in]\n"
                       "links:\n"
                       "  - from: {node: src, output: frames}\n"
                       "    to: {node: snk, input: in}\n";
    char *t;
    ZT_EQ(check(yaml, &t), ZF_ETYPE);
    ZT_CONTAINS(t, "has no output port 'frames' (it declares: out)");
    ZT_CONTAINS(t, "declares output port 'out', which the descriptor does not list");
    free(t);
}

ZT_CASE(init_failure_reports_the_nodes_message)
{
    zf_diag *d = zf_diag_new();
    zf_flow *f = zt_flow(sink_flow("{{ NODES }}/libt_init_fail.so", "bytes"), NULL, d, NULL);
    ZT_CHECK(f);
    zf_runtime *rt = NULL;
    ZT_OK(zf_runtime_create(NULL, &rt));
    zf_instance *inst = NULL;
    ZT_EQ(zf_instance_create(rt, f, NULL, d, &inst), ZF_ENODE);
    ZT_CHECK(inst == NULL);
    char *t = zf_diag_format(d);
    ZT_CONTAINS(t, "node 'snk': init failed: cannot open /dev/video7: no such device");
    free(t);
    zf_diag_free(d);
    zf_runtime_destroy(rt);
    zf_flow_free(f);
}

ZT_MAIN(ZT_ENTRY(valid_libraries_pass), ZT_ENTRY(missing_library), ZT_ENTRY(not_a_zflow_node),
        ZT_ENTRY(not_a_shared_library), ZT_ENTRY(abi_mismatch), ZT_ENTRY(null_declaration),
        ZT_ENTRY(wrong_kind), ZT_ENTRY(port_type_mismatch), ZT_ENTRY(port_missing_in_library),
        ZT_ENTRY(init_failure_reports_the_nodes_message))
