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

/* Zenoh-Flow's spellings: 0.6's `zfctl instance VERB` / `zfctl runtime VERB`,
 * 1.x's `zfctl daemon VERB` / `zfctl run-local`, and 0.5's `zfctl launch` /
 * `zfctl VERB instance`. A NULL word is a one-word spelling. */
static const struct {
    const char *group, *word, *cmd, *release;
} aliases[] = {
    {"instance", "create", "deploy", "0.6"}, /* created, not started (--start: started too) */
    {"instance", "start", "start", "0.6"},    {"instance", "abort", "suspend", "0.6"},
    {"instance", "delete", "destroy", "0.6"}, {"instance", "list", "ls", "0.6"},
    {"instance", "status", "status", "0.6"},  {"runtime", "list", "workers", "0.6"},
    {"runtime", "status", "workers", "0.6"},  {"daemon", "list", "workers", "1.x"},
    {"daemon", "status", "workers", "1.x"},   {"run-local", NULL, "run", "1.x"},
    {"launch", NULL, "deploy", "0.5"},        {"create", "instance", "deploy", "0.5"},
    {"start", "instance", "start", "0.5"},    {"stop", "instance", "suspend", "0.5"},
    {"delete", "instance", "destroy", "0.5"}, {"get", "instance", "status", "0.5"},
    {"list", "instances", "ls", "0.5"},       {"list", "runtimes", "workers", "0.5"},
    {"get", "runtime", "workers", "0.5"},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])

static bool creates(size_t i)
{
    return !strcmp(aliases[i].cmd, "deploy") && aliases[i].word;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: zfctl [--socket PATH] COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\nZenoh-Flow's spellings:\n");
    for (size_t i = 0; i < N_ALIASES; i++) {
        char spelling[40];
        snprintf(spelling, sizeof spelling, "%s%s%s", aliases[i].group, aliases[i].word ? " " : "",
                 aliases[i].word ? aliases[i].word : "");
        fprintf(out, "  %-18s = %s%s (Zenoh-Flow %s)\n", spelling, aliases[i].cmd,
                creates(i) ? " --no-start (--start: and start it)" : "", aliases[i].release);
    }
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

/* The alias argv[0] [argv[1]] spells, or -1. A 0.5 spelling whose first word
 * is a zflow command (`start instance ID`) is taken only with an argument
 * after it: `zfctl start instance` starts the instance named "instance". */
static long find_alias(int argc, char **argv)
{
    for (size_t i = 0; i < N_ALIASES; i++) {
        if (strcmp(argv[0], aliases[i].group))
            continue;
        if (!aliases[i].word)
            return (long)i;
        if (argc > 1 && !strcmp(argv[1], aliases[i].word) &&
            (strcmp(aliases[i].group, "start") || argc > 2))
            return (long)i;
    }
    return -1;
}

static bool is_group(const char *word)
{
    for (size_t i = 0; i < N_ALIASES; i++)
        if (aliases[i].word && !strcmp(word, aliases[i].group) && strcmp(word, "start"))
            return true;
    return false;
}

/* argv[0] is a group of Zenoh-Flow's spellings: run the zflow command it
 * spells, with its arguments (and for `create`, --no-start unless --start). */
static int alias(int argc, char **argv)
{
    long found = find_alias(argc, argv);
    if (found < 0) {
        const char *word = argc > 1 ? argv[1] : "";
        if (!strcmp(argv[0], "daemon") && !strcmp(word, "start")) {
            fprintf(stderr, "zfctl: 'daemon start' is zfd here: zfd --name NAME (or systemctl "
                            "start zfd); see 'zfd --help'\n");
            return EXIT_USAGE;
        }
        if (!strcmp(argv[0], "instance") && word[0] == '-') {
            fprintf(stderr,
                    "zfctl: 'instance %s' picks the Zenoh-Flow daemon to contact; zfctl talks to "
                    "the daemon on its socket (--socket PATH), and a flow's `mapping` places its "
                    "nodes on workers\n",
                    word);
            return EXIT_USAGE;
        }
        fprintf(stderr, "zfctl: unknown command '%s%s%s' (Zenoh-Flow's spellings: ", argv[0],
                *word ? " " : "", word);
        for (size_t i = 0, first = 1; i < N_ALIASES; i++)
            if (!strcmp(argv[0], aliases[i].group))
                fprintf(stderr, "%s%s %s", first ? "" : ", ", argv[0], aliases[i].word), first = 0;
        fprintf(stderr, ")\n");
        return EXIT_USAGE;
    }
    size_t i = (size_t)found;
    char **av = calloc((size_t)argc + 2, sizeof *av);
    if (!av)
        return EXIT_FAIL;
    int n = 0;
    bool create = creates(i), start = false;
    av[n++] = (char *)aliases[i].cmd;
    for (int k = aliases[i].word ? 2 : 1; k < argc; k++) {
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
    if (is_group(argv[1]) || find_alias(argc - 1, argv + 1) >= 0)
        return alias(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "zfctl: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
