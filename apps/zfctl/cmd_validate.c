/* zfctl validate and zfctl graph. */
#include "zfctl.h"

#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void validate_help(void)
{
    printf("usage: zfctl validate FLOW [--var KEY=VALUE]... [--vars K=V,...] [--flatten] [--json]\n"
           "\n"
           "Check FLOW: its YAML, its fields, composite flattening, links, port types,\n"
           "and (unless --flatten) every node library: that it loads, speaks this ABI and\n"
           "declares the ports and types the descriptor says. Every problem found is\n"
           "reported as FILE:LINE:COL: error: FIELD: MESSAGE. FLOW may be a node file\n"
           "(what `descriptor:` names): it is checked as a node, its kind told by its ports.\n"
           "\n"
           "  --flatten   check the structure only (no library is opened) and print the\n"
           "              flattened graph\n"
           "  --json      print the flattened graph (with --flatten) or the errors as JSON\n"
           "\n"
           "exit status: 0 valid; 2 usage; 3 invalid\n");
}

static void diag_json(const zf_diag *d)
{
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_bool(w, "valid", false);
    zf_json_open_array(w, "errors");
    for (size_t i = 0; i < zf_diag_count(d); i++) {
        const zf_diag_entry *e = zf_diag_get(d, i);
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "file", e->file ? e->file : "");
        zf_json_put_uint(w, "line", e->line);
        zf_json_put_uint(w, "col", e->col);
        zf_json_put_string(w, "field", e->field ? e->field : "");
        zf_json_put_string(w, "message", e->message);
        zf_json_close(w);
    }
    zf_json_close(w);
    zf_json_close(w);
    char *text = zf_json_writer_finish(w);
    if (text)
        printf("%s\n", text);
    else
        fprintf(stderr, "zfctl: %s\n", zf_last_error());
    zf_free(text);
}

int cmd_validate(int argc, char **argv)
{
    flow_args fa = {0};
    bool flatten = false, json = false;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            validate_help();
            return EXIT_OK;
        } else if (args_var(argc, argv, &i, &fa)) {
        } else if (!strcmp(s, "--flatten")) {
            flatten = true;
        } else if (!strcmp(s, "--json")) {
            json = true;
        } else if (s[0] == '-') {
            usage_error("validate", "unknown option '%s'", s);
        } else if (!fa.path) {
            fa.path = s;
        } else {
            usage_error("validate", "one FLOW only");
        }
    }
    if (!fa.path)
        usage_error("validate", "missing FLOW (a descriptor file)");
    zf_diag *d = zf_diag_new();
    /* a node file given on its own is checked as a node */
    zf_flow_options opt = {.vars = fa.vars, .n_vars = fa.n_vars, .node_file = true};
    zf_flow *f = NULL;
    zf_err e = zf_flow_load(fa.path, &opt, d, &f);
    free(fa.vars);
    if (e == ZF_OK && !flatten)
        e = zf_flow_check_libraries(f, d);
    int rc = EXIT_OK;
    if (e != ZF_OK) {
        if (!zf_diag_count(d))
            fprintf(stderr, "%s: error: %s\n", fa.path, zf_last_error());
        else if (json)
            diag_json(d);
        else
            print_diag(d);
        if (!json || !zf_diag_count(d))
            fprintf(stderr, "%s: %zu error%s\n", fa.path, zf_diag_count(d),
                    zf_diag_count(d) == 1 ? "" : "s");
        rc = EXIT_INVALID;
    } else if (flatten) {
        char *j = zf_flow_to_json(f);
        printf("%s\n", j ? j : "{}");
        free(j);
    } else if (json) {
        printf("{\"valid\":true}\n");
    } else if (zf_flow_is_node_file(f)) {
        printf("%s: valid node file: %s '%s'", fa.path,
               zf_flow_node_count(f) > 1 ? "composite operator"
                                         : zf_node_kind_name(zf_flow_node_kind(f, 0)),
               zf_flow_name(f));
        if (zf_flow_node_count(f) > 1)
            printf(" (%zu nodes)", zf_flow_node_count(f));
        printf("\n");
    } else {
        printf("%s: valid\n", fa.path);
    }
    zf_flow_free(f);
    zf_diag_free(d);
    return rc;
}

static void graph_help(void)
{
    printf("usage: zfctl graph FLOW [--var KEY=VALUE]... [--svg FILE | --png FILE]\n"
           "\n"
           "Print the flattened graph as Graphviz DOT (nodes with their ports and types,\n"
           "edges with their queue settings), or render it with Graphviz's dot.\n");
}

int cmd_graph(int argc, char **argv)
{
    flow_args fa = {0};
    const char *out = NULL, *fmt = NULL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            graph_help();
            return EXIT_OK;
        } else if (args_var(argc, argv, &i, &fa)) {
        } else if (args_opt(argc, argv, &i, "--svg", "graph", &out)) {
            fmt = "-Tsvg";
        } else if (args_opt(argc, argv, &i, "--png", "graph", &out)) {
            fmt = "-Tpng";
        } else if (s[0] == '-') {
            usage_error("graph", "unknown option '%s'", s);
        } else if (!fa.path) {
            fa.path = s;
        } else {
            usage_error("graph", "one FLOW only");
        }
    }
    if (!fa.path)
        usage_error("graph", "missing FLOW (a descriptor file)");
    zf_flow *f = load_flow(&fa);
    free(fa.vars);
    if (!f)
        return EXIT_INVALID;
    char *dot = zf_flow_to_dot(f);
    zf_flow_free(f);
    if (!dot) {
        fprintf(stderr, "zfctl graph: out of memory\n");
        return EXIT_FAIL;
    }
    if (!out) {
        fputs(dot, stdout);
        free(dot);
        return EXIT_OK;
    }
    /* Render: dot FMT -o FILE, reading the graph on stdin. */
    int fds[2];
    if (pipe(fds) != 0) {
        free(dot);
        return EXIT_FAIL;
    }
    posix_spawn_file_actions_t fa_;
    posix_spawn_file_actions_init(&fa_);
    posix_spawn_file_actions_adddup2(&fa_, fds[0], 0);
    posix_spawn_file_actions_addclose(&fa_, fds[1]);
    char *args[] = {"dot", (char *)fmt, "-o", (char *)out, NULL};
    pid_t pid;
    int e = posix_spawnp(&pid, "dot", &fa_, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa_);
    close(fds[0]);
    if (e != 0) {
        close(fds[1]);
        free(dot);
        fprintf(stderr, "zfctl graph: Graphviz's 'dot' is not installed (apt-get install "
                        "graphviz); 'zfctl graph FLOW' without --svg/--png prints DOT\n");
        return EXIT_FAIL;
    }
    size_t len = strlen(dot), off = 0;
    while (off < len) {
        ssize_t w = write(fds[1], dot + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fds[1]);
    free(dot);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "zfctl graph: dot failed to render %s\n", out);
        return EXIT_FAIL;
    }
    printf("%s\n", out);
    return EXIT_OK;
}
