/* zfctl run: load, validate, start, run until the duration ends or SIGINT /
 * SIGTERM, then stop gracefully and print statistics and the stop report. */
#include "zfctl.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void)
{
    printf("usage: zfctl run FLOW [options]\n"
           "\n"
           "Run the dataflow described by FLOW in this process (no daemon) until the\n"
           "duration ends or SIGINT/SIGTERM, then stop it gracefully: sources stop,\n"
           "in-flight data reaches the sinks, every node's fini runs. Prints per-link\n"
           "statistics, the stop report and the bytes still held in the pool.\n"
           "\n"
           "options:\n"
           "  --var KEY=VALUE       override a descriptor variable (repeatable)\n"
           "  --vars K=V[,K=V...]   the same, Zenoh-Flow's spelling (a list)\n"
           "  --duration D          run for D (e.g. 5s, 500ms); default: until Ctrl-C\n"
           "  --stats               also print per-node state and pool statistics\n"
           "  --stats-interval D    print a statistics snapshot every D while running\n"
           "  --workers N           worker threads (default: one per CPU)\n"
           "  --max-memory SIZE     cap the instance's pool (overrides max_memory)\n"
           "  --drain-timeout D     bound on the graceful stop (overrides drain_timeout)\n"
           "  --log LEVEL           error, warn (default), info, debug, trace\n"
           "  --record FILE         record the capsules of every linked output (or of\n"
           "                        --record-links A.out,B.out) to FILE\n"
           "  --replay FILE         replay FILE into FLOW's sources (zfctl replay), with\n"
           "                        --speed X or --as-fast-as-possible; ends when replayed\n"
           "  --isolate             run every node in a process of its own (isolation: process)\n"
           "\n"
           "exit status: 0 ok; 1 a node failed to start, a node was abandoned (or, isolated,\n"
           "killed at stop), or bytes leaked; 2 usage;\n"
           "3 invalid descriptor or node library\n");
}

typedef struct run_args {
    flow_args fa;
    int64_t duration_ns; /* <0: until a signal */
    int64_t interval_ns;
    bool stats;
    unsigned workers;
    uint64_t max_memory;
    int64_t drain_ns;
    zf_log_level log;
    const char *record, *record_links, *replay; /* operations.md */
    double speed;
    bool fast;
    bool isolate;
} run_args;

static void parse(int argc, char **argv, run_args *a)
{
    a->duration_ns = -1;
    a->log = ZF_LOG_WARN;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            help();
            exit(EXIT_OK);
        } else if (args_var(argc, argv, &i, &a->fa)) {
        } else if (args_opt(argc, argv, &i, "--duration", "run", &v)) {
            if (zf_parse_duration(v, &a->duration_ns) != ZF_OK)
                usage_error("run", "--duration: %s", zf_last_error());
        } else if (args_opt(argc, argv, &i, "--stats-interval", "run", &v)) {
            if (zf_parse_duration(v, &a->interval_ns) != ZF_OK)
                usage_error("run", "--stats-interval: %s", zf_last_error());
        } else if (!strcmp(s, "--stats")) {
            a->stats = true;
        } else if (!strcmp(s, "--isolate")) {
            a->isolate = true;
        } else if (args_opt(argc, argv, &i, "--workers", "run", &v)) {
            char *end = NULL;
            long w = strtol(v, &end, 10);
            if (end == v || *end || w < 1 || w > 1024)
                usage_error("run", "--workers takes a number from 1 to 1024");
            a->workers = (unsigned)w;
        } else if (args_opt(argc, argv, &i, "--max-memory", "run", &v)) {
            if (zf_parse_size(v, &a->max_memory) != ZF_OK)
                usage_error("run", "--max-memory: %s", zf_last_error());
        } else if (args_opt(argc, argv, &i, "--drain-timeout", "run", &v)) {
            if (zf_parse_duration(v, &a->drain_ns) != ZF_OK)
                usage_error("run", "--drain-timeout: %s", zf_last_error());
        } else if (args_opt(argc, argv, &i, "--log", "run", &v)) {
            if (zf_log_level_parse(v, &a->log) != ZF_OK)
                usage_error("run", "--log: %s", zf_last_error());
        } else if (args_opt(argc, argv, &i, "--record", "run", &v)) {
            a->record = v;
        } else if (args_opt(argc, argv, &i, "--record-links", "run", &v)) {
            a->record_links = v;
        } else if (args_opt(argc, argv, &i, "--replay", "run", &v)) {
            a->replay = v;
        } else if (args_opt(argc, argv, &i, "--speed", "run", &v)) {
            char *end = NULL;
            a->speed = strtod(v, &end);
            if (!*v || *end || !(a->speed > 0 && a->speed <= 1000))
                usage_error("run",
                            "--speed takes a factor above 0, at most 1000 (2: twice as fast)");
        } else if (!strcmp(s, "--as-fast-as-possible")) {
            a->fast = true;
        } else if (s[0] == '-') {
            usage_error("run", "unknown option '%s'", s);
        } else if (!a->fa.path) {
            a->fa.path = s;
        } else {
            usage_error("run", "one FLOW only (got '%s' and '%s')", a->fa.path, s);
        }
    }
    if (!a->fa.path)
        usage_error("run", "missing FLOW (a descriptor file)");
    if ((a->speed || a->fast) && !a->replay)
        usage_error("run", "--speed and --as-fast-as-possible are for a replay");
    if (a->record_links && !a->record)
        usage_error("run", "--record-links needs --record FILE");
}

/* The replay's end, told to the main thread (SIGUSR1), which waits for
 * signals. */
typedef struct replay_wait {
    zf_recording *rec;
    pthread_t main_thread;
} replay_wait;

static void *replay_waiter(void *arg)
{
    replay_wait *w = arg;
    zf_recording_wait(w->rec, -1);
    pthread_kill(w->main_thread, SIGUSR1);
    return NULL;
}

/* "a,b,c" into a NULL-terminated array (n entries), or NULL. */
static const char **split_list(char *s, size_t *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    const char **v = calloc(cap + 1, sizeof *v);
    *n = 0;
    for (char *tok = strtok(s, ","); v && tok; tok = strtok(NULL, ","))
        v[(*n)++] = tok;
    return v;
}

static void snapshot(zf_instance *inst, bool nodes)
{
    zf_instance_stats *s = NULL;
    if (zf_instance_stats_get(inst, &s) != ZF_OK)
        return;
    if (nodes)
        print_nodes(stdout, s);
    print_links(stdout, s);
    if (nodes)
        print_pool(stdout, s);
    zf_instance_stats_free(s);
    fflush(stdout);
}

/* Instance creation (every node's init, each bounded by the runtime) on a
 * thread of its own, so that SIGINT / SIGTERM still end zfctl run while an
 * init takes its time: the thread tells the main one with SIGUSR1. */
typedef struct creation {
    zf_runtime *rt;
    const zf_flow *flow;
    const zf_instance_options *io;
    zf_diag *diag;
    zf_instance *inst;
    zf_err err;
    pthread_t main_thread;
} creation;

static void *create_main(void *arg)
{
    creation *c = arg;
    c->err = zf_instance_create(c->rt, c->flow, c->io, c->diag, &c->inst);
    pthread_kill(c->main_thread, SIGUSR1);
    return NULL;
}

/* The instance, or a signal that came first (*sig: SIGINT or SIGTERM). */
static zf_err create_interruptible(creation *c, const sigset_t *sigs, int *sig)
{
    *sig = 0;
    c->main_thread = pthread_self();
    pthread_t t;
    if (pthread_create(&t, NULL, create_main, c) != 0) {
        c->err = zf_instance_create(c->rt, c->flow, c->io, c->diag, &c->inst);
        return c->err;
    }
    for (;;) {
        int got = 0;
        if (sigwait(sigs, &got) != 0)
            continue;
        if (got == SIGUSR1)
            break;
        *sig = got; /* an init still runs: the process ends without waiting */
        return ZF_ETIMEDOUT;
    }
    pthread_join(t, NULL);
    return c->err;
}

int cmd_run(int argc, char **argv)
{
    run_args a = {0};
    parse(argc, argv, &a);
    zf_log_set(zf_log_stderr, NULL, a.log);

    /* Signals are taken synchronously by this thread; every thread the
     * runtime starts inherits the blocked mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigset_t create_sigs = sigs;
    sigaddset(&create_sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &create_sigs, NULL);

    zf_flow *flow = load_flow(&a.fa);
    free(a.fa.vars);
    if (!flow)
        return EXIT_INVALID;
    zf_runtime_options ro = {.workers = a.workers};
    zf_runtime *rt = NULL;
    if (zf_runtime_create(&ro, &rt) != ZF_OK) {
        fprintf(stderr, "zfctl run: %s\n", zf_last_error());
        zf_flow_free(flow);
        return EXIT_FAIL;
    }
    zf_recording *replay = NULL;
    if (a.replay && (zf_recording_open(a.replay, &replay) != ZF_OK ||
                     zf_recording_set_speed(replay, a.speed ? a.speed : 1.0, a.fast) != ZF_OK)) {
        fprintf(stderr, "zfctl replay: %s\n", zf_last_error());
        zf_recording_close(replay);
        zf_runtime_destroy(rt);
        zf_flow_free(flow);
        return EXIT_INVALID;
    }
    zf_diag *diag = zf_diag_new();
    zf_instance_options io = {.max_memory = a.max_memory,
                              .drain_timeout_ns = a.drain_ns,
                              .replay = replay,
                              .isolate_all = a.isolate};
    creation cr = {.rt = rt, .flow = flow, .io = &io, .diag = diag};
    int early = 0;
    zf_err err = create_interruptible(&cr, &create_sigs, &early);
    if (early) {
        fprintf(stderr, "zfctl run: %s while the nodes were initializing: exiting\n",
                early == SIGINT ? "SIGINT" : "SIGTERM");
        fflush(stdout);
        _exit(EXIT_FAIL); /* an init is still running: nothing can be torn down under it */
    }
    zf_instance *inst = cr.inst; /* the creating thread was joined */
    if (err != ZF_OK) {
        print_diag(diag);
        if (!zf_diag_count(diag))
            fprintf(stderr, "zfctl run: %s\n", zf_last_error());
        zf_diag_free(diag);
        zf_runtime_destroy(rt);
        zf_flow_free(flow);
        zf_recording_close(replay);
        /* an init that failed or never returned is the dataflow failing */
        return err == ZF_ENODE || err == ZF_ETIMEDOUT ? EXIT_FAIL : EXIT_INVALID;
    }
    zf_diag_free(diag);
    printf("zflow: running '%s' (instance %s)", zf_flow_name(flow), zf_instance_uuid(inst));
    if (a.duration_ns >= 0)
        printf(" for %.1f s\n", (double)a.duration_ns / 1e9);
    else
        printf(" until Ctrl-C\n");
    fflush(stdout);
    zf_recorder *recorder = NULL;
    if (a.record) {
        char *list = a.record_links ? strdup(a.record_links) : NULL;
        size_t n = 0;
        const char **outs = list ? split_list(list, &n) : NULL;
        zf_recorder_options ro2 = {.outputs = outs, .n_outputs = n};
        zf_err re = zf_recorder_start(inst, a.record, &ro2, &recorder);
        free((void *)outs);
        free(list);
        if (re != ZF_OK) {
            fprintf(stderr, "zfctl run: --record %s: %s\n", a.record, zf_last_error());
            zf_instance_destroy(inst);
            zf_runtime_destroy(rt);
            zf_flow_free(flow);
            zf_recording_close(replay);
            return EXIT_FAIL;
        }
    }
    if (zf_instance_start(inst) != ZF_OK) { /* a CREATED instance starts: only a bug lands here */
        fprintf(stderr, "zfctl run: %s\n", zf_last_error());
        if (recorder) /* the start failed: nothing recorded to report */
            ZF_IGNORE(zf_recorder_stop(recorder, NULL));
        zf_instance_destroy(inst);
        zf_runtime_destroy(rt);
        zf_flow_free(flow);
        zf_recording_close(replay);
        return EXIT_FAIL;
    }
    replay_wait rw = {.rec = replay, .main_thread = pthread_self()};
    pthread_t waiter;
    bool waiting = replay && pthread_create(&waiter, NULL, replay_waiter, &rw) == 0;
    if (replay)
        sigaddset(&sigs, SIGUSR1); /* the replay's end */

    uint64_t t0 = zf_clock_ns(), next_snap = t0 + (uint64_t)a.interval_ns;
    int sig = 0;
    for (;;) {
        uint64_t now = zf_clock_ns();
        int64_t wait = 3600ll * 1000000000ll;
        if (a.duration_ns >= 0) {
            int64_t left = a.duration_ns - (int64_t)(now - t0);
            if (left <= 0)
                break;
            wait = left;
        }
        if (a.interval_ns > 0) {
            if (now >= next_snap) {
                printf("--- after %.1f s\n", (double)(now - t0) / 1e9);
                snapshot(inst, a.stats);
                next_snap += (uint64_t)a.interval_ns;
            }
            if ((int64_t)(next_snap - now) < wait)
                wait = (int64_t)(next_snap - now);
        }
        struct timespec ts = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
        sig = sigtimedwait(&sigs, NULL, &ts);
        if (sig > 0)
            break;
    }
    if (sig == SIGUSR1)
        printf("zflow: replay of %s done, stopping\n", a.replay);
    else if (sig > 0)
        printf("zflow: %s received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    double ran = (double)(zf_clock_ns() - t0) / 1e9;

    zf_stop_report rep;
    /* ZF_OK for an instance: what the stop met is in rep, printed below */
    ZF_IGNORE(zf_instance_stop(inst, &rep));
    int rc_extra = EXIT_OK;
    if (recorder) {
        zf_recorder_stats rs;
        if (zf_recorder_stop(recorder, &rs) != ZF_OK) {
            fprintf(stderr, "zfctl run: --record %s: %s\n", a.record, zf_last_error());
            rc_extra = EXIT_FAIL;
        }
        printf("zflow: recorded %llu capsules (%llu bytes) to %s; %llu dropped%s; writer CPU "
               "%.3f s in %.3f s\n",
               (unsigned long long)rs.records, (unsigned long long)rs.bytes, a.record,
               (unsigned long long)rs.dropped, rs.limit_reached ? " (size limit reached)" : "",
               (double)rs.cpu_ns / 1e9, (double)rs.elapsed_ns / 1e9);
    }
    if (replay) {
        uint64_t sent = 0, late = 0;
        zf_recording_replayed(replay, &sent, &late);
        double rec_s = (double)zf_recording_duration_ns(replay) / 1e9;
        printf("zflow: replayed %llu of %llu capsules; recorded over %.3f s, replayed in %.3f s "
               "(%llu sent more than 5 ms late)\n",
               (unsigned long long)sent, (unsigned long long)zf_recording_count(replay), rec_s, ran,
               (unsigned long long)late);
        if (waiting) {
            zf_recording_wait(replay, -1); /* the sources' threads were joined at fini */
            pthread_join(waiter, NULL);
        }
    }
    zf_instance_stats *s = NULL;
    printf("zflow: ran %.1f s\n", ran);
    if (zf_instance_stats_get(inst, &s) == ZF_OK) {
        if (a.stats)
            print_nodes(stdout, s);
        print_links(stdout, s);
        if (a.stats)
            print_pool(stdout, s);
        zf_instance_stats_free(s);
    }
    print_report(stdout, &rep);
    if (rep.nodes_abandoned)
        fprintf(stderr, "zfctl run: %llu node(s) abandoned at stop (stuck in a callback or fini)\n",
                (unsigned long long)rep.nodes_abandoned);
    if (rep.nodes_killed_at_stop)
        fprintf(stderr,
                "zfctl run: %llu isolated node(s) killed at stop (stuck in a callback or fini, "
                "or unreachable): what they held was reclaimed\n",
                (unsigned long long)rep.nodes_killed_at_stop);
    zf_instance_destroy(inst);
    zf_runtime_destroy(rt);
    zf_flow_free(flow);
    zf_recording_close(replay);
    return rep.bytes_leaked || rep.nodes_abandoned || rep.nodes_killed_at_stop ? EXIT_FAIL
                                                                               : rc_extra;
}
