/* zfctl record (a daemon's instance, into the daemon's recordings folder)
 * and zfctl replay (a recording into a flow run in this process, as zfctl
 * run does). docs/operations.md has the file format. */
#include "zfctl.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void record_help(void)
{
    printf("usage: zfctl record ID -o NAME [--links A.out,B.out] [--duration D] [--max-size SIZE]\n"
           "       zfctl record ID --stop\n"
           "                   [--socket PATH] [-o json]\n\n"
           "Record the capsules leaving the instance's outputs (every linked output, or\n"
           "--links) into the daemon's recordings folder (STATE/recordings/NAME; NAME is a\n"
           "plain file name). With --duration, stop after D and print what was recorded;\n"
           "otherwise the recording runs until 'zfctl record ID --stop', its --max-size,\n"
           "or the instance's destroy. Replay it with 'zfctl replay FILE FLOW'.\n");
}

/* One record request; its result printed. */
static int record_call(const daemon_conn *c, zf_request *req, bool json)
{
    zf_config *tree = NULL;
    int rc = EXIT_OK;
    const zf_config *r = daemon_call(c, req, &tree, &rc);
    if (r && json) {
        char *j = zf_config_to_json(r);
        printf("%s\n", j ? j : "null");
        free(j);
    } else if (r && req->start) {
        printf("recording %s to %s\n", cfg_str(r, "uuid"), cfg_str(r, "path"));
    } else if (r) {
        printf("recorded %lld capsules (%lld bytes) to %s; %lld dropped%s; writer CPU %.3f s in "
               "%.3f s\n",
               cfg_num(r, "records"), cfg_num(r, "bytes"), cfg_str(r, "path"),
               cfg_num(r, "dropped"),
               !strcmp(cfg_str(r, "limit_reached"), "true") ? " (size limit reached)" : "",
               (double)cfg_num(r, "cpu_ns") / 1e9, (double)cfg_num(r, "elapsed_ns") / 1e9);
        if (cfg_num(r, "dropped"))
            rc = EXIT_FAIL; /* the recording has gaps */
    }
    zf_config_free(tree);
    return rc;
}

int cmd_record(int argc, char **argv)
{
    daemon_conn conn = {.cmd = "record"};
    zf_request req = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_RECORD, .start = true};
    int64_t duration = -1;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            record_help();
            return EXIT_OK;
        } else if (args_opt(argc, argv, &i, "--socket", "record", &v)) {
            conn.socket = v;
        } else if (args_opt(argc, argv, &i, "-o", "record", &v) ||
                   args_opt(argc, argv, &i, "--output", "record", &v)) {
            if (!strcmp(v, "json"))
                json = conn.json = true;
            else
                req.file = v;
        } else if (args_opt(argc, argv, &i, "--links", "record", &v)) {
            req.link = v;
        } else if (args_opt(argc, argv, &i, "--duration", "record", &v)) {
            if (zf_parse_duration(v, &duration) != ZF_OK || duration <= 0)
                usage_error("record", "--duration takes a duration (e.g. 2s)");
        } else if (args_opt(argc, argv, &i, "--max-size", "record", &v)) {
            if (zf_parse_size(v, &req.max_bytes) != ZF_OK)
                usage_error("record", "--max-size takes a size (e.g. 1GiB)");
        } else if (!strcmp(s, "--stop")) {
            req.start = false;
        } else if (s[0] == '-') {
            usage_error("record", "unknown option '%s'", s);
        } else if (!req.id) {
            req.id = s;
        } else {
            usage_error("record", "unexpected argument '%s'", s);
        }
    }
    if (!req.id)
        usage_error("record", "missing ID (a UUID, a unique prefix of one, or a name)");
    if (req.start && !req.file)
        usage_error("record", "missing -o NAME (the recording's file name)");
    if (!req.start && (req.file || req.link || duration >= 0))
        usage_error("record", "--stop takes only the ID");
    /* SIGINT during --duration stops the recording early, cleanly. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    if (duration >= 0)
        sigprocmask(SIG_BLOCK, &sigs, NULL);
    int rc = record_call(&conn, &req, json);
    if (rc != EXIT_OK || duration < 0)
        return rc;
    struct timespec ts = {.tv_sec = duration / 1000000000, .tv_nsec = duration % 1000000000};
    sigtimedwait(&sigs, NULL, &ts); /* the duration, or a signal */
    zf_request stop = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_RECORD, .id = req.id};
    return record_call(&conn, &stop, json);
}

int cmd_replay(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: zfctl replay FILE FLOW [--speed X | --as-fast-as-possible] [zfctl run's "
               "options]\n\n"
               "Run FLOW in this process with the sources that produced FILE's recorded outputs\n"
               "replaced by a replay of FILE: the recorded capsules (payload and sequence\n"
               "number) at their recorded pace (times X with --speed, or as fast as the links\n"
               "take them), then stop gracefully as zfctl run does. A truncated or foreign\n"
               "FILE is refused with its name and the offset where it goes wrong (exit 3).\n");
        return EXIT_OK;
    }
    if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-')
        usage_error("replay", "expected FILE FLOW (a recording, then a descriptor)");
    /* zfctl run FLOW --replay FILE [options] */
    char **v = calloc((size_t)argc + 2, sizeof *v);
    if (!v)
        return EXIT_FAIL;
    int n = 0;
    v[n++] = "run";
    v[n++] = argv[2];
    v[n++] = "--replay";
    v[n++] = argv[1];
    for (int i = 3; i < argc; i++)
        v[n++] = argv[i];
    int rc = cmd_run(n, v);
    free(v);
    return rc;
}
