/* The server side of the control protocol: a Unix socket (mode 0660), one
 * thread per connection, every request bounded in size and time. Nothing a
 * client sends can crash or wedge the server: malformed, truncated, huge
 * or slow requests get an error response (when the stream still allows
 * one), are logged, and the other clients keep being served. Idle peers
 * cannot lock others out: a new connection must send its first request
 * within 5 s, one uid holds at most half the connections, and when the
 * server is full a new client takes the place of the connection idle the
 * longest (a request being served is never cut). */
#include "control/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct conn {
    int fd;
    zf_peer peer;
    struct zf_server *s;
    struct conn *next;
    /* under s->mu */
    uint64_t idle_since; /* waiting for a request since (ns) */
    bool in_request;     /* a request is being served: never evicted */
    bool evicted;        /* shut down to make room */
} conn;

struct zf_server {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int lfd;
    int wake[2];
    pthread_t accept_thread;
    zf_server_handler handler;
    void *arg;
    zf_server_options opt;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned active;  /* connection threads */
    unsigned evicted; /* of those, shut down to make room, not yet gone */
    bool stopping;
    conn *conns;
};

/* A node that fork()s without exec would keep the listening socket of the
 * process it forked from open: after that process died, the socket would
 * still accept connections no one answers. The child closes it at once. */
static _Atomic int listen_fds[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                     -1, -1, -1, -1, -1, -1, -1, -1};
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void close_listeners_in_child(void)
{
    for (size_t i = 0; i < ZFI_ARRAY_LEN(listen_fds); i++) {
        int fd = atomic_load(&listen_fds[i]);
        if (fd >= 0)
            close(fd);
    }
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, close_listeners_in_child);
}

static void listener_track(int fd, bool add)
{
    pthread_once(&atfork_once, register_atfork);
    for (size_t i = 0; i < ZFI_ARRAY_LEN(listen_fds); i++) {
        int expect = add ? -1 : fd;
        if (atomic_compare_exchange_strong(&listen_fds[i], &expect, add ? fd : -1))
            return;
    }
}

const char *zf_server_path(const zf_server *s)
{
    return s ? s->path : NULL;
}

/* Root, the daemon's own user, and members of the socket's group. */
static bool authorized(const zf_server *s, const zf_peer *p)
{
    if (p->uid == 0 || p->uid == geteuid())
        return true;
    struct stat st;
    if (stat(s->path, &st) != 0)
        return false;
    if (p->gid == st.st_gid)
        return true;
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/status", p->pid);
    FILE *f = fopen(path, "r");
    bool member = false;
    while (f && !member && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Groups:", 7) != 0)
            continue;
        char *save = NULL;
        for (char *t = strtok_r(line + 7, " \t\n", &save); t && !member;
             t = strtok_r(NULL, " \t\n", &save))
            member = (unsigned)strtoul(t, NULL, 10) == (unsigned)st.st_gid;
    }
    if (f)
        fclose(f);
    return member;
}

static void reply_error(conn *c, zf_err code, const char *msg)
{
    char *r = zf_response_error(code, "%s", msg);
    if (r) {
        zfi_frame_write(c->fd, r, strlen(r), 1000);
        free(r);
    }
}

static void set_in_request(conn *c, bool on)
{
    pthread_mutex_lock(&c->s->mu);
    c->in_request = on;
    if (!on)
        c->idle_since = zf_clock_ns();
    pthread_mutex_unlock(&c->s->mu);
}

static void serve(conn *c)
{
    zf_server *s = c->s;
    for (bool first = true;; first = false) {
        char *text = NULL;
        size_t len = 0;
        /* The first request must come soon (a connection that never
         * speaks holds a place for nothing); later ones within the idle
         * timeout. */
        int idle = first ? s->opt.first_request_timeout_ms : s->opt.idle_timeout_ms;
        zf_err e =
            zfi_frame_read(c->fd, &text, &len, ZF_FRAME_MAX, idle, s->opt.request_timeout_ms);
        if (e == ZF_ECLOSED || e == ZF_ETIMEDOUT)
            return; /* between requests: a normal end */
        if (e != ZF_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", zf_last_error());
            zfi_log(ZF_LOG_WARN, "control", "request from pid %d refused: %s", c->peer.pid, msg);
            reply_error(c, e == ZF_EINVAL ? ZF_EINVAL : ZF_EPROTO, msg);
            return; /* the stream cannot be trusted any more */
        }
        set_in_request(c, true);
        zf_request *req = NULL;
        e = zf_request_decode(text, len, &req);
        free(text);
        char *resp;
        if (e != ZF_OK) {
            char err[512];
            snprintf(err, sizeof err, "%s", zf_last_error());
            zfi_log(ZF_LOG_WARN, "control", "malformed request from pid %d: %s", c->peer.pid, err);
            resp = zf_response_error(e, "%s", err);
        } else {
            zfi_log(ZF_LOG_DEBUG, "control", "%s from pid %d", zf_op_name(req->op), c->peer.pid);
            resp = s->handler(s->arg, req, &c->peer);
            zf_request_free(req);
            if (!resp)
                resp = zf_response_error(ZF_ENOMEM, "the daemon ran out of memory");
        }
        if (!resp)
            return;
        e = zfi_frame_write(c->fd, resp, strlen(resp), 5000);
        free(resp);
        set_in_request(c, false);
        pthread_mutex_lock(&s->mu);
        bool stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (e != ZF_OK || stopping)
            return; /* the answer to a request that was running at stop is given */
    }
}

static void *conn_main(void *arg)
{
    conn *c = arg;
    zfi_thread_name("zf-ctl-conn");
    zf_server *s = c->s;
    serve(c);
    pthread_mutex_lock(&s->mu);
    for (conn **p = &s->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    close(c->fd);
    if (c->evicted)
        s->evicted--;
    free(c);
    s->active--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The connection of `uid` (any uid when all) idle the longest, or NULL;
 * s->mu held. */
static conn *oldest_idle(zf_server *s, uint32_t uid, bool all)
{
    conn *best = NULL;
    for (conn *c = s->conns; c; c = c->next)
        if (!c->in_request && !c->evicted && (all || c->peer.uid == uid) &&
            (!best || c->idle_since < best->idle_since))
            best = c;
    return best;
}

/* Room for one more connection from uid: true, possibly after shutting
 * down the connection idle the longest (of that uid when it holds its
 * share, else of anyone); false (and why) when every place is taken by a
 * request being served. */
static bool make_room(zf_server *s, uint32_t uid, char *why, size_t len)
{
    pthread_mutex_lock(&s->mu);
    unsigned live = s->active - s->evicted, mine = 0;
    for (conn *c = s->conns; c; c = c->next)
        mine += !c->evicted && c->peer.uid == uid;
    conn *victim = NULL;
    bool ok = true;
    if (mine >= s->opt.max_per_uid) {
        ok = (victim = oldest_idle(s, uid, false)) != NULL;
        if (!ok)
            snprintf(why, len, "uid %u already has %u requests running; try again", uid, mine);
    } else if (live >= s->opt.max_clients) {
        ok = (victim = oldest_idle(s, uid, true)) != NULL;
        if (!ok)
            snprintf(why, len, "%u requests already running; try again", live);
    }
    if (victim) {
        victim->evicted = true;
        s->evicted++;
        shutdown(victim->fd, SHUT_RDWR); /* its thread sees the end and leaves */
        zfi_log(ZF_LOG_INFO, "control",
                "closed the idle connection of pid %d (uid %u) to make room for a new one",
                victim->peer.pid, victim->peer.uid);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void accept_one(zf_server *s)
{
    int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
            zfi_log(ZF_LOG_WARN, "control", "accept: %s", strerror(errno));
        if (errno == EMFILE || errno == ENFILE)
            usleep(100000); /* out of descriptors: let connections finish */
        return;
    }
    conn tmp = {.fd = fd, .s = s};
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
        tmp.peer = (zf_peer){cred.pid, cred.uid, cred.gid};
    if (!authorized(s, &tmp.peer)) {
        zfi_log(ZF_LOG_WARN, "control",
                "connection from uid %u (pid %d) refused: not the "
                "daemon's user, root, or in the socket's group",
                tmp.peer.uid, tmp.peer.pid);
        reply_error(&tmp, ZF_EPERM,
                    "permission denied: this daemon serves its own user, root "
                    "and the socket's group");
        close(fd);
        return;
    }
    char why[160];
    if (!make_room(s, tmp.peer.uid, why, sizeof why)) {
        zfi_log(ZF_LOG_WARN, "control", "connection from pid %d refused: %s", tmp.peer.pid, why);
        reply_error(&tmp, ZF_EBUSY, why);
        close(fd);
        return;
    }
    conn *c = zfi_calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    *c = tmp;
    c->idle_since = zf_clock_ns();
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&s->mu);
    c->next = s->conns;
    s->conns = c;
    s->active++;
    pthread_t t;
    int e = pthread_create(&t, &a, conn_main, c);
    if (e != 0) {
        s->conns = c->next;
        s->active--;
    }
    pthread_mutex_unlock(&s->mu);
    pthread_attr_destroy(&a);
    if (e != 0) {
        zfi_log(ZF_LOG_WARN, "control", "cannot start a connection thread: %s", strerror(e));
        close(fd);
        free(c);
    }
}

static void *accept_main(void *arg)
{
    zf_server *s = arg;
    zfi_thread_name("zf-ctl");
    struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
    for (;;) {
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (p[1].revents & POLLIN))
            return NULL;
        if (p[0].revents & POLLIN)
            accept_one(s);
    }
}

/* The socket's folder: created (mode 0750, parents 0755) when missing; an
 * existing one must be owned by this user (or root) and writable by nobody
 * else, or another user could replace the socket. */
static zf_err make_parent(const char *path)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return ZF_OK;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return zfi_error(ZF_ESYS, "cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return zfi_error(ZF_EPERM, "%s is not a folder", dir);
    bool sticky_shared = (st.st_mode & S_ISVTX) && st.st_uid == 0; /* like /tmp */
    if (!sticky_shared && ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)))
        return zfi_error(ZF_EPERM,
                         "%s is owned by uid %u with mode %04o: the socket's folder must belong "
                         "to this user (or root) and be writable by no one else",
                         dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return ZF_OK;
}

/* A live daemon answers hello at once (each connection has its thread); a
 * socket that accepts and never answers is stale: its daemon died and a
 * process it forked still holds the listening socket. */
static bool daemon_answers(const char *path)
{
    zf_client *probe = NULL;
    if (zf_client_connect(path, &probe) != ZF_OK)
        return false;
    zf_request hello = {.version = ZF_PROTOCOL_VERSION, .op = ZF_OP_HELLO};
    zf_config *resp = NULL;
    zf_err e = zf_client_call(probe, &hello, &resp, ZF_CONTROL_PROBE_MS);
    zf_client_close(probe);
    zf_config_free(resp);
    if (e != ZF_OK)
        zfi_log(ZF_LOG_WARN, "control", "%s accepts connections but does not answer (%s): stale",
                path, zf_last_error());
    return e == ZF_OK;
}

zf_err zf_server_start(const zf_server_options *opt, zf_server_handler handler, void *arg,
                       zf_server **out)
{
    if (!handler || !out)
        return zfi_error(ZF_EINVAL, "zf_server_start: NULL argument");
    *out = NULL;
    zf_server *s = zfi_calloc(1, sizeof *s);
    if (!s)
        return zfi_error(ZF_ENOMEM, "out of memory");
    if (opt)
        s->opt = *opt;
    s->opt.mode = s->opt.mode ? s->opt.mode : 0660;
    s->opt.max_clients = s->opt.max_clients ? s->opt.max_clients : 64;
    s->opt.idle_timeout_ms = s->opt.idle_timeout_ms ? s->opt.idle_timeout_ms : 60000;
    s->opt.request_timeout_ms = s->opt.request_timeout_ms ? s->opt.request_timeout_ms : 5000;
    s->opt.first_request_timeout_ms =
        s->opt.first_request_timeout_ms ? s->opt.first_request_timeout_ms : 5000;
    if (s->opt.first_request_timeout_ms > s->opt.idle_timeout_ms)
        s->opt.first_request_timeout_ms = s->opt.idle_timeout_ms;
    s->opt.max_per_uid = s->opt.max_per_uid       ? s->opt.max_per_uid
                         : s->opt.max_clients > 1 ? s->opt.max_clients / 2
                                                  : 1;
    s->handler = handler;
    s->arg = arg;
    s->lfd = s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    zf_err err;
    if (opt && opt->path) {
        if (strlen(opt->path) >= sizeof s->path) {
            err = zfi_error(ZF_EINVAL, "socket path %s is longer than %zu bytes", opt->path,
                            sizeof s->path - 1);
            goto fail;
        }
        snprintf(s->path, sizeof s->path, "%s", opt->path);
    } else {
        zf_control_default_socket(s->path, sizeof s->path);
    }
    if ((err = make_parent(s->path)) != ZF_OK)
        goto fail;
    struct stat st;
    if (lstat(s->path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            err = zfi_error(ZF_EEXIST, "%s exists and is not a socket", s->path);
            goto fail;
        }
        if (daemon_answers(s->path)) {
            err = zfi_error(ZF_EBUSY, "a daemon is already listening on %s", s->path);
            goto fail;
        }
        unlink(s->path); /* stale: from a daemon that died (perhaps held open by a child) */
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, s->path, sizeof a.sun_path);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    /* Created with its final mode (no window where it is more open). */
    mode_t old_mask = umask(0777 & ~s->opt.mode);
    int bound = s->lfd >= 0 ? bind(s->lfd, (struct sockaddr *)&a, sizeof a) : -1;
    umask(old_mask);
    if (bound != 0 || chmod(s->path, s->opt.mode) != 0 || listen(s->lfd, 128) != 0 ||
        pipe2(s->wake, O_CLOEXEC) != 0) {
        err = zfi_error(ZF_ESYS, "cannot listen on %s: %s", s->path, strerror(errno));
        goto fail;
    }
    listener_track(s->lfd, true);
    int e = pthread_create(&s->accept_thread, NULL, accept_main, s);
    if (e != 0) {
        listener_track(s->lfd, false);
        err = zfi_error(ZF_ESYS, "cannot start the accept thread: %s", strerror(e));
        unlink(s->path);
        goto fail;
    }
    zfi_log(ZF_LOG_INFO, "control", "listening on %s (mode %04o)", s->path, s->opt.mode);
    *out = s;
    return ZF_OK;
fail:
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return err;
}

bool zf_server_stop(zf_server *s)
{
    if (!s)
        return true;
    ssize_t w = write(s->wake[1], "x", 1);
    (void)w;
    pthread_join(s->accept_thread, NULL);
    listener_track(s->lfd, false);
    close(s->lfd);
    unlink(s->path);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    /* Wake every read; a request being served finishes and its answer is
     * still written (only the reading side is shut). */
    for (conn *c = s->conns; c; c = c->next)
        shutdown(c->fd, c->in_request ? SHUT_RD : SHUT_RDWR);
    uint64_t deadline = zf_clock_ns() + 30000000000ull;
    while (s->active && zf_clock_ns() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    unsigned left = s->active;
    pthread_mutex_unlock(&s->mu);
    close(s->wake[0]);
    close(s->wake[1]);
    if (left) {
        zfi_log(ZF_LOG_WARN, "control", "%u connections still busy at stop: leaving them", left);
        return false; /* their threads still reference s */
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return true;
}
