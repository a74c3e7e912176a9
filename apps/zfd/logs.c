/* zfd's log store: every line about an instance kept per node, in files
 * under the state directory, and served to `zfctl logs`.
 *
 *   STATE/logs/<uuid>/instance.log       lines about the instance itself
 *   STATE/logs/<uuid>/node-<id>.log      lines of (or about) node <id>
 *
 * Each file is rotated when it passes the size limit (to FILE.1, replacing
 * the one before), so a node keeps at most twice the limit on disk and a
 * noisy node cannot push out the lines of the others. Lines are
 * zf_log_entry_format's (UTC time with microseconds, level, [scope], the
 * message; a line break continues with "  | "). The newest lines are also
 * kept in memory, numbered, for followers (`zfctl logs --follow`): a
 * follower asks for the lines after its cursor and waits on a condition
 * variable for new ones. docs/operations.md describes it. */
#include "zfd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES   512u  /* open log files at once (least recently used closed) */
#define MAX_HISTORY 20000 /* lines one answer carries (the newest) */
#define KEEP_GONE   100   /* folders of instances destroyed by this zfd kept */

typedef struct logfile {
    char uuid[37];
    char node[160]; /* "" for the instance's own file */
    int fd;
    uint64_t size;
    uint64_t used; /* for closing the least recently used */
} logfile;

typedef struct ring_line {
    uint64_t seq;
    uint64_t realtime_ns;
    zf_log_level level;
    char uuid[37];
    char *node; /* NULL: the instance's */
    char *text; /* formatted, without its final newline */
} ring_line;

/* STATE/logs, for the crash handler (zfd_logs_crash), set once at open. */
static char crash_dir[2048];

struct zfd_logs {
    char *dir; /* STATE/logs */
    uint64_t max_bytes;
    zf_log_level stderr_level, keep_level;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a line was added */
    logfile files[MAX_FILES];
    size_t n_files;
    uint64_t use_clock;
    ring_line *ring; /* the newest lines, for followers (a ring) */
    uint64_t ring_n;
    uint64_t seq;             /* of the newest line; 0: none yet */
    char gone[KEEP_GONE][37]; /* destroyed instances, oldest first (a ring) */
    size_t gone_head, n_gone;
};

/* ---- paths ---- */

/* A node id as a file name: [A-Za-z0-9._-] as they are, any other byte as
 * %XX (composite ids hold '>'). */
static void file_part(const char *id, char *out, size_t len)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)id; *p && k + 4 < len; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '.' || *p == '_' || *p == '-')
            out[k++] = (char)*p;
        else
            k += (size_t)snprintf(out + k, len - k, "%%%02X", *p);
    }
    out[k] = '\0';
}

static void file_path(const zfd_logs *lg, const char *uuid, const char *node, char *out, size_t len)
{
    char part[400];
    if (node && *node) {
        file_part(node, part, sizeof part);
        snprintf(out, len, "%s/%s/node-%s.log", lg->dir, uuid, part);
    } else {
        snprintf(out, len, "%s/%s/instance.log", lg->dir, uuid);
    }
}

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) != 0 && errno != EEXIST ? -1 : 0;
}

char *zfd_default_state_dir(void)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    const char *sd = getenv("STATE_DIRECTORY"); /* systemd's StateDirectory= */
    char buf[4096];
    if (sd && *sd == '/')
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(sd, ":"), sd);
    else if (geteuid() == 0)
        snprintf(buf, sizeof buf, "/var/lib/zflow");
    else if (xdg && *xdg == '/')
        snprintf(buf, sizeof buf, "%s/zflow", xdg);
    else if (home && *home == '/')
        snprintf(buf, sizeof buf, "%s/.local/state/zflow", home);
    else
        snprintf(buf, sizeof buf, "/tmp/zflow-%u/state", (unsigned)geteuid());
    return strdup(buf);
}

zfd_logs *zfd_logs_open(const char *state_dir, uint64_t max_bytes, size_t ring_lines,
                        zf_log_level stderr_level, zf_log_level keep_level, char *err,
                        size_t errlen)
{
    zfd_logs *lg = calloc(1, sizeof *lg);
    if (lg)
        lg->ring = calloc(ring_lines ? ring_lines : 1, sizeof *lg->ring);
    if (!lg || !lg->ring || asprintf(&lg->dir, "%s/logs", state_dir) < 0) {
        if (lg)
            free(lg->ring);
        free(lg);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (mkdir_p(lg->dir, 0750) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", lg->dir, strerror(errno));
        free(lg->ring);
        free(lg->dir);
        free(lg);
        return NULL;
    }
    snprintf(crash_dir, sizeof crash_dir, "%s", lg->dir);
    lg->max_bytes = max_bytes;
    lg->ring_n = ring_lines ? ring_lines : 1;
    lg->stderr_level = stderr_level;
    lg->keep_level = keep_level;
    pthread_mutex_init(&lg->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lg->cv, &ca);
    pthread_condattr_destroy(&ca);
    return lg;
}

void zfd_logs_close(zfd_logs *lg)
{
    if (!lg)
        return;
    for (size_t i = 0; i < lg->n_files; i++)
        close(lg->files[i].fd);
    for (size_t i = 0; i < lg->ring_n; i++) {
        free(lg->ring[i].node);
        free(lg->ring[i].text);
    }
    free(lg->ring);
    pthread_mutex_destroy(&lg->mu);
    pthread_cond_destroy(&lg->cv);
    free(lg->dir);
    free(lg);
}

/* ---- writing ---- */

/* The open file of (uuid, node), opened (its folder made) if need be;
 * NULL if it cannot be. lg->mu held. */
static logfile *file_for(zfd_logs *lg, const char *uuid, const char *node)
{
    const char *nd = node ? node : "";
    for (size_t i = 0; i < lg->n_files; i++)
        if (!strcmp(lg->files[i].uuid, uuid) && !strcmp(lg->files[i].node, nd)) {
            lg->files[i].used = ++lg->use_clock;
            return &lg->files[i];
        }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", lg->dir, uuid);
    if (mkdir(path, 0750) != 0 && errno != EEXIST)
        return NULL;
    file_path(lg, uuid, node, path, sizeof path);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return NULL;
    struct stat st;
    size_t slot = lg->n_files;
    if (slot == MAX_FILES) { /* close the least recently used */
        slot = 0;
        for (size_t i = 1; i < lg->n_files; i++)
            if (lg->files[i].used < lg->files[slot].used)
                slot = i;
        close(lg->files[slot].fd);
    } else {
        lg->n_files++;
    }
    logfile *f = &lg->files[slot];
    snprintf(f->uuid, sizeof f->uuid, "%s", uuid);
    snprintf(f->node, sizeof f->node, "%s", nd);
    f->fd = fd;
    f->size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    f->used = ++lg->use_clock;
    return f;
}

/* Rotate f's file when a line of `add` bytes would take it past the limit:
 * FILE -> FILE.1 (the previous FILE.1 goes), a new FILE. lg->mu held. */
static void rotate_if_full(zfd_logs *lg, logfile *f, size_t add)
{
    if (!lg->max_bytes || f->size == 0 || f->size + add <= lg->max_bytes)
        return;
    char path[4096], old[4200];
    file_path(lg, f->uuid, f->node[0] ? f->node : NULL, path, sizeof path);
    snprintf(old, sizeof old, "%s.1", path);
    close(f->fd);
    rename(path, old);
    f->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    f->size = 0;
}

void zfd_logs_entry(void *arg, const zf_log_entry *e)
{
    zfd_logs *lg = arg;
    char *line = zf_log_entry_format(e);
    if (!line)
        return;
    size_t len = strlen(line);
    if (e->level <= lg->stderr_level) {
        /* stderr as ever (journald), in zf_log_stderr's layout: one write */
        ssize_t w = write(STDERR_FILENO, line, len);
        (void)w;
    }
    if (!e->instance || e->level > lg->keep_level) {
        free(line);
        return;
    }
    pthread_mutex_lock(&lg->mu);
    logfile *f = file_for(lg, e->instance, e->node);
    if (f) {
        rotate_if_full(lg, f, len);
        if (f->fd >= 0 && write(f->fd, line, len) == (ssize_t)len)
            f->size += len;
    }
    ring_line *r = &lg->ring[++lg->seq % lg->ring_n];
    free(r->node);
    free(r->text);
    line[len - 1] = '\0';
    r->seq = lg->seq;
    r->realtime_ns = e->realtime_ns;
    r->level = e->level;
    snprintf(r->uuid, sizeof r->uuid, "%s", e->instance);
    r->node = e->node ? strdup(e->node) : NULL;
    r->text = line;
    pthread_cond_broadcast(&lg->cv);
    pthread_mutex_unlock(&lg->mu);
}

/* Call fn with the path of every file of an instance's folder (`path`). */
static void each_file(const char *path, void (*fn)(const char *file, void *arg), void *arg)
{
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        fn(p, arg);
    }
    if (d)
        closedir(d);
}

static void unlink_file(const char *file, void *arg)
{
    (void)arg;
    unlink(file);
}

/* Remove a destroyed instance's folder and its files. lg->mu held. */
static void remove_folder(zfd_logs *lg, const char *uuid)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", lg->dir, uuid);
    each_file(path, unlink_file, NULL);
    rmdir(path);
}

void zfd_logs_forget(zfd_logs *lg, const char *uuid)
{
    pthread_mutex_lock(&lg->mu);
    for (size_t i = 0; i < lg->n_files;) {
        if (strcmp(lg->files[i].uuid, uuid) != 0) {
            i++;
            continue;
        }
        close(lg->files[i].fd);
        lg->files[i] = lg->files[--lg->n_files];
    }
    /* The logs of the last KEEP_GONE destroyed instances stay readable; an
     * older one's folder goes, so the disk used stays bounded. */
    if (lg->n_gone == KEEP_GONE) {
        remove_folder(lg, lg->gone[lg->gone_head]);
        lg->gone_head = (lg->gone_head + 1) % KEEP_GONE;
        lg->n_gone--;
    }
    snprintf(lg->gone[(lg->gone_head + lg->n_gone) % KEEP_GONE], 37, "%s", uuid);
    lg->n_gone++;
    pthread_mutex_unlock(&lg->mu);
}

bool zfd_logs_known(zfd_logs *lg, const char *uuid)
{
    if (strlen(uuid) != 36 || strspn(uuid, "0123456789abcdef-") != 36)
        return false;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", lg->dir, uuid);
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- the crash handler's line (async-signal-safe: no lock, no malloc,
 * no stdio) ---- */

static size_t put_s(char *b, size_t n, size_t k, const char *s, size_t len)
{
    for (size_t i = 0; i < len && s[i] && k + 1 < n; i++)
        b[k++] = s[i];
    return k;
}

static size_t put_u(char *b, size_t n, size_t k, unsigned long v, int width)
{
    char d[24];
    int m = 0;
    do
        d[m++] = (char)('0' + v % 10);
    while ((v /= 10) && m < 20);
    while (m < width && m < 20)
        d[m++] = '0';
    while (m && k + 1 < n)
        b[k++] = d[--m];
    return k;
}

/* Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar's
 * era arithmetic; gmtime is not async-signal-safe). */
static void civil(long z, long *y, unsigned *m, unsigned *d)
{
    z += 719468;
    long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (long)yoe + era * 400 + (*m <= 2);
}

void zfd_logs_crash(const char *ctx, const char *msg, size_t len)
{
    /* ctx: "node 'ID' of instance UUID (NAME)" (zf_crash_context) */
    static const char pre[] = "node '", mid[] = "' of instance ";
    if (!crash_dir[0] || strncmp(ctx, pre, sizeof pre - 1) != 0)
        return;
    const char *id = ctx + sizeof pre - 1, *end = strstr(id, mid);
    if (!end || strlen(end + sizeof mid - 1) < 36)
        return;
    const char *uuid = end + sizeof mid - 1;
    char path[4096];
    size_t k = put_s(path, sizeof path, 0, crash_dir, sizeof crash_dir);
    k = put_s(path, sizeof path, k, "/", 1);
    k = put_s(path, sizeof path, k, uuid, 36);
    k = put_s(path, sizeof path, k, "/node-", 6);
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)id;
         p < (const unsigned char *)end && k + 4 < sizeof path; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
        if (plain) {
            path[k++] = (char)*p;
        } else {
            path[k++] = '%';
            path[k++] = hex[*p >> 4];
            path[k++] = hex[*p & 15];
        }
    }
    k = put_s(path, sizeof path, k, ".log", 4);
    path[k] = '\0';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long y;
    unsigned mo, d;
    civil((long)(ts.tv_sec / 86400), &y, &mo, &d);
    long sod = (long)(ts.tv_sec % 86400);
    char line[1024];
    size_t n = put_u(line, sizeof line, 0, (unsigned long)y, 4);
    n = put_s(line, sizeof line, n, "-", 1);
    n = put_u(line, sizeof line, n, mo, 2);
    n = put_s(line, sizeof line, n, "-", 1);
    n = put_u(line, sizeof line, n, d, 2);
    n = put_s(line, sizeof line, n, "T", 1);
    n = put_u(line, sizeof line, n, (unsigned long)(sod / 3600), 2);
    n = put_s(line, sizeof line, n, ":", 1);
    n = put_u(line, sizeof line, n, (unsigned long)(sod / 60 % 60), 2);
    n = put_s(line, sizeof line, n, ":", 1);
    n = put_u(line, sizeof line, n, (unsigned long)(sod % 60), 2);
    n = put_s(line, sizeof line, n, ".", 1);
    n = put_u(line, sizeof line, n, (unsigned long)(ts.tv_nsec / 1000), 6);
    n = put_s(line, sizeof line, n, "Z error [node ", 14);
    n = put_s(line, sizeof line, n, id, (size_t)(end - id));
    n = put_s(line, sizeof line, n, "] ", 2);
    n = put_s(line, sizeof line, n, msg, len);
    line[n++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd >= 0) {
        ssize_t w = write(fd, line, n);
        (void)w;
        close(fd);
    }
}

/* ---- reading ---- */

typedef struct filter {
    const char *node; /* NULL: every one */
    zf_log_level level;
    uint64_t since_ns; /* realtime; 0: no bound */
    regex_t re;
    bool has_re;
} filter;

/* "2026-12-01T11:09:41.123456Z info  [...] ..." -> time and level; false
 * for a line of another layout. */
static bool parse_head(const char *s, uint64_t *ns, zf_log_level *level)
{
    struct tm tm = {0};
    int us = 0;
    char lv[8];
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ %7s", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us, lv) != 8)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t < 0 || zf_log_level_parse(lv, level) != ZF_OK)
        return false;
    *ns = (uint64_t)t * 1000000000u + (uint64_t)us * 1000u;
    return true;
}

static bool keep(const filter *fl, uint64_t ns, zf_log_level level, const char *text)
{
    return level <= fl->level && (!fl->since_ns || ns >= fl->since_ns) &&
           (!fl->has_re || regexec(&fl->re, text, 0, NULL, 0) == 0);
}

typedef struct hist {
    char **lines;
    size_t n, cap;
} hist;

static void hist_add(hist *h, char *line)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        char **n = realloc(h->lines, cap * sizeof *n);
        if (!n) {
            free(line);
            return;
        }
        h->lines = n;
        h->cap = cap;
    }
    h->lines[h->n++] = line;
}

/* Every entry of one file that passes fl into h. */
static void read_file(const char *path, const filter *fl, hist *h)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char *line = NULL, *ent = NULL;
    size_t cap = 0, elen = 0;
    ssize_t k;
    uint64_t ns = 0;
    zf_log_level level = ZF_LOG_INFO;
    for (;;) {
        k = getline(&line, &cap, f);
        bool cont = k > 4 && !strncmp(line, "  | ", 4);
        if (ent && !cont) { /* the entry before is whole */
            if (keep(fl, ns, level, ent))
                hist_add(h, ent);
            else
                free(ent);
            ent = NULL;
        }
        if (k <= 0)
            break;
        if (line[k - 1] == '\n')
            line[--k] = '\0';
        if (cont && ent) {
            char *n = realloc(ent, elen + 1 + (size_t)k + 1);
            if (n) {
                ent = n;
                ent[elen] = '\n';
                memcpy(ent + elen + 1, line, (size_t)k + 1);
                elen += 1 + (size_t)k;
            }
        } else if (!cont && parse_head(line, &ns, &level)) {
            ent = strdup(line);
            elen = (size_t)k;
        }
    }
    free(line);
    fclose(f);
}

typedef struct read_ctx {
    const filter *fl;
    hist *h;
} read_ctx;

static void read_one(const char *file, void *arg)
{
    read_ctx *rc = arg;
    read_file(file, rc->fl, rc->h);
}

typedef struct ranked {
    char *line;
    size_t at; /* its place as read: ties keep it */
} ranked;

static int by_time(const void *a, const void *b)
{
    /* The fixed-width UTC time first: text order is time order. */
    const ranked *x = a, *y = b;
    int c = strncmp(x->line, y->line, 27);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The files of instance uuid's folder that fl selects, oldest generation
 * first. */
static void read_history(zfd_logs *lg, const char *uuid, const filter *fl, hist *h)
{
    char path[4096];
    if (fl->node) {
        file_path(lg, uuid, fl->node, path, sizeof path);
        char old[4200];
        snprintf(old, sizeof old, "%s.1", path);
        read_file(old, fl, h);
        read_file(path, fl, h);
    } else {
        snprintf(path, sizeof path, "%s/%s", lg->dir, uuid);
        read_ctx rc = {fl, h};
        each_file(path, read_one, &rc);
    }
    /* By time; lines of the same microsecond keep their file order. */
    ranked *r = h->n > 1 ? malloc(h->n * sizeof *r) : NULL;
    if (!r)
        return;
    for (size_t i = 0; i < h->n; i++)
        r[i] = (ranked){h->lines[i], i};
    qsort(r, h->n, sizeof *r, by_time);
    for (size_t i = 0; i < h->n; i++)
        h->lines[i] = r[i].line;
    free(r);
}

char *zfd_logs_query(zfd_logs *lg, const char *uuid, const zf_request *req)
{
    filter fl = {.node = req->node, .level = ZF_LOG_TRACE};
    if (req->level && zf_log_level_parse(req->level, &fl.level) != ZF_OK)
        return zf_response_error(ZF_EINVAL, "level: %s", zf_last_error());
    if (req->since) {
        int64_t d = 0;
        if (zf_parse_duration(req->since, &d) != ZF_OK || d < 0)
            return zf_response_error(ZF_EINVAL,
                                     "since: '%s' is not a duration (expected e.g. 30s, 10m, 2h)",
                                     req->since);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        fl.since_ns = now > (uint64_t)d ? now - (uint64_t)d : 1;
    }
    if (req->grep) {
        int rc = regcomp(&fl.re, req->grep, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[256];
            regerror(rc, &fl.re, why, sizeof why);
            return zf_response_error(ZF_EINVAL,
                                     "grep: '%s' is not an extended regular "
                                     "expression: %s",
                                     req->grep, why);
        }
        fl.has_re = true;
    }
    hist h = {0};
    uint64_t cursor, lost = 0;
    pthread_mutex_lock(&lg->mu);
    if (!req->after) {
        /* The history, read under the lock: no line is both in it and
         * after the cursor given back. */
        read_history(lg, uuid, &fl, &h);
        cursor = lg->seq + 1;
    } else {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += req->wait_ms / 1000;
        until.tv_nsec += (long)(req->wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        /* The cursor is the number of the next line to give (1 or more). */
        uint64_t from = req->after - 1 > lg->seq ? lg->seq : req->after - 1;
        for (;;) {
            uint64_t oldest = lg->seq >= lg->ring_n ? lg->seq - lg->ring_n + 1 : 1;
            if (from + 1 < oldest) {
                lost += oldest - from - 1;
                from = oldest - 1;
            }
            for (uint64_t s = from + 1; s <= lg->seq; s++) {
                const ring_line *r = &lg->ring[s % lg->ring_n];
                if (strcmp(r->uuid, uuid) != 0 ||
                    (fl.node && (!r->node || strcmp(r->node, fl.node) != 0)) ||
                    !keep(&fl, r->realtime_ns, r->level, r->text))
                    continue;
                char *t = strdup(r->text);
                if (t)
                    hist_add(&h, t);
            }
            from = lg->seq;
            if (h.n || lost || !req->wait_ms ||
                pthread_cond_timedwait(&lg->cv, &lg->mu, &until) == ETIMEDOUT)
                break;
        }
        cursor = from + 1;
    }
    pthread_mutex_unlock(&lg->mu);
    if (fl.has_re)
        regfree(&fl.re);
    size_t first = h.n > MAX_HISTORY ? h.n - MAX_HISTORY : 0;
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", uuid);
    zf_json_put_uint(w, "cursor", cursor);
    zf_json_put_uint(w, "lost", lost);
    zf_json_put_uint(w, "omitted", first);
    zf_json_open_array(w, "lines");
    for (size_t i = 0; i < h.n; i++) {
        if (i >= first)
            zf_json_put_string(w, NULL, h.lines[i]);
        free(h.lines[i]);
    }
    free(h.lines);
    zf_json_close(w);
    zf_json_close(w);
    char *result = zf_json_writer_finish(w);
    char *resp = result ? zf_response_ok(result) : zf_response_error(ZF_ENOMEM, "out of memory");
    free(result);
    return resp;
}
