/* zfctl: run, validate and draw dataflows. */
#include "zfctl.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", cmd_run, "run a dataflow in this process until a duration or Ctrl-C"},
    {"validate", cmd_validate, "check a descriptor and its node libraries"},
    {"graph", cmd_graph, "print the graph as Graphviz DOT, or render it"},
    {"deploy", cmd_daemon, "send a dataflow to the daemon (zfd); prints the instance UUID"},
    {"ls", cmd_daemon,
     "list the daemon's instances: UUID NAME STATUS WORKERS NODES UPTIME CPU MEM"},
    {"status", cmd_daemon, "an instance in detail: nodes, links, pool"},
    {"start", cmd_daemon, "start a CREATED (or SUSPENDED) instance"},
    {"suspend", cmd_daemon, "stop an instance's sources, keeping its queues and memory"},
    {"resume", cmd_daemon, "resume a SUSPENDED instance"},
    {"destroy", cmd_daemon, "stop an instance gracefully and print the stop report"},
    {"workers", cmd_daemon, "list the daemons reachable"},
    {"logs", cmd_logs, "an instance's log lines (--node, --level, --grep, --since, --follow)"},
    {"echo", cmd_echo, "print the capsules leaving an output (NODE.PORT): metadata, first bytes"},
    {"hz", cmd_hz, "print the rate of an output (NODE.PORT)"},
    {"record", cmd_record, "record an instance's outputs into the daemon's recordings folder"},
    {"replay", cmd_replay, "run a flow with its sources replaced by a recording (FILE FLOW)"},
    {"top", cmd_top, "a live view of the instances, their nodes and links (--once: one screen)"},
};

/* Zenoh-Flow's spellings: `zfctl instance VERB` and `zfctl runtime VERB`. */
static const struct {
    const char *group, *verb, *cmd;
} aliases[] = {
    {"instance", "create", "deploy"}, /* created, not started (as Zenoh-Flow; --start starts) */
    {"instance", "start", "start"},    {"instance", "abort", "suspend"},
    {"instance", "delete", "destroy"}, {"instance", "list", "ls"},
    {"instance", "status", "status"},  {"runtime", "list", "workers"},
    {"runtime", "status", "workers"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: zfctl [--socket PATH] COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\nZenoh-Flow's spellings:\n");
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        fprintf(out, "  %s %-7s = %s%s\n", aliases[i].group, aliases[i].verb, aliases[i].cmd,
                i == 0 ? " --no-start (--start: and start it)" : "");
    fprintf(out, "\n'zfctl COMMAND --help' describes a command.\n"
                 "exit codes: 0 ok, 1 the dataflow failed or leaked, 2 usage, 3 invalid "
                 "descriptor or library, 4 daemon error\n");
}

static int run_command(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[0], commands[i].name))
            return commands[i].fn(argc, argv);
    return EXIT_USAGE;
}

/* argv[0] is "instance" or "runtime": run the zflow command it spells. */
static int alias(int argc, char **argv)
{
    const char *verb = argc > 1 ? argv[1] : "";
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(argv[0], aliases[i].group) || strcmp(verb, aliases[i].verb))
            continue;
        /* the command's name, its arguments, and for `create` --no-start
         * unless --start was asked for */
        char **av = calloc((size_t)argc + 2, sizeof *av);
        if (!av)
            return EXIT_FAIL;
        int n = 0;
        bool create = !strcmp(aliases[i].verb, "create"), start = false;
        av[n++] = (char *)aliases[i].cmd;
        for (int k = 2; k < argc; k++) {
            if (create && !strcmp(argv[k], "--start"))
                start = true;
            else
                av[n++] = argv[k];
        }
        if (create && !start)
            av[n++] = "--no-start";
        int rc = run_command(n, av);
        free(av);
        return rc;
    }
    fprintf(stderr, "zfctl: unknown command '%s %s' (Zenoh-Flow's spellings: ", argv[0], verb);
    for (size_t i = 0, first = 1; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(argv[0], aliases[i].group))
            fprintf(stderr, "%s%s %s", first ? "" : ", ", argv[0], aliases[i].verb), first = 0;
    fprintf(stderr, ")\n");
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    /* A global --socket before the command is the daemon commands' option. */
    while (argc >= 3 && !strcmp(argv[1], "--socket")) {
        setenv("ZF_SOCKET", argv[2], 1);
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("zfctl %s (node ABI %u)\n", ZF_VERSION_STRING, ZF_ABI_VERSION);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "instance") || !strcmp(argv[1], "runtime"))
        return alias(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "zfctl: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
