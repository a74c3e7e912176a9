/* zfctl's operating commands: logs (an instance's log lines, followed live)
 * and top (a full-screen view of the daemon's instances, refreshed every
 * second, or --once for scripts). docs/operations.md describes them. */
#include "zfctl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* SIGINT / SIGTERM end the loops of --follow and top (no SA_RESTART: a
 * wait is interrupted). */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool args_daemon(int argc, char **argv, int *i, daemon_conn *c)
{
    const char *v = NULL;
    if (args_opt(argc, argv, i, "--socket", c->cmd, &v)) {
        c->socket = v;
        return true;
    }
    if (!args_opt(argc, argv, i, "-o", c->cmd, &v) &&
        !args_opt(argc, argv, i, "--output", c->cmd, &v))
        return false;
    if (strcmp(v, "json") && strcmp(v, "table"))
        usage_error(c->cmd, "-o takes json or table");
    c->json = !strcmp(v, "json");
    return true;
}

/* ---- logs ---- */

static void logs_help(void)
{
    printf("usage: zfctl logs ID [--node N] [--level L] [--grep RE] [--since D] [--follow]\n"
           "                  [--socket PATH] [-o json]\n\n"
           "An instance's log lines, oldest first, from the daemon's log files (kept also\n"
           "after the instance is destroyed: give its whole UUID then).\n"
           "  --node N     only node N's lines (its own, and the runtime's about it)\n"
           "  --level L    at most this verbose: error, warn, info, debug, trace\n"
           "  --grep RE    only lines matching the extended regular expression RE\n"
           "  --since D    only the last D (e.g. 30s, 10m, 2h)\n"
           "  --follow     then print new lines as they come, until interrupted\n");
}

int cmd_logs(int argc, char **argv)
{
    daemon_conn conn = {.cmd = "logs"};
    zf_request req = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_LOGS};
    bool follow = false;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            logs_help();
            return EXIT_OK;
        } else if (args_daemon(argc, argv, &i, &conn)) {
        } else if (args_opt(argc, argv, &i, "--node", "logs", &v)) {
            req.node = v;
        } else if (args_opt(argc, argv, &i, "--level", "logs", &v)) {
            req.level = v;
            zf_log_level lv;
            if (zf_log_level_parse(req.level, &lv) != ZF_OK)
                usage_error("logs", "--level: %s", zf_last_error());
        } else if (args_opt(argc, argv, &i, "--grep", "logs", &v)) {
            req.grep = v;
        } else if (args_opt(argc, argv, &i, "--since", "logs", &v)) {
            req.since = v;
            int64_t d;
            if (zf_parse_duration(req.since, &d) != ZF_OK)
                usage_error("logs", "--since takes a duration (30s, 10m, 2h), not '%s'", req.since);
        } else if (!strcmp(s, "-f") || !strcmp(s, "--follow")) {
            follow = true;
        } else if (s[0] == '-') {
            usage_error("logs", "unknown option '%s'", s);
        } else if (!req.id) {
            req.id = s;
        } else {
            usage_error("logs", "unexpected argument '%s'", s);
        }
    }
    if (!req.id)
        usage_error("logs", "missing ID (a UUID, a unique prefix of one, or a name)");
    if (follow)
        catch_signals();
    char uuid[64] = "";
    int rc = EXIT_OK;
    do {
        zf_config *tree = NULL;
        const zf_config *r = daemon_call(&conn, &req, &tree, &rc);
        if (!r) {
            zf_config_free(tree);
            return interrupted ? EXIT_OK : rc;
        }
        const zf_config *lines = zf_config_get(r, "lines");
        if (conn.json) {
            char *j = zf_config_to_json(r);
            printf("%s\n", j ? j : "null");
            free(j);
        } else {
            if (cfg_num(r, "omitted"))
                fprintf(stderr, "zfctl logs: %lld older lines not shown\n", cfg_num(r, "omitted"));
            if (cfg_num(r, "lost"))
                fprintf(stderr, "zfctl logs: %lld lines lost (this follower fell behind)\n",
                        cfg_num(r, "lost"));
            for (size_t i = 0; i < zf_config_len(lines); i++)
                printf("%s\n", zf_config_text(zf_config_at(lines, i)));
        }
        fflush(stdout);
        /* Follow by the UUID: the instance's logs outlive it. */
        snprintf(uuid, sizeof uuid, "%s", cfg_str(r, "uuid"));
        req.id = uuid;
        req.after = (uint64_t)cfg_num(r, "cursor"); /* the next line's number */
        req.wait_ms = 10000;
        zf_config_free(tree);
    } while (follow && !interrupted);
    return EXIT_OK;
}

/* ---- echo, hz ---- */

typedef struct tap_args {
    daemon_conn conn;
    const char *id, *link;
    long count;     /* echo: capsules; hz: reports (0: until interrupted) */
    int64_t window; /* hz */
} tap_args;

static void tap_parse(int argc, char **argv, const char *cmd, tap_args *a)
{
    a->conn.cmd = cmd;
    a->window = 1000000000;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            if (!strcmp(cmd, "echo"))
                printf("usage: zfctl echo ID NODE.PORT [--count N] [--socket PATH] [-o json]\n\n"
                       "Print the capsules leaving output NODE.PORT: sequence number, timestamp\n"
                       "(monotonic), size, type and first bytes; N of them, or until "
                       "interrupted.\nRead-only: a tap that falls behind drops and says so.\n");
            else
                printf("usage: zfctl hz ID NODE.PORT [--window 1s] [--count N] [--socket PATH]\n"
                       "                [-o json]\n\n"
                       "Print the rate of output NODE.PORT measured over each window, with the\n"
                       "period's min, max and standard deviation; N reports, or until "
                       "interrupted.\n");
            exit(EXIT_OK);
        } else if (args_daemon(argc, argv, &i, &a->conn)) {
        } else if (args_opt(argc, argv, &i, "--count", cmd, &v)) {
            char *end = NULL;
            a->count = strtol(v, &end, 10);
            if (!*v || *end || a->count < 1)
                usage_error(cmd, "--count takes a number >= 1");
        } else if (!strcmp(cmd, "hz") && args_opt(argc, argv, &i, "--window", cmd, &v)) {
            if (zf_parse_duration(v, &a->window) != ZF_OK || a->window < 100000000 ||
                a->window > 30000000000LL)
                usage_error(cmd, "--window takes a duration from 100ms to 30s");
        } else if (s[0] == '-') {
            usage_error(cmd, "unknown option '%s'", s);
        } else if (!a->id) {
            a->id = s;
        } else if (!a->link) {
            a->link = s;
        } else {
            usage_error(cmd, "unexpected argument '%s'", s);
        }
    }
    if (!a->id || !a->link)
        usage_error(cmd, "expected ID NODE.PORT (an instance and one of its output ports)");
}

int cmd_echo(int argc, char **argv)
{
    tap_args a = {0};
    tap_parse(argc, argv, "echo", &a);
    catch_signals();
    long shown = 0;
    unsigned long long dropped = 0;
    int rc = EXIT_OK;
    while (!interrupted && (!a.count || shown < a.count)) {
        long want = a.count ? a.count - shown : 100;
        zf_request req = {.version = ZF_PROTOCOL_VERSION,
                          .op = ZF_OP_ECHO,
                          .id = a.id,
                          .link = a.link,
                          .count = (int)(want > 100 ? 100 : want),
                          .wait_ms = 2000};
        zf_config *tree = NULL;
        const zf_config *r = daemon_call(&a.conn, &req, &tree, &rc);
        if (!r) {
            zf_config_free(tree);
            return interrupted ? EXIT_OK : rc;
        }
        const zf_config *items = zf_config_get(r, "items");
        if (a.conn.json) {
            char *j = zf_config_to_json(r);
            printf("%s\n", j ? j : "null");
            free(j);
        }
        for (size_t i = 0; !a.conn.json && i < zf_config_len(items); i++) {
            const zf_config *it = zf_config_at(items, i);
            const char *hex = cfg_str(it, "head");
            printf("seq %-8lld t %.6f s  %8lld B  %s  ", cfg_num(it, "seq"),
                   (double)cfg_num(it, "timestamp_ns") / 1e9, cfg_num(it, "len"),
                   cfg_str(r, "type"));
            for (size_t k = 0; hex[k] && hex[k + 1] && k < 32; k += 2)
                printf("%c%c%s", hex[k], hex[k + 1], k + 2 < 32 && hex[k + 2] ? " " : "");
            printf("%s\n", strlen(hex) > 32 ? " ..." : "");
        }
        shown += (long)zf_config_len(items);
        unsigned long long d = (unsigned long long)cfg_num(r, "dropped");
        if (d && !a.conn.json)
            fprintf(stderr,
                    "zfctl echo: %llu capsules not shown (the tap fell behind and "
                    "dropped them; the link was not slowed)\n",
                    d);
        dropped += d;
        bool ended = false;
        ZF_IGNORE(zf_config_bool(r, "ended", false, &ended)); /* absent: not ended */
        fflush(stdout);
        zf_config_free(tree);
        if (ended) {
            fprintf(stderr, "zfctl echo: end of stream on %s\n", a.link);
            break;
        }
    }
    if (dropped && !a.conn.json)
        fprintf(stderr, "zfctl echo: %llu capsules in all passed without being shown\n", dropped);
    return EXIT_OK;
}

int cmd_hz(int argc, char **argv)
{
    tap_args a = {0};
    tap_parse(argc, argv, "hz", &a);
    catch_signals();
    int rc = EXIT_OK;
    for (long n = 0; !interrupted && (!a.count || n < a.count); n++) {
        zf_request req = {.version = ZF_PROTOCOL_VERSION,
                          .op = ZF_OP_HZ,
                          .id = a.id,
                          .link = a.link,
                          .wait_ms = (int)(a.window / 1000000)};
        zf_config *tree = NULL;
        const zf_config *r = daemon_call(&a.conn, &req, &tree, &rc);
        if (!r) {
            zf_config_free(tree);
            return interrupted ? EXIT_OK : rc;
        }
        if (a.conn.json) {
            char *j = zf_config_to_json(r);
            printf("%s\n", j ? j : "null");
            free(j);
        } else {
            char b[32];
            printf("%s: average rate %.3f msgs/s (%s/s)  min %.4f s  max %.4f s  std dev %.5f s  "
                   "window %lld",
                   a.link, cfg_real(r, "rate"),
                   fmt_bytes((uint64_t)cfg_real(r, "bytes_per_s"), b, sizeof b),
                   cfg_real(r, "min_period_s"), cfg_real(r, "max_period_s"),
                   cfg_real(r, "std_period_s"), cfg_num(r, "messages"));
            if (cfg_num(r, "dropped"))
                printf(" (%lld dropped by the tap)", cfg_num(r, "dropped"));
            printf("\n");
        }
        fflush(stdout);
        bool ended = false;
        ZF_IGNORE(zf_config_bool(r, "ended", false, &ended)); /* absent: not ended */
        zf_config_free(tree);
        if (ended)
            break;
    }
    return EXIT_OK;
}

/* ---- top ---- */

typedef struct top_args {
    daemon_conn conn;
    const char *id; /* the instance shown in detail (NULL: the first) */
    bool once;
    int sort; /* 0 name, 1 cpu, 2 mem, 3 uptime */
} top_args;

static const char *const sort_names[] = {"name", "cpu", "mem", "uptime"};

static const char *bytes(double b, char *buf, size_t n)
{
    return fmt_bytes(b < 0 ? 0 : (uint64_t)b, buf, n);
}

static const char *rate(double r, char *buf, size_t n)
{
    if (r >= 1e6)
        snprintf(buf, n, "%.1fM", r / 1e6);
    else if (r >= 1e4)
        snprintf(buf, n, "%.1fk", r / 1e3);
    else
        snprintf(buf, n, "%.1f", r);
    return buf;
}

static const top_args *sort_by;
static int cmp_instances(const void *a, const void *b)
{
    const zf_config *x = *(const zf_config *const *)a, *y = *(const zf_config *const *)b;
    double d = 0;
    switch (sort_by->sort) {
    case 1:
        d = cfg_real(y, "cpu_1s") - cfg_real(x, "cpu_1s");
        break;
    case 2:
        d = cfg_real(y, "mem_bytes") - cfg_real(x, "mem_bytes");
        break;
    case 3:
        d = cfg_real(y, "uptime_s") - cfg_real(x, "uptime_s");
        break;
    default:
        return strcmp(cfg_str(x, "name"), cfg_str(y, "name"));
    }
    return d < 0 ? -1 : d > 0;
}

/* One screen: the instances, then the nodes and links of the one picked.
 * Returns the UUID picked (into pick) so that keys can move from it. */
static void render(FILE *out, const top_args *a, const zf_config *list, const zf_config *st,
                   const zf_config **order, size_t n, size_t picked, bool tty)
{
    char b1[32], b2[32], b3[32];
    const char *bold = tty ? "\x1b[1m" : "", *inv = tty ? "\x1b[7m" : "",
               *off = tty ? "\x1b[0m" : "";
    (void)list;
    fprintf(out, "%szflow top%s  %zu instance%s, sorted by %s%s\n", bold, off, n, n == 1 ? "" : "s",
            sort_names[a->sort], tty ? "   (up/down or j/k: pick, s: sort, q: quit)" : "");
    fprintf(out, "%s%-36s  %-16s %-10s %5s %8s %6s %9s%s\n", bold, "UUID", "NAME", "STATUS",
            "NODES", "UPTIME", "CPU", "MEM", off);
    for (size_t i = 0; i < n; i++) {
        const zf_config *e = order[i];
        fprintf(out, "%s%-36s  %-16.16s %-10.10s %2lld/%-2lld %7.0fs %5.1f%% %9s%s\n",
                i == picked && tty ? inv : "", cfg_str(e, "uuid"), cfg_str(e, "name"),
                cfg_str(e, "status"), cfg_num(e, "nodes_running"), cfg_num(e, "nodes"),
                cfg_real(e, "uptime_s"), 100.0 * cfg_real(e, "cpu_1s"),
                bytes(cfg_real(e, "mem_bytes"), b1, sizeof b1), i == picked && tty ? off : "");
    }
    if (!st)
        return;
    fprintf(out,
            "\n%s%s (%s)%s  %s, pool %s in use (%lld capsules), CPU %.1f%% (1 s), %.1f%% (10 s)\n",
            bold, cfg_str(st, "name"), cfg_str(st, "uuid"), off, cfg_str(st, "status"),
            bytes(cfg_real(zf_config_get(st, "pool"), "bytes_in_use"), b1, sizeof b1),
            cfg_num(zf_config_get(st, "pool"), "held_capsules"), 100.0 * cfg_real(st, "cpu_1s"),
            100.0 * cfg_real(st, "cpu_10s"));
    fprintf(out, "%s  %-22s %-9s %-10s %10s %10s %10s %7s %6s%s\n", bold, "NODE", "KIND", "STATE",
            "IN/S", "OUT/S", "OUT B/S", "CPU", "HELD", off);
    const zf_config *nodes = zf_config_get(st, "nodes");
    for (size_t i = 0; i < zf_config_len(nodes); i++) {
        const zf_config *nd = zf_config_at(nodes, i);
        fprintf(out, "  %-22.22s %-9s %-10s %10s %10s %10s %6.1f%% %6lld\n", cfg_str(nd, "id"),
                cfg_str(nd, "kind"), cfg_str(nd, "state"),
                rate(cfg_real(nd, "in_msgs_1s"), b1, sizeof b1),
                rate(cfg_real(nd, "out_msgs_1s"), b2, sizeof b2),
                rate(cfg_real(nd, "out_bytes_1s"), b3, sizeof b3), 100.0 * cfg_real(nd, "cpu_1s"),
                cfg_num(nd, "held"));
    }
    fprintf(out, "%s  %-26s %-26s %9s %9s %10s %5s %5s %8s%s\n", bold, "FROM", "TO", "MSGS/S",
            "10S", "BYTES/S", "DEPTH", "CAP", "DROPPED", off);
    const zf_config *links = zf_config_get(st, "links");
    for (size_t i = 0; i < zf_config_len(links); i++) {
        const zf_config *l = zf_config_at(links, i);
        char b4[32];
        fprintf(out, "  %-26.26s %-26.26s %9s %9s %10s %5lld %5lld %8lld\n", cfg_str(l, "from"),
                cfg_str(l, "to"), rate(cfg_real(l, "in_msgs_1s"), b1, sizeof b1),
                rate(cfg_real(l, "in_msgs_10s"), b2, sizeof b2),
                rate(cfg_real(l, "in_bytes_1s"), b4, sizeof b4), cfg_num(l, "depth"),
                cfg_num(l, "capacity"), cfg_num(l, "dropped"));
    }
}

/* Fetch and draw one screen; false when the daemon cannot be reached. */
static bool top_once(top_args *a, FILE *out, bool tty, int *picked, int *rc, int move)
{
    zf_config *lt = NULL, *stt = NULL;
    zf_request req = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_LIST};
    const zf_config *list = daemon_call(&a->conn, &req, &lt, rc);
    if (!list) {
        zf_config_free(lt);
        return false;
    }
    const zf_config *inst = zf_config_get(list, "instances");
    size_t n = zf_config_len(inst);
    const zf_config **order = calloc(n ? n : 1, sizeof *order);
    for (size_t i = 0; order && i < n; i++)
        order[i] = zf_config_at(inst, i);
    sort_by = a;
    if (order)
        qsort(order, n, sizeof *order, cmp_instances);
    int p = -1;
    for (size_t i = 0; order && a->id && i < n; i++)
        if (!strcmp(cfg_str(order[i], "uuid"), a->id) ||
            !strcmp(cfg_str(order[i], "name"), a->id) ||
            !strncmp(cfg_str(order[i], "uuid"), a->id, strlen(a->id)))
            p = (int)i;
    if (p < 0)
        p = *picked >= 0 && (size_t)*picked < n ? *picked : 0;
    p += move;
    if (p < 0)
        p = 0;
    if (n && (size_t)p >= n)
        p = (int)n - 1;
    *picked = p;
    const zf_config *st = NULL;
    static char id[64];
    if (n && order) {
        snprintf(id, sizeof id, "%s", cfg_str(order[p], "uuid"));
        a->id = id;
        zf_request sr = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_STATUS, .id = id};
        int src = 0;
        st = daemon_call(&a->conn, &sr, &stt, &src);
    }
    if (tty)
        fputs("\x1b[H\x1b[2J", out);
    render(out, a, list, st, order, order ? n : 0, (size_t)p, tty);
    fflush(out);
    free(order);
    zf_config_free(stt);
    zf_config_free(lt);
    return true;
}

static struct termios saved_tio;
static void restore_terminal(void)
{
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
    fputs("\x1b[?25h\x1b[?1049l", stdout); /* cursor back, main screen back */
    fflush(stdout);
}

/* A key from stdin: 'j'/'k' for the arrows, else the byte; 0 for none. */
static int read_key(void)
{
    unsigned char k[8];
    ssize_t r = read(STDIN_FILENO, k, sizeof k);
    if (r <= 0)
        return 0;
    if (r >= 3 && k[0] == 0x1b && k[1] == '[')
        return k[2] == 'A' ? 'k' : k[2] == 'B' ? 'j' : 0;
    return k[0];
}

int cmd_top(int argc, char **argv)
{
    top_args a = {.conn = {.cmd = "top"}};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            printf("usage: zfctl top [ID] [--once] [--sort name|cpu|mem|uptime] [--socket PATH]\n\n"
                   "The daemon's instances (UUID NAME STATUS NODES UPTIME CPU MEM), then the\n"
                   "nodes and links of one (ID, else the first): rates over the last second,\n"
                   "CPU, held capsules, depths. Full screen, refreshed every second; keys:\n"
                   "up/down (j/k) pick an instance, s changes the order, q quits.\n"
                   "--once prints one screen as plain text and exits (for scripts).\n");
            return EXIT_OK;
        } else if (args_daemon(argc, argv, &i, &a.conn)) {
        } else if (!strcmp(s, "--once")) {
            a.once = true;
        } else if (args_opt(argc, argv, &i, "--sort", "top", &v)) {
            a.sort = -1;
            for (int k = 0; k < 4; k++)
                if (!strcmp(v, sort_names[k]))
                    a.sort = k;
            if (a.sort < 0)
                usage_error("top", "--sort takes name, cpu, mem or uptime");
        } else if (s[0] == '-') {
            usage_error("top", "unknown option '%s'", s);
        } else if (!a.id) {
            a.id = s;
        } else {
            usage_error("top", "unexpected argument '%s'", s);
        }
    }
    int rc = EXIT_OK, picked = -1;
    bool tty = !a.once && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    if (!tty)
        return top_once(&a, stdout, false, &picked, &rc, 0) ? EXIT_OK : rc;
    catch_signals();
    tcgetattr(STDIN_FILENO, &saved_tio);
    struct termios raw = saved_tio;
    raw.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    fputs("\x1b[?1049h\x1b[?25l", stdout); /* the alternate screen, no cursor */
    int move = 0;
    while (!interrupted) {
        if (!top_once(&a, stdout, true, &picked, &rc, move))
            break;
        move = 0;
        /* Wait for a key or the next second (poll: an event, not a sleep). */
        struct pollfd pf = {.fd = STDIN_FILENO, .events = POLLIN};
        int r = poll(&pf, 1, 1000);
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0) {
            int k = read_key();
            if (k == 'q' || k == 'Q')
                break;
            if (k == 'j')
                move = 1;
            else if (k == 'k')
                move = -1;
            else if (k == 's')
                a.sort = (a.sort + 1) % 4;
            if (k == 'j' || k == 'k')
                a.id = NULL; /* move from the row shown */
        }
    }
    restore_terminal();
    return rc;
}
