/* zfctl: run, validate and draw dataflows. */
#include "zfctl.h"

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
    {"ls", cmd_daemon, "list the daemon's instances: UUID NAME STATUS WORKERS"},
    {"status", cmd_daemon, "an instance in detail: nodes, links, pool"},
    {"start", cmd_daemon, "start a CREATED (or SUSPENDED) instance"},
    {"suspend", cmd_daemon, "stop an instance's sources, keeping its queues and memory"},
    {"resume", cmd_daemon, "resume a SUSPENDED instance"},
    {"destroy", cmd_daemon, "stop an instance gracefully and print the stop report"},
    {"workers", cmd_daemon, "list the daemons reachable"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: zfctl [--socket PATH] COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'zfctl COMMAND --help' describes a command.\n"
                 "exit codes: 0 ok, 1 the dataflow failed or leaked, 2 usage, 3 invalid "
                 "descriptor or library, 4 daemon error\n");
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
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "zfctl: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
